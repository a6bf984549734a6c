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

**Where no range marks them** (most real scripts), they are found from the work itself:
PyTorch's optimizer step ranges, bursts of optimizer kernels, or the kernels that run once per
iteration (:mod:`nsighttk.analysis.iterations.detect`); their names are ``iteration N``.  Where ranges
mark them, the work is still searched, and a note says where it repeats differently (more than one
iteration apart in number, or more than 10% in median duration); the ranges are used.  ``signal``
says which source gave them and ``confidence`` how regular they are (the coefficient of variation of
the steady durations) and how much of the capture they cover.

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

from nsighttk import engine
from nsighttk.analysis.iterations import detect as iteration_detect
from nsighttk.analysis.iterations import ops as iteration_ops
from nsighttk.analysis.iterations import ranges as iteration_ranges
from nsighttk.analysis.iterations.ops import SYNC_APIS, TOP_KERNELS
from nsighttk.profile import Profile
from nsighttk.subset import subset
from nsighttk.units import fmt_ns

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
    #: the signal they came from: "NVTX ranges", "torch.profiler steps", "--iteration", or one of
    #: :mod:`nsighttk.analysis.iterations.detect`'s ("optimizer ranges", "optimizer kernels", "repeated kernels")
    signal: str = "NVTX ranges"
    #: how sure: ``period_cv`` (coefficient of variation of the steady iterations' durations) and
    #: ``covered_pct`` (share of the capture the iterations cover: from the first start to the last end
    #: of the process's GPU work and of the iterations)
    confidence: dict[str, Any] = field(default_factory=dict)

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
# (the queries live in :mod:`nsighttk.analysis.iterations.ranges`)


def described(g: pd.DataFrame, tier: int) -> str:
    """How the chosen ranges ``g`` were found, for people."""
    what = "torch.profiler steps" if tier == 0 else "NVTX ranges"
    return f"{what} '{_shown(g.iloc[0]['name'])}' ({_where(g)})"


def _shown(name: str) -> str:
    """``step 3`` -> ``step N``: a group's name for people."""
    return re.sub(r"\d+", "N", str(name))


def _where(g: pd.DataFrame) -> str:
    r = g.iloc[0]
    tid = r["tid"] if pd.notna(r["tid"]) else r["tid_key"]
    return f"thread {int(tid)}, level {int(r['depth'])}"


# ------------------------------------------------------------------------------ measuring them
# (the queries live in :mod:`nsighttk.analysis.iterations.ops`)


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
        ks = ks.assign(total_ns=ks["total_ns"].astype("float64"))  # (summed over iterations: past int64 it wraps)
        per = ks.groupby(["name", "short_name"], sort=False, dropna=False).agg(
            total_ns=("total_ns", "sum"), count=("count", "sum")).reset_index()
        per = per.sort_values("total_ns", ascending=False, kind="mergesort").head(TOP_KERNELS)
        kt = float(st["kernel_ns"].sum()) or np.nan
        out["top_kernels"] = [{"name": r.name, "short_name": r.short_name, "per_iteration_ns": r.total_ns / len(st),
                               "launches_per_iteration": r.count / len(st), "share_pct": 100 * r.total_ns / kt}
                              for r in per.itertuples(index=False)]
    return out


def _if(measured: bool, values: np.ndarray) -> pd.arrays.IntegerArray | np.ndarray:
    """Integer ns, or all missing when nothing was measured."""
    if values.dtype == object:  # (sums past int64: a damaged export's, exact)
        return values if measured else np.full(len(values), None, dtype=object)
    return pd.arrays.IntegerArray(values.astype("int64"), np.full(len(values), not measured))


@dataclass
class _Windows:
    """The iterations before they are measured: windows, labels, process, how they were found."""

    w_start: np.ndarray
    w_end: np.ndarray
    names: np.ndarray
    pid: int | None
    source: str
    pattern: str
    signal: str
    notes: list[str]


def _from_ranges(ranges: pd.DataFrame, source: str, pattern: str, signal: str) -> _Windows:
    ranges = ranges.sort_values("start_ns", kind="stable")
    w_start = ranges["start_ns"].to_numpy(dtype="int64")
    w_end = ranges["end_ns"].to_numpy(dtype="int64")
    notes: list[str] = []
    if len(w_start) > 1 and (w_start[1:] < w_end[:-1]).any():
        notes.append("some iterations overlap in time: GPU work is counted in the first that holds its launch")
        w_end = np.minimum(w_end, np.r_[w_start[1:], w_end[-1]])
    pid = int(ranges["pid"].iloc[0]) if ranges["pid"].notna().all() and ranges["pid"].nunique() == 1 else None
    names = ranges["name"].fillna("").astype(str).to_numpy()
    return _Windows(w_start, w_end, names, pid, source, pattern, signal, notes)


