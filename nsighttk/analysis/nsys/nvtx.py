"""The NVTX reports of ``nsys stats`` (2025.3): range summary, GPU projection, kernels per range.

Each is SQL over the capture's engine (:func:`nsighttk.engine.of`), a statement per step (a join
or an aggregate at a time, each into a temporary table); DuckDB decides memory and threads, and
writes to disk what does not fit.  The rules are nsys' own:

* a range's label is ``domain:name`` (``:name`` in the default domain, the domain named per
  process); ranges never closed end at the last NVTX timestamp (of any event for ``nvtx_sum``, of
  ranges for the others);
* only ranges that ended on the thread that started them are projected onto the GPU;
* a GPU operation (kernel, copy, memset) was launched by the first runtime call with its
  correlation id in its process, and belongs to every projected range, on the calling thread,
  that holds that whole call (``start <= call.start``, ``call.end <= end``);
* a range's *GPU projection* spans its operations' first start to their last end; its level
  and parent are those of the thread's nesting (:mod:`nsighttk.load.nvtx_nesting`: the tightest
  holder; on a thread whose ranges cross, nsys' exact search up to its limit), its children the
  ranges under it that projected some work;
* statistics: sample standard deviation (0 for one value), medians the mean of the middle two,
  everything rounded as SQLite's ``round(x, 1)``; ties in the order keep the grouping key's.

Which ranges hold which launching calls is found by walking each thread's nesting
(:class:`nsighttk.load.nvtx_nesting.Holders`: a sort and a search per call, each call counted at
its innermost holder and the totals carried up the tree).  Ranges that cross others in ways the
walk's layers do not separate, and ``nvtx_kern_sum``'s pairs, are found by a range join: each
thread in its own band of one integer key (``thread rank * span + time``), so that containment is
two inequalities, which DuckDB answers by sorting (an IEJoin).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from nsighttk import engine
from nsighttk.analysis.coltable import Table
from nsighttk.analysis.nsys.base import ReportResult, no_data, result, sql_round
from nsighttk.analysis.nsys.catalog import NEEDS
from nsighttk.load.nvtx_nesting import Holders, depth_from_parents, parents_of
from nsighttk.profile import INT_NULL, Profile

if TYPE_CHECKING:
    import pandas as pd

    from nsighttk.engine import Engine

__all__ = ["NVTX_KERN_COLUMNS", "NVTX_PROJ_COLUMNS", "nvtx_gpu_proj_sum", "nvtx_kern_sum", "nvtx_projection",
           "nvtx_sum", "nvtx_tags"]


NVTX_PROJ_COLUMNS = ["Range", "Style", "Total Proj Time (ns)", "Total Range Time (ns)", "Range Instances",
                     "Proj Avg (ns)", "Proj Med (ns)", "Proj Min (ns)", "Proj Max (ns)", "Proj StdDev (ns)",
                     "Total GPU Ops", "Avg GPU Ops", "Avg Range Lvl", "Avg Num Child"]
NVTX_KERN_COLUMNS = ["NVTX Range", "Style", "PID", "TID", "NVTX Inst", "Kern Inst", "Total Time (ns)", "Avg (ns)",
                     "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Kernel Name"]
_PROJ_COLUMNS = ["range_pos", "name", "style", "range_ns", "proj_start_ns", "proj_ns", "gpu_ops", "level", "children"]

#: A range's label, as SQL over the ``nvtx`` view.
_TAG = "coalesce(domain, '') || ':' || coalesce(name, '')"
_EXACT_FLOAT = 2**53
_I64 = (-(2**63), 2**63 - 1)


def nvtx_tags(nvtx: pd.DataFrame) -> pd.Series:
    """nsys' range label: ``domain:name`` (``:name`` in the default domain)."""
    return nvtx["domain"].fillna("").astype(str) + ":" + nvtx["name"].fillna("").astype(str)


# ----------------------------------------------------------------------------------- nvtx_sum


