"""Hypothesis strategies that damage the real fixtures, and the functions that apply them.

A strategy draws a plain description of the damage (tuples of names and values: readable when
Hypothesis prints a failing example); ``apply_*`` writes the damaged copy.  Kinds of damage, per
format:

* nsys SQLite: a value of another type (text, text digits, blob, real, NULL) or an extreme integer
  (int64 max/min, -1, 2^62) in one column of an event table, for all rows, one row or every
  third; NULL, deleted, duplicated or hostile ``StringIds``; negative durations, end before
  start, every event at one instant, sums beyond int64; META tables without ``value``; a table
  dropped; rows duplicated; hostile kernel and NVTX names; GPU properties of the wrong type.
* Kineto JSON: ``ts``/``dur``/``name``/``cat``/``pid``/``tid``/``ph`` of the wrong type or out of
  range, ``args`` that is not an object, ``grid``/``block`` scalar, short or huge, correlation ids
  and byte counts of the wrong type or missing, events that are not objects, every event at one
  instant, duplicated events, top-level keys of the wrong type; written plain or gzip.
* ncu CSV: ``n/a`` or text ids, ``inf``/``nan``/huge/negative metric values, duplicate headers,
  short and long rows, a column dropped, hostile kernel names, damaged units row.
* Any file: truncation and bit flips of the bytes (after the above).
"""

from __future__ import annotations

import copy
import csv
import gzip
import io
import json
import shutil
import sqlite3
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

# ------------------------------------------------------------------------------ shared values

HOSTILE = [
    "[/]", "[link=https://x/]k[/link]", "[bold red]k", "\x1b[31mred\x1b[0m", "\x1b]8;;https://x/\x07k\x1b]8;;\x07",
    "<!--<script>", "</script><script>alert(1)</script>", "=cmd|' /C calc'!A0", "+1+1", "-2", "@SUM(A1)",
    "a\nb\rc\td", "k" * 3000, "", " ", "%s%n{0}", "\u202eevil", "名前 カーネル", "k\x00n", "a|b|c", "*bold* _x_ `c`",
]
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
#: values written into integer columns of nsys exports
SQL_VALUES: list[Any] = [None, "abc", "12", "", b"\x00\xff", 1.5, -2.5, 1e308, INT64_MAX, INT64_MIN, -1, 0, 2**62,
                         "[/]", "\x1b[2J"]


# ------------------------------------------------------------------------------------- nsys

K = "CUPTI_ACTIVITY_KIND_KERNEL"
R = "CUPTI_ACTIVITY_KIND_RUNTIME"
M = "CUPTI_ACTIVITY_KIND_MEMCPY"
S = "CUPTI_ACTIVITY_KIND_MEMSET"
N = "NVTX_EVENTS"
Y = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
EVENT_TABLES = {
    K: ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "demangledName",
        "shortName", "registersPerThread", "gridX", "gridY", "blockX", "blockZ", "staticSharedMemory",
        "dynamicSharedMemory"],
    R: ["start", "end", "globalTid", "correlationId", "nameId", "eventClass"],
    M: ["start", "end", "deviceId", "streamId", "correlationId", "bytes", "copyKind", "srcKind", "dstKind"],
    S: ["start", "end", "deviceId", "streamId", "bytes", "memKind"],
    N: ["start", "end", "eventType", "text", "textId", "globalTid", "domainId"],
    Y: ["start", "end", "deviceId", "streamId", "syncType", "correlationId"],
}
GPU_COLUMNS = ["id", "name", "smCount", "memoryBandwidth", "computeMajor", "computeMinor", "maxWarpsPerSm",
               "maxShmemPerSm", "maxRegistersPerSm", "threadsPerWarp", "clockRate", "totalMemory"]
SELECT = ["all", "one", "some"]


