"""The command group, shared option decorators (``--arch``, ``--json``, ``--reports-dir``,
``--dtype``, ``--device``; ``--db`` on the group) and rendering helpers of the CLI."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from nsighttk import __version__
from nsighttk.errors import NsightTKError, UsageError

F = Callable[..., Any]
DTYPES = ["float32", "float16", "bfloat16", "float64"]
DEVICES = ["auto", "cuda", "cpu"]


class CliError(click.ClickException):
    """A library error shown as one line: ``nsighttk: error: what (what to do)``."""

    def __init__(self, error: NsightTKError) -> None:
        super().__init__(str(error))
        # click >= 8.5 types exit_code as a ClassVar; this instance's code is the error's (2 or 3)
        vars(self)["exit_code"] = error.exit_code

    def show(self, file: Any = None) -> None:
        click.echo(f"nsighttk: error: {_one_line(self.message)}", err=True)


def _one_line(text: str) -> str:
    """Text for one terminal line: control characters (a newline or ESC in a user's file name)
    shown escaped, never executed by the terminal (:func:`nsighttk.escape.term`)."""
    from nsighttk.escape import term

    return term(text)


# ------------------------------------------------------------------------------------ helpers

class FiniteFloat(click.FloatRange):
    """A float option in a range that is also a real number: ``nan``, ``inf`` and ``1e400`` (which
    Python reads as inf) are refused with click's one line, before any work."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return rv


def settings() -> Any:
    from nsighttk import settings as settings_mod

    return settings_mod.current()


def out() -> Any:
    """The console for tables (stdout), sized by --width, $COLUMNS or the terminal; piped output
    is 100 columns wide (:func:`nsighttk.report.console.make_console`)."""
    from nsighttk.report.console import make_console

    return make_console(settings().width)


def echo_json(data: Any) -> None:
    from nsighttk.report import jsonout

    click.echo(jsonout.dumps(data), nl=False)


def _arch_check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """``--arch`` spelled as the one parser (:func:`nsighttk.arch.normalize_sm`) accepts."""
    from nsighttk.arch import normalize_sm

    values = value if isinstance(value, tuple) else ((value,) if value else ())
    try:
        normalized = tuple(normalize_sm(v) for v in values)
    except UsageError as ex:
        raise CliError(UsageError(f"--arch {ex.message}", ex.hint)) from None
    return normalized if isinstance(value, tuple) else (normalized[0] if normalized else None)


def arch_option(many: bool = False, what: str = "build for") -> Callable[[F], F]:
    help_ = (f"Architecture to {what} (sm_90, 9.0, sm_90a{'; repeat for a fat binary' if many else ''}). "
             "Default: $NSIGHTTK_ARCH, else the local GPU's, else sm_75.")
    return click.option("--arch", "archs" if many else "arch", multiple=many, metavar="sm_XX", help=help_,
                        callback=_arch_check)


def iteration_option(f: F) -> F:
    return click.option("--iteration", default=None, metavar="RANGE",
                        help="The NVTX range that is one iteration: a name, DOMAIN:NAME or a regular expression "
                             "(default: ProfilerStep#N, 'step N'-like or repeated ranges, found by nsighttk).")(f)


def int_option(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise UsageError(f"{name} {value!r}: not a whole number", f"e.g. {name} 100") from None


def set_width(ctx: click.Context, param: click.Parameter | None, value: int | None) -> None:
    if value is None:
        return
    from nsighttk import settings as settings_mod
    from nsighttk.report.console import resolve_width

    resolve_width(value)  # too narrow: one line now
    settings_mod.use(settings_mod.current().replace(width=value))


def json_option(f: F) -> F:
    """``--json``, and ``--width N`` beside it: every command that prints tables takes both."""
    f = click.option("--width", type=int, default=None, metavar="N", expose_value=False, callback=set_width,
                     help="Lay tables out for N columns (default: $COLUMNS, else the terminal's; piped: 100; "
                          "0: no limit).")(f)
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(f)


def reports_dir_option(f: F) -> F:
    return click.option("--reports-dir", type=click.Path(path_type=Path), default=None,
                        help="Where run directories go (default: $NSIGHTTK_REPORTS, else ./reports).")(f)


def dtype_option(f: F) -> F:
    return click.option("--dtype", default="float32", show_default=True, type=click.Choice(DTYPES))(f)


def device_option(f: F) -> F:
    return click.option("--device", default="auto", show_default=True, type=click.Choice(DEVICES))(f)


def exit_with_target(rc: int | None, what: str) -> None:
    if rc not in (0, None):
        click.echo(f"nsighttk: {what}", err=True)
        sys.exit(rc if 0 < rc < 256 else 1)


#: Options that take several values in a row (``--batch-sizes 1 8``), as argparse scripts do.
MANY_VALUED = ("--batch-sizes", "--seq-lens", "--input")


def expand_many(args: list[str]) -> list[str]:
    """``--batch-sizes 1 8`` -> ``--batch-sizes 1 --batch-sizes 8`` (click options take one value)."""
    expanded: list[str] = []
    current = None
    for a in args:
        if a in MANY_VALUED:
            current = a
            continue
        if current and not a.startswith("-"):
            expanded += [current, a]
            continue
        current = None
        expanded.append(a)
    return expanded


#: command -> the module of :mod:`nsighttk.cli` that declares it.  A command's module is imported
#: when the command runs (``nsighttk stats`` does not import the profiling commands' options and
#: helpers); ``nsighttk --help`` imports them all.
COMMAND_MODULES = {
    "arch": "info", "build": "info", "doctor": "info", "explain": "info",
    "bench": "profiling", "inspect": "profiling", "model": "profiling", "ncu": "profiling", "nsys": "profiling",
    "torch": "profiling",
    "analyze": "reading", "ranks": "reading", "recipe": "reading", "repro": "reading", "rules": "reading",
    "stats": "reading",
    "compare": "records", "report": "records", "runs": "records", "submit": "records",
}

#: one line per command for ``nsighttk --help`` (whole sentences, never cut)
SHORT_HELP = {
    "analyze": "Summarise a capture: kernels, copies, iterations, what to try next.",
    "arch": "GPU model -> compute capability -> -arch, with per-SM limits.",
    "bench": "Check and time a workload's variants (GB/s, TFLOP/s, % of copy).",
    "build": "Build a bundled CUDA sample or a .cu file with nvcc.",
    "compare": "Compare runs per kernel, NVTX range and variant (95% intervals).",
    "doctor": "What nsighttk finds here: tools, versions, GPUs, what is missing.",
    "explain": "Decode kernel names: library, op, dtype, tile, collective.",
    "inspect": "PTX, SASS, registers and occupancy of Triton/compiled kernels.",
    "model": "Profile a Transformer over batch sizes and sequence lengths.",
    "ncu": "Profile kernels with Nsight Compute and explain each one.",
    "nsys": "Profile a program with Nsight Systems and summarise it.",
    "ranks": "One summary across the ranks of a multi-process run.",
    "recipe": "nsys recipe nccl_sum / cuda_gpu_kern_sum over many captures.",
    "report": "A self-contained HTML report of a run, capture or comparison.",
    "repro": "Turn the hot ops of a trace into runnable workloads.",
    "rules": "nsys analyze without nsys: Nsight Systems' expert rules.",
    "runs": "The runs database: list, show, rm, import, jobs.",
    "stats": "nsys stats without nsys: the same reports, byte for byte.",
    "submit": "Run an nsighttk command as a Slurm batch job.",
    "torch": "Profile a workload or a PyTorch script with torch.profiler.",
}


def declare(module: str) -> None:
    """Import the :mod:`nsighttk.cli` module that declares commands (they register on ``cli``)."""
    import importlib

    importlib.import_module(f"nsighttk.cli.{module}")
    for name, where in COMMAND_MODULES.items():
        if where == module and name in cli.commands:
            cli.commands[name].short_help = SHORT_HELP[name]


def declare_all() -> None:
    for module in dict.fromkeys(COMMAND_MODULES.values()):
        declare(module)


class NsightTKGroup(click.Group):
    """Turns every :class:`NsightTKError` raised by a command, and DuckDB's out-of-memory error, into a
    :class:`CliError` (one line, exit code 2); imports a command's module when the command is asked for
    (:data:`COMMAND_MODULES`)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            declare(COMMAND_MODULES[cmd_name])
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        declare_all()
        return super().list_commands(ctx)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in ("model", "recipe"):  # (recipe: nsys recipe's `--input A B C`)
            args = expand_many(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NsightTKError as ex:
            raise CliError(ex) from None
        except Exception as ex:
            if type(ex).__name__ != "OutOfMemoryException":  # (DuckDB past its memory limit, as in cli._main)
                raise
            raise CliError(NsightTKError(f"out of memory ({str(ex).splitlines()[0]})",
                                         "run it on a machine with more memory, or give the analysis more "
                                         "with NSIGHTTK_MEMORY_MB")) from None


@click.group(cls=NsightTKGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nsighttk")
@click.option("--db", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="The runs database (default: $NSIGHTTK_DB, else <reports dir>/nsighttk.db).")
@click.option("--width", type=int, default=None, metavar="N",
              help="Lay tables out for N columns (default: $COLUMNS, else the terminal's; piped: 100; 0: no "
                   "limit); also accepted after the command.")
def cli(db: Path | None, width: int | None) -> None:
    """nsighttk: build CUDA samples, drive Nsight Systems and Nsight Compute, and explain what
    they measured."""
    from nsighttk.cli.quick import begin_command

    begin_command(db, width)


