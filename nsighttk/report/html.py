"""Self-contained HTML reports: one file, no network (its script and style are inlined), that a
browser opens offline.  Tables are rendered here; charts are drawn in the browser as SVG by
``assets/report.js`` from a JSON block of chart specs (GPU-time breakdown, timeline per stream
with NVTX ranges, roofline, bench bandwidth against size, comparison).

A page is a :class:`Page` of :class:`Section` s, each a list of blocks; the ``*_sections``
functions turn finished analyses into sections (they compute nothing new), :func:`render` turns
a page into text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import pandas as pd

from nsighttk import __version__
from nsighttk.analysis.compare import CHANGES
from nsighttk.analysis.iterations.find import scope_label
from nsighttk.analysis.timeline import Timeline
from nsighttk.escape import html_text, script_json
from nsighttk.report import kernel_label
from nsighttk.units import fmt_ns

#: column formats: how a cell is shown (its raw value stays in data-v for sorting)
FORMATS = ("text", "name", "ns", "pct", "int", "float", "sig", "bytes", "gbps", "si")


@dataclass
class Column:
    header: str
    key: str
    fmt: str = "text"


@dataclass
class Section:
    id: str
    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)

    def text(self, s: str, cls: str = "intro") -> Section:
        self.blocks.append(("p", (cls, s)))
        return self

    def kv(self, items: list[tuple[str, str]]) -> Section:
        self.blocks.append(("kv", items))
        return self

    def table(self, df: pd.DataFrame, columns: list[Column], title: str | None = None, limit: int = 500) -> Section:
        self.blocks.append(("table", (df, [c for c in columns if c.key in df.columns], title, limit)))
        return self

    def chart(self, kind: str, spec: dict[str, Any], caption: str | None = None, tools: bool = False) -> Section:
        self.blocks.append(("chart", (kind, spec, caption, tools)))
        return self

    def findings(self, items: list[tuple[str, str, str]]) -> Section:
        self.blocks.append(("findings", items))
        return self


@dataclass
class Page:
    title: str
    meta: list[str]
    sections: list[Section] = field(default_factory=list)


# ----------------------------------------------------------------------------------- rendering


def _asset(name: str) -> str:
    return resources.files("nsighttk.report").joinpath("assets", name).read_text(encoding="utf-8")


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _cell(v: Any, fmt: str) -> tuple[str, str, str]:
    """(shown text, raw value for sorting, css class)."""
    if fmt in ("text", "name"):
        s = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
        return s, "", "name" if fmt == "name" else ""
    x = _num(v)
    if math.isnan(x):
        return "-", "", "num"
    if fmt in ("ns", "si"):
        shown = fmt_ns(x) if fmt == "ns" else _si(x)
    else:
        shown = format(x, _SPEC[fmt]) + ("%" if fmt == "pct" else "")
    return shown, repr(x), "num"


_SPEC = {"pct": ",.1f", "int": ",.0f", "float": ",.2f", "sig": ".4g", "bytes": ",.0f", "gbps": ",.1f"}


def _si(x: float) -> str:
    for f, p in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= f:
            return f"{x / f:.3g} {p}"
    return f"{x:.3g}"


def _table_html(df: pd.DataFrame, columns: list[Column], title: str | None, limit: int) -> str:
    e = html_text
    out = [f"<h3>{e(title)}</h3>"] if title else []
    if df.empty:
        return "".join(out) + '<p class="caption">(none)</p>'
    shown = df.head(limit)
    out.append('<div class="tablewrap"><table class="data"><thead><tr>')
    out += [f"<th>{e(c.header)}</th>" for c in columns]
    out.append("</tr></thead><tbody>")
    for rec in shown.to_dict("records"):
        out.append("<tr>")
        for c in columns:
            text, raw, cls = _cell(rec.get(c.key), c.fmt)
            classes = " ".join(x for x in (cls, text if c.key == "change" else "") if x)  # change: slower...
            extra = f' class="{e(classes)}"' if classes else ""
            dv = f' data-v="{raw}"' if raw else ""
            titled = f' title="{e(text)}"' if c.fmt == "name" and len(text) > 60 else ""
            out.append(f"<td{extra}{dv}{titled}>{e(text)}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    if len(df) > limit:
        out.append(f'<p class="caption">first {limit:,} of {len(df):,} rows (all of them are in the JSON output)</p>')
    return "".join(out)


def render(page: Page) -> str:
    """The whole page as one HTML document.  Every text (names included) goes through
    :func:`~nsighttk.escape.html_text`, the chart data through
    :func:`~nsighttk.escape.script_json`."""
    e = html_text
    specs: list[dict[str, Any]] = []
    body: list[str] = []
    for sec in page.sections:
        body.append(f'<section id="{e(sec.id)}"><h2>{e(sec.title)}</h2>')
        for kind, data in sec.blocks:
            if kind == "p":
                body.append(f'<p class="{e(data[0])}">{e(data[1])}</p>')
            elif kind == "kv":
                body.append('<dl class="kv">' + "".join(f"<div><dt>{e(k)}</dt><dd>{e(v)}</dd></div>" for k, v in data)
                            + "</dl>")
            elif kind == "table":
                body.append(_table_html(*data))
            elif kind == "findings":
                body.append('<ul class="findings">' + "".join(
                    f'<li><b>{e(t)}</b><br><span class="ev">{e(ev)}</span><br>'
                    f'<span class="fix">Try: {e(fix)}</span></li>' for t, ev, fix in data) + "</ul>")
            elif kind == "chart":
                chart, spec, caption, tools = data
                specs.append(spec)
                if tools:
                    body.append('<div class="tl-tools"><button class="tl-fit">fit GPU work</button>'
                                '<button class="tl-all">whole capture</button><button class="tl-in">zoom in</button>'
                                '<button class="tl-out">zoom out</button> wheel: zoom, drag: pan. '
                                '<span class="tl-range"></span></div>')
                body.append(f'<div class="chart" data-chart="{e(chart)}" data-spec="{len(specs) - 1}"></div>')
                if caption:
                    body.append(f'<p class="caption">{e(caption)}</p>')
        body.append("</section>")
    nav = "".join(f'<a href="#{e(s.id)}">{e(s.title)}</a>' for s in page.sections)
    meta = "".join(f"<span>{e(m)}</span>" for m in page.meta)
    data = script_json(specs)  # nothing in it can end the <script> element or open a comment
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="nsighttk {e(__version__)}">
<title>{e(page.title)}</title>
<script>
(function () {{
  var errors = [];
  function record(msg) {{
    errors.push(String(msg));
    var box = document.getElementById("nsighttk-errors");
    if (box) {{ box.hidden = false; var li = document.createElement("li"); li.textContent = String(msg);
                box.querySelector("ul").appendChild(li); }}
    if (document.body) document.body.dataset.errors = String(errors.length);
  }}
  window.addEventListener("error", function (ev) {{ record("error: " + ev.message + " (line " + ev.lineno + ")"); }});
  window.addEventListener("unhandledrejection", function (ev) {{ record("unhandled rejection: " + ev.reason); }});
  var original = console.error;
  console.error = function () {{ record("console.error: " + Array.prototype.join.call(arguments, " "));
                                 return original.apply(console, arguments); }};
  window.nsighttkErrors = errors;
}})();
</script>
<style>{_asset("report.css")}</style>
</head><body data-errors="0">
<header><h1>{e(page.title)}</h1><div class="meta">{meta}</div></header>
<nav>{nav}</nav>
<div id="nsighttk-errors" hidden><b>This page hit errors while drawing:</b><ul></ul></div>
<main>
{"".join(body)}
</main>
<footer>nsighttk {e(__version__)}: one self-contained file, no network needed. Hover a mark for its numbers;
click a table header to sort.</footer>
<script type="application/json" id="nsighttk-specs">{data}</script>
<script>{_asset("report.js")}</script>
</body></html>
"""


