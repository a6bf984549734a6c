"""The CUDA variants of the built-in workloads: ``kernels/cuda/*.cu`` loaded into PyTorch.

The kernels are plain CUDA (raw pointers, a dtype code, a stream); ``bindings.cpp`` adapts them to
tensors.  :func:`load` compiles both with ``torch.utils.cpp_extension.load`` for one arch (the
local GPU's, or the one set by ``--arch`` / :func:`set_arch`) into ``build/torch_ext/<arch>/``;
PyTorch re-uses the built module until a source or flag changes, so only the first call pays the
compile (about a minute).  The arch is passed down, never kept in a module global: the bench and
the workload driver run variants inside :func:`arch_scope` (a context variable).

:func:`nvcc_check_command` is the compile-only command line CI runs for sm_80 and sm_90 (no GPU
and no CUDA build of PyTorch needed).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nsighttk.arch import normalize_sm, sm_to_cc
from nsighttk.build import gencode_flags
from nsighttk.errors import BuildFailed
from nsighttk.paths import bundled_dir
from nsighttk.settings import current

#: Kernel sources (nvcc) and the PyTorch binding (the host compiler), in kernels/cuda/.
KERNEL_SOURCES = ("elementwise.cu", "softmax.cu", "matmul.cu", "cdist.cu")
BINDING_SOURCE = "bindings.cpp"
NVCC_FLAGS = ("-O3", "-lineinfo", "-std=c++17")

_ARCH: contextvars.ContextVar[str | None] = contextvars.ContextVar("nsighttk_cuda_ext_arch", default=None)


def source_dir() -> Path:
    return bundled_dir("kernels") / "cuda"


def sources() -> list[Path]:
    return [source_dir() / s for s in (*KERNEL_SOURCES, BINDING_SOURCE)]


@contextlib.contextmanager
def arch_scope(arch: str | None) -> Iterator[None]:
    """Variants called inside the block build for ``arch`` (``sm_90``; None: the GPU's)."""
    token = _ARCH.set(normalize_sm(arch) if arch else None)
    try:
        yield
    finally:
        _ARCH.reset(token)


def target_arch() -> str:
    arch = _ARCH.get() or current().arch
    if arch:
        return normalize_sm(arch)
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def nvcc_check_command(nvcc: str, source: Path, output: Path, archs: list[str]) -> list[str]:
    """Compile one kernel file to an object for ``archs`` (what CI runs; no PyTorch involved)."""
    return [nvcc, "-c", *NVCC_FLAGS, *gencode_flags(archs), "-o", str(output), str(source)]


def missing() -> list[str]:
    """Why the CUDA extension cannot be built here (empty when it can)."""
    from nsighttk.toolchain import find_tool

    why = []
    if importlib.util.find_spec("torch") is None:
        return ["needs PyTorch"]
    import torch

    if torch.version.cuda is None:
        why.append("needs a CUDA build of PyTorch")
    if find_tool("nvcc").path is None:
        why.append("needs nvcc to build the CUDA extension")
    else:
        from torch.utils.cpp_extension import is_ninja_available

        if not is_ninja_available():
            why.append("needs ninja to build the CUDA extension (pip install ninja)")
    return why


@functools.cache
def _load(arch: str, build_root: str) -> Any:
    from torch.utils import cpp_extension

    from nsighttk.toolchain import find_tool

    nvcc = find_tool("nvcc").path
    if nvcc and "CUDA_HOME" not in os.environ:  # PyTorch finds nvcc through CUDA_HOME
        os.environ["CUDA_HOME"] = str(Path(os.path.realpath(nvcc)).parent.parent)
    # PyTorch turns this into -gencode flags: SASS for the arch plus its PTX, so a build for an older
    # arch (--arch sm_80 on an H100) still runs, JIT-compiled by the driver.
    os.environ["TORCH_CUDA_ARCH_LIST"] = sm_to_cc(arch) + "+PTX"
    build_dir = Path(build_root) / "torch_ext" / arch
    build_dir.mkdir(parents=True, exist_ok=True)
    name = f"nsighttk_kernels_{arch}"
    fresh = not any(build_dir.glob(f"{name}*.so"))
    if fresh:
        print(f"nsighttk: compiling the CUDA kernels in {source_dir()} for {arch} (once; about a minute)",
              file=sys.stderr)
    try:
        return cpp_extension.load(name=name, sources=[str(p) for p in sources()], build_directory=str(build_dir),
                                  extra_cuda_cflags=list(NVCC_FLAGS), extra_include_paths=[str(source_dir())],
                                  verbose=False)
    except (RuntimeError, OSError, ImportError) as ex:
        lines = [ln for ln in str(ex).splitlines() if "error" in ln.lower()] or str(ex).splitlines()[-2:]
        raise BuildFailed(f"building the CUDA extension for {arch} failed: {' | '.join(lines[:3])}",
                          f"see the log in {build_dir}; check nvcc and that PyTorch's CUDA matches it") from None


def load() -> Any:
    """The compiled extension module for :func:`target_arch` (built on first use)."""
    return _load(target_arch(), str(current().build_root))


def _stream(t: Any) -> int:
    import torch

    return int(torch.cuda.current_stream(t.device).cuda_stream)


# The workload variants: each launches on PyTorch's current stream.
def add(x: Any, y: Any) -> Any:
    return load().add(x, y, _stream(x))


def square(x: Any) -> Any:
    return load().square(x, _stream(x))


def gelu(x: Any) -> Any:
    return load().gelu(x, _stream(x))


def softmax(x: Any) -> Any:
    return load().softmax(x, _stream(x))


def matmul(a: Any, b: Any) -> Any:
    return load().matmul(a, b, _stream(a))


def cdist(x: Any, y: Any) -> Any:
    return load().cdist(x, y, _stream(x))
