"""``nsighttk model bert``: seed 003's ``profile_bert.py`` as one command.

For each (batch size, sequence length) the model's forward pass runs under torch.profiler
(wait 1, warm-up 1, active 3 steps); per configuration the run directory gets

* ``profiling_stats_bs{N}_seq{M}.json``: top ATen ops with device and CPU time, category,
  ``native_functions.yaml`` entry and probable CUDA source file, plus categories and kernels;
* ``kernel_analysis_report_bs{N}_seq{M}.md``: configuration, overview, top-10 operators explained;
* ``trace_bs{N}_seq{M}.json``: the Chrome trace (Perfetto, chrome://tracing);

then ``comparison.json`` / ``comparison.md``: time per op category against batch and sequence
length, and latency and throughput (median of the timing harness) unless ``skip_benchmark``.

The built-in model is a BERT-base-shaped encoder (12 layers, hidden 768, 12 heads, FFN 3072,
vocabulary 30522) in plain PyTorch with ``scaled_dot_product_attention``; ``real_bert`` builds
Hugging Face's ``BertModel`` from ``BertConfig()`` with random weights (no download).
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk.errors import ToolNotFound, UsageError

MODELS = ("bert",)


@dataclass
class ModelConfig:
    batch_sizes: list[int] = field(default_factory=lambda: [1, 8])
    seq_lens: list[int] = field(default_factory=lambda: [128, 256])
    real_bert: bool = False
    dtype: str = "float32"
    device: str = "auto"
    skip_benchmark: bool = False
    layers: int = 12
    hidden: int = 768
    heads: int = 12
    ffn: int = 3072
    vocab: int = 30522


def _encoder(cfg: ModelConfig) -> Any:
    import torch
    from torch import nn
    from torch.nn import functional as F

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
            self.proj = nn.Linear(cfg.hidden, cfg.hidden)
            self.ln1 = nn.LayerNorm(cfg.hidden)
            self.fc1 = nn.Linear(cfg.hidden, cfg.ffn)
            self.fc2 = nn.Linear(cfg.ffn, cfg.hidden)
            self.ln2 = nn.LayerNorm(cfg.hidden)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, h = x.shape
            q, k, v = self.qkv(x).view(b, s, 3, cfg.heads, h // cfg.heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, h)
            x = self.ln1(x + self.proj(a))
            return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab, cfg.hidden)
            self.pos = nn.Embedding(512, cfg.hidden)
            self.ln = nn.LayerNorm(cfg.hidden)
            self.layers = nn.ModuleList(Layer() for _ in range(cfg.layers))

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.ln(self.tok(ids) + self.pos(pos))
            for layer in self.layers:
                x = layer(x)
            return x

    return Encoder()


def build_model(cfg: ModelConfig) -> Any:
    if cfg.real_bert:
        try:
            from transformers import BertConfig, BertModel
        except ImportError:
            raise ToolNotFound("--real-bert needs Hugging Face transformers", "pip install transformers") from None
        return BertModel(BertConfig())  # random weights from the default config: no download
    return _encoder(cfg)


def output_names(cfg: ModelConfig) -> list[str]:
    """The files :func:`run_model` writes (per configuration, then the comparison)."""
    names = []
    for bs in cfg.batch_sizes:
        for seq in cfg.seq_lens:
            names += [f"profiling_stats_bs{bs}_seq{seq}.json", f"kernel_analysis_report_bs{bs}_seq{seq}.md",
                      f"trace_bs{bs}_seq{seq}.json"]
    return [*names, "comparison.json", "comparison.md", "run.json"]


def run_model(name: str, cfg: ModelConfig, out_dir: Path, progress_cb: Any = None) -> dict[str, Any]:
    """Profile ``name`` over the grid; write the files described in the module doc into ``out_dir``."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    from nsighttk.analysis.torch_ops import category_summary, kernel_table, op_summary
    from nsighttk.bench import BenchConfig, _torch_dtype, resolve_device, time_fn
    from nsighttk.load.kineto import load_kineto
    from nsighttk.report import jsonout, model_md

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
            (out_dir / f"profiling_stats_{tag}.json").write_text(jsonout.dumps(stats))
            (out_dir / f"kernel_analysis_report_{tag}.md").write_text(
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
    (out_dir / "comparison.json").write_text(json.dumps(comparison, indent=1))
    (out_dir / "comparison.md").write_text(model_md.comparison(comparison))
    return comparison
