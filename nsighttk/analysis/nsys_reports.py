"""The ``nsys stats`` reports, as pure functions ``Profile -> DataFrame``.

Each function reproduces one report of Nsight Systems 2025 (same rows, same order, same
aggregation and rounding), so ``nsighttk stats`` can stand in for ``nsys stats`` on any machine.
Column names are nsys' headers, except that sizes are kept in raw units in the DataFrame —
``(B)`` and ``(B/s)`` — and only the renderers (:mod:`nsighttk.report.nsys_format`) turn them
into nsys' ``(MB)`` and ``(MB/s)``.  Averages, medians, standard deviations and percentages are
rounded to 0.1 exactly as nsys' SQL ``round(x, 1)`` does (half away from zero).

The semantics, shared by all reports:

* durations are ``end - start`` in ns; standard deviations are sample ones (n-1), 0 for n=1;
* memcpy operations are named ``[CUDA memcpy <label>]`` with the export's own label, memsets
  ``[CUDA memset]``;
* ties in the sort order keep the order of the grouping key, as SQLite does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pandas as pd

from nsighttk.analysis import nvtx as nvtx_analysis
from nsighttk.analysis.groupstats import combine_codes_with_spans, count_distinct, group_stats
from nsighttk.profile import Profile, obj, release_free_memory

STAT_COLUMNS = ["Total Time (ns)", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)"]


@dataclass
class ReportResult:
    """One report: its nsys name, a title, the table, and why it is empty when it is.

    Large reports (the GPU trace) are produced in chunks: :meth:`frames` yields them without
    ever holding the whole table; :attr:`frame` concatenates them on first use."""

    name: str
    title: str
    _frame: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    _chunks: Callable[[], Iterator[pd.DataFrame]] | None = None

    @property
    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            assert self._chunks is not None
            parts = list(self._chunks())
            self._frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        return self._frame

    def frames(self) -> Iterator[pd.DataFrame]:
        if self._frame is None and self._chunks is not None:
            yield from self._chunks()
        else:
            yield self.frame

    @property
    def empty(self) -> bool:
        return self._frame is not None and self._frame.empty


def sql_round(values: pd.Series | np.ndarray, digits: int = 1) -> np.ndarray:
    """SQLite's ``round(x, digits)``: half away from zero on the shortest decimal form of x."""
    arr = np.asarray(values, dtype="float64")
    q = Decimal(1).scaleb(-digits)
    out = np.empty(len(arr), dtype="float64")
    for i, x in enumerate(arr):
        out[i] = x if not np.isfinite(x) else float(Decimal(repr(float(x))).quantize(q, rounding=ROUND_HALF_UP))
    return out


def _stats(values: pd.Series, groups: list[pd.Series] | pd.Series) -> pd.DataFrame:
    """total, num, avg, med, min, max, stddev of ``values`` per group, groups in key order.

    Group keys are factorized (sorted, nulls last as pandas does) and combined into one integer
    key, so the statistics come from one sort (:mod:`nsighttk.analysis.groupstats`)."""
    cols = groups if isinstance(groups, list) else [groups]
    codes, uniques = [], []
    for c in cols:
        cd, un = pd.factorize(pd.Series(c).reset_index(drop=True), sort=True, use_na_sentinel=False)
        codes.append(cd)
        uniques.append(un)
    spans = [max(len(u), 1) for u in uniques]
    g = group_stats(combine_codes_with_spans(codes, spans), np.asarray(values, dtype="int64"))
    parts = []
    rest = g.key
    for span, un in zip(reversed(spans), reversed(uniques), strict=True):
        rest, code = np.divmod(rest, span)
        parts.append(np.asarray(un, dtype=object)[code] if len(un) else np.array([], dtype=object))
    parts.reverse()
    index = pd.MultiIndex.from_arrays(parts) if len(parts) > 1 else pd.Index(parts[0], dtype=object)
    return pd.DataFrame({"total": g.total, "num": g.count, "avg": g.avg, "med": g.med, "min": g.min, "max": g.max,
                         "stddev": g.stddev}, index=index)


def _memo(p: Profile, key: str, make: Callable[[], object]) -> object:
    """Derived arrays shared by several reports, computed once per profile (keyed on its tables)."""
    tag = (key, id(p.kernels), id(p.memcpy), id(p.memset), id(p.api), id(p.nvtx))
    if tag not in p.cache:
        p.cache[tag] = make()
    return p.cache[tag]


