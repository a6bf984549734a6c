"""Render ``nsighttk torch`` / ``nsighttk model`` / ``nsighttk explain`` results for the terminal:
op table with categories and sources, categories, kernels with their decoded names, the
cross-configuration comparison of ``model``; laid out for the console's width."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from nsighttk.report import kernel_label
from nsighttk.report.console import layout_width
from nsighttk.report.layout import GAP, Col, Flex, heading, middle, para, table
from nsighttk.units import fmt_count, fmt_ns

if TYPE_CHECKING:  # pandas is imported by what makes the frames: `nsighttk explain` never does
    import pandas as pd


def _source(sources: Any) -> Flex:
    return middle(str(sources[-1]) if isinstance(sources, (list, tuple)) and len(sources) else "-")


def render_ops(ops: pd.DataFrame, cats: pd.DataFrame, kernels: pd.DataFrame, console: Console, top: int = 15,
               device: bool = True) -> None:
    rows: list[list[Any]]
    # a trace without device time (the CPU, or no kernel attributed): device columns of zeros say
    # nothing, and the ops rank by self CPU time alone
    timed = bool(len(ops)) and bool((ops["self_device_ns"] > 0).any())
    if len(cats):
        rows = [[str(r.category), *([fmt_ns(r.self_device_ns), f"{r.device_pct:.1f}"] if timed else []),
                 fmt_ns(r.self_cpu_ns), fmt_count(r.calls)] for r in cats.itertuples(index=False)]
        table(console, [Col("Category", "left"), *([Col("Device"), Col("% device")] if timed else []), Col("CPU"),
                        Col("Calls", drop=1)], rows, "Time per operator category (self time)")
    if len(ops):
        shown = ops.head(top) if timed else ops.sort_values("self_cpu_ns", ascending=False, kind="mergesort").head(top)
        rows = [[Flex(str(r.op)), str(r.category), fmt_count(r.calls),
                 *([fmt_ns(r.self_device_ns), fmt_ns(r.device_total_ns)] if timed else []), fmt_ns(r.self_cpu_ns),
                 _source(r.cuda_sources)] for r in shown.itertuples(index=False)]
        table(console, [Col("Op", "left", flex=True, min_width=46), Col("Category", "left", drop=2),
                        Col("Calls", drop=3), *([Col("Self device"), Col("Device total", drop=4)] if timed else []),
                        Col("Self CPU"), Col("CUDA source (PyTorch tree)", "left", drop=5, max_width=44)], rows,
              "Top ATen operators (self device time, then self CPU)" if timed else
              "Top ATen operators (self CPU time; no device time in this trace)")
    if device and len(kernels):
        shown = kernels.head(top)
        names = kernel_label.cells([str(n) for n in shown["name"]])
        rows = [[fmt_ns(r.total_ns), fmt_count(r.calls), str(r.category), n, str(r.decoded)]
                for r, n in zip(shown.itertuples(index=False), names, strict=True)]
        table(console, [Col("Total"), Col("Calls"), Col("Category", "left", drop=1),
                        Col("Kernel", "left", flex=True, min_width=36),
                        Col("What the name says", "left", drop=2, max_width=60)], rows, "GPU kernels, decoded")


def render_explain(info: Any, console: Console) -> None:
    d = info.as_dict()
    para(console, str(info.name), "", "  ", style="bold")
    para(console, info.summary(), "  ", "    ")
    for key in ("family", "library", "category", "arch", "tensor_cores", "dtypes", "layout", "tile", "stages",
                "cluster", "warps", "op", "vector_width"):
        if key in d:
            v = d[key]
            para(console, f"{key:13s} {', '.join(dict.fromkeys(v)) if isinstance(v, list) else v}", "  ",
                 " " * 16)
    for n in d.get("notes", []):
        para(console, f"note: {n}", "  ", "        ")


def _num(v: Any, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def render_model_comparison(c: dict[str, Any], console: Console) -> None:
    """``nsighttk model``'s comparison for the terminal: latency and throughput per configuration,
    then time per op category with one column per configuration (as many tables as the width
    needs); the full table is comparison.md."""
    key = "self_device_ns" if c["device"] == "cuda" else "self_cpu_ns"
    configs = c["configs"]
    heading(console, f"{c['model']}: configurations compared ({c['device']}, {c['dtype']})")
    rows = []
    for r in configs:
        lat = r.get("latency") or {}
        rows.append([str(r["batch_size"]), str(r["seq_len"]), str(r["status"]), _num(lat.get("median_ms"), ".3f"),
                     _num(lat.get("sequences_per_s"), ",.1f"), _num(lat.get("tokens_per_s"), ",.0f")])
    table(console, [Col("batch"), Col("seq"), Col("status", "left"), Col("latency (ms)"), Col("sequences/s"),
                    Col("tokens/s", drop=1)], rows)
    for r in configs:
        if r.get("error"):
            para(console, f"{r['batch_size']} x {r['seq_len']}: {r['error']}", "  ", "    ")
    cats = sorted({k for r in configs for k in (r.get("categories") or {})})
    ok = [r for r in configs if r.get("categories")]
    if not cats or not ok:
        return
    times = {cat: [(r.get("categories") or {}).get(cat, {}).get(key, 0) for r in ok] for cat in cats}
    idle = [cat for cat in cats if not any(times[cat])]
    busy = sorted((cat for cat in cats if any(times[cat])), key=lambda cat: -max(times[cat]))
    labels = [f"{r['batch_size']}x{r['seq_len']}" for r in ok]
    cells = {cat: [fmt_ns(v) for v in times[cat]] for cat in busy}
    w = layout_width(console)
    first = max([len("category")] + [len(cat) for cat in busy])
    col_w = max([len(x) for x in labels] + [len(x) for cat in busy for x in cells[cat]])
    per_table = len(ok) if w is None else max(1, (w - first) // (col_w + GAP))
    what = "self device" if key == "self_device_ns" else "self CPU"
    for start in range(0, len(ok), per_table):
        part = range(start, min(start + per_table, len(ok)))
        table(console, [Col("category", "left")] + [Col(labels[i]) for i in part],
              [[cat] + [cells[cat][i] for i in part] for cat in busy],
              f"Time per op category ({what} time over 3 forward passes), batch x sequence"
              + (f" ({start // per_table + 1} of {-(-len(ok) // per_table)})" if per_table < len(ok) else ""))
    if idle:
        para(console, f"no time in: {', '.join(idle)}", "  ", "    ")
    console.print(Text(""))
