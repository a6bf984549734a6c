"""The NVTX nesting walk of :mod:`nsighttk.load.nvtx_nesting`, compiled (numba); imported on first
use through :func:`nsighttk.load.sqlite_jit.functions`, as the page decoder is."""

from __future__ import annotations

import numba as nb
import numpy as np

from nsighttk.load import nvtx_walk as _walk


@nb.njit(nogil=True, cache=True, boundscheck=False)
def stack_parents(start: np.ndarray, end: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, bool]:
    """The stack walk of ``_parents_one_thread`` in machine code: ranges visited in ``order``
    (start, then longest first), each one's parent the innermost open range still containing its
    end; and whether two ranges crossed (overlapped without nesting: the walk is then only an
    approximation)."""
    n = len(order)
    parent = np.full_like(order, -1)  # (positions in order's type: int32 where they fit)
    stack = np.empty_like(order)
    top = 0
    crossing = False
    for j in range(n):
        i = order[j]
        while top > 0 and end[stack[top - 1]] < end[i]:
            top -= 1
            if end[stack[top]] > start[i]:
                crossing = True
        if top > 0:
            parent[i] = stack[top - 1]
        stack[top] = i
        top += 1
    return parent, crossing


@nb.njit(nogil=True, cache=True, boundscheck=False)
def exact_parents(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``_parents_exact`` in machine code: each range's parent the tightest other range holding it
    (least ``(start - parent start) + (parent end - end)``, the first in input order of equals)."""
    n = len(start)
    parent = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        best = np.int64(0)
        for j in range(n):
            if j != i and start[j] <= start[i] and end[j] >= end[i]:
                tight = (start[i] - start[j]) + (end[j] - end[i])
                if parent[i] < 0 or tight < best:
                    parent[i] = j
                    best = tight
    return parent


#: :func:`nsighttk.load.nvtx_walk.depth_walk` (the levels alone, a block at a time) in machine code.
depth_walk = nb.njit(nogil=True, cache=True, boundscheck=False)(_walk.depth_walk)
