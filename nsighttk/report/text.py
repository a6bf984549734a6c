"""Terminal rendering of an :class:`~nsighttk.analysis.overview.Overview` (``nsighttk analyze``),
laid out for the console's width (:mod:`nsighttk.report.layout`)."""

from __future__ import annotations

import functools
from typing import Any

import pandas as pd
from rich.console import Console
from rich.text import Text

from nsighttk import escape
from nsighttk.analysis.iterations.find import scope_label
from nsighttk.analysis.kernels.names import decode
from nsighttk.analysis.overview import Overview
from nsighttk.report import kernel_label
from nsighttk.report.console import layout_width, make_console
from nsighttk.report.layout import Col, Flex, emit, middle, para, path_lines, table
from nsighttk.units import fmt_bytes, fmt_count, fmt_ns, fmt_num, fmt_pct

TOP = 15


def source_line(meta: dict[str, Any]) -> tuple[str, str]:
    """("nsys capture", "nsys 2025.3.2.0") or ("torch.profiler trace", "Kineto trace schema 1")."""
    tool = str(meta.get("tool") or "nsys")
    version = meta.get("tool_version")
    if tool.startswith("torch.profiler"):
        return "torch.profiler trace", "Kineto trace" + (f" schema {version}" if version else "")
    return f"{tool} capture", f"{tool} {version or '?'}"


def _more(df: pd.DataFrame, top: int) -> str | None:
    return f"... {len(df) - top} more rows (all of them: --json or --markdown)" if len(df) > top else None


def _name_cells(names: Any) -> list[Flex]:
    return kernel_label.cells([str(n) for n in names])


def _range_cells(names: Any) -> list[Flex]:
    return [middle(n) for n in names]


def what_it_is(name: str) -> str:
    k = decode(str(name))
    return f"{k.library or k.family}, {k.category}"


def _na(v: object) -> object:
    return None if v is pd.NA else v


def _iterations(ov: Overview, console: Console, top: int) -> None:
    it = ov.iterations
    if it is None:
        return
    s = it.steady
    para(console, f"Iterations: {len(it.table)}, from {it.source}", "", "  ", style="bold")
    if s:
        d, b = s["duration_ns"], s["gpu_busy_pct"]
        warm = f"; warm-up: {', '.join(s['warmup'])}" if s["warmup"] else "; no warm-up iteration"
        cv = f", CV {d['cv']:.0%}" if d["cv"] is not None else ""
        busy = f", GPU busy {b['median']:.1f}%" if b["median"] is not None else ""
        para(console, f"{scope_label(it)}: {fmt_ns(d['median'])} median ({fmt_ns(d['min'])} to {fmt_ns(d['max'])}"
                      f"{cv}){busy}{warm}", "  ", "    ")
    shown = it.table.head(top)
    rows = [[middle(r.name), fmt_ns(r.duration_ns), fmt_ns(_na(r.gpu_busy_ns)), fmt_num(r.gpu_busy_pct),
             fmt_count(r.kernels), fmt_ns(r.kernel_ns), fmt_ns(r.memcpy_ns), fmt_ns(r.sync_ns),
             fmt_ns(r.launch_overhead_ns), "warm-up" if r.warmup else r.outlier] for r in shown.itertuples(index=False)]
    table(console, [Col("Iteration", "left", flex=True, min_width=16), Col("Wall"), Col("GPU busy"),
                    Col("Busy %", drop=2), Col("Kernels", drop=5), Col("Kernel time", drop=3), Col("Copies", drop=6),
                    Col("Sync", drop=4), Col("Launch->GPU", drop=7), Col("", "left", drop=1)], rows)
    if _more(it.table, top):
        console.print(Text("  " + str(_more(it.table, top))))
    console.print()


def steady_line(ov: Overview) -> str | None:
    """The headline's first fact where the capture has a steady state: the iteration time, then
    what came before and after it (:func:`nsighttk.analysis.iterations.phases.summary`)."""
    it = ov.iterations
    if it is None or not it.steady:
        return None
    s = it.steady
    annotated = it.signal in ("NVTX ranges", "torch.profiler steps", "--iteration")
    found = "" if annotated else f", found from {it.source}"
    line = f"Steady state: {fmt_ns(s['duration_ns']['median'])} per iteration (median of {s['iterations']}{found})"
    return line + (f"; {ov.phases['summary']}" if ov.phases.get("summary") else "")



