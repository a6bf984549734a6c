"""Grouped statistics of more rows than memory may hold: :func:`groupstats.group_stats`'s numbers,
bit for bit, with a budget's worth of rows in memory at a time.

The rows come as chunks of (raw key, value) pairs, read twice.  The first pass counts each key's
rows and notes the values' range; the caller then maps the distinct raw keys to group codes (names
shared by several ids merge, codes rank the names).  The groups, in code order, are packed into
slices of at most ``limit`` rows, and the second pass writes each row into its slice's temporary
files (:func:`nsighttk.spill.partition`).  Each slice is then read back and given to
``group_stats``: a group's statistics depend on its own rows only, so they are the same numbers.

A group larger than ``limit`` on its own is taken a range of values at a time: ranges holding at
most ``limit`` rows are found by histograms over its rows (a range of one value may hold any
number), the rows are split by range, and the ranges are read in ascending order.  That is the
group's rows sorted, as ``group_stats`` sorts them, so its median is looked up by rank and its sum
of squared deviations is added exactly as numpy's ``add.reduceat`` adds a segment: the first
term, plus the pairwise sum of the rest (numpy's halving tree, evaluated subtree by subtree in
order, each subtree of at most ``limit`` terms summed by numpy itself).  Whether averages and
medians are exact fractions (values from 2^53) is decided from all the rows (the first pass), as
``group_stats`` decides it for all its groups at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from nsighttk import spill
from nsighttk.analysis.groupstats import _EXACT_FLOAT, GroupStats, group_stats, small_codes

#: Bytes of memory per row while a slice's statistics are computed (its keys and values, the
#: sorted pairs, the deviations): a budget of B bytes takes slices of B // ROW_BYTES rows.
ROW_BYTES = 64

Chunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]


def limit_rows(budget: int) -> int:
    """Rows a slice may hold within ``budget`` bytes."""
    return max(int(budget) // ROW_BYTES, 8)


@dataclass
class _Keys:
    """The first pass: the distinct raw keys (ascending), each one's rows, and the values' range."""

    keys: np.ndarray
    count: np.ndarray
    lo: int
    hi: int


def _first_pass(chunks: Chunks) -> _Keys:
    found: list[tuple[np.ndarray, np.ndarray]] = []  # (distinct keys, their rows) per chunk, merged now and then
    waiting = 0
    lo, hi = None, None
    for k, v in chunks():
        if not len(k):
            continue
        k = np.asarray(k)
        v_lo, v_hi = int(np.min(v)), int(np.max(v))
        lo, hi = (v_lo, v_hi) if lo is None or hi is None else (min(lo, v_lo), max(hi, v_hi))
        k_lo, k_hi = int(k.min()), int(k.max())
        if k_hi - k_lo < 1 << 16:  # (ids and codes: counted in place, no sort)
            counts = np.bincount(np.subtract(k, k_lo, dtype=np.int64), minlength=k_hi - k_lo + 1)
            present = np.flatnonzero(counts)
            found.append((present + k_lo, counts[present]))
        else:
            found.append(np.unique(np.asarray(k, dtype=np.int64), return_counts=True))
        waiting += len(found[-1][0])
        if len(found) > 1 and waiting > 2 * len(found[0][0]) + (1 << 16):  # (merged when the new keys
            found, waiting = [_merged(found)], 0  # outnumber the merged ones: each key sorted a few times)
    keys, count = _merged(found) if found else (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
    return _Keys(keys, count, lo or 0, hi or 0)


def _merged(found: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    keys, inv = np.unique(np.concatenate([f[0] for f in found]).astype(np.int64), return_inverse=True)
    count = np.zeros(len(keys), dtype=np.int64)
    np.add.at(count, inv.ravel(), np.concatenate([f[1] for f in found]))
    return keys, count


def _exact_sum(v: np.ndarray) -> int:
    if not len(v):
        return 0
    hi_part = int((v >> 32).sum())  # (|v >> 32| < 2^31: no overflow below 2^32 rows)
    return (hi_part << 32) + int((v & 0xFFFFFFFF).sum())


def spilled_group_stats(chunks: Chunks, code_of: Callable[[np.ndarray], np.ndarray], limit: int) -> GroupStats:
    """``group_stats(code_of(keys), values)`` over all the chunks' rows, ``limit`` rows at a time.

    ``chunks()`` yields (raw keys, values) integer arrays and is called twice;
    ``code_of`` maps the distinct raw keys (ascending int64) to group codes (non-negative)."""
    seen = _first_pass(chunks)
    if not len(seen.keys):
        return group_stats(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
    codes = np.asarray(code_of(seen.keys), dtype=np.int64)
    n_codes = int(codes.max()) + 1
    count = np.zeros(n_codes, dtype=np.int64)
    np.add.at(count, codes, seen.count)
    biggest = max(abs(seen.lo), abs(seen.hi))
    exact = biggest >= _EXACT_FLOAT

    # Slices: consecutive codes up to ``limit`` rows; a code over ``limit`` is a part of its own.
    part_of = np.full(n_codes, -1, dtype=np.int64)
    giants: list[int] = []
    n_parts, filled = 0, limit + 1
    for c in np.flatnonzero(count).tolist():
        rows = int(count[c])
        if rows > limit:
            part_of[c] = n_parts
            giants.append(c)
            n_parts, filled = n_parts + 1, limit + 1
        else:
            if filled + rows > limit:
                n_parts, filled = n_parts + 1, 0
            part_of[c] = n_parts - 1
            filled += rows
    code_small = small_codes(codes, n_codes)

    def split() -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        for k, v in chunks():
            if len(k):
                c = code_small[np.searchsorted(seen.keys, np.asarray(k, dtype=np.int64))]
                yield part_of[c], {"k": c, "v": np.asarray(v)}

    parts = spill.partition(split(), n_parts, ["k", "v"], held=limit, missing=False)
    giant_part = {int(part_of[c]): c for c in giants}
    results: list[GroupStats] = []
    try:
        for i, part in enumerate(parts):
            if i in giant_part:
                c = giant_part[i]
                results.append(_giant(part, c, int(count[c]), limit, exact))
            else:
                d = part.read()
                results.append(group_stats(d["k"], d["v"], exact=exact))
                del d
            part.close()
    finally:
        for part in parts:
            part.close()
    return _concatenate(results)


def group_medians(chunks: Chunks, n: int, limit: int) -> np.ndarray:
    """The median of the integer values of each group 0..n-1 (NaN where it has none), of
    (group, value) chunks read twice, ``limit`` rows at a time (a group larger than that a range
    of values at a time): ``(a + b) / 2`` of the two middle values as float64, as ``group_stats``
    takes it (where values reach 2^53, the exact half-sum rounded once)."""
    g = spilled_group_stats(chunks, lambda k: k, limit)
    out = np.full(n, np.nan)
    out[g.key] = [float(m) for m in g.med.tolist()]
    return out


def _concatenate(parts: list[GroupStats]) -> GroupStats:
    def cat(name: str) -> np.ndarray:
        arrays = [getattr(g, name) for g in parts]
        if any(a.dtype == object for a in arrays):
            out = np.empty(sum(len(a) for a in arrays), dtype=object)
            out[:] = [x for a in arrays for x in a.tolist()]
            return out
        return np.concatenate(arrays)

    return GroupStats(*(cat(f) for f in ("key", "count", "total", "avg", "med", "min", "max", "stddev")))


def _giant(part: spill.Spill, code: int, n: int, limit: int, exact: bool) -> GroupStats:
    """One group of more than ``limit`` rows (in ``part``), a range of values at a time."""
    def values() -> Iterator[np.ndarray]:
        for chunk in part.chunks(["v"]):
            yield chunk["v"]

    total, lo, hi = 0, None, None
    for v in values():
        total += _exact_sum(np.asarray(v, dtype=np.int64))
        lo = int(v.min()) if lo is None else min(lo, int(v.min()))
        hi = int(v.max()) if hi is None else max(hi, int(v.max()))
    assert lo is not None and hi is not None
    avg = float(total / np.int64(n))  # (group_stats' division: int64 totals and Python ones alike)
    if -(2**63) <= total < 2**63:
        total_arr = np.array([total], dtype=np.int64)
    else:
        total_arr = np.empty(1, dtype=object)
        total_arr[0] = total
    ranges = value_ranges(values, lo, hi, n, limit)
    starts = np.array([r[0] for r in ranges], dtype=np.int64)
    pieces = spill.partition(((np.searchsorted(starts, v, side="right") - 1, {"v": v}) for v in values()),
                             len(ranges), ["v"], held=limit, missing=False)
    try:
        stream = _Sorted(ranges, pieces, limit)
        m_lo, m_hi = (n - 1) // 2, n // 2
        picks: dict[int, int] = {}
        stream.watch(m_lo, m_hi, picks)
        first = stream.take(1)
        avg_f = np.float64(avg)
        d0 = first.astype(np.int64) - avg_f
        d0 *= d0
        ss = float(d0[0]) + _pairwise(stream, n - 1, limit, avg_f)
    finally:
        for p in pieces:
            p.close()
    a, b = picks[m_lo], picks[m_hi]
    med = (np.float64(a) + np.float64(b)) / 2
    std = float(np.sqrt(ss / max(n - 1, 1))) if n > 1 else 0.0
    avg_out: object = avg
    med_out: object = med
    if exact:
        avg_out, med_out = Fraction(total, n), Fraction(a + b, 2)
    avg_arr = np.empty(1, dtype=object if exact else np.float64)
    med_arr = np.empty(1, dtype=object if exact else np.float64)
    avg_arr[0], med_arr[0] = avg_out, med_out
    return GroupStats(np.array([code], dtype=np.int64), np.array([n], dtype=np.int64), total_arr, avg_arr,
                      med_arr, np.array([lo], dtype=np.int64), np.array([hi], dtype=np.int64),
                      np.array([std], dtype=np.float64))


def _pairwise(stream: _Sorted, m: int, limit: int, avg: np.float64) -> float:
    """numpy's pairwise sum of the next ``m`` squared deviations of the sorted stream: its halving
    tree, subtrees of at most ``limit`` terms summed by numpy (``add.reduce`` from -0.0 sums a
    contiguous array by exactly that tree)."""
    if m <= 0:
        return 0.0
    if m <= max(limit, _PW_BLOCK):  # (numpy halves only above its block: a block is summed whole)
        d = stream.take(m).astype(np.int64) - avg
        d *= d
        return float(np.add.reduce(d, initial=-0.0))
    half = m // 2
    half -= half % 8
    left = _pairwise(stream, half, limit, avg)
    return left + _pairwise(stream, m - half, limit, avg)


#: numpy's pairwise summation block (``PW_BLOCKSIZE``): sums of up to this many terms are not halved.
_PW_BLOCK = 128


class _Sorted:
    """A giant group's values in ascending order, taken a few at a time: each range's rows read
    and sorted when reached (a range of one value is that value, repeated)."""

    def __init__(self, ranges: list[tuple[int, int, int]], pieces: list[spill.Spill], limit: int) -> None:
        self._ranges = ranges
        self._pieces = pieces
        self._next = 0
        self._buf = np.empty(0, dtype=np.int64)
        self._at = 0  # rank of the buffer's first value
        self._limit = limit
        self._watch: tuple[int, int, dict[int, int]] | None = None
        self._served = 0  # values of the current one-value range handed out

    def watch(self, a: int, b: int, picks: dict[int, int]) -> None:
        """Note the values of ranks ``a`` and ``b`` in ``picks`` as they pass."""
        self._watch = (a, b, picks)

    def take(self, k: int) -> np.ndarray:
        out: list[np.ndarray] = []
        while k > 0:
            if not len(self._buf):
                self._buf = self._load()
            piece = self._buf[:k]
            self._buf = self._buf[k:]
            if self._watch is not None:
                for r in self._watch[:2]:
                    if self._at <= r < self._at + len(piece):
                        self._watch[2][r] = int(piece[r - self._at])
            self._at += len(piece)
            k -= len(piece)
            out.append(piece)
        return out[0] if len(out) == 1 else np.concatenate(out)

    def _load(self) -> np.ndarray:
        lo, hi, rows = self._ranges[self._next]
        if lo == hi:  # one value: up to ``limit`` of them at a time
            step = min(rows - self._served, self._limit)
            self._served += step
            if self._served == rows:
                self._next, self._served = self._next + 1, 0
            return np.full(step, lo, dtype=np.int64)
        v = self._pieces[self._next].read(["v"])["v"].astype(np.int64)
        self._pieces[self._next].close()
        self._next += 1
        v.sort()
        return v


_BINS = 1024


def value_ranges(values: Callable[[], Iterator[np.ndarray]], lo: int, hi: int, n: int, limit: int
                 ) -> list[tuple[int, int, int]]:
    """Consecutive value ranges [lo, hi] covering a group's rows, ascending, each holding at most
    ``limit`` rows or a single value: (lo, hi, rows) each.  Ranges over the limit are split by
    histograms of :data:`_BINS` bins, all of a level in one pass over the rows (a few levels: each
    divides a range's width by the bins)."""
    done: list[tuple[int, int, int]] = []
    todo = [(lo, hi, n)]
    while todo:
        done += [r for r in todo if r[2] <= limit or r[0] == r[1]]
        split = sorted(r for r in todo if r[2] > limit and r[0] < r[1])
        if not split:
            break
        starts = np.array([r[0] for r in split], dtype=np.int64)
        ends = np.array([r[1] for r in split], dtype=np.int64)
        widths = np.array([-(-(r[1] - r[0] + 1) // _BINS) for r in split], dtype=np.uint64)
        counts = np.zeros(len(split) * _BINS, dtype=np.int64)
        for v in values():
            v = np.asarray(v, dtype=np.int64)
            j = np.searchsorted(starts, v, side="right") - 1
            inside = j >= 0
            inside[inside] = v[inside] <= ends[j[inside]]
            v, j = v[inside], j[inside]
            off = v.view(np.uint64) - starts[j].view(np.uint64)  # (modulo 2^64: the distance, < 2^64)
            counts += np.bincount(j * _BINS + (off // widths[j]).astype(np.int64), minlength=len(counts))
        todo = []
        for i, (r_lo, r_hi, _) in enumerate(split):
            width = int(widths[i])
            run: list[int] = []  # (lo, rows) of the run of bins being packed
            for b in np.flatnonzero(counts[i * _BINS:(i + 1) * _BINS]).tolist():
                b_lo, b_hi, rows = r_lo + b * width, min(r_lo + (b + 1) * width - 1, r_hi), int(counts[i * _BINS + b])
                if run and (rows > limit or run[1] + rows > limit):
                    done.append((run[0], b_lo - 1, run[1]))
                    run = []
                if rows > limit:
                    todo.append((b_lo, b_hi, rows))
                elif run:
                    run[1] += rows
                else:
                    run = [b_lo, rows]
            if run:  # (the last run reaches the range's end: no value beyond it)
                done.append((run[0], r_hi, run[1]))
    return sorted(done)
