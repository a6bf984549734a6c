"""Terminal rendering of ``nsighttk bench`` results."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from nsighttk.bench import BenchReport


def _f(v: Any, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def render(r: BenchReport, console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    clock = "CUDA events" if r.device.startswith("cuda") else "host clock (CPU timing: this machine has no GPU in use)"
    copy = f"{r.copy_gbps:,.0f} GB/s" if r.copy_gbps else "-"
    console.print(f"[bold]bench {r.workload}[/bold] on {r.device}, {r.dtype}; timed with {clock}; "
                  f"measured copy bandwidth {copy} (the 100% of '% copy')")
    t = Table(header_style="bold")
    for c in ("size", "variant", "status", "median", "p20-p80", "GB/s", "% copy", "TFLOP/s", "speed-up", "rel. error"):
        t.add_column(c, justify="left" if c in ("variant", "status") else "right")
    for row in r.rows.to_dict("records"):
        if row.get("status") != "ok" and row.get("status") != "wrong result":
            t.add_row(f"{row['size']:,}", row["variant"], f"{row['status']}: {row.get('reason', '')}",
                      *["-"] * 7)
            continue
        status = row["status"] + (f" ({row['reason']})" if row.get("reason") else "")
        t.add_row(f"{row['size']:,}", row["variant"], status, f"{row['median_ms'] * 1e3:,.1f} us",
                  f"{row['p20_ms'] * 1e3:,.1f}-{row['p80_ms'] * 1e3:,.1f}", _f(row.get("gbps"), ",.1f"),
                  _f(row.get("pct_of_copy"), ".1f"), _f(row.get("tflops"), ".3f"),
                  _f(row.get("speedup_vs_baseline"), ".2f") + "x", _f(row.get("rel_error"), ".1e"))
    console.print(t)