def kernel_name_codes(p: Profile) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel, a code ranking its name in byte order, and the names by code.

    Computed from the integer string ids (one per distinct name in an nsys export), which is far
    cheaper than hashing a million name strings."""
    def make() -> tuple[np.ndarray, np.ndarray]:
        k = p.kernels
        ids, inverse = np.unique(k["name_id"].to_numpy(dtype="int64"), return_inverse=True)
        first = np.zeros(len(ids), dtype="int64")
        first[inverse[::-1]] = np.arange(len(k) - 1, -1, -1)
        names = k["name"].to_numpy(dtype=object)[first]
        names = np.array(["" if n is None else n for n in names], dtype=object)
        uniq_names, by_name = np.unique(names.astype(str), return_inverse=True)  # ids sharing a name merge
        return by_name[inverse], uniq_names.astype(object)
    out = _memo(p, "kernel_name_codes", make)
    return out  # type: ignore[return-value]


def _time_columns(s: pd.DataFrame, count_name: str) -> dict[str, object]:
    grand = s["total"].sum()
    pct = s["total"] * 100.0 / grand if grand else s["total"] * np.nan
    return {
        "Time (%)": sql_round(pct),
        "Total Time (ns)": s["total"].to_numpy(dtype="int64"),
        count_name: s["num"].to_numpy(dtype="int64"),
        "Avg (ns)": sql_round(s["avg"]),
        "Med (ns)": sql_round(s["med"]),
        "Min (ns)": s["min"].to_numpy(dtype="int64"),
        "Max (ns)": s["max"].to_numpy(dtype="int64"),
        "StdDev (ns)": sql_round(s["stddev"]),
    }


def _order(df: pd.DataFrame, by: list[str], ascending: list[bool]) -> pd.DataFrame:
    return df.sort_values(by, ascending=ascending, kind="mergesort").reset_index(drop=True)


def _empty(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})


# --------------------------------------------------------------------------------------- kernels

KERN_SUM_COLUMNS = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)",
                    "Max (ns)", "StdDev (ns)", "Name"]


def cuda_gpu_kern_sum(p: Profile) -> ReportResult:
    """CUDA GPU Kernel Summary: kernels grouped by name, longest total first."""
    title = "CUDA GPU Kernel Summary"
    k = p.kernels
    if k.empty:
        return ReportResult("cuda_gpu_kern_sum", title, _empty(KERN_SUM_COLUMNS), ["no CUDA kernel data"])
    codes, names = kernel_name_codes(p)
    g = group_stats(codes, k["duration_ns"].to_numpy(dtype="int64"))
    s = pd.DataFrame({"total": g.total, "num": g.count, "avg": g.avg, "med": g.med, "min": g.min, "max": g.max,
                      "stddev": g.stddev})
    df = pd.DataFrame({**_time_columns(s, "Instances"), "Name": names[g.key]})
    return ReportResult("cuda_gpu_kern_sum", title,
                        _order(df, ["Total Time (ns)", "Instances", "Name"], [False, True, True]))


KERN_GB_COLUMNS = [*KERN_SUM_COLUMNS[:-1], "GridXYZ", "BlockXYZ", "Name"]


def _xyz(x: pd.Series, y: pd.Series, z: pd.Series) -> list[str]:
    return [f"{a:4d} {b:4d} {c:4d}" for a, b, c in zip(x, y, z, strict=True)]


def cuda_gpu_kern_gb_sum(p: Profile) -> ReportResult:
    """CUDA GPU Kernel/Grid/Block Summary: kernels grouped by name, grid and block."""
    title = "CUDA GPU Kernel/Grid/Block Summary"
    k = p.kernels
    if k.empty:
        return ReportResult("cuda_gpu_kern_gb_sum", title, _empty(KERN_GB_COLUMNS), ["no CUDA kernel data"])
    dims = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]
    codes, names = kernel_name_codes(p)
    keys = [pd.Series(codes)] + [k[d].fillna(0).astype("int64").reset_index(drop=True) for d in dims]
    s = _stats(k["duration_ns"], keys)
    idx = s.index.to_frame(index=False)
    idx.columns = ["name", *dims]
    idx["name"] = names[idx["name"].to_numpy(dtype="int64")]
    df = pd.DataFrame({
        **_time_columns(s, "Instances"),
        "GridXYZ": _xyz(idx["grid_x"], idx["grid_y"], idx["grid_z"]),
        "BlockXYZ": _xyz(idx["block_x"], idx["block_y"], idx["block_z"]),
        "Name": idx["name"].to_numpy(dtype=object),
    })
    return ReportResult("cuda_gpu_kern_gb_sum", title,
                        _order(df, ["Total Time (ns)", "Instances", "Name"], [False, True, True]))


# ---------------------------------------------------------------------------------- memory ops

def memory_ops(p: Profile) -> pd.DataFrame:
    """Memcpys and memsets as one frame: name, duration_ns, bytes (memcpys first, as nsys)."""
    frames = []
    m = p.memcpy[p.memcpy["label"].notna()]
    if len(m):
        frames.append(pd.DataFrame({"name": "[CUDA memcpy " + m["label"].astype(str) + "]",
                                    "duration_ns": m["duration_ns"].to_numpy(),
                                    "bytes": m["bytes"].to_numpy()}))
    if len(p.memset):
        frames.append(pd.DataFrame({"name": "[CUDA memset]", "duration_ns": p.memset["duration_ns"].to_numpy(),
                                    "bytes": p.memset["bytes"].to_numpy()}))
    if not frames:
        return pd.DataFrame({"name": pd.Series(dtype=object), "duration_ns": pd.Series(dtype="int64"),
                             "bytes": pd.Series(dtype="int64")})
    return pd.concat(frames, ignore_index=True)


MEM_TIME_COLUMNS = ["Time (%)", "Total Time (ns)", "Count", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
                    "StdDev (ns)", "Operation"]


def cuda_gpu_mem_time_sum(p: Profile) -> ReportResult:
    """CUDA GPU MemOps Summary (by Time)."""
    title = "CUDA GPU MemOps Summary (by Time)"
    ops = memory_ops(p)
    if ops.empty:
        return ReportResult("cuda_gpu_mem_time_sum", title, _empty(MEM_TIME_COLUMNS), ["no GPU memory data"])
    s = _stats(ops["duration_ns"], ops["name"])
    df = pd.DataFrame({**_time_columns(s, "Count"), "Operation": s.index.to_numpy(dtype=object)})
    return ReportResult("cuda_gpu_mem_time_sum", title, _order(df, ["Total Time (ns)"], [False]))


MEM_SIZE_COLUMNS = ["Total (B)", "Count", "Avg (B)", "Med (B)", "Min (B)", "Max (B)", "StdDev (B)", "Operation"]


def cuda_gpu_mem_size_sum(p: Profile) -> ReportResult:
    """CUDA GPU MemOps Summary (by Size); sizes in bytes here, MB when rendered."""
    title = "CUDA GPU MemOps Summary (by Size)"
    ops = memory_ops(p)
    if ops.empty:
        return ReportResult("cuda_gpu_mem_size_sum", title, _empty(MEM_SIZE_COLUMNS), ["no GPU memory data"])
    s = _stats(ops["bytes"], ops["name"])
    df = pd.DataFrame({
        "Total (B)": s["total"].to_numpy(dtype="int64"), "Count": s["num"].to_numpy(dtype="int64"),
        "Avg (B)": s["avg"].to_numpy(dtype="float64"), "Med (B)": s["med"].to_numpy(dtype="float64"),
        "Min (B)": s["min"].to_numpy(dtype="int64"), "Max (B)": s["max"].to_numpy(dtype="int64"),
        "StdDev (B)": s["stddev"].to_numpy(dtype="float64"), "Operation": s.index.to_numpy(dtype=object),
    })
    return ReportResult("cuda_gpu_mem_size_sum", title, _order(df, ["Total (B)"], [False]))


# ------------------------------------------------------------------------------------ CUDA API

API_COLUMNS = ["Time (%)", "Total Time (ns)", "Num Calls", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
               "StdDev (ns)", "Name"]


def api_display_name(name: str | None) -> str | None:
    """nsys drops a ``_vNNNN`` version suffix (exactly 6 characters) from API names."""
    if name is None or not isinstance(name, str):
        return name
    return name[:-6] if name[-6:-4] == "_v" else name


def cuda_api_sum(p: Profile) -> ReportResult:
    """CUDA API Summary: runtime and driver calls grouped by function."""
    title = "CUDA API Summary"
    a = p.api
    if a.empty:
        return ReportResult("cuda_api_sum", title, _empty(API_COLUMNS), ["no CUDA API data"])
    s = _stats(a["duration_ns"], a["name_id"].fillna(-1).astype("int64"))
    first_name = a.groupby(a["name_id"].fillna(-1).astype("int64"), sort=True)["name"].first()
    df = pd.DataFrame({**_time_columns(s, "Num Calls"),
                       "Name": [api_display_name(n) for n in first_name.reindex(s.index)]})
    return ReportResult("cuda_api_sum", title, _order(df, ["Total Time (ns)"], [False]))


# ---------------------------------------------------------------------------------- GPU summary

GPU_SUM_COLUMNS = [*KERN_SUM_COLUMNS[:-1], "Category", "Operation"]


def cuda_gpu_sum(p: Profile) -> ReportResult:
    """CUDA GPU Summary (Kernels/MemOps): what seed 004's nsys_easy prints."""
    title = "CUDA GPU Summary (Kernels/MemOps)"
    mem = memory_ops(p)
    if p.kernels.empty and mem.empty:
        return ReportResult("cuda_gpu_sum", title, _empty(GPU_SUM_COLUMNS), ["no GPU kernel or memory data"])
    # One code space for kernel names and memory-operation names, in byte order of the names.
    k_codes, k_names = kernel_name_codes(p) if len(p.kernels) else (np.array([], "int64"), np.array([], object))
    m_codes, m_names = pd.factorize(mem["name"], sort=True)
    all_names = np.unique(np.concatenate([k_names.astype(str), np.asarray(m_names, dtype=str)]))
    codes = np.concatenate([np.searchsorted(all_names, k_names.astype(str))[k_codes],
                            np.searchsorted(all_names, np.asarray(m_names, dtype=str))[m_codes]])
    category = np.concatenate([np.zeros(len(k_codes), dtype="int8"), np.ones(len(m_codes), dtype="int8")])
    durations = np.concatenate([p.kernels["duration_ns"].to_numpy(dtype="int64"),
                                mem["duration_ns"].to_numpy(dtype="int64")])
    g = group_stats(codes, durations)
    first_cat = np.zeros(len(all_names), dtype="int8")
    first_cat[codes[::-1]] = category[::-1]  # the category of each name's first operation
    s = pd.DataFrame({"total": g.total, "num": g.count, "avg": g.avg, "med": g.med, "min": g.min, "max": g.max,
                      "stddev": g.stddev})
    df = pd.DataFrame({**_time_columns(s, "Instances"),
                       "Category": np.where(first_cat[g.key] == 0, "CUDA_KERNEL", "MEMORY_OPER").astype(object),
                       "Operation": all_names.astype(object)[g.key]})
    return ReportResult("cuda_gpu_sum", title, _order(df, ["Total Time (ns)"], [False]))


