"""The benchmark-workload protocol: what ``kernels/<name>.py`` (or a user's ``.py`` file) defines.

A module defines ``WORKLOAD``, a :class:`Workload` with a way to make inputs for a size and dtype,
a float64 reference, named variants (:class:`Variant`, each with its requirements, e.g.
``("cuda", "triton")``), and the bytes each call must move and the FLOPs it must do (for bandwidth
and roofline figures).  Variants whose requirements are not met are listed as skipped, with the
reason.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk.errors import UsageError, WorkloadError
from nsighttk.paths import bundled_dir
from nsighttk.workload import cuda_ext

# ------------------------------------------------------------------------------------- workloads


@dataclass
class Variant:
    """One implementation of a workload: ``fn(*inputs) -> output``, a tensor or a list of tensors
    (checked as one: their values one after another)."""

    fn: Callable[..., Any]
    requires: tuple[str, ...] = ()  # "cuda", "triton", "compile" (torch.compile), "cuda_ext" (nvcc + ninja)
    description: str = ""


@dataclass
class Workload:
    """A benchmarkable operation (see the module doc for the protocol)."""

    name: str
    description: str
    make_inputs: Callable[[int, Any, Any], tuple[Any, ...]]  # (size, torch dtype, device) -> inputs
    reference: Callable[..., Any]  # float64 inputs -> float64 output
    variants: dict[str, Variant]
    bytes: Callable[[int, int], int]  # (size, element size) -> bytes a call must move
    flops: Callable[[int], int] = lambda size: 0
    sizes: tuple[int, ...] = (1 << 20, 1 << 24)
    baseline: str | None = None  # variant to compare against (default: the first)
    tolerance: dict[str, float] = field(default_factory=dict)  # per dtype, overrides TOLERANCE
    #: a reproducer's record from its trace (``nsighttk repro``): ``per_call_ns`` (the op's own time
    #: per call), ``kernels`` (the names it launched), ``dtype`` (its inputs' recorded dtype, which
    #: ``--dtype`` does not change), ``capture``, ``op``
    trace: dict[str, Any] | None = None
    #: the variants write their inputs (an in-place op): each variant is checked on fresh inputs
    mutates: bool = False


#: Relative error ||out - ref|| / ||ref|| allowed per dtype (float64 reference).
TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2, "float64": 1e-12}


def kernels_dir() -> Path:
    """Where the built-in workloads are: ``$NSIGHTTK_KERNELS``, the checkout, or ./kernels."""
    return bundled_dir("kernels")


def list_workloads() -> list[str]:
    d = kernels_dir()
    names = []
    for p in sorted(d.glob("*.py")) if d.is_dir() else []:
        if "WORKLOAD" in p.read_text(errors="replace"):
            names.append(p.stem)
    return names


def load_workload(name_or_path: str) -> Workload:
    """A built-in workload by name, or a user's ``.py`` file defining ``WORKLOAD``."""
    p = Path(name_or_path)
    if p.suffix == ".py":
        if not p.is_file():
            raise WorkloadError(f"{p}: no such file", "check the path")
        path = p
    else:
        path = kernels_dir() / f"{name_or_path}.py"
        if not path.is_file() or name_or_path not in list_workloads():
            raise WorkloadError(f"unknown workload {name_or_path!r}",
                                f"known: {', '.join(list_workloads()) or 'none'}; or give a .py file defining WORKLOAD")
    spec = importlib.util.spec_from_file_location(f"nsighttk_workload_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise WorkloadError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as ex:  # the user's code: report it in one line
        raise WorkloadError(f"{path}: raised {type(ex).__name__} on import: {ex}",
                            "fix the file; nsighttk imports it to find WORKLOAD") from None
    wl = getattr(module, "WORKLOAD", None)
    if not isinstance(wl, Workload):
        raise WorkloadError(f"{path}: defines no WORKLOAD", "add WORKLOAD = Workload(...) (see kernels/gelu.py)")
    return wl


def select_variants(wl: Workload, names: list[str] | None) -> list[str]:
    if not names:
        return list(wl.variants)
    bad = [n for n in names if n not in wl.variants]
    if bad:
        raise UsageError(f"workload {wl.name} has no variant {', '.join(bad)}", f"variants: {', '.join(wl.variants)}")
    return names


def missing_requirements(variant: Variant, device: str) -> list[str]:
    """Why a variant cannot run here (empty when it can)."""
    why = []
    for req in variant.requires:
        if req == "cuda" and device != "cuda":
            why.append("needs a CUDA GPU")
        elif req == "triton" and importlib.util.find_spec("triton") is None:
            why.append("needs triton")
        elif req == "triton" and device != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
            why.append("Triton needs a GPU (or TRITON_INTERPRET=1)")
        elif req == "compile" and device == "cuda" and importlib.util.find_spec("triton") is None:
            why.append("torch.compile needs triton for CUDA")
        elif req == "cuda_ext" and device == "cuda":
            why += cuda_ext.missing()
    return why


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile(fn)``, compiled on the first call (not at import: compiling is slow)."""
    cache: list[Callable[..., Any]] = []

    def call(*args: Any) -> Any:
        if not cache:
            import torch

            cache.append(torch.compile(fn))
        return cache[0](*args)

    call.__name__ = f"compiled_{getattr(fn, '__name__', 'fn')}"
    return call
