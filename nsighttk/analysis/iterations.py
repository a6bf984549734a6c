"""Iterations and steady state: the repeated unit of work (a training step) found in a capture,
measured one by one, with the warm-up set apart and the spread of the rest summarized.

**Which ranges are the iterations.**  NVTX ranges (and, in Kineto traces, ``record_function`` /
``ProfilerStep#N`` annotations, which the loader puts in the same table).  Ranges are grouped by
name with every run of digits read as ``#`` (``step 3`` -> ``step #``), domain, thread and nesting
level; a group's instances must be closed and must not overlap.  Chosen, in this order:

1. ``ProfilerStep#N`` (torch.profiler's step annotation, also in nsys captures of PyTorch), even
   once (a trace of one active step);
2. names with a word ``step``, ``iter``, ``iteration`` (``step 3``, ``Step 12``, ``iteration 7``,
   ``train_step``, ``trainStep``), twice or more, except PyTorch's own ``Optimizer.step#...`` labels;
3. any other name repeated three or more times at one level of one thread whose instances
   cover at least half of the time from the first to the last range at that level (a loop, not a
   benchmark that runs seven variants three times each);

within a tier the outermost level wins, then the group covering the most time.  An explicit
``iteration`` (the ``--iteration RANGE`` option) replaces the search: ranges whose name, or
``domain:name``, equals it, else whose name matches it as a regular expression
(:func:`re.fullmatch`); the thread with the most matching time and its outermost matches are used.

**What is measured per iteration** (all times integer ns on the capture's clock):

* wall: ``start_ns``/``end_ns``/``duration_ns`` of the range;
* the work it launched: every kernel, memcpy and memset whose CUDA API call (same correlation id,
  same process) *started while the range was open*, on any thread of the range's process (PyTorch
  launches the backward pass from its autograd thread); GPU operations with no API call in the
  capture are counted by their GPU start instead.  ``kernels``, ``kernel_ns``, ``memcpy_ns``,
  ``memcpy_bytes``, ``memset_ns`` sum their GPU durations; ``gpu_start_ns``/``gpu_end_ns`` span
  them (nsys' "GPU projection", over all threads), so ``gpu_end_ns`` may lie after ``end_ns``;
* ``gpu_busy_ns``: the union of *all* the process's kernel, memcpy and memset intervals (every
  device it used, whoever launched them) clipped to the range, so it never exceeds ``duration_ns``;
  ``idle_ns`` = ``duration_ns`` - ``gpu_busy_ns``; ``largest_gap_ns`` and the ``gaps`` list are the
  longest stretches inside the range with no GPU work;
* ``sync_ns``: time inside the range in host-blocking CUDA synchronisation calls
  (``cudaDeviceSynchronize``, ``cudaStreamSynchronize`` -- the two nsys' ``cuda_api_sync`` rule
  counts -- plus ``cudaEventSynchronize`` and the driver's ``cuCtx/cuStream/cuEventSynchronize``),
  on any thread of the process, clipped to the range;
* ``launch_overhead_ns``: the median, over the iteration's kernels, of GPU start minus the start of
  the CPU call that launched it (CPU launch -> GPU start; it includes time queued behind earlier
  work, so it is large when the GPU is the bottleneck and small when the CPU is);
* the top kernels of the iteration by GPU time.

**Warm-up** (``warmup``): with ``m`` the median and ``MAD`` the median absolute deviation of all
iteration durations, an iteration is *slow* when its duration exceeds
``m + max(3 x 1.4826 x MAD, 0.2 x m)`` (three robust standard deviations, and at least 20% above
the median).  The warm-up is the longest run of slow iterations at the start.  Fewer than half of
the iterations can ever be slow (they lie above the median), and of two iterations neither is (each
is one MAD from their median).  The **steady state** is
every iteration after the warm-up; among those, an *outlier* is one whose duration is more than
``max(3 x 1.4826 x MAD, 0.2 x m)`` from their median ``m`` (``slow`` or ``fast``).  The summary
gives median, min, max, mean and coefficient of variation (sample standard deviation / mean) per
metric over the steady iterations, outliers included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis import intervals_spilled, iteration_ranges, iteration_ranges_spilled, iteration_spilled
from nsighttk.analysis.groupstats import group_sums, sorted_pairs
from nsighttk.analysis.iteration_ops import (
    _KERNEL,
    _MEMCPY,
    _MEMSET,
    _TOP_KERNELS,
    SYNC_APIS,
    Measured,
    _measured,
    _nvtx,
    _steady_keep,
    remember_steady_masks,
)
from nsighttk.analysis.nsys_report_base import nvtx_text_codes
from nsighttk.errors import UsageError
from nsighttk.profile import INT_NULL, Coded, Profile, decoded, frame_of, widen
from nsighttk.subset import RowMask, subset

__all__ = ["SYNC_APIS", "Iterations", "forget_steady", "iterations", "outlier_labels", "scope_label", "steady_profile",
           "warmup_mask"]

_SLOW_MADS = 3.0
_MIN_REL = 0.2
_MAD_SCALE = 1.4826  # MAD of a normal distribution x this = its standard deviation

COLUMNS = ["index", "name", "start_ns", "end_ns", "duration_ns", "warmup", "outlier", "gpu_busy_ns", "gpu_busy_pct",
           "idle_ns", "largest_gap_ns", "gpu_start_ns", "gpu_end_ns", "kernels", "kernel_ns", "memcpy_count",
           "memcpy_ns", "memcpy_bytes", "memset_ns", "sync_ns", "launch_overhead_ns"]
#: Metrics summarized over the steady state.
SUMMARIZED = ["duration_ns", "gpu_busy_ns", "gpu_busy_pct", "idle_ns", "kernel_ns", "memcpy_ns", "sync_ns",
              "launch_overhead_ns"]


@dataclass
class Iterations:
    """The iterations of a capture.  ``table`` has one row per iteration (:data:`COLUMNS`);
    ``top_kernels`` (iteration, name, short_name, count, total_ns) and ``gaps`` (iteration, start_ns,
    duration_ns) the longest few per iteration; ``steady`` the steady-state summary (empty when
    there is no steady state)."""

    source: str  # how they were found, for people: "NVTX ranges 'step #' (thread 1005, level 0)"
    pattern: str  # the grouped name ("step #") or the --iteration value
    pid: int | None
    table: pd.DataFrame
    top_kernels: pd.DataFrame
    gaps: pd.DataFrame
    steady: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def steady_table(self) -> pd.DataFrame:
        return self.table[~self.table["warmup"].to_numpy(dtype=bool)]

    def records(self) -> list[dict[str, Any]]:
        """One plain dict per iteration, with its ``top_kernels`` and ``gaps`` lists (for JSON)."""
        tops, gaps = _by_iteration(self.top_kernels), _by_iteration(self.gaps)
        out = []
        for rec in self.table.to_dict("records"):
            i = rec["index"]
            out.append({**rec, "top_kernels": tops.get(i, []), "gaps": gaps.get(i, [])})
        return out


def _by_iteration(df: pd.DataFrame) -> dict[Any, list[dict[str, Any]]]:
    """The rows of ``df`` as plain dicts without their ``iteration``, listed per iteration in
    row order: one ``to_dict`` of the whole table (per group it cost 1 ms each: 6 s for the 3,000
    iterations of a 10M-kernel capture)."""
    out: dict[Any, list[dict[str, Any]]] = {}
    if not len(df):
        return out
    keys = df["iteration"].tolist()
    for i, rec in zip(keys, df.drop(columns="iteration").to_dict("records"), strict=True):
        out.setdefault(i, []).append(rec)
    return out


# ------------------------------------------------------------------------------ finding the ranges


def _closed(nvtx: pd.DataFrame) -> pd.DataFrame:
    n = nvtx[nvtx["end_ns"].notna()]
    return n.assign(end_ns=n["end_ns"].astype("int64"), tid_key=n["global_tid"].fillna(n["tid"]).fillna(-1))


def _pair_codes(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One code per distinct (a, b) pair of codes, numbered in order of first appearance (int32
    where they fit)."""
    key = a.astype("int64")
    key *= int(b.max()) + 1 if len(b) else 1
    key += b
    return _codes(key)


