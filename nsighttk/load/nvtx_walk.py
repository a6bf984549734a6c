"""The NVTX nesting walk for levels alone, a block of ranges at a time (what the iterations read
out of core: :mod:`nsighttk.analysis.iteration_ranges_spilled`).

:func:`depth_walk` is plain Python over numpy arrays: it runs only where the ranges do not fit in
the memory budget (in memory, :mod:`nsighttk.load.nvtx_nesting` walks them with numpy).
"""

from __future__ import annotations

import numpy as np


def depth_walk(ks: np.ndarray, ke: np.ndarray, rank: np.ndarray, stack: np.ndarray, sp: int,
               crossed: np.ndarray, depth: np.ndarray) -> int:
    """The stack walk of :mod:`nsighttk.load.nvtx_nesting` for levels alone, a block of ranges at a
    time: ranges in (thread, start, longest first, range id) order (``ks``/``ke``: thread rank and
    time side by side, so a thread's first range lets go the thread before), ``stack`` the ends of
    the open ranges the block before left (``sp`` of them; room for this block's beside them).
    Each range's level is the stack's depth once the ranges ending before it ends are let go; a
    range let go that ends after this one starts crossed it (``crossed`` of its thread's rank set
    to 1).  Returns the stack's depth after the block."""
    for i in range(len(ks)):
        e = ke[i]
        while sp > 0 and stack[sp - 1] < e:
            sp -= 1
            if stack[sp] > ks[i]:
                crossed[rank[i]] = 1
        depth[i] = sp
        stack[sp] = e
        sp += 1
    return sp
