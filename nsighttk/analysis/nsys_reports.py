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
from fractions import Fraction

import numpy as np
import pandas as pd

from nsighttk.analysis import nvtx as nvtx_analysis
from nsighttk.analysis.groupstats import combine_codes_with_spans, count_distinct, group_stats
from nsighttk.profile import INT_NULL, Profile, obj, release_free_memory

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
    """SQLite's ``round(x, digits)``: half away from zero on the shortest decimal form of x.

    Exact values (:class:`~fractions.Fraction`, from groups whose values reach 2^53) are rounded
    exactly and returned as text, so that no float rounding moves an average outside [min, max]."""
    raw = np.asarray(values)
    if raw.dtype == object and any(isinstance(x, Fraction) for x in raw):
        out_text = np.empty(len(raw), dtype=object)
        out_text[:] = [_exact_round(Fraction(x), digits) for x in raw]
        return out_text
    arr = raw.astype("float64")
    q = Decimal(1).scaleb(-digits)
    out = np.empty(len(arr), dtype="float64")
    for i, x in enumerate(arr):
        out[i] = x if not np.isfinite(x) else float(Decimal(repr(float(x))).quantize(q, rounding=ROUND_HALF_UP))
    return out


def _exact_round(x: Fraction, digits: int) -> str:
    scaled = abs(x) * 10**digits
    n = int(scaled) + (1 if scaled - int(scaled) >= Fraction(1, 2) else 0)
    whole, frac = divmod(n, 10**digits)
    return f"{'-' if x < 0 and n else ''}{whole}.{frac:0{digits}d}"


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


