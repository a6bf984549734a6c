"""Commands that run a profiler or a benchmark: nsys, ncu, torch, model, bench, inspect."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from nsighttk.cli._base import (
    FiniteFloat,
    _one_line,
    arch_option,
    cli,
    device_option,
    dtype_option,
    echo_json,
    exit_with_target,
    json_option,
    out,
    reports_dir_option,
    settings,
)
from nsighttk.errors import UsageError

if TYPE_CHECKING:
    from nsighttk.analysis.overview import Overview

T = TypeVar("T")

# ------------------------------------------------------------------------------ profiling

def _show_run(res: Any, as_json: bool, shown: T | None, render: Callable[[T], None], failed: str) -> None:
    """How a profiling command ends: its result (JSON, or ``shown`` rendered when there is one),
    where its run directory is, and the profiled program's exit code as nsighttk's when that failed."""
    if as_json:
        echo_json(res.as_dict())
    elif shown is not None:
        render(shown)
    say_run_dir(res.run_dir)
    exit_with_target(res.target_rc, failed)


def say_run_dir(run_dir: Any, also: str = "") -> None:
    """The line on stderr every command that writes a run ends with: its run directory, whose
    name is the run's id (``nsighttk runs show ID``)."""
    if run_dir is not None:
        click.echo(f"run directory: {run_dir}{also}", err=True)


