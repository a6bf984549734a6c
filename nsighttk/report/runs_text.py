"""Terminal views of the runs database (``nsighttk runs``) and of a multi-rank summary (``nsighttk ranks``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from nsighttk import escape
from nsighttk.report import kernel_label
from nsighttk.report.layout import Col, Flex, middle, pairs, para, table
from nsighttk.units import fmt_count, fmt_ns

_SHOW = ("id", "tool", "target", "status", "started_utc", "finished_utc", "wall_s", "arch", "gpu", "tools",
         "command", "run_dir", "job_id", "job_task", "job_state", "error", "nsighttk_version")


def render_list(rows: list[dict[str, Any]], db_path: Any, console: Console) -> None:
    if not rows:
        para(console, f"no runs match in {db_path}")
        return
    out: list[list[Any]] = []
    for r in rows:
        job = ""
        if r.get("job_id"):
            task = f"_{r['job_task']}" if r.get("job_task") else ""
            job = f"{r['job_id']}{task} {r['job_state'] or ''}".strip()
        out.append([Flex(str(r["id"])), str(r["tool"] or ""), Flex(str(r["target"] or "")), str(r["status"] or ""),
                    str(r.get("started_utc") or "")[:19].replace("T", " "), str(r["gpu"] or "-"), job])
    table(console, [Col("id", "left", flex=True, min_width=24), Col("tool", "left"),
                    Col("target", "left", drop=1, max_width=30), Col("status", "left"),
                    Col("started (UTC)", "left", drop=2), Col("GPU", "left", drop=3, max_width=24),
                    Col("job", "left", drop=4)], out, f"runs in {escape.term(db_path)}")


def render_show(run: dict[str, Any], tables: dict[str, list[dict[str, Any]]], console: Console) -> None:
    items = [(k, str(run[k])) for k in _SHOW if run.get(k) not in (None, "", "null", "{}")]
    items += [(f"table {name}", f"{len(rows)} rows") for name, rows in tables.items()]
    pairs(console, items, label_width=16, indent="")


def render_jobs(jobs: list[dict[str, Any]], console: Console) -> None:
    if not jobs:
        para(console, "no Slurm jobs recorded (nsighttk submit -- nsighttk ... sends one)")
        return
    rows = [[str(j["job_id"]), str(j.get("name") or ""), str(j.get("state") or ""), str(j.get("source") or ""),
             str(j.get("submitted_utc") or "")[:19].replace("T", " "), str(j["runs"]) if j.get("imported_utc") else "-",
             middle(j.get("run_dir") or "")] for j in jobs]
    table(console, [Col("job", "left"), Col("name", "left", drop=3, max_width=30), Col("state", "left"),
                    Col("seen via", "left", drop=2), Col("submitted (UTC)", "left", drop=1), Col("runs"),
                    Col("job directory", "left", flex=True, min_width=20)], rows, "Slurm jobs")
    if any(not j.get("imported_utc") for j in jobs):
        para(console, "jobs still queued or running are imported by the next `nsighttk runs list` or `runs jobs` "
                      "after they end")


def render_ranks(skew: Any, console: Console) -> None:
    """``nsighttk ranks``: per rank its kernels, time computing, in collectives and waiting in them,
    GPU busy and top kernel; then who the others wait for and why (the verdict), and the
    iteration-time skew when the ranks have iterations."""
    df = skew.table
    tops = kernel_label.cells([str(k) for k in df["top_kernel"]])
    comm = bool(df["comm_ns"].sum()) if "comm_ns" in df else False
    rows = [[f"{r.rank}{' *' if r.slowest else ''}", fmt_count(r.kernels), fmt_ns(r.compute_ns),
             f"{r.vs_mean_pct:+.1f}%", fmt_ns(r.comm_ns) if comm else "-", fmt_ns(r.comm_wait_ns) if comm else "-",
             fmt_ns(r.gpu_busy_ns), fmt_ns(r.gpu_span_ns), top, fmt_ns(r.top_kernel_ns), middle(r.capture)]
            for r, top in zip(df.itertuples(index=False), tops, strict=True)]
    table(console, [Col("Rank"), Col("Kernels", drop=6), Col("Compute"), Col("vs mean", drop=3),
                    Col("Collectives", drop=2 if comm else 9), Col("Waiting", drop=1 if comm else 9),
                    Col("GPU busy", drop=5), Col("Span", drop=8), Col("Top kernel", "left", flex=True, min_width=24),
                    Col("its time", drop=7), Col("Capture", "left", drop=4, max_width=40)], rows,
          f"{len(df)} ranks (Compute: kernels other than collectives; Waiting: time in collectives beyond the "
          "rank that arrived last)")
    para(console, skew.verdict() + " (* marks it)", "  ", "    ")
    its = skew.iterations
    if its is not None and len(its):
        irows = [[str(r.rank), fmt_count(r.iterations), fmt_ns(r.mean_ns), fmt_ns(r.median_ns), fmt_ns(r.max_ns),
                  f"{r.vs_mean_pct:+.1f}%"] for r in its.itertuples(index=False)]
        table(console, [Col("Rank"), Col("Iterations"), Col("Mean"), Col("Median", drop=2), Col("Max", drop=1),
                        Col("vs mean")], irows, "steady-state iteration time per rank")
    for note in skew.notes:
        para(console, note, "  ", "    ", lead=Text("note: ", style="yellow"))


#: from this many ranks on, ``nsighttk ranks`` prints distributions instead of one row per rank
FLEET_FROM = 16

_FIGURE_NAMES = {"kernel_time_ns": "Kernel time", "compute_ns": "Compute", "comm_ns": "Collectives",
                 "comm_wait_ns": "Waiting", "gpu_busy_ns": "GPU busy", "gpu_span_ns": "GPU span",
                 "iteration_mean_ns": "Iteration (steady mean)"}


def _ns(v: Any) -> str:
    return "-" if v is None else fmt_ns(float(v))


def render_skipped(fleet: Any, console: Console) -> None:
    """The captures left out, one line each."""
    for s in fleet.skipped:
        para(console, f"{s['capture']}: {s['reason']}", "  ", "    ", lead=Text("skipped: ", style="yellow"))


def render_fleet(fleet: Any, console: Console, top: int = 10) -> None:
    """``nsighttk ranks`` over many ranks: the distribution of each per-rank figure, the ranks the
    others wait for and why, outliers, the iteration skew (steady state apart from start-up) and the
    late rank's delay split."""
    skew = fleet.skew
    rows = [[_FIGURE_NAMES[f], _ns(d["min"]), _ns(d["median"]), _ns(d["p95"]), _ns(d["max"])]
            for f, d in fleet.distribution.items() if d["median"] is not None]
    table(console, [Col("Per rank", "left"), Col("Min", drop=2), Col("Median"), Col("p95"), Col("Max")], rows,
          f"{len(skew.table)} ranks (Compute: kernels other than collectives; Waiting: time in collectives beyond the "
          "rank that arrived last)")
    para(console, skew.verdict(), "  ", "    ")
    late = [[str(s["rank"]), _ns(s["others_wait_ns"]), _ns(s["comm_wait_ns"]), _ns(s["compute_vs_median_ns"]),
             s["why"]] for s in fleet.slowest[:top]]
    table(console, [Col("Rank"), Col("Others wait (vs median)"), Col("Its waiting", drop=2),
                    Col("Compute vs median", drop=1), Col("Why", "left", flex=True, min_width=20)], late,
          "the ranks the others wait for most")
    d = fleet.delay
    if d:
        pairs(console, [("late rank", str(d["rank"])), ("others' extra waiting", _ns(d["others_wait_ns"])),
                        ("host side (GPU idle longer)", _ns(d["host_side_ns"])),
                        ("longer kernels", _ns(d["longer_kernels_ns"])),
                        ("waiting on an earlier collective", _ns(d["earlier_collective_wait_ns"]))])
    if fleet.outliers:
        orows = [[str(o["rank"]), _FIGURE_NAMES.get(o["figure"], o["figure"]), _ns(o["value"]), _ns(o["median"]),
                  o["kind"]] for o in fleet.outliers[:top]]
        table(console, [Col("Rank"), Col("Figure", "left"), Col("Value"), Col("Median"), Col("")], orows,
              f"outliers ({len(fleet.outliers)}: more than max(3 robust sd, 5%) from the median)")
    its = fleet.iteration_skew
    if its is not None and len(its):
        irows = [[str(r.name) + (" (start-up)" if r.warmup else ""), _ns(r.median_ns), _ns(r.spread_ns),
                  str(r.slowest_rank), _ns(r.compute_median_ns), _ns(r.wait_median_ns), _ns(r.wait_max_ns),
                  _ns(r.idle_median_ns)] for r in its.itertuples(index=False)]
        table(console, [Col("Iteration", "left"), Col("Median"), Col("Spread"), Col("Slowest", drop=1),
                        Col("Compute", drop=3), Col("Waiting", drop=2), Col("Waiting max", drop=4),
                        Col("GPU idle", drop=5)], irows, "per iteration, over ranks (medians unless said)")
    for note in skew.notes:
        para(console, note, "  ", "    ", lead=Text("note: ", style="yellow"))
    render_skipped(fleet, console)
