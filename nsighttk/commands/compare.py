"""``nsighttk compare BEFORE AFTER``: each side one or more runs (ids, run directories, capture
files, or ``job:ID`` for every run of a Slurm job); per kernel, NVTX range and bench variant the
time before and after, the change with its 95% interval, new and vanished items."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk import safeio
from nsighttk.analysis import compare as cmp
from nsighttk.analysis.ncu_summary import summarize as summarize_ncu
from nsighttk.analysis.overview import overview
from nsighttk.errors import InputFileError, UsageError
from nsighttk.load import load
from nsighttk.report import jsonout, ncu_text
from nsighttk.runs.db import RunsDB
from nsighttk.runs.layout import find_capture, is_run_dir, read_manifest, summary_tables
from nsighttk.settings import Settings, current


@dataclass
class Side:
    label: str
    target: str | None
    tables: dict[str, list[dict[str, Any]]]


def side(ref: str, settings: Settings) -> Side:
    """One run of a comparison: a run directory, a capture file, or a run id in the database."""
    p = Path(ref)
    if is_run_dir(p):
        data = read_manifest(p) or {}
        return Side(p.name, data.get("target") or data.get("workload"), summary_tables(p))
    if safeio.named(p):
        # a file (or what the user meant as one: find_capture says what is wrong with it)
        prof = load(find_capture(p))
        if prof.meta.get("tool") == "ncu":
            return Side(p.name, p.stem, {"ncu_kernels": ncu_text.as_dict(summarize_ncu(prof))["kernels"]})
        d = jsonout.overview_dict(overview(prof))
        return Side(p.name, p.stem, {"kernels": d["tables"]["kernels"], "nvtx": d["tables"]["nvtx_gpu"]})
    with RunsDB(settings.db_path, create=False) as db:
        run = db.get(ref)
        return Side(run["id"], run["target"], db.tables(run["id"]))


def expand_jobs(refs: list[str], settings: Settings) -> list[str]:
    """``job:ID`` stands for every run of that Slurm job (its array tasks: repeats of one side)."""
    out: list[str] = []
    for ref in refs:
        if not ref.startswith("job:"):
            out.append(ref)
            continue
        jid = ref.removeprefix("job:")
        with RunsDB(settings.db_path, create=False) as db:
            ids = [r["id"] for r in db.runs() if r.get("job_id") == jid]
        if not ids:
            raise UsageError(f"no runs of Slurm job {jid} are recorded", "nsighttk runs jobs shows the jobs and "
                                                                         "imports the runs of those that ended")
        out += sorted(ids)
    return out


@dataclass
class Options:
    before: list[str]
    after: list[str]
    force: bool = False
    threshold_pct: float = 2.0


@dataclass
class Result:
    before: list[str]
    after: list[str]
    targets: tuple[str | None, str | None]
    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "targets": list(self.targets),
                "rows": jsonout.frame_records(self.table)}


def run(opts: Options, settings: Settings | None = None) -> Result:
    settings = settings or current()
    if not (opts.threshold_pct >= 0 and opts.threshold_pct < float("inf")):
        raise UsageError(f"--threshold {opts.threshold_pct}: must be a percentage >= 0", "e.g. --threshold 2")
    a, b = expand_jobs(opts.before, settings), expand_jobs(opts.after, settings)
    if not a or not b or any(not r.strip() for r in [*a, *b]):
        raise UsageError("each side needs a run id, run directory or capture", "e.g. nsighttk compare RUN_A RUN_B")
    sides = [[side(r, settings) for r in refs] for refs in (a, b)]
    targets = [{s.target for s in one} for one in sides]
    if len(targets[0]) > 1 or len(targets[1]) > 1:
        raise UsageError("runs of one side have different targets: "
                         + "; ".join(f"{s.label}: {s.target}" for one in sides for s in one),
                         "repeat runs of one target per side")
    ta, tb = next(iter(targets[0])), next(iter(targets[1]))
    if ta != tb and not opts.force:
        raise UsageError(f"the runs profile different targets ({ta} vs {tb})", "pass --force to compare them anyway")
    pooled = [cmp.pool([cmp.items(s.tables) for s in one]) for one in sides]
    if pooled[0].empty and pooled[1].empty:
        raise InputFileError("nothing to compare: neither side has kernel, NVTX or variant tables",
                             "compare nsys, ncu, bench or torch runs")
    return Result([s.label for s in sides[0]], [s.label for s in sides[1]], (ta, tb),
                  cmp.compare(pooled[0], pooled[1], opts.threshold_pct))


def compare(before: list[str], after: list[str], force: bool = False, threshold_pct: float = 2.0,
            settings: Settings | None = None) -> Result:
    """Compare runs from Python: each side a list of run ids, run directories or capture files."""
    return run(Options(before, after, force, threshold_pct), settings)
