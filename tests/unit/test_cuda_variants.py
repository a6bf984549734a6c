"""The CUDA-extension and Triton variants without a GPU: the .cu kernels compile with nvcc for
sm_80 and sm_90, the PyTorch binding compiles against torch's headers, every Triton kernel gives
the right answer under TRITON_INTERPRET=1, and the requirements say why a variant cannot run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nsighttk.build import gencode_flags
from nsighttk.toolchain import find_tool
from nsighttk.workload import Variant, cuda_ext, list_workloads, load_workload, missing_requirements

torch = pytest.importorskip("torch", reason="workloads need torch (make setup installs the CPU wheel)")

NVCC = find_tool("nvcc").path


def test_nvcc_check_command_is_a_list_with_both_archs(tmp_path: Path) -> None:
    cmd = cuda_ext.nvcc_check_command("nvcc", Path("k/elementwise.cu"), tmp_path / "e.o", ["sm_80", "sm_90"])
    assert cmd == ["nvcc", "-c", "-O3", "-lineinfo", "-std=c++17", *gencode_flags(["sm_80", "sm_90"]),
                   "-o", str(tmp_path / "e.o"), "k/elementwise.cu"]
    assert "-gencode=arch=compute_80,code=sm_80" in cmd and "-gencode=arch=compute_90,code=sm_90" in cmd


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
@pytest.mark.parametrize("source", cuda_ext.KERNEL_SOURCES)
def test_cuda_kernels_compile_for_sm80_and_sm90(source: str, tmp_path: Path) -> None:
    assert NVCC is not None
    obj = tmp_path / (source + ".o")
    cmd = cuda_ext.nvcc_check_command(NVCC, cuda_ext.source_dir() / source, obj, ["sm_80", "sm_90"])
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    cuobjdump = shutil.which("cuobjdump") or next(
        (str(p) for p in (Path(NVCC).parent / "cuobjdump", Path("/usr/local/cuda/bin/cuobjdump")) if p.is_file()), None)
    if cuobjdump:  # the object holds SASS for both archs
        listing = subprocess.run([cuobjdump, "--list-elf", str(obj)], capture_output=True, text=True, check=True)
        assert "sm_80" in listing.stdout and "sm_90" in listing.stdout


@pytest.mark.skipif(shutil.which("g++") is None or NVCC is None, reason="needs g++ and the CUDA headers")
def test_binding_compiles_against_torch_headers() -> None:
    from torch.utils.cpp_extension import include_paths

    assert NVCC is not None
    cuda_include = Path(os.path.realpath(NVCC)).parent.parent / "include"
    if not (cuda_include / "cuda_runtime_api.h").is_file():
        cuda_include = Path("/usr/local/cuda/include")
    py_include = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                                capture_output=True, text=True, check=True).stdout.strip()
    cmd = ["g++", "-std=c++20", "-fsyntax-only", "-w", "-DTORCH_EXTENSION_NAME=nsighttk_kernels",
           *[f"-I{p}" for p in include_paths()], f"-I{cuda_include}", f"-I{py_include}",
           f"-I{cuda_ext.source_dir()}", str(cuda_ext.source_dir() / cuda_ext.BINDING_SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_every_binding_function_has_a_variant() -> None:
    text = (cuda_ext.source_dir() / cuda_ext.BINDING_SOURCE).read_text()
    for op in ("add", "square", "gelu", "softmax", "matmul", "cdist"):
        assert f'm.def("{op}"' in text
        wl = load_workload(op)
        assert wl.variants["cuda"].fn is getattr(cuda_ext, op)
        assert wl.variants["cuda"].requires == ("cuda", "cuda_ext")


def test_cuda_variants_say_why_they_cannot_run() -> None:
    v = Variant(cuda_ext.add, requires=("cuda", "cuda_ext"))
    assert missing_requirements(v, "cpu") == ["needs a CUDA GPU"]
    if torch.version.cuda is None:  # the CPU wheel (CI)
        assert "needs a CUDA build of PyTorch" in cuda_ext.missing()
        assert "needs a CUDA build of PyTorch" in missing_requirements(v, "cuda")


def test_arch_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    """The arch reaches the extension through a scope (a context variable), never a module global."""
    from nsighttk import settings

    monkeypatch.setenv("NSIGHTTK_ARCH", "sm_80")
    settings.use(None)
    with cuda_ext.arch_scope("90"):
        assert cuda_ext.target_arch() == "sm_90"
        with cuda_ext.arch_scope("sm_86"):
            assert cuda_ext.target_arch() == "sm_86"
        assert cuda_ext.target_arch() == "sm_90"
    assert cuda_ext.target_arch() == "sm_80"  # the default: $NSIGHTTK_ARCH


TRITON_SIZES = {"add": 5000, "square": 3 * 4096, "gelu": 5000, "softmax": 3 * 4096, "matmul": 96, "cdist": 100}

# TRITON_INTERPRET must be set before triton is first imported (triton's own @jit helpers, e.g. the
# combine functions behind tl.sum, are made then), as users set it: so this runs in a fresh process.
_INTERPRET_SCRIPT = """
import json, sys, torch
from nsighttk.workload import TOLERANCE, load_workload, missing_requirements
out = {}
for name, size in json.loads(sys.argv[1]).items():
    wl = load_workload(name)
    inputs = wl.make_inputs(size, torch.float32, "cpu")
    ref = wl.reference(*(x.double() for x in inputs))
    for vname, v in wl.variants.items():
        if "triton" in v.requires:
            got = v.fn(*inputs).double()
            err = float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref))
            out[f"{name}/{vname}"] = {"err": err, "tol": wl.tolerance.get("float32", TOLERANCE["float32"]),
                                      "missing": missing_requirements(v, "cpu")}
print(json.dumps(out))
"""


def test_triton_variants_are_correct_under_the_interpreter() -> None:
    pytest.importorskip("triton", reason="make setup installs triton")
    import json

    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", _INTERPRET_SCRIPT, json.dumps(TRITON_SIZES)], capture_output=True,
                          text=True, env=env, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {k.split("/")[0] for k in results} == set(TRITON_SIZES)
    assert {"square/triton_rows", "square/triton", "matmul/triton", "cdist/triton"} <= set(results)
    for key, r in results.items():
        assert r["missing"] == [], key
        assert r["err"] <= r["tol"], (key, r)


def test_square_has_the_seed_variants() -> None:
    wl = load_workload("square")
    assert {"torch_square", "mul", "pow", "cuda", "triton_rows", "triton", "compiled"} <= set(wl.variants)
    assert set(list_workloads()) >= {"add", "square", "gelu", "softmax", "matmul", "cdist"}
    for name in ("add", "square", "gelu"):
        assert any("compile" in v.requires for v in load_workload(name).variants.values())
