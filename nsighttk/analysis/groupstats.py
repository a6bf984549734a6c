"""Exact integer totals of a column: numpy's int64 sum wraps around past 2**63 (a damaged export's
durations), :func:`exact_total` never does."""

from __future__ import annotations

from typing import Any

import numpy as np


def exact_total(values: Any) -> int:
    """The sum of integer values (a Series or an array) as a Python integer: numpy's int64 sum
    wraps around past 2**63 (a damaged export's durations), this never does."""
    arr = np.asarray(values)
    if not len(arr):
        return 0
    if float(np.abs(arr.astype("float64")).max()) * len(arr) < 2.0**63:
        return int(arr.astype("int64").sum())
    return sum(int(v) for v in arr)
