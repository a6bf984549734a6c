"""The NVTX GPU projection with its operations and runtime calls out of core (issue 15): the same
spans as a plain reading of the rule (random inputs), and the same bytes as in memory on every test
export and on the unusual and damaged ones (forced with a tiny budget)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import capture, mutate, temporary_files
from test_spilled_stats import _exports, counted_scans
from test_stats_small import DAMAGED, DAMAGED_IDS, UNUSUAL, UNUSUAL_IDS

from nsighttk.analysis import nsys_report_nvtx, nsys_reports, nvtx_spilled
from nsighttk.encoding import INT_NULL
from nsighttk.errors import NsightTKError
from nsighttk.load import nvtx_walk
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.load.nvtx_nesting import depth_from_parents, parents_of
from nsighttk.report import nsys_format
from nsighttk.spill import Spill

TINY = 8 * 64  # (a budget of 8 rows a slice)


def _spill(columns: dict[str, np.ndarray], rows: int = 5) -> Spill:
    sp = Spill(list(columns), rows=rows)
    n = len(next(iter(columns.values())))
    for a in range(0, n, rows):
        sp.append({c: v[a:a + rows] for c, v in columns.items()})
    return sp


def _reference(r, calls, ops):  # type: ignore[no-untyped-def]
    """The rule, read plainly: an operation belongs to the first call of its process with its
    correlation id; a range counts the launching calls on its thread it contains whole, and takes
    the first start and last end of their operations."""
    first_call: dict[tuple[int, int], int] = {}
    for i, (corr, tid) in enumerate(zip(calls["correlation_id"], calls["global_tid"], strict=True)):
        if corr != INT_NULL and tid != INT_NULL:
            first_call.setdefault((int(tid) >> 24, int(corr)), i)
    span: dict[int, list[int]] = {}
    for corr, pid, s, e in zip(*(ops[c] for c in nvtx_spilled._OP_COLUMNS), strict=True):
        if corr == INT_NULL or pid == INT_NULL:
            continue
        i = first_call.get((int(pid) >> 24, int(corr)))
        if i is not None:
            got = span.setdefault(i, [int(s), int(e)])
            got[0], got[1] = min(got[0], int(s)), max(got[1], int(e))
    n = len(r["start"])
    count, first, last = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for k in range(n):
        inside = [i for i in span if calls["global_tid"][i] == r["tid"][k] != INT_NULL
                  and calls["start_ns"][i] >= r["start"][k] and calls["end_ns"][i] <= r["end"][k]]
        if inside:
            count[k] = len(inside)
            first[k] = min(span[i][0] for i in inside)
            last[k] = max(span[i][1] for i in inside)
    return count, first, last


def _inputs(rng: np.random.Generator, overlap: bool) -> tuple[dict, dict, dict]:  # type: ignore[type-arg]
    threads = [(1 << 24) * p + t for p in (1, 2)[: rng.integers(1, 3)] for t in (7, 9)[: rng.integers(1, 3)]]
    calls: dict[str, list[int]] = {c: [] for c in nvtx_spilled.CALL_COLUMNS}
    corr = 0
    for tid in threads:
        t = int(rng.integers(0, 50))
        for _ in range(int(rng.integers(5, 60))):
            start = t + int(rng.integers(0, 4))
            end = start + int(rng.integers(0, 6))
            t = end + (0 if rng.random() < 0.3 else int(rng.integers(0, 4)))  # (calls end to end, or apart)
            corr += 1
            calls["start_ns"].append(start)
            calls["end_ns"].append(end)
            calls["global_tid"].append(tid if rng.random() > 0.05 else INT_NULL)
            calls["correlation_id"].append(corr if rng.random() > 0.05 else int(rng.integers(1, corr + 1)))
    if overlap:  # one call inside another on its thread, each launching an operation
        t = max(calls["end_ns"]) + 10
        for k, (start, end) in enumerate(((t, t + 5), (t + 1, t + 2))):
            calls["start_ns"].append(start)
            calls["end_ns"].append(end)
            calls["global_tid"].append(threads[0])
            calls["correlation_id"].append(corr + 1 + k)
    ops: dict[str, list[int]] = {c: [] for c in nvtx_spilled._OP_COLUMNS}
    for _ in range(int(rng.integers(0, 3 * len(calls["start_ns"])))):
        i = int(rng.integers(0, len(calls["start_ns"])))
        start = int(rng.integers(0, 1000))
        ops["correlation_id"].append(calls["correlation_id"][i] if rng.random() > 0.1 else INT_NULL)
        tid = calls["global_tid"][i]
        ops["global_pid"].append((tid >> 24) << 24 if tid != INT_NULL and rng.random() > 0.05 else threads[-1])
        ops["start_ns"].append(start)
        ops["end_ns"].append(start + int(rng.integers(0, 100)))
    if overlap:
        for k in range(2):
            ops["correlation_id"].append(corr + 1 + k)
            ops["global_pid"].append((threads[0] >> 24) << 24)
            ops["start_ns"].append(1 + k)
            ops["end_ns"].append(2 + k)
    hi = max(calls["end_ns"]) + 5
    r: dict[str, list[int]] = {"start": [], "end": [], "tid": []}
    for _ in range(int(rng.integers(0, 80))):
        a, b = sorted(int(x) for x in rng.integers(-3, hi, size=2))
        r["start"].append(a)
        r["end"].append(b)
        r["tid"].append(threads[int(rng.integers(0, len(threads)))] if rng.random() > 0.05 else INT_NULL)
    arr = {k: np.array(v, dtype=np.int64) for k, v in r.items()}
    return arr, {k: np.array(v, dtype=np.int64) for k, v in calls.items()}, \
        {k: np.array(v, dtype=np.int64) for k, v in ops.items()}


@pytest.mark.parametrize("seed", range(40))
def test_spans_follow_the_rule(seed: int) -> None:
    """Random threads of two processes, calls end to end or apart, ids shared or missing, operations
    on no call, ranges anywhere: the spans of a plain reading of the rule, for joins and blocks of
    a few rows (many id ranges, many blocks, slices across blocks); None where calls overlap."""
    rng = np.random.default_rng(seed)
    overlap = seed % 5 == 4
    r, calls, ops = _inputs(rng, overlap)
    want = _reference(r, calls, ops)
    for limit in (1, 3, 8, 1 << 20):
        # (kernels, no copies, and the same operations again as memsets: repeats change nothing)
        op_parts = [_spill(ops), _spill({c: v[:0] for c, v in ops.items()}), _spill(ops, rows=1)]
        launching, tids = nvtx_spilled._launching_calls(op_parts, _spill(calls), limit)
        got = nvtx_spilled._spans(launching, tids, r["start"], r["end"], r["tid"], limit)
        if overlap and got is None:
            continue
        assert got is not None, (seed, limit)
        for g, w in zip(got, want, strict=True):
            assert g.tolist() == w.tolist(), (seed, limit)
    if overlap:  # (the call inside another, with an operation: no slice)
        launching, tids = nvtx_spilled._launching_calls([_spill(ops)], _spill(calls), 8)
        assert nvtx_spilled._spans(launching, tids, r["start"], r["end"], r["tid"], 8) is None or not len(r["start"])
        for sp in (launching,):
            sp.close()


def _projection(p: object) -> tuple[object, ...]:
    """``nvtx_gpu_proj_sum``'s bytes (or its error) and the projection's rows."""
    try:
        res = nsys_reports.run_report("nvtx_gpu_proj_sum", p)  # type: ignore[arg-type]
        assert res.table is not None
        text = nsys_format.to_csv(res.table) + (nsys_format.to_table(res.table) if not res.empty else "")
        return text, nsys_report_nvtx.nvtx_projection(p).to_csv()  # type: ignore[arg-type]
    except NsightTKError as ex:
        return type(ex).__name__, str(ex)


@pytest.mark.parametrize("exact", [True, False])
def test_the_projection_prints_the_same_bytes_out_of_core(exact: bool, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary walked (ranges, operations and calls on disk) and the projection's rows (ranges
    in memory, operations and calls on disk): the same bytes as in memory on every test export.
    The synthetic export's ranges cross on a thread of few ranges: with nsys' exact parents there,
    the walk's levels and children on that thread are made exact afterwards; without them (the
    stack's, as on large threads) they are the walk's own."""
    from nsighttk.load import nvtx_nesting

    if not exact:
        monkeypatch.setattr(nvtx_nesting, "_EXACT_LIMIT", 0)
    nested: list[str] = []
    real_exact = nvtx_spilled._exact_nesting
    monkeypatch.setattr(nvtx_spilled, "_exact_nesting", lambda *a: nested.append("x") or real_exact(*a))
    taken: dict[str, list[bool]] = {"spans": [], "walk": []}
    for name, real in (("spans", nvtx_spilled.range_spans), ("walk", nvtx_spilled.projection_stats)):
        def counted(*a: object, _real: object = real, _name: str = name) -> object:
            got = _real(*a)  # type: ignore[operator]
            taken[_name].append(got is not None)
            return got

        monkeypatch.setattr(nvtx_spilled, real.__name__, counted)
    walked = []
    for path in _exports(tmp_path):
        expected = _projection(load_nsys_sqlite(path))
        assert not any(taken.values())  # (the default budget holds these exports: in memory)
        small = load_nsys_sqlite(path)
        small.budget = TINY
        assert _projection(small) == expected, path.name
        if expected[0].count("\n") > 2:  # type: ignore[union-attr]
            assert taken["spans"] and all(taken["spans"]), path.name
            walked.append(path.name) if taken["walk"] == [True] else None
        if nested:
            assert exact and path.name == "synthetic.sqlite"
            nested.clear()
            walked.append("exact")
        for v in taken.values():
            v.clear()
    assert sorted(walked) == sorted(["streams_demo.sqlite", "gpt2_train.sqlite", "huge.sqlite", "synthetic.sqlite"]
                                    + (["exact"] if exact else []))


