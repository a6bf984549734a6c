"""What an HTML report shows for a run directory, a capture file or a comparison: finds the
artifacts, loads them, runs the analyses and hands the results to :mod:`nsighttk.report.html`.

A run directory's page is written into it as ``report.html`` when the run finishes
(:func:`write_into_run`); ``nsighttk report`` renders any of them on demand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk.analysis.ncu_summary import summarize as summarize_ncu
from nsighttk.analysis.overview import overview
from nsighttk.analysis.roofline import peaks, roofline
from nsighttk.analysis.timeline import timeline
from nsighttk.errors import InputFileError, NsightTKError
from nsighttk.profile import Profile
from nsighttk.report import html
from nsighttk.report.html import Page, Section

REPORT_NAME = "report.html"


def profile_sections(p: Profile) -> list[Section]:
    """Sections of any loaded capture: nsys / Kineto (overview and timeline) or ncu (roofline)."""
    if p.meta.get("tool") == "ncu":
        return html.ncu_sections(summarize_ncu(p), roofline(p), peaks(p))
    return html.overview_sections(overview(p), timeline(p))


def _capture_in(run_dir: Path) -> Path | None:
    raw = run_dir / "raw"
    for pattern in ("*.sqlite", "*.ncu-rep", "*.raw.csv", "trace*.json", "trace*.json.gz"):
        found = sorted(raw.glob(pattern))
        if found:
            return found[-1]
    return None


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _meta(rec: dict[str, Any]) -> list[str]:
    gpu = rec.get("gpu") or {}
    tools = rec.get("tools") or {}
    out = [f"started {rec.get('started_utc', '?')}", f"status {rec.get('status', '?')}"]
    if gpu:
        out.append(f"{gpu.get('name')} (CC {gpu.get('compute_capability')})")
    out += [f"{name} {t.get('version')}" for name, t in tools.items() if isinstance(t, dict) and t.get("version")]
    if rec.get("arch"):
        out.append("arch " + ",".join(rec["arch"]))
    if rec.get("slurm_job_id"):
        out.append(f"Slurm job {rec['slurm_job_id']}")
    return out


def run_page(run_dir: Path, profile: Profile | None = None, record: dict[str, Any] | None = None) -> Page:
    """The page of a run directory (``profile``: the run's capture when already loaded;
    ``record``: its run.json while the run is being finished)."""
    from nsighttk.api import load

    rec = record if record is not None else _read(run_dir / "run.json")
    if not isinstance(rec, dict):
        raise InputFileError(f"{run_dir}: no readable run.json, so not an nsighttk run directory",
                             "pass a run directory, a run id or a capture file")
    tool = rec.get("tool", "?")
    name = Path(rec["run_dir"]).name if rec.get("run_dir") else run_dir.name
    page = Page(f"nsighttk {tool}: {rec.get('target') or rec.get('workload')}", [*_meta(rec), name])
    if rec.get("error"):
        page.sections.append(Section("status", "Status").text(f"This run {rec.get('status')}: {rec['error']}",
                                                               "intro"))
    bench = _read(run_dir / "bench.json")
    compiled = _read(run_dir / "kernels.json")
    comparison = _read(run_dir / "comparison.json")
    per_rank = _read(run_dir / "ranks.json")
    if isinstance(per_rank, list):
        page.sections += html.ranks_sections(per_rank)
    elif isinstance(bench, dict):
        page.sections += html.bench_sections(bench)
    elif isinstance(compiled, dict):
        page.sections += html.compiled_sections(compiled.get("kernels") or [])
    elif isinstance(comparison, dict):
        page.sections.append(_model_section(comparison))
    else:
        capture = _capture_in(run_dir)
        if profile is None and capture is not None:
            profile = load(capture)
        if profile is not None:
            page.sections += profile_sections(profile)
        elif not rec.get("error"):
            page.sections.append(Section("status", "Status").text("This run directory holds no capture.", "intro"))
    return page


def _model_section(comparison: dict[str, Any]) -> Section:
    rows = pd.DataFrame(comparison.get("configs") or [])
    cols = [html.Column(c, c, "float" if rows[c].dtype.kind == "f" else "text") for c in rows.columns
            if rows[c].map(lambda v: not isinstance(v, (dict, list))).all()]
    return Section("configs", "Configurations").table(rows, cols)


def capture_page(path: Path) -> Page:
    from nsighttk.api import load

    p = load(path)
    meta = [f"{p.meta.get('tool')} {p.meta.get('tool_version') or ''}".strip(), str(path)]
    return Page(f"nsighttk: {path.name}", meta, profile_sections(p))


def comparison_page(cmp: Any) -> Page:
    return Page(f"nsighttk compare: {cmp.targets[0]}", ["before " + ", ".join(cmp.before),
                                                         "after " + ", ".join(cmp.after)],
                html.compare_sections(cmp))


def write_into_run(run_path: Path, profile: Profile | None = None, record: dict[str, Any] | None = None) -> Path | None:
    """Write ``report.html`` into a run directory; a problem is a warning, never a failed run."""
    from nsighttk import progress

    try:
        with progress.step("writing report.html"):
            out = run_path / REPORT_NAME
            out.write_text(html.render(run_page(run_path, profile, record)), encoding="utf-8")
            return out
    except (NsightTKError, OSError, ValueError, KeyError, TypeError) as ex:
        progress.warn(f"report.html not written: {ex}")
        return None


def page_dict(page: Page) -> dict[str, Any]:
    """The page as JSON-ready data: its tables as records and its charts' specs."""
    from nsighttk.report.jsonout import frame_records

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
