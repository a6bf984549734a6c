"""``nsighttk submit``: an nsighttk command as a Slurm batch job (arrays for repeats, sweeps and
task lists); the job is recorded, followed (``--wait``, ``runs jobs``) and its runs imported when
it ends, failed and cancelled tasks included (see :mod:`nsighttk.hpc.slurm`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk import progress
from nsighttk.errors import NoDatabase, NsightTKError
from nsighttk.hpc import slurm
from nsighttk.runs.db import RunsDB, record_run
from nsighttk.runs.layout import read_json
from nsighttk.settings import Settings, current


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())


@dataclass
class Options:
    spec: slurm.JobSpec
    reports_dir: Path | None = None
    dry_run: bool = False
    wait: bool = False
    timeout_s: float | None = None


@dataclass
class Result:
    job: slurm.Job
    states: dict[str, tuple[str, str]] = field(default_factory=dict)
    imported: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"job_id": self.job.job_id, "job_dir": str(self.job.job_dir), "tasks": self.job.tasks,
                "script": str(self.job.script), "states": self.states, "imported": self.imported}


def run(opts: Options, settings: Settings | None = None, on_submitted: Callable[[slurm.Job], None] | None = None) \
        -> Result:
    """Write the job directory and batch script, ``sbatch`` it, record the job; with ``wait``,
    follow it until every task ended and import its runs (``on_submitted`` is called first)."""
    settings = settings or current()
    spec = opts.spec
    job = slurm.submit(spec, opts.reports_dir or settings.reports_root, opts.dry_run)
    out = Result(job)
    if opts.dry_run:
        return out
    with RunsDB(settings.db_path) as db:
        db.record_job({
            "job_id": job.job_id, "run_dir": str(job.job_dir), "script": str(job.script), "state": "PENDING",
            "submitted_utc": _now(), "updated_utc": _now(), "command": json.dumps(["nsighttk", *spec.command]),
            "array": slurm.array_spec(spec), "name": spec.name or slurm.default_name(spec)})
    if on_submitted is not None:
        on_submitted(job)
    if opts.wait:
        out.states, out.imported = follow(str(job.job_id), opts.timeout_s, settings)
    return out


def follow(job_id: str, timeout_s: float | None = None,
           settings: Settings | None = None) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """Wait for a submitted job to end (progress lines as its tasks change state), then import
    its runs; returns the tasks' final states and the recorded run ids."""
    seen: list[str] = []

    def show(states: dict[str, tuple[str, str]]) -> None:
        counts = sorted({v for v, _ in states.values()})
        line = ", ".join(f"{sum(1 for v, _ in states.values() if v == s)} {s}" for s in counts)
        if line and (not seen or seen[-1] != line):
            seen.append(line)
            progress.info(f"job {job_id}: {line}")

    states = slurm.wait(job_id, timeout_s, on_state=show)
    synced = [j for j in sync_jobs(settings, only=job_id) if j["job_id"] == job_id]
    if synced and synced[0].get("tasks"):  # as imported (from the tasks' files when Slurm forgot the job)
        states = {t: (v[0], v[1]) for t, v in json.loads(synced[0]["tasks"]).items()}
    return states, [rid for j in synced for rid in j.get("imported_ids", [])]


def sync_jobs(settings: Settings | None = None, only: str | None = None) -> list[dict[str, Any]]:
    """Bring the recorded Slurm jobs up to date (squeue/scontrol, sacct, else the tasks' own files);
    import the runs of jobs that ended.  Returns the jobs.  Never creates a database; a database
    this user cannot write is only read."""
    settings = settings or current()
    try:
        with RunsDB(settings.db_path, create=False) as reader:
            jobs = reader.jobs()
    except NoDatabase:
        return []
    pending = [j for j in jobs if not j.get("imported_utc") and j.get("job_id") and (not only or j["job_id"] == only)]
    if not pending:
        return jobs
    try:
        db = RunsDB(settings.db_path)  # some job may need updating: open for writing
    except (NsightTKError, OSError) as ex:  # read-only, locked: the jobs as last seen
        progress.warn(f"Slurm jobs not updated: {ex}")
        return jobs
    with db:
        _update_jobs(db, pending)
    return jobs


def _update_jobs(db: RunsDB, pending: list[dict[str, Any]]) -> None:
    for job in pending:
        spec = read_json(Path(str(job["run_dir"])), "job.json")
        if not isinstance(spec, dict):
            continue
        states, source = slurm.task_states(job["job_id"])
        if source == "":
            continue  # Slurm cannot be asked from here (not a login node, controller down): as last seen
        if source == "gone":  # the controller forgot the job and there is no accounting: the tasks' files
            states, source = slurm.states_from_markers(spec), "task files"
        job.update(state=slurm.overall(states), source=source, tasks=json.dumps(states), updated_utc=_now())
        if slurm.finished(states):
            ids = [record_run(db, d) for d in slurm.collect(spec, states)]
            job.update(imported_utc=job["updated_utc"], runs=len(ids))
            job["imported_ids"] = ids
        db.record_job({k: v for k, v in job.items() if k != "imported_ids"})