@pytest.mark.parametrize("sql", UNUSUAL + [[s] for s in DAMAGED], ids=UNUSUAL_IDS + DAMAGED_IDS)
def test_unusual_and_damaged_exports_project_the_same(sql: list[str], tmp_path: Path) -> None:
    same_at_a_tiny_budget(mutate(tmp_path, *sql), _projection)


def same_at_a_tiny_budget(path: Path, render: Callable[[object], object]) -> None:
    """``render`` of ``path``'s profile at a budget of 8 rows a slice is that at the default."""
    small = load_nsys_sqlite(path)
    small.budget = TINY
    assert render(small) == render(load_nsys_sqlite(path))


def test_an_interrupted_projection_leaves_no_temporary_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))

    def stop(*a: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(nvtx_spilled, "launch_rows", stop)
    interrupted_leaves_nothing("nvtx_gpu_proj_sum", temp)


def interrupted_leaves_nothing(report: str, temp: Path) -> None:
    """``report`` at a tiny budget, interrupted (by a patched step), leaves nothing in ``temp``."""
    p = load_nsys_sqlite(capture("streams_demo"))
    p.budget = TINY
    with pytest.raises(KeyboardInterrupt):
        nsys_reports.run_report(report, p)
    del p
    gc.collect()
    assert not temporary_files(temp), report


_TID = (1 << 24) + 7  # (thread 7 of process 1)


def _two_launches(starts: list[int], ends: list[int]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Two runtime calls on :data:`_TID`, each launching one operation ([10, 11], then [20, 25])."""
    calls = {"correlation_id": np.array([1, 2]), "global_tid": np.array([_TID, _TID]),
             "start_ns": np.array(starts), "end_ns": np.array(ends)}
    ops = {"correlation_id": np.array([1, 2]), "global_pid": np.array([1 << 24] * 2),
           "start_ns": np.array([10, 20]), "end_ns": np.array([11, 25])}
    return calls, ops


def test_calls_ending_together_in_two_blocks() -> None:
    """Calls of one block each ([3, 5], [5, 5]) end at the same time: a range ending then holds
    both, wherever the blocks part them."""
    calls, ops = _two_launches([3, 5], [5, 5])
    r = {"start": np.array([0, 4, 3]), "end": np.array([5, 5, 4]), "tid": np.array([_TID] * 3)}
    launching, tids = nvtx_spilled._launching_calls([_spill(ops)], _spill(calls), 1)
    got = nvtx_spilled._spans(launching, tids, r["start"], r["end"], r["tid"], 1)
    assert got is not None
    assert [g.tolist() for g in got] == [[2, 1, 0], [10, 20, 0], [25, 25, 0]]
    assert [w.tolist() for w in _reference(r, calls, ops)] == [g.tolist() for g in got]


def test_calls_starting_together_are_ordered_by_their_ends() -> None:
    """A call of no length at another's start ([5, 7], then [5, 5]): not an overlap that stops the
    slices, and a range [5, 5] holds the short one only."""
    calls, ops = _two_launches([5, 5], [7, 5])
    r = {"start": np.array([5, 5, 4]), "end": np.array([5, 7, 6]), "tid": np.array([_TID] * 3)}
    for limit in (1, 8):
        launching, tids = nvtx_spilled._launching_calls([_spill(ops)], _spill(calls), limit)
        got = nvtx_spilled._spans(launching, tids, r["start"], r["end"], r["tid"], limit)
        assert got is not None
        assert [g.tolist() for g in got] == [[1, 2, 1], [20, 10, 20], [25, 25, 25]]
        assert [w.tolist() for w in _reference(r, calls, ops)] == [g.tolist() for g in got]


# ------------------------------------------------------------- the summary walked out of core


def _walk_reference(r, calls, ops):  # type: ignore[no-untyped-def]
    """The projection's rows read plainly: ranges that ended on their own thread, their launching
    calls held whole (:func:`_reference`), their level and parent by nsys' nesting
    (:func:`parents_of`), their children that hold calls."""
    closed = np.flatnonzero(r["egtid"] == INT_NULL)
    c = {k: v[closed] for k, v in r.items()}
    count, first, last = _reference({"start": c["start"], "end": c["end"], "tid": c["tid"]}, calls, ops)
    parent = np.asarray(parents_of(c["start"], c["end"], c["tid"], c["rid"]))
    level = depth_from_parents(parent)
    children = np.bincount(parent[(count > 0) & (parent >= 0)], minlength=len(closed))
    held = np.flatnonzero(count > 0)
    return sorted(zip(c["key"][held].tolist(), (last - first)[held].tolist(), (c["end"] - c["start"])[held].tolist(),
                      count[held].tolist(), level[held].tolist(), children[held].tolist(), strict=True))


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize(("sweep", "exact"), [(64, False), (0, False), (1, False), (64, True), (1, True)])
def test_the_walk_follows_the_rule(seed: int, sweep: int, exact: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges nested and crossing, some ended on another thread, calls launching work: the walk's
    rows (label, projected time, duration, calls, level, children) are the rule's, for blocks of
    a few ranges and calls, letting go the ranges that ended before a
    range starts at every push (sweep 0) or as the live ones grow; with the stack's parents
    everywhere (as nsys keeps them on large threads) or nsys' exact ones on these small threads."""
    from nsighttk.load import nvtx_nesting

    monkeypatch.setattr(nvtx_walk, "SWEEP", sweep)
    if not exact:
        monkeypatch.setattr(nvtx_nesting, "_EXACT_LIMIT", 0)  # (the stack's parents everywhere)
    rng = np.random.default_rng(100 + seed)
    r, calls, ops = _inputs(rng, overlap=seed % 3 == 0)
    n = len(r["start"])
    r["start"] = np.sort(r["start"]) if seed % 2 else r["start"]
    r |= {"egtid": np.where(rng.random(n) < 0.1, 5, INT_NULL), "rid": rng.permutation(n).astype(np.int64),
          "key": rng.integers(0, 4, size=n)}
    want = _walk_reference(r, calls, ops)
    names = np.array(["a", "b", None, "d"], dtype=object)
    nvtx = {"start_ns": r["start"], "end_ns": r["end"], "global_tid": r["tid"], "end_global_tid": r["egtid"],
            "range_id": r["rid"], "name": names[r["key"]], "domain": np.full(n, None, dtype=object),
            "style": np.full(n, None, dtype=object)}
    for limit in (1, 3, 1 << 20):
        launching, tids = nvtx_spilled._launching_calls([_spill(ops)], _spill(calls), limit)
        sp = _spill(nvtx)
        rows = nvtx_spilled._walked(sp, launching, tids, None, limit)
        assert rows is not None, (seed, limit)
        got = rows.read()
        index = {v: k for k, v in enumerate(names.tolist())}  # (the spill's codes of the names, back to ours)
        ours = [index[v] for v in sp.values("name")[got["key"]].tolist()]
        got_rows = sorted(zip(ours, *(got[c].tolist() for c in nvtx_spilled._ROWS[1:6]), strict=True))
        assert got_rows == want, (seed, limit)
        for s in (launching, sp, rows):
            s.close()


def test_a_run_of_reports_writes_each_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables the summaries spilled (with the projection's columns, announced) stay for it."""
    p = load_nsys_sqlite(capture("streams_demo"))
    p.budget = TINY
    scans = counted_scans(p, monkeypatch)
    names = ["cuda_api_sum", "cuda_gpu_kern_sum", "nvtx_sum", "nvtx_gpu_proj_sum"]
    nsys_reports.prefetch(p, names)
    for i, name in enumerate(names):
        nsys_reports.run_report(name, p)
        nsys_reports.release_memos(p, names[i + 1:])
    assert sorted(scans) == ["api", "kernels", "memcpy", "memset", "nvtx"]


def test_ranges_spilled_without_the_depth_that_needs_every_range(monkeypatch: pytest.MonkeyPatch) -> None:
    """``analyze`` announces the ranges' depth; written to disk for the projection, the ranges are
    still read a chunk at a time (the depth, which nests every range, is not fetched along: at 43M
    ranges that read took 7 GB)."""
    p = load_nsys_sqlite(capture("streams_demo"))
    p.budget = TINY
    p.want("nvtx", ["depth", "range_id", "start_ns"])
    asked: list[list[str]] = []
    real = p.source.parts  # type: ignore[union-attr]
    monkeypatch.setattr(p.source, "parts", lambda t, c: asked.append(list(c)) or real(t, c))
    sp = p.spilled("nvtx", ["start_ns", "end_ns"])
    assert asked and not any("depth" in c for c in asked)
    assert "range_id" in sp.columns and "depth" not in sp.columns


def test_tables_held_whole_do_not_keep_the_others_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """``analyze`` holds the copies and memsets whole (their bandwidth); the GPU summary and the
    projection, over them and the kernels, calls and ranges, still go out of core, the same bytes."""
    taken: list[bool] = []
    real = nvtx_spilled.projection_stats
    monkeypatch.setattr(nvtx_spilled, "projection_stats", lambda *a: taken.append(True) or real(*a))
    path = capture("streams_demo")
    expected = [_projection(load_nsys_sqlite(path)),
                nsys_format.to_csv(nsys_reports.run_report("cuda_gpu_sum", load_nsys_sqlite(path)).table)]
    p = load_nsys_sqlite(path)
    p.budget = TINY
    assert len(p.memcpy) and len(p.memset) and p.loaded("memcpy") and p.loaded("memset")
    assert [_projection(p), nsys_format.to_csv(nsys_reports.run_report("cuda_gpu_sum", p).table)] == expected
    assert taken == [True]


def test_open_ranges_end_where_memory_ends_them(tmp_path: Path) -> None:
    """Every range open (no NVTX bound in the export's metadata) and the latest start on a thread
    that launched nothing: open ranges end at the latest start of every closed range, as in memory
    (a review's finding: the walk took only the launching threads')."""
    path = mutate(tmp_path, 'UPDATE NVTX_EVENTS SET "end" = NULL',
                  'INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, domainId) '
                  "VALUES (9900000000, NULL, 59, 'other', 281491904922609 + 5, 0)")
    small = load_nsys_sqlite(path)
    small.budget = TINY
    assert small.meta.get("nvtx_max_ts_ranges") is None
    assert _projection(small) == _projection(load_nsys_sqlite(path))


def test_ranges_without_calls_are_not_held() -> None:
    """A long stretch of ranges between calls (set-up, CPU-only phases): the walk lets them go as
    ranges start after them, so what it holds is a block, not the stretch (a review's finding:
    800k such ranges held 800k rows)."""
    from nsighttk.load import nvtx_walk

    tid = (1 << 24) + 7
    n = 5000
    calls = {"correlation_id": np.array([1]), "global_tid": np.array([tid]), "start_ns": np.array([10 * n + 5]),
             "end_ns": np.array([10 * n + 6])}
    ops = {"correlation_id": np.array([1]), "global_pid": np.array([1 << 24]), "start_ns": np.array([7]),
           "end_ns": np.array([9])}
    start = np.arange(n, dtype=np.int64) * 10
    nvtx = {"start_ns": np.r_[start, 0], "end_ns": np.r_[start + 5, 10 * n + 7], "global_tid": np.full(n + 1, tid),
            "end_global_tid": np.full(n + 1, INT_NULL), "range_id": np.arange(n + 1),
            "name": np.full(n + 1, "r", dtype=object), "domain": np.full(n + 1, None, dtype=object),
            "style": np.full(n + 1, None, dtype=object)}
    most: list[int] = []
    real = nvtx_walk.projection_walk

    def watched(*a: object) -> object:
        got = real(*a)  # type: ignore[arg-type]
        most.append(got[4])  # (the live ranges it returns with)
        return got

    import unittest.mock

    with unittest.mock.patch.object(nvtx_walk, "projection_walk", watched):
        launching, tids = nvtx_spilled._launching_calls([_spill(ops)], _spill(calls), 64)
        sp = _spill(nvtx, rows=256)
        rows = nvtx_spilled._walked(sp, launching, tids, None, 64)
    assert rows is not None and rows.read()["count"].tolist() == [1]  # (the long range holds the call)
    assert len(most) > 10 and max(most) < 300
    for s in (launching, sp, rows):
        s.close()


def test_a_call_of_no_length_where_one_range_ends_and_the_next_begins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges [0, 10] and [10, 20], a call [10, 10]: both hold it, though the second starts where
    the first ends (the first is not let go when the second starts: a call may still start then)."""
    monkeypatch.setattr(nvtx_walk, "SWEEP", 0)
    tid = (1 << 24) + 7
    calls = {"correlation_id": np.array([1]), "global_tid": np.array([tid]), "start_ns": np.array([10]),
             "end_ns": np.array([10])}
    ops = {"correlation_id": np.array([1]), "global_pid": np.array([1 << 24]), "start_ns": np.array([30]),
           "end_ns": np.array([35])}
    nvtx = {"start_ns": np.array([0, 10]), "end_ns": np.array([10, 20]), "global_tid": np.array([tid, tid]),
            "end_global_tid": np.full(2, INT_NULL), "range_id": np.array([1, 2]),
            "name": np.array(["a", "b"], dtype=object), "domain": np.full(2, None, dtype=object),
            "style": np.full(2, None, dtype=object)}
    launching, tids = nvtx_spilled._launching_calls([_spill(ops)], _spill(calls), 8)
    sp = _spill(nvtx)
    rows = nvtx_spilled._walked(sp, launching, tids, None, 8)
    assert rows is not None and sorted(rows.read()["ns"].tolist()) == [10, 10]  # (both ranges, each 10 long)
    for s in (launching, sp, rows):
        s.close()
