"""Terminal view of ``nsighttk compare``, laid out for the console's width."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.text import Text

from nsighttk import escape
from nsighttk.analysis.compare import CHANGES
from nsighttk.report import kernel_label
from nsighttk.report.console import make_console
from nsighttk.report.layout import Col, middle, para, table
from nsighttk.units import fmt_ns

_STYLE = {"slower": "red", "faster": "green", "unclear": "magenta", "new": "cyan", "vanished": "yellow", "same": ""}
_KIND = {"kernel": "Kernels", "nvtx": "NVTX ranges (GPU projection per instance)", "variant": "Bench variants (median)"}


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _pct(v: float) -> str:
    return "-" if _nan(v) else f"{v:+.1f}%"


def _opt(a: float, b: float, unit: str) -> str:
    if _nan(a) and _nan(b):
        return ""
    fa, fb = ("-" if _nan(v) else f"{v:,.1f}{unit}" for v in (a, b))
    return f"{fa} -> {fb}"


def render(cmp: Any, console: Console | None = None, show_all: bool = False) -> None:
    console = console or make_console()
    para(console, f" {', '.join(cmp.before)} ({cmp.targets[0]})", "", "       ", lead=Text("before", style="bold"))
    para(console, f"  {', '.join(cmp.after)} ({cmp.targets[1]})", "", "       ", lead=Text("after", style="bold"))
    t = cmp.table
    counts = t["change"].value_counts().to_dict()
    console.print(Text("  " + ", ".join(f"{counts.get(k, 0)} {k}" for k in CHANGES)))
    for kind, g in t.groupby("kind", sort=False):
        shown = g if show_all else g[g["change"] != "same"]
        if shown.empty:
            continue
        names = (kernel_label.cells([str(n) for n in shown["name"]]) if kind == "kernel" else
                 [middle(n) for n in shown["name"]])
        rows: list[list[Any]] = []
        for r, name in zip(shown.itertuples(index=False), names, strict=True):
            interval = "-" if _nan(r.ci_low_pct) else f"{r.ci_low_pct:+.1f}% .. {r.ci_high_pct:+.1f}%"
            rows.append([Text(r.change, style=_STYLE.get(r.change, "")), fmt_ns(r.before_ns), fmt_ns(r.after_ns),
                         _pct(r.change_pct), interval, _opt(r.occupancy_pct_before, r.occupancy_pct_after, "%"),
                         _opt(r.gbps_before, r.gbps_after, ""), name])
        table(console, [Col("Change", "left"), Col("Before"), Col("After"), Col("Delta"),
                        Col("95% interval", drop=2), Col("Occupancy", drop=4), Col("GB/s", drop=3),
                        Col("Name", "left", flex=True, min_width=30)], rows,
              _KIND.get(str(kind), escape.term(kind)))
    para(console, "slower/faster: the 95% interval of the change excludes 0 and the change exceeds the threshold; "
                  "intervals come from the tools' per-call spread and from repeated runs.", "  ", "  ")
    if len(cmp.before) == 1 or len(cmp.after) == 1:
        para(console, " with one run on a side, nothing shows how much the next run would differ: a change past "
                      "the threshold is unclear, not slower or faster.  Repeat the runs and pass them "
                      "comma-separated (A1,A2,A3).", "  ", "  ", lead=Text("note:", style="yellow"))
