"""The iterations' ranges found out of core.

In memory (``iterations._auto``) the search holds, per NVTX range, its times, thread, name and
domain codes, nesting level and group, beside the loader's nesting of every range and its names
(the 100M-kernel export's 43M ranges: about 5 GB at the peak).  Where the ranges hold more rows
than the budget takes at :data:`RANGE_ROW_BYTES` a range (:func:`spills`), the same groups are
made from disk and the same rules choose among them (:mod:`iteration_ranges`):

1. **The ranges** are written to disk once (:meth:`Profile.spilled`: names and domains as codes,
   read a chunk at a time; no level, which needs every range).
2. **Their levels**, as the loader's ``depth`` (:mod:`nsighttk.load.nvtx_nesting`).  The ranges are
   split by ranges of (thread, start) keys (:func:`spilled_stats.value_ranges`, at most
   ``budget // WALK_ROW_BYTES`` ranges each, a key's ranges whole) and each block, put in the
   walk's order (start, longest first, range id), is walked with the stack of open ranges the
   block before left (:func:`nsighttk.load.nvtx_walk.depth_walk`).  Where ranges cross
   on a thread of at most ``_EXACT_LIMIT`` ranges, nsys' exact parents decide instead: those
   threads' ranges are nested again in memory (:func:`nvtx.parents_of`), as the loader does.
   Each closed range is written out with its level, in the walk's order.
3. **The groups** (grouped name, domain, thread, level), a chunk of those at a time: ranges, time
   covered, first row, first name, first start and last end, and whether two ranges of a group
   overlap (a group's ranges come in start order: the last end of the chunks before is carried).
   The loop candidates' median durations come from their ranges on disk, a group of candidates
   at a time, a group of more ranges than that a range of durations at a time
   (:func:`spilled_stats.group_medians`).
4. **The chosen group's ranges** are read back, in row order.

What is held: the groups' figures (a few per name and level), the distinct threads, a block of
ranges, the open ranges' stack (the nesting depth), and the crossing small threads' ranges.
Where the (thread, time) keys or the groups' keys would not fit in 64 bits, :func:`found` says
so and the search runs in memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd

from nsighttk.analysis import iteration_ranges
from nsighttk.analysis import nsys_report_spilled as spilled
from nsighttk.analysis.groupstats import group_sums
from nsighttk.analysis.nvtx import depth_from_parents, parents_of
from nsighttk.analysis.spilled_stats import group_medians, value_ranges
from nsighttk.encoding import INT_NULL, widen
from nsighttk.errors import UsageError
from nsighttk.profile import Profile, frame_of
from nsighttk.spill import Spill, partition

#: Bytes a range takes in the in-memory search (its columns read, the loader's nesting and
#: names, the groups' codes and orders): past the budget at this size, the search is out of core.
RANGE_ROW_BYTES = 128
#: Bytes a range takes in a block of the walk (read, put in order, its level and row out): a
#: budget of B bytes walks blocks of B // WALK_ROW_BYTES ranges.
WALK_ROW_BYTES = 256
_COLUMNS = ["range_id", "start_ns", "end_ns", "global_tid", "tid", "pid", "name", "domain"]
_BLOCK = ["ks", "ke", "rid", "end", "name", "domain", "tid", "pid"]
_WALKED = ["rid", "start", "end", "name", "domain", "rank", "depth", "tid", "pid"]
_BIG = np.iinfo(np.int64)
#: The walked ranges a chunk at a time, each with its group's key per range.
_Chunks = Callable[[], Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]]


def spills(p: Profile) -> bool:
    """Whether the iterations' ranges are found out of core: the NVTX ranges, at
    :data:`RANGE_ROW_BYTES` a range, exceed the budget (and come from a source a chunk at a time)."""
    return spilled.spills(p, "nvtx", row_bytes=RANGE_ROW_BYTES)


class _Threads:
    """What a scan of the ranges finds: the distinct threads (global ids, INT_NULL one of them) and
    thread keys (global id, else thread id, else -1), the ranges per thread, the earliest and
    latest time (starts, and ends with open ranges closed at ``fill``) and the number of ranges."""

    def __init__(self, sp: Spill, fill: int) -> None:
        counts: dict[int, int] = {}
        keys: set[int] = set()
        lo, hi, self.n = _BIG.max, _BIG.min, 0
        for c in sp.chunks(["start_ns", "end_ns", "global_tid", "tid"]):
            start, end, gtid = widen(c["start_ns"]), _closed_at(widen(c["end_ns"]), fill), widen(c["global_tid"])
            if not len(start):
                continue
            self.n += len(start)
            lo, hi = min(lo, int(start.min()), int(end.min())), max(hi, int(start.max()), int(end.max()))
            u, k = np.unique(gtid, return_counts=True)
            for t, m in zip(u.tolist(), k.tolist(), strict=True):
                counts[t] = counts.get(t, 0) + m
            keys.update(np.unique(_thread_key(gtid, widen(c["tid"]))).tolist())
        self.tids = np.array(sorted(counts), dtype=np.int64)
        self.per_thread = np.array([counts[t] for t in self.tids.tolist()], dtype=np.int64)
        self.keys = np.array(sorted(keys), dtype=np.int64)
        self.lo, self.span = lo, hi - lo + 1


def _closed_at(end: np.ndarray, fill: int) -> np.ndarray:
    """Ends with open ranges (INT_NULL) ending at ``fill``, as the loader nests them."""
    return np.where(end == INT_NULL, fill, end)


def _thread_key(gtid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """The iterations' thread key: the global thread id, else the thread id, else -1."""
    return np.where(gtid != INT_NULL, gtid, np.where(tid != INT_NULL, tid, -1))


