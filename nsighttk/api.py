"""The library facade: one function per CLI command, each a walk down the pipeline
(workload -> build -> collect -> run directory -> load -> Profile -> analysis -> report).

Use it from Python as well::

    from nsighttk import api
    profile = api.load("capture.sqlite")          # Profile: pandas tables
    kern = api.report("cuda_gpu_kern_sum", profile)  # DataFrame, nsys' columns
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk import progress, toolchain
from nsighttk.analysis import nsys_reports
from nsighttk.analysis.join import join_nsys_ncu
from nsighttk.analysis.ncu_summary import NcuSummary
from nsighttk.analysis.ncu_summary import summarize as summarize_ncu
from nsighttk.analysis.overview import Overview, overview
from nsighttk.bench import BenchConfig, BenchReport, run_workload
from nsighttk.build import BuildConfig, check_archs
from nsighttk.collect import ncu as collect_ncu
from nsighttk.collect import nsys as collect_nsys
from nsighttk.collect import torch_profiler as collect_torch
from nsighttk.collect.torch_profiler import TorchOptions
from nsighttk.errors import InputFileError, NsightTKError, ProfilerFailed, UsageError
from nsighttk.load.kineto import load_kineto
from nsighttk.load.ncu import load_ncu_csv, load_ncu_rep
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import Profile, release_free_memory
from nsighttk.report import jsonout, markdown, ncu_text, nsys_format, plots
from nsighttk.rundir import RunDir, default_root
from nsighttk.workload import Target, defines_workload, load_workload, resolve, select_variants

# ------------------------------------------------------------------------------------- loading


def load(path: str | Path) -> Profile:
    """Load any supported export into a Profile (read-only; ``.nsys-rep`` needs nsys)."""
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"{p}: no such file", "check the path")
    if p.is_dir():
        run_json = p / "run.json"
        raw = p / "raw"
        sqlite = sorted(raw.glob("*.sqlite")) if raw.is_dir() else []
        traces = sorted([*raw.glob("*.pt.trace.json*"), *raw.glob("trace*.json*")]) if raw.is_dir() else []
        if run_json.is_file() and sqlite:
            return load_nsys_sqlite(sqlite[0])
        if run_json.is_file() and traces:
            return load_kineto(traces[0])
        raise InputFileError(f"{p}: is a directory, not an export",
                             "give a .sqlite or .nsys-rep file (or a run directory)")
    suffix = p.suffix.lower()
    if suffix not in (".nsys-rep", ".ncu-rep", ".csv", ".json", ".gz", ".sqlite", ".db"):
        with p.open("rb") as fh:
            is_sqlite = fh.read(16) == b"SQLite format 3\x00"
        if not is_sqlite:
            raise InputFileError(f"{p}: not a capture nsighttk reads",
                                 "give an nsys .sqlite/.nsys-rep, an ncu .ncu-rep or --csv export, or a run directory")
    if suffix == ".nsys-rep":
        return _load_nsys_rep(p)
    if suffix == ".ncu-rep":
        return load_ncu_rep(p)
    if suffix == ".csv":
        return load_ncu_csv(p)
    if suffix in (".json", ".gz"):
        return load_kineto(p)
    return load_nsys_sqlite(p)


def _load_nsys_rep(rep: Path) -> Profile:
    nsys = toolchain.find_tool("nsys")
    if not nsys.path:
        raise toolchain.ToolNotFound(f"{rep}: reading .nsys-rep files needs nsys, which is not installed here",
                                     "export it where nsys is (nsys export --type sqlite), then give the .sqlite")
    with tempfile.TemporaryDirectory(prefix="nsighttk-") as tmp:
        with progress.step(f"exporting {rep.name} to SQLite"):
            sqlite = collect_nsys.export_sqlite(nsys.path, rep, Path(tmp))
        profile = load_nsys_sqlite(sqlite)
    profile.meta["source"] = str(rep)
    return profile


# --------------------------------------------------------------------------------------- stats

FORMATS = ("table", "csv", "json")
_EXT = {"table": "txt", "csv": "csv", "json": "json"}


def parse_reports(spec: str | None) -> list[str]:
    """``"a,b"`` -> report names; unknown names are a clear error listing the known ones."""
    if not spec:
        return list(nsys_reports.DEFAULT_REPORTS)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if names == ["all"]:
        return list(nsys_reports.REPORTS)
    bad = [n for n in names if n not in nsys_reports.REPORTS and n not in nsys_reports.ALIASES]
    if bad:
        raise UsageError(f"unknown report {', '.join(bad)}", f"known: {', '.join(nsys_reports.REPORTS)}")
    return names


def render_report(result: nsys_reports.ReportResult, fmt: str) -> str:
    """A report as text in ``fmt`` ("" when it has no rows, as nsys writes an empty file)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    if fmt == "csv":
        buf = io.StringIO()
        nsys_format.write_csv(result.frames(), buf)
        return buf.getvalue()
    frame = result.frame
    if frame.empty:
        return ""
    return nsys_format.to_json(frame) if fmt == "json" else nsys_format.to_table(frame)


@dataclass
class StatsOutput:
    report: str
    title: str
    text: str | None  # None when written to ``path``
    notes: list[str]
    path: Path | None = None
    rows: bool = True  # False: the report had no rows (its file is empty, as nsys')


