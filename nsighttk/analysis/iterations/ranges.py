"""Which ranges are the iterations: the rules of :mod:`nsighttk.analysis.iterations.find` (its module
doc), as queries over the capture's closed NVTX ranges (:func:`nsighttk.engine.of`).

A group is one grouped name (:func:`key`), domain, thread and nesting level; its tier
(:func:`tier`) says how its name marks an iteration; :func:`chosen` picks the group from the
groups' figures; :func:`found` and :func:`explicit` return the ranges, as :data:`COLUMNS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from nsighttk import engine
from nsighttk.engine import Engine
from nsighttk.errors import UsageError
from nsighttk.profile import Profile

_PROFILER_STEP = re.compile(r"ProfilerStep#\d+")
_WORDS = {"step", "iter", "iteration"}
_AUTOGRAD = re.compile(r",\s*(?:seq|op_id|sizes|input_op_ids)\s*=")

#: The NVTX columns the ranges are found from.
READ = ["start_ns", "end_ns", "duration_ns", "name", "domain", "depth", "global_tid", "tid", "pid"]
#: The columns of the ranges :func:`found` and :func:`explicit` return (``tid_key``: the global
#: thread id, else the thread id, else -1), in the ranges' order in the capture.
COLUMNS = ["start_ns", "end_ns", "duration_ns", "name", "domain", "depth", "tid", "pid", "tid_key"]
#: The closed ranges, with their thread key (a missing name or domain stays NULL).
_CLOSED = ("(SELECT row_index, start_ns, end_ns, duration_ns, name, domain, depth, tid, pid, "
           "coalesce(global_tid, tid, -1) AS tid_key FROM nvtx WHERE end_ns IS NOT NULL)")


def key(name: str) -> str:
    """A name with every run of digits read as ``#`` (``step 3`` -> ``step #``)."""
    return re.sub(r"\d+", "#", name)


