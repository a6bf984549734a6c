"""The roofline of an Nsight Compute capture: each kernel's floating-point work against its DRAM
traffic, and the GPU's roofs, computed exactly as ncu's own roofline section
(``SpeedOfLight_RooflineChart``) does, from the raw metrics of ``--set full``:

- achieved work (FLOP/s) = (add + mul + 2 x fma instructions per cycle, summed over SM
  sub-partitions) x SM sub-partition clock; half precision counts the packed forms
  (``hadd``/``hmul`` x2, ``hfma`` x4, ncu's ``derived__`` metrics);
- achieved traffic = ``dram__bytes.sum.per_second``;
- peak work = ncu's ``derived__sm__sass_thread_inst_executed_op_{f,d,h}fma_pred_on_x{2,4}`` x SM clock;
- peak traffic = ``dram__bytes.sum.peak_sustained`` x DRAM clock.

So ``pct_of_peak_flops`` equals the "achieved N% of this device's FP32 peak" of ncu's
``SOLFPRoofline`` rule.  A kernel of a capture without these metrics (a details-page CSV, or a
section set without the roofline) gets no row.
"""

from __future__ import annotations

import math

import pandas as pd

from nsighttk.profile import Profile

COLUMNS = ["kernel_id", "kernel", "precision", "flop_per_s", "dram_bytes_per_s", "intensity_flop_per_byte",
           "peak_flop_per_s", "peak_dram_bytes_per_s", "ridge_flop_per_byte", "pct_of_peak_flops", "bound"]

_SMSP = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
#: precision -> (achieved terms: (metric, multiplier)), peak fma metric (already multiplied)
PRECISIONS: dict[str, tuple[list[tuple[str, float]], str]] = {
    "fp64": ([(_SMSP.format("dadd"), 1), (_SMSP.format("dmul"), 1),
              ("derived__smsp__sass_thread_inst_executed_op_dfma_pred_on_x2", 1)],
             "derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2"),
    "fp32": ([(_SMSP.format("fadd"), 1), (_SMSP.format("fmul"), 1),
              ("derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2", 1)],
             "derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2"),
    "fp16": ([("derived__smsp__sass_thread_inst_executed_op_hadd_pred_on_x2", 1),
              ("derived__smsp__sass_thread_inst_executed_op_hmul_pred_on_x2", 1),
              ("derived__smsp__sass_thread_inst_executed_op_hfma_pred_on_x4", 1)],
             "derived__sm__sass_thread_inst_executed_op_hfma_pred_on_x4"),
}


def roofline(p: Profile) -> pd.DataFrame:
    """One row per (kernel, precision) with floating-point work: achieved FLOP/s, DRAM bytes/s,
    arithmetic intensity, the roofs, the ridge point (intensity where the roofs meet),
    ``pct_of_peak_flops`` and ``bound`` (``memory`` left of the ridge, ``compute`` right of it).
    Kernels without any floating-point work of a precision get no row for it."""
    rows = []
    if p.metrics.empty:
        return pd.DataFrame(columns=COLUMNS)
    for kid, m in p.metrics.groupby("kernel_id", sort=True):
        values = dict(zip(m["metric"], m["value"], strict=False))

        def get(name: str, values: dict[str, float] = values) -> float:
            v = values.get(name)
            return float(v) if v is not None and not math.isnan(float(v)) else math.nan

        smsp_hz, sm_hz = get("smsp__cycles_elapsed.avg.per_second"), get("sm__cycles_elapsed.avg.per_second")
        dram = get("dram__bytes.sum.per_second")
        peak_dram = get("dram__bytes.sum.peak_sustained") * get("dram__cycles_elapsed.avg.per_second")
        for precision, (terms, peak_metric) in PRECISIONS.items():
            parts = [get(metric) * mult for metric, mult in terms]
            if all(math.isnan(x) for x in parts):
                continue
            flops = sum(x for x in parts if not math.isnan(x)) * smsp_hz
            peak = get(peak_metric) * sm_hz
            if not flops > 0:
                continue
            intensity = flops / dram if dram > 0 else math.inf
            ridge = peak / peak_dram if peak_dram > 0 else math.nan
            rows.append({
                "kernel_id": int(kid), "kernel": str(m["kernel_name"].iloc[0]), "precision": precision,
                "flop_per_s": flops, "dram_bytes_per_s": dram, "intensity_flop_per_byte": intensity,
                "peak_flop_per_s": peak, "peak_dram_bytes_per_s": peak_dram, "ridge_flop_per_byte": ridge,
                "pct_of_peak_flops": flops / peak * 100 if peak > 0 else math.nan,
                "bound": "" if math.isnan(ridge) else ("memory" if intensity < ridge else "compute"),
            })
    return pd.DataFrame(rows, columns=COLUMNS)


def peaks(p: Profile) -> dict[str, float]:
    """The device's roofs from the first kernel that has them: ``dram_bytes_per_s`` and
    ``fp64``/``fp32``/``fp16`` FLOP/s (empty when the capture has no roofline metrics)."""
    out: dict[str, float] = {}
    if p.metrics.empty:
        return out
    first = p.metrics[p.metrics["kernel_id"] == p.metrics["kernel_id"].min()]
    values = dict(zip(first["metric"], first["value"], strict=False))
    try:
        out["dram_bytes_per_s"] = float(values["dram__bytes.sum.peak_sustained"]) * float(
            values["dram__cycles_elapsed.avg.per_second"])
        for precision, (_, peak_metric) in PRECISIONS.items():
            if peak_metric in values:
                out[precision] = float(values[peak_metric]) * float(values["sm__cycles_elapsed.avg.per_second"])
    except KeyError:
        return {}
    return {k: v for k, v in out.items() if not math.isnan(v)}
