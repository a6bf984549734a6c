"""PyTorch operators from a torch.profiler (Kineto) Profile: time per ATen op, its category and
where PyTorch implements it.

Time attribution follows torch.profiler's ``key_averages``: an op's *self* device time is the GPU
time of the kernels, copies and memsets whose ``external_id`` is the op's (the innermost op that
launched them); its *total* adds the self time of every op nested inside it; CPU total is the
op's duration.  Calls, CPU total and self device time equal key_averages on the H100 fixtures.
Self CPU (duration minus nested ops and the CUDA runtime calls the op made) can differ from
key_averages' on a first call that includes one-time work (2.26 ms vs 0.21 ms for ``aten::pow``
in the square fixture); key_averages' ``device_time_total`` was seen to count one kernel twice
(``aten::mul``: 2.816 us for its one 1.408 us kernel), so nsighttk's inclusive total is its own.
Kernels no ATen op launched (Triton launchers, extensions) are listed under their own names, as
key_averages does, and so are copies and memsets made outside any op (category ``memory``), so
that the self device times add up to all GPU time, also for traces without CPU ops.
Categories, ``native_functions.yaml`` entries and CUDA source files come from
``nsighttk/data/ops.json``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis.kernels.names import knowledge
from nsighttk.profile import Profile

COLUMNS = ["op", "category", "calls", "cpu_total_ns", "self_cpu_ns", "device_total_ns", "self_device_ns",
           "kernels", "func", "cuda_sources"]


@functools.cache
def _op_patterns() -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(p["regex"]), p["category"]) for p in knowledge()["op_patterns"]]


def op_category(op: str) -> str:
    entry = knowledge()["ops"].get(op)
    if entry:
        return str(entry["category"])
    for rx, cat in _op_patterns():
        if rx.search(op):
            return cat
    return "other"


def op_source(op: str) -> dict[str, Any]:
    """``{"func": schema line, "cuda_sources": [...]}`` for ops in the knowledge file, else empty."""
    entry = knowledge()["ops"].get(op) or {}
    return {"func": entry.get("func") or None, "cuda_sources": list(entry.get("cuda_sources") or [])}


def per_op_instance(p: Profile) -> pd.DataFrame:
    """One row per op call: ``self_device_ns``, ``device_total_ns``, ``self_cpu_ns``, ``kernels``
    (launched directly), aligned with ``p.ops``."""
    ops = p.ops
    n = len(ops)
    self_dev = np.zeros(n, dtype=np.int64)
    n_kernels = np.zeros(n, dtype=np.int64)
    api_ns = np.zeros(n, dtype=np.int64)
    if n:
        ext = ops["external_id"]
        row_of = pd.Series(np.arange(n), index=ext.astype("Int64")).loc[lambda s: ~s.index.isna()]
        row_of = row_of[~row_of.index.duplicated(keep="last")]  # the innermost op carries the id
        for table in (p.kernels, p.memcpy, p.memset, p.api):
            if not len(table):
                continue
            ids = table["external_id"].dropna()
            rows = row_of.reindex(ids.to_numpy())
            ok = ~np.isnan(rows.to_numpy(dtype="float64"))
            r = rows.to_numpy(dtype="float64")[ok].astype(np.int64)
            dur_t = table.loc[ids.index, "duration_ns"].to_numpy(dtype="int64")[ok]
            if table is p.api:  # CUDA runtime/driver time inside an op is not its self CPU time
                np.add.at(api_ns, r, dur_t)
                continue
            np.add.at(self_dev, r, dur_t)
            if table is p.kernels:
                np.add.at(n_kernels, r, 1)
    total_dev = self_dev.copy()
    dur = ops["duration_ns"].to_numpy(dtype="int64") if n else np.zeros(0, dtype=np.int64)
    child_cpu = np.zeros(n, dtype=np.int64)
    if n:
        parent = ops["parent"].to_numpy(dtype="float64", na_value=np.nan)
        depth = ops["depth"].to_numpy()
        for i in np.argsort(-depth, kind="stable"):  # children before parents
            if not np.isnan(parent[i]):
                pi = int(parent[i])
                total_dev[pi] += total_dev[i]
                child_cpu[pi] += dur[i]
    return pd.DataFrame({"op": ops["name"].to_numpy(dtype=object) if n else [], "self_device_ns": self_dev,
                         "device_total_ns": total_dev, "cpu_total_ns": dur, "self_cpu_ns": dur - child_cpu - api_ns,
                         "kernels": n_kernels})


def op_summary(p: Profile, top_level_only: bool = False) -> pd.DataFrame:
    """Per op name (like ``key_averages``), by self device time then CPU time; see the module doc.
    Columns: op, category, calls, cpu_total_ns, self_cpu_ns, device_total_ns, self_device_ns,
    kernels, func, cuda_sources."""
    inst = per_op_instance(p)
    if top_level_only and len(inst):
        inst = inst[(p.ops["depth"] == 0).to_numpy()]
    g = inst.groupby("op", sort=False).agg(calls=("op", "size"), cpu_total_ns=("cpu_total_ns", "sum"),
                                           self_cpu_ns=("self_cpu_ns", "sum"),
                                           device_total_ns=("device_total_ns", "sum"),
                                           self_device_ns=("self_device_ns", "sum"),
                                           kernels=("kernels", "sum")).reset_index()
    g["category"] = g["op"].map(op_category)
    orphans = _unattributed_kernels(p)
    if len(orphans):  # like key_averages, which lists such kernels under their own names
        g = pd.concat([g, orphans], ignore_index=True) if len(g) else orphans
    if not len(g):
        return pd.DataFrame(columns=COLUMNS)
    src = g["op"].map(op_source)
    g["func"] = src.map(lambda d: d["func"])
    g["cuda_sources"] = src.map(lambda d: d["cuda_sources"])
    g = g.sort_values(["self_device_ns", "self_cpu_ns"], ascending=False, ignore_index=True)
    return g[COLUMNS]


def _unattributed_kernels(p: Profile) -> pd.DataFrame:
    """Device work no ATen op launched (Triton launchers, custom extensions, ``torch.compile``
    graphs, copies made outside any op, traces without CPU ops): one row per kernel or copy name,
    kernels categorised from the name, copies and memsets as ``memory``."""
    from nsighttk.analysis.kernels.names import decode

    ids = set(p.ops["external_id"].dropna().astype("int64")) if len(p.ops) else set()
    parts = []
    for table, names in ((p.kernels, "name"), (p.memcpy, "label"), (p.memset, "mem_kind")):
        if not len(table):
            continue
        ext = table["external_id"]
        lost = table[ext.isna().to_numpy() | ~ext.fillna(-1).astype("int64").isin(ids).to_numpy()]
        if len(lost):
            parts.append(pd.DataFrame({"op": lost[names].fillna("").astype(str).to_numpy(dtype=object),
                                       "dur": lost["duration_ns"].to_numpy(dtype="int64"),
                                       "kernel": table is p.kernels}))
    if not parts:
        return pd.DataFrame()
    lost = pd.concat(parts, ignore_index=True)
    g = lost.groupby("op", sort=False).agg(calls=("dur", "size"), self_device_ns=("dur", "sum"),
                                           kernels=("kernel", "sum")).reset_index()
    is_kernel = g["kernels"] > 0
    g["device_total_ns"] = g["self_device_ns"]
    g["cpu_total_ns"] = 0
    g["self_cpu_ns"] = 0
    g["category"] = [decode(n).category if k else "memory" for n, k in zip(g["op"], is_kernel, strict=True)]
    return g


def category_summary(p: Profile) -> pd.DataFrame:
    """Self device and self CPU time per op category (each op's self time counted once), with
    ``device_pct`` of all attributed device time.  Columns: category, self_device_ns,
    self_cpu_ns, calls, device_pct."""
    ops = op_summary(p)
    cols = ["category", "self_device_ns", "self_cpu_ns", "calls", "device_pct"]
    if not len(ops):
        return pd.DataFrame(columns=cols)
    g = ops.groupby("category").agg(self_device_ns=("self_device_ns", "sum"), self_cpu_ns=("self_cpu_ns", "sum"),
                                    calls=("calls", "sum")).reset_index()
    total = g["self_device_ns"].sum()
    g["device_pct"] = 100.0 * g["self_device_ns"] / total if total else 0.0
    return g.sort_values(["self_device_ns", "self_cpu_ns"], ascending=False, ignore_index=True)[cols]


def kernel_table(p: Profile) -> pd.DataFrame:
    """Kernels grouped by name with the decoded name (a column in every kernel summary):
    name, calls, total_ns, avg_ns, category, decoded."""
    from nsighttk.analysis.kernels.names import decode

    cols = ["name", "calls", "total_ns", "avg_ns", "category", "decoded"]
    k = p.kernels
    if not len(k):
        return pd.DataFrame(columns=cols)
    g = k.groupby("name", sort=False).agg(calls=("duration_ns", "size"), total_ns=("duration_ns", "sum")).reset_index()
    g["avg_ns"] = g["total_ns"] // g["calls"]
    info = g["name"].map(decode)
    g["category"] = info.map(lambda i: i.category)
    g["decoded"] = info.map(lambda i: i.summary())
    return g.sort_values("total_ns", ascending=False, ignore_index=True)[cols]


#: What to look at first, per op category (used in the model reports).
ADVICE = {
    "matrix": "GEMMs should run on tensor cores (bf16/fp16, or TF32 for float32: torch.backends.cuda.matmul."
              "allow_tf32); check the kernel name for tensor-core use and tile size against the matrix shapes",
    "attention": "fused attention (flash / memory-efficient SDPA) avoids writing the seq x seq score matrix; "
                 "check which SDPA backend ran and whether the mask or dtype ruled the fused ones out",
    "normalization": "memory-bound: one read and one write per element is the floor; fusing the residual add "
                     "(torch.compile) removes a pass",
    "activation": "memory-bound elementwise: fuse into the preceding GEMM's epilogue or with torch.compile",
    "elementwise": "memory-bound: many small elementwise kernels mean launch overhead and extra memory passes; "
                   "fuse them",
    "embedding": "gather from a large table: memory-bound, small at inference",
    "reduction": "memory-bound; check the reduction runs along the contiguous dimension",
    "memory": "copies and layout changes (transpose/contiguous/cat) move bytes without computing: avoid where possible",
    "communication": "overlap collectives with compute",
    "other": "check whether this op belongs on the critical path",
}



def category_advice(category: str) -> str:
    return ADVICE.get(category, ADVICE["other"])