def _codes(values: np.ndarray) -> np.ndarray:
    """Codes of ``values`` numbered in order of first appearance (None and NaN a value too), int32
    where they fit."""
    codes = pd.factorize(values, use_na_sentinel=False)[0]
    return codes.astype("int32") if len(codes) < 2**31 else codes


#: The NVTX columns iterations are found from.
_RANGE_COLUMNS = ["start_ns", "end_ns", "duration_ns", "name", "domain", "depth", "global_tid", "tid", "pid"]


def _closed_arrays(p: Profile) -> tuple[dict[str, Any], np.ndarray | None]:
    """The closed NVTX ranges' :data:`_RANGE_COLUMNS` (integers as kept: narrow, their type's
    minimum for a missing value; columns the Profile keeps as codes as those codes, decoded by
    :func:`_frame` for the rows it takes: 4.3M ranges' names, domains and ids, 170 MB, were decoded
    for a few rows), plus ``tid_key`` (global_tid, else tid, else -1); and which of all ranges they
    are (None: all)."""
    a: dict[str, Any] = p.arrays("nvtx", [c for c in _RANGE_COLUMNS if c not in _CODED], narrow=True)
    a.update({c: p.column("nvtx", c, narrow=True) for c in _CODED})
    end = a["end_ns"]
    closed = end != np.iinfo(end.dtype).min if end.dtype.kind == "i" else ~np.isnan(end)
    if not closed.all():
        a = {c: v.take(closed) if isinstance(v, Coded) else v[closed] for c, v in a.items()}
    g, t = a["global_tid"], a["tid"]
    if isinstance(g, Coded) and isinstance(t, Coded) and g.codes is t.codes:  # (one code a thread: by value)
        gv, tv = widen(g.values), widen(t.values)
        a["tid_key"] = np.where(gv != INT_NULL, gv, np.where(tv != INT_NULL, tv, -1))[g.codes]
    else:
        gtid, tid = widen(decoded(g)), widen(decoded(t))
        a["tid_key"] = np.where(gtid != INT_NULL, gtid, np.where(tid != INT_NULL, tid, -1))
    return a, None if len(a["start_ns"]) == len(closed) else closed


