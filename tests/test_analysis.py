"""Analysis edge cases on synthetic frames: rounding, statistics, NVTX nesting and projection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsighttk.analysis import nsys_reports as r
from nsighttk.analysis import nvtx
from nsighttk.analysis.memory import memory_bandwidth
from nsighttk.profile import Coded, Profile, conform, widen


@pytest.mark.parametrize(("x", "want"), [(1248.25, 1248.3), (0.25, 0.3), (-0.25, -0.3), (2.675, 2.7), (0.05, 0.1),
                                         (10.04, 10.0), (1e15 + 0.25, 1e15 + 0.3)])
def test_sql_round_is_half_away_from_zero(x: float, want: float) -> None:
    assert r.sql_round(np.array([x]))[0] == want


def test_api_version_suffix_rule() -> None:
    assert r.api_display_name("cudaMemcpy_v3020") == "cudaMemcpy"
    assert r.api_display_name("cuGetProcAddress_v2") == "cuGetProcAddress_v2"
    assert r.api_display_name("cudaLaunchKernelExC_v11060") == "cudaLaunchKernelExC_v11060"
    assert r.api_display_name("abc") == "abc"


def _kernels(durations: list[int], names: list[str]) -> pd.DataFrame:
    n = len(durations)
    start = np.arange(n, dtype="int64") * 10_000
    return conform("kernels", pd.DataFrame({
        "start_ns": start, "end_ns": start + np.array(durations), "duration_ns": np.array(durations, dtype="int64"),
        "name": names, "name_id": [hash(x) % 1000 for x in names], "grid_x": 1, "grid_y": 1, "grid_z": 1,
        "block_x": 256, "block_y": 1, "block_z": 1, "device_id": 0, "stream_id": 7, "correlation_id": range(n),
    }))


def test_kernel_summary_statistics_and_ties() -> None:
    """nsys' statistics per name, and its order: total time descending, then fewer instances first,
    then the name.  b, c and d tie on total time (600 ns) with 3, 1 and 2 instances; a and e tie on
    total time and instances (50 ns, 1)."""
    names = ["b", "b", "b", "e", "c", "d", "a", "d"]
    p = Profile(kernels=_kernels([100, 300, 200, 50, 600, 250, 50, 350], names))
    df = r.cuda_gpu_kern_sum(p).frame
    assert list(df["Name"]) == ["c", "d", "b", "a", "e"]
    stats = ["Instances", "Total Time (ns)", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)"]
    by_name = {row["Name"]: tuple(row[c] for c in stats) for _, row in df.iterrows()}
    assert by_name == {"c": (1, 600, 600.0, 600.0, 600, 600), "d": (2, 600, 300.0, 300.0, 250, 350),
                       "b": (3, 600, 200.0, 200.0, 100, 300), "a": (1, 50, 50.0, 50.0, 50, 50),
                       "e": (1, 50, 50.0, 50.0, 50, 50)}
    # the sample standard deviation (n - 1), 0 for a single instance
    assert df["StdDev (ns)"].tolist() == [0.0, 70.7, 100.0, 0.0, 0.0]
    assert df["Time (%)"].tolist() == [31.6, 31.6, 31.6, 2.6, 2.6]  # of 1,900 ns


def test_tie_break_instances_then_name() -> None:
    p = Profile(kernels=_kernels([10, 10, 20, 20], ["z", "z", "y", "x"]))
    assert list(r.cuda_gpu_kern_sum(p).frame["Name"]) == ["x", "y", "z"]


def _ranges(rows: list[tuple[int, int | None, str, int]]) -> pd.DataFrame:
    return conform("nvtx", pd.DataFrame({
        "range_id": range(1, len(rows) + 1), "start_ns": [a for a, _, _, _ in rows],
        "end_ns": pd.array([b for _, b, _, _ in rows], dtype="Int64"), "name": [n for _, _, n, _ in rows],
        "domain": "", "style": "PushPop", "depth": 0, "global_tid": [t for _, _, _, t in rows],
    }))


def test_nesting_depth_per_thread_and_open_ranges() -> None:
    df = _ranges([(0, 100, "outer", 1), (10, 50, "mid", 1), (20, 30, "inner", 1), (60, None, "open", 1),
                  (5, 95, "other-thread", 2)])
    parents = nvtx.range_parents(df, max_ts=100)
    assert list(parents) == [-1, 0, 1, 0, -1]
    assert list(nvtx.depth_from_parents(parents)) == [0, 1, 2, 1, 0]


@pytest.mark.parametrize(("c_end", "parents"), [(60, [-1, 0, 0, 2]), (95, [-1, 0, 0, 1])])
def test_crossing_start_end_ranges_use_the_tightest_parent(c_end: int, parents: list[int]) -> None:
    """A(0,100) B(10,50) C(40,c_end): C starts inside B and ends after it (crossing), so A holds
    both; D(45,48) lies inside A, B and C.  D's parent is the tightest of them, tightness being
    (D.start - P.start) + (P.end - D.end): B 37, C 17 when C ends at 60 (C wins), C 52 when C ends
    at 95 (B wins, although C started later)."""
    df = _ranges([(0, 100, "A", 1), (10, 50, "B", 1), (40, c_end, "C", 1), (45, 48, "D", 1)])
    assert list(nvtx.range_parents(df, max_ts=100)) == parents


def test_memory_bandwidth_per_direction() -> None:
    mc = conform("memcpy", pd.DataFrame({"start_ns": [0, 100], "end_ns": [50, 150], "duration_ns": [50, 50],
                                         "bytes": [1000, 3000], "kind": ["DtoD", "DtoD"],
                                         "label": ["Device-to-Device"] * 2}))
    gpus = conform("gpus", pd.DataFrame({"device_id": [0], "name": ["X"],
                                         "memory_bandwidth_bytes_per_s": [160_000_000_000]}))
    m = memory_bandwidth(Profile(memcpy=mc, gpus=gpus)).iloc[0]
    assert m["gbps"] == 40.0 and m["best_gbps"] == 60.0
    assert m["dram_pct_of_peak"] == pytest.approx(50.0)  # 2 x 40 GB/s of 160 GB/s


def test_autograd_nvtx_ranges_grouped_by_op() -> None:
    """nsys --pytorch=autograd-nvtx names ranges 'aten::mm, seq = 0, op_id = 13' (seen on an H100)."""
    import pandas as pd

    from nsighttk.analysis.nvtx import autograd_op_name, autograd_ops

    assert autograd_op_name("aten::mm, seq = 0, op_id = 13") == "aten::mm"
    assert autograd_op_name("aten::randn, op_id = 1") == "aten::randn"
    assert autograd_op_name("aten::add, seq = 4, sizes = [[8], [8]], op_id = 9") == "aten::add"
    assert autograd_op_name("step 0") == "step 0"
    proj = pd.DataFrame({"Range": [":aten::mm, seq = 0, op_id = 13", ":aten::mm, seq = 1, op_id = 40", ":step 0",
                                   ":aten::randn, op_id = 1"],
                         "Range Instances": [1, 1, 1, 1], "Total Range Time (ns)": [100, 50, 900, 70],
                         "Total Proj Time (ns)": [10, 20, 500, 0], "Total GPU Ops": [2, 2, 9, 0]})
    ops = autograd_ops(proj)
    assert ops.to_dict("records") == [
        {"op": "aten::mm", "calls": 2, "cpu_total_ns": 150, "gpu_proj_total_ns": 30, "gpu_ops": 4},
        {"op": "aten::randn", "calls": 1, "cpu_total_ns": 70, "gpu_proj_total_ns": 0, "gpu_ops": 0}]
    assert autograd_ops(proj[proj["Range"] == ":step 0"]).empty


def test_autograd_ops_summed_a_slice_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Summed a few rows at a time, the ops are those summed at once: the same totals, in the same
    order (ties by first appearance), ops spread over several slices and slices without any."""
    import pandas as pd

    from nsighttk.analysis.nvtx import autograd_ops

    rng = np.random.default_rng(3)
    ops = ["aten::mm", "aten::add", "aten::relu", "aten::cat"]
    names = [f":{ops[i]}, seq = {k}" if i < 4 else f":step {k}" for k, i in enumerate(rng.integers(0, 6, 200))]
    proj = pd.DataFrame({"Range": names, "Range Instances": rng.integers(1, 3, 200),
                         "Total Range Time (ns)": rng.integers(0, 10, 200) * 1000,
                         "Total Proj Time (ns)": rng.integers(0, 3, 200) * 500,
                         "Total GPU Ops": rng.integers(0, 9, 200)})
    proj.loc[:40, "Range"] = ":step 0"  # (the first slices: no op at all)
    tie = pd.DataFrame({"Range": [":aten::zeta, seq = 1", ":aten::alpha, seq = 2", ":aten::zeta, seq = 3"],
                        "Range Instances": 1, "Total Range Time (ns)": [5, 10, 5], "Total Proj Time (ns)": [1, 2, 1],
                        "Total GPU Ops": 1})
    proj = pd.concat([proj.iloc[:100], tie, proj.iloc[100:]], ignore_index=True)
    whole = autograd_ops(proj)
    assert len(whole) == 6
    assert whole["op"].tolist()[-2:] == ["aten::zeta", "aten::alpha"]  # (a tie: first seen first)
    for rows in (7, 64, 1):
        monkeypatch.setattr("nsighttk.analysis.nvtx._OPS_ROWS", rows)
        pd.testing.assert_frame_equal(autograd_ops(proj), whole)


