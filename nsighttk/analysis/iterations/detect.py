"""Iterations found from the work itself, for captures without step annotations: most real scripts
carry no NVTX ``step`` range and never call ``prof.step()``.

The iterations are the stretches between consecutive *boundaries*, one boundary per iteration;
``n`` boundaries give ``n - 1`` iterations (what comes before the first boundary, or after the
last, is not known to be a whole iteration and is left out).  Boundaries are taken from these
signals, in the main process (the one with the most kernels): the first where it holds, else the
second where it holds and counts fewer iterations than the third, else the third:

1. **optimizer ranges**: the ends of PyTorch's ``Optimizer.step#...`` ranges (Kineto
   ``record_function`` ranges, or NVTX ranges of ``emit_nvtx``), of the thread with the most,
   two or more; the iteration is the optimizer step, so several forward/backward passes per step
   (gradient accumulation) are one iteration;
2. **optimizer kernels**: bursts of optimizer kernels (``multi_tensor_apply_kernel``, fused
   Adam/SGD/LAMB kernels), by the CPU launch time of each (its CUDA call's start); a burst ends
   where the gap to the next launch is more than :data:`_BURST_JUMP` times longer than the
   gaps within bursts (the largest jump between the sorted gaps), or where the kernels repeat
   (signal 3) at a gap over half the repeat's period, the bursts of the repeat's first period
   (warm-up: the first optimizer step may pause inside) merged; the boundary is the launch of a
   burst's last kernel.  Both optimizer signals move each boundary to the end of the first
   synchronising call after it (:func:`after_sync`), where a loop waits for the GPU;
3. **kernels that run once per iteration**: kernel names launched exactly ``c`` times, where
   their ``j``-th launches all lie before any of their ``j + 1``-th ones (names that break this
   order are dropped; one or more must remain), of three or more, where the iterations hold at
   least :data:`_MIN_SHARE` of the process's kernels from the first iteration on.  Of the counts
   that hold, the largest whose iterations nearly all (:data:`_SYNCED`) hold a host-blocking
   synchronising call wins (a step ends in ``loss.item()`` or a decode step in its stopping
   check, a layer does not: tokens rather than ``generate()`` calls, steps rather than epochs or
   layers), else the smallest (the longest repeating unit); the boundary is the iteration's first
   launch of such a kernel.  Where optimizer kernels burst fewer times than that (gradient
   accumulation), signal 2 wins.  An inference decode loop is found this way: the prefill is the
   first iteration, each token one more.

Each signal's boundaries must be regular: at least half of the periods (boundary to boundary)
lie within 25% of their median (a warm-up iteration or an evaluation pass may break a few).

Queries over the engine (:func:`nsighttk.engine.of`): one row per kernel name; the GPU starts of
the names launched fewest times (up to :data:`_MAX_LAUNCHES`), on which the counts are tried; the
launch times only of the names of the counts that hold, and of the optimizer's kernels; the rest
is numpy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsighttk import engine
from nsighttk.analysis.iterations.ops import SYNC_APIS, name_column, own_calls, own_ops, run_query
from nsighttk.engine import Engine
from nsighttk.profile import Profile

#: PyTorch's optimizer step range (``Optimizer.step#AdamW.step``).
OPTIMIZER_RANGE = re.compile(r"Optimizer\.step#")
#: Kernels an optimizer step launches (foreach / fused multi-tensor kernels, fused optimizers).
OPTIMIZER_KERNEL = re.compile(r"multi_tensor_apply|fused_adam|FusedAdam|fused_sgd|FusedSgd|lamb(?!da)|adamw?_kernel",
                              re.IGNORECASE)
#: Multi-tensor kernels that are not an optimizer's (``zero_grad(set_to_none=False)``).
_NOT_OPTIMIZER = re.compile(r"ZeroFunctor")
#: The smallest ratio between the gaps that end bursts and those within them.
_BURST_JUMP = 5.0
#: At most this many launches are read for signal 3 (the names launched fewest times first).
_MAX_LAUNCHES = 500_000
_MIN_BOUNDARIES = 3
#: The share of the process's kernels from the first iteration on that the iterations must hold.
_MIN_SHARE = 0.3
#: The share of iterations that must hold a synchronising call for a finer repeat to win.
_SYNCED = 0.8


@dataclass
class Found:
    """Iteration windows ``[w_start, w_end)`` (launch times, sorted, disjoint), the process they
    are of, the signal (``optimizer ranges``, ``optimizer kernels``, ``repeated kernels``) and how
    they were found, for people."""

    w_start: np.ndarray
    w_end: np.ndarray
    pid: int | None
    signal: str
    source: str

    @property
    def names(self) -> list[str]:
        return [f"iteration {i}" for i in range(len(self.w_start))]


def regular(boundaries: np.ndarray) -> bool:
    """Whether at least half of the periods between ``boundaries`` lie within 25% of their median."""
    d = np.diff(np.asarray(boundaries, dtype=np.float64))
    if len(d) == 0:
        return False
    m = float(np.median(d))
    return m > 0 and float(np.mean(np.abs(d - m) <= 0.25 * m)) >= 0.5


def bursts(t: np.ndarray, split: float | None = None) -> np.ndarray:
    """The last time of each burst of the sorted times ``t``: bursts are split at gaps longer than
    ``split``, or where it is None, at the largest jump between the sorted gaps (module doc,
    signal 2; each time its own burst where no jump is :data:`_BURST_JUMP` or more)."""
    g = np.diff(t)
    if split is None:
        pos = np.sort(g[g > 0])
        if len(pos) < 2:
            return t[-1:] if len(t) else t
        ratio = pos[1:] / pos[:-1]
        j = int(np.argmax(ratio))
        if ratio[j] < _BURST_JUMP:
            return t  # (no jump: one launch a step, or one burst; regular() tells)
        split = float(pos[j])
    ends = np.flatnonzero(g > split)
    return np.r_[t[ends], t[-1:]]


def once_per_iteration(codes: np.ndarray, t: np.ndarray, c: int) -> np.ndarray | None:
    """The iterations' first launches of the names launched ``c`` times (``codes``/``t``: every
    launch of them, in any order), of the names that keep the iterations' order (:func:`kept`);
    None where none does."""
    got = kept(codes, t, c)
    return None if got is None else got[0]


def kept(codes: np.ndarray, t: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The iterations' first times and the codes of the names (``codes``/``t``: every time of the
    names timed ``c`` times, in any order) that keep the iterations' order: a name whose ``j``-th
    time is not between the names' median ``j - 1``-th and ``j + 1``-th is dropped, and the
    remaining names' ``j``-th times must all precede their ``j + 1``-th (module doc, signal 3);
    None where no name remains or they do not."""
    names = len(codes) // c
    if names < 1:
        return None
    order = np.lexsort((t, codes))
    T = t[order].reshape(names, c)
    mid = np.median(T, axis=0)
    keep = (T[:, 1:] > mid[:-1]).all(axis=1) & (T[:, :-1] < mid[1:]).all(axis=1)
    T = T[keep]
    if len(T) < 1:
        return None
    lo, hi = T.min(axis=0), T.max(axis=0)
    if not (hi[:-1] < lo[1:]).all():
        return None
    return lo, codes[order].reshape(names, c)[keep, 0]


