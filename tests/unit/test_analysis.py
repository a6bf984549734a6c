"""Analysis edge cases on synthetic frames: rounding, statistics, NVTX nesting and projection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nsighttk.analysis.memory import memory_bandwidth
from nsighttk.analysis.nsys import reports as r
from nsighttk.load.nvtx_nesting import depth_from_parents, parents_of
from nsighttk.profile import Profile, conform


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


def _parents(nvtx: pd.DataFrame, max_ts: int) -> list[int]:
    """Each range's parent (its row, or -1) as the loader finds it, ranges never closed ending at ``max_ts``."""
    return parents_of(nvtx["start_ns"].to_numpy(dtype="int64"), nvtx["end_ns"].fillna(max_ts).to_numpy(dtype="int64"),
                      nvtx["global_tid"].fillna(-1).to_numpy(dtype="int64"),
                      nvtx["range_id"].to_numpy(dtype="int64")).tolist()


def test_nesting_depth_per_thread_and_open_ranges() -> None:
    df = _ranges([(0, 100, "outer", 1), (10, 50, "mid", 1), (20, 30, "inner", 1), (60, None, "open", 1),
                  (5, 95, "other-thread", 2)])
    parents = _parents(df, max_ts=100)
    assert list(parents) == [-1, 0, 1, 0, -1]
    assert list(depth_from_parents(np.array(parents))) == [0, 1, 2, 1, 0]


@pytest.mark.parametrize(("c_end", "parents"), [(60, [-1, 0, 0, 2]), (95, [-1, 0, 0, 1])])
def test_crossing_start_end_ranges_use_the_tightest_parent(c_end: int, parents: list[int]) -> None:
    """A(0,100) B(10,50) C(40,c_end): C starts inside B and ends after it (crossing), so A holds
    both; D(45,48) lies inside A, B and C.  D's parent is the tightest of them, tightness being
    (D.start - P.start) + (P.end - D.end): B 37, C 17 when C ends at 60 (C wins), C 52 when C ends
    at 95 (B wins, although C started later)."""
    df = _ranges([(0, 100, "A", 1), (10, 50, "B", 1), (40, c_end, "C", 1), (45, 48, "D", 1)])
    assert _parents(df, max_ts=100) == parents


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
    from nsighttk.analysis.nsys.reports import nvtx_gpu_proj_sum

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
        got = depth_from_parents(parent)
        assert got.tolist() == want and got.dtype == np.int32  # (positions, and levels, fit 32 bits)


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
