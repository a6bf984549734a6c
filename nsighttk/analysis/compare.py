"""Compare two runs (or two groups of repeated runs): per kernel, NVTX range, benchmark variant or
torch op, time before and after with a 95% confidence interval on the change, so noise is not
called a regression.

Input: the summary tables of :func:`nsighttk.runs.layout.summary_tables`.  Each becomes canonical
rows ``kind, name, n, mean_ns, sd_ns, occupancy_pct, gbps`` (:func:`items`).  Within a run the
spread comes from the tool: nsys' per-instance standard deviation, bench's 20th-80th percentile
spread over its repetitions; across repeated runs from the run-to-run spread of the means.  With one
run on a side there is no run-to-run spread to go on: a change is then ``unclear``, never called real.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

ITEM_COLUMNS = ["kind", "name", "n", "mean_ns", "sd_ns", "occupancy_pct", "gbps"]
#: p80 - p20 of a normal distribution, in standard deviations
_P20_P80 = 1.6832
Z95 = 1.96


def _num(v: Any) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan


def items(tables: dict[str, list[dict[str, Any]]]) -> pd.DataFrame:
    """Canonical comparable rows from a run's summary tables."""
    rows = []
    for r in tables.get("kernels", []):
        rows.append(("kernel", r.get("Name"), _num(r.get("Instances")), _num(r.get("Avg (ns)")),
                     _num(r.get("StdDev (ns)")), _num(r.get("Theoretical Occupancy (%)")), math.nan))
    for r in tables.get("nvtx", []):
        rows.append(("nvtx", r.get("Range"), _num(r.get("Range Instances")), _num(r.get("Proj Avg (ns)")),
                     _num(r.get("Proj StdDev (ns)")), math.nan, math.nan))
    ncu = pd.DataFrame(tables.get("ncu_kernels", []))
    if len(ncu):
        for name, g in ncu.groupby("kernel", sort=False):
            d = pd.to_numeric(g["duration_ns"], errors="coerce")
            rows.append(("kernel", name, float(len(g)), float(d.mean()), float(d.std()) if len(g) > 1 else math.nan,
                         float(pd.to_numeric(g.get("achieved_occupancy_pct"), errors="coerce").mean()),
                         float(pd.to_numeric(g.get("dram_bytes_per_s"), errors="coerce").mean()) / 1e9))
    for r in tables.get("variants", []):
        if r.get("status") not in ("ok", "wrong result") or r.get("median_ms") is None:
            continue
        spread = (_num(r.get("p80_ms")) - _num(r.get("p20_ms"))) / _P20_P80 * 1e6
        rows.append(("variant", f"{r['variant']} @ {int(r['size']):,}", _num(r.get("reps")),
                     _num(r["median_ms"]) * 1e6, spread, math.nan, _num(r.get("gbps"))))
    for r in tables.get("torch_kernels", []):
        rows.append(("kernel", r.get("name"), _num(r.get("calls")), _num(r.get("avg_ns")), math.nan, math.nan,
                     math.nan))
    # float columns even without rows (an empty side: a capture with no kernels), so that the
    # arithmetic of compare() stays numeric
    return pd.DataFrame(rows, columns=ITEM_COLUMNS).astype({c: "float64" for c in ITEM_COLUMNS[2:]})


def pool(runs: list[pd.DataFrame]) -> pd.DataFrame:
    """Several runs of one side as one: the mean of the per-run means, and as spread the larger of
    the run-to-run deviation and the within-run one (scaled to a per-run mean)."""
    if len(runs) == 1:
        out = runs[0].copy()
        out["runs"] = 1
        out["se_ns"] = out["sd_ns"] / np.sqrt(out["n"].clip(lower=1))
        return out
    allr = pd.concat([r.assign(run=i) for i, r in enumerate(runs)], ignore_index=True)
    g = allr.groupby(["kind", "name"], sort=False)
    out = g.agg(n=("n", "sum"), mean_ns=("mean_ns", "mean"), sd_ns=("sd_ns", "mean"),
                occupancy_pct=("occupancy_pct", "mean"), gbps=("gbps", "mean"), runs=("run", "nunique"),
                between_sd=("mean_ns", "std")).reset_index()
    within = out["sd_ns"] / np.sqrt((out["n"] / out["runs"]).clip(lower=1))
    out["se_ns"] = np.fmax(out["between_sd"].fillna(0), within.fillna(0)) / np.sqrt(out["runs"])
    return out.drop(columns="between_sd")


