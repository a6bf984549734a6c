"""What every command does before it runs, and ``nsighttk stats`` without click.

Importing click and the command group costs about 45 ms (on the 2-core development machine;
more on a GPU host's busy Python), which is as long as the whole of a small ``nsys stats``
report.  So the commonest form, ``nsighttk stats FILE [-r REPORTS] [-f FORMAT] [-o PREFIX]
[--force-overwrite]``, is read here by a small table; anything else it does not know for sure
(``--help``, ``-rX``, a repeated option, an unknown one, a value click would refuse, ``--width``)
goes to click, which declares the command (:mod:`nsighttk.cli.reading`) and says what is wrong.
Both paths run the same code from here on: :func:`begin_command`, :mod:`nsighttk.commands.stats`,
:func:`render_stats`, and the one-line errors of :func:`nsighttk.cli._main.fail`.  A test runs both
on the same arguments and compares output, files and exit codes.

No click, no numpy, no pandas here: that is the point of this module.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nsighttk.commands.stats import Options, Output

#: ``stats`` options read here -> the field of :class:`nsighttk.commands.stats.Options`
_VALUES = {"-r": "reports", "--report": "reports", "-f": "fmt", "--format": "fmt",
           "-o": "output", "--output": "output"}
_FLAGS = {"--force-overwrite": "force_overwrite"}
#: ``-f``'s choices (click's ``Choice`` in :mod:`nsighttk.cli.reading`; a test checks they agree)
FORMATS = ("table", "csv", "json")


def _terminated(signum: int, frame: Any) -> None:
    from nsighttk.commands._run import Interrupted

    raise Interrupted()


def prepare() -> None:
    """The process set up for any command: SIGTERM ends it like Ctrl-C, one BLAS thread, freed
    arrays reused (:mod:`nsighttk.settings`)."""
    from nsighttk.settings import limit_own_blas_threads, reuse_freed_memory

    signal.signal(signal.SIGTERM, _terminated)
    limit_own_blas_threads()
    reuse_freed_memory()


def begin_command(db: Path | None = None, width: int | None = None) -> None:
    """What the group does before any command: inputs tracked (no output may replace what the
    command reads), the settings from the environment and ``--db``/``--width`` installed."""
    from nsighttk import safeio
    from nsighttk import settings as settings_mod

    safeio.track_inputs()
    s = settings_mod.Settings.from_env()
    if db is not None:
        if safeio.probe(db) is not None and not db.is_symlink():  # else check_output says what is wrong
            safeio.check_input(db, "--db")
        else:
            safeio.check_output(db, "--db")
        s = s.replace(db=db)
    if width is not None:
        from nsighttk.report.console import resolve_width

        resolve_width(width)  # too narrow: one line now
        s = s.replace(width=width)
    settings_mod.use(s)


def _utf8(stream: Any) -> bool:
    return str(getattr(stream, "encoding", "") or "").lower().replace("_", "-") in ("utf-8", "utf8")


def stats_arguments(args: Sequence[str]) -> dict[str, Any] | None:
    """``stats`` arguments this module reads for sure -> Options' fields; None: ask click.  Only
    where stdout and stderr are UTF-8 and every argument is text: click re-encodes other streams
    (an ASCII locale) and arguments that are not (file names of another encoding) its own way."""
    if not args or args[0] != "stats" or not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None
    if any("\udc80" <= ch <= "\udcff" for a in args for ch in a):  # (bytes the locale could not decode)
        return None
    got: dict[str, Any] = {}
    files: list[str] = []
    rest = iter(args[1:])
    for arg in rest:
        if not arg.startswith("-") or arg == "-":
            files.append(arg)
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        val: str | bool
        if name in _FLAGS and not eq:
            key, val = _FLAGS[name], True
        elif name in _VALUES:
            if not eq:
                value = next(rest, "")
            if not value or value.startswith("-"):  # click's reading of these is click's to give
                return None
            key, val = _VALUES[name], value
        else:
            return None
        if key in got:
            return None
        got[key] = val
    if len(files) != 1 or files[0] in ("", "-") or got.get("fmt", "table") not in FORMATS:
        return None
    got["path"] = Path(files[0])
    return got


def render_stats(results: list[Output], file: Path, echo: Callable[..., None]) -> None:
    """``stats``' results on the terminal (``echo`` is click's or :func:`_echo`): names with control
    characters shown escaped, never executed (``-o`` files keep nsys' bytes)."""
    from nsighttk.escape import term, term_lines

    many = len(results) > 1
    for r in results:
        if r.path is not None:
            echo(f"wrote {r.path}" + (" (empty: " + "; ".join(r.notes) + ")" if not r.rows else ""), err=True)
            continue
        if many:
            echo(f"\n ** {r.title} ({r.report}):\n")
        if r.text:
            echo(term_lines(r.text), nl=False)
        else:
            echo(f"SKIPPED: {term(str(file))} has {'; '.join(r.notes) or 'no data for this report'}.", err=True)


def _echo(text: str, nl: bool = True, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    stream.write(text + "\n" if nl else text)
    stream.flush()


def run_stats(fields: dict[str, Any]) -> None:
    """``nsighttk stats`` as click runs it with these arguments (its errors are raised, for
    :func:`nsighttk.cli._main.fail`)."""
    begin_command()
    from nsighttk.commands import stats as cmd

    opts: Options = cmd.Options(**fields)
    render_stats(cmd.run(opts), opts.path, _echo)
