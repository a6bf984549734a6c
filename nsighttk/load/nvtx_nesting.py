"""Nesting of NVTX ranges on a thread, as Nsight Systems decides it (the ``depth`` column of the
``nvtx`` table, and the parents :mod:`nsighttk.analysis.nvtx` projects with).

A range's *parent* is the tightest other range on the same thread that contains it, where
tightness is ``(child.start - parent.start) + (parent.end - child.end)``; its *level* is its depth
in that tree (0 for outermost).  Ranges are walked in (start, -end) order with a stack; on threads
with crossing (not nested) start/end ranges the stack is only an approximation, replaced by the
exact quadratic search up to :data:`_EXACT_LIMIT` ranges.
"""

from __future__ import annotations

import itertools

import numpy as np

# Above this many ranges on one thread with crossing (not nested) start/end ranges, the exact
# quadratic parent search is skipped for the stack approximation.
_EXACT_LIMIT = 20_000


def _parents_one_thread(start: np.ndarray, end: np.ndarray, rid: np.ndarray) -> np.ndarray:
    """Parent index (or -1) of each range, for ranges of one thread, in input order."""
    n = len(start)
    order = np.lexsort((rid, -end, start))
    if n > _EXACT_LIMIT:  # the exact search is skipped anyway: the stack's answer, vectorized
        prev = _previous_greater_or_equal(end[order])
        if prev is not None:
            parent = np.full(n, -1, dtype="int64")
            parent[order] = np.where(prev >= 0, order[np.maximum(prev, 0)], -1)
            return parent
    parent = np.full(n, -1, dtype="int64")
    stack: list[int] = []
    crossing = False
    for i in order:
        while stack and end[stack[-1]] < end[i]:
            top = stack.pop()
            if end[top] > start[i]:
                crossing = True  # overlapping but not nested: the stack is only an approximation
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    if crossing and n <= _EXACT_LIMIT:
        parent = _parents_exact(start, end, rid)
    return parent



def _previous_greater_or_equal(values: np.ndarray, rounds: int = 64) -> np.ndarray | None:
    """For each position, the nearest earlier one whose value is >= its own (-1 if none): what the
    stack walk above leaves on top of the stack.  Pointer jumping, all positions at once: a
    candidate whose value is smaller is replaced by its own candidate (everything between stays
    smaller); None if it has not settled after ``rounds`` rounds."""
    cand = np.arange(-1, len(values) - 1, dtype="int64")
    active = np.arange(1, len(values), dtype="int64")  # positions whose candidate may be too small
    for _ in range(rounds):
        c = cand[active]
        active = active[(c >= 0) & (values[np.maximum(c, 0)] < values[active])]
        if not len(active):
            return cand
        cand[active] = cand[cand[active]]
    return None



def _parents_exact(start: np.ndarray, end: np.ndarray, rid: np.ndarray) -> np.ndarray:
    n = len(start)
    parent = np.full(n, -1, dtype="int64")
    for i in range(n):
        ok = (start <= start[i]) & (end >= end[i])
        ok[i] = False
        if ok.any():
            cand = np.flatnonzero(ok)
            tight = (start[i] - start[cand]) + (end[cand] - end[i])
            parent[i] = cand[np.argmin(tight)]
    return parent



def parents_of(start: np.ndarray, end: np.ndarray, tid: np.ndarray, rid: np.ndarray) -> np.ndarray:
    """Positional index of each range's parent (or -1), from numpy columns: start and end (open
    ranges already closed), thread (any int64 key) and range id (the tie-break)."""
    parent = np.full(len(start), -1, dtype="int64")
    if not len(start):
        return parent
    order = np.argsort(tid, kind="stable")
    t_sorted = tid[order]
    cuts = np.flatnonzero(np.r_[True, t_sorted[1:] != t_sorted[:-1], True])
    for a, b in itertools.pairwise(cuts):
        idx = order[a:b]
        local = _parents_one_thread(start[idx], end[idx], rid[idx])
        parent[idx] = np.where(local >= 0, idx[np.maximum(local, 0)], -1)
    return parent



def depth_from_parents(parent: np.ndarray) -> np.ndarray:
    """Nesting level of each range from its parent index (0 for a range without one).

    Pointer jumping: each round adds the depth counted at the ancestor reached so far and jumps
    twice as far, so chains thousands of levels deep take a dozen passes, not one per level.
    Parents that form a cycle (never from :func:`parents_of`) stop after 64 rounds."""
    parent = np.asarray(parent, dtype="int64")
    depth = (parent >= 0).astype("int64")
    anc = parent.copy()
    for _ in range(64):
        has = np.flatnonzero(anc >= 0)
        if not len(has):
            break
        up = anc[has]
        depth[has] += depth[up]
        anc[has] = anc[up]
    return depth
