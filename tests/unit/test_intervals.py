"""The union of intervals as queries over the engine (nsighttk.analysis.iterations.intervals): its length and
its blocks against the covered time units counted one by one, per group; the GPU's busy time of
real captures against the intervals merged in start order, also where DuckDB has 16 MB."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import capture, fixture

from nsighttk import engine, settings
from nsighttk.analysis.iterations import intervals
from nsighttk.load.nsys_sqlite import load_nsys_sqlite


def _blocks(s: np.ndarray, e: np.ndarray) -> list[tuple[int, int]]:
    """The union of [s, e) intervals as disjoint blocks in start order, merged one interval at a time
    (an interval starting at or before the open block's end extends it)."""
    out: list[list[int]] = []
    for a, b in sorted(zip(s.tolist(), e.tolist(), strict=True)):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _length(s: np.ndarray, e: np.ndarray) -> int:
    return sum(b - a for a, b in _blocks(s, e))


def test_union_length_and_blocks_are_the_covered_time() -> None:
    """Random intervals in three groups: nesting, touching and equal ones, zero-length ones, ties of
    start, any order; the union's length per group and its blocks, as counted unit by unit; the
    unions of several subsets in one query, as the intervals merged in start order have them."""
    con = engine.connect()
    rng = np.random.default_rng(7)
    for _ in range(100):
        n = int(rng.integers(1, 30))
        g = rng.integers(0, 3, n)
        s = rng.integers(0, 250, n)
        e = s + rng.integers(0, 40, n)
        given = {"g": g, "s": s, "e": e}  # noqa: F841  (DuckDB reads it by name)
        con.execute("CREATE OR REPLACE TABLE ivs AS SELECT * FROM given")
        length = dict(con.execute(intervals.union_length_sql("SELECT g, s, e FROM ivs", "g")).fetchall())
        query = intervals.union_blocks_sql("SELECT g, s, e FROM ivs", "g")
        blocks = con.execute(f"SELECT g, start_ns, end_ns FROM ({query}) ORDER BY g, start_ns").fetchall()
        for k in range(3):
            mine = g == k
            covered = np.zeros(300, dtype=bool)
            for a, b in zip(s[mine], e[mine], strict=True):
                covered[a:b] = True
            if not mine.any():
                assert k not in length
                continue
            assert int(length[k]) == int(covered.sum())
            assert [(a, b) for kk, a, b in blocks if kk == k] == _blocks(s[mine], e[mine])
        (total,) = con.execute(intervals.union_length_sql("SELECT s, e FROM ivs")).fetchone()
        assert int(total) == _length(s, e)
        subsets = {"first": "g = 0", "others": "g > 0", "every": "true"}
        got = con.execute(intervals.union_length_sql("SELECT g, s, e FROM ivs", "", subsets)).fetchone()
        assert [None if v is None else int(v) for v in got] == [
            _length(s[m], e[m]) if m.any() else None for m in (g == 0, g > 0, g >= 0)]


@pytest.mark.parametrize("path", [lambda: capture("streams_demo"), lambda: capture("gpt2_train"),
                                  lambda: fixture("h200x2-ddp", "rank0.sqlite")])
def test_gpu_busy_time_is_the_merged_blocks(path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    p = load_nsys_sqlite(path())  # type: ignore[operator]
    cols = [p.arrays(t, ["start_ns", "end_ns"]) for t in intervals.GPU_TABLES]
    want = _length(*(np.concatenate([c[k] for c in cols]) for k in ("start_ns", "end_ns")))
    assert intervals.gpu_busy_ns(p) == want > 0
    monkeypatch.setenv("NSIGHTTK_MEMORY_MB", "16")
    settings.use(None)
    assert intervals.gpu_busy_ns(load_nsys_sqlite(path())) == want  # type: ignore[operator]
    monkeypatch.delenv("NSIGHTTK_MEMORY_MB")
    settings.use(None)
