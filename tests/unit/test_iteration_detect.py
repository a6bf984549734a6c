"""Iterations found from the work when nothing annotates them: real annotated captures with their
annotations taken out (NVTX ``step N`` ranges deleted from a copy of the export, ``ProfilerStep#N``
events dropped from a copy of the trace) must give the annotated iterations back, within one in
number and 10% in median duration; gradient accumulation (a real capture with every other
optimizer step deleted), a decode loop, the phases around the steady state and the headline."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import capture, fixture

from nsighttk import api
from nsighttk.analysis.iterations import detect as iteration_detect
from nsighttk.analysis.iterations.find import Iterations, iterations
from nsighttk.analysis.iterations.phases import phases
from nsighttk.analysis.overview import overview
from nsighttk.profile import Profile, conform
from nsighttk.report.html import overview_sections
from nsighttk.report.text import steady_line

WORK = {"optimizer ranges", "optimizer kernels", "repeated kernels"}
NSYS = [capture("gpt2_train"), fixture("h200x2-ddp", "rank0.sqlite"), fixture("h200x2-ddp", "rank1.sqlite")]
KINETO = [fixture("h200x2-ddp", "rank0.pt.trace.json.gz"), fixture("h200x2-ddp", "rank1.pt.trace.json.gz"),
          fixture("h100-torch2.11", "bert_bs1_seq128.trace.json.gz")]


def _without_steps(src: Path, dst: Path) -> Path:
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    gone = con.execute("DELETE FROM NVTX_EVENTS WHERE text LIKE 'step %'").rowcount
    con.commit()
    con.close()
    assert gone  # (a copy with nothing taken out checks nothing)
    return dst


def _trace_without(src: Path, dst: Path, *prefixes: str) -> Path:
    with gzip.open(src, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    kept = [e for e in events if not str(e.get("name", "")).startswith(prefixes)]
    assert len(kept) < len(events)
    doc["traceEvents"] = kept
    with gzip.open(dst, "wt") as f:
        json.dump(doc, f)
    return dst


def _alike(found: Iterations | None, annotated: Iterations | None) -> None:
    assert found is not None and annotated is not None
    assert annotated.signal not in WORK and found.signal in WORK, (annotated.source, found.source)
    a, f = annotated.table["duration_ns"], found.table["duration_ns"]
    assert abs(len(f) - len(a)) <= 1, (len(f), len(a))
    assert abs(float(f.median()) - float(a.median())) <= 0.1 * float(a.median()), (f.tolist(), a.tolist())


@pytest.mark.parametrize("src", NSYS, ids=["gpt2", "ddp-rank0", "ddp-rank1"])
def test_nsys_steps_taken_out_are_found_again_from_the_kernels(src: Path, tmp_path: Path) -> None:
    annotated = iterations(api.load(src))
    found = iterations(api.load(_without_steps(src, tmp_path / "bare.sqlite")))
    _alike(found, annotated)
    assert found is not None and found.signal == "repeated kernels" and found.source.startswith("the work: ")
    # the steady state is measured as from ranges: warm-up set apart, every step after it steady
    assert found.table["warmup"].tolist()[0] and not found.table["warmup"].iloc[1:].any()
    assert found.confidence["period_cv"] < 0.25 and 0 < found.confidence["covered_pct"] <= 100
    # the ranges and the work agree: no note of a disagreement
    assert annotated is not None and not any("repeats differently" in n for n in annotated.notes)


@pytest.mark.parametrize("src", KINETO, ids=["ddp-rank0", "ddp-rank1", "bert-inference"])
def test_kineto_profiler_steps_taken_out_are_found_again(src: Path, tmp_path: Path) -> None:
    annotated = iterations(api.load(src))
    bare = _trace_without(src, tmp_path / "bare.json.gz", "ProfilerStep#")
    found = iterations(api.load(bare))
    _alike(found, annotated)
    training = "ddp" in str(src.parent)
    assert found is not None and found.signal == ("optimizer ranges" if training else "repeated kernels")
    if training:  # without the optimizer's ranges too: the kernels
        found = iterations(api.load(_trace_without(src, tmp_path / "bare2.json.gz", "ProfilerStep#",
                                                   "Optimizer.")))
        _alike(found, annotated)


def test_gradient_accumulation_iterations_are_optimizer_steps(tmp_path: Path) -> None:
    """DDP GPT-2 with the optimizer kernels (and their calls) of steps 1, 3 and 5 deleted: two
    forward/backward passes per optimizer step, as with gradient accumulation."""
    src = fixture("h200x2-ddp", "rank0.sqlite")
    steps = iterations(api.load(src)).table
    dst = _without_steps(src, tmp_path / "accumulated.sqlite")
    con = sqlite3.connect(dst)
    names = [i for i, v in con.execute("SELECT id, value FROM StringIds") if "multi_tensor_apply" in v]
    assert names
    for r in steps.iloc[1::2].itertuples():
        ids = (f"SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE demangledName IN "
               f"({','.join(map(str, names))}) AND start >= {r.start_ns} AND start < {r.end_ns}")
        con.execute(f"DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IN ({ids})")
        con.execute(f"DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId IN ({ids})")
    con.commit()
    con.close()
    found = iterations(api.load(dst))
    assert found is not None and found.signal == "optimizer kernels" and "gradient accumulation" in found.source
    d = steps["duration_ns"].to_numpy()
    pairs = d[1:-1:2] + d[2::2]  # (steps 1+2, 3+4: one optimizer step each)
    assert abs(len(found.table) - 3) <= 1
    median = float(found.table["duration_ns"].iloc[-len(pairs):].median())
    assert abs(median - float(np.median(pairs))) <= 0.1 * float(np.median(pairs)), (found.table["duration_ns"], pairs)


def _stream(launches: list[tuple[int, str]]) -> Profile:
    """One kernel per (launch time, name), each launched by a CUDA call, one process."""
    t = np.array([a for a, _ in launches], dtype=np.int64)
    names = [n for _, n in launches]
    corr = np.arange(1, len(t) + 1)
    kernels = conform("kernels", pd.DataFrame({
        "start_ns": t + 5_000, "end_ns": t + 8_000, "duration_ns": 3_000, "correlation_id": corr,
        "name": names, "short_name": names, "name_id": 0, "global_pid": 7 << 24, "pid": 7}))
    calls = conform("api", pd.DataFrame({
        "start_ns": t, "end_ns": t + 2_000, "duration_ns": 2_000, "correlation_id": corr,
        "name": "cudaLaunchKernel", "tid": 1, "global_tid": (7 << 24) + 1, "pid": 7}))
    return Profile(kernels=kernels, api=calls)


def test_benchmarks_and_start_up_repeats_are_not_the_loop() -> None:
    """Autotuning runs each candidate many times in a row (fills between them: more kernels than
    the loop), and start-up may launch one kernel a few times: neither keeps an iteration order,
    or holds the work."""
    bench = [(1_000_000 * i, f"{cand}" if j % 2 == 0 else "fill") for i, (cand, j) in
             enumerate((c, j) for c in ("triton_a_cfg0", "triton_a_cfg1") for j in range(100))]
    loop = [(300_000_000 + 10_000_000 * i + 100_000 * k, n) for i in range(8)
            for k, n in enumerate(("embed", "gemm", "gemm", "loss", "gemm", "adam_step"))]
    it = iterations(_stream(bench + loop))
    assert it is not None and it.signal == "repeated kernels" and len(it.table) == 7
    assert it.steady["duration_ns"]["median"] == 10_000_000
    start_up = [(1_000_000 * i, "init_weights") for i in range(3)]
    once = [(10_000_000 + 1_000 * i, f"k{i}") for i in range(40)]
    assert iteration_detect.detect(_stream(start_up + once)) is None


def test_evaluation_between_steps_stays_inside_one_iteration() -> None:
    """Training steps of 10 ms; after every fourth, five forward-only evaluation passes (same
    forward kernels, 2 ms each): the iterations are the steps, those holding an evaluation slow."""
    fwd, bwd = ("embed", "gemm", "softmax", "loss"), ("loss_bwd", "gemm_bwd", "adam_step")
    launches, t = [], 0
    for step in range(12):
        launches += [(t + 1_000_000 * k, n) for k, n in enumerate(fwd + bwd)]
        t += 10_000_000
        if step % 4 == 3:
            for _ in range(5):
                launches += [(t + 400_000 * k, n) for k, n in enumerate(fwd)]
                t += 2_000_000
    it = iterations(_stream(launches))
    assert it is not None and it.signal == "repeated kernels" and abs(len(it.table) - 12) <= 1
    assert it.steady["duration_ns"]["median"] == 10_000_000
    assert {o["duration_ns"] for o in it.steady["outliers"]} == {20_000_000}


def _decode_loop(tokens: int, step_ns: int, prefill_ns: int, calls: int = 1, sync: bool = True) -> Profile:
    """``calls`` generate() calls, each a prefill then ``tokens - 1`` decode steps, each step
    launching 12 layers of 4 kernels, an LM head and a sampling kernel, then (``sync``) blocking
    on the token (cudaStreamSynchronize); each launch a CUDA call; 100 ms between calls."""
    starts, names, launches, syncs = [], [], [], []
    t = 1_000_000_000
    for _ in range(calls):
        for step in range(tokens):
            length = prefill_ns if step == 0 else step_ns
            seq = [f"layer_{k}" for _ in range(12) for k in ("qkv_gemm", "attn", "proj_gemm", "mlp")]
            seq = (["prefill_gemm"] if step == 0 else []) + seq + ["lm_head", "argmax"]
            gap = length // (len(seq) + 1)
            for i, n in enumerate(seq):
                launches.append(t + i * gap)
                starts.append(t + i * gap + 5_000)
                names.append(n)
            if sync:
                syncs.append(t + len(seq) * gap)
            t += length
        t += 100_000_000
    n = len(names)
    corr = np.arange(1, n + 1)
    kernels = conform("kernels", pd.DataFrame({
        "start_ns": starts, "end_ns": np.array(starts) + 3_000, "duration_ns": 3_000, "correlation_id": corr,
        "name": names, "short_name": names, "name_id": 0, "global_pid": 7 << 24, "pid": 7}))
    t_calls = np.array(launches + syncs, dtype=np.int64)
    api_calls = conform("api", pd.DataFrame({
        "start_ns": t_calls, "end_ns": t_calls + 2_000, "duration_ns": 2_000,
        "correlation_id": np.r_[corr, np.arange(n + 1, n + 1 + len(syncs))],
        "name": ["cudaLaunchKernel"] * n + ["cudaStreamSynchronize"] * len(syncs),
        "tid": 1, "global_tid": (7 << 24) + 1, "pid": 7}))
    return Profile(kernels=kernels, api=api_calls)


def test_a_decode_loop_is_one_iteration_per_token() -> None:
    it = iterations(_decode_loop(64, 56_000_000, 300_000_000))
    assert it is not None and it.signal == "repeated kernels"
    assert abs(len(it.table) - 64) <= 1
    assert it.table["warmup"].tolist()[0]  # the prefill
    assert abs(it.steady["duration_ns"]["median"] - 56_000_000) <= 5_600_000
    # three generate() calls: still one iteration a token, each step blocking on its token ...
    it = iterations(_decode_loop(16, 56_000_000, 300_000_000, calls=3))
    assert it is not None and abs(len(it.table) - 48) <= 1
    assert abs(it.steady["duration_ns"]["median"] - 56_000_000) <= 5_600_000
    # ... where nothing blocks, the longest repeat: the calls
    it = iterations(_decode_loop(16, 56_000_000, 300_000_000, calls=3, sync=False))
    assert it is not None and len(it.table) == 2


def test_no_loop_no_iterations() -> None:
    """Kernels each launched once or twice, or a few times at start-up only, are not a loop."""
    assert iteration_detect.detect(api.load(capture("add"))) is None
    assert iteration_detect.detect(api.load(capture("streams_demo"))) is None
    assert iteration_detect.bursts(np.array([0, 1, 2, 100, 101, 102, 200, 201]), None).tolist() == [2, 102, 201]
    once = iteration_detect.once_per_iteration
    # names out of the iterations' order are dropped (c: launched three times at start-up) ...
    codes, t = np.repeat([0, 1, 2], 3), np.array([0, 100, 200, 10, 110, 210, 1, 2, 3])
    assert once(codes, t, 3).tolist() == [0, 100, 200]
    # ... and names that keep no common order are no iterations (b runs after a's next launch)
    assert once(np.repeat([0, 1], 3), np.array([0, 100, 200, 110, 190, 290]), 3) is None
    assert not iteration_detect.regular(np.array([0, 10, 100, 1000]))
    assert iteration_detect.regular(np.array([0, 10, 20, 31, 100]))


def test_ranges_and_work_that_disagree_are_noted(tmp_path: Path) -> None:
    """An annotation that wraps two steps per range (deleted every other start) is still used, with
    a note that the work repeats twice as often."""
    src = fixture("h200x2-ddp", "rank0.sqlite")
    dst = tmp_path / "wide.sqlite"
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    rows = con.execute("SELECT rowid, start, end FROM NVTX_EVENTS WHERE text LIKE 'step %' ORDER BY start").fetchall()
    for (a, _, _), (b, _, e) in zip(rows[1::2], rows[2::2], strict=False):
        con.execute("UPDATE NVTX_EVENTS SET end = ? WHERE rowid = ?", (e, a))
        con.execute("DELETE FROM NVTX_EVENTS WHERE rowid = ?", (b,))
    con.commit()
    con.close()
    it = iterations(api.load(dst))
    assert it is not None and it.signal == "NVTX ranges"
    assert any("repeats differently" in n for n in it.notes), it.notes
    assert not any("repeats differently" in n for n in iterations(api.load(dst), detect=False).notes)


def test_phases_and_headline_speak_of_the_steady_state_first(tmp_path: Path) -> None:
    p = api.load(_without_steps(capture("gpt2_train"), tmp_path / "bare.sqlite"))
    it = iterations(p)
    assert it is not None
    ph = phases(p, it)
    b, st = ph["before_steady"], ph["steady"]
    assert ph["start_up"]["end_ns"] == b["start_ns"] and b["end_ns"] == st["start_ns"] == it.steady["start_ns"]
    assert b["warmup_iterations"] == 1 and b["module_loads"] > 0 and 0 < b["module_load_ns"] <= b["duration_ns"]
    assert st["iterations"] == it.steady["iterations"]
    ov = overview(api.load(tmp_path / "bare.sqlite"))
    line = steady_line(ov)
    assert line is not None and line.startswith("Steady state: ") and "module loading calls" in line
    kind, rows = overview_sections(ov, None)[0].blocks[0]
    assert kind == "kv" and [k for k, _ in rows[:2]] == ["iteration time, steady state", "around the steady state"]
    assert ov.findings and all(f.scope.startswith("steady state") for f in ov.findings)


# ----------------------------------------------------------------------------- unannotated programs' own timings

UNANNOTATED = "h200-unannotated"


def _truth(*parts: str) -> dict:
    return json.loads(fixture(UNANNOTATED, *parts).read_text())


@pytest.mark.parametrize(("capture_path", "truth_path", "rank"), [
    (("eager.sqlite",), ("eager.truth.json",), None),
    (("generate.sqlite",), ("generate.truth.json",), None),
    (("ddp", "rank0.sqlite"), ("ddp", "ddp.truth.json"), 0),
    (("ddp", "rank1.sqlite"), ("ddp", "ddp.truth.json"), 1),
    (("ddp", "rank0.pt.trace.json.gz"), ("ddp", "ddp_kineto.truth.json"), 0),
    (("ddp", "rank1.pt.trace.json.gz"), ("ddp", "ddp_kineto.truth.json"), 1),
    (("repro", "small_gpt.pt.trace.json.gz"), ("repro", "small_gpt.truth.json"), None),
], ids=["eager", "generate", "ddp-rank0", "ddp-rank1", "ddp-kineto-rank0", "ddp-kineto-rank1", "kineto"])
def test_unannotated_programs_iterations_match_their_printed_timings(capture_path: tuple[str, ...],
                                                                     truth_path: tuple[str, ...],
                                                                     rank: int | None) -> None:
    """Programs that printed their own iteration times (perf_counter after a synchronize): as many
    iterations, within one, and their median within 10% of the printed median after the first
    iteration (the found iterations leave out what comes before the first boundary); a decode loop:
    its decode steps."""
    truth = _truth(*truth_path)
    truth = truth["ranks"][rank] if rank is not None else truth
    it = iterations(api.load(fixture(UNANNOTATED, *capture_path)))
    assert it is not None and it.signal in WORK and it.steady
    n, median = (truth["decode_steps"], truth["decode_median_ms"]) if "decode_steps" in truth else \
        (truth["iters"], truth["median_after_first_ms"])
    assert abs(len(it.table) - n) <= 1, (len(it.table), n)
    assert abs(it.steady["duration_ns"]["median"] / 1e6 - median) <= 0.1 * median, (it.steady["duration_ns"], median)


def test_unannotated_bert_trace_of_two_steps_is_one_iteration() -> None:
    """Two profiled steps (two optimizer steps): one iteration between them, the second step's."""
    truth = _truth("repro", "bert.truth.json")
    it = iterations(api.load(fixture(UNANNOTATED, "repro", "bert.pt.trace.json.gz")))
    assert it is not None and it.signal == "optimizer ranges" and len(it.table) == 1
    assert abs(it.table["duration_ns"].iloc[0] / 1e6 - truth["iter_ms"][-1]) <= 0.1 * truth["iter_ms"][-1]


