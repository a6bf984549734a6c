"""Iterations and steady state: found in real captures (nsys NVTX steps, Kineto ProfilerStep#N) with
the durations the raw data and Nsight Systems' own reports give, warm-up marked; measured per
iteration as computed independently from the SQLite; and the edge cases on synthetic tables."""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import sqlite3
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import capture, fixture, fixture_script

from nsighttk import api
from nsighttk.analysis.iterations.find import iterations, outlier_labels, steady_profile, warmup_mask
from nsighttk.cli import cli
from nsighttk.errors import UsageError
from nsighttk.profile import Profile, conform

GPT2 = "gpt2_train"


def _nsys_csv(report: str) -> dict[str, dict[str, str]]:
    with open(fixture("h200-nsys2025.3", GPT2, f"nsys_{report}.csv"), newline="") as f:
        return {row["Range"]: row for row in csv.DictReader(f)}


# ----------------------------------------------------------------------------- real captures


def test_gpt2_steps_found_with_nsys_durations_and_step0_is_warmup() -> None:
    it = iterations(api.load(capture(GPT2)))
    assert it is not None and "'step N'" in it.source and it.pattern == "step N"
    t = it.table
    assert list(t["name"]) == ["step 0", "step 1", "step 2", "step 3"]
    ref = _nsys_csv("nvtx_sum")  # nsys stats on the untrimmed export; one instance per step
    assert [int(ref[f":{n}"]["Total Time (ns)"]) for n in t["name"]] == t["duration_ns"].tolist()
    assert t["warmup"].tolist() == [True, False, False, False]
    assert it.steady["iterations"] == 3 and it.steady["first"] == "step 1" and it.steady["warmup"] == ["step 0"]
    assert it.steady["duration_ns"]["median"] == float(t["duration_ns"].iloc[1:].median())


def test_gpt2_gpu_projection_equals_nsys() -> None:
    """nsys projects only the work launched from the range's own thread, we take every thread of the
    process (PyTorch's backward runs on its autograd thread); in this capture the first and last GPU
    operation of every step come from the main thread, so the spans agree to the nanosecond."""
    t = iterations(api.load(capture(GPT2))).table
    ref = _nsys_csv("nvtx_gpu_proj_sum")
    assert [int(ref[f":{n}"]["Total Proj Time (ns)"]) for n in t["name"]] == \
        (t["gpu_end_ns"] - t["gpu_start_ns"]).astype("int64").tolist()
    # ... and we count more GPU work than nsys' per-thread projection
    assert (t["kernels"] > t["name"].map(lambda n: int(ref[f":{n}"]["Total GPU Ops"]))).all()


def _raw_steps(con: sqlite3.Connection) -> list[tuple[str, int, int]]:
    """The ``step N`` ranges, named by their own text or by a string id (this export: their text)."""
    steps = con.execute("SELECT coalesce(s.value, n.text) AS name, n.start, n.end FROM NVTX_EVENTS n "
                        "LEFT JOIN StringIds s ON n.textId = s.id WHERE name LIKE 'step %' ORDER BY n.start").fetchall()
    assert steps  # (a check of no steps checks nothing)
    return steps


def test_gpt2_per_step_numbers_equal_an_independent_sql_computation() -> None:
    t = iterations(api.load(capture(GPT2))).table.set_index("name")
    con = sqlite3.connect(f"file:{capture(GPT2)}?mode=ro", uri=True)
    ivals = sorted(con.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
                               "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL "
                               "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET").fetchall())
    for name, lo, hi in _raw_steps(con):
        # GPU busy: the union of every GPU interval clipped to the step, by a plain sweep
        busy, cur_s, cur_e = 0, None, None
        for s, e in ivals:
            s, e = max(s, lo), min(e, hi)
            if e <= s:
                continue
            if cur_e is None or s > cur_e:
                busy += 0 if cur_e is None else cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        busy += 0 if cur_e is None else cur_e - cur_s
        assert t.loc[name, "gpu_busy_ns"] == busy
        # kernels whose launch call started inside the step, any thread; their GPU time
        n, total = con.execute(
            "SELECT count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
            "WHERE r.start >= ? AND r.start < ?", (lo, hi)).fetchone()
        assert (t.loc[name, "kernels"], t.loc[name, "kernel_ns"]) == (n, total)
        sync = con.execute(
            "SELECT coalesce(sum(min(r.end, ?) - max(r.start, ?)), 0) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "JOIN StringIds s ON r.nameId = s.id WHERE r.end > ? AND r.start < ? AND "
            "(s.value LIKE 'cudaStreamSynchronize%' OR s.value LIKE 'cudaDeviceSynchronize%' "
            "OR s.value LIKE 'cudaEventSynchronize%')",
            (hi, lo, lo, hi)).fetchone()[0]
        assert t.loc[name, "sync_ns"] == sync
        assert 0 < t.loc[name, "gpu_busy_ns"] <= t.loc[name, "duration_ns"]
        assert t.loc[name, "idle_ns"] == t.loc[name, "duration_ns"] - t.loc[name, "gpu_busy_ns"]
    assert (t["largest_gap_ns"] <= t["idle_ns"]).all() and (t["launch_overhead_ns"] > 0).all()


