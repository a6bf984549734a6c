"""The Profile: the tables every loader fills and every analysis reads.

Times are integer nanoseconds on one clock per profile (the profiler's own); column names carry
their units.  A table a capture does not have is an *empty DataFrame with the right columns*,
never a missing attribute, so analyses need no special cases for "no NVTX" or "no kernels".

Columns (dtype in brackets; ``Int64`` is pandas' nullable integer):

``kernels``
    start_ns, end_ns, duration_ns [int64]; name (demangled), short_name, mangled_name [str];
    name_id [int64: the export's string id, keeps nsys' grouping order]; device_id, context_id,
    green_context_id, stream_id [Int32]; correlation_id [Int64]; grid_x/y/z, block_x/y/z,
    registers_per_thread, static_smem_bytes, dynamic_smem_bytes [Int32]; global_pid, pid [Int64].
    Of a collective kernel, what PyTorch's process group recorded (Kineto's ``In msg nelems``,
    ``Out msg nelems``, ``dtype``, ``Group size``, ``Collective name``): comm_in_nelems,
    comm_out_nelems [Int64: elements]; comm_dtype [str: PyTorch's name, ``Float``, ``BFloat16``];
    comm_group_size [Int32: ranks in the process group]; comm_op [str: ``allreduce``,
    ``all_to_all``]; null elsewhere (nsys' exports do not hold NCCL's payload values).
``memcpy``
    start_ns, end_ns, duration_ns, bytes [int64]; kind (``HtoD``, ``DtoH``, ``DtoD``, ``HtoH``,
    ``PtoP``, ``UVM_HtoD``, ...), label (the export's own label, e.g. ``Host-to-Device``),
    src_kind, dst_kind (``Pageable``, ``Pinned``, ``Device``, ...) [str]; device_id, context_id,
    green_context_id, stream_id [Int32]; correlation_id, global_pid, pid [Int64].
``memset``
    start_ns, end_ns, duration_ns, bytes [int64]; value [Int64]; mem_kind [str]; device_id,
    context_id, green_context_id, stream_id [Int32]; correlation_id, global_pid, pid [Int64].
``api``
    start_ns, end_ns, duration_ns [int64]; name [str]; name_id, correlation_id, global_tid, pid,
    tid [Int64]; return_value [Int64].  CUDA runtime and driver calls.
``nvtx``
    range_id [int64]; start_ns [int64]; end_ns [Int64: missing for ranges never closed];
    duration_ns [Int64]; name (range text), domain (domain name, ``""`` for the default domain)
    [str]; style (``PushPop`` / ``StartEnd``) [str]; depth [int64: nesting level on its thread];
    global_tid, end_global_tid, pid, tid [Int64]; comm_bytes [Int64: the message size NCCL's range
    gives in its payload, in an export made with ``--include-blobs=true``], comm_group_size
    [Int64: its communicator's rank count] (:mod:`nsighttk.load.nvtx_payloads`).
``ops`` (torch.profiler / Kineto)
    start_ns, end_ns, duration_ns [int64]; name (``aten::mm``) [str]; pid, tid [Int64];
    external_id [Int64: what the kernels, copies and runtime calls an op launched carry in their
    ``external_id`` column]; sequence_number [Int64]; input_dims, input_types [str, with
    ``record_shapes``]; input_strides, concrete_inputs [str: Kineto's ``Input Strides`` and
    ``Concrete Inputs`` (scalar arguments as text), with ``record_shapes``]; parent [Int64: row of
    the enclosing op on the same thread]; depth [int64].
    Kernels, memcpy, memset and api rows from Kineto also fill ``external_id`` (null from nsys).
``metrics`` (ncu)
    kernel_id [int64], kernel_name, section, metric, unit [str], value [float64], text [str].
    Long form: from a ``.ncu-rep`` or a raw-page CSV, ``metric`` is ncu's metric name
    (``gpu__time_duration.sum``) and value/unit are in base units (ns, byte, byte/s, %); from a
    details-page CSV, ``section``/``metric`` are the display names (``Occupancy``/``Achieved
    Occupancy``) with ncu's display unit.  ``text`` holds non-numeric values (``CachePreferNone``).
``rules`` (ncu)
    kernel_id [int64], kernel_name, section, rule, type (OPT, WRN, INF ...), description [str],
    speedup_type (local/global) [str], speedup_pct [float64]: ncu's rule findings.
``gpus``
    device_id [int64], name [str], compute_capability [str, e.g. ``9.0``], sm_count [Int64],
    memory_bandwidth_bytes_per_s [Int64], clock_hz [Int64], l2_bytes [Int64],
    total_memory_bytes [Int64], max_warps_per_sm, max_blocks_per_sm, max_regs_per_sm,
    max_smem_per_sm_bytes, max_threads_per_block [Int64].
``meta``
    a dict: tool, tool_version, schema_version, command, host, capture_time_utc, source (path),
    and loader notes (``notes``: list of strings, e.g. "no kernel table in this export").

Tables are produced lazily.  A loader either fills tables eagerly (Kineto, ncu: ``Profile(kernels=df)``
or ``profile.kernels = df``) or hands the Profile a :class:`TableSource` (nsys SQLite) that produces
a table, or only some of its columns, when first asked: ``profile.kernels`` is the whole table,
``profile.table("kernels", columns=["name_id", "duration_ns"])`` only those columns, and
``profile.arrays(...)`` the same as numpy arrays without building a DataFrame (what the reports use:
integers as int64 with :data:`INT_NULL` for missing values, text as object arrays).  pandas is
imported only when a DataFrame is asked for.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from nsighttk.encoding import INT_NULL, Coded, Sum, compact, decoded, widen
from nsighttk.errors import ExportSchemaError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["INT_NULL", "SCHEMAS", "Coded", "Profile", "Sum", "TableSource", "compact", "decoded",
           "widen"]

_SMALL_IDS = ["device_id", "context_id", "green_context_id", "stream_id"]

#: Column name -> dtype for every Profile table.
SCHEMAS: dict[str, dict[str, str]] = {
    "kernels": {
        "start_ns": "int64", "end_ns": "int64", "duration_ns": "int64",
        "name": "object", "short_name": "object", "mangled_name": "object", "name_id": "int64",
        **{c: "Int32" for c in _SMALL_IDS}, "correlation_id": "Int64",
        "grid_x": "Int32", "grid_y": "Int32", "grid_z": "Int32",
        "block_x": "Int32", "block_y": "Int32", "block_z": "Int32",
        "registers_per_thread": "Int32", "static_smem_bytes": "Int32", "dynamic_smem_bytes": "Int32",
        "global_pid": "Int64", "pid": "Int64", "external_id": "Int64",
        "comm_in_nelems": "Int64", "comm_out_nelems": "Int64", "comm_dtype": "object", "comm_group_size": "Int32",
        "comm_op": "object",
    },
    "memcpy": {
        "start_ns": "int64", "end_ns": "int64", "duration_ns": "int64", "bytes": "int64",
        "kind": "object", "label": "object", "src_kind": "object", "dst_kind": "object",
        **{c: "Int32" for c in _SMALL_IDS}, "correlation_id": "Int64",
        "global_pid": "Int64", "pid": "Int64", "external_id": "Int64",
    },
    "memset": {
        "start_ns": "int64", "end_ns": "int64", "duration_ns": "int64", "bytes": "int64",
        "value": "Int64", "mem_kind": "object",
        **{c: "Int32" for c in _SMALL_IDS}, "correlation_id": "Int64",
        "global_pid": "Int64", "pid": "Int64", "external_id": "Int64",
    },
    "api": {
        "start_ns": "int64", "end_ns": "int64", "duration_ns": "int64", "name": "object",
        "name_id": "Int64", "correlation_id": "Int64", "global_tid": "Int64", "pid": "Int64",
        "tid": "Int64", "return_value": "Int64", "external_id": "Int64",
    },
    "ops": {
        "start_ns": "int64", "end_ns": "int64", "duration_ns": "int64", "name": "object",
        "pid": "Int64", "tid": "Int64", "external_id": "Int64", "sequence_number": "Int64",
        "input_dims": "object", "input_types": "object", "input_strides": "object",
        "concrete_inputs": "object", "parent": "Int64", "depth": "int64",
    },
    "nvtx": {
        "range_id": "int64", "start_ns": "int64", "end_ns": "Int64", "duration_ns": "Int64",
        "name": "object", "domain": "object", "style": "object", "depth": "int64",
        "global_tid": "Int64", "end_global_tid": "Int64", "pid": "Int64", "tid": "Int64",
        "comm_bytes": "Int64", "comm_group_size": "Int64",
    },
    "metrics": {
        "kernel_id": "int64", "kernel_name": "object", "section": "object", "metric": "object",
        "unit": "object", "value": "float64", "text": "object",
    },
    "rules": {
        "kernel_id": "int64", "kernel_name": "object", "section": "object", "rule": "object", "type": "object",
        "description": "object", "speedup_type": "object", "speedup_pct": "float64",
    },
    "gpus": {
        "device_id": "int64", "name": "object", "compute_capability": "object",
        "sm_count": "Int64", "memory_bandwidth_bytes_per_s": "Int64", "clock_hz": "Int64",
        "l2_bytes": "Int64", "total_memory_bytes": "Int64", "max_warps_per_sm": "Int64",
        "max_blocks_per_sm": "Int64", "max_regs_per_sm": "Int64", "max_smem_per_sm_bytes": "Int64",
        "max_threads_per_block": "Int64",
    },
}

TABLES = tuple(SCHEMAS)




def obj(values: Any, index: Any = None) -> pd.Series:
    """A Series of Python objects (strings) that pandas 3 must not convert to its ``str`` dtype:
    with pyarrow installed that conversion copies every kernel name into Arrow buffers, several
    hundred MB for a million kernels, where an object column shares one string per distinct name."""
    import pandas as pd

    return pd.Series(np.asarray(values, dtype=object), dtype=object, index=index)


def release_free_memory() -> None:
    """Give freed heap back to the OS (glibc keeps it, per thread arena), so that the next large
    step does not add its peak on top of memory nobody uses any more."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def empty_table(table: str) -> pd.DataFrame:
    """An empty DataFrame with ``table``'s columns and dtypes."""
    import pandas as pd

    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in SCHEMAS[table].items()})


