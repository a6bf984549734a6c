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


def test_per_rank_nsys_command_lines() -> None:
    from nsighttk.collect.nsys import NsysOptions, per_rank_command, rank_var

    assert rank_var(["srun", "-n", "4"]) == "SLURM_PROCID"
    assert rank_var(["torchrun", "--nproc-per-node", "2", "--no-python"]) == "RANK"
    assert rank_var(["python3", "-m", "torch.distributed.run", "--no-python"]) == "RANK"
    assert rank_var(["/usr/bin/mpirun", "-n", "2"], "mpirun (Open MPI) 4.1.4") == "OMPI_COMM_WORLD_RANK"
    assert rank_var(["mpirun", "-n", "2"], "HYDRA build details:") == "PMI_RANK"  # MPICH
    assert rank_var(["aprun", "-n", "2"]) is None
    cmd = per_rank_command("/opt/nsys", ["srun", "-n", "2"], Path("/r/raw"), ["./app", "--x"], "SLURM_PROCID",
                           NsysOptions())
    assert cmd == ["srun", "-n", "2", "/opt/nsys", "profile", "--trace", "cuda,nvtx,osrt", "--sample", "none",
                   "--cpuctxsw", "none", "--export", "sqlite", "--output", "/r/raw/rank%q{SLURM_PROCID}",
                   "--force-overwrite", "true", "./app", "--x"]


def test_launch_mistakes_are_one_line(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["ranks", "--launch", "no-such-launcher -n 2", "--", "./app"])
    assert res.exit_code == 3 and res.stderr.strip() == ("nsighttk: error: no-such-launcher: launcher not found "
                                                         "(is it on PATH (module load ...)?)")
    res = CliRunner().invoke(cli, ["ranks", "--launch", "srun -n 2"])
    assert res.exit_code == 2 and res.stderr.strip() == ('nsighttk: error: --launch needs a launcher and a command '
                                                         'after -- (e.g. --launch "srun -n 4" -- ./app)')
    res = CliRunner().invoke(cli, ["ranks", "--launch", "env", "--", "./app"])
    assert res.exit_code == 2 and "which variable holds the rank under env?" in res.stderr
    assert not (tmp_path / "reports").exists()


def test_program_names() -> None:
    from nsighttk.api import _program_name

    assert _program_name(["./build/app", "-n", "3"]) == "app"
    assert _program_name(["python3", "train.py", "--lr", "1"]) == "train"
    assert _program_name(["python3", "-m", "nsighttk.workload_main", "add"]) == "workload_main"
