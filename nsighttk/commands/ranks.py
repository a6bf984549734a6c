"""``nsighttk ranks``: one summary across the per-rank nsys captures of a multi-process run, or
(``--launch``) run a command under a launcher with nsys per rank, then summarise."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk import escape, progress, safeio, toolchain
from nsighttk.analysis.comm.rank_summary import Fleet, Merger
from nsighttk.analysis.comm.ranks import RankSkew, rank_of
from nsighttk.collect import nsys as collect_nsys
from nsighttk.commands import _run
from nsighttk.errors import ProfilerFailed, UsageError, WorkloadError
from nsighttk.hpc import dask_ranks
from nsighttk.hpc.dask_ranks import Failed, Where
from nsighttk.report import jsonout
from nsighttk.runs.layout import RANKS_JSON
from nsighttk.settings import Settings, current


def labels_of(captures: list[Path]) -> list[str]:
    """Each capture's label: its file name, or its whole path where two captures share a name."""
    names = [Path(c).name for c in captures]
    return [str(c) if names.count(n) > 1 else n for c, n in zip(captures, names, strict=True)]


def ranks_of(labels: list[str]) -> tuple[list[int], str | None]:
    """The rank of each capture: the number in its label, else (two captures with one number, or one
    without) its place among those given; with a note when the places were used."""
    ranks = [rank_of(lab, i) for i, lab in enumerate(labels)]
    if len(set(ranks)) == len(ranks):
        return ranks, None
    return list(range(len(labels))), ("the captures' names do not give one rank each: ranks are their order on the "
                                      "command line")


def serial(where: Where | None, n: int) -> bool:
    """Whether the ranks are reduced in this process: asked for (``--workers 0``), or two ranks or
    fewer with no cluster named."""
    if where is None:
        return n <= 2
    return not where.external and (where.workers == 0 or (where.workers is None and n <= 2))


def fleet_of(captures: list[Path], iteration: str | None = None, where: Where | None = None) -> Fleet:
    """The figures of many ranks: one capture (nsys export, Kineto trace or run directory) per rank,
    each reduced to a summary where ``where`` says (:mod:`nsighttk.hpc.dask_ranks`), merged here as
    the summaries arrive.  A capture that cannot be read, or belongs to another run, is reported in
    ``skipped`` and left out."""
    if len(captures) < 2:
        raise UsageError("give the captures of two or more ranks", "e.g. nsighttk ranks reports/rank*.sqlite")
    labels = labels_of(captures)
    ranks, note = ranks_of(labels)
    merger = Merger()
    if note:
        merger.notes.append(note)
    items = [(str(c), lab, iteration) for c, lab in zip(captures, labels, strict=True)]
    place = Where(workers=0) if serial(where, len(captures)) else (where or Where())

    def arrived(i: int, res: Any) -> None:
        if isinstance(res, Failed):
            why = res.reason
            merger.skip(labels[i], why[len(res.item) + 2:] if why.startswith(res.item + ": ") else why, i)
        else:
            merger.add(res, ranks[i], i)

    with progress.step(f"{len(captures)} rank captures"):
        dask_ranks.map_items(dask_ranks.reduce_rank, items, place, arrived)
    fleet = merger.finish()
    if len(fleet.table) < 2:
        why = "; ".join(f"{s['capture']}: {s['reason']}" for s in fleet.skipped)
        if len(fleet.skipped) == 1:
            raise UsageError(why, "give one capture of the same kind per rank")
        raise UsageError(f"fewer than two ranks could be read{': ' + why if why else ''}",
                         "give the captures of two or more ranks of one run")
    return fleet


def skew_of(captures: list[Path], iteration: str | None = None, where: Where | None = None) -> RankSkew:
    """Who the ranks wait for and why: one capture (nsys export, Kineto trace or run directory) per
    rank; per rank, time in collectives and waiting in them, and the skew of iteration times."""
    return fleet_of(captures, iteration, where).skew


def rank_table(captures: list[Path]) -> pd.DataFrame:
    """One row per rank; see :func:`skew_of`."""
    return skew_of(captures).table