def stats(path: str | Path, reports: str | None = None, fmt: str = "table", output: str | None = None,
          force_overwrite: bool = False) -> list[StatsOutput]:
    """``nsys stats`` without nsys: run the reports on an export.

    Without ``output`` the rendered text is returned; with it, each report is written (CSV is
    streamed, so even a million-row trace is never held as text) to ``PREFIX_<report>.<ext>``."""
    names = parse_reports(reports)
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    targets: dict[str, Path] = {}
    if output and output != "-":
        for n in names:
            out = Path(f"{output}_{n}.{_EXT[fmt]}")
            if out.exists() and not force_overwrite:
                raise UsageError(f"{out} already exists", "pass --force-overwrite to replace it, or choose another -o")
            targets[n] = out
        parent = Path(output).parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as ex:
            raise UsageError(f"cannot write under {parent}: {ex.strerror}", "choose another -o PREFIX") from None
        if not os.access(parent, os.W_OK):
            raise UsageError(f"cannot write under {parent}: permission denied", "choose another -o PREFIX")
    profile = load(path)
    if profile.meta.get("tool") == "ncu":
        raise UsageError(f"{path}: an Nsight Compute capture; nsys reports need an nsys export",
                         f"use: nsighttk analyze {path}")
    results = []
    for i, n in enumerate(names):
        nsys_reports.release_memos(profile, names[i:])
        release_free_memory()
        res = nsys_reports.run_report(n, profile)
        if n not in targets:
            text = render_report(res, fmt)
            results.append(StatsOutput(n, res.title, text, res.notes, rows=bool(text)))
            continue
        targets[n].parent.mkdir(parents=True, exist_ok=True)
        with targets[n].open("w", newline="") as fh:
            if fmt == "csv":
                wrote = nsys_format.write_csv(res.frames(), fh)
            else:
                text = render_report(res, fmt)
                fh.write(text)
                wrote = bool(text)
        results.append(StatsOutput(n, res.title, None, res.notes, targets[n], rows=wrote))
    return results


def report(name: str, profile: Profile) -> pd.DataFrame:
    """One nsys report as a DataFrame (sizes in bytes)."""
    if name not in nsys_reports.REPORTS and name not in nsys_reports.ALIASES:
        raise UsageError(f"unknown report {name}", f"known: {', '.join(nsys_reports.REPORTS)}")
    return nsys_reports.run_report(name, profile).frame


# ------------------------------------------------------------------------------------- analyze


def analyze(path: str | Path) -> Overview | NcuSummary:
    """The human summary of an existing capture (any machine, no GPU needed): an nsys overview,
    or the per-kernel summary of an Nsight Compute capture."""
    profile = load(path)
    if profile.meta.get("tool") == "ncu":
        return summarize_ncu(profile)
    return overview(profile)


def join(path_a: str | Path, path_b: str | Path) -> pd.DataFrame:
    """One per-kernel table from an nsys capture and an ncu capture (in either order)."""
    a, b = load(path_a), load(path_b)
    kinds = {a.meta.get("tool"), b.meta.get("tool")}
    if kinds != {"nsys", "ncu"}:
        raise UsageError("joining needs one nsys capture and one Nsight Compute capture",
                         f"got {a.meta.get('tool')} ({path_a}) and {b.meta.get('tool')} ({path_b})")
    nsys_p, ncu_p = (a, b) if a.meta.get("tool") == "nsys" else (b, a)
    if nsys_p.kernels.empty:
        raise UsageError("the nsys capture has no kernels to join", "was CUDA traced?")
    return join_nsys_ncu(nsys_p, summarize_ncu(ncu_p))


def write_summaries(directory: Path, ov: Overview, title: str) -> dict[str, str]:
    md = directory / "summary.md"
    md.write_text(markdown.render(ov, title))
    js = directory / "summary.json"
    js.write_text(jsonout.dumps(jsonout.overview_dict(ov)))
    return {"summary_md": str(md), "summary_json": str(js)}


# ---------------------------------------------------------------------------------------- nsys


def _start_run(tool: str, target: str, tgt: Target, info: toolchain.ToolInfo, root: Path | None) -> RunDir:
    """A new run directory whose run.json starts with the target, the tool, the GPU and the build."""
    run = RunDir(root or default_root(), tool, tgt.name)
    gpus = toolchain.gpu_info()
    run.record.update({
        "target": target, "target_kind": tgt.kind, "command": tgt.command,
        "tools": {tool: {"path": info.path, "version": info.version}},
        "gpu": {"name": gpus[0].name, "compute_capability": gpus[0].compute_capability} if gpus else None,
    })
    if tgt.build:
        run.record["build"] = {"source": str(tgt.build.source), "binary": str(tgt.build.binary),
                               "archs": tgt.build.archs, "cached": tgt.build.cached,
                               "nvcc_command": tgt.build.command}
        run.record["arch"] = tgt.build.archs
    return run


@contextmanager
def _failures_recorded(run: RunDir) -> Iterator[None]:
    """On any failure, finish ``run`` as failed (keeping what it produced) and name it in the error."""
    try:
        yield
    except NsightTKError as ex:
        if run.final_path is None:
            tmp = str(run.path)
            final = run.finish("failed", str(ex))
            ex.message = ex.message.replace(tmp, str(final)) + f" [run directory kept: {final}]"
            if ex.hint:
                ex.hint = ex.hint.replace(tmp, str(final))
        raise
    except BaseException as ex:  # keep what was produced even on Ctrl-C or a bug
        if run.final_path is None:
            run.finish("failed", f"{type(ex).__name__}: {ex}")
        raise


@dataclass
class NsysRun:
    run_dir: Path
    overview: Overview | None
    target_rc: int | None
    record: dict[str, Any] = field(default_factory=dict)


