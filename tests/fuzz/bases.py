"""The bases damaged copies are made from: every real capture under ``tests/fixtures``, discovered
by what the file is (not by a list), so a fixture a change adds is fuzzed from then on; and the
seed of this run.

* nsys exports: ``*.sqlite`` files with ``StringIds`` or a ``CUPTI_ACTIVITY_KIND_*`` table;
* Kineto traces: ``*.json`` / ``*.json.gz`` whose first MiB names ``traceEvents``;
* ncu CSV exports: ``*.csv`` whose header starts with ncu's ``"ID","Process ID"``;
* ``.ncu-rep`` reports.

:data:`SEED` is ``NSIGHTTK_FUZZ_SEED`` when set (a failure replays; CI fixes it), else fresh from
the operating system on every run, and printed in pytest's header.
"""

from __future__ import annotations

import gzip
import os
import random
import sqlite3
import urllib.parse
from functools import cache
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

SEED_VAR = "NSIGHTTK_FUZZ_SEED"
SEED = int(os.environ.get(SEED_VAR) or random.SystemRandom().randrange(2**32))


def replay() -> str:
    """The line that replays this run's draws."""
    return f"fuzz seed {SEED} (replay with {SEED_VAR}={SEED})"


def _files(*suffixes: str) -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and not p.is_symlink() and p.name.endswith(suffixes))


def _head(path: Path, n: int) -> bytes:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                return fh.read(n)
        with path.open("rb") as fh:
            return fh.read(n)
    except (OSError, EOFError):
        return b""


def _is_nsys(path: Path) -> bool:
    if _head(path, 16) != b"SQLite format 3\x00":
        return False
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return "StringIds" in names or any(n.startswith("CUPTI_ACTIVITY_KIND_") for n in names)


@cache
def nsys_exports() -> tuple[Path, ...]:
    return tuple(p for p in _files(".sqlite") if _is_nsys(p))


@cache
def kineto_traces() -> tuple[Path, ...]:
    return tuple(p for p in _files(".json", ".json.gz") if b'"traceEvents"' in _head(p, 2**20))


@cache
def ncu_csvs() -> tuple[Path, ...]:
    return tuple(p for p in _files(".csv") if _head(p, 64).startswith(b'"ID","Process ID"'))


@cache
def ncu_reports() -> tuple[Path, ...]:
    return tuple(_files(".ncu-rep"))


def captures() -> tuple[Path, ...]:
    """Every real capture of every kind."""
    return nsys_exports() + kineto_traces() + ncu_csvs() + ncu_reports()
