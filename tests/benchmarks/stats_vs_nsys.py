#!/usr/bin/env python3
"""Benchmark: `nsighttk stats` against `nsys stats`, report by report, on the same export.

Builds a synthetic export grown from a real H200 capture (tests/fixtures/h200-nsys2025.3/
streams_demo.sqlite, see tests/synth.py): by default 1,000,000 kernels and 1,000,000 CUDA runtime
calls, or with ``--replay N`` the capture's synthetic activity replayed N times (N=1000: 10M kernels,
12M runtime calls, 4.3M NVTX ranges), or with ``--replay N --base CAPTURE`` another real capture
replayed N times (a second shape, not tuned against: ``--base h200x2-ddp/rank0 --replay 3400`` is a
nanoGPT DDP rank grown to 10M kernels, 14.3M runtime calls and NCCL collectives).  Then runs each
report alone with both tools, alternating them, ``--repeat`` times, and prints the best wall time,
the CPU time (user+sys) of that run and the peak RSS of the process tree (getrusage), then the set
of summaries together, and optionally
``nsighttk analyze`` alternating with them (the same hour of a shared machine: its speed drifts by
a quarter), with every run's wall time.  A benchmark, not a test: it prints figures.

    python tests/benchmarks/stats_vs_nsys.py [--nsys PATH] [--kernels N | --replay N] [--out DIR]
        [--reports a,b] [--repeat 3] [--timeout S] [--analyze] [--keep] [--nsighttk COMMAND]

With nsys 2025.x the ten reports are the same ones; with nsys 2022.4 (Debian's, runs without a
GPU) the nine it has, under their old names.  "The six summaries" are nsys 2022.4's default
summaries that nsighttk has: cudaapisum, gpukernsum, gpumemtimesum, gpumemsizesum, gpusum, nvtxsum.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from conftest import capture, reference_nsys  # noqa: E402
from synth import SynthSpec, make_export, replay_export  # noqa: E402

#: nsighttk name -> nsys 2022.4 name (None: 2022.4 has no such report).
OLD = {"cuda_api_sum": "cudaapisum", "cuda_gpu_kern_sum": None, "cuda_gpu_kern_gb_sum": "gpukernsum",
       "cuda_gpu_mem_time_sum": "gpumemtimesum", "cuda_gpu_mem_size_sum": "gpumemsizesum", "cuda_gpu_sum": "gpusum",
       "nvtx_sum": "nvtxsum", "nvtx_gpu_proj_sum": "nvtxgpuproj", "nvtx_kern_sum": "nvtxkernsum",
       "cuda_gpu_trace": "gputrace"}
SIX = ["cuda_api_sum", "cuda_gpu_kern_gb_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "cuda_gpu_sum",
       "nvtx_sum"]
#: one run, timed by a blocking wait: a wait with a timeout polls (subprocess sleeps up to 50 ms
#: between polls), which rounded every sub-second figure of earlier rounds up to a 50 ms step
_MEASURE = ("import os, resource, subprocess, sys, threading, time; t = time.perf_counter(); "
            "p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
            "k = threading.Timer(float(sys.argv[1]), p.kill); k.start(); "
            "status = os.waitpid(p.pid, 0)[1]; w = time.perf_counter() - t; k.cancel(); "
            "rc = os.waitstatus_to_exitcode(status); r = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(rc, w, r.ru_utime + r.ru_stime, r.ru_maxrss)")


def measure(cmd: list[str], timeout: float) -> tuple[int, float, float, float]:
    """(exit code, wall s, CPU s, peak RSS MB) of ``cmd`` in a fresh process tree (rc -9: timed out)."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, str(timeout), *cmd], capture_output=True, text=True)
    if out.returncode != 0:
        return -9, timeout, float("nan"), float("nan")
    rc, wall, cpu, kb = out.stdout.split()
    return int(rc), float(wall), float(cpu), int(kb) / 1024


