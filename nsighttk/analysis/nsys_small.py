"""The ``nsys stats`` summaries of small exports, in plain Python: no numpy, no pandas.

On an export of a few thousand events, Python's start and numpy's import cost more than the
report (0.25-0.4 s against nsys' 0.05-0.2 s); this path answers in about 0.1 s.  It computes
the same rows as :mod:`nsighttk.analysis.nsys_reports` (same grouping, ordering, statistics to
the bit, :mod:`nsighttk.analysis.pystats`), which remains the owner of every report: this path
takes only sound exports of at most :data:`~nsighttk.load.nsys_rows.SMALL_ROWS` rows and only
the reports in :data:`SMALL_REPORTS`, and returns None for anything else (tests run both paths
on every fixture and compare the bytes).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk.analysis.nsys_catalog import COLUMNS, NO_DATA, TITLES
from nsighttk.analysis.pystats import Group, Inexact, group_stats, sql_round_value
from nsighttk.load.nsys_rows import SMALL_ROWS, NotSmall, SmallExport

#: Columns printed as text (left-aligned, quoted in CSV); all others are numbers.
TEXT_COLUMNS = frozenset({"Name", "Operation", "Category", "Range", "Style", "GridXYZ", "BlockXYZ"})


@dataclass
class SmallReport:
    """One report's rows (Python values, sizes in bytes) under its nsys columns."""

    name: str
    title: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    notes: list[str] = field(default_factory=list)


def _api_name(name: str | None) -> str | None:
    """nsys drops a ``_vNNNN`` version suffix (exactly 6 characters) from API names."""
    return name[:-6] if name is not None and name[-6:-4] == "_v" else name


def _time_rows(groups: list[Group]) -> list[list[Any]]:
    """Time (%), Total, count, Avg, Med, Min, Max, StdDev of each group (as nsys rounds them)."""
    grand = sum(g.total for g in groups)
    return [[sql_round_value(float(g.total) * 100.0 / float(grand)) if grand else float("nan"), g.total, g.count,
             sql_round_value(g.avg), sql_round_value(g.med), g.min, g.max, sql_round_value(g.stddev)]
            for g in groups]


def _by_total(rows: list[list[Any]], total_at: int = 1, then: Callable[[list[Any]], Any] | None = None,
              ) -> list[tuple[Any, ...]]:
    """Longest total first; ties keep the grouping key's order (or ``then``'s)."""
    key = (lambda r: -r[total_at]) if then is None else (lambda r: (-r[total_at], then(r)))
    return [tuple(r) for r in sorted(rows, key=key)]


def _named_kernels(x: SmallExport, dims: list[str] | None = None) -> dict[Hashable, list[int]]:
    """Kernel durations per name (or per (name, *dims)); a name id without a name is ''."""
    s = x.strings()
    out: dict[Hashable, list[int]] = {}
    for key, (durations,) in x.grouped("kernels", ["name_id", *(dims or [])]).items():
        name = (s.get(key[0]) if key[0] is not None else None) or ""
        if dims:
            d = tuple(0 if v is None else v for v in key[1:])  # an unknown dimension: 0
            if min(d) < 0:
                raise NotSmall("a negative launch dimension")
            k: Hashable = (name, *d)
        else:
            k = name
        out.setdefault(k, []).extend(durations)
    return out


def _kern_sum(x: SmallExport) -> tuple[list[tuple[Any, ...]], str | None]:
    kernels = _named_kernels(x)
    if not kernels:
        return [], NO_DATA["kernels"]
    groups = group_stats(kernels)
    out = [[*t, g.key] for t, g in zip(_time_rows(groups), groups, strict=True)]
    return _by_total(out, then=lambda r: (r[2], r[8])), None