# ----------------------------------------------------------------------------------- sections


def _finite(v: Any) -> float | None:
    """JSON has no NaN or infinity: a number the charts cannot place is null."""
    f = _num(v)
    return f if math.isfinite(f) else None


def _kind_of(category: str, operation: str) -> str:
    if category == "CUDA_KERNEL" or category == "KERNEL":
        return "kernel"
    return "memset" if "memset" in operation.lower() else "memcpy"


#: Characters of a bar's label in the GPU-time chart (its label column is at most 360 px wide).
_BAR_LABEL = 48


def gpu_time_bars(gpu_sum: pd.DataFrame, top: int = 14) -> dict[str, Any] | None:
    """Spec of the GPU-time breakdown: the largest kernels / transfers, the rest as one bar."""
    if gpu_sum.empty:
        return None
    g = gpu_sum.sort_values("Total Time (ns)", ascending=False, kind="mergesort")
    head = g.head(top)
    names = [str(n).strip() for n in head["Operation"]]
    # the bars' own labels: kernels' short forms, distinct among the bars (four CUTLASS kernels cut to
    # the chart's width read the same); the full name is in each bar's tooltip
    short = kernel_label.labels(names, _BAR_LABEL)
    items = [{"label": name, "short": short[i] if str(r["Category"]) == "CUDA_KERNEL" else name,
              "value": int(r["Total Time (ns)"]), "count": int(r["Instances"]),
              "kind": _kind_of(str(r["Category"]), str(r["Operation"]))}
             for i, (name, (_, r)) in enumerate(zip(names, head.iterrows(), strict=True))]
    rest = g.iloc[top:]
    if len(rest):
        items.append({"label": f"{len(rest)} other operations", "value": int(rest["Total Time (ns)"].sum()),
                      "count": int(rest["Instances"].sum()), "kind": "other"})
    return {"items": items, "total": int(g["Total Time (ns)"].sum())}


