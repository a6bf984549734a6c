"""The ``nsys stats`` reports by name: titles, columns, what an empty one says, what the NVTX ones
read, nsys' default set and the 2022-era aliases.  Plain Python (no numpy), so a command can name
and check reports before anything computes them (:mod:`nsighttk.analysis.nsys.reports`)."""

from __future__ import annotations

#: Report name -> title, in the order ``nsighttk stats -r all`` runs them.
TITLES = {
    "cuda_api_sum": "CUDA API Summary",
    "cuda_gpu_kern_sum": "CUDA GPU Kernel Summary",
    "cuda_gpu_kern_gb_sum": "CUDA GPU Kernel/Grid/Block Summary",
    "cuda_gpu_mem_time_sum": "CUDA GPU MemOps Summary (by Time)",
    "cuda_gpu_mem_size_sum": "CUDA GPU MemOps Summary (by Size)",
    "cuda_gpu_sum": "CUDA GPU Summary (Kernels/MemOps)",
    "nvtx_sum": "NVTX Range Summary",
    "nvtx_gpu_proj_sum": "NVTX GPU Projection Summary",
    "nvtx_kern_sum": "NVTX Range Kernel Summary",
    "cuda_gpu_trace": "CUDA GPU Trace",
}
REPORT_NAMES = list(TITLES)

#: What ``nsys stats`` runs when no ``-r`` is given (2025): the summaries, no trace.
DEFAULT_REPORTS = ["nvtx_sum", "cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum"]

#: nsys 2022-era report names accepted as aliases.
ALIASES = {
    "cudaapisum": "cuda_api_sum", "gpukernsum": "cuda_gpu_kern_gb_sum", "gpumemtimesum": "cuda_gpu_mem_time_sum",
    "gpumemsizesum": "cuda_gpu_mem_size_sum", "gpusum": "cuda_gpu_sum", "nvtxsum": "nvtx_sum",
    "nvtxgpuproj": "nvtx_gpu_proj_sum", "nvtxkernsum": "nvtx_kern_sum", "gputrace": "cuda_gpu_trace",
}

KERN_SUM_COLUMNS = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)",
                    "Max (ns)", "StdDev (ns)", "Name"]
KERN_GB_COLUMNS = [*KERN_SUM_COLUMNS[:-1], "GridXYZ", "BlockXYZ", "Name"]
MEM_TIME_COLUMNS = ["Time (%)", "Total Time (ns)", "Count", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
                    "StdDev (ns)", "Operation"]
MEM_SIZE_COLUMNS = ["Total (B)", "Count", "Avg (B)", "Med (B)", "Min (B)", "Max (B)", "StdDev (B)", "Operation"]
API_COLUMNS = ["Time (%)", "Total Time (ns)", "Num Calls", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)",
               "StdDev (ns)", "Name"]
GPU_SUM_COLUMNS = [*KERN_SUM_COLUMNS[:-1], "Category", "Operation"]
NVTX_SUM_COLUMNS = [*KERN_SUM_COLUMNS[:-1], "Style", "Range"]

#: The columns of the summaries, by report (the NVTX projection, kernels-per-range and trace
#: reports keep theirs in their modules).
COLUMNS = {
    "cuda_api_sum": API_COLUMNS, "cuda_gpu_kern_sum": KERN_SUM_COLUMNS, "cuda_gpu_kern_gb_sum": KERN_GB_COLUMNS,
    "cuda_gpu_mem_time_sum": MEM_TIME_COLUMNS, "cuda_gpu_mem_size_sum": MEM_SIZE_COLUMNS,
    "cuda_gpu_sum": GPU_SUM_COLUMNS, "nvtx_sum": NVTX_SUM_COLUMNS,
}

#: Why a report over an export without that data has no rows (nsys' "SKIPPED: ... has" reason).
NO_DATA = {
    "kernels": "no CUDA kernel data", "memory": "no GPU memory data", "api": "no CUDA API data",
    "gpu": "no GPU kernel or memory data", "nvtx": "no NVTX data",
}


def canonical(name: str) -> str:
    """A report's name, aliases resolved."""
    return ALIASES.get(name, name)


#: What the NVTX projection reads of the GPU operations (kernels, memcpy, memset), of the ranges and
#: of the runtime calls (:mod:`nsighttk.analysis.nsys.nvtx` reads them).
PROJECTED_OPS = ["start_ns", "end_ns", "launch_call"]
PROJECTED_RANGES = ["range_id", "start_ns", "end_ns", "name", "domain", "style", "global_tid", "end_global_tid"]
PROJECTED_CALLS = ["start_ns", "end_ns", "correlation_id", "global_tid"]

#: Columns of the Profile that the NVTX reports read, per table (for :func:`prefetch` and
#: :func:`release_memos` of :mod:`nsighttk.analysis.nsys.reports`); the other reports read the
#: capture through its engine.
NEEDS: dict[str, dict[str, list[str]]] = {
    "nvtx_sum": {"nvtx": ["start_ns", "end_ns", "name", "domain", "style"]},
    "nvtx_gpu_proj_sum": {"nvtx": PROJECTED_RANGES, **{t: PROJECTED_OPS for t in ("kernels", "memcpy", "memset")},
                          "api": PROJECTED_CALLS},
    "nvtx_kern_sum": {"nvtx": PROJECTED_RANGES, "kernels": [*PROJECTED_OPS, "name", "duration_ns"],
                      "api": PROJECTED_CALLS},
}
