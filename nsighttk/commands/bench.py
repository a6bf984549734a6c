"""``nsighttk bench WORKLOAD``: check every variant against a float64 reference and time it (see
:mod:`nsighttk.bench`); the results go into a run directory (``bench.json``, ``bench.csv``,
``report.html``) and the runs database."""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk import progress, toolchain
from nsighttk.bench import BenchConfig, BenchReport, check_csv, plan_sizes, resolve_device, run_workload, write_csv
from nsighttk.build import arch_plan, resolve_archs
from nsighttk.commands import _run
from nsighttk.errors import UsageError
from nsighttk.report import jsonout, plots
from nsighttk.runs.layout import BENCH_CSV, BENCH_JSON
from nsighttk.settings import Settings, current
from nsighttk.workload import cuda_ext
from nsighttk.workload.protocol import load_workload, select_variants


def check_cuda_arch(arch: str, settings: Settings | None = None) -> str:
    """``--arch`` for the CUDA-extension variants, checked against nvcc and the GPU."""
    sm = resolve_archs([arch], settings)[0]
    gpus = toolchain.gpu_info()
    plan, message = arch_plan([sm], gpus[0].sm if gpus else None)
    if plan == "cannot":
        raise UsageError(message or "cannot run", "use the GPU's arch (omit --arch) or an older one")
    if message:
        progress.warn(message)
    return sm


def bench_dict(report: BenchReport) -> dict[str, Any]:
    return {"workload": report.workload, "device": report.device, "dtype": report.dtype,
            "copy_gbps": report.copy_gbps, "rows": jsonout.frame_records(report.rows)}


@dataclass
class Options:
    workload: str
    variants: str | None = None
    sizes: list[int] | None = None
    dtype: str = "float32"
    device: str = "auto"
    config: BenchConfig = field(default_factory=BenchConfig)
    arch: str | None = None
    plot: Path | None = None
    csv: Path | None = None
    reports_dir: Path | None = None
    record: bool = True


@dataclass
class Result:
    report: BenchReport
    run_dir: Path | None

    def as_dict(self) -> dict[str, Any]:
        return {**bench_dict(self.report), "run_dir": str(self.run_dir) if self.run_dir else None}


def run(opts: Options, settings: Settings | None = None) -> Result:
    settings = settings or current()
    if importlib.util.find_spec("torch") is None:
        raise toolchain.ToolNotFound("benchmarks need PyTorch, which is not installed", "pip install 'nsighttk[torch]'")
    if opts.plot is not None:
        plots.check_writable(opts.plot)
    if opts.csv is not None:
        check_csv(opts.csv)
    wl = load_workload(opts.workload)
    names = select_variants(wl, [v.strip() for v in opts.variants.split(",") if v.strip()] if opts.variants else None)
    sm = check_cuda_arch(opts.arch, settings) if opts.arch else None
    device = resolve_device(opts.device)
    sizes = plan_sizes(wl, opts.sizes, opts.dtype, device)  # the device's defaults; too large: one line, no run
    run_dir = _run.start(settings, opts.reports_dir, "bench", wl.name) if opts.record else None
    with _run.failures_recorded(run_dir) if run_dir else contextlib.nullcontext(), cuda_ext.arch_scope(sm):
        report = run_workload(wl, names, sizes, opts.dtype, device, opts.config)
        if opts.plot is not None:
            plots.bandwidth_vs_size(report, opts.plot)
        if opts.csv is not None:
            write_csv(report, opts.csv)
        if run_dir is not None:
            gpus = toolchain.gpu_info()
            run_dir.record.update({"target": opts.workload, "variants": names, "dtype": opts.dtype,
                                   "device": report.device, "arch": sm, "copy_gbps": report.copy_gbps,
                                   "gpu": _run.gpu_record(gpus) if report.device == "cuda" else None})
            data = bench_dict(report)
            run_dir.write_json(BENCH_JSON, data)
            write_csv(report, run_dir.path / BENCH_CSV)
            failed = report.rows["status"].isin(["failed", "wrong result"]).any()
            report.run_dir = _run.finish(run_dir, "partial" if failed else "ok", artifacts={"bench": data})
    return Result(report, report.run_dir)