def test_gpu_ops_of_a_range_count_distinct_launches() -> None:
    """nvtx_gpu_proj_sum's GPU ops per range are distinct correlation ids: a graph launch (one call,
    three kernels, one id) counts once, as nsys counts it; ids used once take the short path."""
    from nsighttk.analysis.nsys_reports import nvtx_gpu_proj_sum

    gtid = (7 << 24) + 1

    def profile(kernel_ids: list[int]) -> Profile:
        nvtx = conform("nvtx", pd.DataFrame({
            "range_id": [1, 2], "start_ns": [0, 1000], "end_ns": [500, 1500], "duration_ns": [500, 500],
            "name": ["graph", "plain"], "domain": ["", ""], "style": ["PushPop", "PushPop"], "depth": [0, 0],
            "global_tid": [gtid, gtid], "pid": [7, 7], "tid": [1, 1]}))
        api = conform("api", pd.DataFrame({
            "start_ns": [10, 20, 1010, 1020], "end_ns": [15, 25, 1015, 1025], "duration_ns": [5] * 4,
            "name": ["cudaGraphLaunch", "cudaLaunchKernel", "cudaLaunchKernel", "cudaLaunchKernel"],
            "correlation_id": [100, 101, 200, 201], "global_tid": [gtid] * 4, "pid": [7] * 4, "tid": [1] * 4}))
        starts = [100 + 10 * i for i in range(len(kernel_ids))]
        kernels = conform("kernels", pd.DataFrame({
            "start_ns": starts, "end_ns": [s + 5 for s in starts], "duration_ns": [5] * len(starts),
            "name": ["k"] * len(starts), "short_name": ["k"] * len(starts), "name_id": [1] * len(starts),
            "correlation_id": kernel_ids, "global_pid": [7 << 24] * len(starts), "pid": [7] * len(starts)}))
        return Profile(nvtx=nvtx, api=api, kernels=kernels)

    shared = nvtx_gpu_proj_sum(profile([100, 100, 100, 101, 200, 201])).frame.set_index("Range")
    assert shared.loc[":graph", "Total GPU Ops"] == 2 and shared.loc[":plain", "Total GPU Ops"] == 2
    once = nvtx_gpu_proj_sum(profile([100, 101, 200, 201])).frame.set_index("Range")
    assert once.loc[":graph", "Total GPU Ops"] == 2 and once.loc[":plain", "Total GPU Ops"] == 2
    assert shared.loc[":graph", "Total Proj Time (ns)"] == 135 - 100  # first start to last end


