"""``nsighttk ranks`` over many ranks: a sweep of rank counts made of hard links to the two real
DDP captures (tests/fixtures/h200x2-ddp/rank{0,1}.sqlite), each run as its own process with the
default LocalCluster (or ``--workers N``), printing per count: wall time, the driver's peak RSS,
the largest worker's peak RSS (each process's VmHWM, read every 0.1 s while it lives), the load
average, and whether the result equals the serial run's (``--workers 0``) where one was made.

    PYTHONPATH=$PWD python tests/benchmarks/ranks_sweep.py 16 64 256 [--serial-up-to 64] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "h200x2-ddp"


def _hwm(p: psutil.Process) -> int:
    """VmHWM (peak resident) of a process in MB; 0 once it is gone."""
    try:
        with open(f"/proc/{p.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def run(captures: list[Path], extra: list[str]) -> tuple[float, int, int, int, dict]:
    """(seconds, driver peak MB, largest worker peak MB, worker processes seen, JSON result)."""
    cmd = [sys.executable, "-m", "nsighttk", "ranks", *map(str, captures), "--json", *extra]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    me = psutil.Process(proc.pid)
    driver = worker = 0
    seen: set[int] = set()
    out: list[bytes] = []
    import threading

    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    while proc.poll() is None:
        driver = max(driver, _hwm(me))
        try:
            kids = me.children(recursive=True)
        except psutil.Error:
            kids = []
        for k in kids:
            seen.add(k.pid)
            worker = max(worker, _hwm(k))
        time.sleep(0.1)
    reader.join()
    secs = time.monotonic() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:6])} ... exited {proc.returncode}")
    return secs, driver, worker, len(seen), json.loads(out[0])


def comparable(res: dict) -> dict:
    """The result less what may differ between runs that agree (none expected)."""
    return {k: v for k, v in res.items() if k != "notes"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("counts", nargs="+", type=int)
    ap.add_argument("--serial-up-to", type=int, default=64, help="also run --workers 0 up to this many ranks")
    ap.add_argument("--workers", default=None)
    args = ap.parse_args()
    extra = ["--workers", args.workers] if args.workers else []
    print(f"machine: {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.1f} GiB; inputs: hard links to "
          f"{FIX.name}/rank{{0,1}}.sqlite ({(FIX / 'rank0.sqlite').stat().st_size / 1e6:.2f} MB each)")
    print(f"{'ranks':>6} {'mode':>8} {'time s':>8} {'driver MB':>10} {'worker MB':>10} {'procs':>6} {'load1':>6}  same")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.counts:
            d = Path(tmp) / str(n)
            d.mkdir()
            caps = []
            for i in range(n):
                c = d / f"rank{i}.sqlite"
                os.link(FIX / f"rank{i % 2}.sqlite", c)
                caps.append(c)
            secs, drv, wrk, procs, res = run(caps, extra)
            load = os.getloadavg()[0]
            same = ""
            if n <= args.serial_up_to:
                s_secs, s_drv, _, _, s_res = run(caps, ["--workers", "0"])
                same = "yes" if comparable(s_res) == comparable(res) else "NO"
                print(f"{n:>6} {'serial':>8} {s_secs:>8.1f} {s_drv:>10} {'-':>10} {'-':>6} {os.getloadavg()[0]:>6.1f}")
            print(f"{n:>6} {'dask':>8} {secs:>8.1f} {drv:>10} {wrk:>10} {procs:>6} {load:>6.1f}  {same}", flush=True)


if __name__ == "__main__":
    main()
