"""Load an Nsight Systems SQLite export (``nsys export --type sqlite``) into a :class:`Profile`.

Tolerant of nsys versions: tables and columns are looked up before they are read, so exports
without a kernel table (nsys 2022.4 tracing a CUDA 13 program), without NVTX, without
``shortName``/``greenContextId``/``copyCount`` or without the ENUM tables still load; what is
missing is an empty table plus a line in ``profile.notes``.  The file is opened read-only
(``mode=ro&immutable=1``): the user's export is never modified.
"""

from __future__ import annotations

import os
import sqlite3
import urllib.parse
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.errors import ExportSchemaError, InputFileError
from nsighttk.profile import SCHEMAS, Profile, conform, empty_table, obj, release_free_memory

SQLITE_MAGIC = b"SQLite format 3\x00"

# CUPTI's memcpy kinds (CUpti_ActivityMemcpyKind): stable across nsys versions.
MEMCPY_KINDS = {
    0: ("Unknown", "Unknown"), 1: ("HtoD", "Host-to-Device"), 2: ("DtoH", "Device-to-Host"),
    3: ("HtoA", "Host-to-Array"), 4: ("AtoH", "Array-to-Host"), 5: ("AtoA", "Array-to-Array"),
    6: ("AtoD", "Array-to-Device"), 7: ("DtoA", "Device-to-Array"), 8: ("DtoD", "Device-to-Device"),
    9: ("HtoH", "Host-to-Host"), 10: ("PtoP", "Peer-to-Peer"),
    11: ("UVM_HtoD", "Unified Host-to-Device"), 12: ("UVM_DtoH", "Unified Device-to-Host"),
    13: ("UVM_DtoD", "Unified Device-to-Device"),
}
MEM_KINDS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed",
             5: "Device Static", 6: "Managed Static", 7: "Unknown"}

# NVTX event types in NVTX_EVENTS.eventType
NVTX_PUSHPOP, NVTX_STARTEND, NVTXT_PUSHPOP, NVTXT_STARTEND, NVTX_DOMAIN_CREATE = 59, 60, 70, 71, 75
NVTX_RANGE_TYPES = (NVTX_PUSHPOP, NVTX_STARTEND, NVTXT_PUSHPOP, NVTXT_STARTEND)

# Tables whose presence marks a file as an Nsight Systems export.
_NSYS_MARKERS = ("StringIds", "TARGET_INFO_SESSION_START_TIME", "META_DATA_EXPORT", "TARGET_INFO_GPU",
                 "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS")


def _uri(path: Path) -> str:
    return "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro&immutable=1"


