"""nvcc command lines, arch checks, the build cache, and the Makefile's -gencode idiom."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from conftest import requires_nvcc

from nsighttk.build import BuildConfig, build, gencode_flags, list_samples, nvcc_command, samples_dir
from nsighttk.errors import UsageError, WorkloadError

SAMPLES = ["add", "add_block", "add_float4", "add_grid", "add_grid_stride", "add_managed", "add_prefetch", "gelu",
           "matmul_tiled", "square", "sync_pitfalls"]


def test_samples_are_bundled() -> None:
    assert list_samples() == SAMPLES


def test_single_arch_command() -> None:
    cmd = nvcc_command("nvcc", Path("a.cu"), Path("build/sm_90/a"), ["sm_90"], BuildConfig())
    assert cmd == ["nvcc", "-O3", "-gencode=arch=compute_90,code=sm_90", "-gencode=arch=compute_90,code=compute_90",
                   "-lineinfo", "-o", "build/sm_90/a", "a.cu"]


def test_fat_binary_sass_for_each_ptx_for_highest() -> None:
    assert gencode_flags(["sm_90", "sm_80", "sm_100"]) == [
        "-gencode=arch=compute_90,code=sm_90", "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_100,code=sm_100", "-gencode=arch=compute_100,code=compute_100"]


def test_no_lineinfo_and_extra_flags() -> None:
    cmd = nvcc_command("nvcc", Path("a.cu"), Path("o"), ["sm_80"], BuildConfig(lineinfo=False, extra_flags=["-G"]))
    assert "-lineinfo" not in cmd and cmd[-4:] == ["-G", "-o", "o", "a.cu"]


def test_unknown_sample() -> None:
    with pytest.raises(WorkloadError, match=r"no sample or \.cu file named 'nope'"):
        build("nope")


@requires_nvcc
def test_unsupported_arch_lists_supported() -> None:
    with pytest.raises(UsageError) as ex:
        build("add", BuildConfig(["sm_70"]))
    assert "cannot build sm_70" in str(ex.value) and "sm_75 sm_80" in str(ex.value)


@requires_nvcc
def test_build_cache_reuse_and_invalidation(tmp_path: Path) -> None:
    src = tmp_path / "k.cu"
    src.write_text('#include "h.h"\n__global__ void k(float* x) { x[0] = V; }\nint main() { return 0; }\n')
    (tmp_path / "h.h").write_text("#define V 1.0f\n")
    cfg = BuildConfig(["sm_80", "sm_90"], out_root=tmp_path / "build")
    first = build(src, cfg)
    assert not first.cached and first.binary == tmp_path / "build" / "sm_80-sm_90" / "k"
    assert subprocess.run([str(first.binary)]).returncode == 0
    assert build(src, cfg).cached
    time.sleep(0.01)
    (tmp_path / "h.h").write_text("#define V 2.0f\n")  # an included header changed
    assert not build(src, cfg).cached
    assert not build(src, BuildConfig(["sm_80", "sm_90"], lineinfo=False, out_root=tmp_path / "build")).cached
    assert build(src, BuildConfig(["sm_80", "sm_90"], lineinfo=False, out_root=tmp_path / "build")).cached


@requires_nvcc
def test_build_error_is_one_clear_line(tmp_path: Path) -> None:
    from nsighttk.errors import BuildFailed

    src = tmp_path / "bad.cu"
    src.write_text("__global__ void k( { }\n")
    with pytest.raises(BuildFailed, match=r"nvcc failed on .*bad\.cu: .*error"):
        build(src, BuildConfig(["sm_80"], out_root=tmp_path / "b"))


@requires_nvcc
def test_a_build_says_done_only_when_it_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from nsighttk import settings
    from nsighttk.errors import BuildFailed

    monkeypatch.setenv("NSIGHTTK_QUIET", "0")
    settings.use(None)
    (tmp_path / "bad.cu").write_text("__global__ void k( { }\n")
    (tmp_path / "good.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\nint main() { return 0; }\n")
    with pytest.raises(BuildFailed):
        build(tmp_path / "bad.cu", BuildConfig(["sm_80"], out_root=tmp_path / "b"))
    err = capsys.readouterr().err
    assert "nvcc bad.cu for sm_80" in err and "done in" not in err
    build(tmp_path / "good.cu", BuildConfig(["sm_80"], out_root=tmp_path / "b"))
    assert "nvcc good.cu for sm_80: done in" in capsys.readouterr().err


@requires_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_sample_compiles(arch: str, tmp_path: Path) -> None:
    for name in SAMPLES:
        res = build(name, BuildConfig([arch], out_root=tmp_path))
        assert res.binary.is_file(), name


@requires_nvcc
def test_make_samples_uses_gencode_idiom(tmp_path: Path) -> None:
    root = samples_dir().parent
    out = subprocess.run(["make", "-n", "samples", 'SMS=80 90'], cwd=root, capture_output=True, text=True, check=True)
    line = next(ln for ln in out.stdout.splitlines() if "add_grid.cu" in ln)
    assert "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 " \
           "-gencode arch=compute_90,code=compute_90" in line
    assert "-lineinfo" in line and "build/samples-80-90/add_grid" in line
    real = subprocess.run(["make", "build/samples-80-90/square", "SMS=80 90"], cwd=root, capture_output=True,
                          text=True)
    assert real.returncode == 0, real.stderr
    assert (root / "build" / "samples-80-90" / "square").is_file()