def timeline_spec(tl: Timeline) -> dict[str, Any]:
    ev = tl.events
    names, name_idx = pd.factorize(ev["name"].astype(str))
    details, detail_idx = pd.factorize(ev["detail"].astype(str))
    kinds = ["kernel", "memcpy", "memset", "nvtx"]
    lane_of = {lane: i for i, lane in enumerate(tl.lanes)}
    rows = list(zip(ev["lane"].map(lane_of).tolist(), ev["start_ns"].tolist(), ev["duration_ns"].tolist(),
                    names.tolist(), ev["kind"].map(kinds.index).tolist(), details.tolist(), strict=True))
    return {"lanes": tl.lanes, "events": rows, "names": list(name_idx), "details": list(detail_idx),
            "kinds": kinds, "window": tl.window_ns, "focus": list(tl.focus_ns)}


K_COLS = [Column("Time %", "Time (%)", "pct"), Column("Total", "Total Time (ns)", "ns"),
          Column("Instances", "Instances", "int"), Column("Avg", "Avg (ns)", "ns"), Column("Med", "Med (ns)", "ns"),
          Column("Min", "Min (ns)", "ns"), Column("Max", "Max (ns)", "ns"), Column("StdDev", "StdDev (ns)", "ns"),
          Column("Theo. occupancy", "Theoretical Occupancy (%)", "pct"), Column("Name", "Name", "name"),
          Column("What it is", "Decoded", "name")]


