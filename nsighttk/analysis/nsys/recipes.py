"""Nsight Systems' multi-report recipes ``nccl_sum`` and ``cuda_gpu_kern_sum``, computed as ``nsys
recipe`` computes them, over many captures (one per rank).

Both are map-reduce: each capture maps to its own statistics table (:func:`nccl_sum_stats`,
:func:`kern_sum_stats`), small enough to travel from a worker; the reduce (:func:`reduce`) orders the
captures by file name (natural order: ``rank2`` before ``rank10``), numbers them 0, 1, ... as
``Rank``, and writes

* ``files``: ``Rank`` -> ``File`` (the file's name less its extension);
* ``rank_stats``: every capture's table with its ``Rank``;
* ``all_stats``: one row per name over all captures; ``Count`` and ``Sum`` are sums, ``Mean`` their
  ratio, ``Min``/``Max`` the extremes; the quartiles and the standard deviation of all instances
  together cannot be had from per-capture tables, so, as nsys (checked against its 2025.3.1 output
  in tests/fixtures/h200-unannotated/ddp/nsys_recipe_*), approximations named so: ``Q1 (approx)``
  the smallest capture's Q1, ``Q3 (approx)`` the largest Q3, ``Median (approx)`` the median of the
  captures' medians, ``Std (approx)`` the mean of their standard deviations (captures with one
  instance, whose is empty, left out).
* ``rank_stats_by_device`` (``cuda_gpu_kern_sum``): per capture, per kernel name and device.

Per capture, per name (``describe``), rows by name: ``Count``, ``Mean``, ``Std`` (sample, empty for
one instance), ``Min``, ``Q1``, ``Median``, ``Q3`` (pandas' linear quantiles), ``Max``, ``Sum``,
all in ns; floats rounded to 0.1 ns as nsys writes them.  Only instances with a positive duration
count (nsys drops the others).

``nccl_sum`` reads the NVTX ranges NCCL annotates (domain ``NCCL``: ``ncclAllReduce``,
``ncclBroadcast``, ...), grouped by text; ``cuda_gpu_kern_sum`` the kernels, grouped by their short
name (the ``shortName`` string nsys stores).
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from nsighttk.profile import Profile

#: The recipes this module computes: name -> the index column of its tables.
RECIPES = {"nccl_sum": "Text", "cuda_gpu_kern_sum": "Name"}
STATS_COLUMNS = ["Count", "Mean", "Std", "Min", "Q1", "Median", "Q3", "Max", "Sum"]
ALL_COLUMNS = ["Count", "Mean", "Std (approx)", "Min", "Q1 (approx)", "Median (approx)", "Q3 (approx)", "Max", "Sum"]
#: nsys writes the statistics rounded to this many decimals
DECIMALS = 1


def _rounded(df: pd.DataFrame) -> pd.DataFrame:
    floats = [c for c in df.columns if df[c].dtype.kind == "f"]
    return df.assign(**{c: df[c].round(DECIMALS) for c in floats})


def describe(durations: pd.Series, by: pd.Series | list[pd.Series], index: str | list[str]) -> pd.DataFrame:
    """Per group of ``by`` (in order): the statistics of ``durations`` (module doc), index named ``index``."""
    g = durations.groupby(by, sort=True)
    out = pd.DataFrame({
        "Count": g.count(), "Mean": g.mean(), "Std": g.std(), "Min": g.min(), "Q1": g.quantile(0.25),
        "Median": g.median(), "Q3": g.quantile(0.75), "Max": g.max(), "Sum": g.sum()})
    out.index.names = [index] if isinstance(index, str) else index
    return _rounded(out)


def nccl_sum_stats(p: Profile) -> pd.DataFrame | None:
    """One capture's ``nccl_sum`` table; None when it has no NCCL range."""
    nv = p.nvtx
    if not len(nv):
        return None
    nccl = nv[(nv["domain"].astype(str) == "NCCL") & nv["end_ns"].notna()]
    # (floats, as nsys has them: NVTX ends may be missing, so its column is a float one)
    dur = nccl["end_ns"].astype("float64") - nccl["start_ns"].astype("float64")
    keep = dur > 0
    if not keep.any():
        return None
    return describe(dur[keep], nccl.loc[keep, "name"].astype(str), "Text")


def kern_sum_stats(p: Profile) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """One capture's ``cuda_gpu_kern_sum`` tables (by name; by name and device); None without kernels."""
    k = p.kernels
    if not len(k):
        return None
    dur = (k["end_ns"].astype("int64") - k["start_ns"].astype("int64")).astype("int64")
    keep = dur > 0
    if not keep.any():
        return None
    k = k[keep]
    names = k["short_name"].astype(str) if "short_name" in k else k["name"].astype(str)
    by_name = describe(dur[keep], names, "Name")
    devices = k["device_id"].astype("uint32")  # (nsys: uint32)
    by_device = describe(dur[keep], [names, devices], ["Name", "Device ID"])
    return by_name, by_device


def natural_key(text: str) -> list[Any]:
    """Sort key reading runs of digits as numbers (``rank2`` < ``rank10``)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def aggregate(rank_stats: pd.DataFrame, index: str) -> pd.DataFrame:
    """``all_stats`` from ``rank_stats`` (module doc)."""
    g = rank_stats.groupby(level=index, sort=True)
    out = pd.DataFrame({
        "Count": g["Count"].sum(), "Mean": g["Sum"].sum() / g["Count"].sum(), "Std (approx)": g["Std"].mean(),
        "Min": g["Min"].min(), "Q1 (approx)": g["Q1"].min(), "Median (approx)": g["Median"].median(),
        "Q3 (approx)": g["Q3"].max(), "Max": g["Max"].max(), "Sum": g["Sum"].sum()})
    out.index.name = index
    return _rounded(out)


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