def _group_codes(cols: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """One code per row for the combination of several integer columns, codes ranking the
    combinations lexicographically, and each combination's values (by code).  Rows are grouped
    through one 64-bit hash (one sort of one column), checked against the rows each group
    stands for; an exact sort of all columns on a collision."""
    h = np.zeros(len(cols[0]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in cols:
            h = (h ^ col.astype(np.uint64)) * np.uint64(0x100000001B3) + np.uint64(0x9E3779B97F4A7C15)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    del h
    inverse = inverse.ravel()
    if not all((col == col[first][inverse]).all() for col in cols):
        _, first, inverse = np.unique(np.stack(cols, axis=1), axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    reps = [col[first].astype(np.int64) for col in cols]
    order = np.lexsort(reps[::-1])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse], [r[order] for r in reps]


def _memo(p: Profile, key: str, make: Callable[[], object]) -> object:
    """Derived arrays shared by several reports, computed once per profile (the profile's cache is
    cleared when one of its tables is replaced)."""
    tag = (key,)
    if tag not in p.cache:
        p.cache[tag] = make()
    return p.cache[tag]


def columns(p: Profile, table: str, cols: list[str]) -> dict[str, np.ndarray]:
    """Columns of ``table`` as numpy arrays (int64 with INT_NULL for missing values); the profile
    keeps them for the reports that follow, within its memory budget (see :func:`prefetch`)."""
    return p.arrays(table, cols)


def prefetch(p: Profile, names: list[str]) -> None:
    """Tell the profile which columns the reports ``names`` will read, so that the first read of
    each table fetches them all in one scan."""
    for n in names:
        for table, cols in NEEDS.get(ALIASES.get(n, n), {}).items():
            p.want(table, cols)


def _rows(p: Profile, table: str) -> int:
    return len(columns(p, table, ["duration_ns"])["duration_ns"]) if table != "nvtx" else \
        len(columns(p, "nvtx", ["start_ns"])["start_ns"])


def kernel_name_codes(p: Profile) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel, a code ranking its name in byte order, and the names by code.

    Computed from the integer string ids (one per distinct name in an nsys export), which is far
    cheaper than hashing a million name strings."""
    def make() -> tuple[np.ndarray, np.ndarray]:
        if p.loaded("kernels") or p.source is None:
            names = columns(p, "kernels", ["name"])["name"]
            names = np.array(["" if n is None else n for n in names], dtype=object)
            uniq, codes = np.unique(names.astype(str), return_inverse=True)
            return codes.ravel(), uniq.astype(object)
        ids, inverse = np.unique(columns(p, "kernels", ["name_id"])["name_id"], return_inverse=True)
        names = p.names("kernels", ids)
        names = np.array(["" if n is None else n for n in names], dtype=object)
        uniq_names, by_name = np.unique(names.astype(str), return_inverse=True)  # ids sharing a name merge
        return by_name.ravel()[inverse.ravel()], uniq_names.astype(object)
    out = _memo(p, "kernel_name_codes", make)
    return out  # type: ignore[return-value]


def exact_sum(values: np.ndarray) -> int:
    """The sum of int64 ``values`` as a Python int (no wrap-around, however large)."""
    v = np.asarray(values, dtype="int64")
    if not len(v):
        return 0
    return (int((v >> 32).sum()) << 32) + int((v & 0xFFFFFFFF).sum())


LAUNCH_CONFIG = ["block_x", "block_y", "block_z", "registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes"]


def launch_configs(p: Profile) -> pd.DataFrame:
    """Each kernel name's most frequent launch configuration: name, block_x/y/z,
    registers_per_thread, static_smem_bytes, dynamic_smem_bytes (one row per name; rows with an
    unknown value left out), for occupancy.  Counted through one 64-bit hash per kernel (one
    sort), checked against the rows it stands for (an exact sort of all columns on a collision)."""
    codes, names = kernel_name_codes(p)
    k = columns(p, "kernels", LAUNCH_CONFIG)
    known = np.ones(len(codes), dtype=bool)
    for c in LAUNCH_CONFIG:
        known &= k[c] != INT_NULL
    rows = np.flatnonzero(known)
    if not len(rows):
        return pd.DataFrame({c: [] for c in ["name", *LAUNCH_CONFIG]})
    cols = [codes[rows].astype(np.uint64)] + [k[c][rows].astype(np.uint64) for c in LAUNCH_CONFIG]
    del k
    h = np.zeros(len(rows), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in cols:
            h = (h ^ col) * np.uint64(0x100000001B3) + np.uint64(0x9E3779B97F4A7C15)
    _, first, inverse, counts = np.unique(h, return_index=True, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    if not all((col == col[first][inverse]).all() for col in cols):  # a hash collision: exact grouping
        _, first, counts = np.unique(np.stack(cols, axis=1), axis=0, return_index=True, return_counts=True)
    del h, inverse
    cfg = pd.DataFrame({"code": codes[rows[first]], "n": counts, "first": first,
                        **{c: cols[i + 1][first].astype(np.int64) for i, c in enumerate(LAUNCH_CONFIG)}})
    # the most frequent configuration of each name; among equals, the one launched first
    cfg = cfg.sort_values(["n", "first"], ascending=[False, True], kind="mergesort").drop_duplicates("code")
    return pd.DataFrame({"name": obj(names[cfg["code"].to_numpy()]), **{c: cfg[c].to_numpy() for c in LAUNCH_CONFIG}})


def _totals(values: pd.Series | np.ndarray) -> np.ndarray:
    """Group totals: int64, or Python ints (object) where a total does not fit in int64."""
    arr = np.asarray(values)
    return arr if arr.dtype == object else arr.astype("int64")


def _time_columns(s: pd.DataFrame, count_name: str) -> dict[str, object]:
    total = _totals(s["total"])
    grand = sum(int(t) for t in total) if total.dtype == object else exact_sum(total)
    pct = total.astype("float64") * 100.0 / float(grand) if grand else np.full(len(total), np.nan)
    return {
        "Time (%)": sql_round(pct),
        "Total Time (ns)": total,
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
    if not _rows(p, "kernels"):
        return ReportResult("cuda_gpu_kern_sum", title, _empty(KERN_SUM_COLUMNS), ["no CUDA kernel data"])
    codes, names = kernel_name_codes(p)
    g = group_stats(codes, columns(p, "kernels", ["duration_ns"])["duration_ns"])
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
    if not _rows(p, "kernels"):
        return ReportResult("cuda_gpu_kern_gb_sum", title, _empty(KERN_GB_COLUMNS), ["no CUDA kernel data"])
    dims = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]
    codes, names = kernel_name_codes(p)
    k = p.arrays("kernels", dims, narrow=True)
    cols = [codes] + [np.where(k[d] == np.iinfo(k[d].dtype).min, 0, k[d]) for d in dims]  # unknown: 0
    del k
    key, reps = _group_codes(cols)
    del cols
    g = group_stats(key, columns(p, "kernels", ["duration_ns"])["duration_ns"])
    del key
    rep = [r[g.key] for r in reps]
    s = pd.DataFrame({"total": g.total, "num": g.count, "avg": g.avg, "med": g.med, "min": g.min, "max": g.max,
                      "stddev": g.stddev})
    df = pd.DataFrame({
        **_time_columns(s, "Instances"),
        "GridXYZ": _xyz(*rep[1:4]),
        "BlockXYZ": _xyz(*rep[4:7]),
        "Name": names[rep[0]],
    })
    return ReportResult("cuda_gpu_kern_gb_sum", title,
                        _order(df, ["Total Time (ns)", "Instances", "Name"], [False, True, True]))


# ---------------------------------------------------------------------------------- memory ops

def memory_ops(p: Profile) -> pd.DataFrame:
    """Memcpys and memsets as one frame: name, duration_ns, bytes (memcpys first, as nsys)."""
    frames = []
    m = columns(p, "memcpy", ["label", "duration_ns", "bytes"])
    has = np.array([v is not None for v in m["label"]], dtype=bool)
    if has.any():
        frames.append(pd.DataFrame({"name": obj(["[CUDA memcpy " + str(v) + "]" for v in m["label"][has]]),
                                    "duration_ns": m["duration_ns"][has], "bytes": m["bytes"][has]}))
    s = columns(p, "memset", ["duration_ns", "bytes"])
    if len(s["duration_ns"]):
        frames.append(pd.DataFrame({"name": "[CUDA memset]", "duration_ns": s["duration_ns"], "bytes": s["bytes"]}))
    if not frames:
        return pd.DataFrame({"name": pd.Series(dtype=object), "duration_ns": pd.Series(dtype="int64"),
                             "bytes": pd.Series(dtype="int64")})
    out = pd.concat(frames, ignore_index=True)
    out["bytes"] = np.where(out["bytes"].to_numpy() == INT_NULL, 0, out["bytes"].to_numpy())
    return out


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
        "Total (B)": _totals(s["total"]), "Count": s["num"].to_numpy(dtype="int64"),
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
    if not _rows(p, "api"):
        return ReportResult("cuda_api_sum", title, _empty(API_COLUMNS), ["no CUDA API data"])
    a = columns(p, "api", ["name_id", "duration_ns"])
    if p.loaded("api") or p.source is None:  # eager tables (Kineto): names may have no ids
        names = columns(p, "api", ["name"])["name"]
        uniq, codes = np.unique(np.array(["" if n is None else n for n in names], dtype=str), return_inverse=True)
        s = _stats(a["duration_ns"], codes.ravel())
        shown = uniq.astype(object)[s.index.to_numpy(dtype="int64")]
    else:
        s = _stats(a["duration_ns"], np.where(a["name_id"] == INT_NULL, -1, a["name_id"]))
        shown = p.names("api", s.index.to_numpy(dtype="int64"))
    df = pd.DataFrame({**_time_columns(s, "Num Calls"), "Name": [api_display_name(n) for n in shown]})
    return ReportResult("cuda_api_sum", title, _order(df, ["Total Time (ns)"], [False]))


# ---------------------------------------------------------------------------------- GPU summary

GPU_SUM_COLUMNS = [*KERN_SUM_COLUMNS[:-1], "Category", "Operation"]


def cuda_gpu_sum(p: Profile) -> ReportResult:
    """CUDA GPU Summary (Kernels/MemOps): what seed 004's nsys_easy prints."""
    title = "CUDA GPU Summary (Kernels/MemOps)"
    mem = memory_ops(p)
    n_k = _rows(p, "kernels")
    if not n_k and mem.empty:
        return ReportResult("cuda_gpu_sum", title, _empty(GPU_SUM_COLUMNS), ["no GPU kernel or memory data"])
    # One code space for kernel names and memory-operation names, in byte order of the names.
    k_codes, k_names = kernel_name_codes(p) if n_k else (np.array([], "int64"), np.array([], object))
    m_codes, m_names = pd.factorize(mem["name"], sort=True)
    all_names = np.unique(np.concatenate([k_names.astype(str), np.asarray(m_names, dtype=str)]))
    codes = np.concatenate([np.searchsorted(all_names, k_names.astype(str))[k_codes],
                            np.searchsorted(all_names, np.asarray(m_names, dtype=str))[m_codes]])
    category = np.concatenate([np.zeros(len(k_codes), dtype="int8"), np.ones(len(m_codes), dtype="int8")])
    durations = np.concatenate([columns(p, "kernels", ["duration_ns"])["duration_ns"],
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


def _tag_codes(domain: np.ndarray, name: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per range, a code ranking its ``domain:name`` label in byte order, and the labels by code
    (each distinct domain and name is joined once, not once per range)."""
    d_codes, d_uniq = pd.factorize(pd.Series(domain, dtype=object).fillna(""), sort=False)
    n_codes, n_uniq = pd.factorize(pd.Series(name, dtype=object).fillna(""), sort=False)
    pair = d_codes.astype("int64") * max(len(n_uniq), 1) + n_codes
    pairs, inverse = np.unique(pair, return_inverse=True)
    labels = np.array([f"{d_uniq[p // max(len(n_uniq), 1)]}:{n_uniq[p % max(len(n_uniq), 1)]}" for p in pairs],
                      dtype=str)
    uniq, rank = np.unique(labels, return_inverse=True)
    return rank.ravel()[inverse.ravel()], uniq.astype(object)


def _ranges(p: Profile) -> dict[str, np.ndarray]:
    return columns(p, "nvtx", ["range_id", "start_ns", "end_ns", "name", "domain", "style", "global_tid",
                               "end_global_tid"])


def nvtx_sum(p: Profile) -> ReportResult:
    """NVTX Range Summary: CPU-side time of each range, grouped by label and style."""
    title = "NVTX Range Summary"
    n = columns(p, "nvtx", ["start_ns", "end_ns", "name", "domain", "style"])
    if not len(n["start_ns"]):
        return ReportResult("nvtx_sum", title, _empty(NVTX_SUM_COLUMNS), ["no NVTX data"])
    end = _range_ends(n, p.meta.get("nvtx_max_ts_all"))
    tag_codes, tags = _tag_codes(n["domain"], n["name"])
    s = _stats(end - n["start_ns"], [tag_codes, n["style"]])
    df = pd.DataFrame({**_time_columns(s, "Instances"),
                       "Style": s.index.get_level_values(1).to_numpy(dtype=object),
                       "Range": tags[s.index.get_level_values(0).to_numpy(dtype="int64")]})
    return ReportResult("nvtx_sum", title, _order(df, ["Total Time (ns)"], [False]))


def _range_ends(n: dict[str, np.ndarray], max_ts: int | None) -> np.ndarray:
    """End times with open ranges closed at ``max_ts`` (the last NVTX timestamp)."""
    end = n["end_ns"]
    fill = max_ts if max_ts is not None else int(n["start_ns"].max()) if len(n["start_ns"]) else 0
    return np.where(end == INT_NULL, fill, end)


def _closed_ranges(p: Profile) -> dict[str, np.ndarray]:
    """Ranges that ended on the thread that started them (those nsys projects onto the GPU)."""
    def make() -> dict[str, np.ndarray]:
        n = _ranges(p)
        keep = n["end_global_tid"] == INT_NULL
        return {c: v[keep] for c, v in n.items()}
    out = _memo(p, "closed_ranges", make)
    return out  # type: ignore[return-value]


_OP_COLUMNS = ["start_ns", "end_ns", "correlation_id", "global_pid"]


def _range_calls(p: Profile, ranges: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """GPU ops (kernels first) with their launching call, and (range, op) containment pairs."""
    def make() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        ops = nvtx_analysis.gpu_ops([columns(p, t, _OP_COLUMNS) for t in ("kernels", "memcpy", "memset")])
        calls = nvtx_analysis.launches(ops, columns(p, "api", ["start_ns", "end_ns", "correlation_id", "global_tid"]))
        del ops
        release_free_memory()
        r_end = _range_ends(ranges, p.meta.get("nvtx_max_ts_ranges"))
        rpos, cpos = nvtx_analysis.enclosing_ranges(ranges["start_ns"], r_end, ranges["global_tid"],
                                                    calls["api_start_ns"], calls["api_end_ns"], calls["global_tid"])
        release_free_memory()
        # Keep only what the NVTX reports read later; 32-bit positions where they fit.
        calls = {c: calls[c] for c in ("start_ns", "end_ns", "correlation_id", "global_tid")}
        if len(calls["start_ns"]) < 2**31 and len(ranges["start_ns"]) < 2**31:
            rpos, cpos = rpos.astype("int32"), cpos.astype("int32")
        return calls, rpos, cpos
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
    cols = ["range_pos", "name", "style", "range_ns", "proj_start_ns", "proj_ns", "gpu_ops", "level", "children"]
    ranges = _closed_ranges(p)
    if not len(ranges["start_ns"]) or not _rows(p, "api"):
        return pd.DataFrame({c: [] for c in cols})
    max_ts = p.meta.get("nvtx_max_ts_ranges")
    calls, rp, call_pos = _range_calls(p, ranges)
    if not len(rp):
        return pd.DataFrame({c: [] for c in cols})
    order = np.argsort(rp, kind="stable")
    rp_sorted = rp[order]
    seg = np.flatnonzero(np.r_[True, rp_sorted[1:] != rp_sorted[:-1]])
    pos = rp_sorted[seg]
    proj_start = np.minimum.reduceat(calls["start_ns"][call_pos][order], seg)
    proj_end = np.maximum.reduceat(calls["end_ns"][call_pos][order], seg)
    corr = calls["correlation_id"][call_pos]
    _, gpu_ops = count_distinct(rp, np.where(corr == INT_NULL, -1, corr))
    del order, rp_sorted
    ends = _range_ends(ranges, max_ts)
    parents = nvtx_analysis.parents_of(ranges["start_ns"], ends, ranges["global_tid"], ranges["range_id"])
    levels = nvtx_analysis.depth_from_parents(parents)
    has_proj = np.zeros(len(ends), dtype=bool)
    has_proj[pos] = True
    children = np.zeros(len(ends), dtype="int64")
    par = parents[has_proj]
    np.add.at(children, par[par >= 0], 1)
    tag_codes, tags = _tag_codes(ranges["domain"][pos], ranges["name"][pos])
    return pd.DataFrame({
        "range_pos": pos,
        "name": tags[tag_codes],
        "style": ranges["style"][pos],
        "range_ns": ends[pos] - ranges["start_ns"][pos],
        "proj_start_ns": proj_start,
        "proj_ns": proj_end - proj_start,
        "gpu_ops": gpu_ops,
        "level": levels[pos],
        "children": children[pos],
    })


def nvtx_gpu_proj_sum(p: Profile) -> ReportResult:
    """NVTX GPU Projection Summary: GPU time of the work each range launched."""
    title = "NVTX GPU Projection Summary"
    if not _rows(p, "nvtx"):
        return ReportResult("nvtx_gpu_proj_sum", title, _empty(NVTX_PROJ_COLUMNS), ["no NVTX data"])
    if not _rows(p, "api"):
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
        "Total Proj Time (ns)": _totals(s["total"]),
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
    for missing, table in (("NVTX", "nvtx"), ("CUDA kernel", "kernels"), ("CUDA API", "api")):
        if not _rows(p, table):
            return ReportResult("nvtx_kern_sum", title, _empty(NVTX_KERN_COLUMNS), [f"no {missing} data"])
    ranges = _closed_ranges(p)
    k_dur = columns(p, "kernels", ["duration_ns"])["duration_ns"]
    calls, pair_r, pair_c = _range_calls(p, ranges)
    n_k = len(k_dur)  # ops are kernels first: positions below n_k are kernels
    kern = pair_c < n_k
    pair_r, pair_c = pair_r[kern], pair_c[kern]
    gtid = calls["global_tid"][:n_k]
    # Per kernel: the launching thread (-1 when no call matched) and the kernel name, as sorted codes.
    has_call = gtid != INT_NULL
    g = np.where(has_call, gtid, -1)
    del gtid
    pid = np.where(has_call, (g // (1 << 24)) % (1 << 24), -1)
    tid = np.where(has_call, g % (1 << 24), -1)
    del g, has_call
    pid_vals, pid_codes = np.unique(pid, return_inverse=True)
    tid_vals, tid_codes = np.unique(tid, return_inverse=True)
    del pid, tid
    k_codes, k_names = kernel_name_codes(p)
    # Per range: label and style codes, sorted; -1 (no range) sorts first, as NULL in SQLite.
    r_tag_codes, r_tags = _tag_codes(ranges["domain"], ranges["name"])
    r_style_codes, r_styles = pd.factorize(pd.Series(ranges["style"], dtype=object), sort=True)
    # Every kernel once per enclosing range, or once with no range.
    in_range = np.zeros(n_k, dtype=bool)
    in_range[pair_c] = True
    kpos = np.concatenate([pair_c, np.flatnonzero(~in_range)])
    rpos = np.concatenate([pair_r, np.full(int((~in_range).sum()), -1)])
    del pair_r, pair_c, in_range
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
    gs = group_stats(key, k_dur[kpos])
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


def _ints(values: np.ndarray) -> pd.arrays.IntegerArray:
    """A nullable integer column from int64 values with INT_NULL for missing ones."""
    mask = values == INT_NULL
    return pd.arrays.IntegerArray(np.where(mask, 0, values), mask)


def _nullif0(values: np.ndarray) -> pd.arrays.IntegerArray:
    mask = (values == INT_NULL) | (values == 0)
    return pd.arrays.IntegerArray(np.where(mask, 0, values), mask)


def _device_labels(p: Profile, device_ids: np.ndarray) -> np.ndarray:
    """nsys' ``printf('%s (%d)', gpu.name, deviceId)`` for every row, formatted once per device."""
    gpus = p.gpus
    names = dict(zip(gpus["device_id"], gpus["name"], strict=True)) if len(gpus) else {}
    uniques, codes = np.unique(device_ids, return_inverse=True)
    labels = [" ()" if d == INT_NULL else f"{names.get(int(d), '') or ''} ({int(d)})" for d in uniques]
    table = np.empty(len(labels), dtype=object)
    table[:] = labels
    return table[codes.ravel()]


_TRACE_COMMON = ["start_ns", "duration_ns", "correlation_id", "device_id", "context_id", "green_context_id",
                 "stream_id"]
_TRACE_KERNEL = [*_TRACE_COMMON, "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                 "registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes"]


def _kernel_rows(p: Profile, rows: np.ndarray) -> pd.DataFrame:
    k = {c: v[rows] for c, v in columns(p, "kernels", _TRACE_KERNEL).items()}
    codes, names = kernel_name_codes(p)
    na = pd.array([pd.NA] * len(rows), dtype="Int64")
    return pd.DataFrame({
        "Start (ns)": k["start_ns"], "Duration (ns)": k["duration_ns"], "CorrId": _ints(k["correlation_id"]),
        "GrdX": _ints(k["grid_x"]), "GrdY": _ints(k["grid_y"]), "GrdZ": _ints(k["grid_z"]),
        "BlkX": _ints(k["block_x"]), "BlkY": _ints(k["block_y"]), "BlkZ": _ints(k["block_z"]),
        "Reg/Trd": _ints(k["registers_per_thread"]), "StcSMem (B)": _ints(k["static_smem_bytes"]),
        "DymSMem (B)": _ints(k["dynamic_smem_bytes"]), "Bytes (B)": na, "Throughput (B/s)": na,
        "SrcMemKd": obj([None] * len(rows)), "DstMemKd": obj([None] * len(rows)),
        "Device": obj(_device_labels(p, k["device_id"])),
        "Ctx": _nullif0(k["context_id"]), "GreenCtx": _nullif0(k["green_context_id"]),
        "Strm": _nullif0(k["stream_id"]), "Name": obj(names[codes[rows]]),
    })


def _throughput(nbytes: np.ndarray, d: np.ndarray) -> pd.arrays.IntegerArray:
    """nsys: ``bytes * (1000000000 / duration)`` with SQLite integer division; NULL for duration 0."""
    per_s = np.where(d > 0, 1_000_000_000 // np.maximum(d, 1), 0)
    return pd.arrays.IntegerArray(nbytes * per_s, (d <= 0) | (nbytes == INT_NULL))


def _memop_rows(p: Profile, ops: dict[str, np.ndarray], src: np.ndarray, dst: np.ndarray,
                names: np.ndarray) -> pd.DataFrame:
    """Trace rows for memcpys or memsets (no launch configuration; bytes and throughput)."""
    na = pd.array([pd.NA] * len(ops["start_ns"]), dtype="Int64")
    return pd.DataFrame({
        "Start (ns)": ops["start_ns"], "Duration (ns)": ops["duration_ns"],
        "CorrId": _ints(ops["correlation_id"]), "GrdX": na, "GrdY": na, "GrdZ": na, "BlkX": na, "BlkY": na,
        "BlkZ": na, "Reg/Trd": na, "StcSMem (B)": na, "DymSMem (B)": na, "Bytes (B)": _ints(ops["bytes"]),
        "Throughput (B/s)": _throughput(ops["bytes"], ops["duration_ns"]),
        "SrcMemKd": obj(src), "DstMemKd": obj(dst), "Device": obj(_device_labels(p, ops["device_id"])),
        "Ctx": _nullif0(ops["context_id"]), "GreenCtx": _nullif0(ops["green_context_id"]),
        "Strm": _nullif0(ops["stream_id"]), "Name": obj(names),
    })


def _copy_rows(p: Profile, rows: np.ndarray) -> pd.DataFrame:
    m = {c: v[rows] for c, v in columns(p, "memcpy", [*_TRACE_COMMON, "bytes", "label", "src_kind",
                                                      "dst_kind"]).items()}
    names = np.array(["[CUDA memcpy " + ("" if v is None else str(v)) + "]" for v in m["label"]], dtype=object)
    return _memop_rows(p, m, m["src_kind"], m["dst_kind"], names)


def _memset_rows(p: Profile, rows: np.ndarray) -> pd.DataFrame:
    s = {c: v[rows] for c, v in columns(p, "memset", [*_TRACE_COMMON, "bytes", "mem_kind"]).items()}
    n = len(rows)
    return _memop_rows(p, s, s["mem_kind"], np.full(n, None, dtype=object), np.full(n, "[CUDA memset]", dtype=object))


TRACE_CHUNK_ROWS = 65_536


def _trace_chunks(p: Profile, chunk_rows: int) -> Iterator[pd.DataFrame]:
    builders = [(_kernel_rows, "kernels"), (_copy_rows, "memcpy"), (_memset_rows, "memset")]
    starts_of = [columns(p, t, ["start_ns"])["start_ns"] for _, t in builders]
    starts = np.concatenate(starts_of)
    part = np.concatenate([np.full(len(s), i, dtype="int8") for i, s in enumerate(starts_of)])
    row = np.concatenate([np.arange(len(s), dtype="int64") for s in starts_of])
    order = np.argsort(starts, kind="stable")  # ORDER BY start; ties keep kernels, memcpys, memsets
    del starts
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
    if not (_rows(p, "kernels") or _rows(p, "memcpy") or _rows(p, "memset")):
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


_KERNEL_NAME = ["name_id", "name"]

#: Columns each report reads, per table (for :func:`prefetch` and :func:`release_memos`).
NEEDS: dict[str, dict[str, list[str]]] = {
    "cuda_api_sum": {"api": ["name_id", "name", "duration_ns"]},
    "cuda_gpu_kern_sum": {"kernels": [*_KERNEL_NAME, "duration_ns"]},
    "cuda_gpu_kern_gb_sum": {"kernels": [*_KERNEL_NAME, "duration_ns", "grid_x", "grid_y", "grid_z", "block_x",
                                         "block_y", "block_z"]},
    "cuda_gpu_mem_time_sum": {"memcpy": ["label", "duration_ns", "bytes"], "memset": ["duration_ns", "bytes"]},
    "cuda_gpu_mem_size_sum": {"memcpy": ["label", "duration_ns", "bytes"], "memset": ["duration_ns", "bytes"]},
    "cuda_gpu_sum": {"kernels": [*_KERNEL_NAME, "duration_ns"], "memcpy": ["label", "duration_ns", "bytes"],
                     "memset": ["duration_ns", "bytes"]},
    "nvtx_sum": {"nvtx": ["start_ns", "end_ns", "name", "domain", "style"]},
    "nvtx_gpu_proj_sum": {"nvtx": ["range_id", "start_ns", "end_ns", "name", "domain", "style", "global_tid",
                                   "end_global_tid"],
                          **{t: [*_OP_COLUMNS, "duration_ns"] for t in ("kernels", "memcpy", "memset")},
                          "api": ["start_ns", "end_ns", "correlation_id", "global_tid", "duration_ns"]},
    "nvtx_kern_sum": {"nvtx": ["range_id", "start_ns", "end_ns", "name", "domain", "style", "global_tid",
                               "end_global_tid"],
                      "kernels": [*_OP_COLUMNS, *_KERNEL_NAME, "duration_ns"],
                      **{t: [*_OP_COLUMNS, "duration_ns"] for t in ("memcpy", "memset")},
                      "api": ["start_ns", "end_ns", "correlation_id", "global_tid", "duration_ns"]},
    "cuda_gpu_trace": {"kernels": [*_TRACE_KERNEL, *_KERNEL_NAME],
                       "memcpy": [*_TRACE_COMMON, "bytes", "label", "src_kind", "dst_kind"],
                       "memset": [*_TRACE_COMMON, "bytes", "mem_kind"]},
}

#: Which shared memo entries (see :func:`_memo`) each report uses.
MEMOS = {
    "cuda_gpu_kern_sum": {"kernel_name_codes"}, "cuda_gpu_kern_gb_sum": {"kernel_name_codes"},
    "cuda_gpu_sum": {"kernel_name_codes"}, "nvtx_gpu_proj_sum": {"range_calls", "closed_ranges"},
    "nvtx_kern_sum": {"range_calls", "closed_ranges", "kernel_name_codes"},
    "cuda_gpu_trace": {"kernel_name_codes"},
}


def run_report(name: str, profile: Profile) -> ReportResult:
    return REPORTS[ALIASES.get(name, name)](profile)


def release_memos(profile: Profile, remaining: list[str]) -> None:
    """Drop memo entries and kept columns that none of the ``remaining`` reports will use, and
    have the next read of each table fetch every column they will use (:func:`prefetch`)."""
    names = [ALIASES.get(n, n) for n in remaining]
    needed = set().union(*(MEMOS.get(n, set()) for n in names)) if names else set()
    for tag in list(profile.cache):
        if isinstance(tag, tuple) and tag[0] not in needed:
            del profile.cache[tag]
    profile.forget({(t, c) for n in names for t, cs in NEEDS.get(n, {}).items() for c in cs})
    prefetch(profile, names)