def nsys_run(target: str, args: list[str] | None = None, options: collect_nsys.NsysOptions | None = None,
             build_config: BuildConfig | None = None, root: Path | None = None, echo: bool = True) -> NsysRun:
    """Build if needed, profile with nsys, export, load, summarise; write a run directory."""
    options = options or collect_nsys.NsysOptions()
    nsys = toolchain.require_tool("nsys")
    assert nsys.path is not None
    tgt = resolve(target, args, build_config)
    run = _start_run("nsys", target, tgt, nsys, root)
    rec = run.record
    with _failures_recorded(run):
        t0 = time.monotonic()
        with progress.step(f"nsys profile {' '.join(tgt.command)}"):
            cap = collect_nsys.profile(nsys.path, run.raw, tgt.command, options, echo=echo)
        run.timing("profile", time.monotonic() - t0)
        rec.update({"nsys_command": cap.command, "nsys_exit_code": cap.nsys_rc, "target_exit_code": cap.target_rc})
        t0 = time.monotonic()
        assert cap.rep is not None
        with progress.step("nsys export --type sqlite"):
            sqlite = collect_nsys.export_sqlite(nsys.path, cap.rep, run.raw)
        run.timing("export", time.monotonic() - t0)
        t0 = time.monotonic()
        with progress.step("loading and summarising the capture"):
            profile = load_nsys_sqlite(sqlite)
            ov = overview(profile)
            rec["counts"] = profile.counts()
            rec["notes"] = profile.notes
            rec.update(write_summaries(run.path, ov, f"nsys: {target}"))
        run.timing("analyze", time.monotonic() - t0)
        run.html_profile = profile
        status = "ok" if cap.target_rc in (0, None) else "target_failed"
        final = run.finish(status)
        ov.meta["source"] = str(final / "raw" / sqlite.name)
        return NsysRun(final, ov, cap.target_rc, rec)


# ----------------------------------------------------------------------------------------- ncu


