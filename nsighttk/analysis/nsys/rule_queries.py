"""The six expert rules of :mod:`nsighttk.analysis.nsys.rules` as SQL over the engine.

Each rule is ``compute(RuleInput, values) -> DataFrame`` with nsys' columns (sizes in bytes,
``(B)``): one query over the capture's tables in DuckDB (:mod:`nsighttk.engine`), which decides
memory and threads (an export larger than the memory budget is worked on out of core by DuckDB;
nothing here knows).  Python does what reads better there: matching API names, and merging the
few low-utilization chunks into runs.

nsys computes the rules with SQL over SQLite; the details of that SQL which decide its bytes are
kept: API names match with SQLite's ``LIKE`` (ASCII case-insensitive), a call's name being the
text of its string id; a copy joins every runtime call with its correlation id, of any process;
rows of equal duration keep the order in which SQLite produces the join (:func:`_memory_rule`);
where the SQL takes an id from "the row with the latest end", the first such row in table order
is used; the ``rows`` limit cuts the low-utilization runs before they are ranked, but not the gaps
(SQLite moves the ranking into the gap query).  These were checked against nsys 2025.3's and
2022.4's rule scripts run by SQLite on synthetic exports.

Two facts a Profile does not carry yet come from the export itself (:func:`read_export_facts`,
the one place the rules read SQLite): CUDA profiling overheads, which count as GPU activity for
the GPU rules, and the source/destination device of each copy.  Without them (a Profile from
another source, or a part of an export's rows) the rules run as if there were no overheads and
no same-device copies.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsighttk import engine
from nsighttk.analysis.nsys.reports import sql_round
from nsighttk.errors import InputFileError
from nsighttk.load.nsys_sqlite import MEM_KINDS, open_readonly
from nsighttk.profile import Profile

PAGEABLE, PINNED, MANAGED = MEM_KINDS[0], MEM_KINDS[1], MEM_KINDS[4]

#: Profiling overheads that count as GPU activity (gpustats: they cannot be addressed by the user).
OVERHEAD_NAMES = ("CUDA profiling data flush overhead", "CUDA profiling stop overhead", "CUDA profiling overhead")

_GAP_COLUMNS = ["Row#", "Duration (ns)", "Start (ns)", "PID", "Device ID", "Context ID"]
_UTIL_COLUMNS = ["Row#", "In-Use (%)", "Duration (ns)", "Start (ns)", "PID", "Device ID", "Context ID"]

#: The export facts as the engine's queries see them (registered on the profile's connection).
_OVERHEAD, _DEVICES = "nsys_rule_overhead", "nsys_rule_copy_devices"

Window = tuple[int, int, int | None] | None


# ------------------------------------------------------------------------------- export facts

@dataclass
class ExportFacts:
    """What nsys' rules read from an export that the Profile does not carry.

    ``tables``: the export's tables (a rule whose tables are missing is skipped, as nsys does);
    ``memcpy_columns``/``memset_columns``: their columns (2025 rules need ``greenContextId``);
    ``overhead``: PROFILER_OVERHEAD rows (start_ns, end_ns, global_tid, name);
    ``memcpy_devices``: src_device_id, dst_device_id [Int64] per memcpy row, in the Profile's order."""

    path: str = ""
    tables: frozenset[str] | None = None
    memcpy_columns: frozenset[str] = frozenset()
    memset_columns: frozenset[str] = frozenset()
    overhead: pd.DataFrame | None = None
    memcpy_devices: pd.DataFrame | None = None


