"""Outputs appear complete or not at all.

* A full disk (ENOSPC, simulated in-process: every file nsighttk opens for writing accepts a few
  bytes, then fails as a full disk does) while ``stats -o``, ``rules -o``, ``report -o``,
  ``compare --html`` and ``bench --csv`` replace an existing output: the old file stays
  byte-identical, no temporary file is left, exit 2 and one line saying the disk is full.
* A set of files (``stats``/``rules -o PREFIX`` with several reports) is never left some new and
  some old: a failure or Ctrl-C while writing the second replaces none of them.
* Ctrl-C (a real SIGINT to a real process) during ``stats -f csv -o`` of a large export, during
  ``analyze`` and during a ``bench`` run: exit 130, ``nsighttk: interrupted``, no traceback, no
  fragment under a final name; the bench run directory is kept, renamed, and says interrupted.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FullDisk, capture
from hostile.runner import run_inprocess

from nsighttk import safeio

REPO = Path(__file__).resolve().parents[2]
TMP_FILES = ".*.tmp-*"


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """After this, files nsighttk writes (through :mod:`nsighttk.safeio`) hit a full disk after
    ``state['left']`` bytes (set it in the test; default 100)."""
    state = {"left": 100}
    real = builtins.open

    def full_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        fh = real(file, mode, *args, **kwargs)
        return FullDisk(fh, state) if any(c in mode for c in "wax") else fh

    monkeypatch.setattr(safeio, "open", full_open, raising=False)
    return state


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _ok(argv: list[str], d: Path) -> str:
    code, out, err, hung, tb = run_inprocess(argv, d, 120)
    assert (code, tb, hung) == (0, None, False), err
    return out


def _fails_in_one_line(argv: list[str], d: Path, says: str) -> str:
    code, _, err, hung, tb = run_inprocess(argv, d, 120)
    assert tb is None and not hung, tb
    assert code == 2, (code, err)
    assert err.count("nsighttk: error") == 1 and len(err.strip().splitlines()) == 1, err
    assert says in err, err
    return err


WRITERS = {
    "stats-csv-several": (["stats", "IN", "-f", "csv", "-r", "cuda_gpu_sum,cuda_api_sum,cuda_gpu_trace", "-o",
                           "out/p", "--force-overwrite"], ["out/p_cuda_gpu_sum.csv", "out/p_cuda_api_sum.csv",
                                                           "out/p_cuda_gpu_trace.csv"]),
    "stats-table": (["stats", "IN", "-r", "cuda_gpu_trace", "-o", "out/t", "--force-overwrite"],
                    ["out/t_cuda_gpu_trace.txt"]),
    "rules-csv-several": (["rules", "IN", "-f", "csv", "-r", "gpu_gaps:gap=1,cuda_api_sync,gpu_time_util", "-o",
                           "out/r", "--force-overwrite"], None),
    "report": (["report", "IN", "-o", "out/page.html", "--force"], ["out/page.html"]),
    "compare-html": (["compare", "IN", "IN", "--force", "--html", "out/cmp.html"], ["out/cmp.html"]),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_full_disk_leaves_the_old_outputs_intact(writer: str, tmp_path: Path, full_disk: dict[str, int],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    argv, _ = WRITERS[writer]
    src = tmp_path / "in.sqlite"
    src.write_bytes(capture("streams_demo").read_bytes())
    argv = [str(src) if a == "IN" else a for a in argv]
    full_disk["left"] = 10**12
    _ok(argv, tmp_path)  # the outputs as a first, complete run wrote them
    before = _snapshot(tmp_path)
    assert len(before) >= 2
    full_disk["left"] = 100
    _fails_in_one_line(argv, tmp_path, "the disk is full")
    assert _snapshot(tmp_path) == before
    assert not list(tmp_path.rglob(TMP_FILES))


def _fail_on_second(monkeypatch: pytest.MonkeyPatch, target: str, exc: BaseException) -> None:
    """Make the second call of ``module.function`` raise ``exc`` (the first file is complete)."""
    module, name = target.rsplit(".", 1)
    import importlib

    mod = importlib.import_module(module)
    real = getattr(mod, name)
    calls = {"n": 0}

    def second_fails(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise exc
        return real(*args, **kwargs)

    monkeypatch.setattr(mod, name, second_fails)


SETS = {
    "rules": (["rules", "IN", "-f", "csv", "-r", "gpu_gaps:gap=1,cuda_api_sync,gpu_time_util", "-o", "out/r",
               "--force-overwrite"], "nsighttk.report.rules_format.render"),
    "stats": (["stats", "IN", "-f", "csv", "-r", "cuda_gpu_sum,cuda_api_sum,cuda_gpu_trace", "-o", "out/p",
               "--force-overwrite"], "nsighttk.commands.stats._stream_csv"),
}


@pytest.mark.parametrize("how", ["ctrl-c", "full-disk"])
@pytest.mark.parametrize(("argv", "target"), [SETS["rules"], SETS["stats"]], ids=["rules", "stats"])
def test_a_set_of_outputs_is_replaced_all_together_or_not_at_all(argv: list[str], target: str, how: str,
                                                                tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "in.sqlite"
    src.write_bytes(capture("streams_demo").read_bytes())
    argv = [str(src) if a == "IN" else a for a in argv]
    _ok(argv, tmp_path)
    for p in (tmp_path / "out").iterdir():  # mark the old set, so any replaced file shows
        p.write_text("old\n")
    before = _snapshot(tmp_path)
    assert len([k for k in before if k.startswith("out/")]) == 3
    if how == "ctrl-c":
        _fail_on_second(monkeypatch, target, KeyboardInterrupt())
        code, _, err, _, tb = run_inprocess(argv, tmp_path, 120)
        assert (code, tb) == (130, None), err
        assert err.strip().splitlines()[-1] == "nsighttk: interrupted"
    else:
        _fail_on_second(monkeypatch, target, OSError(errno.ENOSPC, "No space left on device"))
        _fails_in_one_line(argv, tmp_path, "the disk is full")
    assert _snapshot(tmp_path) == before
    assert not list(tmp_path.rglob(TMP_FILES))


@pytest.fixture
def python_sigint() -> Iterator[None]:
    """Python's own Ctrl-C handler, also where the shell started pytest with SIGINT ignored (a
    background job): deferred signals go to the handler found, and an ignored one raises nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("python_sigint")
