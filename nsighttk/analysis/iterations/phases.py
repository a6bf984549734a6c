"""The phases of a capture around its steady state: what start-up and compilation cost apart from
the loop a user wants faster.

With the iterations of :mod:`nsighttk.analysis.iterations.find` and their steady state, the capture of
the iterations' process is cut at the first kernel, the steady state's first start and its last
end:

* **start-up**: from the process's first recorded event (CUDA call, NVTX range, GPU operation) to
  its first kernel (imports, model construction, CUDA context);
* **before the steady state** (module loading, compilation, warm-up): from the first kernel to
  the steady state.  It counts the module loading calls (``cuModuleLoad*``, ``cuLibraryLoad*``,
  ``cuModuleGetFunction``, ``cuLibraryGetKernel``, ``cuLink*``: CUDA libraries, Triton's and
  Inductor's JIT-compiled kernels) and their CPU time, the warm-up iterations, and the kernels
  whose name never runs in the steady state (autotuning benchmarks, the L2-flushing fills between
  them, one-time initialisation), with their GPU time and how many are fills;
* **steady state**: the steady iterations;
* **tail**: from the steady state's end to the process's last event (evaluation, checkpointing),
  with the kernels that run there and how many never run in the steady state.

A kernel is "in the steady state" by name where one of that name starts (on the GPU) inside it.
Queries over the engine, one row per kernel name or CUDA call name.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from nsighttk import engine
from nsighttk.analysis.iterations.find import Iterations
from nsighttk.analysis.iterations.ops import name_column, own_calls, own_ops, run_query
from nsighttk.profile import INT_NULL, Profile
from nsighttk.units import fmt_count, fmt_ns

#: CUDA calls that load code onto the GPU (``_vNNNN`` suffixes ignored).
MODULE_LOADING = re.compile(r"cu(?:Module|Library)(?:Load\w*|GetFunction|GetKernel)|cuLink\w*")
#: Kernels that fill memory (torch.compile's autotuning flushes the L2 cache with one between benchmarks).
FILL = re.compile(r"fill", re.IGNORECASE)


def _first_last(eng: Any, p: Profile, pid: int | None) -> tuple[int | None, int | None, int | None]:
    """The process's first event, last event and first kernel start."""
    parts = []
    for t in ("kernels", "memcpy", "memset"):
        if p.count(t):
            parts.append(f"SELECT min(start_ns) AS lo, max(end_ns) AS hi FROM {t} WHERE {own_ops(pid)}")
    if p.count("api"):
        parts.append(f"SELECT min(start_ns), max(end_ns) FROM api WHERE {own_calls(eng, pid)}")
    if p.count("nvtx"):
        parts.append("SELECT min(start_ns), max(coalesce(end_ns, start_ns)) FROM nvtx"
                     + ("" if pid is None else " WHERE pid IS NULL OR pid = $pid"))
    (lo, hi), = run_query(eng, "SELECT min(lo), max(hi) FROM (" + " UNION ALL ".join(parts) + ")", pid)
    (first_kernel,), = run_query(eng, f"SELECT min(start_ns) FROM kernels WHERE {own_ops(pid)}", pid)
    return lo, hi, first_kernel


def _need(p: Profile) -> Any:
    wants: dict[str, list[str]] = {t: ["start_ns", "end_ns", "global_pid"] for t in ("kernels", "memcpy", "memset")
                                   if p.count(t)}
    if p.count("kernels"):
        wants["kernels"] += ["duration_ns", name_column(p, "kernels")]
    if p.count("api"):
        wants["api"] = ["start_ns", "end_ns", "duration_ns", "global_tid", name_column(p, "api")]
    if p.count("nvtx"):
        wants["nvtx"] = ["start_ns", "end_ns", "pid"]
    return engine.of(p).need(wants)


def _texts(p: Profile, table: str, codes: list[Any]) -> list[str]:
    """The names of ``codes`` (texts or string ids; '' for a row without a name)."""
    if name_column(p, table) == "name":
        return ["" if c is None else str(c) for c in codes]
    if not codes:
        return []
    ids = np.array([INT_NULL if c is None else c for c in codes], dtype=np.int64)
    return ["" if n is None else str(n) for n in p.names(table, ids)]


