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
