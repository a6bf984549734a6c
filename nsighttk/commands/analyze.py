"""``nsighttk analyze``: the human summary of an existing capture, on any machine.

An nsys export (or a Kineto trace) gives an :class:`~nsighttk.analysis.overview.Overview`; an
Nsight Compute capture the per-kernel :class:`~nsighttk.analysis.ncu_summary.NcuSummary`; one of
each joins into one per-kernel table.  Inputs are found by
:func:`nsighttk.runs.layout.find_capture`: capture files or run directories of any tool, the same
as ``nsighttk report`` accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk import engine, progress
from nsighttk.analysis.advice import Finding
from nsighttk.analysis.join import join_nsys_ncu
from nsighttk.analysis.kernels.roofline import peaks, roofline
from nsighttk.analysis.ncu_summary import NcuSummary
from nsighttk.analysis.ncu_summary import summarize as summarize_ncu
from nsighttk.analysis.nsys.rule_queries import read_export_facts
from nsighttk.analysis.nsys.rules import as_findings, run_rules
from nsighttk.analysis.overview import Overview, overview
from nsighttk.analysis.timeline import timeline
from nsighttk.errors import UsageError
from nsighttk.load import load
from nsighttk.profile import Profile
from nsighttk.report import jsonout, ncu_text
from nsighttk.report.pages import Analysis
from nsighttk.runs.layout import find_capture


def analyze_profile(p: Profile, with_timeline: bool = True, iteration: str | None = None) -> Analysis:
    """Every analysis a summary or a page shows of one capture, computed once.  ``iteration``:
    which NVTX range is one iteration (a name, ``domain:name`` or a regex; default: found)."""
    if p.meta.get("tool") == "ncu":
        ncu = summarize_ncu(p)
        ncu.notes = once(ncu.notes)
        return Analysis(ncu=ncu, roofline=roofline(p), peaks=peaks(p))
    eng = engine.of(p)
    ov, kept = eng.remember(f"overview\0{iteration!r}", lambda: overview(p, iteration, nsys_rules(p)))
    if kept:
        progress.info(f"the summary of an earlier look at this file, kept in {eng.cache_file} "
                      "(NSIGHTTK_CACHE_MB=0: no cache)")
    ov.notes = once(ov.notes)
    return Analysis(overview=ov, timeline=timeline(p) if with_timeline else None)


def once(notes: list[str]) -> list[str]:
    """``notes`` in their order, each said once (the loader and several analyses may each note
    the same missing table)."""
    return list(dict.fromkeys(notes))


def nsys_rules(p: Profile) -> Callable[[Profile], list[Finding]] | None:
    """Nsight Systems' own expert rules (``nsys analyze``, :mod:`nsighttk.analysis.nsys.rules`) as
    more findings beside nsighttk's (rule ``nsys:<name>``), run where those run (the steady state
    when there is one); None for captures that are not nsys exports."""
    if p.meta.get("tool") != "nsys":
        return None
    source = str(p.meta.get("source") or "")
    facts = read_export_facts(source) if source.endswith((".sqlite", ".db")) and Path(source).is_file() else None
    return lambda prof: as_findings(run_rules(prof, None, facts))


def load_capture(path: str | Path) -> tuple[Path, Profile]:
    capture = find_capture(path)
    return capture, load(capture)


def analyze(path: str | Path, iteration: str | None = None) -> Overview | NcuSummary:
    """The summary of one capture (file or run directory): an nsys/Kineto overview (iterations
    found, or those of the ``iteration`` range), or the per-kernel summary of an Nsight Compute
    capture."""
    _, p = load_capture(path)
    a = analyze_profile(p, with_timeline=False, iteration=iteration)
    return a.ncu if a.ncu is not None else a.overview  # type: ignore[return-value]


def join(path_a: str | Path, path_b: str | Path) -> pd.DataFrame:
    """One per-kernel table from an nsys capture and an ncu capture (in either order)."""
    (_, a), (_, b) = load_capture(path_a), load_capture(path_b)
    kinds = {a.meta.get("tool"), b.meta.get("tool")}
    if kinds != {"nsys", "ncu"}:
        raise UsageError("joining needs one nsys capture and one Nsight Compute capture",
                         f"got {a.meta.get('tool')} ({path_a}) and {b.meta.get('tool')} ({path_b})")
    nsys_p, ncu_p = (a, b) if a.meta.get("tool") == "nsys" else (b, a)
    if nsys_p.kernels.empty:
        raise UsageError("the nsys capture has no kernels to join", "was CUDA traced?")
    return join_nsys_ncu(nsys_p, summarize_ncu(ncu_p))


@dataclass
class Options:
    paths: list[Path]
    iteration: str | None = None  # the NVTX range that is one iteration (name, domain:name or regex)


@dataclass
class Result:
    source: str
    overview: Overview | None = None
    ncu: NcuSummary | None = None
    joined: pd.DataFrame | None = None

    def as_dict(self) -> Any:
        if self.joined is not None:
            return jsonout.frame_records(self.joined)
        if self.ncu is not None:
            return ncu_text.as_dict(self.ncu)
        assert self.overview is not None
        return jsonout.overview_dict(self.overview)


def run(opts: Options) -> Result:
    if not 1 <= len(opts.paths) <= 2:
        raise UsageError("give one capture, or one nsys and one ncu capture to join",
                         "e.g. nsighttk analyze run.sqlite, or nsighttk analyze run.sqlite run.ncu-rep")
    if len(opts.paths) == 2:
        return Result(" + ".join(map(str, opts.paths)), joined=join(*opts.paths))
    found = analyze(opts.paths[0], opts.iteration)
    if isinstance(found, NcuSummary):
        return Result(str(opts.paths[0]), ncu=found)
    return Result(str(opts.paths[0]), overview=found)