def overview_sections(ov: Any, tl: Timeline | None) -> list[Section]:
    """An nsys (or Kineto) capture: headline, findings, GPU-time chart, timeline, tables."""
    h = ov.headline
    it = getattr(ov, "iterations", None)
    steady: list[tuple[str, str]] = []
    if it is not None and it.steady:  # (the steady state first: the loop a user wants faster)
        steady.append(("iteration time, steady state", f"{fmt_ns(it.steady['duration_ns']['median'])} (median of "
                                                        f"{it.steady['iterations']:,})"))
        phases = getattr(ov, "phases", None) or {}
        if phases.get("summary"):
            steady.append(("around the steady state", phases["summary"]))
    summary = Section("summary", "Summary").kv([
        *steady,
        ("GPU", h.get("gpu") or "unknown"),
        ("kernels", f"{h['kernels']:,} launches of {h['distinct_kernels']:,} kernels"),
        ("kernel time", fmt_ns(h["kernel_time_ns"])),
        ("GPU busy / span", f"{fmt_ns(h['gpu_busy_ns'])} of {fmt_ns(h['gpu_span_ns'])}"
                            + (f" ({h['gpu_busy_ns'] / h['gpu_span_ns'] * 100:.1f}%)" if h["gpu_span_ns"] else "")),
        ("memcpy", f"{h['memcpy_count']:,} copies, {h['memcpy_bytes']:,} bytes, {fmt_ns(h['memcpy_time_ns'])}"),
        ("CUDA API calls / NVTX ranges", f"{h['api_calls']:,} / {h['nvtx_ranges']:,}"),
    ])
    for note in getattr(ov, "notes", []):
        summary.text(note, "caption")
    out = [summary]
    if ov.findings:
        out.append(Section("findings", "What to look at").findings(
            [(f.title, f.evidence, f.suggestion) for f in ov.findings]))
    it_sec = iterations_section(getattr(ov, "iterations", None))
    if it_sec is not None:
        out.append(it_sec)
    comm = getattr(ov, "collectives", None)
    if comm is not None:
        devices = pd.DataFrame([d.as_dict() for d in comm.devices if d.comm_kernels])
        out.append(Section("communication", "Communication and computation").table(devices, [
            Column("Device", "device_id", "int"), Column("Communication", "comm_ns", "ns"),
            Column("Computation", "compute_ns", "ns"), Column("Overlapped", "overlap_ns", "ns"),
            Column("Overlap %", "overlap_pct", "pct"), Column("Exposed communication", "exposed_comm_ns", "ns"),
            Column("Collective kernels", "comm_kernels", "int")]))
        sizes = getattr(comm, "sizes", pd.DataFrame())
        if len(sizes):
            shown = set(sizes["device_id"])
            links = "; ".join(dict.fromkeys(lk.describe(gpu) for d, (gpu, lk) in comm.links.items() if d in shown))
            out.append(Section("collective-sizes", "Collectives by message size").text(
                "Bandwidths as nccl-tests defines them (algbw = size / time; busbw = algbw x 2(n-1)/n for AllReduce, "
                "(n-1)/n for AllGather, ReduceScatter and all-to-all, 1 otherwise). Transfer: the time the bytes need "
                f"at {links or 'the best bus bandwidth measured at each size'}"
                + (" (or at the best measured where that is higher)" if links else "")
                + "; the rest of the kernel time is waiting, latency and protocol overhead.").table(sizes, [
                Column("Device", "device_id", "int"), Column("Collective", "collective", "name"),
                Column("dtype", "dtype"), Column("Ranks", "group_size", "int"), Column("Size", "bytes", "bytes"),
                Column("Count", "count", "int"), Column("Avg", "avg_ns", "ns"),
                Column("algbw GB/s", "algbw_gbps", "gbps"), Column("busbw GB/s", "busbw_gbps", "gbps"),
                Column("Best busbw GB/s", "best_busbw_gbps", "gbps"),
                Column("Against", "reference"), Column("Transfer", "transfer_ns", "ns"),
                Column("Waiting and overhead", "wait_ns", "ns"), Column("Waiting %", "wait_pct", "pct")]))
    bars = gpu_time_bars(ov.tables.get("gpu_sum", pd.DataFrame()))
    if bars:
        out.append(Section("gpu-time", "GPU time").chart(
            "bars", bars, "Kernels (blue), copies (orange) and memsets (red) by total GPU time, as nsys stats' "
            "cuda_gpu_sum."))
    if tl is not None and tl.lanes:
        cap = (f"{tl.shown:,} GPU operations on {sum(not x.startswith('NVTX') for x in tl.lanes)} streams"
               + (f" (the first {tl.shown:,} of {tl.total:,}: the capture is cut to keep the page responsive)"
                  if tl.total > tl.shown else "")
               + ("; NVTX ranges above them, one lane per thread and nesting level" if any(
                   x.startswith("NVTX") for x in tl.lanes) else "") + ". Opens on the GPU work.")
        out.append(Section("timeline", "Timeline").chart("timeline", timeline_spec(tl), cap, tools=True))
    t = ov.tables
    out.append(Section("kernels", "Kernels").table(t.get("kernels", pd.DataFrame()), K_COLS))
    mem = t.get("memory", pd.DataFrame())
    if len(mem):
        out.append(Section("memory", "Memory operations").table(mem, [
            Column("Operation", "operation", "name"), Column("Kind", "kind"), Column("Count", "count", "int"),
            Column("Bytes", "total_bytes", "bytes"), Column("Time", "total_time_ns", "ns"),
            Column("GB/s", "gbps", "gbps"), Column("Best GB/s", "best_gbps", "gbps"),
            Column("% of DRAM peak", "dram_pct_of_peak", "pct")]))
    nv = t.get("nvtx_gpu", pd.DataFrame())
    if len(nv):
        out.append(Section("nvtx", "NVTX ranges (GPU projection)").table(nv, [
            Column("Range", "Range", "name"), Column("Instances", "Range Instances", "int"),
            Column("GPU time (projected)", "Total Proj Time (ns)", "ns"), Column("Range time", "Total Range Time (ns)",
                                                                                   "ns"),
            Column("Proj avg", "Proj Avg (ns)", "ns"), Column("Proj StdDev", "Proj StdDev (ns)", "ns"),
            Column("GPU ops", "Total GPU Ops", "int"), Column("Level", "Avg Range Lvl", "float")]))
    api = t.get("api", pd.DataFrame())
    if len(api):
        out.append(Section("api", "CUDA API").table(api, [
            Column("Time %", "Time (%)", "pct"), Column("Total", "Total Time (ns)", "ns"),
            Column("Calls", "Num Calls", "int"), Column("Avg", "Avg (ns)", "ns"), Column("Max", "Max (ns)", "ns"),
            Column("Name", "Name", "name")], limit=40))
    return out


