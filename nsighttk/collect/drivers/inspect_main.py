"""Compile one workload variant so its generated code can be read:
``python -m nsighttk.collect.drivers.inspect_main SPEC VARIANT --arch sm_90 [--size N] [--dtype D]``.

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
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

from nsighttk.arch import sm_number


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


def _unwrap(obj: Any, depth: int = 4) -> list[Any]:
    """``obj`` and what it wraps through ``.fn`` (autotune -> heuristics -> JIT -> function)."""
    chain = [obj]
    while depth and getattr(chain[-1], "fn", None) is not None:
        chain.append(chain[-1].fn)
        depth -= 1
    return chain


def _autotuned_configs(namespace: dict[str, Any], fn: Any) -> list[Any]:
    """The configs of a ``triton.autotune`` wrapper of the Python function ``fn`` (empty if none)."""
    for obj in namespace.values():
        if getattr(obj, "configs", None) and fn in _unwrap(obj)[1:]:
            return list(obj.configs)
    return []


def _jit_functions(namespace: dict[str, Any]) -> dict[str, Any]:
    """Every Triton JIT function reachable from ``namespace``, by its Python name."""
    from triton.runtime.jit import JITFunction

    found = {}
    for obj in namespace.values():
        for inner in _unwrap(obj):
            if isinstance(inner, JITFunction):
                found[inner.fn.__name__] = inner
    return found


def _specialize(launches: list[tuple[Any, tuple[Any, ...], dict[str, Any], Any]], namespace: dict[str, Any],
                sm: str) -> list[dict[str, Any]]:
    """What ``JITFunction.run`` would compile for each distinct launch on ``sm``: the same binder
    and argument specialization (16-byte alignment, divisibility by 16); a kernel wrapped in
    ``triton.autotune`` gives one entry per config, as the autotuner compiles them all."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    backend = make_backend(GPUTarget("cuda", sm_number(sm), 32))
    out: dict[str, dict[str, Any]] = {}
    for fn, args, kwargs, grid in launches:
        jf = JITFunction(fn)
        sigkeys = [p.name for p in jf.params]
        calls = [kwargs]
        configs = _autotuned_configs(namespace, fn)
        if configs:
            plain = {k: v for k, v in kwargs.items() if k in sigkeys and all(k not in c.kwargs for c in configs)}
            calls = [{**plain, **c.all_kwargs()} for c in configs]
        for kw in calls:
            binder = create_function_from_signature(jf.signature, jf.params, backend)
            bound, spec, opts = binder(*args, **kw)
            _, signature, constexprs, attrs = jf._pack_args(backend, kw, bound, spec, opts)
            entry = {"function": fn.__name__, "signature": signature, "constexprs": constexprs, "attrs": attrs,
                     "options": {k: v for k, v in kw.items() if k not in sigkeys},
                     "grid": list(grid) if isinstance(grid, tuple | list) else repr(grid)}
            key = repr((entry["function"], signature, sorted(constexprs.items()), sorted(attrs.items()),
                        sorted(entry["options"].items())))
            out.setdefault(key, entry)
    return list(out.values())


def _compile_specialized(spec: str, variant: str, entries: list[dict[str, Any]], sm: str) -> list[dict[str, Any]]:
    """Compile recorded specializations with the real compiler (a process without the interpreter,
    which patches ``triton.language``); the cache manager writes PTX, cubin and metadata."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend

    from nsighttk.workload import load_workload

    jits = _jit_functions(load_workload(spec).variants[variant].fn.__globals__)
    target = GPUTarget("cuda", sm_number(sm), 32)
    backend = make_backend(target)
    done = []
    for e in entries:
        jf = jits[e["function"]]
        options = backend.parse_options(e["options"])
        kernel = triton.compile(ASTSource(jf, e["signature"], e["constexprs"], e["attrs"]), target=target,
                                options=options.__dict__)
        done.append({"kernel": kernel.metadata.name, "signature": e["signature"],
                     "constexprs": {str(k): repr(v) for k, v in e["constexprs"].items()},
                     "num_warps": options.num_warps, "num_stages": options.num_stages, "grid": e["grid"],
                     "shared": kernel.metadata.shared})
    return done


def _jit_kernels(namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """What the Triton JIT compiled in this process, as the driver loaded it (registers, spills):
    the check on the figures read from the cubins."""
    out = []
    for jf in _jit_functions(namespace).values():
        for caches in getattr(jf, "device_caches", {}).values():
            for kernel in caches[0].values():
                try:
                    kernel._init_handles()
                    out.append({"kernel": kernel.metadata.name, "n_regs": kernel.n_regs,
                                "n_spills": kernel.n_spills, "shared": kernel.metadata.shared,
                                "num_warps": kernel.metadata.num_warps})
                except Exception as ex:  # a private API, and configs that do not fit: record, do not fail
                    out.append({"kernel": kernel.metadata.name, "error": repr(ex)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nsighttk-inspect", description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("variant")
    ap.add_argument("--arch", required=True, help="sm_XX to compile Triton kernels for without a GPU")
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--compile-recorded", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.compile_recorded:  # second step of the ahead-of-time path
        entries = pickle.loads((args.out / "launches.pickle").read_bytes())
        done = _compile_specialized(args.spec, args.variant, entries, args.arch)
        (args.out / "compiled.json").write_text(json.dumps(done, indent=1, default=str) + "\n")
        return 0

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
    compiled: list[dict[str, Any]] = []
    if launches:
        entries = _specialize(launches, variant.fn.__globals__, args.arch)
        (args.out / "launches.pickle").write_bytes(pickle.dumps(entries))
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        cmd = [sys.executable, "-m", "nsighttk.collect.drivers.inspect_main", args.spec, args.variant,
               "--arch", args.arch, "--out", str(args.out), "--compile-recorded"]
        if subprocess.run(cmd, env=env, check=False).returncode != 0:
            print(f"nsighttk: error: compiling {wl.name}/{args.variant} for {args.arch} failed (above)",
                  file=sys.stderr)
            return 1
        compiled = json.loads((args.out / "compiled.json").read_text())
    record = {"device": device, "mode": "ahead-of-time for " + args.arch if launches is not None else "jit",
              "torch": torch.__version__, "compiled": compiled}
    if device == "cuda":
        major, minor = torch.cuda.get_device_capability()
        record["gpu"] = {"name": torch.cuda.get_device_name(), "sm": f"sm_{major}{minor}"}
        if "triton" in variant.requires:
            record["jit_kernels"] = _jit_kernels(variant.fn.__globals__)
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
