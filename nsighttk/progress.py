"""Progress for long steps, on stderr so stdout stays clean for data (CSV, JSON).

Library code calls :func:`step`; on a terminal it shows a spinner with the elapsed time,
elsewhere (CI, logs, pipes) one line when the step starts and one when it ends.  Messages carry
names (targets, files, kernels): they are printed as text, never read as markup, with control
characters made visible (:mod:`nsighttk.escape`); what a child process printed passes
through as it is (its own colours included), as a terminal would show it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.text import Text

from nsighttk.escape import term
from nsighttk.settings import current

console = Console(stderr=True, highlight=False, emoji=False)


def _line(message: str, style: str = "") -> Text:
    return Text(f"[nsighttk] {term(message)}", style=style)


def quiet() -> bool:
    return current().quiet


@contextmanager
def step(message: str) -> Iterator[None]:
    """Show ``message`` while the block runs, then how long it took."""
    if quiet():
        yield
        return
    t0 = time.monotonic()
    if console.is_terminal:
        with console.status(Text(f"{term(message)} ...")):
            yield
    else:
        console.print(_line(f"{message} ..."), crop=False, soft_wrap=True)
        sys.stderr.flush()
        yield
    console.print(_line(f"{message}: done in {time.monotonic() - t0:.1f} s"), crop=False, soft_wrap=True)


def info(message: str) -> None:
    if not quiet():
        console.print(_line(message), crop=False, soft_wrap=True)


def warn(message: str) -> None:
    console.print(_line(f"warning: {message}", "yellow"), crop=False, soft_wrap=True)


def echo_child(text: str) -> None:
    """What a child process printed, passed on to stderr (stdout stays for data)."""
    if not quiet():
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()
