"""Running a profiler: its output is logged whole, echoed without nsys' per-percent progress lines,
and a timeout stops it and its children even while they hold the output open."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from nsighttk.collect import run_logged
from nsighttk.errors import ProfilerFailed

NSYS_LIKE = r"""
import sys
print("Collecting data...")
for step, name in ((1, "profile.nsys-rep"), (2, "profile.sqlite")):
    for pct in (0, 0, 50, 100, 100):
        bar = "=" * (pct // 4)
        print(f"[{step}/2] [{bar}{pct}%{' ' * (26 - len(bar) - len(str(pct)) - 1)}] {name}")
print("USDT:2026-11-28 01:40:58 25077:25077 SyncActivityProfilerHandler.cpp:52] profiler_start")
print("Generated:")
"""


def test_progress_lines_are_logged_but_echoed_once_per_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "nsys.log"
    rc, text = run_logged([sys.executable, "-c", NSYS_LIKE], log, None, echo=True)
    assert rc == 0
    assert log.read_text() == text and text.count("profile.sqlite") == 5 and "profiler_start" in text
    echoed = capsys.readouterr().err.splitlines()
    assert echoed == ["Collecting data...", "[1/2] [=========================100%] profile.nsys-rep",
                      "[2/2] [=========================100%] profile.sqlite", "Generated:"]


def test_timeout_stops_children_that_hold_the_output(tmp_path: Path) -> None:
    # the shell's child keeps stdout open: reading to EOF alone would wait 60 s
    t0 = time.monotonic()
    with pytest.raises(ProfilerFailed, match=r"ran past 1\.0 s"):
        run_logged(["sh", "-c", "sleep 60 & echo started; sleep 60"], tmp_path / "x.log", 1.0, echo=False)
    assert time.monotonic() - t0 < 30
    assert (tmp_path / "x.log").read_text() == "started\n"


def test_a_program_that_ends_in_time_is_not_a_timeout(tmp_path: Path) -> None:
    rc, text = run_logged(["sh", "-c", "echo hi; exit 3"], tmp_path / "x.log", 30.0, echo=False)
    assert (rc, text) == (3, "hi\n")


def test_profiled_programs_get_the_users_blas_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk.settings import limit_own_blas_threads

    show = [sys.executable, "-c", "import os; print(os.environ.get('OPENBLAS_NUM_THREADS', 'unset'))"]
    for var in ("OPENBLAS_NUM_THREADS", "NSIGHTTK_OWN_BLAS_THREADS"):  # (set first: teardown restores them)
        monkeypatch.setenv(var, "x")
        monkeypatch.delenv(var)
    limit_own_blas_threads()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"  # nsighttk's own process: one thread
    assert run_logged(show, tmp_path / "a.log", None, echo=False)[1] == "unset\n"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # the user's choice is theirs and their programs'
    monkeypatch.delenv("NSIGHTTK_OWN_BLAS_THREADS", raising=False)
    limit_own_blas_threads()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
    assert run_logged(show, tmp_path / "b.log", None, echo=False)[1] == "4\n"
