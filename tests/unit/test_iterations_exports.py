"""The iterations of nsys exports with unusual contents: the ranges the rules choose or
``--iteration`` names, and the work attributed to each iteration, checked against a plain Python
computation over the SQLite; and with DuckDB held to 16 MB (``NSIGHTTK_MEMORY_MB``), the same
results as with the default memory."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import capture, fixture, grown_export

from nsighttk import settings
from nsighttk.analysis.iterations import ranges as iteration_ranges
from nsighttk.analysis.iterations.find import iterations, steady_profile
from nsighttk.errors import UsageError
from nsighttk.load.nsys_sqlite import load_nsys_sqlite


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return grown_export(tmp_path_factory, kernels=1500, runtime=2200, memcpys=200, memsets=40, iterations=12)


def _changed(src: Path, dst: Path, sql: str) -> Path:
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    con.executescript(sql)
    con.commit()
    con.close()
    return dst


def _measured(path: Path) -> tuple[Any, dict[str, list[bool]]]:
    p = load_nsys_sqlite(path)
    it = iterations(p)
    assert it is not None
    rows: dict[str, list[bool]] = {}
    if it.steady:
        st = steady_profile(p, it)
        rows = {t: v.tolist() for t, v in p.cache[("steady_keep",)][1].items()}
        for t in ("kernels", "memcpy", "api"):  # (the steady state reads its rows: masks as long as the tables)
            rows[f"{t} starts"] = st.arrays(t, ["start_ns"])["start_ns"].tolist()
    return it, rows


def _same_with_little_memory(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The iterations of ``path``, checked to be the same where DuckDB has 16 MB."""
    want, want_rows = _measured(path)
    monkeypatch.setenv("NSIGHTTK_MEMORY_MB", "16")
    settings.use(None)
    try:
        got, got_rows = _measured(path)
    finally:
        monkeypatch.delenv("NSIGHTTK_MEMORY_MB")
        settings.use(None)
    pd.testing.assert_frame_equal(got.table, want.table)
    pd.testing.assert_frame_equal(got.top_kernels, want.top_kernels)
    pd.testing.assert_frame_equal(got.gaps, want.gaps)
    assert (got.steady, got.notes, got.source) == (want.steady, want.notes, want.source)
    assert got_rows == want_rows
    return want


def _union(intervals: list[tuple[int, int]], lo: int, hi: int) -> int:
    """The length of the union of the intervals clipped to [lo, hi): a plain sweep."""
    busy, cur = 0, None
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in intervals):
        if e <= s:
            continue
        if cur is None or s > cur[1]:
            busy += 0 if cur is None else cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return busy + (0 if cur is None else cur[1] - cur[0])


