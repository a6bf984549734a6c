"""The runs database: every run directory nsighttk writes, recorded in one SQLite file.

Default ``<reports root>/nsighttk.db``; ``NSIGHTTK_DB`` or ``--db`` move it.  Tables (readable
with ``sqlite-utils`` and Datasette as they are):

* ``runs``: one row per run directory (``id`` = its name): tool, target, status, arch, GPU,
  tool versions, command, times, the Slurm job that produced it;
* ``run_tables``: the run's summary tables (``kernels``, ``nvtx``, ``variants``, ``ops`` ...)
  as JSON rows, so comparisons need no run directory;
* ``jobs``: Slurm jobs from ``nsighttk submit``: state per task, job directory, import time;
* ``nsighttk_meta``: ``app = nsighttk`` and ``schema_version``.

Schema changes are numbered migrations (:data:`MIGRATIONS`); ``PRAGMA user_version`` holds the
version, so a database from a newer nsighttk is refused instead of damaged.  Writers take
``BEGIN IMMEDIATE`` with a busy timeout, in WAL mode: concurrent processes (array jobs on one
file system) wait for each other instead of losing rows.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from nsighttk import __version__
from nsighttk.errors import InputFileError, NoDatabase, UsageError

APP = "nsighttk"

BUSY_TIMEOUT_MS = 60_000


def default_path() -> Path:
    from nsighttk.rundir import default_root

    return Path(os.environ.get("NSIGHTTK_DB") or default_root() / "nsighttk.db")


def _v1(db: sqlite_utils.Database) -> None:
    db.table("nsighttk_meta").create({"key": str, "value": str}, pk="key")
    db.table("runs").create({
        "id": str, "tool": str, "target": str, "workload": str, "status": str, "started_utc": str,
        "finished_utc": str, "wall_s": float, "arch": str, "gpu": str, "tools": str, "command": str,
        "run_dir": str, "error": str, "nsighttk_version": str, "recorded_utc": str,
    }, pk="id")
    db.table("runs").create_index(["target", "started_utc"])
    db.table("run_tables").create({"run_id": str, "name": str, "rows": str}, pk=("run_id", "name"),
                            foreign_keys=[("run_id", "runs", "id")])


def _v2(db: sqlite_utils.Database) -> None:
    """Slurm jobs: which job produced a run, and the job's state as last seen."""
    db.table("runs").add_column("job_id", str)
    db.table("runs").add_column("job_state", str)
    db.table("jobs").create({"job_id": str, "run_dir": str, "script": str, "state": str, "submitted_utc": str,
                       "updated_utc": str, "command": str, "array": str}, pk="job_id")


def _v3(db: sqlite_utils.Database) -> None:
    """Array jobs: each task's state, where the states came from, when the runs were imported."""
    for col in ("tasks", "source", "imported_utc", "name"):
        db.table("jobs").add_column(col, str)
    db.table("jobs").add_column("runs", int)
    db.table("runs").add_column("job_task", str)


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [_v1, _v2, _v3]
SCHEMA_VERSION = len(MIGRATIONS)