def open_readonly(path: str | Path) -> sqlite3.Connection:
    """Open an SQLite file read-only after checking that it is one; clear errors otherwise."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"{p}: no such file", "check the path")
    if p.is_dir():
        raise InputFileError(f"{p}: is a directory, not an nsys export",
                             "give the .sqlite or .nsys-rep file inside it")
    try:
        with p.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as ex:
        raise InputFileError(f"{p}: cannot read ({ex.strerror})") from None
    if head != SQLITE_MAGIC:
        raise InputFileError(f"{p}: not an SQLite file",
                             "export one with: nsys export --type sqlite FILE.nsys-rep")
    try:
        con = sqlite3.connect(_uri(p), uri=True, check_same_thread=False)
        con.execute("PRAGMA schema_version").fetchone()
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as ex:
        raise InputFileError(f"{p}: corrupt or truncated SQLite file ({ex})",
                             "re-export it with: nsys export --type sqlite") from None
    return con


class _Export:
    """Schema introspection over one open export."""

    def __init__(self, con: sqlite3.Connection, path: Path) -> None:
        self.con = con
        self.path = path
        self.uri = _uri(path)
        try:
            rows = con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')").fetchall()
        except sqlite3.DatabaseError as ex:
            raise InputFileError(f"{path}: corrupt SQLite file ({ex})") from None
        self.tables = {r[0] for r in rows}
        self._cols: dict[str, list[str]] = {}

    def has(self, table: str) -> bool:
        return table in self.tables

    def columns(self, table: str) -> list[str]:
        if table not in self._cols:
            self._cols[table] = [r[1] for r in self.con.execute(f'PRAGMA table_info("{table}")')]
        return self._cols[table]

    def select(self, table: str, wanted: dict[str, str], where: str = "",
               dtypes: dict[str, str] | None = None) -> pd.DataFrame:
        """SELECT the ``wanted`` columns ({source: target}) that exist; absent ones are skipped.

        Rows are read in small chunks straight into per-column arrays, so a million-row table
        never exists as Python tuples all at once."""
        have = set(self.columns(table))
        pairs = [(src, dst) for src, dst in wanted.items() if src in have]
        if not where:
            fast = self._integer_columns_parallel(table, pairs, dtypes or {})
            if fast is not None:
                return fast
        cols = ", ".join(f'"{src}"' for src, _ in pairs)
        return self.columns_of(f'SELECT {cols} FROM "{table}" {where}', [dst for _, dst in pairs],
                               f'SELECT count(*) FROM "{table}" {where}')

    def _integer_columns_parallel(self, table: str, pairs: list[tuple[str, str]],
                                  dtypes: dict[str, str]) -> pd.DataFrame | None:
        """Bulk path for large tables of integers: SQLite joins each column of a rowid range into
        one string (``group_concat``, in C), numpy parses it (in C), and ranges are read on
        several read-only connections at once (SQLite releases the GIL).  Returns None (use
        the row path) for small tables, tables without rowids, or any non-integer value."""
        try:
            n, lo, hi = self.con.execute(f'SELECT count(*), min(rowid), max(rowid) FROM "{table}"').fetchone()
        except sqlite3.DatabaseError:
            return None
        if n < _BULK_MIN_ROWS or lo is None:
            return None
        step = max(_BULK_RANGE, (hi - lo + 1) // (8 * _workers()) + 1)
        ranges = [(a, min(a + step, hi + 1)) for a in range(lo, hi + 1, step)]
        sql = ("SELECT count(*), " + ", ".join(f"group_concat(coalesce(\"{src}\", {_NULL}), ',')" for src, _ in pairs)
               + f' FROM "{table}" WHERE rowid >= ? AND rowid < ?')

        def read(bounds: tuple[int, int]) -> list[np.ndarray] | None:
            con = sqlite3.connect(self.uri, uri=True, check_same_thread=False)
            try:
                row = con.execute(sql, bounds).fetchone()
            finally:
                con.close()
            count, texts = row[0], row[1:]
            out = []
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                for text in texts:
                    try:
                        arr = np.fromstring(text, dtype=np.int64, sep=",") if count else np.empty(0, np.int64)
                    except (ValueError, DeprecationWarning, TypeError):
                        return None
                    if len(arr) != count:
                        return None
                    out.append(arr)
            return out

        try:
            with ThreadPoolExecutor(max_workers=_workers()) as pool:
                parts = list(pool.map(read, ranges))
        except sqlite3.DatabaseError as ex:
            raise InputFileError(f"{self.path}: corrupt or truncated SQLite file ({ex})",
                                 "re-export it with: nsys export --type sqlite") from None
        if any(part is None for part in parts):
            return None
        columns = [[part[j] for part in parts if part is not None] for j in range(len(pairs))]
        del parts
        data = {}
        for j, (_, dst) in enumerate(pairs):
            values = np.concatenate(columns[j])
            columns[j] = []  # free this column's chunks before assembling the next
            mask = values == _NULL
            if dtypes.get(dst) == "Int32" and values.size and \
                    np.abs(values[~mask]).max(initial=0) < 2**31:  # store small ids in 32 bits right away
                values = values.astype("int32")
            if mask.any() or dtypes.get(dst, "").startswith("Int"):
                values[mask] = 0
                data[dst] = pd.arrays.IntegerArray(values, mask)
            else:
                data[dst] = values
        return pd.DataFrame(data, copy=False)

    def columns_of(self, sql: str, names: list[str], count_sql: str) -> pd.DataFrame:
        try:
            (n,) = self.con.execute(count_sql).fetchone()
            cur = self.con.execute(sql)
            store: list[list[Any]] = [[] for _ in names]
            arrays: list[Any] = [None] * len(names)
            filled = 0
            while True:
                rows = cur.fetchmany(_CHUNK)
                if not rows:
                    break
                for j, col in enumerate(zip(*rows, strict=True)):
                    arrays[j] = _append(arrays[j], col, filled, n, store[j])
                filled += len(rows)
        except sqlite3.DatabaseError as ex:
            raise InputFileError(f"{self.path}: corrupt or truncated SQLite file ({ex})",
                                 "re-export it with: nsys export --type sqlite") from None
        return pd.DataFrame({name: _finish(arrays[j], store[j], filled) for j, name in enumerate(names)})

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> pd.DataFrame:
        """Small queries (enums, strings, NVTX): plain records."""
        try:
            cur = self.con.execute(sql, params)
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
        except sqlite3.DatabaseError as ex:
            raise InputFileError(f"{self.path}: corrupt or truncated SQLite file ({ex})",
                                 "re-export it with: nsys export --type sqlite") from None
        if not rows:
            return pd.DataFrame({n: pd.Series(dtype="object") for n in names})
        return pd.DataFrame.from_records(rows, columns=names)

    def strings(self) -> pd.Series:
        if not self.has("StringIds"):
            return pd.Series(dtype="object")
        df = self.query("SELECT id, value FROM StringIds")
        return pd.Series(df["value"].to_numpy(dtype=object), index=df["id"].to_numpy(dtype="int64"))

    def enum_labels(self, table: str) -> dict[int, str] | None:
        if not self.has(table):
            return None
        df = self.query(f'SELECT id, label FROM "{table}"')
        return dict(zip(df["id"].astype("int64"), df["label"], strict=True))

    def meta(self, table: str) -> dict[str, str]:
        if not self.has(table):
            return {}
        out: dict[str, str] = {}
        for name, value in self.con.execute(f'SELECT name, value FROM "{table}"'):
            out.setdefault(name, value)
        return out


_CHUNK = 20_000
_BULK_MIN_ROWS = 50_000
_BULK_RANGE = 65_536
_NULL = -(2**63)  # stands for NULL in the bulk path (no nsys id or timestamp takes this value)


def _workers() -> int:
    """Reader threads for large tables: ``$NSIGHTTK_THREADS``, else up to 8 (one per core)."""
    env = os.environ.get("NSIGHTTK_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(8, os.cpu_count() or 1))


class _Column:
    """A column being filled: int64 values plus a null mask, or objects when not integers."""

    def __init__(self, n: int) -> None:
        self.values = np.zeros(n, dtype="int64")
        self.mask = np.zeros(n, dtype=bool)


def _append(acc: Any, col: tuple[Any, ...], start: int, n: int, objects: list[Any]) -> Any:
    if acc is None:
        acc = _Column(n) if all(isinstance(v, int) or v is None for v in col) else "objects"
    if isinstance(acc, _Column):
        if all(isinstance(v, int) or v is None for v in col):
            end = start + len(col)
            mask = np.fromiter((v is None for v in col), dtype=bool, count=len(col))
            acc.mask[start:end] = mask
            acc.values[start:end] = np.fromiter((0 if v is None else v for v in col), dtype="int64", count=len(col)) \
                if mask.any() else np.fromiter(col, dtype="int64", count=len(col))
            return acc
        # Mixed types after all: fall back to objects for what was read so far.
        objects.extend(pd.array(acc.values[:start], dtype="Int64").astype(object).tolist())
        for i in np.flatnonzero(acc.mask[:start]):
            objects[i] = None
        acc = "objects"
    objects.extend(col)
    return acc


def _finish(acc: Any, objects: list[Any], filled: int) -> Any:
    if isinstance(acc, _Column):
        if acc.mask[:filled].any():
            return pd.arrays.IntegerArray(acc.values[:filled], acc.mask[:filled])
        return acc.values[:filled]
    if acc is None:
        return np.array([], dtype=object)
    return np.array(objects, dtype=object)


def _lookup(ids: pd.Series, strings: pd.Series) -> np.ndarray:
    """Map string ids to their text (None where unknown), sharing the string objects."""
    if len(ids) == 0:
        return np.array([], dtype=object)
    idx = pd.Index(strings.index)
    pos = idx.get_indexer(pd.to_numeric(ids, errors="coerce").fillna(-1).astype("int64"))
    values = strings.to_numpy(dtype=object)
    out = np.empty(len(ids), dtype=object)
    ok = pos >= 0
    out[ok] = values[pos[ok]]
    out[~ok] = None
    return out


def _pid_of(global_id: pd.Series) -> pd.Series:
    g = global_id.astype("Int64")
    return (g // (1 << 24)) % (1 << 24)


def _tid_of(global_tid: pd.Series) -> pd.Series:
    return global_tid.astype("Int64") % (1 << 24)


def _durations(df: pd.DataFrame) -> pd.DataFrame:
    start = df["start_ns"].to_numpy(dtype="int64", copy=False)
    end = df["end_ns"].to_numpy(dtype="int64", copy=False)
    df["start_ns"], df["end_ns"] = start, end
    df["duration_ns"] = end - start
    return df


_GPU_IDS = {"deviceId": "device_id", "contextId": "context_id", "greenContextId": "green_context_id",
            "streamId": "stream_id", "correlationId": "correlation_id", "globalPid": "global_pid"}


def _load_kernels(ex: _Export, strings: pd.Series, notes: list[str]) -> pd.DataFrame:
    table = "CUPTI_ACTIVITY_KIND_KERNEL"
    if not ex.has(table):
        notes.append("no CUDA kernels in this capture (none ran, or CUDA kernels were not traced)")
        return empty_table("kernels")
    df = ex.select(table, {
        "start": "start_ns", "end": "end_ns", "demangledName": "name_id", "shortName": "short_id",
        "mangledName": "mangled_id", **_GPU_IDS,
        "gridX": "grid_x", "gridY": "grid_y", "gridZ": "grid_z",
        "blockX": "block_x", "blockY": "block_y", "blockZ": "block_z",
        "registersPerThread": "registers_per_thread", "staticSharedMemory": "static_smem_bytes",
        "dynamicSharedMemory": "dynamic_smem_bytes",
    }, dtypes=SCHEMAS["kernels"])
    if "name_id" not in df.columns:
        raise ExportSchemaError(f"{ex.path}: kernel table without demangledName column",
                                "re-export it with a newer nsys")
    df = _durations(df)
    df["name"] = obj(_lookup(df["name_id"], strings), df.index)
    df["short_name"] = obj(_lookup(df["short_id"], strings), df.index) if "short_id" in df else df["name"]
    df["mangled_name"] = obj(_lookup(df["mangled_id"], strings), df.index) if "mangled_id" in df else None
    df["name_id"] = df["name_id"].astype("int64")
    if "global_pid" in df:
        df["pid"] = _pid_of(df["global_pid"])
    return conform("kernels", df)


def _load_memcpy(ex: _Export, notes: list[str]) -> pd.DataFrame:
    table = "CUPTI_ACTIVITY_KIND_MEMCPY"
    if not ex.has(table):
        notes.append("no CUDA memcpys in this capture")
        return empty_table("memcpy")
    df = ex.select(table, {"start": "start_ns", "end": "end_ns", "bytes": "bytes", "copyKind": "copy_kind",
                           "srcKind": "src", "dstKind": "dst", **_GPU_IDS}, dtypes=SCHEMAS["memcpy"])
    df = _durations(df)
    df["bytes"] = df["bytes"].astype("int64")
    kinds = df["copy_kind"].astype("int64")
    labels = ex.enum_labels("ENUM_CUDA_MEMCPY_OPER")
    if labels is None:
        notes.append("no ENUM_CUDA_MEMCPY_OPER table: memcpy labels taken from CUPTI's enum")
        labels = {k: v[1] for k, v in MEMCPY_KINDS.items()}
    df["label"] = obj(kinds.map(labels), df.index)
    df["kind"] = obj(kinds.map({k: v[0] for k, v in MEMCPY_KINDS.items()}).fillna("Unknown"), df.index)
    mem_labels = ex.enum_labels("ENUM_CUDA_MEM_KIND") or MEM_KINDS
    df["src_kind"] = obj(df["src"].map(mem_labels), df.index) if "src" in df else None
    df["dst_kind"] = obj(df["dst"].map(mem_labels), df.index) if "dst" in df else None
    if "global_pid" in df:
        df["pid"] = _pid_of(df["global_pid"])
    return conform("memcpy", df)


def _load_memset(ex: _Export, notes: list[str]) -> pd.DataFrame:
    table = "CUPTI_ACTIVITY_KIND_MEMSET"
    if not ex.has(table):
        return empty_table("memset")
    df = ex.select(table, {"start": "start_ns", "end": "end_ns", "bytes": "bytes", "value": "value",
                           "memKind": "mem", **_GPU_IDS})
    df = _durations(df)
    df["bytes"] = df["bytes"].astype("int64")
    mem_labels = ex.enum_labels("ENUM_CUDA_MEM_KIND") or MEM_KINDS
    df["mem_kind"] = obj(df["mem"].map(mem_labels), df.index) if "mem" in df else None
    if "global_pid" in df:
        df["pid"] = _pid_of(df["global_pid"])
    return conform("memset", df)


def _load_api(ex: _Export, strings: pd.Series, notes: list[str]) -> pd.DataFrame:
    table = "CUPTI_ACTIVITY_KIND_RUNTIME"
    if not ex.has(table):
        notes.append("no CUDA API calls in this capture (the program made none, or CUDA was not traced)")
        return empty_table("api")
    df = ex.select(table, {"start": "start_ns", "end": "end_ns", "nameId": "name_id",
                           "correlationId": "correlation_id", "globalTid": "global_tid",
                           "returnValue": "return_value"}, dtypes=SCHEMAS["api"])
    df = _durations(df)
    df["name"] = obj(_lookup(df["name_id"], strings), df.index)
    if "global_tid" in df:
        df["pid"] = _pid_of(df["global_tid"])
        df["tid"] = _tid_of(df["global_tid"])
    return conform("api", df)


def _load_nvtx(ex: _Export, notes: list[str], meta: dict[str, Any]) -> pd.DataFrame:
    if not ex.has("NVTX_EVENTS"):
        notes.append("no NVTX ranges in this capture")
        return empty_table("nvtx")
    cols = set(ex.columns("NVTX_EVENTS"))
    has_sid = ex.has("StringIds") and "textId" in cols
    text_expr = "coalesce(sid.value, ne.text, '')" if has_sid else "coalesce(ne.text, '')"
    dtext_expr = "coalesce(sid.value, ne.text)" if has_sid else "ne.text"
    sid_join = "LEFT JOIN StringIds AS sid ON ne.textId == sid.id" if has_sid else ""
    end_gtid = "ne.endGlobalTid" if "endGlobalTid" in cols else "NULL"
    domain_id = "ne.domainId" if "domainId" in cols else "0"
    types = ",".join(str(t) for t in NVTX_RANGE_TYPES)
    # Domain names: one per (domainId, thread) registration, matched on the process.
    sql = f"""
        WITH domains AS (
            SELECT min(ne.start), {domain_id} AS id, ne.globalTid AS globalTid, {dtext_expr} AS name
            FROM NVTX_EVENTS AS ne {sid_join}
            WHERE ne.eventType == {NVTX_DOMAIN_CREATE}
            GROUP BY 2, 3
        )
        SELECT ne.rowid AS range_id, ne.start AS start_ns, ne.end AS end_ns, {text_expr} AS name,
               coalesce(d.name, '') AS domain, ne.eventType AS event_type, ne.globalTid AS global_tid,
               {end_gtid} AS end_global_tid
        FROM NVTX_EVENTS AS ne
        LEFT JOIN domains AS d
            ON {domain_id} == d.id
           AND (ne.globalTid & 0x0000FFFFFF000000) == (d.globalTid & 0x0000FFFFFF000000)
        {sid_join}
        WHERE ne.eventType IN ({types})
        ORDER BY ne.rowid
    """
    df = ex.query(sql)
    bounds = ex.con.execute(
        f"SELECT max(max(start), max(end)), min(min(start), min(end)), "
        f"(SELECT max(max(start), max(end)) FROM NVTX_EVENTS WHERE eventType IN ({types})) FROM NVTX_EVENTS"
    ).fetchone()
    meta["nvtx_max_ts_all"] = bounds[0]
    meta["nvtx_max_ts_ranges"] = bounds[2]
    if df.empty:
        notes.append("NVTX table has no ranges")
        return empty_table("nvtx")
    df["start_ns"] = df["start_ns"].astype("int64")
    df["end_ns"] = df["end_ns"].astype("Int64")
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    df["style"] = np.where(df["event_type"].isin([NVTX_PUSHPOP, NVTXT_PUSHPOP]), "PushPop", "StartEnd")
    df["pid"] = _pid_of(df["global_tid"])
    df["tid"] = _tid_of(df["global_tid"])
    from nsighttk.analysis.nvtx import nesting_depth  # pure helper; keeps depth logic in one place

    df["depth"] = 0
    df = conform("nvtx", df)
    df["depth"] = nesting_depth(df, max_ts=meta["nvtx_max_ts_ranges"]).astype("int64")
    return df


def _load_gpus(ex: _Export) -> pd.DataFrame:
    if not ex.has("TARGET_INFO_GPU"):
        return empty_table("gpus")
    df = ex.select("TARGET_INFO_GPU", {
        "id": "device_id", "name": "name", "computeMajor": "major", "computeMinor": "minor",
        "smCount": "sm_count", "memoryBandwidth": "memory_bandwidth_bytes_per_s", "clockRate": "clock_hz",
        "l2CacheSize": "l2_bytes", "totalMemory": "total_memory_bytes", "maxWarpsPerSm": "max_warps_per_sm",
        "maxBlocksPerSm": "max_blocks_per_sm", "maxRegistersPerSm": "max_regs_per_sm",
        "maxShmemPerSm": "max_smem_per_sm_bytes", "maxThreadsPerBlock": "max_threads_per_block",
    })
    if "major" in df and "minor" in df:
        df["compute_capability"] = df["major"].astype(str) + "." + df["minor"].astype(str)
    return conform("gpus", df)


def _meta(ex: _Export, path: Path) -> dict[str, Any]:
    export = ex.meta("META_DATA_EXPORT")
    capture = ex.meta("META_DATA_CAPTURE")
    command = []
    if "PROCESS_0:COMMAND" in capture:
        command.append(capture["PROCESS_0:COMMAND"])
        i = 0
        while f"PROCESS_0:ARGUMENT_{i}" in capture:
            command.append(capture[f"PROCESS_0:ARGUMENT_{i}"])
            i += 1
    start = None
    if ex.has("TARGET_INFO_SESSION_START_TIME"):
        row = ex.con.execute("SELECT * FROM TARGET_INFO_SESSION_START_TIME").fetchone()
        start = row[1] if row and len(row) > 1 else None
    return {
        "tool": "nsys",
        "tool_version": export.get("EXPORT_PRODUCT_VERSION"),
        "schema_version": export.get("EXPORT_SCHEMA_VERSION"),
        "command": command,
        "host": export.get("EXPORT_HOST"),
        "capture_time_utc": start,
        "source": str(path),
        "notes": [],
    }


def load_nsys_sqlite(path: str | Path) -> Profile:
    """Read an nsys SQLite export into a :class:`Profile` (read-only; tolerant of versions)."""
    p = Path(path)
    con = open_readonly(p)
    try:
        ex = _Export(con, p)
        if not any(ex.has(t) for t in _NSYS_MARKERS):
            raise ExportSchemaError(f"{p}: an SQLite file, but not an Nsight Systems export "
                                    "(none of its tables are nsys ones)",
                                    "give a file made by: nsys export --type sqlite")
        meta = _meta(ex, p)
        notes: list[str] = meta["notes"]
        strings = ex.strings()
        profile = Profile(
            kernels=_load_kernels(ex, strings, notes),
            memcpy=_load_memcpy(ex, notes),
            memset=_load_memset(ex, notes),
            api=_load_api(ex, strings, notes),
            nvtx=_load_nvtx(ex, notes, meta),
            gpus=_load_gpus(ex),
            meta=meta,
        )
    finally:
        con.close()
    release_free_memory()
    return profile


