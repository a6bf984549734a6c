"""What an HTML report shows for a run directory, a capture or a comparison: pages assembled from
results already computed (an :class:`Analysis` of a capture, a run's manifest and artifacts).
Nothing here loads a file or runs an analysis: the commands do, once, and hand the results over.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from nsighttk.analysis.ncu_summary import NcuSummary
from nsighttk.analysis.overview import Overview
from nsighttk.analysis.timeline import Timeline
from nsighttk.report import html
from nsighttk.report.html import Page, Section
from nsighttk.report.jsonout import frame_records


@dataclass
class Analysis:
    """Everything a page shows of one capture: an nsys/Kineto overview and its timeline, or an
    Nsight Compute summary with its roofline."""

    overview: Overview | None = None
    timeline: Timeline | None = None
    ncu: NcuSummary | None = None
    roofline: pd.DataFrame | None = None
    peaks: dict[str, float] | None = None


def capture_sections(a: Analysis) -> list[Section]:
    if a.ncu is not None:
        return html.ncu_sections(a.ncu, a.roofline if a.roofline is not None else pd.DataFrame(), a.peaks or {})
    assert a.overview is not None
    return html.overview_sections(a.overview, a.timeline)


def _meta(rec: dict[str, Any]) -> list[str]:
    gpu: dict[str, Any] = rec["gpu"] if isinstance(rec.get("gpu"), dict) else {}
    tools: dict[str, Any] = rec["tools"] if isinstance(rec.get("tools"), dict) else {}
    out = [f"started {rec.get('started_utc', '?')}", f"status {rec.get('status', '?')}"]
    if gpu:
        out.append(f"{gpu.get('name')} (CC {gpu.get('compute_capability')})")
    out += [f"{name} {t.get('version')}" for name, t in tools.items() if isinstance(t, dict) and t.get("version")]
    arch = rec.get("arch")
    if arch:
        out.append("arch " + (",".join(map(str, arch)) if isinstance(arch, list) else str(arch)))
    if rec.get("slurm_job_id"):
        out.append(f"Slurm job {rec['slurm_job_id']}")
    return out


def run_page(rec: dict[str, Any], name: str, artifacts: dict[str, Any], analysis: Analysis | None) -> Page:
    """The page of a run directory: ``rec`` its manifest, ``name`` its directory name,
    ``artifacts`` its JSON results (``bench``, ``kernels``, ``comparison``, ``ranks``), ``analysis``
    its capture's analysis when it has one."""
    tool = rec.get("tool", "?")
    page = Page(f"nsighttk {tool}: {rec.get('target') or rec.get('workload')}", [*_meta(rec), name])
    if rec.get("error"):
        page.sections.append(Section("status", "Status").text(f"This run {rec.get('status')}: {rec['error']}",
                                                               "intro"))
    bench, compiled = artifacts.get("bench"), artifacts.get("kernels")
    comparison, per_rank = artifacts.get("comparison"), artifacts.get("ranks")
    heatmap = artifacts.get("rank_heatmap")
    shown = _artifact_sections(per_rank, bench, compiled, comparison, heatmap if isinstance(heatmap, dict) else None)
    if shown is not None:
        page.sections += shown
    elif analysis is not None:
        page.sections += capture_sections(analysis)
    elif not rec.get("error"):
        page.sections.append(Section("status", "Status").text("This run directory holds no capture.", "intro"))
    return page


def _artifact_sections(per_rank: Any, bench: Any, compiled: Any, comparison: Any,
                       heatmap: dict[str, Any] | None = None) -> list[Section] | None:
    """The sections of a run's results (ranks, bench, inspect, model), None when it has none.  They
    are JSON files a user may have edited or damaged: one that is not as nsighttk writes it is
    named on the page, not drawn."""
    try:
        if isinstance(per_rank, list):
            return html.ranks_sections(per_rank, heatmap)
        if isinstance(bench, dict):
            return html.bench_sections(bench)
        if isinstance(compiled, dict):
            return html.compiled_sections(compiled.get("kernels") or [])
        if isinstance(comparison, dict):
            return [_model_section(comparison)]
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as ex:
        return [Section("status", "Status").text(f"This run's results file is not as nsighttk writes it "
                                                 f"({type(ex).__name__}: {str(ex)[:120]}); it is not shown.", "intro")]
    return None


def _model_section(comparison: dict[str, Any]) -> Section:
    rows = pd.DataFrame([c for c in comparison.get("configs") or [] if isinstance(c, dict)])
    cols = [html.Column(c, c, "float" if rows[c].dtype.kind == "f" else "text") for c in rows.columns
            if rows[c].map(lambda v: not isinstance(v, (dict, list))).all()]
    return Section("configs", "Configurations").table(rows, cols)


def ranks_page(rows: list[dict[str, Any]], heatmap: dict[str, Any] | None, meta: list[str]) -> Page:
    """``nsighttk ranks --html``: the ranks section and the ranks x iterations heatmaps."""
    return Page(f"nsighttk ranks: {len(rows)} ranks", meta, html.ranks_sections(rows, heatmap))


def capture_page(title: str, meta: list[str], analysis: Analysis) -> Page:
    return Page(title, meta, capture_sections(analysis))


def comparison_page(cmp: Any) -> Page:
    return Page(f"nsighttk compare: {cmp.targets[0]}", ["before " + ", ".join(cmp.before),
                                                         "after " + ", ".join(cmp.after)],
                html.compare_sections(cmp))


def page_dict(page: Page) -> dict[str, Any]:
    """The page as JSON-ready data: its tables as records and its charts' specs."""
    sections = []
    for s in page.sections:
        tables, charts, text = [], [], []
        for kind, data in s.blocks:
            if kind == "table":
                tables.append({"title": data[2], "rows": frame_records(data[0])})
            elif kind == "chart":
                charts.append({"kind": data[0], "spec": data[1]})
            elif kind == "kv":
                text += [f"{k}: {v}" for k, v in data]
            elif kind == "p":
                text.append(data[1])
            elif kind == "findings":
                text += [f"{t}: {ev} (try: {fix})" for t, ev, fix in data]
        sections.append({"id": s.id, "title": s.title, "text": text, "tables": tables, "charts": charts})
    return {"title": page.title, "meta": page.meta, "sections": sections}
