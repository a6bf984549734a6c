"""Read a Kineto trace (torch.profiler's Chrome trace, ``.json`` or ``.json.gz``) into a Profile.

Reading: :class:`~nsighttk.load.json_chunks.JsonChunks` hands over the ``traceEvents`` array a few
MB at a time and msgspec decodes each chunk straight into small structs holding only the fields
used here (everything else is skipped without building Python objects; an op's shapes, types,
strides and concrete inputs are kept as their JSON text, stored once per distinct value); each
chunk then becomes numpy column pieces, and names are stored once each.  Memory is bounded by the
tables, not by the file.  Kineto writes times in microseconds with three decimals
(on the epoch clock too, beyond what float64 holds to the nanosecond); ``ts`` and ``dur`` are
decoded as their JSON text and become integer ``*_ns`` exactly, all of a chunk at once
(:mod:`nsighttk.load.kineto_time`).  ``baseTimeNanoseconds`` is kept in ``meta``.

Categories (any spelling case, Kineto's current and older names):

* ``cpu_op`` / ``Operator`` -> ``ops`` (shapes, types, strides and concrete inputs with
  ``record_shapes``, ``External id``), nested
  per thread into ``parent``/``depth``;
* ``kernel`` / ``Kernel`` -> ``kernels`` (grid, block, registers, stream, correlation, external
  id; Kineto's ``shared memory`` is static plus dynamic: it fills ``static_smem_bytes``, with
  ``dynamic_smem_bytes`` 0);
* ``gpu_memcpy`` / ``Memcpy``, ``gpu_memset`` / ``Memset`` -> ``memcpy`` / ``memset`` (kind from
  the name, ``Memcpy HtoD (Pageable -> Device)``; a ROCm copy without ``bytes`` takes the size of
  the HIP call that launched it);
* ``cuda_runtime`` / ``Runtime`` / ``cuda_driver`` -> ``api`` (one ``name_id`` per function);
* ``user_annotation`` (``record_function``, ``ProfilerStep#N``) -> ``nvtx`` (domain ``torch``);
* ``deviceProperties`` -> ``gpus`` (a compute capability for NVIDIA GPUs only).

The host process and thread of each call become ``global_tid`` = pid << 24 | tid (nsys' layout),
and each GPU operation takes the ``global_pid`` of the runtime call with its correlation id, so
that the NVTX GPU projection (:mod:`nsighttk.analysis.nsys.nvtx`) works on torch.profiler data as on
nsys'.  Kineto's own ``gpu_user_annotation`` spans are counted, not loaded (the projection is
computed the nsys way).  Device activity of other accelerators (MTIA, HPU, XPU, PrivateUse1) is
named in one note.  Events whose times are missing, not numbers or out of range are dropped, and
values of the wrong type left empty, each counted in ``profile.notes``.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import re
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from nsighttk.errors import InputFileError
from nsighttk.load.json_chunks import JsonChunks
from nsighttk.load.kineto_columns import Columns, Pool, ThreadKeys, first_rows, link_gpu_ops, nest, times
from nsighttk.profile import Profile, conform, empty_table, obj


class _Args(msgspec.Struct, gc=False, rename={"external_id": "External id", "external_id_old": "external id",
                                    "sequence": "Sequence number", "registers": "registers per thread",
                                    "smem": "shared memory", "input_dims": "Input Dims",
                                    "input_types": "Input type", "input_strides": "Input Strides",
                                    "concrete_inputs": "Concrete Inputs", "nbytes": "bytes",
                                    "in_nelems": "In msg nelems", "out_nelems": "Out msg nelems",
                                    "group_size": "Group size", "comm_op": "Collective name"}):
    external_id: Any = None
    external_id_old: Any = None
    correlation: Any = None
    device: Any = None
    stream: Any = None
    grid: Any = None
    block: Any = None
    registers: Any = None
    smem: Any = None
    nbytes: Any = None
    size: Any = None  # HIP copy calls (ROCm): the copy's size, as text
    sequence: Any = None
    input_dims: msgspec.Raw = msgspec.Raw()
    input_types: msgspec.Raw = msgspec.Raw()
    input_strides: msgspec.Raw = msgspec.Raw()
    concrete_inputs: msgspec.Raw = msgspec.Raw()
    labels: Any = None  # process_labels metadata: "GPU 0", "MTIA 17"
    # a collective's message, as PyTorch's process group records it (on the kernel and its record_param_comms op)
    in_nelems: Any = None
    out_nelems: Any = None
    dtype: Any = None
    group_size: Any = None
    comm_op: Any = None


class _Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: msgspec.Raw = msgspec.Raw()  # the number's text: read exactly in bulk (kineto_time)
    dur: msgspec.Raw = msgspec.Raw()
    args: _Args | None = None


_NO_ARGS = _Args()
_NO_TEXT = msgspec.Raw()
_PH, _CAT, _NAME, _PID, _TID, _TS, _DUR, _ARGS = map(attrgetter,
                                                     ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args"))
(_EXT, _EXT_OLD, _SEQUENCE, _INPUT_DIMS, _INPUT_TYPES, _INPUT_STRIDES, _CONCRETE, _CORRELATION, _DEVICE, _STREAM,
 _NBYTES, _SIZE, _GRID, _BLOCK, _REGISTERS, _SMEM) = map(attrgetter, (
    "external_id", "external_id_old", "sequence", "input_dims", "input_types", "input_strides", "concrete_inputs",
    "correlation", "device", "stream", "nbytes", "size", "grid", "block", "registers", "smem"))
_COMM = tuple(map(attrgetter, ("in_nelems", "out_nelems", "dtype", "group_size", "comm_op")))
_EVENTS = msgspec.json.Decoder(list[_Event])
_ONE = msgspec.json.Decoder(_Event)
_ANY = msgspec.json.Decoder()
_FIELDS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_DECODE_ERRORS = (msgspec.MsgspecError, RecursionError, ValueError)

#: Kineto category (lower case) -> Profile table; older traces spell them Kernel, Runtime, Operator ...
_TABLES = {"cpu_op": "ops", "operator": "ops", "kernel": "kernels", "gpu_memcpy": "memcpy", "memcpy": "memcpy",
           "gpu_memset": "memset", "memset": "memset", "cuda_runtime": "api", "runtime": "api",
           "cuda_driver": "api", "driver": "api", "user_annotation": "nvtx", "gpu_user_annotation": "gpu_annotation"}
#: categories of other accelerators' activity: named in a note, not loaded
_ACCELERATORS = {"mtia_runtime": "MTIA", "mtia_ccp_events": "MTIA", "mtia_insight": "MTIA",
                 "mtia_counters": "MTIA", "hpu_op": "HPU (Gaudi)", "xpu_runtime": "XPU", "xpu_driver": "XPU",
                 "xpu_sync": "XPU", "privateuse1_runtime": "PrivateUse1", "privateuse1_driver": "PrivateUse1"}
_MEMCPY = re.compile(r"Memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?")
_MEMSET = re.compile(r"Memset\s*\((\w+)")


class _Reader:
    """Decodes chunks of events into per-table columns."""

    def __init__(self) -> None:
        self.pool = Pool()
        self.cols = {t: Columns(self.pool) for t in ("ops", "kernels", "memcpy", "memset", "api", "nvtx")}
        self.counts: dict[str, int] = {}
        self.bad_json = 0
        self.not_object = 0
        self.odd_args = 0
        self.labels: set[str] = set()
        self.route: dict[Any, str | None] = {}

    # -- decoding ------------------------------------------------------------------------------

    def decode(self, array: bytes) -> int:
        events: list[_Event] = _EVENTS.decode(array)
        self.add(events)
        return len(events)

    def salvage(self, elements: list[bytes]) -> int:
        """One event at a time: events of the wrong shape are repaired or dropped (counted)."""
        events = []
        for raw in elements:
            if not raw.strip():
                continue
            try:
                events.append(_ONE.decode(raw))
                continue
            except msgspec.ValidationError:
                pass
            except _DECODE_ERRORS:
                self.bad_json += 1
                continue
            try:
                value = _ANY.decode(raw)
            except _DECODE_ERRORS:  # valid at its start only ("null null")
                self.bad_json += 1
                continue
            if not isinstance(value, dict):
                self.not_object += 1
                continue
            args = value.get("args")
            if isinstance(args, dict):
                try:
                    args = msgspec.convert(args, _Args)
                except msgspec.ValidationError:
                    args = None
            fields = _FIELDS.decode(raw)
            ev = _Event(**{k: value.get(k) for k in ("ph", "cat", "name", "pid", "tid")},
                        ts=fields.get("ts", _NO_TEXT), dur=fields.get("dur", _NO_TEXT),
                        args=args if isinstance(args, _Args) else None)
            if value.get("args") is not None and not isinstance(value["args"], dict):
                self.odd_args += 1
            events.append(ev)
        self.add(events)
        return len(events)

    # -- routing ---------------------------------------------------------------------------------

    def _table(self, cat: Any) -> str | None:
        try:
            return self.route[cat]
        except (KeyError, TypeError):
            pass
        key = cat.lower() if isinstance(cat, str) else None
        table = _TABLES.get(key) if key else None
        with contextlib.suppress(TypeError):  # an unhashable category is looked up each time
            self.route[cat] = table
        return table

    def add(self, events: list[_Event]) -> None:
        """Complete events ("X") to their tables, grouped by category in order of first appearance
        (each category's events in file order); process labels noted.  Per-event work is C-level
        (map, numpy, pandas), no Python loop."""
        n = len(events)
        if not n:
            return
        phs = list(map(_PH, events))
        if "M" in phs:
            for i in np.flatnonzero(np.fromiter(map(operator.eq, phs, repeat("M")), dtype=bool, count=n)):
                e = events[i]
                if e.name == "process_labels" and e.args is not None:
                    self.labels.add(str(e.args.labels))
        complete = events if phs.count("X") == n else \
            list(itertools.compress(events, map(operator.eq, phs, repeat("X"))))
        if not complete:
            return
        cats = list(map(_CAT, complete))
        try:
            first, at = first_rows(cats)
        except TypeError:  # unhashable categories: as their text
            cats = [c if isinstance(c, str | int | float | None) else repr(c) for c in cats]
            first, at = first_rows(cats)
        counts = np.bincount(at, minlength=len(at))
        groups: dict[str, list[np.ndarray]] = {}
        for cat, k in first.items():
            key = cat if isinstance(cat, str) else str(cat)
            self.counts[key] = self.counts.get(key, 0) + int(counts[k])
            table = self._table(cat)
            if table is not None and table != "gpu_annotation":
                groups.setdefault(table, []).append(np.flatnonzero(at == k))
        for table, rows in groups.items():
            if len(first) == 1:  # (one category: every complete event, in order)
                self._columns(table, complete)
            else:
                self._columns(table, list(map(complete.__getitem__, np.concatenate(rows).tolist())))

    def _columns(self, table: str, evs: list[_Event]) -> None:
        c = self.cols[table]
        start, end, ok = times(list(map(_TS, evs)), list(map(_DUR, evs)), c.bad)
        if not ok.all():
            evs = list(itertools.compress(evs, ok.tolist()))
            start, end = start[ok], end[ok]
        if not evs:
            return
        args = list(map(_ARGS, evs))
        if None in args:
            args = [a if a is not None else _NO_ARGS for a in args]
        c.add_int("start_ns", start)
        c.add_int("end_ns", end)
        c.add_text("name", list(map(_NAME, evs)), missing="")
        ext = list(map(_EXT, args))
        old = list(map(_EXT_OLD, args))
        if old.count(None) != len(old):  # older traces: "external id"
            ext = [e if e is not None else o for e, o in zip(ext, old, strict=True)]
        c.add_ints("external_id", ext)
        if table in ("ops", "api", "nvtx"):
            c.add_ints("pid", list(map(_PID, evs)))
            c.add_ints("tid", list(map(_TID, evs)))
        if table == "ops":
            c.add_ints("sequence_number", list(map(_SEQUENCE, args)))
            c.add_raw("input_dims", list(map(_INPUT_DIMS, args)))
            c.add_raw("input_types", list(map(_INPUT_TYPES, args)))
            c.add_raw("input_strides", list(map(_INPUT_STRIDES, args)))
            c.add_raw("concrete_inputs", list(map(_CONCRETE, args)))
        if table in ("kernels", "memcpy", "memset", "api"):
            c.add_ints("correlation_id", list(map(_CORRELATION, args)))
        if table in ("kernels", "memcpy", "memset"):
            device = list(map(_DEVICE, args))
            if None in device:  # the process id is the device in older traces
                device = [d if d is not None else e.pid for d, e in zip(device, evs, strict=True)]
            c.add_ints("device_id", device)
            c.add_ints("stream_id", list(map(_STREAM, args)))
        if table in ("memcpy", "memset"):
            c.add_ints("bytes", list(map(_NBYTES, args)))
        if table == "api":
            size = list(map(_SIZE, args))
            c.add_ints("size", size if size.count(None) == len(size) else list(map(_size, size)))
        if table == "kernels":
            c.add_dim3("grid", list(map(_GRID, args)))
            c.add_dim3("block", list(map(_BLOCK, args)))
            c.add_ints("registers_per_thread", list(map(_REGISTERS, args)))
            c.add_ints("static_smem_bytes", list(map(_SMEM, args)))
            in_n, out_n, dtype, group, op = (list(map(f, args)) for f in _COMM)
            c.add_ints("comm_in_nelems", in_n)
            c.add_ints("comm_out_nelems", out_n)
            c.add_text("comm_dtype", dtype)
            c.add_ints("comm_group_size", group)
            c.add_text("comm_op", op)


def strip_templates(s: str) -> str:
    """``a::f<T, g<U>>::h`` -> ``a::f::h``: template arguments removed (for short names)."""
    out, depth = [], 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def short_kernel_name(name: str) -> str:
    """The ``short_name`` column for loaders whose format has none (nsys' ``shortName`` style):
    ``void at::native::foo<...>(...)`` -> ``foo``."""
    plain = name.replace("(anonymous namespace)", "<unnamed>")  # Kineto's spelling of nsys' <unnamed>
    words = strip_templates(plain.split("(", 1)[0]).split()
    return words[-1].split("::")[-1] if words else name


def _size(v: Any) -> Any:
    """A HIP call's ``size`` argument (text in ROCm traces) as an int, else None."""
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return v if type(v) is int else None


def load_kineto(path: str | Path) -> Profile:
    """Load a Kineto trace; every Profile table is present (see :mod:`nsighttk.profile`)."""
    path = Path(path)
    reader = _Reader()
    chunks = JsonChunks(path, reader.decode, reader.salvage, _DECODE_ERRORS, key="traceEvents",
                        what="torch.profiler / Kineto trace (prof.export_chrome_trace)")
    n_events = sum(chunks)
    if not chunks.found and chunks.truncated_at is None:
        raise InputFileError(f"{path}: no traceEvents in this JSON", "is this a torch.profiler / Kineto trace?")
    if chunks.truncated_at is not None and n_events == 0:
        raise InputFileError(f"{path}: the trace ends early or is corrupt (no whole event in its "
                             f"{chunks.truncated_at:,} bytes)", "re-export it and let the profiler finish writing")
    if n_events == 0 and reader.bad_json + reader.not_object:
        raise InputFileError(f"{path}: not a Kineto trace (none of the {reader.bad_json + reader.not_object:,} "
                             "entries of its traceEvents is an event)", "is this a torch.profiler / Kineto trace?")
    top = chunks.top
    p = Profile()
    p.meta.update({"tool": "torch.profiler (Kineto)", "tool_version": str(top.get("schemaVersion", "")),
                   "source": str(path), "host": top.get("host_name"), "event_counts": reader.counts,
                   "base_time_ns": top.get("baseTimeNanoseconds") if type(top.get("baseTimeNanoseconds")) is int
                   else None})
    if chunks.truncated_at is not None:
        p.notes.append(f"the trace is truncated: {n_events:,} whole events in its first {chunks.truncated_at:,} "
                       "bytes were loaded, the rest is missing (was the profiler stopped while writing?)")
    if chunks.tail_lost:
        p.notes.append("the file is cut or malformed after its events: the metadata written there is missing")
    if reader.bad_json or reader.not_object:
        p.notes.append(f"{reader.bad_json + reader.not_object:,} entries of traceEvents are not valid events "
                       "(dropped)")
    if reader.odd_args:
        p.notes.append(f"{reader.odd_args:,} events have args that are not an object (ignored)")
    tables = {t: c.frame() for t, c in reader.cols.items()}
    _fill(p, tables)
    for table, c in reader.cols.items():
        for why, n in sorted(c.bad.items()):
            p.notes.append(f"{table}: {n:,} {why}")
    p.gpus = _gpus(top.get("deviceProperties"))
    _accelerator_notes(p, reader)
    return p


def _fill(p: Profile, t: dict[str, pd.DataFrame]) -> None:
    """Profile tables from the raw columns: durations, process/thread keys, links, names."""
    api, ops, nvtx = t["api"], t["ops"], t["nvtx"]
    keys = ThreadKeys()
    for df in (api, ops, nvtx):
        if len(df):
            df["global_tid"] = keys(df["pid"], df["tid"])
    if len(ops):
        p.ops = conform("ops", nest(_sorted(ops)))
    if len(nvtx):
        nvtx = nest(_sorted(nvtx))
        nvtx = nvtx.assign(range_id=np.arange(len(nvtx), dtype="int64"), domain=obj(["torch"] * len(nvtx)),
                           style=obj(["PushPop"] * len(nvtx)))
        p.nvtx = conform("nvtx", nvtx)
    if len(api):
        api = _sorted(api)
        codes, _ = pd.factorize(api["name"], sort=True)
        api["name_id"] = codes.astype("int64")
        p.api = conform("api", api)
    for table in ("kernels", "memcpy", "memset"):
        df = t[table]
        if not len(df):
            continue
        df = link_gpu_ops(_sorted(df), api, keys)
        if table == "kernels":
            short = {n: short_kernel_name(n) for n in df["name"].unique()}
            df["short_name"] = obj(df["name"].map(short))
            codes, _ = pd.factorize(df["name"])
            df["name_id"] = codes.astype("int64")
            df["dynamic_smem_bytes"] = pd.array(np.zeros(len(df), dtype="int32"), dtype="Int32")
        elif table == "memcpy":
            df = _memcpy_kinds(df, api, p)
        else:
            names = df["name"]
            kinds = {n: (m.group(1) if (m := _MEMSET.match(n)) else n) for n in names.unique()}
            df["mem_kind"] = obj(names.map(kinds))
            df["bytes"] = _known_bytes(df, "memset", p)
        setattr(p, table, conform(table, df))


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    return df.sort_values("start_ns", kind="stable", ignore_index=True)


def _memcpy_kinds(df: pd.DataFrame, api: pd.DataFrame, p: Profile) -> pd.DataFrame:
    parsed = {}
    for n in df["name"].unique():
        m = _MEMCPY.match(n)
        parsed[n] = (m.group(1), m.group(2), m.group(3)) if m else ("unknown", None, None)
    kinds = df["name"].map(parsed)
    df["kind"] = obj([k[0] for k in kinds])
    df["src_kind"] = obj([k[1] for k in kinds])
    df["dst_kind"] = obj([k[2] for k in kinds])
    df["label"] = df["name"]
    if df["bytes"].isna().any() and len(api) and "size" in api:  # ROCm: the size of the HIP call
        sizes = api.dropna(subset=["correlation_id", "size"]).drop_duplicates("correlation_id")
        size_of = pd.Series(sizes["size"].to_numpy(), index=sizes["correlation_id"].to_numpy())
        missing = df["bytes"].isna() & df["correlation_id"].notna()
        found = size_of.reindex(df.loc[missing, "correlation_id"].to_numpy()).to_numpy()
        df.loc[missing, "bytes"] = pd.array(found, dtype="Int64")
        n = int(pd.notna(found).sum())
        if n:
            p.notes.append(f"memcpy: {n:,} copies have no byte count in the trace (ROCm); their size is taken "
                           "from the HIP call that launched each (same correlation id)")
    df["bytes"] = _known_bytes(df, "memcpy", p)
    return df


def _known_bytes(df: pd.DataFrame, table: str, p: Profile) -> pd.Series:
    b = df["bytes"]
    if b.isna().any():
        p.notes.append(f"{table}: {int(b.isna().sum()):,} operations have no byte count in the trace: counted "
                       "as 0 bytes (their bandwidth is not meaningful)")
        b = b.fillna(0)
    return b.astype("int64")


def _gpus(props: Any) -> pd.DataFrame:
    if not isinstance(props, list):
        return empty_table("gpus")
    rows: list[dict[str, Any]] = []
    for d in props:
        if not isinstance(d, dict) or "computeMajor" not in d:
            continue  # not a GPU (MTIA's deviceProperties have no compute capability)
        name = str(d.get("name") or "")
        nvidia = "AMD" not in name.upper() and "RADEON" not in name.upper() and d.get("warpSize", 32) == 32
        cc = f"{d.get('computeMajor')}.{d.get('computeMinor')}" if nvidia else None

        def num(key: str, d: dict[str, Any] = d) -> int | None:
            v = d.get(key)
            return v if type(v) is int and 0 <= v < 2**62 else None

        warps = (num("maxThreadsPerMultiprocessor") or 0) // (num("warpSize") or 32) or None
        rows.append({"device_id": num("id") if num("id") is not None else len(rows), "name": name,
                     "compute_capability": cc, "sm_count": num("numSms"), "total_memory_bytes": num("totalGlobalMem"),
                     "max_warps_per_sm": warps, "max_regs_per_sm": num("regsPerMultiprocessor"),
                     "max_smem_per_sm_bytes": num("sharedMemPerMultiprocessor"),
                     "max_threads_per_block": num("maxThreadsPerBlock")})
    if not rows:
        return empty_table("gpus")
    df = pd.DataFrame(rows)
    for col in ("name", "compute_capability"):
        df[col] = obj(df[col])
    for col in df.columns:
        if col not in ("name", "compute_capability", "device_id"):
            df[col] = pd.array(df[col].tolist(), dtype="Int64")
    return conform("gpus", df)


def _accelerator_notes(p: Profile, reader: _Reader) -> None:
    """One line naming what the trace holds that nsighttk does not load; never "CPU-only" for an
    accelerator trace."""
    other: dict[str, int] = {}
    for cat, n in reader.counts.items():
        kind = _ACCELERATORS.get(cat.lower())
        if kind:
            other[kind] = other.get(kind, 0) + n
    gpu_work = len(p.kernels) + len(p.memcpy) + len(p.memset)
    if other:
        devices = sorted(label for label in reader.labels if not label.startswith(("CPU", "GPU")))
        what = ", ".join(f"{n:,} {kind} events" for kind, n in other.items())
        named = f" ({', '.join(devices)})" if devices else ""
        p.notes.append(f"this trace is from {'/'.join(other)} accelerator(s){named}: {what} are not CUDA "
                       "activity and are not analysed; its CPU ops, annotations and any CUDA activity are loaded")
    elif not gpu_work:
        if not reader.counts:
            p.notes.append("the trace has no timed events (the profiled code did nothing while recording?)")
        else:
            p.notes.append("no GPU kernels in this trace (CPU-only profile, or CUDA activity was not recorded)")
    if any(str(n).startswith("hip") for n in p.api["name"].head(1000)):
        p.meta["platform"] = "ROCm"
