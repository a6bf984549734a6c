"""The iterations of an export larger than the memory budget, measured out of core.

:func:`nsighttk.analysis.iterations.iterations` attributes every GPU operation to the iteration in
which the CUDA call that launched it started: in memory, a table from correlation id to call over
every call, and every operation's columns at once (100M kernels: 8.4 GB).  Here:

* the calls and the operations with a correlation id are split by ranges of ids, at most a
  budget's worth of rows each (or the rows of one id: a CUDA graph's launch), and written to disk
  (:func:`nsighttk.spill.partition`); each
  range's calls are looked up by its operations alone (the first call with an id launched it);
  operations without an id count by their own start;
* per iteration, the counts, sums, first start and last end are added up range after range; the
  kernels' (iteration, name) groups are merged as they come (those groups, and a budget's worth of
  new ones, held);
* the launch delays are written to disk and their medians taken a group of iterations at a time;
* which operations fall in a steady iteration is kept a byte an operation, as in memory;
* the synchronising calls' time is summed a chunk of calls at a time;
* the busy time and gaps come from the busy blocks on disk (:mod:`intervals_spilled`).

The numbers are those of the in-memory path (``tests/test_iterations_spilled.py`` compares them at
tiny budgets), except where a sum of kernel times could wrap 64 bits (durations adding up to
centuries: a damaged export), where both add floats, in another order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd

from nsighttk.analysis import intervals_spilled
from nsighttk.analysis.groupstats import group_sums
from nsighttk.analysis.intervals import GPU_TABLES
from nsighttk.analysis.iteration_ops import (
    _KERNEL,
    _MEMCPY,
    _MEMSET,
    SYNC_APIS,
    Measured,
    _Calls,
    _medians,
    _sync_ns,
    _window_of,
    top_frame,
    top_ranked,
)
from nsighttk.analysis.nsys_report_base import kernel_id_codes
from nsighttk.analysis.spilled_stats import group_medians, value_ranges
from nsighttk.encoding import INT_NULL, Coded, decoded, widen
from nsighttk.profile import Profile
from nsighttk.spill import Spill, partition
from nsighttk.subset import RowMask

#: Bytes an operation or a call takes while a range of ids is joined: its columns read (56), the
#: calls' look-up table and each operation's launch, hit, time and iteration, and their copies.
JOIN_ROW_BYTES = 256
_KINDS = {"kernels": _KERNEL, "memcpy": _MEMCPY, "memset": _MEMSET}
_CALLS = ["correlation_id", "global_tid", "start_ns", "end_ns", "name_id"]
_BIG = np.iinfo(np.int64)
#: What :func:`_attribute` hands each chunk of operations to: their table, columns (with "row"),
#: and the start of the call that launched each and whether one did (None, None: no ids).
_Add = Callable[[str, dict[str, np.ndarray], np.ndarray | None, np.ndarray | None], None]


def spills(p: Profile) -> bool:
    """Whether the iterations are measured out of core: the GPU operations' busy blocks are
    (:func:`intervals_spilled.spills`)."""
    return intervals_spilled.spills(p)


class _Total:
    """Sums of integer values per iteration, added a chunk at a time: int64, or exact Python
    integers from the chunk where int64 could wrap (as :func:`group_sums` decides on all of them)."""

    def __init__(self, n: int) -> None:
        self.sum: np.ndarray = np.zeros(n, dtype=np.int64)
        self.most = 0.0
        self.rows = 0

    def add(self, it: np.ndarray, values: np.ndarray) -> None:
        if not len(values):
            return
        self.most, self.rows = max(self.most, float(np.abs(values).max())), self.rows + len(values)
        if self.sum.dtype != object and self.most * self.rows >= 2.0**63:
            self.sum = self.sum.astype(object)
        if self.sum.dtype == object:
            part = group_sums(it, values, len(self.sum))
            self.sum = self.sum + part.astype(object)
        else:
            np.add.at(self.sum, it, values)


class _Top:
    """The kernels' (iteration, name) groups: key, first row, count, total time.  Each chunk's are
    grouped, and merged with those so far once ``limit`` new ones wait: the groups (one per
    iteration and kernel name) and at most that many more are held."""

    def __init__(self, n_names: int, limit: int) -> None:
        self.n_names, self.limit = max(n_names, 1), limit
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.held = self.merged = 0
        self.most = 0.0
        self.rows = 0

    def add(self, it: np.ndarray, code: np.ndarray, duration: np.ndarray, rows: np.ndarray) -> None:
        if not len(it):
            return
        self.most, self.rows = max(self.most, float(np.abs(duration).max())), self.rows + len(it)
        key = it.astype(np.int64) * self.n_names + code
        uniq, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
        totals: np.ndarray = np.zeros(len(uniq), dtype=self._type())
        np.add.at(totals, inverse.ravel(), duration)
        self.parts.append((uniq, rows[first], counts, totals))
        self.held += len(uniq)
        if self.held - self.merged > self.limit:
            self._merge()

    def _type(self) -> type:
        return np.float64 if self.most * self.rows >= 2.0**63 else np.int64  # (as the in-memory path decides)

    def _merge(self) -> None:
        if len(self.parts) < 2:
            return
        key = np.concatenate([q[0] for q in self.parts])
        uniq, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.ravel()
        first = np.full(len(uniq), _BIG.max, dtype=np.int64)
        np.minimum.at(first, inverse, np.concatenate([q[1] for q in self.parts]))
        counts = np.zeros(len(uniq), dtype=np.int64)
        np.add.at(counts, inverse, np.concatenate([q[2] for q in self.parts]))
        totals: np.ndarray = np.zeros(len(uniq), dtype=self._type())
        np.add.at(totals, inverse, np.concatenate([q[3].astype(self._type()) for q in self.parts]))
        self.parts, self.held = [(uniq, first, counts, totals)], len(uniq)
        self.merged = self.held

    def ranked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        self._merge()
        key, first, counts, totals = self.parts[0]
        return top_ranked(key, first, counts, totals.astype(self._type()), self.n_names)


def measure(p: Profile, pid: int | None, w_start: np.ndarray, w_end: np.ndarray, steady: np.ndarray) -> Measured:
    """Per iteration (windows ``w_start``..``w_end``, sorted, disjoint; ``steady``: which are),
    what the GPU operations of process ``pid`` (None: all) launched in it: the module doc."""
    n = len(w_start)
    limit = max(int(p.budget) // JOIN_ROW_BYTES, 8)
    out = Measured(gpu_start=np.full(n, _BIG.max, dtype=np.int64), gpu_end=np.full(n, _BIG.min, dtype=np.int64),
                   launch_overhead=np.full(n, np.nan))
    tables = tuple(t for t in GPU_TABLES if p.count(t))
    steady_rows: dict[str, RowMask] = {}
    totals = {(_KINDS[t], c): _Total(n) for t in tables for c in ("duration_ns", "bytes")
              if c == "duration_ns" or t != "kernels"}
    for t in tables:
        out.counts[_KINDS[t]] = np.zeros(n, dtype=np.int64)
        out.steady_ops[t] = steady_rows[t] = RowMask(rows_read(p, t))  # (a bit a row)
    ids, code_of_id, names = (kernel_id_codes(p, lambda: (c["name_id"] for c in _ops(p, "kernels")))
                              if "kernels" in tables else (np.empty(0, dtype=np.int64),) * 3)
    top = _Top(len(names), limit)
    in_steady = np.r_[steady, False]  # (the last: -1, outside every iteration)
    delays = Spill(["iteration", "delay"], missing=False)
    try:
        def add(t: str, c: dict[str, np.ndarray], launch: np.ndarray | None, hit: np.ndarray | None) -> None:
            s, kind = c["start_ns"], _KINDS[t]
            it = _window_of(s if launch is None or hit is None else np.where(hit, launch, s), w_start, w_end)
            out.ops += len(it)
            steady_rows[t].set(c["row"][in_steady[it]])
            m = it >= 0
            itm = it[m]
            out.in_windows += len(itm)
            out.counts[kind] += np.bincount(itm, minlength=n)
            for col in ("duration_ns", "bytes"):
                if (kind, col) in totals:
                    v = c[col][m]
                    totals[kind, col].add(itm, np.where(v == INT_NULL, 0, v))
            np.minimum.at(out.gpu_start, itm, s[m])
            np.maximum.at(out.gpu_end, itm, c["end_ns"][m])
            if kind != _KERNEL:
                return
            if launch is not None and hit is not None:
                ok = hit & m & (s >= launch)
                delays.append({"iteration": it[ok].astype(np.int64), "delay": s[ok] - launch[ok]})
            d = c["duration_ns"][m]
            top.add(itm, code_of_id[np.searchsorted(ids, c["name_id"][m])], np.where(d == INT_NULL, 0, d), c["row"][m])

        _attribute(p, pid, tables, limit, add)
        out.launch_overhead = _delay_medians(delays, n, limit)
    finally:
        delays.close()
    for (kind, col), total in totals.items():
        out.totals[kind, col] = total.sum
    g_it, g_name, first, counts, sums = top.ranked() if top.parts else (np.empty(0, dtype=np.int64),) * 5
    if len(g_it):
        out.top = top_frame(g_it, names[g_name], counts, sums, _short_names(p, first))
    else:
        out.top = pd.DataFrame({c: [] for c in ("iteration", "name", "short_name", "count", "total_ns")})
    out.sync_ns = sync_ns(p, pid, w_start, w_end)
    return out


def rows_read(p: Profile, t: str) -> int:
    """The rows of a table of operations or calls as read (written to disk): its count may include
    damaged rows the loader drops, and a mask of its rows must have these."""
    if not p.count(t):
        return 0
    return p.spilled(t, _CALLS if t == "api" else intervals_spilled.op_columns(t)).rows


def _ops(p: Profile, t: str) -> Iterator[dict[str, np.ndarray]]:
    """Every row of a table of operations as written to disk (:func:`intervals_spilled.op_columns`)."""
    yield from p.spilled(t, intervals_spilled.op_columns(t)).chunks(intervals_spilled.op_columns(t))


def own_calls(p: Profile, pid: int | None) -> tuple[bool, Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]]:
    """Whether the calls are read at all, and the calls of process ``pid`` (None: all; all where
    none has a known thread, as :func:`iteration_ops._own_api` tells) a chunk at a time: each
    one's row, and :data:`_CALLS` as int64."""
    if not p.count("api"):
        return False, iter(())
    sp = p.spilled("api", _CALLS)
    if pid is not None and ("calls_with_threads",) not in p.cache:  # (a scan of the threads, once a profile)
        p.cache[("calls_with_threads",)] = any((widen(c["global_tid"]) != INT_NULL).any()
                                              for c in sp.chunks(["global_tid"]))
    known = pid is not None and bool(p.cache[("calls_with_threads",)])

    def chunks() -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        at = 0
        for c in sp.chunks(_CALLS):
            rows = np.arange(at, at + len(c["start_ns"]), dtype=np.int64)
            at += len(rows)
            got = {k: widen(v) for k, v in c.items()}
            if known:
                g = got["global_tid"]
                mine = (g != INT_NULL) & (((g >> 24) & 0xFFFFFF) == pid)
                got, rows = {k: v[mine] for k, v in got.items()}, rows[mine]
            yield rows, got

    return True, chunks()


