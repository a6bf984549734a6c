"""Tool discovery: overrides, PATH, CUDA_HOME, bundled nsys inside Nsight Compute; importer check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nsighttk import toolchain
from nsighttk.cli import cli


def fake_tool(path: Path, version_line: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No tools anywhere: empty PATH, no CUDA_HOME, no /opt/nvidia, no distro copies."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(toolchain, "NVIDIA_OPT", str(tmp_path / "opt-nvidia"))
    monkeypatch.setattr(toolchain, "LIB_GLOB", str(tmp_path / "nolib" / "*" / "nsys"))
    monkeypatch.setattr(toolchain, "_cuda_roots", lambda: [(r, v) for r, v in
                                                          [(str(tmp_path / "cuda"), "CUDA_HOME")]
                                                          if (tmp_path / "cuda").exists()])
    return tmp_path


def test_missing_everywhere(bare: Path) -> None:
    info = toolchain.find_tool("nsys")
    assert not info.found
    with pytest.raises(toolchain.ToolNotFound, match=r"nsys not found.*NSIGHTTK_NSYS"):
        toolchain.require_tool("nsys")


def test_override_wins(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = fake_tool(bare / "x" / "my-nsys", "NVIDIA Nsight Systems version 2025.3.1.0 (build)")
    monkeypatch.setenv("NSIGHTTK_NSYS", str(exe))
    info = toolchain.find_tool("nsys")
    assert (info.path, info.version, info.source) == (str(exe), "2025.3.1.0", "override (NSIGHTTK_NSYS)")


def test_override_not_executable_is_reported(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSIGHTTK_NCU", str(bare / "nope"))
    info = toolchain.find_tool("ncu")
    assert not info.found and "NSIGHTTK_NCU" in (info.problem or "")


def test_path_then_cuda_home(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_tool(bare / "cuda" / "bin" / "nvcc", "Cuda compilation tools, release 13.0, V13.0.88")
    toolchain.clear_cache()
    assert toolchain.find_tool("nvcc").source == "CUDA_HOME"
    fake_tool(bare / "empty-path" / "nvcc", "Cuda compilation tools, release 12.9, V12.9.1")
    toolchain.clear_cache()
    info = toolchain.find_tool("nvcc")
    assert info.source == "PATH" and info.version == "12.9"


def test_nsys_bundled_inside_nsight_compute(bare: Path) -> None:
    nsys = fake_tool(bare / "opt-nvidia" / "nsight-compute" / "2025.3.1" / "host" / "target-linux-x64" / "nsys",
                     "NVIDIA Nsight Systems version 2025.3.1.0")
    info = toolchain.find_tool("nsys")
    assert info.path == str(nsys) and info.source == "bundled with Nsight Compute"


def test_newest_standalone_nsys_first(bare: Path) -> None:
    for v in ("2024.1.1", "2025.3.1"):
        fake_tool(bare / "opt-nvidia" / "nsight-systems" / v / "bin" / "nsys", f"NVIDIA Nsight Systems version {v}.0")
    assert toolchain.find_tool("nsys").version == "2025.3.1.0"


def test_importer_with_missing_libdw(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = bare / "opt-nvidia" / "nsight-compute" / "2025.3.1" / "host" / "target-linux-x64"
    nsys = fake_tool(d / "nsys", "NVIDIA Nsight Systems version 2025.3.1.0")
    (d / "QdstrmImporter").write_text("")
    ldd = "\tlibdw.so.1 => not found\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x1)\n"
    monkeypatch.setattr(toolchain, "_run", lambda cmd, timeout=30: ldd if cmd[0] == "ldd" else None)
    check = toolchain.check_importer(str(nsys))
    assert check.ok is False and check.missing == ["libdw.so.1"]
    assert "libdw1" in (check.hint or "") and "LD_LIBRARY_PATH" in (check.hint or "")


def test_doctor_json_without_gpu_or_tools(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchain, "_gpus_libcuda", lambda: None)
    res = CliRunner().invoke(cli, ["doctor", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert set(d["tools"]) == {"nvcc", "nsys", "ncu", "nvidia-smi", "compute-sanitizer", "cuobjdump"}
    assert d["gpus"] == [] and d["default_arch"] == "sm_75"
    assert "nsys" in d["disabled"] and "ncu_report" in d["python_modules"]


def test_doctor_table_mentions_what_is_disabled(bare: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchain, "_gpus_libcuda", lambda: None)
    res = CliRunner().invoke(cli, ["doctor"])
    assert res.exit_code == 0
    assert "GPU: none visible" in res.stdout and "capturing timelines" in res.stdout
