"""Grouped summary statistics in numpy: one sort, then segment reductions.

``nsys stats`` reports are count/sum/mean/median/min/max/sample-stddev per group over millions
of rows.  pandas' groupby builds several temporaries per statistic; here the values are sorted
once by (group, value), after which every statistic is a segment operation, so memory stays at
a few arrays the size of the input.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from nsighttk import chunked


@dataclass
class GroupStats:
    """Per group (in ascending key order): key, count, total, avg, med, min, max, stddev.

    ``total`` is int64, or Python ints where a sum leaves int64's range; ``avg`` and ``med`` are
    float64, or exact :class:`~fractions.Fraction` objects when values reach 2^53 (where a float
    could print an average below the minimum)."""

    key: np.ndarray
    count: np.ndarray
    total: np.ndarray
    avg: np.ndarray
    med: np.ndarray
    min: np.ndarray
    max: np.ndarray
    stddev: np.ndarray


def group_stats(keys: np.ndarray, values: np.ndarray, exact: bool | None = None) -> GroupStats:
    """Statistics of integer ``values`` per integer ``keys``; stddev is the sample one (0 for n=1).

    ``exact``: averages and medians as fractions; decided from the values (they reach 2^53) unless
    given.

    Memory: one int64 array the size of the input (its sorted pairs) and, where there are few
    groups, one group's deviations at a time (13.2M runtime calls: 110 MB where the all-at-once
    reductions held 0.8 GB); the inputs are read in their own integer types, not copied to int64."""
    keys, values = _ints(keys), _ints(values)
    if len(keys) == 0:
        e = np.array([], dtype="int64")
        f = np.array([], dtype="float64")
        return GroupStats(e, e, e, f, f, e, e, f)
    few = _few_groups(keys, values)
    if few is not None:
        key, starts, v = few
    else:
        k, v = sorted_pairs(keys, values)
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        key = k[starts]
        del k
    ends = np.r_[starts[1:], len(v)]
    count = ends - starts
    total = _exact_totals(v, starts, count)
    avg = np.array([t / c for t, c in zip(total, count, strict=True)], dtype="float64") \
        if total.dtype == object else total / count
    lo = starts + (count - 1) // 2
    hi = starts + count // 2
    med = (v[lo].astype("float64") + v[hi].astype("float64")) / 2
    ss = _squared_deviations(v, starts, ends, avg)
    with np.errstate(invalid="ignore", divide="ignore"):
        std = np.where(count > 1, np.sqrt(ss / np.maximum(count - 1, 1)), 0.0)
    if exact if exact is not None else max(abs(int(v.min())), abs(int(v.max()))) >= _EXACT_FLOAT:
        # Beyond 2^53 a float64 average or median can fall outside [min, max]: keep them exact.
        avg = _fractions(total, count)
        med = _fractions([int(a) + int(b) for a, b in zip(v[lo], v[hi], strict=True)], [2] * len(lo))
    return GroupStats(key, count, total, avg, med, v[starts], v[ends - 1], std)


#: Up to this many possible keys (max - min + 1), :func:`group_stats` finds the groups in the
#: sorted pairs by binary search and works group by group (a Python step per group).
_FEW_KEYS = 4096
_FIRST = np.zeros(1, dtype=np.intp)


def _ints(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a if a.dtype.kind == "i" else a.astype("int64")


def _sorted_combined(keys: np.ndarray, values: np.ndarray, k_lo: int, v_lo: int, span: int) -> np.ndarray:
    """Each (key, value) pair as one int64, ``(key - k_lo) * span + (value - v_lo)``, sorted: the
    pairs in (key, value) order, in one array (the caller has checked it fits below 2^62)."""
    comb = keys.astype("int64")
    comb -= k_lo
    comb *= span
    comb += values
    comb -= v_lo
    comb.sort()
    return comb


def _few_groups(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Where keys take at most :data:`_FEW_KEYS` values and (key, value) fits one int64: the keys
    present, where each group starts, and the values sorted by (key, value), in one int64 array
    (the combined pairs sorted, then each group's key offset taken off in place); else None."""
    k_lo, k_hi, v_lo, v_hi = int(keys.min()), int(keys.max()), int(values.min()), int(values.max())
    n_keys, span = k_hi - k_lo + 1, v_hi - v_lo + 1
    if n_keys > _FEW_KEYS or n_keys * span >= 2**62:
        return None
    comb = _sorted_combined(keys, values, k_lo, v_lo, span)
    bounds = np.searchsorted(comb, np.arange(n_keys + 1, dtype="int64") * span)
    present = np.flatnonzero(bounds[1:] > bounds[:-1])
    starts = bounds[present]
    for offset, a, b in zip(present.tolist(), starts.tolist(), bounds[present + 1].tolist(), strict=True):
        comb[a:b] -= offset * span  # this group's values, less the smallest (below 2^62: no overflow)
    comb += v_lo
    return present + k_lo, starts, comb


