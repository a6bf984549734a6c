"""``nsighttk stats``: ``nsys stats`` without nsys.  Reports are nsys' own (same rows, order and
bytes); outputs are written atomically (a report appears under its name only when complete, and
Ctrl-C or a full disk never leaves a fragment or replaces an older file with one).

The reports come from :mod:`nsighttk.analysis.nsys.reports`; summaries are printed from their rows
in plain Python (:func:`nsighttk.report.nsys_cells.render_rows`), the GPU trace a chunk at a time."""

from __future__ import annotations

import functools
import io
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING

from nsighttk import safeio
from nsighttk.analysis.nsys import catalog as nsys_catalog
from nsighttk.errors import UsageError
from nsighttk.report import nsys_cells

if TYPE_CHECKING:
    import pandas as pd

    from nsighttk.analysis.nsys import reports as nsys_reports
    from nsighttk.profile import Profile

FORMATS = ("table", "csv", "json")
_EXT = {"table": "txt", "csv": "csv", "json": "json"}


def parse_reports(spec: str | None) -> list[str]:
    """``"a,b"`` -> report names; unknown names are a clear error listing the known ones."""
    known = nsys_catalog.REPORT_NAMES
    if spec is None:
        return list(nsys_catalog.DEFAULT_REPORTS)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise UsageError(f"-r {spec!r}: no report named", f"known: {', '.join(known)}, or all")
    if names == ["all"]:
        return list(known)
    bad = [n for n in names if n not in known and n not in nsys_catalog.ALIASES]
    if bad:
        raise UsageError(f"unknown report {', '.join(bad)}", f"known: {', '.join(known)}")
    return names


def render_report(result: nsys_reports.ReportResult, fmt: str) -> str:
    """A report as text in ``fmt`` ("" when it has no rows, as nsys writes an empty file)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    if result.rows is not None:
        return nsys_cells.render_rows(result.columns, result.rows, nsys_cells.TEXT_COLUMNS, fmt)
    from nsighttk.report import nsys_format

    if fmt == "csv":
        buf = io.StringIO()
        nsys_format.write_csv([result.table] if result.table is not None else result.frames(), buf)
        return buf.getvalue()
    frame = result.table if result.table is not None else result.frame
    if frame.empty:
        return ""
    return nsys_format.to_json(frame) if fmt == "json" else nsys_format.to_table(frame)


def report(name: str, profile: Profile) -> pd.DataFrame:
    """One nsys report as a DataFrame (sizes in bytes)."""
    from nsighttk.analysis.nsys import reports as nsys_reports

    if name not in nsys_reports.REPORTS and name not in nsys_reports.ALIASES:
        raise UsageError(f"unknown report {name}", f"known: {', '.join(nsys_catalog.REPORT_NAMES)}")
    return nsys_reports.run_report(name, profile).frame


@dataclass
class Options:
    path: Path
    reports: str | None = None
    fmt: str = "table"
    output: str | None = None  # PREFIX: write PREFIX_<report>.<ext>; None or "-": return the text
    force_overwrite: bool = False


@dataclass
class Output:
    report: str
    title: str
    text: str | None  # None when written to ``path``
    notes: list[str] = field(default_factory=list)
    path: Path | None = None
    rows: bool = True  # False: the report had no rows (its file is empty, as nsys')


def outputs(opts: Options, names: list[str]) -> dict[str, Path]:
    """Where each report goes; every target checked before any work (exists, not a file, ...)."""
    if not opts.output or opts.output == "-":
        return {}
    targets = {}
    safeio.make_dirs(Path(opts.output).parent, "-o folder")  # a folder that cannot exist fails before any work
    for n in names:
        out = safeio.check_output(Path(f"{opts.output}_{n}.{_EXT[opts.fmt]}"), "-o")
        if out.exists() and not opts.force_overwrite:
            raise UsageError(f"{out} already exists", "pass --force-overwrite to replace it, or choose another -o")
        targets[n] = out
    return targets


def run(opts: Options) -> list[Output]:
    names = parse_reports(opts.reports)
    if opts.fmt not in FORMATS:
        raise UsageError(f"unknown format {opts.fmt!r}", f"use one of {', '.join(FORMATS)}")
    targets = outputs(opts, names)
    return _run_engine(opts, names, targets, _capture(opts.path))


def _capture(path: Path) -> Path:
    """The capture ``path`` names: the file itself, or the one inside a run directory."""
    if stat.S_ISDIR(safeio.check_input(path, allow_dir=True).st_mode):
        from nsighttk.runs.layout import find_capture

        return find_capture(path)
    return path


#: (report, title, notes, text in a format, CSV streamed to a file or None)
_Rendered = tuple[str, str, list[str], Callable[[str], str], Callable[[IO[str]], bool] | None]


def _write(opts: Options, targets: dict[str, Path], version: object, reports: Iterable[_Rendered]) -> list[Output]:
    """Each report's text, or its file written; the -o files replace their targets together at
    the end, or none does (Ctrl-C, a full disk)."""
    results = []
    with safeio.atomic_files(overwrite=opts.force_overwrite) as group, nsys_cells.csv_quoting_of(version):
        for n, title, notes, text_of, stream_csv in reports:
            if n not in targets:
                text = text_of(opts.fmt)
                results.append(Output(n, title, text, notes, rows=bool(text)))
                continue
            with group.open(targets[n], newline="") as fh:
                if opts.fmt == "csv" and stream_csv is not None:
                    wrote = stream_csv(fh)  # CSV is streamed: never all in memory
                else:
                    text = text_of(opts.fmt)
                    fh.write(text)
                    wrote = bool(text)
            results.append(Output(n, title, None, notes, targets[n], rows=wrote))
    return results


def _stream_csv(res: nsys_reports.ReportResult, fh: IO[str]) -> bool:
    """A report's CSV written to ``fh`` a batch of lines at a time (never the whole text in
    memory: a report of 1 MiB names runs to gigabytes); False when it had no rows."""
    from nsighttk.report import nsys_format

    if res.rows is not None:
        if not res.rows:
            return False
        nsys_format.write_lines(fh, nsys_cells.csv_lines(res.columns, res.rows, nsys_cells.TEXT_COLUMNS))
        return True

    return nsys_format.write_csv([res.table] if res.table is not None else res.frames(), fh)  # type: ignore[arg-type]


def _run_engine(opts: Options, names: list[str], targets: dict[str, Path], capture: Path) -> list[Output]:
    """The reports of the capture (any export, any size)."""
    from nsighttk.analysis.nsys import reports as nsys_reports
    from nsighttk.load import load
    from nsighttk.profile import release_free_memory

    profile = load(capture)
    if profile.meta.get("tool") == "ncu":
        raise UsageError(f"{opts.path}: an Nsight Compute capture; nsys reports need an nsys export",
                         f"use: nsighttk analyze {opts.path}")

    def reports() -> Iterator[_Rendered]:
        for i, n in enumerate(names):
            nsys_reports.release_memos(profile, names[i:])
            release_free_memory()
            res = nsys_reports.run_report(n, profile)
            yield (n, res.title, res.notes, functools.partial(render_report, res), functools.partial(_stream_csv, res))

    return _write(opts, targets, profile.meta.get("tool_version"), reports())


def stats(path: str | Path, reports: str | None = None, fmt: str = "table", output: str | None = None,
          force_overwrite: bool = False) -> list[Output]:
    """``nsys stats`` without nsys, for Python callers: the reports' text (or the files written)."""
    return run(Options(Path(path), reports, fmt, output, force_overwrite))
