"""Run directories: the one owner of their layout.

``<reports root>/<UTC time>-<tool>-<target>[-<tag>]/`` holds::

    run.json        the manifest: command, argv, tool versions, GPU, arch, status, timings, errors
    raw/            what the tools wrote: .nsys-rep, .sqlite, .ncu-rep, CSV, Kineto JSON, logs
    summary.md      summary.json      the rendered summaries (nsys, ncu, torch)
    bench.json      bench.csv         bench results
    ranks.json      kernels.json      comparison.json     (ranks, inspect, model)
    report.html     the self-contained HTML report

A run is written under ``.tmp-<name>-<hex>`` and renamed when :meth:`RunDir.finish` runs, so a
directory without that prefix is always whole.  A failed or interrupted run is renamed too, with
its status and the reason in ``run.json``: what it produced is kept.  Every file here is written
atomically (:mod:`nsighttk.safeio`).  Nothing in this module calls up into analysis, reports or
the database: finishing a run (summaries, report.html, database) is a step of each command.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nsighttk import __version__, safeio
from nsighttk.errors import InputFileError, NsightTKError, UsageError
from nsighttk.settings import Settings, current

RUN_JSON = "run.json"
RAW = "raw"
SUMMARY_MD = "summary.md"
SUMMARY_JSON = "summary.json"
REPORT_HTML = "report.html"
BENCH_JSON = "bench.json"
BENCH_CSV = "bench.csv"
RANKS_JSON = "ranks.json"
KERNELS_JSON = "kernels.json"  # inspect
COMPARISON_JSON = "comparison.json"  # model
TMP_PREFIX = ".tmp-"
#: manifest keys that name one of the run's files (written relative, finished as full paths)
ARTIFACT_KEYS = ("summary_md", "summary_json", "report_html")

#: what counts as a run's capture under raw/, in order of preference
CAPTURE_PATTERNS = ("*.sqlite", "*.ncu-rep", "*.raw.csv", "*.details.csv", "*.pt.trace.json", "*.pt.trace.json.gz",
                    "trace*.json", "trace*.json.gz")
#: files a user may point nsighttk at directly
CAPTURE_SUFFIXES = (".sqlite", ".db", ".nsys-rep", ".ncu-rep", ".csv", ".json", ".gz")


def is_run_dir(path: Path) -> bool:
    return safeio.is_dir(path) and safeio.is_file(path / RUN_JSON)


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """A run directory's ``run.json`` (bounded read), or None when missing or unreadable."""
    data = safeio.read_json_or_none(run_dir / RUN_JSON, max_bytes=16 * 2**20)
    return data if isinstance(data, dict) else None


def read_json(run_dir: Path, name: str) -> Any:
    """One of the run's JSON artifacts (``summary.json``, ``bench.json`` ...) or None."""
    return safeio.read_json_or_none(run_dir / name)


def capture_in(run_dir: Path) -> Path | None:
    """The capture a run directory holds (its raw/ folder), or None."""
    raw = run_dir / RAW
    if not raw.is_dir():
        return None
    for pattern in CAPTURE_PATTERNS:
        found = sorted(p for p in raw.glob(pattern) if p.is_file())
        if found:
            return found[-1]
    return None


def find_capture(path: str | Path) -> Path:
    """What ``analyze``, ``report``, ``stats`` and ``compare`` read for a path a user gave: a
    capture file as it is, or the capture inside a run directory (of any tool).  One clear error
    otherwise; nothing is opened here beyond ``stat``."""
    p = Path(path)
    safeio.check_input(p, allow_dir=True)
    if not p.is_dir():
        return p
    if not (p / RUN_JSON).is_file():
        raise InputFileError(f"{p}: is a folder without {RUN_JSON}, so not an nsighttk run directory",
                             "give a capture file (.sqlite, .nsys-rep, .ncu-rep, Kineto .json) or a run directory")
    capture = capture_in(p)
    if capture is None:
        raise InputFileError(f"{p}: this run directory holds no capture (nothing under {RAW}/ nsighttk reads)",
                             "its summaries are in the directory; nsighttk report shows them")
    return capture


