"""The human summary of an nsys capture: headline numbers and the tables worth reading first.

:func:`overview` returns plain data (dicts and DataFrames); renderers in :mod:`nsighttk.report`
decide how it looks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis import nsys_reports as reports
from nsighttk.analysis.memory import memory_bandwidth
from nsighttk.profile import Profile


def busy_time_ns(intervals: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """Length of the union of [start, end) intervals (time the GPU had any work)."""
    starts = np.concatenate([s for s, _ in intervals]) if intervals else np.array([], dtype="int64")
    ends = np.concatenate([e for _, e in intervals]) if intervals else np.array([], dtype="int64")
    if len(starts) == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    group = np.cumsum(new) - 1
    g_start = s[new]
    g_end = pd.Series(run_end).groupby(group).max().to_numpy()
    return int((g_end - g_start).sum())


@dataclass
class Overview:
    meta: dict[str, Any]
    headline: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _gpu_line(p: Profile) -> str | None:
    if p.gpus.empty:
        return None
    g = p.gpus.iloc[0]
    bw = g["memory_bandwidth_bytes_per_s"]
    bits = [str(g["name"]), f"CC {g['compute_capability']}"]
    if pd.notna(g["sm_count"]):
        bits.append(f"{int(g['sm_count'])} SMs")
    if pd.notna(bw):
        bits.append(f"{bw / 1e9:,.0f} GB/s memory")
    return ", ".join(bits)


def overview(p: Profile) -> Overview:
    """Headline numbers and the summary tables of a capture."""
    intervals = [(t["start_ns"].to_numpy(dtype="int64"), t["end_ns"].to_numpy(dtype="int64"))
                 for t in (p.kernels, p.memcpy, p.memset) if len(t)]
    all_starts = [s.min() for s, _ in intervals]
    all_ends = [e.max() for _, e in intervals]
    span = int(max(all_ends) - min(all_starts)) if intervals else 0
    headline = {
        "gpu": _gpu_line(p),
        "kernels": len(p.kernels), "distinct_kernels": int(p.kernels["name"].nunique()),
        "kernel_time_ns": int(p.kernels["duration_ns"].sum()),
        "memcpy_count": len(p.memcpy), "memcpy_bytes": int(p.memcpy["bytes"].sum()),
        "memcpy_time_ns": int(p.memcpy["duration_ns"].sum()),
        "memset_count": len(p.memset), "api_calls": len(p.api), "nvtx_ranges": len(p.nvtx),
        "gpu_busy_ns": busy_time_ns(intervals), "gpu_span_ns": span,
    }
    tables = {
        "kernels": reports.cuda_gpu_kern_sum(p).frame,
        "memory": memory_bandwidth(p),
        "api": reports.cuda_api_sum(p).frame,
        "gpu_sum": reports.cuda_gpu_sum(p).frame,
        "nvtx": reports.nvtx_sum(p).frame,
        "nvtx_gpu": reports.nvtx_gpu_proj_sum(p).frame,
    }
    return Overview(meta=dict(p.meta), headline=headline, tables=tables, notes=list(p.notes))
