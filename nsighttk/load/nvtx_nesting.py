"""Nesting of NVTX ranges on a thread, as Nsight Systems decides it (the ``depth`` column of the
``nvtx`` table, and the parents :mod:`nsighttk.analysis.nvtx` projects with).

A range's *parent* is the tightest other range on the same thread that contains it, where
tightness is ``(child.start - parent.start) + (parent.end - child.end)``; its *level* is its depth
in that tree (0 for outermost).  Ranges are walked in (start, -end) order with a stack; on threads
with crossing (not nested) start/end ranges the stack is only an approximation, replaced by the
exact quadratic search up to :data:`_EXACT_LIMIT` ranges.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from nsighttk import chunked, settings
from nsighttk.encoding import Coded, decoded, widen
from nsighttk.load import sqlite_jit

# Above this many ranges on one thread with crossing (not nested) start/end ranges, the exact
# quadratic parent search is skipped for the stack approximation.
_EXACT_LIMIT = 20_000
#: Ranges from which the walk is compiled (:mod:`nsighttk.load.sqlite_jit`): loading numba costs
#: about 0.45 s, and this function from numba's cache 0.3 s more; the numpy walk about 0.3 s per
#: million ranges.  ``NSIGHTTK_COMPILED=0|1`` decides instead.
MIN_COMPILED = 1_000_000


def _parents_one_thread(start: np.ndarray, end: np.ndarray, rid: np.ndarray,
                        compiled: sqlite_jit.Functions | None = None) -> np.ndarray:
    """Parent index (or -1) of each range, for ranges of one thread, in input order."""
    n = len(start)
    order = np.lexsort((rid, -end, start)).astype(_positions(n), copy=False)
    if compiled is not None:  # the walk below in machine code (4.3M ranges: 1.3 -> 0.1 s)
        parent, crossing = compiled["stack_parents"](start, end, order)  # (positions in order's type)
        return _parents_exact(start, end, rid, compiled) if crossing and n <= _EXACT_LIMIT else parent
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



def _parents_exact(start: np.ndarray, end: np.ndarray, rid: np.ndarray,
                   compiled: sqlite_jit.Functions | None = None) -> np.ndarray:
    """Each range's parent by the quadratic search (the tightest holder, the first of equals);
    compiled where it is (9,000 crossing ranges on a thread: 0.5 -> 0.05 s)."""
    if compiled is not None:
        return compiled["exact_parents"](np.ascontiguousarray(start, dtype=np.int64),
                                         np.ascontiguousarray(end, dtype=np.int64))
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



def parents_of(start: np.ndarray, end: np.ndarray, tid: np.ndarray | Coded, rid: np.ndarray) -> np.ndarray:
    """Positional index of each range's parent (or -1), from columns: start and end (int64, open
    ranges already closed), thread (any integer key, narrow or coded as a Profile keeps it: its
    type's minimum for a missing one) and range id (the tie-break, narrow or not).  Positions are
    int32 where they fit; the answer is read-only (it may be the remembered one).

    The answer for the last :data:`_REMEMBERED` inputs is kept, by a digest of their values, until
    it is asked for again: the loader nests the ranges for their depth and the GPU projection
    again for their parents, on the same columns (4.3M ranges: 1.5 s each time, 0.1 s to hash);
    then it is let go (43M ranges: 170 MB).  Threads and ids are hashed as int64 a chunk at a
    time, so a coded or narrow column hashes as the loader's int64 one (no int64 copy of either)."""
    key = _digest(start, end, tid, rid, np.array([_EXACT_LIMIT]))
    with _lock:
        known = _remembered.pop(key, None)
    if known is not None:
        return known
    parent = _parents_of(start, end, widen(decoded(tid)), widen(rid))
    parent.setflags(write=False)
    with _lock:
        _remembered[key] = parent
        while len(_remembered) > _REMEMBERED:
            _remembered.popitem(last=False)
    return parent


#: How many answers of :func:`parents_of` are kept (their inputs' digest -> parents), each until asked again.
_REMEMBERED = 1
_remembered: OrderedDict[bytes, np.ndarray] = OrderedDict()
_lock = threading.Lock()
#: Values hashed at a time by :func:`_digest` (a coded column decoded this many rows at a time).
_HASHED = 1 << 20


def _digest(*arrays: np.ndarray | Coded) -> bytes:
    """SHA-256 of integer columns as their int64 values (narrow ones widened, coded ones decoded,
    a chunk at a time): equal values, equal digest, whatever type holds them."""
    h = hashlib.sha256()  # (hardware-accelerated here: 1.5 GB/s; it releases the GIL)
    for a in arrays:
        h.update(f"<i8({len(a)},)".encode())
        for lo in range(0, len(a), _HASHED):
            part = Coded(a.codes[lo:lo + _HASHED], a.values) if isinstance(a, Coded) else a[lo:lo + _HASHED]
            h.update(np.ascontiguousarray(widen(decoded(part)), dtype=np.int64).data.cast("B"))
    return h.digest()


def _positions(n: int) -> type[np.signedinteger[Any]]:
    """The integer type of positions into ``n`` rows: int32 where they fit (4.3M ranges: 17 MB)."""
    return np.int32 if n < 2**31 else np.int64


def _parents_of(start: np.ndarray, end: np.ndarray, tid: np.ndarray, rid: np.ndarray) -> np.ndarray:
    pos = _positions(len(start))
    if not len(start):
        return np.full(0, -1, dtype=pos)
    forced = settings.current().compiled
    compiled = sqlite_jit.functions() if (forced if forced is not None else len(start) >= MIN_COMPILED) else None
    if (tid == tid[0]).all():  # one thread (the usual capture): no sort by thread, no gathers
        return _parents_one_thread(start, end, rid, compiled).astype(pos, copy=False)
    parent = np.full(len(start), -1, dtype=pos)
    order = np.argsort(tid, kind="stable").astype(pos)
    t_sorted = tid[order]
    cuts = np.flatnonzero(np.r_[True, t_sorted[1:] != t_sorted[:-1], True])
    del t_sorted
    groups = list(itertools.pairwise(cuts))

    def nest(g: int, _: int) -> None:  # (a thread's ranges at a time, on the chunked threads)
        a, b = groups[g]
        idx = order[a:b]
        local = _parents_one_thread(start[idx], end[idx], rid[idx], compiled)
        parent[idx] = np.where(local >= 0, idx[np.maximum(local, 0)], -1)

    chunked.each(nest, len(groups), 1)
    return parent



def _jump(values: np.ndarray, anc: np.ndarray, out: np.ndarray) -> None:
    """``out[:] = values[max(anc, 0)]``, a chunk at a time (positions made intp a chunk at a time:
    no 35 MB copy of 4.3M int32 ones)."""
    def take(lo: int, hi: int) -> None:
        at = np.maximum(anc[lo:hi], 0).astype(np.intp)
        np.take(values, at, out=out[lo:hi], mode="clip")  # (every index in range: no check)

    chunked.each(take, len(anc), _HASHED)


def depth_from_parents(parent: np.ndarray) -> np.ndarray:
    """Nesting level of each range from its parent index (0 for a range without one), int32
    where the positions fit.

    Pointer jumping: each round adds the depth counted at the ancestor reached so far and jumps
    twice as far, so chains thousands of levels deep take a dozen passes, not one per level.
    Parents that form a cycle (never from :func:`parents_of`) stop after 64 rounds.  Three arrays
    of positions and a mask in all, written in place (4.3M ranges: 17 MB each)."""
    parent = np.asarray(parent)
    small = _positions(len(parent))
    depth: np.ndarray = (parent >= 0).astype(small)
    anc: np.ndarray = parent.astype(small)
    got = np.empty_like(anc)
    dead = np.empty(len(anc), dtype=bool)
    for _ in range(64):
        np.less(anc, 0, out=dead)  # (masks, written in place: no index arrays of the live rows)
        if dead.all():
            break
        _jump(depth, anc, got)  # (a dead row looks at row 0, and its gains are dropped)
        np.copyto(got, 0, where=dead)
        depth += got
        _jump(anc, anc, got)
        np.copyto(got, -1, where=dead)
        anc, got = got, anc
    return depth