def _attribute(p: Profile, pid: int | None, tables: tuple[str, ...], limit: int, add: _Add) -> None:
    """Each operation of ``tables`` of process ``pid``, with the start of the call that launched it
    (the first of its process with its correlation id; none: its own start counts), handed to
    ``add(table, columns with "row", launch, hit)`` a chunk or a range of ids at a time."""
    cols = {t: [*intervals_spilled.op_columns(t), "row"] for t in tables}
    ids_of = {t: cols[t] for t in tables}

    def op_chunks(t: str) -> Iterator[dict[str, np.ndarray]]:
        for _, rows, c in intervals_spilled.op_chunks(p, (t,), intervals_spilled.op_columns(t), pid):
            c["row"] = rows
            yield c

    for t in tables:  # operations with no correlation id: by their own start
        for c in op_chunks(t):
            none = c["correlation_id"] == INT_NULL
            if none.any():
                add(t, {k: v[none] for k, v in c.items()}, None, None)
    has_calls, _ = own_calls(p, pid)

    def call_ids() -> Iterator[np.ndarray]:
        for _, c in own_calls(p, pid)[1]:
            v = c["correlation_id"]
            yield v[v != INT_NULL]

    def ids() -> Iterator[np.ndarray]:
        if has_calls:
            yield from call_ids()
        for t in tables:
            for c in op_chunks(t):
                v = c["correlation_id"]
                yield v[v != INT_NULL]

    n, lo, hi = 0, _BIG.max, _BIG.min
    for v in ids():
        if len(v):
            n, lo, hi = n + len(v), min(lo, int(v.min())), max(hi, int(v.max()))
    if not n:
        return
    ranges = value_ranges(ids, lo, hi, n, limit)
    firsts = np.array([r[0] for r in ranges], dtype=np.int64)

    def by_id(chunks: Iterator[dict[str, np.ndarray]]) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        for c in chunks:
            ok = c["correlation_id"] != INT_NULL
            c = {k: v[ok] for k, v in c.items()}
            yield np.searchsorted(firsts, c["correlation_id"], side="right") - 1, c

    call_cols = ["correlation_id", "start_ns"]
    calls = partition(by_id(c for _, c in own_calls(p, pid)[1]), len(ranges), call_cols, held=limit) \
        if has_calls else []
    ops: dict[str, list[Spill]] = {}
    try:
        for t in tables:
            ops[t] = partition(by_id(op_chunks(t)), len(ranges), ids_of[t], held=limit)
        for i in range(len(ranges)):
            if calls:
                a = calls[i].read()
                calls[i].close()
                found = _Calls.of(a["correlation_id"], a["start_ns"])
                del a
            else:
                found = _Calls.of(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
            for t in tables:
                c = ops[t][i].read()
                ops[t][i].close()
                if len(c["start_ns"]):
                    launch, hit = found.launched(c["correlation_id"])
                    add(t, c, launch, hit)
                del c
    finally:
        for sp in [*calls, *(s for parts in ops.values() for s in parts)]:
            sp.close()


def _delay_medians(delays: Spill, n: int, limit: int) -> np.ndarray:
    """The median launch delay per iteration (NaN where none), of the delays on disk: all at once
    where they fit in ``limit`` rows, else a group of consecutive iterations at a time, an
    iteration of more delays than that a range of values at a time
    (:func:`spilled_stats.group_medians`)."""
    if delays.rows <= limit:
        d = delays.read()
        return _medians(d["iteration"], d["delay"].astype(np.float64), n)
    return group_medians(lambda: ((c["iteration"], c["delay"]) for c in delays.chunks()), n, limit)


def _short_names(p: Profile, rows: np.ndarray) -> np.ndarray:
    """The kernels' short names at ``rows``: from the codes the Profile keeps, else a chunk of
    the column at a time (only these rows decoded)."""
    coded = p.coded("kernels", "short_name")
    if coded is not None:
        return coded.take(rows).decode()
    order = np.argsort(rows, kind="stable")
    wanted = rows[order]
    got = np.empty(len(rows), dtype=object)
    at = 0
    for part in p.parts("kernels", ["short_name"]):
        col = part["short_name"]
        size = len(col.codes) if isinstance(col, Coded) else len(col)
        a, b = np.searchsorted(wanted, [at, at + size])
        if b > a:
            local = wanted[a:b] - at
            got[order[a:b]] = col.take(local).decode() if isinstance(col, Coded) else decoded(col)[local]
        at += size
    return got


def sync_ns(p: Profile, pid: int | None, w_start: np.ndarray, w_end: np.ndarray) -> np.ndarray:
    """:func:`iteration_ops._sync_ns` of the synchronising calls of process ``pid`` (None: all),
    a chunk of the calls at a time (each name id looked up once)."""
    out = np.zeros(len(w_start), dtype=np.int64)
    has_calls, chunks = own_calls(p, pid)
    if not has_calls or not len(w_start):
        return out
    known: dict[int, bool] = {}
    for _, c in chunks:
        ids = c["name_id"]
        uniq = np.unique(ids)
        new = [int(u) for u in uniq if int(u) not in known]
        if new:
            names = p.names("api", np.array(new, dtype=np.int64))
            known.update({u: re.sub(r"_v\d+$", "", str(nm)) in SYNC_APIS for u, nm in zip(new, names, strict=True)})
        sel = np.array([known[int(u)] for u in uniq], dtype=bool)[np.searchsorted(uniq, ids)]
        if sel.any():
            out += _sync_ns((c["start_ns"][sel], c["end_ns"][sel]), w_start, w_end)
    return out


def steady_keep(p: Profile, w_start: np.ndarray, w_end: np.ndarray, pid: int | None,
                asked: tuple[bytes, bytes, int | None] | None = None) -> dict[str, RowMask]:
    """:func:`iteration_ops._steady_keep` out of core: the operations' rows as the iterations kept
    them for these (steady) windows, else attributed again; the calls of the process and the
    ranges starting in a window, a chunk of them at a time; a bit a row (:class:`RowMask`)."""
    known = p.cache.get(("steady_ops",))
    if asked is not None and isinstance(known, tuple) and known[0] == asked:
        keep = {t: RowMask.of(m) for t, m in p.cache.pop(("steady_ops",))[1].items()}
    else:
        keep = {t: RowMask.of(m) for t, m in measure(p, pid, w_start, w_end, np.ones(len(w_start), dtype=bool))
                .steady_ops.items()}
    for t in GPU_TABLES:
        keep.setdefault(t, RowMask(rows_read(p, t)))
    calls = RowMask(rows_read(p, "api"))
    for rows, c in own_calls(p, pid)[1]:
        calls.set(rows[_window_of(c["start_ns"], w_start, w_end) >= 0])
    keep["api"] = calls
    for t in ("nvtx", "ops"):
        keep[t] = RowMask(0)
        for part in p.parts(t, ["start_ns"]):
            keep[t].append(_window_of(widen(decoded(part["start_ns"])), w_start, w_end) >= 0)
    return keep