def _kern_gb_sum(x: SmallExport) -> tuple[list[tuple[Any, ...]], str | None]:
    kernels = _named_kernels(x, ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"])
    if not kernels:
        return [], NO_DATA["kernels"]
    groups = group_stats(kernels)
    out = []
    for t, g in zip(_time_rows(groups), groups, strict=True):
        k: Any = g.key
        out.append([*t, f"{k[1]:4d} {k[2]:4d} {k[3]:4d}", f"{k[4]:4d} {k[5]:4d} {k[6]:4d}", k[0]])
    return _by_total(out, then=lambda r: (r[2], r[10])), None


def _memory_ops(x: SmallExport) -> dict[str, tuple[list[int], list[int]]]:
    """Durations and byte counts per operation name: memcpys of a known kind, memsets (as nsys)."""
    labels = x.memcpy_labels()
    out: dict[str, tuple[list[int], list[int]]] = {}
    for (kind,), (durations, nbytes) in x.grouped("memcpy", ["_copy_kind"], ("duration", "bytes")).items():
        label = labels.get(kind) if kind is not None else None
        if label is not None:
            got = out.setdefault("[CUDA memcpy " + label + "]", ([], []))
            got[0].extend(durations)
            got[1].extend(nbytes)
    for _, (durations, nbytes) in x.grouped("memset", [], ("duration", "bytes")).items():
        out["[CUDA memset]"] = (durations, nbytes)
    return out


def _mem_time_sum(x: SmallExport) -> tuple[list[tuple[Any, ...]], str | None]:
    ops = _memory_ops(x)
    if not ops:
        return [], NO_DATA["memory"]
    groups = group_stats({name: d for name, (d, _) in ops.items()})
    return _by_total([[*t, g.key] for t, g in zip(_time_rows(groups), groups, strict=True)]), None


def _mem_size_sum(x: SmallExport) -> tuple[list[tuple[Any, ...]], str | None]:
    ops = _memory_ops(x)
    if not ops:
        return [], NO_DATA["memory"]
    groups = group_stats({name: b for name, (_, b) in ops.items()})
    return _by_total([[g.total, g.count, g.avg, g.med, g.min, g.max, g.stddev, g.key] for g in groups], 0), None


def _api_sum(x: SmallExport) -> tuple[list[tuple[Any, ...]], str | None]:
    calls: dict[Hashable, list[int]] = {}
    for (name_id,), (durations,) in x.grouped("api", ["name_id"]).items():
        calls.setdefault(name_id if name_id is not None else -1, []).extend(durations)
    if not calls:
        return [], NO_DATA["api"]
    groups = group_stats(calls)
    s = x.strings()
    return _by_total([[*t, _api_name(s.get(g.key))]  # type: ignore[call-overload]
                      for t, g in zip(_time_rows(groups), groups, strict=True)]), None


def _gpu_sum(x: SmallExport) -> tuple[list[tuple[Any, ...]], str | None]:
    kernels = _named_kernels(x)
    ops = _memory_ops(x)
    if not kernels and not ops:
        return [], NO_DATA["gpu"]
    merged: dict[Hashable, list[int]] = {name: list(d) for name, d in kernels.items()}
    category = dict.fromkeys(kernels, "CUDA_KERNEL")  # a name seen among kernels first is a kernel
    for name, (d, _) in ops.items():
        merged.setdefault(name, []).extend(d)
        category.setdefault(name, "MEMORY_OPER")
    groups = group_stats(merged)
    return _by_total([[*t, category[g.key], g.key]
                      for t, g in zip(_time_rows(groups), groups, strict=True)]), None


def _nvtx_sum(x: SmallExport) -> tuple[list[tuple[Any, ...]], str | None]:
    ranges = x.range_durations()
    if not ranges:
        return [], NO_DATA["nvtx"]
    groups = group_stats(ranges)  # type: ignore[arg-type]
    out = []
    for t, g in zip(_time_rows(groups), groups, strict=True):
        key: Any = g.key
        out.append([*t, key[1], key[0]])
    return _by_total(out), None


#: report -> (its function, the tables it reads)
SMALL_REPORTS: dict[str, tuple[Callable[[SmallExport], tuple[list[tuple[Any, ...]], str | None]], tuple[str, ...]]] = {
    "cuda_api_sum": (_api_sum, ("api",)),
    "cuda_gpu_kern_sum": (_kern_sum, ("kernels",)),
    "cuda_gpu_kern_gb_sum": (_kern_gb_sum, ("kernels",)),
    "cuda_gpu_mem_time_sum": (_mem_time_sum, ("memcpy", "memset")),
    "cuda_gpu_mem_size_sum": (_mem_size_sum, ("memcpy", "memset")),
    "cuda_gpu_sum": (_gpu_sum, ("kernels", "memcpy", "memset")),
    "nvtx_sum": (_nvtx_sum, ("nvtx",)),
}


def small_summaries(path: Path, names: list[str], limit: int = SMALL_ROWS,
                    ) -> tuple[list[SmallReport], str | None] | None:
    """The reports ``names`` (canonical names) of the export at ``path`` and the version of the
    nsys that wrote it, or None when the column engine must compute them: a report this path
    lacks, more than ``limit`` rows to read, or an export that is not small and sound."""
    if not names or any(n not in SMALL_REPORTS for n in names):
        return None
    try:
        with SmallExport(path) as x:
            tables = {t for n in names for t in SMALL_REPORTS[n][1]}
            if sum(x.rows_bound(t) for t in tables) > limit:
                return None
            out = []
            for n in names:
                rows, empty = SMALL_REPORTS[n][0](x)
                out.append(SmallReport(n, TITLES[n], COLUMNS[n], rows, [empty] if empty and not rows else []))
            return out, x.version
    except (NotSmall, Inexact):
        return None