# ------------------------------------------------------------------------------------------ NVTX

NVTX_SUM_COLUMNS = [*KERN_SUM_COLUMNS[:-1], "Style", "Range"]


def nvtx_tags(nvtx: pd.DataFrame) -> pd.Series:
    """nsys' range label: ``domain:name`` (``:name`` in the default domain)."""
    return nvtx["domain"].fillna("").astype(str) + ":" + nvtx["name"].fillna("").astype(str)


def nvtx_sum(p: Profile) -> ReportResult:
    """NVTX Range Summary: CPU-side time of each range, grouped by label and style."""
    title = "NVTX Range Summary"
    n = p.nvtx
    if n.empty:
        return ReportResult("nvtx_sum", title, _empty(NVTX_SUM_COLUMNS), ["no NVTX data"])
    end = nvtx_analysis.range_ends(n, p.meta.get("nvtx_max_ts_all"))
    dur = pd.Series(end - n["start_ns"].to_numpy(dtype="int64"), index=n.index)
    s = _stats(dur, [nvtx_tags(n), n["style"]])
    df = pd.DataFrame({**_time_columns(s, "Instances"),
                       "Style": s.index.get_level_values(1).to_numpy(dtype=object),
                       "Range": s.index.get_level_values(0).to_numpy(dtype=object)})
    return ReportResult("nvtx_sum", title, _order(df, ["Total Time (ns)"], [False]))


