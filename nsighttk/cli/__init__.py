"""The ``nsighttk`` command line: Click options and rendering only.  Each command builds its
Options, calls one command module (:mod:`nsighttk.commands`), and renders the Result (tables,
Markdown or JSON).  Every :class:`NsightTKError` becomes one line on stderr and its exit code;
Ctrl-C is ``nsighttk: interrupted`` and exit 130 (SIGTERM: 143); never a traceback for a user's
mistake.  Heavy libraries (pandas, rich, torch) are imported only by the command that runs, so
``nsighttk --help`` stays fast.

``_base`` holds the group, the shared option decorators and helpers; the commands are declared
in ``info``, ``profiling``, ``reading`` and ``records``, each imported when one of its commands
runs (``nsighttk --help`` imports them all).  ``_main`` runs click and turns errors into one line.
This package's own import loads none of them (nor click): :func:`main` first asks
:mod:`nsighttk.cli.quick` whether it can run a plain ``nsighttk stats`` call by itself, which
saves click's import, as long as a small report takes.  The group and the rest are imported on
first use (``from nsighttk.cli import cli``).
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any

__all__ = ["COMMAND_MODULES", "SHORT_HELP", "cli", "declare_all", "main"]


def main(argv: list[str] | None = None) -> None:
    """Entry point (``nsighttk``, ``python -m nsighttk``).  A reader that stops early
    (``nsighttk ... | head``) ends any command quietly, with exit status 0."""
    stdout = sys.stdout
    try:
        _run(argv)
        code: Any = 0
    except SystemExit as ex:
        code = ex.code
    if _pipe_closed(stdout):
        code = 0
    sys.exit(code)


def _run(argv: list[str] | None) -> None:
    from nsighttk.cli import quick

    fields = quick.stats_arguments(sys.argv[1:] if argv is None else argv)
    if fields is None:
        from nsighttk.cli._main import main as click_main

        click_main(argv)
        return
    quick.prepare()
    try:
        quick.run_stats(fields)
    except SystemExit:
        raise
    except BaseException as ex:  # every error ends as it does through click
        from nsighttk.cli._main import fail

        fail(ex)


def _pipe_closed(stdout: Any) -> bool:
    """True when the reader of ``stdout`` has gone: click met the closed pipe and wrapped
    ``sys.stdout`` to stay quiet, or what is left to write cannot be.  stdout then goes to
    /dev/null, so that Python's own flush at exit finds nothing to complain about."""
    closed = sys.stdout is not stdout
    try:
        stdout.flush()
    except (BrokenPipeError, ValueError):  # ValueError: already closed
        closed = True
    except OSError as ex:
        closed = closed or ex.errno == errno.EPIPE
    if closed:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stdout.fileno())
        except (OSError, ValueError):
            pass
    return closed


def __getattr__(name: str) -> Any:
    """``cli``, ``declare_all``, ... from :mod:`nsighttk.cli._main`, imported when first asked for."""
    if name in __all__:
        from nsighttk.cli import _main

        return getattr(_main, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
