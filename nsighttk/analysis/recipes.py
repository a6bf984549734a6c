"""Nsight Systems' multi-report recipes ``nccl_sum`` and ``cuda_gpu_kern_sum``, computed as ``nsys
recipe`` computes them, over many captures (one per rank).

Both are map-reduce: each capture maps to its own statistics table (:func:`nccl_sum_stats`,
:func:`kern_sum_stats`), small enough to travel from a worker; the reduce (:func:`reduce`) orders the
captures by file name (natural order: ``rank2`` before ``rank10``), numbers them 0, 1, ... as
``Rank``, and writes

* ``files``: ``Rank`` -> ``File`` (the file's name less its extension);
* ``rank_stats``: every capture's table with its ``Rank``;
* ``all_stats``: one row per name over all captures; ``Total Time`` and ``Instances`` are sums,
  ``Avg`` their ratio, ``Min``/``Max`` the extremes; the quartiles and the standard deviation of all
  instances together cannot be had from per-capture tables, so, as nsys, approximations named so:
  ``Q1 (approx)``, ``Median (approx)``, ``Q3 (approx)``: the per-capture values averaged with the
  captures' instance counts as weights; ``Std (approx)``: the pooled within-capture standard
  deviation ``sqrt(sum((n_i - 1) s_i^2) / sum(n_i - 1))``.
* ``rank_stats_by_device`` (``cuda_gpu_kern_sum``): per capture, per kernel name and device.

Per capture, per name (``describe``): ``Time`` (% of the capture's summed ``Total Time``), ``Total
Time``, ``Instances``, ``Avg``, ``Q1``, ``Med``, ``Q3`` (pandas' linear quantiles), ``Min``,
``Max``, ``StdDev`` (sample, NaN for one instance), all in ns, rows by ``Total Time`` descending.
Only instances with a positive duration count (nsys drops the others).

``nccl_sum`` reads the NVTX ranges NCCL annotates (domain ``NCCL``: ``ncclAllReduce``,
``ncclBroadcast``, ...), grouped by text; ``cuda_gpu_kern_sum`` the kernels, grouped by their short
name (the ``shortName`` string nsys stores).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.profile import Profile

#: The recipes this module computes: name -> the index column of its tables.
RECIPES = {"nccl_sum": "Text", "cuda_gpu_kern_sum": "Name"}
STATS_COLUMNS = ["Time", "Total Time", "Instances", "Avg", "Q1", "Med", "Q3", "Min", "Max", "StdDev"]
ALL_COLUMNS = ["Time", "Total Time", "Instances", "Avg", "Q1 (approx)", "Median (approx)", "Q3 (approx)", "Min",
               "Max", "Std (approx)"]


def describe(durations: pd.Series, by: pd.Series | list[pd.Series], index: str | list[str]) -> pd.DataFrame:
    """Per group of ``by``: the statistics of ``durations`` (module doc), index named ``index``."""
    g = durations.astype("int64").groupby(by, sort=True)
    out = pd.DataFrame({
        "Total Time": g.sum(), "Instances": g.count(), "Avg": g.mean(), "Q1": g.quantile(0.25),
        "Med": g.median(), "Q3": g.quantile(0.75), "Min": g.min(), "Max": g.max(), "StdDev": g.std()})
    total = out["Total Time"].sum()
    out.insert(0, "Time", out["Total Time"] / total * 100 if total else 0.0)
    out.index.names = [index] if isinstance(index, str) else index
    return out.sort_values("Total Time", ascending=False, kind="mergesort")


def nccl_sum_stats(p: Profile) -> pd.DataFrame | None:
    """One capture's ``nccl_sum`` table; None when it has no NCCL range."""
    nv = p.nvtx
    if not len(nv):
        return None
    nccl = nv[(nv["domain"].astype(str) == "NCCL") & nv["end_ns"].notna()]
    dur = (nccl["end_ns"].astype("int64") - nccl["start_ns"].astype("int64"))
    keep = dur > 0
    if not keep.any():
        return None
    return describe(dur[keep], nccl.loc[keep, "name"].astype(str), "Text")


def kern_sum_stats(p: Profile) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """One capture's ``cuda_gpu_kern_sum`` tables (by name; by name and device); None without kernels."""
    k = p.kernels
    if not len(k):
        return None
    dur = k["end_ns"].astype("int64") - k["start_ns"].astype("int64")
    keep = dur > 0
    if not keep.any():
        return None
    k = k[keep]
    names = k["short_name"].astype(str) if "short_name" in k else k["name"].astype(str)
    by_name = describe(dur[keep], names, "Name")
    by_device = describe(dur[keep], [names, k["device_id"].astype("int64")], ["Name", "Device ID"])
    return by_name, by_device


def natural_key(text: str) -> list[Any]:
    """Sort key reading runs of digits as numbers (``rank2`` < ``rank10``)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def aggregate(rank_stats: pd.DataFrame, index: str) -> pd.DataFrame:
    """``all_stats`` from ``rank_stats`` (module doc)."""
    df = rank_stats.reset_index()
    n = df["Instances"].astype("float64")
    df = df.assign(_q1=df["Q1"] * n, _med=df["Med"] * n, _q3=df["Q3"] * n,
                   _ss=(n - 1).clip(lower=0) * df["StdDev"].fillna(0) ** 2, _dof=(n - 1).clip(lower=0))
    g = df.groupby(index, sort=True)
    s = g.agg(total=("Total Time", "sum"), inst=("Instances", "sum"), q1=("_q1", "sum"), med=("_med", "sum"),
              q3=("_q3", "sum"), mn=("Min", "min"), mx=("Max", "max"), ss=("_ss", "sum"), dof=("_dof", "sum"))
    inst = s["inst"].astype("float64")
    out = pd.DataFrame({
        "Total Time": s["total"], "Instances": s["inst"], "Avg": s["total"] / inst, "Q1 (approx)": s["q1"] / inst,
        "Median (approx)": s["med"] / inst, "Q3 (approx)": s["q3"] / inst, "Min": s["mn"], "Max": s["mx"],
        "Std (approx)": np.sqrt(s["ss"] / s["dof"].where(s["dof"] > 0))})
    total = out["Total Time"].sum()
    out.insert(0, "Time", out["Total Time"] / total * 100 if total else 0.0)
    out.index.name = index
    return out.sort_values("Total Time", ascending=False, kind="mergesort")


def reduce(name: str, per_file: list[tuple[str, Any]]) -> dict[str, pd.DataFrame]:
    """The recipe's output tables from ``(file stem, mapper result)`` pairs (results None left out)."""
    index = RECIPES[name]
    got = sorted(((f, r) for f, r in per_file if r is not None), key=lambda x: natural_key(x[0]))
    files = pd.DataFrame({"File": [f for f, _ in got]}).rename_axis("Rank")
    if not got:
        return {"files": files}
    if name == "cuda_gpu_kern_sum":
        stats = [r[0] for _, r in got]
        by_device = pd.concat([d.assign(Rank=i) for i, (_, (_, d)) in enumerate(got)])
    else:
        stats = [r for _, r in got]
    rank_stats = pd.concat([s.assign(Rank=i) for i, s in enumerate(stats)])
    out = {"files": files, "rank_stats": rank_stats, "all_stats": aggregate(rank_stats, index)}
    if name == "cuda_gpu_kern_sum":
        out["rank_stats_by_device"] = by_device
    return out