def sqlite_damage(with_pending: bool = False) -> st.SearchStrategy[tuple[Any, ...]]:
    table = st.sampled_from(sorted(EVENT_TABLES))
    every = st.one_of(
        table.flatmap(lambda t: st.tuples(st.just("set"), st.just(t), st.sampled_from(EVENT_TABLES[t]),
                                          st.sampled_from(SQL_VALUES), st.sampled_from(SELECT))),
        st.tuples(st.just("strings"), st.sampled_from(["delete_some", "delete_all", "duplicate", "null", "blob",
                                                       "number"])),
        st.tuples(st.just("times"), table, st.sampled_from(["negative", "end_before_start", "one_instant",
                                                            "huge_sum", "int64_start", "zero_length",
                                                            "reversed_order"])),
        st.tuples(st.just("meta"), st.sampled_from(["drop_value", "drop_rows", "drop_table", "null_values",
                                                    "text_version"])),
        st.tuples(st.just("drop_table"), st.sampled_from([*sorted(EVENT_TABLES), "StringIds", "TARGET_INFO_GPU",
                                                          "ThreadNames", "PROCESSES"])),
        st.tuples(st.just("dup_rows"), table),
        st.tuples(st.just("gpu"), st.sampled_from(GPU_COLUMNS), st.sampled_from(SQL_VALUES)),
        st.tuples(st.just("names"), st.sampled_from(HOSTILE)),
    )
    return every if with_pending else every.filter(lambda d: not pending(d))


def pending(d: tuple[Any, ...]) -> bool:
    """True for damage of a kind analyze cannot take yet, kept out of the random draws (none now:
    the kinds once listed here are test_fuzz.FIXED)."""
    return False


def _loosen(con: sqlite3.Connection, table: str) -> None:
    """Recreate ``table`` without constraints (NOT NULL, PRIMARY KEY) so any value fits."""
    con.execute(f'CREATE TABLE "loose_{table}" AS SELECT * FROM "{table}"')
    con.execute(f'DROP TABLE "{table}"')
    con.execute(f'ALTER TABLE "loose_{table}" RENAME TO "{table}"')


def _has(con: sqlite3.Connection, table: str, column: str | None = None) -> bool:
    cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
    return bool(cols) and (column is None or column in cols)


def _where(select: str) -> str:
    return {"all": "1", "one": "rowid = (SELECT min(rowid) FROM t0)", "some": "rowid % 3 = 0"}[select]


def apply_sqlite(src: Path, dst: Path, damage: list[tuple[Any, ...]]) -> Path:
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    try:
        for d in damage:
            _apply_one(con, d)
        con.commit()
    finally:
        con.close()
    return dst


