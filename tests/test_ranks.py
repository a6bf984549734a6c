"""`nsighttk ranks` on a real two-rank capture (torchrun, nsys per rank with %q{RANK}, H100; CPU
sampling tables dropped to keep it small): per-rank kernel time equals nsys stats' own
cuda_gpu_kern_sum of each rank; the slowest rank is named; bad input is one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner

from nsighttk.cli import cli

FIX = Path(__file__).parent / "fixtures" / "h100-ranks"


def _nsys_total(rank: int) -> int:
    lines = (FIX / f"rank{rank}.kern_sum.csv").read_text().splitlines()
    rows = csv.DictReader(lines[next(i for i, ln in enumerate(lines) if ln.startswith("Time (%)")):])
    return sum(int(r["Total Time (ns)"]) for r in rows)


def test_per_rank_kernel_time_equals_nsys_stats() -> None:
    res = CliRunner().invoke(cli, ["ranks", str(FIX / "rank1.sqlite"), str(FIX / "rank0.sqlite"), "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [r["rank"] for r in rows] == [0, 1]
    for r in rows:
        assert r["kernel_time_ns"] == _nsys_total(r["rank"]) and r["kernels"] == 12
        assert r["top_kernel"] == "_add_kernel"
    slowest = [r["rank"] for r in rows if r["slowest"]]
    assert slowest == [max(rows, key=lambda r: r["kernel_time_ns"])["rank"]]
    text = CliRunner().invoke(cli, ["ranks", str(FIX / "rank0.sqlite"), str(FIX / "rank1.sqlite")]).stdout
    assert f"slowest rank: {slowest[0]}" in text


def test_bad_input() -> None:
    one = CliRunner().invoke(cli, ["ranks", str(FIX / "rank0.sqlite")])
    assert one.exit_code == 2 and "two or more ranks" in one.stderr
    kineto = next((Path(__file__).parent / "fixtures" / "h100-torch2.11").rglob("*.json*"))
    other = CliRunner().invoke(cli, ["ranks", str(FIX / "rank0.sqlite"), str(kineto)])
    assert other.exit_code == 2 and "not an nsys capture" in other.stderr and "Traceback" not in other.output
