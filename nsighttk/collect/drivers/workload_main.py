"""Run a workload's variants for a profiler: ``python -m nsighttk.collect.drivers.workload_main SPEC [options]``.

Each variant is called once untimed (compilation, autotuning), then ``--iters`` times inside an
NVTX range ``<workload>/<variant>``, so ``nsighttk nsys workload:gelu`` shows per variant the GPU
time and the number of kernels it launched (nsys' NVTX projection), and ``nsighttk ncu`` can pick
one variant with ``--nvtx-include gelu/triton/``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nsighttk-workload", description=__doc__.splitlines()[0])
    ap.add_argument("spec", help="a built-in workload name or a .py file defining WORKLOAD")
    ap.add_argument("--size", type=int, default=None, help="elements (default: the workload's largest size)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--variants", default=None, help="comma-separated (default: all that can run here)")
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--arch", default=None, help="build the CUDA-extension variants for this arch (sm_XX)")
    args = ap.parse_args(argv)

    import torch

    from nsighttk.bench import _torch_dtype
    from nsighttk.errors import NsightTKError
    from nsighttk.workload import cuda_ext, load_workload, select_variants

    try:
        wl = load_workload(args.spec)
        names = select_variants(wl, args.variants.split(",") if args.variants else None)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        size = args.size or max(wl.sizes)
        inputs = wl.make_inputs(size, _torch_dtype(args.dtype), device)
    except NsightTKError as ex:
        print(f"nsighttk: error: {ex}", file=sys.stderr)
        return 2
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with cuda_ext.arch_scope(args.arch):
        return _run_variants(wl, names, inputs, size, device, sync, args)


def _run_variants(wl: Any, names: list[str], inputs: tuple[Any, ...], size: int, device: str,
                  sync: Callable[[], Any], args: argparse.Namespace) -> int:
    from nsighttk.nvtx import nvtx_range
    from nsighttk.workload import missing_requirements

    for name in names:
        variant = wl.variants[name]
        why = missing_requirements(variant, device)
        if why:
            print(f"{wl.name}/{name}: skipped ({'; '.join(why)})")
            continue
        variant.fn(*inputs)  # first call outside the range: compilation and autotuning
        sync()
        with nvtx_range(f"{wl.name}/{name}"):
            for _ in range(args.iters):
                variant.fn(*inputs)
            sync()
        print(f"{wl.name}/{name}: {args.iters} calls on {size:,} {args.dtype} elements ({device})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
