"""Behaviour the rest of the suite left unchecked, found by the mutation check (tests/tools/mutate.py;
docs/MUTATION.md lists each mutant these tests kill and the survivors left, with why)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from conftest import kernels_profile

from nsighttk.analysis.comm.collectives import NO_SIZES, collectives
from nsighttk.errors import ExportSchemaError
from nsighttk.profile import Coded, Profile

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
NCCL_AG = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GEMM = "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_TNT"


def _kernels(rows: list[tuple[str, int, int, int]]) -> Profile:
    return kernels_profile(rows, ("name", "start_ns", "end_ns", "device_id"))


# ----------------------------------------------------------------------------- analysis/comm/collectives.py

def test_collectives_span_and_no_overlap_away_from_time_zero() -> None:
    """Kernels from 1,000 ns on: the span is last end - first start (not a sum); communication that
    no computation overlaps is 0.0% overlapped, in words too."""
    r = collectives(_kernels([(NCCL, 1_000, 1_100, 0), (GEMM, 1_200, 1_500, 0)]))
    (d,) = r.devices
    assert d.span_ns == 500 and d.overlap_ns == 0 and d.overlap_pct == 0.0 and d.exposed_comm_ns == 100
    assert r.summary() == ["device 0: communication 0.000 ms in 1 kernels, 0.0% of it overlapped with computation "
                           "(0.000 ms); 0.000 ms exposed", NO_SIZES]


def test_collectives_are_listed_by_device_then_longest_first() -> None:
    r = collectives(_kernels([(NCCL_AG, 0, 10, 1), (NCCL, 0, 30, 1), (NCCL_AG, 0, 5, 0), (NCCL, 10, 20, 0),
                              (NCCL, 30, 40, 0)]))
    assert list(zip(r.collectives["device_id"], r.collectives["collective"], r.collectives["total_ns"],
                    strict=True)) == [(0, "AllReduce", 20), (0, "AllGather", 5), (1, "AllReduce", 30),
                                      (1, "AllGather", 10)]


def test_collectives_of_a_kernels_table_without_its_columns_is_a_clear_error() -> None:
    p = Profile()
    p.kernels = pd.DataFrame({"name": [NCCL], "start_ns": [0], "end_ns": [1], "duration_ns": [1]})
    with pytest.raises(ExportSchemaError, match="missing column"):
        collectives(p)


# ----------------------------------------------------------------------------- analysis/kernels/names.py

def test_a_truncated_mangled_name_keeps_only_whole_identifiers() -> None:
    from nsighttk.analysis.kernels.names import decode

    assert decode("_ZN3foo3barEv").notes == ["mangled name; its identifiers: foo::bar"]
    assert decode("_ZN3foo12ab").notes == ["mangled name; its identifiers: foo"]  # 12 letters announced, 2 left


def test_a_label_cut_to_a_width_keeps_the_start_and_the_end() -> None:
    from nsighttk.analysis.kernels.names import short_label

    name = "triton_poi_fused_add_0"
    assert short_label(name) == name
    assert short_label(name, 10) == "triton…d_0"  # two thirds of what fits before the ellipsis, the rest after
    assert short_label(name, 12) == "triton_…dd_0" and short_label(name, 1) == "t"


def test_short_labels_of_a_generator() -> None:
    from nsighttk.analysis.kernels.names import short_labels

    names = ["triton_poi_fused_add_0", "triton_poi_fused_add_0", "triton_red_fused_sum_1"]
    assert short_labels(n for n in names) == short_labels(names) == names


# ----------------------------------------------------------------------------- analysis/comm/ranks.py

def _ranks(*ranks: list[tuple[str, int, int, int]]) -> dict[str, Profile]:
    return {f"rank{i}.sqlite": _kernels(rows) for i, rows in enumerate(ranks)}


def test_rank_summary_compute_time_and_its_deviation_from_the_mean() -> None:
    from nsighttk.analysis.comm.ranks import rank_summary

    t = rank_summary(_ranks([(GEMM, 0, 100, 0), (NCCL, 100, 150, 0)], [(GEMM, 0, 300, 0), (NCCL, 300, 310, 0)]))
    assert t[["rank", "kernel_time_ns", "comm_ns", "compute_ns"]].values.tolist() == [[0, 150, 50, 100],
                                                                                      [1, 310, 10, 300]]
    assert t["vs_mean_pct"].tolist() == [-50.0, 50.0]  # against the mean compute time, 200 ns


def test_rank_summary_names_one_slowest_rank_on_a_tie() -> None:
    from nsighttk.analysis.comm.ranks import rank_summary

    t = rank_summary(_ranks([(GEMM, 0, 100, 0)], [(GEMM, 0, 100, 0)], [(GEMM, 0, 50, 0)]))
    assert t["slowest"].tolist() == [True, False, False]


def test_rank_skew_of_one_rank_and_of_a_rank_without_kernels() -> None:
    from nsighttk.analysis.comm.ranks import rank_skew

    one = rank_skew(_ranks([(GEMM, 0, 100, 0)]))
    assert one.slowest_rank is None and one.verdict() == "no rank stands out"
    idle = rank_skew({"rank0.sqlite": _kernels([(GEMM, 0, 100, 0)]), "rank1.sqlite": Profile()})
    assert idle.slowest_rank == 0 and idle.longer == []


def test_iteration_skew_skips_a_rank_without_iterations_and_sorts_by_rank() -> None:
    from nsighttk.analysis.comm.ranks import iteration_skew

    def steps(*ns: int) -> pd.DataFrame:
        return pd.DataFrame({"name": [f"step {i}" for i in range(len(ns))], "duration_ns": list(ns),
                             "warmup": [False] * len(ns)})

    per_rank, per_it = iteration_skew({2: steps(300, 300), 1: steps(100, 100), 0: None})  # type: ignore[dict-item]
    assert per_rank["rank"].tolist() == [1, 2] and list(per_rank.index) == [0, 1]
    assert per_rank["vs_mean_pct"].tolist() == [-50.0, 50.0]  # means 100 and 300 against 200
    assert per_it["slowest_rank"].tolist() == [2, 2] and per_it["spread_ns"].tolist() == [200, 200]


# ----------------------------------------------------------------------------- load/nvtx_nesting.py

def _nested_ranges(seed: int, n: int) -> tuple[list[int], list[int]]:
    """n distinct, properly nested ranges (a random forest), in shuffled order."""
    import random

    rng = random.Random(seed)
    out: list[tuple[int, int]] = []

    def fill(lo: int, hi: int, depth: int) -> None:
        t = lo
        while len(out) < n and t + 4 < hi:
            s = rng.randint(t + 1, min(hi - 3, t + 50))
            e = rng.randint(s + 2, min(hi - 1, s + 400))
            out.append((s, e))
            if depth < 6 and rng.random() < 0.6:
                fill(s, e, depth + 1)
            t = e
    fill(0, 10**9, 0)
    rng.shuffle(out)
    return [s for s, _ in out], [e for _, e in out]


def test_nesting_of_many_ranges_on_one_thread_matches_the_exact_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the exact-search limit (lowered here to 4 ranges) the vectorized stack walk runs; on
    nested ranges its parents and depths are the tightest containing range's, as the exact search says."""
    import numpy as np

    from nsighttk.load import nvtx_nesting as nest

    start, end = (np.array(x, dtype="int64") for x in _nested_ranges(7, 300))
    rid = np.arange(len(start), dtype="int64")
    exact = nest._parents_exact(start, end, rid)
    assert (exact >= 0).sum() > 100 and nest.depth_from_parents(exact).max() >= 3  # really nested
    monkeypatch.setattr(nest, "_EXACT_LIMIT", 4)
    got = nest.parents_of(start, end, np.zeros(len(start), dtype="int64"), rid)
    assert got.tolist() == exact.tolist()
    assert nest.depth_from_parents(got).tolist() == nest.depth_from_parents(exact).tolist()


