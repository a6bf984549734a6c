#!/usr/bin/env bash
# NCCL's NVTX ranges and their payloads (message size, reduction, root) in an nsys export:
# a one-process NCCL group (world size 1: NCCL still runs and annotates each call) runs all_reduce,
# broadcast and all_gather of known sizes; the program prints each call's size as the truth.
# nsys -t cuda,nvtx, exported twice: plain, and with --include-blobs (the payloads' bytes, which a
# plain export leaves out); `nsys export --help` is kept to show the option's spelling.
# Writes $OUT/nccl_payloads.tar.xz (both exports, the truth, the logs).
# Usage (GPU machine, repository root): OUT=dir bash tests/gpu/capture_nccl_payloads.sh
source "$(dirname "$0")/lib.sh"
OUT=${OUT:?set OUT}
gpu_env
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
NSYS=${NSYS:-$NSIGHTTK_BUNDLED_NSYS}
W=/tmp/nccl_payloads; rm -rf $W; mkdir -p $W
cat > $W/prog.py <<'EOF'
import json, os
import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("nccl", rank=0, world_size=1)
torch.cuda.set_device(0)
calls = []
for i in range(3):
    for n, dtype in ((1 << 20, torch.float32), (3 << 20, torch.bfloat16), (12345, torch.float32)):
        x = torch.ones(n, dtype=dtype, device="cuda")
        dist.all_reduce(x)
        calls.append({"op": "AllReduce", "bytes": x.numel() * x.element_size(), "dtype": str(dtype)})
    y = torch.ones(1 << 18, device="cuda")
    dist.broadcast(y, 0)
    calls.append({"op": "Broadcast", "bytes": y.numel() * y.element_size(), "dtype": str(y.dtype)})
    out = [torch.empty(1 << 16, device="cuda")]
    dist.all_gather(out, torch.ones(1 << 16, device="cuda"))
    calls.append({"op": "AllGather", "bytes": (1 << 16) * 4, "dtype": "torch.float32"})
torch.cuda.synchronize()
dist.destroy_process_group()
print(json.dumps({"nccl": torch.cuda.nccl.version(), "calls": calls}))
EOF
run "$NSYS" profile -t cuda,nvtx -s none --cpuctxsw=none --force-overwrite true -o $W/nccl python3 $W/prog.py \
  > $W/prog.out 2> $W/profile.log
grep "^{" $W/prog.out | tail -1 > $W/truth.json  # (nsys prints its own lines to the same stdout)
"$NSYS" export --help > $W/export-help.txt 2>&1 || true
run "$NSYS" export --type sqlite --force-overwrite true -o $W/nccl.sqlite $W/nccl.nsys-rep
run "$NSYS" export --type sqlite --include-blobs=true --force-overwrite true -o $W/nccl_blobs.sqlite \
  $W/nccl.nsys-rep
python3 - $W/nccl_blobs.sqlite <<'EOF' > $W/blobs.txt 2>&1 || true
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute("SELECT e.start, s.value, typeof(e.binaryData), length(e.binaryData), hex(e.binaryData), "
                   "e.jsonText FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId LIMIT 40"):
    print(r)
EOF
cat $W/blobs.txt | head -20
tar -C $W -cJf $OUT/nccl_payloads.tar.xz truth.json nccl.sqlite nccl_blobs.sqlite export-help.txt blobs.txt \
  profile.log prog.out
