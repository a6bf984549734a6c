"""The life of a run directory, shared by every command that makes one.

1. :func:`start` creates it (``.tmp-`` name) with a manifest naming the target, the tool, the GPU
   and the build;
2. the command collects into ``raw/``, loads, analyses once and writes its summaries;
3. :func:`finish` walks the rest of the pipeline downward, once: ``report.html`` from the analysis
   the command already has, the rename to the final name, then the runs database.

:func:`failures_recorded` wraps step 2: any error finishes the run as ``failed`` and Ctrl-C as
``interrupted`` (what it produced is kept), and the error names the kept directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nsighttk import progress, safeio, toolchain
from nsighttk.errors import NsightTKError
from nsighttk.runs.layout import REPORT_HTML, RunDir
from nsighttk.settings import Settings
from nsighttk.workload.target import Target


class Interrupted(KeyboardInterrupt):
    """SIGTERM (scancel, a time limit, kill): handled as Ctrl-C is, exit 143."""


def gpu_record(gpus: tuple[toolchain.GpuInfo, ...] | None = None) -> dict[str, Any] | None:
    gpus = toolchain.gpu_info() if gpus is None else gpus
    return {"name": gpus[0].name, "compute_capability": gpus[0].compute_capability} if gpus else None


def start(settings: Settings, root: Path | None, tool: str, target: str, tgt: Target | None = None,
          info: toolchain.ToolInfo | None = None, tag: str | None = None) -> RunDir:
    """A new run directory whose manifest starts with the target, the tool, the GPU and the build."""
    run = RunDir(root or settings.reports_root, tool, tgt.name if tgt else target, settings=settings, tag=tag)
    run.record["target"] = target
    if tgt is not None:
        run.record.update({"target_kind": tgt.kind, "command": tgt.command})
    if info is not None:
        run.record["tools"] = {info.name: {"path": info.path, "version": info.version}}
    if tgt is not None and tgt.build:
        run.record["build"] = {"source": str(tgt.build.source), "binary": str(tgt.build.binary),
                               "archs": tgt.build.archs, "cached": tgt.build.cached,
                               "nvcc_command": tgt.build.command}
        run.record["arch"] = tgt.build.archs
    return run


@contextmanager
def failures_recorded(run: RunDir) -> Iterator[None]:
    """On any failure, finish ``run`` (keeping what it produced) and name it in the error."""
    try:
        yield
    except NsightTKError as ex:
        if run.final_path is None:
            tmp = str(run.path)
            final = run.finish("failed", str(ex))
            ex.message = ex.message.replace(tmp, str(final)) + f" [run directory kept: {final}]"
            if ex.hint:
                ex.hint = ex.hint.replace(tmp, str(final))
        raise
    except KeyboardInterrupt as ex:
        if run.final_path is None:
            how = "SIGTERM" if isinstance(ex, Interrupted) else "Ctrl-C"
            final = run.finish("interrupted", f"interrupted ({how}); what it produced is kept")
            progress.warn(f"interrupted: run directory kept: {final}")
        raise
    except BaseException as ex:  # a bug: keep what was produced, and let the traceback show
        if run.final_path is None:
            run.finish("failed", f"{type(ex).__name__}: {ex}")
        raise


def finish(run: RunDir, status: str, error: str | None = None, analysis: Any = None,
           artifacts: dict[str, Any] | None = None, html_report: bool = True, record: bool = True) -> Path:
    """report.html (from what the command computed), rename, runs database.  A report or database
    problem is a warning: the run directory is complete either way.  ``analysis``: the
    :class:`nsighttk.report.pages.Analysis` the command computed."""
    if html_report:
        from nsighttk.report import html, pages  # the page's modules, when a page is made


        try:
            with progress.step("writing report.html"):
                rec = {**run.record, "status": status, **({"error": error} if error else {})}
                page = pages.run_page(rec, run.name, artifacts or {}, analysis)
                safeio.write_text(run.path / REPORT_HTML, html.render(page))
            run.record["report_html"] = REPORT_HTML
        except (NsightTKError, OSError, ValueError, KeyError, TypeError) as ex:
            progress.warn(f"report.html not written: {ex}")
    final = run.finish(status, error)
    if record and not run.settings.no_db:
        from nsighttk.runs import db as runs_db  # sqlite_utils imports pandas: not before the tool starts

        try:
            db_path = run.settings.db if run.settings.db is not None else run.root / "nsighttk.db"
            with runs_db.RunsDB(db_path) as db:
                runs_db.record_run(db, final)
        except (NsightTKError, OSError, ValueError) as ex:
            progress.warn(f"{final.name} not recorded in the runs database: {ex}")
    return final