def _main_pid(eng: Engine) -> int | None:
    # (positions, not the alias: a kernels view holding its ``pid`` column would group by that)
    got = eng.rows("SELECT (global_pid >> 24) & 16777215, count(*) AS n FROM kernels GROUP BY 1 ORDER BY n DESC, 1 "
                   "LIMIT 1")
    return None if not got or got[0][0] is None else int(got[0][0])


def _launches(eng: Engine, pid: int | None, col: str, codes: list[object]) -> tuple[np.ndarray, np.ndarray]:
    """(name, launch time) of the process's kernels named ``codes``, by launch time: the start of
    the call that launched each (the engine's ``launch_ns``), else the kernel's start."""
    typed = "VARCHAR" if col == "name" else "BIGINT"
    own = own_ops(pid)
    got = eng.con.execute(f"""
        SELECT {col} AS code, coalesce(launch_ns, start_ns) AS t FROM kernels
        WHERE {own} AND {col} IN (SELECT unnest($codes::{typed}[])) AND coalesce(launch_ns, start_ns) IS NOT NULL
        ORDER BY t""", {"codes": codes, **({"pid": pid} if "$pid" in own else {})}).fetchnumpy()
    return np.asarray(got["code"]), np.asarray(got["t"], dtype=np.int64)


def _windows(boundaries: np.ndarray, pid: int | None, signal: str, source: str, least: int = _MIN_BOUNDARIES
             ) -> Found | None:
    b = np.unique(np.asarray(boundaries, dtype=np.int64))
    if len(b) < least or not regular(b):
        return None
    return Found(b[:-1].copy(), b[1:].copy(), pid, signal, source)