def _pair_spans(r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray, c_start: np.ndarray, c_end: np.ndarray,
                c_tid: np.ndarray, o_start: np.ndarray, o_end: np.ndarray) -> tuple[np.ndarray, ...]:
    """Count, first start and last end per range from the (range, operation) pairs, one range at a time."""
    rp, cp = nvtx.enclosing_ranges(r_start, r_end, r_tid, c_start, c_end, c_tid)
    count = np.bincount(rp, minlength=len(r_start))
    first, last = np.zeros(len(r_start), np.int64), np.zeros(len(r_start), np.int64)
    for i in range(len(r_start)):
        sel = cp[rp == i]
        if len(sel):
            first[i], last[i] = o_start[sel].min(), o_end[sel].max()
    return count, first, last


@pytest.mark.parametrize("chunk", [1 << 20, 2])
def test_range_spans_from_call_slices_equal_the_pairs(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """The projection reads each range's operations off a slice of the calls in (thread, start)
    order: the same counts, first starts and last ends as the (range, operation) pairs, on random
    threads, shared calls (a call launching several operations), calls with no thread, ranges
    with no thread or no call, equal starts; and no answer (None) where calls on a thread overlap.
    The keys are gathered a chunk of calls at a time: chunks of 2 answer the same."""
    from nsighttk.profile import INT_NULL

    monkeypatch.setattr(nvtx, "_CHUNK", chunk)

    rng = np.random.default_rng(15)
    answered = declined = 0
    for _ in range(400):
        overlap = rng.random() < 0.25
        cs: list[int] = []
        ce: list[int] = []
        ct: list[int] = []
        threads = int(rng.integers(1, 4))
        for t in range(threads):
            st = np.sort(rng.integers(0, 1000, int(rng.integers(0, 30))))
            gap = np.diff(np.r_[st, 1000])
            en = st + (rng.integers(0, 60, len(st)) if overlap else (rng.random(len(st)) * gap).astype(np.int64))
            cs += st.tolist()
            ce += en.tolist()
            ct += [100 + t] * len(st)
        idx = rng.permutation(np.repeat(np.arange(len(cs)), rng.integers(0, 3, len(cs))))
        a_start, a_end, a_tid = np.array(cs, np.int64), np.array(ce, np.int64), np.array(ct, np.int64)
        if len(cs) and rng.random() < 0.3:  # a call with no thread
            a_tid[rng.integers(0, len(cs))] = INT_NULL
        call = idx.copy()
        if len(idx) and rng.random() < 0.3:  # an operation no call launched
            call[rng.integers(0, len(idx))] = -1
        c_start, c_end, c_tid = a_start[idx], a_end[idx], np.where(call < 0, INT_NULL, a_tid[idx])
        o_start = rng.integers(0, 2000, len(idx)).astype(np.int64)
        o_end = o_start + rng.integers(0, 100, len(idx))
        n = int(rng.integers(0, 20))
        r_start = rng.integers(-50, 1000, n).astype(np.int64)
        r_end = r_start + rng.integers(0, 600, n)
        r_tid = rng.integers(99, 101 + threads, n).astype(np.int64)
        if n and rng.random() < 0.2:
            r_tid[0] = INT_NULL
        got = nvtx.range_op_spans(r_start, r_end, r_tid, a_start, a_end, a_tid, call, o_start, o_end)
        _same_slices_from_codes_and_durations(r_start, r_end, r_tid, a_start, a_end, a_tid, call)
        if got is None:
            declined += 1
            known = c_tid != INT_NULL
            order = np.lexsort((c_start[known], c_tid[known]))
            tid, ends = c_tid[known][order], c_end[known][order]
            assert (ends[1:][tid[1:] == tid[:-1]] < ends[:-1][tid[1:] == tid[:-1]]).any()  # only where calls overlap
            continue
        answered += 1
        want = _pair_spans(r_start, r_end, r_tid, c_start, c_end, c_tid, o_start, o_end)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    assert answered > 250 and declined > 20


def _coded(arr: np.ndarray) -> Coded:
    values, codes = np.unique(arr, return_inverse=True)
    return Coded(codes.ravel().astype(np.int8), values)


def _same_slices_from_codes_and_durations(r_start: np.ndarray, r_end: np.ndarray, r_tid: np.ndarray,
                                          a_start: np.ndarray, a_end: np.ndarray, a_tid: np.ndarray,
                                          call: np.ndarray) -> None:
    """The calls' and the ranges' threads as codes and the calls' ends as durations: the same slices."""
    plain = nvtx.range_op_slices(r_start, r_end, r_tid, a_start, a_end, a_tid, call)
    coded = nvtx.range_op_slices(r_start, r_end, _coded(r_tid) if len(r_tid) else r_tid, a_start, None,
                                 _coded(a_tid), call, a_dur=(a_end - a_start).astype(np.int32))
    assert (plain is None) == (coded is None)
    if plain is not None and coded is not None:
        for f in ("count", "ops", "seg", "bounds"):
            np.testing.assert_array_equal(getattr(plain, f), getattr(coded, f))


def test_process_ids_put_together_coded_or_not_read_the_same() -> None:
    from nsighttk.profile import INT_NULL, compact

    rng = np.random.default_rng(4)
    for case in range(50):
        parts = [rng.choice([5, 9, INT_NULL] if case % 2 else [5, INT_NULL], int(rng.integers(0, 30))).astype(np.int64)
                 for _ in range(3)]
        parts = [np.where(a == INT_NULL, a, a << 24) for a in parts]
        given = [_coded(a) if i == 0 and len(a) else compact(a) if i == 1 else a for i, a in enumerate(parts)]
        got = nvtx.concat_ids(given)
        got = got.decode() if isinstance(got, Coded) else got
        np.testing.assert_array_equal(widen(got), np.concatenate(parts))


def test_projection_of_overlapping_calls_counts_the_pairs() -> None:
    """Calls that overlap on a thread (a call inside another) cannot be sliced: the projection
    falls back to the pairs and still counts each contained launch once."""
    from nsighttk.analysis.nsys_reports import nvtx_gpu_proj_sum

    gtid = (7 << 24) + 1
    ranges = conform("nvtx", pd.DataFrame({
        "range_id": [1, 2], "start_ns": [0, 25], "end_ns": [100, 60], "duration_ns": [100, 35],
        "name": ["outer", "inner"], "domain": ["", ""], "style": ["PushPop", "PushPop"], "depth": [0, 1],
        "global_tid": [gtid, gtid], "pid": [7, 7], "tid": [1, 1]}))
    api = conform("api", pd.DataFrame({  # the first call holds the second; the third ends after "inner"
        "start_ns": [10, 30, 40], "end_ns": [90, 50, 70], "duration_ns": [80, 20, 30],
        "name": ["cudaLaunchKernel"] * 3, "correlation_id": [1, 2, 3], "global_tid": [gtid] * 3,
        "pid": [7] * 3, "tid": [1] * 3}))
    kernels = conform("kernels", pd.DataFrame({
        "start_ns": [200, 300, 400], "end_ns": [210, 320, 405], "duration_ns": [10, 20, 5], "name": ["k"] * 3,
        "short_name": ["k"] * 3, "name_id": [1] * 3, "correlation_id": [1, 2, 3], "global_pid": [7 << 24] * 3,
        "pid": [7] * 3}))
    assert nvtx.range_op_spans(np.array([0]), np.array([100]), np.array([gtid]), api["start_ns"].to_numpy(),
                               api["end_ns"].to_numpy(), api["global_tid"].to_numpy(), np.arange(3),
                               kernels["start_ns"].to_numpy(), kernels["end_ns"].to_numpy()) is None
    got = nvtx_gpu_proj_sum(Profile(nvtx=ranges, api=api, kernels=kernels)).frame.set_index("Range")
    assert got.loc[":outer", "Total GPU Ops"] == 3 and got.loc[":outer", "Total Proj Time (ns)"] == 405 - 200
    assert got.loc[":inner", "Total GPU Ops"] == 1 and got.loc[":inner", "Total Proj Time (ns)"] == 320 - 300


@pytest.mark.parametrize("chunk", [5, 1 << 20])
def test_launch_rows_find_the_first_call_of_the_same_id_and_process(monkeypatch: pytest.MonkeyPatch,
                                                                     chunk: int) -> None:
    """Each GPU operation's launching call: same correlation id and process (bits above 24 of the
    call's thread and the op's process id), the first such call; -1 where none; the same answer
    from narrow columns (missing = the type's minimum) as from int64 ones (missing = INT_NULL), in
    one process and several, with ids in call order or not and calls sharing an id; looked up all
    at once or a few operations at a time."""
    from nsighttk.profile import INT_NULL, compact

    monkeypatch.setattr(nvtx, "_CHUNK", chunk)
    rng = np.random.default_rng(7)
    for case in range(300):
        procs = [5] if case % 2 else [5, 9, 1 << 20]
        m, n = int(rng.integers(0, 40)), int(rng.integers(0, 40))
        a_corr = rng.integers(0, 30, m).astype(np.int64)
        if case % 3 == 0:
            a_corr.sort()
        a_gtid = (rng.choice(procs, m).astype(np.int64) << 24) + rng.integers(0, 3, m)
        o_corr = rng.integers(0, 35, n).astype(np.int64)
        o_gpid = rng.choice(procs, n).astype(np.int64) << 24
        for arr in (a_corr, a_gtid, o_corr, o_gpid):
            if len(arr) and rng.random() < 0.3:
                arr[rng.integers(0, len(arr))] = INT_NULL
        want = np.full(n, -1)
        for i in range(n):
            if o_corr[i] == INT_NULL or o_gpid[i] == INT_NULL:
                continue
            same = np.flatnonzero((a_corr == o_corr[i]) & (a_gtid != INT_NULL) & (a_gtid >> 24 == o_gpid[i] >> 24))
            if len(same):
                want[i] = same[0]
        np.testing.assert_array_equal(nvtx.launch_rows(o_corr, o_gpid, a_corr, a_gtid), want)
        narrow = nvtx.launch_rows(compact(o_corr), compact(o_gpid), compact(a_corr), compact(a_gtid))
        np.testing.assert_array_equal(narrow, want)
        assert narrow.dtype == np.int32
        if n and m:  # process and thread ids as codes (as a Profile keeps few-valued columns)
            coded = nvtx.launch_rows(compact(o_corr), _coded(o_gpid), a_corr, _coded(a_gtid))
            np.testing.assert_array_equal(coded, want)


def test_thread_ranks_of_few_and_many_threads_equal_a_sort() -> None:
    rng = np.random.default_rng(3)
    for distinct in (1, 2, 7, 64, 65, 300):
        values = rng.choice(rng.integers(-(2**62), 2**62, distinct), 5000)
        uniq, rank = nvtx._ranks(values, np.int32)
        want_uniq, want_rank = np.unique(values, return_inverse=True)
        np.testing.assert_array_equal(uniq, want_uniq)
        np.testing.assert_array_equal(rank, want_rank.ravel())
        assert rank.dtype == np.int32


def test_launch_rows_keep_processes_apart_in_narrow_columns() -> None:
    """Thread and process ids small enough to be kept as int32, correlation ids past 2^24 and two
    processes equal in their low bits: the (process, id) key must not wrap (it joined both ops to
    the first process's call)."""
    p, q = 36, 100
    corr_a = np.array([2**25 + 1, 2**25 + 1], np.int32)
    gtid_a = np.array([(p << 24) | 7, (q << 24) | 9], np.int32)
    corr_o = np.array([2**25 + 1, 2**25 + 1], np.int32)
    gpid_o = np.array([q << 24, p << 24], np.int32)
    np.testing.assert_array_equal(nvtx.launch_rows(corr_o, gpid_o, corr_a, gtid_a), [1, 0])


def test_op_spans_take_narrow_op_times() -> None:
    gtid = np.array([7, 7])
    got = nvtx.range_op_spans(np.array([0]), np.array([30]), np.array([7]), np.array([1, 10]), np.array([5, 20]),
                              gtid, np.array([0, 1, -1], np.int32), np.array([100, 200, 300], np.int32),
                              np.array([150, 250, 350], np.int32))
    assert got is not None
    assert [a.tolist() for a in got] == [[2], [100], [250]]


@pytest.mark.parametrize("chunk", [1 << 20, 3])
def test_slices_reduce_the_tables_parts_as_their_concatenation(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """The operations' times are given table by table (an empty table between, narrow columns, an
    end as start plus duration): the same minima and maxima as from the columns put together."""
    from nsighttk.profile import compact

    monkeypatch.setattr(nvtx, "_CHUNK", chunk)
    rng = np.random.default_rng(21)
    for _ in range(40):
        lens = [int(rng.integers(1, 30)), 0, int(rng.integers(0, 10))]
        starts = [rng.integers(0, 10**12, k).astype(np.int64) for k in lens]
        durs = [rng.integers(0, 1000, k).astype(np.int64) for k in lens]
        whole_start = np.concatenate(starts)
        whole_end = whole_start + np.concatenate(durs)
        n_ops = len(whole_start)
        ops = rng.permutation(n_ops).astype(np.int32)
        n = int(rng.integers(1, 8))
        seg = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False)).astype(np.int32)
        lo = np.sort(rng.integers(0, n_ops, len(seg)))
        hi = np.minimum(lo + rng.integers(1, 5, len(seg)), n_ops)
        bounds = np.empty(2 * len(seg), dtype=np.int32)
        bounds[0::2], bounds[1::2] = lo, hi
        sl = nvtx.OpSlices(n, np.zeros(n, dtype=np.int64), ops, seg, bounds)
        parts_start = [compact(s) for s in starts]
        parts_end = [(s, compact(d)) for s, d in zip(starts, durs, strict=True)]
        np.testing.assert_array_equal(sl.reduce(parts_start, np.minimum), sl.reduce(whole_start, np.minimum))
        np.testing.assert_array_equal(sl.reduce(parts_end, np.maximum), sl.reduce(whole_end, np.maximum))


