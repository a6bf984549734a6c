"""The runs database under contention and faults, with real processes.

* 8 processes run ``nsighttk runs import`` into one fresh database at the same instant (a barrier
  releases them together), 25 times: a race that hits 1 trial in 10 fails this test with
  probability 1 - 0.9^25 = 93%.  Every process exits 0 and every run is recorded.
* A write lock held by another process past the busy timeout is one clear line (exit 2), and
  reading commands still work meanwhile (WAL).
* A database the user cannot write serves ``runs list`` and ``runs show``.
* ``runs import DIR`` reports and skips malformed ``run.json`` files, never records ``.tmp-*``
  directories, and a folder of only damaged runs creates no database.
* ``runs list`` never writes a schema into an existing empty file.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hostile.runner import run_inprocess

from nsighttk.runs.db import RunsDB

REPO = Path(__file__).resolve().parents[2]
WRITERS = 8
TRIALS = 25


def _run_dir(root: Path, name: str, **fields: Any) -> Path:
    d = root / name
    (d / "raw").mkdir(parents=True)
    rec = {"tool": "bench", "target": "add", "workload": "add", "status": "ok", "run_dir": name,
           "started_utc": f"2026-11-22T10:00:{len(name) % 60:02d}+00:00", **fields}
    (d / "run.json").write_text(json.dumps(rec))
    (d / "bench.json").write_text(json.dumps({"rows": [{"variant": "v", "size": 1, "median_ms": 1.0}]}))
    return d


def _import(args: tuple[str, str, Any]) -> tuple[int, str]:
    """One process: wait at the barrier, then ``nsighttk --db DB runs import DIR``."""
    db, folder, barrier = args
    from nsighttk.cli import main

    out, err = io.StringIO(), io.StringIO()
    barrier.wait()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            main(["--db", db, "runs", "import", folder])
        code = 0
    except SystemExit as ex:
        code = ex.code if isinstance(ex.code, int) else 1
    finally:  # main() handles SIGTERM as an interrupt; the pool ends its workers with SIGTERM
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return code, err.getvalue()


def test_eight_processes_importing_into_a_fresh_database_lose_nothing(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["nsighttk.cli", "nsighttk.runs.db", "nsighttk.commands.runs"])
    folders = []
    for w in range(WRITERS):  # two runs per process, names unique across processes
        f = tmp_path / "runs" / f"w{w}"
        for i in range(2):
            _run_dir(f, f"20261122T1000{w:02d}Z-bench-add-{i}")
        folders.append(str(f))
    failures = []
    with ctx.Manager() as manager, ctx.Pool(WRITERS) as pool:
        for trial in range(TRIALS):
            db = tmp_path / f"trial{trial}.db"
            barrier = manager.Barrier(WRITERS)
            results = pool.map(_import, [(str(db), f, barrier) for f in folders])
            bad = [(code, err.strip()) for code, err in results if code != 0]
            conn = sqlite3.connect(db)
            n = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
            conn.close()
            if bad or n != 2 * WRITERS:
                failures.append(f"trial {trial}: {n} of {2 * WRITERS} runs recorded; failed processes: {bad[:2]}")
    assert not failures, "\n".join(failures)


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path]:
    runs = tmp_path / "runs"
    rd = _run_dir(runs, "20261122T100000Z-bench-add")
    db = tmp_path / "r.db"
    code, _, err, _, tb = run_inprocess(["--db", str(db), "runs", "import", str(rd)], tmp_path, 60)
    assert code == 0 and tb is None, err
    return db, rd


def test_a_lock_held_past_the_busy_timeout_is_one_line(recorded: tuple[Path, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    db, _ = recorded
    other = _run_dir(tmp_path / "more", "20261122T110000Z-bench-add")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\n"
                               "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                               "c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(60)\n",
         str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        monkeypatch.setattr("nsighttk.runs.db.BUSY_TIMEOUT_MS", 300)
        before = db.read_bytes()
        code, out, err, _, tb = run_inprocess(["--db", str(db), "runs", "import", str(other)], tmp_path, 60)
        assert (code, tb) == (2, None), err
        assert err.count("nsighttk: error") == 1 and len(err.strip().splitlines()) == 1, err
        assert "stayed locked by another process" in err
        assert db.read_bytes() == before
        # readers are not blocked by a writer (WAL)
        code, out, err, _, tb = run_inprocess(["--db", str(db), "runs", "list", "--json"], tmp_path, 60)
        assert code == 0, err
        assert [r["id"] for r in json.loads(out)] == ["20261122T100000Z-bench-add"]
    finally:
        holder.kill()
        holder.wait()


def _read_only(paths: list[Path], on: bool) -> None:
    """Make files and folders read-only for everyone: ``chattr +i`` when the tests run as root
    (root ignores permission bits), else the permission bits."""
    for p in paths if on else reversed(paths):
        if os.geteuid() == 0 and shutil.which("chattr"):
            subprocess.run(["chattr", "+i" if on else "-i", str(p)], check=True)
        else:
            os.chmod(p, (0o555 if p.is_dir() else 0o444) if on else (0o755 if p.is_dir() else 0o644))


def test_a_database_the_user_cannot_write_serves_reading_commands(tmp_path: Path) -> None:
    base = tmp_path / "ro"
    rd = _run_dir(tmp_path / "runs", "20261122T100000Z-bench-add")
    db = base / "r.db"
    code, _, err, _, tb = run_inprocess(["--db", str(db), "runs", "import", str(rd)], tmp_path, 60)
    assert code == 0 and tb is None, err
    locked = [*base.iterdir(), base]
    before = {p.name: p.read_bytes() for p in base.iterdir()}
    _read_only(locked, True)
    try:
        with pytest.raises(OSError):
            (base / "probe").write_text("x")  # really read-only
        for args in (["runs", "list"], ["runs", "list", "--json"], ["runs", "show", "20261122T100000Z"]):
            code, out, err, _, tb = run_inprocess(["--db", str(db), *args], tmp_path, 60)
            assert code == 0 and tb is None, err
            assert "20261122T100000Z-bench-add" in out
        # a command that records says so in one line
        other = _run_dir(tmp_path / "more", "20261122T110000Z-bench-add")
        code, out, err, _, tb = run_inprocess(["--db", str(db), "runs", "import", str(other)], tmp_path, 60)
        assert code == 2 and tb is None and err.count("nsighttk: error") == 1, err
    finally:
        _read_only(locked, False)
    assert {p.name: p.read_bytes() for p in base.iterdir()} == before


def test_import_skips_malformed_run_json_and_never_records_unfinished_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    good = [_run_dir(runs, f"20261122T10000{i}Z-bench-add") for i in range(2)]
    for name, body in (("20261122T200000Z-bad-json", b"{not json"), ("20261122T200001Z-bad-list", b"[1]"),
                       ("20261122T200002Z-bad-bomb", b"[" * 100_000), ("20261122T200003Z-empty", b"")):
        (runs / name).mkdir()
        (runs / name / "run.json").write_bytes(body)
    _run_dir(runs, ".tmp-20261122T300000Z-bench-add-abc123")
    db = tmp_path / "r.db"
    code, out, err, _, tb = run_inprocess(["--db", str(db), "runs", "import", str(runs)], tmp_path, 60)
    assert tb is None and code == 2, err
    assert err.count("nsighttk: skipped") == 4 and "Traceback" not in err
    assert sorted(out.split()) == sorted(d.name for d in good)
    ids = [r[0] for r in sqlite3.connect(db).execute("SELECT id FROM runs")]
    assert sorted(ids) == sorted(d.name for d in good)
    # an unfinished run directory named directly is refused; nothing is recorded
    code, out, err, _, tb = run_inprocess(
        ["--db", str(db), "runs", "import", str(runs / ".tmp-20261122T300000Z-bench-add-abc123")], tmp_path, 60)
    assert code == 2 and "unfinished run directory" in err
    assert len(list(sqlite3.connect(db).execute("SELECT id FROM runs"))) == 2
    # a folder holding only damaged runs: one line, and no database is created
    only_bad = tmp_path / "bad"
    for name in ("a", "b"):
        (only_bad / name).mkdir(parents=True)
        (only_bad / name / "run.json").write_text("garbage")
    fresh = tmp_path / "fresh.db"
    code, out, err, _, tb = run_inprocess(["--db", str(fresh), "runs", "import", str(only_bad)], tmp_path, 60)
    assert code == 2 and tb is None and err.count("nsighttk: error") == 1, err
    assert not fresh.exists()


def test_runs_list_never_writes_a_schema_into_an_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    for args in (["runs", "list"], ["runs", "list", "--json"], ["runs", "show", "x"], ["compare", "x", "y"],
                 ["report", "x"]):
        code, _, err, _, tb = run_inprocess(["--db", str(empty), *args], tmp_path, 60)
        assert tb is None and code in (0, 2), err
        assert empty.stat().st_size == 0, args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]
    assert RunsDB(empty).runs() == []  # a command that records makes the schema there
