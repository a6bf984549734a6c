"""Terminal and Markdown views of ``nsighttk inspect``: compiled kernels with their resources."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.text import Text

from nsighttk import escape
from nsighttk.report.console import make_console
from nsighttk.report.layout import Col, Flex, para, para_path, table
from nsighttk.units import fmt_kib


def _n(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{int(v):,}"


def rows(run: Any) -> list[list[str]]:
    out = []
    for r in run.kernels.itertuples(index=False):
        spill = (r.stack_bytes or 0) + (r.local_bytes or 0) if r.registers is not None else None
        smem = (r.static_smem_bytes or 0) + (r.shared_bytes or 0)
        occ = "-" if math.isnan(r.theoretical_occupancy_pct) else f"{r.theoretical_occupancy_pct:.1f}% ({r.limiters})"
        out.append([str(r.variant), str(r.kernel), str(r.source), str(r.arch or "-"), _n(r.num_warps),
                    _n(r.num_stages), _n(r.registers), "-" if spill is None else fmt_kib(spill), fmt_kib(smem), occ])
    return out


HEAD = ["Variant", "Kernel", "From", "Arch", "Warps", "Stages", "Regs/thread", "Stack+local", "Shared mem",
        "Theo. occupancy"]


_COLS = [Col("Variant", "left", max_width=24), Col("Kernel", "left", flex=True, min_width=20),
         Col("From", "left", drop=4), Col("Arch", "left", drop=5), Col("Warps", drop=3), Col("Stages", drop=6),
         Col("Regs/thread"), Col("Stack+local", drop=2), Col("Shared mem", drop=1), Col("Theo. occupancy", "left")]


def render(run: Any, console: Console | None = None) -> None:
    console = console or make_console()
    # each path whole on a line where it fits, else broken only at "/" (paths are copied from here);
    # the files in the run directory relative to it
    para_path(console, f" ({run.mode}) in", run.run_dir, "", "  ", lead=Text("compiled kernels", style="bold"))
    if len(run.kernels):
        table(console, _COLS, [[Flex(c) if i == 1 else c for i, c in enumerate(r)] for r in rows(run)])
        para(console, "Registers, stack and static shared memory: cuobjdump -res-usage on the cubin (stack+local > 0: "
                      "register spills); shared memory adds Triton's dynamic allocation.", "  ", "  ")
        para(console, "PTX and SASS: <variant>/<kernel>.ptx, .sass in the run directory", "  ", "    ")
    for variant, files in run.output_code.items():
        for f in files:
            para_path(console, f"{variant}: Inductor output code in the run directory:", f, "  ", "    ")
    if run.mode != "jit" and any(run.output_code.values()):
        para(console, "(no GPU: torch.compile generated C++ for the CPU; on a GPU it generates Triton kernels, "
                      "listed above with their PTX and SASS)", "  ", "   ")
    for variant, why in run.skipped.items():
        para(console, f" {variant}: {why}", "  ", "    ", lead=Text("skipped", style="yellow"))


def markdown(run: Any) -> str:
    md = escape.md_text
    lines = [f"# Compiled kernels ({md(run.mode)})", "", "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(md(c) for c in r) + " |" for r in rows(run)]
    lines += ["", "PTX and SASS: `<variant>/<kernel>.ptx`, `.sass` in the run directory.", ""]
    for variant, files in run.output_code.items():
        lines += [f"- {md(variant)}: Inductor output code {escape.md_code(f)}" for f in files]
    lines += [f"- skipped {md(v)}: {md(why)}" for v, why in run.skipped.items()]
    return "\n".join(lines) + "\n"