def read_export_facts(path: str | Path) -> ExportFacts:
    """Read :class:`ExportFacts` from an nsys SQLite export (read-only)."""
    con = open_readonly(path)
    try:
        tables = frozenset(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')"))

        def cols(t: str) -> frozenset[str]:
            return frozenset(r[1] for r in con.execute(f'PRAGMA table_info("{t}")')) if t in tables else frozenset()

        overhead = None
        if "PROFILER_OVERHEAD" in tables and "StringIds" in tables:
            rows = con.execute("SELECT po.start, po.end, po.globalTid, s.value FROM PROFILER_OVERHEAD AS po "
                               "JOIN StringIds AS s ON s.id == po.nameId ORDER BY po.rowid").fetchall()
            overhead = pd.DataFrame(rows, columns=["start_ns", "end_ns", "global_tid", "name"])
        devices = None
        mc = cols("CUPTI_ACTIVITY_KIND_MEMCPY")
        if {"srcDeviceId", "dstDeviceId"} <= mc:
            rows = con.execute("SELECT srcDeviceId, dstDeviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchall()
            devices = pd.DataFrame(rows, columns=["src_device_id", "dst_device_id"], dtype="Int64")
        return ExportFacts(str(path), tables, mc, cols("CUPTI_ACTIVITY_KIND_MEMSET"), overhead, devices)
    except sqlite3.DatabaseError as ex:
        raise InputFileError(f"{path}: corrupt or truncated SQLite file ({ex})",
                             "re-export it with: nsys export --type sqlite") from None
    finally:
        con.close()


# ------------------------------------------------------------------------------- rule inputs

@dataclass
class RuleInput:
    """What a rule reads: the profile (its tables through :func:`nsighttk.engine.of`), the time
    window (start, end, the NVTX range's thread or None; None: the whole capture), whether to
    follow nsys 2022.4 where it differs, and whether the export's copy devices (registered with
    the overheads by :func:`rule_input`) line up with the profile's copies."""

    profile: Profile
    window: Window
    legacy: bool
    copy_devices: bool

    def engine(self, wants: dict[str, list[str]]) -> engine.Engine:
        """The profile's engine holding ``wants`` (and, in an NVTX range's window, the ids it is cut by)."""
        ids = {"kernels": "global_pid", "memcpy": "global_pid", "memset": "global_pid", "api": "global_tid"}
        if self.window is not None and self.window[2] is not None:
            wants = {t: [*cols, ids[t]] for t, cols in wants.items()}
        return engine.of(self.profile).need(wants)


def _nvtx_range(p: Profile, text: str) -> tuple[int, int | None, int] | None:
    """First range (by start) whose ``name[@domain]`` is ``text``: (start, end or None, global_tid)."""
    rows = engine.of(p).need({"nvtx": ["name", "domain", "start_ns", "end_ns", "global_tid"]}).rows(
        "SELECT start_ns, end_ns, global_tid FROM nvtx"
        " WHERE name || CASE WHEN domain <> '' THEN '@' || domain ELSE '' END = ?"
        " ORDER BY start_ns, row_index LIMIT 1", [text])
    if not rows:
        return None
    start, end, gtid = rows[0]
    return int(start), None if end is None else int(end), int(gtid)


def time_window(p: Profile, values: dict[str, Any]) -> tuple[Window, str | None]:
    """The time window of a request, or a reason to skip it (an NVTX range that is not there)."""
    start, end, nvtx = values["start"], values["end"], values["nvtx"]
    if start is None and end is None and nvtx is None:
        return None, None
    gtid = None
    if nvtx is not None:
        found = _nvtx_range(p, nvtx)
        if found is None:
            return None, f"NVTX range '{nvtx}' could not be found{{IN_DBFILE}}."
        if found[1] is None and end is None:
            return None, f"NVTX range '{nvtx}' never ends in this capture; give end=<ns>."
        start = found[0] if start is None else start
        end = found[1] if end is None else end
        gtid = found[2]
    start = 0 if start is None else start
    end = 0x7FFFFFFFFFFFFFFF if end is None else end
    if start > end:
        return None, "The start time cannot be greater than the end time."
    return (start, end, gtid), None


def _in_window(window: Window, id_col: str, alias: str = "") -> tuple[str, list[Any]]:
    """nsys' filter as SQL and its parameters: the row starts, ends, or spans inside [start, end);
    in an NVTX range's window also of its thread (a range on a thread other than the process'
    main one, for calls) or else of its process (``id_col``: a global thread or process id)."""
    if window is None:
        return "TRUE", []
    start, end, gtid = window
    s, e, ident = f"{alias}start_ns", f"{alias}end_ns", f"{alias}{id_col}"
    sql = f"(({s} >= ? AND {s} < ?) OR ({e} >= ? AND {e} < ?) OR ({s} < ? AND {e} >= ?))"
    params: list[Any] = [start, end, start, end, start, end]
    if gtid is not None:
        if id_col == "global_tid" and (gtid >> 24) & 0xFFFFFF != gtid & 0xFFFFFF:
            sql += f" AND {ident} = ?"
            params.append(gtid)
        else:
            sql += f" AND ({ident} >> 24) = ?"
            params.append(gtid >> 24)
    return sql, params


def rule_input(p: Profile, facts: ExportFacts | None, window: Window, legacy: bool = False) -> RuleInput:
    """The input of the rules over ``p``: the export's facts made tables of its engine (empty
    without them), the copies' devices only where there is one for each copy of ``p``."""
    con = engine.of(p).con
    over = facts.overhead if facts is not None and facts.overhead is not None else \
        pd.DataFrame({"start_ns": [], "end_ns": [], "global_tid": [], "name": []})
    _put(con, _OVERHEAD, over)
    devices = facts.memcpy_devices if facts is not None else None
    lined_up = devices is not None and len(devices) == p.count("memcpy")
    _put(con, _DEVICES, devices if devices is not None and lined_up else
         pd.DataFrame({"src_device_id": [], "dst_device_id": []}))
    return RuleInput(p, window, legacy, lined_up)


def _put(con: Any, name: str, df: pd.DataFrame) -> None:
    """``df`` as a table of the connection with its ``row_index`` (integers BIGINT, missing ones
    NULL; ``name`` VARCHAR), replacing the one of that name.  (A table, not a registered Arrow
    view: DuckDB joins it in far less memory.)"""
    import pyarrow as pa

    rows = pa.table({"row_index": pa.array(np.arange(len(df), dtype=np.int64)),  # noqa: F841 (read by the SQL)
                     **{c: pa.array(df[c].astype(object), type=pa.string()) if c == "name" else
                        pa.array(pd.array(df[c], dtype="Int64"), type=pa.int64()) for c in df.columns}})
    con.execute(f'CREATE OR REPLACE TEMP TABLE "{name}" AS SELECT * FROM rows')


_COPY = ["start_ns", "end_ns", "bytes", "pid", "device_id", "context_id", "green_context_id", "stream_id",
         "correlation_id"]
_COPIES = {"memcpy": [*_COPY, "src_kind", "dst_kind", "kind"], "api": ["name_id", "correlation_id"]}
_OPS = {t: ["start_ns", "end_ns", "pid", "device_id", "context_id"] for t in ("kernels", "memcpy", "memset")}

#: The columns each rule reads (by the rule's name).
READS: dict[str, dict[str, list[str]]] = {
    "cuda_memcpy_async": _COPIES, "cuda_memcpy_sync": _COPIES,
    "cuda_memset_sync": {"memset": [*_COPY, "mem_kind"], "api": ["name_id", "correlation_id"]},
    "cuda_api_sync": {"api": ["start_ns", "end_ns", "name_id", "pid", "tid"]},
    "gpu_gaps": _OPS, "gpu_time_util": _OPS,
}


def read_ahead(p: Profile, rules: list[str]) -> None:
    """Put the columns these rules read into ``p``'s engine at once: one read of each table (an
    export's table is read whole whatever the columns asked, SQLite storing it row by row)."""
    wants: dict[str, list[str]] = {}
    for rule in rules:
        for table, cols in READS[rule].items():
            wants[table] = [*wants.get(table, []), *cols]
    engine.of(p).need(wants)


# -------------------------------------------------------------------------------- results

_TYPES = {"In-Use (%)": "float64", "Row#": "int64", "Duration (ns)": "int64", "Start (ns)": "int64",
          "Bytes (B)": "int64", "Src Kind": object, "Dst Kind": object, "Memory Kind": object, "API Name": object}


def _frame(rel: Any, columns: list[str]) -> pd.DataFrame:
    """A query's rows as nsys' columns: times, sizes and row numbers int64, ids Int64 (missing:
    NA), text as objects."""
    got = rel.arrow()
    table = got.read_all() if hasattr(got, "read_all") else got
    out: dict[str, Any] = {}
    for c in columns:
        col = table.column(c).combine_chunks()
        kind = _TYPES.get(c, "Int64")
        if kind == "Int64":
            values = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            out[c] = pd.arrays.IntegerArray(values, col.is_null().to_numpy(zero_copy_only=False))
        elif kind is object:
            out[c] = np.array(col.to_pylist(), dtype=object)
        else:
            out[c] = col.to_numpy(zero_copy_only=False).astype(kind)
    return pd.DataFrame(out, columns=columns)


# -------------------------------------------------------------------------------- CUDA rules

def _like(pattern: str) -> re.Pattern[str]:
    """SQLite's ``LIKE`` (``%`` any run, ``_`` one character, ASCII case-insensitive) as a regex."""
    body = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.ASCII | re.DOTALL)


def _named(inp: RuleInput, keep: Callable[[str], bool]) -> list[Any]:
    """[name ids, their names] of the CUDA calls whose name passes ``keep`` (each distinct id
    tested once; a call without a known name id matches none, as nsys' join with StringIds)."""
    eng = inp.engine({"api": ["name_id"]})
    ids = np.array([r[0] for r in eng.rows("SELECT DISTINCT name_id FROM api WHERE name_id IS NOT NULL")],
                   dtype=np.int64)
    hits = [(int(i), n) for i, n in zip(ids.tolist(), inp.profile.names("api", ids), strict=True)
            if isinstance(n, str) and keep(n)]
    return [[i for i, _ in hits], [n for _, n in hits]]


_NAMES = "names AS (SELECT unnest(?::BIGINT[]) AS name_id, unnest(?::VARCHAR[]) AS api_name)"


def _limit(rows: int) -> tuple[str, list[int]]:
    """SQL ``LIMIT`` as nsys gives it: a negative limit is no limit."""
    return ("", []) if rows < 0 else (" LIMIT ?", [rows])




def _memory_rule(inp: RuleInput, table: str, where: str, kinds: dict[str, str], keep: Callable[[str], bool],
                 calls_first: bool, rows: int) -> pd.DataFrame:
    """Copies or memsets (``where``) joined with every API call of their correlation id whose name
    passes ``keep`` (nsys joins on the id only, so ids shared by two processes match both), longest
    first; rows of equal duration in the order SQLite produces the join: ``calls_first`` (nsys
    2025's plan) walks the calls in table order and finds their operations by (correlation id,
    start, end); otherwise (nsys 2022.4's copy rules) the operations in table order find their
    calls by (correlation id, name id)."""
    eng = inp.engine(_COPIES if table == "memcpy" else READS["cuda_memset_sync"])
    window, wparams = _in_window(inp.window, "global_pid", "m.")
    devices = f' LEFT JOIN "{_DEVICES}" AS d USING (row_index)' if "d.src_device_id" in where else ""
    order = "c.row_index, o.start_ns, o.end_ns, o.row_index" if calls_first else "o.row_index, c.name_id, c.row_index"
    shown = ", ".join(f'o.{col} AS "{head}"' for head, col in kinds.items())
    limit, lparams = _limit(rows)
    query = f"""
        WITH {_NAMES},
        c AS (SELECT a.row_index, a.correlation_id, a.name_id, n.api_name
              FROM api AS a JOIN names AS n USING (name_id)),
        o AS (SELECT m.*{", d.src_device_id, d.dst_device_id" if devices else ""} FROM "{table}" AS m{devices}
              WHERE m.correlation_id IS NOT NULL AND {window} AND {where})
        SELECT o.end_ns - o.start_ns AS "Duration (ns)", o.start_ns AS "Start (ns)", {shown}, o.bytes AS "Bytes (B)",
               o.pid AS "PID", o.device_id AS "Device ID", o.context_id AS "Context ID",
               nullif(o.green_context_id, 0) AS "Green Context ID", o.stream_id AS "Stream ID",
               c.api_name AS "API Name"
        FROM c JOIN o USING (correlation_id)
        ORDER BY 1 DESC, {order}{limit}"""
    cols = ["Duration (ns)", "Start (ns)", *kinds, "Bytes (B)", "PID", "Device ID", "Context ID", "Green Context ID",
            "Stream ID", "API Name"]
    return _frame(eng.sql(query, [*_named(inp, keep), *wparams, *lparams]), cols)


def cuda_memcpy_async(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    pat = _like("cudaMemcpy%Async%")
    return _memory_rule(inp, "memcpy", f"(m.src_kind = '{PAGEABLE}' OR m.dst_kind = '{PAGEABLE}')",
                        {"Src Kind": "src_kind", "Dst Kind": "dst_kind"}, lambda n: bool(pat.fullmatch(n)),
                        not inp.legacy, values["rows"])


def cuda_memcpy_sync(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    """Synchronous copies but host-to-device ones of 64 kB or less and those within one device."""
    pat, not_async = _like("cudaMemcpy%"), _like("%Async%")
    where = "NOT coalesce(m.bytes <= 64000 AND m.kind = 'HtoD', FALSE)"
    if inp.copy_devices:
        where += " AND NOT coalesce(d.src_device_id = d.dst_device_id, FALSE)"
    return _memory_rule(inp, "memcpy", where, {"Src Kind": "src_kind", "Dst Kind": "dst_kind"},
                        lambda n: bool(pat.fullmatch(n)) and not not_async.fullmatch(n), not inp.legacy,
                        values["rows"])


def cuda_memset_sync(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    pat, not_async = _like("cudaMemset%"), _like("%async%")
    return _memory_rule(inp, "memset", f"m.mem_kind IN ('{PINNED}', '{MANAGED}')", {"Memory Kind": "mem_kind"},
                        lambda n: bool(pat.fullmatch(n)) and not not_async.fullmatch(n), True, values["rows"])


def cuda_api_sync(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    dev, stream = _like("cudaDeviceSynchronize%"), _like("cudaStreamSynchronize%")
    names = _named(inp, lambda n: bool(dev.fullmatch(n) or stream.fullmatch(n)))
    eng = inp.engine(READS["cuda_api_sync"])
    window, params = _in_window(inp.window, "global_tid", "a.")
    for col in ("process", "thread"):
        if values.get(col, -1) != -1:
            window += f" AND a.{'pid' if col == 'process' else 'tid'} = ?"
            params.append(values[col])
    limit, lparams = _limit(values["rows"])
    query = f"""
        WITH {_NAMES}
        SELECT a.end_ns - a.start_ns AS "Duration (ns)", a.start_ns AS "Start (ns)", a.pid AS "PID", a.tid AS "TID",
               n.api_name AS "API Name"
        FROM api AS a JOIN names AS n USING (name_id)
        WHERE {window}
        ORDER BY 1 DESC, a.row_index{limit}"""
    return _frame(eng.sql(query, [*names, *params, *lparams]), ["Duration (ns)", "Start (ns)", "PID", "TID",
                                                                  "API Name"])


# --------------------------------------------------------------------------------- GPU rules

def _gpu_ops(inp: RuleInput) -> tuple[str, list[Any]]:
    """CTEs ``spans`` and ``ops``, as gpustats builds its GPU operation view.  ``spans``: per
    process and device (numbered ``g`` in that order) the first start, the last end and the
    context of the first operation ending last.  ``ops`` (src, i, s, e, g, context_id): kernels,
    copies and memsets (start > 0, of a known process and device; ``src`` 0, 1, 2 and ``i`` their
    row: nsys' order), and before them (``src`` -1) the CUDA profiling overheads that fall inside
    a span of their process (attributed to it)."""
    inp.engine(_OPS)
    parts, params = [], []
    for src, table in enumerate(("kernels", "memcpy", "memset")):
        window, wparams = _in_window(inp.window, "global_pid")
        parts.append(f"SELECT {src} AS src, row_index AS i, start_ns AS s, end_ns AS e, pid, device_id, context_id"
                     f" FROM {table} WHERE start_ns > 0 AND pid IS NOT NULL AND device_id IS NOT NULL AND {window}")
        params += wparams
    window, wparams = _in_window(inp.window, "global_tid")
    names = ", ".join("?" * len(OVERHEAD_NAMES))
    sql = f"""
        work AS ({" UNION ALL ".join(parts)}),
        spans AS (SELECT row_number() OVER (ORDER BY pid, device_id) AS g, pid, device_id, min(s) AS first,
                         max(e) AS last, first(context_id ORDER BY e DESC, src, i) AS ctx
                  FROM work GROUP BY pid, device_id),
        over AS (SELECT row_index AS i, start_ns AS s, end_ns AS e, (global_tid >> 24) & 16777215 AS pid
                 FROM "{_OVERHEAD}" WHERE global_tid IS NOT NULL AND name IN ({names}) AND {window}),
        ops AS (SELECT -1 AS src, o.i, o.s, o.e, sp.g, sp.ctx AS context_id
                FROM over AS o JOIN spans AS sp ON o.pid = sp.pid WHERE o.s > sp.first AND o.e < sp.last
                UNION ALL
                SELECT w.src, w.i, w.s, w.e, sp.g, w.context_id
                FROM work AS w JOIN spans AS sp USING (pid, device_id))"""
    return sql, [*params, *OVERHEAD_NAMES, *wparams]


def gpu_gaps(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    """Idle stretches: per process and device, the i-th start (in start order) minus the (i-1)-th
    end (in end order, ties in nsys' order of operations), when longer than ``gap`` ms; the context
    is that end's operation's.  (Each start and end keyed by its span and rank in one integer:
    the join of 10M starts with 10M ends holds two integers a row.)"""
    ops, params = _gpu_ops(inp)
    limit, lparams = _limit(values["rows"])
    query = f"""
        WITH {ops},
        starts AS (SELECT (g << 40) + row_number() OVER (PARTITION BY g ORDER BY s) AS key, s FROM ops),
        ends AS (SELECT (g << 40) + row_number() OVER (PARTITION BY g ORDER BY e, src, i) + 1 AS key, e, context_id
                 FROM ops),
        gaps AS (SELECT st.s - en.e AS length, en.e AS gap_start, en.key, en.context_id
                 FROM starts AS st JOIN ends AS en USING (key) WHERE st.s - en.e > ? AND en.e < st.s)
        SELECT row_number() OVER (ORDER BY length DESC, gap_start, key) AS "Row#", length AS "Duration (ns)",
               gap_start AS "Start (ns)", sp.pid AS "PID", sp.device_id AS "Device ID", context_id AS "Context ID"
        FROM gaps JOIN spans AS sp ON sp.g = gaps.key >> 40
        ORDER BY 1{limit}"""
    return _frame(inp.engine({}).sql(query, [*params, values["gap"] * 1_000_000, *lparams]), _GAP_COLUMNS)


def chunk_use(inp: RuleInput, n: int) -> list[tuple[Any, ...]]:
    """Each process/device span cut in ``n`` chunks of ceil(span / n) ns (nsys computes it in
    doubles; the values are whole numbers), the last one cut at the end of the span: (device, pid,
    context of its first operation ending last, chunk index, start, end, running time of the
    operations inside it (overlapping ones add up, as in nsys; exact), operations overlapping it),
    by device, process and chunk.  Each operation meets only the chunks it overlaps."""
    ops, params = _gpu_ops(inp)
    query = f"""
        WITH {ops},
        sized AS (SELECT *, CAST(ceil(CAST(last - first AS DOUBLE) / ?) AS BIGINT) AS size FROM spans),
        chunks AS (SELECT g, r, r * size AS a, least(r * size + size, last - first) AS b
                   FROM sized, range(?) AS t(r) WHERE r * size < least(r * size + size, last - first)),
        meets AS (SELECT g, o.s - z.first AS s, o.e - z.first AS e,
                         unnest(range((o.s - z.first) // z.size, (o.e - z.first - 1) // z.size + 1)) AS r
                  FROM ops AS o JOIN sized AS z USING (g) WHERE z.size > 0),
        used AS (SELECT g, r, sum(least(m.e, c.b) - greatest(m.s, c.a)) AS busy, count(*) AS n
                 FROM meets AS m JOIN chunks AS c USING (g, r) WHERE m.s < c.b AND m.e > c.a GROUP BY g, r)
        SELECT z.device_id, z.pid, z.ctx, c.r, z.first + c.a, z.first + c.b, coalesce(u.busy, 0), coalesce(u.n, 0)
        FROM chunks AS c JOIN sized AS z USING (g) LEFT JOIN used AS u USING (g, r)
        ORDER BY z.device_id, z.pid, c.r"""
    return inp.engine({}).rows(query, [*params, n, n])


def _typed(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: df[c].astype(_TYPES.get(c, "Int64")) for c in columns}, index=df.index)


def sqlite_sum(values: list[float], compensated: bool) -> float:
    """SQLite's ``sum()`` of floats: Kahan-Babuska-Neumaier since SQLite 3.43 (nsys 2025), plain
    left-to-right addition before (the SQLite nsys 2022.4 runs on)."""
    total = err = 0.0
    for v in values:
        if not compensated:
            total += v
            continue
        t = total + v
        err += (total - t) + v if abs(total) > abs(v) else (v - t) + total
        total = t
    return total + err


def gpu_time_util(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    """Runs of consecutive chunks (:func:`chunk_use`) whose summed GPU activity is below
    ``threshold`` % of the chunk, merged (weighted average, rounded to 0.1), lowest first."""
    n, threshold = values["chunks"], values["threshold"]
    low: list[dict[str, Any]] = []
    empty_by_index: dict[int, dict[str, Any]] = {}
    for dev, pid, ctx, r, start, end, busy, ops in chunk_use(inp, n) if n else []:
        pct = float(busy) / float(end - start) * 100
        if pct >= threshold:
            continue
        chunk = {"r": r, "start": start, "end": end, "pct": pct, "pid": pid, "dev": dev, "ctx": ctx}
        if inp.legacy and ops == 0:
            empty_by_index.setdefault(r, chunk)  # 2022.4 groups chunks without operations by index
        else:
            low.append(chunk)
    low += empty_by_index.values()
    if not low:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c == "In-Use (%)" else "int64") for c in _UTIL_COLUMNS})
    chunks = pd.DataFrame(low).sort_values(["pid", "dev", "r"], kind="stable")
    chunks["run"] = chunks["r"] - chunks.groupby(["pid", "dev"]).cumcount() - 1
    runs = []
    for (_, dev, pid), c in chunks.groupby(["run", "dev", "pid"], sort=True):
        size = (c["end"] - c["start"]).astype("float64").to_numpy()
        weighted = sqlite_sum((size * c["pct"].to_numpy()).tolist(), not inp.legacy)
        average = weighted / sqlite_sum(size.tolist(), not inp.legacy)
        runs.append({"In-Use (%)": float(sql_round(np.array([average]))[0]),
                     "Duration (ns)": int(c["end"].max() - c["start"].min()), "Start (ns)": int(c["start"].min()),
                     "PID": pid, "Device ID": dev, "Context ID": c["ctx"].iloc[-1]})
    out = pd.DataFrame(runs)
    out = out if values["rows"] < 0 else out.iloc[:values["rows"]]  # SQLite applies the grouping query's LIMIT first
    out = out.sort_values(["In-Use (%)", "Duration (ns)"], kind="stable")
    out.insert(0, "Row#", np.arange(1, len(out) + 1, dtype="int64"))
    out = out if values["rows"] < 0 else out.iloc[:values["rows"]]
    return _typed(out.reset_index(drop=True), _UTIL_COLUMNS)

