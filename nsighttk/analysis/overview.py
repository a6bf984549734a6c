"""The human summary of an nsys capture: headline numbers and the tables worth reading first.

:func:`overview` returns plain data (dicts and DataFrames); renderers in :mod:`nsighttk.report`
decide how it looks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from nsighttk.analysis import nsys_reports as reports
from nsighttk.analysis.advice import Finding, advise
from nsighttk.analysis.intervals import busy_time_ns
from nsighttk.analysis.kernel_names import decode
from nsighttk.analysis.memory import memory_bandwidth
from nsighttk.analysis.nvtx import autograd_ops
from nsighttk.analysis.occupancy import kernel_occupancy
from nsighttk.profile import Profile


@dataclass
class Overview:
    meta: dict[str, Any]
    headline: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


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
    kernels = reports.cuda_gpu_kern_sum(p).frame
    if len(kernels):
        occ = kernel_occupancy(p.kernels, p.gpus)
        kernels = kernels.assign(**{"Theoretical Occupancy (%)": kernels["Name"].map(occ).astype("float64"),
                                    "Decoded": kernels["Name"].map(lambda n: decode(n).summary())})
    tables = {
        "kernels": kernels,
        "memory": memory_bandwidth(p),
        "api": reports.cuda_api_sum(p).frame,
        "gpu_sum": reports.cuda_gpu_sum(p).frame,
        "nvtx": reports.nvtx_sum(p).frame,
        "nvtx_gpu": reports.nvtx_gpu_proj_sum(p).frame,
    }
    tables["autograd_ops"] = autograd_ops(tables["nvtx_gpu"])
    return Overview(meta=dict(p.meta), headline=headline, tables=tables, notes=list(p.notes), findings=advise(p))