def nvtx_sum(p: Profile, top: int | None = None) -> ReportResult:
    """NVTX Range Summary: CPU-side time of each range, grouped by label and style; ``top``: its
    rows with the most time only (a note says how many there were), the others never formatted."""
    eng = engine.of(p).need(NEEDS["nvtx_sum"])
    if not _count(eng, "nvtx"):
        return no_data("nvtx_sum", "nvtx")
    with _Scratch(eng) as s:
        ranges = s.table(f"SELECT {_TAG} AS tag, style, coalesce(end_ns, $fill) - start_ns AS v FROM nvtx",
                         {"fill": _fill(eng, p.meta.get("nvtx_max_ts_all"), "")})
        g = _grouped(s, ranges, ["tag", "style"])
    grand = sum(int(x) for x in g["total"]) if g["total"].dtype == object else int(g["total"].sum(dtype=object))
    rows, notes = _top(g["total"], top, "nvtx_sum")
    g = {c: v[rows] for c, v in g.items()}
    table = Table({**_time_columns(g, "Instances", grand), "Style": g["style"], "Range": g["tag"]})
    out = result("nvtx_sum", table.sorted(["Total Time (ns)"], [False]))
    out.notes.extend(notes)
    return out


# ------------------------------------------------------------------------------- projection


def nvtx_projection(p: Profile) -> pd.DataFrame:
    """One row per NVTX range instance that launched GPU work: its projection onto the GPU.

    Columns: range_pos (the range's position among those ended on their own thread), name
    (``domain:name``), style, range_ns (CPU duration), proj_start_ns, proj_ns (first GPU start to
    last GPU end of the work it launched), gpu_ops, level, children (child ranges that also
    launched GPU work); in range order."""
    import pandas as pd

    eng = engine.of(p).need(_PROJECTION_NEEDS)
    with _projected(eng, p) as t:
        if t is None:
            return pd.DataFrame({c: [] for c in _PROJ_COLUMNS})
        got = _fetch(eng.sql(f"""SELECT pos AS range_pos, tag AS name, style, range_ns, proj_start_ns, proj_ns,
                                        gpu_ops, level, children FROM {t} ORDER BY pos"""))
    return pd.DataFrame({c: got[c] if got[c].dtype == object else got[c].astype("int64") for c in _PROJ_COLUMNS})


_PROJECTION_NEEDS = NEEDS["nvtx_gpu_proj_sum"]


def nvtx_gpu_proj_sum(p: Profile, top: int | None = None,
                      every: Callable[[pd.DataFrame], None] | None = None) -> ReportResult:
    """NVTX GPU Projection Summary: GPU time of the work each range launched.  ``top``: its rows
    with the most projected time only (a note says how many there were); ``every`` is then handed
    every group's ``Range``, ``Range Instances``, ``Total Range Time (ns)``, ``Total Proj Time (ns)``
    and ``Total GPU Ops`` first (what :func:`nsighttk.analysis.nvtx.autograd_ops` sums up)."""
    eng = engine.of(p).need(_PROJECTION_NEEDS)
    if not _count(eng, "nvtx"):
        return no_data("nvtx_gpu_proj_sum", "nvtx", NVTX_PROJ_COLUMNS)
    if not _count(eng, "api"):
        return no_data("nvtx_gpu_proj_sum", "api", NVTX_PROJ_COLUMNS)
    with _projected(eng, p) as t:
        if t is None:
            return no_data("nvtx_gpu_proj_sum", "no GPU work inside NVTX ranges", NVTX_PROJ_COLUMNS)
        sums = ["range_ns", "gpu_ops", "level", "children"]
        with _Scratch(eng) as s:
            rows = s.table(f"SELECT tag, style, proj_ns AS v, {', '.join(sums)} FROM {t}")
            g = _grouped(s, rows, ["tag", "style"], sums)
    count = g["n"]
    rows_kept, notes = _top(g["total"], top, "nvtx_gpu_proj_sum")
    if notes and every is not None:
        import pandas as pd

        every(pd.DataFrame({"Range": g["tag"], "Range Instances": count, "Total Range Time (ns)": g["range_ns"],
                            "Total Proj Time (ns)": g["total"], "Total GPU Ops": g["gpu_ops"]}))
    g = {c: v[rows_kept] for c, v in g.items()}
    count = g["n"]

    def means(col: str) -> np.ndarray:
        return sql_round(g[col] / count)

    table = Table({
        "Range": g["tag"],
        "Style": g["style"],
        "Total Proj Time (ns)": g["total"],
        "Total Range Time (ns)": g["range_ns"],
        "Range Instances": count,
        "Proj Avg (ns)": sql_round(g["avg"]),
        "Proj Med (ns)": sql_round(g["med"]),
        "Proj Min (ns)": g["min"],
        "Proj Max (ns)": g["max"],
        "Proj StdDev (ns)": sql_round(g["stddev"]),
        "Total GPU Ops": g["gpu_ops"],
        "Avg GPU Ops": means("gpu_ops"),
        "Avg Range Lvl": means("level"),
        "Avg Num Child": means("children"),
    })
    out = result("nvtx_gpu_proj_sum", table.sorted(["Total Proj Time (ns)"], [False]))
    out.notes.extend(notes)
    return out


