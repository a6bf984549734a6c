"""Open an Nsight Systems SQLite export (``nsys export --type sqlite``) as a lazy :class:`Profile`.

Opening reads only the schema, the metadata and the small tables; a table, or some of its
columns, is read when an analysis first asks for it (:class:`NsysSource`), as numpy arrays through
:mod:`nsighttk.load.sqlite_columns` or as a DataFrame.

Tolerant of nsys versions: tables and columns are looked up before they are read, so exports
without a kernel table (nsys 2022.4 tracing a CUDA 13 program), without NVTX, without
``shortName``/``greenContextId``/``copyCount`` or without the ENUM tables still load; what is
missing is an empty table plus a line in ``profile.notes``.

Tolerant of damage: values that are not integers where integers belong are missing values; an
event whose start or end is not an integer, or that ends before it starts, is dropped, with a note
saying how many and why; string ids that StringIds lacks give empty names, duplicated ones the
first.  A file that is not SQLite, or whose pages cannot be read, is one :class:`InputFileError`.
The file is opened read-only (``mode=ro&immutable=1``): the user's export is never modified.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nsighttk.encoding import few_values
from nsighttk.errors import ExportSchemaError, InputFileError, message_of
from nsighttk.load.nsys_nvtx import nvtx_arrays, nvtx_parts, pid_of, tid_of
from nsighttk.load.nsys_schema import (
    DURATION_SQL,
    EVENT_TABLES,
    MEM_KINDS,
    MEMCPY_KINDS,
    NSYS_MARKERS,
    NVTX_WHERE,
    SQLITE_MAGIC,
    decode_text,
    readonly_uri,
)
from nsighttk.load.sqlite_columns import Reader, corrupt
from nsighttk.profile import (
    INT_NULL,
    SCHEMAS,
    Coded,
    Profile,
    Sum,
    check_columns,
    decoded,
    empty_arrays,
    frame_of,
    to_array,
    widen,
)
from nsighttk.safeio import check_input

if TYPE_CHECKING:
    import pandas as pd

#: Derived Profile columns -> the raw columns they are computed from.
_DERIVED = {
    "name": ["name_id"], "short_name": ["_short_id", "name_id"], "mangled_name": ["_mangled_id"],
    "pid": ["global_pid", "global_tid"], "tid": ["global_tid"],
    "kind": ["_copy_kind"], "label": ["_copy_kind"], "src_kind": ["_src"], "dst_kind": ["_dst"], "mem_kind": ["_mem"],
}


_MISSING_NOTES = {
    "kernels": "no CUDA kernels in this capture (none ran, or CUDA kernels were not traced)",
    "memcpy": "no CUDA memcpys in this capture",
    "api": "no CUDA API calls in this capture (the program made none, or CUDA was not traced)",
    "nvtx": "no NVTX ranges in this capture",
}


def _corrupt(path: Path, ex: BaseException) -> InputFileError:
    """The loader's one line for a damaged file, SQLite's message decoded with replacement."""
    return corrupt(path, Exception(message_of(ex)))


def _uri(path: Path) -> str:
    return readonly_uri(path)


def open_readonly(path: str | Path) -> sqlite3.Connection:
    """Open an SQLite file read-only after checking that it is one; clear errors otherwise."""
    p = Path(path)
    if p.is_dir():
        raise InputFileError(f"{p}: is a directory, not an nsys export",
                             "give the .sqlite or .nsys-rep file inside it")
    check_input(p)
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
        con.text_factory = decode_text  # names with invalid UTF-8 still load
        con.execute("PRAGMA schema_version").fetchone()
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as ex:
        raise _corrupt(p, ex) from None
    return con


@dataclass
class _Plan:
    """An event table's read: the SQL table, the expressions read (the duration first), the
    Profile columns and raw ones they need, and the rules the rows are shaped by."""

    sql_table: str
    exprs: list[str]
    raw: list[str]
    present: list[str]
    have: set[str]
    checks_bytes: bool
    derive_end: bool


class NsysSource:
    """The tables of one nsys export, read on demand (the :class:`~nsighttk.profile.TableSource`)."""

    def __init__(self, con: sqlite3.Connection, path: Path, meta: dict[str, Any]) -> None:
        self.con = con
        self.path = path
        self.meta = meta
        self.reader = Reader(path)
        try:
            rows = con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')").fetchall()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as ex:
            raise _corrupt(path, ex) from None
        self.tables = {r[0] for r in rows}
        self._cols: dict[str, list[str]] = {}
        self._strings: dict[int, str | None] | None = None
        self._checked: set[str] = set()
        self._small: dict[str, pd.DataFrame] = {}
        #: What must live as long as this source (the temporary folder of an exported .nsys-rep).
        self.keep_alive: object | None = None
        self._counts: dict[str, int] = {}
        #: NCCL's payload sizes by NVTX rowid (:func:`nsighttk.load.nvtx_payloads.nccl_sizes`), read on first use
        self.nccl_payloads: dict[int, tuple[int, int | None]] | None = None

    # ------------------------------------------------------------------------------ schema
    def has(self, table: str) -> bool:
        return table in self.tables

    def columns(self, table: str) -> list[str]:
        if table not in self._cols:
            try:
                self._cols[table] = [r[1] for r in self.con.execute(f'PRAGMA table_info("{table}")')]
            except (sqlite3.DatabaseError, UnicodeDecodeError) as ex:
                raise _corrupt(self.path, ex) from None
        return self._cols[table]

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.con.execute(sql, params).fetchall()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as ex:
            raise _corrupt(self.path, ex) from None

    @property
    def notes(self) -> list[str]:
        notes: list[str] = self.meta.setdefault("notes", [])
        return notes

    # ----------------------------------------------------------------------------- strings
    def strings(self) -> dict[int, str | None]:
        """StringIds as a dict (the first value of an id listed twice; text only)."""
        if self._strings is None:
            out: dict[int, str | None] = {}
            if self.has("StringIds") and {"id", "value"} <= set(self.columns("StringIds")):
                for i, v in self.query("SELECT id, value FROM StringIds ORDER BY rowid"):
                    if isinstance(i, int) and i not in out:
                        out[i] = v if isinstance(v, str) else None
            self._strings = out
        return self._strings

    def _lookup(self, ids: np.ndarray) -> np.ndarray:
        """Text of each string id (None where unknown), one shared object per distinct id."""
        return self._coded(ids).decode()

    def _coded(self, ids: np.ndarray) -> Coded:
        """Text of each string id as codes into the distinct ones (code -1, None: no id)."""
        s = self.strings()
        known = ids != np.iinfo(ids.dtype).min  # a missing id (INT_NULL, or a narrowed array's minimum)
        vals = ids[known] if not known.all() else ids
        if not len(vals):
            return Coded(np.full(len(ids), -1, dtype=np.int8), np.empty(0, dtype=object))
        lo, hi = int(vals.min()), int(vals.max())
        if hi - lo <= 4 * len(vals) + 65536:  # string ids are dense: a table by id, not a sort of every id
            # (offsets in 32 bits where they fit: 10M kernels' ids, 40 MB where int64 took 80)
            rel = np.empty(len(vals), dtype=np.int32 if hi - lo < 2**31 else np.int64)
            wide = np.int64 if np.int64 in (vals.dtype, rel.dtype) else np.int32  # (the loop's type)
            np.subtract(vals, lo, out=rel, dtype=wide, casting="unsafe")  # (each offset fits in rel)
            present = np.zeros(hi - lo + 1, dtype=bool)
            present[rel] = True
            uniq = np.flatnonzero(present)
            small = next(t for t in (np.int8, np.int16, np.int32) if len(uniq) <= np.iinfo(t).max)
            remap = np.full(hi - lo + 1, -1, dtype=small)  # (codes made in their final type)
            remap[uniq] = np.arange(len(uniq), dtype=small)
            codes = remap[rel]
            del rel
        else:
            uniq, inverse = np.unique(vals, return_inverse=True)
            uniq, lo, codes = uniq, 0, inverse.ravel().astype(np.int32)
        values = np.empty(len(uniq), dtype=object)
        values[:] = [s.get(int(i) + lo) for i in uniq]
        if vals is not ids:
            full = np.full(len(ids), -1, dtype=codes.dtype)
            full[known] = codes
            codes = full
        return Coded(codes, values).compact()

    def names(self, table: str, ids: np.ndarray) -> np.ndarray:
        s = self.strings()
        out = np.empty(len(ids), dtype=object)
        out[:] = [s.get(int(i)) for i in ids]
        return out

    def enum_labels(self, table: str) -> dict[int, str] | None:
        if not self.has(table) or not {"id", "label"} <= set(self.columns(table)):
            return None
        return {int(i): str(lab) for i, lab in self.query(f'SELECT id, label FROM "{table}"')
                if isinstance(i, int) and lab is not None}

    # ------------------------------------------------------------------------------ counts
    def count(self, table: str) -> int:
        if table not in self._counts:  # the file is immutable: count once
            self._counts[table] = self._count(table)
        return self._counts[table]

    def _count(self, table: str) -> int:
        if table in EVENT_TABLES:
            sql_table = EVENT_TABLES[table][0]
            if not self.has(sql_table):
                return 0
            return self.reader.rows(sql_table)
        if table == "nvtx":
            if not self.has("NVTX_EVENTS") or "eventType" not in self.columns("NVTX_EVENTS"):
                return 0
            return int(self.query(f"SELECT count(*) FROM NVTX_EVENTS WHERE {NVTX_WHERE}")[0][0])
        return len(self.frame(table, list(SCHEMAS[table])))

    def bound(self, table: str) -> int:
        """:meth:`count`, except for NVTX ranges not yet counted: all NVTX events (``count(*)`` of
        the table, no filter), as many as the ranges or a few more."""
        if table == "nvtx" and table not in self._counts and self.has("NVTX_EVENTS"):
            return self.reader.rows("NVTX_EVENTS")
        return self.count(table)

    # ------------------------------------------------------------------------------- reads
    def arrays(self, table: str, columns: list[str]) -> Mapping[str, np.ndarray | Coded | Sum]:
        check_columns(table, columns)
        if table in EVENT_TABLES:
            return self._event_arrays(table, columns)
        if table == "nvtx":
            return self._nvtx_arrays(columns)
        df = self.frame(table, columns)
        return {c: to_array(df[c], SCHEMAS[table][c]) for c in columns}

    def frame(self, table: str, columns: list[str]) -> pd.DataFrame:
        from nsighttk.profile import conform_columns, empty_table

        check_columns(table, columns)
        if table in EVENT_TABLES or table == "nvtx":
            arrays = {c: decoded(a) for c, a in self.arrays(table, columns).items()}
            return conform_columns(table, frame_of(table, arrays), columns)
        if table not in self._small:
            self._small[table] = _load_gpus(self) if table == "gpus" else empty_table(table)
        return self._small[table][columns]

    def _event_arrays(self, table: str, columns: list[str]) -> Mapping[str, np.ndarray | Coded | Sum]:
        plan = self._event_plan(table, columns)
        if plan is None:
            return empty_arrays(table, columns)
        values = self.reader.read(plan.sql_table, plan.exprs)
        out, bad = self._shape(table, columns, plan, values)
        if bad:
            self._note_dropped(table, bad)
        return out

    def whole(self, table: str) -> set[str]:
        """Columns of ``table`` that :meth:`parts` can only read with every row at once: the NVTX
        ranges' depth (it nests every range of a thread)."""
        return {"depth"} if table == "nvtx" else set()

    def parts(self, table: str, columns: list[str]) -> Iterator[Mapping[str, np.ndarray | Coded | Sum]]:
        """``columns`` of ``table`` as :meth:`arrays` gives them, a chunk of rows at a time, in rowid
        order (the same rows: the same events dropped, noted once with their number); with a
        column of :meth:`whole`, one chunk of every row."""
        check_columns(table, columns)
        if table == "nvtx":
            yield from nvtx_parts(self, columns)
            return
        plan = self._event_plan(table, columns) if table in EVENT_TABLES else None
        if plan is None:
            yield self.arrays(table, columns)
            return
        bad = 0
        for values in self.reader.chunks(plan.sql_table, plan.exprs, narrow=True):
            out, dropped = self._shape(table, columns, plan, values)
            bad += dropped
            yield out
        if bad:
            self._note_dropped(table, bad)

    def _event_plan(self, table: str, columns: list[str]) -> _Plan | None:
        """What to read for ``columns`` of an event table: None when the export has no such table."""
        sql_table, mapping = EVENT_TABLES[table]
        if not self.has(sql_table):
            return None
        have = set(self.columns(sql_table))
        if not {"start", "end"} <= have:
            raise ExportSchemaError(f"{self.path}: {sql_table} has no start/end columns",
                                    "re-export it with: nsys export --type sqlite")
        raw: list[str] = []
        for c in columns:
            for r in _DERIVED.get(c, [c]):
                if r in mapping and r not in raw:
                    raw.append(r)
        # a copy or memset whose byte count is not a non-negative integer is dropped as an event with
        # a bad duration is: on every read of the table, so arrays read at different times line up
        checks_bytes = "bytes" in mapping and "bytes" in have
        if checks_bytes and "bytes" not in raw:
            raw.append("bytes")
        if table == "kernels" and "name_id" in raw and "demangledName" not in have:
            raise ExportSchemaError(f"{self.path}: kernel table without demangledName column",
                                    "re-export it with a newer nsys")
        derive_end = "start_ns" in raw and "end_ns" in raw  # end = start + duration: one column less
        present = [r for r in raw if mapping[r] in have and not (derive_end and r == "end_ns")]
        return _Plan(sql_table, [DURATION_SQL] + [f'"{mapping[r]}"' for r in present], raw, present, have,
                     checks_bytes, derive_end)

    def _shape(self, table: str, columns: list[str], plan: _Plan, values: list[np.ndarray]
               ) -> tuple[dict[str, np.ndarray | Coded | Sum], int]:
        """The columns from what :meth:`_event_plan` read, and how many events were dropped."""
        raw, present, have, checks_bytes, derive_end = plan.raw, plan.present, plan.have, plan.checks_bytes, \
            plan.derive_end
        dur = values[0]  # (compact as read: a narrow type's minimum, like INT_NULL, is negative)
        got = dict(zip(present, values[1:], strict=True))
        del values
        sound = dur >= 0  # INT_NULL (not numbers, end before start) is negative too
        if checks_bytes:
            sound &= widen(got["bytes"]) >= 0
        bad = len(dur) - int(sound.sum())
        if bad:
            dur = dur[sound]
            got = {k: v[sound] for k, v in got.items()}
        # (every duration sound and every start known: the end is their sum, handed on as that rule)
        end = Sum(got["start_ns"], dur) if derive_end else None
        n = len(dur)
        # Thread or process ids of few values as codes, and pid and tid read off them value by value.
        ids = got.get("global_tid" if table == "api" else "global_pid")
        coded_ids = few_values(ids) if ids is not None and {"pid", "tid"} & set(columns) else None
        if any(r not in got for r in raw):  # (a column the export lacks: missing everywhere)
            null = np.full(n, INT_NULL, dtype=np.int64)
            for r in raw:
                got.setdefault(r, null)
        else:
            null = None
        out: dict[str, np.ndarray | Coded | Sum] = {}
        for c in columns:
            if c == "duration_ns":
                out[c] = dur
            elif c in ("name", "mangled_name"):
                out[c] = self._coded(got["name_id" if c == "name" else "_mangled_id"])
            elif c == "short_name":
                out[c] = self._coded(got["_short_id"] if "shortName" in have else got["name_id"])
            elif c in ("pid", "tid"):
                part = pid_of if c == "pid" else tid_of
                if coded_ids is not None:
                    out[c] = Coded(coded_ids.codes, part(widen(coded_ids.values)))
                else:
                    out[c] = part(widen(got["global_tid" if table == "api" or c == "tid" else "global_pid"]))
            elif c in ("global_tid", "global_pid") and coded_ids is not None and c in got:
                out[c] = coded_ids
            elif c == "end_ns" and end is not None:
                out[c] = end
            elif c in ("kind", "label"):
                out[c] = self._copy_kinds(got["_copy_kind"], label=c == "label")
            elif c in ("src_kind", "dst_kind", "mem_kind"):
                out[c] = self._mem_kinds(got[{"src_kind": "_src", "dst_kind": "_dst", "mem_kind": "_mem"}[c]])
            elif c in got:
                out[c] = got[c]
            elif SCHEMAS[table][c] == "object":
                out[c] = np.full(n, None, dtype=object)
            else:
                out[c] = null if null is not None else np.full(n, INT_NULL, dtype=np.int64)
        return out, bad

    def _note_dropped(self, table: str, n: int) -> None:
        if table not in self._checked:
            self._checked.add(table)
            what = ", or the byte count is not a non-negative integer" if table in ("memcpy", "memset") else ""
            self.notes.append(f"{table}: {n:,} row(s) dropped: start or end missing or not an integer, "
                              f"or the event ends before it starts{what}")

    def _copy_kinds(self, codes: np.ndarray, label: bool) -> np.ndarray:
        if label:
            labels = self.enum_labels("ENUM_CUDA_MEMCPY_OPER")
            if labels is None:
                labels = {k: v[1] for k, v in MEMCPY_KINDS.items()}
                note = "no ENUM_CUDA_MEMCPY_OPER table: memcpy labels taken from CUPTI's enum"
                if note not in self.notes:
                    self.notes.append(note)
            return _map_codes(codes, labels, None)
        return _map_codes(codes, {k: v[0] for k, v in MEMCPY_KINDS.items()}, "Unknown")

    def _mem_kinds(self, codes: np.ndarray) -> np.ndarray:
        return _map_codes(codes, self.enum_labels("ENUM_CUDA_MEM_KIND") or MEM_KINDS, None)

    # -------------------------------------------------------------------------------- NVTX
    def _nvtx_arrays(self, columns: list[str]) -> Mapping[str, np.ndarray | Coded]:
        return nvtx_arrays(self, columns)


