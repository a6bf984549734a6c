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

import numpy as np
import pandas as pd

from nsighttk.profile import require_columns

_PROC_SHIFT = 1 << 24
# Above this many ranges on one thread with crossing (not nested) start/end ranges, the exact
# quadratic parent search is skipped for the stack approximation.
_EXACT_LIMIT = 20_000


def range_ends(nvtx: pd.DataFrame, max_ts: int | None) -> np.ndarray:
    """End times with open ranges closed at ``max_ts`` (the last NVTX timestamp)."""
    end = nvtx["end_ns"]
    fill = max_ts if max_ts is not None else int(nvtx["start_ns"].max()) if len(nvtx) else 0
    return end.fillna(fill).to_numpy(dtype="int64")


def _parents_one_thread(start: np.ndarray, end: np.ndarray, rid: np.ndarray) -> np.ndarray:
    """Parent index (or -1) of each range, for ranges of one thread, in input order."""
    n = len(start)
    order = np.lexsort((rid, -end, start))
    parent = np.full(n, -1, dtype="int64")
    stack: list[int] = []
    crossing = False
    for i in order:
        while stack and end[stack[-1]] < end[i]:
            top = stack.pop()
            if end[top] > start[i]:
                crossing = True  # overlapping but not nested: the stack is only an approximation
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    if crossing and n <= _EXACT_LIMIT:
        parent = _parents_exact(start, end, rid)
    return parent


def _parents_exact(start: np.ndarray, end: np.ndarray, rid: np.ndarray) -> np.ndarray:
    n = len(start)
    parent = np.full(n, -1, dtype="int64")
    for i in range(n):
        ok = (start <= start[i]) & (end >= end[i])
        ok[i] = False
        if ok.any():
            cand = np.flatnonzero(ok)
            tight = (start[i] - start[cand]) + (end[cand] - end[i])
            parent[i] = cand[np.argmin(tight)]
    return parent


def range_parents(nvtx: pd.DataFrame, max_ts: int | None = None) -> np.ndarray:
    """For each row of ``nvtx``, the positional index of its parent range, or -1."""
    require_columns(nvtx, ["start_ns", "end_ns", "global_tid", "range_id"], "nvtx")
    parent = np.full(len(nvtx), -1, dtype="int64")
    if nvtx.empty:
        return parent
    start = nvtx["start_ns"].to_numpy(dtype="int64")
    end = range_ends(nvtx, max_ts)
    rid = nvtx["range_id"].to_numpy(dtype="int64")
    tids = nvtx["global_tid"].fillna(-1).to_numpy(dtype="int64")
    for tid in np.unique(tids):
        idx = np.flatnonzero(tids == tid)
        local = _parents_one_thread(start[idx], end[idx], rid[idx])
        parent[idx] = np.where(local >= 0, idx[np.maximum(local, 0)], -1)
    return parent


def depth_from_parents(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parent), dtype="int64")
    for i in range(len(parent)):
        d, p, seen = 0, parent[i], 0
        while p >= 0 and seen <= len(parent):
            d, p, seen = d + 1, parent[p], seen + 1
        depth[i] = d
    return depth


def nesting_depth(nvtx: pd.DataFrame, max_ts: int | None = None) -> pd.Series:
    """Nesting level of each range on its thread (0 = outermost)."""
    return pd.Series(depth_from_parents(range_parents(nvtx, max_ts)), index=nvtx.index)


def gpu_ops(profile_kernels: pd.DataFrame, memcpy: pd.DataFrame, memset: pd.DataFrame) -> pd.DataFrame:
    """All GPU operations as one frame (kernels, then memcpys, then memsets): start_ns, end_ns,
    correlation_id, proc (process key)."""
    parts = [df for df in (profile_kernels, memcpy, memset) if len(df)]
    if not parts:
        return pd.DataFrame({"start_ns": [], "end_ns": [], "correlation_id": [], "proc": []})
    return pd.DataFrame({
        "start_ns": np.concatenate([d["start_ns"].to_numpy(dtype="int64") for d in parts]),
        "end_ns": np.concatenate([d["end_ns"].to_numpy(dtype="int64") for d in parts]),
        "correlation_id": np.concatenate([d["correlation_id"].to_numpy(dtype="float64", na_value=np.nan)
                                          for d in parts]),
        "proc": np.concatenate([np.floor(d["global_pid"].to_numpy(dtype="float64", na_value=np.nan) / _PROC_SHIFT)
                                for d in parts]),
    })


