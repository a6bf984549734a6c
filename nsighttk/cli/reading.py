"""Commands that read captures anywhere (no GPU): stats, rules, analyze, ranks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nsighttk.cli._base import (
    _one_line,
    cli,
    echo_json,
    exit_with_target,
    int_option,
    iteration_option,
    json_option,
    out,
    reports_dir_option,
    set_width,
    settings,
)
from nsighttk.cli.quick import FORMATS as STATS_FORMATS
from nsighttk.cli.quick import render_stats
from nsighttk.errors import UsageError

# ----------------------------------------------------------------------------- reading

@cli.command("stats")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("-r", "--report", "reports", default=None, metavar="REPORTS",
              help="Comma-separated report names, or 'all' (default: nsys' default set).")
@click.option("-f", "--format", "fmt", type=click.Choice(list(STATS_FORMATS)), default="table",
              show_default=True)
@click.option("-o", "--output", default=None, metavar="PREFIX", help="Write PREFIX_<report>.<ext> instead of stdout.")
@click.option("--force-overwrite", is_flag=True, help="Replace existing output files.")
@click.option("--help-reports", is_flag=True, help="List the reports and exit.")
def stats_cmd(file: Path, reports: str | None, fmt: str, output: str | None, force_overwrite: bool,
              help_reports: bool) -> None:
    """A drop-in for `nsys stats` that needs no nsys (on .sqlite exports; .nsys-rep needs nsys)."""
    from nsighttk.commands import stats as cmd

    if help_reports:
        from nsighttk.analysis.nsys.reports import REPORTS

        for name, fn in REPORTS.items():
            click.echo(f"{name:24s} {(fn.__doc__ or '').splitlines()[0]}")
        return
    render_stats(cmd.run(cmd.Options(file, reports, fmt, output, force_overwrite)), file, click.echo)


@cli.command("rules")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option("-r", "--rule", "rules", multiple=True, metavar="RULE[:OPT=VALUE...]",
              help="Rules with nsys' options, comma-separated or repeated, e.g. gpu_gaps:gap=100 "
                   "(default: all six; nsys 2022.4's names are accepted).")
@click.option("-f", "--format", "fmt", type=click.Choice(["column", "table", "csv", "json"]), default="column",
              show_default=True)
@click.option("-o", "--output", default=None, metavar="PREFIX",
              help="Write PREFIX_<rule>[_<option>...].<ext> instead of stdout.")
@click.option("--force-overwrite", is_flag=True, help="Replace existing output files.")
@click.option("--as-nsys", "nsys_version", type=click.Choice(["2025.3", "2022.4"]), default="2025.3",
              show_default=True, help="Follow this nsys version's rule names and output.")
@click.option("--help-rules", is_flag=True, help="List the rules and their options, and exit.")
def rules_cmd(file: Path | None, rules: tuple[str, ...], fmt: str, output: str | None, force_overwrite: bool,
              nsys_version: str, help_rules: bool) -> None:
    """A drop-in for `nsys analyze` that needs no nsys: nsys' expert rules (cuda_memcpy_async,
    cuda_memcpy_sync, cuda_memset_sync, cuda_api_sync, gpu_gaps, gpu_time_util) with its options,
    rows and output, on .sqlite exports (.nsys-rep needs nsys)."""
    from nsighttk.commands import rules as cmd

    if help_rules:
        from nsighttk.analysis.nsys.rules import RULES

        for spec in RULES:
            opts = ", ".join(["rows=50", "start=", "end=", "nvtx="] + [f"{k}={v}" for k, v in spec.options.items()])
            click.echo(f"{spec.name:18s} {spec.title} ({spec.legacy_name} in nsys 2022.4); options: {opts}")
        return
    if file is None:
        raise UsageError("nsighttk rules: no export given", "nsighttk rules FILE.sqlite [-r RULE,...]")
    res = cmd.run(cmd.Options(file, ",".join(rules) or None, fmt, output, force_overwrite, nsys_version))
    for r, path in zip(res.results, res.paths, strict=False):
        state = f"skipped: {r.skipped}" if r.skipped else "no rows" if r.frame is None or r.frame.empty else ""
        click.echo(f"wrote {path}" + (f" ({_one_line(state)})" if state else ""), err=True)
    if res.text is not None:
        click.echo(res.text, nl=False)


@cli.command("analyze")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@json_option
@click.option("--markdown", "as_md", is_flag=True, help="Print Markdown instead of tables.")
@iteration_option
def analyze_cmd(files: tuple[Path, ...], as_json: bool, as_md: bool, iteration: str | None) -> None:
    """The human summary of an existing capture: nsys (.sqlite, .nsys-rep), Nsight Compute (.ncu-rep,
    or a --page details / --page raw CSV export), a Kineto trace, or a run directory of any tool.

    With two captures of the same program, one nsys and one ncu: one per-kernel table joining
    GPU time share and instances (nsys) with occupancy, DRAM throughput and bottleneck (ncu)."""
    from nsighttk.commands import analyze as cmd
    from nsighttk.report import markdown, ncu_text
    from nsighttk.report import text as text_report

    res = cmd.run(cmd.Options(list(files), iteration))
    if as_json:
        echo_json(res.as_dict())
    elif res.joined is not None:
        if as_md:
            click.echo(markdown.md_table(res.joined), nl=False)
        else:
            ncu_text.render_join(res.joined, out())
    elif res.ncu is not None:
        if as_md:
            click.echo(ncu_text.markdown(res.ncu, f"ncu: {files[0]}"), nl=False)
        else:
            ncu_text.render(res.ncu, out())
    elif res.overview is not None:
        if as_md:
            click.echo(markdown.render(res.overview, f"nsys: {files[0]}"), nl=False)
        else:
            text_report.render(res.overview, out())


#: options of ``ranks`` given after the captures that take a value, and those that do not
RANKS_VALUES = ("--iteration", "--width", "--workers", "--worker-memory", "--scheduler", "--scheduler-file",
                "--parquet", "--html", "--retries", "--slurm-jobs", "--slurm-cores", "--slurm-memory",
                "--slurm-partition", "--slurm-account", "--slurm-walltime")
RANKS_FLAGS = ("--json", "--slurm")


def _ranks_args(rest: list[str]) -> tuple[list[Path], dict[str, str], set[str]]:
    """Captures, ``--option value`` pairs and flags of ``nsighttk ranks CAPTURE... [options]``."""
    captures: list[Path] = []
    values: dict[str, str] = {}
    flags: set[str] = set()
    while rest:
        a = rest.pop(0)
        name, eq, value = a.partition("=")
        if a in RANKS_FLAGS:
            flags.add(a)
        elif name in RANKS_VALUES:
            if not eq:
                if not rest:
                    raise UsageError(f"{name} needs a value", f"e.g. {name} 100" if name == "--width" else
                                     f"e.g. {name} 'step \\d+'" if name == "--iteration" else
                                     "see nsighttk ranks --help")
                value = rest.pop(0)
            values[name] = value
        elif a.startswith("--") and a != "--":
            raise UsageError(f"no such option: {name}", "see nsighttk ranks --help")
        else:
            captures.append(Path(a))
    return captures, values, flags


def _where(values: dict[str, str], flags: set[str]) -> Any:
    """Where ``ranks`` reduces the captures, from its options (None: the default)."""
    from nsighttk.hpc.dask_ranks import Where

    ints = {}
    for name in ("--workers", "--retries", "--slurm-jobs", "--slurm-cores"):
        if name in values:
            ints[name] = int_option(name, values[name])
            if ints[name] < 0 or (name in ("--slurm-jobs", "--slurm-cores") and ints[name] < 1):
                raise UsageError(f"{name} {values[name]}: out of range", f"{name} takes a positive number")
    picked: list[str] = [n for n in ("--scheduler", "--scheduler-file") if n in values]
    picked += ["--slurm"] if "--slurm" in flags else []
    if len(picked) > 1:
        raise UsageError(f"{' and '.join(picked)}: give one place for the workers", "one of --scheduler, "
                         "--scheduler-file, --slurm")
    if not values.keys() - {"--iteration", "--width", "--parquet", "--html"} and not flags - {"--json"}:
        return None
    w = Where(workers=ints.get("--workers"), worker_memory=values.get("--worker-memory"),
              scheduler=values.get("--scheduler"),
              scheduler_file=Path(values["--scheduler-file"]) if "--scheduler-file" in values else None,
              slurm="--slurm" in flags, retries=ints.get("--retries", 2))
    w.slurm_jobs = ints.get("--slurm-jobs", w.slurm_jobs)
    w.slurm_cores = ints.get("--slurm-cores", w.slurm_cores)
    w.slurm_memory = values.get("--slurm-memory", w.slurm_memory)
    w.slurm_partition = values.get("--slurm-partition")
    w.slurm_account = values.get("--slurm-account")
    w.slurm_walltime = values.get("--slurm-walltime", w.slurm_walltime)
    return w


@cli.command("ranks", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--launch", default=None, metavar="LAUNCHER",
              help='Run the command after -- under LAUNCHER ("srun -n 4", "torchrun --nproc-per-node 2 --no-python", '
                   '"mpirun -n 4") with nsys per rank, then summarise.')
@click.option("--rank-var", default=None, metavar="VAR",
              help="The variable holding the rank [default: from the launcher: SLURM_PROCID, RANK, "
                   "OMPI_COMM_WORLD_RANK or PMI_RANK].")
@click.option("-t", "--trace", default="cuda,nvtx,osrt", show_default=True, help="nsys --trace for --launch.")
@reports_dir_option
@iteration_option
@json_option
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def ranks_cmd(launch: str | None, rank_var: str | None, trace: str, reports_dir: Path | None,
              iteration: str | None, as_json: bool, args: tuple[str, ...]) -> None:
    """One summary across the per-rank captures of a multi-process run (nsys exports or
    torch.profiler traces): per rank its compute, its time in collectives and waiting in them, GPU
    busy time and top kernel; the rank the others wait for and what it spent longer on; the skew of
    iteration times.  ARGS are the captures (written with `nsys profile -o rank%q{RANK}` under
    torchrun, %q{SLURM_PROCID} under srun), or with --launch the command to run under the launcher
    with nsys per rank.

    \b
    After the captures:
      --workers N          local worker processes (default: one per core; 0: read them in this process,
                           as is done for two ranks)
      --worker-memory SIZE memory limit per local worker (default: memory / workers, at most 2GiB)
      --scheduler tcp://HOST:PORT | --scheduler-file F   an existing Dask scheduler's workers
      --slurm [--slurm-jobs N --slurm-cores N --slurm-memory 16GB --slurm-partition P
               --slurm-account A --slurm-walltime 00:30:00]   workers in Slurm jobs (dask-jobqueue)
      --retries N          reruns of a capture whose worker died (default 2)
      --parquet FILE       every rank's row as Parquet
      --html FILE          a page with the ranks and heatmaps ranks x iterations (time, waiting)
      --iteration RANGE, --json, --width N"""
    import shlex

    from nsighttk.collect.nsys import NsysOptions
    from nsighttk.commands import ranks as cmd
    from nsighttk.report import runs_text

    if launch:
        try:
            launcher = shlex.split(launch)
        except ValueError as ex:
            raise UsageError(f"--launch {launch!r}: {ex}", "quote it as in a shell") from None
        opts = cmd.Options(launch=launcher, command=list(args), rank_var=rank_var, nsys=NsysOptions(trace=trace),
                           reports_dir=reports_dir, iteration=iteration)
    else:  # captures: options may follow them (nothing after them is a command here)
        captures, values, flags = _ranks_args(list(args))
        as_json = as_json or "--json" in flags
        iteration = values.pop("--iteration", iteration)
        if "--width" in values:
            set_width(click.get_current_context(), None, int_option("--width", values.pop("--width")))
        opts = cmd.Options(captures=captures, iteration=iteration, where=_where(values, flags),
                           parquet=Path(values["--parquet"]) if "--parquet" in values else None,
                           html=Path(values["--html"]) if "--html" in values else None)
    res = cmd.run(opts, settings())
    if as_json:
        echo_json(res.as_dict())
    elif res.fleet is not None and len(res.table) >= runs_text.FLEET_FROM:
        runs_text.render_fleet(res.fleet, out())
    else:
        runs_text.render_ranks(res.skew, out())
        if res.fleet is not None:
            runs_text.render_skipped(res.fleet, out())
        if res.run_dir:
            click.echo(f"run directory: {res.run_dir}")
    exit_with_target(res.rc, f"the launcher exited with code {res.rc} (the ranks that left a report are "
                             "summarised above; each rank's output is in raw/rank<N>.log)")


@cli.command("repro")
@click.argument("capture", type=click.Path(path_type=Path))
@click.option("--top", type=int, default=5, show_default=True,
              help="How many ops, hottest first (by their own device time).")
@click.option("--op", "op_name", default=None, metavar="NAME", help="Only this op (e.g. aten::addmm), each of its "
              "recorded argument sets.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None, metavar="DIR",
              help="The folder for the workloads and index.md (default: <reports dir>/repro-<capture>).")
@click.option("--force", is_flag=True, help="Replace files in DIR that nsighttk repro did not write.")
@click.option("--inductor-code", "inductor_code", multiple=True, type=click.Path(path_type=Path), metavar="DIR",
              help="Where to look for Inductor's output code of triton_* kernels (repeatable; also searched: "
                   "$TORCHINDUCTOR_CACHE_DIR, Inductor's default cache, nsighttk inspect runs).")
@json_option
def repro_cmd(capture: Path, top: int, op_name: str | None, output: Path | None, force: bool,
              inductor_code: tuple[Path, ...], as_json: bool) -> None:
    """Turn the hot ops of CAPTURE into workloads: a torch.profiler trace recorded with shapes
    (nsighttk torch --record-shapes) or an nsys capture made with --pytorch autograd-shapes-nvtx.

    Each op becomes a .py workload (the op eagerly via torch.ops, under torch.compile, and a place
    for your own variant, checked against a float64 reference) that `nsighttk bench FILE` runs and
    prints beside the op's time in the trace; index.md lists them, and the ops that could not be
    reproduced with the reason."""
    from nsighttk.commands import repro as cmd
    from nsighttk.escape import term

    res = cmd.run(cmd.Options(capture, top, op_name, output, force, list(inductor_code)), settings())
    if as_json:
        echo_json(res.as_dict())
        return
    for r in res.repros:
        h = r.hot
        head = f"{r.rank}. {term(h.op)} ({h.share_pct:.1f}% of {h.ranked_by} time, {h.calls} calls)"
        click.echo(f"{head}: {res.output / r.file}" if r.file else f"{head}: not reproduced: {term(r.why_not)}")
    click.echo(f"index: {res.output / 'index.md'}")


@cli.command("recipe")
@click.argument("name", type=click.Choice(["nccl_sum", "cuda_gpu_kern_sum"]))
@click.option("--input", "inputs", multiple=True, type=click.Path(path_type=Path), metavar="CAPTURE",
              help="A capture (.sqlite, .nsys-rep) or a folder of them; repeat, or give several after one --input.")
@click.option("--output", type=click.Path(path_type=Path), default=None,
              help="The output folder [default: NAME-N, the first free N].")
@click.option("--csv", is_flag=True, help="Also write each table as CSV.")
@click.option("--force-overwrite", is_flag=True, help="Write into an existing --output folder.")
@click.option("--workers", type=click.IntRange(min=0), default=None,
              help="Local Dask worker processes [default: one per core; 0: in this process].")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT", help="An existing Dask scheduler.")
@click.option("--scheduler-file", type=click.Path(path_type=Path), default=None, help="Its scheduler file.")
@json_option
def recipe_cmd(name: str, inputs: tuple[Path, ...], output: Path | None, csv: bool, force_overwrite: bool,
               workers: int | None, scheduler: str | None, scheduler_file: Path | None, as_json: bool) -> None:
    """Nsight Systems' multi-report recipe NAME over many captures, as `nsys recipe NAME --input ...`
    writes it: files, rank_stats, all_stats (and rank_stats_by_device for cuda_gpu_kern_sum), as
    Parquet and with --csv as CSV; each capture is read on a Dask worker."""
    from nsighttk.commands import recipe as cmd
    from nsighttk.hpc.dask_ranks import Where

    if scheduler and scheduler_file:
        raise UsageError("--scheduler and --scheduler-file: give one", "one place for the workers")
    where = Where(workers=workers, scheduler=scheduler, scheduler_file=scheduler_file) \
        if workers is not None or scheduler or scheduler_file else None
    res = cmd.run(cmd.Options(name, list(inputs), output, csv, force_overwrite, where))
    if as_json:
        echo_json(res.as_dict())
        return
    for s in res.skipped:
        click.echo(f"skipped: {s['capture']}: {s['reason']}", err=True)
    click.echo(f"{name}: {len(res.files)} captures -> {res.output}/ ({', '.join(sorted(res.tables))})")