def render(ov: Overview, console: Console | None = None, top: int = TOP) -> None:
    console = console or make_console()
    m, h = ov.meta, ov.headline
    kind, version = source_line(m)
    emit(console, Text(kind, style="bold"))
    if m.get("source"):  # on its own line, broken only at "/": the headline is the same at any path
        for ln in path_lines(m["source"], layout_width(console), "  "):
            emit(console, Text(ln))
    para(console, " | ".join([version] + ([h["gpu"]] if h.get("gpu") else [])), "  ")
    if m.get("command"):
        para(console, "command: " + " ".join(str(a) for a in m["command"]), "  ", "    ")
    steady = steady_line(ov)
    if steady:
        para(console, steady, "  ", "    ", style="bold")
    para(console, f"GPU busy {fmt_ns(h['gpu_busy_ns'])} over a {fmt_ns(h['gpu_span_ns'])} span; "
                  f"{fmt_count(h['kernels'])} kernels ({fmt_count(h['distinct_kernels'])} distinct, "
                  f"{fmt_ns(h['kernel_time_ns'])}); {fmt_count(h['memcpy_count'])} memcpys "
                  f"({fmt_bytes(h['memcpy_bytes'])}, {fmt_ns(h['memcpy_time_ns'])}); {fmt_count(h['memset_count'])} "
                  f"memsets; {fmt_count(h['api_calls'])} CUDA API calls; {fmt_count(h['nvtx_ranges'])} NVTX ranges",
         "  ", "    ")
    for note in ov.notes:
        para(console, note, "  ", "        ", lead=Text("note: ", style="yellow"))
    console.print()
    _iterations(ov, console, top)
    if ov.collectives is not None:
        console.print(Text("Communication (NCCL/NVSHMEM kernels) and computation", style="bold"))
        for line in ov.collectives.summary():
            para(console, line, "  ", "    ")
        console.print()
    if ov.findings:
        console.print(Text("What to try next", style="bold"))
        for f in ov.findings:
            para(console, f" {f.evidence}.", "  ", "    ", lead=Text("- ") + escape.text(f.title + ":", "bold"))
            para(console, f"Try: {f.suggestion}.", "    ", "    ")
        console.print()
    _kernels(ov, console, top)
    _memory(ov, console)
    _gpu_sum(ov, console, top)
    _api(ov, console)
    _nvtx(ov, console, top)
    _ops(ov, console, top)


def _kernels(ov: Overview, console: Console, top: int) -> None:
    k = ov.tables["kernels"]
    if not len(k):
        return
    shown = k.head(top)
    occ = shown["Theoretical Occupancy (%)"] if "Theoretical Occupancy (%)" in shown else [float("nan")] * len(shown)
    names = _name_cells(shown["Name"])
    rows = [[fmt_num(r["Time (%)"]), fmt_ns(r["Total Time (ns)"]), fmt_count(r["Instances"]), fmt_ns(r["Avg (ns)"]),
             fmt_ns(r["Med (ns)"]), fmt_pct(o, 0), n, what_it_is(r["Name"])]
            for (_, r), o, n in zip(shown.iterrows(), occ, names, strict=True)]
    table(console, [Col("Time %"), Col("Total"), Col("Count", drop=3), Col("Avg", drop=5), Col("Med", drop=6),
                    Col("Occ.", drop=4), Col("Kernel", "left", flex=True, min_width=40),
                    Col("What it is", "left", drop=7, max_width=36)], rows,
          "CUDA kernels (cuda_gpu_kern_sum; Occ. = theoretical occupancy from nsighttk's calculator)")
    if _more(k, top):
        console.print(Text("  " + str(_more(k, top))))
    console.print()


