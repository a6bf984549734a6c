"""What to try next: rules over a Profile that name a bottleneck, show the evidence measured in
the capture, and say what usually fixes it (pointing at the sample that demonstrates the fix).

Each rule is a pure function ``Profile -> Finding | None``; :func:`advise` runs them all and
orders the findings by how much GPU or wall time they concern.

When the capture has iterations (:mod:`nsighttk.analysis.iterations`) with a steady state, the
rules run on the steady state only (the GPU work launched in the iterations after the warm-up,
the CUDA calls made in them): a model load or a first step with module loading and autotuning
says nothing about the loop a user wants faster.  Each such finding's evidence starts with its
scope (``steady state, 5 iterations (step 1 to step 5): ...``) and ``Finding.scope`` records it;
the whole-capture ``gpu_idle`` rule is then replaced by one over the iterations
(:func:`idle_iterations`), and :func:`unsteady_iterations` reports iteration times that vary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from nsighttk.analysis.groupstats import exact_total, factorize_sorted
from nsighttk.analysis.intervals import busy_time_ns
from nsighttk.analysis.iterations import Iterations, scope_label, steady_profile
from nsighttk.analysis.kernel_names import is_collective
from nsighttk.analysis.memory import host_copies_by_size, host_memory
from nsighttk.analysis.nsys_report_base import kernel_name_codes
from nsighttk.profile import INT_NULL, Profile
from nsighttk.units import fmt_bytes, fmt_ns


@dataclass
class Finding:
    rule: str
    title: str
    evidence: str
    suggestion: str
    weight_ns: int  # the time the finding concerns, for ordering
    scope: str = "whole capture"  # what the evidence was measured on

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _sm_count(p: Profile) -> int | None:
    if len(p.gpus) and pd.notna(p.gpus["sm_count"].iloc[0]):
        return int(p.gpus["sm_count"].iloc[0])
    return None


def _pow2(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} B"


def _missing(a: np.ndarray) -> int:
    """The missing value of a column as :meth:`Profile.arrays` gives it with ``narrow``."""
    return INT_NULL if a.dtype == np.int64 else int(np.iinfo(a.dtype).min)


def undersized_launches(p: Profile) -> Finding | None:
    """Kernels whose whole grid has fewer threads than the GPU can hold on one wave of SMs
    (communication kernels excepted: their launch geometry is the collective library's choice)."""
    dims = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]
    k = p.arrays("kernels", [*dims, "duration_ns"], narrow=True)  # (as kept: no int64 copies of seven columns)
    dur = k["duration_ns"]
    if not len(dur) or (k["grid_x"] == _missing(k["grid_x"])).all():
        return None
    codes, names = kernel_name_codes(p)  # names in byte order
    comm = np.array([is_collective(str(n)) for n in names], dtype=bool)[codes] if len(names) \
        else np.zeros(0, dtype=bool)
    if comm.all():
        return None
    sms = _sm_count(p) or 1
    known = np.ones(len(dur), dtype=bool)
    threads = np.ones(len(dur), dtype="float64")
    for d in dims:
        known &= k[d] != _missing(k[d])
        threads *= k[d]
    small = ~comm & known & (threads < sms * 128)
    total = int(dur[~comm].sum())
    t_small = int(dur[small].sum())
    if not small.any() or total <= 0 or t_small < 0.1 * total:
        return None
    per_name = np.zeros(len(names), dtype="int64")
    np.add.at(per_name, codes[small], dur[small])
    worst = int(np.argmax(per_name))  # the first name in byte order among equals
    name = str(names[worst])
    r = int(np.flatnonzero(small & (codes == worst))[0])
    g = {d: int(k[d][r]) for d in dims}
    n_threads = g["grid_x"] * g["grid_y"] * g["grid_z"] * g["block_x"] * g["block_y"] * g["block_z"]
    row = g
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
    """Host transfers of 1 MB or more from or to pageable (not pinned) memory.  Pinned copies are
    quoted only where some have a similar size (same power-of-two bucket) and direction: copy
    bandwidth grows with size, so small pinned batches say nothing about large pageable copies."""
    m = p.memcpy
    if m.empty:
        return None
    pageable = m[(host_memory(m) == "Pageable").to_numpy(dtype=bool) & (m["bytes"] >= 1 << 20).to_numpy(dtype=bool)]
    if pageable.empty:
        return None
    t = exact_total(pageable["duration_ns"])
    gbps = exact_total(pageable["bytes"]) / max(t, 1)
    buckets = host_copies_by_size(m)
    both = buckets[(buckets["size_lo"] >= 1 << 20) & (buckets["pageable_count"] > 0) & (buckets["pinned_count"] > 0)
                   & (buckets["pinned_time_ns"] > 0) & (buckets["pageable_time_ns"] > 0)]
    if len(both):
        b = both.sort_values("pageable_time_ns", ascending=False, kind="mergesort").iloc[0]
        compare = (f"; {b['kind']} copies of {_pow2(int(b['size_lo']))} to {_pow2(int(b['size_hi']))} reached "
                   f"{b['pinned_gbps']:.1f} GB/s pinned ({int(b['pinned_count']):,}) against {b['pageable_gbps']:.1f}"
                   f" GB/s pageable ({int(b['pageable_count']):,})")
    else:
        compare = ("; no pinned copies of a similar size (within a factor of two) and direction to compare with, so "
                   "what pinning would gain here is not measured")
    return Finding(
        "pageable_transfers", "Host copies use pageable memory",
        f"{len(pageable):,} copies of 1 MB or more to/from pageable host memory averaged {gbps:.1f} GB/s "
        f"({fmt_ns(t)}){compare}",
        "allocate the host side pinned (cudaMallocHost, or tensor.pin_memory() in PyTorch): a copy from pageable "
        "memory is staged through a pinned buffer by the driver and cannot overlap with kernels, a pinned one can "
        "(non_blocking=True)", t)


