"""The GPU's busy blocks, and each iteration's busy time and gaps, of exports larger than the
memory budget: out of core.

In memory (:mod:`nsighttk.analysis.intervals`) every operation's start is sorted at once (100M
kernels: 4.4 GB).  Here the operations' intervals are split by ranges of their starts, at most a
budget's worth of rows each (or those of one start), written to disk (:func:`nsighttk.spill.partition`); each range is
sorted alone and merged with the block left open by the one before (:func:`merge_stream`), and the
blocks are written to disk as they close.  The headline's busy time adds them up; the iterations'
busy time, largest gap and longest gaps are made from them a chunk of blocks at a time
(:func:`windows_busy_and_gaps`), the same numbers as
:func:`nsighttk.analysis.iteration_ops._busy_and_gaps` gives on every block at once
(``tests/test_iterations_spilled.py`` checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd

from nsighttk.analysis import nsys_report_spilled as spilled
from nsighttk.analysis.intervals import GPU_TABLES, merge_stream
from nsighttk.analysis.iteration_ops import _TOP_GAPS, _busy_and_gaps
from nsighttk.analysis.spilled_stats import value_ranges
from nsighttk.encoding import INT_NULL, widen
from nsighttk.profile import Profile
from nsighttk.spill import Spill, partition

#: Bytes an interval takes while a range of them is sorted and merged (read, order, sorted copies,
#: the running end, the blocks): a budget of B bytes sorts ranges of B // ROW_BYTES intervals.
ROW_BYTES = 96
_BLOCKS = ["start_ns", "end_ns"]
_BIG = np.iinfo(np.int64)


def op_columns(table: str) -> list[str]:
    """The columns of a table of GPU operations written to disk for the iterations (all of them
    asked at once: a table is written again when asked for a column it lacks)."""
    return ["correlation_id", "global_pid", "start_ns", "end_ns", "duration_ns",
            *(["name_id"] if table == "kernels" else ["bytes"])]


def spills(p: Profile) -> bool:
    """Whether the GPU operations' busy blocks are made out of core (:func:`nsys_report_spilled.spills`)."""
    return spilled.spills(p, *GPU_TABLES)


def own(chunk: dict[str, np.ndarray], pid: int | None) -> np.ndarray | None:
    """Which of a chunk's GPU operations are of process ``pid`` (None: all of them), as
    :func:`nsighttk.analysis.iteration_ops._own` tells for an export: a process in global_pid, or none."""
    if pid is None:
        return None
    g = widen(chunk["global_pid"])
    mine = (g == INT_NULL) | (((g >> 24) & 0xFFFFFF) == pid)
    return None if mine.all() else mine


def op_chunks(p: Profile, tables: tuple[str, ...], columns: list[str], pid: int | None
              ) -> Iterator[tuple[str, np.ndarray, dict[str, np.ndarray]]]:
    """The operations of process ``pid`` (None: all), table after table a chunk at a time from the
    tables written to disk (:meth:`Profile.spilled`): the table, each row's position in it, and
    ``columns`` as int64."""
    cols = [*columns, *(["global_pid"] if pid is not None and "global_pid" not in columns else [])]
    for t in tables:
        if not p.count(t):
            continue
        at = 0
        for c in p.spilled(t, op_columns(t)).chunks(cols):
            n = len(c[cols[0]])
            rows = np.arange(at, at + n, dtype=np.int64)
            at += n
            mine = own(c, pid)
            got = {k: widen(c[k]) for k in columns}
            if mine is not None:
                got = {k: v[mine] for k, v in got.items()}
                rows = rows[mine]
            yield t, rows, got


def foreign(p: Profile, pid: int | None) -> bool:
    """Whether some GPU operation is of another process than ``pid`` (a scan of their processes)."""
    if pid is None:
        return False
    for t in GPU_TABLES:
        if p.count(t):
            for c in p.spilled(t, op_columns(t)).chunks(["global_pid"]):
                if own(c, pid) is not None:
                    return True
    return False


