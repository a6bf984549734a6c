"""``nsighttk nsys TARGET``: build if needed, profile with Nsight Systems (one ``nsys profile`` that
also exports SQLite), load, analyse once, write the summaries, the report and the run record.

What costs time besides nsys itself is kept off the critical path: nsys is not started a second
time to ask its version (the export says it), the GPU is read from the export (no CUDA
initialisation here), and the analysis' modules (pandas ...) are imported by a thread while nsys
profiles."""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsighttk import progress, toolchain
from nsighttk.build import BuildConfig
from nsighttk.collect import nsys as collect_nsys
from nsighttk.commands import _run
from nsighttk.runs.layout import SUMMARY_JSON, SUMMARY_MD, RunDir
from nsighttk.settings import Settings, current
from nsighttk.workload.target import resolve

if TYPE_CHECKING:
    from nsighttk.analysis.overview import Overview

#: what the steps after profiling import (pandas, the analyses, the renderers): loaded meanwhile
_AFTER_PROFILING = ("nsighttk.commands.analyze", "nsighttk.load.nsys_sqlite", "nsighttk.report.markdown",
                    "nsighttk.report.jsonout", "nsighttk.report.html", "nsighttk.report.pages",
                    "nsighttk.report.text")


def _import_meanwhile() -> threading.Thread:
    def work() -> None:
        for name in _AFTER_PROFILING:
            importlib.import_module(name)

    t = threading.Thread(target=work, name="nsighttk-imports", daemon=True)
    t.start()
    return t


@dataclass
class Options:
    target: str
    args: list[str] = field(default_factory=list)
    archs: list[str] = field(default_factory=list)
    nsys: collect_nsys.NsysOptions = field(default_factory=collect_nsys.NsysOptions)
    reports_dir: Path | None = None
    echo: bool = True


@dataclass
class Result:
    run_dir: Path
    overview: Overview | None
    target_rc: int | None
    record: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        from nsighttk.report import jsonout

        data = jsonout.overview_dict(self.overview) if self.overview else {}
        data["run"] = self.record
        return data


def write_summaries(run: RunDir, ov: Overview, title: str) -> None:
    from nsighttk.report import jsonout, markdown

    run.write_text(SUMMARY_MD, markdown.render(ov, title))
    run.write_text(SUMMARY_JSON, jsonout.dumps(jsonout.overview_dict(ov)))
    run.record.update({"summary_md": SUMMARY_MD, "summary_json": SUMMARY_JSON})


def run(opts: Options, settings: Settings | None = None) -> Result:
    settings = settings or current()
    nsys = toolchain.require_tool("nsys", version=False)
    assert nsys.path is not None
    tgt = resolve(opts.target, opts.args, BuildConfig(list(opts.archs), out_root=settings.build_root))
    run_dir = _run.start(settings, opts.reports_dir, "nsys", opts.target, tgt, nsys)
    rec = run_dir.record
    imports = _import_meanwhile()
    with _run.failures_recorded(run_dir):
        t0 = time.monotonic()
        with progress.step(f"nsys profile {' '.join(tgt.command)}"):
            cap = collect_nsys.profile(nsys.path, run_dir.raw, tgt.command, opts.nsys, echo=opts.echo)
        run_dir.timing("profile", time.monotonic() - t0)
        rec.update({"nsys_command": cap.command, "nsys_exit_code": cap.nsys_rc, "target_exit_code": cap.target_rc})
        assert cap.rep is not None
        sqlite = cap.sqlite
        if sqlite is None:  # an nsys that did not export with the capture: export now
            t0 = time.monotonic()
            with progress.step("nsys export --type sqlite"):
                sqlite = collect_nsys.export_sqlite(nsys.path, cap.rep, run_dir.raw)
            run_dir.timing("export", time.monotonic() - t0)
        t0 = time.monotonic()
        with progress.step("loading and summarising the capture"):
            imports.join()
            from nsighttk.commands.analyze import analyze_profile
            from nsighttk.load.nsys_sqlite import load_nsys_sqlite

            profile = load_nsys_sqlite(sqlite)
            rec["tools"]["nsys"]["version"] = profile.meta.get("tool_version")  # what nsys wrote in the export
            rec["gpu"] = _gpu_of(profile)
            analysis = analyze_profile(profile)
            assert analysis.overview is not None
            rec["counts"] = profile.counts()
            rec["notes"] = profile.notes
            write_summaries(run_dir, analysis.overview, f"nsys: {opts.target}")
        run_dir.timing("analyze", time.monotonic() - t0)
        status = "ok" if cap.target_rc in (0, None) else "target_failed"
        final = _run.finish(run_dir, status, analysis=analysis)
        analysis.overview.meta["source"] = str(final / "raw" / sqlite.name)
        return Result(final, analysis.overview, cap.target_rc, rec)


def _gpu_of(profile: Any) -> dict[str, Any] | None:
    """The profiled GPU, as the export records it (no CUDA initialisation here)."""
    gpus = profile.gpus
    if not len(gpus):
        return None
    g = gpus.iloc[0]
    return {"name": str(g["name"]), "compute_capability": str(g["compute_capability"])}