def test_nesting_depth_by_pointer_jumping_equals_walking_up_the_parents() -> None:
    rng = np.random.default_rng(9)
    for _ in range(200):
        m = int(rng.integers(0, 300))
        parent = np.full(m, -1)
        for i in range(1, m):
            if rng.random() < 0.8:
                parent[i] = rng.integers(0, i)  # (deep chains too: a parent just before)
        want = []
        for i in range(m):
            d, j = 0, parent[i]
            while j >= 0:
                d, j = d + 1, parent[j]
            want.append(d)
        got = nvtx.depth_from_parents(parent)
        assert got.tolist() == want and got.dtype == np.int32  # (positions, and levels, fit 32 bits)


def test_exact_sum_of_narrow_and_wide_columns_equals_pythons() -> None:
    """A kept column's sum as Python would add it: narrow columns (no int64 copy) with and without
    their type's minimum (a missing value: INT_NULL, as widened), int64 values near its limits
    (no wrap-around), chunks of a million."""
    from nsighttk.analysis.nsys_report_base import exact_sum
    from nsighttk.profile import INT_NULL, widen

    rng = np.random.default_rng(12)
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        v = rng.integers(info.min + 1, info.max, 3000).astype(dtype)
        assert exact_sum(v) == sum(int(x) for x in v)
        v[7] = info.min  # (missing)
        assert exact_sum(v) == sum(int(x) for x in widen(v)) == sum(int(x) for x in v if x != info.min) + INT_NULL
    big = np.full((1 << 20) + 5, 2**62, dtype=np.int64)
    big[::3] = -(2**62)
    k = (len(big) + 2) // 3  # (rows 0, 3, 6, ...)
    assert exact_sum(big) == (len(big) - 2 * k) * 2**62  # (int64 would wrap: 2**62 times a million)
    assert exact_sum(np.empty(0, dtype=np.int32)) == 0


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16])
def test_stable_argsort_by_parts_is_numpys_stable_argsort(monkeypatch: pytest.MonkeyPatch, dtype: type) -> None:
    """Positions sorted a range of key values at a time are numpy's stable argsort exactly: many
    equal keys (the ties in row order), keys already sorted, one value only, a few huge outliers,
    negative keys; int32 positions."""
    from nsighttk.analysis import groupstats

    monkeypatch.setattr(groupstats, "_PARTED", 64)
    rng = np.random.default_rng(9)
    info = np.iinfo(dtype)
    cases = [rng.integers(info.min, info.max, 5000, dtype=dtype), rng.integers(0, 7, 5000).astype(dtype),
             np.sort(rng.integers(-50, 50, 3000)).astype(dtype), np.full(4000, 3, dtype=dtype),
             np.r_[rng.integers(0, 100, 3000), [info.max] * 5, [info.min] * 5].astype(dtype),
             np.arange(10, dtype=dtype)]
    for keys in cases:
        got = groupstats.stable_argsort(keys, parts=int(rng.integers(2, 130)))
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, np.argsort(keys, kind="stable"))


