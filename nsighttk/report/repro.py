"""The files ``nsighttk repro`` writes: one workload per hot op (the ``kernels/`` protocol:
``WORKLOAD`` with variants, a float64 reference, the bytes a call moves) and ``index.md``.

A workload holds what the trace recorded (``ARGS``: shapes, dtypes, strides, scalars, a tensor
list's shapes, the host-side tensor of a host-device copy; ``TRACE``: the op's own time per call,
the kernels and copies it launched) and calls the op through
``torch.ops.<namespace>.<op>.<overload>`` exactly as resolved from the schema
(:func:`nsighttk.workload.replay.resolve`); what was taken for what the trace does not record is
said in a comment there and in ``index.md``.  An op on tensor lists takes its inputs flat
(``*xs``) and regroups them (:func:`nsighttk.workload.replay.grouped`); one that returns nothing
returns the first input it writes.  Text from the capture (op and file names) goes into
Python as ``repr`` literals, into docstrings and comments with quotes, backslashes and line
breaks removed, and into Markdown escaped (:mod:`nsighttk.escape`).
"""

from __future__ import annotations

import pprint
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from nsighttk import escape
from nsighttk.analysis.torch_shapes import HotOp, labels
from nsighttk.safeio import safe_filename
from nsighttk.units import fmt_ns
from nsighttk.workload.replay import FLOATING, RANDOM, VALUES, Call

#: the first line of every file repro writes: what marks it as replaceable without --force
MARK = "nsighttk repro"
INDEX = "index.md"


@dataclass
class Repro:
    """One hot op and what became of it: a workload file, or why not."""

    rank: int
    hot: HotOp
    call: Call | None = None
    file: str | None = None  # name in the output folder
    why_not: str | None = None
    inductor: dict[str, Any] = field(default_factory=dict)  # Triton source, launch, where found (or why not)

    def as_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, **self.hot.as_dict(), "file": self.file, "why_not": self.why_not,
                "overload": self.call.overload if self.call else None,
                "assumed": self.call.assumed if self.call else [],
                "inductor": {k: v for k, v in self.inductor.items() if k != "source"}}


def _plain(text: str, limit: int = 120) -> str:
    """Capture text safe inside a docstring or comment: printable, no quotes, no backslashes."""
    t = re.sub(r"[\x00-\x1f\x7f\"'\\]", "_", escape.term(text))
    return t if len(t) <= limit else t[:limit] + "..."


def file_name(rank: int, op: str) -> str:
    return f"{rank:02d}_{safe_filename(op.replace('::', '_'), 60)}.py"


def _dtype_of(hot: HotOp) -> str:
    """The dtype the reproducer is checked in: the least precise floating input's (float32 if none)."""
    order = ["float8_e4m3fn", "float8_e5m2", "bfloat16", "float16", "float32", "float64"]
    found = [a.dtype for a in hot.args if a.kind in ("tensor", "tensorlist") and a.dtype in FLOATING]
    return min(found, key=order.index) if found else "float32"


_TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2, "float64": 1e-12, "float8_e4m3fn": 1e-1,
              "float8_e5m2": 2e-1}


def _literal(v: Any) -> str:
    if isinstance(v, float) and v != v:
        return 'float("nan")'
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return f'float("{v}")'
    return repr(v)


Expr = tuple[str, list[str]]  # a call: the function, its arguments as source text


def _call_text(call: Call, names: list[str]) -> Expr:
    pos, kw = [], []
    for p in call.params:
        text = names[p.tensor] if p.tensor is not None else _literal(p.literal)
        if p.kwarg_only:
            kw.append(f"{p.name}={text}")
        else:
            pos.append(text)
    return call.target, pos + kw


def _equivalent_text(call: Call, names: list[str]) -> Expr | None:
    from nsighttk.workload.replay import has_equivalent

    literals = {p.name: p.literal for p in call.params if p.tensor is None}
    if not has_equivalent(call.op, sum(p.tensor is not None for p in call.params), literals):
        return None
    return "replay.EQUIVALENTS[OP]", names[:3] + [f"{name}={_literal(v)}" for name, v in literals.items()]


def _returning(expr: Expr, width: int = 100, result: str | None = None) -> list[str]:
    """``return replay.first_tensor(f(args))`` in lines of at most ``width`` columns where the
    arguments allow (they are never split); with ``result``, ``f(args)`` then ``return result``
    (an op that returns nothing and writes ``result``)."""
    target, args = expr
    head, tail = ("    ", ")") if result else ("    return replay.first_tensor(", "))")
    one = f"{head}{target}({', '.join(args)}{tail}"
    after = [f"    return {result}"] if result else []
    if len(one) <= width:
        return [one, *after]
    lines, line = [f"{head}{target}("], "       "
    for a in args:
        if len(line) + len(a) + 2 > width and line.strip():
            lines.append(line)
            line = "       "
        line += f" {a},"
    return [*lines, line + tail, *after]


