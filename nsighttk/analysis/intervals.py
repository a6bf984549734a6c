"""Time intervals: how long the GPU had any work at all."""

from __future__ import annotations

import numpy as np


def busy_time_ns(intervals: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """Length of the union of [start, end) intervals (time the GPU had any work)."""
    starts = np.concatenate([s for s, _ in intervals]) if intervals else np.array([], dtype="int64")
    ends = np.concatenate([e for _, e in intervals]) if intervals else np.array([], dtype="int64")
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    del starts
    run_end = ends[order]  # the latest end so far, in start order
    del ends, order
    np.maximum.accumulate(run_end, out=run_end)
    new = np.empty(len(s), dtype=bool)  # where a block of overlapping intervals begins
    new[0] = True
    np.greater(s[1:], run_end[:-1], out=new[1:])
    firsts = np.flatnonzero(new)
    del new
    lasts = np.r_[firsts[1:] - 1, len(s) - 1]  # a block ends where the next begins: run_end is its end
    return int((run_end[lasts] - s[firsts]).sum())
