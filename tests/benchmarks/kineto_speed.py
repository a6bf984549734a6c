#!/usr/bin/env python3
"""Speed and peak memory of reading a large Kineto (torch.profiler) trace.

    python tests/benchmarks/kineto_speed.py [--events bert|ddp|ns] [--integer-times] [--mb 313]
                                            [--trace PATH] [--out-dir DIR] [--hta-python PY] [--repeat 1]

Builds (once, cached under ``--out-dir``, the system's temporary folder by default) a trace of about
``--mb`` MB by replicating the events of a real trace end to end in time: replica ``r`` has its
timestamps shifted past the end of replica ``r - 1`` and its ``External id``, ``correlation``, flow
``id`` and ``Ev Idx`` offset so that every id stays unique and every kernel still links to its
runtime call and op.  The layout is Kineto's own (one key group per line, ``"ts": <us>.<3 decimals>``;
with ``--integer-times``, whole microseconds, ``"ts": <us>``, as torch.profiler wrote before
nanosecond timestamps).  ``--events`` picks the real capture replicated:

* ``bert`` (default): tests/fixtures/h100-torch2.11/bert_bs1_seq128.trace.json.gz, 5,280 events
  of a BERT forward pass on an H100; times since boot (about 4.5e12 us), which float64 holds to
  the nanosecond;
* ``ddp``: tests/fixtures/h200x2-ddp/rank0.pt.trace.json.gz, rank 0 of a two-GPU DDP training run
  on H200s (NCCL kernels, many runtime calls); times since boot;
* ``ns``: tests/fixtures/hta/ns_resolution_trimmed.json.gz, HTA's nanosecond-resolution trace
  (a V100 backward pass: mostly CPU ops and runtime calls); times on the epoch clock (about
  1.7e15 us with three decimals), whose nanoseconds float64 cannot hold.

Then, each in a fresh process (so that the peak resident set size is that reader's alone), it
reads the trace with Python's ``json.load``, with ``orjson.loads`` (the parse alone, for scale),
with nsighttk's loader (``nsighttk.load.kineto.load_kineto``: the full Profile, tables built), runs
``nsighttk analyze`` on it (``analyze``: the command line, load and report, its peak RSS that of
the command's process) and, when ``--hta-python`` names a Python with HolisticTraceAnalysis
installed, reads it with HTA's ``parse_trace_dataframe``; and prints seconds, MB/s and peak RSS for
each.  A benchmark prints figures; nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "fixtures" / "h100-torch2.11" / "bert_bs1_seq128.trace.json.gz"
#: the traces ``--events`` replicates
SOURCES = {"bert": SOURCE, "ddp": ROOT / "tests" / "fixtures" / "h200x2-ddp" / "rank0.pt.trace.json.gz",
           "ns": ROOT / "tests" / "fixtures" / "hta" / "ns_resolution_trimmed.json.gz"}

_ID_KEYS = ("External id", "correlation", "Ev Idx")


def _fmt_us(ns: int, integer: bool = False) -> str:
    """Nanoseconds as Kineto writes microseconds: three decimals, or (``integer``) whole ones."""
    if integer:
        return str(ns // 1000)
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def _event_text(e: dict, shift_ns: int, id_offset: int, integer: bool = False) -> str:
    """One event in Kineto's layout, its time shifted and its ids offset (whole microseconds
    with ``integer``)."""
    head = []
    for k, v in e.items():
        if k in ("ts", "dur", "args"):
            continue
        if k == "id" and isinstance(v, int):
            v = v + id_offset
        head.append(f"{json.dumps(k)}: {json.dumps(v)}")
    lines = ["  {", "    " + ", ".join(head) + ","]
    times = []
    if "ts" in e:
        times.append(f'"ts": {_fmt_us(int(e["ts"] * 1000) + shift_ns, integer)}')
    if "dur" in e:
        times.append(f'"dur": {_fmt_us(int(e["dur"] * 1000), integer)}')
    if times:
        lines.append("    " + ", ".join(times) + ("," if "args" in e else ""))
    if "args" in e:
        args = []
        for k, v in e["args"].items():
            if k in _ID_KEYS and isinstance(v, int) and v > 0:
                v = v + id_offset
            args.append(f"{json.dumps(k)}: {json.dumps(v, default=str)}")
        lines += ['    "args": {', "      " + ", ".join(args), "    }"]
    else:
        lines[-1] = lines[-1].rstrip(",")
    lines.append("  }")
    return "\n".join(lines)


def build_trace(out: Path, target_bytes: int, source: Path = SOURCE, integer: bool = False) -> Path:
    """Write a trace of about ``target_bytes`` replicating ``source``'s events (see module doc);
    ``integer``: times in whole microseconds."""
    raw = gzip.decompress(source.read_bytes()) if source.suffix == ".gz" else source.read_bytes()
    text = raw.decode()
    start = re.search(r'"traceEvents"\s*:\s*\[', text)
    if start is None:
        raise SystemExit(f"{source}: no traceEvents")
    header = text[: start.end()]
    doc = json.loads(raw, parse_float=Decimal)
    events = doc["traceEvents"]
    trailer_keys = {k: v for k, v in doc.items() if k != "traceEvents" and f'"{k}"' not in header}
    timed = [e for e in events if isinstance(e.get("ts"), Decimal)]
    span_ns = int((max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed)) * 1000)
    replicated = [e for e in events if e.get("ph") not in ("M",) and e.get("cat") != "Trace"]
    once = [e for e in events if e not in replicated]
    max_id = max(int(e.get("args", {}).get(k, 0)) for e in events for k in _ID_KEYS
                 if isinstance(e.get("args", {}).get(k, 0), int))
    max_id = max(max_id, *(e.get("id", 0) for e in events if isinstance(e.get("id"), int)))
    id_step = 10 ** len(str(max_id))
    per_replica = sum(len(_event_text(e, 0, 0, integer)) + 2 for e in replicated)
    replicas = max(1, target_bytes // per_replica)
    tmp = out.with_name(out.name + ".part")
    with open(tmp, "w") as fh:
        fh.write(header + "\n")
        first = True
        for e in once:
            fh.write(("" if first else ",\n") + _event_text(e, 0, 0, integer))
            first = False
        for r in range(replicas):
            shift = r * (span_ns + 1_000_000)
            offset = r * id_step
            fh.write(",\n" + ",\n".join(_event_text(e, shift, offset, integer) for e in replicated))
        fh.write("\n]")
        for k, v in trailer_keys.items():
            fh.write(f",\n  {json.dumps(k)}: {json.dumps(v, default=str)}")
        fh.write("\n}\n")
    os.replace(tmp, out)
    return out


# ----------------------------------------------------------------------------------- measuring

_READERS = {
    "json.load": "import json\nwith open(PATH, 'rb') as fh: d = json.load(fh)\nn = len(d['traceEvents'])",
    "orjson.loads": "import orjson\nwith open(PATH, 'rb') as fh: d = orjson.loads(fh.read())\n"
                    "n = len(d['traceEvents'])",
    "nsighttk": "from nsighttk.load.kineto import load_kineto\np = load_kineto(PATH)\n"
                "n = sum(len(p.table(t)) for t in ('kernels', 'memcpy', 'memset', 'api', 'ops', 'nvtx'))",
    "analyze": "import subprocess\nr = subprocess.run([sys.executable, '-m', 'nsighttk', 'analyze', PATH], "
               "stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\nif r.returncode:\n"
               "    raise SystemExit(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "
               "f'exit {r.returncode}')\n"
               "n = 0",
    "HTA": "from hta.common.trace_parser import parse_trace_dataframe\nfrom hta.configs.parser_config import "
           "ParserConfig\nmeta, df, sym = parse_trace_dataframe(PATH, ParserConfig())\nn = len(df)",
}

_CHILD = """
import os, sys, time
PATH = sys.argv[1]
def rss(key):
    with open('/proc/self/status') as fh:
        for line in fh:
            if line.startswith(key + ':'):
                return int(line.split()[1]) * 1024
{imports}
base = rss('VmRSS')
t0, c0 = time.perf_counter(), time.process_time()
{body}
dt, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = rss('VmHWM')
if {child}:  # the command's own process: its CPU time and peak
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, peak, base = r.ru_utime + r.ru_stime, r.ru_maxrss * 1024, 0
print(dt, cpu, peak, base, n)
"""


def measure(reader: str, path: Path, python: str) -> tuple[float, float, int, int, int]:
    body = _READERS[reader]
    imports = "import pandas, numpy" if reader in ("nsighttk", "HTA") else ""
    code = _CHILD.format(imports=imports, body=body, child=reader == "analyze")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([python, "-c", code, str(path)], capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}")
    dt, cpu, peak, base, n = out.stdout.split()[-5:]
    return float(dt), float(cpu), int(peak), int(base), int(n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", choices=sorted(SOURCES), default="bert", help="the trace to replicate")
    ap.add_argument("--integer-times", action="store_true",
                    help="write times in whole microseconds (older torch.profiler) instead of three decimals")
    ap.add_argument("--mb", type=float, default=313, help="size of the trace to build (MB, 10^6 bytes)")
    ap.add_argument("--trace", type=Path, help="read this trace instead of building one")
    ap.add_argument("--out-dir", type=Path, default=Path(tempfile.gettempdir()) / "nsighttk-bench",
                    help="where the built trace is kept (default: %(default)s)")
    ap.add_argument("--hta-python", help="a Python with HolisticTraceAnalysis installed (HTA is skipped without)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per reader (the best is printed)")
    ap.add_argument("--readers", default="json.load,orjson.loads,nsighttk,analyze,HTA")
    args = ap.parse_args()
    if args.trace:
        trace = args.trace
    else:
        times = "_int" if args.integer_times else ""
        trace = args.out_dir / f"kineto_{args.events}{times}_{args.mb:g}MB.trace.json"
        if not trace.exists():
            trace.parent.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            build_trace(trace, int(args.mb * 1e6), SOURCES[args.events], args.integer_times)
            print(f"built {trace} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    size = trace.stat().st_size
    print(f"trace: {trace} ({size / 1e6:,.0f} MB); machine: {os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    print("seconds: wall clock; CPU s: the reader's CPU time (user + system), steadier on a shared machine")
    print(f"{'reader':14s} {'seconds':>8s} {'MB/s':>7s} {'CPU s':>7s} {'peak RSS MB':>12s} {'of which imports':>17s} "
          f"{'rows':>10s}")
    for reader in args.readers.split(","):
        python = sys.executable
        if reader == "HTA":
            if not args.hta_python:
                print(f"{reader:14s} skipped (give --hta-python PY, a Python with HolisticTraceAnalysis)")
                continue
            python = args.hta_python
        best = None
        try:
            for _ in range(args.repeat):
                r = measure(reader, trace, python)
                best = r if best is None or r[0] < best[0] else best
        except RuntimeError as ex:
            print(f"{reader:14s} failed: {ex}")
            continue
        assert best is not None
        dt, cpu, peak, base, n = best
        rows = f"{n:10,d}" if reader != "analyze" else f"{'-':>10s}"
        print(f"{reader:14s} {dt:8.2f} {size / 1e6 / dt:7.1f} {cpu:7.2f} {peak / 1e6:12,.0f} {base / 1e6:17,.0f} "
              f"{rows}")


if __name__ == "__main__":
    main()