@cli.command("nsys", context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@arch_option(many=True)
@click.option("--trace", default="cuda,nvtx,osrt", show_default=True, help="APIs to trace (nsys --trace).")
@click.option("-n", "--nsys-arg", "nsys_args", multiple=True,
              help="Extra flag passed to `nsys profile` as given (repeatable), e.g. -n=--cuda-memory-usage=true.")
@reports_dir_option
@click.option("--timeout", type=FiniteFloat(min=0, min_open=True), default=None,
              help="Stop the profiled program after this many seconds.")
@click.option("--pytorch", default=None, metavar="MODE",
              help="nsys' automatic NVTX ranges for PyTorch ops in any script: autograd-nvtx, autograd-shapes-nvtx, "
                   "functions-trace (or two, comma-separated).")
@json_option
def nsys_cmd(target: str, args: tuple[str, ...], archs: tuple[str, ...], trace: str, nsys_args: tuple[str, ...],
             reports_dir: Path | None, timeout: float | None, pytorch: str | None, as_json: bool) -> None:
    """Profile TARGET with Nsight Systems and summarise it.

    TARGET is an executable, a sample name (built first), a .cu file, or a Python script; give
    its arguments after `--`.  Writes a run directory with run.json, raw/, summaries and report.html."""
    from nsighttk.collect.nsys import PYTORCH_MODES, NsysOptions
    from nsighttk.commands import nsys as cmd

    if pytorch is not None and pytorch not in PYTORCH_MODES:
        raise UsageError(f"--pytorch {pytorch!r}: not a mode nsys knows", f"use one of {', '.join(PYTORCH_MODES)}")
    options = NsysOptions(trace=trace, extra=list(nsys_args), timeout_s=timeout, pytorch=pytorch)
    res = cmd.run(cmd.Options(target, list(args), list(archs), options, reports_dir, echo=not as_json), settings())

    def render(overview: Overview) -> None:
        from nsighttk.report import text as text_report  # pandas: imported while nsys ran, not before

        text_report.render(overview, out())

    _show_run(res, as_json, res.overview, render,
              f"the profiled program exited with code {res.target_rc} (its profile is still in the run directory)")


@cli.command("ncu", context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@arch_option(many=True)
@click.option("--set", "section_set", default="full", show_default=True, help="ncu section set (full, basic, ...).")
@click.option("-k", "--kernel", default=None, help="Kernel filter, passed to ncu -k as given (e.g. regex:add).")
@click.option("--nvtx-include", multiple=True, help="NVTX filter (repeatable), e.g. 'demo/' for a push/pop range.")
@click.option("-c", "--count", type=click.IntRange(min=1), default=None, help="Profile at most this many kernels.")
@click.option("--clock-control", type=click.Choice(["base", "none"]), default="base", show_default=True,
              help="ncu's clock control; 'none' leaves the GPU's clocks alone.")
@click.option("-n", "--ncu-arg", "ncu_args", multiple=True, help="Extra flag for ncu, as given (repeatable).")
@reports_dir_option
@json_option
def ncu_cmd(target: str, args: tuple[str, ...], archs: tuple[str, ...], section_set: str, kernel: str | None,
            nvtx_include: tuple[str, ...], count: int | None, clock_control: str, ncu_args: tuple[str, ...],
            reports_dir: Path | None, as_json: bool) -> None:
    """Profile TARGET's kernels with Nsight Compute and explain each one.

    TARGET as for `nsighttk nsys`; arguments after `--`.  Keeps the .ncu-rep and ncu's log in a
    run directory; prints duration, DRAM traffic and % of peak, speed of light, occupancy and its
    limiter (checked with our calculator), waves, cache hit rates, a verdict, and ncu's findings."""
    from nsighttk.collect.ncu import NcuOptions
    from nsighttk.commands import ncu as cmd
    from nsighttk.report import ncu_text

    options = NcuOptions(section_set, kernel, list(nvtx_include), count, clock_control, list(ncu_args))
    res = cmd.run(cmd.Options(target, list(args), list(archs), options, reports_dir, echo=not as_json), settings())
    _show_run(res, as_json, res.summary, lambda summary: ncu_text.render(summary, out()),
              f"the profiled program exited with code {res.target_rc}")


@cli.command("torch", context_settings={"ignore_unknown_options": True})
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@device_option
@arch_option(what="build the CUDA-extension variants for")
@click.option("--schedule", default=None, metavar="W,WU,A,R",
              help="torch.profiler schedule: wait, warmup, active, repeat "
                   "(steps = workload rounds or optimizer steps).")
@click.option("--record-shapes", is_flag=True, help="Record input shapes (ops are then grouped by shape too).")
@click.option("--with-stack", is_flag=True, help="Record Python stacks.")
@click.option("--tensorboard", type=click.Path(path_type=Path), default=None,
              help="Also write TensorBoard traces here.")
@click.option("--sort-by", default=None, help="key_averages sort key (default: self_cuda_time_total on GPU).")
@click.option("--size", type=click.IntRange(min=1), default=None, help="Workload size (default: its smallest).")
@click.option("--variants", default=None, help="Workload variants, comma-separated (default: all that can run).")
@click.option("--iters", type=click.IntRange(min=1), default=3, show_default=True,
              help="Rounds of variants without --schedule.")
@reports_dir_option
@json_option
def torch_cmd(target: str, args: tuple[str, ...], device: str, arch: str | None, schedule: str | None,
              record_shapes: bool, with_stack: bool, tensorboard: Path | None, sort_by: str | None, size: int | None,
              variants: str | None, iters: int, reports_dir: Path | None, as_json: bool) -> None:
    """Profile a workload (e.g. square: the autograd-profiler comparison of its variants) or a
    PyTorch script with torch.profiler; write the Chrome trace, PyTorch's key_averages table, and
    the trace read into nsighttk's tables (ops with categories and sources, decoded kernels)."""
    from nsighttk.collect.torch_profiler import TorchOptions
    from nsighttk.commands import torch_profile as cmd
    from nsighttk.escape import term
    from nsighttk.report import torch_text

    opts = TorchOptions(device, schedule, record_shapes, with_stack, tensorboard, sort_by, iters, size, variants,
                        arch=arch)
    res = cmd.run(cmd.Options(target, list(args), opts, reports_dir, echo=not as_json), settings())
    if as_json:
        echo_json(res.as_dict())
    else:
        console = out()
        console.print("torch.profiler key_averages (PyTorch's own table)", style="bold", markup=False)
        click.echo("\n".join(term(line) for line in res.key_averages_table.splitlines()))
        torch_text.render_ops(res.ops, res.categories, res.kernels, console)
    say_run_dir(res.run_dir)
    rc = res.record.get("target_exit_code")
    if rc:
        error = (res.record.get("driver") or {}).get("error", "the script failed")
        click.echo(f"nsighttk: {_one_line(target)}: {_one_line(str(error))} "
                   "(the profile up to the failure is in the run directory)", err=True)
        sys.exit(rc)


@cli.command("model")
@click.argument("name", type=click.Choice(["bert"]))
@click.option("--batch-sizes", multiple=True, type=click.IntRange(min=1), default=(1, 8), show_default=True,
              help="Batch sizes (repeat the option or give several: --batch-sizes 1 8 is read as 1 and 8).")
@click.option("--seq-lens", multiple=True, type=click.IntRange(min=1), default=(128, 256), show_default=True,
              help="Sequence lengths.")
@click.option("--real-bert", is_flag=True,
              help="Hugging Face BertModel(BertConfig()) with random weights (no download).")
@click.option("--dtype", default="float32", show_default=True, type=click.Choice(["float32", "float16", "bfloat16"]))
@device_option
@click.option("--skip-benchmark", is_flag=True, help="Profile only; no latency/throughput timing.")
@click.option("--output-dir", type=click.Path(path_type=Path), default=None, help="Also copy the results here.")
@reports_dir_option
@json_option
def model_cmd(name: str, batch_sizes: tuple[int, ...], seq_lens: tuple[int, ...], real_bert: bool, dtype: str,
              device: str, skip_benchmark: bool, output_dir: Path | None, reports_dir: Path | None,
              as_json: bool) -> None:
    """Profile a Transformer over batch sizes x sequence lengths: per configuration a JSON of top
    ATen ops (categories, native function, CUDA source), a Markdown report and a Chrome trace;
    then one cross-configuration comparison."""
    from rich.console import Console
    from rich.progress import Progress

    from nsighttk.commands import model as cmd
    from nsighttk.escape import text
    from nsighttk.workload.models import ModelConfig

    cfg = ModelConfig(list(batch_sizes), list(seq_lens), real_bert, dtype, device, skip_benchmark)
    n = len(cfg.batch_sizes) * len(cfg.seq_lens)
    with Progress(console=Console(stderr=True), transient=False, disable=as_json) as bar:
        task = bar.add_task(f"{name}: {n} configurations", total=n)

        def done(tag: str, row: dict[str, Any]) -> None:
            bar.advance(task)
            bar.console.print(text(f"  {tag}: {row['status']}" + (f" ({row.get('error')})" if row.get("error") else "")
                                   + (f", top category {row['top_category']}" if row.get("top_category") else "")))

        res = cmd.run(cmd.Options(name, cfg, reports_dir, output_dir, done), settings())
    if as_json:
        echo_json(res.as_dict())
    else:
        from nsighttk.report import torch_text

        torch_text.render_model_comparison(res.comparison, out())
    say_run_dir(res.run_dir, f" (copied to {output_dir})" if output_dir else "")
    failed = [c for c in res.comparison["configs"] if c["status"] != "ok"]
    if failed:
        for c in failed:
            click.echo(f"nsighttk: {c['error']}; the other configurations are in the report", err=True)
        sys.exit(3)


@cli.command("bench")
@click.argument("workload")
@click.option("--variants", default=None, help="Comma-separated variants (default: all).")
@click.option("--sizes", default=None, help="Comma-separated element counts, e.g. 2^20,2^24 (default: the workload's).")
@dtype_option
@device_option
@click.option("--warmup-ms", type=float, default=25.0, show_default=True)
@click.option("--rep-ms", type=float, default=100.0, show_default=True)
@arch_option(what="build the CUDA-extension variants for")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path), default=None, help="Also write the table as CSV.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), default=None,
              help="Also draw bandwidth against size per variant (.png, .svg or .pdf; needs matplotlib).")
