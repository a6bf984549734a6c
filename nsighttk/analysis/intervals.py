"""Time intervals: how long the GPU had any work at all."""

from __future__ import annotations

import numpy as np
import pandas as pd


def busy_time_ns(intervals: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """Length of the union of [start, end) intervals (time the GPU had any work)."""
    starts = np.concatenate([s for s, _ in intervals]) if intervals else np.array([], dtype="int64")
    ends = np.concatenate([e for _, e in intervals]) if intervals else np.array([], dtype="int64")
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    group = np.cumsum(new) - 1
    g_start = s[new]
    g_end = pd.Series(run_end).groupby(group).max().to_numpy()
    return int((g_end - g_start).sum())
