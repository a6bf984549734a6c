"""The NVTX reports of ``nsys stats``: range summary, GPU projection, kernels per range."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from nsighttk.analysis import nsys_report_spilled as spilled
from nsighttk.analysis import nvtx as nvtx_analysis
from nsighttk.analysis import nvtx_kern_spilled, nvtx_spilled
from nsighttk.analysis.coltable import Table
from nsighttk.analysis.groupstats import (
    combine_codes_with_spans,
    count_distinct,
    factorize_sorted,
    group_stats,
    group_sums,
    small_codes,
)
from nsighttk.analysis.nsys_report_base import (
    ReportResult,
    _grand_total,
    _memo,
    _order,
    _rows,
    _stats,
    _time_columns,
    _totals,
    columns,
    kernel_name_codes,
    no_data,
    nvtx_text_codes,
    result,
    sql_round,
    take_groups,
    text_codes,
    top_note,
    top_rows,
)
from nsighttk.profile import INT_NULL, Coded, Profile, release_free_memory, widen

if TYPE_CHECKING:
    import pandas as pd

# ------------------------------------------------------------------------------------------ NVTX


def nvtx_tags(nvtx: pd.DataFrame) -> pd.Series:
    """nsys' range label: ``domain:name`` (``:name`` in the default domain)."""
    return nvtx["domain"].fillna("").astype(str) + ":" + nvtx["name"].fillna("").astype(str)