@contextmanager
def _projected(eng: Engine, p: Profile) -> Iterator[str | None]:
    """A temporary table of :func:`nvtx_projection`'s rows (``pos, tag, style, range_ns,
    proj_start_ns, proj_ns, gpu_ops, level, children``); None where no range launched GPU work."""
    with _Scratch(eng) as s:
        ranges = _ranges(s, p)
        if ranges is None:
            yield None
            return
        # The launching calls of GPU operations: their first start and last end.
        launched = s.table(f"""SELECT launch_call AS call, min(start_ns) AS first_ns, max(end_ns) AS last_ns
                               FROM ({_ops()}) WHERE launch_call IS NOT NULL GROUP BY launch_call""")
        calls = s.table(f"SELECT l.*, a.start_ns, a.end_ns, a.global_tid FROM {launched} l JOIN api a "
                        "ON a.row_index = l.call WHERE a.start_ns IS NOT NULL AND a.end_ns IS NOT NULL")
        s.drop(launched)
        spans = _spans(s, ranges, calls)
        s.drop(calls)
        if not _count(eng, spans):
            yield None
            return
        nest = _nesting(s, ranges)
        parents = s.table(f"SELECT n.parent FROM {spans} JOIN {nest} n USING (row_index) WHERE n.parent IS NOT NULL")
        kids = s.table(f"SELECT parent AS row_index, count(*) AS children FROM {parents} GROUP BY parent")
        s.drop(parents)
        rows = s.table(f"""SELECT s.*, r.pos, r.end_ns - r.start_ns AS range_ns
                           FROM {spans} s JOIN {ranges} r USING (row_index)""")
        s.drop(spans, ranges)
        leveled = s.table(f"SELECT r.*, n.level FROM {rows} r JOIN {nest} n USING (row_index)")
        s.drop(rows, nest)
        counted = s.table(f"SELECT r.*, coalesce(k.children, 0) AS children FROM {leveled} r LEFT JOIN {kids} k "
                          "USING (row_index)")
        s.drop(leveled, kids)
        yield s.table(f"""SELECT r.pos, {_TAG} AS tag, n.style, r.range_ns, r.proj_start_ns,
                                 r.last_ns - r.proj_start_ns AS proj_ns, r.gpu_ops, r.level, r.children
                          FROM {counted} r JOIN nvtx n USING (row_index)""")


#: A keyed range ``r`` holds a keyed call ``c`` whole (the same thread: see the module's notes).
_HOLDS = "r.ks <= c.ks AND c.ke <= r.ke AND c.ks <= r.ke"


def _ops() -> str:
    """Kernels, copies and memsets end to end: start, end and the runtime call that launched each."""
    return " UNION ALL ".join(f"SELECT start_ns, end_ns, launch_call FROM {t}" for t in ("kernels", "memcpy", "memset"))