def summary_tables(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The tables worth keeping from a run directory, under common names: ``kernels``, ``nvtx``
    (nsys), ``ncu_kernels``, ``variants`` (bench), ``ops``/``torch_kernels`` (torch), ``compiled``
    (inspect), ``ranks``."""
    out: dict[str, list[dict[str, Any]]] = {}
    summary = read_json(path, SUMMARY_JSON)
    if isinstance(summary, dict):
        tables = summary.get("tables")
        if isinstance(tables, dict):  # nsys overview
            out["kernels"] = tables.get("kernels") or []
            out["nvtx"] = tables.get("nvtx_gpu") or []
        elif "rules" in summary:  # ncu
            out["ncu_kernels"] = summary.get("kernels") or []
        else:  # torch.profiler
            out["torch_kernels"] = summary.get("kernels") or []
            out["ops"] = summary.get("ops") or []
    bench = read_json(path, BENCH_JSON)
    if isinstance(bench, dict):
        out["variants"] = bench.get("rows") or []
    per_rank = read_json(path, RANKS_JSON)
    if isinstance(per_rank, list):
        out["ranks"] = per_rank
    inspected = read_json(path, KERNELS_JSON)
    if isinstance(inspected, dict):
        out["compiled"] = inspected.get("kernels") or []
    return {k: [r for r in v if isinstance(r, dict)] for k, v in out.items() if isinstance(v, list)}


@dataclass
class RunDir:
    """A run directory being written (see the module doc)."""

    root: Path
    tool: str
    target: str
    settings: Settings = field(default_factory=current)
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    record: dict[str, Any] = field(default_factory=dict)
    #: appended to the name (Slurm tasks: ``job<id>_<task>``, so runs of one array never share a name)
    tag: str | None = None
    final_path: Path | None = None
    _t0: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        tag = self.tag if self.tag is not None else self.settings.run_tag
        self.name = f"{stamp}-{self.tool}-{safeio.safe_filename(self.target)}"
        if tag:
            self.name += f"-{safeio.safe_filename(tag)}"
        self.path = self.root / f"{TMP_PREFIX}{self.name}-{os.urandom(3).hex()}"
        self.record.update({"nsighttk_version": __version__, "tool": self.tool, "workload": self.target,
                            "started_utc": self.started.isoformat(timespec="seconds"), "status": "running",
                            "timings_s": {}})
        try:
            safeio.check_output(self.path, "run directory")
            with safeio.deferred_signals():  # the directory exists only as a registered unfinished run
                (self.path / RAW).mkdir(parents=True)
                UNFINISHED.append(self)
        except (OSError, safeio.OutputFileError) as ex:
            why = getattr(ex, "strerror", None) or str(ex)
            raise UsageError(f"cannot create a run directory under {self.root}: {why}",
                             "pass --reports-dir or set NSIGHTTK_REPORTS to a writable folder") from None

    @property
    def raw(self) -> Path:
        return self.path / RAW

    def timing(self, step: str, seconds: float) -> None:
        self.record["timings_s"][step] = round(seconds, 3)

    def write_json(self, name: str, data: Any) -> Path:
        return safeio.write_json(self.path / name, data)

    def write_text(self, name: str, text: str) -> Path:
        return safeio.write_text(self.path / name, text)

    def finish(self, status: str, error: str | None = None) -> Path:
        """Write run.json and move the directory to its final name; return that path."""
        final = self.root / self.name
        n = 1
        while final.exists():
            n += 1
            final = self.root / f"{self.name}-{n}"
        self.record["status"] = status
        if error:
            self.record["error"] = error.replace(str(self.path), str(final))
        self.record["finished_utc"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.record["wall_s"] = round(time.monotonic() - self._t0, 3)
        self.record["run_dir"] = str(final)
        for key in ARTIFACT_KEYS:  # artifacts named relative to the run directory: where they end up
            if isinstance(self.record.get(key), str) and "/" not in self.record[key]:
                self.record[key] = str(final / self.record[key])
        self.record.update(self.settings.slurm)
        self.write_json(RUN_JSON, self.record)
        os.replace(self.path, final)
        self.final_path = final
        if self in UNFINISHED:
            UNFINISHED.remove(self)
        return final


#: run directories this process made and has not finished: an error or Ctrl-C that arrives before
#: a command guards its run (between creating it and ``failures_recorded``) still finishes it
#: (:func:`finish_unfinished`, called by the CLI), so no ``.tmp-`` directory is left behind
UNFINISHED: list[RunDir] = []


def finish_unfinished(status: str, error: str) -> list[Path]:
    """Finish every run directory made and not finished (``failed`` or ``interrupted``, keeping
    what it produced); returns their final paths.  One that cannot be finished (a full disk)
    stays as it is."""
    done = []
    for run in list(UNFINISHED):
        if run.final_path is None:
            with contextlib.suppress(NsightTKError, OSError):
                done.append(run.finish(status, error))
    UNFINISHED.clear()
    return done
