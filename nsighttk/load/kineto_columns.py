"""Column building for the Kineto loader: checked conversion of decoded event fields into numpy
columns (nullable integers, nanosecond times, names stored once), op nesting, thread keys and the
correlation links between runtime calls and GPU operations.

Values are checked by type, never coerced from text: an integer column takes Python ints (and
floats with an integral value) within its range, anything else is left empty and counted in the
``bad`` counter that becomes a note; a row whose time is missing, not a number, negative in
duration or out of range is dropped, counted the same way.
"""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Sequence
from itertools import repeat
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from nsighttk.load.kineto_time import MAX_US, us_to_ns
from nsighttk.load.nvtx_nesting import _nearest_before, depth_from_parents
from nsighttk.profile import obj

_INT32 = 2**31
_INT64 = 2**63


class Pool:
    """Distinct strings, each stored once; columns hold int32 codes (-1 for missing)."""

    def __init__(self) -> None:
        self.code: dict[str, int] = {}
        self.strings: list[str] = []
        #: JSON text as in the file -> the code of its compact form (:meth:`Columns.add_raw`); b"": -1
        self.json: dict[bytes, int] = {b"": -1}

    def add(self, s: str) -> int:
        c = self.code.get(s)
        if c is None:
            c = self.code[s] = len(self.strings)
            self.strings.append(s)
        return c

    def codes(self, values: list[Any], bad: Counter[str], what: str, missing: str | None = None) -> np.ndarray:
        """Codes of ``values``; values that are not text are kept as their text (counted); None
        stays missing (code -1), or becomes ``missing`` when given (counted).  Values are looked
        up in a dict (a chunk of known names: one look-up each); pandas' factorize of Python
        strings was several times slower, inferring its text type first."""
        n = len(values)
        try:
            return np.fromiter(map(self.code.__getitem__, values), dtype=np.int32, count=n)
        except (KeyError, TypeError):
            pass  # a new, missing or odd value: each distinct one is looked at below
        try:
            first, at = first_rows(values)
        except TypeError:  # unhashable values (lists, dicts): as text
            odd = sum(1 for v in values if v is not None and not isinstance(v, str | int | float | bool))
            bad[f"rows with {what} that is not text (kept as text)"] += odd
            values = [v if v is None or isinstance(v, str | int | float | bool) else repr(v) for v in values]
            first, at = first_rows(values)
        code_at = np.full(n, -1, dtype=np.int32)
        for u, i in first.items():
            if u is None:
                if missing is not None:
                    bad[f"rows without a {what} (kept as {missing!r})"] += int(np.count_nonzero(at == i))
                    code_at[i] = self.add(missing)
                continue
            if not isinstance(u, str):
                bad[f"rows with {what} that is not text (kept as text)"] += int(np.count_nonzero(at == i))
                u = str(u)
            code_at[i] = self.add(u)
        return code_at[at]

    def array(self) -> np.ndarray:
        return np.asarray([*self.strings, None], dtype=object)  # code -1 -> None


def first_rows(values: Sequence[Any]) -> tuple[dict[Any, int], np.ndarray]:
    """(each distinct value -> the row of its first occurrence, in order of first occurrence;
    per row, the row of its value's first occurrence).  One dict look-up a row, no Python loop;
    TypeError for unhashable values."""
    first: dict[Any, int] = {}
    at = np.fromiter(map(first.setdefault, values, itertools.count()), dtype=np.int64, count=len(values))
    return first, at


