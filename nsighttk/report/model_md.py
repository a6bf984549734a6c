"""Markdown for ``nsighttk model``: one report per configuration and the cross-configuration
comparison (seed 003's ``kernel_analysis_report_bs{N}_seq{M}.md``)."""

from __future__ import annotations

from typing import Any

from nsighttk.analysis.kernel_names import decode
from nsighttk.analysis.torch_ops import category_advice
from nsighttk.units import fmt_ns

MODEL_TEXT = {True: "Hugging Face BertModel(BertConfig()), random weights",
              False: "built-in BERT-base-shaped encoder"}


def _num(v: Any, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def config_report(name: str, bs: int, seq: int, device: str, cfg: Any, ops: Any, cats: Any, kernels: Any,
              latency: dict[str, Any] | None) -> str:
    dev = "device" if device == "cuda" else "CPU"
    lines = [f"# Kernel analysis: {name}, batch {bs}, sequence {seq}", "",
             "## Configuration", "",
             f"- model: {MODEL_TEXT[bool(cfg.real_bert)]}",
             f"- batch size {bs}, sequence length {seq}, dtype {cfg.dtype}, device {device}",
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
            lines.append(f"- largest category: **{top['category']}** ({top['device_pct']:.1f}% of device time)")
        else:
            top = cats.sort_values("self_cpu_ns", ascending=False).iloc[0]
            lines.append(f"- largest category by CPU time: **{top['category']}**")
    lines += ["", "| category | self device | self CPU | calls |", "|---|---|---|---|"]
    for r in cats.itertuples(index=False):
        lines.append(f"| {r.category} | {fmt_ns(r.self_device_ns)} | {fmt_ns(r.self_cpu_ns)} | {r.calls} |")
    key = "self_device_ns" if device == "cuda" else "self_cpu_ns"
    lines += ["", f"## Top-10 operators (by self {dev} time)", ""]
    for i, r in enumerate(ops.sort_values(key, ascending=False).head(10).itertuples(index=False), 1):
        lines.append(f"### {i}. `{r.op}` ({r.category})")
        lines.append(f"- {r.calls} calls; self device {fmt_ns(r.self_device_ns)}, "
                     f"device total {fmt_ns(r.device_total_ns)}, "
                     f"self CPU {fmt_ns(r.self_cpu_ns)}; {r.kernels} kernels launched directly")
        if r.func:
            lines.append(f"- `native_functions.yaml`: `{r.func}`")
        if r.cuda_sources:
            lines.append(f"- implemented in: {', '.join(f'`{s}`' for s in r.cuda_sources)}")
        lines.append(f"- what to look at: {category_advice(r.category)}")
        lines.append("")
    if len(kernels):
        lines += ["## Top kernels", "", "| total | calls | category | what the name says | kernel |",
                  "|---|---|---|---|---|"]
        for r in kernels.head(10).itertuples(index=False):
            lines.append(f"| {fmt_ns(r.total_ns)} | {r.calls} | {r.category} | {decode(r.name).summary()} | "
                         f"`{r.name[:90].replace('|', '/')}` |")
    return "\n".join(lines) + "\n"


def comparison(c: dict[str, Any]) -> str:
    key = "self_device_ns" if c["device"] == "cuda" else "self_cpu_ns"
    cats = sorted({k for r in c["configs"] for k in (r.get("categories") or {})})
    lines = [f"# {c['model']}: configurations compared ({c['device']}, {c['dtype']})", "",
             f"Time per op category ({'self device' if key == 'self_device_ns' else 'self CPU'} time over "
             "3 forward passes)"
             ", latency and throughput.", "",
             "| batch | seq | status | latency (ms) | sequences/s | tokens/s | " + " | ".join(cats) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(cats)]
    for r in c["configs"]:
        lat = r.get("latency") or {}
        cells = [fmt_ns((r.get("categories") or {}).get(k, {}).get(key, 0)) for k in cats]
        lines.append(f"| {r['batch_size']} | {r['seq_len']} | {r['status']} | "
                     f"{_num(lat.get('median_ms'), '.3f')} | {_num(lat.get('sequences_per_s'), ',.1f')} | "
                     f"{_num(lat.get('tokens_per_s'), ',.0f')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
