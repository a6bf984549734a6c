"""Terminal rendering of what the toolchain module finds: ``doctor`` and ``arch``."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def render_doctor(d: dict[str, Any], console: Console) -> None:
    t = Table(title="Tools", title_justify="left", header_style="bold")
    for c in ("tool", "version", "path", "found via"):
        t.add_column(c)
    for name, info in d["tools"].items():
        t.add_row(name, info["version"] or "-", info["path"] or f"[red]missing[/red] {info.get('problem') or ''}",
                  info["source"] or "-")
    for name, info in d["python_modules"].items():
        t.add_row(f"python: {name}", info["version"] or "-",
                  info["where"] or "[red]missing[/red]", "import" if info["found"] else "-")
    console.print(t)
    imp = d["nsys_importer"]
    if imp:
        state = {True: "[green]OK[/green]", False: "[red]BROKEN[/red]", None: "unknown"}[imp["ok"]]
        console.print(f"nsys report importer: {state} {imp['importer'] or ''}")
        if imp["ok"] is False:
            console.print(f"  missing: {', '.join(imp['missing'])} -> {imp['hint']}")
    if d["gpus"]:
        for g in d["gpus"]:
            bw = f", {g['memory_bandwidth_bytes_per_s'] / 1e9:,.0f} GB/s" if g["memory_bandwidth_bytes_per_s"] else ""
            sms = f", {g['sm_count']} SMs" if g["sm_count"] else ""
            console.print(f"GPU {g['index']}: {g['name']} (compute capability {g['compute_capability']}, "
                      f"{g['arch']}{sms}{bw})")
    else:
        console.print("GPU: none visible (analysis of existing captures works; profiling needs a GPU)")
    console.print(f"nvcc targets: {' '.join(d['nvcc_archs']) or '-'}")
    console.print(f"default --arch: {d['default_arch']} ({d['default_arch_reason']})")
    if d["disabled"]:
        console.print("[bold]Missing pieces disable:[/bold]")
        for name, what in d["disabled"].items():
            console.print(f"  {name}: {what}")


def render_arch_table(rows: list[dict[str, str]], console: Console) -> None:
    t = Table(header_style="bold")
    for c in ("architecture", "model", "compute_capability", "arch", "segment", "min_cuda", "cuda13"):
        t.add_column(c.replace("_", " "))
    for r in rows:
        t.add_row(*(r[c] for c in ("architecture", "model", "compute_capability", "arch", "segment", "min_cuda",
                                   "cuda13")))
    console.print(t)


def render_arch(query: str, info: dict[str, Any], console: Console) -> None:
    console.print(f"{query}: {info['architecture']}, compute capability {info['compute_capability']}, "
              f"build with {info['nvcc_flag']}  ({info['gencode']})")
    console.print(f"models: {', '.join(info['models'])}")
    if not info["cuda13_supported"]:
        console.print("note: CUDA 13's nvcc cannot build for this arch (use CUDA 12 or older)")
    lim = info["limits"]
    if lim:
        console.print(f"per SM: {lim['max_threads_per_sm']} threads ({lim['max_warps_per_sm']} warps), "
                  f"{lim['max_blocks_per_sm']} blocks, {lim['registers_per_sm']} registers "
                  f"(allocated per warp in units of {lim['register_alloc_unit']}), "
                  f"{lim['max_smem_per_sm_bytes'] // 1024} KiB shared memory "
                  f"({lim['max_smem_per_block_bytes'] // 1024} KiB per block opt-in, "
                  f"{lim['reserved_smem_per_block_bytes']} B reserved per block)"
                  + ("" if lim["verified"] else "  [from the CUDA guide; not yet checked on a device]"))