class RunsDB:
    def __init__(self, path: Path | str | None = None, create: bool = True) -> None:
        self.path = Path(path) if path else default_path()
        if not create and not self.path.exists():
            raise NoDatabase(f"no runs recorded yet: {self.path} does not exist",
                             "nsys, ncu, bench, torch, model, inspect and ranks runs and Slurm jobs are recorded "
                             "there; or pass --db FILE / NSIGHTTK_DB")
        self._check_file()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self.db = sqlite_utils.Database(conn)
        try:
            self._migrate()
        except sqlite3.DatabaseError as ex:
            raise InputFileError(f"{self.path}: not an nsighttk runs database ({ex})",
                                 "pass --db (or NSIGHTTK_DB) with another file") from None

    def _check_file(self) -> None:
        if self.path.is_dir():
            raise UsageError(f"{self.path}: is a directory, not a database file", "pass --db FILE")
        if self.path.is_file() and self.path.stat().st_size:
            with self.path.open("rb") as fh:
                if fh.read(16) != b"SQLite format 3\x00":
                    raise InputFileError(f"{self.path}: not an nsighttk runs database (not SQLite)",
                                         "pass --db (or NSIGHTTK_DB) with another file")

    @contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        """``BEGIN IMMEDIATE`` (the write lock up front: no deadlock between two upgrading readers)."""
        conn = self.db.conn
        conn.execute("BEGIN IMMEDIATE")  # waits up to BUSY_TIMEOUT_MS for other writers
        try:
            yield self.db
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _migrate(self) -> None:
        conn = self.db.conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path}: made by a newer nsighttk (schema {version}; this nsighttk "
                             f"{__version__} knows up to {SCHEMA_VERSION})", "upgrade nsighttk, or pass another --db")
        if version == SCHEMA_VERSION:
            self._check_ours()
            return
        if version == 0 and self.db.table_names():
            raise InputFileError(f"{self.path}: not an nsighttk runs database (it has tables "
                                 f"{', '.join(self.db.table_names()[:4])})", "pass --db with another file")
        conn.execute("PRAGMA journal_mode = WAL")
        with self.transaction() as db:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process may have migrated
            for step in MIGRATIONS[version:]:
                step(db)
            db.table("nsighttk_meta").upsert_all([{"key": "app", "value": APP},
                                            {"key": "schema_version", "value": str(SCHEMA_VERSION)}], pk="key")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _check_ours(self) -> None:
        if "nsighttk_meta" not in self.db.table_names():
            raise InputFileError(f"{self.path}: not an nsighttk runs database", "pass --db with another file")
        app = self.db.execute("SELECT value FROM nsighttk_meta WHERE key = 'app'").fetchone()
        if not app or app[0] != APP:
            raise InputFileError(f"{self.path}: not an nsighttk runs database", "pass --db with another file")

    # ------------------------------------------------------------------------------ runs
    def record(self, run_json: dict[str, Any], tables: dict[str, list[dict[str, Any]]] | None = None) -> str:
        """Insert or replace one run (its ``run.json``) and its summary tables; returns its id."""
        run_dir = str(run_json.get("run_dir") or "")
        rid = Path(run_dir).name or str(run_json.get("id"))
        gpu = run_json.get("gpu") or {}
        row = {
            "id": rid, "tool": run_json.get("tool"), "target": run_json.get("target") or run_json.get("workload"),
            "workload": run_json.get("workload"), "status": run_json.get("status"),
            "started_utc": run_json.get("started_utc"), "finished_utc": run_json.get("finished_utc"),
            "wall_s": run_json.get("wall_s"),
            "arch": ",".join(run_json["arch"]) if isinstance(run_json.get("arch"), list) else run_json.get("arch"),
            "gpu": gpu.get("name") if isinstance(gpu, dict) else str(gpu),
            "tools": json.dumps(run_json.get("tools") or {}), "command": json.dumps(run_json.get("command")),
            "run_dir": str(Path(run_dir).resolve()) if run_dir else None, "error": run_json.get("error"),
            "nsighttk_version": run_json.get("nsighttk_version"),
            "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            "job_id": run_json.get("slurm_array_job_id") or run_json.get("slurm_job_id"),
            "job_task": run_json.get("slurm_array_task_id"), "job_state": run_json.get("slurm_job_state"),
        }
        with self.transaction() as db:
            if row["run_dir"]:  # the same name from another directory (another machine): keep both
                base, n = rid, 1
                while True:
                    hit = db.execute("SELECT run_dir FROM runs WHERE id = ?", [rid]).fetchone()
                    if hit is None or hit[0] in (None, row["run_dir"]):
                        break
                    n += 1
                    rid = f"{base}-{n}"
                row["id"] = rid
            db.table("runs").upsert(row, pk="id")
            for name, rows in (tables or {}).items():
                db.table("run_tables").upsert({"run_id": rid, "name": name, "rows": json.dumps(rows, default=str)},
                                        pk=("run_id", "name"))
        return rid

    def runs(self, tool: str | None = None, target: str | None = None, status: str | None = None,
             limit: int | None = None) -> list[dict[str, Any]]:
        where, args = [], []
        for col, val in (("tool", tool), ("target", target), ("status", status)):
            if val:
                where.append(f"{col} = ?")
                args.append(val)
        sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY started_utc DESC, id DESC" + (f" LIMIT {int(limit)}" if limit else "")
        return [dict(r) for r in self._rows(sql, args)]

    def _rows(self, sql: str, args: list[Any]) -> list[sqlite3.Row]:
        self.db.conn.row_factory = sqlite3.Row
        try:
            return list(self.db.conn.execute(sql, args))
        finally:
            self.db.conn.row_factory = None

    def get(self, ref: str) -> dict[str, Any]:
        """A run by id, unique id prefix, or run directory path."""
        rid = Path(ref).name if ("/" in ref or Path(ref).is_dir()) else ref
        rows = self._rows("SELECT * FROM runs WHERE id = ?", [rid]) or \
            self._rows("SELECT * FROM runs WHERE id LIKE ? ORDER BY id", [rid.replace("%", "") + "%"])
        if not rows:
            raise UsageError(f"unknown run {ref!r} in {self.path}", "nsighttk runs list shows the ids")
        if len(rows) > 1:
            raise UsageError(f"run {ref!r} is ambiguous in {self.path} ({len(rows)} runs start so)",
                             "give more of the id: " + ", ".join(r["id"] for r in rows[:3]))
        return dict(rows[0])

    def tables(self, rid: str) -> dict[str, list[dict[str, Any]]]:
        return {r[0]: json.loads(r[1]) for r in
                self.db.execute("SELECT name, rows FROM run_tables WHERE run_id = ?", [rid]).fetchall()}

    def remove(self, rid: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM run_tables WHERE run_id = ?", [rid])
            db.execute("DELETE FROM runs WHERE id = ?", [rid])

    # ------------------------------------------------------------------------------ jobs
    def record_job(self, job: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.table("jobs").upsert(job, pk="job_id")

    def jobs(self, states: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        rows = [dict(r) for r in self._rows("SELECT * FROM jobs ORDER BY submitted_utc", [])]
        return [r for r in rows if not states or r["state"] in states]