def _apply_one(con: sqlite3.Connection, d: tuple[Any, ...]) -> None:
    kind = d[0]
    if kind == "set":
        _, table, col, value, select = d
        if not _has(con, table, col):
            return
        _loosen(con, table)
        where = _where(select).replace("t0", f'"{table}"')
        con.execute(f'UPDATE "{table}" SET "{col}" = ? WHERE {where}', (value,))
    elif kind == "strings":
        action = d[1]
        if not _has(con, "StringIds"):  # (dropped by an earlier damage of the same draw)
            return
        _loosen(con, "StringIds")
        if action == "delete_some":
            con.execute("DELETE FROM StringIds WHERE id % 2 = 0")
        elif action == "delete_all":
            con.execute("DELETE FROM StringIds")
        elif action == "duplicate":
            con.execute("INSERT INTO StringIds SELECT id, value || ' (again)' FROM StringIds")
        elif action == "null":
            con.execute("UPDATE StringIds SET value = NULL WHERE id % 3 = 0")
        elif action == "blob":
            con.execute("UPDATE StringIds SET value = x'00ff10' WHERE id % 3 = 1")
        else:
            con.execute("UPDATE StringIds SET value = 42 WHERE id % 3 = 2")
    elif kind == "times":
        _, table, how = d
        if not _has(con, table, "end"):
            return
        _loosen(con, table)
        sql = {
            "negative": 'UPDATE "{t}" SET "end" = start - 1000 WHERE rowid % 2 = 0',
            "end_before_start": 'UPDATE "{t}" SET start = "end", "end" = start',
            "one_instant": 'UPDATE "{t}" SET start = 1000, "end" = 1000',
            "huge_sum": 'UPDATE "{t}" SET start = 0, "end" = 4611686018427387904',
            "int64_start": 'UPDATE "{t}" SET start = 9223372036854775807 WHERE rowid % 2 = 1',
            "zero_length": 'UPDATE "{t}" SET "end" = start',
            "reversed_order": 'UPDATE "{t}" SET start = 9000000000000 - start, "end" = 9000000000000 - start',
        }[how]
        con.execute(sql.format(t=table))
    elif kind == "meta":
        action = d[1]
        for table in ("META_DATA_CAPTURE", "META_DATA_EXPORT"):
            if not _has(con, table, "value"):
                continue
            if action == "drop_value":
                con.execute(f'ALTER TABLE "{table}" DROP COLUMN value')
            elif action == "drop_rows":
                con.execute(f'DELETE FROM "{table}"')
            elif action == "drop_table":
                con.execute(f'DROP TABLE "{table}"')
            elif action == "null_values":
                _loosen(con, table)
                con.execute(f'UPDATE "{table}" SET value = NULL')
            else:
                con.execute(f"UPDATE \"{table}\" SET value = '[/]\x1b[31m' || value")
    elif kind == "drop_table":
        con.execute(f'DROP TABLE IF EXISTS "{d[1]}"')
    elif kind == "dup_rows":
        if _has(con, d[1]):
            _loosen(con, d[1])
            con.execute(f'INSERT INTO "{d[1]}" SELECT * FROM "{d[1]}"')
    elif kind == "gpu":
        _, col, value = d
        if _has(con, "TARGET_INFO_GPU", col):
            _loosen(con, "TARGET_INFO_GPU")
            con.execute(f'UPDATE TARGET_INFO_GPU SET "{col}" = ?', (value,))
    elif kind == "names":
        if not _has(con, "StringIds"):  # (an earlier damage of the same draw dropped it)
            return
        name = d[1]
        _loosen(con, "StringIds")
        ids = set()
        for table, cols in ((K, ("shortName", "demangledName")), (R, ("nameId",)), (N, ("textId",))):
            for col in cols:
                if _has(con, table, col):
                    ids |= {r[0] for r in con.execute(f'SELECT DISTINCT "{col}" FROM "{table}"')
                            if type(r[0]) is int}
        for i in ids:
            con.execute("UPDATE StringIds SET value = ? WHERE id = ?", (f"{name}{i % 7}", i))
        if _has(con, N, "text"):
            con.execute(f"UPDATE {N} SET text = ? WHERE text IS NOT NULL", (name,))
    else:  # pragma: no cover
        raise ValueError(kind)


# ------------------------------------------------------------------------------------ bytes


def byte_damage(max_flips: int = 6) -> st.SearchStrategy[tuple[Any, ...]]:
    """("truncate", fraction) | ("flip", [(fraction, bit)...]) | ("zero", fraction, length) | ("none",)."""
    frac = st.floats(0.0, 1.0, allow_nan=False)
    return st.one_of(
        st.just(("none",)),
        st.tuples(st.just("truncate"), frac),
        st.tuples(st.just("flip"), st.lists(st.tuples(frac, st.integers(0, 7)), min_size=1, max_size=max_flips)),
        st.tuples(st.just("zero"), frac, st.sampled_from([1, 16, 512, 4096])),
    )


def apply_bytes(path: Path, damage: tuple[Any, ...], skip: int = 0) -> None:
    """Damage the file's bytes in place; the first ``skip`` bytes are kept (a header to keep)."""
    if damage[0] == "none":
        return
    data = bytearray(path.read_bytes())
    span = max(len(data) - skip, 1)
    if damage[0] == "truncate":
        data = data[: skip + int(damage[1] * span)]
    elif damage[0] == "flip":
        for frac, bit in damage[1]:
            i = min(skip + int(frac * span), len(data) - 1)
            data[i] ^= 1 << bit
    else:
        i = min(skip + int(damage[1] * span), len(data))
        data[i:i + damage[2]] = bytes(len(data[i:i + damage[2]]))
    path.write_bytes(bytes(data))


# ----------------------------------------------------------------------------------- Kineto


