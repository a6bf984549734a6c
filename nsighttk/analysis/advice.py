"""What to try next: rules over a Profile that name a bottleneck, show the evidence measured in
the capture, and say what usually fixes it (pointing at the sample that demonstrates the fix).

Each rule is a pure function ``Profile -> Finding | None``; :func:`advise` runs them all and
orders the findings by how much GPU or wall time they concern.

When the capture has iterations (:mod:`nsighttk.analysis.iterations.find`) with a steady state, the
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

from nsighttk import engine
from nsighttk.analysis.iterations.find import Iterations, scope_label, steady_profile
from nsighttk.analysis.iterations.intervals import GPU_TABLES, gpu_busy_ns
from nsighttk.analysis.kernels.names import is_collective
from nsighttk.analysis.memory import HOST_MEMORY, host_copies_by_size
from nsighttk.analysis.nsys.gpu import _eager, _kernel_names
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


_DIMS = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]


def undersized_launches(p: Profile) -> Finding | None:
    """Kernels whose whole grid has fewer threads than the GPU can hold on one wave of SMs
    (communication kernels excepted: their launch geometry is the collective library's choice).
    One pass over the kernels, per name: their time, the time of the small launches and the row
    of the first one; the names' shares are summed in Python (a row a name), and the worst name's
    first small launch read by its row."""
    if not p.count("kernels"):
        return None
    sms = _sm_count(p) or 1
    eng, join = _kernel_names(p)
    eng.need({"kernels": ["duration_ns", *_DIMS]})
    known = " AND ".join(f"{d} IS NOT NULL" for d in _DIMS)
    threads = " * ".join(f"{d}::DOUBLE" for d in _DIMS)
    rows = eng.rows(f"""
        SELECT n.code, any_value(n.name), sum(k.duration_ns::HUGEINT),
               coalesce(sum(k.duration_ns::HUGEINT) FILTER (WHERE small), 0), min(k.row_index) FILTER (WHERE small)
        FROM (SELECT *, {known} AND {threads} < ? AS small FROM kernels) k
        JOIN kernel_names n ON {join} GROUP BY n.code""", [sms * 128])
    work = [r for r in rows if not is_collective(str(r[1]))]
    total, t_small = sum(int(r[2]) for r in work), sum(int(r[3]) for r in work)
    small = [r for r in work if r[4] is not None]
    if not small or total <= 0 or t_small < 0.1 * total:
        return None
    _, name, _, _, first = min(small, key=lambda r: (-int(r[3]), r[0]))  # (the first name in byte order among equals)
    (dims,) = eng.rows(f"SELECT {', '.join(_DIMS)} FROM kernels WHERE row_index = ?", [first])
    g = dict(zip(_DIMS, (int(v) for v in dims), strict=True))
    n_threads = g["grid_x"] * g["grid_y"] * g["grid_z"] * g["block_x"] * g["block_y"] * g["block_z"]
    return Finding(
        "undersized_launch", "Kernels launched with too few threads to fill the GPU",
        f"{shorten(str(name))} runs {n_threads:,} thread(s) (grid {g['grid_x']}x{g['grid_y']}"
        f"x{g['grid_z']}, block {g['block_x']}x{g['block_y']}x{g['block_z']}) "
        f"on {sms} SMs; such launches take {t_small / total:.0%} of kernel time ({fmt_ns(t_small)})",
        "launch enough blocks to cover every SM several times (one element per thread, or a grid-stride "
        "loop sized to a few blocks per SM): compare the add, add_block, add_grid and add_grid_stride samples",
        t_small)


def unified_memory_migrations(p: Profile) -> Finding | None:
    """Managed memory paged in on demand instead of prefetched."""
    if not p.count("memcpy"):
        return None
    eng = engine.of(p).need({"memcpy": ["kind", "bytes", "duration_ns"]})
    (n, moved, mean, t), = eng.rows("SELECT count(*), sum(bytes::HUGEINT), avg(bytes), sum(duration_ns::HUGEINT) "
                                     "FROM memcpy WHERE starts_with(kind, 'UVM_')")
    if not n:
        return None
    t = int(t)
    return Finding(
        "unified_memory_migrations", "Managed memory migrates page by page on first touch",
        f"{n:,} unified-memory migrations moved {fmt_bytes(int(moved))} in pieces averaging "
        f"{fmt_bytes(mean)} ({fmt_ns(t)} of copy time), and faulting kernels wait for them",
        "prefetch with cudaMemPrefetchAsync before the launch (add_prefetch sample), or use cudaMalloc with "
        "explicit copies (add_grid sample)", t)


def pageable_transfers(p: Profile) -> Finding | None:
    """Host transfers of 1 MB or more from or to pageable (not pinned) memory.  Pinned copies are
    quoted only where some have a similar size (same power-of-two bucket) and direction: copy
    bandwidth grows with size, so small pinned batches say nothing about large pageable copies."""
    if not p.count("memcpy"):
        return None
    eng = engine.of(p).need({"memcpy": ["kind", "src_kind", "dst_kind", "bytes", "duration_ns"]})
    (n, t, moved), = eng.rows(f"SELECT count(*), sum(duration_ns::HUGEINT), sum(bytes::HUGEINT) FROM memcpy "
                              f"WHERE {HOST_MEMORY} = 'Pageable' AND bytes >= {1 << 20}")
    if not n:
        return None
    t = int(t)
    gbps = int(moved) / max(t, 1)
    buckets = host_copies_by_size(p)
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
        f"{n:,} copies of 1 MB or more to/from pageable host memory averaged {gbps:.1f} GB/s "
        f"({fmt_ns(t)}){compare}",
        "allocate the host side pinned (cudaMallocHost, or tensor.pin_memory() in PyTorch): a copy from pageable "
        "memory is staged through a pinned buffer by the driver and cannot overlap with kernels, a pinned one can "
        "(non_blocking=True)", t)


def _gpu_span(p: Profile) -> tuple[int, int] | None:
    """The first start and the last end of any GPU operation (None without any)."""
    tables = [t for t in GPU_TABLES if p.count(t)]
    if not tables:
        return None
    eng = engine.of(p).need({t: ["start_ns", "end_ns"] for t in tables})
    (lo, hi), = eng.rows("SELECT min(lo), max(hi) FROM (" + " UNION ALL ".join(
        f"SELECT min(start_ns) AS lo, max(end_ns) AS hi FROM {t}" for t in tables) + ")")
    return None if lo is None or hi is None else (int(lo), int(hi))


def gpu_idle(p: Profile) -> Finding | None:
    """Long stretches with no GPU work between the first and the last GPU operation."""
    got = _gpu_span(p)
    if got is None:
        return None
    start, end = got
    span = end - start
    busy = gpu_busy_ns(p)
    if span < 1_000_000 or busy > 0.5 * span:
        return None
    top = ""
    if p.count("api"):
        call = _top_call(p, (start, end))
        if call is not None:
            top = f"; the CUDA call taking most CPU time there is {call[0]} ({fmt_ns(call[1])})"
    return Finding(
        "gpu_idle", "The GPU is idle most of the time",
        f"GPU busy {fmt_ns(busy)} of a {fmt_ns(span)} span ({busy / span:.1%}){top}",
        "find what the CPU does between GPU work (launch latency, synchronization, allocation, module loading, "
        "Python, data loading): batch work, avoid synchronizing inside loops, reuse buffers, capture CUDA graphs",
        span - busy)


def _top_call(p: Profile, window: tuple[int, int] | None = None) -> tuple[str, int] | None:
    """The CUDA call (by name) taking the most time among the calls inside ``window`` (start at or
    after its start, end at or before its end; None: all calls), and that time; the first name in
    order among equals (among every call's name where the most is 0); None where no call is inside.
    Calls of an export are grouped by string id, their names looked up a row an id."""
    if not p.count("api"):
        return None
    by_name = _eager(p, "api")
    key = "name" if by_name else "name_id"
    eng = engine.of(p).need({"api": [key, "duration_ns"] + (["start_ns", "end_ns"] if window is not None else [])})
    inside = "true" if window is None else "start_ns >= ? AND end_ns <= ?"
    rows = eng.rows(f"SELECT {key}, coalesce(sum(duration_ns::HUGEINT) FILTER (WHERE {inside}), 0), "
                    f"bool_or({inside}) FROM api GROUP BY {key}", [] if window is None else [*window, *window])
    if not any(r[2] for r in rows):
        return None
    keys = [r[0] for r in rows]
    names = keys if by_name else list(p.names("api", np.array([INT_NULL if k is None else k for k in keys],
                                                             dtype=np.int64)))
    best = min(range(len(rows)), key=lambda i: (-int(rows[i][1]), str(names[i])))
    return str(names[best]), int(rows[best][1])


def tiny_kernels(p: Profile) -> Finding | None:
    """Many launches of very short kernels, where launch overhead dominates."""
    if p.count("kernels") < 1000:
        return None
    eng = engine.of(p).need({"kernels": ["duration_ns"]})
    (n, total, mid), = eng.rows("SELECT count(*), sum(duration_ns::HUGEINT), "
                                "quantile_disc(duration_ns, [0.5, 0.5000000001]) FROM kernels")
    if n < 1000:
        return None
    med = (float(mid[0]) + float(mid[1])) / 2  # (as numpy's median: the two middle values' mean)
    if med > 10_000:
        return None
    return Finding(
        "tiny_kernels", "Many very short kernels",
        f"{n:,} kernel launches with a median duration of {fmt_ns(med)}",
        "fuse elementwise steps into one kernel (torch.compile, a Triton kernel) or capture the sequence in a "
        "CUDA graph to pay the launch cost once", int(total))


def copies_dominate(p: Profile) -> Finding | None:
    """More GPU time moving data than computing."""
    kt, mt = (int(engine.of(p).need({t: ["duration_ns"]}).rows(
        f"SELECT coalesce(sum(duration_ns::HUGEINT), 0) FROM {t}")[0][0]) if p.count(t) else 0
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


def advise(p: Profile, it: Iterations | None = None, more: Callable[[Profile], list[Finding]] | None = None,
           steady: Profile | None = None) -> list[Finding]:
    """All findings for a capture, the ones concerning the most time first; on the steady state of
    ``it`` when it has one (module doc: ``steady``, where the caller has cut it already, with its
    engine).  ``more``: other rules run on the same profile (the whole capture or its steady
    state), e.g. Nsight Systems' expert rules."""
    if it is None or not it.steady:
        found = [f for rule in RULES if (f := rule(p)) is not None] + (more(p) if more else [])
        return sorted(found, key=lambda f: f.weight_ns, reverse=True)
    steady = steady if steady is not None else steady_profile(p, it)
    found = [f for rule in RULES if rule is not gpu_idle and (f := rule(steady)) is not None]
    found += [f for f in (idle_iterations(it, steady), unsteady_iterations(it)) if f is not None]
    found += more(steady) if more else []
    scope = scope_label(it)
    for f in found:
        f.scope = scope
        f.evidence = f"{scope}: {f.evidence}"
    return sorted(found, key=lambda f: f.weight_ns, reverse=True)