def _memory(ov: Overview, console: Console) -> None:
    mem = ov.tables["memory"]
    if not len(mem):
        return
    rows = [[Flex(str(r.operation), functools.partial(kernel_label.short_name, str(r.operation))),
             fmt_count(r.count), fmt_bytes(r.total_bytes), fmt_ns(r.total_time_ns),
             fmt_num(r.gbps, 2), fmt_num(r.best_gbps, 2), fmt_pct(r.dram_pct_of_peak)]
            for r in mem.itertuples(index=False)]
    table(console, [Col("Operation", "left", flex=True, min_width=20), Col("Count", drop=1), Col("Total"),
                    Col("Time"), Col("GB/s"), Col("Best GB/s", drop=3), Col("% DRAM peak", drop=2)], rows,
          "Memory operations by direction (achieved bandwidth)")
    para(console, "GB/s = bytes / GPU time of the copies; % DRAM peak (device-to-device only) counts the bytes read "
                  "and written against the export's memory bandwidth.", "  ", "  ")
    console.print()


def _gpu_sum(ov: Overview, console: Console, top: int) -> None:
    g = ov.tables["gpu_sum"]
    if not len(g):
        return
    shown = g.head(top)
    names = _name_cells(shown["Operation"])
    rows = [[fmt_num(r["Time (%)"]), fmt_ns(r["Total Time (ns)"]), fmt_count(r["Instances"]), fmt_ns(r["Avg (ns)"]),
             str(r["Category"]), n] for (_, r), n in zip(shown.iterrows(), names, strict=True)]
    table(console, [Col("Time %"), Col("Total"), Col("Count", drop=3), Col("Avg", drop=2),
                    Col("Category", "left", drop=4), Col("Operation", "left", flex=True, min_width=40)], rows,
          "GPU summary: kernels and memory operations (cuda_gpu_sum)")
    console.print()


def _api(ov: Overview, console: Console) -> None:
    a = ov.tables["api"]
    if not len(a):
        return
    rows = [[fmt_num(r["Time (%)"]), fmt_ns(r["Total Time (ns)"]), fmt_count(r["Num Calls"]), fmt_ns(r["Avg (ns)"]),
             fmt_ns(r["Max (ns)"]), Flex(str(r["Name"]))] for _, r in a.head(10).iterrows()]
    table(console, [Col("Time %"), Col("Total"), Col("Calls"), Col("Avg", drop=2), Col("Max", drop=1),
                    Col("Function", "left", flex=True, min_width=20)], rows, "CUDA API calls (cuda_api_sum)")
    console.print()


def _nvtx(ov: Overview, console: Console, top: int) -> None:
    n, ng = ov.tables["nvtx"], ov.tables["nvtx_gpu"]
    if not len(n):
        return
    proj = ng.set_index(["Range", "Style"]) if len(ng) else None
    shown = n.head(top)
    rows: list[list[Any]] = []
    for (_, r), cell in zip(shown.iterrows(), _range_cells(shown["Range"]), strict=True):
        key = (r["Range"], r["Style"])
        gp = proj.loc[key] if proj is not None and key in proj.index else None
        rows.append([cell, fmt_count(r["Instances"]), fmt_ns(r["Total Time (ns)"]),
                     fmt_ns(gp["Total Proj Time (ns)"]) if gp is not None else "-",
                     fmt_count(gp["Total GPU Ops"]) if gp is not None else "0",
                     fmt_num(gp["Avg Range Lvl"]) if gp is not None else "-"])
    table(console, [Col("Range", "left", flex=True, min_width=24), Col("Count", drop=2), Col("CPU total"),
                    Col("GPU proj total"), Col("GPU ops", drop=1), Col("Level", drop=3)], rows,
          "NVTX ranges: CPU time and GPU projection (nvtx_sum, nvtx_gpu_proj_sum)")
    para(console, "GPU proj = from the first GPU start to the last GPU end of the work launched inside the range.",
         "  ", "  ")
    console.print()


def _ops(ov: Overview, console: Console, top: int) -> None:
    ops = ov.tables.get("autograd_ops")
    if ops is None or not len(ops):
        return
    shown = ops.head(top)
    rows = [[c, fmt_count(r.calls), fmt_ns(r.cpu_total_ns), fmt_ns(r.gpu_proj_total_ns), fmt_count(r.gpu_ops)]
            for r, c in zip(shown.itertuples(index=False), _range_cells(shown["op"]), strict=True)]
    table(console, [Col("Op", "left", flex=True, min_width=24), Col("Calls"), Col("CPU total", drop=2),
                    Col("GPU proj total"), Col("GPU ops", drop=1)], rows,
          "PyTorch ops (autograd NVTX ranges, all calls of an op together)")
    console.print()
