"""Markdown rendering (``summary.md``): the overview's tables in full, nsys' units."""

from __future__ import annotations

import pandas as pd

from nsighttk.analysis.iterations.find import scope_label
from nsighttk.analysis.overview import Overview
from nsighttk.escape import md_code, md_text
from nsighttk.report.nsys_format import formatted_rows
from nsighttk.report.text import source_line, steady_line
from nsighttk.units import fmt_bytes, fmt_ns, fmt_num


def md_table(df: pd.DataFrame, max_rows: int | None = None) -> str:
    """A GitHub-flavoured Markdown table, values formatted as nsys prints them; every cell and
    header is literal text (:func:`nsighttk.escape.md_text`)."""
    if df.empty:
        return "_(no rows)_\n"
    shown = df.head(max_rows) if max_rows else df
    headers, rows = formatted_rows(shown)
    esc = [[md_text(c) for c in r] for r in rows]
    out = ["| " + " | ".join(md_text(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
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


def _iterations(ov: Overview) -> list[str]:
    it = ov.iterations
    if it is None:
        return []
    s = it.steady
    n = len(it.table)
    out = ["## Iterations", "", md_text(f"{n} iteration{'s' if n != 1 else ''}, from {it.source}.")]
    if s:
        d = s["duration_ns"]
        cv = f", coefficient of variation {d['cv']:.0%}" if d["cv"] is not None else ""
        b = s["gpu_busy_pct"]["median"]
        busy = f", GPU busy {b:.1f}% of each" if b is not None else ""
        label = scope_label(it)
        out.append(md_text(f"{label[:1].upper() + label[1:]}: {fmt_ns(d['median'])} median ({fmt_ns(d['min'])} "
                           f"to {fmt_ns(d['max'])}{cv}){busy}; warm-up: {', '.join(s['warmup']) or 'none'}."))
    heads = ["Iteration", "Wall", "GPU busy", "Busy %", "Kernels", "Kernel time", "Memcpy time", "Sync",
             "Launch to GPU", ""]
    out += ["", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for r in it.table.itertuples(index=False):
        busy_ns = None if r.gpu_busy_ns is pd.NA else r.gpu_busy_ns
        cells = [str(r.name), fmt_ns(r.duration_ns), fmt_ns(busy_ns), fmt_num(r.gpu_busy_pct), f"{r.kernels:,}",
                 fmt_ns(r.kernel_ns), fmt_ns(r.memcpy_ns), fmt_ns(r.sync_ns), fmt_ns(r.launch_overhead_ns),
                 "warm-up" if r.warmup else r.outlier]
        out.append("| " + " | ".join(md_text(c) for c in cells) + " |")
    return [*out, ""]


def render(ov: Overview, title: str = "nsys summary") -> str:
    m, h = ov.meta, ov.headline
    lines = [f"# {md_text(title)}", ""]
    kind, version = source_line(m)
    lines.append(f"- {md_text(kind)}: {md_code(m.get('source', ''))} ({md_text(version)})")
    if h.get("gpu"):
        lines.append(f"- GPU: {md_text(h['gpu'])}")
    if m.get("command"):
        lines.append(f"- command: {md_code(' '.join(str(a) for a in m['command']))}")
    steady = steady_line(ov)
    if steady:
        lines.append(f"- **{md_text(steady)}**")
    lines.append(f"- GPU busy {fmt_ns(h['gpu_busy_ns'])} over a {fmt_ns(h['gpu_span_ns'])} span; "
                 f"{h['kernels']:,} kernels, {h['memcpy_count']:,} memcpys ({fmt_bytes(h['memcpy_bytes'])}), "
                 f"{h['memset_count']:,} memsets, {h['api_calls']:,} CUDA API calls, {h['nvtx_ranges']:,} NVTX ranges")
    for note in ov.notes:
        lines.append(f"- note: {md_text(note)}")
    lines.append("")
    lines += _iterations(ov)
    if ov.collectives is not None:
        lines += ["## Communication and computation", ""]
        lines += [f"- {md_text(line)}" for line in ov.collectives.summary()]
        lines.append("")
    if ov.findings:
        lines += ["## What to try next", ""]
        lines += [f"- **{md_text(f.title)}**: {md_text(f.evidence)}. Try: {md_text(f.suggestion)}."
                  for f in ov.findings]
        lines.append("")
    for key, heading in _SECTIONS:
        df = ov.tables.get(key)
        if df is None or (key == "autograd_ops" and not len(df)):
            continue
        if key == "memory" and len(df):
            df = df.rename(columns={"total_bytes": "total (B)"})
        lines += [f"## {heading}", "", md_table(df, 50)]
    return "\n".join(lines)