class _Walked:
    """The closed ranges with their levels, on disk (:data:`_WALKED`, in the walk's order, the
    exact levels of crossing small threads beside them); ``wide`` where the (thread, time) keys
    would not fit in 64 bits (nothing walked)."""

    def __init__(self, p: Profile) -> None:
        self.sp = p.spilled("nvtx", _COLUMNS)
        fill = p.meta.get("nvtx_max_ts_ranges") or 0
        self.th = th = _Threads(self.sp, fill)
        self.limit = max(int(p.budget) // WALK_ROW_BYTES, 8)
        self.wide = (len(th.tids) + 1) * th.span >= 2**62
        self.names = np.array(["" if v is None else str(v) for v in self.sp.values("name").tolist()], dtype=object)
        self.domains = np.array(["" if v is None else str(v) for v in self.sp.values("domain").tolist()],
                                dtype=object)
        self.walked: Spill | None = None
        self.exact = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        if th.n and not self.wide:
            self.walked, crossed = _levels(self.sp, th, fill, self.limit)
            try:
                self.exact = _exact_levels(self.sp, th, crossed, fill)
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        if self.walked is not None:
            self.walked.close()

    def chunks(self) -> Iterator[dict[str, np.ndarray]]:
        """The closed ranges a chunk at a time: :data:`_WALKED` (int64) and their thread key ``tkey``."""
        if self.walked is None:
            return
        rid_x, level_x = self.exact
        for c in self.walked.chunks():
            c = {k: widen(v) for k, v in c.items()}
            if len(rid_x):
                at = np.minimum(np.searchsorted(rid_x, c["rid"]), len(rid_x) - 1)
                hit = rid_x[at] == c["rid"]
                if hit.any():
                    c["depth"] = np.where(hit, level_x[at], c["depth"])
            c["tkey"] = _thread_key(self.th.tids[c["rank"]], c["tid"])
            yield c

    def levels(self) -> int:
        """The number of levels (the deepest one's plus one)."""
        most = max((int(c["depth"].max()) for c in self.walked.chunks(["depth"]) if len(c["depth"])), default=0) \
            if self.walked is not None else 0
        return max(most, int(self.exact[1].max()) if len(self.exact[1]) else 0) + 1

    def rows(self, chunks: Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]) -> pd.DataFrame:
        """The ranges where the mask of each chunk holds, as ``iterations._frame`` gives them, in row order."""
        got: dict[str, list[np.ndarray]] = {}
        for mine, c in chunks:
            if mine.any():
                for k in ("rid", "start", "end", "name", "domain", "depth", "rank", "tid", "pid", "tkey"):
                    got.setdefault(k, []).append(c[k][mine])
        a = {k: np.concatenate(v) for k, v in got.items()}
        order = np.argsort(a["rid"], kind="stable")
        a = {k: v[order] for k, v in a.items()}
        n = frame_of("nvtx", {"start_ns": a["start"], "end_ns": a["end"], "duration_ns": a["end"] - a["start"],
                              "name": self.names[a["name"]], "domain": self.domains[a["domain"]], "depth": a["depth"],
                              "global_tid": self.th.tids[a["rank"]], "tid": a["tid"], "pid": a["pid"]})
        return n.assign(end_ns=n["end_ns"].astype("int64"), tid_key=pd.array(a["tkey"], dtype="Int64"))


