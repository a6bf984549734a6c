"""Loaders: one capture file in, a :class:`~nsighttk.profile.Profile` out.

:func:`load` recognises the format (by suffix, then by content for files without one) and
dispatches to the loader that owns it.  Loaders never write into the user's file; a ``.nsys-rep``
is exported to SQLite in a temporary folder first (that needs nsys).  Run directories are not
captures: :func:`nsighttk.runs.layout.find_capture` finds the capture inside one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nsighttk import safeio
from nsighttk.errors import InputFileError
from nsighttk.load.nsys_schema import SQLITE_MAGIC

if TYPE_CHECKING:
    from nsighttk.profile import Profile

SUFFIXES = (".nsys-rep", ".ncu-rep", ".csv", ".json", ".gz", ".sqlite", ".db")


def kind_of(path: str | Path) -> str:
    """``nsys-rep``, ``ncu-rep``, ``ncu-csv``, ``kineto`` or ``nsys-sqlite``; an error for anything
    else (checked with ``stat`` and at most a 16-byte read)."""
    p = Path(path)
    safeio.check_input(p)
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES and safeio.read_head(p, 16) != SQLITE_MAGIC:
        raise InputFileError(f"{p}: not a capture nsighttk reads",
                             "give an nsys .sqlite/.nsys-rep, an ncu .ncu-rep or --csv export, a Kineto .json, "
                             "or a run directory")
    return {".nsys-rep": "nsys-rep", ".ncu-rep": "ncu-rep", ".csv": "ncu-csv", ".json": "kineto",
            ".gz": "kineto"}.get(suffix, "nsys-sqlite")


def load(path: str | Path) -> Profile:
    """Load any supported capture file into a Profile (read-only; ``.nsys-rep`` needs nsys).

    The loaders of other formats are imported when needed (they need pandas, an nsys SQLite
    export does not)."""
    from nsighttk.load.nsys_sqlite import load_nsys_sqlite

    p = Path(path)
    kind = kind_of(p)
    if kind == "nsys-rep":
        return _load_nsys_rep(p)
    if kind in ("ncu-rep", "ncu-csv"):
        from nsighttk.load.ncu import load_ncu_csv, load_ncu_rep

        return load_ncu_rep(p) if kind == "ncu-rep" else load_ncu_csv(p)
    if kind == "kineto":
        from nsighttk.load.kineto import load_kineto

        return load_kineto(p)
    return load_nsys_sqlite(p)


def _load_nsys_rep(rep: Path) -> Profile:
    from nsighttk import progress, scratch, toolchain
    from nsighttk.collect import nsys as collect_nsys
    from nsighttk.load.nsys_sqlite import load_nsys_sqlite

    nsys = toolchain.find_tool("nsys")
    if not nsys.path:
        raise toolchain.ToolNotFound(f"{rep}: reading .nsys-rep files needs nsys, which is not installed here",
                                     "export it where nsys is (nsys export --type sqlite), then give the .sqlite")
    tmp = scratch.Folder("export-")  # lives as long as the (lazy) profile
    try:
        with progress.step(f"exporting {rep.name} to SQLite"):
            sqlite = collect_nsys.export_sqlite(nsys.path, rep, Path(tmp.name))
        profile = load_nsys_sqlite(sqlite, keep_alive=tmp)
    except BaseException:
        tmp.cleanup()
        raise
    profile.meta["source"] = str(rep)
    return profile
