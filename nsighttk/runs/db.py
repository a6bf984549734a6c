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

import contextlib
import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsighttk import __version__, safeio
from nsighttk.errors import InputFileError, NoDatabase, NsightTKError, OutputFileError, UsageError, message_of
from nsighttk.runs.layout import read_manifest, summary_tables
from nsighttk.settings import current

if TYPE_CHECKING:  # imported when a database is opened: it imports pandas (a second), and
    import sqlite_utils  # `runs list` with nothing recorded answers without it

APP = "nsighttk"

BUSY_TIMEOUT_MS = 60_000


class DatabaseLocked(NsightTKError):
    """Another process held the runs database's write lock for longer than the busy timeout."""


def default_path() -> Path:
    return current().db_path


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

#: The columns each table has at :data:`SCHEMA_VERSION` (what :data:`MIGRATIONS` make): a file with
#: the right version and other columns is not one of ours.
COLUMNS = {
    "nsighttk_meta": {"key", "value"},
    "runs": {"id", "tool", "target", "workload", "status", "started_utc", "finished_utc", "wall_s", "arch", "gpu",
             "tools", "command", "run_dir", "error", "nsighttk_version", "recorded_utc", "job_id", "job_state",
             "job_task"},
    "run_tables": {"run_id", "name", "rows"},
    "jobs": {"job_id", "run_dir", "script", "state", "submitted_utc", "updated_utc", "command", "array", "tasks",
             "source", "imported_utc", "name", "runs"},
}

#: SQLite's errors, and the one Python's ``sqlite3`` raises where SQLite's own message is not UTF-8
#: (a damaged schema): both mean the file cannot be used as it is.
SQLITE_ERRORS = (sqlite3.Error, UnicodeDecodeError)

_NOT_OURS = "pass --db (or NSIGHTTK_DB) with another file"


