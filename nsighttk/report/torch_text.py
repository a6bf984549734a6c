"""Render ``nsighttk torch`` / ``nsighttk model`` results: op table with categories and sources,
categories, kernels with their decoded names."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from nsighttk.units import fmt_ns


def _t(title: str, cols: list[tuple[str, str]]) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    for c, j in cols:
        t.add_column(c, justify=j)  # type: ignore[arg-type]
    return t


def render_ops(ops: pd.DataFrame, cats: pd.DataFrame, kernels: pd.DataFrame, console: Console, top: int = 15,
               device: bool = True) -> None:
    if len(cats):
        t = _t("Time per operator category (self time)",
               [("Category", "left"), ("Device", "right"), ("% device", "right"), ("CPU", "right"), ("Calls", "right")])
        for r in cats.itertuples(index=False):
            t.add_row(r.category, fmt_ns(r.self_device_ns), f"{r.device_pct:.1f}", fmt_ns(r.self_cpu_ns),
                      f"{r.calls:,}")
        console.print(t)
    if len(ops):
        t = _t("Top ATen operators (self device time, then self CPU)",
               [("Op", "left"), ("Category", "left"), ("Calls", "right"), ("Self device", "right"),
                ("Device total", "right"), ("Self CPU", "right"), ("CUDA source (PyTorch tree)", "left")])
        for r in ops.head(top).itertuples(index=False):
            t.add_row(r.op, r.category, f"{r.calls:,}", fmt_ns(r.self_device_ns), fmt_ns(r.device_total_ns),
                      fmt_ns(r.self_cpu_ns), (r.cuda_sources or ["-"])[-1])
        console.print(t)
    if device and len(kernels):
        t = _t("GPU kernels, decoded", [("Total", "right"), ("Calls", "right"), ("Category", "left"),
                                        ("What the name says", "left"), ("Kernel", "left")])
        for r in kernels.head(top).itertuples(index=False):
            t.add_row(fmt_ns(r.total_ns), f"{r.calls:,}", r.category, r.decoded, r.name[:70])
        console.print(t)


def render_explain(info: Any, console: Console) -> None:
    d = info.as_dict()
    console.print(f"[bold]{info.name}[/bold]")
    console.print(f"  {info.summary()}")
    for key in ("family", "library", "category", "arch", "tensor_cores", "dtypes", "layout", "tile", "stages",
                "cluster", "warps", "op", "vector_width"):
        if key in d:
            v = d[key]
            console.print(f"  {key:13s} {', '.join(dict.fromkeys(v)) if isinstance(v, list) else v}")
    for n in d.get("notes", []):
        console.print(f"  note: {n}")