def test_deferred_signals_hold_ctrl_c_until_the_renames_are_done(tmp_path: Path) -> None:
    names = [tmp_path / f"f{i}" for i in range(3)]
    with pytest.raises(KeyboardInterrupt), safeio.atomic_files() as files:
        for i, n in enumerate(names):
            files.write_text(n, f"new {i}\n")
            if i == 0:  # Ctrl-C arrives while the set is still being written: none replaced
                signal.raise_signal(signal.SIGINT)
    assert not any(n.exists() for n in names) and not list(tmp_path.iterdir())
    group = safeio.AtomicFiles()
    for i, n in enumerate(names):
        group.write_text(n, f"new {i}\n")
    real_replace = os.replace

    def replace_then_interrupt(a: Any, b: Any) -> None:
        real_replace(a, b)
        signal.raise_signal(signal.SIGINT)  # held until every rename is done

    os.replace = replace_then_interrupt  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            group.commit()
    finally:
        os.replace = real_replace
    assert [n.read_text() for n in names] == [f"new {i}\n" for i in range(3)]


# ---------------------------------------------------------------------------- real Ctrl-C


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An nsys export large enough that writing its GPU trace takes a while (300k kernels)."""
    from synth import SynthSpec, make_export

    d = tmp_path_factory.mktemp("big")
    return make_export(capture("streams_demo"), d / "big.sqlite",
                       SynthSpec(kernels=300_000, runtime=320_000, memcpys=5000, memsets=500, iterations=200))


def _start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NSIGHTTK_QUIET": "1", "NSIGHTTK_REPORTS": str(cwd / "reports"),
           "NSIGHTTK_HOME": str(cwd / "home")}
    env.pop("NSIGHTTK_DB", None)
    return subprocess.Popen([sys.executable, "-m", "nsighttk", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _interrupt_when(proc: subprocess.Popen[str], ready: Any, limit: float = 120) -> tuple[int, str]:
    deadline = time.monotonic() + limit
    while not ready():
        assert proc.poll() is None, f"finished before it could be interrupted: {proc.communicate()}"
        assert time.monotonic() < deadline, "never got to the point of interrupting it"
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def test_ctrl_c_while_stats_writes_a_large_csv(big_export: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    old = {n: f"old {n}\n" for n in ("p_cuda_gpu_trace.csv", "p_cuda_gpu_sum.csv")}
    for n, text in old.items():
        (out / n).write_text(text)
    src_before = big_export.stat()
    proc = _start(["stats", str(big_export), "-f", "csv", "-r", "cuda_gpu_trace,cuda_gpu_sum", "-o", "out/p",
                   "--force-overwrite"], tmp_path)
    code, err = _interrupt_when(proc, lambda: any(out.glob(TMP_FILES)))
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "nsighttk: interrupted" and "Traceback" not in err, err
    assert {p.name: p.read_text() for p in out.iterdir()} == old  # no fragment, the old files untouched
    assert (big_export.stat().st_size, big_export.stat().st_mtime_ns) == (src_before.st_size, src_before.st_mtime_ns)


def _reading(proc: subprocess.Popen[str], path: Path) -> bool:
    """Whether ``proc`` has ``path`` open (Linux: its file descriptors in /proc)."""
    fds = Path(f"/proc/{proc.pid}/fd")
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) == str(path) for fd in fds.iterdir())
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_ctrl_c_during_analyze(big_export: Path, tmp_path: Path) -> None:
    # The signal must land inside the work (about 1 s here), not in the interpreter's shutdown,
    # where Python can no longer say anything: sent once the export is open, which it stays
    # until the analysis is done.
    proc = _start(["analyze", str(big_export.resolve()), "--json"], tmp_path)
    code, err = _interrupt_when(proc, lambda: _reading(proc, big_export.resolve()))
    assert code == 130, err
    assert err.strip().splitlines() == ["nsighttk: interrupted"], err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_ctrl_c_during_a_bench_run_keeps_its_directory_saying_interrupted(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    reports = tmp_path / "reports"
    proc = _start(["bench", "add", "--device", "cpu", "--variants", "torch_add", "--sizes", "2^10",
                   "--warmup-ms", "0", "--rep-ms", "120000", "--csv", "b.csv"], tmp_path)
    code, err = _interrupt_when(proc, lambda: reports.is_dir() and any(reports.glob(".tmp-*")), limit=300)
    assert code == 130, err
    assert "nsighttk: interrupted" in err and "Traceback" not in err, err
    runs = [p for p in reports.iterdir() if p.is_dir()]
    assert len(runs) == 1 and not runs[0].name.startswith(".tmp-"), runs
    rec = json.loads((runs[0] / "run.json").read_text())
    assert rec["status"] == "interrupted" and "Ctrl-C" in rec["error"]
    assert not (tmp_path / "b.csv").exists() and not list(tmp_path.rglob(TMP_FILES))


def test_a_full_disk_while_recording_a_run_changes_nothing_in_the_database(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's own page limit plays the full disk: the database may not grow by a page."""
    import sqlite3

    from nsighttk.runs import db as runs_db

    runs = tmp_path / "runs"
    for i in range(2):
        d = runs / f"20261122T10000{i}Z-bench-add"
        (d / "raw").mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"tool": "bench", "target": "add", "status": "ok",
                                                "run_dir": d.name, "started_utc": "2026-11-22T10:00:00+00:00"}))
        (d / "bench.json").write_text(json.dumps({"rows": [{"variant": "v", "size": 1, "x": "y" * 50_000}]}))
    db = tmp_path / "r.db"
    _ok(["--db", str(db), "runs", "import", str(runs / "20261122T100000Z-bench-add")], tmp_path)
    before = db.read_bytes()
    real_connect = sqlite3.connect

    def full(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {max(pages, 1)}")
        return conn

    monkeypatch.setattr(runs_db.sqlite3, "connect", full)
    _fails_in_one_line(["--db", str(db), "runs", "import", str(runs / "20261122T100001Z-bench-add")], tmp_path,
                       "the disk is full")
    monkeypatch.setattr(runs_db.sqlite3, "connect", real_connect)
    assert db.read_bytes() == before
    out = _ok(["--db", str(db), "runs", "list", "--json"], tmp_path)
    assert [r["id"] for r in json.loads(out)] == ["20261122T100000Z-bench-add"]


def test_a_full_disk_during_bench_leaves_the_old_csv_and_no_finished_fragment(tmp_path: Path,
                                                                             full_disk: dict[str, int]) -> None:
    pytest.importorskip("torch")
    argv = ["bench", "add", "--device", "cpu", "--variants", "torch_add", "--sizes", "2^10", "--warmup-ms", "0",
            "--rep-ms", "2", "--csv", "b.csv"]
    full_disk["left"] = 10**12
    _ok(argv, tmp_path)
    old = (tmp_path / "b.csv").read_bytes()
    finished = sorted(p.name for p in (tmp_path / "reports").iterdir())
    full_disk["left"] = 100
    _fails_in_one_line(argv, tmp_path, "the disk is full")
    assert (tmp_path / "b.csv").read_bytes() == old
    assert not list(tmp_path.rglob(TMP_FILES))
    # the second run could not even write its run.json: it stays unfinished (.tmp-), never under a final name
    now = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert [n for n in now if not n.startswith(".tmp-")] == finished


def test_no_output_replaces_an_input_but_nsighttk_updates_its_own_manifest(tmp_path: Path) -> None:
    """What a command reads as an input (a capture, --db) is never replaced by its outputs (also
    through a symbolic link); nsighttk's own JSON (a run's manifest, which Slurm imports update)
    may be read and rewritten in one command."""
    from nsighttk.errors import OutputFileError

    safeio.track_inputs()
    try:
        src = tmp_path / "in.sqlite"
        src.write_bytes(b"capture")
        safeio.check_input(src)
        (tmp_path / "link.html").symlink_to(src)
        for target in (src, tmp_path / "link.html"):
            with pytest.raises(OutputFileError, match="one of this command's inputs"):
                safeio.write_text(target, "report")
        assert src.read_bytes() == b"capture"
        manifest = tmp_path / "run.json"
        safeio.write_json(manifest, {"status": "running"})
        data = safeio.read_json_or_none(manifest)
        safeio.write_json(manifest, {**data, "status": "ok"})
        assert json.loads(manifest.read_text())["status"] == "ok"
        safeio.read_head(tmp_path / "run.json")  # a peek at an output's header is no input either
        safeio.write_json(manifest, {"status": "ok"})
    finally:
        safeio.track_inputs(False)


@pytest.mark.parametrize("how", ["single", "set"])
def test_ctrl_c_right_after_the_temporary_file_is_made_leaves_no_fragment(tmp_path: Path, how: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C lands the moment the temporary file exists, before the writer holds it (what a
    Ctrl-C sent as a large CSV's temporary file appears can hit): the fragment is removed and the
    old file stays, for one output and for a set."""
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    real_open = builtins.open

    def open_then_interrupted(*a: Any, **k: Any) -> Any:
        real_open(*a, **k).close()  # (the file now exists, empty)
        raise KeyboardInterrupt

    monkeypatch.setattr(safeio, "open", open_then_interrupted, raising=False)
    with pytest.raises(KeyboardInterrupt):
        if how == "single":
            with safeio.atomic_write(target) as fh:
                fh.write("new\n")
        else:
            with safeio.atomic_files() as files:
                files.write_text(target, "new\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"] and target.read_text() == "old\n"


def test_a_full_disk_at_commit_is_one_line_saying_which_runs_were_recorded(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A COMMIT that fails on a full disk has been rolled back by SQLite already: the import stops
    in one line naming the runs recorded before it and those not recorded, and the database keeps
    exactly the former."""
    import sqlite3

    from nsighttk.runs import db as runs_db

    runs = tmp_path / "runs"
    names = [f"20261122T10000{i}Z-bench-add" for i in range(5)]
    for name in names:
        (runs / name).mkdir(parents=True)
        (runs / name / "run.json").write_text(json.dumps({"tool": "bench", "target": "add", "status": "ok",
                                                          "started_utc": "2026-11-22T10:00:00+00:00"}))
    db = tmp_path / "r.db"
    _ok(["--db", str(db), "runs", "list"], tmp_path)
    commits = {"left": 3}  # the schema's own, then two runs

    class FullAtCommit(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
            if sql == "COMMIT":
                commits["left"] -= 1
                if commits["left"] < 0:
                    super().execute("ROLLBACK")  # what SQLite does on SQLITE_FULL at commit
                    raise sqlite3.OperationalError("database or disk is full")
            return super().execute(sql, *args)

    real_connect = sqlite3.connect
    monkeypatch.setattr(runs_db.sqlite3, "connect",
                        lambda *a, **k: real_connect(*a, **{**k, "factory": FullAtCommit}))
    err = _fails_in_one_line(["--db", str(db), "runs", "import", str(runs)], tmp_path, "the disk is full")
    assert f"recorded 2 runs ({names[0]}, {names[1]})" in err, err
    assert f"not recorded: 3 ({names[2]}, {names[3]}, {names[4]})" in err, err
    monkeypatch.setattr(runs_db.sqlite3, "connect", real_connect)
    out = _ok(["--db", str(db), "runs", "list", "--json"], tmp_path)
    assert sorted(r["id"] for r in json.loads(out)) == names[:2]


def test_report_of_a_run_directory_keeps_a_report_html_nsighttk_did_not_write(tmp_path: Path) -> None:
    """A run directory's report.html is regenerated while it is nsighttk's page; one a person wrote
    there is replaced only with --force, as any other file."""
    out = json.loads(_ok(["bench", "add", "--device", "cpu", "--variants", "torch_add", "--sizes", "4096",
                          "--rep-ms", "2", "--warmup-ms", "1", "--json"], tmp_path))
    run_dir = Path(out["run_dir"])
    page = run_dir / "report.html"
    _ok(["report", str(run_dir)], tmp_path)  # ours: regenerated without asking
    page.write_text("<p>my notes on this run</p>")
    err = _fails_in_one_line(["report", str(run_dir)], tmp_path, "exists and was not written by nsighttk")
    assert "--force" in err and page.read_text() == "<p>my notes on this run</p>"
    _ok(["report", str(run_dir), "--force"], tmp_path)
    assert "<!DOCTYPE html>" in page.read_text()
