"""Loops over large arrays a chunk at a time, on several threads where the machine has the cores.

numpy gives the GIL up inside its loops over large arrays (``searchsorted``, ``sort``, ``take``,
comparisons, casts), so chunks of independent work run side by side: a 10M-kernel ``analyze``
spends seconds in such loops, one core at a time, on a machine with two or more.  Each chunk's
work writes its own slice of an output (:func:`each`), or returns a small result folded by the
caller in chunk order (:func:`ordered`); its temporaries are a chunk's, so the memory a loop
needs grows with the threads, not with the arrays.

The reader of :mod:`nsighttk.load.sqlite_columns` runs its chunks of rows on the same threads
(:func:`run`).  Work started from one of these threads runs there, chunk after chunk (a pool's thread that waited
for its own pool could wait for ever).  ``NSIGHTTK_THREADS=1`` runs every loop on the calling
thread.  An exception (a Ctrl-C included) stops the loop: chunks not yet started are dropped,
and the first error is raised in the caller once those running have ended.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import TypeVar

from nsighttk import settings

_T = TypeVar("_T")

_pool: ThreadPoolExecutor | None = None
_pool_threads = 0
_lock = threading.Lock()
_inside = threading.local()


def threads() -> int:
    """Threads a loop may use: ``NSIGHTTK_THREADS``, else one per core (at most 8)."""
    return settings.current().threads or max(1, min(8, os.cpu_count() or 1))


def _executor(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_threads
    with _lock:
        if _pool is None or _pool_threads != n:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="nsighttk-chunk",
                                       initializer=_mark_inside)
            _pool_threads = n
        return _pool


def _mark_inside() -> None:
    _inside.flag = True


def bounds(n: int, step: int) -> list[tuple[int, int]]:
    """The chunks ``[lo, hi)`` of ``range(n)``, ``step`` at a time."""
    return [(a, min(a + step, n)) for a in range(0, n, max(1, step))]


def ordered(fn: Callable[[int, int], _T], n: int, step: int) -> Iterator[_T]:
    """``fn(lo, hi)`` for each chunk of ``range(n)``, its results in chunk order (see :func:`run`)."""
    return run([partial(fn, lo, hi) for lo, hi in bounds(n, step)])


def run(tasks: Sequence[Callable[[], _T]]) -> Iterator[_T]:
    """Each task's result, in the tasks' order; at most two tasks a thread are started ahead of
    the one the caller takes (their results wait there)."""
    k = threads()
    if k == 1 or len(tasks) <= 1 or getattr(_inside, "flag", False):
        for task in tasks:
            yield task()
        return
    pool = _executor(k)
    pending: list[Future[_T]] = []
    it = iter(tasks)
    try:
        for task in it:
            pending.append(pool.submit(task))
            if len(pending) >= 2 * k:
                break
        while pending:
            done = pending.pop(0).result()
            nxt = next(it, None)
            if nxt is not None:
                pending.append(pool.submit(nxt))
            yield done
    finally:  # (an error, a Ctrl-C, or a caller that stopped early: nothing more is started)
        for f in pending:
            f.cancel()
        for f in pending:
            if not f.cancelled():
                f.exception()  # (waits for it: no chunk still writes once the caller goes on)


def each(fn: Callable[[int, int], object], n: int, step: int) -> None:
    """``fn(lo, hi)`` for each chunk of ``range(n)``: work that writes its own slice of an output."""
    for _ in ordered(fn, n, step):
        pass