def _map_codes(codes: np.ndarray, labels: dict[int, str], default: str | None) -> np.ndarray:
    uniq, inverse = np.unique(codes, return_inverse=True)
    table = np.empty(len(uniq), dtype=object)
    table[:] = [labels.get(int(u), default) for u in uniq]
    return table[inverse.ravel()] if len(codes) else np.empty(0, dtype=object)


def _load_gpus(src: NsysSource) -> pd.DataFrame:
    import pandas as pd

    from nsighttk.profile import conform, empty_table

    if not src.has("TARGET_INFO_GPU"):
        return empty_table("gpus")
    wanted = {
        "id": "device_id", "name": "name", "computeMajor": "major", "computeMinor": "minor",
        "smCount": "sm_count", "memoryBandwidth": "memory_bandwidth_bytes_per_s", "clockRate": "clock_hz",
        "l2CacheSize": "l2_bytes", "totalMemory": "total_memory_bytes", "maxWarpsPerSm": "max_warps_per_sm",
        "maxBlocksPerSm": "max_blocks_per_sm", "maxRegistersPerSm": "max_regs_per_sm",
        "maxShmemPerSm": "max_smem_per_sm_bytes", "maxThreadsPerBlock": "max_threads_per_block",
    }
    have = [c for c in wanted if c in src.columns("TARGET_INFO_GPU")]
    if "id" not in have:
        return empty_table("gpus")
    rows = src.query(f'SELECT {", ".join(f"{chr(34)}{c}{chr(34)}" for c in have)} FROM TARGET_INFO_GPU LIMIT 1024')
    records = []
    for row in rows:
        rec = dict(zip([wanted[c] for c in have], row, strict=True))
        if not isinstance(rec.get("device_id"), int):
            continue
        for k, v in rec.items():
            if k != "name" and not isinstance(v, int):
                rec[k] = None  # text or real where a number belongs: unknown
        rec["name"] = rec["name"] if isinstance(rec.get("name"), str) else None
        if rec.get("major") is not None and rec.get("minor") is not None:
            rec["compute_capability"] = f"{rec['major']}.{rec['minor']}"
        records.append(rec)
    if not records:
        return empty_table("gpus")
    df = pd.DataFrame.from_records(records)
    return conform("gpus", df.drop(columns=[c for c in ("major", "minor") if c in df.columns]))


