"""Figures drawn with matplotlib (an optional dependency: ``pip install 'nsighttk[plot]'``).

Plotting never happens inside analysis functions: these take finished results and a path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nsighttk.errors import ToolNotFound, UsageError
from nsighttk.escape import plot_text

FORMATS = (".png", ".svg", ".pdf")


def check_writable(path: Path) -> None:
    """Fail before any work is done: a known format, a folder that exists, matplotlib installed."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise UsageError(f"cannot draw {path.name}: unknown image type", f"use one of {', '.join(FORMATS)}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {path}: {parent} is not a writable folder", "choose another --plot path")
    _pyplot()


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only; no display needed (login nodes, CI)
        import matplotlib.pyplot as plt
    except ImportError:
        raise ToolNotFound("plots need matplotlib, which is not installed", "pip install 'nsighttk[plot]'") from None
    return plt


def bandwidth_vs_size(report: Any, path: Path) -> Path:
    """One line per variant: achieved GB/s against size (log-log), the measured copy bandwidth as
    a dashed ceiling.  ``report`` is a :class:`nsighttk.bench.BenchReport`."""
    plt = _pyplot()
    df = report.rows
    ok = df[df["status"] == "ok"] if "status" in df else df.iloc[0:0]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for variant, g in ok.groupby("variant", sort=False):
        g = g.sort_values("size")
        ax.plot(g["size"], g["gbps"], marker="o", label=plot_text(variant))
    if report.copy_gbps:
        ax.axhline(report.copy_gbps, color="gray", linestyle="--", linewidth=1,
                   label=f"measured copy {report.copy_gbps:,.0f} GB/s")
    ax.set_xscale("log", base=2)
    if len(ok):
        ax.set_yscale("log")
    ax.set_xlabel("size (elements)")
    ax.set_ylabel("achieved GB/s (bytes the op must move / median time)")
    ax.set_title(plot_text(f"{report.workload}, {report.dtype}, {report.device}"))
    ax.grid(True, which="both", alpha=0.3)
    if len(ok) or report.copy_gbps:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)
