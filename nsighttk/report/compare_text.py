"""Terminal view of ``nsighttk compare``."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from nsighttk.units import fmt_ns, shorten

_STYLE = {"slower": "red", "faster": "green", "new": "cyan", "vanished": "yellow", "same": ""}
_KIND = {"kernel": "Kernels", "nvtx": "NVTX ranges (GPU projection per instance)", "variant": "Bench variants (median)"}


def _pct(v: float) -> str:
    return "-" if v is None or math.isnan(v) else f"{v:+.1f}%"


def _opt(a: float, b: float, unit: str) -> str:
    if math.isnan(a) and math.isnan(b):
        return ""
    fa, fb = ("-" if math.isnan(v) else f"{v:,.1f}{unit}" for v in (a, b))
    return f"{fa} -> {fb}"


def render(cmp: Any, console: Console | None = None, show_all: bool = False) -> None:
    console = console or Console(highlight=False)
    console.print(f"[bold]before[/bold] {', '.join(cmp.before)} ({cmp.targets[0]})")
    console.print(f"[bold]after[/bold]  {', '.join(cmp.after)} ({cmp.targets[1]})")
    t = cmp.table
    counts = t["change"].value_counts().to_dict()
    console.print("  " + ", ".join(f"{counts.get(k, 0)} {k}" for k in ("slower", "faster", "new", "vanished", "same")))
    for kind, g in t.groupby("kind", sort=False):
        shown = g if show_all else g[g["change"] != "same"]
        if shown.empty:
            continue
        tab = Table(title=_KIND.get(str(kind), str(kind)), title_justify="left", header_style="bold", pad_edge=False)
        for c, j in (("Change", "left"), ("Before", "right"), ("After", "right"), ("Delta", "right"),
                     ("95% interval", "right"), ("Occupancy", "right"), ("GB/s", "right"), ("Name", "left")):
            tab.add_column(c, justify=j)  # type: ignore[arg-type]
        for r in shown.itertuples(index=False):
            interval = "-" if math.isnan(r.ci_low_pct) else f"{r.ci_low_pct:+.1f}% .. {r.ci_high_pct:+.1f}%"
            tab.add_row(f"[{_STYLE[r.change]}]{r.change}[/]" if _STYLE[r.change] else r.change,
                        fmt_ns(r.before_ns), fmt_ns(r.after_ns), _pct(r.change_pct), interval,
                        _opt(r.occupancy_pct_before, r.occupancy_pct_after, "%"),
                        _opt(r.gbps_before, r.gbps_after, ""), shorten(r.name, 70))
        console.print(tab)
    console.print("  slower/faster: the 95% interval of the change excludes 0 and the change exceeds the threshold; "
                  "intervals come from the tools' per-call spread and from repeated runs.")
    if len(cmp.before) == 1 or len(cmp.after) == 1:
        console.print("  [yellow]note:[/yellow] a side with one run has only its within-run spread: run-to-run "
                      "noise is not in the interval. Repeat the runs and pass them comma-separated (A1,A2,A3).")
