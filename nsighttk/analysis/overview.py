"""The human summary of an nsys capture: headline numbers and the tables worth reading first.

:func:`overview` returns plain data (dicts and DataFrames); renderers in :mod:`nsighttk.report`
decide how it looks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from nsighttk import engine, progress
from nsighttk.analysis.advice import Finding, advise
from nsighttk.analysis.comm.collectives import CollectivesResult, collectives, has_collectives
from nsighttk.analysis.iterations.find import Iterations, forget_steady, iterations, steady_profile
from nsighttk.analysis.iterations.find import reads as iteration_reads
from nsighttk.analysis.iterations.intervals import GPU_TABLES, gpu_busy_ns
from nsighttk.analysis.iterations.phases import phases
from nsighttk.analysis.kernels.names import decode
from nsighttk.analysis.kernels.occupancy import kernel_occupancy
from nsighttk.analysis.memory import memory_bandwidth
from nsighttk.analysis.nsys import reports, rule_queries
from nsighttk.analysis.nsys.catalog import NO_DATA
from nsighttk.analysis.nsys.gpu import _eager, _kernel_names
from nsighttk.analysis.nvtx import autograd_ops
from nsighttk.profile import Profile, release_free_memory

#: Columns the engine's analyses of analyze read (the CUDA reports, the headline, nsighttk's rules,
#: the collectives, the occupancy; with the NVTX reports' :data:`~nsighttk.analysis.nsys.reports.NEEDS`),
#: put into the engine at once: one read of each table.
ENGINE_COLUMNS = {
    "kernels": ["start_ns", "end_ns", "duration_ns", "name_id", "device_id", "grid_x", "grid_y", "grid_z",
                "block_x", "block_y", "block_z", "registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes"],
    "memcpy": ["start_ns", "end_ns", "duration_ns", "bytes", "kind", "label", "src_kind", "dst_kind"],
    "memset": ["start_ns", "end_ns", "duration_ns", "bytes"],
    "api": ["start_ns", "end_ns", "duration_ns", "name_id"],
}


#: Columns the collectives and nsighttk's rules read of the steady state.
STEADY_COLUMNS = {
    "kernels": ["start_ns", "end_ns", "duration_ns", "name_id", "device_id", "grid_x", "grid_y", "grid_z",
                "block_x", "block_y", "block_z"],
    "memcpy": ["duration_ns", "bytes", "kind", "src_kind", "dst_kind"],
    "api": ["duration_ns", "name_id"],
}


def _engine_columns(p: Profile, steady: bool = False) -> dict[str, list[str]]:
    """:data:`ENGINE_COLUMNS` and what the NVTX reports, the iterations, the launching calls and
    nsys' rules read (``steady``: :data:`STEADY_COLUMNS`), as ``p`` has them (a table given whole
    names its rows by ``name``): an export's table is read in one pass, whatever its columns, so
    each table is read once for them all."""
    more = [rule_queries.READS[r] for r in sorted(rule_queries.READS)]
    if not steady:
        more += [*(reports.NEEDS.get(r, {}) for r in ("nvtx_sum", "nvtx_gpu_proj_sum")), iteration_reads(p)]
    wants = engine.union(STEADY_COLUMNS if steady else ENGINE_COLUMNS, *more)
    return {t: ["name" if c == "name_id" and _eager(p, t) else c for c in cols] for t, cols in wants.items()}


@dataclass
class Overview:
    meta: dict[str, Any]
    headline: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    iterations: Iterations | None = None
    #: communication vs computation per device (NCCL/NVSHMEM kernels), on the steady state when there is
    #: one; None when the capture has no collective kernels
    collectives: CollectivesResult | None = None
    #: start-up, before the steady state, the steady state and the tail
    #: (:func:`nsighttk.analysis.iterations.phases.phases`); empty without a steady state
    phases: dict[str, Any] = field(default_factory=dict)


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


def _steady_headline(it: Iterations | None) -> dict[str, Any]:
    s = it.steady if it is not None else {}
    return {
        "iterations": len(it.table) if it is not None else 0,
        "warmup_iterations": len(s.get("warmup", [])) if s else 0,
        "steady_iterations": s.get("iterations", 0) if s else 0,
        "steady_iteration_median_ns": s["duration_ns"]["median"] if s else None,
        "steady_gpu_busy_pct": s["gpu_busy_pct"]["median"] if s else None,
    }


def _op_facts(p: Profile) -> dict[str, dict[str, int]]:
    """Per table of GPU operations: rows, first start, last end and summed duration (and, of the
    copies, their summed bytes where known); zeros for a table without rows."""
    tables = [t for t in GPU_TABLES if p.count(t)]
    out = {t: {"rows": 0, "first": 0, "last": 0, "time": 0, "bytes": 0} for t in GPU_TABLES}
    if not tables:
        return out
    eng = engine.of(p).need({t: ["start_ns", "end_ns", "duration_ns"] + (["bytes"] if t == "memcpy" else [])
                             for t in tables})
    for t in tables:
        (n, first, last, time, moved), = eng.rows(
            f"SELECT count(*), min(start_ns), max(end_ns), coalesce(sum(duration_ns::HUGEINT), 0), "
            f"{'coalesce(sum(bytes::HUGEINT), 0)' if t == 'memcpy' else '0'} FROM {t}")
        if n:
            out[t] = {"rows": int(n), "first": int(first), "last": int(last), "time": int(time), "bytes": int(moved)}
    return out


def _distinct_kernels(p: Profile) -> int:
    """Distinct kernel names (ids sharing a name are one), as the kernel summary counts them."""
    eng, _ = _kernel_names(p)
    return int(eng.rows("SELECT count(DISTINCT code) FROM kernel_names")[0][0])


def _rows(p: Profile, table: str, column: str) -> int:
    """Rows of ``table`` as the engine holds them (a damaged row dropped)."""
    if not p.count(table):
        return 0
    return int(engine.of(p).need({table: [column]}).rows(f"SELECT count(*) FROM {table}")[0][0])


#: the export's size from which analyze says what it is doing, a step at a time (1M kernels: 124 MB
#: and about 2 s; 10M: 1.5 GB and 15 s; 100M: minutes), and the rows where there is no file
PROGRESS_BYTES = 100 << 20
PROGRESS_ROWS = 1_000_000


def _steps(p: Profile) -> Callable[[str], contextlib.AbstractContextManager[None]]:
    """Each step of :func:`overview` shown as it runs (:func:`nsighttk.progress.step`) on a large
    capture (told by its file's size: counting its rows would take a while before the first line);
    on a small one (under a second) nothing."""
    source = str(p.meta.get("source") or "")
    if p.source is not None and source and os.path.isfile(source):
        large = os.path.getsize(source) >= PROGRESS_BYTES
    else:
        large = sum(p.bound(t) for t in ("kernels", "api", "nvtx")) >= PROGRESS_ROWS
    if large:
        return progress.step

    @contextlib.contextmanager
    def silent(_: str) -> Iterator[None]:
        yield

    return silent


def overview(p: Profile, iteration: str | None = None,
             more_findings: Callable[[Profile], list[Finding]] | None = None) -> Overview:
    """Headline numbers, the summary tables and the iterations of a capture; findings on the steady
    state when there is one.  ``iteration``: the ``--iteration`` value
    (:func:`nsighttk.analysis.iterations.find.iterations`); ``more_findings``: other rules to run where
    nsighttk's run (:func:`nsighttk.analysis.advice.advise`)."""
    step = _steps(p)
    with step("reading the kernels, copies, runtime calls and NVTX ranges"):
        headline = _headline(p)
    release_free_memory()
    with step("finding the iterations"):
        it = iterations(p, iteration)
        ph = phases(p, it) if it is not None and it.steady else {}
    headline.update(_steady_headline(it))
    release_free_memory()
    with step("summarising kernels, copies, calls and ranges"):
        tables, cuts = _tables(p)
    notes = list(p.notes) + (it.notes if it is not None else []) + cuts
    with step("communication and computation"):
        scope = p
        if it is not None and it.steady:  # (one cut, its columns put into its engine at once: one copy a table)
            scope = steady_profile(p, it)
            engine.of(scope).need(_engine_columns(scope, steady=True))
        comm = collectives(scope) if has_collectives(scope) else None
    release_free_memory()
    with step("what to try next (nsighttk's and nsys' rules)"):
        findings = advise(p, it, more_findings, steady=scope if scope is not p else None)
    forget_steady(p)  # (the steady state's rows: nothing below cuts it again)
    return Overview(meta=dict(p.meta), headline=headline, tables=tables, notes=notes,
                    findings=findings, iterations=it,
                    collectives=comm if comm is not None and comm.has_communication else None, phases=ph)


def _headline(p: Profile) -> dict[str, Any]:
    """The columns analyze reads fetched into the engine, and the capture's headline numbers."""
    engine.of(p).need(_engine_columns(p))
    reports.prefetch(p, ["cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_sum", "nvtx_sum", "nvtx_gpu_proj_sum"])
    ops = _op_facts(p)
    starts = [o["first"] for o in ops.values() if o["rows"]]
    span = max(o["last"] for o in ops.values() if o["rows"]) - min(starts) if starts else 0
    headline = {
        "gpu": _gpu_line(p),
        "kernels": ops["kernels"]["rows"],
        "distinct_kernels": _distinct_kernels(p) if ops["kernels"]["rows"] else 0,
        "kernel_time_ns": ops["kernels"]["time"],
        "memcpy_count": ops["memcpy"]["rows"], "memcpy_bytes": ops["memcpy"]["bytes"],
        "memcpy_time_ns": ops["memcpy"]["time"],
        "memset_count": ops["memset"]["rows"],
        "api_calls": _rows(p, "api", "duration_ns"),
        "nvtx_ranges": _rows(p, "nvtx", "start_ns"),
        "gpu_busy_ns": gpu_busy_ns(p),
        "gpu_span_ns": span,
    }
    return headline


#: rows of each NVTX summary an overview keeps, those with the most time: PyTorch's emit_nvtx numbers
#: every op call (``aten::add, seq = 123``), so a capture may have a range name per range (a 10M-kernel
#: one of 3.2M names: a JSON of 2 GB and 12.5 GB of memory to write it); the ops are summed up in
#: ``autograd_ops`` over every name first, and ``nsighttk stats -r nvtx_sum`` lists them all
NVTX_ROWS = 500


def _tables(p: Profile) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """The summary tables (nsys stats' reports and the memory bandwidth; the NVTX ones cut to
    :data:`NVTX_ROWS`), and a note for each cut.  Each step starts with the
    heap the last one freed given back to the system: the steps' large temporaries (10M kernels, 13M
    calls: 40-100 MB each) then land in pages touched anew, not on top of holes too small for them
    (10M analyze: 1,509 -> 1,373 MB resident at the peak, 0.7 s more system time)."""
    kernels = reports.cuda_gpu_kern_sum(p).frame
    if len(kernels):
        occ = kernel_occupancy(p)
        kernels = kernels.assign(**{"Theoretical Occupancy (%)": kernels["Name"].map(occ).astype("float64"),
                                    "Decoded": kernels["Name"].map(lambda n: decode(n).summary())})
    tables = {"kernels": kernels}
    steps: dict[str, Callable[[], pd.DataFrame]] = {
        "memory": lambda: memory_bandwidth(p),
        "api": lambda: reports.cuda_api_sum(p).frame,
        "gpu_sum": lambda: reports.cuda_gpu_sum(p).frame,
    }
    for name, step in steps.items():
        release_free_memory()
        tables[name] = step()
    release_free_memory()
    ops: list[pd.DataFrame] = []  # (the ops summed over every name, where the projection keeps some)
    nvtx = [reports.nvtx_sum(p, top=NVTX_ROWS),
            reports.nvtx_gpu_proj_sum(p, top=NVTX_ROWS, every=lambda f: ops.append(autograd_ops(f)))]
    tables["nvtx"], tables["nvtx_gpu"] = nvtx[0].frame, nvtx[1].frame
    tables["autograd_ops"] = ops[0] if ops else autograd_ops(tables["nvtx_gpu"])
    # (a report's "no data" reason repeats the loader's note on the missing table)
    return tables, [n for r in nvtx for n in r.notes if n not in NO_DATA.values()]
