"""Grouped statistics out of core, for the numpy analyses not yet on the engine (advice, the
iterations): a budget's worth of rows at a time give ``group_stats``' numbers bit for bit, and
the spill files they go through are given back, removed and never a hang on a full disk."""

from __future__ import annotations

import errno
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from conftest import capture

from nsighttk import spill
from nsighttk.analysis import nsys_reports, spilled_stats
from nsighttk.analysis.groupstats import GroupStats, group_stats
from nsighttk.errors import OutputFileError
from nsighttk.load.nsys_sqlite import load_nsys_sqlite


def _bits(g: GroupStats) -> list[list[object]]:
    """Every field, floats by their bytes, exact values by value and type."""
    out = []
    for f in ("key", "count", "total", "avg", "med", "min", "max", "stddev"):
        arr = getattr(g, f)
        out.append([(type(x).__name__, np.float64(x).tobytes() if isinstance(x, float) else x)
                    for x in arr.tolist()])
    return out


def _values(rng: np.random.Generator, n: int, mode: int) -> np.ndarray:
    if mode == 0:
        return rng.integers(0, 1000, size=n).astype(np.int32)
    if mode == 1:
        return rng.integers(-10**12, 10**12, size=n)
    if mode == 2:  # two values: giant groups of one-value ranges
        return rng.choice([5, 7], size=n).astype(np.int16)
    if mode == 3:  # beyond 2^53 (exact averages) and totals beyond int64 (Python integers)
        return rng.integers(2**60, 2**62, size=n) * rng.choice([-1, 1], size=n)
    return np.r_[np.full(n // 2, 3), rng.integers(0, 10**6, size=n - n // 2)]


@pytest.mark.parametrize("seed", range(4))
def test_spilled_group_stats_equal_group_stats_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    giants = 0
    for _ in range(60):
        n = int(rng.integers(0, 2500))
        raw = rng.choice(rng.integers(-5, 10 ** int(rng.integers(1, 7)), size=int(rng.integers(1, 20))), size=n)
        v = _values(rng, n, int(rng.integers(0, 5)))
        merge = int(rng.integers(1, 4))  # several raw keys may share a group (ids of one name)

        def code_of(keys: np.ndarray, merge: int = merge) -> np.ndarray:
            return np.unique(keys // merge, return_inverse=True)[1].ravel()

        distinct = np.unique(raw)
        codes = code_of(distinct)[np.searchsorted(distinct, raw)] if n else np.empty(0, dtype=np.int64)
        step, limit = int(rng.integers(1, 500)), int(rng.integers(16, 400))

        def chunks(step: int = step, raw: np.ndarray = raw, v: np.ndarray = v) -> object:
            return ((raw[a:a + step], v[a:a + step]) for a in range(0, len(raw), step))

        got = spilled_stats.spilled_group_stats(chunks, code_of, limit)  # type: ignore[arg-type]
        assert _bits(got) == _bits(group_stats(codes, v))
        giants += int((got.count > limit).sum())
    assert giants  # (groups over the limit were taken a range of values at a time)


@pytest.mark.parametrize("seed", range(3))
def test_groups_take_the_whole_inputs_decisions(seed: int) -> None:
    """Exact averages (values from 2^53) and Python-integer totals (a total beyond int64) are
    decided for all groups at once, as group_stats decides them: slices and giant groups that
    hold no such value or total follow the rows that do."""
    rng = np.random.default_rng(seed)
    for _ in range(20):
        keys = rng.integers(0, 8, size=int(rng.integers(200, 1500)))
        values = rng.integers(0, 10**9, size=len(keys))
        big = keys == int(rng.integers(0, 8))
        if rng.integers(0, 2):  # one group's values beyond 2^53 (averages exact everywhere)
            values[big] = rng.integers(2**53, 2**54, size=int(big.sum()))
        else:  # one group's total beyond int64 (every total a Python integer, every average too)
            values[big] = rng.integers(2**61, 2**62, size=int(big.sum()))
            small = keys == (int(keys[big][0]) + 1) % 8  # another group's total past 2^53, within int64
            values[small] = rng.integers(2**52, 2**53, size=int(small.sum()))
        def chunks(keys: np.ndarray = keys, values: np.ndarray = values) -> object:
            return ((keys[a:a + 97], values[a:a + 97]) for a in range(0, len(keys), 97))

        for limit in (16, 50, 400):
            got = spilled_stats.spilled_group_stats(chunks, lambda k: k, limit)  # type: ignore[arg-type]
            assert _bits(got) == _bits(group_stats(keys, values)), limit


def test_out_of_core_memory_does_not_grow_with_the_rows() -> None:
    """What the grouping holds at once is a slice and a chunk: 4x the rows, the same peak (in
    memory, the sorted pairs and deviations grow with the rows)."""
    def peak(n: int, spilled: bool) -> int:
        rng = np.random.default_rng(0)
        keys = rng.integers(0, 12, size=n)  # (twelve groups of n/12 rows: over the limit, giants)
        values = rng.integers(0, 10**6, size=n)
        tracemalloc.start()
        try:
            if spilled:
                spilled_stats.spilled_group_stats(
                    lambda: ((keys[a:a + (1 << 16)], values[a:a + (1 << 16)]) for a in range(0, n, 1 << 16)),
                    lambda k: k, 1 << 14)
            else:
                group_stats(keys, values)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    assert peak(1 << 21, False) > 3 * peak(1 << 19, False)
    assert peak(1 << 21, True) < 1.2 * peak(1 << 19, True)
    assert peak(1 << 21, True) < peak(1 << 21, False) / 4


def test_spill_gives_back_its_chunks_and_removes_its_files(tmp_path: Path) -> None:
    sp = spill.Spill(["a", "t"], rows=4)
    sp.append({"a": np.array([1, -128, 3], dtype=np.int8), "t": np.array(["x", None, "x"], dtype=object)})
    sp.append({"a": np.array([300, np.iinfo(np.int16).min], dtype=np.int16), "t": np.array(["y", "x"], dtype=object)})
    sp.append({"a": np.array([7], dtype=np.int8), "t": np.array([None], dtype=object)})
    got = sp.read()
    # (chunks of different types were widened when gathered: each type's minimum stays a missing value)
    assert got["a"].tolist() == [1, -(2**63), 3, 300, -(2**63), 7]
    assert sp.values("t")[got["t"]].tolist() == ["x", None, "x", "y", "x", None]
    assert sp.rows == 6 and sum(len(c["a"]) for c in sp.chunks(["a"])) == 6
    folder = sp.folder
    assert any(folder.iterdir())
    sp.close()
    assert not folder.exists()


def test_narrow_chunks_are_numbers_to_the_engine() -> None:
    """Values in chunks of different integer types (int8's -128 beside int16's 300) are numbers to
    the engine, not missing values, wherever its chunks are gathered or split."""
    keys = np.zeros(6, dtype=np.int64)
    values = [np.array([-128, 5, 7], dtype=np.int8), np.array([300, 2, np.iinfo(np.int16).min], dtype=np.int16)]
    whole = np.concatenate([v.astype(np.int64) for v in values])
    for limit in (8, 2):
        got = spilled_stats.spilled_group_stats(lambda: zip(np.split(keys, 2), values, strict=True),  # type: ignore[arg-type]
                                                lambda k: k, limit)
        assert _bits(got) == _bits(group_stats(keys, whole)), limit
    for rows in (1, 6):  # (where a type's minimum is a missing value: the same whether chunks were
        sp = spill.Spill(["v"], rows=rows)  # written apart and read together, or gathered when written)
        for v in values:
            sp.append({"v": v})
        assert sp.read()["v"].tolist() == [-(2**63), 5, 7, 300, 2, -(2**63)]
        sp.close()


def test_many_parts_hold_no_file_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """A partition into thousands of slices (a tiny budget, many groups) opens files only while it
    writes or reads one."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
    try:
        keys = np.arange(20_000) % 5000
        values = np.arange(20_000)
        got = spilled_stats.spilled_group_stats(lambda: [(keys, values)], lambda k: k, 8)
        assert _bits(got) == _bits(group_stats(keys, values))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_partition_keeps_each_parts_rows_in_order() -> None:
    rows = np.arange(1000)
    part = rows % 3
    parts = spill.partition(iter([(part[:400], {"v": rows[:400]}), (part[400:], {"v": rows[400:]})]), 3, ["v"])
    assert [p.read()["v"].tolist() for p in parts] == [rows[part == i].tolist() for i in range(3)]
    for p in parts:
        p.close()


def test_a_full_disk_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_open = open

    def full(path: object, mode: str = "r", *a: object, **k: object) -> object:
        if "a" in mode:  # (the spill's writes: as /dev/full answers them)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, mode, *a, **k)  # type: ignore[call-overload]

    sp = spill.Spill(["a"], rows=1)
    folder = sp.folder
    monkeypatch.setattr("builtins.open", full)
    with pytest.raises(OutputFileError, match=r"No space left on device.*TMPDIR"):
        sp.append({"a": np.arange(3)})
    monkeypatch.undo()
    sp.close()
    assert not folder.exists()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "missing"))  # (as TMPDIR, once read)
    with pytest.raises(OutputFileError, match=r"cannot write temporary files.*point TMPDIR"):
        spill.Spill(["a"])


def counted_scans(p: object, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tables ``p``'s source is asked to read a chunk at a time from now on, one entry a scan."""
    scans: list[str] = []
    real = p.source.parts  # type: ignore[attr-defined]
    monkeypatch.setattr(p.source, "parts", lambda t, c: scans.append(t) or real(t, c))  # type: ignore[attr-defined]
    return scans


def test_a_run_of_reports_reads_each_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels read for a summary carry the trace's columns (announced) and stay for it."""
    p = load_nsys_sqlite(capture("streams_demo"))
    p.budget = 8 * spilled_stats.ROW_BYTES  # (both out of core)
    scans = counted_scans(p, monkeypatch)
    names = ["cuda_gpu_kern_sum", "cuda_gpu_trace"]
    nsys_reports.prefetch(p, names)
    for i, name in enumerate(names):
        res = nsys_reports.run_report(name, p)
        list(res.frames())
        nsys_reports.release_memos(p, names[i + 1:])
    assert scans.count("kernels") == 1
