"""nsys' expert rules over exports larger than the memory budget, out of core.

:mod:`expert_rule_queries` computes each rule from whole tables.  Where a table would not fit in
the profile's budget (:func:`nsys_report_spilled.spills`), the rules ask here instead, and get the
same rows:

- **the CUDA calls by name** (the four CUDA rules): the calls are read a chunk at a time and only
  those whose name the rule asks for are kept (each distinct name id tested once), in table order;
- **the GPU operations** (``gpu_gaps``, ``gpu_time_util``): one pass over the kernels (as the
  summaries spilled them: :meth:`Profile.spilled`), the copies and the memsets finds each process
  and device's span (first start, last end, the context of the first operation ending last, in
  nsys' order); the CUDA profiling overheads inside a span join it; a second pass writes each
  span's operations to temporary files of their own, in that order.

``gpu_time_util`` then needs each chunk of a span's summed running time: F(b) - F(a), F(t) being
the time the operations have run before t.  F at the chunks' bounds is added up a chunk of
operations at a time, exactly, in Python integers.  ``gpu_gaps`` pairs the i-th start with the
(i-1)-th end of a span (each in ascending order, ends' ties in operation order): a span of at most
a budget's rows is read whole and given to the in-memory rule; a larger one has its starts and its
ends each sorted a range of values at a time (:func:`spilled_stats.value_ranges`, as the GPU trace
sorts its starts), and the two sorted streams are walked side by side.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis.spilled_stats import value_ranges
from nsighttk.encoding import INT_NULL, widen
from nsighttk.profile import Profile, conform_columns, frame_of
from nsighttk.spill import Spill, partition

#: Bytes per operation held while a span's starts or ends are sorted (value, context, the sort's
#: order, the other stream's buffer): a budget of B bytes sorts B // OPS_ROW_BYTES at a time.
OPS_ROW_BYTES = 64

_KERNEL_COLUMNS = ["start_ns", "end_ns", "pid", "device_id", "context_id", "global_pid"]
_SPAN_COLUMNS = ["start", "end", "ctx"]

Window = tuple[int, int, int | None] | None
Cut = Callable[[pd.DataFrame, Window, str], pd.DataFrame]


def limit(p: Profile) -> int:
    return max(int(p.budget) // OPS_ROW_BYTES, 8)


# ------------------------------------------------------------------------------- CUDA calls by name

_CALL_COLUMNS = ["start_ns", "end_ns", "name_id", "correlation_id", "pid", "tid", "global_tid"]


def named_calls(p: Profile, keep: Callable[[str], bool], window: Window, cut: Cut) -> pd.DataFrame:
    """The CUDA calls whose name passes ``keep``, cut to ``window`` (None: all), in table order, with
    the columns the rules read: the calls a chunk at a time (written to disk once per profile, as
    the summaries write them), each distinct name id tested once."""
    tested: dict[int, bool] = {}
    names: dict[int, object] = {}
    found: list[pd.DataFrame] = []
    for part in p.spilled("api", _CALL_COLUMNS).chunks(_CALL_COLUMNS):  # (on disk once: the rules read it four times)
        ids = widen(part["name_id"])
        distinct = np.unique(ids)
        new = [int(i) for i in distinct.tolist() if int(i) not in tested]
        if new:
            for i, n in zip(new, p.names("api", np.array(new, dtype=np.int64)), strict=True):
                tested[i] = isinstance(n, str) and keep(n)
                names[i] = n
        wanted = np.array([i for i in distinct.tolist() if tested[int(i)]], dtype=np.int64)
        rows = np.flatnonzero(np.isin(ids, wanted)) if len(wanted) else np.empty(0, dtype=np.int64)
        if not len(rows):
            continue
        arrays = {c: widen(part[c])[rows] for c in _CALL_COLUMNS}
        arrays["name"] = np.array([names[int(i)] for i in arrays["name_id"].tolist()], dtype=object)
        found.append(cut(frame_of("api", arrays), window, "global_tid"))
    cols = [*_CALL_COLUMNS, "name"]
    if not found:
        return conform_columns("api", frame_of("api", {c: np.empty(0, dtype=np.int64) for c in _CALL_COLUMNS}), cols)
    out = pd.concat(found, ignore_index=True)
    return conform_columns("api", out, cols)


# ------------------------------------------------------------------------------- GPU operations

class SpilledOps:
    """The GPU operations of a profile cut to a window, as nsys' GPU rules see them (module doc):
    ``spans`` (device_id, pid, first, last, context_id; sorted by device and process) and each
    span's operations on disk, in operation order (``groups``, by the spans' rows)."""

    def __init__(self, spans: pd.DataFrame, groups: list[Spill], limit: int) -> None:
        self.spans = spans
        self.groups = groups
        self.limit = limit


def _op_columns(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """``df``'s operations (start > 0, with a process and a device) as int64 arrays."""
    df = df[(df["start_ns"] > 0).to_numpy(dtype=bool)]
    out = {"start": df["start_ns"].to_numpy(dtype="int64"), "end": df["end_ns"].to_numpy(dtype="int64"),
           "pid": df["pid"].to_numpy(dtype="int64", na_value=INT_NULL),
           "dev": df["device_id"].to_numpy(dtype="int64", na_value=INT_NULL),
           "ctx": df["context_id"].to_numpy(dtype="int64", na_value=INT_NULL)}
    known = (out["pid"] != INT_NULL) & (out["dev"] != INT_NULL)  # (pandas' grouping drops missing keys)
    return out if known.all() else {c: v[known] for c, v in out.items()}


