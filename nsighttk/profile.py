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
    global_tid, end_global_tid, pid, tid [Int64].
``ops`` (torch.profiler / Kineto)
    start_ns, end_ns, duration_ns [int64]; name (``aten::mm``) [str]; pid, tid [Int64];
    external_id [Int64: what the kernels, copies and runtime calls an op launched carry in their
    ``external_id`` column]; sequence_number [Int64]; input_dims, input_types [str, with
    ``record_shapes``]; parent [Int64: row of the enclosing op on the same thread]; depth [int64].
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
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.errors import ExportSchemaError

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
        "input_dims": "object", "input_types": "object", "parent": "Int64", "depth": "int64",
    },
    "nvtx": {
        "range_id": "int64", "start_ns": "int64", "end_ns": "Int64", "duration_ns": "Int64",
        "name": "object", "domain": "object", "style": "object", "depth": "int64",
        "global_tid": "Int64", "end_global_tid": "Int64", "pid": "Int64", "tid": "Int64",
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
    return pd.Series(np.asarray(values, dtype=object), dtype=object, index=index)


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


def release_free_memory() -> None:
    """Give freed heap back to the OS (glibc keeps it, per thread arena), so that the next large
    step does not add its peak on top of memory nobody uses any more."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def empty_table(table: str) -> pd.DataFrame:
    """An empty DataFrame with ``table``'s columns and dtypes."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in SCHEMAS[table].items()})


def conform(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """Return ``df`` with exactly ``table``'s columns (missing ones added as nulls), in order."""
    schema = SCHEMAS[table]
    out = {}
    n = len(df)
    for col, dtype in schema.items():
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


@dataclass
class Profile:
    """A loaded capture.  Every table is always present (possibly empty); see the module doc."""

    kernels: pd.DataFrame = field(default_factory=lambda: empty_table("kernels"))
    memcpy: pd.DataFrame = field(default_factory=lambda: empty_table("memcpy"))
    memset: pd.DataFrame = field(default_factory=lambda: empty_table("memset"))
    api: pd.DataFrame = field(default_factory=lambda: empty_table("api"))
    nvtx: pd.DataFrame = field(default_factory=lambda: empty_table("nvtx"))
    ops: pd.DataFrame = field(default_factory=lambda: empty_table("ops"))
    metrics: pd.DataFrame = field(default_factory=lambda: empty_table("metrics"))
    rules: pd.DataFrame = field(default_factory=lambda: empty_table("rules"))
    gpus: pd.DataFrame = field(default_factory=lambda: empty_table("gpus"))
    meta: dict[str, Any] = field(default_factory=dict)
    #: Memo of derived arrays shared by analyses (cleared when a table is replaced by hand).
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def table(self, name: str) -> pd.DataFrame:
        if name not in SCHEMAS:
            raise KeyError(name)
        df: pd.DataFrame = getattr(self, name)
        return df

    @property
    def notes(self) -> list[str]:
        notes: list[str] = self.meta.setdefault("notes", [])
        return notes

    def counts(self) -> dict[str, int]:
        """Row counts per table, for summaries and ``run.json``."""
        return {t: len(self.table(t)) for t in TABLES}
