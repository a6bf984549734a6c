"""The command line through click: the entry point's errors and exit codes (:func:`fail`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import NoReturn

import click

from nsighttk.cli._base import COMMAND_MODULES, SHORT_HELP, CliError, _one_line, cli, declare_all
from nsighttk.cli.quick import prepare
from nsighttk.errors import NsightTKError

__all__ = ["COMMAND_MODULES", "SHORT_HELP", "cli", "declare_all", "fail", "main"]


def main(argv: list[str] | None = None) -> None:
    """Every command through click (:func:`nsighttk.cli.main` sends the commonest ``stats`` calls
    to :mod:`nsighttk.cli.quick` instead)."""
    prepare()
    try:
        rv = cli.main(args=argv, prog_name="nsighttk", standalone_mode=False)
    except SystemExit:
        raise
    except BaseException as ex:  # fail() re-raises what it does not know
        fail(ex)
    sys.exit(rv if isinstance(rv, int) else 0)


def _interrupt_behind(error: BaseException) -> BaseException:
    """What ``error`` means: DuckDB ends a query that Ctrl-C or SIGTERM interrupted with an error of
    its own ("Query interrupted", the signal's exception as its context), and one past its memory
    limit with its own out-of-memory error."""
    if isinstance(error, KeyboardInterrupt):
        return error
    if isinstance(error.__context__, KeyboardInterrupt):
        return error.__context__
    if type(error).__name__ == "InterruptException" or (isinstance(error, RuntimeError)
                                                        and str(error) == "Query interrupted"):
        return KeyboardInterrupt()
    if type(error).__name__ == "OutOfMemoryException":  # (DuckDB past its memory limit, even on disk)
        return MemoryError(str(error).split("\n")[0])
    return error


def fail(error: BaseException) -> NoReturn:
    """The end of a command that raised ``error``: one line on stderr and the exit code (a
    programming error is re-raised, with its traceback)."""
    try:
        raise _interrupt_behind(error)
    except click.UsageError as ex:  # one line, as every other mistake (click prints usage, hint and error)
        _finish_open_runs("failed", ex.format_message())
        where = ex.ctx.command_path if ex.ctx else "nsighttk"
        click.echo(f"nsighttk: error: {_one_line(ex.format_message())} (see {where} --help)", err=True)
        sys.exit(ex.exit_code)
    except click.ClickException as ex:
        _finish_open_runs("failed", ex.format_message())
        ex.show()
        sys.exit(ex.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort) as ex:
        cause = ex.__cause__ if isinstance(ex, click.exceptions.Abort) else ex
        term = type(cause).__name__ == "Interrupted"
        _finish_open_runs("interrupted", f"interrupted ({'SIGTERM' if term else 'Ctrl-C'}); what it produced is kept")
        click.echo("nsighttk: interrupted", err=True)
        sys.exit(143 if term else 130)
    except BrokenPipeError:  # (`nsighttk ... | head`): no message, exit 0 (see nsighttk.cli.main)
        _quiet_stdout()
        sys.exit(0)
    except NsightTKError as ex:  # raised outside a command (option callbacks)
        CliError(ex).show()
        sys.exit(ex.exit_code)
    except MemoryError as ex:  # this machine (or its limit on the process) has too little memory
        _finish_open_runs("failed", "out of memory")
        what = f" ({_one_line(str(ex))})" if str(ex) else ""
        click.echo(f"nsighttk: error: out of memory{what}; run it on a machine with more memory, or give "
                   "the analysis more with NSIGHTTK_MEMORY_MB", err=True)
        sys.exit(2)
    except OSError as ex:  # a full disk or a closed terminal while printing; a path the file system refuses
        if ex.errno == errno.ENOSPC:
            click.echo("nsighttk: error: the disk is full (nothing was replaced; free some space)", err=True)
            sys.exit(2)
        if ex.errno in _PATH_ERRNOS:
            where = f"{ex.filename}: " if ex.filename else ""
            click.echo(f"nsighttk: error: {_one_line(where + (ex.strerror or str(ex)))} (check the path)", err=True)
            sys.exit(2)
        raise
    raise AssertionError("unreachable")  # every branch above exits or raises


#: errors of a path the user gave that the file system refuses, wherever they surface: one line
_PATH_ERRNOS = (errno.ENAMETOOLONG, errno.ELOOP, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT,
                errno.ENOTDIR, errno.EISDIR)


def _finish_open_runs(status: str, error: str) -> None:
    """A run directory started but not yet guarded when the error or Ctrl-C came: finished now."""
    layout = sys.modules.get("nsighttk.runs.layout")  # not imported: no run was started
    if layout is not None:
        with contextlib.suppress(KeyboardInterrupt):
            for path in layout.finish_unfinished(status, error):
                click.echo(f"nsighttk: run directory kept: {_one_line(str(path))}", err=True)


def _quiet_stdout() -> None:
    """After a closed pipe (``nsighttk ... | head``): no second error at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass

