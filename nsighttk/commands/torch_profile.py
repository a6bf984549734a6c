"""``nsighttk torch TARGET``: a workload or a PyTorch script under torch.profiler, in a child
process (:mod:`nsighttk.collect.drivers.torch_main`); its Kineto trace loaded and summarised."""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk import progress, safeio, toolchain
from nsighttk.analysis.torch_ops import category_summary, kernel_table, op_summary
from nsighttk.bench import resolve_device
from nsighttk.build import resolve_archs
from nsighttk.collect import torch_profiler as collect_torch
from nsighttk.collect.torch_profiler import TorchOptions
from nsighttk.commands import _run
from nsighttk.commands.analyze import analyze_profile
from nsighttk.errors import InputFileError, ProfilerFailed, UsageError
from nsighttk.load.kineto import load_kineto
from nsighttk.profile import Profile
from nsighttk.report import jsonout
from nsighttk.runs.layout import SUMMARY_JSON
from nsighttk.settings import Settings, current
from nsighttk.workload.protocol import load_workload
from nsighttk.workload.target import Target, defines_workload


@dataclass
class Options:
    target: str
    args: list[str] = field(default_factory=list)
    torch: TorchOptions = field(default_factory=TorchOptions)
    reports_dir: Path | None = None
    echo: bool = True


@dataclass
class Result:
    run_dir: Path
    profile: Profile
    ops: pd.DataFrame
    categories: pd.DataFrame
    kernels: pd.DataFrame
    key_averages_table: str
    record: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"run": self.record, "ops": jsonout.frame_records(self.ops),
                "categories": jsonout.frame_records(self.categories), "kernels": jsonout.frame_records(self.kernels)}


def check_schedule(text: str) -> str:
    parts = text.split(",")
    if len(parts) != 4 or not all(p.strip().isdigit() for p in parts) or int(parts[2]) < 1:
        raise UsageError(f"--schedule {text!r}: expected WAIT,WARMUP,ACTIVE,REPEAT (ACTIVE >= 1)", "e.g. 1,1,3,1")
    return ",".join(p.strip() for p in parts)


def run(opts: Options, settings: Settings | None = None) -> Result:
    settings = settings or current()
    options = opts.torch
    if importlib.util.find_spec("torch") is None:
        raise toolchain.ToolNotFound("the torch.profiler path needs PyTorch", "pip install 'nsighttk[torch]'")
    import torch

    device = resolve_device(options.device)
    p = Path(opts.target)
    if p.suffix == ".py":
        safeio.check_input(p, "script")
    if p.suffix == ".py" and not defines_workload(p):
        kind, name, spec = "python", p.stem, str(p.resolve())
    else:  # a built-in workload (workload:NAME or NAME) or a .py defining WORKLOAD
        wl_spec = str(p.resolve()) if p.suffix == ".py" else opts.target.removeprefix("workload:")
        load_workload(wl_spec)  # unknown names fail here, listing the known ones
        kind, name, spec = "workload", p.stem if p.suffix == ".py" else wl_spec, wl_spec
    if options.schedule:
        options.schedule = check_schedule(options.schedule)
    if options.sort_by and options.sort_by not in collect_torch.SORT_KEYS:
        raise UsageError(f"--sort-by {options.sort_by!r} is not a key_averages column",
                         f"use one of {', '.join(collect_torch.SORT_KEYS)}")
    if options.arch:
        options.arch = resolve_archs([options.arch], settings)[0]
    if options.tensorboard:
        safeio.make_dirs(options.tensorboard, "--tensorboard")
    tgt = Target(name, kind, collect_torch.driver_command(Path("raw"), spec, list(opts.args), device, options))
    info = toolchain.ToolInfo("torch.profiler", path=torch.__file__, version=torch.__version__)
    run_dir = _run.start(settings, opts.reports_dir, "torch", opts.target, tgt, info)
    run_dir.record["gpu"] = _run.gpu_record() if device == "cuda" else None
    with _run.failures_recorded(run_dir):
        t0 = time.monotonic()
        with progress.step(f"torch.profiler: {opts.target} on {device}"):
            cap = collect_torch.profile(run_dir.raw, spec, list(opts.args), device, options, echo=opts.echo)
        run_dir.timing("profile", time.monotonic() - t0)
        run_dir.record.update({"command": cap.command, "device": device, "driver": cap.driver,
                               "target_exit_code": cap.rc})
        if cap.rc == 2 or not cap.traces:
            try:
                lines = safeio.read_head(cap.log, 1 << 20).decode(errors="replace").strip().splitlines()
            except InputFileError:
                lines = []
            last = (cap.driver or {}).get("error") or (lines or ["no output"])[-1].removeprefix("nsighttk: error: ")
            raise ProfilerFailed(f"torch.profiler run of {opts.target} failed: {last}", f"see {cap.log}")
        with progress.step("loading the trace"):
            prof = load_kineto(cap.traces[-1])
        ops, cats, kernels = op_summary(prof), category_summary(prof), kernel_table(prof)
        table_file = run_dir.raw / "key_averages.txt"
        table = safeio.read_head(table_file, 4 << 20).decode(errors="replace") if table_file.is_file() else ""
        run_dir.write_text(SUMMARY_JSON, jsonout.dumps({
            "ops": jsonout.frame_records(ops), "categories": jsonout.frame_records(cats),
            "kernels": jsonout.frame_records(kernels), "counts": prof.counts(), "driver": cap.driver}))
        final = _run.finish(run_dir, "ok" if cap.rc == 0 else "target_failed", cap.driver.get("error"),
                            analysis=analyze_profile(prof))
        return Result(final, prof, ops, cats, kernels, table, run_dir.record)
