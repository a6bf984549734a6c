"""The iterations' ranges found out of core (issue 15): where the NVTX ranges do not fit in the
budget, their levels are walked a block of (thread, start) keys at a time with the stack carried
across blocks, their groups' figures added up a chunk at a time, and the same group is chosen as
from whole columns.  Random exports: many threads, nesting, crossing ranges (on threads small
enough for nsys' exact parents and on larger ones), equal starts, empty and open ranges, names of
every tier, several domains."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import capture

from nsighttk.analysis import iteration_ranges_spilled as found_spilled
from nsighttk.analysis import iterations as iterations_module
from nsighttk.errors import UsageError
from nsighttk.load.nsys_sqlite import load_nsys_sqlite

_NAMES = ["step {}", "iteration {}", "forward", "backward", "loop body", "Optimizer.step#SGD.step", "load {}",
          "ProfilerStep#{}", "aten::mm, seq = {}", "bench", "trainStep"]


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables read and written to disk in chunks of about 97 rows; nsys' exact parents on threads
    of at most 40 ranges, so that threads both above and below that size cross."""
    monkeypatch.setattr("nsighttk.load.sqlite_columns.CHUNK_ROWS", 97)
    monkeypatch.setattr("nsighttk.profile.SPILL_ROWS", 1)
    monkeypatch.setattr("nsighttk.spill._PIECE_ROWS", 97)  # (larger chunks appended come back in pieces)
    monkeypatch.setattr("nsighttk.load.nvtx_nesting._EXACT_LIMIT", 40)


def _ranges(rng: np.random.Generator) -> list[tuple[object, ...]]:
    """Rows of NVTX_EVENTS (start, end, eventType, globalTid, domainId, text): per thread, a loop
    of nested iterations, nested children, crossing ranges, equal starts, open ranges."""
    rows: list[tuple[object, ...]] = []
    for t in range(int(rng.integers(1, 6))):
        gtid = (1000 + t) << 24 | (50 + t) if rng.random() < 0.9 else None
        at = int(rng.integers(0, 1000))
        name = _NAMES[int(rng.integers(len(_NAMES)))]
        for i in range(int(rng.integers(5, 30))):
            length = int(rng.integers(50, 400))
            rows.append((at, at + length, 59, gtid, int(rng.integers(0, 2)), name.format(i)))
            inner = at
            for _ in range(int(rng.integers(0, 4))):  # children, some nested further, some equal starts
                s = inner + int(rng.integers(0, 20))
                e = min(at + length, s + int(rng.integers(0, 120)))
                rows.append((s, e, 59 if rng.random() < 0.5 else 60, gtid, 0, _NAMES[int(rng.integers(len(_NAMES)))]
                             .format(int(rng.integers(3)))))
                if rng.random() < 0.3:
                    rows.append((s, s + (e - s) // 2, 59, gtid, 0, "inner"))
                if rng.random() < 0.15:  # crossing: starts inside, ends past the parent
                    rows.append((s + 1, at + length + int(rng.integers(1, 60)), 60, gtid, 0, "cross"))
                inner = e
            if rng.random() < 0.05:
                rows.append((at + 3, None, 60, gtid, 0, "open"))
            at += length + int(rng.integers(-30, 80))  # (sometimes the next overlaps)
    order = rng.permutation(len(rows))  # (exported as they end, not as they start)
    return [rows[i] for i in order]


def _export(tmp_path: Path, seed: int) -> Path:
    dst = tmp_path / f"ranges-{seed}.sqlite"
    shutil.copy(capture("streams_demo"), dst)
    con = sqlite3.connect(dst)
    con.execute("DELETE FROM NVTX_EVENTS")
    con.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, globalTid, domainId, text) VALUES (?,?,?,?,?,?)',
                    _ranges(np.random.default_rng(seed)))
    con.commit()
    con.close()
    return dst


