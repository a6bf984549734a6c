"""Read a Kineto trace (torch.profiler's Chrome trace, ``.json`` or ``.json.gz``) into a Profile.

The file is streamed with ijson: events become column lists one at a time, so a trace of several
GB is never held as Python dicts (only its rows end in DataFrames).  Kineto writes times in
microseconds with nanosecond decimals; they become integer ``*_ns`` on the trace's clock
(``baseTimeNanoseconds`` added when present).  Event categories used:

* ``cpu_op`` -> ``ops`` (ATen ops: shapes with ``record_shapes``, ``External id``), nested per
  thread into ``parent``/``depth``;
* ``kernel`` -> ``kernels`` (grid, block, registers, shared memory, stream, correlation, external id);
* ``gpu_memcpy`` / ``gpu_memset`` -> ``memcpy`` / ``memset`` (bytes; kind from the name,
  ``Memcpy HtoD (Pageable -> Device)``);
* ``cuda_runtime`` / ``cuda_driver`` -> ``api``; ``user_annotation`` (``record_function``) ->
  ``nvtx`` (domain ``torch``), so NVTX-style projections work on torch.profiler data;
* ``deviceProperties`` -> ``gpus``.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from nsighttk.errors import InputFileError, ToolNotFound
from nsighttk.profile import Profile, conform, empty_table, obj, short_kernel_name

_MEMCPY = re.compile(r"Memcpy\s+(\w+)(?:\s*\((\w+)\s*->\s*(\w+)\))?")
_KIND = {"HtoD": "HtoD", "DtoH": "DtoH", "DtoD": "DtoD", "HtoH": "HtoH", "PtoP": "PtoP"}


def _open(path: Path) -> IO[bytes]:
    """A binary stream of the file, gunzipped when it is gzip."""
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _ijson() -> Any:
    try:
        import ijson
    except ImportError:
        raise ToolNotFound("reading Kineto traces needs ijson", "pip install ijson") from None
    return ijson


def _header(path: Path) -> dict[str, Any]:
    """Top-level keys before ``traceEvents`` (Kineto writes them first): schemaVersion,
    deviceProperties, baseTimeNanoseconds ...; reading stops where the events begin."""
    ijson = _ijson()
    top: dict[str, Any] = {}
    builder = None
    with _open(path) as f:
        try:
            for prefix, event, value in ijson.parse(f):
                if prefix == "traceEvents" and event == "start_array":
                    top["_has_events"] = True
                    break
                if prefix == "deviceProperties" and event == "start_array":
                    builder = ijson.ObjectBuilder()
                    builder.event(event, value)
                elif builder is not None and prefix.startswith("deviceProperties"):
                    builder.event(event, value)
                    if prefix == "deviceProperties" and event == "end_array":
                        top["deviceProperties"] = builder.value
                        builder = None
                elif "." not in prefix and prefix and event in ("number", "string", "boolean"):
                    top[prefix] = value
        except ijson.JSONError as ex:
            raise InputFileError(f"{path}: not valid JSON ({str(ex).splitlines()[0][:80]})",
                                 "is this a torch.profiler / Kineto trace (prof.export_chrome_trace)?") from None
        except (EOFError, gzip.BadGzipFile, OSError) as ex:
            raise InputFileError(f"{path}: cannot be read ({ex})", "is the file complete?") from None
    return top


def _events(path: Path) -> Iterator[dict[str, Any]]:
    """The trace events, one at a time (ijson's C parser; numbers stay exact Decimals)."""
    ijson = _ijson()
    with _open(path) as f:
        try:
            yield from ijson.items(f, "traceEvents.item")
        except ijson.JSONError as ex:
            raise InputFileError(f"{path}: the trace ends early or is corrupt ({str(ex).splitlines()[0][:60]})",
                                 "re-export it and let the profiler finish writing") from None
        except (EOFError, gzip.BadGzipFile, OSError) as ex:
            raise InputFileError(f"{path}: cannot be read ({ex}); the trace may be truncated",
                                 "re-export it and let the profiler finish writing") from None


def _ns(us: Any) -> int:
    """Kineto microseconds (int or exact Decimal) -> integer nanoseconds."""
    return int(us * 1000)


_TEXT = {"name", "kind", "label", "src_kind", "dst_kind", "input_dims", "input_types", "mem_kind", "domain", "style",
         "short_name"}


class _Columns:
    """Append-only column lists for one table."""

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {}
        self.n = 0

    def add(self, **row: Any) -> None:
        for k, v in row.items():
            col = self.cols.get(k)
            if col is None:
                col = self.cols[k] = [None] * self.n
            col.append(v)
        self.n += 1
        for col in self.cols.values():
            if len(col) < self.n:
                col.append(None)

    def frame(self) -> pd.DataFrame:
        data = {}
        for k, v in self.cols.items():
            data[k] = obj(v) if k in _TEXT else pd.array([None if x is None else int(x) for x in v], dtype="Int64")
        return pd.DataFrame(data)


def _nest(ops: pd.DataFrame) -> pd.DataFrame:
    """Parent (row of the tightest enclosing op on the same thread) and depth, by a stack walk."""
    n = len(ops)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    order = np.lexsort((-ops["end_ns"].to_numpy(), ops["start_ns"].to_numpy(), ops["tid"].fillna(-1).to_numpy()))
    tid = ops["tid"].fillna(-1).to_numpy()
    start, end = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    stack: list[int] = []
    last_tid = None
    for i in order:
        if tid[i] != last_tid:
            stack, last_tid = [], tid[i]
        while stack and end[stack[-1]] < end[i]:
            if start[i] >= end[stack[-1]]:
                stack.pop()
            else:
                break  # overlapping without nesting: keep it as parent (Kineto's own rule is the same)
        if stack:
            parent[i] = stack[-1]
            depth[i] = depth[stack[-1]] + 1
        stack.append(i)
    parent_col = pd.arrays.IntegerArray(np.where(parent >= 0, parent, 0), parent < 0)
    return ops.assign(parent=pd.Series(parent_col, index=ops.index), depth=depth)


def _dims(v: Any) -> str | None:
    if v is None:
        return None
    return str(v).replace(" ", "")


def load_kineto(path: str | Path) -> Profile:
    """Load a Kineto trace; every Profile table is present (see :mod:`nsighttk.profile`)."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"{path}: no such file", "check the path")
    if path.stat().st_size == 0:
        raise InputFileError(f"{path}: is empty", "the profiler wrote nothing: did the profiled code run?")
    top = _header(path)
    if not top.get("_has_events"):
        raise InputFileError(f"{path}: no traceEvents in this JSON", "is this a torch.profiler / Kineto trace?")
    ops, kernels, memcpy, memset, api, ann = (_Columns() for _ in range(6))
    counts: dict[str, int] = {}
    for e in _events(path):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat") or ""
        counts[cat] = counts.get(cat, 0) + 1
        a = e.get("args") or {}
        start = _ns(e.get("ts", 0))
        end = start + _ns(e.get("dur", 0))
        name = e.get("name", "")
        if cat == "cpu_op":
            ops.add(start_ns=start, end_ns=end, name=name, pid=e.get("pid"), tid=e.get("tid"),
                    external_id=a.get("External id"), sequence_number=a.get("Sequence number"),
                    input_dims=_dims(a.get("Input Dims")), input_types=_dims(a.get("Input type")))
        elif cat == "kernel":
            grid, block = a.get("grid") or [None] * 3, a.get("block") or [None] * 3
            kernels.add(start_ns=start, end_ns=end, name=name, device_id=a.get("device"), stream_id=a.get("stream"),
                        correlation_id=a.get("correlation"), external_id=a.get("External id"),
                        grid_x=grid[0], grid_y=grid[1], grid_z=grid[2], block_x=block[0], block_y=block[1],
                        block_z=block[2], registers_per_thread=a.get("registers per thread"),
                        static_smem_bytes=a.get("shared memory"), pid=e.get("pid"))
        elif cat == "gpu_memcpy":
            m = _MEMCPY.match(name)
            kind = _KIND.get(m.group(1), m.group(1)) if m else "unknown"
            memcpy.add(start_ns=start, end_ns=end, bytes=a.get("bytes"), kind=kind, label=name,
                       src_kind=m.group(2) if m else None, dst_kind=m.group(3) if m else None,
                       device_id=a.get("device"), stream_id=a.get("stream"), correlation_id=a.get("correlation"),
                       external_id=a.get("External id"), pid=e.get("pid"))
        elif cat == "gpu_memset":
            memset.add(start_ns=start, end_ns=end, bytes=a.get("bytes"), mem_kind=name, device_id=a.get("device"),
                       stream_id=a.get("stream"), correlation_id=a.get("correlation"),
                       external_id=a.get("External id"), pid=e.get("pid"))
        elif cat in ("cuda_runtime", "cuda_driver"):
            api.add(start_ns=start, end_ns=end, name=name, correlation_id=a.get("correlation"),
                    external_id=a.get("External id"), pid=e.get("pid"), tid=e.get("tid"))
        elif cat == "user_annotation":
            ann.add(start_ns=start, end_ns=end, name=name, pid=e.get("pid"), tid=e.get("tid"))
    p = Profile()
    p.meta.update({"tool": "torch.profiler (Kineto)", "tool_version": str(top.get("schemaVersion", "")),
                   "source": str(path), "host": top.get("host_name"), "event_counts": counts,
                   "base_time_ns": top.get("baseTimeNanoseconds")})
    if not counts:
        p.notes.append("the trace has no timed events (the profiled code did nothing while recording?)")
    if ops.n:
        df = _durations(ops.frame())
        p.ops = conform("ops", _nest(df))
    if kernels.n:
        df = _durations(kernels.frame())
        df["short_name"] = obj([short_kernel_name(n) for n in df["name"]])
        codes, _ = pd.factorize(df["name"])
        df["name_id"] = codes.astype("int64")
        df["dynamic_smem_bytes"] = pd.array([0] * len(df), dtype="Int32")
        p.kernels = conform("kernels", df)
    else:
        p.notes.append("no GPU kernels in this trace (CPU-only profile, or CUDA activity was not recorded)")
    if memcpy.n:
        p.memcpy = conform("memcpy", _durations(memcpy.frame()))
    if memset.n:
        p.memset = conform("memset", _durations(memset.frame()))
    if api.n:
        p.api = conform("api", _durations(api.frame()))
    if ann.n:
        df = _durations(ann.frame())
        df = df.assign(range_id=np.arange(len(df), dtype="int64"), domain=obj(["torch"] * len(df)),
                       style=obj(["PushPop"] * len(df)), global_tid=df["tid"])
        nested = _nest(df.assign(tid=df["tid"]))
        p.nvtx = conform("nvtx", nested)
    p.gpus = _gpus(top.get("deviceProperties") or [])
    return p


def _durations(df: pd.DataFrame) -> pd.DataFrame:
    df["start_ns"] = df["start_ns"].astype("int64")
    df["end_ns"] = df["end_ns"].astype("int64")
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    return df.sort_values("start_ns", kind="stable", ignore_index=True)


def _gpus(props: list[dict[str, Any]]) -> pd.DataFrame:
    if not props:
        return empty_table("gpus")
    rows: list[dict[str, Any]] = []
    for d in props:
        rows.append({"device_id": int(d.get("id", len(rows))), "name": d.get("name"),
                     "compute_capability": f"{d.get('computeMajor')}.{d.get('computeMinor')}",
                     "sm_count": d.get("numSms"), "total_memory_bytes": d.get("totalGlobalMem"),
                     "max_warps_per_sm": (d.get("maxThreadsPerMultiprocessor") or 0) // (d.get("warpSize") or 32)
                     or None,
                     "max_regs_per_sm": d.get("regsPerMultiprocessor"),
                     "max_smem_per_sm_bytes": d.get("sharedMemPerMultiprocessor"),
                     "max_threads_per_block": d.get("maxThreadsPerBlock")})
    df = pd.DataFrame(rows)
    df["name"] = obj(df["name"])
    df["compute_capability"] = obj(df["compute_capability"])
    return conform("gpus", df)