def _ranges(s: _Scratch, p: Profile) -> str | None:
    """The ranges nsys projects (ended on their own thread): row_index, pos (their order),
    start_ns, end_ns (open ones closed), global_tid, range_id and ``rank`` of their thread (by
    id); None where there are none."""
    closed = s.table("""SELECT row_index, start_ns, coalesce(end_ns, $fill) AS end_ns, global_tid, range_id
                         FROM nvtx WHERE end_global_tid IS NULL""",
                     {"fill": _fill(s.eng, p.meta.get("nvtx_max_ts_ranges"), "WHERE end_global_tid IS NULL")})
    if not _count(s.eng, closed):
        return None
    threads = s.table(f"""SELECT global_tid, row_number() OVER (ORDER BY global_tid) - 1 AS rank
                          FROM (SELECT DISTINCT global_tid FROM {closed} WHERE global_tid IS NOT NULL)""")
    ordered = s.table(f"SELECT row_number() OVER (ORDER BY row_index) - 1 AS pos, * FROM {closed}")
    s.drop(closed)
    ranges = s.table(f"SELECT r.*, t.rank FROM {ordered} r LEFT JOIN {threads} t USING (global_tid)")
    s.drop(ordered, threads)
    return ranges


def _spans(s: _Scratch, ranges: str, calls: str) -> str:
    """Per range of ``ranges`` holding some of ``calls`` (``first_ns``, ``last_ns``: the times of
    the work each launched; ``start_ns``, ``end_ns``, ``global_tid``), as a table: ``row_index``,
    ``gpu_ops`` (the calls it holds), ``proj_start_ns`` and ``last_ns``.  Threads whose ranges
    nest are walked (:class:`nsighttk.load.nvtx_nesting.Holders`); the calls of threads whose
    ranges cross are compared with each of their ranges (a range join)."""
    r = _fetch(s.eng.sql(f"""SELECT row_index, start_ns, end_ns, global_tid, range_id FROM {ranges}
                             WHERE global_tid IS NOT NULL AND start_ns IS NOT NULL"""))
    holders = Holders(r.pop("start_ns"), r.pop("end_ns"), r.pop("global_tid"), r.pop("range_id"))
    [(n,)] = s.eng.rows(f"SELECT count(*) FROM {calls}")
    for lo in range(0, n, _CALLS_AT_ONCE):  # (a stretch of the calls at a time: rowid ranges, no sort)
        c = _fetch(s.eng.sql(f"""SELECT start_ns, end_ns, global_tid, first_ns, last_ns FROM {calls}
                                 WHERE rowid >= {lo} AND rowid < {lo + _CALLS_AT_ONCE}"""))
        holders.add(c["start_ns"], c["end_ns"], c["global_tid"], c["first_ns"], c["last_ns"])
        del c
    at, count, first, last = holders.spans()
    walked = s.columns({"row_index": r["row_index"][at], "gpu_ops": count, "proj_start_ns": first, "last_ns": last})
    crossing = r["row_index"][holders.crossing]
    del r, holders, at, count, first, last
    if not len(crossing):
        return walked
    held = s.columns({"row_index": np.asarray(crossing, dtype=np.int64)})
    cross_ranges = s.table(f"SELECT * FROM {ranges} SEMI JOIN {held} USING (row_index)")
    cross_calls = s.table(f"SELECT * FROM {calls} WHERE global_tid IN (SELECT global_tid FROM {cross_ranges})")
    s.drop(held)
    keyed = _keyed(s, cross_ranges, cross_calls)
    s.drop(cross_calls)
    if keyed is None:
        return walked
    pairs = s.table(f"SELECT r.row_index, c.first_ns, c.last_ns FROM {cross_ranges} r JOIN {keyed} c ON {_HOLDS}")
    s.drop(keyed, cross_ranges)
    both = s.table(f"""SELECT * FROM {walked} UNION ALL
                       SELECT row_index, count(*) AS gpu_ops, min(first_ns) AS proj_start_ns, max(last_ns) AS last_ns
                       FROM {pairs} GROUP BY row_index""")
    s.drop(pairs, walked)
    return both


#: Calls handed to the nesting walk at a time (five int64 columns: 40 MB).
_CALLS_AT_ONCE = 1 << 20


