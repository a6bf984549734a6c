"""``nsighttk model bert``: a Transformer profiled over batch sizes x sequence lengths.

For each (batch size, sequence length) the model's forward pass runs under torch.profiler
(wait 1, warm-up 1, active 3 steps); per configuration the run directory gets

* ``profiling_stats_bs{N}_seq{M}.json``: top ATen ops with device and CPU time, category,
  ``native_functions.yaml`` entry and probable CUDA source file, plus categories and kernels;
* ``kernel_analysis_report_bs{N}_seq{M}.md``: configuration, overview, top-10 operators explained;
* ``trace_bs{N}_seq{M}.json``: the Chrome trace (Perfetto, chrome://tracing);

then ``comparison.json`` / ``comparison.md``: time per op category against batch and sequence
length, and latency and throughput (median of the timing harness) unless ``skip_benchmark``.
The models themselves are in :mod:`nsighttk.workload.models`.
"""

from __future__ import annotations

import functools
import importlib.util
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk import safeio, toolchain
from nsighttk.analysis.torch_ops import category_summary, kernel_table, op_summary
from nsighttk.bench import BenchConfig, _torch_dtype, resolve_device, time_fn
from nsighttk.commands import _run
from nsighttk.errors import UsageError
from nsighttk.load.kineto import load_kineto
from nsighttk.report import jsonout, model_md
from nsighttk.runs.layout import COMPARISON_JSON
from nsighttk.settings import Settings, current
from nsighttk.workload.models import MODELS, ModelConfig, build_model, output_names
from nsighttk.workload.target import Target