@reports_dir_option
@json_option
def bench_cmd(workload: str, variants: str | None, sizes: str | None, dtype: str, device: str, warmup_ms: float,
              rep_ms: float, arch: str | None, csv_path: Path | None, plot_path: Path | None,
              reports_dir: Path | None, as_json: bool) -> None:
    """Check and time every variant of WORKLOAD (a name in kernels/, or your own .py file).

    Each variant is compared with a float64 reference, then timed (first call untimed, L2 flushed,
    CUDA events; the host clock on CPU, which the output says), with GB/s, TFLOP/s, % of the
    device's measured copy bandwidth and the speed-up over the first variant."""
    from nsighttk.bench import BenchConfig, parse_sizes
    from nsighttk.commands import bench as cmd
    from nsighttk.report import bench_text

    size_list, config = parse_sizes(sizes), BenchConfig(warmup_ms, rep_ms)  # bad values: one line, before any work
    res = cmd.run(cmd.Options(workload, variants, size_list, dtype, device, config, arch, plot_path,
                              csv_path, reports_dir), settings())
    if plot_path:
        click.echo(f"wrote {plot_path}", err=True)
    if as_json:
        echo_json(res.as_dict())
    else:
        bench_text.render(res.report, out())
    say_run_dir(res.run_dir)


@cli.command("inspect")
@click.argument("workload")
@click.option("--variants", default=None, help="Comma-separated (default: every Triton and torch.compile variant).")
@arch_option(what="compile Triton kernels for without a GPU (or with --aot)")
@click.option("--size", type=int, default=None,
              help="Elements of the input the kernels are specialized for (default: the workload's smallest size).")
@dtype_option
@click.option("--aot", is_flag=True, help="Compile ahead of time for --arch even on a machine with a GPU.")
@reports_dir_option
@click.option("--markdown", "as_md", is_flag=True, help="Print Markdown instead of a table.")
@json_option
def inspect_cmd(workload: str, variants: str | None, arch: str | None, size: int | None, dtype: str, aot: bool,
                reports_dir: Path | None, as_md: bool, as_json: bool) -> None:
    """The code Triton and torch.compile generate for WORKLOAD's variants: PTX, SASS, registers,
    spills, shared memory and theoretical occupancy per kernel, and Inductor's output code, kept in
    the run directory.  Works without a GPU: Triton kernels are then compiled ahead of time for
    --arch with the same specialization the JIT would use, and torch.compile writes C++ (also with
    --aot)."""
    from nsighttk.commands import inspect as cmd
    from nsighttk.report import inspect_text

    res = cmd.run(cmd.Options(workload, variants, arch, size, dtype, aot, reports_dir), settings())
    if as_json:
        echo_json(res.as_dict())
    elif as_md:
        click.echo(inspect_text.markdown(res), nl=False)
    else:
        inspect_text.render(res, out())
    say_run_dir(res.run_dir)
    if res.kernels.empty and not any(res.output_code.values()):
        raise SystemExit(3)