IT_CHART_MAX = 500
IT_COLS = [Column("Iteration", "name", "name"), Column("Wall", "duration_ns", "ns"),
           Column("GPU busy", "gpu_busy_ns", "ns"), Column("Busy %", "gpu_busy_pct", "pct"),
           Column("Idle", "idle_ns", "ns"), Column("Largest gap", "largest_gap_ns", "ns"),
           Column("Kernels", "kernels", "int"), Column("Kernel time", "kernel_ns", "ns"),
           Column("Memcpy time", "memcpy_ns", "ns"), Column("Memcpy bytes", "memcpy_bytes", "bytes"),
           Column("Sync", "sync_ns", "ns"), Column("Launch to GPU start", "launch_overhead_ns", "ns"),
           Column("Note", "note")]


def iterations_spec(it: Any) -> dict[str, Any]:
    """Spec of the iterations chart: wall and GPU busy per iteration (the first 500), the axis cap
    (15% above the slowest steady iteration) and the steady median."""
    t = it.table.head(IT_CHART_MAX)
    items = [{"label": str(r.name), "wall": int(r.duration_ns), "busy": None if r.gpu_busy_ns is pd.NA
              else int(r.gpu_busy_ns), "warmup": bool(r.warmup),
              "outlier": str(r.outlier)} for r in t.itertuples(index=False)]
    st = it.steady_table
    cap = int(st["duration_ns"].max() * 1.15) if len(st) else int(it.table["duration_ns"].max())
    median = it.steady["duration_ns"]["median"] if it.steady else None
    return {"items": items, "cap": cap, "median": _finite(median)}


def iterations_section(it: Any) -> Section | None:
    """Iterations: steady-state numbers, wall vs GPU busy per iteration (warm-up marked), the table."""
    if it is None or it.table.empty:
        return None
    s = it.steady
    sec = Section("iterations", "Iterations")
    sec.text(f"{len(it.table):,} iteration{'s' if len(it.table) != 1 else ''}, from {it.source}.")
    if s:
        d, b = s["duration_ns"], s["gpu_busy_pct"]
        sec.kv([
            ("steady state", scope_label(it).removeprefix("steady state, ")),
            ("warm-up", ", ".join(s["warmup"]) or "none"),
            ("iteration time, median", fmt_ns(d["median"])),
            ("spread (min to max, CV)", f"{fmt_ns(d['min'])} to {fmt_ns(d['max'])}"
                                        + (f", {d['cv']:.0%}" if d["cv"] is not None else "")),
            ("GPU busy, median", f"{fmt_ns(s['gpu_busy_ns']['median'])} ({b['median']:.1f}%)"
             if b["median"] is not None else "not measured (no GPU activity in the capture)"),
            ("sync per iteration, median", fmt_ns(s["sync_ns"]["median"])),
            ("launch to GPU start, median", fmt_ns(s["launch_overhead_ns"]["median"])),
            ("outliers", ", ".join(f"{o['name']} ({o['kind']})" for o in s["outliers"]) or "none"),
        ])
    cap = "" if len(it.table) <= IT_CHART_MAX else f" (the first {IT_CHART_MAX:,} of {len(it.table):,})"
    sec.chart("iterations", iterations_spec(it),
              f"Each iteration{cap}: wall time of its range (grey, warm-up orange) and the time the GPU was busy "
              "inside it (blue); dashed: the steady-state median.  A column cut at the top carries its value.")
    table = it.table.assign(note=[("warm-up" if w else o) for w, o in zip(it.table["warmup"], it.table["outlier"],
                                                                           strict=True)])
    sec.table(table, IT_COLS, limit=1000)
    top = (s or {}).get("top_kernels") or []
    if top:
        sec.table(pd.DataFrame(top), [Column("Kernel", "name", "name"), Column("Per iteration", "per_iteration_ns",
                                                                              "ns"),
                                      Column("Launches per iteration", "launches_per_iteration", "float"),
                                      Column("% of kernel time", "share_pct", "pct")],
                  title="Top kernels of the steady state")
    return sec


