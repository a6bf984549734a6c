"""Terminal rendering of an :class:`~nsighttk.analysis.overview.Overview` with rich tables."""

from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.table import Table

from nsighttk.analysis.overview import Overview
from nsighttk.units import fmt_bytes, fmt_ns, fmt_num, shorten

TOP = 15


def _table(title: str, columns: list[tuple[str, str]]) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", header_style="bold", pad_edge=False)
    for name, justify in columns:
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    return t


def _more(df: pd.DataFrame, top: int) -> str | None:
    return f"... {len(df) - top} more rows (full table in summary.md / summary.json)" if len(df) > top else None


def render(ov: Overview, console: Console | None = None, top: int = TOP) -> None:
    console = console or Console(highlight=False)
    m, h = ov.meta, ov.headline
    console.print(f"[bold]nsys capture[/bold] {m.get('source', '')}")
    bits = [f"nsys {m.get('tool_version') or '?'}"]
    if h.get("gpu"):
        bits.append(h["gpu"])
    if m.get("command"):
        bits.append("command: " + " ".join(m["command"]))
    console.print("  " + " | ".join(bits))
    console.print(
        f"  GPU busy {fmt_ns(h['gpu_busy_ns'])} over a {fmt_ns(h['gpu_span_ns'])} span; "
        f"{h['kernels']:,} kernels ({h['distinct_kernels']} distinct, {fmt_ns(h['kernel_time_ns'])}); "
        f"{h['memcpy_count']:,} memcpys ({fmt_bytes(h['memcpy_bytes'])}, {fmt_ns(h['memcpy_time_ns'])}); "
        f"{h['memset_count']:,} memsets; {h['api_calls']:,} CUDA API calls; {h['nvtx_ranges']:,} NVTX ranges")
    for note in ov.notes:
        console.print(f"  [yellow]note:[/yellow] {note}")
    console.print()
    if ov.findings:
        console.print("[bold]What to try next[/bold]")
        for f in ov.findings:
            console.print(f"  [bold]- {f.title}[/bold]: {f.evidence}.", markup=True, highlight=False)
            console.print(f"    Try: {f.suggestion}.")
        console.print()

    k = ov.tables["kernels"]
    if len(k):
        t = _table("CUDA kernels (cuda_gpu_kern_sum; theoretical occupancy: nsighttk's calculator)",
                   [("Time %", "right"), ("Total", "right"), ("Instances", "right"), ("Avg", "right"),
                    ("Med", "right"), ("Theo. occ.", "right"), ("Kernel", "left"), ("What it is (decoded)", "left")])
        occ = k["Theoretical Occupancy (%)"] if "Theoretical Occupancy (%)" in k else [float("nan")] * len(k)
        dec = k["Decoded"] if "Decoded" in k else [""] * len(k)
        for r, o, d in zip(k.head(top).itertuples(index=False), occ, dec, strict=False):
            t.add_row(fmt_num(r[0]), fmt_ns(r[1]), f"{r[2]:,}", fmt_ns(r[3]), fmt_ns(r[4]),
                      "-" if pd.isna(o) else f"{o:.1f}%", shorten(r[8], 60), shorten(d, 60))
        console.print(t)
        if _more(k, top):
            console.print("  " + str(_more(k, top)))
        console.print()

    mem = ov.tables["memory"]
    if len(mem):
        t = _table("Memory operations by direction (achieved bandwidth)",
                   [("Operation", "left"), ("Count", "right"), ("Total", "right"), ("Time", "right"),
                    ("GB/s", "right"), ("Best GB/s", "right"), ("% DRAM peak", "right")])
        for r in mem.itertuples(index=False):
            t.add_row(str(r.operation), f"{r.count:,}", fmt_bytes(r.total_bytes), fmt_ns(r.total_time_ns),
                      fmt_num(r.gbps, 2), fmt_num(r.best_gbps, 2), fmt_num(r.dram_pct_of_peak, 1))
        console.print(t)
        console.print("  GB/s = bytes / GPU time of the copies; % DRAM peak (device-to-device only) counts the bytes "
                      "read and written against the export's memory bandwidth.")
        console.print()

    g = ov.tables["gpu_sum"]
    if len(g):
        t = _table("GPU summary: kernels and memory operations (cuda_gpu_sum)",
                   [("Time %", "right"), ("Total", "right"), ("Instances", "right"), ("Avg", "right"),
                    ("Category", "left"), ("Operation", "left")])
        for r in g.head(top).itertuples(index=False):
            t.add_row(fmt_num(r[0]), fmt_ns(r[1]), f"{r[2]:,}", fmt_ns(r[3]), r[8], shorten(r[9]))
        console.print(t)
        console.print()

    a = ov.tables["api"]
    if len(a):
        t = _table("CUDA API calls (cuda_api_sum)", [("Time %", "right"), ("Total", "right"), ("Calls", "right"),
                                                     ("Avg", "right"), ("Max", "right"), ("Function", "left")])
        for r in a.head(10).itertuples(index=False):
            t.add_row(fmt_num(r[0]), fmt_ns(r[1]), f"{r[2]:,}", fmt_ns(r[3]), fmt_ns(r[6]), str(r[8]))
        console.print(t)
        console.print()

    n, ng = ov.tables["nvtx"], ov.tables["nvtx_gpu"]
    if len(n):
        proj = ng.set_index(["Range", "Style"]) if len(ng) else None
        t = _table("NVTX ranges: CPU time and GPU projection (nvtx_sum, nvtx_gpu_proj_sum)",
                   [("Range", "left"), ("Instances", "right"), ("CPU total", "right"), ("GPU proj total", "right"),
                    ("GPU ops", "right"), ("Level", "right")])
        for r in n.head(top).itertuples(index=False):
            rng, style = r[9], r[8]
            gp = proj.loc[(rng, style)] if proj is not None and (rng, style) in proj.index else None
            t.add_row(rng, f"{r[2]:,}", fmt_ns(r[1]),
                      fmt_ns(gp["Total Proj Time (ns)"]) if gp is not None else "-",
                      f"{int(gp['Total GPU Ops']):,}" if gp is not None else "0",
                      fmt_num(gp["Avg Range Lvl"]) if gp is not None else "-")
        console.print(t)
        console.print("  GPU proj = from the first GPU start to the last GPU end of the work launched "
                      "inside the range.")
        console.print()
    ops = ov.tables.get("autograd_ops")
    if ops is not None and len(ops):
        t = _table("PyTorch ops (autograd NVTX ranges, all calls of an op together)",
                   [("Op", "left"), ("Calls", "right"), ("CPU total", "right"), ("GPU proj total", "right"),
                    ("GPU ops", "right")])
        for r in ops.head(top).itertuples(index=False):
            t.add_row(r.op, f"{r.calls:,}", fmt_ns(r.cpu_total_ns), fmt_ns(r.gpu_proj_total_ns), f"{r.gpu_ops:,}")
        console.print(t)
        console.print()