def test_kineto_profiler_steps_with_the_traces_own_durations() -> None:
    path = fixture("h100-torch2.11", "bert_bs1_seq128.trace.json.gz")
    with gzip.open(path, "rt") as f:
        raw = json.load(f, parse_float=Decimal)
    steps = sorted((e["ts"], e["name"], int(e["dur"] * 1000)) for e in raw["traceEvents"]
                   if e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#"))
    it = iterations(api.load(path))
    assert it is not None and it.source.startswith("torch.profiler steps 'ProfilerStep#N'")
    assert list(zip(it.table["name"], it.table["duration_ns"], strict=True)) == [(n, d) for _, n, d in steps]
    assert len(steps) == 3 and not it.table["warmup"].any()  # torch.profiler's schedule already skipped warm-up
    # every kernel of the trace was launched inside a step (Kineto records only the active steps)
    kernels = sum(1 for e in raw["traceEvents"] if e.get("cat") == "kernel")
    assert it.table["kernels"].sum() == kernels


def test_a_benchmark_of_variants_repeated_three_times_is_not_a_loop() -> None:
    # square/trace.json: seven variants, each run three times in turn, each in its own range
    assert iterations(api.load(fixture("h100-torch2.11", "square", "trace.json"))) is None
    assert iterations(api.load(capture("add"))) is None  # no NVTX at all


def test_streams_demo_steps_inside_an_outer_range() -> None:
    it = iterations(api.load(capture("streams_demo")))
    assert it is not None and list(it.table["name"]) == ["step 0", "step 1", "step 2"]
    assert "level 1" in it.source and it.table["warmup"].tolist() == [True, False, False]


# ----------------------------------------------------------------------------- output


def test_analyze_json_has_iterations_and_steady_state() -> None:
    res = CliRunner().invoke(cli, ["analyze", "--json", str(capture(GPT2))])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    its = d["iterations"]
    assert [i["name"] for i in its] == ["step 0", "step 1", "step 2", "step 3"]
    for i in its:
        assert {"name", "start_ns", "duration_ns", "gpu_busy_ns", "warmup", "kernel_ns", "memcpy_ns", "sync_ns",
                "launch_overhead_ns", "gaps", "top_kernels"} <= set(i)
        assert i["gpu_busy_ns"] <= i["duration_ns"] and len(i["top_kernels"]) == 3
    assert [i["warmup"] for i in its] == [True, False, False, False]
    assert d["steady_state"]["iterations"] == 3 and d["steady_state"]["warmup"] == ["step 0"]
    assert d["headline"]["steady_iterations"] == 3 and d["iterations_source"].startswith("NVTX ranges 'step N'")
    # every finding is measured on the steady state and says so
    assert d["findings"] and all(f["scope"] == "steady state, 3 iterations (step 1 to step 3)" and
                                 f["evidence"].startswith(f["scope"] + ": ") for f in d["findings"])
    none = json.loads(CliRunner().invoke(cli, ["analyze", "--json", str(capture("add"))]).stdout)
    assert none["iterations"] == [] and none["steady_state"] is None


def test_analyze_terminal_and_markdown_show_iterations() -> None:
    out = CliRunner().invoke(cli, ["analyze", str(capture(GPT2))]).stdout
    assert "Iterations: 4, from NVTX ranges 'step N'" in out and "warm-up: step 0" in out
    md = CliRunner().invoke(cli, ["analyze", "--markdown", str(capture(GPT2))]).stdout
    assert "## Iterations" in md and "| step 0 | 2.07 s |" in md and "warm-up |" in md


# ----------------------------------------------------------------------------- synthetic


def _nvtx(rows: list[tuple[str, int, int, int, int]], domain: str = "") -> pd.DataFrame:
    """(name, start, end, depth, tid) per range; pid 7."""
    return conform("nvtx", pd.DataFrame({
        "range_id": range(len(rows)), "start_ns": [r[1] for r in rows], "end_ns": [r[2] for r in rows],
        "duration_ns": [r[2] - r[1] for r in rows], "name": [r[0] for r in rows], "domain": domain,
        "style": "PushPop", "depth": [r[3] for r in rows], "global_tid": [r[4] for r in rows],
        "pid": 7, "tid": [r[4] for r in rows]}))


def _loop(names: list[str], durs: list[int], gap: int = 10, depth: int = 0, tid: int = 1) -> list[tuple]:
    rows, t = [], 0
    for n, d in zip(names, durs, strict=True):
        rows.append((n, t, t + d, depth, tid))
        t += d + gap
    return rows


def test_warmup_rule() -> None:
    assert warmup_mask(np.array([100, 10])).tolist() == [False, False]  # two: nothing to compare with
    assert warmup_mask(np.array([100, 10, 11, 10])).tolist() == [True, False, False, False]
    assert warmup_mask(np.array([90, 50, 10, 11, 10, 10])).tolist() == [True, True, False, False, False, False]
    assert warmup_mask(np.array([10, 10, 10, 10])).tolist() == [False] * 4  # MAD 0: needs 20% above the median
    assert warmup_mask(np.array([11.9, 10, 10, 10])).tolist() == [False] * 4
    assert warmup_mask(np.array([12.1, 10, 10, 10])).tolist() == [True, False, False, False]
    assert warmup_mask(np.array([10, 100, 10, 10])).tolist() == [False] * 4  # slow but not at the start
    # mostly slow: the median is slow too, so nothing stands out
    assert warmup_mask(np.array([100, 100, 100, 10, 10, 10])).tolist() == [False] * 6
    assert outlier_labels(np.array([10, 10, 30, 10, 5])).tolist() == ["", "", "slow", "", "fast"]


def test_grouped_names_shared_by_their_names() -> None:
    """Names that group together (``aten::add, seq = N``: one a call) share one grouped-name string,
    not a copy each (3.2M such names: 220 MB); the tiers as each name's."""
    from nsighttk.analysis.iterations.ranges import tiers

    names = [f"aten::add, seq = {i}" for i in range(5)] + ["step 1", "step 2", "ProfilerStep#3", "fwd"]
    keys, tier = tiers(names)
    assert keys == ["aten::add, seq = #"] * 5 + ["step #", "step #", "ProfilerStep##", "fwd"]
    assert len({id(k) for k in keys}) == 4
    assert tier.tolist() == [3] * 5 + [1, 1, 0, 2]


def test_iteration_ranges_chosen_by_tier_then_level() -> None:
    steps = _loop([f"step {i}" for i in range(4)], [50, 10, 10, 10])
    opt = [("Optimizer.step#AdamW.step", s + 1, s + 5, 1, 1) for _, s, _, _, _ in steps]
    fwd = [("forward", s + 1, s + 3, 1, 1) for _, s, _, _, _ in steps]
    it = iterations(Profile(nvtx=_nvtx(steps + opt + fwd)))
    assert list(it.table["name"]) == ["step 0", "step 1", "step 2", "step 3"] and it.pattern == "step N"
    # PyTorch's optimizer labels are not iteration ranges even alone; a named loop wins over a generic one
    assert iterations(Profile(nvtx=_nvtx(opt)), detect=False) is None
    # but found from the work, an optimizer step ends each iteration: 4 ends, 3 iterations between them
    it = iterations(Profile(nvtx=_nvtx(opt)))
    assert it.signal == "optimizer ranges" and it.table["duration_ns"].tolist() == [60, 20, 20]
    prof = _loop([f"ProfilerStep#{i}" for i in range(3)], [10, 10, 10], depth=1)
    it = iterations(Profile(nvtx=_nvtx(steps + prof)))
    assert it.table["name"].str.startswith("ProfilerStep#").all()
    for name in ("train_step", "trainStep", "Step 12", "iteration 7", "iter_3"):
        it = iterations(Profile(nvtx=_nvtx(_loop([name] * 3, [10, 10, 10]))))
        assert it is not None and len(it.table) == 3, name
    # a generic name repeated back to back (a loop)...
    it = iterations(Profile(nvtx=_nvtx(_loop(["fwd_bwd"] * 3, [10, 10, 10]))))
    assert it is not None and it.source.startswith("NVTX ranges 'fwd_bwd'")
    # ...but not twice, nor overlapping ranges (StartEnd ranges on one thread)
    assert iterations(Profile(nvtx=_nvtx(_loop(["fwd_bwd"] * 2, [10, 10])))) is None
    assert iterations(Profile(nvtx=_nvtx([("step 1", 0, 10, 0, 1), ("step 2", 5, 15, 0, 1)]))) is None


def test_explicit_iteration_name_or_regex() -> None:
    rows = [*_loop(["batch a", "batch b", "batch c"], [10, 20, 10]), ("batch a", 100, 101, 0, 2)]
    p = Profile(nvtx=_nvtx(rows, domain="train"))
    assert list(iterations(p, "batch a").table["name"]) == ["batch a"]  # thread 1 (more time)
    assert list(iterations(p, "train:batch b").table["name"]) == ["batch b"]
    it = iterations(p, r"batch \w")
    assert list(it.table["name"]) == ["batch a", "batch b", "batch c"] and "matching" in it.source
    with pytest.raises(UsageError, match=r"no range has this name and it is not a valid regular expression"):
        iterations(p, "batch (")
    with pytest.raises(UsageError, match="no closed NVTX or record_function range") as ex:
        iterations(p, "batch")  # the whole name must match
    assert "'batch a' x2" in str(ex.value.hint)


def test_ranges_without_text_are_named_empty_not_matched() -> None:
    """A range with no name (NULL text: pandas 3 turns None into NaN through astype(str)) neither
    matches a pattern nor breaks the hint or the automatic search."""
    rows = [*_loop(["step 1", None, "step 2", None, "step 3"], [10, 10, 10, 10, 10])]
    p = Profile(nvtx=_nvtx(rows))
    assert list(iterations(p, r"step \d+").table["name"]) == ["step 1", "step 2", "step 3"]
    with pytest.raises(UsageError, match="no closed NVTX or record_function range") as ex:
        iterations(p, "nothing like it")
    assert "'step #' x3" in str(ex.value.hint)
    it = iterations(p)
    assert it is not None and list(it.table["name"]) == ["step 1", "step 2", "step 3"]


def _ops(table: str, rows: list[tuple[int, int, int]], **cols: object) -> pd.DataFrame:
    """(start, end, correlation id) per GPU operation, one process (global_pid set, pid 7)."""
    extra = {"name": [f"k{c}" for _, _, c in rows], "short_name": [f"k{c}" for _, _, c in rows],
             "name_id": 0} if table == "kernels" else {"kind": "HtoD", "bytes": 4096}
    return conform(table, pd.DataFrame({
        "start_ns": [r[0] for r in rows], "end_ns": [r[1] for r in rows], "duration_ns": [r[1] - r[0] for r in rows],
        "correlation_id": [r[2] for r in rows], "global_pid": 7 << 24, "pid": 7, **extra, **cols}))


def _api(rows: list[tuple[int, int, int, str, int]]) -> pd.DataFrame:
    """(start, end, correlation id, name, tid) per CUDA call, pid 7."""
    return conform("api", pd.DataFrame({
        "start_ns": [r[0] for r in rows], "end_ns": [r[1] for r in rows], "duration_ns": [r[1] - r[0] for r in rows],
        "correlation_id": [r[2] for r in rows], "name": [r[3] for r in rows], "tid": [r[4] for r in rows],
        "global_tid": [(7 << 24) + r[4] for r in rows], "pid": 7}))


def test_work_is_attributed_by_launch_time_on_any_thread_and_busy_is_clipped() -> None:
    nvtx = _nvtx([("step 0", 0, 100, 0, 1), ("step 1", 100, 200, 0, 1), ("step 2", 200, 300, 0, 1)])
    api_rows = [(10, 12, 1, "cudaLaunchKernel", 1), (20, 22, 2, "cudaLaunchKernel", 9),  # 9: the autograd thread
                (95, 97, 3, "cudaLaunchKernel", 1),  # launched in step 0, runs in step 1 (queued)
                (150, 170, 4, "cudaStreamSynchronize_v3020", 1), (190, 230, 5, "cudaDeviceSynchronize", 1),
                (210, 211, 6, "cudaMemcpyAsync", 1)]
    kernels = _ops("kernels", [(30, 60, 1), (40, 70, 2), (105, 130, 3)])
    memcpy = _ops("memcpy", [(250, 260, 6)])
    p = Profile(nvtx=nvtx, api=_api(api_rows), kernels=kernels, memcpy=memcpy)
    t = iterations(p).table
    assert t["kernels"].tolist() == [3, 0, 0] and t["kernel_ns"].tolist() == [30 + 30 + 25, 0, 0]
    assert t["gpu_end_ns"].tolist()[0] == 130 and pd.isna(t["gpu_start_ns"].iloc[1])
    # busy: [30, 70) in step 0; [105, 130) in step 1 (whoever launched it); the copy in step 2
    assert t["gpu_busy_ns"].tolist() == [40, 25, 10]
    assert t["largest_gap_ns"].tolist() == [30, 70, 50]
    assert t["sync_ns"].tolist() == [0, 20 + 10, 30]  # clipped to each step
    assert t["memcpy_count"].tolist() == [0, 0, 1] and t["memcpy_bytes"].tolist() == [0, 0, 4096]
    assert t["launch_overhead_ns"].tolist()[0] == 20  # median of 20, 20, 10
    # the same kernels without any CUDA call in the capture: counted by where they start on the GPU
    t2 = iterations(Profile(nvtx=nvtx, kernels=kernels)).table
    assert t2["kernels"].tolist() == [2, 1, 0] and t2["launch_overhead_ns"].isna().all()


def test_other_processes_work_is_not_counted() -> None:
    nvtx = _nvtx([("step 0", 0, 100, 0, 1), ("step 1", 100, 200, 0, 1)])
    mine = _ops("kernels", [(10, 20, 1)])
    theirs = _ops("kernels", [(10, 90, 1)]).assign(global_pid=8 << 24, pid=8)  # same correlation id, other process
    t = iterations(Profile(nvtx=nvtx, kernels=pd.concat([mine, theirs], ignore_index=True),
                           api=_api([(5, 6, 1, "cudaLaunchKernel", 1)]))).table
    assert t["kernels"].tolist() == [1, 0] and t["gpu_busy_ns"].tolist() == [10, 0]


def test_top_kernels_are_named_from_their_own_rows_when_another_process_comes_first() -> None:
    """The longest kernels of the process are named from their rows of the kernel table, not from
    their positions among the process's kernels (another process's kernels listed first)."""
    nvtx = _nvtx([("step 0", 0, 100, 0, 1), ("step 1", 100, 200, 0, 1)])
    theirs = _ops("kernels", [(1, 2, 90), (3, 4, 91)]).assign(global_pid=8 << 24, pid=8, short_name="theirs")
    mine = _ops("kernels", [(10, 20, 1), (110, 150, 2)]).assign(name_id=[1, 2], short_name=["mine1", "mine2"])
    p = Profile(nvtx=nvtx, kernels=pd.concat([theirs, mine], ignore_index=True),
                api=_api([(5, 6, 1, "cudaLaunchKernel", 1), (105, 106, 2, "cudaLaunchKernel", 1)]))
    top = iterations(p).top_kernels
    assert top["short_name"].tolist() == ["mine1", "mine2"] and top["name"].tolist() == ["k1", "k2"]


def test_steady_profile_keeps_only_the_steady_iterations_work() -> None:
    nvtx = _nvtx(_loop([f"step {i}" for i in range(4)], [1000, 100, 100, 100], gap=0))
    kernels = _ops("kernels", [(10, 900, 1), (1010, 1050, 2), (1110, 1150, 3), (1210, 1250, 4), (1400, 1410, 5)])
    api_rows = [(5, 6, 1, "cudaLaunchKernel", 1), (1005, 1006, 2, "cudaLaunchKernel", 1),
                (1105, 1106, 3, "cudaLaunchKernel", 1), (1205, 1206, 4, "cudaLaunchKernel", 1),
                (1350, 1351, 5, "cudaLaunchKernel", 1)]
    p = Profile(nvtx=nvtx, kernels=kernels, api=_api(api_rows))
    it = iterations(p)
    assert it.table["warmup"].tolist() == [True, False, False, False]
    s = steady_profile(p, it)
    assert s.kernels["correlation_id"].tolist() == [2, 3, 4] and s.api["correlation_id"].tolist() == [2, 3, 4]
    assert list(s.nvtx["name"]) == ["step 1", "step 2", "step 3"]
    # asked again (analyze: collectives, then advice), the rows are not found again; other steady
    # iterations (even the same object changed), or a replaced table, are cut afresh
    import nsighttk.analysis.iterations.find as iters

    calls: list[int] = []
    real = iters._steady_keep
    try:
        iters._steady_keep = lambda *a: calls.append(1) or real(*a)  # type: ignore[assignment]
        assert steady_profile(p, it).kernels["correlation_id"].tolist() == [2, 3, 4]
        assert steady_profile(p, iterations(p)).api["correlation_id"].tolist() == [2, 3, 4] and calls == []
        it.table["warmup"] = [True, True, False, False]  # (the steady table follows the warm-up)
        assert steady_profile(p, it).kernels["correlation_id"].tolist() == [3, 4] and calls == [1]
        p.kernels = kernels.iloc[:3]
        assert steady_profile(p, it).kernels["correlation_id"].tolist() == [3] and calls == [1, 1]
    finally:
        iters._steady_keep = real  # type: ignore[assignment]


def test_html_report_draws_one_column_per_iteration(tmp_path: Path) -> None:
    from browser import render, screenshot

    from nsighttk.commands.report import capture_page
    from nsighttk.report import html

    page = tmp_path / "gpt2.html"
    page.write_text(html.render(capture_page(capture(GPT2))))
    shown = render(page)
    assert shown.errors() == [] and shown.attr("data-ready") == "1"
    assert shown.charts()[0] == ("iterations", 4)  # step 0 (warm-up, cut at the top) and steps 1-3
    assert ">Iterations<" in shown.dom and "↑ 2.074 s" in shown.dom  # the warm-up column carries its value
    assert "steady state" in shown.dom and "3 iterations (step 1 to step 3)" in shown.dom
    spec = html.iterations_spec(iterations(api.load(capture(GPT2))))
    assert [i["warmup"] for i in spec["items"]] == [True, False, False, False]
    assert spec["cap"] == int(max(i["wall"] for i in spec["items"][1:]) * 1.15)
    screenshot(page, "report-nsys-gpt2-iterations.png", height=1300)


def test_range_names_are_data_in_every_output() -> None:
    from rich.console import Console

    from nsighttk import escape
    from nsighttk.analysis.overview import overview
    from nsighttk.report import html, jsonout, markdown, text

    name = "[/][bold red]<script>x</script>|step {}"
    p = Profile(nvtx=_nvtx(_loop([name.format(i) for i in range(3)], [50_000, 10_000, 10_000])),
                kernels=_ops("kernels", [(1, 5, 1), (50_011, 50_015, 2), (60_021, 60_025, 3)]))
    ov = overview(p)
    assert ov.iterations is not None and ov.iterations.pattern == name.format("N")
    assert ov.findings and name.format(1) in ov.findings[0].evidence  # the GPU idles: names in the evidence
    con = Console(record=True, width=200)
    # (the NVTX summary table's own escaping is the terminal renderer's work, not this test's)
    text.render(dataclasses.replace(ov, tables={**ov.tables, "nvtx": ov.tables["nvtx"].head(0)}), con)
    shown = con.export_text()
    assert name.format(0) in shown and f"steady state, 2 iterations ({name.format(1)} to" in shown
    md = markdown.render(ov)
    assert f"| {escape.md_text(name.format(0))} |" in md
    page = html.render(html.Page("t", [], html.overview_sections(ov, None)))
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;|step 0" in page
    assert jsonout.overview_dict(ov)["iterations"][0]["name"] == name.format(0)


def test_overview_takes_the_iteration_option() -> None:
    from nsighttk.analysis.overview import overview

    p = api.load(capture("streams_demo"))
    ov = overview(p, iteration="demo")  # the outer range, once
    assert list(ov.iterations.table["name"]) == ["demo"] and ov.headline["iterations"] == 1
    assert ov.findings and all(f.scope == "steady state, 1 iteration (demo)" for f in ov.findings)
    with pytest.raises(UsageError):
        overview(p, iteration="no such range")


def test_one_profiler_step_is_an_iteration_one_named_step_is_not() -> None:
    it = iterations(Profile(nvtx=_nvtx([("ProfilerStep#7", 0, 100, 0, 1)])))
    assert it is not None and list(it.table["name"]) == ["ProfilerStep#7"] and it.steady["iterations"] == 1
    assert iterations(Profile(nvtx=_nvtx([("step 7", 0, 100, 0, 1)]))) is None


def test_records_list_each_iterations_top_kernels_and_gaps_in_order() -> None:
    it = iterations(api.load(capture(GPT2)))
    assert it is not None
    # interleave the rows: each iteration's lists must keep their row order, whatever the table's order
    it.top_kernels = it.top_kernels.iloc[::-1].reset_index(drop=True)
    recs = it.records()
    assert [r["index"] for r in recs] == it.table["index"].tolist()
    for r in recs:
        for key, df in (("top_kernels", it.top_kernels), ("gaps", it.gaps)):
            want = df[df["iteration"] == r["index"]].drop(columns="iteration").to_dict("records")
            assert r[key] == want and all("iteration" not in x for x in r[key])
    assert sum(len(r["top_kernels"]) for r in recs) == len(it.top_kernels) > len(recs)


def test_a_capture_without_gpu_activity_has_no_gpu_busy_numbers() -> None:
    from nsighttk.analysis.overview import overview
    from nsighttk.report import jsonout

    ov = overview(Profile(nvtx=_nvtx(_loop([f"step {i}" for i in range(4)], [90_000, 10_000, 10_000, 10_000]))))
    t = ov.iterations.table
    assert t["gpu_busy_ns"].isna().all() and t["gpu_busy_pct"].isna().all() and t["idle_ns"].isna().all()
    assert "no GPU activity in this capture" in " ".join(ov.notes)
    assert [f.rule for f in ov.findings] == []  # not "the GPU is idle": its activity was not recorded
    d = jsonout.overview_dict(ov)
    assert d["iterations"][1]["gpu_busy_ns"] is None and d["steady_state"]["gpu_busy_pct"]["median"] is None
    assert d["iterations"][0]["warmup"] is True and d["iterations"][1]["gaps"] == []


def test_fixture_trimmer_cuts_at_a_range_and_leaves_its_input_alone(tmp_path: Path) -> None:
    import hashlib
    trim = fixture_script("trim_export.py")
    src = capture("streams_demo")
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    out = tmp_path / "cut.sqlite"
    trim.trim(src, out, "step 2")
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before and sorted(p.name for p in tmp_path.iterdir()) == \
        ["cut.sqlite"]
    it = iterations(api.load(out))
    full = iterations(api.load(src))
    assert list(it.table["name"]) == ["step 0", "step 1"]  # step 2 and everything after it are gone
    cols = ["duration_ns", "gpu_busy_ns", "kernels", "kernel_ns", "memcpy_ns", "sync_ns"]
    assert it.table[cols].equals(full.table[cols].head(2))  # the steps before the cut are as recorded
    with pytest.raises(SystemExit, match="no NVTX range named 'step 9'"):
        trim.trim(src, tmp_path / "x.sqlite", "step 9")
    assert not (tmp_path / "x.sqlite").exists()


def test_kernels_with_no_start_or_duration_say_nothing_of_launch_overhead_or_time() -> None:
    """A kernel whose start is missing (its call known) adds no launch delay (int64 would wrap
    into a huge one); a missing duration counts as 0, never as int64's minimum."""
    from nsighttk.profile import INT_NULL

    nvtx = _nvtx(_loop(["step 0", "step 1", "step 2"], [100, 100, 100], gap=0))
    api = _api([(10, 12, 1, "cudaLaunchKernel", 1), (20, 22, 2, "cudaLaunchKernel", 1),
                (110, 112, 3, "cudaLaunchKernel", 1)])
    kernels = _ops("kernels", [(30, 40, 1), (INT_NULL, 50, 2), (130, 140, 3)])
    t = iterations(Profile(nvtx=nvtx, api=api, kernels=kernels)).table
    assert t["launch_overhead_ns"].tolist()[:2] == [20.0, 20.0]
    kernels = _ops("kernels", [(30, 40, 1), (40, 50, 2), (130, 140, 3)])
    kernels["duration_ns"] = pd.array([10, None, 10], dtype="Int64")
    t = iterations(Profile(nvtx=nvtx, api=api, kernels=kernels)).table
    assert t["kernel_ns"].tolist() == [10, 10, 0] and t["kernels"].tolist() == [2, 1, 0]


def test_epoch_clock_times_are_attributed_and_measured_exactly() -> None:
    """Timestamps near 1.7e18 ns (epoch clocks) are compared and subtracted as integers: float64
    would round them to 256 ns, moving work between iterations and launch delays by 256 ns."""
    base = 1_699_999_999_999_999_744
    nvtx = _nvtx([(n, s + base, e + base, d, tid) for n, s, e, d, tid in
                  _loop(["step 0", "step 1", "step 2"], [100, 100, 100], gap=0)])
    api = _api([(10 + base, 12 + base, 1, "cudaLaunchKernel", 1), (110 + base, 112 + base, 3, "cudaLaunchKernel", 1)])
    kernels = _ops("kernels", [(30 + base, 40 + base, 1), (base - 1, base + 5, 99), (130 + base, 140 + base, 3)])
    t = iterations(Profile(nvtx=nvtx, api=api, kernels=kernels)).table
    assert t["kernels"].tolist() == [1, 1, 0] and t["launch_overhead_ns"].tolist()[:2] == [20.0, 20.0]
    assert t["gpu_busy_ns"].tolist() == [15, 10, 0]


def test_steady_state_reuses_the_iterations_attribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU operations of the steady state are those the iterations attributed to a steady
    iteration: kept with the profile and taken as they are (no operation attributed again), the
    same rows as attributing them afresh; asked for other windows, they are attributed again."""
    from conftest import capture

    import nsighttk.analysis.iterations.find as iters
    from nsighttk.analysis.iterations import ops as iteration_ops
    from nsighttk.load.nsys_sqlite import load_nsys_sqlite

    p = load_nsys_sqlite(capture("gpt2_train"))
    it = iterations(p)
    assert it is not None and len(it.steady_table) >= 2
    st = it.steady_table
    w_start, w_end = st["start_ns"].to_numpy(dtype="int64"), st["end_ns"].to_numpy(dtype="int64")
    calls: list[int] = []
    real = iteration_ops._attribute
    monkeypatch.setattr(iteration_ops, "_attribute", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = iters._steady_keep(p, w_start, w_end, it.pid)  # (as the iterations attributed them)
    assert calls == []
    afresh = iters._steady_keep(p, w_start, w_end, it.pid)  # (taken: attributed here)
    assert calls == [1] and {t: m.tolist() for t, m in got.items()} == {t: m.tolist() for t, m in afresh.items()}
    assert sum(int(got[t].sum()) for t in ("kernels", "memcpy", "memset")) > 50
    iters.iterations(p)  # (remembered again) ... then asked for the last steady iteration alone
    one = iters._steady_keep(p, w_start[-1:], w_end[-1:], it.pid)
    assert len(calls) == 3 and 0 < one["kernels"].sum() < got["kernels"].sum()


def test_gpu_work_across_iterations_is_busy_in_each() -> None:
    """A kernel running through three iterations (and one starting exactly at an iteration's
    start) makes each of them busy for its part; the gaps are what is left of each."""
    nvtx = _nvtx([("step 0", 0, 100, 0, 1), ("step 1", 100, 200, 0, 1), ("step 2", 200, 300, 0, 1)])
    kernels = _ops("kernels", [(50, 250, 1), (200, 210, 2), (280, 290, 3)])
    it = iterations(Profile(nvtx=nvtx, kernels=kernels))
    assert it.table["gpu_busy_ns"].tolist() == [50, 100, 60]
    assert it.table["largest_gap_ns"].tolist() == [50, 0, 30]
    assert it.gaps.values.tolist() == [[0, 0, 50], [2, 250, 30], [2, 290, 10]]