def phases(p: Profile, it: Iterations) -> dict[str, Any]:
    """The phases (module doc) as plain data: ``start_up``, ``before_steady``, ``steady``, ``tail``
    (each with ``start_ns``, ``end_ns``, ``duration_ns`` and what it holds) and ``summary`` (one
    sentence); empty where there is no steady state or no kernel."""
    s = it.steady
    if not s or not p.count("kernels"):
        return {}
    eng, pid = _need(p), it.pid
    lo, hi, first_kernel = _first_last(eng, p, pid)
    if lo is None or first_kernel is None:
        return {}
    s0, s1 = int(s["start_ns"]), int(s["end_ns"])
    col = name_column(p, "kernels")
    rows = run_query(eng, f"""
        WITH k AS (SELECT {col} AS code, start_ns, duration_ns FROM kernels WHERE {own_ops(pid)})
        SELECT code, bool_or(start_ns >= $s0 AND start_ns < $s1) AS steady,
               count(*) FILTER (WHERE start_ns < $s0), coalesce(sum(duration_ns) FILTER (WHERE start_ns < $s0), 0),
               count(*) FILTER (WHERE start_ns >= $s1)
        FROM k GROUP BY code""", pid, s0=s0, s1=s1)
    names = _texts(p, "kernels", [r[0] for r in rows])
    before = sum(int(r[2]) for r in rows)
    new = [(r, n) for r, n in zip(rows, names, strict=True) if not r[1]]
    new_before, new_ns = sum(int(r[2]) for r, _ in new), sum(int(r[3]) for r, _ in new)
    fills = sum(int(r[2]) for r, n in new if FILL.search(n))
    after, new_after = sum(int(r[4]) for r in rows), sum(int(r[4]) for r, _ in new)
    loads, load_ns = 0, 0
    if p.count("api"):
        acol = name_column(p, "api")
        calls = run_query(eng, f"SELECT {acol}, count(*), coalesce(sum(duration_ns), 0) FROM api "
                          f"WHERE {own_calls(eng, pid)} AND start_ns < $s0 AND {acol} IS NOT NULL GROUP BY {acol}",
                     pid, s0=s0)
        for (_, n, t), text in zip(calls, _texts(p, "api", [c[0] for c in calls]), strict=True):
            if MODULE_LOADING.fullmatch(re.sub(r"_v\d+$", "", text)):
                loads, load_ns = loads + int(n), load_ns + int(t)
    warm = it.table[it.table["warmup"].to_numpy(dtype=bool)]
    end = max(int(hi), s1) if hi is not None else s1
    out: dict[str, Any] = {
        "start_up": {"start_ns": int(lo), "end_ns": int(first_kernel), "duration_ns": int(first_kernel) - int(lo)},
        "before_steady": {"start_ns": int(first_kernel), "end_ns": s0, "duration_ns": max(s0 - int(first_kernel), 0),
                          "kernels": before, "module_loads": loads, "module_load_ns": load_ns,
                          "warmup_iterations": len(warm), "warmup_ns": int(warm["duration_ns"].sum()),
                          "kernels_not_in_steady": new_before, "kernels_not_in_steady_ns": new_ns,
                          "fills_not_in_steady": fills},
        "steady": {"start_ns": s0, "end_ns": s1, "duration_ns": s1 - s0, "iterations": int(s["iterations"])},
        "tail": {"start_ns": s1, "end_ns": end, "duration_ns": end - s1, "kernels": after,
                 "kernels_not_in_steady": new_after},
    }
    out["summary"] = summary(out)
    return out


def summary(ph: dict[str, Any]) -> str:
    """One sentence: what came before the steady state and after it, apart from it."""
    su, b, st, t = ph["start_up"], ph["before_steady"], ph["steady"], ph["tail"]
    bits = [f"start-up {fmt_ns(su['duration_ns'])} before the first kernel"]
    inner = []
    if b["warmup_iterations"]:
        inner.append(f"{b['warmup_iterations']} warm-up iteration(s) ({fmt_ns(b['warmup_ns'])})")
    if b["module_loads"]:
        inner.append(f"{fmt_count(b['module_loads'])} module loading calls ({fmt_ns(b['module_load_ns'])} of CPU time)")
    if b["kernels_not_in_steady"]:
        fills = f", {fmt_count(b['fills_not_in_steady'])} of them fills" if b["fills_not_in_steady"] else ""
        inner.append(f"{fmt_count(b['kernels_not_in_steady'])} kernels that never run in the steady state "
                     f"({fmt_ns(b['kernels_not_in_steady_ns'])} of GPU time{fills}: compilation, autotuning, "
                     "initialisation)")
    bits.append(f"then {fmt_ns(b['duration_ns'])} to the steady state" + (f": {'; '.join(inner)}" if inner else ""))
    text = (f"before the steady state: {fmt_ns(su['duration_ns'] + b['duration_ns'])} ({', '.join(bits)}); "
            f"the steady state: {st['iterations']} iteration(s) in {fmt_ns(st['duration_ns'])}")
    if t["duration_ns"] > 0:
        other = f", {fmt_count(t['kernels_not_in_steady'])} of names not in it" if t["kernels_not_in_steady"] else ""
        text += f"; after it: {fmt_ns(t['duration_ns'])} ({fmt_count(t['kernels'])} kernels{other})"
    return text