def tier(grouped: str, name: str) -> int:
    """0: torch.profiler's ``ProfilerStep#N``; 1: a word step, iter or iteration (not PyTorch's
    ``Optimizer.step``); 3: an autograd operation's label (never an iteration); 2: any other name."""
    if _PROFILER_STEP.fullmatch(name.split(",")[0].strip()):
        return 0
    if _AUTOGRAD.search(name):
        return 3
    words = re.findall(r"[a-z]+", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", grouped).lower())
    if words and words[0] != "optimizer" and _WORDS & set(words):
        return 1
    return 2


def tiers(names: list[str]) -> tuple[list[str], np.ndarray]:
    """The grouped name (:func:`key`) and the tier of each name; equal grouped names are one string
    (PyTorch's ``aten::add, seq = N`` names, one per op call, group as a few: 3.2M names' grouped
    names took 220 MB as strings of their own)."""
    one: dict[str, str] = {}
    keys = [one.setdefault(k, k) for k in map(key, names)]
    return keys, np.array([tier(k, u) for k, u in zip(keys, names, strict=True)], dtype="int64")


def chosen(tier_g: np.ndarray, count: np.ndarray, overlapping: np.ndarray, covered: np.ndarray, depth: np.ndarray,
           first: np.ndarray, median: Callable[[np.ndarray], np.ndarray], extent: Callable[[], np.ndarray]
           ) -> int | None:
    """The group that holds the iterations, or None, from each group's tier, number of closed
    ranges, whether two of them overlap, time covered, level and first row (its place among the
    ranges: ties go to the group seen first).  ``median(loop)``: the median duration of the groups
    in mask ``loop`` (loop candidates of tier 2; others any value); ``extent()``: per group, the
    time from the first start to the last end of all ranges at its level of its thread."""
    needed = np.array([1, 2, 3, 1 << 62], dtype="int64")[tier_g]
    ok = (tier_g != 3) & (count >= needed) & ~overlapping
    loop = ok & (tier_g == 2)
    if loop.any():  # median x count: a long first instance (warm-up) must not make a loop of a benchmark
        ok &= ~loop | (median(loop) * count >= 0.5 * np.maximum(extent(), 1))
    if not ok.any():
        return None
    # within a tier the outermost level wins, then the most time covered; ties: the group seen first
    cand = np.flatnonzero(ok)
    return int(cand[np.lexsort((first[cand], -covered[cand], depth[cand], tier_g[cand]))[0]])


def hint(names: list[tuple[str, int, int]]) -> str:
    """What ``--iteration`` could be, from the closed ranges' names: (grouped name, ranges, first
    row) each, a grouped name maybe more than once; the five with the most ranges are shown (ties:
    the one seen first)."""
    if not names:
        return "this capture has no closed NVTX or record_function ranges"
    per: dict[str, list[int]] = {}
    for k, count, first in names:
        got = per.setdefault(k, [0, first])
        got[0] += count
        got[1] = min(got[1], first)
    top = sorted(per.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[:5]
    shown = ", ".join(f"'{k}' x{count}" for k, (count, _) in top)
    return f"give a range name or a regular expression such as 'step \\d+'; ranges here: {shown}"


# ------------------------------------------------------------------------------ the queries


def _names(eng: Engine) -> list[str]:
    """The distinct names of the closed ranges (no text: '')."""
    return [n for (n,) in eng.rows("SELECT DISTINCT coalesce(name, '') FROM nvtx WHERE end_ns IS NOT NULL")]


def _frame(eng: Engine, where: str, params: list[object]) -> pd.DataFrame:
    """The closed ranges ``where`` holds, :data:`COLUMNS` in the capture's order."""
    got = eng.sql(f"SELECT {', '.join(COLUMNS)} FROM {_CLOSED} WHERE {where} ORDER BY row_index", params).df()
    for c in ("start_ns", "end_ns", "duration_ns"):
        got[c] = got[c].astype("int64")
    for c in ("depth", "tid", "pid", "tid_key"):
        got[c] = got[c].astype("Int64")
    for c in ("name", "domain"):
        got[c] = got[c].astype(object).where(got[c].notna(), None)
    return got


def found(p: Profile) -> tuple[pd.DataFrame, int] | None:
    """The ranges of the chosen group (:data:`COLUMNS`) and its tier; None where no group holds
    iterations."""
    eng = engine.of(p).need({"nvtx": READ})
    names = _names(eng)
    if not names:
        return None
    keys, tier_of = tiers(names)
    eng.con.register("_it_names", pd.DataFrame({"name": names, "key": keys, "tier": tier_of}))
    # each closed range's group: (grouped name, domain, thread, level), numbered in that order (the
    # few groups numbered apart and joined back: no sort of every range)
    eng.con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _it_groups AS
        SELECT key, domain, tid_key, depth, row_number() OVER (ORDER BY key, domain, tid_key, depth) - 1 AS g
        FROM (SELECT DISTINCT k.key, r.domain, r.tid_key, r.depth
              FROM {_CLOSED} r JOIN _it_names k ON k.name = coalesce(r.name, ''))""")
    eng.con.execute(f"""
        CREATE OR REPLACE TEMP TABLE _it_ranges AS
        SELECT r.row_index, r.start_ns, r.end_ns, r.duration_ns, r.depth, r.tid_key, k.tier, g.g
        FROM {_CLOSED} r JOIN _it_names k ON k.name = coalesce(r.name, '')
        JOIN _it_groups g ON g.key = k.key AND g.domain IS NOT DISTINCT FROM r.domain
             AND g.tid_key IS NOT DISTINCT FROM r.tid_key AND g.depth IS NOT DISTINCT FROM r.depth""")
    eng.con.unregister("_it_names")
    eng.con.execute("DROP TABLE _it_groups")
    try:
        groups = eng.sql("""
            WITH o AS (SELECT g, start_ns < lag(end_ns) OVER (PARTITION BY g ORDER BY start_ns, row_index) AS over
                       FROM _it_ranges),
                 s AS (SELECT g, count(*) AS n, sum(duration_ns) AS covered, min(row_index) AS first,
                              arg_min(tier, row_index) AS tier, any_value(depth) AS depth, any_value(tid_key) AS tk,
                              min(start_ns) AS lo, max(end_ns) AS hi
                       FROM _it_ranges GROUP BY g)
            SELECT s.g, s.n, s.covered, s.first, s.tier, s.depth, coalesce(o.over, false) AS over,
                   max(s.hi) OVER (PARTITION BY s.tk, s.depth) - min(s.lo) OVER (PARTITION BY s.tk, s.depth) AS extent
            FROM s LEFT JOIN (SELECT g, bool_or(over) AS over FROM o GROUP BY g) o USING (g)
            ORDER BY s.g""").fetchnumpy()
        g = np.asarray(groups["g"], dtype=np.int64)

        def median(loop: np.ndarray) -> np.ndarray:
            out = np.full(len(g), np.nan)
            for k, lo, hi in eng.rows("SELECT g, mid[1], mid[2] FROM (SELECT g, quantile_disc(duration_ns, "
                                      "[0.5, 0.5000000001]) AS mid FROM _it_ranges "
                                      "WHERE g IN (SELECT unnest(?::BIGINT[])) GROUP BY g)", [g[loop].tolist()]):
                out[k] = (float(lo) + float(hi)) / 2  # (both middle values: the median as numpy takes it)
            return out

        tier_g = np.asarray(groups["tier"], dtype=np.int64)
        best = chosen(tier_g, np.asarray(groups["n"], dtype=np.int64), np.asarray(groups["over"], dtype=bool),
                      np.asarray(groups["covered"], dtype=np.int64), np.asarray(groups["depth"], dtype=np.int64),
                      np.asarray(groups["first"], dtype=np.int64), median,
                      lambda: np.asarray(groups["extent"], dtype=np.int64))
        if best is None:
            return None
        rows = _frame(eng, "row_index IN (SELECT row_index FROM _it_ranges WHERE g = ?)", [int(g[best])])
        return rows, int(tier_g[best])
    finally:
        eng.con.execute("DROP TABLE IF EXISTS _it_ranges")


def explicit(p: Profile, spec: str) -> tuple[pd.DataFrame, str]:
    """The ranges ``--iteration spec`` names (:mod:`nsighttk.analysis.iterations.find`' doc): closed ranges
    named ``spec`` (or ``domain:name``), else whose names match it as a regular expression, of the
    thread with the most time in them, at their outermost level; and how they were found
    (``named`` or ``matching``).  Raises :class:`UsageError` where none is."""
    eng = engine.of(p).need({"nvtx": READ})
    named = "(coalesce(name, '') = ? OR coalesce(domain, '') || ':' || coalesce(name, '') = ?)"
    params: list[object] = [spec, spec]
    how = "named"
    if not eng.rows(f"SELECT EXISTS (SELECT 1 FROM {_CLOSED} WHERE {named})", params)[0][0]:
        try:
            rx = re.compile(spec)
        except re.error as ex:
            raise UsageError(f"--iteration {spec!r}: no range has this name and it is not a valid regular "
                             f"expression ({ex})", _names_hint(eng)) from None
        matching = [n for n in _names(eng) if rx.fullmatch(n) is not None]
        if not matching:
            raise UsageError(f"--iteration {spec!r}: no closed NVTX or record_function range has this name or "
                             "matches it as a regular expression", _names_hint(eng))
        named, params, how = "coalesce(name, '') IN (SELECT unnest(?::VARCHAR[]))", [matching], "matching"
    # the thread with the most time in them (ties: the lowest thread key), its outermost level
    tid_key, depth = eng.rows(f"SELECT tid_key, min(depth) FROM {_CLOSED} WHERE {named} GROUP BY tid_key "
                              "ORDER BY sum(duration_ns::HUGEINT) DESC, tid_key LIMIT 1", params)[0]
    return _frame(eng, f"{named} AND tid_key = ? AND depth = ?", [*params, tid_key, depth]), how


def _names_hint(eng: Engine) -> str:
    """:func:`hint` of the closed ranges' grouped names (ties: the one seen first)."""
    counts = eng.rows("SELECT coalesce(name, ''), count(*), min(row_index) FROM nvtx WHERE end_ns IS NOT NULL "
                      "GROUP BY 1")
    return hint([(key(n), int(c), int(f)) for n, c, f in counts])