def _op_chunks(p: Profile, memcpy: pd.DataFrame, memset: pd.DataFrame, window: Window,
               cut: Cut) -> Iterator[dict[str, np.ndarray]]:
    """The operations in nsys' order (kernels, copies, memsets), a chunk at a time."""
    sp = p.spilled("kernels", _KERNEL_COLUMNS)
    for c in sp.chunks(_KERNEL_COLUMNS):
        yield _op_columns(cut(frame_of("kernels", {k: widen(c[k]) for k in _KERNEL_COLUMNS}), window, "global_pid"))
    for t in (memcpy, memset):
        if len(t):
            yield _op_columns(t)


def _spans(chunks: Iterator[dict[str, np.ndarray]]) -> pd.DataFrame:
    """Per (device, process): first start, last end, and the context of the first operation ending last."""
    best: dict[tuple[int, int], list[int]] = {}
    for c in chunks:
        if not len(c["start"]):
            continue
        df = pd.DataFrame(c)
        g = df.groupby(["dev", "pid"], sort=False)
        agg = g.agg(first=("start", "min"), last=("end", "max"))
        ctx = df["ctx"].to_numpy()[g["end"].idxmax().to_numpy()]
        for (dev, pid), first, last, cx in zip(agg.index, agg["first"].tolist(), agg["last"].tolist(), ctx.tolist(),
                                               strict=True):
            have = best.get((int(dev), int(pid)))
            if have is None:
                best[(int(dev), int(pid))] = [first, last, cx]
            else:
                have[0] = min(have[0], first)
                if last > have[1]:  # (a tie keeps the earlier operation's context)
                    have[1], have[2] = last, cx
    keys = sorted(best)
    return pd.DataFrame({"device_id": pd.array([k[0] for k in keys], dtype="Int64"),
                         "pid": pd.array([k[1] for k in keys], dtype="Int64"),
                         "first": np.array([best[k][0] for k in keys], dtype=np.int64),
                         "last": np.array([best[k][1] for k in keys], dtype=np.int64),
                         "context_id": pd.array([None if best[k][2] == INT_NULL else best[k][2] for k in keys],
                                                dtype="Int64")})


