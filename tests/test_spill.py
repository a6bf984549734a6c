"""Columns written to disk a chunk at a time (:class:`nsighttk.spill.Spill`): how chunks come back."""

from __future__ import annotations

import numpy as np
import pytest

from nsighttk.spill import Spill


def test_a_large_chunk_is_read_back_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk appended larger than the spill's rows comes back in pieces of that many rows (at
    least _PIECE_ROWS): what a loop over the chunks holds stays near the spill's size, not the
    source's part's."""
    monkeypatch.setattr("nsighttk.spill._PIECE_ROWS", 10)
    with Spill(["a", "b"], rows=25) as sp:
        sp.append({"a": np.arange(7), "b": np.arange(7, dtype=np.int32)})
        sp.append({"a": np.arange(100, 190), "b": np.arange(90, dtype=np.int32)})  # (97 gathered: 25, 25, 25, 22)
        sp.append({"a": np.arange(3), "b": np.zeros(3, dtype=np.int16)})
        got = list(sp.chunks())
        assert [len(c["a"]) for c in got] == [25, 25, 25, 22, 3]
        want_a = np.r_[np.arange(7), np.arange(100, 190), np.arange(3)]
        assert np.array_equal(np.concatenate([c["a"] for c in got]), want_a)
        assert [c["b"].dtype for c in got] == [np.int32] * 4 + [np.int16]
        assert np.array_equal(sp.read()["b"], np.r_[np.arange(7), np.arange(90), np.zeros(3)])


def test_a_gathered_slice_holds_only_its_own_rows() -> None:
    """A slice appended and left gathering is the spill's own copy: the array it was cut from can
    go (a view kept it alive whole)."""
    import gc
    import weakref

    big = np.arange(1 << 16, dtype=np.int64)
    gone = weakref.ref(big)
    with Spill(["a"], rows=1000) as sp:
        sp.append({"a": big[5:8]})
        del big
        gc.collect()
        assert gone() is None
        assert np.array_equal(sp.read()["a"], [5, 6, 7])


def test_a_partition_holds_about_its_rows_however_sparse_a_part() -> None:
    """A part taking one row of every chunk does not keep every chunk in memory while it gathers:
    peak traced memory of a partition of 48 chunks (1.5 MB each) stays within a few chunks."""
    import tracemalloc

    from nsighttk.spill import partition

    n, chunks = 1 << 16, 48

    def rows():
        rng = np.random.default_rng(1)
        for _ in range(chunks):
            part = rng.integers(0, 9, n)
            part[0] = 9  # (part 9: one row a chunk)
            yield part, {"v": rng.integers(0, 1 << 40, n), "w": rng.integers(0, 1 << 40, n)}

    tracemalloc.start()
    try:
        parts = partition(rows(), 10, ["v", "w"], held=1 << 15, missing=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    try:
        assert [p.rows for p in parts][-1] == chunks
        assert sum(p.rows for p in parts) == n * chunks
        assert peak < 8 * 16 * n  # (8 chunks' columns; all 48 were held before)
    finally:
        for p in parts:
            p.close()