def gpu_idle(p: Profile) -> Finding | None:
    """Long stretches with no GPU work between the first and the last GPU operation."""
    parts = [(t["start_ns"], t["end_ns"]) for t in (p.arrays(n, ["start_ns", "end_ns"])
                                                   for n in ("kernels", "memcpy", "memset")) if len(t["start_ns"])]
    if not parts:
        return None
    start = min(int(s.min()) for s, _ in parts)
    end = max(int(e.max()) for _, e in parts)
    span = end - start
    busy = busy_time_ns(parts)
    if span < 1_000_000 or busy > 0.5 * span:
        return None
    top = ""
    if p.count("api"):
        a = p.arrays("api", ["start_ns", "end_ns", "duration_ns"])
        inside = (a["start_ns"] >= start) & (a["end_ns"] <= end)
        if inside.any():
            name, t = _top_call(p, inside)
            top = f"; the CUDA call taking most CPU time there is {name} ({fmt_ns(t)})"
    return Finding(
        "gpu_idle", "The GPU is idle most of the time",
        f"GPU busy {fmt_ns(busy)} of a {fmt_ns(span)} span ({busy / span:.1%}){top}",
        "find what the CPU does between GPU work (launch latency, synchronization, allocation, module loading, "
        "Python, data loading): batch work, avoid synchronizing inside loops, reuse buffers, capture CUDA graphs",
        span - busy)


def _top_call(p: Profile, rows: np.ndarray) -> tuple[str, int]:
    """The CUDA call (by name) taking the most time among ``rows`` of the api table, and that
    time; the first name in order among equals.  Calls of an export are grouped by string id."""
    if p.loaded("api") or p.source is None:
        codes, names = factorize_sorted(p.arrays("api", ["name"])["name"])
    else:  # by string id, named once per distinct call
        codes, ids = factorize_sorted(p.arrays("api", ["name_id"])["name_id"])
        names = p.names("api", ids)
    per = np.zeros(len(names), dtype="int64")
    np.add.at(per, codes[rows], p.arrays("api", ["duration_ns"])["duration_ns"][rows])
    best = min(range(len(names)), key=lambda i: (-int(per[i]), str(names[i])))
    return str(names[best]), int(per[best])


def tiny_kernels(p: Profile) -> Finding | None:
    """Many launches of very short kernels, where launch overhead dominates."""
    dur = p.arrays("kernels", ["duration_ns"])["duration_ns"]
    if len(dur) < 1000:
        return None
    med = float(np.median(dur))
    if med > 10_000:
        return None
    return Finding(
        "tiny_kernels", "Many very short kernels",
        f"{len(dur):,} kernel launches with a median duration of {fmt_ns(med)}",
        "fuse elementwise steps into one kernel (torch.compile, a Triton kernel) or capture the sequence in a "
        "CUDA graph to pay the launch cost once", int(dur.sum()))


def copies_dominate(p: Profile) -> Finding | None:
    """More GPU time moving data than computing."""
    kt = int(p.arrays("kernels", ["duration_ns"])["duration_ns"].sum())
    mt = int(p.arrays("memcpy", ["duration_ns"])["duration_ns"].sum())
    if mt == 0 or mt < kt or mt < 100_000:
        return None
    return Finding(
        "copies_dominate", "Data movement takes more GPU time than the kernels",
        f"memcpy {fmt_ns(mt)} vs kernels {fmt_ns(kt)}",
        "keep data on the GPU between steps, copy less often and in larger pieces, and overlap copies with "
        "compute on separate streams", mt - kt)


