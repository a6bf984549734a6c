"""The per-operation work of :mod:`nsighttk.analysis.iterations`, on columns: which GPU operations
and CUDA calls belong to the process, the call that launched each operation, GPU busy time and
gaps per iteration, synchronisation time, medians and the longest kernels per iteration.  Only
the columns needed are read (an nsys export is never loaded whole)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nsighttk import chunked
from nsighttk.analysis.groupstats import factorize_sorted, group_sums
from nsighttk.analysis.intervals import GPU_TABLES, gpu_busy_blocks, merge_intervals, union_blocks
from nsighttk.analysis.nsys_report_base import kernel_name_codes
from nsighttk.profile import INT_NULL, Coded, Profile, by_value, decoded, widen
from nsighttk.subset import RowMask

#: Host-blocking synchronisation calls (``_vNNNN`` suffixes of nsys' names are ignored).
SYNC_APIS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cuCtxSynchronize",
             "cuStreamSynchronize", "cuEventSynchronize")

_TOP_KERNELS = 3
_KERNEL, _MEMCPY, _MEMSET = 0, 1, 2
_TOP_GAPS = 3


def _nvtx(p: Profile) -> pd.DataFrame:
    """The NVTX columns the iterations are found from (only these are read from an export)."""
    if p.loaded("nvtx") or p.source is None:
        return p.nvtx
    return p.table("nvtx", ["start_ns", "end_ns", "duration_ns", "name", "domain", "depth", "global_tid", "tid",
                            "pid"])


def _own(p: Profile, table: str, pid: int | None) -> np.ndarray | None:
    """Rows of ``table`` (kernels, memcpy, memset) of process ``pid``: None for all.  nsys fills
    global_pid (and pid = the process); Kineto's pid is the device."""
    if pid is None:
        return None
    if p.source is not None:  # an export: the process is in global_pid (one column read, not two)
        mine = by_value(p.column(table, "global_pid"), lambda g: (g == INT_NULL) | (((g >> 24) & 0xFFFFFF) == pid))
    else:
        a = p.arrays(table, ["pid", "global_pid"])
        mine = (a["global_pid"] == INT_NULL) | (a["pid"] == INT_NULL) | (a["pid"] == pid)
    return None if mine.all() else mine  # one process (the usual capture): no copies of whole columns


def _own_api(p: Profile, pid: int | None) -> np.ndarray | None:
    """Rows of the CUDA calls of process ``pid`` (None: all of them)."""
    if pid is None or not p.count("api"):
        return None
    if p.source is not None:  # an export: the process is in global_tid
        g = p.column("api", "global_tid")
        known = by_value(g, lambda v: v != INT_NULL)
        mine = known & by_value(g, lambda v: ((v >> 24) & 0xFFFFFF) == pid) if known.any() else None
    else:
        a = p.arrays("api", ["pid"])["pid"]
        mine = None if (a == INT_NULL).all() else a == pid
    return None if mine is None or mine.all() else mine  # all of them: no copies of whole columns


def _op_columns(p: Profile, table: str, pid: int | None) -> tuple[dict[str, np.ndarray], np.ndarray | None, int]:
    """The columns iterations read of ``table`` (kernels, memcpy or memset) for the process: start_ns,
    end_ns (int64), duration_ns (as kept, maybe narrow; 0 where unknown), correlation_id (as kept:
    maybe narrow, the type's minimum where unknown) and bytes (int64, 0 where unknown; memory
    operations only); the rows of the table they are (None: all of them, and the kept columns
    themselves: no copies); and the table's rows as read (its count may include rows dropped)."""
    a = p.arrays(table, ["start_ns", "end_ns", "duration_ns", "correlation_id"] +
                 (["bytes"] if table != "kernels" else []), narrow=True)
    own = _own(p, table, pid)
    out = {c: widen(v) if c in ("start_ns", "end_ns") else v for c, v in a.items()}
    d = out["duration_ns"]
    missing = d == np.iinfo(d.dtype).min  # (a table given by hand: a duration it lacks counts as 0)
    if missing.any():
        out["duration_ns"] = np.where(missing, 0, widen(d))
    del missing
    if "bytes" in out:
        b = widen(out["bytes"])
        out["bytes"] = np.where(b == INT_NULL, 0, b)
    n = len(out["start_ns"])
    if own is None:
        return out, None, n
    return {c: v[own] for c, v in out.items()}, np.flatnonzero(own), n


