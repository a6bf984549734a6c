"""One summary across the ranks of a multi-process run (nsys per rank, e.g. ``-o rank%q{RANK}``
under torchrun, ``%q{SLURM_PROCID}`` under srun, ``%q{OMPI_COMM_WORLD_RANK}`` under mpirun):
per rank its kernel time, GPU busy time and span, and its top kernel; the slowest rank and the
imbalance (slowest / mean kernel time)."""

from __future__ import annotations

import re

import pandas as pd

from nsighttk.analysis.intervals import busy_time_ns
from nsighttk.profile import Profile


def rank_of(label: str, fallback: int) -> int:
    """The rank in a per-rank file name (``rank3.sqlite``, ``prof.3.sqlite``), else ``fallback``."""
    m = re.search(r"(\d+)(?!.*\d)", label)
    return int(m.group(1)) if m else fallback


def rank_summary(profiles: dict[str, Profile]) -> pd.DataFrame:
    """``profiles``: file label -> Profile.  One row per rank, sorted by rank."""
    rows = []
    for i, (label, p) in enumerate(profiles.items()):
        k = p.kernels
        ivs = [(t["start_ns"].to_numpy(dtype="int64"), t["end_ns"].to_numpy(dtype="int64"))
               for t in (p.kernels, p.memcpy, p.memset) if len(t)]
        span = int(max(e.max() for _, e in ivs) - min(s.min() for s, _ in ivs)) if ivs else 0
        top = k.groupby("name")["duration_ns"].sum().sort_values(ascending=False) if len(k) else pd.Series(dtype=float)
        rows.append({"rank": rank_of(label, i), "capture": label, "kernels": len(k),
                     "kernel_time_ns": int(k["duration_ns"].sum()), "gpu_busy_ns": busy_time_ns(ivs),
                     "gpu_span_ns": span, "memcpy_bytes": int(p.memcpy["bytes"].sum()),
                     "top_kernel": str(top.index[0]) if len(top) else "",
                     "top_kernel_ns": int(top.iloc[0]) if len(top) else 0})
    df = pd.DataFrame(rows).sort_values("rank", kind="mergesort").reset_index(drop=True)
    mean = df["kernel_time_ns"].mean()
    df["vs_mean_pct"] = (df["kernel_time_ns"] / mean - 1) * 100 if mean else 0.0
    df["slowest"] = df["kernel_time_ns"] == df["kernel_time_ns"].max()
    return df