def _levels_out_of_core(path: Path, budget: int) -> dict[int, int]:
    p = load_nsys_sqlite(path)
    p.budget = budget
    sp = p.spilled("nvtx", found_spilled._COLUMNS)
    fill = p.meta.get("nvtx_max_ts_ranges") or 0
    th = found_spilled._Threads(sp, fill)
    walked, crossed = found_spilled._levels(sp, th, fill, max(budget // found_spilled.WALK_ROW_BYTES, 8))
    exact = dict(zip(*(a.tolist() for a in found_spilled._exact_levels(sp, th, crossed, fill)), strict=True))
    got = {}
    for c in walked.chunks(["rid", "depth"]):
        for r, d in zip(c["rid"].tolist(), c["depth"].tolist(), strict=True):
            got[r] = exact.get(r, d)
    walked.close()
    return got


@pytest.mark.parametrize("seed", range(12))
def test_levels_out_of_core_are_the_loaders(seed: int, tmp_path: Path) -> None:
    """The walk gives every closed range the loader's depth."""
    path = _export(tmp_path, seed)
    a = load_nsys_sqlite(path).arrays("nvtx", ["range_id", "depth", "end_ns"])
    closed = a["end_ns"] != np.iinfo(a["end_ns"].dtype).min
    want = dict(zip(a["range_id"][closed].tolist(), a["depth"][closed].tolist(), strict=True))
    for budget in (256 * 8, 256 * 40, 1 << 30):  # (blocks of 8 and 40 ranges, and one block)
        assert _levels_out_of_core(path, budget) == want


def _found(path: Path, budget: int | None) -> tuple[pd.DataFrame, str] | None:
    p = load_nsys_sqlite(path)
    if budget is not None:
        p.budget = budget
    assert found_spilled.spills(p) == (budget is not None) or budget != 512
    return iterations_module._auto(p)


@pytest.mark.parametrize("seed", range(40))
def test_the_ranges_found_out_of_core_are_those_in_memory(seed: int, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = _export(tmp_path, seed)
    want = _found(path, None)
    calls = []
    real = found_spilled.found

    def watched(p: object) -> object:
        calls.append(got := real(p))  # type: ignore[arg-type]
        return got

    monkeypatch.setattr(found_spilled, "found", watched)
    for budget in (512, 256 * 24):  # (blocks of 8 ranges, and of 24)
        got = _found(path, budget)
        assert (got is None) == (want is None)
        if want is not None and got is not None:
            pd.testing.assert_frame_equal(got[0].reset_index(drop=True), want[0].reset_index(drop=True))
            assert got[1] == want[1]
    assert calls and all(c is not False for c in calls)  # (out of core, not given back to memory)


_G1, _G2 = (1000 << 24) | 51, (1000 << 24) | 52
_CASES = {
    # a benchmark run three times (one long run) is no loop: its median, not its mean, says so
    "medians": ([(0, 1000, _G1, "bench"), (1500, 1510, _G1, "bench"), (1990, 2000, _G1, "bench")]
                + [(s, s + 100, _G2, "fwd") for s in (0, 200, 400)], "fwd", _G2),
    # a loop of 20 (more ranges than a slice of the out-of-core median holds): 10 of 10 ns, 10 of
    # 30 ns, 960 ns from first start to last end: median 20 x 20 < 480, no loop (the upper middle: one)
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
}


@pytest.mark.parametrize("case", list(_CASES))
@pytest.mark.parametrize("budget", [None, 512])
def test_the_rules_choose_alike_in_memory_and_out_of_core(case: str, budget: int | None, tmp_path: Path) -> None:
    rows, name, gtid = _CASES[case]
    dst = tmp_path / "case.sqlite"
    shutil.copy(capture("streams_demo"), dst)
    con = sqlite3.connect(dst)
    con.execute("DELETE FROM NVTX_EVENTS")
    con.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, globalTid, domainId, text) '
                    "VALUES (?,?,59,?,0,?)", rows)
    con.commit()
    con.close()
    got = _found(dst, budget)
    assert got is not None
    assert got[0]["name"].iloc[0] == name and int(got[0]["global_tid"].iloc[0]) == gtid


def _explicit(path: Path, budget: int | None, spec: str) -> tuple[pd.DataFrame, str] | str:
    p = load_nsys_sqlite(path)
    if budget is not None:
        p.budget = budget
    try:
        return iterations_module._explicit(p, spec)
    except UsageError as ex:
        return str(ex)  # (with its hint)


@pytest.mark.parametrize("seed", range(8))
def test_the_ranges_named_out_of_core_are_those_in_memory(seed: int, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = _export(tmp_path, seed)
    calls = []
    real = found_spilled.explicit

    def watched(p: object, spec: str) -> object:
        try:
            calls.append(got := real(p, spec))  # type: ignore[arg-type]
        except UsageError:
            calls.append("raised")
            raise
        return got

    for spec in ("step 1", ":forward", "iteration \\d+", "load.*", "inner", "cross", "(", "no such range", "open"):
        want = _explicit(path, None, spec)
        monkeypatch.setattr(found_spilled, "explicit", watched)
        got = _explicit(path, 512, spec)
        monkeypatch.setattr(found_spilled, "explicit", real)
        if isinstance(want, str) or isinstance(got, str):
            assert got == want
        else:
            pd.testing.assert_frame_equal(got[0].reset_index(drop=True), want[0].reset_index(drop=True))
            assert got[1] == want[1]
    assert len(calls) == 9 and all(c is not False for c in calls)


@pytest.mark.parametrize("budget", [None, 512])
def test_the_hint_lists_the_names_seen_first_first(budget: int | None, tmp_path: Path) -> None:
    """Ties in the hint's counts go to the name seen first: here an inline text before a registered
    string (which the loader codes first)."""
    dst = tmp_path / "hint.sqlite"
    shutil.copy(capture("streams_demo"), dst)
    con = sqlite3.connect(dst)
    con.execute("DELETE FROM NVTX_EVENTS")
    sid = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
    con.execute("INSERT INTO StringIds (id, value) VALUES (?, 'alpha 1')", (sid,))
    rows = [(0, 10, None, "zeta 1"), (20, 30, None, "zeta 2"), (40, 50, sid, None), (60, 70, sid, None),
            (80, 90, None, "omega"), (100, 110, None, "omega"), (120, 130, None, "omega")]
    con.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, globalTid, domainId, textId, text) '
                    "VALUES (?,?,59,1,0,?,?)", rows)
    con.commit()
    con.close()
    got = _explicit(dst, budget, "no such range")
    assert got == ("--iteration 'no such range': no closed NVTX or record_function range has this name or matches it "
                   "as a regular expression (give a range name or a regular expression such as 'step \\d+'; ranges "
                   "here: 'omega' x3, 'zeta #' x2, 'alpha #' x2)")