def idle_iterations(it: Iterations, steady: Profile) -> Finding | None:
    """The GPU idle for most of each steady iteration (per-iteration busy time, median)."""
    st = it.steady_table
    if st.empty:
        return None
    busy_pct = float(st["gpu_busy_pct"].median())
    dur = float(st["duration_ns"].median())
    if not busy_pct <= 50 or dur < 10_000:  # NaN: no GPU activity recorded, nothing to say
        return None
    launch = st["launch_overhead_ns"].median()
    bits = [f"GPU busy {busy_pct:.1f}% of each iteration (median of {len(st)}: {fmt_ns(st['gpu_busy_ns'].median())} of "
            f"{fmt_ns(dur)}), longest gap {fmt_ns(st['largest_gap_ns'].median())}"]
    if pd.notna(launch):
        bits.append(f"kernels start {fmt_ns(launch)} after their launch call (median)")
    if int(st["sync_ns"].median()) > 0:
        bits.append(f"{fmt_ns(st['sync_ns'].median())} per iteration in CUDA synchronisation calls")
    if steady.count("api"):
        name, t = _top_call(steady, np.ones(steady.count("api"), dtype=bool))
        bits.append(f"the CUDA call taking most CPU time is {name} ({fmt_ns(t / len(st))} per iteration)")
    if pd.notna(launch) and launch < 50_000:
        fix = ("the GPU waits for the CPU to launch work (kernels start soon after their launch, and launches come "
               "too slowly): capture the step in a CUDA graph (torch.compile mode='reduce-overhead', "
               "torch.cuda.graphs), fuse small kernels, and keep Python, .item()/.cpu() and allocation out of the loop")
    else:
        fix = ("find what the CPU does between GPU work in an iteration (synchronization, data loading, allocation, "
               "Python): overlap it with GPU work, batch work, capture CUDA graphs")
    return Finding("gpu_idle", "The GPU is idle most of each iteration", "; ".join(bits), fix,
                   int(st["idle_ns"].sum()))


def unsteady_iterations(it: Iterations) -> Finding | None:
    """Steady iterations whose durations vary (coefficient of variation above 10%, or outliers)."""
    s = it.steady
    d = s.get("duration_ns") or {}
    if s.get("iterations", 0) < 3 or d.get("cv") is None:
        return None
    outliers = s.get("outliers") or []
    if d["cv"] <= 0.10 and not outliers:
        return None
    st = it.steady_table
    excess = int((st["duration_ns"] - d["median"]).clip(lower=0).sum())
    named = "; outliers: " + ", ".join(f"{o['name']} ({fmt_ns(o['duration_ns'])}, {o['kind']})"
                                        for o in outliers[:5]) if outliers else ""
    slowest = st.loc[st["duration_ns"].idxmax()]
    return Finding(
        "unsteady_iterations", "Iteration time varies",
        f"{len(st)} iterations take {fmt_ns(d['min'])} to {fmt_ns(d['max'])} (median {fmt_ns(d['median'])}, "
        f"coefficient of variation {d['cv']:.0%}); the slowest is {slowest['name']}{named}",
        "compare the slowest iteration with a median one on the timeline (nsighttk report): look for data loading, "
        "host synchronization (.item(), .cpu(), printing a tensor), allocation (cudaMalloc in the loop), garbage "
        "collection, or another process on the GPU", excess)


def shorten(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


RULES: list[Callable[[Profile], Finding | None]] = [
    undersized_launches, unified_memory_migrations, pageable_transfers, gpu_idle, tiny_kernels, copies_dominate,
]


def advise(p: Profile, it: Iterations | None = None,
           more: Callable[[Profile], list[Finding]] | None = None) -> list[Finding]:
    """All findings for a capture, the ones concerning the most time first; on the steady state of
    ``it`` when it has one (module doc).  ``more``: other rules run on the same profile (the whole
    capture or its steady state), e.g. Nsight Systems' expert rules."""
    if it is None or not it.steady:
        found = [f for rule in RULES if (f := rule(p)) is not None] + (more(p) if more else [])
        return sorted(found, key=lambda f: f.weight_ns, reverse=True)
    steady = steady_profile(p, it)
    found = [f for rule in RULES if rule is not gpu_idle and (f := rule(steady)) is not None]
    found += [f for f in (idle_iterations(it, steady), unsteady_iterations(it)) if f is not None]
    found += more(steady) if more else []
    scope = scope_label(it)
    for f in found:
        f.scope = scope
        f.evidence = f"{scope}: {f.evidence}"
    return sorted(found, key=lambda f: f.weight_ns, reverse=True)