def found(p: Profile) -> tuple[pd.DataFrame, int] | bool | None:
    """The chosen group's closed ranges (the columns ``iterations._frame`` gives, in row order) and
    its tier; None where no group holds iterations; False where the keys would not fit in 64 bits
    (find them in memory)."""
    w = _Walked(p)
    try:
        if w.wide:
            return False
        if w.walked is None:
            return None
        keys, tier_of_name = iteration_ranges.tiers(w.names.tolist())
        key_code = pd.factorize(np.array(keys, dtype=object))[0].astype(np.int64)
        n_key, n_dom, n_tk, n_depth = max(len(keys), 1), max(len(w.domains), 1), len(w.th.keys), w.levels()
        if float(n_key) * n_dom * n_tk * n_depth >= 2.0**62:
            return False

        def groups() -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
            for c in w.chunks():
                tk = np.searchsorted(w.th.keys, c["tkey"])
                yield ((key_code[c["name"]] * n_dom + c["domain"]) * n_tk + tk) * n_depth + c["depth"], c

        g = _Groups(groups())
        if not len(g.keys):
            return None
        depth = g.keys % n_depth
        level = g.keys // n_depth  # (with the name and domain: the thread key and level below)
        level = level % n_tk * n_depth + depth
        tier = tier_of_name[g.first_name]

        def extent() -> np.ndarray:
            lv, at = np.unique(level, return_inverse=True)
            lo, hi = np.full(len(lv), _BIG.max), np.full(len(lv), _BIG.min)
            np.minimum.at(lo, at, g.lo)
            np.maximum.at(hi, at, g.hi)
            return hi[at] - lo[at]

        best = iteration_ranges.chosen(tier, g.count, g.overlapping, g.covered, depth, g.first,
                                       lambda loop: _medians(groups, g.keys, loop, w.limit), extent)
        if best is None:
            return None
        chosen = int(g.keys[best])
        return w.rows((k == chosen, c) for k, c in groups()), int(tier[best])
    finally:
        w.close()


def explicit(p: Profile, spec: str) -> tuple[pd.DataFrame, str] | bool:
    """``iterations._explicit`` out of core: the closed ranges named ``spec`` (or ``domain:name``),
    else whose names match it as a regular expression, of the thread with the most time in them,
    at their outermost level; and how they were found (``named`` or ``matching``).  False where
    the keys would not fit in 64 bits (find them in memory); raises :class:`UsageError` as in memory."""
    w = _Walked(p)
    try:
        if w.wide:
            return False
        canon, _ = pd.factorize(w.names)  # (one code per text: a missing name and '' are both '')
        code_of: dict[str, int] = {}
        for v, c in zip(w.names.tolist(), canon.tolist(), strict=True):
            code_of.setdefault(v, c)
        named = w.names == spec
        qualified = np.array([code_of.get(spec[len(d) + 1:], -2) if spec.startswith(f"{d}:") else -2
                              for d in w.domains.tolist()], dtype=np.int64)

        def hits(c: dict[str, np.ndarray]) -> np.ndarray:
            return named[c["name"]] | (canon[c["name"]] == qualified[c["domain"]]) if len(w.domains) \
                else named[c["name"]]

        how, time = "named", _time_per_thread(w, hits)
        if not time:
            try:
                rx = re.compile(spec)
            except re.error as ex:
                raise UsageError(f"--iteration {spec!r}: no range has this name and it is not a valid regular "
                                 f"expression ({ex})", _names_hint(w)) from None
            matching = np.array([rx.fullmatch(v) is not None for v in w.names.tolist()], dtype=bool)

            def hits(c: dict[str, np.ndarray]) -> np.ndarray:
                return matching[c["name"]]

            how, time = "matching", _time_per_thread(w, hits)
        if not time:
            raise UsageError(f"--iteration {spec!r}: no closed NVTX or record_function range has this name or "
                             "matches it as a regular expression", _names_hint(w))
        most = max(time.values())
        tid = min(k for k, v in time.items() if v == most)
        top = min(int(c["depth"][mine].min()) for c in w.chunks() if (mine := hits(c) & (c["tkey"] == tid)).any())
        m = w.rows((hits(c) & (c["tkey"] == tid) & (c["depth"] == top), c) for c in w.chunks())
        return m, how
    finally:
        w.close()