def arch_plan(built: list[str], gpu_sm: str | None) -> tuple[str, str | None]:
    """How a binary built for ``built`` runs on the GPU: ("native"|"jit"|"cannot", message)."""
    if not gpu_sm or not built:
        return "native", None
    gpu = int(gpu_sm[3:].rstrip("af"))
    nums = [int(a[3:].rstrip("af")) for a in built]
    if any(n // 10 == gpu // 10 and n <= gpu for n in nums):
        return "native", None
    ptx = max(nums)
    if ptx <= gpu:
        return "jit", (f"built for {', '.join(built)} but the GPU is {gpu_sm}: the driver will JIT-compile the "
                       f"compute_{ptx} PTX at load time, so the SASS that runs (and that ncu profiles) is not "
                       f"what nvcc would "
                       f"emit for {gpu_sm}")
    return "cannot", f"built for {', '.join(built)}, which a {gpu_sm} GPU cannot run (no SASS or PTX it accepts)"


@dataclass
class NcuRun:
    run_dir: Path
    summary: NcuSummary | None
    target_rc: int | None
    record: dict[str, Any] = field(default_factory=dict)


def ncu_run(target: str, args: list[str] | None = None, options: collect_ncu.NcuOptions | None = None,
            build_config: BuildConfig | None = None, root: Path | None = None, echo: bool = True) -> NcuRun:
    """Build if needed, profile with ncu, load the report, summarise each kernel; run directory."""
    options = options or collect_ncu.NcuOptions()
    ncu = toolchain.require_tool("ncu")
    assert ncu.path is not None
    tgt = resolve(target, args, build_config)
    gpus = toolchain.gpu_info()
    plan, message = arch_plan(tgt.build.archs if tgt.build else [], gpus[0].sm if gpus else None)
    if plan == "cannot":
        raise UsageError(message or "cannot run", "build for the GPU's arch (omit --arch) or use a newer GPU")
    if message:
        progress.warn(message)
    run = _start_run("ncu", target, tgt, ncu, root)
    rec = run.record
    rec["arch_plan"] = plan
    with _failures_recorded(run):
        t0 = time.monotonic()
        with progress.step(f"ncu --set {options.section_set} {' '.join(tgt.command)}"):
            cap = collect_ncu.profile(ncu.path, run.raw, tgt.command, options, echo=echo)
        run.timing("profile", time.monotonic() - t0)
        rec.update({"ncu_command": cap.command, "ncu_exit_code": cap.ncu_rc, "target_exit_code": cap.target_rc})
        with progress.step("loading the report"):
            try:
                profile = load_ncu_rep(cap.rep)
            except (toolchain.ToolNotFound, InputFileError) as ex:
                progress.warn(f"{ex}; reading ncu's CSV export instead")
                profile = load_ncu_csv(collect_ncu.export_details_csv(ncu.path, cap.rep, run.raw))
            summary = summarize_ncu(profile)
            (run.path / "summary.md").write_text(ncu_text.markdown(summary, f"ncu: {target}"))
            (run.path / "summary.json").write_text(jsonout.dumps(ncu_text.as_dict(summary)))
            rec["kernels_profiled"] = len(summary.kernels)
        run.html_profile = profile
        final = run.finish("ok" if cap.target_rc in (0, None) else "target_failed")
        summary.meta["source"] = str(final / "raw" / cap.rep.name)
        return NcuRun(final, summary, cap.target_rc, rec)


def bench(workload: str, variants: str | None = None, sizes: list[int] | None = None, dtype: str = "float32",
          device: str = "auto", config: BenchConfig | None = None, arch: str | None = None,
          plot_path: Path | None = None, root: Path | None = None, record: bool = True) -> BenchReport:
    """Check and time a workload's variants (``nsighttk bench``); ``arch``: what the CUDA variants
    are built for; ``plot_path``: also draw bandwidth against size.  Unless ``record`` is false the
    results also go into a run directory (``bench.json``, ``bench.csv``) and the runs database."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise toolchain.ToolNotFound("benchmarks need PyTorch, which is not installed",
                                     "pip install 'nsighttk[torch]'") from None
    if plot_path is not None:
        plots.check_writable(plot_path)
    wl = load_workload(workload)
    names = select_variants(wl, [v.strip() for v in variants.split(",") if v.strip()] if variants else None)
    if arch:
        set_cuda_arch(arch)
    run = RunDir(root or default_root(), "bench", wl.name) if record else None
    with _failures_recorded(run) if run else contextlib.nullcontext():
        report = run_workload(wl, names, sizes or list(wl.sizes), dtype, device, config)
        if plot_path is not None:
            plots.bandwidth_vs_size(report, plot_path)
        if run is not None:
            gpus = toolchain.gpu_info()
            run.record.update({"target": workload, "variants": names, "dtype": dtype, "device": report.device,
                               "arch": arch, "copy_gbps": report.copy_gbps,
                               "gpu": {"name": gpus[0].name, "compute_capability": gpus[0].compute_capability}
                               if gpus and report.device == "cuda" else None})
            run.write_json("bench.json", bench_dict(report))
            report.rows.to_csv(run.path / "bench.csv", index=False)
            failed = report.rows["status"].isin(["failed", "wrong result"]).any()
            report.run_dir = run.finish("partial" if failed else "ok")
    return report


def bench_dict(report: BenchReport) -> dict[str, Any]:
    return {"workload": report.workload, "device": report.device, "dtype": report.dtype,
            "copy_gbps": report.copy_gbps, "rows": jsonout.frame_records(report.rows)}


def set_cuda_arch(arch: str) -> str:
    """Check ``--arch`` for the CUDA-extension variants against nvcc and the GPU, then use it."""
    from nsighttk import cuda_ext

    sm = check_archs([arch])[0]
    gpus = toolchain.gpu_info()
    plan, message = arch_plan([sm], gpus[0].sm if gpus else None)
    if plan == "cannot":
        raise UsageError(message or "cannot run", "use the GPU's arch (omit --arch) or an older one")
    if message:
        progress.warn(message)
    cuda_ext.set_arch(sm)
    return sm


def doctor() -> dict[str, Any]:
    return toolchain.doctor()


def clean_tmp(root: Path | None = None) -> int:
    """Remove ``.tmp-*`` run directories left by interrupted runs; returns how many."""
    n = 0
    for d in (root or default_root()).glob(".tmp-*"):
        shutil.rmtree(d, ignore_errors=True)
        n += 1
    return n


# ----------------------------------------------------------------------------------------- torch


@dataclass
class TorchRun:
    run_dir: Path
    profile: Profile
    ops: pd.DataFrame
    categories: pd.DataFrame
    kernels: pd.DataFrame
    key_averages_table: str
    record: dict[str, Any] = field(default_factory=dict)


def _check_schedule(text: str) -> str:
    parts = text.split(",")
    if len(parts) != 4 or not all(p.strip().isdigit() for p in parts) or int(parts[2]) < 1:
        raise UsageError(f"--schedule {text!r}: expected WAIT,WARMUP,ACTIVE,REPEAT (ACTIVE >= 1)", "e.g. 1,1,3,1")
    return ",".join(p.strip() for p in parts)


def _writable_dir(path: Path, option: str) -> None:
    """Create ``path`` (and parents) now, so a bad path fails before any profiling."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as ex:
        raise UsageError(f"{option} {path}: cannot create it ({ex.strerror})", f"choose another {option}") from None
    if not os.access(path, os.W_OK):
        raise UsageError(f"{option} {path}: not writable", f"choose another {option}")


def torch_run(target: str, args: list[str] | None = None, options: TorchOptions | None = None,
              root: Path | None = None, echo: bool = True) -> TorchRun:
    """Run a workload or script under torch.profiler in a subprocess; load its trace; summarise."""
    from nsighttk.analysis.torch_ops import category_summary, kernel_table, op_summary
    from nsighttk.bench import resolve_device

    options = options or TorchOptions()
    try:
        import torch
    except ImportError:
        raise toolchain.ToolNotFound("the torch.profiler path needs PyTorch", "pip install 'nsighttk[torch]'") from None
    device = resolve_device(options.device)
    p = Path(target)
    if p.suffix == ".py" and not p.is_file():
        raise InputFileError(f"{target}: no such file", "check the path")
    if p.suffix == ".py" and not defines_workload(p):
        kind, name, spec = "python", p.stem, str(p.resolve())
    else:  # a built-in workload (workload:NAME or NAME) or a .py defining WORKLOAD
        wl_spec = str(p.resolve()) if p.suffix == ".py" else target.removeprefix("workload:")
        load_workload(wl_spec)  # unknown names fail here, listing the known ones
        kind, name, spec = "workload", p.stem if p.suffix == ".py" else wl_spec, wl_spec
    if options.schedule:
        options.schedule = _check_schedule(options.schedule)
    if options.sort_by and options.sort_by not in collect_torch.SORT_KEYS:
        raise UsageError(f"--sort-by {options.sort_by!r} is not a key_averages column",
                         f"use one of {', '.join(collect_torch.SORT_KEYS)}")
    if options.tensorboard:
        _writable_dir(options.tensorboard, "--tensorboard")
    tgt = Target(name, kind, collect_torch.driver_command(Path("raw"), spec, list(args or []), device, options))
    info = toolchain.ToolInfo("torch.profiler", path=torch.__file__, version=torch.__version__)
    run = _start_run("torch", target, tgt, info, root)
    with _failures_recorded(run):
        t0 = time.monotonic()
        with progress.step(f"torch.profiler: {target} on {device}"):
            cap = collect_torch.profile(run.raw, spec, list(args or []), device, options, echo=echo)
        run.timing("profile", time.monotonic() - t0)
        run.record.update({"command": cap.command, "device": device, "driver": cap.driver,
                           "target_exit_code": cap.rc})
        if cap.rc == 2 or not cap.traces:
            lines = cap.log.read_text(errors="replace").strip().splitlines() or ["no output"]
            raise ProfilerFailed(f"torch.profiler run of {target} failed: "
                                 f"{lines[-1].removeprefix('nsighttk: error: ')}", f"see {cap.log}")
        with progress.step("loading the trace"):
            prof = load_kineto(cap.traces[-1])
        ops, cats, kernels = op_summary(prof), category_summary(prof), kernel_table(prof)
        table_file = run.raw / "key_averages.txt"
        table = table_file.read_text() if table_file.is_file() else ""
        (run.path / "summary.json").write_text(jsonout.dumps({
            "ops": jsonout.frame_records(ops), "categories": jsonout.frame_records(cats),
            "kernels": jsonout.frame_records(kernels), "counts": prof.counts(), "driver": cap.driver}))
        run.html_profile = prof
        final = run.finish("ok" if cap.rc == 0 else "target_failed", cap.driver.get("error"))
        return TorchRun(final, prof, ops, cats, kernels, table, run.record)


@dataclass
class ModelRun:
    run_dir: Path
    comparison: dict[str, Any]
    record: dict[str, Any] = field(default_factory=dict)


def model_run(name: str, config: Any, root: Path | None = None, output_dir: Path | None = None,
              on_config: Any = None) -> ModelRun:
    """``nsighttk model NAME``: profile the model over its grid (see :mod:`nsighttk.model`) in a run
    directory, copied to ``output_dir`` when given (refused up front if that would replace a file)."""
    from nsighttk import model as model_mod

    try:
        import torch
    except ImportError:
        raise toolchain.ToolNotFound("models need PyTorch", "pip install 'nsighttk[torch]'") from None
    if name not in model_mod.MODELS:
        raise UsageError(f"unknown model {name!r}", f"models: {', '.join(model_mod.MODELS)}")
    if output_dir is not None:
        clash = [f for f in model_mod.output_names(config) if (output_dir / f).exists()]
        if clash:
            raise UsageError(f"{output_dir} already holds {clash[0]}" + (f" and {len(clash) - 1} more result files"
                                                                          if len(clash) > 1 else ""),
                             "choose another --output-dir; nsighttk does not overwrite results")
        _writable_dir(output_dir, "--output-dir")
    tgt = Target(name, "model", [name])
    info = toolchain.ToolInfo("torch.profiler", path=torch.__file__, version=torch.__version__)
    run = _start_run("model", name, tgt, info, root)
    run.record["config"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(config).items()}
    with _failures_recorded(run):
        comparison = model_mod.run_model(name, config, run.path, on_config)
        failed = [c for c in comparison["configs"] if c["status"] != "ok"]
        final = run.finish("ok" if not failed else "partial",
                           "; ".join(c.get("error", "") for c in failed) or None)
    if output_dir is not None:
        shutil.copytree(final, output_dir, dirs_exist_ok=True)
    return ModelRun(final, comparison, run.record)


# --------------------------------------------------------------------------------------- inspect


@dataclass
class InspectRun:
    run_dir: Path
    kernels: pd.DataFrame  # one row per compiled kernel (see nsighttk.load.compiled), with the variant
    output_code: dict[str, list[Path]]  # Inductor's generated modules per variant
    skipped: dict[str, str]
    mode: str  # "jit" (compiled on this GPU) or "ahead-of-time for sm_XX"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _inspectable(wl: Any, names: list[str] | None) -> list[str]:
    can = [n for n, v in wl.variants.items() if {"triton", "compile"} & set(v.requires)]
    if not names:
        if not can:
            raise UsageError(f"workload {wl.name} has no Triton or torch.compile variant to inspect",
                             "CUDA-extension kernels: cuobjdump -sass build/torch_ext/<arch>/*.so")
        return can
    chosen = select_variants(wl, names)
    bad = [n for n in chosen if n not in can]
    if bad:
        raise UsageError(f"{', '.join(bad)}: not a Triton or torch.compile variant of {wl.name}",
                         f"inspectable: {', '.join(can) or 'none'}")
    return chosen


def inspect(workload: str, variants: str | None = None, arch: str | None = None, size: int | None = None,
            dtype: str = "float32", root: Path | None = None, echo: bool = False, aot: bool = False) -> InspectRun:
    """Compile a workload's Triton and torch.compile variants and keep what was generated: PTX,
    SASS, registers, spills, shared memory and occupancy per kernel, Inductor's code
    (``nsighttk inspect``).  Without a GPU (or with ``aot``), Triton kernels are compiled ahead of
    time for ``arch``."""
    from nsighttk.analysis.occupancy import compiled_occupancy
    from nsighttk.arch import limits_for, normalize_sm
    from nsighttk.build import default_archs
    from nsighttk.collect.compiled import compile_variant
    from nsighttk.load.compiled import variant_kernels

    try:
        import torch  # noqa: F401
    except ImportError:
        raise toolchain.ToolNotFound("inspect needs PyTorch", "pip install 'nsighttk[torch]'") from None
    if size is not None and size < 1:
        raise UsageError(f"--size {size}: a workload needs at least one element", "omit --size for the smallest size")
    wl = load_workload(workload)
    names = _inspectable(wl, [v.strip() for v in variants.split(",") if v.strip()] if variants else None)
    gpus = () if aot else toolchain.gpu_info()
    sm = normalize_sm(arch or os.environ.get("NSIGHTTK_ARCH") or default_archs()[0])
    try:  # an arch nsighttk has occupancy limits for; an older one fails here, not after compiling
        limits_for(sm)
    except UsageError as ex:
        raise UsageError(f"--arch {sm}: {ex.message}", ex.hint) from None
    if gpus and arch and normalize_sm(arch) != gpus[0].sm:
        progress.warn(f"on this GPU Triton compiles for {gpus[0].sm}; --arch {sm} applies with --aot or without a GPU")
    cuobjdump = toolchain.require_tool("cuobjdump")
    run = RunDir(root or default_root(), "inspect", wl.name)
    run.record.update({"target": workload, "variants": names, "dtype": dtype, "size": size, "arch": sm,
                       "tools": {"cuobjdump": {"path": cuobjdump.path, "version": cuobjdump.version}},
                       "gpu": {"name": gpus[0].name, "compute_capability": gpus[0].compute_capability}
                       if gpus else None})
    frames, output_code, skipped, mode = [], {}, {}, "jit" if gpus else f"ahead-of-time for {sm}"
    with _failures_recorded(run):
        for i, name in enumerate(names, 1):
            t0 = time.monotonic()
            with progress.step(f"[{i}/{len(names)}] compiling {wl.name}/{name}"):
                c = compile_variant(run.path, workload, name, sm, size, dtype, bool(gpus), echo=echo)
            run.timing(name, time.monotonic() - t0)
            if c.rc == 2:
                skipped[name] = c.error or "cannot run here"
                continue
            if c.rc != 0:
                raise ProfilerFailed(f"compiling {wl.name}/{name} failed: {c.error}", f"see {c.log}")
            k = variant_kernels(c.dir, str(cuobjdump.path), run.path)
            frames.append(k.assign(variant=name))
            output_code[name] = [p.relative_to(run.path) for p in c.output_code]
        cols = ["variant", *[c for c in (frames[0].columns if frames else []) if c != "variant"]]
        kernels = compiled_occupancy(pd.concat(frames, ignore_index=True)[cols]) if frames else pd.DataFrame()
        run.record.update({"mode": mode, "skipped": skipped})
        run.write_json("kernels.json", {"mode": mode, "kernels": jsonout.frame_records(kernels),
                                        "output_code": {k: [str(p) for p in v] for k, v in output_code.items()},
                                        "skipped": skipped})
        final = run.finish("ok" if frames else "skipped", "; ".join(f"{k}: {v}" for k, v in skipped.items()) or None)
    return InspectRun(final, kernels, output_code, skipped, mode)


# ------------------------------------------------------------------------------ runs, compare


def runs_db(path: Path | str | None = None, create: bool = True) -> Any:
    """The runs database; ``create=False`` (reading commands): a missing file is an error, not a new
    empty database and folders nobody asked for."""
    from nsighttk.runsdb import RunsDB

    return RunsDB(path, create=create)


def runs_rm(refs: list[str], delete_files: bool = False) -> list[dict[str, Any]]:
    """Forget runs (all found first: an unknown id removes nothing); their directories stay unless
    ``delete_files``.  Returns the removed rows."""
    db = runs_db(create=False)
    found = [db.get(r) for r in refs]
    for r in found:
        db.remove(r["id"])
        if delete_files and r.get("run_dir") and Path(r["run_dir"]).is_dir():
            shutil.rmtree(r["run_dir"])
    return found


def ranks(captures: list[Path]) -> pd.DataFrame:
    """One row per rank of a multi-process run (one nsys capture per rank); see analysis.ranks."""

    if len(captures) < 2:
        raise UsageError("give the captures of two or more ranks", "e.g. nsighttk ranks reports/rank*.sqlite")
    return _rank_table(captures)


def _rank_table(captures: list[Path]) -> pd.DataFrame:
    from nsighttk.analysis.ranks import rank_summary

    profiles = {}
    for c in captures:
        p = load(c)
        if p.meta.get("tool") != "nsys":
            raise UsageError(f"{c}: not an nsys capture", "give one nsys .sqlite/.nsys-rep per rank")
        profiles[Path(c).name] = p
    return rank_summary(profiles)


@dataclass
class RanksRun:
    run_dir: Path
    table: pd.DataFrame
    command: list[str]
    rc: int


def ranks_run(launcher: list[str], target: list[str], var: str | None = None,
              options: collect_nsys.NsysOptions | None = None, root: Path | None = None,
              echo: bool = True) -> RanksRun:
    """``nsighttk ranks --launch``: run ``target`` under ``launcher`` with nsys per rank
    (``rank%q{VAR}``), then the summary across ranks; one run directory for all of them."""
    import shlex
    import subprocess

    options = options or collect_nsys.NsysOptions()
    if not launcher or not target:
        raise UsageError("--launch needs a launcher and a command after --", 'e.g. --launch "srun -n 4" -- ./app')
    if shutil.which(launcher[0]) is None:
        raise toolchain.ToolNotFound(f"{launcher[0]}: launcher not found", "is it on PATH (module load ...)?")
    if var is None:
        flavour = None
        if Path(launcher[0]).name in ("mpirun", "mpiexec"):
            r = subprocess.run([launcher[0], "--version"], capture_output=True, text=True)
            flavour = (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr).strip() else None
        var = collect_nsys.rank_var(launcher, flavour)
        if var is None:
            raise UsageError(f"which variable holds the rank under {shlex.join(launcher)}?",
                             "pass --rank-var (SLURM_PROCID, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK ...)")
    nsys = toolchain.require_tool("nsys")
    assert nsys.path is not None
    name = _program_name(target)
    run = RunDir(root or default_root(), "ranks", name)
    run.record.update({"target": name, "command": target, "launcher": launcher, "rank_var": var,
                       "tools": {"nsys": {"path": nsys.path, "version": nsys.version}}})
    with _failures_recorded(run):
        t0 = time.monotonic()
        with progress.step(f"{shlex.join(launcher)} nsys profile -o rank%q{{{var}}} ..."):
            cmd, rc, sqlites = collect_nsys.profile_ranks(nsys.path, run.raw, launcher, target, var, options, echo)
        run.timing("profile", time.monotonic() - t0)
        run.record.update({"nsys_command": cmd, "launcher_exit_code": rc, "ranks": len(sqlites)})
        table = _rank_table(sqlites)
        (run.path / "ranks.json").write_text(jsonout.dumps(jsonout.frame_records(table)))
        final = run.finish("ok" if rc == 0 else "target_failed")
    return RanksRun(final, table, cmd, rc)


def _program_name(cmd: list[str]) -> str:
    """What a command runs: ``./app`` -> app, ``python3 train.py`` -> train, ``python3 -m pkg.mod`` -> mod."""
    if Path(cmd[0]).name.startswith("python") and len(cmd) > 1:
        if cmd[1] == "-m" and len(cmd) > 2:
            return cmd[2].rsplit(".", 1)[-1]
        return Path(cmd[1]).stem
    return Path(cmd[0]).name


def runs_import(path: Path, db_path: Path | str | None = None) -> list[str]:
    """Record a run directory, or every run directory under ``path``; returns the ids."""
    from nsighttk.rundir import summary_tables

    if not path.is_dir():
        raise InputFileError(f"{path}: no such directory", "give a run directory or a reports folder")
    dirs = [path] if (path / "run.json").is_file() else sorted(p.parent for p in path.glob("*/run.json")
                                                                if not p.parent.name.startswith(".tmp-"))
    if not dirs:
        raise InputFileError(f"{path}: no run.json in it or in its subfolders", "give an nsighttk run directory")
    db = runs_db(db_path)
    ids = []
    for d in dirs:
        try:
            data = json.loads((d / "run.json").read_text())
        except ValueError as ex:
            raise InputFileError(f"{d / 'run.json'}: not valid JSON ({ex})",
                                 "is it an nsighttk run directory?") from None
        data["run_dir"] = str(d)
        ids.append(db.record(data, summary_tables(d)))
    return ids


@dataclass
class Side:
    label: str
    target: str | None
    tables: dict[str, list[dict[str, Any]]]


def _side(ref: str, db_path: Path | str | None) -> Side:
    from nsighttk.rundir import summary_tables

    p = Path(ref)
    if p.is_dir() and (p / "run.json").is_file():
        data = _read_json(p / "run.json")
        return Side(p.name, data.get("target") or data.get("workload"), summary_tables(p))
    if p.is_file():
        prof = load(p)
        if prof.meta.get("tool") == "ncu":
            return Side(p.name, p.stem, {"ncu_kernels": ncu_text.as_dict(summarize_ncu(prof))["kernels"]})
        d = jsonout.overview_dict(overview(prof))
        return Side(p.name, p.stem, {"kernels": d["tables"]["kernels"], "nvtx": d["tables"]["nvtx_gpu"]})
    db = runs_db(db_path, create=False)
    run = db.get(ref)
    return Side(run["id"], run["target"], db.tables(run["id"]))


def _expand_jobs(refs: list[str], db_path: Path | str | None) -> list[str]:
    """``job:ID`` stands for every run of that Slurm job (its array tasks: repeats of one side)."""
    out: list[str] = []
    for ref in refs:
        if not ref.startswith("job:"):
            out.append(ref)
            continue
        jid = ref.removeprefix("job:")
        ids = [r["id"] for r in runs_db(db_path, create=False).runs() if r.get("job_id") == jid]
        if not ids:
            raise UsageError(f"no runs of Slurm job {jid} are recorded", "nsighttk runs jobs shows the jobs and "
                                                                         "imports the runs of those that ended")
        out += sorted(ids)
    return out


@dataclass
class Comparison:
    before: list[str]
    after: list[str]
    targets: tuple[str | None, str | None]
    table: pd.DataFrame


def compare(a: list[str], b: list[str], db_path: Path | str | None = None, force: bool = False,
            threshold_pct: float = 2.0) -> Comparison:
    """``nsighttk compare``: each side one or more runs (ids, run directories, export files)."""
    from nsighttk.analysis import compare as cmp

    a, b = _expand_jobs(a, db_path), _expand_jobs(b, db_path)
    sides = [[_side(r, db_path) for r in refs] for refs in (a, b)]
    targets = [{s.target for s in side} for side in sides]
    if len(targets[0]) > 1 or len(targets[1]) > 1:
        raise UsageError("runs of one side have different targets: "
                         + "; ".join(f"{s.label}: {s.target}" for side in sides for s in side),
                         "repeat runs of one target per side")
    ta, tb = next(iter(targets[0])), next(iter(targets[1]))
    if ta != tb and not force:
        raise UsageError(f"the runs profile different targets ({ta} vs {tb})", "pass --force to compare them anyway")
    pooled = [cmp.pool([cmp.items(s.tables) for s in side]) for side in sides]
    if pooled[0].empty and pooled[1].empty:
        raise InputFileError("nothing to compare: neither side has kernel, NVTX or variant tables",
                             "compare nsys, ncu, bench or torch runs")
    return Comparison([s.label for s in sides[0]], [s.label for s in sides[1]], (ta, tb),
                      cmp.compare(pooled[0], pooled[1], threshold_pct))


# ------------------------------------------------------------------------------------- report


@dataclass
class HtmlReport:
    path: Path
    page: Any  # nsighttk.report.html.Page


def write_html(page: Any, path: Path, force: bool = False) -> HtmlReport:
    """Write ``page`` as one self-contained HTML file (its folder created if missing); a file
    nsighttk did not write is never replaced unless ``force``."""
    from nsighttk.report import html

    if path.is_dir():
        raise UsageError(f"{path} is a folder", "give the HTML file's name with -o")
    if path.exists() and not force and b'name="generator" content="nsighttk' not in path.read_bytes()[:4096]:
        raise UsageError(f"{path} exists and was not written by nsighttk", "choose another -o, or pass --force")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html.render(page), encoding="utf-8")
    except OSError as ex:
        raise UsageError(f"cannot write {path}: {ex.strerror}", "choose another -o") from None
    return HtmlReport(path, page)


