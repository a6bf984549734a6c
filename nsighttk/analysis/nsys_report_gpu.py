"""The kernel, memory-operation, CUDA API and GPU summaries of ``nsys stats``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from nsighttk.analysis import nsys_report_spilled as spilled
from nsighttk.analysis.coltable import Table
from nsighttk.analysis.groupstats import GroupStats, factorize_sorted, group_stats
from nsighttk.analysis.nsys_report_base import (
    ReportResult,
    _group_codes,
    _order,
    _rows,
    _stats,
    _time_columns,
    _totals,
    columns,
    kernel_name_codes,
    no_data,
    result,
)
from nsighttk.profile import INT_NULL, Profile

if TYPE_CHECKING:
    import pandas as pd

# --------------------------------------------------------------------------------------- kernels


def cuda_gpu_kern_sum(p: Profile) -> ReportResult:
    """CUDA GPU Kernel Summary: kernels grouped by name, longest total first."""
    if spilled.spills(p, "kernels"):
        g, names = spilled.kernel_stats(p)
    elif not _rows(p, "kernels"):
        return no_data("cuda_gpu_kern_sum", "kernels")
    else:
        codes, names = kernel_name_codes(p)
        g = group_stats(codes, columns(p, "kernels", ["duration_ns"])["duration_ns"])
    if not len(g.key):
        return no_data("cuda_gpu_kern_sum", "kernels")
    t = Table({**_time_columns(g, "Instances"), "Name": names[g.key]})
    return result("cuda_gpu_kern_sum", _order(t, ["Total Time (ns)", "Instances", "Name"], [False, True, True]))


def _xyz(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> list[str]:
    return [f"{a:4d} {b:4d} {c:4d}" for a, b, c in zip(x.tolist(), y.tolist(), z.tolist(), strict=True)]


def cuda_gpu_kern_gb_sum(p: Profile) -> ReportResult:
    """CUDA GPU Kernel/Grid/Block Summary: kernels grouped by name, grid and block."""
    if spilled.spills(p, "kernels"):
        g, reps, names = spilled.kernel_shape_stats(p)
    elif not _rows(p, "kernels"):
        return no_data("cuda_gpu_kern_gb_sum", "kernels")
    else:
        codes, names = kernel_name_codes(p)
        k = p.arrays("kernels", spilled.DIMS, narrow=True)
        cols = [codes] + [np.where(k[d] == np.iinfo(k[d].dtype).min, 0, k[d]) for d in spilled.DIMS]  # unknown: 0
        del k
        key, reps = _group_codes(cols)
        del cols
        g = group_stats(key, columns(p, "kernels", ["duration_ns"])["duration_ns"])
        del key
    if not len(g.key):
        return no_data("cuda_gpu_kern_gb_sum", "kernels")
    rep = [r[g.key] for r in reps]
    t = Table({
        **_time_columns(g, "Instances"),
        "GridXYZ": _xyz(*rep[1:4]),
        "BlockXYZ": _xyz(*rep[4:7]),
        "Name": names[rep[0]],
    })
    return result("cuda_gpu_kern_gb_sum", _order(t, ["Total Time (ns)", "Instances", "Name"], [False, True, True]))


# ---------------------------------------------------------------------------------- memory ops

def memory_op_arrays(p: Profile) -> dict[str, np.ndarray]:
    """Memcpys and memsets together: name (object), duration_ns, bytes (0 where unknown);
    memcpys first, as nsys."""
    m = columns(p, "memcpy", ["label", "duration_ns", "bytes"])
    has = np.array([v is not None for v in m["label"]], dtype=bool)
    label_codes, labels = factorize_sorted(m["label"][has])
    copy_names = np.empty(len(labels), dtype=object)
    copy_names[:] = ["[CUDA memcpy " + str(v) + "]" for v in labels]
    s = columns(p, "memset", ["duration_ns", "bytes"])
    names = np.empty(int(has.sum()) + len(s["duration_ns"]), dtype=object)
    names[:int(has.sum())] = copy_names[label_codes] if len(label_codes) else []
    names[int(has.sum()):] = "[CUDA memset]"
    nbytes = np.concatenate([m["bytes"][has], s["bytes"]]).astype("int64")
    return {"name": names, "duration_ns": np.concatenate([m["duration_ns"][has], s["duration_ns"]]).astype("int64"),
            "bytes": np.where(nbytes == INT_NULL, 0, nbytes)}


def memory_ops(p: Profile) -> pd.DataFrame:
    """Memcpys and memsets as one frame: name, duration_ns, bytes (memcpys first, as nsys)."""
    return Table(memory_op_arrays(p)).to_pandas()


def _memory_groups(p: Profile, value: str) -> tuple[GroupStats, np.ndarray]:
    """Memory operations' ``value`` grouped by operation name: the statistics, the name per group."""
    if spilled.spills(p, "memcpy", "memset"):
        g, names = spilled.memory_stats(p, value)
        return g, names[g.key]
    ops = memory_op_arrays(p)
    g, (op,) = _stats(ops[value], [ops["name"]])
    return g, op


def cuda_gpu_mem_time_sum(p: Profile) -> ReportResult:
    """CUDA GPU MemOps Summary (by Time)."""
    g, op = _memory_groups(p, "duration_ns")
    if not len(g.key):
        return no_data("cuda_gpu_mem_time_sum", "memory")
    t = Table({**_time_columns(g, "Count"), "Operation": op.astype(object)})
    return result("cuda_gpu_mem_time_sum", _order(t, ["Total Time (ns)"], [False]))