def _tag_codes(d_codes: np.ndarray, d_uniq: np.ndarray, n_codes: np.ndarray, n_uniq: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per range, a code ranking its ``domain:name`` label in byte order, and the labels by code,
    from the domains' and names' codes (each distinct pair is joined once, not once per range)."""
    d_uniq = np.array(["" if v is None else v for v in d_uniq], dtype=object)
    n_uniq = np.array(["" if v is None else v for v in n_uniq], dtype=object)
    pair = d_codes.astype("int64") * max(len(n_uniq), 1) + n_codes
    inverse, pairs = factorize_sorted(pair)  # (dense codes: no sort)
    del pair
    labels = np.array([f"{d_uniq[p // max(len(n_uniq), 1)]}:{n_uniq[p % max(len(n_uniq), 1)]}" for p in pairs],
                      dtype=object)  # (not str: numpy's fixed width is the longest label's, for every label)
    uniq, rank = np.unique(labels, return_inverse=True)
    return small_codes(rank.ravel(), len(uniq))[inverse], uniq.astype(object)


def _ranges(p: Profile) -> dict[str, Any]:
    """The columns of the ranges the projection and ``nvtx_kern_sum`` use (their texts: codes of
    :func:`_labels`), and whether each ended on the thread that started it (``closed``).  The
    range ids come narrow and the threads as codes where the Profile keeps them so (4.3M ranges:
    60 MB less held through the projection; :func:`_threads` and :func:`widen` give the columns)."""
    n: dict[str, Any] = columns(p, "nvtx", ["start_ns", "end_ns"])
    n["range_id"] = p.arrays("nvtx", ["range_id"], narrow=True)["range_id"]
    n["global_tid"] = p.column("nvtx", "global_tid")
    egtid = p.arrays("nvtx", ["end_global_tid"], narrow=True)["end_global_tid"]
    n["closed"] = egtid == np.iinfo(egtid.dtype).min  # (missing: no other thread ended it)
    return n


def _labels(p: Profile) -> dict[str, np.ndarray]:
    """Per NVTX range (every row): ``tag`` and ``style`` codes ranking its ``domain:name`` label and
    its style (:func:`factorize_sorted`), and ``tags``/``styles``, the values by code.  Computed
    once per profile: the NVTX reports and the projection group by these codes, not by text."""
    def make() -> dict[str, np.ndarray]:
        text = nvtx_text_codes(p)
        tag, tags = _tag_codes(*text["domain"], *text["name"])
        style, styles = text_codes(p, "nvtx", "style")
        return {"tag": small_codes(tag, len(tags)), "tags": tags, "style": small_codes(style, len(styles)),
                "styles": styles}
    out = _memo(p, "nvtx_labels", make)
    return out  # type: ignore[return-value]


def nvtx_sum(p: Profile, top: int | None = None) -> ReportResult:
    """NVTX Range Summary: CPU-side time of each range, grouped by label and style; ``top``: its
    rows with the most time only (a note says how many there were), the others never formatted."""
    if spilled.spills(p, "nvtx"):
        g, tag, style = spilled.nvtx_stats(p)
        if not len(g.key):
            return no_data("nvtx_sum", "nvtx")
    else:
        n = columns(p, "nvtx", ["start_ns", "end_ns"])
        if not len(n["start_ns"]):
            return no_data("nvtx_sum", "nvtx")
        end = _range_ends(n, p.meta.get("nvtx_max_ts_all"))
        lab = _labels(p)
        g, (tag, style) = _stats(end - n["start_ns"], [(lab["tag"], lab["tags"]), (lab["style"], lab["styles"])])
    grand = _grand_total(g.total)
    rows = top_rows(g.total, top)
    notes = []
    if rows is not None:
        notes = [top_note(len(g.key), len(rows), "nvtx_sum")]
        g, tag, style = take_groups(g, rows), tag[rows], style[rows]
    t = Table({**_time_columns(g, "Instances", grand), "Style": style.astype(object), "Range": tag.astype(object)})
    out = result("nvtx_sum", _order(t, ["Total Time (ns)"], [False]))
    out.notes.extend(notes)
    return out


def _range_ends(n: dict[str, np.ndarray], max_ts: int | None) -> np.ndarray:
    """End times with open ranges closed at ``max_ts`` (the last NVTX timestamp)."""
    end = n["end_ns"]
    open_ = end == INT_NULL
    if not open_.any():  # (every range closed, the usual case: the column itself, read only)
        return end
    fill = max_ts if max_ts is not None else int(n["start_ns"].max()) if len(n["start_ns"]) else 0
    return np.where(open_, fill, end)


def _threads(ranges: dict[str, Any]) -> np.ndarray:
    """The ranges' thread ids (int64, INT_NULL where missing), decoded where coded."""
    tid = ranges["global_tid"]
    return widen(tid.decode() if isinstance(tid, Coded) else tid)


def _closed_ranges(p: Profile) -> dict[str, Any]:
    """Ranges that ended on the thread that started them (those nsys projects onto the GPU)."""
    def make() -> dict[str, Any]:
        n = _ranges(p)
        keep = n.pop("closed")
        lab = _labels(p)
        if keep.all():  # (the usual case: no copies)
            return {**n, "_tag": lab["tag"], "_style": lab["style"]}
        cut = {c: Coded(v.codes[keep], v.values) if isinstance(v, Coded) else v[keep] for c, v in n.items()}
        return {**cut, "_tag": lab["tag"][keep], "_style": lab["style"][keep]}
    out = _memo(p, "closed_ranges", make)
    return out  # type: ignore[return-value]


_OP_TABLES = ("kernels", "memcpy", "memset")
#: What the projection reads of each of them.
_OP_COLUMNS = ["start_ns", "end_ns", "correlation_id", "global_pid"]


def _op_ids(p: Profile) -> np.ndarray:
    """The GPU ops' correlation ids (kernels first, then copies and memsets), as kept: maybe
    narrow, its type's minimum for a missing id."""
    return nvtx_analysis.gpu_ops([p.arrays(t, ["correlation_id"], narrow=True) for t in _OP_TABLES])["correlation_id"]


def _launched(p: Profile) -> dict[str, np.ndarray]:
    """GPU ops (kernels first, then copies and memsets): ``call``, the row of the runtime call that
    launched each (-1 where none; :func:`nvtx_analysis.launch_rows`), and ``distinct`` (0-d):
    whether every op has a correlation id of its own.  Their ids (:func:`_op_ids`) are not kept
    with them: 10M kernels' ids, 38 MB through the projection, for that one answer.  Their times:
    :func:`_op_times`."""
    def make() -> dict[str, np.ndarray]:
        ids = _op_ids(p)
        gpid = nvtx_analysis.concat_ids([p.column(t, "global_pid", narrow=True) for t in _OP_TABLES])
        call = nvtx_analysis.launch_rows(ids, gpid, p.arrays("api", ["correlation_id"], narrow=True)
                                         ["correlation_id"], p.column("api", "global_tid", narrow=True))
        del gpid
        distinct = bool(len(ids)) and bool((ids != np.iinfo(ids.dtype).min).all()) and _distinct(ids)
        del ids
        release_free_memory()
        return {"call": call, "distinct": np.array(distinct)}
    out = _memo(p, "launched", make)
    return out  # type: ignore[return-value]


def _op_parts(p: Profile, col: str) -> list[nvtx_analysis.Part]:
    """``start_ns`` or ``end_ns`` of the GPU ops of :func:`_launched`, table by table as kept (an
    end kept as start plus duration: those two), for :meth:`nvtx_analysis.OpSlices.reduce`."""
    if col == "end_ns":
        return [(lambda a: (a["start_ns"], a["duration_ns"]))(p.arrays(t, ["start_ns", "duration_ns"], narrow=True))
                if p.summed(t, "end_ns") else p.arrays(t, [col], narrow=True)[col] for t in _OP_TABLES]
    return [p.arrays(t, [col], narrow=True)[col] for t in _OP_TABLES]


def _op_times(p: Profile, col: str) -> np.ndarray:
    """``start_ns`` or ``end_ns`` of the GPU ops of :func:`_launched` (int64): the kept column
    itself where only kernels have rows, else put together for the caller (not kept)."""
    return widen(nvtx_analysis.gpu_ops([p.arrays(t, [col], narrow=True) for t in _OP_TABLES])[col])


def _call_column(p: Profile, call: np.ndarray, col: str) -> np.ndarray:
    """Per GPU op, ``col`` of the runtime call that launched it (int64, INT_NULL where none)."""
    values = columns(p, "api", [col])[col]
    out = values[np.maximum(call, 0)]
    out[call < 0] = INT_NULL
    return out


#: Bytes per (range, operation) pair while ``nvtx_kern_sum`` groups them in memory (the pairs,
#: their keys, the grouping's sorted copies): measured about 76.
PAIR_BYTES = 80


def _range_calls(p: Profile, ranges: dict[str, Any], max_pairs: int | None = None
                 ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """GPU ops (kernels first) with their launching call, and (range, op) containment pairs
    (:class:`nvtx_analysis.TooManyPairs` where they would be more than ``max_pairs``)."""
    def make() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        calls = _launched(p)
        r_end = _range_ends(ranges, p.meta.get("nvtx_max_ts_ranges"))
        c = {col: _call_column(p, calls["call"], col) for col in ("start_ns", "end_ns", "global_tid")}
        rpos, cpos = nvtx_analysis.enclosing_ranges(ranges["start_ns"], r_end, _threads(ranges),
                                                    c["start_ns"], c["end_ns"], c["global_tid"], max_pairs)
        del c
        release_free_memory()
        # 32-bit positions where they fit.
        if len(calls["call"]) < 2**31 and len(ranges["start_ns"]) < 2**31:
            rpos, cpos = rpos.astype("int32"), cpos.astype("int32")
        return calls, rpos, cpos
    out = _memo(p, "range_calls", make)
    return out  # type: ignore[return-value]


def forget_range_calls(p: Profile) -> None:
    """Drop the GPU operations with their launching calls and the (range, operation) pairs that the
    projection and ``nvtx_kern_sum`` share (a few hundred MB at 10M kernels), once no NVTX report
    that reads them follows; they are computed again if one does."""
    p.cache.pop(("range_calls",), None)
    p.cache.pop(("launched",), None)
    p.cache.pop(("closed_ranges",), None)
    p.cache.pop(("nvtx_labels",), None)  # (and the ranges' label codes: 43M ranges, 0.5 GB)
    p.cache.pop(("nvtx_text_codes",), None)
    release_free_memory()


NVTX_PROJ_COLUMNS = ["Range", "Style", "Total Proj Time (ns)", "Total Range Time (ns)", "Range Instances",
                     "Proj Avg (ns)", "Proj Med (ns)", "Proj Min (ns)", "Proj Max (ns)", "Proj StdDev (ns)",
                     "Total GPU Ops", "Avg GPU Ops", "Avg Range Lvl", "Avg Num Child"]


_PROJ_COLUMNS = ["range_pos", "name", "style", "range_ns", "proj_start_ns", "proj_ns", "gpu_ops", "level", "children"]


def nvtx_projection(p: Profile) -> pd.DataFrame:
    """One row per NVTX range instance that launched GPU work: its projection onto the GPU.

    Columns: range_pos, name (``domain:name``), style, range_ns (CPU duration), proj_start_ns,
    proj_ns (first GPU start to last GPU end of the work it launched), gpu_ops, level, children
    (child ranges that also launched GPU work)."""
    import pandas as pd

    proj = projection_arrays(p)
    if proj is None:
        return pd.DataFrame({c: [] for c in _PROJ_COLUMNS})
    lab = _labels(p)
    text = {"name": lab["tags"][proj["_tag"]], "style": lab["styles"][proj["_style"]]}
    return pd.DataFrame({c: text[c] if c in text else proj[c].astype("int64", copy=False) for c in _PROJ_COLUMNS})


def _calls(p: Profile) -> int:
    """The runtime calls' rows: counted on disk where the projection joins them there (not read
    whole for their number)."""
    return nvtx_spilled.rows(p, "api") if nvtx_spilled.spills(p) else _rows(p, "api")


def _distinct(values: np.ndarray) -> bool:
    """Whether no value repeats."""
    if len(values) < 2 or (values[1:] > values[:-1]).all():  # (ascending ids, as launched: no sort)
        return True
    v = np.sort(values)
    return not bool((v[1:] == v[:-1]).any())


def _projection_spans(p: Profile, ranges: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per closed range: how many GPU operations it launched, their first start and last end
    (None when no range holds a launch).  Read off slices of the launching calls where calls on a
    thread do not overlap and no correlation id repeats (:func:`nvtx_analysis.range_op_spans`);
    else from the (range, operation) pairs, counting distinct correlation ids."""
    r_end = _range_ends(ranges, p.meta.get("nvtx_max_ts_ranges"))
    if nvtx_spilled.spills(p):  # operations and calls on disk (None: calls on a thread overlap)
        got = nvtx_spilled.range_spans(p, widen(ranges["start_ns"]), widen(r_end), _threads(ranges))
        if got is not None:
            return got
    calls = _launched(p)
    distinct = bool(calls["distinct"])
    if distinct:  # one operation per id: each contained operation counts once
        # The calls' threads as kept (one byte a call where coded) and their ends as start plus
        # duration where that is what they are: 13M calls, 0.2 GB of int64 copies less.
        summed = p.summed("api", "end_ns")
        api = p.arrays("api", ["start_ns", "duration_ns"] if summed else ["start_ns", "end_ns"], narrow=True)
        tid: np.ndarray | Coded | None = p.coded("api", "global_tid")
        if tid is None:
            tid = columns(p, "api", ["global_tid"])["global_tid"]
        sl = nvtx_analysis.range_op_slices(ranges["start_ns"], r_end, ranges["global_tid"], widen(api["start_ns"]),
                                           None if summed else widen(api["end_ns"]), tid, calls["call"],
                                           a_dur=api["duration_ns"] if summed else None)
        del api, tid
        if sl is not None:  # first start and last end: one column of the ops at a time
            first = sl.reduce(_op_parts(p, "start_ns"), np.minimum)
            return sl.count, first, sl.reduce(_op_parts(p, "end_ns"), np.maximum)
    del r_end
    calls, rp, call_pos = _range_calls(p, ranges)
    n_ranges = len(ranges["start_ns"])
    if not len(rp):
        return None
    # Per range, over its (range, operation) pairs: first start, last end, distinct correlation ids.
    # Reduced in place by range position (no sort of the pairs).
    count = np.bincount(rp, minlength=n_ranges)
    first = np.full(n_ranges, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, rp, _op_times(p, "start_ns")[call_pos])
    last = np.full(n_ranges, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, rp, _op_times(p, "end_ns")[call_pos])
    if not distinct:  # ids shared (a graph launch runs many kernels; NULL ids count once): count distinct ones
        corr = widen(_op_ids(p)[call_pos])
        keys, n_ops = count_distinct(rp, np.where(corr == INT_NULL, -1, corr))
        del corr
        count = np.zeros(n_ranges, dtype=np.int64)
        count[keys] = n_ops
    return count, first, last


def projection_arrays(p: Profile) -> dict[str, np.ndarray] | None:
    """The columns of :func:`nvtx_projection` as numpy arrays; None when no range launched GPU work."""
    ranges = _closed_ranges(p)
    if not len(ranges["start_ns"]) or not _calls(p):
        return None
    max_ts = p.meta.get("nvtx_max_ts_ranges")
    spans = _projection_spans(p, ranges)
    if spans is None:
        return None
    count, proj_start, proj_end = spans
    n = len(count)
    small = np.int32 if n < 2**31 else np.int64
    some = np.count_nonzero(count)
    if not some:
        return None
    # Each per-range array is freed once its rows are taken (4.3M ranges: 35 MB each), and none is
    # gathered, nor a position made, where every range launched work (the usual case at the top
    # of a trace's nesting); positions, levels and child counts are int32 where they fit.
    pos = None if some == n else np.flatnonzero(count).astype(small)

    def take(a: np.ndarray) -> np.ndarray:
        return a if pos is None else a[pos]

    gpu_ops = take(count)
    del count
    proj_start, proj_end = take(proj_start), take(proj_end)
    proj_ns = np.subtract(proj_end, proj_start, out=proj_end)  # (in place: the spans are this call's own)
    del proj_end
    ends = _range_ends(ranges, max_ts)  # (maybe the kept column itself: read only)
    range_ns = ends.copy() if pos is None else ends[pos]
    range_ns -= take(ranges["start_ns"])
    # (the columns the loader nested for the depth, as kept: its answer is reused)
    parents = nvtx_analysis.parents_of(ranges["start_ns"], ends, ranges["global_tid"], ranges["range_id"])
    del ends
    level = take(nvtx_analysis.depth_from_parents(parents))
    if pos is not None:
        has_proj = np.zeros(n, dtype=bool)
        has_proj[pos] = True
        parents = parents[has_proj]
        del has_proj
    par = parents[parents >= 0]
    del parents
    children = np.bincount(par, minlength=n).astype(small)  # (np.add.at: 0.3-0.8 s for 4.3M ranges)
    del par
    return {
        "range_pos": np.arange(n, dtype=small) if pos is None else pos,
        "_tag": take(ranges["_tag"]),  # the codes of _labels: the texts, for nvtx_projection
        "_style": take(ranges["_style"]),
        "range_ns": range_ns,
        "proj_start_ns": proj_start,
        "proj_ns": proj_ns,
        "gpu_ops": gpu_ops,
        "level": level,
        "children": take(children),
    }


def nvtx_gpu_proj_sum(p: Profile, top: int | None = None,
                      every: Callable[[pd.DataFrame], None] | None = None) -> ReportResult:
    """NVTX GPU Projection Summary: GPU time of the work each range launched.  ``top``: its rows
    with the most projected time only (a note says how many there were); ``every`` is then handed
    every group's ``Range``, ``Range Instances``, ``Total Range Time (ns)``, ``Total Proj Time (ns)``
    and ``Total GPU Ops`` first (what :func:`nsighttk.analysis.nvtx.autograd_ops` sums up)."""
    walks = nvtx_spilled.walks(p)  # (out of core: the tables' rows counted on disk, not read whole)
    if not (nvtx_spilled.rows(p, "nvtx") if walks else _rows(p, "nvtx")):
        return no_data("nvtx_gpu_proj_sum", "nvtx", NVTX_PROJ_COLUMNS)
    if not _calls(p):
        return no_data("nvtx_gpu_proj_sum", "api", NVTX_PROJ_COLUMNS)
    got = nvtx_spilled.projection_stats(p, _spilled_labels, p.meta.get("nvtx_max_ts_ranges")) if walks else None
    if got is not None:
        g, label, style, sums = got
    else:
        proj = projection_arrays(p)
        if proj is None:
            g = None
        else:
            lab = _labels(p)
            codes = [(proj["_tag"], lab["tags"]), (proj["_style"], lab["styles"])]
            g, (label, style) = _stats(proj["proj_ns"], codes)  # type: ignore[arg-type]
            group = np.searchsorted(g.key, combine_codes_with_spans([c for c, _ in codes],
                                                                    [max(len(u), 1) for _, u in codes]))
            sums = {col: group_sums(group, proj[col].astype("int64"), len(g.key)) for col in nvtx_spilled.SUMMED}
    if g is None or not len(g.key):
        return no_data("nvtx_gpu_proj_sum", "no GPU work inside NVTX ranges", NVTX_PROJ_COLUMNS)
    count = np.asarray(g.count, dtype="int64")
    rows = top_rows(g.total, top)
    notes = []
    if rows is not None:
        if every is not None:
            import pandas as pd

            every(pd.DataFrame({"Range": label.astype(object), "Range Instances": count,
                                "Total Range Time (ns)": sums["range_ns"], "Total Proj Time (ns)": _totals(g.total),
                                "Total GPU Ops": sums["gpu_ops"]}))
        notes = [top_note(len(g.key), len(rows), "nvtx_gpu_proj_sum")]
        g, label, style, count = take_groups(g, rows), label[rows], style[rows], count[rows]
        sums = {col: v[rows] for col, v in sums.items()}

    def means(col: str) -> np.ndarray:
        return sql_round(sums[col] / count)

    t = Table({
        "Range": label.astype(object),
        "Style": style.astype(object),
        "Total Proj Time (ns)": _totals(g.total),
        "Total Range Time (ns)": sums["range_ns"],
        "Range Instances": count,
        "Proj Avg (ns)": sql_round(g.avg),
        "Proj Med (ns)": sql_round(g.med),
        "Proj Min (ns)": np.asarray(g.min, dtype="int64"),
        "Proj Max (ns)": np.asarray(g.max, dtype="int64"),
        "Proj StdDev (ns)": sql_round(g.stddev),
        "Total GPU Ops": sums["gpu_ops"],
        "Avg GPU Ops": means("gpu_ops"),
        "Avg Range Lvl": means("level"),
        "Avg Num Child": means("children"),
    })
    out = result("nvtx_gpu_proj_sum", _order(t, ["Total Proj Time (ns)"], [False]))
    out.notes.extend(notes)
    return out


def _spilled_labels(domain: np.ndarray, domains: np.ndarray, name: np.ndarray, names: np.ndarray,
                    style: np.ndarray, styles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For :func:`nvtx_spilled.projection_stats`: label and style codes ranked as :func:`_labels`
    ranks them, from the codes of the distinct (domain, name, style) values projected."""
    tag, tags = _tag_codes(domain, domains, name, names)
    sty, shown = factorize_sorted(np.asarray(styles, dtype=object)[style])
    return tag, tags, sty, shown


NVTX_KERN_COLUMNS = ["NVTX Range", "Style", "PID", "TID", "NVTX Inst", "Kern Inst", "Total Time (ns)", "Avg (ns)",
                     "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Kernel Name"]


def nvtx_kern_sum(p: Profile) -> ReportResult:
    """NVTX Range Kernel Summary: kernels per enclosing NVTX range (a kernel counts in each)."""
    spills = nvtx_kern_spilled.spills(p)  # (out of core: the tables' rows counted on disk, not read whole)
    for missing, table in (("NVTX", "nvtx"), ("CUDA kernel", "kernels"), ("CUDA API", "api")):
        if not (nvtx_kern_spilled.rows(p, table) if spills else _rows(p, table)):
            return no_data("nvtx_kern_sum", f"no {missing} data", NVTX_KERN_COLUMNS)
    got = nvtx_kern_spilled.kernel_stats(p, _spilled_labels, p.meta.get("nvtx_max_ts_ranges")) if spills else None
    if got is None and not spills and spilled.can_spill(p, "kernels", "api", "nvtx"):
        # Rows that fit may still make more (range, kernel) pairs than the budget holds (ranges
        # nested deep around many kernels): then out of core after all.
        try:
            got = _kernel_groups(p, max(int(p.budget) // PAIR_BYTES, 1))
        except nvtx_analysis.TooManyPairs:
            got = nvtx_kern_spilled.kernel_stats(p, _spilled_labels, p.meta.get("nvtx_max_ts_ranges"))
    g = got if got is not None else _kernel_groups(p)
    gs = g["stats"]

    def decode(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
        table = np.empty(len(values) + 1, dtype=object)  # last slot: None for code -1
        table[:-1] = np.asarray(values, dtype=object)
        return table[codes]

    pid_out, tid_out = g["pid"], g["tid"]
    t = Table({
        "NVTX Range": decode(g["range"] - 1, g["tags"]), "Style": decode(g["style"] - 1, g["styles"]),
        "PID": np.maximum(pid_out, 0).astype("int64"),
        "TID": np.maximum(tid_out, 0).astype("int64"),
        "NVTX Inst": g["nvtx_inst"], "Kern Inst": g["kern_inst"],
        "Total Time (ns)": gs.total, "Avg (ns)": sql_round(gs.avg), "Med (ns)": sql_round(gs.med),
        "Min (ns)": gs.min, "Max (ns)": gs.max, "StdDev (ns)": sql_round(gs.stddev),
        "Kernel Name": decode(g["kernel"], g["names"]),
        "_name": g["range"], "_pid": pid_out, "_tid": tid_out,
    }, masks={"PID": pid_out < 0, "TID": tid_out < 0})
    # ORDER BY range (NULL first), PID, TID, total time descending; ties keep group order.
    t = t.sorted(["_name", "_pid", "_tid", "Total Time (ns)"], [True, True, True, False])
    return result("nvtx_kern_sum", t.drop(["_name", "_pid", "_tid"]))


def _kernel_groups(p: Profile, max_pairs: int | None = None) -> dict[str, Any]:
    """``nvtx_kern_sum``'s groups in memory, as :func:`nvtx_kern_spilled.kernel_stats` gives them
    (:class:`nvtx_analysis.TooManyPairs` where its pairs would be more than ``max_pairs``)."""
    ranges = _closed_ranges(p)
    k_dur = columns(p, "kernels", ["duration_ns"])["duration_ns"]
    calls, pair_r, pair_c = _range_calls(p, ranges, max_pairs)
    n_k = len(k_dur)  # ops are kernels first: positions below n_k are kernels
    kern = pair_c < n_k
    pair_r, pair_c = pair_r[kern], pair_c[kern]
    gtid = _call_column(p, calls["call"][:n_k], "global_tid")
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
    lab = _labels(p)
    r_tag_codes, r_tags, r_style_codes, r_styles = ranges["_tag"], lab["tags"], ranges["_style"], lab["styles"]
    if len(r_styles) and r_styles[-1] is None:  # no style: as "no range" (pandas' NA code -1)
        r_style_codes = np.where(r_style_codes == len(r_styles) - 1, -1, r_style_codes)
        r_styles = r_styles[:-1]
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
    return {"stats": gs, "range": name_c, "style": style_c, "kernel": kname_c, "pid": pid_vals[pid_c],
            "tid": tid_vals[tid_c], "nvtx_inst": nvtx_inst, "kern_inst": kern_inst, "tags": r_tags,
            "styles": r_styles, "names": k_names}