def conform(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """Return ``df`` with exactly ``table``'s columns (missing ones added as nulls), in order."""
    return conform_columns(table, df, list(SCHEMAS[table]))


def conform_columns(table: str, df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Return ``df`` with exactly ``columns`` of ``table`` (missing ones added as nulls), in order."""
    import pandas as pd

    schema = SCHEMAS[table]
    out = {}
    n = len(df)
    for col in columns:
        dtype = schema[col]
        if col in df.columns:
            s = df[col]
            if dtype == "object":
                out[col] = s if s.dtype == object else s.astype(object)
            elif str(s.dtype) == dtype or isinstance(s.dtype, pd.CategoricalDtype):
                out[col] = s
            else:
                out[col] = s.astype(dtype)
        elif dtype == "object":
            out[col] = pd.Series(np.full(n, None, dtype=object), dtype=object, index=df.index)
        elif dtype in ("Int64", "Int32"):  # all null, without a Python list of n NAs
            np_dtype = "int64" if dtype == "Int64" else "int32"
            arr = pd.arrays.IntegerArray(np.zeros(n, dtype=np_dtype), np.ones(n, dtype=bool))
            out[col] = pd.Series(arr, index=df.index)
        else:
            out[col] = pd.Series([pd.NA] * n, dtype=dtype, index=df.index)
    return pd.DataFrame(out, index=df.index)


def require_columns(df: pd.DataFrame, columns: Iterable[str], where: str) -> None:
    """Raise a clear error when an analysis gets a frame without the columns it needs."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ExportSchemaError(f"{where}: missing column(s) {', '.join(missing)}")


def check_columns(table: str, columns: Iterable[str]) -> list[str]:
    """``columns`` as a list, after checking that each is a column of ``table``."""
    if table not in SCHEMAS:
        raise KeyError(f"no table {table!r} in a Profile (tables: {', '.join(TABLES)})")
    cols = list(columns)
    unknown = [c for c in cols if c not in SCHEMAS[table]]
    if unknown:
        raise KeyError(f"{table} has no column(s) {', '.join(unknown)}")
    return cols


def to_array(values: Any, dtype: str) -> np.ndarray:
    """One column as :meth:`Profile.arrays` gives it: int64 with :data:`INT_NULL` for missing
    values (integer dtypes), float64, or an object array."""
    import pandas as pd

    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if dtype in ("int64", "Int64", "Int32"):
        return s.to_numpy(dtype="int64", na_value=INT_NULL) if s.hasnans else s.to_numpy(dtype="int64")
    if dtype == "float64":
        return s.to_numpy(dtype="float64", na_value=np.nan)
    return s.to_numpy(dtype=object)


def empty_arrays(table: str, columns: list[str]) -> dict[str, np.ndarray]:
    """No rows of ``columns`` of ``table``, as :meth:`Profile.arrays` gives them."""
    schema = SCHEMAS[table]
    return {c: np.empty(0, dtype=object if schema[c] == "object" else
                        "float64" if schema[c] == "float64" else "int64") for c in columns}


def frame_of(table: str, arrays: dict[str, np.ndarray]) -> pd.DataFrame:
    """A DataFrame with the Profile's dtypes from :meth:`Profile.arrays` output."""
    import pandas as pd

    schema = SCHEMAS[table]
    data: dict[str, Any] = {}
    for c, arr in arrays.items():
        dtype = schema[c]
        if dtype in ("Int64", "Int32") and arr.dtype != object:
            arr = widen(arr)
            mask = arr == INT_NULL
            vals = np.where(mask, 0, arr)
            small = dtype == "Int32" and (len(vals) == 0 or (vals.min() >= -(2**31) and vals.max() < 2**31))
            data[c] = pd.arrays.IntegerArray(vals.astype("int32" if small else "int64"), mask)
        elif dtype == "object":
            data[c] = pd.Series(arr, dtype=object)
        else:
            data[c] = widen(arr)
    return pd.DataFrame(data, copy=False)


class TableSource(Protocol):
    """What a lazy loader gives a :class:`Profile`: tables, or some of their columns, on demand."""

    def count(self, table: str) -> int:
        """Rows of ``table`` (without reading them)."""

    def bound(self, table: str) -> int:
        """At least the rows of ``table``, found cheaper than :meth:`count` where it can be (what
        decides whether analyze says each step as it goes)."""

    def frame(self, table: str, columns: list[str]) -> pd.DataFrame:
        """``columns`` of ``table`` as a DataFrame with the Profile's dtypes."""

    def arrays(self, table: str, columns: list[str]) -> Mapping[str, np.ndarray | Coded | Sum]:
        """``columns`` of ``table`` as numpy arrays (see :meth:`Profile.arrays`); a column of few
        values may come as a :class:`Coded` one, an end derived from start and duration as a
        :class:`Sum` of them."""

    def names(self, table: str, ids: np.ndarray) -> np.ndarray:
        """The ``name`` for each ``name_id`` in ``ids`` (object array, None where unknown)."""


class _Table:
    """A Profile attribute that is a table: read produces it (lazily), assignment replaces it."""

    name: str

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, profile: Profile | None, owner: type | None = None) -> pd.DataFrame:
        if profile is None:
            raise AttributeError(self.name)
        return profile.table(self.name)

    def __set__(self, profile: Profile, df: pd.DataFrame) -> None:
        profile.replace(self.name, df)


class Profile:
    """A loaded capture.  Every table is always present (possibly empty); see the module doc.

    ``Profile(kernels=df, ...)`` holds tables given eagerly; ``Profile(source=s, meta=m)`` produces
    them from ``s`` when first asked for.  ``cache`` memoizes arrays derived by analyses (cleared
    when a table is replaced)."""

    kernels = _Table()
    memcpy = _Table()
    memset = _Table()
    api = _Table()
    nvtx = _Table()
    ops = _Table()
    metrics = _Table()
    rules = _Table()
    gpus = _Table()

    def __init__(self, kernels: pd.DataFrame | None = None, memcpy: pd.DataFrame | None = None,
                 memset: pd.DataFrame | None = None, api: pd.DataFrame | None = None,
                 nvtx: pd.DataFrame | None = None, ops: pd.DataFrame | None = None,
                 metrics: pd.DataFrame | None = None, rules: pd.DataFrame | None = None,
                 gpus: pd.DataFrame | None = None, meta: dict[str, Any] | None = None,
                 source: TableSource | None = None) -> None:
        self.meta: dict[str, Any] = meta if meta is not None else {}
        self.source = source
        self.cache: dict[Any, Any] = {}
        self._frames: dict[str, pd.DataFrame] = {}
        #: tables replaced by hand (:meth:`replace`): no longer the source's
        self.replaced: set[str] = set()
        given = {"kernels": kernels, "memcpy": memcpy, "memset": memset, "api": api, "nvtx": nvtx, "ops": ops,
                 "metrics": metrics, "rules": rules, "gpus": gpus}
        for name, df in given.items():
            if df is not None:
                self._frames[name] = df

    def __repr__(self) -> str:
        loaded = ", ".join(f"{t}={len(df)}" for t, df in self._frames.items())
        return f"Profile({self.meta.get('tool', '?')}, {self.meta.get('source', '')!s}, loaded: {loaded or 'none'})"

    def replace(self, name: str, df: pd.DataFrame) -> None:
        """Set table ``name`` to ``df`` (the source is no longer asked for it)."""
        check_columns(name, [])
        self._frames[name] = df
        self.replaced.add(name)
        self.cache.clear()

    def loaded(self, name: str) -> bool:
        """Whether ``name`` is held in memory as a whole (given eagerly or already produced)."""
        return name in self._frames

    def table(self, name: str, columns: Iterable[str] | None = None) -> pd.DataFrame:
        """Table ``name`` as a DataFrame: all columns (kept for later calls), or only ``columns``."""
        cols = check_columns(name, columns if columns is not None else [])
        if name not in self._frames and (columns is None or self.source is None):
            self._frames[name] = self.source.frame(name, list(SCHEMAS[name])) if self.source is not None \
                else empty_table(name)
        if name in self._frames:
            df = self._frames[name]
            return df if columns is None else df[cols]
        assert self.source is not None
        return frame_of(name, self.arrays(name, cols))

    def arrays(self, name: str, columns: Iterable[str], narrow: bool = False) -> dict[str, np.ndarray]:
        """``columns`` of table ``name`` as numpy arrays, without building a DataFrame when the
        source can avoid it: integers as int64 (:data:`INT_NULL` where missing), text as objects.
        With ``narrow``, integer columns may come in a narrower type whose minimum marks a missing
        value (see :func:`widen`): no int64 copy.  Read from the source at each call (the engine,
        :mod:`nsighttk.engine`, holds what analyses read)."""
        cols = check_columns(name, columns)
        if name in self._frames or self.source is None:
            df = self.table(name)
            missing = [c for c in cols if c not in df.columns]
            if missing:  # a table given by hand (or a loader's bug): say which, not pandas' KeyError
                raise ExportSchemaError(f"the {name} table is missing column(s) {', '.join(missing)}",
                                        f"a {name} table has the columns of nsighttk.profile.SCHEMAS[{name!r}]")
            return {c: to_array(df[c], SCHEMAS[name][c]) for c in cols}
        got = self.source.arrays(name, cols)
        return {c: decoded(got[c]) if narrow else widen(decoded(got[c])) for c in cols}

    def parts(self, name: str, columns: Iterable[str]) -> Iterator[dict[str, np.ndarray | Coded]]:
        """``columns`` of table ``name`` a chunk of rows at a time (as :meth:`arrays` gives them with
        ``narrow``; text of few values may stay :class:`Coded`), read from the source without
        keeping them; one chunk for a table held whole."""
        cols = check_columns(name, columns)
        parts = getattr(self.source, "parts", None)
        if name in self._frames or parts is None:
            yield dict(self.arrays(name, cols, narrow=True))
            return
        for part in parts(name, cols):
            yield {c: part[c] if isinstance(part[c], Coded) else decoded(part[c]) for c in cols}

    def names(self, name: str, ids: np.ndarray) -> np.ndarray:
        """The ``name`` of each ``name_id`` in ``ids`` for table ``name`` (None where unknown)."""
        ids = np.asarray(ids, dtype="int64")
        if name not in self._frames and self.source is not None:
            return self.source.names(name, ids)
        df = self.table(name, ["name_id", "name"])
        known = to_array(df["name_id"], "Int64")
        uniq, first = np.unique(known, return_index=True)
        names = df["name"].to_numpy(dtype=object)[first]
        pos = np.searchsorted(uniq, ids)
        pos_ok = np.minimum(pos, max(len(uniq) - 1, 0))
        hit = (pos < len(uniq)) & (uniq[pos_ok] == ids) if len(uniq) else np.zeros(len(ids), dtype=bool)
        out = np.full(len(ids), None, dtype=object)
        out[hit] = names[pos_ok[hit]]
        return out

    def count(self, name: str) -> int:
        """Rows in table ``name``, without producing it."""
        check_columns(name, [])
        if name in self._frames or self.source is None:
            return len(self.table(name))
        return self.source.count(name)

    def bound(self, name: str) -> int:
        """At least the rows in table ``name`` (:meth:`TableSource.bound`), found cheaper than :meth:`count`."""
        check_columns(name, [])
        if name in self._frames or self.source is None:
            return len(self.table(name))
        bound = getattr(self.source, "bound", None)  # (a source written before ``bound``: its count)
        return int(bound(name)) if bound is not None else self.source.count(name)

    @property
    def notes(self) -> list[str]:
        notes: list[str] = self.meta.setdefault("notes", [])
        return notes

    def counts(self) -> dict[str, int]:
        """Row counts per table, for summaries and ``run.json``."""
        return {t: self.count(t) for t in TABLES}