def ncu_sections(summary: Any, roof: pd.DataFrame, peaks: dict[str, float],
                 copy_bytes_per_s: float | None = None) -> list[Section]:
    """An Nsight Compute capture: roofline, per-kernel table, ncu's findings."""
    k = summary.kernels
    out = [Section("summary", "Summary").kv([
        ("kernels profiled", f"{len(k):,}"),
        ("GPU time profiled", fmt_ns(float(pd.to_numeric(k.get("duration_ns"), errors="coerce").sum()))
         if len(k) else "-"),
        ("DRAM peak", f"{peaks['dram_bytes_per_s'] / 1e9:,.0f} GB/s" if "dram_bytes_per_s" in peaks else "-"),
        ("FP32 peak", f"{peaks['fp32'] / 1e12:,.1f} TFLOP/s" if "fp32" in peaks else "-"),
    ])]
    for note in summary.notes:
        out[0].text(note, "caption")
    rs = Section("roofline", "Roofline")
    if len(roof) and peaks.get("dram_bytes_per_s"):
        points = [{"label": str(r.kernel), "short": _short(str(r.kernel)) + f" #{r.kernel_id}",
                   "precision": r.precision, "intensity": _finite(r.intensity_flop_per_byte),
                   "flops": _finite(r.flop_per_s), "pct": _finite(r.pct_of_peak_flops), "bound": r.bound}
                  for r in roof.itertuples(index=False)]
        roofs = {k: v for k, v in peaks.items() if math.isfinite(v)}
        rs.chart("roofline", {"peaks": roofs, "points": points, "copy_bytes_per_s": copy_bytes_per_s},
                 "Each kernel's floating-point work per DRAM byte against the roofs ncu measures on this GPU "
                 "(its roofline section: peak FMA rate x SM clock, DRAM bytes per cycle x DRAM clock).")
        rs.table(roof, [Column("Kernel", "kernel", "name"), Column("ID", "kernel_id", "int"),
                        Column("Precision", "precision"), Column("FLOP/s", "flop_per_s", "si"),
                        Column("% of peak", "pct_of_peak_flops", "pct"), Column("DRAM B/s", "dram_bytes_per_s", "si"),
                        Column("FLOP/byte", "intensity_flop_per_byte", "float"),
                        Column("Ridge", "ridge_flop_per_byte", "float"), Column("Bound", "bound")])
    else:
        rs.text("No roofline: this capture has no floating-point work or lacks the roofline metrics "
                "(profile with --set full, and load the .ncu-rep or its raw-page CSV).", "caption")
    out.append(rs)
    out.append(Section("kernels", "Kernels").table(k, [
        Column("ID", "kernel_id", "int"), Column("Kernel", "kernel", "name"), Column("Duration", "duration_ns", "ns"),
        Column("DRAM GB/s", "dram_bytes_per_s", "si"), Column("DRAM % peak", "dram_pct_of_peak", "pct"),
        Column("SOL memory", "sol_memory_pct", "pct"), Column("SOL compute", "sol_compute_pct", "pct"),
        Column("Achieved occ.", "achieved_occupancy_pct", "pct"),
        Column("Theoretical occ.", "theoretical_occupancy_pct", "pct"), Column("Limiters", "limiters"),
        Column("Waves/SM", "waves_per_sm", "float"), Column("Registers", "registers_per_thread", "int"),
        Column("Verdict", "verdict"), Column("NVTX", "nvtx_range", "name"), Column("What it is", "decoded", "name")]))
    rules = summary.rules
    if len(rules):
        out.append(Section("rules", "Nsight Compute's findings").table(rules, [
            Column("Kernel", "kernel_id", "int"), Column("Section", "section"), Column("Rule", "rule"),
            Column("Type", "type"), Column("Est. speedup", "speedup_pct", "pct"),
            Column("What ncu says", "description", "name")], limit=200))
    return out


def _short(name: str) -> str:
    base = name.split("(")[0].split("<")[0].strip().split(" ")[-1]
    return base[:28]