def report_page(ref: str, compare_with: list[str] | None = None, db_path: Path | str | None = None,
                force_compare: bool = False, threshold_pct: float = 2.0) -> tuple[Any, Path]:
    """``nsighttk report``: the page of a run (id or directory), of a capture file, or (with
    ``compare_with``) of the comparison of ``ref`` (before) with those runs (after); and where it
    goes by default: ``<run dir>/report.html``, ``<capture>.html`` next to a capture,
    ``<reports>/compare-A-vs-B.html``."""
    from nsighttk import pages

    if compare_with:
        cmp = compare(ref.split(","), compare_with, db_path, force_compare, threshold_pct)
        return (pages.comparison_page(cmp),
                default_root() / f"compare-{_slug(ref)}-vs-{_slug(','.join(compare_with))}.html")
    p = Path(ref)
    if p.is_dir():
        if not (p / "run.json").is_file():
            raise InputFileError(f"{ref} is a folder without run.json, so not an nsighttk run directory",
                                 "pass a run directory, a run id (nsighttk runs list) or a capture file")
        return pages.run_page(p), p / pages.REPORT_NAME
    if p.is_file():
        return pages.capture_page(p), p.with_name(p.name + ".html")
    if p.suffix or os.sep in ref:
        raise InputFileError(f"{ref}: no such file or run directory", "check the path")
    run = runs_db(db_path, create=False).get(ref)
    d = Path(run["run_dir"])
    if not (d / "run.json").is_file():
        raise InputFileError(f"run {run['id']}: its directory {d} is gone", "nsighttk runs rm it, or import a copy")
    return pages.run_page(d), d / pages.REPORT_NAME