def workload_source(r: Repro, capture: str) -> str:
    """The workload file of one resolved op."""
    assert r.call is not None
    h = r.hot
    args = [a.as_dict() for a in h.args]
    for i, p in enumerate(r.call.params):  # optimizer state: values the op is defined on
        if i < len(args) and p.tensor is not None and p.name in VALUES:
            args[i]["values"] = VALUES[p.name]
    names = [f"x{i}" for i in range(sum(a.kind in ("tensor", "tensorlist") for a in h.args))]
    lists = any(a.kind == "tensorlist" for a in h.args)
    sig = "*xs" if lists else ", ".join(names)
    unpack = [f"    {', '.join(names)}{',' if len(names) == 1 else ''} = replay.grouped(xs, ARGS)"] if lists else []
    result = names[r.call.writes[0]] if r.call.returns == 0 and r.call.writes else None
    call = _call_text(r.call, names)
    equiv = _equivalent_text(r.call, names)
    dtype = _dtype_of(h)
    tol = _TOLERANCE.get(dtype, 1e-5)
    if r.call.op in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear") \
            and dtype == "float32":
        tol = 2e-3  # cuBLAS may use TF32 for float32 (relative error near 3e-4), as kernels/matmul.py allows
    if r.call.op in RANDOM:
        tol = float("inf")  # a random result matches no reference: only its finiteness is checked
    trace = {"capture": capture, "op": h.op, "calls": h.calls, "per_call_ns": round(h.per_call_ns, 3),
             "time": "self device" if h.self_device_ns else "self CPU", "device_pct": round(h.device_pct, 3),
             "share_pct": round(h.share_pct, 3), "ranked_by": h.ranked_by,
             "device": h.device, "dtype": dtype, "kernels": h.kernels[:8], "copies": h.copies[:4],
             "source": h.source}
    shapes = labels(h.args)
    assumed = "".join(f"\n# - {_plain(a)}" for a in r.call.assumed)
    eager_gpu_only = equiv is not None
    compile_needs = ("cuda", "compile") if eager_gpu_only else ("compile",)
    lines = [
        f'"""{MARK}: {_plain(h.op)} as {_plain(capture, 80)} recorded it ({h.calls} calls,',
        f"{fmt_ns(h.per_call_ns)} of {trace['time']} time per call, {h.share_pct:.1f}% of the capture's "
        f"{h.ranked_by} time).",
        "",
        *textwrap.wrap(f"Arguments: {_plain(shapes, 400)}.", 100, break_long_words=False),
        "Inputs are random tensors of the recorded shapes, dtypes and strides; scalars as recorded.",
        "Run: nsighttk bench THIS_FILE [--device cpu]; also nsighttk ncu / nsys / inspect THIS_FILE.",
        '"""',
        "",
        "import torch",
        "",
        "from nsighttk.workload import Variant, Workload, compiled, replay",
        "",
        f"OP = {h.op!r}",
        "#: the arguments as the trace recorded them (edit shapes here to try others)",
        "ARGS = [",
        *[textwrap.indent(pprint.pformat(a, width=96, sort_dicts=False, compact=True), "    ") + "," for a in args],
        "]",
        "#: what the trace measured: nsighttk bench prints it beside its own times",
        f"TRACE = {pprint.pformat(trace, width=100, sort_dicts=False)}",
        *(["# Not recorded, so taken from the schema:" + assumed] if assumed else []),
        *(["# NVTX ranges record shapes only: tensors are float32 and contiguous here (set dtype and",
           "# strides in ARGS to match the program)."] if h.source == "nvtx" else []),
        *[f"# {line}" for n in h.notes for line in textwrap.wrap(_plain(n, 300) + ".", 98)],
        *(["# The op writes its inputs: each variant is checked on fresh ones, then timed updating them",
           "# call after call, as the program did."] if r.call.in_place else []),
        "",
        "",
        f"def eager({sig}):",
        f'    """{_plain(h.op)} run eagerly, as the trace ran it."""',
        *unpack,
        *_returning(call, result=result),
        "",
        "",
        "# ======================================================================= YOUR VARIANT",
        "# Replace this body with your own implementation (same inputs, same result): nsighttk bench",
        "# checks it against the float64 reference and times it beside the others as variant mine.",
        f"def mine({sig}):",
        *unpack,
        *_returning(equiv or call, result=result),
        "# ====================================================================================",
        "",
        "",
        "def reference(*xs):",
        '    """The op on float64 copies of the inputs (integer inputs keep their dtype)."""',
        (f"    {', '.join(names)}{',' if len(names) == 1 else ''} = replay.grouped(replay.as_recorded(xs, ARGS), "
         "ARGS)" if lists else
         f"    {sig}{',' if len(names) == 1 else ''} = replay.as_recorded(xs, ARGS)" if names else "    del xs"),
        *_returning(equiv or call, result=result),
        "",
        "",
        "VARIANTS = {",
        f'    "eager": Variant(eager, requires={("cuda",) if eager_gpu_only else ()!r}, '
        f'description={(r.call.target + " as recorded")!r}),',
        f'    "compiled": Variant(compiled(eager), requires={compile_needs!r}, '
        'description="torch.compile of the same call"),',
        '    "mine": Variant(mine, description="your variant (edit mine() above)"),',
        "}",
    ]
    if equiv:
        lines += [
            "",
            "",
            f"def portable({sig}):",
            '    """The same computation with ops that also run without a GPU (no GPU kernel of this op there)."""',
            *_returning(equiv),
            "",
            "",
            'VARIANTS["portable"] = Variant(portable, description="scaled_dot_product_attention math, off the GPU")',
        ]
    lines += [
        "",
        "WORKLOAD = Workload(",
        f"    name={safe_filename(f'{h.op.split(chr(58))[-1]}_{r.rank}', 60)!r},",
        f"    description={('repro of ' + _plain(h.op, 80) + ' ' + _plain(shapes, 200))!r},",
        "    make_inputs=lambda size, dtype, device: replay.inputs(ARGS, device, OP),",
        "    reference=reference,",
        "    variants=VARIANTS,",
        "    bytes=lambda size, elem: replay.nbytes(ARGS),",
        "    sizes=(1,),",
        *(["    mutates=True,"] if r.call.in_place else []),
        f"    tolerance={{d: {_literal(tol)} for d in ('float32', 'float16', 'bfloat16', 'float64')}},",
        "    trace=TRACE,",
        ")",
        "",
    ]
    return f"# {MARK}: written by nsighttk; edit freely\n" + "\n".join(lines)