@cache
def _kineto_doc(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def kineto_doc(path: Path) -> Any:
    return json.loads(_kineto_doc(path))


KINETO_VALUES: list[Any] = [None, "12", "abc", "", 1e30, 2**70, -(2**70), -5, 1.5, 0, [], [1], {}, {"a": 1}, True,
                            float("nan"), float("inf"), -1e-9, 9.2e18, "[/]", "\x1b[31mX"]
CATS = ["kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "gpu_memset", "user_annotation", "cuda_driver", "*"]
FIELDS = ["ts", "dur", "name", "cat", "pid", "tid", "ph"]
ARGS = ["grid", "block", "correlation", "External id", "bytes", "device", "stream", "registers per thread",
        "shared memory", "Input Dims", "size", "Sequence number"]
GRIDS: list[Any] = [5, [1], [1, 2], [1, 2, 3, 4], ["a", 1, 1], [2**40, 1, 1], [-1, 1, 1], [1.5, 1, 1], None, {},
                    [[1], 2, 3], [0, 0, 0]]
EVERY = [1, 2, 5]


def kineto_damage() -> st.SearchStrategy[tuple[Any, ...]]:
    cat = st.sampled_from(CATS)
    every = st.sampled_from(EVERY)
    return st.one_of(
        st.tuples(st.just("field"), cat, st.sampled_from(FIELDS), st.sampled_from(KINETO_VALUES + HOSTILE[:6]),
                  every),
        st.tuples(st.just("arg"), cat, st.sampled_from(ARGS), st.sampled_from(KINETO_VALUES), every),
        st.tuples(st.just("grid"), st.sampled_from(["grid", "block"]), st.sampled_from(GRIDS), every),
        st.tuples(st.just("args"), cat, st.sampled_from([None, [], "x", 7, [1, 2], True]), every),
        st.tuples(st.just("drop_arg"), cat, st.sampled_from(ARGS), every),
        st.tuples(st.just("not_event"), st.sampled_from([None, 5, "x", [], [1, 2], True]), every),
        st.tuples(st.just("one_instant"), cat),
        st.tuples(st.just("dup"), every),
        st.tuples(st.just("names"), cat, st.sampled_from([*HOSTILE, 12, 3.5, None])),
        st.tuples(st.just("top"), st.sampled_from(["deviceProperties", "traceEvents", "schemaVersion",
                                                   "baseTimeNanoseconds", "displayTimeUnit"]),
                  st.sampled_from([None, "x", 5, [], {}, [1, "a"], [{"computeMajor": "x", "numSms": -1}]])),
    )


def _events(doc: Any, cat: str, every: int) -> list[dict[str, Any]]:
    evs = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(evs, list):
        return []
    chosen = [e for e in evs if isinstance(e, dict) and (cat == "*" or str(e.get("cat", "")).lower() == cat)]
    return chosen[::every]


def apply_kineto(doc: Any, damage: list[tuple[Any, ...]]) -> Any:
    doc = copy.deepcopy(doc)
    for d in damage:
        kind = d[0]
        if kind == "field":
            _, cat, field, value, every = d
            for e in _events(doc, cat, every):
                e[field] = copy.deepcopy(value)
        elif kind == "arg":
            _, cat, arg, value, every = d
            for e in _events(doc, cat, every):
                if isinstance(e.get("args"), dict):
                    e["args"][arg] = copy.deepcopy(value)
        elif kind == "grid":
            _, arg, value, every = d
            for e in _events(doc, "kernel", every):
                if isinstance(e.get("args"), dict):
                    e["args"][arg] = copy.deepcopy(value)
        elif kind == "args":
            _, cat, value, every = d
            for e in _events(doc, cat, every):
                e["args"] = copy.deepcopy(value)
        elif kind == "drop_arg":
            _, cat, arg, every = d
            for e in _events(doc, cat, every):
                if isinstance(e.get("args"), dict):
                    e["args"].pop(arg, None)
        elif kind == "not_event":
            _, value, every = d
            evs = doc.get("traceEvents") if isinstance(doc, dict) else None
            if isinstance(evs, list):
                for i in range(0, len(evs), every * 3):
                    evs[i] = copy.deepcopy(value)
        elif kind == "one_instant":
            for e in _events(doc, d[1], 1):
                e["ts"], e["dur"] = 1000.0, 0
        elif kind == "dup":
            evs = doc.get("traceEvents") if isinstance(doc, dict) else None
            if isinstance(evs, list):
                evs.extend(copy.deepcopy(evs[:: d[1]]))
        elif kind == "names":
            _, cat, name = d
            for i, e in enumerate(_events(doc, cat, 1)):
                e["name"] = f"{name}{i % 3}" if isinstance(name, str) else name
        elif kind == "top":
            if isinstance(doc, dict):
                doc[d[1]] = copy.deepcopy(d[2])
        else:  # pragma: no cover
            raise ValueError(kind)
    return doc


def write_kineto(doc: Any, dst: Path, gz: bool) -> Path:
    text = json.dumps(doc).encode()  # NaN and Infinity as Python writes them (not JSON)
    dst.write_bytes(gzip.compress(text, mtime=0) if gz else text)
    return dst


# -------------------------------------------------------------------------------------- ncu


@cache
def _ncu_rows(path: Path) -> tuple[tuple[str, ...], ...]:
    with path.open(newline="") as fh:
        return tuple(tuple(r) for r in csv.reader(fh))


def ncu_rows(path: Path) -> list[list[str]]:
    return [list(r) for r in _ncu_rows(path)]


NCU_VALUES = ["n/a", "", "abc", "inf", "-inf", "nan", "1e400", "-1", "-5,000.5", "1,2,3", "9" * 30, "0", "(1, 2)",
              "(-1, 0, 99999999999)", "[/]", "=cmd", "\x1b[31m"]
NCU_COLUMNS = ["ID", "Kernel Name", "Metric Value", "Metric Unit", "Metric Name", "Section Name", "Block Size",
               "Grid Size", "Device", "CC", "Estimated Speedup", "Rule Name", "Stream", "gpu__time_duration.sum",
               "launch__registers_per_thread", "launch__grid_size", "launch__block_size",
               "sm__warps_active.avg.pct_of_peak_sustained_active", "dram__bytes.sum.per_second",
               "device__attribute_display_name"]


def ncu_damage() -> st.SearchStrategy[tuple[Any, ...]]:
    return st.one_of(
        st.tuples(st.just("cell"), st.sampled_from(NCU_COLUMNS), st.sampled_from(NCU_VALUES + HOSTILE[:8]),
                  st.sampled_from(EVERY)),
        st.tuples(st.just("dup_header"), st.integers(0, 40), st.integers(0, 40)),
        st.tuples(st.just("short"), st.sampled_from(EVERY), st.integers(0, 12)),
        st.tuples(st.just("long"), st.sampled_from(EVERY)),
        st.tuples(st.just("drop_col"), st.sampled_from(NCU_COLUMNS)),
        st.tuples(st.just("units"), st.sampled_from(["", "Kbyte", "usecond", "%", "xyz/s", "byte/ns"])),
        st.tuples(st.just("names"), st.sampled_from(HOSTILE)),
        st.tuples(st.just("empty_body"),),
    )


def apply_ncu(rows: list[list[str]], damage: list[tuple[Any, ...]]) -> list[list[str]]:
    rows = [list(r) for r in rows]
    header = rows[0]
    for d in damage:
        kind = d[0]
        body = rows[1:]
        if kind == "cell" and d[1] in header:
            i = header.index(d[1])
            for r in body[:: d[3]]:
                if i < len(r) and r[0].strip():  # not the raw page's units row
                    r[i] = d[2]
        elif kind == "dup_header" and d[1] < len(header) and d[2] < len(header):
            header[d[1]] = header[d[2]]
        elif kind == "short":
            for r in body[:: d[1]]:
                del r[d[2]:]
        elif kind == "long":
            for r in body[:: d[1]]:
                r += ["extra", "cells"]
        elif kind == "drop_col" and d[1] in header:
            i = header.index(d[1])
            for r in rows:
                if i < len(r):
                    del r[i]
        elif kind == "units" and len(rows) > 1 and not rows[1][0].strip():
            rows[1] = [d[1] if c else c for c in rows[1]]
        elif kind == "names" and "Kernel Name" in header:
            i = header.index("Kernel Name")
            for r in body:
                if i < len(r) and r[0].strip():
                    r[i] = d[1]
        elif kind == "empty_body":
            del rows[1:]
    return rows


def write_ncu(rows: list[list[str]], dst: Path) -> Path:
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    dst.write_text(buf.getvalue(), encoding="utf-8", errors="surrogatepass")
    return dst