@pytest.mark.parametrize(("n", "dtype"), [(1, np.int8), (126, np.int8), (127, np.int16), (32766, np.int16),
                                          (32767, np.int32), (2**31 - 2, np.int32), (2**31 - 1, np.int64)])
def test_small_codes_leave_room_for_the_largest_code_plus_one(n: int, dtype: type) -> None:
    from nsighttk.analysis.groupstats import small_codes

    got = small_codes(np.array([0, n - 1], dtype=np.int64), n)
    assert got.dtype == dtype
    assert (got.astype(np.int64) == [0, n - 1]).all() and int(got.max() + 1) == n  # (the +1 does not wrap)


@pytest.mark.parametrize("n_names", [126, 127, 128, 300])
def test_names_group_right_whatever_type_their_codes_take(n_names: int) -> None:
    """Kernel and NVTX names ranked with codes of one, two or four bytes: the summaries count and
    add each name's rows, in name order where totals tie, whichever type the codes came in."""
    names = [f"k{i:04d}" for i in range(n_names)]
    rows = [nm for i, nm in enumerate(names) for _ in range(i % 3 + 1)]
    durs = [7] * len(rows)
    want = pd.Series(durs).groupby(rows).agg(["count", "sum"])
    k = r.cuda_gpu_kern_sum(Profile(kernels=_kernels(durs, rows))).frame
    assert k["Name"].tolist() == sorted(names, key=lambda nm: (-want.loc[nm, "sum"], nm))
    assert k.set_index("Name")["Instances"].to_dict() == want["count"].to_dict()
    start = np.arange(len(rows), dtype="int64") * 100
    nv = conform("nvtx", pd.DataFrame({"range_id": np.arange(len(rows)), "start_ns": start, "end_ns": start + 7,
                                       "duration_ns": 7, "name": rows, "style": "PushPop", "depth": 0,
                                       "global_tid": 1, "pid": 1, "tid": 1}))
    s = r.nvtx_sum(Profile(nvtx=nv)).frame
    assert s.set_index("Range")["Instances"].to_dict() == {f":{nm}": c for nm, c in want["count"].items()}


