"""One table from an nsys capture and an ncu capture of the same program: per kernel, its share
of GPU time and instance count (nsys, every launch) next to its occupancy, DRAM throughput and
bottleneck (ncu, the launches it profiled).

Kernel names are matched on a normalized signature: ncu and nsys demangle differently
(``at::native::f<(int)4>`` in nsys is ``at::f<4>`` in ncu), so integer casts, namespace
qualifiers, ``void`` and spacing are dropped before comparing.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from nsighttk.analysis.ncu_summary import NcuSummary
from nsighttk.profile import Profile

_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|long long|short|char|bool|unsigned)\)")
_NS = re.compile(r"(?:<unnamed>|\(anonymous namespace\)|[A-Za-z_]\w*)::")

COLUMNS = ["kernel", "nsys_instances", "nsys_total_ns", "nsys_share_pct", "ncu_profiled", "ncu_duration_ns",
           "achieved_occupancy_pct", "theoretical_occupancy_pct", "limiters", "dram_bytes_per_s",
           "dram_pct_of_peak", "verdict"]


def normalize_kernel_name(name: str) -> str:
    s = _CAST.sub("", str(name))
    s = _NS.sub("", s)
    s = re.sub(r"^void\s+", "", s.strip())
    return re.sub(r"\s+", " ", s)


def join_nsys_ncu(nsys: Profile, ncu: NcuSummary) -> pd.DataFrame:
    """Per kernel (normalized name): nsys time share and instances beside ncu's per-kernel view."""
    k = nsys.kernels
    total = float(k["duration_ns"].sum()) or np.nan
    left = (k.assign(key=k["name"].map(normalize_kernel_name))
            .groupby("key", sort=False)
            .agg(kernel=("name", "first"), nsys_instances=("duration_ns", "size"), nsys_total_ns=("duration_ns", "sum"))
            .reset_index())
    left["nsys_share_pct"] = 100.0 * left["nsys_total_ns"] / total
    v = ncu.kernels.assign(key=ncu.kernels["kernel"].map(normalize_kernel_name))
    right = v.groupby("key", sort=False).agg(
        ncu_kernel=("kernel", "first"), ncu_profiled=("kernel", "size"), ncu_duration_ns=("duration_ns", "mean"),
        achieved_occupancy_pct=("achieved_occupancy_pct", "mean"),
        theoretical_occupancy_pct=("theoretical_occupancy_pct", "mean"), limiters=("limiters", "first"),
        dram_bytes_per_s=("dram_bytes_per_s", "mean"), dram_pct_of_peak=("dram_pct_of_peak", "mean"),
        verdict=("verdict", "first")).reset_index()
    out = left.merge(right, on="key", how="outer")
    out["kernel"] = out["kernel"].fillna(out["ncu_kernel"])
    out["nsys_instances"] = out["nsys_instances"].fillna(0).astype("int64")
    out["ncu_profiled"] = out["ncu_profiled"].fillna(0).astype("int64")
    out["verdict"] = out["verdict"].fillna("not profiled by ncu")
    return out.sort_values(["nsys_total_ns", "ncu_profiled"], ascending=[False, False], na_position="last",
                           kind="mergesort")[COLUMNS].reset_index(drop=True)
