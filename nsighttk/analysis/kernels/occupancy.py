"""Theoretical occupancy from launch parameters and per-arch limits (the CUDA occupancy
calculator's rules, as ncu applies them):

* warps: ``floor(max_warps_per_sm / ceil(threads / 32))`` blocks;
* registers: each warp gets ``ceil(regs * 32 / 256) * 256`` registers, allocated within one of the
  SM's 4 sub-partitions, so ``floor(regs_per_sm / 4 / regs_per_warp) * 4`` warps fit;
* shared memory: per block static + dynamic + the driver's reserved 1 KiB (sm_80+), rounded up to
  128 B, against the shared-memory carveout in effect; when the carveout is not known (nsys
  exports do not record it) the smallest supported carveout that does not lower the occupancy the
  other limits allow is assumed, as the driver does by default;
* blocks: the per-SM block limit.

The limiter is every factor whose block limit equals the achieved minimum.  Checked against
ncu's ``launch__occupancy_limit_*`` and theoretical occupancy on every kernel captured on an
H200 (tests/test_occupancy.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import pandas as pd

from nsighttk.analysis.nsys.gpu import launch_configs
from nsighttk.arch import ArchLimits, limits_for
from nsighttk.errors import NsightTKError
from nsighttk.profile import Profile

SUB_PARTITIONS = 4


@dataclass
class Occupancy:
    block_limit_warps: int
    block_limit_registers: int
    block_limit_shared_mem: int
    block_limit_blocks: int
    active_blocks: int
    active_warps: int
    theoretical_pct: float
    limiters: list[str]
    smem_config_bytes: int
    waves_per_sm: float | None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _round_up(x: int, unit: int) -> int:
    return ((x + unit - 1) // unit) * unit


def smem_per_block(lim: ArchLimits, static_bytes: int, dynamic_bytes: int) -> int:
    return _round_up(static_bytes + dynamic_bytes + lim.reserved_smem_per_block_bytes, lim.smem_alloc_unit_bytes)


def default_carveout(lim: ArchLimits, blocks_wanted: int, per_block: int) -> int:
    """The smallest supported carveout holding ``blocks_wanted`` blocks, else the largest."""
    need = blocks_wanted * per_block
    for kb in sorted(lim.smem_carveouts_kb):
        if kb * 1024 >= need:
            return kb * 1024
    return max(lim.smem_carveouts_kb) * 1024


def occupancy(arch: str | ArchLimits, threads_per_block: int, registers_per_thread: int,
              static_smem_bytes: int = 0, dynamic_smem_bytes: int = 0, smem_config_bytes: int | None = None,
              grid_blocks: int | None = None, sm_count: int | None = None) -> Occupancy:
    """Theoretical occupancy of one launch on one SM of ``arch`` (e.g. ``"sm_90"``)."""
    lim = arch if isinstance(arch, ArchLimits) else limits_for(arch)
    if threads_per_block <= 0 or threads_per_block > lim.max_threads_per_block:
        raise ValueError(f"block of {threads_per_block} threads is not launchable on {lim.sm}")
    warps_per_block = math.ceil(threads_per_block / lim.warp_size)
    by_warps = lim.max_warps_per_sm // warps_per_block
    if registers_per_thread > 0:
        regs_per_warp = _round_up(registers_per_thread * lim.warp_size, lim.register_alloc_unit)
        warps_by_regs = (lim.registers_per_sm // SUB_PARTITIONS // regs_per_warp) * SUB_PARTITIONS
        by_regs = warps_by_regs // warps_per_block
    else:
        by_regs = lim.max_blocks_per_sm
    by_blocks = lim.max_blocks_per_sm
    per_block = smem_per_block(lim, static_smem_bytes, dynamic_smem_bytes)
    if smem_config_bytes is None:
        smem_config_bytes = default_carveout(lim, min(by_warps, by_regs, by_blocks), per_block)
    by_smem = smem_config_bytes // per_block if per_block else lim.max_blocks_per_sm
    limits = {"warps": by_warps, "registers": by_regs, "shared memory": by_smem, "blocks": by_blocks}
    active = min(limits.values())
    active_warps = active * warps_per_block
    waves = None
    if grid_blocks and sm_count and active:
        waves = grid_blocks / (active * sm_count)
    return Occupancy(
        block_limit_warps=by_warps, block_limit_registers=by_regs, block_limit_shared_mem=by_smem,
        block_limit_blocks=by_blocks, active_blocks=active, active_warps=active_warps,
        theoretical_pct=100.0 * active_warps / lim.max_warps_per_sm,
        limiters=[name for name, v in limits.items() if v == active],
        smem_config_bytes=smem_config_bytes, waves_per_sm=waves,
    )


def kernel_occupancy(p: Profile) -> pd.Series:
    """Theoretical occupancy (%) per kernel name of a capture, which nsys does not record.

    Uses each name's most frequent launch configuration (:func:`launch_configs`, a query over the
    capture's engine) and the GPU's compute capability from the export; NaN where the launch or the
    arch is unknown.  The shared-memory carveout is not recorded by nsys, so the driver's default
    choice is assumed (see :func:`default_carveout`)."""
    gpus = p.gpus
    if not p.count("kernels") or gpus.empty or gpus["compute_capability"].isna().all():
        return pd.Series(dtype="float64")
    try:
        lim = limits_for(str(gpus["compute_capability"].dropna().iloc[0]))
    except NsightTKError:
        return pd.Series(dtype="float64")
    out = {}
    for r in launch_configs(p).itertuples(index=False):
        try:
            occ = occupancy(lim, int(r.block_x * r.block_y * r.block_z), int(r.registers_per_thread),
                            int(r.static_smem_bytes), int(r.dynamic_smem_bytes))
            out[r.name] = occ.theoretical_pct
        except ValueError:
            out[r.name] = float("nan")
    return pd.Series(out, dtype="float64")


def compiled_occupancy(kernels: pd.DataFrame) -> pd.DataFrame:
    """``theoretical_occupancy_pct`` and ``limiters`` for compiled kernels (:mod:`nsighttk.load.compiled`
    rows: arch, threads, registers, static and dynamic shared memory), NaN where unknown."""
    pct, lim = [], []
    for r in kernels.itertuples(index=False):
        try:
            occ = occupancy(str(r.arch), int(r.threads), int(r.registers), int(r.static_smem_bytes or 0),
                            int(r.shared_bytes or 0))
        except (ValueError, TypeError, NsightTKError):
            pct.append(math.nan)
            lim.append("")
            continue
        pct.append(occ.theoretical_pct)
        lim.append(("cannot launch: " if occ.active_blocks == 0 else "") + ", ".join(occ.limiters))
    return kernels.assign(theoretical_occupancy_pct=pd.Series(pct, index=kernels.index, dtype="float64"),
                          limiters=pd.Series(lim, index=kernels.index, dtype="object"))
