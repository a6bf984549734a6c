"""``nsighttk ranks``: one summary across the per-rank nsys captures of a multi-process run, or
(``--launch``) run a command under a launcher with nsys per rank, then summarise."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk import progress, toolchain
from nsighttk.analysis.comm.ranks import RankSkew, rank_of, rank_skew
from nsighttk.analysis.iterations.find import iterations
from nsighttk.collect import nsys as collect_nsys
from nsighttk.commands import _run
from nsighttk.commands.analyze import load_capture
from nsighttk.errors import UsageError
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
        with progress.step(f"{shlex.join(launcher)} nsys profile -o rank%q{{{var}}} ..."):
            cmd, rc, sqlites = collect_nsys.profile_ranks(nsys.path, run_dir.raw, launcher, target, var, opts.nsys,
                                                          opts.echo)
        run_dir.timing("profile", time.monotonic() - t0)
        run_dir.record.update({"nsys_command": cmd, "launcher_exit_code": rc, "ranks": len(sqlites)})
        skew = skew_of(sqlites, opts.iteration)
        rows = jsonout.frame_records(skew.table)
        run_dir.write_text(RANKS_JSON, jsonout.dumps(rows))
        final = _run.finish(run_dir, "ok" if rc == 0 else "target_failed", artifacts={"ranks": rows})
    return Result(skew, final, cmd, rc)
