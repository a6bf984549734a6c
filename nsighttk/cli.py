"""The ``nsighttk`` command line: Click options only; each command calls one library function
in :mod:`nsighttk.api` and renders its result.  Every :class:`NsightTKError` becomes one line on
stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from nsighttk import __version__, api
from nsighttk import arch as arch_mod
from nsighttk.analysis.ncu_summary import NcuSummary
from nsighttk.bench import BenchConfig
from nsighttk.build import BuildConfig, build, list_samples
from nsighttk.collect.ncu import NcuOptions
from nsighttk.collect.nsys import DEFAULT_TRACE, PYTORCH_MODES, NsysOptions
from nsighttk.errors import NoDatabase, NsightTKError, UsageError
from nsighttk.report import bench_text, inspect_text, jsonout, ncu_text, runs_text, toolchain_text, torch_text
from nsighttk.report import text as text_report

console_err = Console(stderr=True)
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)


class CliError(click.ClickException):
    """A library error shown as one line: ``nsighttk: error: what (what to do)``."""

    def __init__(self, error: NsightTKError) -> None:
        super().__init__(str(error))
        self.exit_code = error.exit_code

    def show(self, file: Any = None) -> None:
        click.echo(f"nsighttk: error: {self.message}", err=True)


#: Options that take several values in a row (``--batch-sizes 1 8``), as seed 003's argparse did.
MANY_VALUED = ("--batch-sizes", "--seq-lens")


def expand_many(args: list[str]) -> list[str]:
    """``--batch-sizes 1 8`` -> ``--batch-sizes 1 --batch-sizes 8`` (click options take one value)."""
    out: list[str] = []
    current = None
    for a in args:
        if a in MANY_VALUED:
            current = a
            continue
        if current and not a.startswith("-"):
            out += [current, a]
            continue
        current = None
        out.append(a)
    return out


class NsightTKGroup(click.Group):
    """Turns every :class:`NsightTKError` raised by a command into a :class:`CliError`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "model":
            args = expand_many(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NsightTKError as ex:
            raise CliError(ex) from None


def arch_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--arch", "archs", multiple=True, metavar="sm_XX",
                        help="Target architecture (repeat for a fat binary). Default: the local GPU's, else sm_75.")(f)


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(f)


