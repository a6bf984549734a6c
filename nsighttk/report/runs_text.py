"""Terminal views of the runs database (``nsighttk runs``) and of a multi-rank summary (``nsighttk ranks``)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from nsighttk.units import fmt_ns, shorten

_SHOW = ("id", "tool", "target", "status", "started_utc", "finished_utc", "wall_s", "arch", "gpu", "tools",
         "command", "run_dir", "job_id", "job_task", "job_state", "error", "nsighttk_version")


def _table(title: str, columns: list[tuple[str, str]]) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold", pad_edge=False)
    for name, justify in columns:
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    return t


def render_list(rows: list[dict[str, Any]], db_path: Any, console: Console) -> None:
    if not rows:
        console.print(f"no runs match in {db_path}")
        return
    t = _table(f"runs in {db_path}", [(c, "left") for c in ("id", "tool", "target", "status", "started (UTC)",
                                                             "GPU", "job")])
    for r in rows:
        job = ""
        if r.get("job_id"):
            task = f"_{r['job_task']}" if r.get("job_task") else ""
            job = f"{r['job_id']}{task} {r['job_state'] or ''}".strip()
        t.add_row(r["id"], r["tool"] or "", r["target"] or "", r["status"] or "",
                  str(r.get("started_utc") or "")[:19].replace("T", " "), r["gpu"] or "-", job)
    console.print(t)


def render_show(run: dict[str, Any], tables: dict[str, list[dict[str, Any]]], console: Console) -> None:
    for k in _SHOW:
        if run.get(k) not in (None, "", "null", "{}"):
            console.print(f"{k:>16s}: {run[k]}", markup=False)
    for name, rows in tables.items():
        console.print(f"{'table ' + name:>16s}: {len(rows)} rows", markup=False)


def render_jobs(jobs: list[dict[str, Any]], console: Console) -> None:
    if not jobs:
        console.print("no Slurm jobs recorded (nsighttk submit -- nsighttk ... sends one)")
        return
    t = _table("Slurm jobs", [(c, "left") for c in ("job", "name", "state", "seen via", "submitted (UTC)",
                                                     "runs", "job directory")])
    for j in jobs:
        runs = str(j["runs"]) if j.get("imported_utc") else "-"
        t.add_row(str(j["job_id"]), j.get("name") or "", j.get("state") or "", j.get("source") or "",
                  str(j.get("submitted_utc") or "")[:19].replace("T", " "), runs, j.get("run_dir") or "")
    console.print(t)
    if any(not j.get("imported_utc") for j in jobs):
        console.print("jobs still queued or running are imported by the next `nsighttk runs list` or `runs jobs` "
                      "after they end")


def render_ranks(df: pd.DataFrame, console: Console) -> None:
    t = _table(f"{len(df)} ranks", [("Rank", "right"), ("Kernels", "right"), ("Kernel time", "right"),
                                    ("vs mean", "right"), ("GPU busy", "right"), ("Span", "right"),
                                    ("Top kernel", "left"), ("Capture", "left")])
    for r in df.itertuples(index=False):
        t.add_row(f"{r.rank}{' *' if r.slowest else ''}", f"{r.kernels:,}", fmt_ns(r.kernel_time_ns),
                  f"{r.vs_mean_pct:+.1f}%", fmt_ns(r.gpu_busy_ns), fmt_ns(r.gpu_span_ns),
                  f"{shorten(r.top_kernel, 50)} ({fmt_ns(r.top_kernel_ns)})", r.capture)
    console.print(t)
    slow = df[df["slowest"]].iloc[0]
    console.print(f"  slowest rank: {slow['rank']} ({fmt_ns(slow['kernel_time_ns'])} of kernels, "
                  f"{slow['vs_mean_pct']:+.1f}% vs the mean); * marks it")