#: Of :data:`_RANGE_COLUMNS`, those read as the Profile keeps them (codes where coded).
_CODED = ("name", "domain", "global_tid", "tid", "pid")


def _frame(a: dict[str, Any], rows: np.ndarray) -> pd.DataFrame:
    """``rows`` of :func:`_closed_arrays` as the DataFrame :func:`_closed` makes."""
    n = frame_of("nvtx", {c: decoded(a[c].take(rows)) if isinstance(a[c], Coded) else a[c][rows]
                          for c in _RANGE_COLUMNS})
    return n.assign(end_ns=n["end_ns"].astype("int64"), tid_key=pd.array(a["tid_key"][rows], dtype="Int64"))


def _by_group_then_start(group: np.ndarray, start: np.ndarray, n_groups: int) -> np.ndarray:
    """``np.lexsort((start, group))``: rows by group, then start, ties in row order.  Ranges are
    exported as they end, so within a group (one level of one thread) they mostly come in start
    order already: then a stable sort by group alone is the answer (a radix sort where codes fit
    16 bits: 4.3M ranges 0.05 s against the lexsort's 0.6 s)."""
    order = np.argsort(group.astype(np.uint16) if n_groups <= 2**16 else group, kind="stable")
    s = start[order]
    if not len(s) or not ((s[1:] < s[:-1]) & (group[order[1:]] == group[order[:-1]])).any():
        return order
    return np.lexsort((start, group))


