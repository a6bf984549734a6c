"""Rendering of the Nsight Compute per-kernel summary: terminal (rich), Markdown, JSON."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from nsighttk.analysis.ncu_summary import NcuSummary
from nsighttk.report.jsonout import frame_records
from nsighttk.units import fmt_bytes, fmt_ns, shorten


def _pct(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}%"


def _num(v: Any, digits: int = 2) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.{digits}f}"


def _dims(r: Any, kind: str) -> str:
    vals = [getattr(r, f"{kind}_{a}") for a in "xyz"]
    if any(isinstance(v, float) and math.isnan(v) for v in vals):
        return "-"
    return "(" + ", ".join(str(int(v)) for v in vals) + ")"


def kernel_lines(s: NcuSummary) -> list[tuple[str, list[tuple[str, str]]]]:
    """Per kernel: a title and (label, value) pairs, shared by the terminal and Markdown views."""
    out = []
    for r in s.kernels.itertuples(index=False):
        smem = r.static_smem_bytes + r.dynamic_smem_bytes if not math.isnan(r.static_smem_bytes) else math.nan
        pairs = [
            ("NVTX range", r.nvtx_range or "-"),
            ("decoded name", r.decoded),
            ("launch", f"grid {_dims(r, 'grid')} x block {_dims(r, 'block')}, {_num(r.registers_per_thread, 0)} "
                       f"registers/thread, {fmt_bytes(smem)} shared memory/block"),
            ("duration", fmt_ns(r.duration_ns)),
            ("DRAM", f"{fmt_bytes(r.dram_read_bytes)} read, {fmt_bytes(r.dram_write_bytes)} written, "
                     f"{_num(r.dram_bytes_per_s / 1e9)} GB/s = {_pct(r.dram_pct_of_peak)} of peak"),
            ("speed of light", f"memory {_pct(r.sol_memory_pct)}, compute (SM) {_pct(r.sol_compute_pct)}"),
            ("occupancy", f"achieved {_pct(r.achieved_occupancy_pct)} of theoretical "
                          f"{_pct(r.theoretical_occupancy_pct)}, limited by {r.limiters or '-'} "
                          f"(block limits: warps {_num(r.limit_warps, 0)}, registers {_num(r.limit_registers, 0)}, "
                          f"shared memory {_num(r.limit_shared_mem, 0)}, SM {_num(r.limit_blocks, 0)}); "
                          f"our calculator: {_pct(r.calc_theoretical_pct)}, {r.calc_limiters or '-'}"),
            ("waves per SM", _num(r.waves_per_sm)),
            ("cache hit rates", f"L1/TEX {_pct(r.l1_hit_pct)}, L2 {_pct(r.l2_hit_pct)}"),
            ("verdict", r.verdict),
        ]
        out.append((f"[{r.kernel_id}] {shorten(r.kernel, 110)}", pairs))
    return out


def render(s: NcuSummary, console: Console | None = None, top_rules: int = 8) -> None:
    console = console or Console(highlight=False)
    console.print(f"[bold]ncu capture[/bold] {s.meta.get('source', '')} ({s.meta.get('format', '')}): "
                  f"{len(s.kernels)} kernel(s)")
    for title, pairs in kernel_lines(s):
        console.print()
        console.print(f"[bold]{title}[/bold]", markup=True)
        for label, value in pairs:
            console.print(f"  {label:>16s}: {value}", markup=False)
    rules = s.rules[s.rules["type"].isin(["OPT", "WRN", "ERR"])]
    if len(rules):
        console.print()
        t = Table(title="ncu's findings by estimated speedup", title_justify="left", title_style="bold",
                  header_style="bold")
        for c, j in (("kernel", "right"), ("speedup", "right"), ("rule", "left"), ("finding", "left")):
            t.add_column(c, justify=j)  # type: ignore[arg-type]
        for r in rules.head(top_rules).itertuples(index=False):
            sp = "-" if math.isnan(r.speedup_pct) else f"{r.speedup_pct:.1f}% ({r.speedup_type})"
            t.add_row(str(r.kernel_id), sp, str(r.rule), shorten(r.description, 120))
        console.print(t)


def markdown(s: NcuSummary, title: str) -> str:
    lines = [f"# {title}", "", f"- capture: `{s.meta.get('source', '')}` ({s.meta.get('format', '')})", ""]
    for head, pairs in kernel_lines(s):
        lines += [f"## {head}", ""] + [f"- **{label}**: {value}" for label, value in pairs] + [""]
    if len(s.rules):
        lines += ["## ncu's findings by estimated speedup", "", "| kernel | speedup | rule | finding |",
                  "|---|---|---|---|"]
        for r in s.rules.itertuples(index=False):
            sp = "" if math.isnan(r.speedup_pct) else f"{r.speedup_pct:.1f}% ({r.speedup_type})"
            lines.append(f"| {r.kernel_id} | {sp} | {r.rule} | {str(r.description).replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def as_dict(s: NcuSummary) -> dict[str, Any]:
    return {"meta": s.meta, "kernels": frame_records(s.kernels), "rules": frame_records(s.rules), "notes": s.notes}


def render_join(df: Any, console: Console | None = None) -> None:
    """The nsys x ncu per-kernel table."""
    console = console or Console(highlight=False)
    t = Table(title="Kernels: GPU time share (nsys) with occupancy, DRAM and bottleneck (ncu)", title_justify="left",
              title_style="bold", header_style="bold")
    for c, j in (("GPU time %", "right"), ("Instances", "right"), ("ncu runs", "right"), ("Achieved occ.", "right"),
                 ("Theo. occ.", "right"), ("Limiter", "left"), ("DRAM GB/s", "right"), ("% peak", "right"),
                 ("Verdict", "left"), ("Kernel", "left")):
        if c == "Kernel":
            t.add_column(c, justify=j, no_wrap=True, overflow="ellipsis", max_width=40)  # type: ignore[arg-type]
        else:
            t.add_column(c, justify=j, min_width=min(len(c), 9))  # type: ignore[arg-type]
    for r in df.itertuples(index=False):
        t.add_row(_num(r.nsys_share_pct, 1), f"{r.nsys_instances:,}", f"{r.ncu_profiled:,}",
                  _pct(r.achieved_occupancy_pct), _pct(r.theoretical_occupancy_pct),
                  r.limiters if isinstance(r.limiters, str) else "-", _num(r.dram_bytes_per_s / 1e9),
                  _pct(r.dram_pct_of_peak), r.verdict, shorten(r.kernel, 40))
    console.print(t)