def _time_per_thread(w: _Walked, hits: Callable[[dict[str, np.ndarray]], np.ndarray]) -> dict[int, int]:
    """The time in the ranges ``hits`` marks, per thread key (exact sums)."""
    out: dict[int, int] = {}
    for c in w.chunks():
        mine = hits(c)
        if mine.any():
            u, at = np.unique(c["tkey"][mine], return_inverse=True)
            for k, v in zip(u.tolist(), group_sums(at, (c["end"] - c["start"])[mine], len(u)).tolist(), strict=True):
                out[k] = out.get(k, 0) + int(v)
    return out


def _names_hint(w: _Walked) -> str:
    """``iterations._names_hint`` of the closed ranges on disk: the five grouped names with the
    most ranges (ties: the one seen first)."""
    count = np.zeros(len(w.names), dtype=np.int64)
    first = np.full(len(w.names), _BIG.max, dtype=np.int64)
    for c in w.chunks():
        count += np.bincount(c["name"], minlength=len(w.names))
        np.minimum.at(first, c["name"], c["rid"])
    return iteration_ranges.hint([(iteration_ranges.key(v), int(k), int(f))
                                  for v, k, f in zip(w.names.tolist(), count.tolist(), first.tolist(), strict=True)
                                  if k])


def _levels(sp: Spill, th: _Threads, fill: int, limit: int) -> tuple[Spill, np.ndarray]:
    """Every closed range with its level (:data:`_WALKED`, in the walk's order), and per thread
    (by rank) whether two of its ranges crossed."""
    from nsighttk.load import nvtx_walk

    span, lo = th.span, th.lo

    def keyed() -> Iterator[dict[str, np.ndarray]]:
        for c in sp.chunks(["range_id", "start_ns", "end_ns", "global_tid", "tid", "pid", "name", "domain"]):
            end = widen(c["end_ns"])
            base = np.searchsorted(th.tids, widen(c["global_tid"])) * span - lo
            yield {"ks": base + widen(c["start_ns"]), "ke": base + _closed_at(end, fill), "rid": c["range_id"],
                   "end": end, "name": c["name"], "domain": c["domain"], "tid": c["tid"], "pid": c["pid"]}

    parts = value_ranges(lambda: (c["ks"] for c in keyed()), 0, len(th.tids) * span - 1, th.n, limit)
    firsts = np.array([q[0] for q in parts], dtype=np.int64)
    blocks = partition(((np.searchsorted(firsts, c["ks"], side="right") - 1, c) for c in keyed()), len(parts),
                       _BLOCK, held=limit)
    walk = nvtx_walk.depth_walk
    crossed = np.zeros(len(th.tids), dtype=np.int64)
    out = Spill(_WALKED, rows=min(limit, 1 << 20))
    stack, top = np.empty(0, dtype=np.int64), 0
    try:
        for b in blocks:
            c = b.read()
            b.close()
            if not len(c["ks"]):
                continue
            c = {k: widen(v) for k, v in c.items()}
            order = np.lexsort((c["rid"], -c["ke"], c["ks"]))
            c = {k: v[order] for k, v in c.items()}
            rank = c["ks"] // span
            stack = np.concatenate([stack[:top], np.empty(len(rank), dtype=np.int64)])
            depth = np.empty(len(rank), dtype=np.int64)
            top = walk(np.ascontiguousarray(c["ks"]), np.ascontiguousarray(c["ke"]), rank, stack, top, crossed, depth)
            closed = c["end"] != INT_NULL
            out.append({"rid": c["rid"][closed], "start": (c["ks"] - rank * span + lo)[closed], "end": c["end"][closed],
                        "name": c["name"][closed], "domain": c["domain"][closed], "rank": rank[closed],
                        "depth": depth[closed], "tid": c["tid"][closed], "pid": c["pid"][closed]})
    except BaseException:
        out.close()
        raise
    finally:
        for b in blocks:
            b.close()
    return out, crossed