def _closed_ranges(p: Profile) -> pd.DataFrame:
    """Ranges that ended on the thread that started them (those nsys projects onto the GPU)."""
    n = p.nvtx
    return n[n["end_global_tid"].isna()].reset_index(drop=True)


def _range_calls(p: Profile, ranges: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """GPU ops (kernels first) with their launching call, and (range, op) containment pairs."""
    def make() -> tuple[pd.DataFrame, pd.DataFrame]:
        calls = nvtx_analysis.launches(nvtx_analysis.gpu_ops(p.kernels, p.memcpy, p.memset), p.api)
        release_free_memory()
        pairs = nvtx_analysis.enclosing_ranges(ranges, calls, p.meta.get("nvtx_max_ts_ranges"))
        release_free_memory()
        # Keep only what the NVTX reports read later; 32-bit positions where they fit.
        calls = calls[["start_ns", "end_ns", "correlation_id", "global_tid"]].copy()
        if len(calls) < 2**31 and len(ranges) < 2**31:
            pairs = pairs.astype("int32")
        return calls, pairs
    out = _memo(p, "range_calls", make)
    return out  # type: ignore[return-value]


NVTX_PROJ_COLUMNS = ["Range", "Style", "Total Proj Time (ns)", "Total Range Time (ns)", "Range Instances",
                     "Proj Avg (ns)", "Proj Med (ns)", "Proj Min (ns)", "Proj Max (ns)", "Proj StdDev (ns)",
                     "Total GPU Ops", "Avg GPU Ops", "Avg Range Lvl", "Avg Num Child"]


def nvtx_projection(p: Profile) -> pd.DataFrame:
    """One row per NVTX range instance that launched GPU work: its projection onto the GPU.

    Columns: range_pos, name (``domain:name``), style, range_ns (CPU duration), proj_start_ns,
    proj_ns (first GPU start to last GPU end of the work it launched), gpu_ops, level, children
    (child ranges that also launched GPU work)."""
    ranges = _closed_ranges(p)
    cols = ["range_pos", "name", "style", "range_ns", "proj_start_ns", "proj_ns", "gpu_ops", "level", "children"]
    if ranges.empty or p.api.empty:
        return pd.DataFrame({c: [] for c in cols})
    max_ts = p.meta.get("nvtx_max_ts_ranges")
    calls, pairs = _range_calls(p, ranges)
    if pairs.empty:
        return pd.DataFrame({c: [] for c in cols})
    call_pos = pairs["call_pos"].to_numpy()
    rp = pairs["range_pos"].to_numpy()
    order = np.argsort(rp, kind="stable")
    rp_sorted = rp[order]
    seg = np.flatnonzero(np.r_[True, rp_sorted[1:] != rp_sorted[:-1]])
    pos = rp_sorted[seg]
    proj_start = np.minimum.reduceat(calls["start_ns"].to_numpy(dtype="int64")[call_pos][order], seg)
    proj_end = np.maximum.reduceat(calls["end_ns"].to_numpy(dtype="int64")[call_pos][order], seg)
    corr = np.nan_to_num(calls["correlation_id"].to_numpy(dtype="float64")[call_pos], nan=-1).astype("int64")
    _, gpu_ops = count_distinct(rp, corr)
    del order, rp_sorted
    parents = nvtx_analysis.range_parents(ranges, max_ts)
    levels = nvtx_analysis.depth_from_parents(parents)
    has_proj = np.zeros(len(ranges), dtype=bool)
    has_proj[pos] = True
    children = np.zeros(len(ranges), dtype="int64")
    par = parents[has_proj]
    np.add.at(children, par[par >= 0], 1)
    ends = nvtx_analysis.range_ends(ranges, max_ts)
    tags = nvtx_tags(ranges).to_numpy(dtype=object)
    return pd.DataFrame({
        "range_pos": pos,
        "name": tags[pos],
        "style": ranges["style"].to_numpy(dtype=object)[pos],
        "range_ns": ends[pos] - ranges["start_ns"].to_numpy(dtype="int64")[pos],
        "proj_start_ns": proj_start,
        "proj_ns": proj_end - proj_start,
        "gpu_ops": gpu_ops,
        "level": levels[pos],
        "children": children[pos],
    })


def nvtx_gpu_proj_sum(p: Profile) -> ReportResult:
    """NVTX GPU Projection Summary: GPU time of the work each range launched."""
    title = "NVTX GPU Projection Summary"
    if p.nvtx.empty:
        return ReportResult("nvtx_gpu_proj_sum", title, _empty(NVTX_PROJ_COLUMNS), ["no NVTX data"])
    if p.api.empty:
        return ReportResult("nvtx_gpu_proj_sum", title, _empty(NVTX_PROJ_COLUMNS), ["no CUDA API data"])
    proj = nvtx_projection(p)
    if proj.empty:
        return ReportResult("nvtx_gpu_proj_sum", title, _empty(NVTX_PROJ_COLUMNS), ["no GPU work inside NVTX ranges"])
    keys = [proj["name"], proj["style"]]
    s = _stats(proj["proj_ns"], keys)
    g = proj.groupby(keys, sort=True)
    df = pd.DataFrame({
        "Range": s.index.get_level_values(0).to_numpy(dtype=object),
        "Style": s.index.get_level_values(1).to_numpy(dtype=object),
        "Total Proj Time (ns)": s["total"].to_numpy(dtype="int64"),
        "Total Range Time (ns)": g["range_ns"].sum().to_numpy(dtype="int64"),
        "Range Instances": s["num"].to_numpy(dtype="int64"),
        "Proj Avg (ns)": sql_round(s["avg"]),
        "Proj Med (ns)": sql_round(s["med"]),
        "Proj Min (ns)": s["min"].to_numpy(dtype="int64"),
        "Proj Max (ns)": s["max"].to_numpy(dtype="int64"),
        "Proj StdDev (ns)": sql_round(s["stddev"]),
        "Total GPU Ops": g["gpu_ops"].sum().to_numpy(dtype="int64"),
        "Avg GPU Ops": sql_round(g["gpu_ops"].mean()),
        "Avg Range Lvl": sql_round(g["level"].mean()),
        "Avg Num Child": sql_round(g["children"].mean()),
    })
    return ReportResult("nvtx_gpu_proj_sum", title, _order(df, ["Total Proj Time (ns)"], [False]))


NVTX_KERN_COLUMNS = ["NVTX Range", "Style", "PID", "TID", "NVTX Inst", "Kern Inst", "Total Time (ns)", "Avg (ns)",
                     "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Kernel Name"]


def nvtx_kern_sum(p: Profile) -> ReportResult:
    """NVTX Range Kernel Summary: kernels per enclosing NVTX range (a kernel counts in each)."""
    title = "NVTX Range Kernel Summary"
    for missing, table in (("NVTX", p.nvtx), ("CUDA kernel", p.kernels), ("CUDA API", p.api)):
        if table.empty:
            return ReportResult("nvtx_kern_sum", title, _empty(NVTX_KERN_COLUMNS), [f"no {missing} data"])
    ranges = _closed_ranges(p)
    k = p.kernels
    calls, pairs = _range_calls(p, ranges)
    n_k = len(k)  # ops are kernels first: positions below n_k are kernels
    pairs = pairs[pairs["call_pos"].to_numpy() < n_k]
    gtid = calls["global_tid"].to_numpy(dtype="float64")[:n_k]
    # Per kernel: the launching thread (-1 when no call matched) and the kernel name, as sorted codes.
    has_call = ~np.isnan(gtid)
    g = np.where(has_call, np.nan_to_num(gtid), -1).astype("int64")
    del gtid
    pid = np.where(has_call, (g // (1 << 24)) % (1 << 24), -1)
    tid = np.where(has_call, g % (1 << 24), -1)
    del g, has_call
    pid_vals, pid_codes = np.unique(pid, return_inverse=True)
    tid_vals, tid_codes = np.unique(tid, return_inverse=True)
    del pid, tid
    k_codes, k_names = kernel_name_codes(p)
    # Per range: label and style codes, sorted; -1 (no range) sorts first, as NULL in SQLite.
    r_tag_codes, r_tags = pd.factorize(nvtx_tags(ranges), sort=True)
    r_style_codes, r_styles = pd.factorize(ranges["style"], sort=True)
    # Every kernel once per enclosing range, or once with no range.
    in_range = np.zeros(len(k), dtype=bool)
    in_range[pairs["call_pos"].to_numpy()] = True
    kpos = np.concatenate([pairs["call_pos"].to_numpy(), np.flatnonzero(~in_range)])
    rpos = np.concatenate([pairs["range_pos"].to_numpy(), np.full(int((~in_range).sum()), -1)])
    del pairs, in_range
    spans = [len(pid_vals), len(tid_vals), len(r_tags) + 1, len(r_styles) + 1, max(len(k_names), 1)]
    r_tag = np.r_[-1, r_tag_codes] + 1  # index rpos + 1: 0 for "no range"
    r_style = np.r_[-1, r_style_codes] + 1
    key = pid_codes[kpos].astype("int64")
    key *= spans[1]
    key += tid_codes[kpos]
    key *= spans[2]
    key += r_tag[rpos + 1]
    key *= spans[3]
    key += r_style[rpos + 1]
    key *= spans[4]
    key += k_codes[kpos]
    gs = group_stats(key, k["duration_ns"].to_numpy(dtype="int64")[kpos])
    nvtx_keys, nvtx_counts = count_distinct(key, rpos, valid=rpos >= 0)
    nvtx_inst = np.zeros(len(gs.key), dtype="int64")
    nvtx_inst[np.searchsorted(gs.key, nvtx_keys)] = nvtx_counts
    _, kern_inst = count_distinct(key, kpos)
    del key, kpos, rpos
    decoded: list[np.ndarray] = []
    rest: np.ndarray = gs.key
    for span in reversed(spans):
        decoded.append(rest % span)
        rest = rest // span
    kname_c, style_c, name_c, tid_c, pid_c = decoded
    pid_out, tid_out = pid_vals[pid_c], tid_vals[tid_c]

    def decode(codes: np.ndarray, values: pd.Index) -> np.ndarray:
        table = np.empty(len(values) + 1, dtype=object)  # last slot: None for code -1
        table[:-1] = np.asarray(values, dtype=object)
        return table[codes]

    df = pd.DataFrame({
        "NVTX Range": decode(name_c - 1, r_tags), "Style": decode(style_c - 1, r_styles),
        "PID": pd.arrays.IntegerArray(np.maximum(pid_out, 0).astype("int64"), pid_out < 0),
        "TID": pd.arrays.IntegerArray(np.maximum(tid_out, 0).astype("int64"), tid_out < 0),
        "NVTX Inst": nvtx_inst, "Kern Inst": kern_inst,
        "Total Time (ns)": gs.total, "Avg (ns)": sql_round(gs.avg), "Med (ns)": sql_round(gs.med),
        "Min (ns)": gs.min, "Max (ns)": gs.max, "StdDev (ns)": sql_round(gs.stddev),
        "Kernel Name": decode(kname_c, k_names),
        "_name": name_c, "_pid": pid_out, "_tid": tid_out,
    })
    # ORDER BY range (NULL first), PID, TID, total time descending; ties keep group order.
    df = df.sort_values(["_name", "_pid", "_tid", "Total Time (ns)"], ascending=[True, True, True, False],
                        kind="mergesort")
    return ReportResult("nvtx_kern_sum", title, df.drop(columns=["_name", "_pid", "_tid"]).reset_index(drop=True))


# ------------------------------------------------------------------------------------- GPU trace

TRACE_COLUMNS = ["Start (ns)", "Duration (ns)", "CorrId", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", "Reg/Trd",
                 "StcSMem (B)", "DymSMem (B)", "Bytes (B)", "Throughput (B/s)", "SrcMemKd", "DstMemKd", "Device",
                 "Ctx", "GreenCtx", "Strm", "Name"]


def _nullif0(s: pd.Series) -> pd.Series:
    s = s.astype("Int64")
    return s.mask(s == 0)


def _device_labels(p: Profile, device_ids: pd.Series) -> np.ndarray:
    """nsys' ``printf('%s (%d)', gpu.name, deviceId)`` for every row, formatted once per device."""
    names = dict(zip(p.gpus["device_id"], p.gpus["name"], strict=True)) if len(p.gpus) else {}
    codes, uniques = pd.factorize(device_ids, use_na_sentinel=True)
    labels = [f"{names.get(int(d), '') or ''} ({int(d)})" for d in uniques] + [" ()"]
    table = np.empty(len(labels), dtype=object)
    table[:] = labels
    return table[codes]


def _kernel_rows(p: Profile, rows: np.ndarray) -> pd.DataFrame:
    k = p.kernels.iloc[rows]
    na = pd.array([pd.NA] * len(k), dtype="Int64")
    return pd.DataFrame({
        "Start (ns)": k["start_ns"].to_numpy(), "Duration (ns)": k["duration_ns"].to_numpy(),
        "CorrId": k["correlation_id"].array,
        "GrdX": k["grid_x"].array, "GrdY": k["grid_y"].array, "GrdZ": k["grid_z"].array,
        "BlkX": k["block_x"].array, "BlkY": k["block_y"].array, "BlkZ": k["block_z"].array,
        "Reg/Trd": k["registers_per_thread"].array, "StcSMem (B)": k["static_smem_bytes"].array,
        "DymSMem (B)": k["dynamic_smem_bytes"].array, "Bytes (B)": na, "Throughput (B/s)": na,
        "SrcMemKd": obj([None] * len(k)), "DstMemKd": obj([None] * len(k)),
        "Device": obj(_device_labels(p, k["device_id"])),
        "Ctx": _nullif0(k["context_id"]).array, "GreenCtx": _nullif0(k["green_context_id"]).array,
        "Strm": _nullif0(k["stream_id"]).array, "Name": obj(k["name"].to_numpy(dtype=object)),
    })


def _throughput(nbytes: pd.Series, dur: pd.Series) -> pd.arrays.IntegerArray:
    """nsys: ``bytes * (1000000000 / duration)`` with SQLite integer division; NULL for duration 0."""
    d = dur.to_numpy(dtype="int64")
    per_s = np.where(d > 0, 1_000_000_000 // np.maximum(d, 1), 0)
    return pd.arrays.IntegerArray(nbytes.to_numpy(dtype="int64") * per_s, d <= 0)


def _memop_rows(p: Profile, ops: pd.DataFrame, src: pd.Series, dst: pd.Series, names: pd.Series) -> pd.DataFrame:
    """Trace rows for memcpys or memsets (no launch configuration; bytes and throughput)."""
    na = pd.array([pd.NA] * len(ops), dtype="Int64")
    return pd.DataFrame({
        "Start (ns)": ops["start_ns"].to_numpy(), "Duration (ns)": ops["duration_ns"].to_numpy(),
        "CorrId": ops["correlation_id"].array, "GrdX": na, "GrdY": na, "GrdZ": na, "BlkX": na, "BlkY": na, "BlkZ": na,
        "Reg/Trd": na, "StcSMem (B)": na, "DymSMem (B)": na, "Bytes (B)": ops["bytes"].astype("Int64").array,
        "Throughput (B/s)": _throughput(ops["bytes"], ops["duration_ns"]),
        "SrcMemKd": src, "DstMemKd": dst, "Device": obj(_device_labels(p, ops["device_id"])),
        "Ctx": _nullif0(ops["context_id"]).array, "GreenCtx": _nullif0(ops["green_context_id"]).array,
        "Strm": _nullif0(ops["stream_id"]).array, "Name": names,
    })


def _copy_rows(p: Profile, rows: np.ndarray) -> pd.DataFrame:
    m = p.memcpy.iloc[rows]
    names = obj(("[CUDA memcpy " + m["label"].fillna("").astype(str) + "]").to_numpy(dtype=object))
    return _memop_rows(p, m, obj(m["src_kind"]), obj(m["dst_kind"]), names)


def _memset_rows(p: Profile, rows: np.ndarray) -> pd.DataFrame:
    s = p.memset.iloc[rows]
    return _memop_rows(p, s, obj(s["mem_kind"]), obj([None] * len(s)), obj(["[CUDA memset]"] * len(s)))


TRACE_CHUNK_ROWS = 65_536


def _trace_chunks(p: Profile, chunk_rows: int) -> Iterator[pd.DataFrame]:
    builders = [(_kernel_rows, p.kernels), (_copy_rows, p.memcpy), (_memset_rows, p.memset)]
    starts = np.concatenate([t["start_ns"].to_numpy(dtype="int64") for _, t in builders])
    part = np.concatenate([np.full(len(t), i, dtype="int8") for i, (_, t) in enumerate(builders)])
    row = np.concatenate([np.arange(len(t), dtype="int64") for _, t in builders])
    order = np.argsort(starts, kind="stable")  # ORDER BY start; ties keep kernels, memcpys, memsets
    for lo in range(0, len(order), chunk_rows):
        sel = order[lo:lo + chunk_rows]
        pieces, positions = [], []
        for i, (build, _) in enumerate(builders):
            where = np.flatnonzero(part[sel] == i)
            if len(where):
                pieces.append(build(p, row[sel][where]))
                positions.append(where)
        frame = pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0]
        frame.index = np.concatenate(positions)
        yield frame.sort_index()[TRACE_COLUMNS].reset_index(drop=True)


def cuda_gpu_trace(p: Profile, chunk_rows: int = TRACE_CHUNK_ROWS) -> ReportResult:
    """CUDA GPU Trace: every kernel, memcpy and memset in start order (produced in chunks)."""
    title = "CUDA GPU Trace"
    if p.kernels.empty and p.memcpy.empty and p.memset.empty:
        return ReportResult("cuda_gpu_trace", title, _empty(TRACE_COLUMNS), ["no GPU trace data"])
    return ReportResult("cuda_gpu_trace", title, _chunks=lambda: _trace_chunks(p, chunk_rows))


# ------------------------------------------------------------------------------------- registry

#: Report name -> function, in the order ``nsighttk stats`` runs them by default.
REPORTS: dict[str, Callable[[Profile], ReportResult]] = {
    "cuda_api_sum": cuda_api_sum,
    "cuda_gpu_kern_sum": cuda_gpu_kern_sum,
    "cuda_gpu_kern_gb_sum": cuda_gpu_kern_gb_sum,
    "cuda_gpu_mem_time_sum": cuda_gpu_mem_time_sum,
    "cuda_gpu_mem_size_sum": cuda_gpu_mem_size_sum,
    "cuda_gpu_sum": cuda_gpu_sum,
    "nvtx_sum": nvtx_sum,
    "nvtx_gpu_proj_sum": nvtx_gpu_proj_sum,
    "nvtx_kern_sum": nvtx_kern_sum,
    "cuda_gpu_trace": cuda_gpu_trace,
}

#: What ``nsys stats`` runs when no ``-r`` is given (2025): the summaries, no trace.
DEFAULT_REPORTS = ["nvtx_sum", "cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum"]

#: nsys 2022-era report names accepted as aliases.
ALIASES = {
    "cudaapisum": "cuda_api_sum", "gpukernsum": "cuda_gpu_kern_gb_sum", "gpumemtimesum": "cuda_gpu_mem_time_sum",
    "gpumemsizesum": "cuda_gpu_mem_size_sum", "gpusum": "cuda_gpu_sum", "nvtxsum": "nvtx_sum",
    "nvtxgpuproj": "nvtx_gpu_proj_sum", "nvtxkernsum": "nvtx_kern_sum", "gputrace": "cuda_gpu_trace",
}


#: Which shared memo entries (see :func:`_memo`) each report uses.
MEMOS = {
    "cuda_gpu_kern_sum": {"kernel_name_codes"}, "cuda_gpu_kern_gb_sum": {"kernel_name_codes"},
    "cuda_gpu_sum": {"kernel_name_codes"}, "nvtx_gpu_proj_sum": {"range_calls"},
    "nvtx_kern_sum": {"range_calls", "kernel_name_codes"},
}


def run_report(name: str, profile: Profile) -> ReportResult:
    return REPORTS[ALIASES.get(name, name)](profile)


def release_memos(profile: Profile, remaining: list[str]) -> None:
    """Drop memo entries that none of the ``remaining`` reports will use (they can be large)."""
    needed = set().union(*(MEMOS.get(ALIASES.get(n, n), set()) for n in remaining)) if remaining else set()
    for tag in [t for t in profile.cache if isinstance(t, tuple) and t[0] not in needed]:
        del profile.cache[tag]
