"""Time intervals: the union of [start, end) intervals as disjoint blocks, and how long the GPU
had any work at all.

Over the engine (:mod:`nsighttk.engine`) the union is a query: :func:`union_length_sql` adds up what
each interval covers beyond the ones that start before it (in start order: its end past the latest
end so far), one window over the intervals; :func:`union_blocks_sql` gives the blocks themselves (gaps
and islands: an interval starting after the latest end so far opens a block).  :func:`gpu_busy_ns` is
the GPU's busy time so.  The numpy functions below merge arrays a Profile holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from nsighttk import engine
from nsighttk.analysis.groupstats import stable_argsort
from nsighttk.profile import Profile

#: Intervals merged at a time (the open block carried from chunk to chunk).
_CHUNK = 1 << 20
#: Below this many runs sorted by start, :func:`merge_intervals` merges run by run instead of sorting.
_FEW_RUNS = 64


def busy_time_ns(intervals: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """Length of the union of [start, end) intervals (time the GPU had any work): each table's
    intervals merged (:func:`merge_intervals`), then their blocks together (10M kernels: no sorted
    copies of every start and end, no running maximum of them all)."""
    s, e = union_blocks([merge_intervals(s, e) for s, e in intervals if len(s)])
    return int((e - s).sum())


#: The tables of GPU operations whose union is the GPU's busy time.
GPU_TABLES = ("kernels", "memcpy", "memset")


def _window(by: str) -> str:
    """The intervals before each one in start order (within its ``by`` group)."""
    part = f"PARTITION BY {by} " if by else ""
    return f"({part}ORDER BY s ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"


def union_length_sql(intervals: str, by: str = "", subsets: Mapping[str, str] | None = None) -> str:
    """A query of the length of the union of the [s, e) intervals that the query ``intervals`` gives
    (columns ``s``, ``e``, the grouping columns ``by`` (comma-separated) and any ``subsets`` read):
    one row per group (none without intervals), columns ``by`` then ``union_ns``, or, with
    ``subsets`` (output column -> an SQL condition on the intervals), the union of the intervals
    each condition holds for, one column each (HUGEINT; NULL where it holds for none).  Each
    interval counts its part past the latest end among those (of its subset) starting before it;
    ties of start in any order give the same sum.  One sort whatever the subsets."""
    subsets = dict(subsets or {"union_ns": "true"})
    keys = f"{by}, " if by else ""
    group = f" GROUP BY {by}" if by else ""
    before = ", ".join(f"max(e) FILTER (WHERE {cond}) OVER w AS before_{i}" for i, cond in enumerate(subsets.values()))
    lengths = ", ".join(f"sum(greatest(e - greatest(s, coalesce(before_{i}, s)), 0)::HUGEINT) FILTER (WHERE {cond}) "
                        f"AS {name}" for i, (name, cond) in enumerate(subsets.items()))
    return (f"SELECT {keys}{lengths} FROM (SELECT *, {before} FROM ({intervals}) WINDOW w AS {_window(by)}){group}")


def union_blocks_sql(intervals: str, by: str = "") -> str:
    """A query of the union of the [s, e) intervals that the query ``intervals`` gives (as in
    :func:`union_length_sql`) as disjoint blocks, columns ``by``, ``start_ns``, ``end_ns``: an interval
    starting after the latest end so far opens a block (touching intervals are one block), as
    :func:`merge_intervals` merges them.  Unordered: sort it where order matters."""
    keys = f"{by}, " if by else ""
    part = f"PARTITION BY {by} " if by else ""
    return (f"SELECT {keys}min(s) AS start_ns, max(e) AS end_ns FROM ("
            f"SELECT {keys}s, e, count(*) FILTER (WHERE opens) OVER ({part}ORDER BY s ROWS UNBOUNDED PRECEDING) "
            f"AS block FROM (SELECT {keys}s, e, coalesce(s > max(e) OVER {_window(by)}, true) AS opens "
            f"FROM ({intervals}))) GROUP BY {keys}block")


def gpu_intervals_sql(tables: Iterable[str]) -> str:
    """The [start, end) intervals (``s``, ``e``) of the rows of the engine's views ``tables``."""
    return " UNION ALL ".join(f"SELECT start_ns AS s, end_ns AS e FROM {t}" for t in tables)


def gpu_busy_ns(p: Profile) -> int:
    """How long the GPU had any work: the length of the union of every kernel's, copy's and
    memset's [start, end), over the engine; kept in the profile's cache (the headline and the
    idle-GPU rule ask for it: 10M kernels, 3.5 CPU s each)."""
    key = ("gpu_busy_ns",)
    if key not in p.cache:
        tables = [t for t in GPU_TABLES if p.count(t)]
        busy = 0
        if tables:
            eng = engine.of(p).need({t: ["start_ns", "end_ns"] for t in tables})
            busy = int(eng.rows(union_length_sql(gpu_intervals_sql(tables)))[0][0] or 0)
        p.cache[key] = busy
    return int(p.cache[key])