def bench_sections(b: dict[str, Any]) -> list[Section]:
    """A ``bench`` run: bandwidth against size per variant, and the table."""
    rows = pd.DataFrame(b.get("rows") or [])
    out = [Section("summary", "Summary").kv([
        ("workload", str(b.get("workload"))), ("device", str(b.get("device"))), ("dtype", str(b.get("dtype"))),
        ("measured copy bandwidth", f"{b['copy_gbps']:,.0f} GB/s" if b.get("copy_gbps") else "-"),
    ])]
    ok = rows[rows["status"] == "ok"] if len(rows) else rows
    series = [{"name": str(v), "points": [[int(s), float(g)] for s, g in zip(grp["size"], grp["gbps"], strict=True)
                                          if g and not math.isnan(float(g))]}
              for v, grp in ok.groupby("variant", sort=False)] if len(ok) else []
    series = [s for s in series if s["points"]]
    sec = Section("bandwidth", "Bandwidth against size")
    if series:
        sec.chart("lines", {"series": series, "xlabel": "size (elements)", "ylabel": "achieved GB/s", "yunit": "GB/s",
                            "hline": {"value": b["copy_gbps"], "label": f"measured copy {b['copy_gbps']:,.0f} GB/s"}
                            if b.get("copy_gbps") else None},
                  "Bytes the operation must move divided by its median time, per variant; the dashed line is the "
                  "device-to-device copy bandwidth measured in the same run.")
    else:
        sec.text("No variant ran successfully: nothing to draw.", "caption")
    out.append(sec)
    roof = _bench_roofline(ok, b.get("copy_gbps"), str(b.get("dtype")))
    if roof:
        out.append(Section("roofline", "Roofline (measured bandwidth)").chart(
            "roofline", roof, "Each variant and size: the FLOPs the operation must do per byte it must move, against "
            "the achieved FLOP/s; the line is the copy bandwidth measured in this run (bench measures no FLOP "
            "peak: nsighttk ncu gives the compute roofs)."))
    out.append(Section("variants", "Variants").table(rows, [
        Column("Variant", "variant"), Column("Size", "size", "int"), Column("Status", "status"),
        Column("Median ms", "median_ms", "sig"), Column("p20 ms", "p20_ms", "sig"),
        Column("p80 ms", "p80_ms", "sig"), Column("Reps", "reps", "int"), Column("GB/s", "gbps", "gbps"),
        Column("% of copy", "pct_of_copy", "pct"), Column("TFLOP/s", "tflops", "sig"),
        Column("Speedup", "speedup_vs_baseline", "float"), Column("Why", "reason", "name")], limit=1000))
    return out


def _bench_roofline(ok: pd.DataFrame, copy_gbps: float | None, dtype: str) -> dict[str, Any] | None:
    if ok.empty or not copy_gbps or "tflops" not in ok:
        return None
    points = []
    for r in ok.itertuples(index=False):
        tflops, gbps = _finite(getattr(r, "tflops", None)), _finite(getattr(r, "gbps", None))
        if tflops and gbps:
            points.append({"label": f"{r.variant} @ {int(r.size):,}", "short": f"{r.variant} {_size(int(r.size))}",
                           "precision": dtype, "intensity": tflops * 1e12 / (gbps * 1e9), "flops": tflops * 1e12,
                           "pct": gbps / copy_gbps * 100, "bound": "memory"})  # % of the roof at its intensity
    if not points:
        return None
    return {"peaks": {"dram_bytes_per_s": copy_gbps * 1e9}, "points": points, "bw_label": "measured copy"}


def _size(n: int) -> str:
    e = n.bit_length() - 1
    return f"2^{e}" if n == 1 << e and e >= 10 else f"{n:,}"


def compare_sections(cmp: Any, top: int = 40) -> list[Section]:
    """``nsighttk compare``: change per item with its 95% interval, and the table."""
    t = cmp.table
    counts = t["change"].value_counts().to_dict()
    out = [Section("compare", "Comparison").kv([
        ("before", f"{', '.join(cmp.before)} ({cmp.targets[0]})"),
        ("after", f"{', '.join(cmp.after)} ({cmp.targets[1]})"),
        ("changes", ", ".join(f"{counts.get(k, 0)} {k}" for k in CHANGES)),
    ])]
    both = t.dropna(subset=["change_pct"])
    both = both.reindex(both["change_pct"].abs().sort_values(ascending=False).index).head(top)
    if len(both):
        items = [{"label": f"[{r.kind}] {r.name}", "pct": float(r.change_pct), "lo": _finite(r.ci_low_pct),
                  "hi": _finite(r.ci_high_pct), "change": r.change} for r in both.itertuples(index=False)]
        out[0].chart("delta", {"items": items},
                     "Change of the mean time per item, after vs before (red slower, green faster, grey within "
                     "noise or unclear: one run on a side); black whiskers: the 95% interval of the change "
                     "(repeated runs only).")
    out[0].table(t, [Column("Change", "change"), Column("Kind", "kind"), Column("Name", "name", "name"),
                     Column("Before", "before_ns", "ns"), Column("After", "after_ns", "ns"),
                     Column("Delta", "change_pct", "pct"), Column("95% low", "ci_low_pct", "pct"),
                     Column("95% high", "ci_high_pct", "pct"), Column("Calls before", "calls_before", "int"),
                     Column("Calls after", "calls_after", "int"), Column("Occ. before", "occupancy_pct_before", "pct"),
                     Column("Occ. after", "occupancy_pct_after", "pct"), Column("GB/s before", "gbps_before", "gbps"),
                     Column("GB/s after", "gbps_after", "gbps")], limit=1000)
    return out