def _keyed(s: _Scratch, ranges: str, calls: str) -> str | None:
    """``calls`` (with ``start_ns``, ``end_ns``, ``global_tid``) on the threads of ``ranges``,
    each with its keys ``ks``/``ke`` (``thread rank * span + time - lo``), as a table; the ranges'
    own keys are added to ``ranges``.  None where no call is on a thread of a range."""
    on_threads = s.table(f"SELECT c.*, r.rank FROM {calls} c JOIN (SELECT DISTINCT global_tid, rank FROM {ranges}) r "
                         "USING (global_tid)")
    [(lo, hi, threads)] = s.eng.rows(f"""SELECT least(min(r.lo), min(c.lo)), greatest(max(r.hi), max(c.hi)),
            max(r.threads) FROM
        (SELECT min(start_ns) AS lo, max(end_ns) AS hi, count(DISTINCT rank) AS threads FROM {ranges}) r,
        (SELECT min(least(start_ns, end_ns)) AS lo, max(greatest(start_ns, end_ns)) AS hi FROM {on_threads}) c""")
    if lo is None:
        return None
    span = hi - lo + 1
    # (HUGEINT keys where the bands do not fit in 63 bits: hostile timestamps)
    kind = "BIGINT" if (threads + 1) * span < 2**62 else "HUGEINT"
    key = f"rank::{kind} * $span + ({{}} - $lo)"
    params = {"span": span, "lo": lo}
    s.eng.con.execute(f"ALTER TABLE {ranges} ADD COLUMN ks {kind}")
    s.eng.con.execute(f"ALTER TABLE {ranges} ADD COLUMN ke {kind}")
    s.eng.con.execute(f"UPDATE {ranges} SET ks = {key.format('start_ns')}, ke = {key.format('end_ns')}", params)
    keyed = s.table(f"SELECT *, {key.format('start_ns')} AS ks, {key.format('end_ns')} AS ke FROM {on_threads}",
                    params)
    s.drop(on_threads)
    return keyed


def _nesting(s: _Scratch, ranges: str) -> str:
    """Each range's parent (its ``row_index``, NULL for none) and level, as a table: the thread's
    nesting walk (:func:`nsighttk.load.nvtx_nesting.parents_of`, the one the loader's ``depth``
    comes from) over the projected ranges alone."""
    r = _fetch(s.eng.sql(f"""SELECT row_index, start_ns, end_ns, coalesce(global_tid, {INT_NULL}) AS global_tid,
                                    range_id FROM {ranges} ORDER BY pos"""))
    parent = parents_of(r["start_ns"], r["end_ns"], r["global_tid"], r["range_id"])
    level = depth_from_parents(parent)
    rows = r["row_index"]
    return s.columns({"row_index": np.asarray(rows, dtype=np.int64),
                      "parent": np.ma.masked_array(rows[np.maximum(parent, 0)], mask=np.asarray(parent) < 0),
                      "level": level.astype(np.int64)})


# ------------------------------------------------------------------------------ nvtx_kern_sum


