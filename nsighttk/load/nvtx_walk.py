"""The NVTX nesting walk with the GPU projection folded in: ranges and the runtime calls that
launched GPU work, merged in (thread, time) order a chunk of each at a time.

:func:`projection_walk` is plain Python over numpy arrays, run on the chunks the out-of-core
analyses hand it.  Ranges come in (start, longest first, range id) order, calls in start order
(keys: thread rank and time side by side), ranges first at equal keys.  It computes, per range:

- its **parent and level** by the stack walk of :mod:`nsighttk.load.nvtx_nesting` (each one's
  parent the innermost open range still holding its end; its level the depth of that stack).
  Where two ranges of a thread cross (overlap without nesting) the stack is an approximation,
  which nsys' own walk keeps on threads of more ranges than its exact search takes; on smaller
  threads the exact search applies: the walk marks the thread (``crossed``) and goes on, and the
  caller puts the exact levels and children in that thread's rows (its ranges are few);
- the **calls it holds whole** (start at or after its start, end at or before its end): each call
  is added to every *live* range it fits, a range staying live until a call starts after its end
  (no later call can fit it then).  Their number, the first start and last end of their
  operations, and its children that hold calls are its row (``out``) as it is let go.

The live ranges are those spanning the current time (the nesting depth, a few where ranges
cross): each call costs that many steps.

:func:`pairs_walk` is the same merge without the stack (``nvtx_kern_sum`` needs no parents): it
gives each call the live ranges that hold it whole, a pair each, as ``nsys``' kernel summary counts
a kernel once per range around its launch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from nsighttk.spill import Spill

#: The walks' status: more ranges wanted, more calls wanted, done, more room for pairs wanted
#: (:func:`pairs_walk`).
MORE_RANGES, MORE_CALLS, DONE, MORE_ROOM = 0, 1, 2, 3
#: The columns of the walk's table of ranges.
KS, KE, KEY, NS, CALLS, FIRST, LAST, CHILDREN, LEVEL, PARENT, RID = range(11)
WIDTH = 11
#: The columns of :func:`projection_walk`'s rows out.
OUT_WIDTH = 8
#: Live ranges from which the walks first let go those that ended before a range starts.
SWEEP = 64

_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min


def projection_walk(r_ks: np.ndarray, r_ke: np.ndarray, r_key: np.ndarray, r_ns: np.ndarray, r_rid: np.ndarray,
                    c_ks: np.ndarray, c_ke: np.ndarray, c_first: np.ndarray, c_last: np.ndarray,
                    t: np.ndarray, n_slots: int, live: np.ndarray, n_live: int, stack: np.ndarray, sp: int,
                    gone: np.ndarray, span: int, thread_n: np.ndarray, exact_limit: int, crossed: np.ndarray,
                    last_ranges: bool, last_calls: bool, out: np.ndarray, sweep_at: int,
                    sweep_min: int) -> tuple[int, int, int, int, int, int, int, int]:
    """Walk ranges (start key, end key, label key, CPU duration, range id) and calls (start key, end
    key, their operations' first start and last end) until one of them runs out (and is not the
    last of its kind) or both are done.

    ``t``: a row per range pushed (:data:`KS` to :data:`RID`, the parent as a row of ``t``), the
    first ``n_slots`` used, room for every range given; ``live``: the rows of the live ranges in
    push order (``n_live``); ``stack``: the open ranges' rows (``sp``); ``gone``: room for as many
    rows as ``live``; ``thread_n``: ranges per thread rank (a key's rank is key // ``span``); where
    two ranges of a thread of at most ``exact_limit`` ranges cross, ``crossed`` marks its rank.
    ``out``: a row (label key, projected time, duration, calls, level, children, range id, thread
    rank) per range let go that holds calls, with room for every live range and every range given.  Ranges that ended
    before a range starts are let go when the live ones reach ``sweep_at`` (no later call fits
    them: ranges without calls between them are not held), which then becomes twice what stays
    plus ``sweep_min``.
    Returns (status, ranges taken, calls taken, n_slots, n_live, sp, rows written, sweep_at)."""
    i = 0
    j = 0
    n_out = 0
    nr = len(r_ks)
    nc = len(c_ks)
    while True:
        have_r = i < nr
        have_c = j < nc
        g = 0  # (ranges let go at this step, in push order)
        done = False
        if have_r and (r_ks[i] <= c_ks[j] if have_c else last_calls):
            ks = r_ks[i]
            ke = r_ke[i]
            while sp > 0 and t[stack[sp - 1], KE] < ke:  # close the open ranges it outlasts
                if t[stack[sp - 1], KE] > ks and thread_n[ks // span] <= exact_limit:
                    crossed[ks // span] = 1  # (crossing: exact parents wanted, put in by the caller)
                sp -= 1
            if n_live >= sweep_at:  # (let go the ranges no later call fits: ended before this one starts)
                kept = 0
                for a in range(n_live):
                    row = live[a]
                    if t[row, KE] < ks:
                        gone[g] = row
                        g += 1
                    else:
                        live[kept] = row
                        kept += 1
                n_live = kept
                sweep_at = 2 * n_live + sweep_min
            row = n_slots
            n_slots += 1
            t[row, KS] = ks
            t[row, KE] = ke
            t[row, KEY] = r_key[i]
            t[row, NS] = r_ns[i]
            t[row, CALLS] = 0
            t[row, FIRST] = _MAX
            t[row, LAST] = _MIN
            t[row, CHILDREN] = 0
            t[row, LEVEL] = sp
            t[row, PARENT] = stack[sp - 1] if sp > 0 else -1
            t[row, RID] = r_rid[i]
            stack[sp] = row
            sp += 1
            live[n_live] = row
            n_live += 1
            i += 1
        elif have_c and (c_ks[j] < r_ks[i] if have_r else last_ranges):
            ks = c_ks[j]
            ke = c_ke[j]
            kept = 0
            for a in range(n_live):
                row = live[a]
                if t[row, KE] < ks:  # (no later call fits it)
                    gone[g] = row
                    g += 1
                    continue
                live[kept] = row
                kept += 1
                if ke <= t[row, KE]:
                    t[row, CALLS] += 1
                    if c_first[j] < t[row, FIRST]:
                        t[row, FIRST] = c_first[j]
                    if c_last[j] > t[row, LAST]:
                        t[row, LAST] = c_last[j]
            n_live = kept
            j += 1
        elif not have_r and not last_ranges:
            return MORE_RANGES, i, j, n_slots, n_live, sp, n_out, sweep_at
        elif not have_c and not last_calls:
            return MORE_CALLS, i, j, n_slots, n_live, sp, n_out, sweep_at
        else:  # both done: let every live range go
            for a in range(n_live):
                gone[a] = live[a]
            g = n_live
            n_live = 0
            done = True
        # Let go the last pushed first: a child that holds calls counts towards its parent (pushed
        # before it, let go with it or later) before the parent's row is written.
        for k in range(g - 1, -1, -1):
            row = gone[k]
            if t[row, CALLS] > 0:
                out[n_out, 0] = t[row, KEY]
                out[n_out, 1] = t[row, LAST] - t[row, FIRST]
                out[n_out, 2] = t[row, NS]
                out[n_out, 3] = t[row, CALLS]
                out[n_out, 4] = t[row, LEVEL]
                out[n_out, 5] = t[row, CHILDREN]
                out[n_out, 6] = t[row, RID]
                out[n_out, 7] = t[row, KS] // span
                n_out += 1
                parent = t[row, PARENT]
                if parent >= 0:
                    t[parent, CHILDREN] += 1
        if done:
            return DONE, i, j, n_slots, 0, sp, n_out, sweep_at


def pairs_walk(r_ks: np.ndarray, r_ke: np.ndarray, r_key: np.ndarray, r_uid: np.ndarray,
               c_ks: np.ndarray, c_ke: np.ndarray, l_ke: np.ndarray, l_key: np.ndarray, l_uid: np.ndarray,
               n_live: int, last_ranges: bool, last_calls: bool, o_key: np.ndarray, o_uid: np.ndarray,
               o_call: np.ndarray, sweep_at: int, sweep_min: int) -> tuple[int, int, int, int, int, int]:
    """Walk ranges (start key, end key, label key, id; in start order) and calls (start key, end
    key; in start order, after ranges at equal keys) until one of them runs out (and is not the last
    of its kind), the pairs' room would not hold the next call's, or every call is done.

    ``l_ke``, ``l_key``, ``l_uid``: the live ranges (``n_live`` of them), with room for every range
    given.  Per call, a pair (label key, range id, call position) for each live range that holds it
    whole (start at or before its start, end at or after its end), or one pair with label key and id
    -1 where none does, into ``o_key``, ``o_uid``, ``o_call``.  A range stays live until a call
    starts after its end; ranges that ended before a range starts are let go when the live ones
    reach ``sweep_at``, which then becomes twice what stays plus ``sweep_min``.
    Returns (status, ranges taken, calls taken, n_live, pairs written, sweep_at)."""
    i = 0
    j = 0
    n_out = 0
    nr = len(r_ks)
    nc = len(c_ks)
    cap = len(o_key)
    while True:
        if j >= nc:
            return (DONE if last_calls else MORE_CALLS), i, j, n_live, n_out, sweep_at
        if i < nr and r_ks[i] <= c_ks[j]:
            ks = r_ks[i]
            if n_live >= sweep_at:  # (let go the ranges no later call fits: ended before this one starts)
                kept = 0
                for a in range(n_live):
                    if l_ke[a] >= ks:
                        l_ke[kept] = l_ke[a]
                        l_key[kept] = l_key[a]
                        l_uid[kept] = l_uid[a]
                        kept += 1
                n_live = kept
                sweep_at = 2 * n_live + sweep_min
            l_ke[n_live] = r_ke[i]
            l_key[n_live] = r_key[i]
            l_uid[n_live] = r_uid[i]
            n_live += 1
            i += 1
        elif i >= nr and not last_ranges:
            return MORE_RANGES, i, j, n_live, n_out, sweep_at
        elif n_out + n_live + 1 > cap:
            return MORE_ROOM, i, j, n_live, n_out, sweep_at
        else:
            ks = c_ks[j]
            ke = c_ke[j]
            kept = 0
            held = 0
            for a in range(n_live):
                end = l_ke[a]
                if end < ks:  # (no later call fits it)
                    continue
                key = l_key[a]
                uid = l_uid[a]
                l_ke[kept] = end
                l_key[kept] = key
                l_uid[kept] = uid
                kept += 1
                if ke <= end:
                    o_key[n_out] = key
                    o_uid[n_out] = uid
                    o_call[n_out] = j
                    n_out += 1
                    held += 1
            n_live = kept
            if held == 0:
                o_key[n_out] = -1
                o_uid[n_out] = -1
                o_call[n_out] = j
                n_out += 1
            j += 1


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


def ordered_calls(blocks: list[Spill], keys: Callable[[dict[str, np.ndarray], str], np.ndarray]
                  ) -> Iterator[tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]]:
    """Each block of calls read (and let go) in start-key order: its columns, start keys and end keys."""
    for b in blocks:
        c = b.read()
        b.close()
        if len(c["start_ns"]):
            ks = keys(c, "start_ns")
            order = np.argsort(ks, kind="stable")
            yield ({k: v[order] for k, v in c.items()}, np.ascontiguousarray(ks[order]),
                   np.ascontiguousarray(keys(c, "end_ns")[order]))


def ordered_blocks(blocks: list[Spill], order: Callable[[dict[str, np.ndarray]], np.ndarray], columns: list[str]
                   ) -> Iterator[list[np.ndarray]]:
    """Each block of ranges read (and let go), ``columns`` put in the walk's ``order`` of it."""
    for b in blocks:
        c = b.read()
        b.close()
        if len(c[columns[0]]):
            at = order(c)
            yield [np.ascontiguousarray(c[k][at]) for k in columns]