def run_model(name: str, cfg: ModelConfig, out_dir: Path, progress_cb: Any = None) -> dict[str, Any]:
    """Profile ``name`` over the grid; write the files described in the module doc into ``out_dir``."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    if name not in MODELS:
        raise UsageError(f"unknown model {name!r}", f"models: {', '.join(MODELS)}")
    device = resolve_device(cfg.device)
    bad = [s for s in cfg.seq_lens if s < 1 or s > 512] + [b for b in cfg.batch_sizes if b < 1]
    if bad:
        raise UsageError(f"batch sizes must be >= 1 and sequence lengths 1..512 (BERT's positions), got {bad}",
                         "e.g. --batch-sizes 1 8 --seq-lens 128 256")
    torch.manual_seed(0)
    model = build_model(cfg).to(device=device, dtype=_torch_dtype(cfg.dtype)).eval()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    results: list[dict[str, Any]] = []
    for bs in cfg.batch_sizes:
        for seq in cfg.seq_lens:
            tag = f"bs{bs}_seq{seq}"
            row: dict[str, Any] = {"batch_size": bs, "seq_len": seq, "status": "ok"}
            try:
                ids = torch.randint(0, 30522 if cfg.real_bert else cfg.vocab, (bs, seq), device=device)
                with torch.inference_mode():
                    model(ids)  # warm-up outside the profile (allocator, cuBLAS handles, SDPA choice)
                    sync()
                    trace = out_dir / f"trace_{tag}.json"
                    with profile(activities=activities, record_shapes=True,
                                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                                 on_trace_ready=lambda p, t=trace: p.export_chrome_trace(str(t))) as prof:
                        for _ in range(5):
                            model(ids)
                            sync()
                            prof.step()
                    latency = None
                    if not cfg.skip_benchmark:
                        t = time_fn(functools.partial(model, ids),
                                    BenchConfig(warmup_ms=25, rep_ms=200, flush_l2=False))
                        latency = {"median_ms": t.median_ms, "p20_ms": t.quantiles_ms.get("p20"),
                                   "p80_ms": t.quantiles_ms.get("p80"), "reps": t.reps,
                                   "sequences_per_s": bs / (t.median_ms / 1e3),
                                   "tokens_per_s": bs * seq / (t.median_ms / 1e3)}
            except (torch.cuda.OutOfMemoryError, MemoryError, RuntimeError) as ex:
                if not isinstance(ex, (torch.cuda.OutOfMemoryError, MemoryError)) and "alloc" not in str(ex).lower():
                    raise
                where = "GPU" if device == "cuda" else "host"
                row.update(status="out_of_memory", error=f"batch {bs} x sequence {seq} does not fit in {where} memory")
                torch.cuda.empty_cache()
                results.append(row)
                if progress_cb:
                    progress_cb(tag, row)
                continue
            p = load_kineto(trace)
            ops, cats, kernels = op_summary(p), category_summary(p), kernel_table(p)
            stats = {"model": name, "batch_size": bs, "seq_len": seq, "device": device, "dtype": cfg.dtype,
                     "real_bert": cfg.real_bert, "latency": latency,
                     "top_ops": jsonout.frame_records(ops.head(30)), "categories": jsonout.frame_records(cats),
                     "kernels": jsonout.frame_records(kernels.head(30))}
            safeio.write_text(out_dir / f"profiling_stats_{tag}.json", jsonout.dumps(stats))
            safeio.write_text(out_dir / f"kernel_analysis_report_{tag}.md",
                model_md.config_report(name, bs, seq, device, cfg, ops, cats, kernels, latency))
            row.update(latency=latency, categories={r["category"]: {"self_device_ns": int(r["self_device_ns"]),
                                                                    "self_cpu_ns": int(r["self_cpu_ns"])}
                                                    for r in cats.to_dict("records")},
                       top_category=str(cats.iloc[0]["category"]) if len(cats) else None)
            results.append(row)
            if progress_cb:
                progress_cb(tag, row)
    comparison = {"model": name, "device": device, "dtype": cfg.dtype, "real_bert": cfg.real_bert,
                  "configs": results, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    safeio.write_json(out_dir / COMPARISON_JSON, comparison)
    safeio.write_text(out_dir / "comparison.md", model_md.comparison(comparison))
    return comparison


@dataclass
class Options:
    name: str
    config: ModelConfig = field(default_factory=ModelConfig)
    reports_dir: Path | None = None
    output_dir: Path | None = None
    on_config: Any = None  # called with (tag, row) after each configuration


@dataclass
class Result:
    run_dir: Path
    comparison: dict[str, Any]
    record: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"run": self.record, "comparison": self.comparison}


def run(opts: Options, settings: Settings | None = None) -> Result:
    """Profile the model over its grid in a run directory, copied to ``output_dir`` when given
    (refused up front if that would replace a file)."""
    settings = settings or current()
    if importlib.util.find_spec("torch") is None:
        raise toolchain.ToolNotFound("models need PyTorch", "pip install 'nsighttk[torch]'")
    import torch

    if opts.name not in MODELS:
        raise UsageError(f"unknown model {opts.name!r}", f"models: {', '.join(MODELS)}")
    if opts.output_dir is not None:
        clash = [f for f in output_names(opts.config) if (opts.output_dir / f).exists()]
        if clash:
            raise UsageError(f"{opts.output_dir} already holds {clash[0]}" + (
                f" and {len(clash) - 1} more result files" if len(clash) > 1 else ""),
                "choose another --output-dir; nsighttk does not overwrite results")
        safeio.make_dirs(opts.output_dir, "--output-dir")
    tgt = Target(opts.name, "model", [opts.name])
    info = toolchain.ToolInfo("torch.profiler", path=torch.__file__, version=torch.__version__)
    run_dir = _run.start(settings, opts.reports_dir, "model", opts.name, tgt, info)
    run_dir.record["config"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(opts.config).items()}
    with _run.failures_recorded(run_dir):
        comparison = run_model(opts.name, opts.config, run_dir.path, opts.on_config)
        failed = [c for c in comparison["configs"] if c["status"] != "ok"]
        final = _run.finish(run_dir, "ok" if not failed else "partial",
                            "; ".join(c.get("error", "") for c in failed) or None,
                            artifacts={"comparison": comparison})
    if opts.output_dir is not None:
        shutil.copytree(final, opts.output_dir, dirs_exist_ok=True)
    return Result(final, comparison, run_dir.record)