def launches(ops: pd.DataFrame, api: pd.DataFrame) -> pd.DataFrame:
    """Join GPU ops to the CUDA API call that launched them (same correlation id and process).

    Returns the ops' columns plus ``api_start_ns``, ``api_end_ns``, ``global_tid`` (NaN where no
    call matched).  Looked up per process through an index on the correlation id, which keeps
    memory to a few arrays even for millions of calls."""
    out = ops
    n = len(ops)
    api_start = np.full(n, np.nan)
    api_end = np.full(n, np.nan)
    gtid = np.full(n, np.nan)
    if n and len(api):
        a_proc = (api["global_tid"] // _PROC_SHIFT).to_numpy(dtype="float64", na_value=np.nan)
        a_corr = api["correlation_id"].to_numpy(dtype="float64", na_value=np.nan)
        a_start = api["start_ns"].to_numpy(dtype="int64")
        a_end = api["end_ns"].to_numpy(dtype="int64")
        a_tid = api["global_tid"].to_numpy(dtype="float64", na_value=np.nan)
        o_proc = ops["proc"].to_numpy(dtype="float64")
        o_corr = ops["correlation_id"].to_numpy(dtype="float64")
        for proc in np.unique(o_proc[~np.isnan(o_proc)]):
            a_sel = np.flatnonzero(a_proc == proc)
            o_sel = np.flatnonzero(o_proc == proc)
            if not len(a_sel):
                continue
            index = pd.Index(a_corr[a_sel])
            if not index.is_unique:  # keep the first call per correlation id
                keep = ~index.duplicated()
                a_sel, index = a_sel[keep], index[keep]
            pos = index.get_indexer(o_corr[o_sel])
            hit = pos >= 0
            rows = a_sel[pos[hit]]
            api_start[o_sel[hit]] = a_start[rows]
            api_end[o_sel[hit]] = a_end[rows]
            gtid[o_sel[hit]] = a_tid[rows]
    out["api_start_ns"] = api_start
    out["api_end_ns"] = api_end
    out["global_tid"] = gtid
    return out


def enclosing_ranges(ranges: pd.DataFrame, calls: pd.DataFrame, max_ts: int | None) -> pd.DataFrame:
    """Pairs (range position, call position) where the range contains the whole call, same thread.

    ``ranges`` needs start_ns, end_ns, global_tid; ``calls`` needs api_start_ns, api_end_ns,
    global_tid.  Positions are 0-based row positions in each frame."""
    r_start = ranges["start_ns"].to_numpy(dtype="int64")
    r_end = range_ends(ranges, max_ts)
    r_tid = ranges["global_tid"].to_numpy(dtype="float64")
    c_start = calls["api_start_ns"].to_numpy(dtype="float64")
    c_end = calls["api_end_ns"].to_numpy(dtype="float64")
    c_tid = calls["global_tid"].to_numpy(dtype="float64")
    out_r: list[np.ndarray] = []
    out_c: list[np.ndarray] = []
    for tid in np.unique(r_tid[~np.isnan(r_tid)]):
        c_idx = np.flatnonzero(c_tid == tid)
        if len(c_idx) == 0:
            continue
        c_sorted = c_idx[np.argsort(c_start[c_idx], kind="stable")]
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
        return pd.DataFrame({"range_pos": np.array([], dtype="int64"), "call_pos": np.array([], dtype="int64")})
    return pd.DataFrame({"range_pos": np.concatenate(out_r), "call_pos": np.concatenate(out_c)})


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
