"""Run directories: ``reports/<UTC time>-<tool>-<workload>/`` with ``run.json`` and ``raw/``.

A run is written under a temporary name (``.tmp-...``) and renamed when it is complete, so a
directory without that prefix is always whole.  A failed run is renamed too, with
``"status": "failed"`` and the reason in ``run.json``: what it produced is kept.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nsighttk import __version__
from nsighttk.errors import UsageError


def default_root() -> Path:
    return Path(os.environ.get("NSIGHTTK_REPORTS", "reports"))


@dataclass
class RunDir:
    root: Path
    tool: str
    workload: str
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    record: dict[str, Any] = field(default_factory=dict)
    path: Path = field(init=False)
    final_path: Path | None = None
    #: the run's loaded capture, so report.html need not load it again (None: found in raw/)
    html_profile: Any = None
    write_html: bool = True
    write_db: bool = True
    #: appended to the name (Slurm tasks: ``job<id>_<task>``, so runs of one array never share a name)
    tag: str | None = None
    _t0: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        tag = self.tag if self.tag is not None else os.environ.get("NSIGHTTK_RUN_TAG")
        self.name = f"{stamp}-{self.tool}-{self.workload}" + (f"-{tag}" if tag else "")
        self.path = self.root / f".tmp-{self.name}-{secrets.token_hex(3)}"
        try:
            (self.path / "raw").mkdir(parents=True)
        except OSError as ex:
            raise UsageError(f"cannot create a run directory under {self.root}: {ex.strerror}",
                             "pass --reports-dir or set NSIGHTTK_REPORTS to a writable folder") from None
        self.record.update({"nsighttk_version": __version__, "tool": self.tool, "workload": self.workload,
                            "started_utc": self.started.isoformat(timespec="seconds"), "status": "running",
                            "timings_s": {}})

    @property
    def raw(self) -> Path:
        return self.path / "raw"

    def timing(self, step: str, seconds: float) -> None:
        self.record["timings_s"][step] = round(seconds, 3)

    def write_json(self, name: str, data: Any) -> Path:
        out = self.path / name
        out.write_text(json.dumps(data, indent=1, default=str) + "\n")
        return out

    def finish(self, status: str, error: str | None = None) -> Path:
        """Write run.json and move the directory to its final name; return that path."""
        final = self.root / self.name
        n = 1
        while final.exists():
            n += 1
            final = self.root / f"{self.name}-{n}"
        self.record["status"] = status
        if error:
            self.record["error"] = error.replace(str(self.path), str(final))
        self.record["finished_utc"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.record["wall_s"] = round(time.monotonic() - self._t0, 3)
        self.record["run_dir"] = str(final)
        for var, key in (("SLURM_JOB_ID", "slurm_job_id"), ("SLURM_ARRAY_JOB_ID", "slurm_array_job_id"),
                         ("SLURM_ARRAY_TASK_ID", "slurm_array_task_id")):
            if os.environ.get(var):
                self.record[key] = os.environ[var]
        if self.write_html:
            from nsighttk.pages import REPORT_NAME, write_into_run

            if write_into_run(self.path, self.html_profile, self.record):
                self.record["report_html"] = str(final / REPORT_NAME)
        self.html_profile = None
        self.write_json("run.json", self.record)
        os.replace(self.path, final)
        self.final_path = final
        if self.write_db:
            record_in_db(final, self.root)
        return final


def summary_tables(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The tables worth keeping from a run directory, under common names: ``kernels``, ``nvtx``
    (nsys), ``ncu_kernels``, ``variants`` (bench), ``ops`` (torch), ``compiled`` (inspect), ``ranks``."""
    out: dict[str, list[dict[str, Any]]] = {}

    def read(name: str) -> Any:
        try:
            return json.loads((path / name).read_text())
        except (OSError, ValueError):
            return None

    summary = read("summary.json")
    if isinstance(summary, dict):
        tables = summary.get("tables")
        if isinstance(tables, dict):  # nsys overview
            out["kernels"] = tables.get("kernels") or []
            out["nvtx"] = tables.get("nvtx_gpu") or []
        elif "rules" in summary:  # ncu
            out["ncu_kernels"] = summary.get("kernels") or []
        else:  # torch.profiler
            out["torch_kernels"] = summary.get("kernels") or []
            out["ops"] = summary.get("ops") or []
    bench = read("bench.json")
    if isinstance(bench, dict):
        out["variants"] = bench.get("rows") or []
    per_rank = read("ranks.json")
    if isinstance(per_rank, list):
        out["ranks"] = per_rank
    inspected = read("kernels.json")
    if isinstance(inspected, dict):
        out["compiled"] = inspected.get("kernels") or []
    return out


def record_in_db(run_dir: Path, root: Path | None = None) -> str | None:
    """Record a finished run directory in the runs database; a database problem is a warning
    (the run directory is complete either way)."""
    from nsighttk import progress
    from nsighttk.errors import NsightTKError
    from nsighttk.runsdb import RunsDB

    if os.environ.get("NSIGHTTK_NO_DB") == "1":  # Slurm tasks: the login node imports their runs
        return None
    try:
        data = json.loads((run_dir / "run.json").read_text())
        data["run_dir"] = str(run_dir)
        db = RunsDB(None if os.environ.get("NSIGHTTK_DB") or root is None else root / "nsighttk.db")
        return db.record(data, summary_tables(run_dir))
    except (NsightTKError, OSError, ValueError, sqlite3.Error) as ex:
        progress.warn(f"{run_dir.name} not recorded in the runs database: {ex}")
        return None
