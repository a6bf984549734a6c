"""The iterations measured out of core (issue 15): where the GPU operations and the CUDA calls do
not fit in the budget, their busy blocks are merged range by range on disk, the operations are
joined to their calls by ranges of correlation ids, and the per-iteration numbers, top kernels,
gaps and steady-state rows are the same as from whole columns."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import capture, fixture
from synth import SynthSpec, make_export

from nsighttk.analysis import intervals_spilled, iteration_spilled
from nsighttk.analysis.intervals import merge_intervals, merge_stream
from nsighttk.analysis.iteration_ops import _busy_and_gaps, _medians
from nsighttk.analysis.iterations import iterations, steady_profile
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.spill import Spill
from nsighttk.subset import RowMask


def test_blocks_merged_as_they_close_are_the_union() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        s = np.sort(rng.integers(0, 200, n))
        e = s + rng.integers(0, 30, n)
        cuts = np.unique(np.r_[rng.choice(np.arange(1, n + 1), size=min(n, int(rng.integers(1, 6))), replace=False), n])
        chunks = [(s[a:b], e[a:b]) for a, b in zip(np.r_[0, cuts[:-1]], cuts, strict=True)]
        got = list(merge_stream(chunks))
        want = merge_intervals(s, e)
        assert np.array_equal(np.concatenate([g[0] for g in got]), want[0])
        assert np.array_equal(np.concatenate([g[1] for g in got]), want[1])
        assert all(len(g[0]) == len(g[1]) for g in got)


def _windows(rng: np.random.Generator, n: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    edges = np.sort(rng.choice(np.arange(hi), size=2 * n, replace=False))
    w_start, w_end = edges[0::2].copy(), edges[1::2].copy()
    touch = rng.random(n - 1) < 0.3  # (windows that touch: a gap may start at one's end)
    w_end[:-1][touch] = w_start[1:][touch]
    return w_start, w_end


@pytest.mark.parametrize("rows", [1, 2, 3, 7, 1000])
def test_busy_and_gaps_a_chunk_of_blocks_at_a_time_are_those_of_all_blocks(rows: int) -> None:
    rng = np.random.default_rng(rows)
    for _ in range(60):
        s = rng.integers(0, 3000, int(rng.integers(0, 80)))
        bs, be = merge_intervals(s, s + rng.integers(1, 120, len(s)))
        w_start, w_end = _windows(rng, int(rng.integers(1, 12)), 3200)
        blocks = Spill(["start_ns", "end_ns"], rows=rows, missing=False)
        at = 0
        while at < len(bs):
            k = int(rng.integers(1, 5))
            blocks.append({"start_ns": bs[at:at + k], "end_ns": be[at:at + k]})
            at += k
        got = intervals_spilled.windows_busy_and_gaps(blocks, w_start, w_end)
        want = _busy_and_gaps((bs, be), w_start, w_end)
        blocks.close()
        assert np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])
        pd.testing.assert_frame_equal(got[2].reset_index(drop=True), want[2].reset_index(drop=True),
                                      check_dtype=False)


@pytest.mark.parametrize("limit", [1, 5, 40, 10**6])
def test_launch_delay_medians_a_group_of_iterations_at_a_time(limit: int) -> None:
    rng = np.random.default_rng(limit)
    n = 30
    it = rng.integers(0, n, 600)
    it[it == 7] = 8  # (an iteration with no delays: NaN)
    delay = rng.integers(0, 50, len(it))
    sp = Spill(["iteration", "delay"], rows=16, missing=False)
    for a in range(0, len(it), 37):
        sp.append({"iteration": it[a:a + 37], "delay": delay[a:a + 37]})
    got = iteration_spilled._delay_medians(sp, n, limit)
    sp.close()
    np.testing.assert_array_equal(got, _medians(it, delay.astype(np.float64), n))
    assert np.isnan(got[7]) and not np.isnan(got[8])


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_export(capture("streams_demo"), tmp_path_factory.mktemp("synth") / "synthetic.sqlite",
                       SynthSpec(kernels=1500, runtime=2200, memcpys=200, memsets=40, iterations=12))


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables read and written to disk in chunks of about 97 rows: every chunked loop goes round."""
    monkeypatch.setattr("nsighttk.load.sqlite_columns.CHUNK_ROWS", 97)
    monkeypatch.setattr("nsighttk.profile.SPILL_ROWS", 1)
    monkeypatch.setattr("nsighttk.spill._PIECE_ROWS", 97)  # (larger chunks appended come back in pieces)


def _changed(src: Path, dst: Path, sql: str) -> Path:
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    con.executescript(sql)
    con.commit()
    con.close()
    return dst