def gpu_busy_blocks(p: Profile, take: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The GPU's busy blocks: the union of every kernel's, copy's and memset's [start, end) as
    sorted disjoint blocks (:func:`union_blocks`), made once per profile and kept in its cache
    until a caller ``take`` s them: the headline's busy time and the iterations' busy time and gaps
    come from one merge (10M kernels of interleaved streams: one 0.8 s sort of their starts, not
    two; 3.9M blocks, 62 MB held between the two)."""
    tag = ("gpu_busy_blocks",)
    got = p.cache.pop(tag, None) if take else p.cache.get(tag)
    if got is None:
        parts = []
        for t in GPU_TABLES:
            if p.count(t):
                a = p.arrays(t, ["start_ns", "end_ns"], narrow=True)
                parts.append(merge_intervals(a["start_ns"], a["end_ns"]))
                del a
        got = union_blocks(parts)
        if not take:
            p.cache[tag] = got
    return got


def union_blocks(blocks: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The union of several tables' blocks (each from :func:`merge_intervals`) as one set of them.

    The largest set (the kernels') is walked a chunk at a time with the others' blocks that start
    among its chunk's (found by binary search), each chunk sorted on its own: no concatenation of
    them all and no sort of it (10M kernels' blocks: 0.35 GB less at the peak)."""
    blocks = [b for b in blocks if len(b[0])]
    if len(blocks) <= 1:
        return blocks[0] if blocks else (np.empty(0, dtype="int64"), np.empty(0, dtype="int64"))
    big = max(range(len(blocks)), key=lambda i: len(blocks[i][0]))
    bs, be = blocks[big]
    rest = [b for i, b in enumerate(blocks) if i != big]
    ss, se = (np.concatenate(x).astype("int64", copy=False) for x in zip(*rest, strict=True))
    order = np.argsort(ss, kind="stable")
    ss, se = ss[order], se[order]
    pos = np.searchsorted(bs, ss, side="right")  # (each other block goes after the big ones starting no later)

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for a in range(0, len(bs), _CHUNK):
            b = min(a + _CHUNK, len(bs))
            lo, hi = np.searchsorted(pos, [a, b if b < len(bs) else len(bs) + 1])
            cs, ce = np.r_[bs[a:b], ss[lo:hi]], np.r_[be[a:b], se[lo:hi]]
            at = np.argsort(cs, kind="stable")
            yield cs[at], ce[at]

    return _merge_chunks(chunks())


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of [start, end) intervals as sorted disjoint blocks (int64; touching intervals are
    one block).

    Operations come table after table, each in start order: up to :data:`_FEW_RUNS` runs sorted by
    start are merged one by one without a sort (a run's blocks need no copy of the run), then their
    blocks together; the union is the same (10M kernels: no 0.8 s argsort and its 240 MB of copies)."""
    if len(starts) == 0:
        return starts.astype("int64"), ends.astype("int64")
    down = starts[1:] < starts[:-1]
    if np.count_nonzero(down) >= _FEW_RUNS:  # (counted: interleaved streams' kernels, millions of runs)
        del down
        return _merge_sorted(starts, ends, stable_argsort(starts))
    cuts = [0, *(np.flatnonzero(down) + 1).tolist(), len(starts)]
    del down
    blocks = [_merge_sorted(starts[a:b], ends[a:b]) for a, b in itertools.pairwise(cuts)]
    if len(blocks) == 1:
        return blocks[0]
    s = np.concatenate([b[0] for b in blocks])
    e = np.concatenate([b[1] for b in blocks])
    order = np.argsort(s, kind="stable")
    return _merge_sorted(s, e, order)


def _merge_sorted(s: np.ndarray, e: np.ndarray, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`merge_intervals` of intervals in start order (taken in ``order``: None, as they are),
    a :data:`_CHUNK` of them at a time (10M kernels: no sorted copies of the starts and ends, no
    running maximum of them all)."""
    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for a in range(0, len(s), _CHUNK):
            at = slice(a, a + _CHUNK) if order is None else order[a:a + _CHUNK]
            yield s[at], e[at]

    return _merge_chunks(chunks())


def _merge_chunks(chunks: Iterable[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`merge_stream` of the chunks, its blocks end to end."""
    got = list(merge_stream(chunks))
    if not got:
        return np.empty(0, dtype="int64"), np.empty(0, dtype="int64")
    return np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])


def merge_stream(chunks: Iterable[tuple[np.ndarray, np.ndarray]]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Blocks of intervals given chunk after chunk in start order, as they close (int64, sorted,
    disjoint): a block runs on while an interval starts before the latest end so far, carried from
    chunk to chunk; the last block comes last."""
    c_start = c_end = 0
    carry = False  # (whether a block is open: from c_start to c_end so far)
    for s_chunk, e_chunk in chunks:
        if not len(s_chunk):
            continue
        cs = s_chunk.astype("int64", copy=False)
        run_end = np.maximum.accumulate(e_chunk.astype("int64", copy=False))
        if carry:
            np.maximum(run_end, c_end, out=run_end)
        new = np.empty(len(cs), dtype=bool)
        new[0] = not carry or cs[0] > c_end
        np.greater(cs[1:], run_end[:-1], out=new[1:])
        first = np.flatnonzero(new)
        starts = np.r_[c_start, cs[first]] if carry else cs[first]
        closed = run_end[first[first > 0] - 1]  # (the end of the block each new one follows)
        if carry and new[0]:
            closed = np.r_[c_end, closed]
        if len(closed):
            yield starts[:-1], closed.astype("int64", copy=False)
        c_start, c_end, carry = int(starts[-1]), int(run_end[-1]), True
    if carry:
        yield np.array([c_start], dtype="int64"), np.array([c_end], dtype="int64")