_D = 1_500_000_000_000_000_000  # (seven of these on one thread add up past int64)
_NAMED = {
    # ranges with no name, named by their domain's prefix alone (a missing name is '', as in memory)
    "unnamed": ([(s, s + 50, _G1, None) for s in range(0, 500, 100)] + [(1000, 1010, _G1, "x")], ":", 5, _G1),
    # the thread with the most time in the ranges, its time added exactly (no int64 wrap)
    "huge": ([(i, _D + i, _G1, "x") for i in range(7)] + [(0, 10, _G2, "x")], "x", 7, _G1),
}


@pytest.mark.parametrize("case", list(_NAMED))
@pytest.mark.parametrize("budget", [None, 512])
def test_the_ranges_named_in_unusual_exports(case: str, budget: int | None, tmp_path: Path) -> None:
    rows, spec, n, gtid = _NAMED[case]
    dst = tmp_path / "named.sqlite"
    shutil.copy(capture("streams_demo"), dst)
    con = sqlite3.connect(dst)
    con.execute("DELETE FROM NVTX_EVENTS")
    con.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, globalTid, domainId, textId, text) '
                    "VALUES (?,?,59,?,0,NULL,?)", rows)  # (a textId column, NULL: '' coded apart from None)
    con.commit()
    con.close()
    got = _explicit(dst, budget, spec)
    assert not isinstance(got, str), got
    assert len(got[0]) == n and set(got[0]["global_tid"].astype(int)) == {gtid}