def _windows(p: Profile, iteration: str | None, detect: bool, check: bool) -> _Windows | None:
    """The iteration windows (module doc): ``--iteration``, else annotated ranges (checked against
    the work where ``detect`` and ``check``), else found from the work where ``detect``."""
    if iteration is not None:
        ranges, how = iteration_ranges.explicit(p, iteration)
        return _from_ranges(ranges, f"ranges {how} '{iteration}' ({_where(ranges)})", iteration, "--iteration")
    found = iteration_ranges.found(p)
    work = iteration_detect.detect(p) if detect and (check or found is None) else None
    if found is not None:
        ranges, tier = found
        got = _from_ranges(ranges, described(ranges, tier), _shown(str(ranges["name"].iloc[0])),
                           "torch.profiler steps" if tier == 0 else "NVTX ranges")
        if work is not None:
            got.notes.extend(_disagreement(got, work))
        return got
    if work is None:
        return None
    return _Windows(work.w_start, work.w_end, np.array(work.names, dtype=object), work.pid, f"the work: {work.source}",
                    "iteration N", work.signal, [])


def _disagreement(annotated: _Windows, work: iteration_detect.Found) -> list[str]:
    """A note where the iterations the work shows differ from the annotated ones: more than one in
    number, or their median time by more than 10%."""
    n_a, n_w = len(annotated.w_start), len(work.w_start)
    m_a = float(np.median(annotated.w_end - annotated.w_start))
    m_w = float(np.median(work.w_end - work.w_start))
    if abs(n_a - n_w) <= 1 and abs(m_w - m_a) <= 0.1 * max(m_a, 1.0):
        return []
    return [f"the work itself repeats differently from the {annotated.signal}: {n_w} iteration(s) of "
            f"{fmt_ns(m_w)} (median) from {work.source}, against {n_a} of {fmt_ns(m_a)}"]


def reads(p: Profile) -> dict[str, list[str]]:
    """The columns :func:`iterations` reads (the ranges, the measures, the launching calls), as
    ``p`` has them: a caller that reads more puts them all into the engine at once."""
    return engine.union({t: [iteration_ops.name_column(p, t) if c == "name_id" else c for c in cols]
                         for t, cols in iteration_ops.COLUMNS.items()},
                        engine.DERIVED_FROM, {"kernels": ["short_name"], "nvtx": iteration_ranges.READ})


def iterations(p: Profile, iteration: str | None = None, detect: bool = True,
               check: bool = True) -> Iterations | None:
    """The iterations of a capture, measured (module doc); ``None`` when none are found.

    ``iteration``: the ``--iteration`` value (a range name, ``domain:name``, or a regular expression
    matched against whole names); raises :class:`UsageError` when nothing matches.  ``detect``:
    find iterations from the work where no range marks them, and (``check``) the ranges against it
    (a note where they disagree: a summary of many ranks, which shows no such note, passes it by)."""
    got = _windows(p, iteration, detect, check)
    if got is None:
        return None
    w_start, w_end, names, pid, notes = got.w_start, got.w_end, got.names, got.pid, got.notes
    source, pattern = got.source, got.pattern
    n = len(w_start)
    dur = w_end - w_start
    steady = ~warmup_mask(dur)
    m = iteration_ops.measure(p, pid, w_start, w_end, steady)
    p.cache[("steady_ops",)] = _asked(w_start[steady], w_end[steady], pid)  # (what the attribution kept is for)
    measured = m.ops > 0  # a trace with no device activity says nothing about GPU busy time
    gaps = m.gaps
    if not measured:
        notes.append("no GPU activity in this capture: GPU busy time per iteration is not measured")
        gaps = gaps.iloc[0:0]
    table = pd.DataFrame({
        "index": np.arange(n), "name": names, "start_ns": w_start, "end_ns": w_end,
        "duration_ns": dur, "gpu_busy_ns": _if(measured, m.busy),
        "gpu_busy_pct": np.where((dur > 0) & measured, 100.0 * m.busy / np.maximum(dur, 1), np.nan),
        "idle_ns": _if(measured, dur - m.busy), "largest_gap_ns": _if(measured, m.largest_gap),
        "gpu_start_ns": m.gpu_start, "gpu_end_ns": m.gpu_end,
        "kernels": m.counts["kernels"], "kernel_ns": m.totals["kernel_ns"],
        "memcpy_count": m.counts["memcpy"], "memcpy_ns": m.totals["memcpy_ns"],
        "memcpy_bytes": m.totals["memcpy_bytes"], "memset_ns": m.totals["memset_ns"],
        "sync_ns": m.sync_ns, "launch_overhead_ns": m.launch_overhead,
    })
    table["warmup"] = ~steady
    table["outlier"] = ""
    table.loc[steady, "outlier"] = outlier_labels(dur[steady])
    table = table[COLUMNS]
    if m.ops and not m.in_windows:
        notes.append("no GPU work was launched inside these ranges")
    steady_summary = _steady_summary(table, m.top)
    return Iterations(source=source, pattern=pattern, pid=pid, table=table, top_kernels=m.top, gaps=gaps,
                      steady=steady_summary, notes=notes, signal=got.signal,
                      confidence=_confidence(p, pid, table, steady_summary))


