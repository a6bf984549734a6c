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

from typing import TYPE_CHECKING

import numpy as np

from nsighttk.analysis.groupstats import factorize_sorted
from nsighttk.load.nvtx_nesting import depth_from_parents, parents_of
from nsighttk.profile import INT_NULL, require_columns

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
                      nvtx["global_tid"].fillna(-1).to_numpy(dtype="int64"), nvtx["range_id"].to_numpy(dtype="int64"))



def nesting_depth(nvtx: pd.DataFrame, max_ts: int | None = None) -> pd.Series:
    """Nesting level of each range on its thread (0 = outermost)."""
    import pandas as pd

    return pd.Series(depth_from_parents(range_parents(nvtx, max_ts)), index=nvtx.index)


def gpu_ops(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """GPU operations (kernels, then memcpys, then memsets: each a dict of start_ns, end_ns,
    correlation_id, global_pid arrays) as one set of arrays: start_ns, end_ns, correlation_id,
    proc (process key); int64 with INT_NULL where unknown."""
    def cat(col: str) -> np.ndarray:
        return np.concatenate([d[col] for d in parts]) if parts else np.empty(0, dtype="int64")
    gpid = cat("global_pid")
    return {"start_ns": cat("start_ns"), "end_ns": cat("end_ns"), "correlation_id": cat("correlation_id"),
            "proc": np.where(gpid == INT_NULL, INT_NULL, gpid >> 24)}


def launches(ops: dict[str, np.ndarray], api: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Join GPU ops to the CUDA API call that launched them (same correlation id and process).

    ``api`` holds start_ns, end_ns, correlation_id, global_tid.  Returns ``ops`` plus
    ``api_start_ns``, ``api_end_ns``, ``global_tid`` (INT_NULL where no call matched).  Looked up
    through one sorted (process, correlation id) key, so memory stays at a few arrays."""
    n = len(ops["start_ns"])
    api_start = np.full(n, INT_NULL, dtype="int64")
    api_end = np.full(n, INT_NULL, dtype="int64")
    gtid = np.full(n, INT_NULL, dtype="int64")
    out = dict(ops)
    if n and len(api["start_ns"]):
        a_gtid = api["global_tid"]
        a_corr = api["correlation_id"]
        small = np.int32 if max(n, len(a_corr)) < 2**31 else np.int64  # row positions: half the memory
        a_rows = np.flatnonzero((a_gtid != INT_NULL) & (a_corr != INT_NULL)).astype(small)
        o_rows = np.flatnonzero((ops["proc"] != INT_NULL) & (ops["correlation_id"] != INT_NULL)).astype(small)
        a_proc, o_proc = a_gtid[a_rows] >> 24, ops["proc"][o_rows]
        if len(a_proc) and len(o_proc) and int(a_proc.min()) == int(a_proc.max()) == int(o_proc.min()) \
                == int(o_proc.max()):  # one process (the usual capture): the correlation id is the key
            a_key, o_key = a_corr[a_rows], ops["correlation_id"][o_rows]
        else:
            a_key, o_key = _proc_corr_keys([a_proc, o_proc], [a_corr[a_rows], ops["correlation_id"][o_rows]])
        del a_proc, o_proc
        if len(a_key) > 1 and not (a_key[1:] >= a_key[:-1]).all():  # (in call order they usually are)
            order = np.argsort(a_key, kind="stable")  # first call per key wins, as before
            a_key, a_rows = a_key[order], a_rows[order]
            del order
        first = np.r_[True, a_key[1:] != a_key[:-1]] if len(a_key) else np.zeros(0, dtype=bool)
        a_key, a_rows = a_key[first], a_rows[first]
        pos = np.searchsorted(a_key, o_key)
        pos_c = np.minimum(pos, max(len(a_key) - 1, 0))
        hit = (pos < len(a_key)) & (a_key[pos_c] == o_key) if len(a_key) else np.zeros(len(o_key), dtype=bool)
        rows = a_rows[pos_c[hit]]
        dst = o_rows[hit]
        api_start[dst] = api["start_ns"][rows]
        api_end[dst] = api["end_ns"][rows]
        gtid[dst] = a_gtid[rows]
    out["api_start_ns"] = api_start
    out["api_end_ns"] = api_end
    out["global_tid"] = gtid
    return out


def _proc_corr_keys(procs: list[np.ndarray], corrs: list[np.ndarray]) -> list[np.ndarray]:
    """One sortable int64 key per (process, correlation id) pair, in one key space for every
    pair of arrays given: bits side by side when they fit, else the pairs' lexicographic rank."""
    proc = np.concatenate(procs)
    corr = np.concatenate(corrs)
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
    ranks, _ = factorize_sorted(tid)
    lo, span = int(start.min()), int(start.max()) - int(start.min()) + 1
    if (int(ranks.max()) + 1) * span >= 2**62:
        return np.lexsort((start, tid))
    key = ranks * span
    key += start - lo
    return np.argsort(key, kind="stable")


def enclosing_ranges(r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray,
                     c_start: np.ndarray, c_end: np.ndarray, c_tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (range position, call position) where the range contains the whole call, same thread.

    Ranges: start, end (open ones closed), thread; calls: start, end, thread (INT_NULL: no call,
    never matched).  Positions are 0-based row positions in each set of arrays."""
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


def range_op_spans(r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray, c_start: np.ndarray,
                   c_end: np.ndarray, c_tid: np.ndarray, o_start: np.ndarray,
                   o_end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per range: the number of operations whose launching call it contains (same thread, as
    :func:`enclosing_ranges`), their first start and their last end (0 where there are none).

    One entry per operation: its call's start, end and thread (``c_*``, INT_NULL thread: no call)
    and its own start and end (``o_*``).  Where the calls on each thread do not overlap (calls
    sorted by start are then sorted by end too), the calls a range contains are one slice of them
    in (thread, start) order, so each range is two binary searches and its first start and last
    end are one segment reduction: no (range, operation) pairs, whose number is the operations
    times the nesting depth.  None where calls on a thread overlap (use the pairs then)."""
    n = len(r_start)
    count = np.zeros(n, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    last = np.zeros(n, dtype=np.int64)
    valid = np.flatnonzero(c_tid != INT_NULL)
    if not len(valid) or not n:
        return count, first, last
    order = valid[_thread_time_order(c_tid[valid], c_start[valid])]
    del valid
    tids, rank = np.unique(c_tid[order], return_inverse=True)
    lo_t = min(int(c_start[order].min()), int(r_start.min()))
    hi_t = max(int(c_end[order].max()), int(r_end.max()))
    span = hi_t - lo_t + 1
    if (len(tids) + 1) * span >= 2**62:
        return None
    # Keys (thread rank, time) side by side: start keys ascend; end keys too where calls do not overlap.
    k_start = rank * span
    k_end = k_start + (c_end[order] - lo_t)
    k_start += c_start[order] - lo_t
    del rank
    if len(k_end) > 1 and not (k_end[1:] >= k_end[:-1]).all():
        return None
    pos = np.searchsorted(tids, r_tid)
    pos_c = np.minimum(pos, len(tids) - 1)
    known = (tids[pos_c] == r_tid) & (r_tid != INT_NULL)
    base = pos_c * span
    lo = np.searchsorted(k_start, base + (r_start - lo_t), side="left")
    hi = np.searchsorted(k_end, base + (r_end - lo_t), side="right")
    del k_start, k_end, base, pos, pos_c
    count = np.where(known, np.maximum(hi - lo, 0), 0)
    some = np.flatnonzero(count)
    if not len(some):
        return count, first, last
    # Segments in ascending start position: the gaps between them, which reduceat also reduces, then
    # add up to at most the array once.
    seg = some[np.argsort(lo[some], kind="stable")]
    bounds = np.empty(2 * len(seg), dtype=np.int64)
    bounds[0::2] = lo[seg]
    bounds[1::2] = hi[seg]
    del lo, hi
    starts = np.append(o_start[order], 0)  # one spare value: a bound may be the end
    first[seg] = np.minimum.reduceat(starts, bounds)[0::2]
    del starts
    ends = np.append(o_end[order], 0)
    last[seg] = np.maximum.reduceat(ends, bounds)[0::2]
    return count, first, last


# PyTorch's emit_nvtx (nsys --pytorch=autograd-nvtx) names each op range
# "aten::mm, seq = 0, op_id = 13" (and ", sizes = [[...]]" with shapes): one name per call.
_AUTOGRAD_SUFFIX = r",\s*(?:seq|op_id|sizes|input_op_ids)\s*=.*$"


def autograd_op_name(range_name: str) -> str:
    """``"aten::mm, seq = 0, op_id = 13"`` -> ``"aten::mm"``; other names unchanged."""
    import re

    return re.sub(_AUTOGRAD_SUFFIX, "", range_name)


def autograd_ops(nvtx_gpu_proj: pd.DataFrame) -> pd.DataFrame:
    """``nvtx_gpu_proj_sum`` rows of autograd op ranges grouped by op (calls are numbered by
    emit_nvtx, so nsys lists each separately).  Columns: ``op, calls, cpu_total_ns,
    gpu_proj_total_ns, gpu_ops``, by GPU time; empty when the capture has no such ranges."""
    import pandas as pd

    cols = ["op", "calls", "cpu_total_ns", "gpu_proj_total_ns", "gpu_ops"]
    if not len(nvtx_gpu_proj):
        return pd.DataFrame(columns=cols)
    names = nvtx_gpu_proj["Range"].astype(str).str.lstrip(":")
    is_op = names.str.contains(_AUTOGRAD_SUFFIX, regex=True)
    if not is_op.any():
        return pd.DataFrame(columns=cols)
    df = nvtx_gpu_proj[is_op.to_numpy()].assign(op=names[is_op].map(autograd_op_name).to_numpy())
    g = df.groupby("op", sort=False).agg(calls=("Range Instances", "sum"),
                                         cpu_total_ns=("Total Range Time (ns)", "sum"),
                                         gpu_proj_total_ns=("Total Proj Time (ns)", "sum"),
                                         gpu_ops=("Total GPU Ops", "sum")).reset_index()
    return g.sort_values(["gpu_proj_total_ns", "cpu_total_ns"], ascending=False, ignore_index=True)[cols]
