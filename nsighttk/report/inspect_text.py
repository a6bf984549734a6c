"""Terminal and Markdown views of ``nsighttk inspect``: compiled kernels with their resources."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from nsighttk.units import fmt_bytes


def _n(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{int(v):,}"


def rows(run: Any) -> list[list[str]]:
    out = []
    for r in run.kernels.itertuples(index=False):
        spill = (r.stack_bytes or 0) + (r.local_bytes or 0) if r.registers is not None else None
        smem = (r.static_smem_bytes or 0) + (r.shared_bytes or 0)
        occ = "-" if math.isnan(r.theoretical_occupancy_pct) else f"{r.theoretical_occupancy_pct:.1f}% ({r.limiters})"
        out.append([r.variant, r.kernel, r.source, str(r.arch or "-"), _n(r.num_warps), _n(r.num_stages),
                    _n(r.registers), "-" if spill is None else fmt_bytes(spill), fmt_bytes(smem), occ])
    return out


HEAD = ["Variant", "Kernel", "From", "Arch", "Warps", "Stages", "Regs/thread", "Stack+local", "Shared mem",
        "Theo. occupancy"]


def render(run: Any, console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    console.print(f"[bold]compiled kernels[/bold] ({run.mode}) in {run.run_dir}")
    if len(run.kernels):
        t = Table(title_justify="left", header_style="bold", pad_edge=False)
        for h in HEAD:
            t.add_column(h, justify="left" if h in ("Variant", "Kernel", "From", "Arch", "Theo. occupancy")
                         else "right")
        for r in rows(run):
            t.add_row(*r)
        console.print(t)
        console.print("  Registers, stack and static shared memory: cuobjdump -res-usage on the cubin (stack+local "
                      "> 0: register spills); shared memory adds Triton's dynamic allocation.")
        console.print(f"  PTX and SASS: {run.run_dir}/<variant>/<kernel>.ptx, .sass")
    for variant, files in run.output_code.items():
        for f in files:
            console.print(f"  {variant}: Inductor output code {run.run_dir / f}")
    if run.mode != "jit" and any(run.output_code.values()):
        console.print("  (no GPU: torch.compile generated C++ for the CPU; on a GPU it generates Triton kernels, "
                      "listed above with their PTX and SASS)")
    for variant, why in run.skipped.items():
        console.print(f"  [yellow]skipped[/yellow] {variant}: {why}")


def markdown(run: Any) -> str:
    lines = [f"# Compiled kernels ({run.mode})", "", "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in rows(run)]
    lines += ["", "PTX and SASS: `<variant>/<kernel>.ptx`, `.sass` in the run directory.", ""]
    for variant, files in run.output_code.items():
        lines += [f"- {variant}: Inductor output code `{f}`" for f in files]
    lines += [f"- skipped {v}: {why}" for v, why in run.skipped.items()]
    return "\n".join(lines) + "\n"
