"""GPU check: do ``nsighttk bench`` medians equal the kernel times nsys records for the same calls?

    nsys profile -t cuda,nvtx -s none --cpuctxsw none -o /tmp/bvn \\
        python3 tests/gpu/bench_vs_nsys_workloads.py run --out /tmp/bench.json
    nsys export --type sqlite -o /tmp/bvn.sqlite /tmp/bvn.nsys-rep
    python3 tests/gpu/bench_vs_nsys_workloads.py compare /tmp/bvn.sqlite /tmp/bench.json

``run`` benchmarks each workload (every variant times inside an NVTX range ``<workload>/<variant>``).
``compare`` takes, inside each range, the kernels after each L2 flush (the harness's
``buf.zero_()``, a FillFunctor<int> kernel): one group per timed call.  Per call it sums the kernel
durations and measures the span from the first kernel's start to the last one's end (what CUDA
events bracket, launch gaps included); it prints both medians against the harness median.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

PLAN = {  # workload: (sizes, dtype)
    "add": ([1 << 28], "float32"), "square": ([1 << 28], "float32"), "gelu": ([1 << 28], "float32"),
    "softmax": ([1 << 28], "float32"), "matmul": ([4096], "bfloat16"), "cdist": ([4096], "float32"),
}


def run(out: Path, workloads: list[str]) -> None:
    from nsighttk import api
    from nsighttk.bench import BenchConfig
    from nsighttk.report import jsonout

    results = []
    for w in workloads:
        sizes, dtype = PLAN[w]
        r = api.bench(w, sizes=sizes, dtype=dtype, config=BenchConfig(warmup_ms=10, rep_ms=60))
        results.append({"workload": w, "dtype": dtype, "copy_gbps": r.copy_gbps, "rows": jsonout.frame_records(r.rows)})
        print(f"{w}: {len(r.rows)} rows", file=sys.stderr)
    out.write_text(json.dumps(results, indent=1))


def compare(sqlite: Path, bench_json: Path) -> list[dict[str, object]]:
    from nsighttk.load.nsys_sqlite import load_nsys_sqlite

    prof = load_nsys_sqlite(sqlite)
    k = prof.kernels.sort_values("start_ns")
    rows = []
    for res in json.loads(bench_json.read_text()):
        for b in res["rows"]:
            if b.get("status") != "ok":
                continue
            rng = prof.nvtx[prof.nvtx["name"] == f"{res['workload']}/{b['variant']}"]
            if len(rng) != 1:
                continue
            s, e = int(rng["start_ns"].iloc[0]), int(rng["end_ns"].iloc[0])
            inside = k[(k["start_ns"] >= s) & (k["start_ns"] <= e)]
            is_flush = inside["name"].str.contains("FillFunctor<int>", regex=False).to_numpy()
            groups: list[list[tuple[int, int]]] = []
            for flush, st, en in zip(is_flush, inside["start_ns"], inside["end_ns"], strict=True):
                if flush:
                    groups.append([])
                elif groups:
                    groups[-1].append((int(st), int(en)))
            groups = [g for g in groups if g]
            if not groups:
                continue
            sums = [sum(en - st for st, en in g) / 1e6 for g in groups]
            spans = [(max(en for _, en in g) - min(st for st, _ in g)) / 1e6 for g in groups]
            med_sum, med_span = statistics.median(sums), statistics.median(spans)
            rows.append({"workload": res["workload"], "variant": b["variant"], "size": b["size"],
                         "bench_median_ms": b["median_ms"], "reps": b["reps"], "nsys_calls": len(groups),
                         "kernels_per_call": round(sum(len(g) for g in groups) / len(groups), 2),
                         "nsys_median_kernel_sum_ms": med_sum, "nsys_median_span_ms": med_span,
                         "diff_vs_sum_pct": 100 * (b["median_ms"] - med_sum) / med_sum,
                         "diff_vs_span_pct": 100 * (b["median_ms"] - med_span) / med_span})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--workloads", default=",".join(PLAN))
    c = sub.add_parser("compare")
    c.add_argument("sqlite", type=Path)
    c.add_argument("bench_json", type=Path)
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.out, args.workloads.split(","))
        return 0
    rows = compare(args.sqlite, args.bench_json)
    print(f"{'workload/variant':34s} {'calls':>5s} {'k/call':>6s} {'bench ms':>9s} {'nsys sum':>9s} "
          f"{'nsys span':>9s} {'vs sum':>7s} {'vs span':>7s}")
    for x in rows:
        print(f"{x['workload'] + '/' + x['variant']:34s} {x['nsys_calls']:5d} {x['kernels_per_call']:6.1f} "
              f"{x['bench_median_ms']:9.4f} {x['nsys_median_kernel_sum_ms']:9.4f} {x['nsys_median_span_ms']:9.4f} "
              f"{x['diff_vs_sum_pct']:+6.2f}% {x['diff_vs_span_pct']:+6.2f}%")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
