"""Compile one workload variant so its generated code can be read:
``python -m nsighttk.inspect_main SPEC VARIANT --arch sm_90 [--size N] [--dtype D]``.

The parent (:mod:`nsighttk.collect.compiled`) points ``TRITON_CACHE_DIR`` and
``TORCHINDUCTOR_CACHE_DIR`` at the run directory and sets ``TORCH_LOGS=output_code``, so whatever
Triton and Inductor compile lands there.  With a GPU the variant simply runs once.  Without one
(a login node), Triton variants run under the interpreter while every kernel launch is recorded,
then each launch is compiled ahead of time for ``--arch`` with Triton's own argument
specialization, so the PTX and cubin are the ones the JIT would build for those arguments on
that GPU.  ``torch.compile`` variants on the CPU produce Inductor's C++ instead.

Writes ``driver.json`` (device, AOT or JIT, the launches) into ``--out``.  Exit 2: the variant
cannot run here (the reason on the last line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _record_launches() -> list[tuple[Any, tuple[Any, ...], dict[str, Any], Any]]:
    """Patch the Triton interpreter so every launch is remembered (function, args, kwargs, grid)."""
    from triton.runtime.interpreter import InterpretedFunction

    launches: list[tuple[Any, tuple[Any, ...], dict[str, Any], Any]] = []
    original = InterpretedFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        launches.append((self.fn, args, dict(kwargs), grid))
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    InterpretedFunction.run = run
    return launches


def _compile_ahead(launches: list[tuple[Any, tuple[Any, ...], dict[str, Any], Any]], sm: str) -> list[dict[str, Any]]:
    """Compile each distinct launch for ``sm`` as ``JITFunction.run`` would (same binder, same
    specialization of pointers and integers); the cache manager writes the artifacts."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    cc = int(sm.removeprefix("sm_").rstrip("af"))
    target = GPUTarget("cuda", cc, 32)
    backend = make_backend(target)
    done: dict[str, dict[str, Any]] = {}
    for fn, args, kwargs, grid in launches:
        jf = JITFunction(fn)
        binder = create_function_from_signature(jf.signature, jf.params, backend)
        bound, spec, opts = binder(*args, **kwargs)
        options, signature, constexprs, attrs = jf._pack_args(backend, kwargs, bound, spec, opts)
        key = repr((fn.__qualname__, signature, sorted(constexprs.items()), sorted(attrs.items()), options))
        if key in done:
            done[key]["launches"] += 1
            continue
        kernel = triton.compile(ASTSource(jf, signature, constexprs, attrs), target=target, options=options.__dict__)
        done[key] = {"kernel": kernel.metadata.name, "signature": signature,
                     "constexprs": {str(k): repr(v) for k, v in constexprs.items()},
                     "num_warps": options.num_warps, "num_stages": options.num_stages,
                     "grid": list(grid) if isinstance(grid, tuple | list) else repr(grid), "launches": 1}
    return list(done.values())


def _jit_kernels() -> list[dict[str, Any]]:
    """What the Triton JIT compiled in this process, as the driver loaded it (registers, spills):
    the check on the figures read from the cubins."""
    from triton.runtime.jit import JITFunction

    out = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("nsighttk_workload_"):
            continue
        for obj in vars(module).values():
            if not isinstance(obj, JITFunction):
                continue
            for caches in getattr(obj, "device_caches", {}).values():
                for kernel in caches[0].values():
                    try:
                        kernel._init_handles()
                        out.append({"kernel": kernel.metadata.name, "n_regs": kernel.n_regs,
                                    "n_spills": kernel.n_spills, "shared": kernel.metadata.shared,
                                    "num_warps": kernel.metadata.num_warps})
                    except Exception as ex:  # a private API: record, do not fail the run
                        out.append({"kernel": getattr(kernel, "name", "?"), "error": repr(ex)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nsighttk-inspect", description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("variant")
    ap.add_argument("--arch", required=True, help="sm_XX to compile Triton kernels for without a GPU")
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)

    import torch

    from nsighttk.bench import _torch_dtype
    from nsighttk.errors import NsightTKError
    from nsighttk.workload import load_workload, missing_requirements

    device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        wl = load_workload(args.spec)
        variant = wl.variants[args.variant]
        why = missing_requirements(variant, device)
        if device == "cpu" and "compile" in variant.requires:  # Inductor writes C++ for the CPU: still worth reading
            why = [w for w in why if w != "needs a CUDA GPU"]
        if why or (device == "cpu" and "cuda_ext" in variant.requires):
            print(f"nsighttk: error: {wl.name}/{args.variant} cannot run here: {'; '.join(why) or 'needs a GPU'}",
                  file=sys.stderr)
            return 2
        launches = _record_launches() if device == "cpu" and "triton" in variant.requires else None
        inputs = wl.make_inputs(args.size or min(wl.sizes), _torch_dtype(args.dtype), device)
    except NsightTKError as ex:
        print(f"nsighttk: error: {ex}", file=sys.stderr)
        return 2
    variant.fn(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    compiled = _compile_ahead(launches, args.arch) if launches else []
    record = {"device": device, "mode": "ahead-of-time for " + args.arch if launches is not None else "jit",
              "torch": torch.__version__, "compiled": compiled}
    if device == "cuda":
        major, minor = torch.cuda.get_device_capability()
        record["gpu"] = {"name": torch.cuda.get_device_name(), "sm": f"sm_{major}{minor}"}
        if "triton" in variant.requires:
            record["jit_kernels"] = _jit_kernels()
    try:
        import triton

        record["triton"] = triton.__version__
    except ImportError:
        pass
    (args.out / "driver.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"{wl.name}/{args.variant}: compiled on {device} ({record['mode']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
