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

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nsighttk.analysis.nsys.catalog import (  # noqa: F401  (re-exported)
    ALIASES,
    API_COLUMNS,
    DEFAULT_REPORTS,
    GPU_SUM_COLUMNS,
    KERN_GB_COLUMNS,
    KERN_SUM_COLUMNS,
    MEM_SIZE_COLUMNS,
    MEM_TIME_COLUMNS,
    NEEDS,
    NVTX_SUM_COLUMNS,
)
from nsighttk.analysis.nsys.gpu import (
    LAUNCH_CONFIG,
    TRACE_COLUMNS,
    api_display_name,
    cuda_api_sum,
    cuda_gpu_kern_gb_sum,
    cuda_gpu_kern_sum,
    cuda_gpu_mem_size_sum,
    cuda_gpu_mem_time_sum,
    cuda_gpu_sum,
    cuda_gpu_trace,
    launch_configs,
)
from nsighttk.analysis.nsys.gpu import prefetch as _prefetch_engine
from nsighttk.analysis.nsys.result import ReportResult

if TYPE_CHECKING:
    from nsighttk.analysis.nsys.base import sql_round
    from nsighttk.analysis.nsys.nvtx import (
        NVTX_KERN_COLUMNS,
        NVTX_PROJ_COLUMNS,
        nvtx_projection,
        nvtx_tags,
    )
    from nsighttk.profile import Profile

#: Names this module gives from the NVTX reports' modules, imported on first use (they import
#: numpy's column engine, which the other reports do without).
_LAZY = {
    "sql_round": "nsighttk.analysis.nsys.base",
    **dict.fromkeys(["NVTX_KERN_COLUMNS", "NVTX_PROJ_COLUMNS", "nvtx_projection", "nvtx_tags",
                     "nvtx_sum", "nvtx_gpu_proj_sum", "nvtx_kern_sum"], "nsighttk.analysis.nsys.nvtx"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def _nvtx_report(name: str) -> Callable[..., ReportResult]:
    """NVTX report ``name``, its module imported when it first runs."""
    def run(p: Profile, *args: Any, **kwargs: Any) -> ReportResult:
        report: Callable[..., ReportResult] = getattr(importlib.import_module(_LAZY[name]), name)
        return report(p, *args, **kwargs)

    run.__name__ = run.__qualname__ = name
    return run


nvtx_sum = _nvtx_report("nvtx_sum")
nvtx_gpu_proj_sum = _nvtx_report("nvtx_gpu_proj_sum")
nvtx_kern_sum = _nvtx_report("nvtx_kern_sum")

__all__ = [
    "API_COLUMNS",
    "GPU_SUM_COLUMNS",
    "KERN_GB_COLUMNS",
    "KERN_SUM_COLUMNS",
    "LAUNCH_CONFIG",
    "MEM_SIZE_COLUMNS",
    "MEM_TIME_COLUMNS",
    "NVTX_KERN_COLUMNS",
    "NVTX_PROJ_COLUMNS",
    "NVTX_SUM_COLUMNS",
    "TRACE_COLUMNS",
    "ReportResult",
    "api_display_name",
    "cuda_api_sum",
    "cuda_gpu_kern_gb_sum",
    "cuda_gpu_kern_sum",
    "cuda_gpu_mem_size_sum",
    "cuda_gpu_mem_time_sum",
    "cuda_gpu_sum",
    "cuda_gpu_trace",
    "launch_configs",
    "nvtx_gpu_proj_sum",
    "nvtx_kern_sum",
    "nvtx_projection",
    "nvtx_sum",
    "nvtx_tags",
    "sql_round",
]

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

_KERNEL_NAME = ["name_id"]  # names come from StringIds by id (eager tables read "name" themselves)

#: Which shared memo entries (see :func:`_memo`) each report uses; the engine (``("engine",)``),
#: whose memory DuckDB bounds, is kept for every report.
MEMOS = {
    "nvtx_sum": {"engine"}, "nvtx_gpu_proj_sum": {"engine"}, "nvtx_kern_sum": {"engine"},
}


def run_report(name: str, profile: Profile) -> ReportResult:
    return REPORTS[ALIASES.get(name, name)](profile)


def release_memos(profile: Profile, remaining: list[str]) -> None:
    """Drop memo entries that none of the ``remaining`` reports will use, and load the columns
    they will use (:func:`prefetch`)."""
    names = [ALIASES.get(n, n) for n in remaining]
    needed = set().union({"engine"}, *(MEMOS.get(n, set()) for n in names))
    for tag in list(profile.cache):
        if isinstance(tag, tuple) and tag[0] not in needed:
            del profile.cache[tag]
    prefetch(profile, names)


def prefetch(p: Profile, names: list[str]) -> None:
    """Load the columns the reports ``names`` will read into the engine, each table in one scan."""
    _prefetch_engine(p, [ALIASES.get(n, n) for n in names])
