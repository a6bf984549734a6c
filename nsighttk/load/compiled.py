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
import shutil
import subprocess
from pathlib import Path
from typing import Any

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


def _driver_view(variant_dir: Path) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """What the JIT loaded, as the driver reported it (``driver.json`` of the child), keyed by
    (name, warps, shared memory): autotune configs share a name."""
    try:
        jit = json.loads((variant_dir / "driver.json").read_text()).get("jit_kernels", [])
    except (OSError, ValueError):
        jit = []
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for j in jit:
        out.setdefault((j.get("kernel"), j.get("num_warps"), j.get("shared")), []).append(j)
    return out


def variant_kernels(variant_dir: Path, cuobjdump: str, relative_to: Path) -> pd.DataFrame:
    """:func:`compiled_kernels` of one variant's directory, plus readable copies next to the caches
    (``<kernel>.ptx``, ``<kernel>.sass``; paths relative to ``relative_to``) and the driver's
    ``n_regs``/``n_spills`` where a kernel is matched unambiguously (else empty)."""
    k = compiled_kernels(variant_dir, cuobjdump)
    k["sass"] = None
    for j, r in k.iterrows():
        unique = (k["kernel"] == r["kernel"]).sum() == 1
        stem = variant_dir / (r["kernel"] if unique else f"{r['kernel']}-{r['hash'][:8]}")
        stem.with_suffix(".sass").write_text(sass(cuobjdump, Path(r["cubin"])))
        if r["ptx"]:
            shutil.copyfile(r["ptx"], stem.with_suffix(".ptx"))
        paths = {"ptx": stem.with_suffix(".ptx") if r["ptx"] else None, "sass": stem.with_suffix(".sass"),
                 "cubin": Path(r["cubin"])}
        for col, path in paths.items():
            k.loc[j, col] = str(path.relative_to(relative_to)) if path else None
    jit = _driver_view(variant_dir)
    keys = list(zip(k["kernel"], k["num_warps"], k["shared_bytes"], strict=True))
    for col, key in (("driver_registers", "n_regs"), ("driver_spills", "n_spills")):
        k[col] = pd.array([jit[t][0].get(key) if len(jit.get(t, [])) == 1 and keys.count(t) == 1 else None
                           for t in keys], dtype="Int64")
    return k


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