def _confidence(p: Profile, pid: int | None, table: pd.DataFrame, steady: dict[str, Any]) -> dict[str, Any]:
    """How sure the iterations are: the steady durations' coefficient of variation and the share
    of the process's GPU span (first start to last end of its kernels, copies and memsets) that
    the iterations cover."""
    cv = (steady.get("duration_ns") or {}).get("cv") if steady else None
    tables = [t for t in iteration_ops.OPS if p.count(t)]
    covered = None
    if tables and len(table):
        eng = engine.of(p).need({t: ["start_ns", "end_ns", "global_pid"] for t in tables})
        own = iteration_ops.own_ops(pid)
        (lo, hi), = eng.con.execute("SELECT min(lo), max(hi) FROM (" + " UNION ALL ".join(
            f"SELECT min(start_ns) AS lo, max(end_ns) AS hi FROM {t} WHERE {own}" for t in tables) + ")",
            {"pid": pid} if "$pid" in own else {}).fetchall()
        if lo is not None and hi is not None:
            lo, hi = min(lo, int(table["start_ns"].min())), max(hi, int(table["end_ns"].max()))
            covered = 100.0 * float(table["duration_ns"].sum()) / float(hi - lo) if hi > lo else None
    return {"period_cv": cv, "covered_pct": covered}


def _asked(w_start: np.ndarray, w_end: np.ndarray, pid: int | None) -> tuple[bytes, bytes, int | None]:
    """The key of the steady state's rows: its windows and process."""
    return w_start.astype("int64").tobytes(), w_end.astype("int64").tobytes(), pid


def _steady_keep(p: Profile, w_start: np.ndarray, w_end: np.ndarray, pid: int | None) -> dict[str, np.ndarray]:
    """Per table, the rows of :func:`steady_profile` (a boolean mask): the GPU operations as the
    iterations attributed them where they were measured for these windows, else attributed here."""
    reuse = p.cache.pop(("steady_ops",), None) == _asked(w_start, w_end, pid)
    return iteration_ops.steady_rows(p, pid, w_start, w_end, reuse)


def steady_profile(p: Profile, it: Iterations) -> Profile:
    """``p`` cut to the steady state: the GPU work launched in steady iterations (as attributed
    above, by launch time), the CUDA calls and NVTX ranges that start inside them; GPUs and meta
    as they are.  An export's profile is cut lazily (:func:`~nsighttk.subset.subset`: rows
    selected, columns read when asked for); tables held in memory are cut at once.  Which rows
    are kept is remembered with ``p`` for the steady windows and process asked (analyze asks
    twice: the collectives and the advice): masks only, no reference back to ``p`` or ``it``."""
    st = it.steady_table
    w_start = st["start_ns"].to_numpy(dtype="int64")
    w_end = st["end_ns"].to_numpy(dtype="int64")
    asked = _asked(w_start, w_end, it.pid)
    known = p.cache.get(("steady_keep",))
    if isinstance(known, tuple) and known[0] == asked:
        keep: dict[str, np.ndarray] = known[1]
    else:
        keep = _steady_keep(p, w_start, w_end, it.pid)
        p.cache[("steady_keep",)] = (asked, keep)
    if p.source is not None:
        return subset(p, keep)
    return Profile(**{t: p.table(t)[keep[t]] if len(keep[t]) else p.table(t) for t in keep},
                   gpus=p.gpus, meta=dict(p.meta))


def forget_steady(p: Profile) -> None:
    """Drop the steady state's rows :func:`steady_profile` keeps with ``p`` (a byte a row) and the
    operations the iterations attributed."""
    p.cache.pop(("steady_keep",), None)
    p.cache.pop(("steady_ops",), None)
    iteration_ops.forget(p)


def scope_label(it: Iterations) -> str:
    """How findings computed on the steady state say so: ``steady state, 5 iterations (step 1 to step 5)``."""
    s = it.steady
    n = s.get("iterations", 0)
    span = f"{s['first']}" if n == 1 else f"{s['first']} to {s['last']}"
    return f"steady state, {n} iteration{'s' if n != 1 else ''} ({span})"