def _squared_deviations(v: np.ndarray, starts: np.ndarray, ends: np.ndarray, avg: np.ndarray) -> np.ndarray:
    """Per group, the sum of (value - its group's mean)^2, in float64: group by group where there
    are few (one group's deviations in memory), else all at once; the same sums either way (the
    same float operations, each group's added by the same reduction)."""
    if len(starts) > _FEW_KEYS:
        dev = v - np.repeat(avg, ends - starts)
        dev *= dev
        return np.add.reduceat(dev, starts)
    ss = np.empty(len(starts), dtype="float64")
    for g, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        dev = v[a:b] - avg[g]
        dev *= dev
        ss[g] = np.add.reduceat(dev, _FIRST)[0]  # (reduceat adds in order; reduce pairwise: other last bits)
    return ss


_EXACT_FLOAT = 2**53


def sorted_pairs(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keys, values) sorted by key, then value.  When both fit in one int64 together (key range
    times value range below 2^62: durations and codes almost always do), one ``np.sort`` of
    the combined integer: several times faster than a two-key ``lexsort`` and its gathers."""
    if not len(keys):
        return keys, values
    k_lo, k_hi, v_lo, v_hi = int(keys.min()), int(keys.max()), int(values.min()), int(values.max())
    span = v_hi - v_lo + 1
    if (k_hi - k_lo + 1) * span >= 2**62:
        order = np.lexsort((values, keys))
        return keys[order].astype("int64"), values[order].astype("int64")
    comb = _sorted_combined(keys, values, k_lo, v_lo, span)
    k, v = np.divmod(comb, span)
    del comb
    k += k_lo
    v += v_lo
    return k, v


def _fractions(nums: Sequence[int] | np.ndarray, dens: Sequence[int] | np.ndarray) -> np.ndarray:
    out = np.empty(len(nums), dtype=object)
    for i, (a, b) in enumerate(zip(nums, dens, strict=True)):
        out[i] = Fraction(int(a), int(b))
    return out


def _exact_totals(v: np.ndarray, starts: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per-segment sums of int64 ``v``: int64 when no sum leaves int64's range, else Python ints
    (an object array), never a wrapped-around number."""
    lo = max(abs(int(v.min())), abs(int(v.max()))) if len(v) else 0
    if lo * int(count.max()) < 2**63:
        return np.add.reduceat(v, starts)
    hi_part = np.add.reduceat(v >> 32, starts)  # |v >> 32| < 2^31: no overflow below 2^32 rows per group
    lo_part = np.add.reduceat(v & 0xFFFFFFFF, starts)
    exact = [(int(h) << 32) + int(low) for h, low in zip(hi_part, lo_part, strict=True)]
    if all(-(2**63) <= t < 2**63 for t in exact):
        return np.array(exact, dtype="int64")
    out = np.empty(len(exact), dtype=object)
    out[:] = exact
    return out


