"""Time intervals: the union of [start, end) intervals as disjoint blocks, and how long the GPU
had any work at all.

Over the engine (:mod:`nsighttk.engine`) the union is a query: :func:`union_length_sql` adds up what
each interval covers beyond the ones that start before it (in start order: its end past the latest
end so far), one window over the intervals; :func:`union_blocks_sql` gives the blocks themselves (gaps
and islands: an interval starting after the latest end so far opens a block).  :func:`gpu_busy_ns` is
the GPU's busy time so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nsighttk import engine
from nsighttk.profile import Profile

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
    starting after the latest end so far opens a block (touching intervals are one block).
    Unordered: sort it where order matters."""
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
