"""``nsighttk report``: the self-contained HTML page of a run (id or directory), of a capture file,
or of a comparison.  A run directory's ``report.html`` is written when the run finishes
(:func:`nsighttk.commands._run.finish`); this command renders any of them again on demand."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nsighttk import safeio
from nsighttk.commands import compare as compare_cmd
from nsighttk.commands.analyze import analyze_profile, load_capture
from nsighttk.errors import InputFileError, UsageError
from nsighttk.report import html, pages
from nsighttk.report.html import Page
from nsighttk.runs.db import RunsDB
from nsighttk.runs.layout import (
    BENCH_JSON,
    COMPARISON_JSON,
    KERNELS_JSON,
    RANKS_JSON,
    REPORT_HTML,
    capture_in,
    is_run_dir,
    read_json,
    read_manifest,
)
from nsighttk.settings import Settings, current

GENERATOR_TAG = b'name="generator" content="nsighttk'


def run_dir_page(run_dir: Path, iteration: str | None = None) -> Page:
    """The page of a finished run directory, from its manifest, its JSON results and its capture."""
    rec = read_manifest(run_dir)
    if rec is None:
        raise InputFileError(f"{run_dir}: no readable run.json, so not an nsighttk run directory",
                             "pass a run directory, a run id or a capture file")
    artifacts = {"bench": read_json(run_dir, BENCH_JSON), "kernels": read_json(run_dir, KERNELS_JSON),
                 "comparison": read_json(run_dir, COMPARISON_JSON), "ranks": read_json(run_dir, RANKS_JSON)}
    analysis = None
    capture = capture_in(run_dir)
    if capture is not None and not any(v is not None for v in artifacts.values()):
        _, profile = load_capture(capture)
        analysis = analyze_profile(profile, iteration=iteration)
    name = Path(str(rec["run_dir"])).name if rec.get("run_dir") else run_dir.name
    return pages.run_page(rec, name, artifacts, analysis)


def capture_page(path: Path, iteration: str | None = None) -> Page:
    capture, p = load_capture(path)
    meta = [f"{p.meta.get('tool')} {p.meta.get('tool_version') or ''}".strip(), str(capture)]
    return pages.capture_page(f"nsighttk: {capture.name}", meta, analyze_profile(p, iteration=iteration))


def _slug(text: str) -> str:
    return safeio.safe_filename(Path(text.split(",")[0]).name or text, 60)


@dataclass
class Options:
    ref: str
    compare_with: list[str] | None = None
    force_compare: bool = False
    threshold_pct: float = 2.0
    iteration: str | None = None  # as analyze --iteration


def page(opts: Options, settings: Settings | None = None) -> tuple[Page, Path]:
    """The page, and where it goes by default: ``<run dir>/report.html`` for a run,
    ``<reports root>/<capture>.html`` for a capture (never beside the user's file),
    ``<reports root>/compare-A-vs-B.html`` for a comparison."""
    settings = settings or current()
    root = settings.reports_root
    if opts.compare_with:
        cmp = compare_cmd.run(compare_cmd.Options(opts.ref.split(","), opts.compare_with, opts.force_compare,
                                                  opts.threshold_pct), settings)
        return (pages.comparison_page(cmp),
                root / f"compare-{_slug(opts.ref)}-vs-{_slug(','.join(opts.compare_with))}.html")
    p = Path(opts.ref)
    if is_run_dir(p):
        return run_dir_page(p, opts.iteration), p / REPORT_HTML
    if safeio.named(p):
        return capture_page(p, opts.iteration), root / f"{_slug(p.name)}.html"
    if p.suffix or "/" in opts.ref:
        raise InputFileError(f"{opts.ref}: no such file or run directory", "check the path")
    with RunsDB(settings.db_path, create=False) as db:
        row = db.get(opts.ref)
    d = Path(str(row["run_dir"]))
    if not is_run_dir(d):
        raise InputFileError(f"run {row['id']}: its directory {d} is gone", "nsighttk runs rm it, or import a copy")
    return run_dir_page(d, opts.iteration), d / REPORT_HTML


def write_html(page: Page, path: Path, force: bool = False) -> Path:
    """Write ``page`` as one self-contained HTML file, atomically; a file nsighttk did not write is
    never replaced unless ``force`` (the check reads at most 4 KiB of it)."""
    safeio.check_output(path, "-o")
    if path.exists() and not force and GENERATOR_TAG not in safeio.read_head(path, 4096):
        raise UsageError(f"{path} exists and was not written by nsighttk", "choose another -o, or pass --force")
    safeio.write_text(path, html.render(page))
    return path