def compiled_sections(kernels: list[dict[str, Any]]) -> list[Section]:
    """An ``inspect`` run: the compiled kernels with their resources."""
    df = pd.DataFrame(kernels)
    return [Section("compiled", "Compiled kernels").table(df, [
        Column("Variant", "variant"), Column("Kernel", "kernel", "name"), Column("Source", "source"),
        Column("Arch", "arch"), Column("Warps", "num_warps", "int"), Column("Stages", "num_stages", "int"),
        Column("Registers", "registers", "int"), Column("Stack", "stack_bytes", "bytes"),
        Column("Local (spills)", "local_bytes", "bytes"), Column("Shared", "shared_bytes", "bytes"),
        Column("Theo. occupancy", "theoretical_occupancy_pct", "pct"), Column("Limited by", "limiters"),
        Column("SASS", "sass", "name")])]


#: from this many ranks on, the ranks section draws no bar per rank
MANY_RANKS = 16


def ranks_heatmap(heatmap: dict[str, Any], values: str = "values", what: str = "iteration time") -> Section:
    """Ranks x iterations (the data of :attr:`nsighttk.analysis.comm.rank_summary.Fleet.heatmap`), each cell
    coloured by how far it lies above its iteration's median over ranks, as the ``*_gpu_time_util_map``
    recipes of nsys draw ranks x time."""
    spec = {"ranks": heatmap["ranks"], "iterations": heatmap["iterations"], "warmup": heatmap["warmup"],
            "values": heatmap[values]}
    return Section(f"ranks-{values}", f"Ranks x iterations: {what}").chart(
        "heatmap", spec, f"{what} per rank (rows) and iteration (columns), red where a rank took longer than the "
        "iteration's median rank; start-up iterations in grey. Hover a cell for its figure.")


def ranks_sections(rows: list[dict[str, Any]], heatmap: dict[str, Any] | None = None) -> list[Section]:
    """A multi-rank run: kernel time per rank (the slowest stands out; from :data:`MANY_RANKS` ranks on,
    its distribution), the ranks x iterations heatmaps when the ranks' iterations were found, and the
    table."""
    df = pd.DataFrame(rows)
    if df.empty:
        return [Section("ranks", "Ranks").text("No rank wrote a capture.", "caption")]
    # the slowest: the rank the others wait for (the table's ``slowest``), else the most kernel time
    marked = df[df["slowest"].astype(bool)] if "slowest" in df else df.iloc[0:0]
    slowest = marked.iloc[0] if len(marked) else df.loc[df["kernel_time_ns"].idxmax()]
    sec = Section("ranks", "Ranks").kv([
        ("ranks", f"{len(df)}"), ("slowest rank", f"{int(slowest['rank'])} ({slowest['vs_mean_pct']:+.1f}% vs mean)"),
        ("kernel time, slowest", fmt_ns(float(slowest["kernel_time_ns"]))),
    ])
    extra = []
    if heatmap:
        extra = [ranks_heatmap(heatmap)] + ([ranks_heatmap(heatmap, "waits", "waiting in collectives")]
                                            if heatmap.get("waits") else [])
    if len(df) >= MANY_RANKS:
        kt = df["kernel_time_ns"].astype("float64")
        sec.kv([("kernel time, median", fmt_ns(float(kt.median()))),
                ("kernel time, p95", fmt_ns(float(kt.quantile(0.95)))), ("kernel time, max", fmt_ns(float(kt.max())))])
    else:
        items = [{"label": f"rank {int(r['rank'])}", "value": int(r["kernel_time_ns"]), "count": int(r["kernels"]),
                  "kind": "kernel"} for r in rows]
        sec.chart("bars", {"items": items, "total": int(df["kernel_time_ns"].sum())},
                  "Kernel time per rank (each rank's own nsys capture).")
    sec.table(df, [Column("Rank", "rank", "int"), Column("Capture", "capture"), Column("Kernels", "kernels", "int"),
                   Column("Kernel time", "kernel_time_ns", "ns"), Column("vs mean", "vs_mean_pct", "pct"),
                   Column("GPU busy", "gpu_busy_ns", "ns"), Column("GPU span", "gpu_span_ns", "ns"),
                   Column("Memcpy bytes", "memcpy_bytes", "bytes"), Column("Top kernel", "top_kernel", "name"),
                   Column("Top kernel time", "top_kernel_ns", "ns")])
    return [sec, *extra]
