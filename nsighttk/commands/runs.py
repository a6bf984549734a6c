"""``nsighttk runs list|show|rm|import|jobs``: the runs database (:mod:`nsighttk.runs.db`)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk import safeio
from nsighttk.commands.submit import sync_jobs
from nsighttk.errors import InputFileError, NoDatabase, NsightTKError, UsageError
from nsighttk.runs.db import RunsDB
from nsighttk.runs.layout import RUN_JSON, TMP_PREFIX, read_manifest, summary_tables
from nsighttk.settings import Settings, current


@dataclass
class ListResult:
    rows: list[dict[str, Any]]
    db_path: Path
    message: str | None = None  # nothing recorded yet

    def as_dict(self) -> list[dict[str, Any]]:
        return self.rows


def list_runs(tool: str | None = None, target: str | None = None, status: str | None = None, limit: int = 50,
              settings: Settings | None = None) -> ListResult:
    """The recorded runs, newest first (Slurm jobs that ended since are imported first)."""
    settings = settings or current()
    sync_jobs(settings)
    try:
        db = RunsDB(settings.db_path, create=False)
    except NoDatabase as ex:  # nothing recorded yet is not a mistake
        return ListResult([], settings.db_path, ex.message)
    with db:
        return ListResult(db.runs(tool, target, status, limit), db.path)


def show(ref: str, settings: Settings | None = None) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    settings = settings or current()
    with RunsDB(settings.db_path, create=False) as db:
        r = db.get(ref)
        return r, db.tables(r["id"])


def deletable_run_dir(row: dict[str, Any]) -> Path | None:
    """The directory ``runs rm --delete-files`` may delete for a recorded run, or None when it is
    already gone.  Only the run's recorded directory, reached without symbolic links, holding a
    ``run.json`` of that same run, and never a file-system root, the home folder or the current
    folder or one above it; anything else is refused with the reason (nothing is deleted)."""
    rec = row.get("run_dir")
    if not rec:
        return None
    p = Path(str(rec))
    if not p.exists() and not p.is_symlink():
        return None
    why = None
    if not p.is_absolute() or p.is_symlink() or Path(os.path.realpath(p)) != p:
        why = "its recorded path is not a plain absolute path"
    elif not p.is_dir():
        why = "it is not a directory"
    elif p.parent == p or p in (Path.home(), Path.cwd()) or p in Path.cwd().parents:
        why = "it is a root, the home folder or the current folder"
    else:
        data = read_manifest(p) or {}
        recorded = data.get("run_dir")
        same = bool(recorded) and Path(str(recorded)).name == p.name  # relative, or a copy from a cluster
        if not data or not same or data.get("tool") != row.get("tool") \
                or data.get("started_utc") != row.get("started_utc"):
            why = f"its {RUN_JSON} does not describe this run"
    if why:
        raise UsageError(f"not deleting {p} for run {row['id']}: {why}",
                         "remove it by hand if it is really the run's, or drop --delete-files")
    return p


def remove(refs: list[str], delete_files: bool = False, settings: Settings | None = None) -> list[dict[str, Any]]:
    """Forget runs (all found first: an unknown or ambiguous id removes nothing); their
    directories stay unless ``delete_files``, and then only a directory that is provably the
    run's own (see :func:`deletable_run_dir`).  Returns the removed rows."""
    settings = settings or current()
    with RunsDB(settings.db_path, create=False) as db:
        found = [db.get(r) for r in refs]
    if len({r["id"] for r in found}) != len(found):
        raise UsageError("the same run is named twice", "name each run once")
    dirs = [deletable_run_dir(r) if delete_files else None for r in found]
    with RunsDB(settings.db_path) as db:  # now for writing
        for r, d in zip(found, dirs, strict=True):
            db.remove(r["id"])
            if d is not None:
                shutil.rmtree(d)
    return found


@dataclass
class ImportResult:
    ids: list[str]
    db_path: Path
    skipped: list[str] = field(default_factory=list)  # "<dir>: why"


def import_runs(path: Path, settings: Settings | None = None) -> ImportResult:
    """Record a run directory, or every run directory under ``path`` (one level down, as a reports
    folder holds them); unfinished (``.tmp-``) directories are never recorded, and a directory
    whose run.json cannot be read is reported and skipped, not fatal."""
    settings = settings or current()
    safeio.check_input(path, allow_dir=True)
    if not path.is_dir():
        raise InputFileError(f"{path}: not a directory", "give a run directory or a reports folder")
    if path.name.startswith(TMP_PREFIX):
        raise InputFileError(f"{path}: an unfinished run directory (its run was interrupted or is still going)",
                             "record finished run directories only")
    if (path / RUN_JSON).is_file():
        dirs = [path]
    else:
        dirs = sorted(p.parent for p in path.glob(f"*/{RUN_JSON}") if not p.parent.name.startswith(TMP_PREFIX))
    if not dirs:
        raise InputFileError(f"{path}: no {RUN_JSON} in it or in its subfolders", "give an nsighttk run directory")
    readable, skipped = [], []
    for d in dirs:  # every manifest read first: a folder of damaged runs creates no database
        data = read_manifest(d)
        if data is None:
            why = f"{d / RUN_JSON}: missing, unreadable or not a JSON object"
            if len(dirs) == 1:
                raise InputFileError(why, "is it an nsighttk run directory?")
            skipped.append(f"{d.name}: {why}")
        else:
            readable.append((d, data))
    if not readable:
        raise InputFileError(f"{path}: none of its {len(dirs)} run directories has a readable {RUN_JSON}",
                             "is it an nsighttk reports folder?")
    ids: list[str] = []
    with RunsDB(settings.db_path) as db:
        for i, (d, data) in enumerate(readable):
            try:
                ids.append(db.record({**data, "run_dir": str(d)}, summary_tables(d)))
            except InputFileError as ex:
                if len(dirs) == 1:
                    raise
                skipped.append(f"{d.name}: {ex.message}")
            except NsightTKError as ex:  # a full disk, a lock: each run is its own transaction
                if len(readable) == 1:
                    raise
                raise type(ex)(ex.message + "; " + _partly(ids, [r[0].name for r in readable[i:]]), ex.hint) from None
    return ImportResult(ids, db.path, skipped)


def _partly(ids: list[str], left: list[str]) -> str:
    """What an import stopped part-way recorded and what it did not, in a line of bounded length."""
    def some(names: list[str]) -> str:
        shown = ", ".join(n[:80] for n in names[:3])
        return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    done = f"recorded {len(ids)} run{'s' * (len(ids) != 1)}" + (f" ({some(ids)})" if ids else "")
    return f"{done}; not recorded: {len(left)} ({some(left)})"
