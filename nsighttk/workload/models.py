"""Models for ``nsighttk model``: their configurations and how to build them (the profiling loop and
the files it writes: :mod:`nsighttk.commands.model`).

The built-in model is a BERT-base-shaped encoder (12 layers, hidden 768, 12 heads, FFN 3072,
vocabulary 30522) in plain PyTorch with ``scaled_dot_product_attention``; ``real_bert`` builds
Hugging Face's ``BertModel`` from ``BertConfig()`` with random weights (no download).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nsighttk.errors import ToolNotFound

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