def _slug(text: str) -> str:
    name = Path(text.split(",")[0]).name or text
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]


# -------------------------------------------------------------------------------------- slurm


@dataclass
class Submitted:
    job: Any  # nsighttk.hpc.slurm.Job
    states: dict[str, tuple[str, str]] = field(default_factory=dict)
    imported: list[str] = field(default_factory=list)


def submit(spec: Any, root: Path | None = None, dry_run: bool = False, wait: bool = False,
           timeout_s: float | None = None, db_path: Path | str | None = None) -> Submitted:
    """``nsighttk submit``: write the job directory and batch script, ``sbatch`` it, record the job;
    with ``wait``, follow it until every task ended and import its runs."""
    from nsighttk.hpc import slurm

    job = slurm.submit(spec, root or default_root(), dry_run)
    out = Submitted(job)
    if dry_run:
        return out
    db = runs_db(db_path)
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    db.record_job({"job_id": job.job_id, "run_dir": str(job.job_dir), "script": str(job.script), "state": "PENDING",
                   "submitted_utc": now, "updated_utc": now, "command": json.dumps(["nsighttk", *spec.command]),
                   "array": slurm.array_spec(spec), "name": spec.name or slurm.default_name(spec)})
    if wait:
        out.states, out.imported = follow(str(job.job_id), timeout_s, db_path)
    return out