def program_name(cmd: list[str]) -> str:
    """What a command runs: ``./app`` -> app, ``python3 train.py`` -> train, ``python3 -m pkg.mod`` -> mod."""
    if Path(cmd[0]).name.startswith("python") and len(cmd) > 1:
        if cmd[1] == "-m" and len(cmd) > 2:
            return cmd[2].rsplit(".", 1)[-1]
        return Path(cmd[1]).stem
    return Path(cmd[0]).name


def mpi_flavour(launcher: str) -> str | None:
    """The first line of ``mpirun --version`` (Open MPI, MPICH, Intel MPI number ranks differently)."""
    try:
        r = subprocess.run([launcher, "--version"], capture_output=True, text=True, errors="replace", timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (r.stdout or r.stderr).strip()
    return text.splitlines()[0] if text else None


@dataclass
class Options:
    captures: list[Path] = field(default_factory=list)
    launch: list[str] = field(default_factory=list)  # the launcher, e.g. ["srun", "-n", "4"]
    command: list[str] = field(default_factory=list)  # what it runs (with --launch)
    rank_var: str | None = None
    iteration: str | None = None  # the NVTX range that is one iteration (as analyze --iteration)
    nsys: collect_nsys.NsysOptions = field(default_factory=collect_nsys.NsysOptions)
    reports_dir: Path | None = None
    echo: bool = True
    where: Where | None = None  # where the captures are reduced (None: here for two ranks, else a LocalCluster)
    parquet: Path | None = None  # every rank's row, written there
    html: Path | None = None  # the ranks' page (ranks x iterations heatmaps included), written there


@dataclass
class Result:
    skew: RankSkew
    run_dir: Path | None = None
    command: list[str] = field(default_factory=list)
    rc: int = 0
    fleet: Fleet | None = None

    @property
    def table(self) -> pd.DataFrame:
        return self.skew.table

    def as_dict(self) -> Any:
        out = {**jsonout.clean(self.skew.as_dict()), "ranks": jsonout.frame_records(self.table)}
        if self.fleet is not None:
            out["fleet"] = jsonout.clean(self.fleet.as_dict())
        return out


def write_html(fleet: Fleet, path: Path, meta: list[str]) -> Path:
    """The ranks' HTML page (:func:`nsighttk.report.pages.ranks_page`), written whole or not at all."""
    from nsighttk.report import html, pages

    out = safeio.check_output(path, "--html file")
    page = pages.ranks_page(jsonout.frame_records(fleet.table), fleet.heatmap,
                            [f"{len(fleet.table)} ranks", *(["first: " + m for m in meta])])
    safeio.write_text(out, html.render(page))
    return out


def write_parquet(fleet: Fleet, path: Path) -> Path:
    """Every rank's row (the per-rank table, with its steady-state mean iteration time) as Parquet,
    written whole or not at all."""
    out = safeio.check_output(path, "--parquet file")
    df = fleet.table.copy()
    its = fleet.skew.iterations
    if its is not None and len(its):
        df["iteration_mean_ns"] = df["rank"].map(its.set_index("rank")["mean_ns"])
    with safeio.atomic_write(out, "wb", encoding=None) as f:
        df.to_parquet(f, index=False)
    return out


def run(opts: Options, settings: Settings | None = None) -> Result:
    if not opts.launch:
        fleet = fleet_of(opts.captures, opts.iteration, opts.where)
        if opts.parquet:
            write_parquet(fleet, opts.parquet)
        if opts.html:
            write_html(fleet, opts.html, [str(c) for c in opts.captures[:1]])
        return Result(fleet.skew, fleet=fleet)
    return launch(opts, settings or current())


def launch(opts: Options, settings: Settings) -> Result:
    launcher, target = opts.launch, opts.command
    if not launcher or not target:
        raise UsageError("--launch needs a launcher and a command after --", 'e.g. --launch "srun -n 4" -- ./app')
    if shutil.which(launcher[0]) is None:
        raise toolchain.ToolNotFound(f"{launcher[0]}: launcher not found", "is it on PATH (module load ...)?")
    var = opts.rank_var
    if var is None:
        flavour = mpi_flavour(launcher[0]) if Path(launcher[0]).name in ("mpirun", "mpiexec") else None
        var = collect_nsys.rank_var(launcher, flavour)
        if var is None:
            raise UsageError(f"which variable holds the rank under {shlex.join(launcher)}?",
                             "pass --rank-var (SLURM_PROCID, RANK, OMPI_COMM_WORLD_RANK, PMI_RANK ...)")
    nsys = toolchain.require_tool("nsys")
    assert nsys.path is not None
    name = program_name(target)
    run_dir = _run.start(settings, opts.reports_dir, "ranks", name, info=nsys)
    run_dir.record.update({"command": target, "launcher": launcher, "rank_var": var})
    with _run.failures_recorded(run_dir):
        t0 = time.monotonic()
        with progress.step(f"{shlex.join(launcher)} nsys profile -o rank%q{{{var}}} ... (each rank's output: "
                           f"raw/rank<N>.log)"):
            ran = collect_nsys.profile_ranks(nsys.path, run_dir.raw, launcher, target, var, opts.nsys, opts.echo)
        run_dir.timing("profile", time.monotonic() - t0)
        run_dir.record.update({"nsys_command": ran.command, "launcher_exit_code": ran.rc, "ranks": len(ran.sqlites),
                               "rank_exit_codes": ran.rank_status})
        failure = _failure(ran)
        if len(ran.sqlites) < 2:
            if not ran.failed():  # (no rank failed, or none started: the launcher or nsys did not do its part)
                why = f"{len(ran.sqlites)} per-rank report{'s were' if len(ran.sqlites) != 1 else ' was'} written"
                last = "; ".join(ran.missing) or (collect_nsys.tail(ran.log, 1) or ["no output"])[0][:200]
                raise ProfilerFailed(f"{why}, two or more are needed (launcher exit {ran.rc}): {last}",
                                     f"see {ran.log}; does the launcher start nsys (torchrun needs --no-python)?")
            err = WorkloadError(f"{failure}; {len(ran.sqlites)} per-rank report{'s' if len(ran.sqlites) != 1 else ''}"
                                " written, two or more are needed for a summary", f"see {ran.log}")
            err.exit_code = ran.rc if 0 < ran.rc < 256 else 2
            raise err
        skew = skew_of(ran.sqlites, opts.iteration)
        if failure is not None:
            skew.notes.append(failure)
        rows = jsonout.frame_records(skew.table)
        run_dir.write_text(RANKS_JSON, jsonout.dumps(rows))
        final = _run.finish(run_dir, "ok" if failure is None else "target_failed", failure, artifacts={"ranks": rows})
    return Result(skew, final, ran.command, ran.rc)


def _failure(ran: collect_nsys.RankRun) -> str | None:
    """One line on a failed run (the launcher's exit code, each failing rank's exit status and the last
    line of its output), with the end of the first failing rank's output printed above it; None
    when the launcher and every rank exited 0."""
    failed = ran.failed()
    if ran.rc == 0 and not failed and not ran.missing:
        return None
    parts = [f"the launcher exited with {ran.rc}"]
    for rank, status in failed.items():
        last = collect_nsys.tail(ran.rank_logs[rank], 1)
        parts.append(f"{_label(rank)} {'left no exit status' if status is None else f'exited with {status}'}"
                     + (f": {last[0][:200]}" if last else " and printed nothing"))
    parts += ran.missing
    if failed:
        rank = next(iter(failed))
        lines = collect_nsys.tail(ran.rank_logs[rank], 10)
        if lines:
            progress.warn(f"{_label(rank)} failed; the end of its output (raw/{ran.rank_logs[rank].name} in the "
                          "run directory):")
            sys.stderr.write(escape.term_lines("\n".join(f"  {ln}" for ln in lines)) + "\n")  # (with --json too)
    return "; ".join(parts)


def _label(rank: str) -> str:
    """``rank1`` -> ``rank 1``."""
    return f"rank {rank[4:]}" if rank[4:].isdigit() else rank