def _exact_levels(sp: Spill, th: _Threads, crossed: np.ndarray, fill: int) -> tuple[np.ndarray, np.ndarray]:
    """The levels of nsys' exact parents on threads of at most ``_EXACT_LIMIT`` ranges where ranges
    crossed (the loader's, for those threads): range ids, ascending, and their levels."""
    from nsighttk.load.nvtx_nesting import _EXACT_LIMIT

    small = (crossed == 1) & (th.per_thread <= _EXACT_LIMIT)
    if not small.any():
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    got: list[list[np.ndarray]] = []
    for c in sp.chunks(["range_id", "start_ns", "end_ns", "global_tid"]):
        rank = np.searchsorted(th.tids, widen(c["global_tid"]))
        mine = small[rank]
        if mine.any():
            got.append([widen(c["start_ns"])[mine], _closed_at(widen(c["end_ns"])[mine], fill), rank[mine],
                        widen(c["range_id"])[mine]])
    start, end, rank, rid = (np.concatenate([g[i] for g in got]) for i in range(4))
    level = depth_from_parents(np.asarray(parents_of(start, end, rank, rid))).astype(np.int64)
    order = np.argsort(rid, kind="stable")
    return rid[order], level[order]


class _Groups:
    """The groups' figures, a chunk of (key, ranges) at a time: keys (sorted at the end), ranges,
    time covered, first row (range id), its name code, first start, last end, overlap."""

    def __init__(self, chunks: Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]) -> None:
        index: dict[int, int] = {}
        cols = {"count": 0, "covered": 0, "first": _BIG.max, "first_name": 0, "lo": _BIG.max, "hi": _BIG.min,
                "last_end": _BIG.min}
        st = {k: np.zeros(0, dtype=np.int64) for k in cols}
        overlapping = np.zeros(0, dtype=bool)
        for key, c in chunks:
            if not len(key):
                continue
            u, inv = np.unique(key, return_inverse=True)
            gid = np.fromiter((index.setdefault(k, len(index)) for k in u.tolist()), dtype=np.int64, count=len(u))
            if len(index) > len(overlapping):
                grow = len(index) - len(overlapping)
                st = {k: np.r_[v, np.full(grow, cols[k], dtype=np.int64)] for k, v in st.items()}
                overlapping = np.r_[overlapping, np.zeros(grow, dtype=bool)]
            g = gid[inv]
            start, end, rid = c["start"], c["end"], c["rid"]
            np.add.at(st["count"], g, 1)
            np.add.at(st["covered"], g, end - start)
            np.minimum.at(st["lo"], g, start)
            np.maximum.at(st["hi"], g, end)
            order = np.lexsort((rid, start, g))
            gs, s, e = g[order], start[order], end[order]
            head = np.r_[True, gs[1:] != gs[:-1]]
            tail = np.r_[head[1:], True]
            overlapping[gs[1:][(s[1:] < e[:-1]) & ~head[1:]]] = True
            carried = st["last_end"][gs[head]]  # (the group's last end in the chunks before)
            overlapping[gs[head][s[head] < carried]] = True
            st["last_end"][gs[tail]] = e[tail]
            by_row = np.lexsort((rid, g))  # (each group's first row here)
            fg = g[by_row][np.r_[True, g[by_row][1:] != g[by_row][:-1]]]
            fr = by_row[np.r_[True, g[by_row][1:] != g[by_row][:-1]]]
            earlier = rid[fr] < st["first"][fg]
            st["first"][fg[earlier]] = rid[fr][earlier]
            st["first_name"][fg[earlier]] = c["name"][fr][earlier]
        keys = np.fromiter(index, dtype=np.int64, count=len(index))
        by_key = np.argsort(keys)
        self.keys = keys[by_key]
        self.count, self.covered, self.first, self.first_name, self.lo, self.hi = (
            st[k][by_key] for k in ("count", "covered", "first", "first_name", "lo", "hi"))
        self.overlapping = overlapping[by_key]


def _medians(groups: _Chunks, keys: np.ndarray, loop: np.ndarray, limit: int) -> np.ndarray:
    """The median duration of each group in ``loop`` (NaN elsewhere), from their ranges on disk
    (:func:`spilled_stats.group_medians`: a group of more ranges than ``limit`` a range of
    durations at a time)."""
    cand = np.flatnonzero(loop)
    slot = np.full(len(keys), -1, dtype=np.int64)
    slot[cand] = np.arange(len(cand))

    def durations() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for key, c in groups():
            s = slot[np.searchsorted(keys, key)]
            mine = s >= 0
            if mine.any():
                yield s[mine], (c["end"] - c["start"])[mine]

    out = np.full(len(keys), np.nan)
    out[cand] = group_medians(durations, len(cand), limit)
    return out
