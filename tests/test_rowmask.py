"""RowMask (nsighttk.subset): the steady state's rows a bit a row out of core, a byte in memory;
every way of making one and reading it back gives the boolean mask it stands for."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from nsighttk.subset import RowMask


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 63, 64, 1000, 4099])
def test_every_way_of_making_a_mask_reads_back_the_same(n: int, packed: bool) -> None:
    rng = np.random.default_rng(n)
    want = rng.random(n) < 0.37
    made = RowMask.of(want, packed=packed)
    by_rows = RowMask(n, packed=packed)
    order = rng.permutation(np.flatnonzero(want))  # (any order, repeats allowed)
    by_rows.set(np.r_[order, order[: len(order) // 3]])
    by_chunks = RowMask(n, packed=packed)
    appended = RowMask(0, packed=packed)
    cuts = np.unique(np.r_[0, rng.integers(0, n + 1, size=min(n, 12)), n])
    for lo, hi in itertools.pairwise(cuts):  # (chunks at any offset, of any length)
        by_chunks.put(int(lo), want[lo:hi])
        appended.append(want[lo:hi])
    for mask in (made, by_rows, by_chunks, appended):
        assert len(mask) == n and mask.count() == int(want.sum())
        assert mask.array().dtype == bool and mask.array().tolist() == want.tolist()
        for lo, hi in itertools.pairwise(cuts):
            assert mask.slice(int(lo), int(hi - lo)).tolist() == want[lo:hi].tolist()
        if packed:
            assert mask.bits is not None and len(mask.bits) == (n + 7) // 8


def test_put_keeps_what_was_set_and_count_follows() -> None:
    mask = RowMask(20)
    mask.set(np.array([0, 19]))
    assert mask.count() == 2
    mask.put(3, np.array([True, False, True, True, False, True, True]))  # (rows 3..9, across a byte)
    assert np.flatnonzero(mask.array()).tolist() == [0, 3, 5, 6, 8, 9, 19] and mask.count() == 7
    mask.put(17, np.array([False, False, False]))
    assert mask.slice(17, 3).tolist() == [False, False, True]


def test_a_packed_mask_takes_an_eighth() -> None:
    mask = RowMask.of(np.ones(1_000_003, dtype=bool))
    assert mask.bits is not None and mask.bits.nbytes == 125_001 and mask.count() == 1_000_003
