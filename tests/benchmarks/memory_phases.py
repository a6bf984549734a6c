#!/usr/bin/env python3
"""Peak memory of each phase of `nsighttk stats` (load, then each report), for tuning.

    python tests/benchmarks/memory_phases.py EXPORT.sqlite

Prints the resident set size after each phase and the peak during it (Linux /proc; the peak
counter is reset before each phase where the kernel allows it)."""

from __future__ import annotations

import gc
import os
import sys
import time

from _proc import reset_peak, status  # (this folder: python tests/benchmarks/X.py)


def main() -> None:
    from nsighttk.analysis.nsys import reports as R
    from nsighttk.load.nsys_sqlite import load_nsys_sqlite
    from nsighttk.report import nsys_format
    from nsighttk.settings import reuse_freed_memory

    reuse_freed_memory()  # as the CLI's process does

    print(f"{'phase':24s} {'s':>6s} {'RSS MB':>7s} {'peak MB':>8s}")
    print(f"{'imports':24s} {'':6s} {status('VmRSS'):7d} {status('VmHWM'):8d}")
    reset_peak()
    t = time.perf_counter()
    p = load_nsys_sqlite(sys.argv[1])
    print(f"{'load':24s} {time.perf_counter() - t:6.2f} {status('VmRSS'):7d} {status('VmHWM'):8d}")
    for name, fn in R.REPORTS.items():
        reset_peak()
        t = time.perf_counter()
        res = fn(p)
        with open(os.devnull, "w") as fh:
            nsys_format.write_csv(res.frames(), fh)
        del res
        gc.collect()
        print(f"{name:24s} {time.perf_counter() - t:6.2f} {status('VmRSS'):7d} {status('VmHWM'):8d}")


if __name__ == "__main__":
    main()