def _meta_table(src: NsysSource, table: str) -> dict[str, str | None]:
    if not src.has(table) or not {"name", "value"} <= set(src.columns(table)):
        return {}
    out: dict[str, str | None] = {}
    for name, value in src.query(f'SELECT name, value FROM "{table}"'):
        if isinstance(name, str):
            out.setdefault(name, value if isinstance(value, str) else str(value) if value is not None else None)
    return out


def _meta(src: NsysSource, path: Path) -> dict[str, Any]:
    export = _meta_table(src, "META_DATA_EXPORT")
    capture = _meta_table(src, "META_DATA_CAPTURE")
    if src.has("META_DATA_EXPORT") and not export:
        src.notes.append("META_DATA_EXPORT is unreadable (no name/value columns): nsys version unknown")
    command = []
    if "PROCESS_0:COMMAND" in capture:
        command.append(capture["PROCESS_0:COMMAND"])
        i = 0
        while f"PROCESS_0:ARGUMENT_{i}" in capture:
            command.append(capture[f"PROCESS_0:ARGUMENT_{i}"])
            i += 1
    start = None
    if src.has("TARGET_INFO_SESSION_START_TIME"):
        rows = src.query("SELECT * FROM TARGET_INFO_SESSION_START_TIME LIMIT 1")
        start = rows[0][1] if rows and len(rows[0]) > 1 else None
    return {
        "tool": "nsys",
        "tool_version": export.get("EXPORT_PRODUCT_VERSION"),
        "schema_version": export.get("EXPORT_SCHEMA_VERSION"),
        "command": command,
        "host": export.get("EXPORT_HOST"),
        "capture_time_utc": start,
        "source": str(path),
    }


