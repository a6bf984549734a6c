"""Terminal rendering of ``nsighttk bench`` results, laid out for the console's width."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console

from nsighttk import escape
from nsighttk.bench import BenchReport
from nsighttk.report.console import make_console
from nsighttk.report.layout import Col, para, table
from nsighttk.units import fmt_elems, fmt_ns, fmt_num, fmt_si

#: above this share of the measured copy bandwidth the data cannot have come from DRAM: the
#: variant's working set stayed in a cache, and "% copy" would mislead
CACHE_PCT = 110.0


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def pct_of_copy(v: Any) -> str:
    """"% copy" as shown: a percentage, or "cache" above :data:`CACHE_PCT` (explained below the table)."""
    f = _num(v)
    if f is None:
        return "-"
    return "cache" if f > CACHE_PCT else f"{f:.1f}%"


def _ms(v: Any) -> str:
    f = _num(v)
    return "-" if f is None else fmt_ns(f * 1e6)


def _spread(lo: Any, hi: Any) -> str:
    a, b = _num(lo), _num(hi)
    if a is None or b is None:
        return "-"
    sa, sb = fmt_ns(a * 1e6), fmt_ns(b * 1e6)
    ua, ub = sa.rsplit(" ", 1)[-1], sb.rsplit(" ", 1)[-1]
    return f"{sa.rsplit(' ', 1)[0]}-{sb}" if ua == ub else f"{sa}-{sb}"


def render(r: BenchReport, console: Console | None = None) -> None:
    console = console or make_console()
    clock = "CUDA events" if r.device.startswith("cuda") else "the host clock (CPU timing: no GPU in use)"
    copy = f"{r.copy_gbps:,.0f} GB/s" if r.copy_gbps else "-"
    para(console, f" on {r.device}, {r.dtype}; timed with {clock}; measured copy bandwidth {copy} (the 100% of "
                  "'% copy')", "", "  ", lead=escape.text(f"bench {r.workload}", "bold"))
    notes: dict[str, int] = {}

    def note(text: str) -> str:
        return f"[{notes.setdefault(text, len(notes) + 1)}]"

    rows, cached = [], False
    for row in r.rows.to_dict("records"):
        status = str(row.get("status", ""))
        reason = str(row.get("reason") or "")
        shown_status = status if status != "wrong result" else "wrong"
        if reason:
            shown_status += " " + note(f"{row['variant']}: {reason}" if status == "ok" else
                                       f"{status}: {reason}")
        if status not in ("ok", "wrong result"):
            rows.append([fmt_elems(row["size"]), str(row["variant"]), shown_status] + ["-"] * 7)
            continue
        pct = pct_of_copy(row.get("pct_of_copy"))
        cached = cached or pct == "cache"
        tflops = _num(row.get("tflops"))
        speed = _num(row.get("speedup_vs_baseline"))
        err = _num(row.get("rel_error"))
        rows.append([fmt_elems(row["size"]), str(row["variant"]), shown_status, _ms(row.get("median_ms")),
                     _spread(row.get("p20_ms"), row.get("p80_ms")), fmt_num(_num(row.get("gbps")), 1), pct,
                     "-" if tflops is None else fmt_si(tflops * 1e12), "-" if speed is None else f"{speed:.2f}x",
                     "-" if err is None else f"{err:.1e}"])
    all_ok = all(x[2] == "ok" for x in rows)  # then the status column says nothing and goes first
    status_col = Col("Status", "left", drop=9 if all_ok else 0, max_width=16)
    cols = [Col("Size"), Col("Variant", "left", max_width=28), status_col, Col("Median"), Col("p20-p80", drop=5),
            Col("GB/s"), Col("% copy", drop=3), Col("FLOP/s", drop=4), Col("Speed-up", drop=2),
            Col("Rel. error", drop=6)]
    kept = table(console, cols, rows)
    # a column given up for the width is named (one that says nothing, every cell "ok" or "-", is not)
    hidden = [c.header for i, c in enumerate(cols) if i not in kept
              and any(str(x[i]) not in ("", "-", "ok") for x in rows)]
    if hidden:
        para(console, f"Not shown at this width: {', '.join(hidden)} (every column: --width 0, --json or --csv).",
             "  ", "  ")
    if cached:
        para(console, f"cache: faster than {CACHE_PCT:.0f}% of the measured copy bandwidth, so the data did not come "
                      "from DRAM (the working set fits in a cache); GB/s is then a cache figure, not a % of the "
                      "memory's.", "  ", "  ")
    for text, n in notes.items():
        para(console, text, f"  [{n}] ", " " * (len(str(n)) + 5))
    for line in trace_lines(r):
        para(console, line, "  ", "    ")


def trace_lines(r: BenchReport) -> list[str]:
    """For a reproducer (``nsighttk repro``): the trace's time per call beside each variant's
    median, and on a GPU whether the variant launched the kernel the trace's op launched."""
    if "trace_ms" not in r.rows:
        return []
    lines = []
    for row in r.rows.to_dict("records"):
        trace_ms, median = _num(row.get("trace_ms")), _num(row.get("median_ms"))
        if trace_ms is None:
            continue
        what = f"{row['variant']}: trace {_ms(trace_ms)} per call ({row.get('trace_time') or 'own'} time)"
        if median is not None:
            what += f", measured {_ms(median)}"
            if trace_ms:
                what += f" ({median / trace_ms:.2f}x the trace)"
        else:
            what += f", not measured ({row.get('status')})"
        match = row.get("kernel_match")
        if isinstance(match, bool):
            what += (f"; kernel as in the trace: {row.get('kernel')}" if match else
                     f"; kernel {row.get('kernel') or 'none'}, the trace's: {row.get('trace_kernel')}")
        lines.append(what)
    return lines
