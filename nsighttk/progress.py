"""Progress for long steps, on stderr so stdout stays clean for data (CSV, JSON).

Library code calls :func:`step`; on a terminal it shows a spinner with the elapsed time,
elsewhere (CI, logs, pipes) one line when the step starts and one when it ends.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

console = Console(stderr=True, highlight=False)


def quiet() -> bool:
    return os.environ.get("NSIGHTTK_QUIET", "") not in ("", "0")


@contextmanager
def step(message: str) -> Iterator[None]:
    """Show ``message`` while the block runs, then how long it took."""
    if quiet():
        yield
        return
    t0 = time.monotonic()
    if console.is_terminal:
        with console.status(f"{message} ..."):
            yield
    else:
        console.print(f"[nsighttk] {message} ...", markup=False)
        sys.stderr.flush()
        yield
    console.print(f"[nsighttk] {message}: done in {time.monotonic() - t0:.1f} s", markup=False)


def info(message: str) -> None:
    if not quiet():
        console.print(f"[nsighttk] {message}", markup=False)


def warn(message: str) -> None:
    console.print(f"[nsighttk] warning: {message}", style="yellow", markup=False)


def echo_child(text: str) -> None:
    """What a child process printed, passed on to stderr (stdout stays for data)."""
    if not quiet():
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()
