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

from nsighttk import escape, progress, toolchain
from nsighttk.analysis.comm.ranks import RankSkew, rank_of, rank_skew
from nsighttk.analysis.iterations.find import iterations
from nsighttk.collect import nsys as collect_nsys
from nsighttk.commands import _run
from nsighttk.commands.analyze import load_capture
from nsighttk.errors import ProfilerFailed, UsageError, WorkloadError
from nsighttk.report import jsonout
from nsighttk.runs.layout import RANKS_JSON
from nsighttk.settings import Settings, current


def skew_of(captures: list[Path], iteration: str | None = None) -> RankSkew:
    """Who the ranks wait for and why: one capture (nsys export, Kineto trace or run directory) per
    rank; per rank, time in collectives and waiting in them, and the skew of iteration times."""
    if len(captures) < 2:
        raise UsageError("give the captures of two or more ranks", "e.g. nsighttk ranks reports/rank*.sqlite")
    profiles: dict[str, Any] = {}
    for c in captures:
        _, p = load_capture(c)
        if p.meta.get("tool") == "ncu":
            raise UsageError(f"{c}: not an nsys capture or a torch.profiler trace",
                             "give one nsys .sqlite/.nsys-rep (or Kineto .json) per rank")
        first = next(iter(profiles.values()), None)
        if first is not None and first.meta.get("tool") != p.meta.get("tool"):
            raise UsageError(f"{c}: a {p.meta.get('tool')} capture, not an {first.meta.get('tool')} capture like "
                             f"{next(iter(profiles))}", "give one capture of the same kind per rank")
        profiles[Path(c).name] = p
    its = {}
    for i, (label, p) in enumerate(profiles.items()):
        it = iterations(p, iteration)
        if it is not None:
            its[rank_of(label, i)] = it.table
    return rank_skew(profiles, iterations=its or None)


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


@dataclass
class Result:
    skew: RankSkew
    run_dir: Path | None = None
    command: list[str] = field(default_factory=list)
    rc: int = 0

    @property
    def table(self) -> pd.DataFrame:
        return self.skew.table

    def as_dict(self) -> Any:
        return {**jsonout.clean(self.skew.as_dict()), "ranks": jsonout.frame_records(self.table)}


def run(opts: Options, settings: Settings | None = None) -> Result:
    if not opts.launch:
        return Result(skew_of(opts.captures, opts.iteration))
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
