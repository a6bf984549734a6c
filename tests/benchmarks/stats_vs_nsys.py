#!/usr/bin/env python3
"""Benchmark: `nsighttk stats` against `nsys stats` producing the same reports.

Builds a synthetic export of 1,000,000 kernels and 1,000,000 CUDA runtime calls grown from a
real H200 capture (tests/fixtures/h200-nsys2025.3/streams_demo.sqlite, see tests/synth.py),
then runs both tools once each, all reports to CSV files, and prints wall time and peak memory
(max RSS of the process tree, from getrusage).  A benchmark, not a test: it prints figures.

    python tests/benchmarks/stats_vs_nsys.py [--nsys PATH] [--kernels N] [--out DIR]

With nsys 2025.x the ten reports are the same ones; with nsys 2022.4 (Debian's, runs without a
GPU) the nine it has under their old names (no kernel summary without grid/block).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conftest import capture, reference_nsys  # noqa: E402
from synth import SynthSpec, make_export  # noqa: E402

NEW = ["cuda_gpu_kern_sum", "cuda_gpu_kern_gb_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "cuda_api_sum",
       "cuda_gpu_sum", "nvtx_sum", "nvtx_gpu_proj_sum", "nvtx_kern_sum", "cuda_gpu_trace"]
OLD = ["gpukernsum", "gpumemtimesum", "gpumemsizesum", "cudaapisum", "gpusum", "nvtxsum", "nvtxgpuproj", "nvtxkernsum",
       "gputrace"]
_MEASURE = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode; "
            "w = time.perf_counter() - t; "
            "print(rc, w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def measure(cmd: list[str]) -> tuple[int, float, float]:
    """(exit code, wall seconds, peak RSS in MB) of ``cmd`` run in a fresh process tree."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, check=True)
    rc, wall, kb = out.stdout.split()
    return int(rc), float(wall), int(kb) / 1024


def nsys_version(nsys: str) -> str:
    return subprocess.run([nsys, "--version"], capture_output=True, text=True).stdout.strip().split()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nsys", default=None, help="nsys to compare with (default: nsys 2022.4 from tests/tools, "
                                                 "else the one nsighttk finds)")
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--runtime", type=int, default=None, help="runtime calls (default: = kernels)")
    ap.add_argument("--out", type=Path, default=Path("bench-data"))
    ap.add_argument("--keep", action="store_true", help="keep the synthetic export and outputs")
    args = ap.parse_args()
    nsys = args.nsys or reference_nsys()
    if nsys is None:
        from nsighttk.toolchain import find_tool

        nsys = find_tool("nsys").path
    if not nsys:
        print("no nsys to compare with: run tests/tools/nsys2022.sh or pass --nsys", file=sys.stderr)
        return 2
    version = nsys_version(nsys)
    new_names = not version.startswith("2022")
    reports = NEW if new_names else OLD
    args.out.mkdir(parents=True, exist_ok=True)
    export = args.out / f"synthetic-{args.kernels}.sqlite"
    if not export.exists():
        t = time.perf_counter()
        spec = SynthSpec(kernels=args.kernels, runtime=args.runtime or args.kernels, memcpys=2000, memsets=500,
                         iterations=max(1, args.kernels // 100))
        make_export(capture("streams_demo"), export, spec)
        print(f"built {export} ({export.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f} s",
              file=sys.stderr)
    rc_n, wall_n, rss_n = measure([nsys, "stats", "-r", ",".join(reports), "-f", "csv", "--force-overwrite", "true",
                                   "-o", str(args.out / "nsys"), str(export)])
    rc_t, wall_t, rss_t = measure([sys.executable, "-m", "nsighttk", "stats", "-r", ",".join(NEW), "-f", "csv",
                                   "--force-overwrite", "-o", str(args.out / "nsighttk"), str(export)])
    ok = rc_n == 0 and rc_t == 0
    print(f"export: {args.kernels:,} kernels, {args.runtime or args.kernels:,}+ runtime calls, "
          f"{export.stat().st_size / 1e6:.0f} MB")
    print(f"{'tool':34s} {'reports':>7s} {'wall (s)':>9s} {'peak RSS (MB)':>14s}")
    print(f"{'nsys stats ' + version:34s} {len(reports):7d} {wall_n:9.1f} {rss_n:14.0f}")
    print(f"{'nsighttk stats':34s} {len(NEW):7d} {wall_t:9.1f} {rss_t:14.0f}")
    print(f"speed-up {wall_n / wall_t:.1f}x, memory ratio {rss_t / rss_n:.2f} (nsighttk / nsys)"
          + ("" if ok else f"  [exit codes: nsys {rc_n}, nsighttk {rc_t}]"))
    if not args.keep:
        shutil.rmtree(args.out, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