def small_codes(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Codes 0..``n_values``-1 in the narrowest signed integer type that also holds the largest
    code plus one (callers shift codes by one for "none"): int8 for up to 126 values (10M kernels'
    name codes: 10 MB, not 40)."""
    for t in (np.int8, np.int16, np.int32):
        if n_values < np.iinfo(t).max:
            return np.asarray(codes).astype(t, copy=False)
    return np.asarray(codes).astype(np.int64, copy=False)


def factorize_sorted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, distinct values): codes rank the values in ascending order, missing values (None,
    NaN) last with a code of their own; as ``pandas.factorize(sort=True, use_na_sentinel=False)``.

    Object arrays (text) are grouped by object identity first (one integer sort; the loaders
    share one string object per distinct name), then equal values of different objects are
    merged, so millions of rows cost one integer sort and the distinct values one string sort."""
    arr = np.asarray(values)
    if arr.dtype != object:
        if arr.dtype.kind == "f" and np.isnan(arr).any():
            nan = np.isnan(arr)
            uniq, inv = np.unique(arr[~nan], return_inverse=True)
            codes = np.full(len(arr), len(uniq), dtype=np.int64)
            codes[~nan] = inv.ravel()
            return codes, np.r_[uniq, np.nan]
        if arr.dtype.kind in "iu" and len(arr):
            lo, hi = int(arr.min()), int(arr.max())
            if hi - lo < 4 * len(arr) + 1024:  # dense values (ids, codes): no sort
                at = np.subtract(arr, lo, dtype=np.int64)  # (in int64: a narrow type's range may not hold it)
                present = np.zeros(hi - lo + 1, dtype=bool)
                present[at] = True
                rank = np.cumsum(present, dtype=np.int64) - 1
                codes = rank[at]
                del at
                return codes, (np.flatnonzero(present) + lo).astype(arr.dtype)
        uniq, inv = np.unique(arr, return_inverse=True)
        return inv.ravel().astype(np.int64), uniq
    if not len(arr):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=object)
    ids = _object_ids(arr)
    uid = _distinct(ids)  # (a hash of the few distinct objects, then a binary search in them:
    inv = np.searchsorted(uid, ids)  # 4.3M ranges 0.13 s, where a sort of them all took 0.3 s)
    first = np.empty(len(uid), dtype=np.int64)
    first[inv] = np.arange(len(ids))  # (an occurrence of each: the same object)
    del ids, uid
    reps = arr[first]
    distinct: dict[object, int] = {}
    missing = False
    for v in reps:
        if v is None or (isinstance(v, float) and v != v):
            missing = True
        else:
            distinct.setdefault(v, len(distinct))
    try:
        ordered = sorted(distinct)  # type: ignore[type-var]
    except TypeError:  # values of several types (a table given by hand): by type, then value as text
        ordered = sorted(distinct, key=lambda v: (type(v).__name__, str(v)))
    rank_of = {v: i for i, v in enumerate(ordered)}
    n = len(ordered)
    by_rep = np.array([n if (v is None or (isinstance(v, float) and v != v)) else rank_of[v] for v in reps],
                      dtype=np.int64)
    uniques = np.empty(n + missing, dtype=object)
    uniques[:n] = ordered
    if missing:
        uniques[n] = None
    return by_rep[inv.ravel()], uniques


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending: by hashing where numpy can (2.3 and later), else a sort."""
    try:
        return np.sort(np.unique(values, sorted=False))
    except TypeError:  # (numpy < 2.3: no ``sorted``)
        return np.unique(values)


def _object_ids(arr: np.ndarray) -> np.ndarray:
    """``id()`` of each object of a 1-D object array, as int64.  In CPython an object array holds
    the objects' addresses, which are their ids: read them as integers (a copy of the pointers,
    4.3M ranges: 0.01 s against 0.25 s for ``map(id, ...)``); elsewhere, ask ``id()``."""
    if sys.implementation.name == "cpython" and arr.ndim == 1 and np.dtype(np.intp).itemsize == 8:
        arr = np.ascontiguousarray(arr)
        if not len(arr):
            return np.empty(0, dtype=np.int64)
        raw = (ctypes.c_int64 * len(arr)).from_address(arr.__array_interface__["data"][0])
        ids = np.array(raw, dtype=np.int64)  # (a copy, made while ``arr`` holds the objects)
        del raw
        return ids
    return np.fromiter(map(id, arr), dtype=np.int64, count=len(arr))


def exact_total(values: Any) -> int:
    """The sum of integer values (a Series or an array) as a Python integer: numpy's int64 sum
    wraps around past 2**63 (a damaged export's durations), this never does."""
    arr = np.asarray(values)
    if not len(arr):
        return 0
    if float(np.abs(arr.astype("float64")).max()) * len(arr) < 2.0**63:
        return int(arr.astype("int64").sum())
    return sum(int(v) for v in arr)


def stable_argsort(keys: np.ndarray, parts: int = 64) -> np.ndarray:
    """``np.argsort(keys, kind="stable")``, as int32 positions where they fit, sorted a range of key
    values at a time: each key's part (a few cut points from a sample of the keys) is noted in one
    byte, then each part's positions are found and sorted on their own.  Equal keys share a part,
    so the order is numpy's, exactly; the temporaries are one part's (10M int64 keys: the 80 MB of
    int64 positions and timsort's 40 MB buffer become 40 MB of int32 and 10 MB of part numbers)."""
    n = len(keys)
    small = np.int32 if n < 2**31 else np.int64
    if n < _PARTED or parts < 2:
        return np.argsort(keys, kind="stable").astype(small)
    sample = np.sort(keys[:: max(1, n // (parts * 64))])
    cuts = np.unique(sample[np.linspace(0, len(sample) - 1, min(parts, 127) + 1).astype(np.int64)[1:-1]])
    part = np.empty(n, dtype=np.int8)

    def parted(a: int, b: int) -> None:
        part[a:b] = np.searchsorted(cuts, keys[a:b], side="right")

    chunked.each(parted, n, _PARTED)
    counts = np.bincount(part, minlength=len(cuts) + 1)
    at = np.r_[0, np.cumsum(counts)]
    out = np.empty(n, dtype=small)

    def place(p: int, _: int) -> None:  # (each part's slice of out is its own: parts side by side)
        rows = np.flatnonzero(part == p)
        out[at[p]:at[p + 1]] = rows[np.argsort(keys[rows], kind="stable")]

    chunked.each(place, len(cuts) + 1, 1)
    return out


#: Below this many keys :func:`stable_argsort` is numpy's own; also the rows parted at a time.
_PARTED = 1 << 20
