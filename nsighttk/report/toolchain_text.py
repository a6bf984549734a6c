"""Terminal rendering of what the toolchain module finds: ``doctor`` and ``arch``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from nsighttk import escape
from nsighttk.report.layout import Col, Flex, middle, para, table
from nsighttk.units import fmt_kib


def render_doctor(d: dict[str, Any], console: Console) -> None:
    rows: list[list[Any]] = []
    for name, info in d["tools"].items():
        where: Any = middle(info["path"]) if info["path"] else \
            Text("missing", style="red") + escape.text(f" {info.get('problem') or ''}".rstrip())
        rows.append([name, info["version"] or "-", where, info["source"] or "-"])
    for name, info in d["python_modules"].items():
        rows.append([f"python: {name}", info["version"] or "-",
                     middle(info["where"]) if info["where"] else Text("missing", style="red"),
                     "import" if info["found"] else "-"])
    table(console, [Col("tool", "left"), Col("version", "left", max_width=24),
                    Col("path", "left", flex=True, min_width=40), Col("found via", "left", drop=1, max_width=30)],
          rows, "Tools")
    imp = d["nsys_importer"]
    if imp:
        state = {True: Text("OK", style="green"), False: Text("BROKEN", style="red"), None: Text("unknown")}[imp["ok"]]
        para(console, f" {imp['importer'] or ''}", "", "  ", lead=Text("nsys report importer: ") + state)
        if imp["ok"] is False:
            para(console, f"missing: {', '.join(imp['missing'])} -> {imp['hint']}", "  ", "    ")
    if d["gpus"]:
        for g in d["gpus"]:
            bw = f", {g['memory_bandwidth_bytes_per_s'] / 1e9:,.0f} GB/s" if g["memory_bandwidth_bytes_per_s"] else ""
            sms = f", {g['sm_count']} SMs" if g["sm_count"] else ""
            para(console, f"GPU {g['index']}: {g['name']} (compute capability {g['compute_capability']}, "
                          f"{g['arch']}{sms}{bw})", "", "  ")
    else:
        para(console, "GPU: none visible (analysis of existing captures works; profiling needs a GPU)", "", "  ")
    para(console, f"nvcc targets: {' '.join(d['nvcc_archs']) or '-'}", "", "  ")
    para(console, f"default --arch: {d['default_arch']} ({d['default_arch_reason']})", "", "  ")
    if d["disabled"]:
        console.print(Text("Missing pieces disable:", style="bold"))
        for name, what in d["disabled"].items():
            para(console, f"{name}: {what}", "  ", "    ")


_ARCH_COLS = ("architecture", "model", "compute_capability", "arch", "segment", "min_cuda", "cuda13")


def render_arch_table(rows: list[dict[str, str]], console: Console) -> None:
    cols = [Col("architecture", "left"), Col("model", "left", flex=True, min_width=16),
            Col("compute capability", "left"), Col("arch", "left"), Col("segment", "left", drop=3),
            Col("min cuda", "left", drop=2), Col("cuda13", "left", drop=1)]
    table(console, cols, [[Flex(str(r[c])) if c == "model" else str(r[c]) for c in _ARCH_COLS] for r in rows])


def render_arch(query: str, info: dict[str, Any], console: Console) -> None:
    para(console, f"{query}: {info['architecture']}, compute capability {info['compute_capability']}, "
                  f"build with {info['nvcc_flag']}  ({info['gencode']})", "", "  ")
    para(console, f"models: {', '.join(info['models'])}", "", "  ")
    if not info["cuda13_supported"]:
        para(console, "note: CUDA 13's nvcc cannot build for this arch (use CUDA 12 or older)", "", "  ")
    lim = info["limits"]
    if lim:
        para(console, f"per SM: {lim['max_threads_per_sm']} threads ({lim['max_warps_per_sm']} warps), "
                      f"{lim['max_blocks_per_sm']} blocks, {lim['registers_per_sm']} registers "
                      f"(allocated per warp in units of {lim['register_alloc_unit']}), "
                      f"{fmt_kib(lim['max_smem_per_sm_bytes'])} shared memory "
                      f"({fmt_kib(lim['max_smem_per_block_bytes'])} per block opt-in, "
                      f"{lim['reserved_smem_per_block_bytes']} B reserved per block)"
                      + ("" if lim["verified"] else " [from the CUDA guide; not yet checked on a device]"), "", "  ")
