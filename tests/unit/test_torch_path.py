"""The torch.profiler path without a GPU: Kineto traces captured on an H100 (tests/fixtures/
h100-torch2.11, with PyTorch's own key_averages of the same runs) load into the Profile and agree
with key_averages; the kernel-name decoder on real names; the operator knowledge file;
`nsighttk torch`, `nsighttk explain` and `nsighttk model bert` end to end on the CPU; bad input."""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_exit, fixture, refused

from nsighttk.analysis.kernels.names import decode, knowledge
from nsighttk.analysis.torch_ops import category_summary, op_summary
from nsighttk.cli import cli
from nsighttk.load.kineto import load_kineto

FIX = fixture("h100-torch2.11")  # made by tests/gpu/torch_acceptance.sh


def _fixture(*parts: str) -> Path:
    return fixture("h100-torch2.11", *parts)


def _key_averages(name: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for r in json.loads(_fixture(name, "key_averages.json").read_text()):
        k = out.setdefault(r["key"], {"count": 0, "cpu": 0.0, "self_dev": 0.0})
        k["count"] += r["count"]
        k["cpu"] += r["cpu_time_total_us"]
        k["self_dev"] += r["self_device_time_total_us"]
    return out


def test_h100_trace_loads_into_the_profile() -> None:
    p = load_kineto(_fixture("square", "trace.json"))
    assert p.counts() == {"kernels": 21, "memcpy": 0, "memset": 0, "api": 25, "ops": 69, "nvtx": 21, "metrics": 0,
                          "rules": 0, "gpus": 1}
    g = p.gpus.iloc[0]
    assert (g["name"], g["sm_count"], g["compute_capability"]) == ("NVIDIA H100 80GB HBM3", 132, "9.0")
    k = p.kernels
    assert (k["duration_ns"] > 0).all() and (k["end_ns"] == k["start_ns"] + k["duration_ns"]).all()
    assert k["grid_x"].notna().all() and k["block_x"].notna().all() and k["registers_per_thread"].notna().all()
    assert set(p.nvtx["name"]) == {f"square/{v}" for v in
                                   ("torch_square", "mul", "pow", "cuda", "triton_rows", "triton", "compiled")}
    assert p.ops["depth"].max() >= 1 and p.ops["parent"].notna().any()
    bert = load_kineto(_fixture("bert_bs1_seq128.trace.json.gz")).kernels
    assert (bert["short_name"].str.len() > 0).all()  # also for Kineto's "(anonymous namespace)" names
    assert "vectorized_layer_norm_kernel" in set(bert["short_name"])


@pytest.mark.parametrize("name", ["square", "gelu", "raises"])
def test_op_times_agree_with_key_averages(name: str) -> None:
    """Per op: calls, CPU total and self device time equal torch.profiler's key_averages of the
    same run (to its microsecond decimals); all kernel time is attributed."""
    p = load_kineto(_fixture(name, "trace.json"))
    ops = op_summary(p)
    ka = _key_averages(name)
    cpu_ops = ops[ops["cpu_total_ns"] > 0]
    assert len(cpu_ops) >= 4
    for r in cpu_ops.itertuples():
        k = ka[r.op]
        # key_averages also counts the device-side event of a kernel named like an op (Inductor's)
        assert r.calls in (k["count"], k["count"] / 2), r.op
        assert r.cpu_total_ns / 1e3 == pytest.approx(k["cpu"], abs=0.01), r.op
        assert r.self_device_ns / 1e3 == pytest.approx(k["self_dev"] / (2 if r.calls != k["count"] else 1),
                                                       abs=0.01), r.op
    assert ops["self_device_ns"].sum() == p.kernels["duration_ns"].sum() + p.memcpy["duration_ns"].sum() + \
        p.memset["duration_ns"].sum()


def test_categories_and_sources_from_the_knowledge_file() -> None:
    p = load_kineto(_fixture("bert_bs1_seq128.trace.json.gz"))
    ops = op_summary(p)
    cats = category_summary(p)
    assert cats.iloc[0]["category"] == "matrix" and cats.iloc[0]["device_pct"] > 50
    addmm = ops[ops["op"] == "aten::addmm"].iloc[0]
    assert addmm["category"] == "matrix" and addmm["cuda_sources"] == ["aten/src/ATen/native/cuda/Blas.cpp"]
    assert addmm["func"].startswith("addmm(Tensor self")
    attn = ops[ops["category"] == "attention"]
    assert "aten::_efficient_attention_forward" in set(attn["op"])


def test_knowledge_file_is_consistent() -> None:
    k = knowledge()
    cats = set(k["categories"])
    assert cats == {"matrix", "attention", "normalization", "activation", "embedding", "elementwise", "reduction",
                    "memory", "communication", "other"}
    assert len(k["ops"]) >= 50
    for op, e in k["ops"].items():
        assert e["category"] in cats, op
        assert all(not s.startswith("/") for s in e["cuda_sources"]), op
        if e["func"]:
            base = op.split("::")[1]
            assert e["func"].split("(")[0].split(".")[0] == base, op
    for pat in k["op_patterns"] + k["kernel_patterns"]:
        re.compile(pat["regex"])
        assert pat["category"] in cats


def _real_kernel_names() -> set[str]:
    names: set[str] = set()
    fixtures = Path(__file__).parents[1] / "fixtures"
    for f in fixtures.glob("*/*.sqlite"):
        with sqlite3.connect(f) as c, contextlib.suppress(sqlite3.OperationalError):  # no kernel table: skip
            names |= {n for (n,) in c.execute("select s.value from CUPTI_ACTIVITY_KIND_KERNEL k "
                                              "join StringIds s on s.id = k.demangledName")}
    for f in FIX.glob("*/trace.json"):
        names |= set(load_kineto(f).kernels["name"])
    with gzip.open(FIX / "bert_bs1_seq128.trace.json.gz", "rt") as fh:
        names |= {e["name"] for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel"}
    stats = json.loads((FIX / "bert_bf16_profiling_stats_bs8_seq256.json").read_text())
    names |= {k["name"] for k in stats["kernels"]}
    return names


def test_decoder_on_real_kernel_names() -> None:
    names = _real_kernel_names()
    assert len(names) >= 30
    assert any(n.startswith("nvjet_sm90_") for n in names) and any("xmma_gemm" in n for n in names)
    for n in names:
        k = decode(n)
        assert k.family != "unknown", n
        if k.family in ("nvjet", "xmma", "cutlass"):
            assert k.category == "matrix" and k.tile, n
        if "reduce_kernel" in n:
            assert k.category == "reduction", n
        if n.startswith("triton_poi"):
            assert k.family == "inductor" and k.category == "elementwise", n
    x = decode("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x16_stage3_warpsize2x2x1_ff_main_v1")
    assert (x.arch, x.tensor_cores, x.layout, x.tile, x.stages, x.warps) == ("sm_80", False, "tn", "32x32x16", 3,
                                                                               "2x2x1")
    j = decode("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_TNT")
    assert (j.arch, j.tensor_cores, j.tile, j.stages, j.cluster, j.layout) == ("sm_90", True, "192x128x64", 5,
                                                                               "1x2", "TNT")
    ln = decode("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, "
                "false>(int, float, const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)")
    assert ln.category == "normalization" and ln.dtypes == ["bfloat16"]
    g = decode("void at::native::vectorized_elementwise_kernel<(int)4, at::native::GeluCUDAKernelImpl("
               "at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 1)]>(int, T2, T3)")
    assert g.vector_width == 4 and "gelu" in (g.op or "")
    assert decode("triton_red_fused_sum_1").category == "reduction"
    sdpa = [n for n in names if n.startswith("cudnn_generated_fort_native_sdpa_sm90_flash")]
    assert sdpa and all(decode(n).library == "cuDNN (fused SDPA)" and decode(n).arch == "sm_90" for n in sdpa)


def test_explain_command() -> None:
    res = CliRunner().invoke(cli, ["explain", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)[0]
    assert d["library"] == "cuBLAS (nvjet)" and d["tile"] == "256x128x64" and d["stages"] == 4
    text = CliRunner().invoke(cli, ["explain", "triton_poi_fused_add_mul_tanh_0"])
    assert "pointwise: add mul tanh" in text.output


def test_bad_traces(tmp_path: Path) -> None:
    refused(load_kineto, tmp_path / "empty.json", "", "is empty")
    whole = _fixture("raises", "trace.json").read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(whole[: len(whole) // 2])
    assert any("truncated" in n for n in load_kineto(cut).notes)  # what is whole loads (tests/unit/test_kineto.py)
    refused(load_kineto, cut, whole[:40], "ends early or is corrupt")
    refused(load_kineto, tmp_path / "other.json", '{"a": 1}', "no traceEvents")
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(whole))
    assert len(load_kineto(gz).kernels) == 2
    cpu_only = tmp_path / "cpu.json"
    cpu_only.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1.5, "dur": 2,'
                        ' "pid": 1, "tid": 1, "args": {"External id": 1}}]}')
    p = load_kineto(cpu_only)
    assert len(p.ops) == 1 and p.ops["duration_ns"].iloc[0] == 2000 and "no GPU kernels" in p.notes[0]
    res = CliRunner().invoke(cli, ["analyze", str(cut)])
    assert_exit(res, 2)


torch = pytest.importorskip("torch", reason="the torch path needs torch (make setup installs the CPU wheel)")


def test_torch_command_on_cpu(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["torch", "workload:square", "--device", "cpu", "--size", "4096",
                                   "--variants", "torch_square,mul,pow", "--reports-dir", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    ops = {o["op"]: o for o in d["ops"]}
    assert ops["aten::pow"]["calls"] == 6 and ops["aten::mul"]["calls"] == 3  # square and ** go through pow
    run = next(p for p in tmp_path.iterdir() if p.is_dir())
    assert (run / "raw" / "trace.json").is_file() and (run / "raw" / "key_averages.txt").is_file()
    assert json.loads((run / "run.json").read_text())["status"] == "ok"


def test_torch_script_that_raises_keeps_the_profile(tmp_path: Path) -> None:
    script = tmp_path / "bad.py"
    script.write_text("import torch\nx = torch.ones(8) * 2\nraise ValueError('boom')\n")
    res = CliRunner().invoke(cli, ["torch", str(script), "--device", "cpu", "--reports-dir", str(tmp_path / "r")])
    assert_exit(res, 3, line="ValueError: boom", one_line=False)  # and the run dir
    run = next(p for p in (tmp_path / "r").iterdir() if p.is_dir())
    assert json.loads((run / "run.json").read_text())["status"] == "target_failed"
    assert (run / "raw" / "trace.json").is_file()


def test_torch_tensorboard_without_schedule_and_a_script_that_exits(tmp_path: Path) -> None:
    tb = tmp_path / "tb"
    res = CliRunner().invoke(cli, ["torch", "workload:square", "--device", "cpu", "--size", "1024", "--variants",
                                   "mul", "--tensorboard", str(tb), "--reports-dir", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert len(list(tb.glob("*.pt.trace.json"))) == 1
    script = tmp_path / "quits.py"
    script.write_text("import sys\nsys.exit(4)\n")
    res = CliRunner().invoke(cli, ["torch", str(script), "--device", "cpu", "--reports-dir", str(tmp_path / "r")])
    assert_exit(res, 3, line=f"{script}: exited with code 4", one_line=False)


def test_torch_bad_input(tmp_path: Path) -> None:
    r = CliRunner()
    assert "no such file" in r.invoke(cli, ["torch", str(tmp_path / "x.py"), "--device", "cpu"]).output
    res = r.invoke(cli, ["torch", "nope", "--device", "cpu"])
    assert res.exit_code == 2 and "unknown workload 'nope'" in res.output
    res = r.invoke(cli, ["torch", "workload:square", "--device", "cpu", "--schedule", "1,2"])
    assert res.exit_code == 2 and "WAIT,WARMUP,ACTIVE,REPEAT" in res.output
    res = r.invoke(cli, ["torch", "workload:square", "--device", "cpu", "--sort-by", "gpu_time"])
    assert res.exit_code == 2 and "--sort-by 'gpu_time' is not a key_averages column" in res.output


def test_model_bert_on_cpu(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["model", "bert", "--batch-sizes", "1", "--seq-lens", "32", "--device", "cpu",
                                   "--reports-dir", str(tmp_path), "--output-dir", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    out = tmp_path / "out"
    for f in ("profiling_stats_bs1_seq32.json", "kernel_analysis_report_bs1_seq32.md", "trace_bs1_seq32.json",
              "comparison.json", "comparison.md"):
        assert (out / f).is_file(), f
    stats = json.loads((out / "profiling_stats_bs1_seq32.json").read_text())
    assert stats["latency"]["median_ms"] > 0
    top = {o["op"]: o for o in stats["top_ops"]}
    assert top["aten::addmm"]["category"] == "matrix" and top["aten::addmm"]["cuda_sources"]
    md = (out / "kernel_analysis_report_bs1_seq32.md").read_text()
    assert "## Top-10 operators" in md and "native_functions.yaml" in md
    again = CliRunner().invoke(cli, ["model", "bert", "--batch-sizes", "1", "--seq-lens", "32", "--device", "cpu",
                                     "--output-dir", str(out)])
    assert again.exit_code == 2 and "does not overwrite" in again.output


def test_model_never_overwrites_and_says_what_it_skipped(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    mine = out / "kernel_analysis_report_bs1_seq8.md"
    mine.write_text("my notes")
    args = ["model", "bert", "--batch-sizes", "1", "--seq-lens", "8", "--device", "cpu", "--skip-benchmark",
            "--reports-dir", str(tmp_path / "r")]
    res = CliRunner().invoke(cli, [*args, "--output-dir", str(out)])
    assert res.exit_code == 2 and "already holds kernel_analysis_report_bs1_seq8.md" in res.output
    assert mine.read_text() == "my notes" and not (tmp_path / "r").exists()
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    table = next(p for p in (tmp_path / "r").iterdir() if p.is_dir()).joinpath("comparison.md").read_text()
    assert "| 1 | 8 | ok | - | - | - |" in table and "nan" not in table


def test_model_bad_sizes() -> None:
    res = CliRunner().invoke(cli, ["model", "bert", "--seq-lens", "1024", "--device", "cpu"])
    assert res.exit_code == 2 and "1..512" in res.output


def test_many_valued_options() -> None:
    from nsighttk.cli._base import expand_many

    assert expand_many(["model", "bert", "--batch-sizes", "1", "8", "--seq-lens", "128", "256", "--skip-benchmark"]) \
        == ["model", "bert", "--batch-sizes", "1", "--batch-sizes", "8", "--seq-lens", "128", "--seq-lens", "256",
            "--skip-benchmark"]


def test_ops_without_device_time_rank_by_cpu_and_show_no_device_columns() -> None:
    import io

    import pandas as pd
    from rich.console import Console

    from nsighttk.report import torch_text

    ops = pd.DataFrame({"op": ["aten::mul", "aten::pow"], "category": ["elementwise"] * 2, "calls": [3, 6],
                        "self_device_ns": [0, 0], "device_total_ns": [0, 0], "self_cpu_ns": [100, 900],
                        "cuda_sources": [[], []]})
    cats = pd.DataFrame({"category": ["elementwise"], "self_device_ns": [0], "device_pct": [0.0],
                         "self_cpu_ns": [1000], "calls": [9]})

    def shown(frame: pd.DataFrame) -> str:
        buf = io.StringIO()
        torch_text.render_ops(frame, cats, pd.DataFrame(), Console(file=buf, width=120))
        return buf.getvalue()

    cpu = shown(ops)
    assert "Self device" not in cpu and "% device" not in cpu and "no device time" in cpu
    assert cpu.index("aten::pow") < cpu.index("aten::mul")  # (self CPU: 900 ns before 100 ns)
    gpu = shown(ops.assign(self_device_ns=[50, 10], device_total_ns=[50, 10]))
    assert "Self device" in gpu and "% device" in gpu and gpu.index("aten::mul") < gpu.index("aten::pow")
