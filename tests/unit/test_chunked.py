"""Loops over large arrays a chunk at a time on several threads (:mod:`nsighttk.chunked`): the
answer of one thread, whatever the threads; errors and Ctrl-C stop the loop."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from nsighttk import chunked, settings


@pytest.fixture(params=[1, 2, 4])
def threads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(settings, "_current", settings.Settings.from_env().replace(threads=request.param))
    return int(request.param)


@pytest.mark.parametrize("n, step", [(0, 4), (3, 4), (4, 4), (103, 4), (1000, 7)])
def test_every_chunk_once_in_order(threads: int, n: int, step: int) -> None:
    out = np.zeros(n, dtype=np.int64)
    seen: list[threading.Thread] = []

    def fill(lo: int, hi: int) -> None:
        seen.append(threading.current_thread())
        out[lo:hi] += np.arange(lo, hi)

    chunked.each(fill, n, step)
    assert out.tolist() == list(range(n))
    assert list(chunked.ordered(lambda lo, hi: (lo, hi), n, step)) == chunked.bounds(n, step)
    if threads == 1:  # (one thread: the caller's own)
        assert set(seen) <= {threading.current_thread()}


def _gated(started: list[int], fail_at: int | None = None) -> Callable[[int, int], int]:
    """Chunk work that notes its start; chunks past the third wait for the gate (opened 2 s on:
    long after the caller stops, even on a loaded machine, where 0.3 s was seen to pass first and let
    the queued chunks run), so which chunks start before the caller stops is not a matter of timing."""
    gate = threading.Event()
    threading.Timer(2.0, gate.set).start()

    def work(lo: int, hi: int) -> int:
        started.append(lo)
        if lo == fail_at:
            raise ValueError(f"chunk {lo}")
        if lo > 2:
            gate.wait(10)
        return lo

    return work


def _settled(started: list[int]) -> int:
    """How many chunks started, once a chunk a thread had already taken when the caller stopped has
    had time to note its start (on a loaded machine it may not have run its first line yet)."""
    time.sleep(0.1)
    return len(started)


def test_a_chunks_error_is_raised_and_the_chunks_not_started_are_dropped(threads: int) -> None:
    started: list[int] = []
    work = _gated(started, fail_at=2)
    with pytest.raises(ValueError, match="chunk 2"):
        chunked.each(work, 10_000, 1)
    n = _settled(started)
    # chunks 0-2, and at most one more a thread (running when the error came): the queued ones dropped
    assert n <= 3 + threads, sorted(started)
    time.sleep(0.2)
    assert len(started) == n  # (nothing runs on after the caller got the error)


def test_ctrl_c_in_the_caller_drops_the_chunks_not_started(threads: int) -> None:
    started: list[int] = []
    work = _gated(started)
    with pytest.raises(KeyboardInterrupt):
        for lo in chunked.ordered(work, 10_000, 1):
            if lo == 2:
                raise KeyboardInterrupt
    n = _settled(started)
    assert n <= 3 + threads, sorted(started)
    time.sleep(0.2)
    assert len(started) == n


def test_a_loop_inside_a_chunk_runs_on_its_thread(threads: int) -> None:
    """A chunk's work that loops by chunks itself (nested) runs its chunks on its own thread: a
    pool's thread waiting for the pool could wait for ever."""
    out = np.zeros((8, 50), dtype=np.int64)

    def row(lo: int, hi: int) -> None:
        def cell(a: int, b: int) -> None:
            out[lo, a:b] = np.arange(a, b) + 100 * lo
        chunked.each(cell, 50, 3)

    done = threading.Event()
    t = threading.Thread(target=lambda: (chunked.each(row, 8, 1), done.set()), daemon=True)
    t.start()
    assert done.wait(30), "nested chunked loops deadlocked"
    assert (out == np.arange(50)[None, :] + 100 * np.arange(8)[:, None]).all()