def spilled_ops(p: Profile, memcpy: pd.DataFrame, memset: pd.DataFrame, overhead: pd.DataFrame,
                overhead_names: tuple[str, ...], window: Window, cut: Cut) -> SpilledOps:
    """:class:`SpilledOps` of ``p`` (its copies and memsets, and the overheads, as given), made once
    per profile and window (both GPU rules read it)."""
    key = ("rule_ops", window)
    have = p.cache.get(key)
    if isinstance(have, tuple) and have[0] is overhead and isinstance(have[1], SpilledOps):
        return have[1]  # (the same export facts: both GPU rules of a run read one copy)
    spans = _spans(_op_chunks(p, memcpy, memset, window, cut))
    over = overhead[(overhead["name"].isin(overhead_names) & overhead["global_tid"].notna()).to_numpy(dtype=bool)]
    first_chunk: list[dict[str, np.ndarray]] = []
    if len(over) and len(spans):
        o = pd.DataFrame({"start": over["start_ns"].to_numpy(dtype="int64"),
                          "end": over["end_ns"].to_numpy(dtype="int64"),
                          "pid": (over["global_tid"].to_numpy(dtype="int64") >> 24) & 0xFFFFFF})
        o = o.merge(spans.assign(pid=spans["pid"].astype("int64")), on="pid", how="inner", sort=False)
        o = o[((o["start"] > o["first"]) & (o["end"] < o["last"])).to_numpy(dtype=bool)]
        first_chunk = [{"start": o["start"].to_numpy(dtype="int64"), "end": o["end"].to_numpy(dtype="int64"),
                        "pid": o["pid"].to_numpy(dtype="int64"), "dev": o["device_id"].to_numpy(dtype="int64"),
                        "ctx": o["context_id"].to_numpy(dtype="int64", na_value=INT_NULL)}]
    index = pd.MultiIndex.from_arrays([spans["device_id"].astype("int64"), spans["pid"].astype("int64")])
    rows = limit(p)

    def numbered() -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        for c in [*first_chunk, *_op_chunks(p, memcpy, memset, window, cut)]:
            if len(c["start"]):
                yield index.get_indexer(pd.MultiIndex.from_arrays([c["dev"], c["pid"]])), c

    groups = partition(numbered(), len(spans), _SPAN_COLUMNS, held=rows) if len(spans) else []
    out = SpilledOps(spans, groups, rows)
    p.cache[key] = (overhead, out)
    return out


# ------------------------------------------------------------------------------- gpu_time_util