def _auto(p: Profile) -> tuple[pd.DataFrame, str] | None:
    """The iteration ranges found in the capture's closed NVTX ranges (module doc), from their
    columns: codes per range, a DataFrame only of the chosen ones; out of core where the ranges
    do not fit in the budget (:mod:`iteration_ranges_spilled`)."""
    if iteration_ranges_spilled.spills(p):
        got = iteration_ranges_spilled.found(p)
        if got is None or isinstance(got, tuple):
            return None if got is None else (got[0], described(*got))
    a, closed = _closed_arrays(p)
    if not len(a["start_ns"]):
        return None
    # names and domains by their codes (shared with the NVTX reports), renumbered in order of
    # first appearance among the closed ranges; no text: ""
    text = nvtx_text_codes(p)
    codes, found_names = pd.factorize(text["name"][0] if closed is None else text["name"][0][closed])
    codes = codes.astype("int32") if len(codes) < 2**31 else codes
    keys, tier_of_name = iteration_ranges.tiers(
        ["" if u is None or u != u else str(u) for u in text["name"][1][found_names]])
    key_codes, _ = pd.factorize(np.array(keys, dtype=object))
    # groups: (grouped name, domain, thread, level), numbered in order of first appearance
    depth = widen(a["depth"])
    level = _pair_codes(_codes(a["tid_key"]), _codes(depth))
    domain = text["domain"][0] if closed is None else text["domain"][0][closed]
    group = _pair_codes(_pair_codes(key_codes[codes], _codes(domain)), level)
    del domain
    n_groups = int(group.max()) + 1
    seen = np.maximum.accumulate(group)
    first = np.flatnonzero(np.r_[True, seen[1:] > seen[:-1]])  # each group's first row, by group code
    del seen
    start, end, dur = widen(a["start_ns"]), widen(a["end_ns"]), widen(a["duration_ns"])
    order = _by_group_then_start(group, start, n_groups)
    g_sorted = group[order]
    same = g_sorted[1:] == g_sorted[:-1]
    later = start[order[1:]] < end[order[:-1]]
    later &= same
    overlapping = np.zeros(n_groups, dtype=bool)
    overlapping[g_sorted[1:][later]] = True
    del g_sorted, same, later
    count = np.bincount(group, minlength=n_groups)
    covered = np.add.reduceat(dur[order], np.r_[0, np.cumsum(count)[:-1]])  # (every group has a row)
    del order
    tier = tier_of_name[codes[first]]
    del codes

    def median(loop: np.ndarray) -> np.ndarray:  # (the durations of the loop candidates only, sorted)
        rows = loop[group]
        k, v = sorted_pairs(group[rows], dur[rows])
        del rows
        at = np.searchsorted(k, np.arange(n_groups))
        return (v[np.minimum(at + (count - 1) // 2, len(v) - 1)].astype("float64")
                + v[np.minimum(at + count // 2, len(v) - 1)].astype("float64")) / 2

    def extent() -> np.ndarray:
        lo = np.full(int(level.max()) + 1, np.iinfo(np.int64).max, dtype="int64")
        hi = np.full(len(lo), np.iinfo(np.int64).min, dtype="int64")
        np.minimum.at(lo, level, start)
        np.maximum.at(hi, level, end)
        return hi[level[first]] - lo[level[first]]

    best = iteration_ranges.chosen(tier, count, overlapping, covered, depth[first], first, median, extent)
    if best is None:
        return None
    g = _frame(a, np.flatnonzero(group == best))
    return g, described(g, int(tier[best]))


def described(g: pd.DataFrame, tier: int) -> str:
    """How the chosen ranges ``g`` were found, for people."""
    what = "torch.profiler steps" if tier == 0 else "NVTX ranges"
    return f"{what} '{_shown(g.iloc[0]['name'])}' ({_where(g)})"


def _explicit(p: Profile, spec: str) -> tuple[pd.DataFrame, str]:
    """The ranges ``--iteration spec`` names (module doc): out of core where the ranges do not fit
    in the budget (:func:`iteration_ranges_spilled.explicit`)."""
    if iteration_ranges_spilled.spills(p):
        got = iteration_ranges_spilled.explicit(p, spec)
        if isinstance(got, tuple):
            return got[0], f"ranges {got[1]} '{spec}' ({_where(got[0])})"
    n = _closed(_nvtx(p))
    names = n["name"].fillna("").astype(str)  # (pandas 3 keeps None as NaN through astype(str))
    hit = (names == spec) | ((n["domain"].fillna("").astype(str) + ":" + names) == spec)
    how = "named"
    if not hit.any():
        try:
            rx = re.compile(spec)
        except re.error as ex:
            raise UsageError(f"--iteration {spec!r}: no range has this name and it is not a valid regular "
                             f"expression ({ex})", _names_hint(n)) from None
        codes, uniques = pd.factorize(names)
        ok = np.array([rx.fullmatch(u) is not None for u in uniques], dtype=bool)
        hit = pd.Series(ok[codes] if len(codes) else np.zeros(0, dtype=bool), index=n.index)
        how = "matching"
    if not hit.any():
        raise UsageError(f"--iteration {spec!r}: no closed NVTX or record_function range has this name or matches "
                         "it as a regular expression", _names_hint(n))
    m = n[hit.to_numpy(dtype=bool)]
    keys, threads = pd.factorize(m["tid_key"], sort=True)
    time = group_sums(keys, m["duration_ns"].to_numpy(dtype="int64"), len(threads))  # (exact: no wrap)
    tid = threads[int(np.argmax(time)) if time.dtype != object else max(range(len(time)), key=lambda i: (time[i], -i))]
    m = m[m["tid_key"] == tid]
    m = m[m["depth"] == m["depth"].min()]
    return m, f"ranges {how} '{spec}' ({_where(m)})"


def _shown(name: str) -> str:
    """``step 3`` -> ``step N``: a group's name for people."""
    return re.sub(r"\d+", "N", str(name))


def _where(g: pd.DataFrame) -> str:
    r = g.iloc[0]
    tid = r["tid"] if pd.notna(r["tid"]) else r["tid_key"]
    return f"thread {int(tid)}, level {int(r['depth'])}"


def _names_hint(n: pd.DataFrame) -> str:
    counts = n["name"].fillna("").astype(str).map(iteration_ranges.key).value_counts()  # (ties: first seen first)
    return iteration_ranges.hint([(k, int(c), i) for i, (k, c) in enumerate(counts.items())])


# ------------------------------------------------------------------------------ measuring them
# (the per-operation work lives in :mod:`nsighttk.analysis.iteration_ops`)


def _robust(d: np.ndarray) -> tuple[float, float]:
    """(median, allowed deviation) of durations: max(3 robust sigmas, 20% of the median)."""
    m = float(np.median(d))
    mad = float(np.median(np.abs(d - m)))
    return m, max(_SLOW_MADS * _MAD_SCALE * mad, _MIN_REL * m)


def warmup_mask(durations: np.ndarray) -> np.ndarray:
    """True for the leading iterations that are clearly slower (the module doc gives the rule)."""
    d = np.asarray(durations, dtype="float64")
    if len(d) == 0:
        return np.zeros(0, dtype=bool)
    m, allowed = _robust(d)
    slow = d > m + allowed
    lead = int(np.argmin(slow)) if not slow.all() else len(d)
    return np.arange(len(d)) < lead


def outlier_labels(durations: np.ndarray) -> np.ndarray:
    """``"slow"``/``"fast"``/``""`` per steady iteration (module doc); needs three or more."""
    d = np.asarray(durations, dtype="float64")
    out = np.full(len(d), "", dtype=object)
    if len(d) < 3:
        return out
    m, allowed = _robust(d)
    out[d > m + allowed] = "slow"
    out[d < m - allowed] = "fast"
    return out


def _spread(x: pd.Series) -> dict[str, float | None]:
    v = x.dropna().to_numpy(dtype="float64")
    if len(v) == 0:
        return {"median": None, "min": None, "max": None, "mean": None, "cv": None}
    mean = float(v.mean())
    cv = float(v.std(ddof=1) / mean) if len(v) > 1 and mean > 0 else None
    return {"median": float(np.median(v)), "min": float(v.min()), "max": float(v.max()), "mean": mean, "cv": cv}


def _steady_summary(table: pd.DataFrame, top: pd.DataFrame) -> dict[str, Any]:
    st = table[~table["warmup"].to_numpy(dtype=bool)]
    if st.empty:
        return {}
    out: dict[str, Any] = {
        "iterations": len(st), "first": str(st["name"].iloc[0]), "last": str(st["name"].iloc[-1]),
        "warmup": [str(n) for n in table.loc[table["warmup"].to_numpy(dtype=bool), "name"]],
        "outliers": [{"name": str(r.name), "duration_ns": int(r.duration_ns), "kind": r.outlier}
                     for r in st.itertuples(index=False) if r.outlier],
        "start_ns": int(st["start_ns"].min()), "end_ns": int(st["end_ns"].max()),
    }
    for c in SUMMARIZED:
        out[c] = _spread(st[c])
    ks = top[top["iteration"].isin(st["index"])] if len(top) else top
    if len(ks):
        per = ks.groupby(["name", "short_name"], sort=False, dropna=False).agg(
            total_ns=("total_ns", "sum"), count=("count", "sum")).reset_index()
        per = per.sort_values("total_ns", ascending=False, kind="mergesort").head(_TOP_KERNELS)
        kt = float(st["kernel_ns"].sum()) or np.nan
        out["top_kernels"] = [{"name": r.name, "short_name": r.short_name, "per_iteration_ns": r.total_ns / len(st),
                               "launches_per_iteration": r.count / len(st), "share_pct": 100 * r.total_ns / kt}
                              for r in per.itertuples(index=False)]
    return out


def _if(measured: bool, values: np.ndarray) -> pd.arrays.IntegerArray:
    """Integer ns, or all missing when nothing was measured."""
    return pd.arrays.IntegerArray(values.astype("int64"), np.full(len(values), not measured))


def iterations(p: Profile, iteration: str | None = None) -> Iterations | None:
    """The iterations of a capture, measured (module doc); ``None`` when none are found.

    ``iteration``: the ``--iteration`` value (a range name, ``domain:name``, or a regular expression
    matched against whole names); raises :class:`UsageError` when nothing matches."""
    if iteration is not None:
        ranges, source = _explicit(p, iteration)
        pattern = iteration
    else:
        found = _auto(p)
        if found is None:
            return None
        ranges, source = found
        pattern = _shown(str(ranges["name"].iloc[0]))
    ranges = ranges.sort_values("start_ns", kind="stable")
    w_start = ranges["start_ns"].to_numpy(dtype="int64")
    w_end = ranges["end_ns"].to_numpy(dtype="int64")
    notes: list[str] = []
    if len(w_start) > 1 and (w_start[1:] < w_end[:-1]).any():
        notes.append("some iterations overlap in time: GPU work is counted in the first that holds its launch")
        w_end = np.minimum(w_end, np.r_[w_start[1:], w_end[-1]])
    pid = int(ranges["pid"].iloc[0]) if ranges["pid"].notna().all() and ranges["pid"].nunique() == 1 else None
    names = ranges["name"].fillna("").astype(str).to_numpy()
    del ranges
    n = len(w_start)
    dur = w_end - w_start
    steady = ~warmup_mask(dur)
    if iteration_spilled.spills(p):
        m = _measured_out_of_core(p, pid, w_start, w_end, steady)
    else:
        m = _measured(p, pid, w_start, w_end, steady)
    mm, (busy, largest, gaps) = m
    measured = mm.ops > 0  # a trace with no device activity says nothing about GPU busy time
    if not measured:
        notes.append("no GPU activity in this capture: GPU busy time per iteration is not measured")
        gaps = gaps.iloc[0:0]
    zeros = np.zeros(n, dtype="int64")
    any_op = sum(mm.counts.values(), zeros) > 0
    table = pd.DataFrame({
        "index": np.arange(n), "name": names, "start_ns": w_start, "end_ns": w_end,
        "duration_ns": dur, "gpu_busy_ns": _if(measured, busy),
        "gpu_busy_pct": np.where((dur > 0) & measured, 100.0 * busy / np.maximum(dur, 1), np.nan),
        "idle_ns": _if(measured, dur - busy), "largest_gap_ns": _if(measured, largest),
        "gpu_start_ns": pd.arrays.IntegerArray(np.where(any_op, mm.gpu_start, 0), ~any_op),
        "gpu_end_ns": pd.arrays.IntegerArray(np.where(any_op, mm.gpu_end, 0), ~any_op),
        "kernels": mm.counts.get(_KERNEL, zeros), "kernel_ns": mm.totals.get((_KERNEL, "duration_ns"), zeros),
        "memcpy_count": mm.counts.get(_MEMCPY, zeros), "memcpy_ns": mm.totals.get((_MEMCPY, "duration_ns"), zeros),
        "memcpy_bytes": mm.totals.get((_MEMCPY, "bytes"), zeros),
        "memset_ns": mm.totals.get((_MEMSET, "duration_ns"), zeros),
        "sync_ns": mm.sync_ns,
        "launch_overhead_ns": mm.launch_overhead,
    })
    table["warmup"] = ~steady
    table["outlier"] = ""
    table.loc[steady, "outlier"] = outlier_labels(dur[steady])
    table = table[COLUMNS]
    if mm.ops and not mm.in_windows:
        notes.append("no GPU work was launched inside these ranges")
    return Iterations(source=source, pattern=pattern, pid=pid, table=table, top_kernels=mm.top, gaps=gaps,
                      steady=_steady_summary(table, mm.top), notes=notes)



def _measured_out_of_core(p: Profile, pid: int | None, w_start: np.ndarray, w_end: np.ndarray, steady: np.ndarray
                          ) -> tuple[Measured, tuple[np.ndarray, np.ndarray, pd.DataFrame]]:
    """:func:`_measured` of an export past the budget (:mod:`iteration_spilled`)."""
    blocks = intervals_spilled.take_blocks(p, pid)
    try:
        busy = intervals_spilled.windows_busy_and_gaps(blocks, w_start, w_end)
    finally:
        blocks.close()
    m = iteration_spilled.measure(p, pid, w_start, w_end, steady)
    remember_steady_masks(p, m.steady_ops, steady, w_start, w_end, pid)
    m.steady_ops = {}
    return m, busy


def steady_profile(p: Profile, it: Iterations) -> Profile:
    """``p`` cut to the steady state: the GPU work launched in steady iterations (as attributed
    above, by launch time), the CUDA calls and NVTX ranges that start inside them; GPUs and meta
    as they are.  An export's profile is cut lazily (:func:`~nsighttk.subset.subset`: rows
    selected, columns read when asked for); tables held in memory are cut at once.  Which rows
    are kept is remembered with ``p`` for the steady windows and process asked (analyze asks
    twice: the collectives and the advice; 1.1 s each at 10M kernels): masks only, no reference
    back to ``p`` or ``it``."""
    st = it.steady_table
    w_start = st["start_ns"].to_numpy(dtype="int64")
    w_end = st["end_ns"].to_numpy(dtype="int64")
    asked = (w_start.tobytes(), w_end.tobytes(), it.pid)
    known = p.cache.get(("steady_keep",))
    if isinstance(known, tuple) and known[0] == asked:
        keep: dict[str, RowMask] = known[1]
    else:
        spills = iteration_spilled.spills(p)  # (out of core a bit a row, else a byte: read whole, and often)
        keep = {t: RowMask.of(m, packed=spills) for t, m in
                (iteration_spilled.steady_keep if spills else _steady_keep)(p, w_start, w_end, it.pid, asked).items()}
        p.cache[("steady_keep",)] = (asked, keep)
    if p.source is not None:
        return subset(p, keep)
    return Profile(**{t: p.table(t)[keep[t].array()] if len(keep[t]) else p.table(t) for t in keep},
                   gpus=p.gpus, meta=dict(p.meta))


def forget_steady(p: Profile) -> None:
    """Drop the steady state's rows :func:`steady_profile` keeps with ``p`` (a byte a row), and the
    busy blocks on disk."""
    p.cache.pop(("steady_keep",), None)
    p.cache.pop(("steady_ops",), None)
    blocks = p.cache.pop(("busy_spill",), None)  # (the busy blocks on disk, where no iterations took them)
    if blocks is not None:
        blocks.close()


def scope_label(it: Iterations) -> str:
    """How findings computed on the steady state say so: ``steady state, 5 iterations (step 1 to step 5)``."""
    s = it.steady
    n = s.get("iterations", 0)
    span = f"{s['first']}" if n == 1 else f"{s['first']} to {s['last']}"
    return f"steady state, {n} iteration{'s' if n != 1 else ''} ({span})"