def test_nesting_asked_again_is_remembered_and_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader and the GPU projection nest the same ranges: the second answer is the first's
    (not computed again), whether the threads and ids come as int64, narrow or coded, and no caller
    can write to it; other ranges, or another exact-search limit, are nested afresh."""
    import numpy as np

    from nsighttk.load import nvtx_nesting as nest

    start, end = (np.array(x, dtype="int64") for x in _nested_ranges(11, 300))
    tid, rid = np.zeros(len(start), dtype="int64"), np.arange(len(start), dtype="int64")
    calls: list[int] = []
    monkeypatch.setattr(nest, "_HASHED", 7)  # (hashed a few values at a time)
    inner = nest._parents_of
    try:
        nest._parents_of = lambda *a: calls.append(1) or inner(*a)  # type: ignore[assignment]
        first = nest.parents_of(start, end, tid, rid)
        want = first.tolist()
        with pytest.raises(ValueError):
            first[:] = 7  # a caller writing to its answer
        coded = Coded(np.zeros(len(start), dtype=np.int8), np.array([0], dtype=np.int64))
        assert nest.parents_of(start.copy(), end.copy(), coded, rid.astype(np.int16)).tolist() == want
        assert len(calls) == 1
        moved = end.copy()
        moved[np.argmax(nest.depth_from_parents(np.array(want)))] += 1  # the deepest range ends later
        nest.parents_of(start, moved, tid, rid)
        assert len(calls) == 2
    finally:
        nest._parents_of = inner  # type: ignore[method-assign]
    assert nest.parents_of(start, end, tid, rid).tolist() == inner(start, end, tid, rid).tolist() == want


def _stack_walk(s: Any, e: Any, rid: Any, limit: int) -> tuple[list[int], bool]:
    """The stack walk as a loop (ranges in (start, longest first, range id) order), its parents
    replaced by the exact search where ranges crossed on a thread of at most ``limit``: the rule."""
    import numpy as np

    from nsighttk.load import nvtx_nesting as nest

    parent = [-1] * len(s)
    stack: list[int] = []
    crossing = False
    for i in np.lexsort((rid, -e, s)).tolist():
        while stack and e[stack[-1]] < e[i]:
            crossing |= bool(e[stack.pop()] > s[i])
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    if crossing and len(s) <= limit:
        return nest._parents_exact(s, e, rid).tolist(), crossing
    return parent, crossing


@pytest.mark.parametrize("limit", [4, 20_000])
def test_vectorized_nesting_gives_the_stack_walks_parents(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """The nesting in numpy (nearest earlier range ending no sooner; crossing found from the next
    range ending later) answers what the stack walk as a loop answers: nested ranges, crossing ones
    (then the exact search, below the limit), equal starts and ends, several threads, open ranges
    closed at one end, nesting deeper than the rounds of pointer jumping."""
    import numpy as np

    from nsighttk.load import nvtx_nesting as nest

    monkeypatch.setattr(nest, "_EXACT_LIMIT", limit)
    rng = np.random.default_rng(5)
    cases = []
    for seed in range(4):
        s, e = (np.array(x, dtype="int64") for x in _nested_ranges(seed, 400))
        cases.append((s, e, rng.integers(0, 3, len(s))))  # nested, on three threads
        s = rng.integers(0, 50, 600)
        cases.append((s, s + rng.integers(0, 30, 600), rng.integers(0, 2, 600)))  # crossing, many ties
        s = np.sort(rng.integers(0, 10**6, 300))
        cases.append((s, np.full(300, 10**6), np.zeros(300, dtype="int64")))  # all open: one end
    deep = np.arange(200, dtype="int64")  # 200 levels, then one range closing them all, crossing the last
    cases.append((np.r_[deep, 150], np.r_[1000 - deep, 2000], np.zeros(201, dtype="int64")))
    kinds = {False: 0, True: 0}
    for s, e, tid in cases:
        rid = rng.permutation(len(s)).astype("int64")
        want = [-1] * len(s)
        crossed = False
        for t in np.unique(tid).tolist():
            idx = np.flatnonzero(tid == t)
            local, c = _stack_walk(s[idx], e[idx], rid[idx], limit)
            crossed |= c
            for k, p in zip(idx.tolist(), local, strict=True):
                want[k] = -1 if p < 0 else int(idx[p])
        assert nest._parents_of(s, e, tid.astype("int64"), rid).tolist() == want
        kinds[crossed] += 1
    assert kinds[True] and kinds[False]  # crossing and nested both met


def test_crossing_ranges_get_the_tightest_parent() -> None:
    """A [0, 10] and B [4, 15] cross; C [8, 9] lies in both and A is tighter (8 + 1 against 4 + 6):
    the stack alone would say B."""
    import numpy as np

    from nsighttk.load.nvtx_nesting import parents_of

    i64 = lambda *v: np.array(v, dtype="int64")  # noqa: E731
    assert parents_of(i64(0, 4, 8), i64(10, 15, 9), i64(1, 1, 1), i64(0, 1, 2)).tolist() == [-1, -1, 0]
    # B [0, 12] and A [5, 14] cross; C [6, 8]: A is tighter (1 + 6 against 6 + 4) although it starts later
    assert parents_of(i64(0, 5, 6), i64(12, 14, 8), i64(1, 1, 1), i64(0, 1, 2)).tolist() == [-1, -1, 1]
    assert parents_of(i64(), i64(), i64(), i64()).tolist() == []


def test_nearest_before_settles_to_the_stack_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pointer jumping of the vectorized walk itself: the nearest earlier value >= each one
    (strict: > it), with every round, and with none left to the one-by-one loop."""
    import numpy as np

    from nsighttk.load import nvtx_nesting as nest

    values = np.array([5, 1, 3, 2, 4, 4], dtype="int64")
    for rounds in (0, 1, 32):
        monkeypatch.setattr(nest, "_ROUNDS", rounds)
        assert nest._nearest_before(values, strict=False).tolist() == [-1, 0, 0, 2, 0, 4]
        assert nest._nearest_before(values, strict=True).tolist() == [-1, 0, 0, 2, 0, 0]


# ----------------------------------------------------------------------------- analysis/iterations/find.py

def test_an_unknown_iteration_name_lists_the_five_commonest_range_names() -> None:
    from click.testing import CliRunner
    from conftest import assert_exit, capture

    from nsighttk.cli import cli

    res = CliRunner().invoke(cli, ["analyze", str(capture("streams_demo")), "--iteration", "zzz"])
    line = assert_exit(res, 2, line="--iteration 'zzz': no closed NVTX or record_function range has this name")
    shown = line.split("ranges here: ", 1)[1]
    assert shown.count("' x") == 5 and "'step #' x3" in shown and "demo" not in shown  # 6 names: 'demo' x1 left out