def prefix_sums(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running sums of non-negative int64 ``values`` (a leading 0) in two halves that cannot wrap
    (a plain int64 running sum of 100M offsets of 2^40 ns does): the exact sum of the first i is
    ``(hi[i] << 32) + lo[i]`` (:func:`prefix_at`)."""
    return (np.concatenate([[0], np.cumsum(values >> 32)]),
            np.concatenate([[0], np.cumsum(values & 0xFFFFFFFF)]))


def prefix_at(sums: tuple[np.ndarray, np.ndarray], i: int) -> int:
    return (int(sums[0][i]) << 32) + int(sums[1][i])


def _prefix_sums(values: np.ndarray, at: np.ndarray) -> list[int]:
    """Exact sums of ``values[:i]`` (non-negative int64, ascending) for each i in ``at``."""
    sums = prefix_sums(values)
    return [prefix_at(sums, i) for i in at.tolist()]


def _running_before(values: np.ndarray, bounds: np.ndarray) -> tuple[list[int], np.ndarray]:
    """For each bound t: sum of (t - v) over values v < t (exact), and the number of such values."""
    n = np.searchsorted(values, bounds, side="left")
    sums = _prefix_sums(values, n)
    return [int(c) * int(t) - s for c, t, s in zip(n.tolist(), bounds.tolist(), sums, strict=True)], n


def span_chunks(g: Spill, first: int, last: int, n: int, threshold: float) -> list[dict[str, Any]]:
    """:func:`expert_rule_queries._low_chunks` of one span's operations on disk: the running time
    at the chunks' bounds added up a chunk of operations at a time."""
    size = math.ceil(float(last - first) / n)
    cuts = [(r, r * size, min(r * size + size, last - first)) for r in range(n)]
    cuts = [c for c in cuts if c[1] < c[2]]
    if not cuts:
        return []
    bounds = np.unique(np.array([x for _, a, b in cuts for x in (a, b)], dtype=np.int64))
    run = [0] * len(bounds)  # F(t): time run before t by operations ending no earlier than they start
    starts_before = np.zeros(len(bounds), dtype=np.int64)  # starts < t
    ends_by = np.zeros(len(bounds), dtype=np.int64)  # ends <= t
    odd_time = [0] * len(cuts)
    odd_count = [0] * len(cuts)
    a_of = np.array([a for _, a, _ in cuts], dtype=np.int64)
    b_of = np.array([b for _, _, b in cuts], dtype=np.int64)
    for c in g.chunks(["start", "end"]):
        s, e = widen(c["start"]) - first, widen(c["end"]) - first
        odd = e < s
        if odd.any():  # (never seen; summed one by one, as nsys' SQL)
            os_, oe = s[odd], e[odd]
            for i in range(len(cuts)):
                inside = (os_ < b_of[i]) & (oe > a_of[i])
                odd_time[i] += int((np.minimum(oe[inside], b_of[i]) - np.maximum(os_[inside], a_of[i])).sum())
                odd_count[i] += int(inside.sum())
            s, e = s[~odd], e[~odd]
        s.sort()
        e.sort()
        up, ns = _running_before(s, bounds)
        down, _ = _running_before(e, bounds)
        run = [r + u - d for r, u, d in zip(run, up, down, strict=True)]
        starts_before += ns
        ends_by += np.searchsorted(e, bounds, side="right")
    at = {int(t): i for i, t in enumerate(bounds.tolist())}
    out = []
    for i, (r, a, b) in enumerate(cuts):
        busy = run[at[b]] - run[at[a]] + odd_time[i]
        ops = int(starts_before[at[b]] - ends_by[at[a]]) + odd_count[i]
        pct = float(busy) / float(b - a) * 100
        if pct < threshold:
            out.append({"r": r, "start": first + a, "end": first + b, "pct": pct, "ops": ops})
    return out


# ------------------------------------------------------------------------------- gpu_gaps

def _widened(chunk: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {c: widen(v) for c, v in chunk.items()}


def _sorted_rows(sp: Spill, key: str, columns: list[str], rows: int) -> Iterator[dict[str, np.ndarray]]:
    """``columns`` of ``sp``'s rows in ascending ``key`` order, ties in the spill's order: split by
    ranges of ``key`` of at most ``rows`` rows (a range of one value may hold any number, already
    in order, read a chunk at a time), each range read back and sorted on its own."""
    def keys() -> Iterator[np.ndarray]:
        for c in sp.chunks([key]):
            yield widen(c[key])

    lo = min(int(k.min()) for k in keys() if len(k))
    hi = max(int(k.max()) for k in keys() if len(k))
    ranges = value_ranges(keys, lo, hi, sp.rows, rows)
    firsts = np.array([r[0] for r in ranges], dtype=np.int64)
    pieces = partition(((np.searchsorted(firsts, widen(c[key]), side="right") - 1, c) for c in sp.chunks(columns)),
                       len(ranges), columns, held=rows)
    try:
        for i, (r_lo, r_hi, _) in enumerate(ranges):
            if r_lo == r_hi:
                yield from (_widened(c) for c in pieces[i].chunks())
            else:
                got = _widened(pieces[i].read())
                order = np.argsort(got[key], kind="stable")
                yield {c: v[order] for c, v in got.items()}
            pieces[i].close()
    finally:
        for piece in pieces:
            piece.close()


class _Taker:
    """Rows of a stream of chunks taken ``k`` at a time."""

    def __init__(self, chunks: Iterator[dict[str, np.ndarray]]) -> None:
        self._chunks = chunks
        self._buf: dict[str, np.ndarray] | None = None

    def take(self, k: int) -> dict[str, np.ndarray]:
        out: list[dict[str, np.ndarray]] = []
        while k > 0:
            if self._buf is None or not len(next(iter(self._buf.values()))):
                self._buf = next(self._chunks)
                continue
            piece = {c: v[:k] for c, v in self._buf.items()}
            self._buf = {c: v[k:] for c, v in self._buf.items()}
            k -= len(next(iter(piece.values())))
            out.append(piece)
        return {c: np.concatenate([o[c] for o in out]) for c in out[0]} if out else {}


def span_gaps(g: Spill, threshold: int, rows: int,
              in_memory: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One span's gaps (length, start, context) longer than ``threshold`` ns: ``in_memory`` on its
    rows where they fit in ``rows``, else its sorted starts and ends walked side by side."""
    if g.rows <= rows:
        got = _widened(g.read())
        return in_memory(got["start"], got["end"], got["ctx"])
    starts = _Taker(_sorted_rows(g, "start", ["start"], rows))
    ends = _Taker(_sorted_rows(g, "end", ["end", "ctx"], rows))
    starts.take(1)  # (the i-th start meets the (i-1)-th end)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    left = g.rows - 1
    while left > 0:
        k = min(rows, left)
        s, e = starts.take(k)["start"], ends.take(k)
        length = s - e["end"]
        hit = np.flatnonzero((length > threshold) & (e["end"] < s))
        found.append((length[hit], e["end"][hit], e["ctx"][hit]))
        left -= k
    return tuple(np.concatenate([f[i] for f in found]) for i in range(3))  # type: ignore[return-value]
