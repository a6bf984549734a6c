"""What to try next: rules over a Profile that name a bottleneck, show the evidence measured in
the capture, and say what usually fixes it (pointing at the sample that demonstrates the fix).

Each rule is a pure function ``Profile -> Finding | None``; :func:`advise` runs them all and
orders the findings by how much GPU or wall time they concern.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from nsighttk.analysis.intervals import busy_time_ns
from nsighttk.profile import Profile
from nsighttk.units import fmt_bytes, fmt_ns


@dataclass
class Finding:
    rule: str
    title: str
    evidence: str
    suggestion: str
    weight_ns: int  # the time the finding concerns, for ordering

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _sm_count(p: Profile) -> int | None:
    if len(p.gpus) and pd.notna(p.gpus["sm_count"].iloc[0]):
        return int(p.gpus["sm_count"].iloc[0])
    return None


def undersized_launches(p: Profile) -> Finding | None:
    """Kernels whose whole grid has fewer threads than the GPU can hold on one wave of SMs."""
    k = p.kernels
    if k.empty or k["grid_x"].isna().all():
        return None
    sms = _sm_count(p) or 1
    threads = (k["grid_x"] * k["grid_y"] * k["grid_z"] * k["block_x"] * k["block_y"] * k["block_z"]).astype("float64")
    small = k[(threads < sms * 128).to_numpy(dtype=bool, na_value=False)]
    total = int(k["duration_ns"].sum())
    t_small = int(small["duration_ns"].sum())
    if small.empty or t_small < 0.1 * total:
        return None
    worst = small.groupby("name")["duration_ns"].sum().sort_values(ascending=False)
    name = str(worst.index[0])
    row = small[small["name"] == name].iloc[0]
    n_threads = int(row["grid_x"] * row["grid_y"] * row["grid_z"] * row["block_x"] * row["block_y"] * row["block_z"])
    return Finding(
        "undersized_launch", "Kernels launched with too few threads to fill the GPU",
        f"{shorten(name)} runs {n_threads:,} thread(s) (grid {int(row['grid_x'])}x{int(row['grid_y'])}"
        f"x{int(row['grid_z'])}, block {int(row['block_x'])}x{int(row['block_y'])}x{int(row['block_z'])}) "
        f"on {sms} SMs; such launches take {t_small / total:.0%} of kernel time ({fmt_ns(t_small)})",
        "launch enough blocks to cover every SM several times (one element per thread, or a grid-stride "
        "loop sized to a few blocks per SM): compare the add, add_block, add_grid and add_grid_stride samples",
        t_small)


def unified_memory_migrations(p: Profile) -> Finding | None:
    """Managed memory paged in on demand instead of prefetched."""
    m = p.memcpy[p.memcpy["kind"].astype(str).str.startswith("UVM_")]
    if m.empty:
        return None
    t = int(m["duration_ns"].sum())
    return Finding(
        "unified_memory_migrations", "Managed memory migrates page by page on first touch",
        f"{len(m):,} unified-memory migrations moved {fmt_bytes(m['bytes'].sum())} in pieces averaging "
        f"{fmt_bytes(m['bytes'].mean())} ({fmt_ns(t)} of copy time), and faulting kernels wait for them",
        "prefetch with cudaMemPrefetchAsync before the launch (add_prefetch sample), or use cudaMalloc with "
        "explicit copies (add_grid sample)", t)


def pageable_transfers(p: Profile) -> Finding | None:
    """Host transfers from or to pageable (not pinned) memory."""
    m = p.memcpy
    if m.empty:
        return None
    pageable = m[((m["src_kind"] == "Pageable") | (m["dst_kind"] == "Pageable")) & m["kind"].isin(["HtoD", "DtoH"])]
    pageable = pageable[pageable["bytes"] >= 1 << 20]
    if pageable.empty:
        return None
    t = int(pageable["duration_ns"].sum())
    gbps = pageable["bytes"].sum() / max(t, 1)
    pinned = m[((m["src_kind"] == "Pinned") | (m["dst_kind"] == "Pinned")) & m["kind"].isin(["HtoD", "DtoH"])]
    compare = ""
    if len(pinned) and pinned["duration_ns"].sum() > 0:
        rate = pinned["bytes"].sum() / pinned["duration_ns"].sum()
        compare = f"; pinned transfers in the same capture reached {rate:.1f} GB/s"
    return Finding(
        "pageable_transfers", "Host copies use pageable memory",
        f"{len(pageable):,} copies of 1 MB or more to/from pageable host memory averaged {gbps:.1f} GB/s "
        f"({fmt_ns(t)}){compare}",
        "allocate the host side pinned (cudaMallocHost, or tensor.pin_memory() in PyTorch); pinned copies are "
        "faster and can overlap with kernels (non_blocking=True)", t)


def gpu_idle(p: Profile) -> Finding | None:
    """Long stretches with no GPU work between the first and the last GPU operation."""
    parts = [(t["start_ns"].to_numpy(dtype="int64"), t["end_ns"].to_numpy(dtype="int64"))
             for t in (p.kernels, p.memcpy, p.memset) if len(t)]
    if not parts:
        return None
    start = min(int(s.min()) for s, _ in parts)
    end = max(int(e.max()) for _, e in parts)
    span = end - start
    busy = busy_time_ns(parts)
    if span < 1_000_000 or busy > 0.5 * span:
        return None
    top = ""
    if len(p.api):
        inside = p.api[(p.api["start_ns"] >= start) & (p.api["end_ns"] <= end)]
        if len(inside):
            by = inside.groupby("name")["duration_ns"].sum().sort_values(ascending=False)
            top = f"; the CUDA call taking most CPU time there is {by.index[0]} ({fmt_ns(by.iloc[0])})"
    return Finding(
        "gpu_idle", "The GPU is idle most of the time",
        f"GPU busy {fmt_ns(busy)} of a {fmt_ns(span)} span ({busy / span:.1%}){top}",
        "find what the CPU does between GPU work (launch latency, synchronization, allocation, module loading, "
        "Python, data loading): batch work, avoid synchronizing inside loops, reuse buffers, capture CUDA graphs",
        span - busy)


def tiny_kernels(p: Profile) -> Finding | None:
    """Many launches of very short kernels, where launch overhead dominates."""
    k = p.kernels
    if len(k) < 1000:
        return None
    med = float(np.median(k["duration_ns"].to_numpy()))
    if med > 10_000:
        return None
    return Finding(
        "tiny_kernels", "Many very short kernels",
        f"{len(k):,} kernel launches with a median duration of {fmt_ns(med)}",
        "fuse elementwise steps into one kernel (torch.compile, a Triton kernel) or capture the sequence in a "
        "CUDA graph to pay the launch cost once", int(k["duration_ns"].sum()))


def copies_dominate(p: Profile) -> Finding | None:
    """More GPU time moving data than computing."""
    kt = int(p.kernels["duration_ns"].sum())
    mt = int(p.memcpy["duration_ns"].sum())
    if mt == 0 or mt < kt or mt < 100_000:
        return None
    return Finding(
        "copies_dominate", "Data movement takes more GPU time than the kernels",
        f"memcpy {fmt_ns(mt)} vs kernels {fmt_ns(kt)}",
        "keep data on the GPU between steps, copy less often and in larger pieces, and overlap copies with "
        "compute on separate streams", mt - kt)


def shorten(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


RULES: list[Callable[[Profile], Finding | None]] = [
    undersized_launches, unified_memory_migrations, pageable_transfers, gpu_idle, tiny_kernels, copies_dominate,
]


def advise(p: Profile) -> list[Finding]:
    """All findings for a capture, the ones concerning the most time first."""
    found = [f for rule in RULES if (f := rule(p)) is not None]
    return sorted(found, key=lambda f: f.weight_ns, reverse=True)
