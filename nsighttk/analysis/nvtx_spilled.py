"""The NVTX GPU projection out of core (issue 15).

Per NVTX range, the projection (``nvtx_gpu_proj_sum``, :func:`nsys_report_nvtx.nvtx_projection`)
needs the GPU operations launched from inside it: how many, their first start and their last end;
and the summary needs each range's level and its children that launched work.  In memory
(:func:`nsys_report_nvtx.projection_arrays`) that joins every operation to the runtime call that
launched it, every call to the ranges around it, and nests the ranges: arrays of the operations',
calls' and ranges' length (100M kernels, 130M calls, 43M ranges: 7 GB beyond the kept columns).
Where those tables hold more rows than the budget groups (64 bytes a row, as the summaries
decide: :func:`spills`, :func:`walks`), the same answers are made from disk:

1. **Operations to calls** (:func:`_launching_calls`).  Kernels, copies, memsets and calls are
   written to disk once (:meth:`Profile.spilled`) and split by ranges of correlation ids
   (:func:`spilled_stats.value_ranges`, at most a budget's rows each): an operation and the call
   that launched it share their id, so each range is joined on its own, by the same
   :func:`nvtx.launch_rows` (the first call of the process with the id).  Each launching call
   keeps its thread, start, end, and its operations' first start and last end.
2. **The summary** (:func:`projection_stats`).  The ranges that ended on their own thread, on a
   thread that launched work, are put in the nesting walk's order (thread, start, longest first,
   range id), and the launching calls in (thread, start) order, a block of keys at a time; both
   are walked together (:func:`nsighttk.load.nvtx_walk.projection_walk`): nsys' stack
   gives each range's level and parent, each call is counted on the ranges it fits whole, and a
   range's row (its label, projected time, duration, calls, level, children) is written as soon
   as no later call can fit it.  The rows are grouped by label and style as the summaries are
   (:func:`spilled_stats.spilled_group_stats`), with their sums.  Where ranges cross on a thread
   small enough for nsys' exact parents, the walk marks the thread and goes on; those threads'
   ranges (at most 20,000 each) are then nested exactly in memory and their rows take the
   exact levels and children (:func:`_exact_nesting`).
3. **The projection's rows** (:func:`range_spans`; the ranges held, the operations and calls on
   disk).  Where calls on a thread do not overlap (their ends then ascend too; else None: in
   memory), the calls a range contains are one slice of the (thread, start) order: its two ends
   are found in the block holding each, its first start and last end are the minimum and maximum
   over the slice, from the blocks it covers whole and the parts of the two it covers in part.

A range counts one operation per launching call it contains: :func:`nvtx.launch_rows` gives an
operation only to the first call of a process with its id, so where every operation has an id of
its own (the in-memory slices count operations) each launching call launched one, and where ids
repeat (the in-memory pairs count distinct ids) the distinct ids of a range are its launching calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from nsighttk.analysis import nsys_report_spilled as spilled
from nsighttk.analysis.groupstats import GroupStats, stable_argsort
from nsighttk.analysis.nvtx import depth_from_parents, launch_rows, parents_of
from nsighttk.analysis.spilled_stats import limit_rows, spilled_group_stats, value_ranges
from nsighttk.encoding import INT_NULL, Coded, decoded, widen
from nsighttk.profile import Profile
from nsighttk.spill import Spill, partition

#: Bytes a row of operations and calls takes while joined or put in order, read columns and
#: temporaries (a budget of B bytes joins ranges of ids, and orders blocks of calls, of
#: B // JOIN_ROW_BYTES rows).
JOIN_ROW_BYTES = 512
#: Bytes a range takes in the walk (its block read and put in order, its row of the walk's table,
#: its row out, the calls beside it): a budget of B bytes walks blocks of B // WALK_ROW_BYTES ranges.
WALK_ROW_BYTES = 1024
_OPS = ("kernels", "memcpy", "memset")
_OP_COLUMNS = ["correlation_id", "global_pid", "start_ns", "end_ns"]
CALL_COLUMNS = ["correlation_id", "global_tid", "start_ns", "end_ns"]
_LAUNCHING = ["global_tid", "start_ns", "end_ns", "first", "last"]
_BIG = np.iinfo(np.int64)
#: Ranges whose keys are made at a time.
_CHUNK = 1 << 20


def spills(p: Profile) -> bool:
    """Whether the projection's rows join operations and calls out of core: their rows together, at
    64 bytes a row (as the summaries decide: :func:`nsys_report_spilled.spills`), exceed the budget."""
    return spilled.spills(p, *_OPS, "api")


def rows(p: Profile, table: str) -> int:
    """The rows of ``table`` (operations or calls) as the projection reads them: written to disk."""
    return p.spilled(table, {"api": CALL_COLUMNS, "nvtx": NVTX_COLUMNS}.get(table, _OP_COLUMNS)).rows


def range_spans(p: Profile, r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per range (start, end with open ones closed, thread: int64, INT_NULL thread never matched):
    the operations launched from calls it contains on its thread, their first start and last end
    (0 where none), as :func:`nsys_report_nvtx._projection_spans` counts them; None where calls
    on a thread overlap (a range's calls are then no slice: project in memory)."""
    limit = max(int(p.budget) // JOIN_ROW_BYTES, 8)
    ops = [p.spilled(t, _OP_COLUMNS) for t in _OPS]
    calls = p.spilled("api", CALL_COLUMNS)
    launching, tids = _launching_calls(ops, calls, limit)
    try:
        return _spans(launching, tids, r_start, r_end, r_tid, limit)
    finally:
        launching.close()


def id_values(spills: list[Spill]) -> Iterator[np.ndarray]:
    for sp in spills:
        for c in sp.chunks(["correlation_id"]):
            v = widen(c["correlation_id"])
            yield v[v != INT_NULL]


def by_id(sp: Spill, columns: list[str], firsts: np.ndarray) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """``sp``'s rows with an id, as int64 columns, each with the range of ids it falls in."""
    for c in sp.chunks(columns):
        corr = widen(c["correlation_id"])
        ok = corr != INT_NULL
        cols = {k: widen(v)[ok] for k, v in c.items()}
        yield np.searchsorted(firsts, cols["correlation_id"], side="right") - 1, cols


def _launching_calls(ops: list[Spill], calls: Spill, limit: int) -> tuple[Spill, np.ndarray]:
    """The calls that launched operations (:func:`launch_rows`), each with its thread, start, end,
    and its operations' first start and last end; and their threads, ascending."""
    out = Spill(_LAUNCHING)
    tids: set[int] = set()
    try:
        n, lo, hi = 0, _BIG.max, _BIG.min
        for v in id_values([calls, *ops]):
            if len(v):
                n, lo, hi = n + len(v), min(lo, int(v.min())), max(hi, int(v.max()))
        if not n:
            return out, np.empty(0, dtype=np.int64)
        ranges = value_ranges(lambda: id_values([calls, *ops]), lo, hi, n, limit)
        firsts = np.array([r[0] for r in ranges], dtype=np.int64)
        call_parts = partition(by_id(calls, CALL_COLUMNS, firsts), len(ranges), CALL_COLUMNS, held=limit)
        op_parts = [partition(by_id(sp, _OP_COLUMNS, firsts), len(ranges), _OP_COLUMNS, held=limit) for sp in ops]
        try:
            for i in range(len(ranges)):
                a = call_parts[i].read()
                got = [parts[i].read() for parts in op_parts]
                o = {c: np.concatenate([g[c] for g in got]) for c in _OP_COLUMNS}
                call_parts[i].close()
                for parts in op_parts:
                    parts[i].close()
                row = launch_rows(o["correlation_id"], o["global_pid"], a["correlation_id"], a["global_tid"])
                hit = np.flatnonzero(row >= 0)
                if not len(hit):
                    continue
                order = hit[np.argsort(row[hit], kind="stable")]
                row = row[order]
                cuts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
                call = row[cuts]
                gtid = a["global_tid"][call]
                tids.update(np.unique(gtid).tolist())
                out.append({"global_tid": gtid, "start_ns": a["start_ns"][call], "end_ns": a["end_ns"][call],
                            "first": np.minimum.reduceat(o["start_ns"][order], cuts),
                            "last": np.maximum.reduceat(o["end_ns"][order], cuts)})
        finally:
            for sp in [*call_parts, *(s for parts in op_parts for s in parts)]:
                sp.close()
    except BaseException:
        out.close()
        raise
    return out, np.array(sorted(tids), dtype=np.int64)


def _spans(launching: Spill, tids: np.ndarray, r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray | Coded,
           limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    n = len(r_start)
    small = np.int32 if max(n, launching.rows) < 2**31 else np.int64
    if not launching.rows or not n:
        return np.zeros(n, dtype=small), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    # The keys: (thread rank, time) side by side, as nvtx.range_op_slices makes them.
    lo_t, hi_t = int(r_start.min()), int(r_end.max())
    for c in launching.chunks(["start_ns", "end_ns"]):
        lo_t, hi_t = min(lo_t, int(c["start_ns"].min())), max(hi_t, int(c["end_ns"].max()))
    span = hi_t - lo_t + 1
    if (len(tids) + 1) * span >= 2**62:
        return None

    blocks, keys = call_blocks(launching, tids, span, lo_t, limit)
    try:
        held, by_start, s_sorted, by_end, e_sorted = _range_keys(tids, span, lo_t, r_start, r_end, r_tid, small)
        got = _slice_ends(blocks, keys, s_sorted, e_sorted, small)
        del s_sorted, e_sorted
        if got is None:
            return None
        lo_s, hi_e, sizes, b_min, b_max = got
        slices = _Slices(lo_s, hi_e, by_start, by_end, sizes)
        del lo_s, hi_e
        first, last = slices.reduce(blocks, b_min, b_max)
    finally:
        for b in blocks:
            b.close()
    cnt = np.maximum(slices.hi - slices.lo, 0)
    if held is None:
        return cnt, first, last
    out = np.zeros(n, dtype=small), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for o, v in zip(out, (cnt, first, last), strict=True):
        o[held] = v
    return out


def call_blocks(launching: Spill, tids: np.ndarray, span: int, lo_t: int, limit: int, columns: list[str] = _LAUNCHING
                ) -> tuple[list[Spill], Callable[[dict[str, np.ndarray], str], np.ndarray]]:
    """The launching calls (``columns``: their thread, start and end, and what goes with them) split
    by ranges of their start keys ((thread rank, start) side by side), at most ``limit`` rows each,
    ascending (each range unsorted); and the keys of a chunk's calls."""
    def keys(chunk: dict[str, np.ndarray], col: str) -> np.ndarray:
        return np.searchsorted(tids, chunk["global_tid"]) * span + (chunk[col] - lo_t)

    k_lo, k_hi = _BIG.max, _BIG.min
    for c in launching.chunks(["global_tid", "start_ns"]):
        k = keys(c, "start_ns")
        k_lo, k_hi = min(k_lo, int(k.min())), max(k_hi, int(k.max()))
    ranges = value_ranges(lambda: (keys(c, "start_ns") for c in launching.chunks(["global_tid", "start_ns"])),
                          k_lo, k_hi, launching.rows, limit)
    firsts = np.array([r[0] for r in ranges], dtype=np.int64)
    return partition(((np.searchsorted(firsts, keys(c, "start_ns"), side="right") - 1, c)
                      for c in launching.chunks(columns)), len(ranges), columns, held=limit), keys


def _range_keys(tids: np.ndarray, span: int, lo_t: int, r_start: np.ndarray, r_end: np.ndarray,
                r_tid: np.ndarray | Coded, small: type
                ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray, np.ndarray | None, np.ndarray]:
    """The ranges on a launching thread (positions, None: every range), their start keys and end
    keys, each ascending with the order that sorts them (None: already in order)."""
    n = len(r_start)
    ks, ke = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    ok = np.empty(n, dtype=bool)
    for a in range(0, n, _CHUNK):  # (a chunk of ranges' temporaries at a time)
        t = widen(decoded(r_tid[a:a + _CHUNK] if not isinstance(r_tid, Coded)
                          else Coded(r_tid.codes[a:a + _CHUNK], r_tid.values)))
        rank = np.minimum(np.searchsorted(tids, t), len(tids) - 1)
        ok[a:a + _CHUNK] = (tids[rank] == t) & (t != INT_NULL)
        rank *= span
        np.add(rank, r_start[a:a + _CHUNK] - lo_t, out=ks[a:a + _CHUNK])
        np.add(rank, r_end[a:a + _CHUNK] - lo_t, out=ke[a:a + _CHUNK])
    held: np.ndarray | None = None if ok.all() else np.flatnonzero(ok).astype(small)
    del ok
    if held is not None:
        ks, ke = ks[held], ke[held]
    by_start = None if (ks[1:] >= ks[:-1]).all() else stable_argsort(ks)  # (one thread: in start order)
    if by_start is not None:
        ks = ks[by_start]
    by_end = None if (ke[1:] >= ke[:-1]).all() else stable_argsort(ke)
    if by_end is not None:
        ke = ke[by_end]
    return held, by_start, ks, by_end, ke


def _slice_ends(blocks: list[Spill], keys: object, s_sorted: np.ndarray, e_sorted: np.ndarray, small: type
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Each block put in (start key, end key) order (written back so), and the two ends of each
    range's slice of the calls in that order: the first call starting at or after it starts (per
    range in start order), the first ending after it ends (in end order), as global positions; the
    blocks' sizes, first starts and last ends.  None where the end keys do not ascend (calls on a
    thread overlap)."""
    total = sum(b.rows for b in blocks)
    lo: np.ndarray = np.full(len(s_sorted), total, dtype=small)
    hi: np.ndarray = np.full(len(e_sorted), total, dtype=small)
    sizes = np.zeros(len(blocks), dtype=np.int64)
    b_min, b_max = np.zeros(len(blocks), dtype=np.int64), np.zeros(len(blocks), dtype=np.int64)
    at, ps, pe, prev_end = 0, 0, 0, _BIG.min
    for i, block in enumerate(blocks):
        c = block.read()
        block.close()
        blocks[i] = Spill(["first", "last"], rows=max(len(c["first"]), 1))
        if not len(c["start_ns"]):
            continue
        ks, ke = keys(c, "start_ns"), keys(c, "end_ns")  # type: ignore[operator]
        order = np.lexsort((ke, ks))
        ks, ke = ks[order], ke[order]
        if ke[0] < prev_end or not (ke[1:] >= ke[:-1]).all():
            return None
        f, la = c["first"][order], c["last"][order]
        del c, order
        blocks[i].append({"first": f, "last": la})
        sizes[i], b_min[i], b_max[i] = len(f), f.min(), la.max()
        upto = int(np.searchsorted(s_sorted, ks[-1], side="right"))  # ranges starting by this block's last call
        lo[ps:upto] = at + np.searchsorted(ks, s_sorted[ps:upto], side="left")
        ps = upto
        upto = int(np.searchsorted(e_sorted, ke[-1], side="left"))  # ranges ending before its last call ends
        hi[pe:upto] = at + np.searchsorted(ke, e_sorted[pe:upto], side="right")
        pe, at, prev_end = upto, at + len(f), int(ke[-1])
    return lo, hi, sizes, b_min, b_max


class _Slices:
    """Each range's slice [lo, hi) of the calls in (thread, start) order, and where the blocks
    holding its ends find it: in start order the slices' starts ascend, in end order their ends."""

    def __init__(self, lo_s: np.ndarray, hi_e: np.ndarray, by_start: np.ndarray | None, by_end: np.ndarray | None,
                 sizes: np.ndarray) -> None:
        self.ends = np.cumsum(sizes)
        self.starts = self.ends - sizes
        bounds = np.r_[self.starts, self.ends[-1:]]
        self.cut_lo: np.ndarray = np.asarray(np.searchsorted(lo_s, bounds, side="left"))
        self.cut_hi: np.ndarray = np.asarray(np.searchsorted(hi_e, bounds, side="right"))
        self.by_start, self.by_end = by_start, by_end
        self.lo = lo_s if by_start is None else _placed(lo_s, by_start)
        self.hi = hi_e if by_end is None else _placed(hi_e, by_end)

    def _at(self, order: np.ndarray | None, a: int, b: int) -> np.ndarray:
        return np.arange(a, b) if order is None else order[a:b]

    def reduce(self, blocks: list[Spill], b_min: np.ndarray, b_max: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per range, the minimum of the first starts and the maximum of the last ends of the calls
        in its slice (0 where it is empty): blocks it covers whole give their own, the blocks
        holding its two ends the part of them it covers, read once each."""
        first = np.full(len(self.lo), _BIG.max, dtype=np.int64)
        last = np.full(len(self.lo), _BIG.min, dtype=np.int64)
        for i, block in enumerate(blocks):
            o0, o1 = int(self.starts[i]), int(self.ends[i])
            head = self._at(self.by_start, int(self.cut_lo[i]), int(self.cut_lo[i + 1]))  # slices starting here
            head = head[self.hi[head] > self.lo[head]]
            tail = self._at(self.by_end, int(self.cut_hi[i]), int(self.cut_hi[i + 1]))  # slices ending here ...
            tail = tail[self.lo[tail] < o0]  # ... that start in an earlier block
            if not len(head) and not len(tail):
                continue
            c = block.read()
            for sel, a, b in ((head, self.lo[head] - o0, np.minimum(self.hi[head], o1) - o0),
                              (tail, np.zeros(len(tail), dtype=np.int64), self.hi[tail] - o0)):
                if len(sel):
                    first[sel] = np.minimum(first[sel], _between(c["first"], a, b, np.minimum))
                    last[sel] = np.maximum(last[sel], _between(c["last"], a, b, np.maximum))
            long = head[self.hi[head] > o1]  # slices past this block: the whole blocks between
            if len(long):
                b_hi = np.searchsorted(self.ends, self.hi[long] - 1, side="right")
                mid = b_hi - i >= 2
                if mid.any():
                    sel, b_hi = long[mid], b_hi[mid]
                    a = np.full(len(sel), i + 1)
                    first[sel] = np.minimum(first[sel], _between(b_min, a, b_hi, np.minimum))
                    last[sel] = np.maximum(last[sel], _between(b_max, a, b_hi, np.maximum))
        empty = self.hi <= self.lo
        first[empty] = 0
        last[empty] = 0
        return first, last


def _placed(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``values`` given in ``order``, put back in place."""
    out = np.empty_like(values)
    out[order] = values
    return out


def _between(values: np.ndarray, a: np.ndarray, b: np.ndarray, how: np.ufunc) -> np.ndarray:
    """``how`` over ``values[a[i]:b[i]]`` for each i (every slice not empty): one ``reduceat`` of
    the slices' bounds side by side (a spare value at the end, where a bound is the length)."""
    vals = np.empty(len(values) + 1, dtype=np.int64)
    vals[:-1] = values
    vals[-1] = 0
    at = np.empty(2 * len(a), dtype=np.int64)
    at[0::2], at[1::2] = a, b
    return how.reduceat(vals, at)[0::2]


# ------------------------------------------------------------------ the summary, ranges on disk too

NVTX_COLUMNS = ["start_ns", "end_ns", "global_tid", "end_global_tid", "range_id", "name", "domain", "style"]
_RANGE_BLOCK = ["ks", "ke", "rid", "key", "ns"]
_ROWS = ["key", "proj", "ns", "count", "level", "children", "rid", "thread"]
#: The projection summary's sums per group, by the column of the in-memory projection they add.
SUMMED = {"range_ns": "ns", "gpu_ops": "count", "level": "level", "children": "children"}
Labels = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                  tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def walks(p: Profile) -> bool:
    """Whether ``nvtx_gpu_proj_sum`` is made out of core (:func:`projection_stats`): the ranges,
    operations and calls together hold more rows than the budget groups (64 bytes a row)."""
    return spilled.spills(p, *_OPS, "api", "nvtx")


def projection_stats(p: Profile, labels: Labels, max_ts: int | None
                     ) -> tuple[GroupStats, np.ndarray, np.ndarray, dict[str, np.ndarray]] | None:
    """``nvtx_gpu_proj_sum``'s groups out of core: the projected times' statistics by label and
    style, the labels and styles by group, and per group the sums of the ranges' durations, GPU
    operations, levels and children (int64, or Python ints where int64 could wrap, as in memory).
    ``labels`` ranks labels and styles as the in-memory report does (from the distinct (domain,
    name, style) values: their codes and values); ``max_ts`` closes open ranges.  None where the
    (thread, time) keys would not fit in 64 bits: project in memory."""
    limit = max(int(p.budget) // JOIN_ROW_BYTES, 8)
    ops = [p.spilled(t, _OP_COLUMNS) for t in _OPS]
    launching, tids = _launching_calls(ops, p.spilled("api", CALL_COLUMNS), limit)
    sp = p.spilled("nvtx", NVTX_COLUMNS)
    try:
        rows = _walked(sp, launching, tids, max_ts, max(int(p.budget) // WALK_ROW_BYTES, 8))
    finally:
        launching.close()
    if rows is None:
        return None
    try:
        return _grouped(p, sp, rows, labels)
    finally:
        rows.close()


def range_fill(sp: Spill, max_ts: int | None) -> int:
    """Where open ranges end: ``max_ts``, else (as the in-memory ``_range_ends``) the latest start of
    the closed ranges, on any thread."""
    if max_ts is not None:
        return max_ts
    return max((int(widen(c["start_ns"])[closed].max()) for c in sp.chunks(["start_ns", "end_global_tid"])
                if (closed := widen(c["end_global_tid"]) == INT_NULL).any()), default=0)


def closed_chunks(sp: Spill, tids: np.ndarray) -> Iterator[tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]]:
    """The NVTX spill's chunks, each with the rows of ranges that ended on the thread that started
    them (those nsys projects) on a thread that launched work, and those rows' thread ranks."""
    for c in sp.chunks():
        tid = widen(c["global_tid"])
        rank = np.minimum(np.searchsorted(tids, tid), len(tids) - 1)
        keep = (widen(c["end_global_tid"]) == INT_NULL) & (tids[rank] == tid) & (tid != INT_NULL)
        yield c, np.flatnonzero(keep), rank


def _walked(sp: Spill, launching: Spill, tids: np.ndarray, max_ts: int | None, limit: int) -> Spill | None:
    """The walk's rows (:data:`_ROWS`), one per range that holds launching calls; None where the
    (thread, time) keys would not fit in 64 bits."""
    out = Spill(_ROWS)
    if not launching.rows or not sp.rows:
        return out
    try:
        fill = range_fill(sp, max_ts)
        lo_t, hi_t, n = _BIG.max, _BIG.min, 0
        for c in launching.chunks(["start_ns", "end_ns"]):
            lo_t, hi_t = min(lo_t, int(c["start_ns"].min())), max(hi_t, int(c["end_ns"].max()))

        def ranges() -> Iterator[dict[str, np.ndarray]]:
            for c, k, rank in closed_chunks(sp, tids):
                if len(k):
                    start, end = widen(c["start_ns"])[k], widen(c["end_ns"])[k]
                    end = np.where(end == INT_NULL, fill, end)
                    yield {"rank": rank[k], "start": start, "end": end, "rid": widen(c["range_id"])[k],
                           "key": (c["name"][k].astype(np.int64) * n_dom + c["domain"][k]) * n_sty + c["style"][k]}

        n_dom, n_sty = max(len(sp.values("domain")), 1), max(len(sp.values("style")), 1)
        thread_n = np.zeros(len(tids), dtype=np.int64)  # (closed ranges per thread: nsys' exact parents below a size)
        for r in ranges():
            n += len(r["start"])
            thread_n += np.bincount(r["rank"], minlength=len(tids))
            lo_t, hi_t = min(lo_t, int(r["start"].min())), max(hi_t, int(r["end"].max()))
        span = hi_t - lo_t + 1
        if not n:
            return out
        if (len(tids) + 1) * span >= 2**62:
            out.close()
            return None

        def keyed() -> Iterator[dict[str, np.ndarray]]:
            for r in ranges():
                base = r["rank"] * span - lo_t
                yield {"ks": base + r["start"], "ke": base + r["end"], "rid": r["rid"], "key": r["key"],
                       "ns": r["end"] - r["start"]}

        k_lo, k_hi = min(int(r["ks"].min()) for r in keyed()), max(int(r["ks"].max()) for r in keyed())
        parts = value_ranges(lambda: (r["ks"] for r in keyed()), k_lo, k_hi, n, limit)
        firsts = np.array([q[0] for q in parts], dtype=np.int64)
        r_blocks = partition(((np.searchsorted(firsts, r["ks"], side="right") - 1, r) for r in keyed()),
                             len(parts), _RANGE_BLOCK, held=limit)
        c_blocks, keys = call_blocks(launching, tids, span, lo_t, limit)
        crossed = np.zeros(len(tids), dtype=np.int64)
        try:
            out = _walk(r_blocks, c_blocks, keys, out, n, span, thread_n, crossed)
        finally:
            for b in [*r_blocks, *c_blocks]:
                b.close()
        return _exact_nesting(ranges, out, crossed) if crossed.any() else out
    except BaseException:
        out.close()
        raise


def _exact_nesting(ranges: Callable[[], Iterator[dict[str, np.ndarray]]], rows: Spill, crossed: np.ndarray) -> Spill:
    """``rows`` with the levels and children of nsys' exact parents on the ``crossed`` threads (where
    ranges cross on a thread of few ranges; :func:`nvtx.parents_of` over those threads' ranges, held:
    at most :data:`nsighttk.load.nvtx_nesting._EXACT_LIMIT` each), as in memory."""
    got = [{k: r[k][mine] for k in ("start", "end", "rank", "rid")}
           for r in ranges() if (mine := crossed[r["rank"]] == 1).any()]
    start, end, rank, rid = (np.concatenate([g[k] for g in got]) for k in ("start", "end", "rank", "rid"))
    del got
    parent = np.asarray(parents_of(start, end, rank, rid))
    del start, end, rank
    level = depth_from_parents(parent)
    by_rid = np.argsort(rid, kind="stable")
    rid_sorted = rid[by_rid]

    def at(ids: np.ndarray) -> np.ndarray:
        return by_rid[np.searchsorted(rid_sorted, ids)]

    held = np.zeros(len(rid), dtype=bool)  # (the ranges that hold calls: their rows)
    for c in rows.chunks(["rid", "thread"]):
        held[at(c["rid"][crossed[c["thread"]] == 1])] = True
    par = parent[held]
    children = np.bincount(par[par >= 0], minlength=len(rid))
    out = Spill(_ROWS)
    try:
        for c in rows.chunks():
            mine = np.flatnonzero(crossed[c["thread"]] == 1)
            if len(mine):
                c = {k: np.array(widen(v)) for k, v in c.items()}  # (copies: the chunks read are read-only)
                pos = at(c["rid"][mine])
                c["level"][mine], c["children"][mine] = level[pos], children[pos]
            out.append(c)
    except BaseException:
        out.close()
        raise
    finally:
        rows.close()
    return out


def _walk(r_blocks: list[Spill], c_blocks: list[Spill], keys: Callable[[dict[str, np.ndarray], str], np.ndarray],
          emitted: Spill, n: int, span: int, thread_n: np.ndarray, crossed: np.ndarray) -> Spill:
    from nsighttk.load import nvtx_nesting, nvtx_walk

    walk = nvtx_walk.projection_walk

    def call_chunks() -> Iterator[list[np.ndarray]]:
        for c, ks, ke in nvtx_walk.ordered_calls(c_blocks, keys):
            yield [ks, ke, np.ascontiguousarray(c["first"]), np.ascontiguousarray(c["last"])]

    empty = [np.empty(0, dtype=np.int64)] * 5
    r_it = nvtx_walk.ordered_blocks(r_blocks, lambda c: np.lexsort((c["rid"], -c["ke"], c["ks"])),  # (start,
                                    ["ks", "ke", "key", "ns", "rid"])  # longest first, range id)
    c_it = call_chunks()
    r, c = next(r_it, None), next(c_it, None)
    ri = ci = n_slots = n_live = sp = 0
    sweep_at = nvtx_walk.SWEEP
    W = nvtx_walk.WIDTH
    t = np.empty((0, W), dtype=np.int64)
    live = stack = np.empty(0, dtype=np.int64)
    while True:
        rr, cc = r if r is not None else empty, c if c is not None else empty
        # The table keeps the live ranges (in push order) and room for this chunk's.
        rows = live[:n_live]
        t, remap = t[rows], np.full(n_slots + 1, -1, dtype=np.int64)  # (slot -1: no parent)
        remap[rows] = np.arange(n_live)
        t[:, nvtx_walk.PARENT] = remap[t[:, nvtx_walk.PARENT]]
        opened = remap[stack[:sp]]
        sp = int(np.count_nonzero(opened >= 0))  # (those let go are the stack's top: the ends ascend there)
        room = n_live + len(rr[0]) - ri
        t = np.concatenate([t, np.empty((room - n_live, W), dtype=np.int64)])
        live, stack = np.arange(room, dtype=np.int64), np.concatenate([opened[:sp], np.empty(room - sp, np.int64)])
        gone, out = np.empty(room, dtype=np.int64), np.empty((max(room, 1), nvtx_walk.OUT_WIDTH), dtype=np.int64)
        status, di, dj, n_slots, n_live, sp, got, sweep_at = walk(
            rr[0][ri:], rr[1][ri:], rr[2][ri:], rr[3][ri:], rr[4][ri:], cc[0][ci:], cc[1][ci:], cc[2][ci:],
            cc[3][ci:], t, n_live, live, n_live, stack, sp, gone, span, thread_n, nvtx_nesting._EXACT_LIMIT,
            crossed, r is None, c is None, out, sweep_at, nvtx_walk.SWEEP)
        ri, ci = ri + di, ci + dj
        if got:
            emitted.append({k: out[:got, i] for i, k in enumerate(_ROWS)})
        if status == nvtx_walk.DONE:
            return emitted
        if status == nvtx_walk.MORE_RANGES:
            r, ri = next(r_it, None), 0
        else:
            c, ci = next(c_it, None), 0




def _grouped(p: Profile, sp: Spill, rows: Spill, labels: Labels
             ) -> tuple[GroupStats, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    names, domains, styles = (sp.values(c) for c in ("name", "domain", "style"))
    n_dom, n_sty = max(len(domains), 1), max(len(styles), 1)
    found: dict[str, np.ndarray] = {}

    def code_of(raw: np.ndarray) -> np.ndarray:
        name, rest = np.divmod(raw, n_dom * n_sty)
        domain, style = np.divmod(rest, n_sty)
        tag, tags, sty, shown = labels(domain, domains, name, names, style, styles)
        found.update(raw=raw.copy(), tags=tags, styles=shown)
        found["codes"] = tag.astype(np.int64) * max(len(shown), 1) + sty
        return found["codes"]

    g = spilled_group_stats(lambda: ((c["key"], c["proj"]) for c in rows.chunks(["key", "proj"])), code_of,
                            limit_rows(p.budget))
    if not len(g.key):
        return g, np.empty(0, dtype=object), np.empty(0, dtype=object), {}
    order = np.argsort(found["raw"])
    raw_sorted, codes = found["raw"][order], found["codes"][order]
    tag, style = np.divmod(g.key, max(len(found["styles"]), 1))
    sums = {}
    for col, c in SUMMED.items():
        big = max((float(np.abs(ch[c]).max()) for ch in rows.chunks([c]) if len(ch[c])), default=0.0)
        exact = big * rows.rows >= 2.0**63
        total: np.ndarray = np.zeros(len(g.key), dtype=object if exact else np.int64)
        for ch in rows.chunks(["key", c]):
            group = np.searchsorted(g.key, codes[np.searchsorted(raw_sorted, ch["key"])])
            if exact:
                for i, v in zip(group.tolist(), ch[c].tolist(), strict=True):
                    total[i] += v
            else:
                np.add.at(total, group, ch[c])
        sums[col] = total
    return g, found["tags"][tag], found["styles"][style], sums