def compare(a: pd.DataFrame, b: pd.DataFrame, threshold_pct: float = 2.0) -> pd.DataFrame:
    """Pooled sides ``a`` (before) and ``b`` (after) -> one row per item: before/after mean,
    delta, ratio, a 95% interval of the change in %, occupancy and bandwidth before and after,
    and ``change``: faster / slower (interval clear of 0 and of ``threshold_pct``), same (a change
    within the threshold, or an interval that holds 0), unclear, new, vanished.

    The interval needs the run-to-run variation, which only repeated runs show: where a side has
    one run, a change past the threshold is ``unclear`` (no interval), never faster or slower --
    a tool's per-call spread within one run says nothing of how the next run will differ."""
    m = a.merge(b, on=["kind", "name"], how="outer", suffixes=("_a", "_b"), indicator=True)
    out = pd.DataFrame({"kind": m["kind"], "name": m["name"], "before_ns": m["mean_ns_a"],
                        "after_ns": m["mean_ns_b"], "calls_before": m["n_a"], "calls_after": m["n_b"]})
    out["delta_ns"] = out["after_ns"] - out["before_ns"]
    out["ratio"] = out["after_ns"] / out["before_ns"]
    se = np.sqrt(m["se_ns_a"].fillna(0) ** 2 + m["se_ns_b"].fillna(0) ** 2)
    out["ci_low_pct"] = (out["delta_ns"] - Z95 * se) / out["before_ns"] * 100
    out["ci_high_pct"] = (out["delta_ns"] + Z95 * se) / out["before_ns"] * 100
    out["change_pct"] = out["delta_ns"] / out["before_ns"] * 100
    out["runs_before"], out["runs_after"] = m["runs_a"], m["runs_b"]
    repeated = (m["runs_a"] >= 2) & (m["runs_b"] >= 2)
    out.loc[~repeated, ["ci_low_pct", "ci_high_pct"]] = np.nan
    for col in ("occupancy_pct", "gbps"):
        out[f"{col}_before"], out[f"{col}_after"] = m[f"{col}_a"], m[f"{col}_b"]
    change = np.where(m["_merge"] == "left_only", "vanished", np.where(m["_merge"] == "right_only", "new", "same"))
    past = out["change_pct"].abs() > threshold_pct
    slower = repeated & (out["ci_low_pct"] > 0) & (out["change_pct"] > threshold_pct)
    faster = repeated & (out["ci_high_pct"] < 0) & (out["change_pct"] < -threshold_pct)
    change = np.where((change == "same") & slower, "slower", np.where((change == "same") & faster, "faster", change))
    change = np.where((change == "same") & ~repeated & past, "unclear", change)
    out["change"] = change
    order = {"slower": 0, "faster": 1, "unclear": 2, "new": 3, "vanished": 4, "same": 5}
    out = out.assign(_o=out["change"].map(order), _d=-out["delta_ns"].abs().fillna(0))
    return out.sort_values(["kind", "_o", "_d"], kind="mergesort").drop(columns=["_o", "_d"]).reset_index(drop=True)


def regressions(table: pd.DataFrame, pct: float) -> pd.DataFrame:
    """Rows that got slower significantly (95% interval above 0) and by more than ``pct``."""
    return table[(table["change"] == "slower") & (table["change_pct"] > pct)]


def undecided(table: pd.DataFrame, pct: float) -> pd.DataFrame:
    """Rows more than ``pct`` slower where a side has one run: maybe regressions, maybe noise."""
    return table[(table["change"] == "unclear") & (table["change_pct"] > pct)]


#: What every view of a comparison says of the changes it names.
CHANGES = ("slower", "faster", "unclear", "new", "vanished", "same")