def _starts(eng: Engine, pid: int | None, col: str, codes: list[object]) -> tuple[np.ndarray, np.ndarray]:
    """(name, GPU start) of the process's kernels named ``codes``, by start."""
    typed = "VARCHAR" if col == "name" else "BIGINT"
    got = eng.con.execute(f"SELECT {col} AS code, start_ns FROM kernels WHERE {own_ops(pid)} AND start_ns IS NOT NULL "
                          f"AND {col} IN (SELECT unnest($codes::{typed}[])) ORDER BY start_ns",
                          {"codes": codes, **({"pid": pid} if pid is not None else {})}).fetchnumpy()
    return np.asarray(got["code"]), np.asarray(got["start_ns"], dtype=np.int64)


def _timed(eng: Engine, names: list[object], got: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's position in ``names`` and its time (rows of no such name dropped)."""
    index = pd.Index(names).get_indexer(got)
    return index[index >= 0], t[index >= 0]


def _optimizer_ranges(p: Profile) -> Found | None:
    if not p.count("nvtx"):
        return None
    eng = engine.of(p).need({"nvtx": ["name", "start_ns", "end_ns", "global_tid", "tid", "pid"]})
    rows = eng.rows("""
        WITH s AS (SELECT coalesce(global_tid, tid, -1) AS tk, pid, end_ns FROM nvtx
                   WHERE end_ns IS NOT NULL AND starts_with(name, 'Optimizer.step#')),
             t AS (SELECT tk FROM s GROUP BY tk ORDER BY count(*) DESC, tk LIMIT 1)
        SELECT end_ns, pid FROM s WHERE tk IN (SELECT tk FROM t) ORDER BY end_ns""")
    if len(rows) < 2:
        return None
    pids = {r[1] for r in rows}
    pid = int(rows[0][1]) if len(pids) == 1 and rows[0][1] is not None else None
    ends = np.array([r[0] for r in rows], dtype=np.int64)
    return _windows(after_sync(ends, *_sync_calls(p, eng, pid)), pid, "optimizer ranges",
                    f"the ends of {len(ends)} 'Optimizer.step#' ranges, each at the synchronisation that follows "
                    "it where one does (one optimizer step per iteration)", least=2)


def _kernel_counts(p: Profile, eng: Engine, pid: int | None, col: str) -> tuple[list[object], np.ndarray, list[str]]:
    """Each kernel name of the process: its code, launches and text."""
    rows = run_query(eng, f"SELECT {col}, count(*) FROM kernels WHERE {own_ops(pid)} AND {col} IS NOT NULL "
                     f"GROUP BY {col} ORDER BY {col}", pid)
    codes = [r[0] for r in rows]
    counts = np.array([r[1] for r in rows], dtype=np.int64)
    if col == "name":
        texts = [str(c) for c in codes]
    else:
        texts = [str(n) for n in p.names("kernels", np.array(codes, dtype=np.int64))] if codes else []
    return codes, counts, texts


def _optimizer_kernels(p: Profile, eng: Engine, pid: int | None, col: str, codes: list[object], texts: list[str],
                       repeated: Found | None) -> Found | None:
    """Signal 2; where the kernels repeat (``repeated``, signal 3), bursts are split at gaps over
    half their period, and count only where they are fewer than the repeats (several passes per
    optimizer step)."""
    opt = [c for c, n in zip(codes, texts, strict=True) if OPTIMIZER_KERNEL.search(n) and not _NOT_OPTIMIZER.search(n)]
    if not opt:
        return None
    _, t = _launches(eng, pid, col, opt)
    if len(t) < _MIN_BOUNDARIES:
        return None
    per = ""
    if repeated is None:
        ends = bursts(t)
    else:  # (from the second repeat on: the first, a warm-up, may break its optimizer step into several bursts)
        ends = bursts(t, 0.5 * float(np.median(repeated.w_end - repeated.w_start)))
        later = int(np.searchsorted(ends, repeated.w_start[1] if len(repeated.w_start) > 1 else ends[-1]))
        ends = ends[max(later - 1, 0):]
        repeats = int(np.searchsorted(repeated.w_start, ends[0], side="right"))
        if len(ends) - 1 > 0.75 * (len(repeated.w_start) - repeats):
            return None
        per = (f"; {(len(repeated.w_start) - repeats) / max(len(ends) - 1, 1):.3g} repeats of the kernels per step: "
               "gradient accumulation")
    return _windows(after_sync(ends + 1, *_sync_calls(p, eng, pid)), pid, "optimizer kernels",
                    f"{len(ends)} bursts of optimizer kernels ({len(opt)} names, {len(t):,} launches; one optimizer "
                    f"step per iteration{per})")


def _repeated_kernels(p: Profile, eng: Engine, pid: int | None, col: str, codes: list[object], counts: np.ndarray
                      ) -> Found | None:
    """Signal 3: every candidate count tried; of those that hold, among the counts whose
    iterations nearly all (:data:`_SYNCED`) hold a synchronising call and that are at least half
    the largest such, the one the most names share (then the largest); else the smallest."""
    # the names of each count of three or more, fewest launches first, up to _MAX_LAUNCHES in all,
    # tried on their GPU starts; the launches read only of the names of the counts that hold
    order = np.argsort(counts, kind="stable")
    order = order[counts[order] >= _MIN_BOUNDARIES]
    order = order[np.cumsum(counts[order]) <= _MAX_LAUNCHES]
    if not len(order):
        return None
    names = [codes[i] for i in order]
    index, t = _timed(eng, names, *_starts(eng, pid, col, names))
    per_row = counts[order][index]
    ok: list[tuple[int, np.ndarray]] = []
    for c in np.unique(counts[order]):
        rows = per_row == c
        if not rows.any() or rows.sum() % c:
            continue
        got = kept(index[rows], t[rows], int(c))
        if got is None:
            continue
        found = _windows(got[0], pid, "", "")
        if found is not None and _holds(eng, pid, found):
            ok.append((int(c), got[1]))
    if not ok:
        return None
    chosen = sorted({int(i) for _, k in ok for i in k})
    index, t = _timed(eng, [names[i] for i in chosen], *_launches(eng, pid, col, [names[i] for i in chosen]))
    held: list[tuple[Found, int]] = []
    for c, k in ok:
        rows = np.isin(index, np.searchsorted(chosen, k))
        lo = once_per_iteration(index[rows], t[rows], c) if rows.sum() == c * len(k) else None
        what = f"{len(k)} kernel name(s) that run once per iteration ({c} times each)"
        found = None if lo is None else _windows(lo, pid, "repeated kernels", what)
        if found is not None:
            held.append((found, len(k)))
    if len(held) < 2:
        return held[0][0] if held else None
    sync, _ = _sync_calls(p, eng, pid)
    synced = [(f, n) for f, n in held if synchronised(f.w_start, f.w_end, sync)]
    if not synced:
        return held[0][0]
    # of the synchronised counts as fine as half the finest, the one most names agree on (then the finest)
    finest = len(synced[-1][0].w_start)
    return max((x for x in synced if 2 * len(x[0].w_start) >= finest), key=lambda x: (x[1], len(x[0].w_start)))[0]


def synchronised(w_start: np.ndarray, w_end: np.ndarray, sync: np.ndarray) -> bool:
    """Whether :data:`_SYNCED` of the windows hold one of the sorted times ``sync``."""
    if not len(sync) or not len(w_start):
        return False
    inside = np.searchsorted(sync, w_end, side="left") - np.searchsorted(sync, w_start, side="left")
    return float(np.mean(inside > 0)) >= _SYNCED


def _sync_calls(p: Profile, eng: Engine, pid: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The starts and ends of the process's host-blocking synchronising calls (:data:`SYNC_APIS`),
    by start."""
    none = np.zeros(0, dtype=np.int64)
    if not p.count("api"):
        return none, none
    acol = name_column(p, "api")
    eng.need({"api": [acol, "start_ns", "end_ns", "global_tid"]})
    ids = [k for (k,) in eng.rows(f"SELECT DISTINCT {acol} FROM api WHERE {acol} IS NOT NULL")]
    names = ids if acol == "name" else [str(n) for n in p.names("api", np.array(ids, dtype=np.int64))] if ids else []
    sync = [k for k, v in zip(ids, names, strict=True) if re.sub(r"_v\d+$", "", str(v)) in SYNC_APIS]
    if not sync:
        return none, none
    typed = "VARCHAR" if acol == "name" else "BIGINT"
    got = eng.con.execute(f"SELECT start_ns, end_ns FROM api WHERE {acol} IN (SELECT unnest($sync::{typed}[])) AND "
                          f"{own_calls(eng, pid)} AND start_ns IS NOT NULL AND end_ns IS NOT NULL ORDER BY start_ns",
                          {"sync": sync, **({"pid": pid} if "$pid" in own_calls(eng, pid) else {})}).fetchnumpy()
    return np.asarray(got["start_ns"], dtype=np.int64), np.asarray(got["end_ns"], dtype=np.int64)


def after_sync(ends: np.ndarray, starts: np.ndarray, sync_ends: np.ndarray) -> np.ndarray:
    """Optimizer-step boundaries moved to the end of the first synchronising call (``starts``,
    ``sync_ends``) that starts after each, before the next (after the last: within half the median
    period): a loop that waits for the GPU after its step (``loss.item()``, a synchronize) ends
    there, not where the CPU finished launching the step."""
    b = np.asarray(ends, dtype=np.int64)
    if len(b) < 2 or not len(starts):
        return b
    nxt = np.r_[b[1:], b[-1] + int(np.median(np.diff(b)) // 2)]
    i = np.searchsorted(starts, b, side="left")
    ok = i < len(starts)
    i = np.minimum(i, len(starts) - 1)
    ok &= starts[i] < nxt
    return np.where(ok, np.maximum(sync_ends[i], b), b)


def _holds(eng: Engine, pid: int | None, found: Found) -> bool:
    """Whether the iterations hold :data:`_MIN_SHARE` of the process's kernels that start (on the
    GPU) at or after the first: a few kernels repeated at start-up, then other work, are no loop
    (what ran before, compilation and autotuning included, does not count)."""
    (inside, after), = run_query(eng, f"""SELECT count(*) FILTER (WHERE start_ns < $hi), count(*) FROM kernels
                                     WHERE {own_ops(pid)} AND start_ns >= $lo""",
                            pid, lo=int(found.w_start[0]), hi=int(found.w_end[-1]))
    return inside >= _MIN_SHARE * after


def detect(p: Profile) -> Found | None:
    """The iterations of the capture's main process from its work (module doc); None where no
    signal holds."""
    found = _optimizer_ranges(p)
    if found is not None or not p.count("kernels"):
        return found
    col = name_column(p, "kernels")
    eng = engine.of(p).need({"kernels": ["start_ns", "global_pid", "launch_ns", col]})
    pid = _main_pid(eng)
    codes, counts, texts = _kernel_counts(p, eng, pid, col)
    if not codes:
        return None
    repeated = _repeated_kernels(p, eng, pid, col, codes, counts)
    return _optimizer_kernels(p, eng, pid, col, codes, texts, repeated) or repeated
