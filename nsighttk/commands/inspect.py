"""``nsighttk inspect WORKLOAD``: compile a workload's Triton and torch.compile variants and keep
what was generated (PTX, SASS, registers, spills, shared memory, occupancy, Inductor's code).
Without a GPU (or with ``aot``), Triton kernels are compiled ahead of time for the arch."""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk import progress, toolchain
from nsighttk.analysis.kernels.occupancy import compiled_occupancy
from nsighttk.arch import limits_for
from nsighttk.build import resolve_archs
from nsighttk.collect.compiled import compile_variant
from nsighttk.commands import _run
from nsighttk.errors import ProfilerFailed, UsageError
from nsighttk.load.compiled import variant_kernels
from nsighttk.report import jsonout
from nsighttk.runs.layout import KERNELS_JSON
from nsighttk.settings import Settings, current
from nsighttk.workload.protocol import Workload, load_workload, select_variants


@dataclass
class Options:
    workload: str
    variants: str | None = None
    arch: str | None = None
    size: int | None = None
    dtype: str = "float32"
    aot: bool = False
    reports_dir: Path | None = None
    echo: bool = False


@dataclass
class Result:
    run_dir: Path
    kernels: pd.DataFrame  # one row per compiled kernel (see nsighttk.load.compiled), with the variant
    output_code: dict[str, list[Path]]  # Inductor's generated modules per variant
    skipped: dict[str, str]
    mode: str  # "jit" (compiled on this GPU) or "ahead-of-time for sm_XX"

    def as_dict(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "mode": self.mode, "kernels": jsonout.frame_records(self.kernels),
                "output_code": {k: [str(p) for p in v] for k, v in self.output_code.items()},
                "skipped": self.skipped}


def _inspectable(wl: Workload, names: list[str] | None) -> list[str]:
    can = [n for n, v in wl.variants.items() if {"triton", "compile"} & set(v.requires)]
    if not names:
        if not can:
            raise UsageError(f"workload {wl.name} has no Triton or torch.compile variant to inspect",
                             "CUDA-extension kernels: cuobjdump -sass build/torch_ext/<arch>/*.so")
        return can
    chosen = select_variants(wl, names)
    bad = [n for n in chosen if n not in can]
    if bad:
        raise UsageError(f"{', '.join(bad)}: not a Triton or torch.compile variant of {wl.name}",
                         f"inspectable: {', '.join(can) or 'none'}")
    return chosen


def run(opts: Options, settings: Settings | None = None) -> Result:
    settings = settings or current()
    if importlib.util.find_spec("torch") is None:
        raise toolchain.ToolNotFound("inspect needs PyTorch", "pip install 'nsighttk[torch]'")
    if opts.size is not None and opts.size < 1:
        raise UsageError(f"--size {opts.size}: a workload needs at least one element",
                         "omit --size for the smallest size")
    wl = load_workload(opts.workload)
    names = _inspectable(wl, [v.strip() for v in opts.variants.split(",") if v.strip()] if opts.variants else None)
    gpus = () if opts.aot else toolchain.gpu_info()
    sm = resolve_archs([opts.arch] if opts.arch else None, settings, check_nvcc=False)[0]
    try:  # an arch nsighttk has occupancy limits for; an older one fails here, not after compiling
        limits_for(sm)
    except UsageError as ex:
        raise UsageError(f"--arch {sm}: {ex.message}", ex.hint) from None
    if gpus and opts.arch and sm != gpus[0].sm:
        progress.warn(f"on this GPU Triton compiles for {gpus[0].sm}; --arch {sm} applies with --aot or without a GPU")
    cuobjdump = toolchain.require_tool("cuobjdump")
    run_dir = _run.start(settings, opts.reports_dir, "inspect", wl.name, info=cuobjdump)
    run_dir.record.update({"target": opts.workload, "variants": names, "dtype": opts.dtype, "size": opts.size,
                           "arch": sm, "gpu": _run.gpu_record(gpus)})
    frames, output_code, skipped = [], {}, {}
    mode = "jit" if gpus else f"ahead-of-time for {sm}"
    with _run.failures_recorded(run_dir):
        for i, name in enumerate(names, 1):
            t0 = time.monotonic()
            with progress.step(f"[{i}/{len(names)}] compiling {wl.name}/{name}"):
                c = compile_variant(run_dir.path, opts.workload, name, sm, opts.size, opts.dtype, bool(gpus),
                                    echo=opts.echo)
            run_dir.timing(name, time.monotonic() - t0)
            if c.rc == 2:
                skipped[name] = c.error or "cannot run here"
                continue
            if c.rc != 0:
                raise ProfilerFailed(f"compiling {wl.name}/{name} failed: {c.error}", f"see {c.log}")
            k = variant_kernels(c.dir, str(cuobjdump.path), run_dir.path)
            frames.append(k.assign(variant=name))
            output_code[name] = [p.relative_to(run_dir.path) for p in c.output_code]
        cols = ["variant", *[c for c in (frames[0].columns if frames else []) if c != "variant"]]
        kernels = compiled_occupancy(pd.concat(frames, ignore_index=True)[cols]) if frames else pd.DataFrame()
        run_dir.record.update({"mode": mode, "skipped": skipped})
        data = {"mode": mode, "kernels": jsonout.frame_records(kernels),
                "output_code": {k: [str(p) for p in v] for k, v in output_code.items()}, "skipped": skipped}
        run_dir.write_json(KERNELS_JSON, data)
        final = _run.finish(run_dir, "ok" if frames else "skipped",
                            "; ".join(f"{k}: {v}" for k, v in skipped.items()) or None, artifacts={"kernels": data})
    return Result(final, kernels, output_code, skipped, mode)
