"""Read what Triton and Inductor compiled (their cache layout: ``<hash>/<kernel>.{json,ptx,cubin}``)
into one table, with each cubin's resource usage as ``cuobjdump -res-usage`` reports it.

Columns: ``kernel, source, arch, num_warps, threads, num_stages, registers, stack_bytes,
local_bytes, static_smem_bytes, shared_bytes`` (Triton's dynamic shared memory, ``metadata.shared``),
``ptx``, ``cubin``, ``hash``.  Registers and spills come from the cubin, not from a driver, so this
works on a machine without a GPU.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pandas as pd

from nsighttk.errors import InputFileError

COLUMNS = ["kernel", "source", "arch", "num_warps", "threads", "num_stages", "registers", "stack_bytes",
           "local_bytes", "static_smem_bytes", "shared_bytes", "ptx", "cubin", "hash"]

_RES = re.compile(r"Function (\S+):\s*\n\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")


def resource_usage(cuobjdump: str, cubin: Path) -> dict[str, dict[str, int]]:
    """Per function in ``cubin``: registers, stack, static shared and local bytes."""
    try:
        out = subprocess.run([cuobjdump, "-res-usage", str(cubin)], capture_output=True, text=True, timeout=60,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as ex:
        raise InputFileError(f"{cubin}: cuobjdump failed: {ex}", "check the CUDA Toolkit install") from None
    if out.returncode != 0:
        raise InputFileError(f"{cubin}: cuobjdump failed: {out.stderr.strip().splitlines()[-1:]}",
                             "is it a cubin for an arch this cuobjdump knows?")
    return {m.group(1): {"registers": int(m.group(2)), "stack_bytes": int(m.group(3)),
                         "static_smem_bytes": int(m.group(4)), "local_bytes": int(m.group(5))}
            for m in _RES.finditer(out.stdout)}


def sass(cuobjdump: str, cubin: Path) -> str:
    out = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, timeout=120, check=False)
    return out.stdout


def compiled_kernels(root: Path, cuobjdump: str) -> pd.DataFrame:
    """Every compiled kernel under ``root`` (Triton's and Inductor's caches), one row each."""
    rows = []
    for cubin in sorted(root.rglob("*.cubin")):
        meta_file = cubin.with_suffix(".json")
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
        name = meta.get("name", cubin.stem)
        res = resource_usage(cuobjdump, cubin).get(name, {})
        target = meta.get("target") or {}
        warps = meta.get("num_warps")
        rows.append({
            "kernel": name,
            "source": "inductor" if "inductor_cache" in cubin.parts else "triton",
            "arch": f"sm_{target['arch']}" if "arch" in target else None,
            "num_warps": warps, "threads": warps * meta.get("warp_size", 32) if warps else None,
            "num_stages": meta.get("num_stages"),
            **{k: res.get(k) for k in ("registers", "stack_bytes", "local_bytes", "static_smem_bytes")},
            "shared_bytes": meta.get("shared"),
            "ptx": str(cubin.with_suffix(".ptx")) if cubin.with_suffix(".ptx").is_file() else None,
            "cubin": str(cubin), "hash": cubin.parent.name,
        })
    return pd.DataFrame(rows, columns=COLUMNS)
