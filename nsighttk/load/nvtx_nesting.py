"""Nesting of NVTX ranges on a thread, as Nsight Systems decides it (the ``depth`` column of the
``nvtx`` table, and the parents :mod:`nsighttk.analysis.nsys.nvtx` projects with).

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
from collections.abc import Iterator
from typing import Any

import numpy as np

from nsighttk import chunked
from nsighttk.encoding import Coded, decoded, widen

# Above this many ranges on one thread with crossing (not nested) start/end ranges, the exact
# quadratic parent search is skipped for the stack approximation.
_EXACT_LIMIT = 20_000
#: Rounds of pointer jumping, all positions at once, before the few positions still unsettled
#: follow their pointers one by one (:func:`_nearest_before`).
_ROUNDS = 32


def _parents_one_thread(start: np.ndarray, end: np.ndarray, rid: np.ndarray) -> np.ndarray:
    """Parent index (or -1) of each range, for ranges of one thread, in input order.

    The stack walk (ranges in (start, longest first, range id) order, each one's parent the
    innermost open range still holding its end) in numpy: that parent is the nearest range before
    it in the walk's order whose end is at least its own.  Two ranges cross (overlap without
    nesting, where the stack is only an approximation) exactly where a range ends after the start
    of the range that closes it (the next one in the walk's order that ends later)."""
    n = len(start)
    order = _walk_order(start, end, rid).astype(_positions(n), copy=False)
    e = end[order]
    prev = _nearest_before(e, strict=False)
    parent = np.full(n, -1, dtype="int64")
    parent[order] = np.where(prev >= 0, order[np.maximum(prev, 0)], -1)
    if n <= _EXACT_LIMIT and n > 1:
        after = _nearest_before(e[::-1], strict=True)[::-1]  # (the next one ending later, reversed)
        closer = np.where(after >= 0, n - 1 - after, -1)
        has = closer >= 0
        if (e[has] > start[order][closer[has]]).any():
            return _parents_exact(start, end, rid)
    return parent


def _walk_order(start: np.ndarray, end: np.ndarray, rid: np.ndarray) -> np.ndarray:
    """``np.lexsort((rid, -end, start))``: by start alone (a stable sort, quick on ranges already
    about in start order), then the ranges of equal starts among themselves by the other keys."""
    order = np.argsort(start, kind="stable")
    s = start[order]
    tie = s[1:] == s[:-1]
    if tie.any():
        at = np.flatnonzero(np.r_[tie, False] | np.r_[False, tie])  # (runs of equal starts)
        sub = order[at]
        order[at] = sub[np.lexsort((rid[sub], -end[sub], start[sub]))]
    return order


def _nearest_before(values: np.ndarray, strict: bool) -> np.ndarray:
    """For each position, the nearest earlier one whose value is >= its own (``strict``: > it), -1
    if none.  Pointer jumping, all positions at once: a candidate whose value is too small is
    replaced by its own candidate (everything between them is smaller than that candidate, so
    smaller still than this position's value); after :data:`_ROUNDS` rounds the positions not
    settled (inside nesting deeper than that) follow their candidates one by one, in order, each
    over candidates already final."""
    n = len(values)
    cand = np.arange(-1, n - 1, dtype="int64")
    small = np.less_equal if strict else np.less
    active = np.arange(1, n, dtype="int64")  # positions whose candidate may be too small
    for _ in range(_ROUNDS):
        c = cand[active]
        active = active[(c >= 0) & small(values[np.maximum(c, 0)], values[active])]
        if not len(active):
            return cand
        cand[active] = cand[cand[active]]
    for i in active.tolist():  # (ascending: every earlier candidate is final)
        v, at = values[i], int(cand[i])
        while at >= 0 and (values[at] <= v if strict else values[at] < v):
            at = int(cand[at])
        cand[i] = at
    return cand


def _parents_exact(start: np.ndarray, end: np.ndarray, rid: np.ndarray) -> np.ndarray:
    """Each range's parent by the quadratic search (the tightest holder, the first of equals)."""
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
    if (tid == tid[0]).all():  # one thread (the usual capture): no sort by thread, no gathers
        return _parents_one_thread(start, end, rid).astype(pos, copy=False)
    parent = np.full(len(start), -1, dtype=pos)
    order = np.argsort(tid, kind="stable").astype(pos)
    t_sorted = tid[order]
    cuts = np.flatnonzero(np.r_[True, t_sorted[1:] != t_sorted[:-1], True])
    del t_sorted
    groups = list(itertools.pairwise(cuts))

    def nest(g: int, _: int) -> None:  # (a thread's ranges at a time, on the chunked threads)
        a, b = groups[g]
        idx = order[a:b]
        local = _parents_one_thread(start[idx], end[idx], rid[idx])
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


class Holders:
    """Which ranges hold which calls, by a sort and a walk up the nesting instead of comparing each
    call with each range of its thread.

    A range *holds* a call on its own thread where ``range.start <= call.start`` and
    ``max(call.start, call.end) <= range.end``.  Ranges are put in the nesting walk's order
    (thread, start, longest first, range id); a range's *descendants* are then the ranges after it
    up to the next one ending later (its *closer*: a stretch of the walk).  Where no range ends at
    or after the start of its closer (no two ranges cross or touch), the ranges holding a call are
    the first range, walking up the nesting from the last range starting at or before the call,
    that ends at or after it, and that range's ancestors: so each call is counted once, at its
    innermost holder (:meth:`add`), and a range's totals are those of the stretch of its
    descendants (:meth:`spans`).

    A thread whose ranges cross is split into *layers* whose ranges do not (each call is then
    walked in each layer of its thread): a range crossing its closer and that closer go to
    different layers, the chains of such pairs alternating, for up to :data:`_LAYER_ROUNDS`
    rounds.  Ranges still crossing after that are marked in :attr:`crossing`: the calls of their
    threads need comparing with each of them."""

    def __init__(self, start: np.ndarray, end: np.ndarray, tid: np.ndarray, rid: np.ndarray) -> None:
        start, end, rid = (np.asarray(a, dtype=np.int64) for a in (start, end, rid))
        self.tids, rank = np.unique(np.asarray(tid, dtype=np.int64), return_inverse=True)
        del tid
        self.layers = 1
        layer = np.zeros(len(start), dtype=np.int64)
        for _ in range(_LAYER_ROUNDS):
            self._walk(start, end, rank.astype(np.int64) * self.layers + layer, rid)
            if not self._touch.any():
                break
            # (a crossing range and its closer in different layers: depth parity along closer links)
            link = np.where(self._touch, self.closer, -1)
            parity = np.zeros(len(start), dtype=np.int64)
            parity[self.order] = depth_from_parents(link) & 1
            layer, self.layers = layer * 2 + parity, self.layers * 2
        else:
            self._walk(start, end, rank.astype(np.int64) * self.layers + layer, rid)
        crossed = np.add.reduceat(self._touch, self.cuts[:-1]) > 0 if len(start) else np.zeros(0, dtype=bool)
        self._exact = np.zeros(len(self.tids) * self.layers, dtype=bool)
        self._exact[self.keys[~crossed]] = True
        #: the ranges (in the order given) whose layer of their thread still crosses: not counted here
        self.crossing = np.zeros(len(start), dtype=bool)
        self.crossing[self.order] = ~np.repeat(self._exact[self.keys], np.diff(self.cuts))
        n = len(start)
        self.count = np.zeros(n, dtype=np.int64)
        self.first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        self.last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)

    def _walk(self, start: np.ndarray, end: np.ndarray, key: np.ndarray, rid: np.ndarray) -> None:
        """The walk order of ranges by ``key`` (thread and layer), each key's stretch, parents,
        closers, and which ranges end at or after the start of their closer."""
        n = len(start)
        empty = np.zeros(0, dtype=np.int64)  # (the last walk's arrays let go before this one's are made)
        self.order = self.start = self.end = self.parent = self.closer = empty
        order = _walk_order(start, end, rid)
        order = order[np.argsort(key[order], kind="stable")]  # (keys apart, each in walk order)
        self.order = order
        self.start, self.end, k = start[order], end[order], key[order]
        cuts = np.flatnonzero(np.r_[True, k[1:] != k[:-1], True]) if n else np.array([0], np.int64)
        self.cuts, self.keys = cuts, k[cuts[:-1]]
        key_end = np.repeat(cuts[1:], np.diff(cuts))
        self.parent = np.full(n, -1, dtype=np.int64)
        self.closer = key_end.copy()
        for a, b in itertools.pairwise(cuts):  # (a key at a time: no search runs on into the next)
            e = self.end[a:b]
            parent = _nearest_before(e, strict=False)
            self.parent[a:b] = np.where(parent >= 0, parent + a, -1)
            after = _nearest_before(e[::-1], strict=True)[::-1]
            self.closer[a:b] = np.where(after >= 0, b - 1 - after, b)
        inside = np.flatnonzero(self.closer < key_end)
        self._touch = np.zeros(n, dtype=bool)
        self._touch[inside] = self.end[inside] >= self.start[self.closer[inside]]

    def add(self, start: np.ndarray, end: np.ndarray, tid: np.ndarray, first: np.ndarray, last: np.ndarray) -> None:
        """Count calls (their start, end, thread, and the first and last times of what they
        launched) at their innermost holder in each layer of their thread; calls held by no range
        (or only by :attr:`crossing` ones) are passed by."""
        start, tid = np.asarray(start, dtype=np.int64), np.asarray(tid, dtype=np.int64)
        first, last = np.asarray(first, dtype=np.int64), np.asarray(last, dtype=np.int64)
        reach = np.maximum(start, np.asarray(end, dtype=np.int64))
        if not len(self.tids):
            return
        rank = np.minimum(np.searchsorted(self.tids, tid), len(self.tids) - 1)
        ours = self.tids[rank] == tid
        for layer in range(self.layers):
            key = rank * self.layers + layer
            k = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
            mine = np.flatnonzero(ours & (self.keys[k] == key) & self._exact[key])
            at = np.full(len(start), -1, dtype=np.int64)
            for j, calls in _by_key(k[mine], mine):  # (the calls of one key at a time: starts sorted within it)
                lo, hi = self.cuts[j], self.cuts[j + 1]
                found = np.searchsorted(self.start[lo:hi], start[calls], side="right") - 1
                at[calls] = np.where(found >= 0, found + lo, -1)
            walk = np.flatnonzero(at >= 0)
            walk = walk[self.end[at[walk]] < reach[walk]]
            while len(walk):  # (up the nesting, to the first range ending at or after the call)
                up = self.parent[at[walk]]
                at[walk] = up
                walk = walk[up >= 0]
                walk = walk[self.end[at[walk]] < reach[walk]]
            held = np.flatnonzero(at >= 0)
            pos = at[held]
            self.count += np.bincount(pos, minlength=len(self.count))
            np.minimum.at(self.first, pos, first[held])
            np.maximum.at(self.last, pos, last[held])

    def spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For each range holding some call counted: its index (in the order given), the calls it
        holds, the first and the last of their times (once: the totals are carried up in place)."""
        depth = depth_from_parents(self.parent)
        count = np.r_[0, np.cumsum(self.count)]
        first, last = self.first, self.last  # (in place: asked for once)
        levels = np.argsort(depth, kind="stable")[::-1]
        cuts = np.flatnonzero(np.r_[True, np.diff(depth[levels]) != 0, True])
        for a, b in itertools.pairwise(cuts):  # (deepest first: a child's totals reach its parent)
            idx = levels[a:b]
            idx = idx[self.parent[idx] >= 0]
            np.minimum.at(first, self.parent[idx], first[idx])
            np.maximum.at(last, self.parent[idx], last[idx])
        held = count[self.closer] - count[:-1]
        some = np.flatnonzero(held > 0)
        return self.order[some], held[some], first[some], last[some]


def _by_key(k: np.ndarray, rows: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """Each distinct key of ``k`` with its ``rows`` (a mask per key where there are a few; else a
    sort)."""
    if not len(k):
        return
    keys = np.unique(k[:: max(len(k) // 4096, 1)])  # (a sample: the usual few keys without a sort)
    if len(keys) <= 8:
        seen = 0
        for j in keys:
            mine = rows[k == j]
            seen += len(mine)
            yield int(j), mine
        if seen == len(k):
            return
        rest = ~np.isin(k, keys)
        k, rows = k[rest], rows[rest]
    order = np.argsort(k, kind="stable")
    k, rows = k[order], rows[order]
    cuts = np.flatnonzero(np.r_[True, k[1:] != k[:-1], True])
    for a, b in itertools.pairwise(cuts):
        yield int(k[a]), rows[a:b]


#: Rounds of splitting a thread's crossing ranges into layers (at most 2**this layers).
_LAYER_ROUNDS = 4
