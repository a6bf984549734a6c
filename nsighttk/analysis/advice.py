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

from nsighttk.analysis import intervals_spilled
from nsighttk.analysis.groupstats import exact_total, factorize_sorted
from nsighttk.analysis.intervals import GPU_TABLES, busy_time_ns
from nsighttk.analysis.iterations import Iterations, scope_label, steady_profile
from nsighttk.analysis.kernel_names import is_collective
from nsighttk.analysis.memory import host_copies_by_size, host_memory
from nsighttk.analysis.nsys_report_base import kernel_name_codes
from nsighttk.analysis.nsys_report_spilled import kernel_chunks, kernels_in_parts, table_chunks
from nsighttk.analysis.spilled_stats import group_medians, limit_rows
from nsighttk.encoding import widen
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
    (communication kernels excepted: their launch geometry is the collective library's choice).
    Read a chunk of kernels at a time past the budget (:func:`_kernel_chunks`)."""
    dims = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]
    whole = not kernels_in_parts(p) or all(p.kept("kernels", c) for c in [*dims, "duration_ns"])
    held = kernel_name_codes(p)[1] if whole else None
    names = np.empty(0, dtype=object)
    sms = _sm_count(p) or 1
    total = t_small = 0
    per_name: np.ndarray | None = None
    first: dict[int, dict[str, int]] = {}  # (each name's first small launch)
    for codes, k, by_code in kernel_chunks(p, [*dims, "duration_ns"], held):
        names = by_code
        dur = k["duration_ns"]
        if per_name is None:
            per_name = np.zeros(len(names), dtype="int64")
        if not len(dur) or (k["grid_x"] == _missing(k["grid_x"])).all():
            continue
        comm = np.array([is_collective(str(n)) for n in names], dtype=bool)[codes] if len(names) \
            else np.zeros(0, dtype=bool)
        known = np.ones(len(dur), dtype=bool)
        threads = np.ones(len(dur), dtype="float64")
        for d in dims:
            known &= k[d] != _missing(k[d])
            threads *= k[d]
        small = ~comm & known & (threads < sms * 128)
        total += int(dur[~comm].sum())
        t_small += int(dur[small].sum())
        np.add.at(per_name, codes[small], dur[small])
        rows = np.flatnonzero(small)
        c, at = np.unique(codes[rows], return_index=True)
        for code, r in zip(c.tolist(), rows[at].tolist(), strict=True):
            first.setdefault(code, {d: int(k[d][r]) for d in dims})
    if per_name is None or not first or total <= 0 or t_small < 0.1 * total:
        return None
    worst = int(np.argmax(per_name))  # the first name in byte order among equals
    name = str(names[worst])
    g = first[worst]
    n_threads = g["grid_x"] * g["grid_y"] * g["grid_z"] * g["block_x"] * g["block_y"] * g["block_z"]
    return Finding(
        "undersized_launch", "Kernels launched with too few threads to fill the GPU",
        f"{shorten(name)} runs {n_threads:,} thread(s) (grid {g['grid_x']}x{g['grid_y']}"
        f"x{g['grid_z']}, block {g['block_x']}x{g['block_y']}x{g['block_z']}) "
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
    """Long stretches with no GPU work between the first and the last GPU operation (the busy
    time out of core where the operations do not fit: :func:`intervals_spilled.gpu_busy_ns`)."""
    start = end = None
    for t in GPU_TABLES:
        for c in table_chunks(p, t, ["start_ns", "end_ns"]):
            if len(c["start_ns"]):
                lo, hi = int(widen(c["start_ns"]).min()), int(widen(c["end_ns"]).max())
                start, end = (lo, hi) if start is None or end is None else (min(start, lo), max(end, hi))
    if start is None or end is None:
        return None
    span = end - start
    if intervals_spilled.spills(p):
        busy = intervals_spilled.gpu_busy_ns(p)
    else:
        busy = busy_time_ns([(a["start_ns"], a["end_ns"]) for a in (p.arrays(t, ["start_ns", "end_ns"])
                                                                       for t in GPU_TABLES) if len(a["start_ns"])])
    if span < 1_000_000 or busy > 0.5 * span:
        return None
    top = ""
    if p.count("api"):
        got = _top_call(p, (start, end))
        if got is not None:
            top = f"; the CUDA call taking most CPU time there is {got[0]} ({fmt_ns(got[1])})"
    return Finding(
        "gpu_idle", "The GPU is idle most of the time",
        f"GPU busy {fmt_ns(busy)} of a {fmt_ns(span)} span ({busy / span:.1%}){top}",
        "find what the CPU does between GPU work (launch latency, synchronization, allocation, module loading, "
        "Python, data loading): batch work, avoid synchronizing inside loops, reuse buffers, capture CUDA graphs",
        span - busy)


def _top_call(p: Profile, window: tuple[int, int] | None = None) -> tuple[str, int] | None:
    """The CUDA call (by name) taking the most time among the calls inside ``window`` (start at or
    after its start, end at or before its end; None: all calls), and that time; the first name in
    order among equals; None where no call is inside.  Calls of an export are grouped by string
    id, a chunk of calls at a time past the budget (:func:`table_chunks`)."""
    cols = ["duration_ns"] + (["start_ns", "end_ns"] if window is not None else [])
    by_name = p.loaded("api") or p.source is None
    per: dict[object, int] = {}
    inside = False
    for c in ([p.arrays("api", [*cols, "name"])] if by_name else table_chunks(p, "api", [*cols, "name_id"])):
        key = c["name"] if by_name else widen(c["name_id"])
        mine = np.ones(len(key), dtype=bool) if window is None else \
            (widen(c["start_ns"]) >= window[0]) & (widen(c["end_ns"]) <= window[1])
        inside |= bool(mine.any())
        codes, seen = factorize_sorted(key)
        got = np.zeros(len(seen), dtype="int64")
        np.add.at(got, codes[mine], widen(c["duration_ns"])[mine])
        for k, v in zip(seen.tolist(), got.tolist(), strict=True):
            per[k] = per.get(k, 0) + int(v)
    if not inside:
        return None
    keys: list[object] = list(per)
    names = keys if by_name else list(p.names("api", np.array(keys, dtype=np.int64)))
    best = min(range(len(keys)), key=lambda i: (-per[keys[i]], str(names[i])))
    return str(names[best]), per[keys[best]]


def tiny_kernels(p: Profile) -> Finding | None:
    """Many launches of very short kernels, where launch overhead dominates (their median
    duration out of core where the kernels do not fit: :func:`spilled_stats.group_medians`)."""
    if kernels_in_parts(p):
        n = total = 0
        for c in table_chunks(p, "kernels", ["duration_ns"]):
            n, total = n + len(c["duration_ns"]), total + int(widen(c["duration_ns"]).sum())
        if n < 1000:
            return None
        med = float(group_medians(lambda: ((np.zeros(len(c["duration_ns"]), dtype=np.int64), widen(c["duration_ns"]))
                                           for c in table_chunks(p, "kernels", ["duration_ns"])),
                                  1, limit_rows(p.budget))[0])
    else:
        dur = p.arrays("kernels", ["duration_ns"])["duration_ns"]
        if len(dur) < 1000:
            return None
        n, med, total = len(dur), float(np.median(dur)), int(dur.sum())
    if med > 10_000:
        return None
    return Finding(
        "tiny_kernels", "Many very short kernels",
        f"{n:,} kernel launches with a median duration of {fmt_ns(med)}",
        "fuse elementwise steps into one kernel (torch.compile, a Triton kernel) or capture the sequence in a "
        "CUDA graph to pay the launch cost once", total)


def copies_dominate(p: Profile) -> Finding | None:
    """More GPU time moving data than computing."""
    kt, mt = (sum(int(widen(c["duration_ns"]).sum()) for c in table_chunks(p, t, ["duration_ns"]))
              for t in ("kernels", "memcpy"))
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
    got = _top_call(steady) if steady.count("api") else None
    if got is not None:
        bits.append(f"the CUDA call taking most CPU time is {got[0]} ({fmt_ns(got[1] / len(st))} per iteration)")
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
