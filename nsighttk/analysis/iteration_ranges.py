"""Which ranges are the iterations: the rules of :mod:`nsighttk.analysis.iterations` (its module
doc) on the figures of the groups of ranges, the same whether those were made in memory
(``iterations._auto``) or out of core (:mod:`nsighttk.analysis.iteration_ranges_spilled`).

A group is one grouped name (:func:`key`), domain, thread and nesting level; its tier
(:func:`tier`) says how its name marks an iteration; :func:`chosen` picks the group.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

_PROFILER_STEP = re.compile(r"ProfilerStep#\d+")
_WORDS = {"step", "iter", "iteration"}
_AUTOGRAD = re.compile(r",\s*(?:seq|op_id|sizes|input_op_ids)\s*=")


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