def nvtx_kern_sum(p: Profile) -> ReportResult:
    """NVTX Range Kernel Summary: kernels per enclosing NVTX range (a kernel counts in each, and
    once with no range where none holds its launch), by launching process and thread."""
    eng = engine.of(p).need(NEEDS["nvtx_kern_sum"])
    for missing, table in (("NVTX", "nvtx"), ("CUDA kernel", "kernels"), ("CUDA API", "api")):
        if not _count(eng, table):
            return no_data("nvtx_kern_sum", f"no {missing} data", NVTX_KERN_COLUMNS)
    with _Scratch(eng) as s:
        # Texts as codes ranking them (the rows carry integers; the texts are looked up at the end).
        names, name_codes = _codes(s, "SELECT coalesce(name, '') AS v FROM kernels")
        launched = s.table("""SELECT row_index AS kid, duration_ns AS v, coalesce(name, '') AS name,
                                     launch_call AS call FROM kernels""")
        coded = s.table(f"SELECT k.* EXCLUDE (name), n.code AS kname FROM {launched} k JOIN {name_codes} n "
                        "ON n.v = k.name")
        s.drop(launched, name_codes)
        kernels = s.table(f"""SELECT k.*, a.start_ns, a.end_ns, a.global_tid FROM {coded} k
                              LEFT JOIN api a ON a.row_index = k.call""")
        s.drop(coded)
        ranges = _ranges(s, p)
        keyed = _keyed(s, ranges, kernels) if ranges is not None else None
        pairs = s.table(f"SELECT c.kid, r.row_index AS rid FROM {ranges} r JOIN {keyed} c ON {_HOLDS}"
                        if keyed is not None else "SELECT NULL::BIGINT AS kid, NULL::BIGINT AS rid")
        s.drop(*(t for t in (keyed, ranges) if t is not None))
        labeled, tags, styles = _labels(s, pairs)
        s.drop(pairs)
        rows = s.table(f"""SELECT (k.global_tid >> 24) & 16777215 AS pid, k.global_tid & 16777215 AS tid, p.tag,
                                  p.style, k.kname, p.rid, k.kid, k.v
                           FROM {kernels} k LEFT JOIN {labeled} p USING (kid)""")
        s.drop(kernels, labeled)
        g = _grouped(s, rows, ["pid", "tid", "tag", "style", "kname"], distinct=["rid", "kid"], nulls="FIRST")
    g["tag"], g["style"], g["kname"] = tags(g["tag"]), styles(g["style"]), names(g["kname"])
    t = Table({
        "NVTX Range": g["tag"], "Style": g["style"], "PID": np.maximum(g["pid"], 0), "TID": np.maximum(g["tid"], 0),
        "NVTX Inst": g["rid"], "Kern Inst": g["kid"],
        "Total Time (ns)": g["total"], "Avg (ns)": sql_round(g["avg"]), "Med (ns)": sql_round(g["med"]),
        "Min (ns)": g["min"], "Max (ns)": g["max"], "StdDev (ns)": sql_round(g["stddev"]),
        "Kernel Name": g["kname"],
    }, masks={"PID": g["pid"] == INT_NULL, "TID": g["tid"] == INT_NULL})
    # ORDER BY range (NULL first), PID, TID (NULL first), total time descending; ties in key order.
    order = sorted(range(len(t)), key=lambda i: (g["tag"][i] is not None, g["tag"][i] or "", int(g["pid"][i]),
                                                 int(g["tid"][i]), -int(g["total"][i])))
    return result("nvtx_kern_sum", t.take(np.array(order, dtype=np.int64)))


def _labels(s: _Scratch, pairs: str) -> tuple[str, Callable[[np.ndarray], np.ndarray],
                                              Callable[[np.ndarray], np.ndarray]]:
    """``pairs`` (``kid``, ``rid``: a range's row_index) with the range's label and style as codes
    ranking them (``tag``, ``style``), as a table; and the texts of codes (NULL code: None)."""
    tags, tag_codes = _codes(s, f"SELECT {_TAG} AS v FROM nvtx WHERE end_global_tid IS NULL")
    styles, style_codes = _codes(s, "SELECT style AS v FROM nvtx WHERE end_global_tid IS NULL")
    ranges = s.table(f"SELECT row_index AS rid, {_TAG} AS tag, style FROM nvtx WHERE end_global_tid IS NULL")
    coded = s.table(f"""SELECT r.rid, t.code AS tag, r.style FROM {ranges} r JOIN {tag_codes} t ON t.v = r.tag""")
    s.drop(ranges, tag_codes)
    both = s.table(f"SELECT r.rid, r.tag, c.code AS style FROM {coded} r LEFT JOIN {style_codes} c ON c.v = r.style")
    s.drop(coded, style_codes)
    labeled = s.table(f"SELECT p.kid, p.rid, r.tag, r.style FROM {pairs} p JOIN {both} r USING (rid)")
    s.drop(both)
    return labeled, tags, styles


def _codes(s: _Scratch, values: str) -> tuple[Callable[[np.ndarray], np.ndarray], str]:
    """The distinct non-null text values ``v`` of a query as a table (``v``, ``code``: its rank in
    byte order, from 0), and a function turning codes (:data:`INT_NULL`: none) back into texts."""
    codes = s.table(f"SELECT v, row_number() OVER (ORDER BY v) - 1 AS code FROM (SELECT DISTINCT v FROM ({values}) "
                    "WHERE v IS NOT NULL)")
    texts = np.array([v for (v,) in s.eng.rows(f"SELECT v FROM {codes} ORDER BY code")] + [None], dtype=object)

    def text(code: np.ndarray) -> np.ndarray:
        return texts[np.where(code == INT_NULL, len(texts) - 1, code)]

    return text, codes


# ------------------------------------------------------------------------------- the pieces