def _measured(path: Path, budget: int | None) -> tuple[Any, dict[str, np.ndarray], bool]:
    p = load_nsys_sqlite(path)
    if budget is not None:
        p.budget = budget
    spilled = iteration_spilled.spills(p)
    it = iterations(p)
    assert it is not None
    known = p.cache.get(("steady_ops",))
    rows = {t: RowMask.of(v, packed=False).array() for t, v in known[1].items()} if known else {}
    if it.steady:
        st = steady_profile(p, it)
        rows.update({f"steady {t}": v.array() for t, v in p.cache[("steady_keep",)][1].items()})
        for t in ("kernels", "memcpy", "api"):  # (the steady state reads its rows: masks as long as the tables)
            rows[f"steady {t} starts"] = st.arrays(t, ["start_ns"])["start_ns"]
    return it, rows, spilled


def _same(path: Path, budget: int = 1024) -> None:
    want, want_rows, spilled = _measured(path, None)
    assert not spilled
    got, got_rows, spilled = _measured(path, budget)
    assert spilled
    pd.testing.assert_frame_equal(got.table, want.table)
    pd.testing.assert_frame_equal(got.top_kernels, want.top_kernels)
    pd.testing.assert_frame_equal(got.gaps.reset_index(drop=True), want.gaps.reset_index(drop=True))
    assert got.steady == want.steady
    assert got.notes == want.notes
    assert got_rows.keys() == want_rows.keys()
    for t in want_rows:
        assert np.array_equal(got_rows[t], want_rows[t]), t


@pytest.mark.parametrize("name", ["gpt2_train", "ddp_rank0", "streams_demo", "synthetic"])
def test_iterations_out_of_core_are_those_in_memory(name: str, synthetic: Path) -> None:
    _same({"gpt2_train": capture("gpt2_train"), "ddp_rank0": fixture("h200x2-ddp", "rank0.sqlite"),
           "streams_demo": capture("streams_demo"), "synthetic": synthetic}[name])


@pytest.mark.parametrize("budget", [256, 4096, 1 << 16])
def test_every_budget_says_the_same(budget: int) -> None:
    _same(capture("gpt2_train"), budget)


@pytest.mark.parametrize("sql", [
    # operations of another process (not the iterations'), and calls of another process
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + (1 << 24) WHERE rowid % 4 = 1;"
    "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET globalPid = globalPid + (1 << 24) WHERE rowid % 3 = 1;"
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = globalTid + (1 << 24) WHERE rowid % 5 = 2;",
    # operations with no correlation id (counted by their own start), and ids no call has
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = NULL WHERE rowid % 6 = 0;"
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = correlationId + 50000000 WHERE rowid % 6 = 3;",
    # two calls with each id (the first launched it), and calls with no id
    "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue)"
    " SELECT start - 5000000, end - 5000000, eventClass, globalTid, correlationId, nameId, returnValue"
    " FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid % 2 = 0;"
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = NULL WHERE rowid % 9 = 4;",
    # kernels starting before their launch (no delay counted), equal starts across tables
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start - 100000000, end = end - 100000000 WHERE rowid % 5 = 0;"
    "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET start = (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL);",
    # damaged rows the loader drops (a kernel and a call ending before they start, a copy of no
    # bytes), with operations of another process: masks as long as the rows read, not the count
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 1 WHERE rowid % 50 = 1;"
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start - 1 WHERE rowid % 60 = 2;"
    "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = -1 WHERE rowid % 7 = 3;"
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + (1 << 24) WHERE rowid % 4 = 1;",
], ids=["other-processes", "no-ids", "twice-called", "early-and-equal", "dropped-rows"])
def test_unusual_exports_say_the_same(sql: str, synthetic: Path, tmp_path: Path) -> None:
    _same(_changed(synthetic, tmp_path / "changed.sqlite", sql))


def test_the_headline_busy_time_out_of_core_is_the_union(synthetic: Path) -> None:
    p = load_nsys_sqlite(synthetic)
    want = intervals_spilled.busy_blocks(p)
    a = p.arrays("kernels", ["start_ns", "end_ns"])
    assert want.rows > 0
    q = load_nsys_sqlite(synthetic)
    q.budget = 512
    assert intervals_spilled.spills(q)
    got = intervals_spilled.gpu_busy_ns(q)
    blocks = [merge_intervals(*(p.arrays(t, ["start_ns", "end_ns"]).values())) for t in ("kernels", "memcpy", "memset")]
    s = np.concatenate([b[0] for b in blocks])
    e = np.concatenate([b[1] for b in blocks])
    us, ue = merge_intervals(s, e)
    assert got == int((ue - us).sum())
    assert len(a["start_ns"]) > 1000
    want.close()
