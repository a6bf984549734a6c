"""Rendering of the Nsight Compute per-kernel summary: terminal (rich, laid out for the width),
Markdown, JSON; and the nsys x ncu per-kernel table."""

from __future__ import annotations

import math
import re
from typing import Any

from rich.console import Console
from rich.text import Text

from nsighttk import escape
from nsighttk.analysis.ncu_summary import NcuSummary
from nsighttk.report import kernel_label
from nsighttk.report.console import layout_width, make_console
from nsighttk.report.jsonout import frame_records
from nsighttk.report.layout import Col, cut, heading, pairs, para, table
from nsighttk.units import fmt_bytes, fmt_kib, fmt_ns

#: lines of a full kernel name the terminal view shows before cutting it (all of it: --json)
NAME_LINES = 3


def _nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _pct(v: Any) -> str:
    return "-" if _nan(v) else f"{v:.2f}%"


def _num(v: Any, digits: int = 2) -> str:
    return "-" if _nan(v) else f"{v:,.{digits}f}"


def ncu_prose(s: Any) -> str:
    """ncu's rule text with its cross-reference markup (``@section:Id:Title@``) read as the title."""
    return re.sub(r"@(?:section|url|table):[^@:]*:([^@]*)@", r"\1", str(s))


def _dims(r: Any, kind: str) -> str:
    vals = [getattr(r, f"{kind}_{a}") for a in "xyz"]
    if any(_nan(v) for v in vals):
        return "-"
    return "(" + ", ".join(str(int(v)) for v in vals) + ")"


def kernel_lines(s: NcuSummary) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """Per kernel: (id, full name, (label, value) pairs), shared by the terminal and Markdown views.
    Shared memory and the like are capacities, in KiB as CUDA states them; DRAM traffic is in SI
    bytes, as bandwidth is."""
    out = []
    for r in s.kernels.itertuples(index=False):
        smem = r.static_smem_bytes + r.dynamic_smem_bytes if not _nan(r.static_smem_bytes) else math.nan
        rows = [
            ("NVTX range", r.nvtx_range or "-"),
            ("decoded name", r.decoded),
            ("launch", f"grid {_dims(r, 'grid')} x block {_dims(r, 'block')}, {_num(r.registers_per_thread, 0)} "
                       f"registers/thread, {fmt_kib(smem)} shared memory/block"),
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
            ("verdict", str(r.verdict)),
        ]
        out.append((str(r.kernel_id), str(r.kernel), [(k, str(v)) for k, v in rows]))
    return out


def render(s: NcuSummary, console: Console | None = None, top_rules: int = 8) -> None:
    console = console or make_console()
    w = layout_width(console)
    para(console, f" {s.meta.get('source', '')} ({s.meta.get('format', '')}): {len(s.kernels)} kernel(s)", "", "  ",
         lead=Text("ncu capture", style="bold"))
    for kid, name, items in kernel_lines(s):
        console.print()
        heading(console, f"[{kid}] {kernel_label.short_name(name)}")
        avail = None if w is None else w - 20  # what pairs() leaves for a value
        shown = name if avail is None or len(name) <= NAME_LINES * avail else \
            cut(name, NAME_LINES * avail - 30) + " (all of it: --json)"
        pairs(console, [("name", shown), *items])
    rules = s.rules[s.rules["type"].isin(["OPT", "WRN", "ERR"])]
    if len(rules):
        console.print()
        heading(console, "ncu's findings by estimated speedup")
        for r in rules.head(top_rules).itertuples(index=False):
            sp = "" if _nan(r.speedup_pct) else f", est. speedup {r.speedup_pct:.1f}% ({r.speedup_type})"
            para(console, f" (kernel {r.kernel_id}{sp})", "  ", "    ", lead=Text("- ") + escape.text(r.rule, "bold"))
            para(console, ncu_prose(r.description), "    ", "    ")
        if len(rules) > top_rules:
            console.print(Text(f"  ... {len(rules) - top_rules} more (all of them: --json or --markdown)"))


def markdown(s: NcuSummary, title: str) -> str:
    md, code = escape.md_text, escape.md_code
    lines = [f"# {md(title)}", "", f"- capture: {code(s.meta.get('source', ''))} ({md(s.meta.get('format', ''))})", ""]
    for kid, name, items in kernel_lines(s):
        lines += [f"## [{md(kid)}] {md(kernel_label.short_name(name))}", "", f"- **name**: {code(name)}"]
        lines += [f"- **{md(label)}**: {md(value)}" for label, value in items] + [""]
    if len(s.rules):
        lines += ["## ncu's findings by estimated speedup", "", "| kernel | speedup | rule | finding |",
                  "|---|---|---|---|"]
        for r in s.rules.itertuples(index=False):
            sp = "" if _nan(r.speedup_pct) else f"{r.speedup_pct:.1f}% ({r.speedup_type})"
            lines.append(f"| {md(r.kernel_id)} | {md(sp)} | {md(r.rule)} | {md(ncu_prose(r.description))} |")
    return "\n".join(lines) + "\n"


def as_dict(s: NcuSummary) -> dict[str, Any]:
    return {"meta": s.meta, "kernels": frame_records(s.kernels), "rules": frame_records(s.rules), "notes": s.notes}


def render_join(df: Any, console: Console | None = None) -> None:
    """The nsys x ncu per-kernel table: columns give way from ncu's run count to achieved occupancy;
    GPU time share, the verdict and the kernel stay."""
    console = console or make_console()
    names = kernel_label.cells([str(k) for k in df["kernel"]])
    rows = [[_num(r.nsys_share_pct, 1), f"{r.nsys_instances:,}", f"{r.ncu_profiled:,}",
             _pct(r.achieved_occupancy_pct), _pct(r.theoretical_occupancy_pct),
             r.limiters if isinstance(r.limiters, str) else "-", _num(r.dram_bytes_per_s / 1e9),
             _pct(r.dram_pct_of_peak), str(r.verdict), n]
            for r, n in zip(df.itertuples(index=False), names, strict=True)]
    table(console, [Col("GPU %"), Col("Count", drop=7), Col("ncu runs", drop=8), Col("Ach. occ.", drop=2),
                    Col("Theo. occ.", drop=5), Col("Limiter", "left", wrap=3), Col("DRAM GB/s", drop=4),
                    Col("% peak", drop=6), Col("Verdict", "left", wrap=3),
                    Col("Kernel", "left", flex=True, min_width=30)],
          rows, "Kernels: GPU time share (nsys) with occupancy, DRAM and bottleneck (ncu)")
