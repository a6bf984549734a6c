"""The consoles nsighttk prints through, sized for where the output goes.

Width, first match wins:

1. ``width`` given (the CLI's ``--width N``): N columns; ``0`` means no limit;
2. ``$COLUMNS`` (a positive number): that many columns;
3. the stream is a terminal: the terminal's width (rich follows resizes);
4. otherwise (a pipe, a file, CI): :data:`PIPED_WIDTH` columns, so ``nsighttk analyze X | tee log``
   reads as it does in a terminal (``--width 0`` keeps every name in full).

Renderers lay their output out for ``console.width`` (see :mod:`nsighttk.report.layout`); below
:data:`MIN_WIDTH` columns they lay it out for :data:`MIN_WIDTH`.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Mapping
from typing import IO

from rich.console import Console

from nsighttk.errors import UsageError

#: the width a console with "no limit" reports (rich needs a number; nothing pads to it)
UNBOUNDED = 1 << 20
#: the narrowest layout the renderers design for
MIN_WIDTH = 40
#: the width of output that goes to a pipe or a file when neither --width nor $COLUMNS says one
PIPED_WIDTH = 100


def resolve_width(width: int | None, stream: IO[str] | None = None,
                  environ: Mapping[str, str] | None = None) -> int | None:
    """The width to print at: a number, or None for "the terminal's" (rich measures it)."""
    if width is not None:
        if width < 0 or 0 < width < MIN_WIDTH:
            raise UsageError(f"--width {width} is too narrow", f"use {MIN_WIDTH} or more, or 0 for no limit")
        return UNBOUNDED if width == 0 else width
    env = os.environ if environ is None else environ
    cols = env.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return max(int(cols), MIN_WIDTH)
    stream = stream if stream is not None else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real stream
        tty = False
    return None if tty else PIPED_WIDTH


class _Console(Console):
    """A rich console that leaves a closed pipe to the command line's entry point
    (:func:`nsighttk.cli.main`: no message, exit status 0) rather than exiting with 1 itself."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def make_console(width: int | None = None, *, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """The console for stdout (or stderr, or ``file``) at the width :func:`resolve_width` picks.

    Markup in strings is still available to the renderers for their own words; names always go
    in as :class:`rich.text.Text` (:mod:`nsighttk.escape`)."""
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    w = resolve_width(width, stream)
    return _Console(file=file, stderr=stderr and file is None, width=w, highlight=False, emoji=False,
                    soft_wrap=False)


def is_unbounded(console: Console) -> bool:
    """True when the console has no width limit (``--width 0``)."""
    return console.width >= UNBOUNDED


def layout_width(console: Console) -> int | None:
    """The width renderers design for: None when unbounded, else at least :data:`MIN_WIDTH`."""
    return None if is_unbounded(console) else max(console.width, MIN_WIDTH)