def test_unannotated_analyze_speaks_of_the_steady_state_first() -> None:
    """analyze of the unannotated eager loop: the headline's first fact is the steady iteration time,
    and its first finding is about the steady state, not the whole capture."""
    truth = _truth("eager.truth.json")
    ov = overview(api.load(fixture(UNANNOTATED, "eager.sqlite")))
    line = steady_line(ov)
    assert line is not None and line.startswith("Steady state: ") and "found from the work" in line
    assert ov.findings and ov.findings[0].scope.startswith("steady state")
    assert ov.headline["steady_iterations"] >= truth["iters"] - 3
    # the NVTX-annotated twin: the ranges win, and the work agrees with them (no note)
    nvtx = iterations(api.load(fixture(UNANNOTATED, "eager_nvtx.sqlite")))
    assert nvtx is not None and nvtx.signal == "NVTX ranges" and len(nvtx.table) == truth["iters"]
    assert not any("repeats differently" in n for n in nvtx.notes), nvtx.notes


def test_what_the_engine_already_holds_does_not_change_the_iterations() -> None:
    """A second look reads the engine's tables from the cache with every column an earlier look
    loaded (the kernels' ``pid`` among them): the queries must not bind to those by chance."""
    from nsighttk import engine

    fresh = iterations(api.load(fixture(UNANNOTATED, "eager.sqlite")))
    p = api.load(fixture(UNANNOTATED, "eager.sqlite"))
    engine.of(p).need({"kernels": ["pid", "external_id"], "api": ["pid", "tid"]})
    again = iterations(p)
    assert fresh is not None and again is not None
    assert len(again.table) == len(fresh.table) and again.signal == fresh.signal


def test_torch_compile_autotuning_is_kept_out_of_the_steady_state(tmp_path: Path) -> None:
    """The real torch.compile capture (xz-packed: 3.2 MB unpacked): its NVTX steps are the
    program's iterations, the steady state's median is the printed one, and the autotuning's
    L2-clearing fills before the loop are counted apart from it."""
    import lzma

    from conftest import fixture

    packed = fixture(UNANNOTATED, "compile_nvtx.sqlite.xz")
    capture_file = tmp_path / "compile_nvtx.sqlite"
    capture_file.write_bytes(lzma.decompress(packed.read_bytes()))
    truth = _truth("compile_nvtx.truth.json")
    p = api.load(capture_file)
    it = iterations(p)
    assert it is not None and len(it.table) == truth["iters"]
    median = truth["median_after_first_ms"]
    assert abs(it.steady["duration_ns"]["median"] / 1e6 - median) <= 0.1 * median
    before = phases(p, it)["before_steady"]
    assert before["warmup_iterations"] >= 1
    assert before["fills_not_in_steady"] >= 0.9 * before["kernels_not_in_steady"] > 1000
