"""NVTX ranges of PyTorch's autograd ops (``nsys --pytorch=autograd-nvtx``): the
``nvtx_gpu_proj_sum`` rows of each op's numbered calls summed per op.

Ranges' nesting lives with the loader that fills ``nvtx.depth`` (:mod:`nsighttk.load.nvtx_nesting`);
the NVTX reports' projection is SQL over the engine (:mod:`nsighttk.analysis.nsys.nvtx`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

# PyTorch's emit_nvtx (nsys --pytorch=autograd-nvtx) names each op range
# "aten::mm, seq = 0, op_id = 13" (and ", sizes = [[...]]" with shapes): one name per call.
_AUTOGRAD_SUFFIX = r",\s*(?:seq|op_id|sizes|input_op_ids)\s*=.*$"


def autograd_op_name(range_name: str) -> str:
    """``"aten::mm, seq = 0, op_id = 13"`` -> ``"aten::mm"``; other names unchanged."""
    import re

    return re.sub(_AUTOGRAD_SUFFIX, "", range_name)


#: rows of the projection looked at a time by :func:`autograd_ops` (a capture with a name per op call
#: has millions: their op names, masks and copies made for all at once held 400 MB more at 3.2M names)
_OPS_ROWS = 1 << 17


def autograd_ops(nvtx_gpu_proj: pd.DataFrame) -> pd.DataFrame:
    """``nvtx_gpu_proj_sum`` rows of autograd op ranges grouped by op (calls are numbered by
    emit_nvtx, so nsys lists each separately).  Columns: ``op, calls, cpu_total_ns,
    gpu_proj_total_ns, gpu_ops``, by GPU time; empty when the capture has no such ranges.  The
    rows are summed :data:`_OPS_ROWS` at a time, then the sums (integers: the same totals, the ops
    in order of first appearance)."""
    import pandas as pd

    cols = ["op", "calls", "cpu_total_ns", "gpu_proj_total_ns", "gpu_ops"]
    sums = {"calls": "Range Instances", "cpu_total_ns": "Total Range Time (ns)",
            "gpu_proj_total_ns": "Total Proj Time (ns)", "gpu_ops": "Total GPU Ops"}
    parts = []
    for lo in range(0, len(nvtx_gpu_proj), _OPS_ROWS):
        rows = nvtx_gpu_proj.iloc[lo:lo + _OPS_ROWS]
        names = rows["Range"].astype(str).str.lstrip(":")
        is_op = names.str.contains(_AUTOGRAD_SUFFIX, regex=True).to_numpy(dtype=bool)
        if is_op.any():
            ops = rows[is_op].assign(op=names[is_op].map(autograd_op_name).to_numpy())
            parts.append(ops.groupby("op", sort=False).agg(**{k: (v, "sum") for k, v in sums.items()}))
    if not parts:
        return pd.DataFrame(columns=cols)
    g = (parts[0] if len(parts) == 1 else pd.concat(parts).groupby(level=0, sort=False).sum()).reset_index()
    return g.sort_values(["gpu_proj_total_ns", "cpu_total_ns"], ascending=False, ignore_index=True)[cols]
