"""Markdown rendering (``summary.md``): the overview's tables in full, nsys' units."""

from __future__ import annotations

import pandas as pd

from nsighttk.analysis.overview import Overview
from nsighttk.report.nsys_format import formatted_rows
from nsighttk.units import fmt_bytes, fmt_ns


def md_table(df: pd.DataFrame, max_rows: int | None = None) -> str:
    """A GitHub-flavoured Markdown table (pipes escaped), values formatted as nsys prints them."""
    if df.empty:
        return "_(no rows)_\n"
    shown = df.head(max_rows) if max_rows else df
    headers, rows = formatted_rows(shown)
    esc = [[c.replace("|", "\\|") for c in r] for r in rows]
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in esc]
    if max_rows and len(df) > max_rows:
        out.append(f"\n_{len(df) - max_rows} more rows in summary.json_")
    return "\n".join(out) + "\n"


_SECTIONS = [
    ("kernels", "CUDA kernels (cuda_gpu_kern_sum)"),
    ("memory", "Memory operations by direction"),
    ("gpu_sum", "GPU summary: kernels and memory operations (cuda_gpu_sum)"),
    ("api", "CUDA API calls (cuda_api_sum)"),
    ("nvtx", "NVTX ranges (nvtx_sum)"),
    ("nvtx_gpu", "NVTX GPU projection (nvtx_gpu_proj_sum)"),
    ("autograd_ops", "PyTorch ops (autograd NVTX ranges grouped by op)"),
]


def render(ov: Overview, title: str = "nsys summary") -> str:
    m, h = ov.meta, ov.headline
    lines = [f"# {title}", ""]
    lines.append(f"- capture: `{m.get('source', '')}` (nsys {m.get('tool_version') or '?'})")
    if h.get("gpu"):
        lines.append(f"- GPU: {h['gpu']}")
    if m.get("command"):
        lines.append(f"- command: `{' '.join(m['command'])}`")
    lines.append(f"- GPU busy {fmt_ns(h['gpu_busy_ns'])} over a {fmt_ns(h['gpu_span_ns'])} span; "
                 f"{h['kernels']:,} kernels, {h['memcpy_count']:,} memcpys ({fmt_bytes(h['memcpy_bytes'])}), "
                 f"{h['memset_count']:,} memsets, {h['api_calls']:,} CUDA API calls, {h['nvtx_ranges']:,} NVTX ranges")
    for note in ov.notes:
        lines.append(f"- note: {note}")
    lines.append("")
    if ov.findings:
        lines += ["## What to try next", ""]
        lines += [f"- **{f.title}**: {f.evidence}. Try: {f.suggestion}." for f in ov.findings]
        lines.append("")
    for key, heading in _SECTIONS:
        df = ov.tables.get(key)
        if df is None or (key == "autograd_ops" and not len(df)):
            continue
        if key == "memory" and len(df):
            df = df.rename(columns={"total_bytes": "total (B)"})
        lines += [f"## {heading}", "", md_table(df, 50)]
    return "\n".join(lines)