def _reference(path: Path, it: Any) -> pd.DataFrame:
    """Per iteration, the kernels, their time, the copies and the GPU busy time of the process, by
    the module's rules: an operation counts in the iteration where the first call of the process
    with its correlation id started (its own start where none did); damaged rows (an end before
    the start, a copy of negative bytes) are no rows."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    mine = (lambda g: g is None or (g >> 24) & 0xFFFFFF == it.pid) if it.pid is not None else (lambda g: True)
    launch: dict[int, int] = {}
    for corr, start, gtid in con.execute("SELECT correlationId, start, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                                         "WHERE end >= start ORDER BY rowid"):
        if corr is not None and gtid is not None and mine(gtid):
            launch.setdefault(corr, start)
    ws, we = it.table["start_ns"].tolist(), it.table["end_ns"].tolist()
    out = {k: [0] * len(ws) for k in ("kernels", "kernel_ns", "memcpy_count", "gpu_busy_ns")}
    intervals = []
    for table, key in (("KERNEL", "kernels"), ("MEMCPY", "memcpy_count"), ("MEMSET", None)):
        where = " AND bytes >= 0" if table != "KERNEL" else ""
        for start, end, corr, gpid in con.execute(f"SELECT start, end, correlationId, globalPid FROM "
                                                  f"CUPTI_ACTIVITY_KIND_{table} WHERE end >= start{where}"):
            if not mine(gpid):
                continue
            intervals.append((start, end))
            t = launch.get(corr, start) if corr is not None else start
            for i, (a, b) in enumerate(zip(ws, we, strict=True)):
                if a <= t < b and key is not None:
                    out[key][i] += 1
                    if key == "kernels":
                        out["kernel_ns"][i] += end - start
    out["gpu_busy_ns"] = [_union(intervals, a, b) for a, b in zip(ws, we, strict=True)]
    return pd.DataFrame(out)


@pytest.mark.parametrize("name", ["gpt2_train", "ddp_rank0", "streams_demo", "synthetic"])
def test_iterations_with_little_memory_are_those_with_the_default(name: str, synthetic: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = {"gpt2_train": capture("gpt2_train"), "ddp_rank0": fixture("h200x2-ddp", "rank0.sqlite"),
            "streams_demo": capture("streams_demo"), "synthetic": synthetic}[name]
    it = _same_with_little_memory(path, monkeypatch)
    assert it.table["kernels"].sum() > 0 and len(it.gaps) > 0


@pytest.mark.parametrize("sql", [
    "",
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
    # damaged rows the loader drops (a kernel and a call ending before they start, a copy of
    # negative bytes), with operations of another process: masks as long as the rows read
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 1 WHERE rowid % 50 = 1;"
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start - 1 WHERE rowid % 60 = 2;"
    "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = -1 WHERE rowid % 7 = 3;"
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + (1 << 24) WHERE rowid % 4 = 1;",
], ids=["as-made", "other-processes", "no-ids", "twice-called", "early-and-equal", "dropped-rows"])
def test_unusual_exports_attribute_work_as_a_plain_computation(sql: str, synthetic: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = _changed(synthetic, tmp_path / "changed.sqlite", sql)
    it = _same_with_little_memory(path, monkeypatch)
    want = _reference(path, it)
    assert want["kernels"].sum() > 10 and want["gpu_busy_ns"].sum() > 0
    pd.testing.assert_frame_equal(it.table[list(want)].astype("int64").reset_index(drop=True), want,
                                  check_dtype=False)


def _nvtx_export(tmp_path: Path, rows: list[tuple[object, ...]], text_id: bool = False) -> Path:
    """streams_demo with these NVTX ranges: (start, end, globalTid, text) each, or with
    ``text_id`` (start, end, globalTid, textId, text)."""
    dst = tmp_path / "ranges.sqlite"
    shutil.copy(capture("streams_demo"), dst)
    con = sqlite3.connect(dst)
    con.execute("DELETE FROM NVTX_EVENTS")
    if text_id:
        con.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, globalTid, domainId, textId, text) '
                        "VALUES (?,?,59,?,0,?,?)", rows)
    else:
        con.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, globalTid, domainId, text) '
                        "VALUES (?,?,59,?,0,?)", rows)
    con.commit()
    con.close()
    return dst


_G1, _G2 = (1000 << 24) | 51, (1000 << 24) | 52
_CASES = {
    # a benchmark run three times (one long run) is no loop: its median, not its mean, says so
    "medians": ([(0, 1000, _G1, "bench"), (1500, 1510, _G1, "bench"), (1990, 2000, _G1, "bench")]
                + [(s, s + 100, _G2, "fwd") for s in (0, 200, 400)], "fwd", _G2),
    # a loop of 20: 10 of 10 ns, 10 of 30 ns, 960 ns from first start to last end: median 20 x 20
    # < 480, no loop (the median of an even count: the two middle values' mean)
    "big-median": ([(s, s + (10 if i % 2 else 30), _G1, "bench") for i, s in enumerate(range(0, 1000, 50))]
                   + [(s, s + 100, _G2, "fwd") for s in (0, 200, 400)], "fwd", _G2),
    # the same steps on two threads: the group seen first wins (the larger thread id here)
    "first-seen": ([(s, s + 50, _G2, f"step {i}") for i, s in enumerate((10, 70, 130))]
                   + [(s, s + 50, _G1, f"step {i}") for i, s in enumerate((10, 70, 130))], "step 0", _G2),
    # one grouped name, torch.profiler's step only later: the first range's name gives the tier
    # (1, a word 'step': the iterations covering more time win; tier 0 would win whatever they cover)
    "first-name": ([(0, 10, _G1, "ProfilerStep5#")]
                   + [(20 + 30 * i, 40 + 30 * i, _G1, f"misc {i}") for i in range(30)]
                   + [(1000, 1010, _G1, "ProfilerStep#12"), (2000, 2010, _G1, "ProfilerStep#13")]
                   + [(s, s + 500, _G2, f"iteration {i}") for i, s in enumerate((0, 3000))], "iteration 0", _G2),
    # ranges of one group that overlap are not iterations
    "overlapping": ([(0, 100, _G1, "step 1"), (50, 150, _G1, "step 2"), (200, 300, _G1, "step 3")]
                    + [(s, s + 40, _G2, "fwd") for s in (0, 50, 100)], "fwd", _G2),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_the_rules_choose_the_group(case: str, tmp_path: Path) -> None:
    rows, name, gtid = _CASES[case]
    got = iteration_ranges.found(load_nsys_sqlite(_nvtx_export(tmp_path, rows)))
    assert got is not None
    assert got[0]["name"].iloc[0] == name and int(got[0]["tid_key"].iloc[0]) == gtid


def test_the_hint_lists_the_names_seen_first_first(tmp_path: Path) -> None:
    """Ties in the hint's counts go to the name seen first: here an inline text before a registered
    string."""
    dst = _nvtx_export(tmp_path, [])
    con = sqlite3.connect(dst)
    sid = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
    con.execute("INSERT INTO StringIds (id, value) VALUES (?, 'alpha 1')", (sid,))
    rows = [(0, 10, None, "zeta 1"), (20, 30, None, "zeta 2"), (40, 50, sid, None), (60, 70, sid, None),
            (80, 90, None, "omega"), (100, 110, None, "omega"), (120, 130, None, "omega")]
    con.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, globalTid, domainId, textId, text) '
                    "VALUES (?,?,59,1,0,?,?)", rows)
    con.commit()
    con.close()
    with pytest.raises(UsageError) as ex:
        iterations(load_nsys_sqlite(dst), "no such range")
    assert str(ex.value) == (
        "--iteration 'no such range': no closed NVTX or record_function range has this name or matches it "
        "as a regular expression (give a range name or a regular expression such as 'step \\d+'; ranges "
        "here: 'omega' x3, 'zeta #' x2, 'alpha #' x2)")


_D = 1_500_000_000_000_000_000  # (seven of these on one thread add up past int64)
_NAMED = {
    # ranges with no name, named by their domain's prefix alone (a missing name is '')
    "unnamed": ([(s, s + 50, _G1, None, None) for s in range(0, 500, 100)] + [(1000, 1010, _G1, None, "x")],
                ":", 5, _G1),
    # the thread with the most time in the ranges, its time added exactly (no int64 wrap)
    "huge": ([(i, _D + i, _G1, None, "x") for i in range(7)] + [(0, 10, _G2, None, "x")], "x", 7, _G1),
    # the outermost level of that thread: a nested range of the same name is not one
    "nested": ([(0, 100, _G1, None, "x"), (10, 20, _G1, None, "x"), (200, 300, _G1, None, "x")], "x", 2, _G1),
}


@pytest.mark.parametrize("case", list(_NAMED))
def test_the_ranges_named_in_unusual_exports(case: str, tmp_path: Path) -> None:
    rows, spec, n, gtid = _NAMED[case]
    got, how = iteration_ranges.explicit(load_nsys_sqlite(_nvtx_export(tmp_path, rows, text_id=True)), spec)
    assert how == "named" and len(got) == n and set(got["tid_key"].astype(int)) == {gtid}
    assert (got["depth"] == got["depth"].min()).all()


def test_a_regular_expression_that_matches_many_names(tmp_path: Path) -> None:
    rows = [(i * 10, i * 10 + 5, _G1, f"batch {i}") for i in range(300)] + [(0, 1, _G2, "batch x")]
    it = iterations(load_nsys_sqlite(_nvtx_export(tmp_path, rows)), r"batch \d+")
    assert it is not None and len(it.table) == 300 and "matching" in it.source
    assert np.array_equal(it.table["start_ns"], np.arange(300) * 10)