def nsys_version(nsys: str) -> str:
    return subprocess.run([nsys, "--version"], capture_output=True, text=True).stdout.strip().split()[-1]


def build(args: argparse.Namespace) -> Path:
    args.out.mkdir(parents=True, exist_ok=True)
    if args.replay and args.base:
        fixtures = HERE.parent / "fixtures"
        base = next((b for b in (Path(args.base), fixtures / f"{args.base}.sqlite") if b.is_file()), None) \
            or capture(args.base)
        export = args.out / f"replay-{base.stem}-{args.replay}.sqlite"
        if not export.exists():
            replay_export(base, export, args.replay)
    elif args.replay:
        export = args.out / f"replay-{args.replay}.sqlite"
        if not export.exists():
            tpl = make_export(capture("streams_demo"), args.out / "template.sqlite",
                              SynthSpec(kernels=10_000, runtime=10_800, memcpys=20, memsets=5, iterations=1075))
            replay_export(tpl, export, args.replay)
    else:
        export = args.out / f"synthetic-{args.kernels}.sqlite"
        if not export.exists():
            spec = SynthSpec(kernels=args.kernels, runtime=args.runtime or args.kernels, memcpys=2000, memsets=500,
                             iterations=max(1, args.kernels // 100))
            make_export(capture("streams_demo"), export, spec)
    return export


#: every wall time of the last :func:`best`, per command (the spread, printed beside the best)
WALLS: dict[str, list[float]] = {}


def best(cmds: dict[str, list[str]], repeat: int, timeout: float) -> dict[str, tuple[int, float, float, float]]:
    """Run the commands alternately ``repeat`` times; keep each one's fastest run."""
    out: dict[str, tuple[int, float, float, float]] = {}
    WALLS.clear()
    for _ in range(repeat):
        for tool, cmd in cmds.items():
            r = measure(cmd, timeout)
            WALLS.setdefault(tool, []).append(r[1])
            if tool not in out or (r[0] == 0 and r[1] < out[tool][1]) or out[tool][0] != 0:
                out[tool] = r
    return out


def fmt(r: tuple[int, float, float, float] | None) -> str:
    if r is None:
        return f"{'-':>8s} {'-':>7s} {'-':>7s}"
    if r[0] == -9:
        return f"{'>' + format(r[1], '.0f'):>8s} {'':>7s} {'':>7s}"
    flag = "" if r[0] == 0 else f" rc={r[0]}"
    digits = 3 if r[1] < 1 else 2  # sub-second reports: milliseconds
    return f"{r[1]:8.{digits}f} {r[2]:7.{digits}f} {r[3]:7.0f}{flag}"


def compiled() -> None:
    """nsighttk's modules compiled once, and children allowed to use the bytecode: an installed
    package has it (pip compiles), while PYTHONDONTWRITEBYTECODE (set on the development machine)
    would make every run compile every module again (20-40 ms a run)."""
    import compileall

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    compileall.compile_dir(str(HERE.parent.parent / "nsighttk"), quiet=1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nsys", default=None, help="nsys to compare with (default: nsys 2022.4 from tests/tools, "
                                                 "else the one nsighttk finds)")
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--runtime", type=int, default=None, help="runtime calls (default: = kernels)")
    ap.add_argument("--replay", type=int, default=0, help="replay the 10k-kernel template N times instead")
    ap.add_argument("--base", default=None, help="with --replay: replay this real capture N times instead of the "
                                                 "template (a fixture name or path; e.g. h200x2-ddp/rank0: "
                                                 "N=3400 gives 10M kernels of a nanoGPT DDP rank)")
    ap.add_argument("--export", type=Path, default=None, help="use this export instead of building one")
    ap.add_argument("--out", type=Path, default=Path("bench-data"))
    ap.add_argument("--reports", default=",".join(OLD), help="reports to time one by one (nsighttk names)")
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs per report (best is kept)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds before a run is given up")
    ap.add_argument("--analyze", action="store_true", help="also time `nsighttk analyze`")
    ap.add_argument("--no-six", action="store_true", help="skip the six summaries together")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic export and outputs")
    ap.add_argument("--nsighttk", default=None, help="the command that runs nsighttk, e.g. a venv's bin/nsighttk "
                                                     "(default: this Python with -m nsighttk: the checkout)")
    args = ap.parse_args()
    compiled()
    nsys = args.nsys or reference_nsys()
    if nsys is None:
        from nsighttk.toolchain import find_tool

        nsys = find_tool("nsys").path
    if not nsys:
        print("no nsys to compare with: run tests/tools/nsys2022.sh or pass --nsys", file=sys.stderr)
        return 2
    version = nsys_version(nsys)
    old = version.startswith("2022")
    t = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)  # nsys 2022.4 exits 0 when it cannot write its CSVs
    export = args.export or build(args)
    print(f"export: {export} ({export.stat().st_size / 1e6:,.0f} MB, ready in {time.perf_counter() - t:.0f} s); "
          f"nsys {version}; {os.cpu_count()} cores; best of {args.repeat} alternating runs", flush=True)

    def nsys_cmd(reports: list[str]) -> list[str]:
        return [nsys, "stats", "-r", ",".join(reports), "-f", "csv", "--force-overwrite", "true",
                "-o", str(args.out / "nsys"), str(export)]

    runner = shlex.split(args.nsighttk) if args.nsighttk else [sys.executable, "-m", "nsighttk"]

    def ours_cmd(reports: list[str]) -> list[str]:
        return [*runner, "stats", "-r", ",".join(reports), "-f", "csv",
                "--force-overwrite", "-o", str(args.out / "nsighttk"), str(export)]

    print(f"{'report':26s} {'nsys wall':>9s} {'cpu':>7s} {'MB':>7s}   {'nsighttk':>8s} {'cpu':>7s} {'MB':>7s}"
          f"   {'speed-up':>8s}")
    rows = [(r, [OLD[r]] if old else [r]) for r in args.reports.split(",") if r]
    if not args.no_six:
        rows.append(("six summaries together", [OLD[r] for r in SIX] if old else SIX))
    for name, theirs in rows:
        ours = SIX if name.startswith("six") else [name]
        if None in theirs:
            res = best({"nsighttk": ours_cmd(ours)}, args.repeat, args.timeout)
            print(f"{name:26s} {fmt(None)}   {fmt(res['nsighttk'])}   (no such report in nsys {version})", flush=True)
            continue
        cmds = {"nsys": nsys_cmd([t for t in theirs if t]), "nsighttk": ours_cmd(ours)}
        six = name.startswith("six")
        if six and args.analyze:  # analyze alternates with the six summaries: the same machine's hour
            cmds["analyze"] = [*runner, "analyze", "--json", str(export)]
        res = best(cmds, args.repeat, args.timeout)
        n, o = res["nsys"], res["nsighttk"]
        speed = f"{n[1] / o[1]:7.1f}x" if o[0] == 0 and o[1] > 0 else ""
        print(f"{name:26s} {fmt(n)}   {fmt(o)}   {speed:>8s}", flush=True)
        if six and args.analyze:
            a = res["analyze"]
            speed = f"{n[1] / a[1]:7.1f}x" if a[0] == 0 and a[1] > 0 else ""
            print(f"{'nsighttk analyze':26s} {fmt(None)}   {fmt(a)}   {speed:>8s} (against the six)", flush=True)
            print("  every run, s: " + "; ".join(f"{t} " + ", ".join(f"{w:.1f}" for w in ws)
                                               for t, ws in WALLS.items()), flush=True)
    if args.analyze and args.no_six:
        res = best({"analyze": [*runner, "analyze", "--json", str(export)]}, args.repeat,
                   args.timeout)
        print(f"{'nsighttk analyze':26s} {fmt(None)}   {fmt(res['analyze'])}", flush=True)
    if not args.keep and not args.export:
        shutil.rmtree(args.out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
