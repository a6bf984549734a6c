"""NVTX ranges: nesting, and which CUDA calls (and so which GPU work) fall inside each range.

The rules are Nsight Systems' own (``nvtx_gpu_proj_sum``, ``nvtx_kern_sum``):

* a range's *parent* is the tightest other range on the same thread that contains it, where
  tightness is ``(child.start - parent.start) + (parent.end - child.end)``; ranges never closed
  end at the last NVTX timestamp; its *level* is its depth in that tree (0 for outermost);
* a GPU operation belongs to every range (on the launching thread) that contains the whole CUDA
  API call that launched it, matched through the correlation id within the process;
* a range's *GPU projection* spans from the first of its operations' starts to the last end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Literal

import numpy as np

from nsighttk import chunked
from nsighttk.analysis.groupstats import factorize_sorted, stable_argsort
from nsighttk.load.nvtx_nesting import depth_from_parents, parents_of
from nsighttk.profile import INT_NULL, Coded, by_value, compact, decoded, require_columns, widen

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["depth_from_parents", "parents_of"]  # nesting lives with the loader that fills nvtx.depth

_PROC_SHIFT = 1 << 24


def range_ends(nvtx: pd.DataFrame, max_ts: int | None) -> np.ndarray:
    """End times with open ranges closed at ``max_ts`` (the last NVTX timestamp)."""
    end = nvtx["end_ns"]
    fill = max_ts if max_ts is not None else int(nvtx["start_ns"].max()) if len(nvtx) else 0
    return end.fillna(fill).to_numpy(dtype="int64")






def range_parents(nvtx: pd.DataFrame, max_ts: int | None = None) -> np.ndarray:
    """For each row of ``nvtx``, the positional index of its parent range, or -1."""
    require_columns(nvtx, ["start_ns", "end_ns", "global_tid", "range_id"], "nvtx")
    if nvtx.empty:
        return np.full(0, -1, dtype="int64")
    return parents_of(nvtx["start_ns"].to_numpy(dtype="int64"), range_ends(nvtx, max_ts),
                      nvtx["global_tid"].fillna(-1).to_numpy(dtype="int64"),
                      nvtx["range_id"].to_numpy(dtype="int64")).astype("int64")



def _null(arr: np.ndarray) -> int:
    """The value marking a missing integer in ``arr``: its type's minimum (INT_NULL for int64, as
    :func:`nsighttk.profile.widen` reads narrow columns)."""
    return int(np.iinfo(arr.dtype).min)


def _concat(arrs: list[np.ndarray]) -> np.ndarray:
    """Integer columns (narrow or int64, missing = the type's minimum) end to end, with no copy when
    only one holds rows, in the widest of their types once the smaller parts are narrowed to the
    largest one's where their values fit (each part's missing values that type's minimum: 10M
    kernels' int32 ids and a few thousand copies' int64 ones stay 40 MB, not 80)."""
    full = [a for a in arrs if len(a)]
    if not full:
        return np.empty(0, dtype="int64")
    if len(full) == 1:
        return full[0]
    if len({a.dtype for a in full}) == 1:
        return np.concatenate(full)
    big = max(full, key=len).dtype  # (the smaller parts narrowed to the largest's type where they fit)
    full = [compact(a, big.type) if a.dtype.itemsize > big.itemsize else a for a in full]
    wide = max((a.dtype for a in full), key=lambda d: d.itemsize)
    out = np.empty(sum(len(a) for a in full), dtype=wide)
    at = 0
    for a in full:
        part = out[at:at + len(a)]
        part[:] = a
        if a.dtype != wide:
            part[a == np.iinfo(a.dtype).min] = np.iinfo(wide).min
        at += len(a)
    return out


def gpu_ops(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """GPU operations (kernels, then memcpys, then memsets: each a dict of the same integer
    columns, e.g. start_ns, end_ns, correlation_id, global_pid) as one set of arrays with those
    names.  Columns may be narrow (missing = the type's minimum); a column only one part holds
    rows of is that part's array itself (no copy)."""
    return {c: _concat([d[c] for d in parts]) for c in parts[0]} if parts else {}


def concat_ids(parts: list[np.ndarray | Coded]) -> np.ndarray | Coded:
    """Integer id columns (process or thread ids) end to end as :func:`gpu_ops` puts them: coded
    when one is and all hold at most 127 values together (the others coded here: they are the
    small tables), else as :func:`_concat` does."""
    full = [a for a in parts if len(a)]
    if len(full) == 1 or not any(isinstance(a, Coded) for a in full):
        return full[0] if len(full) == 1 else _concat([decoded(a) for a in full])
    coded = [a if isinstance(a, Coded) else Coded(*_codes_of(widen(a))) for a in full]
    values = np.unique(np.concatenate([widen(c.values) for c in coded]))
    if len(values) > 127:
        return _concat([widen(c.decode()) for c in coded])
    return Coded(np.concatenate([np.searchsorted(values, widen(c.values)).astype(np.int8)[c.codes] for c in coded]),
                 values)


def _codes_of(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, codes = np.unique(arr, return_inverse=True)
    return codes.ravel(), values


def launch_rows(o_corr: np.ndarray, o_gpid: np.ndarray | Coded, a_corr: np.ndarray, a_gtid: np.ndarray | Coded
                ) -> np.ndarray:
    """Per GPU operation, the row of the CUDA API call that launched it: the first call with the same
    correlation id in the same process (an op's ``global_pid`` and a call's ``global_tid`` share
    their process bits above bit 24); -1 where none.

    Integer columns, narrow or int64, their type's minimum marking a missing value; the process and
    thread ids may be coded (:class:`nsighttk.profile.Coded`, read value by value).  Returns int32
    rows when they fit.  Looked up through one sorted key (the correlation id alone when every call
    and op is of one process), so the join holds a few arrays of the ops' length, no copies of the
    calls' columns."""
    n, m = len(o_corr), len(a_corr)
    small = np.int32 if max(n, m) < 2**31 else np.int64
    if not n or not m:
        return np.full(n, -1, dtype=small)

    def known(v: np.ndarray) -> np.ndarray:
        return v != _null(v)

    a_ok = by_value(a_gtid, known) & (a_corr != _null(a_corr))
    o_ok = by_value(o_gpid, known) & (o_corr != _null(o_corr))
    if not a_ok.any() or not o_ok.any():
        return np.full(n, -1, dtype=small)
    procs: set[int] = set()
    for v, ok in ((a_gtid, a_ok), (o_gpid, o_ok)):
        if isinstance(v, Coded):  # (every value, used or not: at worst the join by process below)
            procs |= {int(x) >> 24 for x in v.values if x != _null(v.values)}
        else:
            procs |= {int(v.min(where=ok, initial=np.iinfo(v.dtype).max)) >> 24,
                      int(v.max(where=ok, initial=np.iinfo(v.dtype).min)) >> 24}
    a_rows = None if a_ok.all() else np.flatnonzero(a_ok).astype(small)
    o_rows = None if o_ok.all() else np.flatnonzero(o_ok).astype(small)
    del a_ok, o_ok

    def pick(arr: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
        return arr if rows is None else arr[rows]

    def proc(v: np.ndarray) -> np.ndarray:
        return v >> 24

    if len(procs) == 1:  # one process (the usual capture): the correlation id is the key
        a_key, o_key = pick(a_corr, a_rows), pick(o_corr, o_rows)
    else:
        a_key, o_key = _proc_corr_keys([by_value(a_gtid, proc, a_rows), by_value(o_gpid, proc, o_rows)],
                                       [pick(a_corr, a_rows), pick(o_corr, o_rows)])
    if len(a_key) > 1 and not (a_key[1:] >= a_key[:-1]).all():  # (in call order they usually are)
        order = np.argsort(a_key, kind="stable").astype(small)  # the first call per key comes first
        a_key, a_rows = a_key[order], order if a_rows is None else a_rows[order]
        del order
    rows = np.empty(len(o_key), dtype=small)
    chunked.each(partial(_look_up, a_key, a_rows, o_key, rows), len(o_key), _CHUNK)  # (no 80 MB of int64 positions)
    del a_key, o_key
    if o_rows is None:
        return rows
    out = np.full(n, -1, dtype=small)
    out[o_rows] = rows
    return out


def _look_up(a_key: np.ndarray, a_rows: np.ndarray | None, o_key: np.ndarray, rows: np.ndarray, lo: int,
             hi: int) -> None:
    """``rows[lo:hi]``: the row of the first call whose key (``a_key``, sorted; its rows
    ``a_rows``, None: its positions) equals each of ``o_key[lo:hi]``, -1 where none does."""
    key = o_key[lo:hi]
    pos = np.searchsorted(a_key, key)  # (the leftmost equal key: the first call with the id)
    np.minimum(pos, len(a_key) - 1, out=pos)
    hit = a_key[pos] == key
    got = pos.astype(rows.dtype) if a_rows is None else a_rows[pos]
    got[~hit] = -1
    rows[lo:hi] = got


def _proc_corr_keys(procs: list[np.ndarray], corrs: list[np.ndarray]) -> list[np.ndarray]:
    """One sortable int64 key per (process, correlation id) pair, in one key space for every
    pair of arrays given: bits side by side when they fit, else the pairs' lexicographic rank."""
    # (as int64: narrow ones would wrap when shifted side by side; no missing values are given)
    proc = np.concatenate(procs).astype(np.int64, copy=False)
    corr = np.concatenate(corrs).astype(np.int64, copy=False)
    bits = int(corr.max()).bit_length() if len(corr) else 0
    if len(proc) == 0 or (proc.min() >= 0 and corr.min() >= 0 and int(proc.max()).bit_length() + bits <= 63):
        key = (proc << bits) | corr
    else:  # ids too large to sit side by side: rank the pairs (a sort of both columns)
        order = np.lexsort((corr, proc))
        new = np.r_[True, (proc[order][1:] != proc[order][:-1]) | (corr[order][1:] != corr[order][:-1])]
        key = np.empty(len(proc), dtype="int64")
        key[order] = np.cumsum(new) - 1
    return np.split(key, np.cumsum([len(p) for p in procs])[:-1])


def _thread_time_order(tid: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The stable order of rows by (thread, start): one sort of one integer (thread rank and start
    side by side) when they fit in 63 bits, else a two-key lexsort."""
    if not len(tid):
        return np.empty(0, dtype=np.int64)
    if int(tid.min()) == int(tid.max()):  # one thread: by start, often already in order
        if (start[1:] >= start[:-1]).all():
            return np.arange(len(start), dtype=np.int64)
        return np.argsort(start, kind="stable")
    ranks, _ = factorize_sorted(tid)
    lo, span = int(start.min()), int(start.max()) - int(start.min()) + 1
    if (int(ranks.max()) + 1) * span >= 2**62:
        return np.lexsort((start, tid))
    key = ranks * span
    key += start - lo
    return np.argsort(key, kind="stable")


class TooManyPairs(Exception):
    """:func:`enclosing_ranges` would make more candidate pairs than it was allowed."""


def enclosing_ranges(r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray,
                     c_start: np.ndarray, c_end: np.ndarray, c_tid: np.ndarray,
                     max_pairs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (range position, call position) where the range contains the whole call, same thread.

    Ranges: start, end (open ones closed), thread; calls: start, end, thread (INT_NULL: no call,
    never matched).  Positions are 0-based row positions in each set of arrays.  ``max_pairs``:
    raise :class:`TooManyPairs` before expanding more candidates (calls starting inside a range of
    their thread) than that, all threads together (deep nesting: a pair per range around a call)."""
    candidates = 0
    out_r: list[np.ndarray] = []
    out_c: list[np.ndarray] = []
    c_valid = np.flatnonzero(c_tid != INT_NULL)
    c_order = c_valid[_thread_time_order(c_tid[c_valid], c_start[c_valid])]
    del c_valid
    ct_sorted = c_tid[c_order]
    for tid in np.unique(r_tid[r_tid != INT_NULL]):
        lo_c, hi_c = np.searchsorted(ct_sorted, tid, "left"), np.searchsorted(ct_sorted, tid, "right")
        if lo_c == hi_c:
            continue
        c_sorted = c_order[lo_c:hi_c]
        cs = c_start[c_sorted]
        r_idx = np.flatnonzero(r_tid == tid)
        lo = np.searchsorted(cs, r_start[r_idx], side="left")
        hi = np.searchsorted(cs, r_end[r_idx], side="right")
        n = np.maximum(hi - lo, 0)
        total = int(n.sum())
        if total == 0:
            continue
        candidates += total
        if max_pairs is not None and candidates > max_pairs:
            raise TooManyPairs(f"more than {max_pairs:,} (range, call) candidates")
        # Expand every [lo, hi) into its positions without a Python loop over ranges.
        small = "int32" if max(total, len(c_sorted)) < 2**31 else "int64"
        owner = np.repeat(np.arange(len(r_idx), dtype=small), n)
        offsets = np.arange(total, dtype=small)
        offsets -= np.repeat((np.cumsum(n) - n).astype(small), n)
        offsets += lo.astype(small)[owner]
        cand = c_sorted[offsets]
        del offsets
        keep = c_end[cand] <= r_end[r_idx][owner]
        out_r.append(r_idx[owner[keep]].astype("int64"))
        out_c.append(cand[keep].astype("int64"))
    if not out_r:
        return np.empty(0, dtype="int64"), np.empty(0, dtype="int64")
    return np.concatenate(out_r), np.concatenate(out_c)


def range_op_spans(r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray, a_start: np.ndarray,
                   a_end: np.ndarray, a_tid: np.ndarray, call: np.ndarray, o_start: np.ndarray,
                   o_end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per range: the number of operations whose launching call it contains (same thread, as
    :func:`enclosing_ranges`), their first start and their last end (0 where there are none).

    Calls: start, end, thread (``a_*``, int64, INT_NULL thread: never matched); operations: the
    row of the call that launched each (``call``, -1 for none; see :func:`launch_rows`), its own
    start and end (``o_*``).  None where calls on a thread overlap (use the pairs then); see
    :func:`range_op_slices`."""
    sl = range_op_slices(r_start, r_end, r_tid, a_start, a_end, a_tid, call)
    if sl is None:
        return None
    return sl.count, sl.reduce(o_start, np.minimum), sl.reduce(o_end, np.maximum)


@dataclass
class OpSlices:
    """Per range, the operations it holds as one slice of ``ops`` (operation positions in (thread,
    call start) order): ``count`` per range; ``seg`` the ranges holding some, ``bounds`` their
    slices' [start, end) side by side, in ascending start."""

    n: int
    count: np.ndarray
    ops: np.ndarray
    seg: np.ndarray
    bounds: np.ndarray

    def reduce(self, values: np.ndarray | Sequence[Part], how: np.ufunc) -> np.ndarray:
        """Per range, ``how`` (np.minimum, np.maximum) of the operations' ``values`` (0 where none):
        one array, or the tables' parts end to end as the operations are (:data:`Part`: a column,
        or two whose sum it is).  The operations are taken :data:`_CHUNK` at a time, in slice order:
        each chunk's values are gathered from the parts, and every slice meeting the chunk is
        reduced over its part of it (``reduceat``) and folded into its range's answer; a range's
        slice spans chunks where ranges nest.  No array of every operation's value is made (10M
        kernels: 80 MB less at the projection's peak)."""
        parts = [values] if isinstance(values, np.ndarray) else values
        big = np.iinfo(np.int64)
        out = np.full(self.n, big.max if how is np.minimum else big.min, dtype=np.int64)
        if not len(self.seg):
            return np.zeros(self.n, dtype=np.int64)
        lo_all, hi_all = self.bounds[0::2], self.bounds[1::2]  # (slices in ascending start)

        def chunk(c0: int, c1: int) -> tuple[np.ndarray, np.ndarray] | None:  # (on the chunked threads)
            upto = int(np.searchsorted(lo_all, c1, side="left"))  # slices starting before the chunk ends
            meets = np.flatnonzero(hi_all[:upto] > c0)  # ... and ending after it starts
            if not len(meets):
                return None
            vals = np.empty(c1 - c0 + 1, dtype=np.int64)  # one spare: a bound may be the end
            gather_parts(parts, self.ops[c0:c1], vals[:c1 - c0])
            vals[c1 - c0] = 0
            at = np.empty(2 * len(meets), dtype=np.int64)
            at[0::2] = np.maximum(lo_all[meets], c0) - c0
            at[1::2] = np.minimum(hi_all[meets], c1) - c0
            return self.seg[meets], how.reduceat(vals, at)[0::2]  # (the second of each pair: the gap after)

        for got in chunked.ordered(chunk, len(self.ops), _CHUNK):  # (folded here: slices span chunks)
            if got is not None:
                seg, part = got
                out[seg] = how(out[seg], part)
        out[self.count == 0] = 0
        return out


#: A column of GPU operations in one table: its values, or two columns whose sum they are
#: (an end as start plus duration).
Part = np.ndarray | tuple[np.ndarray, np.ndarray]


def gather_parts(parts: Sequence[Part], idx: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = column[idx[i]]`` as int64, where the column is ``parts`` end to end (narrow
    integers widened), :data:`_CHUNK` positions at a time."""
    lens = [len(p[0]) if isinstance(p, tuple) else len(p) for p in parts]
    offsets = np.cumsum([0, *lens])
    def gather(a: int, b: int) -> None:
        i, o = idx[a:b], out[a:b]
        which = np.searchsorted(offsets[1:], i, side="right") if len(parts) > 1 else None
        for k, part in enumerate(parts):
            sel = slice(None) if which is None else np.flatnonzero(which == k)
            at = i[sel] - offsets[k] if k else i[sel]
            if isinstance(part, tuple):
                o[sel] = widen(part[0][at]) + widen(part[1][at])
            else:
                o[sel] = widen(part[at])

    chunked.each(gather, len(idx), _CHUNK)


def _ranks(values: np.ndarray, small: type) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values ascending, each value's rank as ``small``): for a few distinct values (the
    threads that launch work) one pass each, no sort of the array."""
    distinct = [int(values.min())] if len(values) else []
    top = np.iinfo(values.dtype).max
    while distinct and len(distinct) <= 8:  # (beyond that a sort is cheaper)
        above = values > distinct[-1]
        if not above.any():
            return np.array(distinct, dtype=values.dtype), np.searchsorted(distinct, values).astype(small)
        distinct.append(int(values.min(where=above, initial=top)))
    uniq, rank = np.unique(values, return_inverse=True)
    return uniq, rank.ravel().astype(small)


#: Values gathered at a time by :func:`_keys` and :func:`_gathered` (their temporaries: a chunk's).
_CHUNK = 1 << 20


def _keys(rank: np.ndarray, span: int, values: np.ndarray, rows: np.ndarray, lo: int,
          plus: np.ndarray | None = None) -> np.ndarray:
    """``rank * span + values[rows] (+ plus[rows]) - lo`` as int64, gathered :data:`_CHUNK` rows at
    a time."""
    key = np.empty(len(rank), dtype=np.int64)

    def make(a: int, b: int) -> None:
        k = key[a:b]
        np.multiply(rank[a:b], span, out=k, dtype=np.int64)
        k -= lo
        r = rows[a:b]
        k += values[r]
        if plus is not None:
            k += plus[r]

    chunked.each(make, len(rows), _CHUNK)
    return key


def _gathered(values: np.ndarray, rows: np.ndarray, ufunc: np.ufunc, plus: np.ndarray | None = None) -> int:
    """``ufunc`` (minimum or maximum) over ``values[rows]`` (``+ plus[rows]``; not empty),
    :data:`_CHUNK` rows at a time."""
    def part(r: np.ndarray) -> np.ndarray:
        return values[r] if plus is None else np.add(values[r], plus[r], dtype=np.int64)
    return int(ufunc.reduce([ufunc.reduce(part(rows[a:a + _CHUNK])) for a in range(0, len(rows), _CHUNK)]))


def _thread_ranks(a_tid: np.ndarray | Coded, rows: np.ndarray, small: type
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The launching threads of calls ``rows``: (thread ids ascending, each row's rank among them,
    the positions in ``rows`` of the calls with a thread, None for all).  A coded column whose
    values ascend (:func:`nsighttk.encoding.few_values`) gives its codes as the ranks: one byte a
    row gathered, no ids."""
    if isinstance(a_tid, Coded):
        values = widen(a_tid.values)
        if len(values) and (values[1:] > values[:-1]).all():
            codes = a_tid.codes[rows]
            null = values == INT_NULL
            keep = np.flatnonzero(~null[codes]) if null.any() else None
            if keep is not None:
                codes = codes[keep]
            return values, codes, keep  # (the codes themselves: one byte a rank)
    tid = widen(decoded(a_tid)[rows])
    known = tid != INT_NULL
    keep = None if known.all() else np.flatnonzero(known)
    if keep is not None:
        tid = tid[keep]
    del known
    tids, rank = _ranks(tid, small)
    return tids, rank, keep


def _thread_pos(tids: np.ndarray, r_tid: np.ndarray | Coded, a: int) -> tuple[np.ndarray, np.ndarray]:
    """The threads of ranges ``a`` to ``a + _CHUNK`` (int64) and the rank of each among ``tids``
    (the nearest one where it is not there)."""
    t = widen(r_tid.values)[r_tid.codes[a:a + _CHUNK]] if isinstance(r_tid, Coded) else widen(r_tid[a:a + _CHUNK])
    return t, np.minimum(np.searchsorted(tids, t), len(tids) - 1)


def _searched(keys: np.ndarray, tids: np.ndarray, span: int, r_tid: np.ndarray | Coded, times: np.ndarray,
              lo_t: int, side: Literal["left", "right"], small: type) -> np.ndarray:
    """Per range, where its thread's (rank * span) plus its time (``times``, less ``lo_t``) goes
    in ``keys`` (:func:`_keys`), a chunk of ranges at a time."""
    out: np.ndarray = np.empty(len(times), dtype=small)

    def search(a: int, b: int) -> None:
        _, pos = _thread_pos(tids, r_tid, a)
        out[a:b] = np.searchsorted(keys, pos * span + (times[a:b] - lo_t), side=side)

    chunked.each(search, len(times), _CHUNK)
    return out


def range_op_slices(r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray | Coded, a_start: np.ndarray,
                    a_end: np.ndarray | None, a_tid: np.ndarray | Coded, call: np.ndarray,
                    a_dur: np.ndarray | None = None) -> OpSlices | None:
    """The operations each range holds, as slices (see :func:`range_op_spans` for the arguments;
    here the calls' ends may be given as their durations ``a_dur``, with ``a_end`` None, where
    every end is start plus duration; their threads, and the ranges', may be coded columns).

    Where the calls on each thread do not overlap (calls sorted by start are then sorted by end
    too), the calls a range contains are one slice of them in (thread, start) order, so each range
    is two binary searches: no (range, operation) pairs, whose number is the operations times the
    nesting depth.  None where calls on a thread overlap."""
    assert a_end is not None or a_dur is not None
    n = len(r_start)
    small = np.int32 if max(len(call), len(a_start)) < 2**31 else np.int64
    launched = call >= 0
    # None: every operation, in order (the usual case: no positions made until they are sorted)
    ops: np.ndarray | None = None if launched.all() else np.flatnonzero(launched).astype(small)
    del launched
    empty = OpSlices(n, np.zeros(n, dtype=small), np.empty(0, dtype=small), np.empty(0, dtype=np.int64),
                     np.empty(0, dtype=np.int64))
    if not len(call) or (ops is not None and not len(ops)) or not n:
        return empty
    rows = call if ops is None else call[ops]
    # Thread ranks (ascending thread ids) of the calls, then a (rank, start) key per operation.
    tids, rank, known = _thread_ranks(a_tid, rows, small)
    if known is not None:
        ops, rows = known.astype(small) if ops is None else ops[known], rows[known]  # (known: positions)
        if not len(ops):
            return empty
    del known
    ends = a_start if a_end is None else a_end
    lo_t = min(_gathered(a_start, rows, np.minimum), int(r_start.min()))
    hi_t = max(_gathered(ends, rows, np.maximum, a_dur), int(r_end.max()))
    span = hi_t - lo_t + 1
    if (len(tids) + 1) * span >= 2**62:
        return None
    key = _keys(rank, span, a_start, rows, lo_t)
    if len(key) > 1 and not (key[1:] >= key[:-1]).all():  # (one thread, calls in time order: as they are)
        order = stable_argsort(key)  # (int32 positions, sorted a range of keys at a time)
        del key  # (made again in the new order: no sorted copy beside the unsorted one)
        ops = order.astype(small, copy=False) if ops is None else ops[order]
        rows, rank = rows[order], rank[order]
        del order
        key = _keys(rank, span, a_start, rows, lo_t)
    # Each range's slice: two binary searches, a chunk of ranges at a time (their temporaries: a
    # chunk's), the start keys' done and let go before the end keys are made (10M calls: one 80 MB
    # key array at a time); a range on no calling thread gets an empty one.
    lo = _searched(key, tids, span, r_tid, r_start, lo_t, "left", small)
    del key
    # End keys ascend too where calls on a thread do not overlap.
    k_end = _keys(rank, span, ends, rows, lo_t, a_dur)
    del rank, rows
    if len(k_end) > 1 and not (k_end[1:] >= k_end[:-1]).all():
        return None
    hi = _searched(k_end, tids, span, r_tid, r_end, lo_t, "right", small)
    del k_end
    for a in range(0, n, _CHUNK):
        t, pos = _thread_pos(tids, r_tid, a)
        none = (tids[pos] != t) | (t == INT_NULL)
        hi[a:a + _CHUNK][none] = lo[a:a + _CHUNK][none]
    count = np.subtract(hi, lo, dtype=small)  # (positions: no wrap; 32 bits where they fit)
    np.maximum(count, 0, out=count)
    some = np.flatnonzero(count)
    seg = some[np.argsort(lo[some], kind="stable")].astype(small)
    bounds = np.empty(2 * len(seg), dtype=small)  # (positions in ops: 32 bits where they fit)
    bounds[0::2] = lo[seg]
    bounds[1::2] = hi[seg]
    return OpSlices(n, count, np.arange(len(call), dtype=small) if ops is None else ops, seg, bounds)


# PyTorch's emit_nvtx (nsys --pytorch=autograd-nvtx) names each op range
# "aten::mm, seq = 0, op_id = 13" (and ", sizes = [[...]]" with shapes): one name per call.
_AUTOGRAD_SUFFIX = r",\s*(?:seq|op_id|sizes|input_op_ids)\s*=.*$"


def autograd_op_name(range_name: str) -> str:
    """``"aten::mm, seq = 0, op_id = 13"`` -> ``"aten::mm"``; other names unchanged."""
    import re

    return re.sub(_AUTOGRAD_SUFFIX, "", range_name)


#: rows of the projection looked at a time by :func:`autograd_ops` (a capture with a name per op call
#: has millions: their op names, masks and copies made for all at once held 400 MB more at 3.2M names)
_OPS_ROWS = 1 << 17


def autograd_ops(nvtx_gpu_proj: pd.DataFrame) -> pd.DataFrame:
    """``nvtx_gpu_proj_sum`` rows of autograd op ranges grouped by op (calls are numbered by
    emit_nvtx, so nsys lists each separately).  Columns: ``op, calls, cpu_total_ns,
    gpu_proj_total_ns, gpu_ops``, by GPU time; empty when the capture has no such ranges.  The
    rows are summed :data:`_OPS_ROWS` at a time, then the sums (integers: the same totals, the ops
    in order of first appearance)."""
    import pandas as pd

    cols = ["op", "calls", "cpu_total_ns", "gpu_proj_total_ns", "gpu_ops"]
    sums = {"calls": "Range Instances", "cpu_total_ns": "Total Range Time (ns)",
            "gpu_proj_total_ns": "Total Proj Time (ns)", "gpu_ops": "Total GPU Ops"}
    parts = []
    for lo in range(0, len(nvtx_gpu_proj), _OPS_ROWS):
        rows = nvtx_gpu_proj.iloc[lo:lo + _OPS_ROWS]
        names = rows["Range"].astype(str).str.lstrip(":")
        is_op = names.str.contains(_AUTOGRAD_SUFFIX, regex=True).to_numpy(dtype=bool)
        if is_op.any():
            ops = rows[is_op].assign(op=names[is_op].map(autograd_op_name).to_numpy())
            parts.append(ops.groupby("op", sort=False).agg(**{k: (v, "sum") for k, v in sums.items()}))
    if not parts:
        return pd.DataFrame(columns=cols)
    g = (parts[0] if len(parts) == 1 else pd.concat(parts).groupby(level=0, sort=False).sum()).reset_index()
    return g.sort_values(["gpu_proj_total_ns", "cpu_total_ns"], ascending=False, ignore_index=True)[cols]
