"""The wheel is whole: built from this checkout, installed (not editable) into a fresh virtual
environment and run from an unrelated folder, every kind of command finds the samples, workloads
and data it ships.  The new environment takes its dependencies (pandas, torch, ...) from the test
interpreter's site-packages through a .pth file; nsighttk itself comes only from the wheel."""

from __future__ import annotations

import importlib.util
import os
import site
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import capture, have_nvcc

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.wheel


@dataclass
class Installed:
    wheel: Path
    python: Path
    bin: Path
    site: Path


def _run(cmd: list[str | Path], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", root / "dist", ROOT]
    if importlib.util.find_spec("hatchling"):  # the dev extra has it: build offline, no isolated env
        build.insert(4, "--no-build-isolation")
    r = _run(build)
    assert r.returncode == 0, r.stderr
    (wheel,) = (root / "dist").glob("nsighttk-*.whl")
    venv = root / "venv"
    r = _run([sys.executable, "-m", "venv", "--without-pip", venv])
    assert r.returncode == 0, r.stderr
    python = venv / "bin" / "python"
    purelib = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    outer = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (purelib / "_nsighttk_test_deps.pth").write_text("\n".join(outer) + "\n")
    r = _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel])
    assert r.returncode == 0, r.stderr
    return Installed(wheel, python, venv / "bin", purelib)


@pytest.fixture
def nsighttk(installed: Installed, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run the installed ``nsighttk`` in an empty folder, with nothing pointing at this checkout."""
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "NSIGHTTK_KERNELS", "NSIGHTTK_SAMPLES", "VIRTUAL_ENV")}
    env["PATH"] = f"{installed.bin}{os.pathsep}{env.get('PATH', '')}"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return _run([installed.bin / "nsighttk", *args], cwd=away, env=env)

    run.cwd = away  # type: ignore[attr-defined]
    return run


def test_the_wheel_carries_every_sample_workload_and_data_file(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for folder in ("cuda_samples", "kernels"):
        shipped = [p.relative_to(ROOT).as_posix() for p in (ROOT / folder).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts]
        assert shipped and all(f"nsighttk/bundled/{f}" in names for f in shipped), sorted(names)
    package = [p.relative_to(ROOT).as_posix() for p in (ROOT / "nsighttk").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    assert {"nsighttk/py.typed", "nsighttk/data/ops.json", "nsighttk/report/assets/report.js"} <= set(package)
    assert set(package) <= names, sorted(set(package) - names)
    assert not any("__pycache__" in n or n.startswith(("tests/", "build/")) for n in names)


def test_installed_package_is_the_wheel_not_the_checkout(installed: Installed, nsighttk) -> None:  # type: ignore[no-untyped-def]
    r = _run([installed.python, "-c", "import nsighttk, nsighttk.build as b, nsighttk.workload as w; "
              "print(nsighttk.__file__); print(b.samples_dir()); print(w.kernels_dir())"],
             cwd=nsighttk.cwd, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    module, samples, kernels = r.stdout.split()
    assert Path(module).is_relative_to(installed.site)
    assert Path(samples) == installed.site / "nsighttk" / "bundled" / "cuda_samples"
    assert Path(kernels) == installed.site / "nsighttk" / "bundled" / "kernels"


def test_build_list_names_every_sample(nsighttk) -> None:  # type: ignore[no-untyped-def]
    r = nsighttk("build", "--list")
    assert r.returncode == 0, r.stderr
    expected = sorted(p.stem for p in (ROOT / "cuda_samples").glob("*.cu"))
    assert expected and all(name in r.stdout for name in expected), r.stdout


@pytest.mark.nvcc
@pytest.mark.skipif(not have_nvcc(), reason="nvcc not installed")
def test_build_a_sample(nsighttk) -> None:  # type: ignore[no-untyped-def]
    r = nsighttk("build", "add", "--arch", "sm_80")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (nsighttk.cwd / "build" / "sm_80" / "add").is_file(), list(nsighttk.cwd.rglob("*"))


def test_bench_a_workload_on_cpu(nsighttk) -> None:  # type: ignore[no-untyped-def]
    if importlib.util.find_spec("torch") is None:
        pytest.skip("benchmarks need torch (make test installs the CPU wheel)")
    r = nsighttk("bench", "add", "--device", "cpu", "--sizes", "4096", "--warmup-ms", "1", "--rep-ms", "2", "--json")
    assert r.returncode == 0, r.stderr
    assert '"workload": "add"' in r.stdout and '"variant": "torch_add"' in r.stdout and '"status": "ok"' in r.stdout


def test_analyze_a_shipped_capture(nsighttk) -> None:  # type: ignore[no-untyped-def]
    r = nsighttk("analyze", str(capture("streams_demo")))
    assert r.returncode == 0, r.stderr
    assert "cudaLaunchKernel" in r.stdout


def test_arch_and_doctor(nsighttk) -> None:  # type: ignore[no-untyped-def]
    r = nsighttk("arch", "H100")
    assert r.returncode == 0 and "H100" in r.stdout and "sm_90" in r.stdout, r.stdout + r.stderr
    r = nsighttk("doctor")
    assert r.returncode == 0 and "nvcc" in r.stdout, r.stdout + r.stderr