class _Reading:
    """What the reading commands use of a database: its connection, its tables' names and
    ``execute``, on the standard library alone."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def table_names(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)


class RunsDB:
    """The runs database.  ``create=False`` (reading commands): a missing or empty file is
    :class:`NoDatabase`, never a new database, and the file is opened read-only (a database the
    user cannot write still serves ``runs list``/``show`` and ``compare``)."""

    def __init__(self, path: Path | str | None = None, create: bool = True) -> None:
        self.path = Path(path) if path else default_path()
        self.readonly = not create
        st = safeio.probe(self.path)
        if not create and safeio.named(self.path) and st is None:
            safeio.check_input(self.path, "runs database")  # a name too long, a link loop: one line
        if not create and (st is None or (safeio.is_file(self.path) and st.st_size == 0)):
            state = "does not exist" if st is None else "is empty"
            raise NoDatabase(f"no runs recorded yet: {self.path} {state}",
                             "nsys, ncu, bench, torch, model, inspect and ranks runs and Slurm jobs are recorded "
                             "there; or pass --db FILE / NSIGHTTK_DB")
        self._check_file()
        conn = None
        try:
            if create:
                safeio.make_dirs(self.path.parent, "runs database folder")
                conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            else:
                conn = self._connect_readonly()
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if create:
                import sqlite_utils

                self.db: sqlite_utils.Database | _Reading = sqlite_utils.Database(conn)
                self._migrate()
            else:  # (sqlite-utils imports pandas: a second of start-up for `runs list`)
                self.db = _Reading(conn)
                self._check_version()
        except BaseException as ex:
            if conn is not None:  # never a connection left open behind an error
                conn.close()
            if isinstance(ex, sqlite3.OperationalError):
                raise self._locked_or(ex) from None
            if isinstance(ex, SQLITE_ERRORS):
                raise InputFileError(f"{self.path}: not an nsighttk runs database ({message_of(ex)})",
                                     _NOT_OURS) from None
            raise

    def close(self) -> None:
        """Close the connection (the last one to close checkpoints the WAL into the file)."""
        with contextlib.suppress(sqlite3.Error, AttributeError):
            self.db.conn.close()

    def __enter__(self) -> RunsDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect_readonly(self) -> sqlite3.Connection:
        """A connection that cannot write.  Where the file and its folder are writable it is a
        read-write connection with ``query_only`` on: as the last one to close, it removes the
        ``-wal`` and ``-shm`` files that opening a WAL database makes (a ``mode=ro`` connection
        cannot, and would leave them behind after every read)."""
        uri = "file:" + urllib.parse.quote(os.fsencode(self.path.resolve()))  # (bytes: any name opens)
        if os.access(self.path, os.W_OK) and os.access(self.path.resolve().parent, os.W_OK | os.X_OK):
            conn = sqlite3.connect(uri + "?mode=rw", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            try:
                conn.execute("PRAGMA query_only = ON")
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            except BaseException:
                conn.close()
                raise
        try:
            conn = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:  # a WAL database in a folder we cannot write: nobody else can either
            return sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True, isolation_level=None)

    def _locked_or(self, ex: sqlite3.OperationalError) -> NsightTKError:
        text = message_of(ex)
        if "locked" in text or "busy" in text:
            return DatabaseLocked(f"the runs database {self.path} stayed locked by another process for more than "
                                  f"{BUSY_TIMEOUT_MS // 1000} s", "try again when the other nsighttk has finished "
                                                                  "(or pass --db to use another file)")
        if "full" in text:
            return OutputFileError(f"cannot write the runs database {self.path}: the disk is full (this change "
                                   "was not recorded)", "free some space, or pass --db with a file elsewhere")
        if "readonly" in text or "read-only" in text:
            return UsageError(f"the runs database {self.path} is read-only here",
                              "reading commands work; to record runs pass --db with a file you can write")
        return InputFileError(f"{self.path}: cannot be used as the runs database ({text})", _NOT_OURS)

    def _check_file(self) -> None:
        if safeio.is_dir(self.path):
            raise UsageError(f"{self.path}: is a directory, not a database file", "pass --db FILE")
        if safeio.probe(self.path) is not None:
            safeio.check_input(self.path, "runs database")
            if self.path.stat().st_size and safeio.read_head(self.path, 16) != b"SQLite format 3\x00":
                raise InputFileError(f"{self.path}: not an nsighttk runs database (not SQLite)", _NOT_OURS)
        else:
            safeio.check_output(self.path, "runs database")

    @contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        """``BEGIN IMMEDIATE`` (the write lock up front: no deadlock between two upgrading readers);
        waits up to BUSY_TIMEOUT_MS for other writers, then one clear error."""
        if self.readonly:
            raise UsageError(f"the runs database {self.path} was opened for reading", "this is a bug in nsighttk")
        assert not isinstance(self.db, _Reading)
        conn = self.db.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as ex:
            raise self._locked_or(ex) from None
        try:
            yield self.db
        except BaseException as ex:
            self._rollback()
            if isinstance(ex, sqlite3.OperationalError):  # a full disk, a lock, an I/O error: one line
                raise self._locked_or(ex) from None
            raise
        try:
            conn.execute("COMMIT")
        except SQLITE_ERRORS as ex:  # SQLite may have rolled back already (a full disk, an I/O error)
            self._rollback()
            if isinstance(ex, sqlite3.OperationalError):
                raise self._locked_or(ex) from None
            raise InputFileError(f"{self.path}: cannot be used as the runs database ({message_of(ex)})",
                                 _NOT_OURS) from None

    def _rollback(self) -> None:
        """Undo the open transaction, if SQLite has not already (a failed COMMIT of a full disk or an
        I/O error rolls back by itself: a second ROLLBACK would only fail)."""
        conn = self.db.conn
        if conn.in_transaction:
            with contextlib.suppress(*SQLITE_ERRORS):
                conn.execute("ROLLBACK")

    def _migrate(self) -> None:
        """Create or upgrade the schema, race-free: every check and every change happens inside one
        ``BEGIN IMMEDIATE`` transaction, so two processes opening a fresh file never see each
        other's half-made schema."""
        conn = self.db.conn
        with self.transaction() as db:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise UsageError(f"{self.path}: made by a newer nsighttk (schema {version}; this nsighttk "
                                 f"{__version__} knows up to {SCHEMA_VERSION})",
                                 "upgrade nsighttk, or pass another --db")
            if version == 0 and db.table_names():
                raise InputFileError(f"{self.path}: not an nsighttk runs database (it has tables "
                                     f"{', '.join(db.table_names()[:4])})", _NOT_OURS)
            if version == SCHEMA_VERSION:
                self._check_ours()
            else:
                for step in MIGRATIONS[version:]:
                    step(db)
                db.table("nsighttk_meta").upsert_all([{"key": "app", "value": APP},
                                                      {"key": "schema_version", "value": str(SCHEMA_VERSION)}],
                                                     pk="key")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._wal()

    def _wal(self) -> None:
        """WAL mode (readers never wait for the writer); switching needs a moment alone with the
        file, so it is retried while other processes hold it."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                if self.db.conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    self.db.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as ex:
                if time.monotonic() > deadline:
                    raise self._locked_or(ex) from None
                time.sleep(0.05)

    def _check_version(self) -> None:
        version = self.db.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path}: made by a newer nsighttk (schema {version}; this nsighttk "
                             f"{__version__} knows up to {SCHEMA_VERSION})", "upgrade nsighttk, or pass another --db")
        if version == 0:
            names = self.db.table_names()
            raise InputFileError(f"{self.path}: not an nsighttk runs database"
                                 + (f" (it has tables {', '.join(names[:4])})" if names else ""), _NOT_OURS)
        self._check_ours()
        if version < SCHEMA_VERSION:
            raise UsageError(f"{self.path}: recorded by an older nsighttk (schema {version} of {SCHEMA_VERSION})",
                             "any command that records a run (or nsighttk runs import) upgrades it in place")

    def _check_ours(self) -> None:
        """Ours: ``app = nsighttk`` in ``nsighttk_meta``, and every table with the columns of its
        version (a file with the right version and other columns is refused in one line, before
        a query meets a missing column)."""
        if "nsighttk_meta" not in self.db.table_names():
            raise InputFileError(f"{self.path}: not an nsighttk runs database", _NOT_OURS)
        app = self.db.execute("SELECT value FROM nsighttk_meta WHERE key = 'app'").fetchone()
        if not app or app[0] != APP:
            raise InputFileError(f"{self.path}: not an nsighttk runs database", _NOT_OURS)
        for table, want in COLUMNS.items():
            have = {r[1] for r in self.db.execute(f'PRAGMA table_info("{table}")').fetchall()}
            missing = sorted(want - have)
            if missing:
                what = "no table" if not have else "no column " + ", ".join(missing[:3]) + \
                    (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
                raise InputFileError(f"{self.path}: not an nsighttk runs database of schema {SCHEMA_VERSION} "
                                     f"({table}: {what})", _NOT_OURS)

    # ------------------------------------------------------------------------------ runs
    def record(self, run_json: dict[str, Any], tables: dict[str, list[dict[str, Any]]] | None = None) -> str:
        """Insert or replace one run (its ``run.json``) and its summary tables; returns its id."""
        def text(key: str) -> str | None:  # run.json is user-editable: every column is text or null
            v = run_json.get(key)
            return None if v is None or isinstance(v, (dict, list)) else str(v)

        run_dir = text("run_dir") or ""
        rid = Path(run_dir).name or text("id") or ""
        if not rid or rid.startswith(".tmp-"):
            raise InputFileError(f"{run_dir or 'run'}: not a finished run directory (no name, or still being written)",
                                 "record finished run directories only")
        gpu = run_json.get("gpu")
        arch = run_json.get("arch")
        wall = run_json.get("wall_s")
        row = {
            "id": rid, "tool": text("tool"), "target": text("target") or text("workload"),
            "workload": text("workload"), "status": text("status"),
            "started_utc": text("started_utc"), "finished_utc": text("finished_utc"),
            "wall_s": float(wall) if isinstance(wall, (int, float)) and not isinstance(wall, bool) else None,
            "arch": ",".join(map(str, arch)) if isinstance(arch, list) else text("arch"),
            "gpu": str(gpu.get("name")) if isinstance(gpu, dict) else (str(gpu) if gpu else None),
            "tools": json.dumps(run_json.get("tools") or {}, default=str),
            "command": json.dumps(run_json.get("command"), default=str),
            "run_dir": str(Path(run_dir).resolve()) if run_dir else None, "error": text("error"),
            "nsighttk_version": text("nsighttk_version"),
            "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            "job_id": text("slurm_array_job_id") or text("slurm_job_id"),
            "job_task": text("slurm_array_task_id"), "job_state": text("slurm_job_state"),
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
        except sqlite3.OperationalError as ex:
            raise self._locked_or(ex) from None
        except SQLITE_ERRORS as ex:
            raise self._damaged(ex) from None
        finally:
            self.db.conn.row_factory = None

    def _damaged(self, ex: BaseException) -> InputFileError:
        return InputFileError(f"{self.path}: the runs database is damaged ({message_of(ex)})",
                              "restore it from a copy, or pass --db with another file")

    def get(self, ref: str) -> dict[str, Any]:
        """A run by exact id, unique literal id prefix, or run directory path.  Ids match
        literally: no SQL wildcards, no empty or path-like prefix that matches everything."""
        text = ref.strip()
        if not text or text in (".", "..", "/") or any(ord(c) < 32 for c in text):
            raise UsageError(f"{ref!r} is not a run id", "nsighttk runs list shows the ids")
        if "/" in text or text in (".", ".."):
            rows = self._rows("SELECT * FROM runs WHERE run_dir = ?", [str(Path(text).resolve())])
            rid = Path(text).name
            rows = rows or self._rows("SELECT * FROM runs WHERE id = ?", [rid])
        else:
            rows = self._rows("SELECT * FROM runs WHERE id = ?", [text])
            if not rows:  # a literal prefix (no LIKE: '%' and '_' are data)
                rows = self._rows("SELECT * FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id", [len(text), text])
        if not rows:
            raise UsageError(f"unknown run {ref!r} in {self.path}", "nsighttk runs list shows the ids")
        if len(rows) > 1:
            raise UsageError(f"run {ref!r} is ambiguous in {self.path} ({len(rows)} runs start so)",
                             "give more of the id: " + ", ".join(r["id"] for r in rows[:3]))
        return dict(rows[0])

    def tables(self, rid: str) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for r in self._rows("SELECT name, rows FROM run_tables WHERE run_id = ?", [rid]):
            try:
                out[str(r[0])] = json.loads(r[1])
            except (TypeError, ValueError, RecursionError) as ex:  # a row edited by hand
                raise self._damaged(ex) from None
        return out

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


def record_run(db: RunsDB, run_dir: Path) -> str:
    """Record one finished run directory (its run.json and summary tables); returns its id."""
    data = read_manifest(run_dir)
    if data is None:
        raise InputFileError(f"{run_dir / 'run.json'}: missing, unreadable or not a JSON object",
                             "is it an nsighttk run directory?")
    data["run_dir"] = str(run_dir)
    return db.record(data, summary_tables(run_dir))