@click.group(cls=NsightTKGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nsighttk")
@click.option("--db", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="The runs database (default: $NSIGHTTK_DB, else <reports dir>/nsighttk.db).")
def cli(db: Path | None) -> None:
    """nsighttk: build CUDA samples, drive Nsight Systems, and explain what it measured."""
    if db is not None:
        os.environ["NSIGHTTK_DB"] = str(db)


# ---------------------------------------------------------------------------------------- doctor

@cli.command()
@json_option
def doctor(as_json: bool) -> None:
    """What nsighttk can find: tools, versions, GPU, nvcc targets, and what is missing."""
    d = api.doctor()
    if as_json:
        click.echo(jsonout.dumps(d), nl=False)
    else:
        toolchain_text.render_doctor(d, out)


# ------------------------------------------------------------------------------------------ arch

@cli.command("arch")
@click.argument("query", required=False)
@json_option
def arch_cmd(query: str | None, as_json: bool) -> None:
    """GPU model -> compute capability -> -arch; per-arch occupancy limits.

    QUERY is a model (H100, "RTX 4090") or an arch (sm_90, 9.0); without it, the whole table."""
    data: Any = arch_mod.table() if query is None else arch_mod.lookup(query)
    if as_json:
        click.echo(jsonout.dumps(data), nl=False)
    elif query is None:
        toolchain_text.render_arch_table(data, out)
    else:
        toolchain_text.render_arch(query, data, out)


# ----------------------------------------------------------------------------------------- build

@cli.command("build")
@click.argument("target", required=False)
@arch_option
@click.option("--out-dir", type=click.Path(path_type=Path), default=Path("build"), show_default=True,
              help="Root of the build tree (binaries go to OUT_DIR/<arch>/).")
@click.option("--no-lineinfo", is_flag=True, help="Do not pass -lineinfo.")
@click.option("--force", is_flag=True, help="Rebuild even if the cached binary is up to date.")
@click.option("--list", "list_only", is_flag=True, help="List the bundled samples.")
@click.option("-X", "--nvcc-flag", "extra", multiple=True, help="Extra flag for nvcc (repeatable).")
def build_cmd(target: str | None, archs: tuple[str, ...], out_dir: Path, no_lineinfo: bool, force: bool,
              list_only: bool, extra: tuple[str, ...]) -> None:
    """Build a bundled sample (add, gelu, ...) or a .cu file with nvcc."""
    if list_only or target is None:
        for name in list_samples():
            click.echo(name)
        return
    res = build(target, BuildConfig(list(archs), not no_lineinfo, extra_flags=list(extra), out_root=out_dir,
                                    force=force))
    state = "up to date" if res.cached else "built"
    out.print(f"{res.binary} ({state}; {', '.join(res.archs)})")
    out.print("  " + " ".join(res.command), style="dim")


# ------------------------------------------------------------------------------------------ nsys

@cli.command("nsys", context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@arch_option
@click.option("--trace", default=DEFAULT_TRACE, show_default=True, help="APIs to trace (nsys --trace).")
@click.option("-n", "--nsys-arg", "nsys_args", multiple=True,
              help="Extra flag passed to `nsys profile` as given (repeatable), e.g. -n=--cuda-memory-usage=true.")
@click.option("--reports-dir", type=click.Path(path_type=Path), default=None,
              help="Where run directories go (default: ./reports or $NSIGHTTK_REPORTS).")
@click.option("--timeout", type=float, default=None, help="Stop the profiled program after this many seconds.")
@click.option("--pytorch", type=click.Choice(PYTORCH_MODES), default=None,
              help="nsys' automatic NVTX ranges for PyTorch ops in any script (e.g. autograd-nvtx).")
@json_option
def nsys_cmd(target: str, args: tuple[str, ...], archs: tuple[str, ...], trace: str, nsys_args: tuple[str, ...],
             reports_dir: Path | None, timeout: float | None, pytorch: str | None, as_json: bool) -> None:
    """Profile TARGET with Nsight Systems and summarise it.

    TARGET is an executable, a sample name (built first), a .cu file, or a Python script; give
    its arguments after `--`.  Writes a run directory with run.json, raw/ and summaries."""
    options = NsysOptions(trace=trace, extra=list(nsys_args), timeout_s=timeout, pytorch=pytorch)
    res = api.nsys_run(target, list(args), options, BuildConfig(list(archs)), reports_dir, echo=not as_json)
    if as_json:
        data = jsonout.overview_dict(res.overview) if res.overview else {}
        data["run"] = res.record
        click.echo(jsonout.dumps(data), nl=False)
    elif res.overview:
        text_report.render(res.overview, out)
    rc = res.target_rc
    click.echo(f"run directory: {res.run_dir}", err=True)
    if rc not in (0, None):
        click.echo(f"nsighttk: the profiled program exited with code {rc} (its profile is still in the run directory)",
                   err=True)
        sys.exit(rc if 0 < rc < 256 else 1)


# ------------------------------------------------------------------------------------------- ncu

@cli.command("ncu", context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@arch_option
@click.option("--set", "section_set", default="full", show_default=True, help="ncu section set (full, basic, ...).")
@click.option("-k", "--kernel", default=None, help="Kernel filter, passed to ncu -k as given (e.g. regex:add).")
@click.option("--nvtx-include", multiple=True, help="NVTX filter (repeatable), e.g. 'demo/' for a push/pop range.")
@click.option("-c", "--count", type=click.IntRange(min=1), default=None, help="Profile at most this many kernels.")
@click.option("--clock-control", type=click.Choice(["base", "none"]), default="base", show_default=True,
              help="ncu's clock control; 'none' leaves the GPU's clocks alone.")
@click.option("-n", "--ncu-arg", "ncu_args", multiple=True, help="Extra flag for ncu, as given (repeatable).")
@click.option("--reports-dir", type=click.Path(path_type=Path), default=None,
              help="Where run directories go (default: ./reports or $NSIGHTTK_REPORTS).")
@json_option
def ncu_cmd(target: str, args: tuple[str, ...], archs: tuple[str, ...], section_set: str, kernel: str | None,
            nvtx_include: tuple[str, ...], count: int | None, clock_control: str, ncu_args: tuple[str, ...],
            reports_dir: Path | None, as_json: bool) -> None:
    """Profile TARGET's kernels with Nsight Compute and explain each one.

    TARGET as for `nsighttk nsys`; arguments after `--`.  Keeps the .ncu-rep and ncu's log in a
    run directory; prints duration, DRAM traffic and % of peak, speed of light, occupancy and its
    limiter (checked with our calculator), waves, cache hit rates, a verdict, and ncu's findings."""
    options = NcuOptions(section_set, kernel, list(nvtx_include), count, clock_control, list(ncu_args))
    res = api.ncu_run(target, list(args), options, BuildConfig(list(archs)), reports_dir, echo=not as_json)
    if as_json and res.summary:
        data = ncu_text.as_dict(res.summary)
        data["run"] = res.record
        click.echo(jsonout.dumps(data), nl=False)
    elif res.summary:
        ncu_text.render(res.summary, out)
    click.echo(f"run directory: {res.run_dir}", err=True)
    if res.target_rc not in (0, None):
        click.echo(f"nsighttk: the profiled program exited with code {res.target_rc}", err=True)
        sys.exit(res.target_rc if 0 < res.target_rc < 256 else 1)


# ----------------------------------------------------------------------------------------- bench

def _sizes(text: str | None) -> list[int] | None:
    if not text:
        return None
    out = []
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        try:
            out.append(2 ** int(part[2:]) if part.startswith("2^") else int(float(part)))
        except ValueError:
            raise click.BadParameter(f"not a size: {part!r} (use 1048576 or 2^20)", param_hint="--sizes") from None
    return out


@cli.command("bench")
@click.argument("workload")
@click.option("--variants", default=None, help="Comma-separated variants (default: all).")
@click.option("--sizes", default=None, help="Comma-separated element counts, e.g. 2^20,2^24 (default: the workload's).")
@click.option("--dtype", default="float32", show_default=True, type=click.Choice(["float32", "float16", "bfloat16",
                                                                                 "float64"]))
@click.option("--device", default="auto", show_default=True, type=click.Choice(["auto", "cuda", "cpu"]))
@click.option("--warmup-ms", type=float, default=25.0, show_default=True)
@click.option("--rep-ms", type=float, default=100.0, show_default=True)
@click.option("--arch", default=None, metavar="sm_XX",
              help="Build the CUDA variants for this arch (default: the GPU's).")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path), default=None, help="Also write the table as CSV.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), default=None,
              help="Also draw bandwidth against size per variant (.png, .svg or .pdf; needs matplotlib).")
@click.option("--reports-dir", type=click.Path(path_type=Path), default=None)
@json_option
def bench_cmd(workload: str, variants: str | None, sizes: str | None, dtype: str, device: str, warmup_ms: float,
              rep_ms: float, arch: str | None, csv_path: Path | None, plot_path: Path | None, reports_dir: Path | None,
              as_json: bool) -> None:
    """Check and time every variant of WORKLOAD (a name in kernels/, or your own .py file).

    Each variant is compared with a float64 reference, then timed (first call untimed, L2 flushed,
    CUDA events; the host clock on CPU, which the output says), with GB/s, TFLOP/s, % of the
    device's measured copy bandwidth and the speed-up over the first variant."""
    report = api.bench(workload, variants, _sizes(sizes), dtype, device, BenchConfig(warmup_ms, rep_ms), arch,
                       plot_path=plot_path, root=reports_dir)
    if csv_path:
        report.rows.to_csv(csv_path, index=False)
    if plot_path:
        click.echo(f"wrote {plot_path}", err=True)
    if as_json:
        click.echo(jsonout.dumps({**api.bench_dict(report), "run_dir": str(report.run_dir)}), nl=False)
        return
    bench_text.render(report, out)


@cli.command("inspect")
@click.argument("workload")
@click.option("--variants", default=None, help="Comma-separated (default: every Triton and torch.compile variant).")
@click.option("--arch", default=None, metavar="sm_XX",
              help="Without a GPU, compile Triton kernels for this arch (default: $NSIGHTTK_ARCH or sm_75).")
@click.option("--size", type=int, default=None, help="Elements of the input the kernels are specialized for "
              "(default: the workload's smallest size).")
@click.option("--dtype", default="float32", show_default=True, type=click.Choice(["float32", "float16", "bfloat16",
                                                                                 "float64"]))
@click.option("--aot", is_flag=True, help="Compile ahead of time for --arch even on a machine with a GPU.")
@click.option("--reports-dir", type=click.Path(path_type=Path), default=None)
@click.option("--markdown", "as_md", is_flag=True, help="Print Markdown instead of a table.")
@json_option
def inspect_cmd(workload: str, variants: str | None, arch: str | None, size: int | None, dtype: str, aot: bool,
                reports_dir: Path | None, as_md: bool, as_json: bool) -> None:
    """The code Triton and torch.compile generate for WORKLOAD's variants: PTX, SASS, registers,
    spills, shared memory and theoretical occupancy per kernel, and Inductor's output code, kept in
    the run directory.  Works without a GPU: Triton kernels are then compiled ahead of time for
    --arch with the same specialization the JIT would use, and torch.compile writes C++ (also with
    --aot)."""
    run = api.inspect(workload, variants, arch, size, dtype, reports_dir, aot=aot)
    if as_json:
        click.echo(jsonout.dumps({"run_dir": str(run.run_dir), "mode": run.mode,
                                  "kernels": jsonout.frame_records(run.kernels),
                                  "output_code": {k: [str(p) for p in v] for k, v in run.output_code.items()},
                                  "skipped": run.skipped}), nl=False)
    elif as_md:
        click.echo(inspect_text.markdown(run), nl=False)
    else:
        inspect_text.render(run, out)
    if run.kernels.empty and not any(run.output_code.values()):
        raise SystemExit(3)


# ----------------------------------------------------------------------------------------- torch

@cli.command("torch", context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--device", default="auto", show_default=True, type=click.Choice(["auto", "cuda", "cpu"]))
@click.option("--schedule", default=None, metavar="W,WU,A,R",
              help="torch.profiler schedule: wait, warmup, active, repeat "
                   "(steps = workload rounds or optimizer steps).")
@click.option("--record-shapes", is_flag=True, help="Record input shapes (ops are then grouped by shape too).")
@click.option("--with-stack", is_flag=True, help="Record Python stacks.")
@click.option("--tensorboard", type=click.Path(path_type=Path), default=None,
              help="Also write TensorBoard traces here.")
@click.option("--sort-by", default=None, help="key_averages sort key (default: self_cuda_time_total on GPU).")
@click.option("--size", type=int, default=None, help="Workload size (default: its smallest).")
@click.option("--variants", default=None, help="Workload variants, comma-separated (default: all that can run).")
@click.option("--iters", type=int, default=3, show_default=True, help="Rounds of variants without --schedule.")
@click.option("--reports-dir", type=click.Path(path_type=Path), default=None)
@json_option
def torch_cmd(target: str, args: tuple[str, ...], device: str, schedule: str | None, record_shapes: bool,
              with_stack: bool, tensorboard: Path | None, sort_by: str | None, size: int | None,
              variants: str | None, iters: int, reports_dir: Path | None, as_json: bool) -> None:
    """Profile a workload (e.g. square: the seeds' autograd-profiler comparison of its variants)
    or a PyTorch script with torch.profiler; write the Chrome trace, PyTorch's key_averages table,
    and the trace read into nsighttk's tables (ops with categories and sources, decoded kernels)."""
    opts = api.TorchOptions(device, schedule, record_shapes, with_stack, tensorboard, sort_by, iters, size, variants)
    res = api.torch_run(target, list(args), opts, reports_dir, echo=not as_json)
    if as_json:
        click.echo(jsonout.dumps({"run": res.record, "ops": jsonout.frame_records(res.ops),
                                  "categories": jsonout.frame_records(res.categories),
                                  "kernels": jsonout.frame_records(res.kernels)}), nl=False)
    else:
        out.print("[bold]torch.profiler key_averages[/bold] (PyTorch's own table)")
        click.echo(res.key_averages_table)
        torch_text.render_ops(res.ops, res.categories, res.kernels, out)
    click.echo(f"run directory: {res.run_dir}", err=True)
    rc = res.record.get("target_exit_code")
    if rc:
        click.echo(f"nsighttk: {target}: {res.record.get('driver', {}).get('error', 'the script failed')} "
                   "(the profile up to the failure is in the run directory)", err=True)
        sys.exit(rc)


@cli.command("explain")
@click.argument("names", nargs=-1, required=True)
@json_option
def explain_cmd(names: tuple[str, ...], as_json: bool) -> None:
    """Decode kernel names: library, category, arch, tensor cores, types, layout, tiles, the op."""
    from nsighttk.analysis.kernel_names import decode

    infos = [decode(n) for n in names]
    if as_json:
        click.echo(jsonout.dumps([i.as_dict() for i in infos]), nl=False)
        return
    for i in infos:
        torch_text.render_explain(i, out)


@cli.command("model")
@click.argument("name", type=click.Choice(["bert"]))
@click.option("--batch-sizes", multiple=True, type=int, default=(1, 8), show_default=True,
              help="Batch sizes (repeat the option or give several: --batch-sizes 1 8 is read as 1 and 8).")
@click.option("--seq-lens", multiple=True, type=int, default=(128, 256), show_default=True, help="Sequence lengths.")
@click.option("--real-bert", is_flag=True,
              help="Hugging Face BertModel(BertConfig()) with random weights (no download).")
@click.option("--dtype", default="float32", show_default=True, type=click.Choice(["float32", "float16", "bfloat16"]))
@click.option("--device", default="auto", show_default=True, type=click.Choice(["auto", "cuda", "cpu"]))
@click.option("--skip-benchmark", is_flag=True, help="Profile only; no latency/throughput timing.")
@click.option("--output-dir", type=click.Path(path_type=Path), default=None, help="Also copy the results here.")
@click.option("--reports-dir", type=click.Path(path_type=Path), default=None)
@json_option
def model_cmd(name: str, batch_sizes: tuple[int, ...], seq_lens: tuple[int, ...], real_bert: bool, dtype: str,
              device: str, skip_benchmark: bool, output_dir: Path | None, reports_dir: Path | None,
              as_json: bool) -> None:
    """Profile a Transformer over batch sizes x sequence lengths (seed 003's profile_bert.py):
    per configuration a JSON of top ATen ops (categories, native function, CUDA source), a
    Markdown report and a Chrome trace; then one cross-configuration comparison."""
    from rich.progress import Progress

    from nsighttk.model import ModelConfig

    cfg = ModelConfig(list(batch_sizes), list(seq_lens), real_bert, dtype, device, skip_benchmark)
    with Progress(console=console_err, transient=False, disable=as_json) as bar:
        task = bar.add_task(f"{name}: {len(cfg.batch_sizes) * len(cfg.seq_lens)} configurations",
                            total=len(cfg.batch_sizes) * len(cfg.seq_lens))

        def done(tag: str, row: dict[str, Any]) -> None:
            bar.advance(task)
            bar.console.print(f"  {tag}: {row['status']}" + (f" ({row.get('error')})" if row.get("error") else "")
                              + (f", top category {row['top_category']}" if row.get("top_category") else ""))

        res = api.model_run(name, cfg, reports_dir, output_dir, done)
    if as_json:
        click.echo(jsonout.dumps({"run": res.record, "comparison": res.comparison}), nl=False)
    else:
        click.echo((res.run_dir / "comparison.md").read_text())
    click.echo(f"run directory: {res.run_dir}" + (f" (copied to {output_dir})" if output_dir else ""), err=True)
    failed = [c for c in res.comparison["configs"] if c["status"] != "ok"]
    if failed:
        for c in failed:
            click.echo(f"nsighttk: {c['error']}; the other configurations are in the report", err=True)
        sys.exit(3)


# ----------------------------------------------------------------------------------------- stats

@cli.command("stats")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("-r", "--report", "reports", default=None, metavar="REPORTS",
              help="Comma-separated report names, or 'all' (default: nsys' default set).")
@click.option("-f", "--format", "fmt", type=click.Choice(list(api.FORMATS)), default="table", show_default=True)
@click.option("-o", "--output", default=None, metavar="PREFIX", help="Write PREFIX_<report>.<ext> instead of stdout.")
@click.option("--force-overwrite", is_flag=True, help="Replace existing output files.")
@click.option("--help-reports", is_flag=True, help="List the reports and exit.")
def stats_cmd(file: Path, reports: str | None, fmt: str, output: str | None, force_overwrite: bool,
              help_reports: bool) -> None:
    """A drop-in for `nsys stats` that needs no nsys (on .sqlite exports; .nsys-rep needs nsys)."""
    if help_reports:
        from nsighttk.analysis.nsys_reports import REPORTS

        for name, fn in REPORTS.items():
            click.echo(f"{name:24s} {(fn.__doc__ or '').splitlines()[0]}")
        return
    results = api.stats(file, reports, fmt, output, force_overwrite)
    many = len(results) > 1
    for r in results:
        if r.path is not None:
            click.echo(f"wrote {r.path}" + (" (empty: " + "; ".join(r.notes) + ")" if not r.rows else ""), err=True)
            continue
        if many:
            click.echo(f"\n ** {r.title} ({r.report}):\n")
        if r.text:
            click.echo(r.text, nl=False)
        else:
            click.echo(f"SKIPPED: {file} has {'; '.join(r.notes) or 'no data for this report'}.", err=True)


# --------------------------------------------------------------------------------------- analyze

@cli.command("analyze")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@json_option
@click.option("--markdown", "as_md", is_flag=True, help="Print Markdown instead of tables.")
def analyze_cmd(files: tuple[Path, ...], as_json: bool, as_md: bool) -> None:
    """The human summary of an existing capture: nsys (.sqlite, .nsys-rep, run directory) or
    Nsight Compute (.ncu-rep, or a --page details / --page raw CSV export).

    With two captures of the same program, one nsys and one ncu: one per-kernel table joining
    GPU time share and instances (nsys) with occupancy, DRAM throughput and bottleneck (ncu)."""
    if len(files) > 2:
        raise click.UsageError("give one capture, or one nsys and one ncu capture to join")
    if len(files) == 2:
        joined = api.join(files[0], files[1])
        if as_json:
            click.echo(jsonout.dumps(jsonout.frame_records(joined)), nl=False)
        elif as_md:
            from nsighttk.report.markdown import md_table

            click.echo(md_table(joined), nl=False)
        else:
            ncu_text.render_join(joined, out)
        return
    file = files[0]
    ov = api.analyze(file)
    if isinstance(ov, NcuSummary):
        if as_json:
            click.echo(jsonout.dumps(ncu_text.as_dict(ov)), nl=False)
        elif as_md:
            click.echo(ncu_text.markdown(ov, f"ncu: {file}"), nl=False)
        else:
            ncu_text.render(ov, out)
        return
    if as_json:
        click.echo(jsonout.dumps(jsonout.overview_dict(ov)), nl=False)
    elif as_md:
        from nsighttk.report import markdown

        click.echo(markdown.render(ov, f"nsys: {file}"), nl=False)
    else:
        text_report.render(ov, out)


# ------------------------------------------------------------------------------ runs, compare

@cli.group("runs")
def runs_group() -> None:
    """The runs database: every nsys, ncu, bench, torch, model, inspect and ranks run is recorded
    (nsighttk --db FILE or NSIGHTTK_DB to move it; open it with sqlite-utils or Datasette)."""


@runs_group.command("list")
@click.option("--tool", default=None, help="Only runs of this tool (nsys, ncu, bench, torch, model, inspect).")
@click.option("--target", default=None)
@click.option("--status", default=None)
@click.option("-n", "--limit", type=click.IntRange(min=1), default=50, show_default=True)
@json_option
def runs_list(tool: str | None, target: str | None, status: str | None, limit: int, as_json: bool) -> None:
    """The recorded runs, newest first."""
    api.sync_jobs()  # jobs that ended since: their runs first
    try:
        db = api.runs_db(create=False)
    except NoDatabase as ex:  # nothing recorded yet is not a mistake
        click.echo(jsonout.dumps([]) if as_json else f"{ex.message}", nl=not as_json)
        return
    rows = db.runs(tool, target, status, limit)
    if as_json:
        click.echo(jsonout.dumps(rows), nl=False)
    else:
        runs_text.render_list(rows, db.path, out)


@runs_group.command("jobs")
@json_option
def runs_jobs(as_json: bool) -> None:
    """The Slurm jobs from nsighttk submit: brought up to date from squeue/scontrol/sacct, and the
    runs of jobs that ended imported (nsighttk runs list does the same first)."""
    jobs = api.sync_jobs()
    if as_json:
        click.echo(jsonout.dumps([{k: v for k, v in j.items() if k != "imported_ids"} for j in jobs]), nl=False)
    else:
        runs_text.render_jobs(jobs, out)


@runs_group.command("show")
@click.argument("run")
@json_option
def runs_show(run: str, as_json: bool) -> None:
    """One run (id, unique id prefix or run directory): what ran, where, with which tools, and its
    summary tables."""
    db = api.runs_db(create=False)
    r = db.get(run)
    tables = db.tables(r["id"])
    if as_json:
        click.echo(jsonout.dumps({**r, "tables": tables}), nl=False)
    else:
        runs_text.render_show(r, tables, out)


@runs_group.command("rm")
@click.argument("runs", nargs=-1, required=True)
@click.option("--delete-files", is_flag=True, help="Also delete the run directories (default: keep them).")
def runs_rm(runs: tuple[str, ...], delete_files: bool) -> None:
    """Forget runs (their directories stay unless --delete-files)."""
    for r in api.runs_rm(list(runs), delete_files):
        click.echo(f"removed {r['id']}" + (f" and {r['run_dir']}" if delete_files else ""), err=True)


@runs_group.command("import")
@click.argument("path", type=click.Path(path_type=Path))
def runs_import(path: Path) -> None:
    """Record a run directory (or every run directory in a reports folder), e.g. one copied
    back from a cluster."""
    ids = api.runs_import(path)
    click.echo(f"recorded {len(ids)} run(s) in {api.runs_db(create=False).path}", err=True)
    for i in ids:
        click.echo(i)


@cli.command("compare")
@click.argument("before")
@click.argument("after")
@click.option("--fail-if-slower", type=float, default=None, metavar="PCT",
              help="Exit 1 if anything got significantly slower by more than PCT percent (CI gate).")
@click.option("--threshold", type=float, default=2.0, show_default=True,
              help="Changes smaller than this (percent) count as the same.")
@click.option("--force", is_flag=True, help="Compare runs of different targets.")
@click.option("--all", "show_all", is_flag=True, help="Also list unchanged items.")
@click.option("--html", "html_out", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Also write the comparison as a self-contained HTML page.")
@json_option
def compare_cmd(before: str, after: str, fail_if_slower: float | None, threshold: float, force: bool,
                show_all: bool, html_out: Path | None, as_json: bool) -> None:
    """Compare BEFORE with AFTER: run ids, run directories or export files; several runs of one
    side comma-separated, or job:ID for all runs of a Slurm job (repeats give confidence
    intervals).  Per kernel, NVTX range and bench variant: time before and after, change with its
    95% interval, new and vanished items, occupancy and bandwidth where both sides have them."""
    from nsighttk.analysis.compare import regressions
    from nsighttk.report import compare_text

    cmp = api.compare(before.split(","), after.split(","), force=force, threshold_pct=threshold)
    if as_json:
        click.echo(jsonout.dumps({"before": cmp.before, "after": cmp.after, "targets": list(cmp.targets),
                                  "rows": jsonout.frame_records(cmp.table)}), nl=False)
    else:
        compare_text.render(cmp, out, show_all)
    if html_out is not None:
        from nsighttk import pages

        api.write_html(pages.comparison_page(cmp), html_out)
        click.echo(f"HTML report: {html_out}", err=as_json)
    if fail_if_slower is not None:
        bad = regressions(cmp.table, fail_if_slower)
        if len(bad):
            click.echo(f"nsighttk: {len(bad)} item(s) slower by more than {fail_if_slower:g}%: "
                       + ", ".join(f"{n[:60]} ({p:+.1f}%)" for n, p in
                                   list(zip(bad["name"], bad["change_pct"], strict=True))[:5]), err=True)
            raise SystemExit(1)


@cli.command("submit", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-p", "--partition", default=None, help="Slurm partition.")
@click.option("--gpus", type=int, default=None, help="GPUs per job (sbatch --gpus).")
@click.option("-t", "--time", "time_limit", default=None, help="Time limit (MINUTES, HH:MM:SS, D-HH:MM:SS).")
@click.option("-A", "--account", default=None, help="Account to charge.")
@click.option("-c", "--cpus", type=int, default=None, help="CPUs per task.")
@click.option("--mem", default=None, help="Memory per node (sbatch --mem, e.g. 16G).")
@click.option("-J", "--job-name", default=None, help="Job name [default: nsighttk-COMMAND-TARGET].")
@click.option("--array", default=None, metavar="SPEC",
              help="Run the command as array tasks (0-3, 0-7%2): repeats; with --sweep only a limit (%N).")
@click.option("--sweep", "sweeps", multiple=True, metavar="NAME=V1,V2",
              help="One array task per value (several --sweep multiply): replaces {NAME} in the command, "
                   "else adds --NAME V.")
@click.option("--tasks", "tasks_file", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="One array task per line of FILE (each an nsighttk command), instead of a command after --.")
@click.option("--module", "modules", multiple=True, metavar="NAME", help="`module load NAME` before the command.")
@click.option("--setup", "setup", multiple=True, metavar="LINE",
              help="A shell line before the command (source a venv, export a variable); after "
                   "$NSIGHTTK_HOME/slurm-setup.sh.")
@click.option("--sbatch-arg", "sbatch_args", multiple=True, metavar="ARG", help="Any other sbatch option.")
@click.option("--dry-run", is_flag=True, help="Write the job directory and script, print the script, submit nothing.")
@click.option("--wait", is_flag=True, help="Follow the job until it ends, then import its runs.")
@click.option("--timeout", type=float, default=None, metavar="S", help="With --wait: give up after S seconds.")
@click.option("--reports-dir", type=click.Path(path_type=Path), default=None,
              help="Where the job directory goes (a shared file system) [default: reports/].")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def submit_cmd(partition: str | None, gpus: int | None, time_limit: str | None, account: str | None,
               cpus: int | None, mem: str | None, job_name: str | None, array: str | None, sweeps: tuple[str, ...],
               tasks_file: Path | None, modules: tuple[str, ...], setup: tuple[str, ...], sbatch_args: tuple[str, ...],
               dry_run: bool, wait: bool, timeout: float | None, reports_dir: Path | None,
               command: tuple[str, ...]) -> None:
    """Run an nsighttk command as a Slurm batch job: `nsighttk submit [OPTIONS] -- nsighttk nsys|ncu|bench ...`.
    Writes the batch script into a job directory, submits it with sbatch and records the job;
    `nsighttk runs jobs` (or --wait) follows it and imports its runs when it ends, failed and
    cancelled tasks included (their partial run directories kept)."""
    from nsighttk.hpc import slurm

    spec = slurm.JobSpec(list(command), partition, gpus, time_limit, account, cpus, mem, job_name, array,
                         [slurm.parse_sweep(s) for s in sweeps],
                         [*slurm.default_setup(), *(f"module load {m}" for m in modules), *setup], list(sbatch_args),
                         slurm.read_tasks(tasks_file) if tasks_file else [])
    spec.check()
    for cmd in slurm.task_commands(spec)[:1] if spec.sweeps else slurm.task_commands(spec):
        _check_job_command(cmd)
    job = api.submit(spec, reports_dir, dry_run).job
    if dry_run:
        click.echo(job.script.read_text(), nl=False)
        click.echo(f"dry run: {job.script} written, nothing submitted ({job.tasks} task(s))", err=True)
        return
    click.echo(f"submitted job {job.job_id} ({job.tasks} task(s)); job directory {job.job_dir}")
    if wait:
        sys.stdout.flush()
        states, imported = api.follow(str(job.job_id), timeout)
        click.echo(f"job {job.job_id}: {slurm.overall(states)}; {len(imported)} run(s) recorded: " + " ".join(imported))
        if not states or any(s != "COMPLETED" for s, _ in states.values()):
            raise SystemExit(1)


def _check_job_command(cmd: list[str]) -> None:
    """Parse the job's command here (not on the node an hour later): unknown options fail now."""
    sub = cli.commands[cmd[0]]
    try:
        sub.make_context(cmd[0], list(cmd[1:]), parent=click.get_current_context())
    except click.ClickException as ex:
        raise UsageError(f"the job's command `nsighttk {' '.join(cmd)}` is wrong: {ex.format_message()}",
                         f"try it here: nsighttk {cmd[0]} --help") from None


@cli.command("report")
@click.argument("run")
@click.option("--html", "fmt", flag_value="html", default=True, help="Write the HTML page (the default).")
@click.option("--json", "fmt", flag_value="json", help="Print the page's tables and chart data as JSON instead.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Where the HTML goes [default: RUN_DIR/report.html, or CAPTURE.html next to a capture].")
@click.option("--compare", "compare_with", default=None, metavar="AFTER",
              help="Compare RUN (before) with AFTER (run ids, run directories or captures, comma-separated).")
@click.option("--force", is_flag=True, help="Replace an existing file that nsighttk did not write; with --compare, "
                                          "also compare runs of different targets.")
def report_cmd(run: str, fmt: str, output: Path | None, compare_with: str | None, force: bool) -> None:
    """A self-contained HTML report (opens offline, no CDN) of RUN: a run id, a run directory or
    a capture (.sqlite, .nsys-rep, .ncu-rep, Kineto .json).  Summary tables, GPU time by kernel
    and copy, a timeline per stream with NVTX ranges, a roofline (ncu), bandwidth against size
    (bench) and, with --compare, the comparison view.  Every run also writes one into its run
    directory."""
    from nsighttk import pages

    page, default = api.report_page(run, compare_with.split(",") if compare_with else None, force_compare=force)
    if fmt == "json":
        click.echo(jsonout.dumps(pages.page_dict(page)), nl=False)
        return
    # a run directory's report.html is ours: regenerated without asking; any other file is checked
    rep = api.write_html(page, output or default, force=force or (output is None and default.name == pages.REPORT_NAME))
    click.echo(f"HTML report: {rep.path} ({rep.path.stat().st_size / 1024:,.0f} KiB, "
               f"{len(rep.page.sections)} sections)")


@cli.command("ranks", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--launch", default=None, metavar="LAUNCHER",
              help='Run the command after -- under LAUNCHER ("srun -n 4", "torchrun --nproc-per-node 2 --no-python", '
                   '"mpirun -n 4") with nsys per rank, then summarise.')
@click.option("--rank-var", default=None, metavar="VAR",
              help="The variable holding the rank [default: from the launcher: SLURM_PROCID, RANK, "
                   "OMPI_COMM_WORLD_RANK or PMI_RANK].")
@click.option("-t", "--trace", default=DEFAULT_TRACE, show_default=True, help="nsys --trace for --launch.")
@click.option("--reports-dir", type=click.Path(path_type=Path), default=None, help="Where --launch's run goes.")
@json_option
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def ranks_cmd(launch: str | None, rank_var: str | None, trace: str, reports_dir: Path | None, as_json: bool,
              args: tuple[str, ...]) -> None:
    """One summary across the per-rank nsys captures of a multi-process run: kernel time, GPU
    busy time and top kernel per rank, the slowest rank and how far it is from the mean.  ARGS are
    the captures (written with `nsys profile -o rank%q{RANK}` under torchrun, %q{SLURM_PROCID}
    under srun), or with --launch the command to run under the launcher with nsys per rank."""
    import shlex

    if launch:
        res = api.ranks_run(shlex.split(launch), list(args), rank_var, NsysOptions(trace=trace), reports_dir)
        df = res.table
    else:  # captures: options may follow them (nothing after them is a command here)
        as_json = as_json or "--json" in args
        df = api.ranks([Path(a) for a in args if a != "--json"])
    if as_json:
        click.echo(jsonout.dumps(jsonout.frame_records(df)), nl=False)
    else:
        runs_text.render_ranks(df, out)
        if launch:
            click.echo(f"run directory: {res.run_dir}")


def main() -> None:
    """Entry point (``nsighttk``, ``python -m nsighttk``)."""
    try:
        cli.main(prog_name="nsighttk")
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:
        click.echo("nsighttk: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
