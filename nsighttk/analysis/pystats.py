"""Grouped statistics of small integer samples in plain Python, bit for bit those of
:mod:`nsighttk.analysis.groupstats` (numpy), and SQLite's ``round``.

The small-export path (:mod:`nsighttk.analysis.nsys_small`) computes ``nsys stats`` summaries
of a few thousand rows without importing numpy (whose import alone costs more than such a
report).  Equal bits need equal operations: the average is ``float(total) / count``, the median
the mean of the two middle values as floats, and the sample standard deviation sums the squared
deviations in the order numpy's ``add.reduceat`` does (its pairwise summation), so both paths
print the same digits.  Values and totals must stay below 2^53 (where numpy's path turns exact):
:class:`Inexact` otherwise, and the caller uses numpy's path.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

_EXACT_FLOAT = 2**53


class Inexact(ValueError):
    """A value or total too large (or negative) for float statistics equal to numpy's."""


@dataclass
class Group:
    key: Hashable
    count: int
    total: int
    avg: float
    med: float
    min: int
    max: int
    stddev: float


def sql_round_value(x: float, digits: int = 1) -> float:
    """SQLite's ``round(x, digits)``: half away from zero on the shortest decimal form of x
    (``repr``), as ``Decimal(repr(x)).quantize(..., ROUND_HALF_UP)``.  Plain forms ("123.456") are
    rounded on their digits; exponent forms go through :mod:`decimal` (imported only then)."""
    if not math.isfinite(x):
        return x
    text = repr(float(x))
    whole, dot, frac = text.partition(".")
    if "e" in text or not dot:
        from decimal import ROUND_HALF_UP, Decimal

        return float(Decimal(text).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    if len(frac) <= digits:
        return float(x)
    neg = whole.startswith("-")
    kept = int(whole.lstrip("-") + frac[:digits]) + (frac[digits] >= "5")
    scaled = str(kept).rjust(digits + 1, "0")
    return float(f"{'-' if neg else ''}{scaled[:-digits]}.{scaled[-digits:]}")


def _pairwise(a: list[float], lo: int, n: int) -> float:
    """numpy's ``pairwise_sum`` of ``a[lo:lo + n]`` (8 accumulators, blocks of 128)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= 128:
        r = a[lo:lo + 8]
        i = 8
        stop = n - n % 8
        while i < stop:
            base = lo + i
            r[0] += a[base]
            r[1] += a[base + 1]
            r[2] += a[base + 2]
            r[3] += a[base + 3]
            r[4] += a[base + 4]
            r[5] += a[base + 5]
            r[6] += a[base + 6]
            r[7] += a[base + 7]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for j in range(lo + i, lo + n):
            res += a[j]
        return res
    half = n // 2
    half -= half % 8
    return _pairwise(a, lo, half) + _pairwise(a, lo + half, n - half)


def float_sum(values: list[float]) -> float:
    """``np.add.reduce`` of a float64 array, in its order: the first value plus the pairwise sum
    of the rest."""
    if not values:
        return 0.0
    return values[0] + _pairwise(values, 1, len(values) - 1)


def group_stats(groups: dict[Hashable, list[int]]) -> list[Group]:
    """count, total, mean, median, min, max and sample standard deviation (0 for one value) of
    each group's values, groups in ascending key order (keys must be comparable)."""
    out = []
    for key in sorted(groups):  # type: ignore[type-var]
        v = sorted(groups[key])
        n = len(v)
        total = sum(v)
        if v[0] < 0 or v[-1] >= _EXACT_FLOAT or total >= _EXACT_FLOAT:
            raise Inexact(f"group {key!r}: values or total beyond float precision")
        avg = float(total) / n
        med = (float(v[(n - 1) // 2]) + float(v[n // 2])) / 2
        if n > 1:
            dev = [float(x) - avg for x in v]
            std = math.sqrt(float_sum([d * d for d in dev]) / (n - 1))
        else:
            std = 0.0
        out.append(Group(key, n, total, avg, med, v[0], v[-1], std))
    return out
