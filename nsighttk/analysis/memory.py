"""Memory traffic: copies and memsets per direction with achieved bandwidth.

GB/s here is 10^9 bytes per second, computed as total bytes over total GPU time of the
operations (bytes per ns = GB/s).  For device-to-device copies, which read and write device
memory, ``dram_pct_of_peak`` compares 2 x bytes / time with the GPU's memory bandwidth from
the export (``gpus.memory_bandwidth_bytes_per_s``); host transfers go over PCIe/NVLink-C2C,
whose peak the export does not record, so they get no percentage.

:func:`host_copies_by_size` sets pinned and pageable host transfers side by side only where their
sizes are alike: a 16 KB pinned batch and a 9 MB pageable weight copy say nothing about each
other, since achieved bandwidth grows with the size of a copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from nsighttk.profile import Profile

COLUMNS = ["operation", "kind", "count", "total_bytes", "total_time_ns", "avg_bytes", "gbps",
           "best_gbps", "dram_pct_of_peak"]


def _sum(g: Any, ops: pd.DataFrame, col: str) -> pd.Series:
    """Group sums of an integer column, exact: Python integers where int64 could wrap around."""
    values = ops[col]
    if not len(values) or float(values.abs().max()) * len(values) < 2.0**63:
        return g[col].sum()
    return g[col].agg(lambda s: sum(int(v) for v in s))


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
        "count": g.size(), "total_bytes": _sum(g, ops, "bytes"), "total_time_ns": _sum(g, ops, "dur"),
        "avg_bytes": g["bytes"].mean(), "best_gbps": g["rate"].max(),
    }).reset_index()
    out["gbps"] = out["total_bytes"] / out["total_time_ns"].where(out["total_time_ns"] > 0)
    peak = None
    if len(p.gpus) and p.gpus["memory_bandwidth_bytes_per_s"].notna().any():
        peak = float(p.gpus["memory_bandwidth_bytes_per_s"].dropna().iloc[0])
    is_dtod = out["kind"].isin(["DtoD"])
    out["dram_pct_of_peak"] = np.where(is_dtod & (peak is not None), 2 * out["gbps"] * 1e9 / (peak or 1) * 100, np.nan)
    return out[COLUMNS].sort_values("total_time_ns", ascending=False, kind="mergesort").reset_index(drop=True)


HOST_COLUMNS = ["kind", "size_lo", "size_hi", "pageable_count", "pageable_bytes", "pageable_time_ns", "pageable_gbps",
                "pinned_count", "pinned_bytes", "pinned_time_ns", "pinned_gbps"]


def host_memory(m: pd.DataFrame) -> pd.Series:
    """``Pageable`` / ``Pinned`` / None: the host side of each HtoD / DtoH copy."""
    host = np.where(m["kind"] == "HtoD", m["src_kind"], np.where(m["kind"] == "DtoH", m["dst_kind"], None))
    return pd.Series(host, index=m.index, dtype=object)


def host_copies_by_size(memcpy: pd.DataFrame) -> pd.DataFrame:
    """Host transfers (HtoD, DtoH) grouped by direction and size bucket ``[2^k, 2^(k+1))`` bytes,
    pageable and pinned side by side: count, bytes, GPU time and bytes / time (GB/s) of each.
    Rows only for buckets with copies of either kind; a side without copies has count 0 and
    GB/s NaN.  Columns: :data:`HOST_COLUMNS`."""
    m = memcpy[memcpy["kind"].isin(["HtoD", "DtoH"]) & (memcpy["bytes"] > 0)]
    host = host_memory(m)
    m = m[host.isin(["Pageable", "Pinned"]).to_numpy(dtype=bool)]
    if m.empty:
        return pd.DataFrame({c: [] for c in HOST_COLUMNS})
    k = np.floor(np.log2(m["bytes"].to_numpy(dtype="float64"))).astype("int64")
    df = pd.DataFrame({"kind": m["kind"].to_numpy(dtype=object), "k": k, "host": host_memory(m).to_numpy(dtype=object),
                       "bytes": m["bytes"].to_numpy(dtype="int64"), "dur": m["duration_ns"].to_numpy(dtype="int64")})
    g = df.groupby(["kind", "k", "host"]).agg(count=("bytes", "size"), b=("bytes", "sum"), t=("dur", "sum"))
    wide = g.unstack("host")
    out = pd.DataFrame(index=wide.index)
    for side, col in (("Pageable", "pageable"), ("Pinned", "pinned")):
        have = ("count", side) in wide.columns
        out[f"{col}_count"] = wide[("count", side)].fillna(0).astype("int64") if have else 0
        out[f"{col}_bytes"] = wide[("b", side)].fillna(0).astype("int64") if have else 0
        out[f"{col}_time_ns"] = wide[("t", side)].fillna(0).astype("int64") if have else 0
        t = out[f"{col}_time_ns"].astype("float64")
        out[f"{col}_gbps"] = out[f"{col}_bytes"] / t.where(t > 0)
    out = out.reset_index()
    out["size_lo"] = np.left_shift(1, out["k"].to_numpy(dtype="int64"))
    out["size_hi"] = out["size_lo"] * 2
    return out[HOST_COLUMNS].sort_values(["kind", "size_lo"], kind="mergesort").reset_index(drop=True)