def test_operations_of_mixed_narrow_types_go_end_to_end_in_the_widest() -> None:
    """Kernels' int32 ids and copies' int16 ones (each type's minimum a missing id) end to end: the
    widest of the types, each missing id that type's minimum; widened, the int64 concatenation.
    A few int64 ids that fit the kernels' type take it; ids that do not make the whole int64."""
    from nsighttk.profile import INT_NULL, widen

    k = np.array([7, np.iinfo(np.int32).min, 2**20], dtype=np.int32)
    c = np.array([np.iinfo(np.int16).min, -5, 300], dtype=np.int16)
    s = np.array([], dtype=np.int64)
    got = nvtx.gpu_ops([{"id": k}, {"id": c}, {"id": s}])["id"]
    assert got.dtype == np.int32
    assert widen(got).tolist() == [7, INT_NULL, 2**20, INT_NULL, -5, 300]
    fits = nvtx.gpu_ops([{"id": k}, {"id": np.array([INT_NULL, 1], dtype=np.int64)}])["id"]  # (copies' int64)
    assert fits.dtype == np.int32 and widen(fits).tolist() == [7, INT_NULL, 2**20, INT_NULL, 1]
    wide = nvtx.gpu_ops([{"id": c}, {"id": np.array([INT_NULL, 2**40, 1], dtype=np.int64)}])["id"]
    assert wide.dtype == np.int64 and wide.tolist() == [INT_NULL, -5, 300, INT_NULL, 2**40, 1]