def ints(values: list[Any], bad: Counter[str], what: str, bits: int = 64,
         nonneg: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Python values -> (int64 values, valid mask); values of another type or range are counted."""
    n = len(values)
    types = set(map(type, values))
    lo = 0 if nonneg else -(2 ** (bits - 1))
    hi = 2 ** (bits - 1)
    if types <= {int, type(None)}:
        try:
            if types == {int}:
                arr, mask = np.fromiter(values, dtype=np.int64, count=n), np.ones(n, dtype=bool)
            elif int not in types:  # (none given: the fields of other kinds of event)
                arr, mask = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
            else:
                o = np.array(values, dtype=object)
                mask = np.fromiter(map(operator.is_not, values, repeat(None)), dtype=bool, count=n)
                o[~mask] = 0
                arr = o.astype(np.int64)
            if not len(arr) or (arr.min() >= lo and arr.max() < hi):
                return arr, mask
        except OverflowError:
            pass
    out = np.zeros(n, dtype=np.int64)
    mask = np.zeros(n, dtype=bool)
    wrong = 0
    for i, v in enumerate(values):
        if v is None:
            continue
        if type(v) is float and v.is_integer():
            v = int(v)
        if type(v) is int and lo <= v < hi:
            out[i] = v
            mask[i] = True
        else:
            wrong += 1
    if wrong:
        bad[f"values left empty ({what} is not an integer{' >= 0' if nonneg else ''}"
            f"{' of 32 bits' if bits == 32 else ''})"] += wrong
    return out, mask


def times(ts: Sequence[msgspec.Raw], dur: Sequence[msgspec.Raw],
          bad: Counter[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start_ns, end_ns, valid) from Kineto's ``ts`` and ``dur`` in microseconds, as their JSON
    text (exact nanoseconds, see :mod:`nsighttk.load.kineto_time`); invalid rows are counted."""
    start, ts_num = us_to_ns(ts)
    d, dur_num = us_to_ns(dur)
    limit = MAX_US * 1000
    no_ts = ~ts_num
    no_dur = ts_num & ~dur_num
    neg = ts_num & dur_num & (d < 0)
    beyond = ts_num & dur_num & ~neg & ((np.abs(start) >= limit) | (d >= limit))
    for mask, why in ((no_ts, "start time (ts) missing or not a number"),
                      (no_dur, "duration (dur) missing or not a number"), (neg, "negative duration"),
                      (beyond, "time beyond 4e15 us, not a profiler's clock")):
        if mask.any():
            bad[f"rows dropped ({why})"] += int(mask.sum())
    ok = ~(no_ts | no_dur | neg | beyond)
    if not ok.all():
        start, d = np.where(ok, start, 0), np.where(ok, d, 0)
    return start, start + d, ok


class Columns:
    """One table's columns, appended chunk by chunk as numpy pieces."""

    _INT32_COLUMNS = frozenset({"device_id", "stream_id", "registers_per_thread", "static_smem_bytes",
                                "comm_group_size", *(f"{g}_{a}" for g in ("grid", "block") for a in "xyz")})
    _NONNEG = frozenset({"bytes", "size", "registers_per_thread", "static_smem_bytes", "comm_in_nelems",
                         "comm_out_nelems", "comm_group_size",
                         *(f"{g}_{a}" for g in ("grid", "block") for a in "xyz")})

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.ints: dict[str, list[tuple[np.ndarray, np.ndarray | None]]] = {}
        self.texts: dict[str, list[np.ndarray]] = {}
        self.bad: Counter[str] = Counter()

    def add_int(self, col: str, values: np.ndarray) -> None:
        self.ints.setdefault(col, []).append((values, None))

    def add_ints(self, col: str, values: list[Any]) -> None:
        bits = 32 if col in self._INT32_COLUMNS else 64
        self.ints.setdefault(col, []).append(ints(values, self.bad, col, bits, col in self._NONNEG))

    def add_text(self, col: str, values: list[Any], missing: str | None = None) -> None:
        self.texts.setdefault(col, []).append(self.pool.codes(values, self.bad, col, missing))

    def add_raw(self, col: str, raws: list[Any]) -> None:
        """JSON values kept as compact JSON text (shapes, types): ``[[1, 128], []]`` -> ``[[1,128],[]]``,
        the same whatever the file's layout.  The texts are cut from one joined copy (a zero byte
        is never in JSON text) and looked up among those already seen; each new one is made
        compact once."""
        n = len(raws)
        if not any(map(len, raws)):  # none recorded (no record_shapes)
            self.texts.setdefault(col, []).append(np.full(n, -1, dtype=np.int32))
            return
        texts = b"\0".join(raws).split(b"\0")
        if len(texts) != n:  # (not JSON text)
            texts = [bytes(r) for r in raws]
        known = self.pool.json
        try:
            codes = np.fromiter(map(known.__getitem__, texts), dtype=np.int32, count=n)
        except KeyError:
            first, at = first_rows(texts)
            code_at = np.empty(n, dtype=np.int32)
            for u, i in first.items():
                c = known.get(u)
                if c is None:
                    c = known[u] = self.pool.add(msgspec.json.encode(msgspec.json.decode(u)).decode())
                code_at[i] = c
            codes = code_at[at]
        self.texts.setdefault(col, []).append(codes)

    def add_dim3(self, prefix: str, values: list[Any]) -> None:
        """``[x, y, z]`` launch dimensions; a scalar or a short list keeps what it has."""
        try:
            arr = np.array(values, dtype=np.int64)
            good = arr.ndim == 2 and arr.shape[1] == 3 and set(map(type, values)) == {list}
        except (TypeError, ValueError, OverflowError):
            good = False
        if good and len(arr) and arr.min() >= 0 and arr.max() < _INT32:
            for i, a in enumerate("xyz"):
                self.add_int(f"{prefix}_{a}", arr[:, i])
            return
        cols: list[list[Any]] = [[], [], []]
        odd = 0
        for v in values:
            parts = v if isinstance(v, list) else [v]
            if not isinstance(v, list) or len(v) != 3:
                odd += v is not None
            for i in range(3):
                cols[i].append(parts[i] if i < len(parts) else None)
        if odd:
            self.bad[f"rows with a {prefix} that is not 3 numbers (kept what it has)"] += odd
        for i, a in enumerate("xyz"):
            self.add_ints(f"{prefix}_{a}", cols[i])

    def frame(self) -> pd.DataFrame:
        data: dict[str, Any] = {}
        for col, parts in self.ints.items():
            values = np.concatenate([v for v, _ in parts])
            if all(m is None for _, m in parts):
                data[col] = values
            else:
                mask = np.concatenate([np.ones(len(v), dtype=bool) if m is None else m for v, m in parts])
                data[col] = pd.arrays.IntegerArray(values, ~mask)
        strings = self.pool.array()
        for col, chunks in self.texts.items():
            data[col] = obj(strings[np.concatenate(chunks)])
        return pd.DataFrame(data)


# ---------------------------------------------------------------------------- nesting and links


def nest(df: pd.DataFrame) -> pd.DataFrame:
    """Parent (row of the tightest enclosing event on the same thread) and depth, by a stack walk
    over (thread, start, longest first); an event that overlaps without nesting keeps the earlier
    one as parent (Kineto's own rule)."""
    n = len(df)
    tid = df["tid"].to_numpy(dtype="float64", na_value=-1.0)
    start, end = df["start_ns"].to_numpy(), df["end_ns"].to_numpy()
    order = np.lexsort((-end, start, tid))
    parent = np.full(n, -1, dtype=np.int64)
    if n:
        prev = _walk_parents(tid[order], start[order], end[order])
        parent[order] = np.where(prev >= 0, order[np.maximum(prev, 0)], -1)
    depth = depth_from_parents(parent).astype(np.int64)
    parent_col = pd.arrays.IntegerArray(np.where(parent >= 0, parent, 0), parent < 0)
    return df.assign(parent=pd.Series(parent_col, index=df.index), depth=depth)


def _walk_parents(tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each event's parent (its position, -1 for none) in the walk's order.  Where no two events
    of a thread cross (overlap without nesting, the usual trace), the walk's parent of an event is
    the nearest one before it on its thread that ends no earlier: found for every event at once by
    :mod:`~nsighttk.load.nvtx_nesting`'s pointer jumping over the ends' ranks (ranked per thread,
    later threads higher, so that no search reaches another thread).  Two events cross exactly
    where one ends after the start of the next one on its thread that ends later; then the stack
    walks one event at a time."""
    n = len(end)
    thread = np.r_[0, np.cumsum(tid[1:] != tid[:-1])]
    ahead = _ranks(end, thread)  # (later threads ranked higher)
    behind = _ranks(end, -thread)  # (earlier threads ranked higher: the search backwards)
    nxt = _nearest_before(behind[::-1], strict=True)[::-1]
    closer = np.where(nxt >= 0, n - 1 - nxt, -1)  # the next event of the thread that ends later
    has = closer >= 0
    if (end[has] > start[closer[has]]).any():
        return _stack_walk(tid, start, end)
    return _nearest_before(ahead, strict=False)


def _ranks(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Dense ranks of ``values`` within each group, groups in ascending order of ``group``, one
    ranking over all: equal values of a group share a rank, and every rank of a group is above
    those of the groups before it."""
    by = np.lexsort((values, group))
    v, g = values[by], group[by]
    rank = np.empty(len(values), dtype=np.int64)
    rank[by] = np.cumsum(np.r_[True, (v[1:] != v[:-1]) | (g[1:] != g[:-1])])
    return rank


def _stack_walk(tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """:func:`_walk_parents` one event at a time: the stack of open events, those that ended
    before an event's start (and before its end) closed first."""
    n = len(end)
    tid_l, start_l, end_l = tid.tolist(), start.tolist(), end.tolist()
    par = [-1] * n
    stack: list[int] = []
    last_tid = None
    for i in range(n):
        if tid_l[i] != last_tid:
            stack, last_tid = [], tid_l[i]
        e = end_l[i]
        while stack and end_l[stack[-1]] < e and start_l[i] >= end_l[stack[-1]]:
            stack.pop()
        if stack:
            par[i] = stack[-1]
        stack.append(i)
    return np.array(par, dtype=np.int64)


class ThreadKeys:
    """nsys-style keys: global_tid = pid << 24 | tid, global_pid = pid << 24.  Ids outside 24
    bits (or missing) get stable small codes from the top of the range, the same in every table."""

    def __init__(self) -> None:
        self.odd: dict[int, int] = {}

    def _key(self, values: pd.Series) -> np.ndarray:
        v = values.to_numpy(dtype="float64", na_value=np.nan)
        out = np.where(np.isnan(v), -1, v).astype(np.int64)
        odd = (out < 0) | (out >= 2**24)
        for i in np.flatnonzero(odd):
            out[i] = self.odd.setdefault(int(out[i]), 2**24 - 1 - len(self.odd))
        return out

    def __call__(self, pid: pd.Series, tid: pd.Series) -> pd.Series:
        return pd.Series((self._key(pid) << 24) | self._key(tid), index=pid.index, dtype="Int64")

    def process(self, pid: pd.Series) -> pd.Series:
        return pd.Series(self._key(pid) << 24, index=pid.index, dtype="Int64")


def link_gpu_ops(df: pd.DataFrame, api: pd.DataFrame, keys: ThreadKeys) -> pd.DataFrame:
    """``pid``/``global_pid`` of each GPU operation: the process of the runtime call with the same
    correlation id (or the trace's only process when no call matched)."""
    n = len(df)
    pids = np.full(n, np.nan)
    if len(api) and "correlation_id" in df:
        a = api.dropna(subset=["correlation_id", "pid"]).drop_duplicates("correlation_id")
        pid_of = pd.Series(a["pid"].to_numpy(dtype="float64"), index=a["correlation_id"].to_numpy(dtype="float64"))
        pids = pid_of.reindex(df["correlation_id"].to_numpy(dtype="float64", na_value=np.nan)).to_numpy()
        procs = api["pid"].dropna().unique()
        if len(procs) == 1:
            pids = np.where(np.isnan(pids), float(procs[0]), pids)
    ok = ~np.isnan(pids)
    pid = pd.Series(pd.arrays.IntegerArray(np.where(ok, pids, 0).astype(np.int64), ~ok), index=df.index)
    df["pid"] = pid
    df["global_pid"] = keys.process(pid).where(ok)
    return df
