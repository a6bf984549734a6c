"""A BERT-base-shaped encoder (nsighttk's built-in model), batch 1, sequence 128, three forward
passes on the GPU: what tests/gpu/repro_check.sh profiles with `nsighttk torch --record-shapes`."""

import torch

from nsighttk.workload.models import ModelConfig, build_model

model = build_model(ModelConfig()).cuda().eval()
ids = torch.randint(0, 30522, (1, 128), device="cuda")
with torch.no_grad():
    for _ in range(3):
        model(ids)
torch.cuda.synchronize()