#: Correlation ids (a counter per call in a capture) within this many times the calls' number of
#: one another are looked up in a table by id: no sort and no binary search (10M ops: 0.5 s less).
_DENSE = 4

#: Operations attributed to their iteration at a time (:func:`_attribute`): the temporaries of a
#: 10M-kernel capture are a few chunks' worth, not five 80 MB arrays.
_CHUNK = 1 << 20


class _Calls:
    """The CUDA calls among ``api_rows`` by correlation id: where the call that launched an
    operation started (the first call with the operation's id), looked up for any ids."""

    def __init__(self, p: Profile, api_rows: np.ndarray | None) -> None:
        self.start = np.empty(0, dtype=np.int64)
        self.first: np.ndarray | None = None  # dense ids: the first call (row) with id lo + i
        self.order: np.ndarray | None = None  # else: the calls by id, when not in id order
        self.lo = self.hi = 0
        if not p.count("api"):
            return
        a = p.arrays("api", ["correlation_id", "start_ns"], narrow=True)  # ids as kept (32 bits): no int64 copy
        a_corr, a_start = a["correlation_id"], widen(a["start_ns"])
        if api_rows is not None:
            a_corr, a_start = a_corr[api_rows], a_start[api_rows]
        keep = a_corr != np.iinfo(a_corr.dtype).min  # INT_NULL, or the narrow type's missing value
        if not keep.all():
            a_corr, a_start = a_corr[keep], a_start[keep]
        del keep
        self._build(a_corr, a_start)

    @classmethod
    def of(cls, corr: np.ndarray, start: np.ndarray) -> _Calls:
        """The calls of these ids (none missing) and starts (int64), in call order."""
        calls = cls.__new__(cls)
        calls.start, calls.first, calls.order, calls.lo, calls.hi = np.empty(0, dtype=np.int64), None, None, 0, 0
        calls._build(corr, start)
        return calls

    def _build(self, a_corr: np.ndarray, a_start: np.ndarray) -> None:
        self.start = a_start
        if not len(a_corr):
            return
        self.lo, self.hi = int(a_corr.min()), int(a_corr.max())
        if self.hi - self.lo < _DENSE * len(a_corr) + 1024 and len(a_corr) < 2**31:  # a table: no sort or search
            self.first = np.full(self.hi - self.lo + 1, -1, dtype=np.int32)
            self.first[np.subtract(a_corr[::-1], self.lo, dtype=np.int64)] = \
                np.arange(len(a_corr) - 1, -1, -1, dtype=np.int32)
            return
        if len(a_corr) > 1 and not (a_corr[1:] >= a_corr[:-1]).all():  # (in call order they usually are)
            self.order = np.argsort(a_corr, kind="stable")  # the first call per correlation id comes first
            a_corr = a_corr[self.order]
        self.corr = a_corr

    def launched(self, corr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each id of ``corr``: whether a call has it, and that call's start (int64; anything
        where none)."""
        launch = np.empty(len(corr), dtype=np.int64)
        if not len(self.start) or not len(corr):
            return launch, np.zeros(len(corr), dtype=bool)
        unknown = corr == np.iinfo(corr.dtype).min
        if self.first is not None:
            at = np.subtract(corr, self.lo, dtype=np.int64)
            known = (at >= 0) & (at <= self.hi - self.lo) & ~unknown
            row = np.full(len(corr), -1, dtype=np.int32)
            row[known] = self.first[at[known]]
            del at, known
            hit = row >= 0
            launch[hit] = self.start[row[hit]]
            return launch, hit
        pos = np.searchsorted(self.corr, corr)  # (the leftmost equal id: the first call with it)
        np.minimum(pos, len(self.corr) - 1, out=pos)
        hit = self.corr[pos] == corr
        hit &= ~unknown
        rows = pos[hit]
        launch[hit] = self.start[rows if self.order is None else self.order[rows]]
        return launch, hit


def _attribute(start: np.ndarray, corr: np.ndarray, calls: _Calls, w_start: np.ndarray, w_end: np.ndarray,
               delays: bool = False) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """The window (iteration) of each operation by the time of the call that launched it (its own
    start where none did), -1 outside them all, as int32; with ``delays``, also the iteration and
    the delay from launch to start (float64) of the operations inside one that started at or after
    their launch.  :data:`_CHUNK` operations at a time."""
    it_of = np.empty(len(start), dtype=np.int32)
    d_it: list[np.ndarray] = []
    d_ns: list[np.ndarray] = []

    def chunk(a: int, b: int) -> tuple[np.ndarray, np.ndarray] | None:  # (on the chunked threads)
        s = start[a:b]
        launch, hit = calls.launched(corr[a:b])
        t = np.where(hit, launch, s)
        it = _window_of(t, w_start, w_end)
        it_of[a:b] = it
        if not delays:
            return None
        ok = hit & (it >= 0) & (s >= launch)  # (a kernel that starts before its call, or at no known
        return it[ok], (s[ok] - launch[ok]).astype(np.float64)  # time, says nothing; exact, then a float)

    for got in chunked.ordered(chunk, len(start), _CHUNK):  # (the delays kept in the operations' order)
        if got is not None:
            d_it.append(got[0])
            d_ns.append(got[1])
    if not delays:
        return it_of, None
    if not d_it:
        return it_of, (np.empty(0, dtype=np.intp), np.empty(0, dtype=np.float64))
    return it_of, (np.concatenate(d_it), np.concatenate(d_ns))


def _window_of(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the window [starts[i], ends[i]) holding each time (windows sorted, disjoint), or -1."""
    if not len(starts):
        return np.full(len(t), -1, dtype=np.intp)
    i = np.searchsorted(starts, t, side="right")
    i -= 1
    inside = t < ends[np.maximum(i, 0)]  # (False for NaN)
    inside &= i >= 0
    i[~inside] = -1
    return i


