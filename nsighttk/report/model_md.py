"""Markdown for ``nsighttk model``: one report per configuration and the cross-configuration
comparison (the layout of the course notes' ``kernel_analysis_report_bs{N}_seq{M}.md``)."""

from __future__ import annotations

import math
from typing import Any

from nsighttk.analysis.kernels.names import decode
from nsighttk.analysis.torch_ops import category_advice
from nsighttk.escape import md_code, md_text
from nsighttk.units import fmt_ns

MODEL_TEXT = {True: "Hugging Face BertModel(BertConfig()), random weights",
              False: "built-in BERT-base-shaped encoder"}


def _num(v: Any, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def _given(v: Any) -> bool:
    """A value the data has: not None, NaN (pandas' missing), empty text or an empty list."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return False
    return len(v) > 0 if hasattr(v, "__len__") else True


def _cut(s: Any, n: int) -> str:
    s = str(s)
    return s if len(s) <= n else s[: n - 1] + "…"


def config_report(name: str, bs: int, seq: int, device: str, cfg: Any, ops: Any, cats: Any, kernels: Any,
              latency: dict[str, Any] | None) -> str:
    dev = "device" if device == "cuda" else "CPU"
    lines = [f"# Kernel analysis: {md_text(name)}, batch {bs}, sequence {seq}", "",
             "## Configuration", "",
             f"- model: {MODEL_TEXT[bool(cfg.real_bert)]}",
             f"- batch size {bs}, sequence length {seq}, dtype {md_text(cfg.dtype)}, device {md_text(device)}",
             "- torch.profiler schedule: wait 1, warm-up 1, active 3 forward passes", ""]
    lines += ["## Overview", ""]
    total_dev = int(ops["self_device_ns"].sum()) if len(ops) else 0
    total_cpu = int(ops["self_cpu_ns"].sum()) if len(ops) else 0
    lines.append(f"- {len(ops)} distinct ATen ops; self device time {fmt_ns(total_dev)}, "
                 f"self CPU time {fmt_ns(total_cpu)} (3 forward passes)")
    if latency:
        lines.append(f"- latency (median of the timing harness) {latency['median_ms']:.3f} ms; "
                     f"{latency['sequences_per_s']:,.1f} sequences/s, {latency['tokens_per_s']:,.0f} tokens/s")
    if len(cats):
        if device == "cuda":
            top = cats.iloc[0]
            lines.append(f"- largest category: **{md_text(top['category'])}** ({top['device_pct']:.1f}% of device "
                         "time)")
        else:
            top = cats.sort_values("self_cpu_ns", ascending=False).iloc[0]
            lines.append(f"- largest category by CPU time: **{md_text(top['category'])}**")
    lines += ["", "| category | self device | self CPU | calls |", "|---|---|---|---|"]
    for r in cats.itertuples(index=False):
        lines.append(f"| {md_text(r.category)} | {fmt_ns(r.self_device_ns)} | {fmt_ns(r.self_cpu_ns)} | {r.calls} |")
    key = "self_device_ns" if device == "cuda" else "self_cpu_ns"
    lines += ["", f"## Top-10 operators (by self {dev} time)", ""]
    for i, r in enumerate(ops.sort_values(key, ascending=False).head(10).itertuples(index=False), 1):
        lines.append(f"### {i}. {md_code(r.op)} ({md_text(r.category)})")
        lines.append(f"- {r.calls} calls; self device {fmt_ns(r.self_device_ns)}, "
                     f"device total {fmt_ns(r.device_total_ns)}, "
                     f"self CPU {fmt_ns(r.self_cpu_ns)}; {r.kernels} kernels launched directly")
        if _given(r.func):
            lines.append(f"- `native_functions.yaml`: {md_code(r.func)}")
        if _given(r.cuda_sources):
            lines.append(f"- implemented in: {', '.join(md_code(s) for s in r.cuda_sources)}")
        lines.append(f"- what to look at: {category_advice(r.category)}")
        lines.append("")
    if len(kernels):
        lines += ["## Top kernels", "", "| total | calls | category | what the name says | kernel |",
                  "|---|---|---|---|---|"]
        for r in kernels.head(10).itertuples(index=False):
            lines.append(f"| {fmt_ns(r.total_ns)} | {r.calls} | {md_text(r.category)} | "
                         f"{md_text(decode(r.name).summary())} | {md_code(_cut(r.name, 90), in_table=True)} |")
    return "\n".join(lines) + "\n"


def comparison(c: dict[str, Any]) -> str:
    key = "self_device_ns" if c["device"] == "cuda" else "self_cpu_ns"
    cats = sorted({k for r in c["configs"] for k in (r.get("categories") or {})})
    lines = [f"# {md_text(c['model'])}: configurations compared ({md_text(c['device'])}, {md_text(c['dtype'])})", "",
             f"Time per op category ({'self device' if key == 'self_device_ns' else 'self CPU'} time over "
             "3 forward passes)"
             ", latency and throughput.", "",
             "| batch | seq | status | latency (ms) | sequences/s | tokens/s | " + " | ".join(md_text(k) for k in cats)
             + " |",
             "|---|---|---|---|---|---|" + "---|" * len(cats)]
    for r in c["configs"]:
        lat = r.get("latency") or {}
        cells = [fmt_ns((r.get("categories") or {}).get(k, {}).get(key, 0)) for k in cats]
        lines.append(f"| {r['batch_size']} | {r['seq_len']} | {md_text(r['status'])} | "
                     f"{_num(lat.get('median_ms'), '.3f')} | {_num(lat.get('sequences_per_s'), ',.1f')} | "
                     f"{_num(lat.get('tokens_per_s'), ',.0f')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