def follow(job_id: str, timeout_s: float | None = None,
           db_path: Path | str | None = None) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """Wait for a submitted job to end (progress lines as its tasks change state), then import
    its runs; returns the tasks' final states and the recorded run ids."""
    from nsighttk.hpc import slurm

    seen: list[str] = []

    def show(states: dict[str, tuple[str, str]]) -> None:
        counts = sorted({v for v, _ in states.values()})
        line = ", ".join(f"{sum(1 for v, _ in states.values() if v == s)} {s}" for s in counts)
        if line and (not seen or seen[-1] != line):
            seen.append(line)
            progress.info(f"job {job_id}: {line}")

    states = slurm.wait(job_id, timeout_s, on_state=show)
    synced = [j for j in sync_jobs(db_path, only=job_id) if j["job_id"] == job_id]
    if synced and synced[0].get("tasks"):  # as imported (from the tasks' files when Slurm forgot the job)
        states = {t: (v[0], v[1]) for t, v in json.loads(synced[0]["tasks"]).items()}
    return states, [rid for j in synced for rid in j.get("imported_ids", [])]


def sync_jobs(db_path: Path | str | None = None, only: str | None = None) -> list[dict[str, Any]]:
    """Bring the recorded Slurm jobs up to date (squeue/scontrol, sacct, else the tasks' own files);
    import the runs of jobs that ended.  Returns the jobs.  Never creates a database."""
    from nsighttk.errors import NoDatabase
    from nsighttk.hpc import slurm
    from nsighttk.rundir import summary_tables

    try:
        db = runs_db(db_path, create=False)
    except NoDatabase:
        return []
    jobs = db.jobs()
    for job in jobs:
        if job.get("imported_utc") or (only and job["job_id"] != only) or not job.get("job_id"):
            continue
        spec = _read_json(Path(job["run_dir"]) / "job.json")
        if not spec:
            continue
        states, source = slurm.task_states(job["job_id"])
        if source == "":
            continue  # Slurm cannot be asked from here (not a login node, controller down): as last seen
        if source == "gone":  # the controller forgot the job and there is no accounting: the tasks' files
            states, source = slurm.states_from_markers(spec), "task files"
        job.update(state=slurm.overall(states), source=source, tasks=json.dumps(states),
                   updated_utc=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()))
        if slurm.finished(states):
            ids = []
            for d in slurm.collect(spec, states):
                data = _read_json(d / "run.json")
                data["run_dir"] = str(d)
                ids.append(db.record(data, summary_tables(d)))
            job.update(imported_utc=job["updated_utc"], runs=len(ids))
            job["imported_ids"] = ids
        db.record_job({k: v for k, v in job.items() if k != "imported_ids"})
    return jobs