def _grouped(s: _Scratch, table: str, keys: list[str], sums: list[str] | None = None,
             distinct: list[str] | None = None, nulls: str = "LAST") -> dict[str, np.ndarray]:
    """Statistics of column ``v`` of ``table`` per combination of ``keys``, in key order
    (``nulls``: where missing keys sort): the keys, ``n``, ``total`` (int64, or Python ints where
    one does not fit), ``avg``, ``med``, ``min``, ``max``, ``stddev`` (the sample one: 0 for one
    value), the integer sums of ``sums`` and the distinct non-null counts of ``distinct``.

    As ``nsys stats`` computes them: the mean is the exact total
    over the count, the deviations are taken from it (two passes), and where a value reaches
    2^53 (where a float mean or median can fall outside [min, max]) means and medians are exact
    fractions."""
    k = ", ".join(keys)
    on = " AND ".join(f"t.{c} IS NOT DISTINCT FROM g.{c}" for c in keys)
    order = ", ".join(f"{c} NULLS {nulls}" for c in keys)
    stats = s.table(f"""SELECT {k}, count(*) AS n, sum(v) AS total, min(v) AS "min", max(v) AS "max",
                               median(v) AS med {"".join(f", sum({c}) AS {c}" for c in sums or [])}
                        FROM {table} GROUP BY {k}""")
    for c in distinct or []:  # (one aggregate at a time: each its own hash table)
        counted = s.table(f"SELECT {k}, count(DISTINCT {c}) AS {c} FROM {table} GROUP BY {k}")
        stats = s.table(f"SELECT g.*, t.{c} FROM {stats} g JOIN {counted} t ON {on}")
    groups = s.table(f"SELECT row_number() OVER (ORDER BY {order}) AS gid, * FROM {stats}")
    dev = s.table(f"SELECT g.gid, t.v - g.total::DOUBLE / g.n AS d FROM {table} t JOIN {groups} g ON {on}")
    ss = s.table(f"SELECT gid, sum(d * d) AS ss FROM {dev} GROUP BY gid")
    got = _fetch(s.eng.sql(f"""
        SELECT g.* EXCLUDE (total{"".join(f", {c}" for c in sums or [])}){"".join(f", g.{c}::VARCHAR AS {c}"
                                                                          for c in sums or [])},
               CASE WHEN g.total BETWEEN {_I64[0]} AND {_I64[1]} THEN g.total::BIGINT END
               AS total, CASE WHEN g.total NOT BETWEEN {_I64[0]} AND {_I64[1]} THEN g.total::VARCHAR END AS big, ss.ss
        FROM {groups} g JOIN {ss} ss USING (gid) ORDER BY gid"""))
    n = got["n"].astype(np.int64)
    for c in sums or []:  # (exact: a sum past int64, a damaged export's, stays a Python int)
        exact = [INT_NULL if x is None else int(x) for x in got[c]]
        fits = all(_I64[0] <= x <= _I64[1] for x in exact)
        got[c] = np.array(exact, dtype=np.int64 if fits else object)
    if got["big"].dtype == object and any(b is not None for b in got["big"]):
        total = np.array([int(b) if b is not None else int(t) for b, t in zip(got["big"], got["total"], strict=True)],
                         dtype=object)
        got["avg"] = np.array([t / c for t, c in zip(total, n, strict=True)], dtype=np.float64)
    else:
        total = got["total"].astype(np.int64)
        got["avg"] = total / n
    got["total"] = total
    with np.errstate(invalid="ignore", divide="ignore"):
        got["stddev"] = np.where(n > 1, np.sqrt(got.pop("ss") / np.maximum(n - 1, 1)), 0.0)
    if len(n) and (int(got["min"].min()) <= -_EXACT_FLOAT or int(got["max"].max()) >= _EXACT_FLOAT):
        got["avg"] = np.array([Fraction(int(t), int(c)) for t, c in zip(total, n, strict=True)], dtype=object)
        mid = s.eng.rows(f"""SELECT list_sort(list(t.v)) FROM {table} t JOIN {groups} g ON {on}
                             GROUP BY g.gid ORDER BY g.gid""")
        got["med"] = np.array([Fraction(int(v[(len(v) - 1) // 2]) + int(v[len(v) // 2]), 2) for (v,) in mid],
                              dtype=object)
    got.pop("gid")
    got.pop("big")
    got["n"] = n
    return got


def _time_columns(g: dict[str, np.ndarray], count_name: str, grand: int) -> dict[str, np.ndarray]:
    """The time columns of a summary: share of ``grand`` (the total of every group), total, count,
    average, median, min, max, standard deviation."""
    pct = g["total"].astype("float64") * 100.0 / float(grand) if grand else np.full(len(g["total"]), np.nan)
    return {"Time (%)": sql_round(pct), "Total Time (ns)": g["total"], count_name: g["n"],
            "Avg (ns)": sql_round(g["avg"]), "Med (ns)": sql_round(g["med"]), "Min (ns)": g["min"],
            "Max (ns)": g["max"], "StdDev (ns)": sql_round(g["stddev"])}


def _top(total: np.ndarray, top: int | None, report: str) -> tuple[np.ndarray, list[str]]:
    """The groups (ascending) a stable sort by ``total``, largest first, puts in its first ``top``,
    and the note saying so; every group and no note where there are not more."""
    if top is None or len(total) <= top:
        return np.arange(len(total)), []
    order = sorted(range(len(total)), key=lambda i: -int(total[i]))  # (stable: ties in group order)
    note = (f"{len(total):,} NVTX range names: the summary keeps the {top} with the most time "
            f"(nsighttk stats -r {report} lists them all)")
    return np.sort(np.array(order[:top], dtype=np.int64)), [note]


def _count(eng: Engine, table: str) -> int:
    [(n,)] = eng.rows(f'SELECT count(*) FROM "{table}"')
    return int(n)


def _fill(eng: Engine, max_ts: int | None, where: str) -> int:
    """Where open ranges end: the last NVTX timestamp the loader found, else the last start."""
    if max_ts is not None:
        return int(max_ts)
    [(last,)] = eng.rows(f"SELECT max(start_ns) FROM nvtx {where}")
    return int(last) if last is not None else 0


class _Scratch:
    """The temporary tables of one report: each step of a query is one statement that makes one
    (a join or an aggregate at a time: within a small memory limit, DuckDB spills what one
    operator holds, not what several running together hold); all dropped at the end."""

    _names = itertools.count()

    def __init__(self, eng: Engine) -> None:
        self.eng = eng
        self.made: list[str] = []

    def table(self, query: str, params: dict[str, int] | None = None) -> str:
        """A new temporary table holding ``query``'s rows (named parameters bound, never formatted
        in); its name."""
        name = f"nvtx_tmp_{next(self._names)}"
        self.made.append(name)
        self.eng.con.execute(f"CREATE TEMP TABLE {name} AS {query}", params or {})
        return name

    def columns(self, data: dict[str, np.ndarray]) -> str:
        """A new temporary table holding numpy columns (masked values: NULL), read by name: no
        registration and no Arrow, either of which would import pandas; its name."""
        name = f"nvtx_tmp_{next(self._names)}"
        self.made.append(name)
        self.eng.con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM data")
        return name

    def drop(self, *names: str) -> None:
        """Drop tables no later step reads (their memory, or their spilled blocks, let go now)."""
        for name in names:
            self.eng.con.execute(f"DROP TABLE IF EXISTS {name}")

    def __enter__(self) -> _Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop(*self.made)


def _fetch(rel: Any) -> dict[str, np.ndarray]:
    """A query's columns as numpy arrays: integers int64 with :data:`INT_NULL` for NULL, text and
    others as object arrays (None for NULL), reals float64."""
    out = {}
    for c, v in rel.fetchnumpy().items():
        mask = np.ma.getmaskarray(v) if isinstance(v, np.ma.MaskedArray) else None
        data = np.ma.getdata(v)
        if data.dtype.kind in "iub":
            arr = data.astype(np.int64)
            if mask is not None and mask.any():
                arr[mask] = INT_NULL
        elif data.dtype.kind == "f":
            arr = data.astype(np.float64)
        else:
            arr = np.asarray(data, dtype=object)
            if mask is not None and mask.any():
                arr = np.array([None if m else x for x, m in zip(arr, mask, strict=True)], dtype=object)
        out[c] = arr
    return out
