"""The per-kernel summary of an Nsight Compute capture: how long, how busy memory and compute
were against the GPU's peak, what occupancy was possible and achieved and what limited it, how
many waves, and ncu's own rule findings ordered by estimated speedup.

Every field comes from ncu's metrics, by raw metric name (``.ncu-rep``, raw-page CSV) or by the
details page's section and display name (converted to base units), so the numbers equal ncu's.
Two fields are ours: ``calc_theoretical_pct``/``calc_limiters`` (our occupancy calculator on the
same launch, a cross-check) and ``verdict``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import pandas as pd

from nsighttk.analysis.kernels.names import decode
from nsighttk.analysis.kernels.occupancy import occupancy
from nsighttk.arch import cc_to_sm
from nsighttk.errors import NsightTKError
from nsighttk.profile import Profile
from nsighttk.units import to_base

SOL = "GPU Speed Of Light Throughput"
MWA = "Memory Workload Analysis"
OCC = "Occupancy"
LAUNCH = "Launch Statistics"

#: field -> (raw metric name, (details section, details name) or None)
FIELDS: dict[str, tuple[str, tuple[str, str] | None]] = {
    "duration_ns": ("gpu__time_duration.sum", (SOL, "Duration")),
    "dram_read_bytes": ("dram__bytes_read.sum", None),
    "dram_write_bytes": ("dram__bytes_write.sum", None),
    "dram_bytes_per_s": ("dram__bytes.sum.per_second", (MWA, "Memory Throughput")),
    "dram_pct_of_peak": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", (SOL, "DRAM Throughput")),
    "sol_memory_pct": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", (SOL, "Memory Throughput")),
    "sol_compute_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed", (SOL, "Compute (SM) Throughput")),
    "achieved_occupancy_pct": ("sm__warps_active.avg.pct_of_peak_sustained_active", (OCC, "Achieved Occupancy")),
    "theoretical_occupancy_pct": ("sm__maximum_warps_per_active_cycle_pct", (OCC, "Theoretical Occupancy")),
    "limit_registers": ("launch__occupancy_limit_registers", (OCC, "Block Limit Registers")),
    "limit_shared_mem": ("launch__occupancy_limit_shared_mem", (OCC, "Block Limit Shared Mem")),
    "limit_warps": ("launch__occupancy_limit_warps", (OCC, "Block Limit Warps")),
    "limit_blocks": ("launch__occupancy_limit_blocks", (OCC, "Block Limit SM")),
    "waves_per_sm": ("launch__waves_per_multiprocessor", (LAUNCH, "Waves Per SM")),
    "l1_hit_pct": ("l1tex__t_sector_hit_rate.pct", (MWA, "L1/TEX Hit Rate")),
    "l2_hit_pct": ("lts__t_sector_hit_rate.pct", (MWA, "L2 Hit Rate")),
    "registers_per_thread": ("launch__registers_per_thread", (LAUNCH, "Registers Per Thread")),
    "static_smem_bytes": ("launch__shared_mem_per_block_static", (LAUNCH, "Static Shared Memory Per Block")),
    "dynamic_smem_bytes": ("launch__shared_mem_per_block_dynamic", (LAUNCH, "Dynamic Shared Memory Per Block")),
    "smem_config_bytes": ("launch__shared_mem_config_size", (LAUNCH, "Shared Memory Configuration Size")),
    "sm_count": ("device__attribute_multiprocessor_count", (LAUNCH, "# SMs")),
    "block_x": ("launch__block_dim_x", None), "block_y": ("launch__block_dim_y", None),
    "block_z": ("launch__block_dim_z", None), "grid_x": ("launch__grid_dim_x", None),
    "grid_y": ("launch__grid_dim_y", None), "grid_z": ("launch__grid_dim_z", None),
    "cc_major": ("device__attribute_compute_capability_major", None),
    "cc_minor": ("device__attribute_compute_capability_minor", None),
}
_CC = re.compile(r"(\d{1,3})\.(\d{1,3})")
_LIMITS = {"limit_warps": "warps", "limit_registers": "registers", "limit_shared_mem": "shared memory",
           "limit_blocks": "blocks"}


def _value(m: pd.DataFrame, raw: str, display: tuple[str, str] | None) -> float:
    hit = m[m["metric"] == raw]
    if len(hit):
        return float(hit["value"].iloc[0])
    if display is not None:
        hit = m[(m["section"] == display[0]) & (m["metric"] == display[1])]
        if len(hit):
            v, unit = to_base(float(hit["value"].iloc[0]), str(hit["unit"].iloc[0]))
            if unit.startswith("byte") and not math.isnan(v):
                # The details page rounds sizes to 10 bytes ("32.77 Kbyte"); shared memory comes in
                # 128-byte units, so snap to the grid when within that rounding.
                snapped = round(v / 128) * 128
                v = float(snapped) if abs(v - snapped) <= 5 else v
            return v
    return math.nan


def verdict(row: dict[str, float]) -> str:
    """Bottleneck from speed-of-light: whichever unit is busiest, when one is; else latency."""
    mem, comp = row.get("sol_memory_pct", math.nan), row.get("sol_compute_pct", math.nan)
    if math.isnan(mem) and math.isnan(comp):
        return "unknown"
    mem, comp = (0.0 if math.isnan(mem) else mem), (0.0 if math.isnan(comp) else comp)
    if max(mem, comp) >= 60:
        return "memory-bound" if mem >= comp else "compute-bound"
    ach = row.get("achieved_occupancy_pct", math.nan)
    waves = row.get("waves_per_sm", math.nan)
    if (not math.isnan(waves) and waves < 1) or (not math.isnan(ach) and ach < 40):
        return "latency-bound (under-occupied)"
    return "latency-bound"


@dataclass
class NcuSummary:
    meta: dict[str, object]
    kernels: pd.DataFrame
    rules: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def kernel_view(p: Profile) -> pd.DataFrame:
    """The wide per-kernel view: one row per profiled kernel, base units (ns, byte, byte/s, %); a
    negative value (a damaged cell) is missing, and counted in ``attrs["negative"]``."""
    rows = []
    negative = 0
    for kid, m in p.metrics.groupby("kernel_id", sort=True):
        row: dict[str, object] = {"kernel_id": int(kid), "kernel": str(m["kernel_name"].iloc[0])}
        nvtx = m.loc[m["metric"] == "nvtx__range", "text"]
        row["nvtx_range"] = str(nvtx.iloc[0]) if len(nvtx) and isinstance(nvtx.iloc[0], str) else ""
        for name, (raw, display) in FIELDS.items():
            value = _value(m, raw, display)
            if value < 0:  # (every field is a time, a size, a count or a share: a damaged cell)
                value, negative = math.nan, negative + 1
            row[name] = value
        cc = m[m["metric"] == "CC"]
        if len(cc) and not (isinstance(row["cc_major"], float) and not math.isnan(row["cc_major"])):
            found = _CC.fullmatch(str(cc["text"].iloc[0]).strip())  # "9.0"; anything else: unknown
            if found:
                row["cc_major"], row["cc_minor"] = float(found.group(1)), float(found.group(2))
        limits = {label: row[k] for k, label in _LIMITS.items()}
        known = {k: v for k, v in limits.items() if isinstance(v, float) and not math.isnan(v)}
        low = min(known.values()) if known else math.nan
        row["limiters"] = ", ".join(k for k, v in known.items() if v == low)
        row.update(_calc(row))
        row["verdict"] = verdict(row)  # type: ignore[arg-type]
        row["decoded"] = decode(row["kernel"]).summary()  # type: ignore[arg-type]
        rows.append(row)
    view = pd.DataFrame(rows)
    view.attrs["negative"] = negative
    return view


def _calc(row: dict[str, object]) -> dict[str, object]:
    """Our occupancy calculator on the same launch (NaN when the launch is not fully known)."""
    try:
        cc = f"{int(row['cc_major'])}.{int(row['cc_minor'])}"  # type: ignore[call-overload]
        threads = int(row["block_x"] * row["block_y"] * row["block_z"])  # type: ignore[operator]
        occ = occupancy(cc_to_sm(cc), threads, int(row["registers_per_thread"]),  # type: ignore[call-overload]
                        int(row["static_smem_bytes"]), int(row["dynamic_smem_bytes"]),  # type: ignore[call-overload]
                        int(row["smem_config_bytes"]) if not math.isnan(row["smem_config_bytes"]) else None,  # type: ignore[arg-type,call-overload]
                        )
    except (ValueError, TypeError, KeyError, OverflowError, NsightTKError):
        return {"calc_theoretical_pct": math.nan, "calc_limiters": ""}
    return {"calc_theoretical_pct": occ.theoretical_pct, "calc_limiters": ", ".join(occ.limiters)}


def summarize(p: Profile) -> NcuSummary:
    if p.metrics.empty:
        raise NsightTKError("the capture has no Nsight Compute metrics")
    rules = p.rules.sort_values(["speedup_pct", "kernel_id"], ascending=[False, True], na_position="last",
                                kind="mergesort").reset_index(drop=True)
    view = kernel_view(p)
    notes = list(p.notes)
    if view.attrs.get("negative"):
        notes.append(f"ncu: {view.attrs['negative']} negative metric value(s) (a time, size, count or share cannot "
                     "be below zero) left out")
    return NcuSummary(dict(p.meta), view, rules, notes)
