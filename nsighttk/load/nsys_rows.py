"""Small nsys exports read as Python rows, without numpy: what ``nsighttk stats`` needs for its
summaries when an export is small enough that importing numpy would cost more than the report.

Only sound exports are read here.  The moment anything is unusual (a table or column missing,
a value that is not an integer where one belongs, an event ending before it starts, more rows
than :data:`SMALL_ROWS`, a damaged file), :class:`NotSmall` is raised and the caller hands the
export to the column engine (:mod:`nsighttk.load.nsys_sqlite`), which owns every tolerance,
note and error message.  Both follow :mod:`nsighttk.load.nsys_schema`; the rows read here are
the ones that engine reads (tests compare the two on every fixture).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from nsighttk import settings
from nsighttk.load.nsys_schema import (
    DURATION_SQL,
    EVENT_TABLES,
    MEMCPY_KINDS,
    NSYS_MARKERS,
    NVTX_DOMAIN_CREATE,
    NVTX_PUSHPOP_TYPES,
    NVTX_WHERE,
    SQLITE_MAGIC,
    decode_text,
    nvtx_domain_names,
    readonly_uri,
)

#: Most rows (all tables read together) for which the small path is used: at about 1-2 us per
#: row in Python it stays under numpy's import time; larger exports go to the column engine.
SMALL_ROWS = 100_000

#: Rows per thread when a table is scanned in parallel; threads: NSIGHTTK_THREADS, else one per
#: CPU (at most 8), as the column engine's reader (None: decided when a table is read).
_CHUNK = 16_384
_THREADS: int | None = None

#: Suffixes of captures that are not nsys SQLite exports (see :func:`nsighttk.load.kind_of`).
_OTHER_SUFFIXES = (".nsys-rep", ".ncu-rep", ".csv", ".json", ".gz")


class NotSmall(Exception):
    """This export is for the column engine (too large, unusual or unreadable here)."""


class SmallExport:
    """A read-only connection to a sound nsys export and the rows of its event tables."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if path.suffix.lower() in _OTHER_SUFFIXES:
            raise NotSmall("not an SQLite export")
        try:
            with path.open("rb") as fh:
                if fh.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                    raise NotSmall("not an SQLite file")
            self.con = sqlite3.connect(readonly_uri(path), uri=True)
            self.con.text_factory = decode_text
            self.tables = {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except (OSError, sqlite3.Error) as ex:
            raise NotSmall(str(ex)) from None
        if not self.tables & set(NSYS_MARKERS):
            self.close()
            raise NotSmall("not an nsys export")
        self._cols: dict[str, set[str]] = {}
        self._strings: dict[int, str | None] | None = None
        self.version = self._version()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> SmallExport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------ schema
    def query(self, sql: str) -> list[tuple[Any, ...]]:
        try:
            return self.con.execute(sql).fetchall()
        except sqlite3.Error as ex:
            raise NotSmall(str(ex)) from None

    def columns(self, table: str) -> set[str]:
        if table not in self._cols:
            self._cols[table] = {r[1] for r in self.query(f'PRAGMA table_info("{table}")')}
        return self._cols[table]

    def rows_bound(self, table: str) -> int:
        """At least the number of rows of ``table`` (its largest rowid: read from the b-tree)."""
        sql_table = EVENT_TABLES[table][0] if table in EVENT_TABLES else "NVTX_EVENTS"
        if sql_table not in self.tables:
            return 0
        top = self.query(f'SELECT max(rowid) FROM "{sql_table}"')[0][0]
        return top if isinstance(top, int) else 0

    def _version(self) -> str | None:
        """EXPORT_PRODUCT_VERSION (the nsys that wrote the export), as the column engine reads it."""
        if "META_DATA_EXPORT" not in self.tables:
            return None
        if not {"name", "value"} <= self.columns("META_DATA_EXPORT"):
            raise NotSmall("META_DATA_EXPORT without name/value")
        for name, value in self.query('SELECT name, value FROM "META_DATA_EXPORT"'):
            if name == "EXPORT_PRODUCT_VERSION":
                return value if isinstance(value, str) else str(value) if value is not None else None
        return None

    def strings(self) -> dict[int, str | None]:
        """StringIds (the first value of an id listed twice; text only)."""
        if self._strings is None:
            out: dict[int, str | None] = {}
            if "StringIds" in self.tables and {"id", "value"} <= self.columns("StringIds"):
                for i, v in self.query("SELECT id, value FROM StringIds ORDER BY rowid"):
                    if isinstance(i, int) and i not in out:
                        out[i] = v if isinstance(v, str) else None
            self._strings = out
        return self._strings

    def scan(self, sql_table: str, exprs: list[str], n_keys: int, merges: list[str]) -> list[tuple[Any, ...]]:
        """``SELECT exprs FROM sql_table GROUP BY`` the first ``n_keys`` expressions, the rest
        being aggregates: ``group_concat`` ("concat") or ``max`` ("max", of integers).  A table of
        more than :data:`_CHUNK` rows is read in rowid ranges on several threads (SQLite works
        without the GIL) and the groups merged: a max that is not an integer reads as 'x'."""
        group_by = f" GROUP BY {', '.join(str(i + 1) for i in range(n_keys))}" if n_keys else ""
        sql = f"SELECT {', '.join(exprs)} FROM \"{sql_table}\""
        top = self.query(f'SELECT max(rowid) FROM "{sql_table}"')[0][0]
        most = _THREADS or settings.current().threads or min(8, os.cpu_count() or 1)
        parts = min(most, top // _CHUNK) if isinstance(top, int) and top > 0 else 0
        if parts < 2:
            return self.query(sql + group_by)
        step = top // parts + 1
        results: list[list[tuple[Any, ...]] | BaseException] = [[] for _ in range(parts)]

        def work(i: int) -> None:
            try:
                con = sqlite3.connect(readonly_uri(self.path), uri=True)
                con.text_factory = decode_text
                try:
                    results[i] = con.execute(f"{sql} WHERE rowid BETWEEN ? AND ?{group_by}",
                                             (i * step, (i + 1) * step - 1)).fetchall()
                finally:
                    con.close()
            except Exception as ex:  # raised below, in the calling thread
                results[i] = ex

        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(parts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        merged: dict[tuple[Any, ...], list[list[Any]]] = {}
        for res in results:
            if isinstance(res, BaseException):
                raise NotSmall(str(res))
            for r in res:
                got = merged.setdefault(tuple(r[:n_keys]), [[] for _ in merges])
                for j, v in enumerate(r[n_keys:]):
                    if v is not None:
                        got[j].append(v)
        out = []
        for key, lists in merged.items():
            vals: list[Any] = []
            for how, parts_of in zip(merges, lists, strict=True):
                if not parts_of:
                    vals.append(None)
                elif how == "concat":
                    vals.append(",".join(parts_of))
                else:
                    vals.append(max(parts_of) if all(type(v) is int for v in parts_of) else "x")
            out.append((*key, *vals))
        return out

    # ------------------------------------------------------------------------------ events
    def grouped(self, table: str, keys: list[str], values: tuple[str, ...] = ("duration",),
                ) -> dict[tuple[Any, ...], tuple[list[int], ...]]:
        """The events of ``table`` grouped by the ``keys`` columns (integers; anything else, or a
        column the table lacks, reads as None): per group, the list of each of ``values``
        ("duration", "bytes": 0 where the table has no byte counts), in no particular order.
        Grouped by SQLite (one pass, no Python object per event).  :class:`NotSmall` if any
        duration is not a non-negative integer, or a byte count not a non-negative integer."""
        sql_table, mapping = EVENT_TABLES[table]
        if sql_table not in self.tables:
            return {}
        have = self.columns(sql_table)
        if not {"start", "end"} <= have:
            raise NotSmall(f"{sql_table} without start/end")
        if table == "kernels" and "name_id" in keys and "demangledName" not in have:
            raise NotSmall("kernel table without demangledName")
        exprs = [f"CASE WHEN typeof(\"{mapping[k]}\") = 'integer' THEN \"{mapping[k]}\" END" if mapping[k] in have
                 else "NULL" for k in keys]
        has_bytes = "bytes" in mapping and "bytes" in have
        # an event the column engine drops (a duration or, whether or not read, a byte count that
        # is not a non-negative integer) reads as 'x'
        sound = [f"typeof({DURATION_SQL}) = 'integer'"]
        if has_bytes:
            sound.append("typeof(\"bytes\") = 'integer' AND \"bytes\" >= 0")
        checked = " AND ".join(sound)
        column = {"duration": DURATION_SQL, "bytes": '"bytes"' if has_bytes else "0"}
        lists = [f"group_concat(CASE WHEN {checked} THEN {column[v]} ELSE 'x' END)" for v in values]
        n = len(keys)
        rows = self.scan(sql_table, [*exprs, *lists], n, ["concat"] * len(lists))
        out: dict[tuple[Any, ...], tuple[list[int], ...]] = {}
        for r in rows:
            if r[n] is None:  # no events at all (an aggregate without GROUP BY)
                continue
            if any("x" in text for text in r[n:]):
                raise NotSmall(f"{sql_table}: an event the column engine drops")
            out[tuple(r[:n])] = tuple(list(map(int, text.split(","))) for text in r[n:])
        return out

    def memcpy_labels(self) -> dict[int, str]:
        """copyKind -> label (ENUM_CUDA_MEMCPY_OPER, else CUPTI's names)."""
        if "ENUM_CUDA_MEMCPY_OPER" in self.tables and {"id", "label"} <= self.columns("ENUM_CUDA_MEMCPY_OPER"):
            return {int(i): str(lab) for i, lab in self.query('SELECT id, label FROM "ENUM_CUDA_MEMCPY_OPER"')
                    if isinstance(i, int) and lab is not None}
        return {k: v[1] for k, v in MEMCPY_KINDS.items()}

    # -------------------------------------------------------------------------------- NVTX
    def range_durations(self) -> dict[tuple[str, str], list[int]]:
        """Durations of the NVTX ranges per (``domain:name`` label, style); ranges never closed
        end at the last NVTX timestamp, as nsys."""
        if "NVTX_EVENTS" not in self.tables:
            return {}
        have = self.columns("NVTX_EVENTS")
        if not {"start", "end", "eventType"} <= have:
            raise NotSmall("NVTX_EVENTS without start/end/eventType")
        if "domainId" in have and "globalTid" not in have:
            raise NotSmall("NVTX domains without globalTid")
        sound = ['typeof("start") = \'integer\' AND "start" >= 0',
                 '("end" IS NULL OR (typeof("end") = \'integer\' AND "end" >= "start"))']
        sound += [f'("{c}" IS NULL OR typeof("{c}") = \'integer\')' for c in ("globalTid", "domainId") if c in have]
        text_id = "textId" in have and "StringIds" in self.tables
        text = "CASE WHEN typeof(\"text\") = 'text' THEN \"text\" END" if "text" in have else "NULL"
        # the name: a string id, else the range's own text (None: neither)
        name = f"CASE WHEN typeof(\"textId\") = 'integer' THEN \"textId\" ELSE {text} END" if text_id else text
        pushpop = f'"eventType" IN ({", ".join(map(str, NVTX_PUSHPOP_TYPES))})'
        # One scan of every NVTX event, grouped: ranges by name, style (and domain, process),
        # other events by type (domain creations are looked up only if there are some); each
        # group's last timestamps give the time where ranges never closed end.
        is_range = f"({NVTX_WHERE})"
        cols = [is_range, f"CASE WHEN {is_range} THEN {name} END",
                f"CASE WHEN {is_range} THEN {pushpop} ELSE \"eventType\" END"]
        if "domainId" in have:  # the domain, scoped to the process
            cols += [f'CASE WHEN {is_range} THEN "domainId" END',
                     f'CASE WHEN {is_range} THEN ("globalTid" >> 24) & 16777215 END']
        # the duration; -1 - start for a range never closed (fixed below), 'x' for a range the engine drops
        dur = f'CASE WHEN {" AND ".join(sound)} THEN coalesce("end" - "start", -1 - "start") ELSE \'x\' END'
        n = len(cols)
        rows = self.scan("NVTX_EVENTS", [*cols, f"group_concat(CASE WHEN {is_range} THEN {dur} END)",
                                         'max("start")', 'max("end")'], n, ["concat", "max", "max"])
        ranges = [r for r in rows if r[0]]
        if any("x" in r[n] for r in ranges):
            raise NotSmall("NVTX: a range the column engine drops or reads otherwise")
        if any(not (v is None or type(v) is int) for r in rows for v in r[n + 1:]):
            raise NotSmall("NVTX: a timestamp that is not an integer")
        by_raw = {tuple(r[1:n]): list(map(int, r[n].split(","))) for r in ranges}
        if any("-" in r[n] for r in ranges):  # open ranges end at the last NVTX timestamp (of any event)
            starts = [r[n + 1] for r in rows if r[n + 1] is not None]
            ends = [r[n + 2] for r in rows if r[n + 2] is not None]
            last = max(max(starts), max(ends)) if starts and ends else max(r[n + 1] for r in ranges)
            for k, d in by_raw.items():
                by_raw[k] = [x if x >= 0 else last + 1 + x for x in d]
        strings = self.strings() if text_id else {}
        created = any(not r[0] and r[2] == NVTX_DOMAIN_CREATE for r in rows)
        domains = nvtx_domain_names(self.query, text_id, "text" in have) if created and "domainId" in have else {}
        out: dict[tuple[str, str], list[int]] = {}
        for key, durations in by_raw.items():
            named = strings.get(key[0]) if type(key[0]) is int else key[0]
            if type(key[0]) is int and named is None:  # an id unknown, or whose string is not text
                raise NotSmall("NVTX: a textId without text")
            domain = domains.get((key[2], key[3] << 24), "") if domains and key[2] is not None else ""
            label = f"{domain}:{named if named is not None else ''}"
            out.setdefault((label, "PushPop" if key[1] else "StartEnd"), []).extend(durations)
        return out