def _in_windows(t: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each time lies in one of the windows (sorted, disjoint), :data:`_CHUNK` at a time."""
    out = np.empty(len(t), dtype=bool)

    def mark(a: int, b: int) -> None:
        out[a:b] = _window_of(t[a:b], starts, ends) >= 0

    chunked.each(mark, len(t), _CHUNK)
    return out


def _total(it_of: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """The sum of ``values`` per iteration 0..n-1 (``it_of``: each value's): :func:`group_sums`."""
    return group_sums(it_of, values, n)


def _busy_and_gaps(blocks: tuple[np.ndarray, np.ndarray], w_start: np.ndarray, w_end: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Per window (sorted, disjoint): busy ns (the blocks clipped to it), its largest gap, and its
    longest gaps (iteration, start_ns, duration_ns), vectorized over windows."""
    bs, be = blocks
    n, nb = len(w_start), len(bs)
    if nb == 0:
        whole = pd.DataFrame({"iteration": np.arange(n), "start_ns": w_start, "duration_ns": w_end - w_start})
        return np.zeros(n, dtype="int64"), w_end - w_start, whole[whole["duration_ns"] > 0]
    before = np.r_[0, np.cumsum(be - bs)[:-1]]  # union length of the blocks before each block

    def covered(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(bs, t, side="right") - 1
        kk = np.maximum(k, 0)
        return np.where(k >= 0, before[kk] + np.minimum(t, be[kk]) - bs[kk], 0)

    busy = covered(w_end) - covered(w_start)
    lo = np.searchsorted(be, w_start, side="right")  # first block ending after the window starts
    hi = np.searchsorted(bs, w_end, side="left")  # blocks [lo, hi) overlap the window
    has = hi > lo
    lead_len = np.where(has, np.maximum(bs[np.minimum(lo, nb - 1)], w_start) - w_start, w_end - w_start)
    tail_start = np.minimum(be[np.maximum(hi - 1, 0)], w_end)
    tail_len = np.where(has, w_end - tail_start, 0)
    # gaps between consecutive blocks lying strictly inside one window
    g_start, g_end = be[:-1], bs[1:]
    i = np.searchsorted(w_start, g_start, side="right") - 1
    ii = np.maximum(i, 0)
    inside = (i >= 0) & (g_start > w_start[ii]) & (g_end < w_end[ii])
    gaps = pd.DataFrame({
        "iteration": np.concatenate([np.arange(n), ii[inside], np.arange(n)]),
        "start_ns": np.concatenate([w_start, g_start[inside], tail_start]),
        "duration_ns": np.concatenate([lead_len, (g_end - g_start)[inside], tail_len]),
    })
    gaps = gaps[gaps["duration_ns"] > 0]
    largest = gaps.groupby("iteration")["duration_ns"].max().reindex(range(n), fill_value=0).to_numpy(dtype="int64")
    top = (gaps.assign(neg=-gaps["duration_ns"]).sort_values(["iteration", "neg", "start_ns"], kind="mergesort")
           .groupby("iteration", sort=False).head(_TOP_GAPS).drop(columns="neg").reset_index(drop=True))
    return busy.astype("int64"), largest, top


def _sync_calls(p: Profile, api_rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(start_ns, end_ns) of the synchronizing CUDA calls among ``api_rows`` (None: all)."""
    if not p.count("api"):
        return np.empty(0, dtype="int64"), np.empty(0, dtype="int64")
    def syncs(names: np.ndarray) -> np.ndarray:
        return np.array([re.sub(r"_v\d+$", "", str(u)) in SYNC_APIS for u in names], dtype=bool)

    if p.loaded("api") or p.source is None:
        codes, uniques = factorize_sorted(p.arrays("api", ["name"])["name"])
        sel = syncs(uniques)[codes] if len(codes) else np.zeros(0, dtype=bool)
    else:  # by string id: one name lookup per distinct call (the kept codes' values, where coded)
        ids = p.column("api", "name_id", narrow=True)
        if isinstance(ids, Coded) or ids.dtype.itemsize <= 2:  # (looked up per distinct id: no codes of them all)
            sel = by_value(ids, lambda v: syncs(p.names("api", widen(v))))
        else:
            codes, uniq = factorize_sorted(ids)
            sel = syncs(p.names("api", widen(uniq)))[codes] if len(codes) else np.zeros(0, dtype=bool)
    if api_rows is not None:
        sel &= api_rows
    if p.source is not None and not p.loaded("api") and not (
            p.kept("api", "start_ns") and (p.kept("api", "end_ns") or p.summed("api", "end_ns"))):
        # (times not kept, as when analyze's budget is full: these few calls' read a chunk at a
        # time, not every call's again whole: 130M calls, 2 GB at the step's peak)
        starts, ends, at = [], [], 0
        for part in p.parts("api", ["start_ns", "end_ns"]):
            mine = sel[at:at + len(part["start_ns"])]
            at += len(mine)
            starts.append(widen(decoded(part["start_ns"]))[mine])
            ends.append(widen(decoded(part["end_ns"]))[mine])
        return np.concatenate(starts), np.concatenate(ends)
    if p.summed("api", "end_ns"):  # (the ends of these calls only, not of all of them)
        a = p.arrays("api", ["start_ns", "duration_ns"], narrow=True)
        start = widen(a["start_ns"])[sel]
        return start, start + a["duration_ns"][sel]
    a = p.arrays("api", ["start_ns", "end_ns"])
    return a["start_ns"][sel], a["end_ns"][sel]


def _sync_ns(calls: tuple[np.ndarray, np.ndarray], w_start: np.ndarray, w_end: np.ndarray) -> np.ndarray:
    out = np.zeros(len(w_start), dtype="int64")
    a_start, a_end = calls
    if not len(a_start) or len(w_start) == 0:
        return out
    first = np.searchsorted(w_end, a_start, side="right")  # first window ending after the call starts
    last = np.searchsorted(w_start, a_end, side="left") - 1  # last window starting before it ends
    one = (first == last) & (first < len(w_start))
    j = first[one]
    np.add.at(out, j, np.minimum(a_end[one], w_end[j]) - np.maximum(a_start[one], w_start[j]))
    for k in np.flatnonzero(last > first):  # a call across window edges: clipped to each (rare)
        for j in range(int(first[k]), int(last[k]) + 1):
            out[j] += max(0, min(int(a_end[k]), int(w_end[j])) - max(int(a_start[k]), int(w_start[j])))
    return out


def _medians(it_of: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Median of the (non-NaN) ``values`` per iteration 0..n-1; NaN where none."""
    out = np.full(n, np.nan)
    ok = ~np.isnan(values)
    it_of, values = it_of[ok], values[ok]
    if not len(values):
        return out
    order = np.lexsort((values, it_of))
    k, v = it_of[order], values[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    counts = np.diff(np.r_[starts, len(k)])
    out[k[starts]] = (v[starts + (counts - 1) // 2] + v[starts + counts // 2]) / 2
    return out


def _top_kernels(p: Profile, it_of: np.ndarray, name: np.ndarray, duration: np.ndarray,
                 rows: np.ndarray) -> pd.DataFrame:
    """The longest kernels (by total time) of each iteration: iteration, name, short_name, count,
    total_ns; ties in the order the kernels first ran."""
    if not len(it_of):
        return pd.DataFrame({c: [] for c in ("iteration", "name", "short_name", "count", "total_ns")})
    _, names = kernel_name_codes(p)
    key = it_of.astype("int64") * max(len(names), 1) + name
    uniq, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    wraps = len(duration) and float(np.abs(duration).max()) * len(duration) >= 2.0**63
    totals = np.zeros(len(uniq), dtype="float64" if wraps else "int64")  # (float: never a wrapped negative)
    np.add.at(totals, inverse.ravel(), duration)
    g_it, g_name, first, counts, totals = top_ranked(uniq, rows[first], counts, totals, len(names))
    coded = p.coded("kernels", "short_name")  # (a few rows of it: not the whole column decoded)
    short = coded.take(first).decode() if coded is not None else \
        p.arrays("kernels", ["short_name"])["short_name"][first]
    return top_frame(g_it, names[g_name], counts, totals, short)


def top_ranked(key: np.ndarray, first: np.ndarray, counts: np.ndarray, totals: np.ndarray, n_names: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Of (iteration, name) groups (``key``: iteration x ``n_names`` + name code; ``first``: the
    row of each one's first kernel), the :data:`_TOP_KERNELS` of most time in each iteration, by
    iteration, longest first, ties by first row: iteration, name code, first row, count, total."""
    g_it, g_name = key // max(n_names, 1), key % max(n_names, 1)
    order = np.lexsort((first, -totals, g_it))
    g_it, g_name, first, counts, totals = g_it[order], g_name[order], first[order], counts[order], totals[order]
    rank = np.arange(len(g_it)) - np.searchsorted(g_it, g_it, side="left")
    keep = rank < _TOP_KERNELS
    return g_it[keep], g_name[keep], first[keep], counts[keep], totals[keep]


def top_frame(g_it: np.ndarray, names: np.ndarray, counts: np.ndarray, totals: np.ndarray, short: np.ndarray
              ) -> pd.DataFrame:
    """The iterations' top kernels as :attr:`Iterations.top_kernels` holds them."""
    return pd.DataFrame({"iteration": g_it, "name": names.astype(object), "short_name": short.astype(object),
                         "count": counts, "total_ns": totals})


def _remember_steady_ops(p: Profile, attributed: dict[str, tuple[np.ndarray, np.ndarray | None, int]],
                         steady: np.ndarray, w_start: np.ndarray, w_end: np.ndarray, pid: int | None) -> None:
    """Keep with ``p`` which GPU operations :func:`nsighttk.analysis.iterations.iterations`
    attributed to a steady iteration (a byte an operation), for
    :func:`nsighttk.analysis.iterations.steady_profile`: the same attribution, not made again (10M
    kernels: about 1 s).  Keyed as that asks: the steady windows and process."""
    in_steady = np.r_[steady, False]  # (the last one: -1, outside every iteration)
    keep: dict[str, np.ndarray] = {}
    for t, (it_of, rows, n_rows) in attributed.items():
        mine = in_steady[it_of]
        if rows is None:
            keep[t] = mine
        else:
            keep[t] = np.zeros(n_rows, dtype=bool)  # (the rows as read: a damaged row dropped is not one)
            keep[t][rows] = mine
    remember_steady_masks(p, keep, steady, w_start, w_end, pid)


def remember_steady_masks(p: Profile, keep: Mapping[str, np.ndarray | RowMask], steady: np.ndarray, w_start: np.ndarray,
                          w_end: np.ndarray, pid: int | None) -> None:
    """Keep with ``p`` the rows of each table of operations launched in a steady iteration, keyed
    as :func:`nsighttk.analysis.iterations.steady_profile` asks (:func:`_remember_steady_ops`)."""
    asked = (w_start[steady].astype("int64").tobytes(), w_end[steady].astype("int64").tobytes(), pid)
    p.cache[("steady_ops",)] = (asked, keep)


def _steady_keep(p: Profile, w_start: np.ndarray, w_end: np.ndarray, pid: int | None,
                 asked: tuple[bytes, bytes, int | None] | None = None) -> dict[str, np.ndarray]:
    """Per table, the rows of :func:`nsighttk.analysis.iterations.steady_profile` (a boolean mask);
    the GPU operations' as the iterations attributed them where they kept them for these windows
    (``asked``: :func:`_remember_steady_ops`), else attributed here."""
    api_rows = _own_api(p, pid)
    known = p.cache.get(("steady_ops",))
    reused = asked is not None and isinstance(known, tuple) and known[0] == asked
    keep: dict[str, np.ndarray] = {}
    if reused:  # (taken: the steady state's rows are kept as steady_keep from now on)
        keep.update(p.cache.pop(("steady_ops",))[1])
    calls = None
    for t in ("kernels", "memcpy", "memset"):
        if t in keep:
            continue
        if reused and not p.count(t):  # (a table with no rows: iterations attributed nothing)
            keep[t] = np.zeros(0, dtype=bool)
            continue
        calls = calls or _Calls(p, api_rows)
        a = p.arrays(t, ["correlation_id", "start_ns"], narrow=True)
        rows = _attribute(widen(a["start_ns"]), a["correlation_id"], calls, w_start, w_end)[0] >= 0
        own = _own(p, t, pid)
        keep[t] = rows if own is None else rows & own
    del calls
    api_keep = _in_windows(p.arrays("api", ["start_ns"])["start_ns"], w_start, w_end)
    keep["api"] = api_keep if api_rows is None else api_keep & api_rows
    for t in ("nvtx", "ops"):
        keep[t] = _in_windows(p.arrays(t, ["start_ns"])["start_ns"], w_start, w_end)
    return keep


@dataclass
class Measured:
    """What the GPU operations did per iteration (:func:`_measured`, or out of core
    :func:`nsighttk.analysis.iteration_spilled.measure`), as ``iterations`` names it."""

    counts: dict[int, np.ndarray] = field(default_factory=dict)
    totals: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)
    gpu_start: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    gpu_end: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    launch_overhead: np.ndarray = field(default_factory=lambda: np.empty(0))
    top: pd.DataFrame = field(default_factory=pd.DataFrame)
    sync_ns: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    ops: int = 0
    in_windows: int = 0
    #: per table of operations, which rows were launched in a steady iteration (a byte a row; out of
    #: core a bit)
    steady_ops: dict[str, np.ndarray | RowMask] = field(default_factory=dict)


def _measured(p: Profile, pid: int | None, w_start: np.ndarray, w_end: np.ndarray, steady: np.ndarray
              ) -> tuple[Measured, tuple[np.ndarray, np.ndarray, pd.DataFrame]]:
    """What the GPU operations of process ``pid`` (None: all) did in each window (sorted,
    disjoint): the operations attributed to the window where their launch started, the busy time
    and gaps; which operations fall in a ``steady`` window is kept with ``p``."""
    # GPU busy time and gaps first, table by table, before the calls' look-up table is made
    # (10M kernels: their blocks and that table are never held together)
    if all(_own(p, t, pid) is None for t in GPU_TABLES if p.count(t)):  # (every op: the headline's merge)
        union = gpu_busy_blocks(p, take=True)
    else:
        blocks: list[tuple[np.ndarray, np.ndarray]] = []
        for t in GPU_TABLES:
            if p.count(t):
                a, _, _ = _op_columns(p, t, pid)
                blocks.append(merge_intervals(a["start_ns"], a["end_ns"]))
                del a
        union = union_blocks(blocks)
        del blocks
    busy, largest, gaps = _busy_and_gaps(union, w_start, w_end)
    del union
    api_rows = _own_api(p, pid)
    calls = _Calls(p, api_rows)
    n = len(w_start)
    counts: dict[int, np.ndarray] = {}
    totals: dict[tuple[int, str], np.ndarray] = {}
    gpu_start = np.full(n, np.iinfo(np.int64).max, dtype="int64")
    gpu_end = np.full(n, np.iinfo(np.int64).min, dtype="int64")
    launch_overhead = np.full(n, np.nan)
    top = _top_kernels(p, *(np.empty(0, dtype=np.int64),) * 4)
    ops = in_windows = 0
    attributed: dict[str, tuple[np.ndarray, np.ndarray | None, int]] = {}  # (each op's iteration, its rows, all)
    for kind, t in ((_KERNEL, "kernels"), (_MEMCPY, "memcpy"), (_MEMSET, "memset")):  # table by table: no copies
        if not p.count(t):
            continue
        a, rows, n_rows = _op_columns(p, t, pid)
        it_of, delays = _attribute(a["start_ns"], a["correlation_id"], calls, w_start, w_end, kind == _KERNEL)
        ops += len(it_of)
        mine = it_of >= 0
        every = bool(mine.all())  # (every operation in an iteration: no gathered copies of its columns)

        def of_mine(v: np.ndarray, mine: np.ndarray = mine, every: bool = every) -> np.ndarray:
            return v if every else v[mine]

        it_mine = of_mine(it_of)
        in_windows += len(it_mine)
        counts[kind] = np.bincount(it_mine, minlength=n).astype("int64")
        for col in ("duration_ns", "bytes"):
            if col in a:
                totals[kind, col] = _total(it_mine, of_mine(a[col]), n)
        np.minimum.at(gpu_start, it_mine, of_mine(a["start_ns"]))
        np.maximum.at(gpu_end, it_mine, of_mine(a["end_ns"]))
        if delays is not None:
            launch_overhead = _medians(*delays, n)
            del delays
        if kind == _KERNEL:
            name = kernel_name_codes(p)[0]
            k_rows = np.flatnonzero(mine) if rows is None else rows[mine]
            top = _top_kernels(p, it_mine, name[k_rows].astype("int32", copy=False), of_mine(a["duration_ns"]),
                               k_rows)
        attributed[t] = (it_of, rows, n_rows)
        del a, rows, it_of, mine, it_mine
    _remember_steady_ops(p, attributed, steady, w_start, w_end, pid)
    del attributed
    return Measured(
        counts=counts, totals=totals, gpu_start=gpu_start, gpu_end=gpu_end, launch_overhead=launch_overhead,
        top=top, sync_ns=_sync_ns(_sync_calls(p, api_rows), w_start, w_end), ops=ops,
        in_windows=in_windows), (busy, largest, gaps)