def index_markdown(capture: str, repros: list[Repro], total_device_ns: int, folder: str) -> str:
    """``index.md``: per op its shapes, share of device time (of CPU time in a capture without device
    activity) and the command that runs it; ops that could not be reproduced, each with the reason."""
    by = repros[0].hot.ranked_by if repros else "device"
    what = (f"The hottest ops by their own device time (the kernels each launched itself; {fmt_ns(total_device_ns)} "
            "of device time in the capture)." if by == "device" else
            "The hottest ops by their own CPU time (the capture has no device activity).")
    out = [f"<!-- {MARK}: written by nsighttk -->", f"# Reproducers of {escape.md_text(capture)}", "",
           f"{what} Each file is a workload: run it with the command shown, on a GPU or with `--device cpu`.", "",
           f"| # | Op | Arguments | Calls | Time per call | Share of {by} time | Run |",
           "|---|----|-----------|------:|--------------:|---------------------:|-----|"]
    for r in repros:
        if r.file is None:
            continue
        h = r.hot
        args = labels(h.args)
        cmd = f"nsighttk bench {folder.rstrip('/')}/{r.file}"
        out.append(f"| {r.rank} | {escape.md_code(h.op, True)} | {escape.md_code(args, True)} | {h.calls} | "
                   f"{fmt_ns(h.per_call_ns)} | {h.share_pct:.1f}% | {escape.md_code(cmd, True)} |")
    if not any(r.file for r in repros):
        out.append("| - | none | | | | | |")
    notes = [r for r in repros if r.file and ((r.call and r.call.assumed) or r.hot.kernels or r.hot.copies
                                               or r.hot.notes)]
    if notes:
        out += ["", "## What the trace ran", ""]
        for r in notes:
            line = f"- {r.rank}. {escape.md_code(r.hot.op)}"
            if r.hot.kernels:
                line += f": kernel {escape.md_code(r.hot.kernels[0])}"
                if len(r.hot.kernels) > 1:
                    line += f" and {len(r.hot.kernels) - 1} more"
            if r.hot.copies:
                line += ("; " if r.hot.kernels else ": ") + f"copy {escape.md_code(r.hot.copies[0])}"
            if r.hot.source == "nvtx":
                line += "; dtypes and strides not in the NVTX ranges: float32, contiguous"
            if r.call and r.call.assumed:
                line += "; not recorded, so the schema's default: " + ", ".join(
                    escape.md_code(a.split(" (")[0]) for a in r.call.assumed)
            line += "".join(f"; {escape.md_text(n)}" for n in r.hot.notes)
            out.append(line)
    kept = [r for r in repros if r.file is None and "source" in r.inductor]
    if kept:
        out += ["", "## Inductor kernels", "",
                "Their Triton source, the lines launching them and the compiled graph's inputs, from Inductor's "
                "output code:", ""]
        for r in kept:
            out.append(f"- {r.rank}. {escape.md_code(r.hot.op)} ({r.hot.share_pct:.1f}% of {by} time): "
                       f"{escape.md_code(r.inductor['file'])}, from {escape.md_code(r.inductor['path'])}")
    lost = [r for r in repros if r.file is None and "source" not in r.inductor]
    if lost:
        out += ["", "## Not reproduced", ""]
        for r in lost:
            out.append(f"- {r.rank}. {escape.md_code(r.hot.op)} ({r.hot.share_pct:.1f}% of {by} time): "
                       f"{escape.md_text(r.why_not or 'unknown')}")
    return "\n".join(out) + "\n"
