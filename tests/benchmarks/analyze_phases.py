#!/usr/bin/env python3
"""CPU time and peak memory of each step of `nsighttk analyze` on an nsys export, for tuning.

    python tests/benchmarks/analyze_phases.py EXPORT.sqlite

Runs the steps :func:`nsighttk.analysis.overview.overview` runs, one by one, and prints CPU
seconds (user+sys, unaffected by other processes on a shared machine), wall seconds, resident
memory after the step and the peak during it (Linux: the peak counter is reset before each step)."""

from __future__ import annotations

import sys
import time

from _proc import cpu, reset_peak, status  # (this folder: python tests/benchmarks/X.py)


def main() -> None:
    from nsighttk.analysis import advice, memory, nvtx, overview
    from nsighttk.analysis.kernels import occupancy
    from nsighttk.analysis.nsys import reports as nsys_reports
    from nsighttk.load.nsys_sqlite import load_nsys_sqlite
    from nsighttk.settings import reuse_freed_memory

    reuse_freed_memory()  # as the CLI's process does

    p = load_nsys_sqlite(sys.argv[1])
    nsys_reports.prefetch(p, ["cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_sum", "nvtx_sum",
                              "nvtx_gpu_proj_sum"])  # as overview() does
    steps = [
        ("cuda_gpu_kern_sum", lambda: nsys_reports.cuda_gpu_kern_sum(p).frame),
        ("occupancy", lambda: occupancy.kernel_occupancy(p)),
        ("memory_bandwidth", lambda: memory.memory_bandwidth(p)),
        ("cuda_api_sum", lambda: nsys_reports.cuda_api_sum(p).frame),
        ("cuda_gpu_sum", lambda: nsys_reports.cuda_gpu_sum(p).frame),
        ("nvtx_sum", lambda: nsys_reports.nvtx_sum(p).frame),
        ("nvtx_gpu_proj_sum", lambda: nvtx.autograd_ops(nsys_reports.nvtx_gpu_proj_sum(p).frame)),
        *[(f"advice.{r.__name__}", (lambda r=r: r(p))) for r in advice.RULES],
        ("overview (all, again)", lambda: overview.overview(p)),
    ]
    print(f"{'step':34s} {'cpu s':>6s} {'wall s':>7s} {'RSS MB':>7s} {'peak MB':>8s}")
    print(f"{'imports + open':34s} {cpu():6.2f} {'':7s} {status('VmRSS'):7d} {status('VmHWM'):8d}", flush=True)
    for name, fn in steps:
        reset_peak()
        c, t = cpu(), time.perf_counter()
        fn()
        print(f"{name:34s} {cpu() - c:6.2f} {time.perf_counter() - t:7.2f} {status('VmRSS'):7d} "
              f"{status('VmHWM'):8d}", flush=True)


if __name__ == "__main__":
    main()
