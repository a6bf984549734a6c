"""Workloads and `nsighttk bench` on CPU: the protocol, every runnable variant's correctness,
skips with reasons, a user's own workload file, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_exit

from nsighttk.cli import cli
from nsighttk.errors import UsageError, WorkloadError
from nsighttk.workload import list_workloads, load_workload, select_variants

torch = pytest.importorskip("torch", reason="benchmarks need torch (make setup installs the CPU wheel)")

FAST = ["--warmup-ms", "1", "--rep-ms", "3", "--device", "cpu"]


def test_builtin_workloads() -> None:
    assert list_workloads() == ["add", "cdist", "gelu", "matmul", "softmax", "square"]


@pytest.mark.parametrize(("name", "sizes"), [("add", "2^12,1000"), ("square", "2^12,1000"), ("gelu", "2^12,1000"),
                                            ("softmax", "2^13,2^14"), ("matmul", "64,100"), ("cdist", "64,100")])
def test_every_cpu_variant_is_correct_and_gpu_ones_are_skipped_with_a_reason(name: str, sizes: str) -> None:
    res = CliRunner().invoke(cli, ["bench", name, "--sizes", sizes, *FAST, "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    assert len({r["size"] for r in rows}) == 2
    for r in rows:
        if r["status"] == "skipped":
            reasons = set(r["reason"].split("; "))
            assert reasons <= {"needs triton", "needs a CUDA GPU", "Triton needs a GPU (or TRITON_INTERPRET=1)"}
        else:
            assert r["status"] == "ok", r
            assert r["rel_error"] <= 2e-3 and r["median_ms"] > 0 and r["reps"] >= 10
    assert json.loads(res.stdout)["device"] == "cpu"


def test_triton_under_its_interpreter_runs_and_says_no_raw_warning(tmp_path: Path) -> None:
    """On the CPU with TRITON_INTERPRET=1 the Triton variant runs; numpy's floating-point warnings
    inside the interpreter (exp overflowing on the way to a saturated tanh: the result is right,
    as its error column shows) are not printed as a raw ``RuntimeWarning`` with a file and line."""
    pytest.importorskip("triton", reason="make setup installs triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}  # read when triton is imported: a fresh process
    proc = subprocess.run([sys.executable, "-m", "nsighttk", "bench", "gelu", "--variants", "triton", "--sizes",
                           "2^12", "--json", *FAST], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout)["rows"]
    assert [(r["variant"], r["status"]) for r in rows] == [("triton", "ok")]
    assert "Warning" not in proc.stderr, proc.stderr


def test_gelu_manual_is_the_seed_version_and_matches_reference() -> None:
    wl = load_workload("gelu")
    (x,) = wl.make_inputs(1 << 12, torch.float32, "cpu")
    ref = wl.reference(x.double())
    for name in ("torch_gelu", "manual_gelu"):
        got = wl.variants[name].fn(x).double()
        assert float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref)) < 1e-6


def test_user_workload_file_with_two_variants(tmp_path: Path) -> None:
    f = tmp_path / "scale.py"
    f.write_text('''import torch
from nsighttk.workload import Variant, Workload

WORKLOAD = Workload(
    name="scale", description="y = 3x",
    make_inputs=lambda n, dtype, device: (torch.arange(n, dtype=dtype, device=device),),
    reference=lambda x: 3 * x,
    variants={"mul": Variant(lambda x: x * 3), "add3": Variant(lambda x: x + x + x)},
    bytes=lambda n, e: 2 * n * e, sizes=(1024,))
''')
    res = CliRunner().invoke(cli, ["bench", str(f), *FAST, "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    assert [r["variant"] for r in rows] == ["mul", "add3"] and all(r["status"] == "ok" for r in rows)
    assert rows[0]["speedup_vs_baseline"] == 1.0


def test_bad_input(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError,
                       match=r"unknown workload 'nope'.*known: add, cdist, gelu, matmul, softmax, square"):
        load_workload("nope")
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(WorkloadError, match=r"broken.py: raised RuntimeError on import: boom"):
        load_workload(str(broken))
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(WorkloadError, match="defines no WORKLOAD"):
        load_workload(str(empty))
    with pytest.raises(UsageError, match="has no variant nope"):
        select_variants(load_workload("add"), ["nope"])
    res = CliRunner().invoke(cli, ["bench", "add", "--device", "cuda"])
    assert res.exit_code == 2 and "PyTorch sees no CUDA GPU" in res.stderr
    res = CliRunner().invoke(cli, ["bench", "add", "--sizes", "lots"])
    assert res.exit_code == 2 and "not a size" in res.output


def test_workload_targets_for_profilers(tmp_path: Path) -> None:
    import sys

    from nsighttk.workload import resolve

    t = resolve("workload:gelu", ["--size", "1024"])
    assert t.kind == "workload"
    assert t.command == [sys.executable, "-m", "nsighttk.collect.drivers.workload_main", "gelu", "--size", "1024"]
    t = resolve("kernels/square.py")
    assert t.kind == "workload" and t.command[-1].endswith("kernels/square.py")
    assert resolve("kernels/streams_demo.py").kind == "python"  # a plain script, no WORKLOAD
    with pytest.raises(WorkloadError, match="unknown workload"):
        resolve("workload:nope")


def test_workload_driver_runs_each_variant(capsys: pytest.CaptureFixture[str]) -> None:
    from nsighttk.collect.drivers.workload_main import main

    assert main(["square", "--size", "4096", "--iters", "2", "--variants", "torch_square,pow,triton"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "square/torch_square: 2 calls on 4,096 float32 elements (cpu)"
    assert out[2].startswith("square/triton: skipped")


def test_profiling_a_workload_end_to_end(fake_nsys: Path) -> None:
    res = CliRunner().invoke(cli, ["nsys", "workload:add", "--", "--size", "2048", "--iters", "1"])
    assert res.exit_code == 0, res.output
    assert "-m nsighttk.collect.drivers.workload_main add --size 2048 --iters 1" in fake_nsys.read_text()


def test_size_larger_than_memory_is_one_line() -> None:
    res = CliRunner().invoke(cli, ["bench", "gelu", "--sizes", "2^40", "--device", "cpu"])
    line = assert_exit(res, 2)
    assert line.startswith("nsighttk: error: size 1,099,511,627,776 needs about") and "choose a smaller --sizes" in line


def test_bandwidth_plot(tmp_path: Path) -> None:
    png = tmp_path / "square.png"
    res = CliRunner().invoke(cli, ["bench", "square", "--variants", "torch_square,mul", "--sizes", "2^10,2^12",
                                   *FAST, "--plot", str(png)])
    assert res.exit_code == 0, res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert f"wrote {png}" in res.stderr


def test_bandwidth_plot_bad_paths_fail_before_benchmarking(tmp_path: Path) -> None:
    for path, msg in ((tmp_path / "x.bmp", "x.bmp: unknown image type"),
                      (tmp_path / "missing" / "x.png", "is not a writable folder")):
        res = CliRunner().invoke(cli, ["bench", "square", "--sizes", "2^10", *FAST, "--plot", str(path)])
        assert_exit(res, 2, line=msg)


def test_bench_arch_is_checked_against_nvcc() -> None:
    res = CliRunner().invoke(cli, ["bench", "square", "--sizes", "2^10", *FAST, "--arch", "sm_50"])
    assert res.exit_code == 2 and "cannot build sm_50" in res.output


def test_workload_target_passes_arch_to_the_driver() -> None:
    from nsighttk.build import BuildConfig
    from nsighttk.workload import resolve

    tgt = resolve("workload:gelu", ["--size", "1024"], BuildConfig(["sm_80"]))
    assert tgt.command[-4:] == ["--size", "1024", "--arch", "sm_80"]
    assert "--arch" not in resolve("workload:gelu", []).command


def test_nsys_pytorch_autograd_nvtx_option() -> None:
    from nsighttk.collect.nsys import NsysOptions, profile_command

    cmd = profile_command("nsys", Path("raw/profile"), ["python", "train.py"], NsysOptions(pytorch="autograd-nvtx"))
    assert "--pytorch=autograd-nvtx" in cmd and cmd.index("--pytorch=autograd-nvtx") < cmd.index("python")
    user = profile_command("nsys", Path("p"), ["x"], NsysOptions(pytorch="autograd-nvtx",
                                                                  extra=["--pytorch=functions-trace"]))
    assert [a for a in user if a.startswith("--pytorch")] == ["--pytorch=functions-trace"]
    res = CliRunner().invoke(cli, ["nsys", "train.py", "--pytorch", "everything"])
    assert res.exit_code == 2 and "--pytorch 'everything': not a mode nsys knows" in res.output
