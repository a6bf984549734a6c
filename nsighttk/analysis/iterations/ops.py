"""What the GPU did in each iteration of :mod:`nsighttk.analysis.iterations.find`, as queries over the
engine (:func:`nsighttk.engine.of`): which operations each iteration launched, their counts, times
and bytes, the GPU's busy time and longest gaps, the synchronising calls' time, the launch delays'
median and the longest kernels; and the rows of the steady state.

The iterations are a table of windows ``_it_windows (i, w_start, w_end, steady)``: sorted and
disjoint, ``[w_start, w_end)``.  Each operation of the process is attributed to the window in which
the CUDA call that launched it started (the first call of the process with its correlation id), or
where none did, in which it started itself; those attributed are kept in the temporary table
``_it_ops`` until :func:`forget` (the steady state's operations are read from it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nsighttk import engine
from nsighttk.analysis.nsys.gpu import _kernel_names
from nsighttk.engine import Engine
from nsighttk.profile import Profile

#: Host-blocking synchronisation calls (``_vNNNN`` suffixes of nsys' names are ignored).
SYNC_APIS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cuCtxSynchronize",
             "cuStreamSynchronize", "cuEventSynchronize")

TOP_KERNELS = 3
_TOP_GAPS = 3
#: The tables of GPU operations, by the ``kind`` :data:`_it_ops` gives them.
OPS = ("kernels", "memcpy", "memset")
_INT64 = np.iinfo(np.int64)


@dataclass
class Measured:
    """Per iteration (arrays of the windows' length): operations, their time and bytes per table
    (``None``: no such operation), the first GPU start and last GPU end (missing where none),
    the median launch delay (NaN where none), synchronising time, busy time and largest gap; the
    longest kernels and gaps (:class:`nsighttk.analysis.iterations.find.Iterations`' frames); the
    operations of the process and those in an iteration."""

    counts: dict[str, np.ndarray]
    totals: dict[str, np.ndarray]
    gpu_start: pd.arrays.IntegerArray
    gpu_end: pd.arrays.IntegerArray
    launch_overhead: np.ndarray
    sync_ns: np.ndarray
    busy: np.ndarray
    largest_gap: np.ndarray
    top: pd.DataFrame
    gaps: pd.DataFrame
    ops: int = 0
    in_windows: int = 0


def name_column(p: Profile, table: str) -> str:
    """The column naming the rows of ``table``: its text where the table is given whole (it may
    have no string ids), else its string id (as ``kernel_names`` joins them)."""
    return "name" if p.loaded(table) or p.source is None else "name_id"


def own_ops(pid: int | None) -> str:
    """The condition on a row of operations that it is of process ``pid``: the process is in
    ``global_pid`` (bits 24-47, nsys' layout, which Kineto's loader follows); a row without one
    counts."""
    return "TRUE" if pid is None else "(global_pid IS NULL OR (global_pid >> 24) & 16777215 = $pid)"


def own_calls(eng: Engine, pid: int | None) -> str:
    """The condition on a CUDA call that it is of process ``pid`` (all calls where none has a
    known thread)."""
    if pid is None or not eng.rows("SELECT count(global_tid) FROM api")[0][0]:
        return "TRUE"
    return "(global_tid IS NOT NULL AND (global_tid >> 24) & 16777215 = $pid)"


def run_query(eng: Engine, query: str, pid: int | None, **params: object) -> list[tuple[Any, ...]]:
    """The rows of ``query``, with the process ``$pid`` and ``params`` bound where it names them."""
    bound = {k: v for k, v in {"pid": pid, **params}.items() if f"${k}" in query}
    return eng.con.execute(query, bound).fetchall()


_OP_COLUMNS = ["start_ns", "end_ns", "duration_ns", "correlation_id", "global_pid", "launch_ns"]
#: The columns the iterations' measures read (``name_id``: the name's column, :func:`name_column`); the
#: kernels' ``short_name`` is read for the top kernels.
COLUMNS: dict[str, list[str]] = {
    "kernels": [*_OP_COLUMNS, "name_id"], "memcpy": [*_OP_COLUMNS, "bytes"], "memset": [*_OP_COLUMNS, "bytes"],
    "api": ["start_ns", "end_ns", "correlation_id", "global_tid", "name_id"]}


def _need(p: Profile) -> Engine:
    """The engine with the columns the iterations read (each table read once)."""
    eng = engine.of(p)
    # (the views' row estimates are low: DuckDB would answer an ASOF join by a nested loop; 1M calls: 5 s)
    eng.con.execute("SET asof_loop_join_threshold = 0")
    return eng.need({t: [name_column(p, t) if c == "name_id" else c for c in cols] for t, cols in COLUMNS.items()})


def _windows(eng: Engine, w_start: np.ndarray, w_end: np.ndarray, steady: np.ndarray) -> None:
    """The windows as the table ``_it_windows``."""
    eng.con.execute("CREATE OR REPLACE TEMP TABLE _it_windows (i BIGINT, w_start BIGINT, w_end BIGINT, "
                    "steady BOOLEAN)")
    if len(w_start):
        frame = pd.DataFrame({"i": np.arange(len(w_start), dtype=np.int64), "w_start": w_start.astype(np.int64),
                              "w_end": w_end.astype(np.int64), "steady": steady.astype(bool)})
        eng.con.register("_it_windows_in", frame)
        try:
            eng.con.execute("INSERT INTO _it_windows SELECT * FROM _it_windows_in")
        finally:
            eng.con.unregister("_it_windows_in")


def _attribute(eng: Engine, pid: int | None, name: str) -> None:
    """``_it_ops``: the operations of process ``pid`` launched in a window of ``_it_windows``:
    kind (0 kernel, 1 memcpy, 2 memset), row, window, start, end, duration and bytes (0 where
    unknown), the start of the call that launched it (NULL: none), and the kernel's name
    (``name``: its column).  A step a temporary table: DuckDB, held to a few MB, runs out of
    memory where one query groups the calls, joins them and finds the windows."""
    (lo, hi), = eng.rows("SELECT min(w_start), max(w_end) FROM _it_windows")
    branches = []
    for kind, t in enumerate(OPS):
        b = "coalesce(bytes, 0)" if t != "kernels" else "0"
        n = name if t == "kernels" else f"NULL AS {name}"
        branches.append(f"SELECT {kind}::TINYINT AS kind, row_index, start_ns, end_ns, coalesce(duration_ns, 0) "
                        f"AS duration_ns, {b}::BIGINT AS bytes, launch_ns AS launch, {n} FROM {t} "
                        f"WHERE {own_ops(pid)}")
    try:
        run_query(eng, f"""
            CREATE OR REPLACE TEMP TABLE _it_timed AS
            SELECT *, coalesce(launch, start_ns) AS t FROM ({" UNION ALL ".join(branches)})
            WHERE coalesce(launch, start_ns) >= $lo AND coalesce(launch, start_ns) < $hi""", pid, lo=lo, hi=hi)
        eng.con.execute("""
            CREATE OR REPLACE TEMP TABLE _it_ops AS
            SELECT o.* EXCLUDE (t), w.i AS iteration, w.steady
            FROM _it_timed o ASOF JOIN _it_windows w ON o.t >= w.w_start WHERE o.t < w.w_end""")
    finally:
        eng.con.execute("DROP TABLE IF EXISTS _it_timed")


def measure(p: Profile, pid: int | None, w_start: np.ndarray, w_end: np.ndarray, steady: np.ndarray) -> Measured:
    """What the GPU operations of process ``pid`` (None: all) did in each window (sorted,
    disjoint; ``steady``: which are the steady state's): the module doc."""
    eng = _need(p)
    n = len(w_start)
    _windows(eng, w_start, w_end, steady)
    _attribute(eng, pid, name_column(p, "kernels"))
    ops = run_query(eng, "SELECT " + " + ".join(f"(SELECT count(*) FROM {t} WHERE {own_ops(pid)})" for t in OPS),
               pid)[0][0]
    counts = {t: np.zeros(n, dtype=np.int64) for t in OPS}
    sums: dict[str, np.ndarray] = {k: np.zeros(n, dtype=np.int64) for k in ("kernel_ns", "memcpy_ns", "memcpy_bytes",
                                                                             "memset_ns")}
    got = _arrays(eng, f"SELECT iteration, kind, count(*) AS n, {_exact_sql('sum(duration_ns::HUGEINT)', 'dur')}, "
                       f"{_exact_sql('sum(bytes::HUGEINT)', 'nbytes')} FROM _it_ops GROUP BY iteration, kind")
    for kind, t in enumerate(OPS):
        at = got["kind"] == kind
        i = got["iteration"][at]
        counts[t][i] = got["n"][at]
        key = ("kernel" if t == "kernels" else t) + "_ns"
        sums[key] = _put(sums[key], i, _exact_column(got, "dur", at))
        if t == "memcpy":
            sums["memcpy_bytes"] = _put(sums["memcpy_bytes"], i, _exact_column(got, "nbytes", at))
    ends = eng.sql("SELECT iteration, min(start_ns) AS lo, max(end_ns) AS hi FROM _it_ops GROUP BY iteration"
                   ).fetchnumpy()
    first, last = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    first_na, last_na = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
    i = np.asarray(ends["iteration"], dtype=np.int64)
    for values, na, col in ((first, first_na, ends["lo"]), (last, last_na, ends["hi"])):
        known = ~np.ma.getmaskarray(col)
        values[i[known]] = np.ma.getdata(col)[known]
        na[i[known]] = False
    busy, largest, gaps = _busy_and_gaps_sql(eng, pid, n)
    return Measured(
        counts=counts, totals=sums,
        gpu_start=pd.arrays.IntegerArray(first, first_na), gpu_end=pd.arrays.IntegerArray(last, last_na),
        launch_overhead=_launch_medians(eng, n),
        sync_ns=_sync_ns(p, eng, pid, n), busy=busy, largest_gap=largest, top=_top_kernels(p, eng), gaps=gaps,
        ops=int(ops), in_windows=int(sum(c.sum() for c in counts.values())))


def _exact_sql(total: str, name: str) -> str:
    """An integer total as two columns: ``name`` (BIGINT, NULL where it does not fit) and
    ``name_big`` (its text where it does not: a damaged export's)."""
    fits = f"{total} BETWEEN {_INT64.min} AND {_INT64.max}"
    return (f"CASE WHEN {fits} THEN ({total})::BIGINT END AS {name}, "
            f"CASE WHEN NOT ({fits}) THEN ({total})::VARCHAR END AS {name}_big")


def _exact_column(got: dict[str, Any], name: str, rows: Any = slice(None)) -> np.ndarray:
    """:func:`_exact_sql`'s pair as one column: int64 (NULL: 0), or Python integers where one does
    not fit."""
    small, big = got[name][rows], got[f"{name}_big"][rows]
    values = np.ma.filled(small, 0).astype(np.int64) if np.ma.isMaskedArray(small) else np.asarray(small, np.int64)
    wide = ~np.ma.getmaskarray(big) if np.ma.isMaskedArray(big) else np.array([b is not None for b in big], bool)
    if not wide.any():
        return values
    out = values.astype(object)
    out[wide] = [int(b) for b in np.ma.getdata(big)[wide]]
    return out


def _put(into: np.ndarray, at: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``into`` with ``values`` at ``at`` (made Python integers first where ``values`` are)."""
    if values.dtype == object and into.dtype != object:
        into = into.astype(object)
    into[at] = values
    return into


def _arrays(eng: Engine, query: str, params: list[object] | None = None) -> dict[str, Any]:
    """A query's columns as numpy arrays (masked where NULL), without a Python object per row."""
    return eng.sql(query, params).fetchnumpy()


def _launch_medians(eng: Engine, n: int) -> np.ndarray:
    """The median delay from a kernel's launching call to its GPU start per window (NaN where
    none): kernels that started at or after their call."""
    out = np.full(n, np.nan)
    got = _arrays(eng, "SELECT iteration, mid[1]::DOUBLE AS a, mid[2]::DOUBLE AS b FROM (SELECT iteration, "
                       "quantile_disc(start_ns - launch, [0.5, 0.5000000001]) AS mid FROM _it_ops "
                       "WHERE kind = 0 AND start_ns >= launch GROUP BY iteration)")
    out[np.asarray(got["iteration"], np.int64)] = (np.asarray(got["a"]) + np.asarray(got["b"])) / 2  # (numpy's median)
    return out


def _top_kernels(p: Profile, eng: Engine) -> pd.DataFrame:
    """The :data:`TOP_KERNELS` kernels of most time per window (by name: count, total time),
    longest first, ties by the first to run: iteration, name, short_name, count, total_ns."""
    eng, join = _kernel_names(p)
    eng.need({"kernels": ["short_name"]})
    # (a step a statement: DuckDB, held to a few MB, runs out of memory where one query does both)
    eng.con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _it_top AS
        SELECT iteration, any_value(n.name) AS name, count(*) AS count, sum(k.duration_ns::HUGEINT) AS total,
               min(k.row_index) AS first
        FROM _it_ops k JOIN kernel_names n ON {join} WHERE k.kind = 0 GROUP BY iteration, n.code
        QUALIFY row_number() OVER (PARTITION BY iteration ORDER BY total DESC, first) <= {TOP_KERNELS}""")
    try:
        got = _arrays(eng, f"""
            SELECT t.iteration, t.name, k.short_name, t.count, {_exact_sql('t.total', 'total')}
            FROM _it_top t JOIN kernels k ON k.row_index = t.first ORDER BY t.iteration, t.total DESC, t.first""")
    finally:
        eng.con.execute("DROP TABLE IF EXISTS _it_top")
    total = _exact_column(got, "total")
    return pd.DataFrame({
        "iteration": np.asarray(got["iteration"], dtype=np.int64),
        "name": np.asarray(np.ma.filled(got["name"], None) if np.ma.isMaskedArray(got["name"]) else got["name"],
                           dtype=object),
        "short_name": _texts(got["short_name"]),
        "count": np.asarray(got["count"], dtype=np.int64),
        "total_ns": total.astype(np.float64) if total.dtype == object else total})


def _texts(col: Any) -> np.ndarray:
    """A text column of :func:`_arrays` as objects, None where NULL."""
    data = np.asarray(np.ma.getdata(col), dtype=object)
    if np.ma.isMaskedArray(col) and np.ma.getmaskarray(col).any():
        data = data.copy()
        data[np.ma.getmaskarray(col)] = None
    return data


def _busy_and_gaps_sql(eng: Engine, pid: int | None, n: int) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Per window: the GPU's busy time (the union of the process's kernels, copies and memsets,
    clipped to it), its largest gap and its :data:`_TOP_GAPS` longest gaps (iteration, start_ns,
    duration_ns; longest first, ties by start).  The union is made as islands: ordered by start,
    an interval opens a block where it starts after every earlier interval has ended (touching
    intervals are one block); a block ends where the next one opens, the last at the latest end.
    A step a temporary table (the blocks, then the blocks cut to the windows)."""
    (lo, hi), = eng.rows("SELECT min(w_start), max(w_end) FROM _it_windows")
    intervals = " UNION ALL ".join(
        f"SELECT start_ns AS s, end_ns AS e, {k} + 3 * row_index AS u FROM {t} WHERE {own_ops(pid)} "
        "AND start_ns IS NOT NULL AND end_ns > $lo AND start_ns < $hi" for k, t in enumerate(OPS))
    (last,), = run_query(eng, f"SELECT max(e) FROM ({intervals})", pid, lo=lo, hi=hi)
    try:
        run_query(eng, f"""
            CREATE OR REPLACE TEMP TABLE _it_blocks AS
            WITH opens AS (SELECT s, max(e) OVER (ORDER BY s, u ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                                  AS before FROM ({intervals}))
            SELECT s, lead(before, 1, $last) OVER (ORDER BY s) AS e FROM opens WHERE before IS NULL OR s > before""",
             pid, lo=lo, hi=hi, last=last)
        # the blocks cut to the windows: each by the window its start lies in, and each window's
        # start by the block holding it, if any (the last block to start before it: blocks are
        # disjoint); two ASOF joins, not a range join (10M kernels, 20,400 windows: 4.4 -> 1.2 s)
        eng.con.execute("""
            CREATE OR REPLACE TEMP TABLE _it_clipped AS
            SELECT w.i, b.s, least(b.e, w.w_end) AS e, w.w_start, w.w_end
            FROM _it_blocks b ASOF JOIN _it_windows w ON b.s >= w.w_start WHERE b.s < w.w_end
            UNION ALL
            SELECT w.i, w.w_start, least(b.e, w.w_end), w.w_start, w.w_end
            FROM _it_windows w ASOF JOIN _it_blocks b ON w.w_start > b.s WHERE b.e > w.w_start""")
        busy = np.zeros(n, dtype=np.int64)
        got = _arrays(eng, "SELECT i, sum(e - s)::BIGINT AS b FROM _it_clipped GROUP BY i")  # (within a window)
        busy[np.asarray(got["i"], np.int64)] = np.asarray(got["b"], np.int64)
        gaps = _arrays(eng, f"""
            WITH edges AS (SELECT i, coalesce(lag(e) OVER (PARTITION BY i ORDER BY s), w_start) AS gs, s AS ge
                           FROM _it_clipped
                           UNION ALL SELECT i, max(e), any_value(w_end) FROM _it_clipped GROUP BY i
                           UNION ALL SELECT i, w_start, w_end FROM _it_windows
                                     WHERE i NOT IN (SELECT i FROM _it_clipped)),
                 g AS (SELECT i, gs, ge - gs AS d FROM edges WHERE ge > gs)
            SELECT i, gs, d, max(d) OVER (PARTITION BY i) AS most FROM g
            QUALIFY row_number() OVER (PARTITION BY i ORDER BY d DESC, gs) <= {_TOP_GAPS}
            ORDER BY i, d DESC, gs""")
    finally:
        eng.con.execute("DROP TABLE IF EXISTS _it_blocks")
        eng.con.execute("DROP TABLE IF EXISTS _it_clipped")
    largest = np.zeros(n, dtype=np.int64)
    at = np.asarray(gaps["i"], dtype=np.int64)
    largest[at] = np.asarray(gaps["most"], dtype=np.int64)
    top = pd.DataFrame({"iteration": at, "start_ns": np.asarray(gaps["gs"], dtype=np.int64),
                        "duration_ns": np.asarray(gaps["d"], dtype=np.int64)})
    return busy, largest, top


def _sync_ns(p: Profile, eng: Engine, pid: int | None, n: int) -> np.ndarray:
    """Per window, the time of the process's synchronising calls (:data:`SYNC_APIS`) inside it
    (each call clipped to each window it crosses)."""
    out = np.zeros(n, dtype=np.int64)
    col = name_column(p, "api")
    ids = [k for (k,) in eng.rows(f"SELECT DISTINCT {col} FROM api WHERE {col} IS NOT NULL")]
    names = ids if col == "name" else list(p.names("api", np.array(ids, dtype=np.int64))) if ids else []
    sync = [k for k, v in zip(ids, names, strict=True) if re.sub(r"_v\d+$", "", str(v)) in SYNC_APIS]
    if not sync:
        return out
    typed = "VARCHAR" if col == "name" else "BIGINT"
    for i, t in run_query(eng, f"""
            SELECT w.i, sum(least(a.end_ns, w.w_end) - greatest(a.start_ns, w.w_start))
            FROM (SELECT start_ns, end_ns FROM api WHERE {col} IN (SELECT unnest($sync::{typed}[]))
                  AND {own_calls(eng, pid)}) a
            JOIN _it_windows w ON a.start_ns < w.w_end AND a.end_ns > w.w_start GROUP BY w.i""", pid, sync=sync):
        out[i] = int(t)
    return out


# ------------------------------------------------------------------------------ the steady state


def steady_rows(p: Profile, pid: int | None, w_start: np.ndarray, w_end: np.ndarray, reuse: bool
                ) -> dict[str, np.ndarray]:
    """Per table, which rows (a boolean mask of the engine's rows) lie in the windows: the GPU
    operations of process ``pid`` launched in one (``reuse``: as the last :func:`measure`
    attributed them, its steady windows being these), the process's CUDA calls and the NVTX
    ranges and operators that start in one."""
    eng = _need(p).need({"nvtx": ["start_ns"], "ops": ["start_ns"]})
    if not reuse:
        _windows(eng, w_start, w_end, np.ones(len(w_start), dtype=bool))
        _attribute(eng, pid, name_column(p, "kernels"))
    keep: dict[str, np.ndarray] = {}
    for kind, t in enumerate(OPS):
        keep[t] = _mask(eng, t, "SELECT row_index FROM _it_ops WHERE kind = $kind AND steady", pid, kind=kind)
    if reuse:
        _windows(eng, w_start, w_end, np.ones(len(w_start), dtype=bool))
    for t, own in (("api", own_calls(eng, pid)), ("nvtx", "TRUE"), ("ops", "TRUE")):
        keep[t] = _mask(eng, t, f"""SELECT x.row_index FROM (SELECT row_index, start_ns FROM {t} WHERE {own}) x
                                   ASOF JOIN _it_windows w ON x.start_ns >= w.w_start WHERE x.start_ns < w.w_end""",
                        pid)
    return keep


def _mask(eng: Engine, table: str, rows: str, pid: int | None, **params: object) -> np.ndarray:
    """A boolean mask of the rows of ``table`` the query ``rows`` lists (:func:`run_query`'s parameters)."""
    mask = np.zeros(eng.rows(f"SELECT count(*) FROM {table}")[0][0], dtype=bool)
    bound = {k: v for k, v in {"pid": pid, **params}.items() if f"${k}" in rows}
    got = eng.con.execute(rows, bound).fetchnumpy()["row_index"]
    mask[np.asarray(got, dtype=np.int64)] = True
    return mask


def forget(p: Profile) -> None:
    """Drop the tables :func:`measure` keeps in the profile's engine (where it has one)."""
    eng = p.cache.get(("engine",))
    if isinstance(eng, Engine):
        for t in ("_it_ops", "_it_windows"):
            eng.con.execute(f"DROP TABLE IF EXISTS {t}")