def busy_blocks(p: Profile, pid: int | None = None) -> Spill:
    """The union of the [start, end) of the GPU operations of process ``pid`` (None: all), as
    sorted disjoint blocks written to disk (columns start_ns, end_ns): what
    :func:`nsighttk.analysis.intervals.gpu_busy_blocks` holds in memory."""
    return union_blocks(lambda: (c for _, _, c in op_chunks(p, GPU_TABLES, _BLOCKS, pid)),
                        max(int(p.budget) // ROW_BYTES, 8))


def union_blocks(intervals: Callable[[], Iterator[dict[str, np.ndarray]]], limit: int) -> Spill:
    """The union of the [start, end) intervals ``intervals()`` yields a chunk at a time (start_ns,
    end_ns, int64; read three times or more), as sorted disjoint blocks written to disk: the
    intervals split by ranges of their starts (at most ``limit`` each, one start's whole), each
    range sorted and merged with the block the one before left open."""
    out = Spill(_BLOCKS, rows=max(1 << 12, min(1 << 20, limit)), missing=False)
    try:
        def starts() -> Iterator[np.ndarray]:
            for c in intervals():
                yield c["start_ns"]

        n, lo, hi = 0, _BIG.max, _BIG.min
        for s in starts():
            if len(s):
                n, lo, hi = n + len(s), min(lo, int(s.min())), max(hi, int(s.max()))
        if not n:
            return out
        ranges = value_ranges(starts, lo, hi, n, limit)
        firsts = np.array([r[0] for r in ranges], dtype=np.int64)
        parts = partition(((np.searchsorted(firsts, c["start_ns"], side="right") - 1, c) for c in intervals()),
                          len(ranges), _BLOCKS, held=limit)

        def in_order() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            for part in parts:
                c = part.read()
                part.close()
                order = np.argsort(c["start_ns"], kind="stable")
                yield c["start_ns"][order], c["end_ns"][order]

        try:
            for bs, be in merge_stream(in_order()):
                out.append({"start_ns": bs, "end_ns": be})
        finally:
            for part in parts:
                part.close()
        out.flush()
    except BaseException:
        out.close()
        raise
    return out


def union_ns(intervals: Callable[[], Iterator[dict[str, np.ndarray]]], limit: int) -> int:
    """The length of the union of the intervals (:func:`union_blocks`)."""
    with union_blocks(intervals, limit) as blocks:
        return sum(int((c["end_ns"] - c["start_ns"]).sum()) for c in blocks.chunks(_BLOCKS))


def gpu_busy_ns(p: Profile) -> int:
    """How long the GPU had any work (the union of every operation), out of core; the blocks are
    kept with ``p`` until the iterations take them (:func:`take_blocks`)."""
    sp = p.cache.get(("busy_spill",))
    if not isinstance(sp, Spill):
        sp = busy_blocks(p)
        p.cache[("busy_spill",)] = sp
    total = 0
    for c in sp.chunks(_BLOCKS):
        total += int((c["end_ns"] - c["start_ns"]).sum())
    return total


def take_blocks(p: Profile, pid: int | None) -> Spill:
    """The busy blocks of process ``pid``'s operations: those :func:`gpu_busy_ns` kept where every
    operation is of it, else made (and the kept ones dropped)."""
    kept = p.cache.pop(("busy_spill",), None)
    if isinstance(kept, Spill):
        if not foreign(p, pid):
            return kept
        kept.close()
    return busy_blocks(p, pid)


def windows_busy_and_gaps(blocks: Spill, w_start: np.ndarray, w_end: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """:func:`nsighttk.analysis.iteration_ops._busy_and_gaps` of the blocks on disk, a chunk of
    them at a time: per window (sorted, disjoint), the busy time summed over the chunks, the first
    and last block it overlaps, and the longest few gaps between blocks inside it (each chunk's
    with the last block of the one before)."""
    n = len(w_start)
    if not blocks.rows:
        return _busy_and_gaps((np.empty(0, dtype=np.int64),) * 2, w_start, w_end)
    busy = np.zeros(n, dtype=np.int64)
    has = np.zeros(n, dtype=bool)
    first_start = np.zeros(n, dtype=np.int64)
    last_end = np.zeros(n, dtype=np.int64)
    top = (np.empty(0, dtype=np.int64),) * 3  # (iteration, start, duration) of the longest inner gaps so far
    prev_end: int | None = None
    for c in blocks.chunks(_BLOCKS):
        bs, be = c["start_ns"].astype(np.int64, copy=False), c["end_ns"].astype(np.int64, copy=False)
        if not len(bs):
            continue
        before = np.r_[0, np.cumsum(be - bs)[:-1]]

        def covered(t: np.ndarray, bs: np.ndarray = bs, be: np.ndarray = be, before: np.ndarray = before) -> np.ndarray:
            k = np.searchsorted(bs, t, side="right") - 1
            kk = np.maximum(k, 0)
            return np.where(k >= 0, before[kk] + np.minimum(t, be[kk]) - bs[kk], 0)

        busy += covered(w_end) - covered(w_start)
        lo = np.searchsorted(be, w_start, side="right")
        hi = np.searchsorted(bs, w_end, side="left")
        here = hi > lo
        new = here & ~has
        first_start[new] = bs[lo[new]]
        last_end[here] = be[hi[here] - 1]
        has |= here
        g_start = be[:-1] if prev_end is None else np.r_[prev_end, be[:-1]]
        g_end = bs[1:] if prev_end is None else bs
        prev_end = int(be[-1])
        i = np.searchsorted(w_start, g_start, side="right") - 1
        ii = np.maximum(i, 0)
        inside = (i >= 0) & (g_start > w_start[ii]) & (g_end < w_end[ii])
        top = _longest(np.r_[top[0], ii[inside]], np.r_[top[1], g_start[inside]],
                       np.r_[top[2], (g_end - g_start)[inside]])
    lead_len = np.where(has, np.maximum(first_start, w_start) - w_start, w_end - w_start)
    tail_start = np.where(has, np.minimum(last_end, w_end), w_end)
    tail_len = np.where(has, w_end - tail_start, 0)
    gaps = pd.DataFrame({
        "iteration": np.concatenate([np.arange(n), top[0], np.arange(n)]),
        "start_ns": np.concatenate([w_start, top[1], tail_start]),
        "duration_ns": np.concatenate([lead_len, top[2], tail_len]),
    })
    gaps = gaps[gaps["duration_ns"] > 0]
    largest = gaps.groupby("iteration")["duration_ns"].max().reindex(range(n), fill_value=0).to_numpy(dtype="int64")
    best = (gaps.assign(neg=-gaps["duration_ns"]).sort_values(["iteration", "neg", "start_ns"], kind="mergesort")
            .groupby("iteration", sort=False).head(_TOP_GAPS).drop(columns="neg").reset_index(drop=True))
    return busy, largest, best


def _longest(it: np.ndarray, start: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The longest :data:`_TOP_GAPS` gaps of each iteration (ties: the earlier), in that order.
    Gaps of an iteration start apart, so the order is total: the longest of a union are the
    longest of each part's longest."""
    if not len(it):
        return it, start, dur
    order = np.lexsort((start, -dur, it))
    it, start, dur = it[order], start[order], dur[order]
    rank = np.arange(len(it)) - np.searchsorted(it, it, side="left")
    keep = rank < _TOP_GAPS
    return it[keep], start[keep], dur[keep]
