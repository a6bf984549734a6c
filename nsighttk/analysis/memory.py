"""Memory traffic: copies and memsets per direction with achieved bandwidth.

GB/s here is 10^9 bytes per second, computed as total bytes over total GPU time of the
operations (bytes per ns = GB/s).  For device-to-device copies, which read and write device
memory, ``dram_pct_of_peak`` compares 2 x bytes / time with the GPU's memory bandwidth from
the export (``gpus.memory_bandwidth_bytes_per_s``); host transfers go over PCIe/NVLink-C2C,
whose peak the export does not record, so they get no percentage.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsighttk.profile import Profile

COLUMNS = ["operation", "kind", "count", "total_bytes", "total_time_ns", "avg_bytes", "gbps",
           "best_gbps", "dram_pct_of_peak"]


def memory_bandwidth(p: Profile) -> pd.DataFrame:
    """One row per memcpy direction (and memset): count, bytes, time, achieved GB/s."""
    parts = []
    if len(p.memcpy):
        m = p.memcpy
        parts.append(pd.DataFrame({"operation": "[CUDA memcpy " + m["label"].fillna("?").astype(str) + "]",
                                   "kind": m["kind"], "bytes": m["bytes"], "dur": m["duration_ns"],
                                   "device_id": m["device_id"]}))
    if len(p.memset):
        s = p.memset
        parts.append(pd.DataFrame({"operation": "[CUDA memset]", "kind": "memset", "bytes": s["bytes"],
                                   "dur": s["duration_ns"], "device_id": s["device_id"]}))
    if not parts:
        return pd.DataFrame({c: [] for c in COLUMNS})
    ops = pd.concat(parts, ignore_index=True)
    ops["rate"] = np.where(ops["dur"] > 0, ops["bytes"] / ops["dur"].where(ops["dur"] > 0, 1), np.nan)
    g = ops.groupby(["operation", "kind"], sort=True)
    out = pd.DataFrame({
        "count": g.size(), "total_bytes": g["bytes"].sum(), "total_time_ns": g["dur"].sum(),
        "avg_bytes": g["bytes"].mean(), "best_gbps": g["rate"].max(),
    }).reset_index()
    out["gbps"] = out["total_bytes"] / out["total_time_ns"].where(out["total_time_ns"] > 0)
    peak = None
    if len(p.gpus) and p.gpus["memory_bandwidth_bytes_per_s"].notna().any():
        peak = float(p.gpus["memory_bandwidth_bytes_per_s"].dropna().iloc[0])
    is_dtod = out["kind"].isin(["DtoD"])
    out["dram_pct_of_peak"] = np.where(is_dtod & (peak is not None), 2 * out["gbps"] * 1e9 / (peak or 1) * 100, np.nan)
    return out[COLUMNS].sort_values("total_time_ns", ascending=False, kind="mergesort").reset_index(drop=True)
