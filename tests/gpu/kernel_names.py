"""Run the kernels whose names the decoder has only seen in public profiles, so that their names as
this machine's nsys and torch.profiler record them can become fixtures: fused AdamW / Adam
(FusedAdamMathFunctor), FlashAttention-2, memory-efficient and cuDNN SDPA forward and backward,
torch.compile (Inductor pointwise/reduction/persistent and, where CUTLASS or Triton templates are
picked, GEMM templates), bf16/fp16 casts, and the foreach optimizer kernels.

Usage (GPU): nsys profile -t cuda,nvtx -o names python3 tests/gpu/kernel_names.py --trace names.pt.trace.json
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def work() -> None:
    dev = "cuda"
    x = torch.randn(4096, 4096, device=dev)
    w = torch.nn.Parameter(torch.randn(4096, 4096, device=dev))
    for fused, foreach, opt in ((True, False, torch.optim.AdamW), (True, False, torch.optim.Adam),
                                (False, True, torch.optim.AdamW), (False, True, torch.optim.SGD)):
        o = opt([w], lr=1e-3, fused=fused, foreach=foreach) if opt is not torch.optim.SGD else \
            opt([w], lr=1e-3, momentum=0.9, foreach=foreach)
        (x @ w).sum().backward()
        o.step()
        o.zero_grad()
    x.to(torch.bfloat16).to(torch.float16).float()
    for dtype in (torch.float16, torch.bfloat16):
        q, k, v = (torch.randn(8, 16, 1024, 64, device=dev, dtype=dtype, requires_grad=True) for _ in range(3))
        for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
            try:
                with sdpa_kernel(backend):
                    F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
            except RuntimeError as e:  # a backend this GPU or build lacks
                print(f"{backend}: {e}".splitlines()[0])
    f = torch.compile(lambda a, b: (torch.softmax(a @ b, dim=-1) * 2 + 1).sum(dim=0), mode="max-autotune-no-cudagraphs")
    a = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    for _ in range(3):
        f(a, a)
    torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", help="also write a torch.profiler trace here")
    args = ap.parse_args()
    work()  # warm-up (compilation, autotuning)
    if args.trace:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            work()
        prof.export_chrome_trace(args.trace)
    else:
        work()


if __name__ == "__main__":
    main()