def cuda_gpu_mem_size_sum(p: Profile) -> ReportResult:
    """CUDA GPU MemOps Summary (by Size); sizes in bytes here, MB when rendered."""
    g, op = _memory_groups(p, "bytes")
    if not len(g.key):
        return no_data("cuda_gpu_mem_size_sum", "memory")
    t = Table({
        "Total (B)": _totals(g.total), "Count": np.asarray(g.count, dtype="int64"),
        "Avg (B)": _floats(g.avg), "Med (B)": _floats(g.med),
        "Min (B)": np.asarray(g.min, dtype="int64"), "Max (B)": np.asarray(g.max, dtype="int64"),
        "StdDev (B)": _floats(g.stddev), "Operation": op.astype(object),
    })
    return result("cuda_gpu_mem_size_sum", _order(t, ["Total (B)"], [False]))


def _floats(values: np.ndarray) -> np.ndarray:
    return np.array([float(v) for v in values], dtype="float64") if values.dtype == object \
        else values.astype("float64")


# ------------------------------------------------------------------------------------ CUDA API


def api_display_name(name: str | None) -> str | None:
    """nsys drops a ``_vNNNN`` version suffix (exactly 6 characters) from API names."""
    if name is None or not isinstance(name, str):
        return name
    return name[:-6] if name[-6:-4] == "_v" else name


def cuda_api_sum(p: Profile) -> ReportResult:
    """CUDA API Summary: runtime and driver calls grouped by function."""
    if spilled.spills(p, "api"):
        g, ids = spilled.api_stats(p)
        shown = p.names("api", ids[g.key])
    elif not _rows(p, "api"):
        return no_data("cuda_api_sum", "api")
    elif p.loaded("api") or p.source is None:  # eager tables (Kineto): names may have no ids
        durations = columns(p, "api", ["duration_ns"])["duration_ns"]
        names = columns(p, "api", ["name"])["name"]
        uniq, codes = np.unique(np.array(["" if n is None else n for n in names], dtype=str), return_inverse=True)
        g, (key,) = _stats(durations, [codes.ravel()])
        shown = uniq.astype(object)[key.astype("int64")]
    else:  # the ids as kept (narrow: a missing one is its type's minimum, below every id, named None)
        durations = columns(p, "api", ["duration_ns"])["duration_ns"]
        g, (key,) = _stats(durations, [p.arrays("api", ["name_id"], narrow=True)["name_id"]])
        shown = p.names("api", key.astype("int64"))
    if not len(g.key):
        return no_data("cuda_api_sum", "api")
    display = np.empty(len(shown), dtype=object)
    display[:] = [api_display_name(n) for n in shown]
    t = Table({**_time_columns(g, "Num Calls"), "Name": display})
    return result("cuda_api_sum", _order(t, ["Total Time (ns)"], [False]))


# ---------------------------------------------------------------------------------- GPU summary


def cuda_gpu_sum(p: Profile) -> ReportResult:
    """CUDA GPU Summary (Kernels/MemOps): what seed 004's nsys_easy prints."""
    if spilled.spills(p, "kernels", "memcpy", "memset"):
        g, all_names, kernel = spilled.gpu_stats(p)
        if not len(g.key):
            return no_data("cuda_gpu_sum", "gpu")
        t = Table({**_time_columns(g, "Instances"),
                   "Category": np.where(kernel[g.key], "CUDA_KERNEL", "MEMORY_OPER").astype(object),
                   "Operation": all_names[g.key]})
        return result("cuda_gpu_sum", _order(t, ["Total Time (ns)"], [False]))
    mem = memory_op_arrays(p)
    n_k = _rows(p, "kernels")
    if not n_k and not len(mem["name"]):
        return no_data("cuda_gpu_sum", "gpu")
    # One code space for kernel names and memory-operation names, in byte order of the names.
    k_codes, k_names = kernel_name_codes(p) if n_k else (np.array([], "int64"), np.array([], object))
    m_codes, m_names = factorize_sorted(mem["name"])
    all_names = np.unique(np.concatenate([k_names.astype(str), np.asarray(m_names, dtype=str)]))
    codes = np.concatenate([np.searchsorted(all_names, k_names.astype(str))[k_codes],
                            np.searchsorted(all_names, np.asarray(m_names, dtype=str))[m_codes]])
    category = np.concatenate([np.zeros(len(k_codes), dtype="int8"), np.ones(len(m_codes), dtype="int8")])
    durations = np.concatenate([columns(p, "kernels", ["duration_ns"])["duration_ns"],
                                mem["duration_ns"].astype("int64")])
    g = group_stats(codes, durations)
    first_cat = np.zeros(len(all_names), dtype="int8")
    first_cat[codes[::-1]] = category[::-1]  # the category of each name's first operation
    t = Table({**_time_columns(g, "Instances"),
               "Category": np.where(first_cat[g.key] == 0, "CUDA_KERNEL", "MEMORY_OPER").astype(object),
               "Operation": all_names.astype(object)[g.key]})
    return result("cuda_gpu_sum", _order(t, ["Total Time (ns)"], [False]))
