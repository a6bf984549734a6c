"""``nsighttk ncu TARGET``: build if needed, profile the kernels with Nsight Compute, read the
report (the ``.ncu-rep``, or ncu's CSV export where ``ncu_report`` is missing), summarise each
kernel, write the run directory."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk import progress, toolchain
from nsighttk.analysis.ncu_summary import NcuSummary
from nsighttk.build import BuildConfig, arch_plan
from nsighttk.collect import ncu as collect_ncu
from nsighttk.commands import _run
from nsighttk.commands.analyze import analyze_profile
from nsighttk.errors import InputFileError, UsageError
from nsighttk.load.ncu import load_ncu_csv, load_ncu_rep
from nsighttk.report import jsonout, ncu_text
from nsighttk.runs.layout import SUMMARY_JSON, SUMMARY_MD
from nsighttk.settings import Settings, current
from nsighttk.workload.target import resolve


@dataclass
class Options:
    target: str
    args: list[str] = field(default_factory=list)
    archs: list[str] = field(default_factory=list)
    ncu: collect_ncu.NcuOptions = field(default_factory=collect_ncu.NcuOptions)
    reports_dir: Path | None = None
    echo: bool = True


@dataclass
class Result:
    run_dir: Path
    summary: NcuSummary | None
    target_rc: int | None
    record: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data = ncu_text.as_dict(self.summary) if self.summary else {}
        data["run"] = self.record
        return data


def run(opts: Options, settings: Settings | None = None) -> Result:
    settings = settings or current()
    ncu = toolchain.require_tool("ncu")
    assert ncu.path is not None
    tgt = resolve(opts.target, opts.args, BuildConfig(list(opts.archs), out_root=settings.build_root))
    gpus = toolchain.gpu_info()
    plan, message = arch_plan(tgt.build.archs if tgt.build else [], gpus[0].sm if gpus else None)
    if plan == "cannot":
        raise UsageError(message or "cannot run", "build for the GPU's arch (omit --arch) or use a newer GPU")
    if message:
        progress.warn(message)
    run_dir = _run.start(settings, opts.reports_dir, "ncu", opts.target, tgt, ncu)
    run_dir.record["gpu"] = _run.gpu_record(gpus)
    rec = run_dir.record
    rec["arch_plan"] = plan
    with _run.failures_recorded(run_dir):
        t0 = time.monotonic()
        with progress.step(f"ncu --set {opts.ncu.section_set} {' '.join(tgt.command)}"):
            cap = collect_ncu.profile(ncu.path, run_dir.raw, tgt.command, opts.ncu, echo=opts.echo)
        run_dir.timing("profile", time.monotonic() - t0)
        rec.update({"ncu_command": cap.command, "ncu_exit_code": cap.ncu_rc, "target_exit_code": cap.target_rc})
        with progress.step("loading the report"):
            try:
                profile = load_ncu_rep(cap.rep)
            except (toolchain.ToolNotFound, InputFileError) as ex:
                progress.warn(f"{ex}; reading ncu's CSV export instead")
                profile = load_ncu_csv(collect_ncu.export_details_csv(ncu.path, cap.rep, run_dir.raw))
            analysis = analyze_profile(profile)
            summary = analysis.ncu
            assert summary is not None
            run_dir.write_text(SUMMARY_MD, ncu_text.markdown(summary, f"ncu: {opts.target}"))
            run_dir.write_text(SUMMARY_JSON, jsonout.dumps(ncu_text.as_dict(summary)))
            rec["kernels_profiled"] = len(summary.kernels)
        final = _run.finish(run_dir, "ok" if cap.target_rc in (0, None) else "target_failed", analysis=analysis)
        summary.meta["source"] = str(final / "raw" / cap.rep.name)
        return Result(final, summary, cap.target_rc, rec)
