"""Commands over recorded runs and jobs: runs, compare, report, submit."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nsighttk.cli._base import (
    FiniteFloat,
    _one_line,
    cli,
    echo_json,
    iteration_option,
    json_option,
    out,
    reports_dir_option,
    settings,
)
from nsighttk.errors import UsageError

# ------------------------------------------------------------------------- runs, compare, report

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
    from nsighttk.commands import runs as cmd

    res = cmd.list_runs(tool, target, status, limit, settings())
    if as_json:
        echo_json(res.as_dict())
    elif res.message:
        click.echo(_one_line(res.message))
    else:
        from nsighttk.report import runs_text

        runs_text.render_list(res.rows, res.db_path, out())


@runs_group.command("jobs")
@json_option
def runs_jobs(as_json: bool) -> None:
    """The Slurm jobs from nsighttk submit: brought up to date from squeue/scontrol/sacct, and the
    runs of jobs that ended imported (nsighttk runs list does the same first)."""
    from nsighttk.commands.submit import sync_jobs
    from nsighttk.report import runs_text

    jobs = sync_jobs(settings())
    if as_json:
        echo_json([{k: v for k, v in j.items() if k != "imported_ids"} for j in jobs])
    else:
        runs_text.render_jobs(jobs, out())


@runs_group.command("show")
@click.argument("run")
@json_option
def runs_show(run: str, as_json: bool) -> None:
    """One run (id, unique id prefix or run directory): what ran, where, with which tools, and its
    summary tables."""
    from nsighttk.commands import runs as cmd
    from nsighttk.report import runs_text

    r, tables = cmd.show(run, settings())
    if as_json:
        echo_json({**r, "tables": tables})
    else:
        runs_text.render_show(r, tables, out())


@runs_group.command("rm")
@click.argument("runs", nargs=-1, required=True)
@click.option("--delete-files", is_flag=True, help="Also delete the run directories (default: keep them).")
def runs_rm(runs: tuple[str, ...], delete_files: bool) -> None:
    """Forget runs (exact ids or unique prefixes; their directories stay unless --delete-files)."""
    from nsighttk.commands import runs as cmd

    for r in cmd.remove(list(runs), delete_files, settings()):
        click.echo(f"removed {r['id']}" + (f" and {r['run_dir']}" if delete_files else ""), err=True)


@runs_group.command("import")
@click.argument("path", type=click.Path(path_type=Path))
def runs_import(path: Path) -> None:
    """Record a run directory (or every run directory in a reports folder), e.g. one copied
    back from a cluster."""
    from nsighttk.commands import runs as cmd

    res = cmd.import_runs(path, settings())
    for why in res.skipped:
        click.echo(f"nsighttk: skipped {_one_line(why)}", err=True)
    click.echo(f"recorded {len(res.ids)} run(s) in {res.db_path}", err=True)
    for i in res.ids:
        click.echo(i)
    if res.skipped:
        sys.exit(2)


@cli.command("compare")
@click.argument("before")
@click.argument("after")
@click.option("--fail-if-slower", type=FiniteFloat(min=0), default=None, metavar="PCT",
              help="Exit 1 if anything got significantly slower by more than PCT percent, or may have "
                   "where a side has one run (CI gate).")
@click.option("--threshold", type=FiniteFloat(min=0), default=2.0, show_default=True,
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
    from nsighttk.analysis.compare import regressions, undecided
    from nsighttk.commands import compare as cmd
    from nsighttk.commands.report import write_html
    from nsighttk.report import compare_text, pages

    if html_out is not None:
        from nsighttk import safeio

        safeio.check_output(html_out, "--html")
    res = cmd.run(cmd.Options(before.split(","), after.split(","), force, threshold), settings())
    if as_json:
        echo_json(res.as_dict())
    else:
        compare_text.render(res, out(), show_all)
    if html_out is not None:
        write_html(pages.comparison_page(res), html_out)
        click.echo(f"HTML report: {html_out}", err=as_json)
    if fail_if_slower is not None:
        bad = regressions(res.table, fail_if_slower)
        if len(bad):
            click.echo(f"nsighttk: {len(bad)} item(s) slower by more than {fail_if_slower:g}%: "
                       + ", ".join(f"{_one_line(str(n))[:60]} ({p:+.1f}%)" for n, p in
                                   list(zip(bad["name"], bad["change_pct"], strict=True))[:5]), err=True)
            raise SystemExit(1)
        maybe = undecided(res.table, fail_if_slower)
        if len(maybe):
            click.echo(f"nsighttk: {len(maybe)} item(s) more than {fail_if_slower:g}% slower with one run on a side, "
                       "which cannot tell a change from noise: repeat the runs and pass them comma-separated "
                       "(A1,A2,A3): " + ", ".join(f"{_one_line(str(n))[:60]} ({p:+.1f}%)" for n, p in
                                                  list(zip(maybe["name"], maybe["change_pct"], strict=True))[:5]),
                       err=True)
            raise SystemExit(1)


@cli.command("report")
@click.argument("run")
@click.option("--html", "fmt", flag_value="html", default=True, help="Write the HTML page (the default).")
@click.option("--json", "fmt", flag_value="json", help="Print the page's tables and chart data as JSON instead.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="Where the HTML goes [default: RUN_DIR/report.html; for a capture or a comparison, a file "
                   "in the reports folder].")
@click.option("--compare", "compare_with", default=None, metavar="AFTER",
              help="Compare RUN (before) with AFTER (run ids, run directories or captures, comma-separated).")
@click.option("--force", is_flag=True, help="Replace an existing file that nsighttk did not write; with --compare, "
                                          "also compare runs of different targets.")
@iteration_option
def report_cmd(run: str, fmt: str, output: Path | None, compare_with: str | None, force: bool,
               iteration: str | None) -> None:
    """A self-contained HTML report (opens offline, no CDN) of RUN: a run id, a run directory or
    a capture (.sqlite, .nsys-rep, .ncu-rep, Kineto .json).  Summary tables, GPU time by kernel
    and copy, a timeline per stream with NVTX ranges, a roofline (ncu), bandwidth against size
    (bench) and, with --compare, the comparison view.  Every run also writes one into its run
    directory."""
    from nsighttk.commands import report as cmd
    from nsighttk.report import pages

    if output is not None and fmt == "html":
        from nsighttk import safeio

        safeio.check_output(output, "-o")
    page, default = cmd.page(cmd.Options(run, compare_with.split(",") if compare_with else None, force,
                                         iteration=iteration), settings())
    if fmt == "json":
        echo_json(pages.page_dict(page))
        return
    # a page nsighttk wrote (a run directory's report.html) is regenerated without asking; a file it
    # did not write is replaced only with --force, wherever it is
    path = cmd.write_html(page, output or default, force=force)
    click.echo(f"HTML report: {path} ({path.stat().st_size / 1024:,.0f} KiB, {len(page.sections)} sections)")


# ------------------------------------------------------------------------------------ Slurm

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
@click.option("--timeout", type=FiniteFloat(min=0, min_open=True), default=None, metavar="S",
              help="With --wait: give up after S seconds.")
@reports_dir_option
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
    from nsighttk.commands import submit as cmd
    from nsighttk.hpc import slurm

    spec = slurm.JobSpec(list(command), partition, gpus, time_limit, account, cpus, mem, job_name, array,
                         [slurm.parse_sweep(s) for s in sweeps],
                         [*slurm.default_setup(), *slurm.module_lines(modules), *setup], list(sbatch_args),
                         slurm.read_tasks(tasks_file) if tasks_file else [])
    spec.check()
    for c in slurm.task_commands(spec)[:1] if spec.sweeps else slurm.task_commands(spec):
        _check_job_command(c)

    def submitted(job: slurm.Job) -> None:
        click.echo(f"submitted job {job.job_id} ({job.tasks} task(s)); job directory {job.job_dir}")
        sys.stdout.flush()

    res = cmd.run(cmd.Options(spec, reports_dir, dry_run, wait, timeout), settings(), on_submitted=submitted)
    if dry_run:
        from nsighttk import safeio

        click.echo(safeio.read_head(res.job.script, 1 << 20).decode(), nl=False)
        click.echo(f"dry run: {res.job.script} written, nothing submitted ({res.job.tasks} task(s))", err=True)
        return
    if wait:
        click.echo(f"job {res.job.job_id}: {slurm.overall(res.states)}; {len(res.imported)} run(s) recorded: "
                   + " ".join(res.imported))
        if not res.states or any(s != "COMPLETED" for s, _ in res.states.values()):
            raise SystemExit(1)


def _check_job_command(command: list[str]) -> None:
    """Parse the job's command here (not on the node an hour later): unknown options fail now."""
    sub = cli.get_command(click.get_current_context(), command[0])
    assert sub is not None  # the command was checked to exist
    try:
        sub.make_context(command[0], list(command[1:]), parent=click.get_current_context())
    except click.ClickException as ex:
        raise UsageError(f"the job's command `nsighttk {' '.join(command)}` is wrong: {ex.format_message()}",
                         f"try it here: nsighttk {command[0]} --help") from None