def open_nsys_sqlite(path: str | Path, keep_alive: object | None = None) -> Profile:
    """An nsys SQLite export as a lazy :class:`Profile` (read-only; tolerant of versions and damage).

    Tables are read from ``path`` when first used, so the file must outlive the profile: pass the
    object that owns a temporary export (a ``TemporaryDirectory``) as ``keep_alive``, and it lives
    as long as the profile does."""
    p = Path(path)
    con = open_readonly(p)
    meta: dict[str, Any] = {"notes": []}
    src = NsysSource(con, p, meta)
    src.keep_alive = keep_alive
    if not any(src.has(t) for t in NSYS_MARKERS):
        con.close()
        raise ExportSchemaError(f"{p}: an SQLite file, but not an Nsight Systems export "
                                "(none of its tables are nsys ones)",
                                "give a file made by: nsys export --type sqlite")
    meta.update(_meta(src, p))
    for table, note in _MISSING_NOTES.items():
        sql_table = EVENT_TABLES[table][0] if table in EVENT_TABLES else "NVTX_EVENTS"
        if not src.has(sql_table):
            src.notes.append(note)
    return Profile(meta=meta, source=src)


def load_nsys_sqlite(path: str | Path, keep_alive: object | None = None) -> Profile:
    """Read an nsys SQLite export into a :class:`Profile`: lazily, tables are read when first used
    (the name kept for compatibility; see :func:`open_nsys_sqlite`)."""
    return open_nsys_sqlite(path, keep_alive)
