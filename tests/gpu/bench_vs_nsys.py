"""GPU check of nsighttk.bench.time_fn against nsys (run it under `nsighttk nsys`).

Times ``torch.add(x, 1, out=y)`` on 2**28 float32 elements inside an NVTX range "timed" and prints
the harness's median and the bandwidth; afterwards compare with the durations nsys recorded for
the kernels launched inside that range (tests/gpu/acceptance notes how)."""

import json
import sys

import torch

from nsighttk.bench import BenchConfig, time_fn

n = 1 << 28
x = torch.randn(n, device="cuda")
y = torch.empty_like(x)
torch.cuda.nvtx.range_push("timed")
t = time_fn(lambda: torch.add(x, 1, out=y), BenchConfig(warmup_ms=20, rep_ms=200, flush_l2=True))
torch.cuda.nvtx.range_pop()
assert torch.equal(y, x + 1)
gbps = 2 * n * 4 / (t.median_ms / 1e3) / 1e9
print(json.dumps({"median_ms": t.median_ms, "p20_ms": t.quantiles_ms["p20"], "p80_ms": t.quantiles_ms["p80"],
                  "reps": t.reps, "gbps": gbps, "clock": t.clock, "device": t.device}))
sys.exit(0)
