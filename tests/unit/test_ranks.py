"""`nsighttk ranks` on a real two-rank capture (torchrun, nsys per rank with %q{RANK}, H100; CPU
sampling tables dropped to keep it small): per-rank kernel time equals nsys stats' own
cuda_gpu_kern_sum of each rank; the slowest rank is named; bad input is one line."""

from __future__ import annotations

import csv
import gzip
import json
import sqlite3
from pathlib import Path

import pandas as pd
from click.testing import CliRunner
from conftest import kernels_profile

from nsighttk.cli import cli

FIX = Path(__file__).parents[1] / "fixtures" / "h100-ranks"


def _nsys_csv_total(path: Path, prefix: str = "") -> int:
    """Total kernel time in an ``nsys stats -r cuda_gpu_kern_sum`` CSV (of the kernels whose name starts
    with ``prefix``)."""
    lines = path.read_text().splitlines()
    rows = csv.DictReader(lines[next(i for i, ln in enumerate(lines) if ln.startswith("Time (%)")):])
    return sum(int(r["Total Time (ns)"]) for r in rows if r["Name"].startswith(prefix))


def _nsys_total(rank: int) -> int:
    return _nsys_csv_total(FIX / f"rank{rank}.kern_sum.csv")


def test_per_rank_kernel_time_equals_nsys_stats() -> None:
    res = CliRunner().invoke(cli, ["ranks", str(FIX / "rank1.sqlite"), str(FIX / "rank0.sqlite"), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    rows = data["ranks"]
    assert [r["rank"] for r in rows] == [0, 1]
    for r in rows:
        assert r["kernel_time_ns"] == _nsys_total(r["rank"]) and r["kernels"] == 12
        assert r["top_kernel"] == "_add_kernel"
    slowest = [r["rank"] for r in rows if r["slowest"]]
    assert slowest == [max(rows, key=lambda r: r["kernel_time_ns"])["rank"]]
    text = CliRunner().invoke(cli, ["ranks", str(FIX / "rank0.sqlite"), str(FIX / "rank1.sqlite")]).stdout
    assert f"rank {slowest[0]} is the slowest" in text and data["slowest_rank"] == slowest[0]


def test_bad_input() -> None:
    one = CliRunner().invoke(cli, ["ranks", str(FIX / "rank0.sqlite")])
    assert one.exit_code == 2 and "two or more ranks" in one.stderr
    kineto = next((Path(__file__).parents[1] / "fixtures" / "h100-torch2.11").rglob("trace.json"))
    other = CliRunner().invoke(cli, ["ranks", str(FIX / "rank0.sqlite"), str(kineto)])
    assert other.exit_code == 2 and "not an nsys capture like rank0.sqlite" in other.stderr


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
    from nsighttk.commands.ranks import program_name as _program_name

    assert _program_name(["./build/app", "-n", "3"]) == "app"
    assert _program_name(["python3", "train.py", "--lr", "1"]) == "train"
    assert _program_name(["python3", "-m", "nsighttk.collect.drivers.workload_main", "add"]) == "workload_main"


# --- collectives across ranks (DDP over 2 H200s: NCCL all-reduce; HTA's two ranks of one job) -------------------
DDP = Path(__file__).parents[1] / "fixtures" / "h200x2-ddp"
HTA = Path(__file__).parents[1] / "fixtures" / "hta" / "trace_filter"


def _nccl_waits_sql() -> dict[int, int]:
    """Per rank, straight from the exports: each NCCL kernel launch matched with the same launch on the
    other rank (same name, same order), minus the shorter of the two."""
    durs: dict[int, dict[tuple[str, int], int]] = {}
    for r in (0, 1):
        with sqlite3.connect(DDP / f"rank{r}.sqlite") as c:
            seen: dict[str, int] = {}
            durs[r] = {}
            sql = ("select s.value, k.end - k.start from CUPTI_ACTIVITY_KIND_KERNEL k join StringIds s "
                   "on s.id = k.demangledName where s.value like 'nccl%' order by k.start")
            for name, d in c.execute(sql):
                durs[r][(name, seen.get(name, 0))] = d
                seen[name] = seen.get(name, 0) + 1
    keys = durs[0].keys() & durs[1].keys()
    return {r: sum(durs[r][k] - min(durs[0][k], durs[1][k]) for k in keys) for r in (0, 1)}


def test_ddp_ranks_wait_in_collectives() -> None:
    from nsighttk.analysis.comm.ranks import rank_skew
    from nsighttk.api import load

    skew = rank_skew({f"rank{r}.sqlite": load(DDP / f"rank{r}.sqlite") for r in (0, 1)})
    t = skew.table.set_index("rank")
    waits = _nccl_waits_sql()
    for r in (0, 1):
        assert t.loc[r, "kernel_time_ns"] == _nsys_csv_total(DDP / f"rank{r}.cuda_gpu_kern_sum.csv")
        assert t.loc[r, "comm_ns"] == _nsys_csv_total(DDP / f"rank{r}.cuda_gpu_kern_sum.csv", "nccl")
        assert t.loc[r, "comm_wait_ns"] == waits[r]
    slowest = min(waits, key=waits.__getitem__)
    assert skew.slowest_rank == slowest and t.loc[slowest, "slowest"]
    assert skew.verdict().startswith(f"rank {slowest} is the slowest: the other ranks wait ")
    if t.loc[slowest, "compute_ns"] <= t.loc[1 - slowest, "compute_ns"]:  # its kernels were not the longer ones
        assert skew.longer == [] and "its kernels took no longer than the others'" in skew.verdict()
    assert skew.as_dict()["slowest_rank"] == slowest


def test_kineto_ranks_and_what_the_slowest_spent_longer_on() -> None:
    """HTA's two ranks of one job: rank 1 is waited for; its embedding kernels ran longer than rank 0's."""
    from nsighttk.analysis.comm.ranks import rank_skew
    from nsighttk.api import load

    skew = rank_skew({f"sampled_rank-{r}.json.gz": load(HTA / f"sampled_rank-{r}.json.gz") for r in (0, 1)})
    assert skew.slowest_rank == 1
    top = skew.longer[0]
    per_rank = []
    for r in (0, 1):
        with gzip.open(HTA / f"sampled_rank-{r}.json.gz", "rt") as fh:
            ev = json.load(fh)["traceEvents"]
        per_rank.append(sum(round(e["dur"] * 1000) for e in ev if e.get("cat") == "kernel" and
                            e["name"].startswith("void split_embedding_backward_codegen_rowwise_adagrad_unweighted_"
                                                 "kernel_cta_per_row_1<c10::Half")))
    assert top["label"].startswith("split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1")
    assert top["extra_ns"] == per_rank[1] - per_rank[0]
    assert "its kernels took longer: split_embedding_backward" in skew.verdict()


def test_waits_without_a_common_clock_and_with_missing_launches() -> None:
    from nsighttk.analysis.comm.ranks import collective_waits, rank_skew
    from nsighttk.profile import Profile

    ar = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"

    def prof(offset: int, durs: list[int], work: int) -> Profile:
        rows, t = [], offset
        for d in durs:
            rows.append((ar, t, t + d))
            t += d + 100
        rows.append(("gemm_kernel", t, t + work))
        return kernels_profile(rows)

    # rank 0's clock is a day ahead: no matter; rank 1 has one more all-reduce than rank 0 (a longer window)
    profiles = {"rank0": prof(86_400 * 10**9, [50, 70], 500), "rank1": prof(0, [20, 30, 40], 900)}
    w = collective_waits(profiles).set_index("rank")
    assert w.loc[0, "wait_ns"] == 30 + 40 and w.loc[1, "wait_ns"] == 0 and w.loc[1, "matched"] == 2
    skew = rank_skew(profiles)
    assert skew.slowest_rank == 1 and skew.longer[0]["extra_ns"] == 400 and skew.notes


def _nvtx_steps(rank: int) -> pd.DataFrame:
    with sqlite3.connect(DDP / f"rank{rank}.sqlite") as c:
        rows = c.execute("select text, end - start from NVTX_EVENTS where text like 'step %' order by start").fetchall()
    df = pd.DataFrame(rows, columns=["name", "duration_ns"])
    df["warmup"] = df.index == 0  # step 0 builds the model and loads the modules
    return df


def test_iteration_skew_on_the_ddp_steps() -> None:
    """Per-rank NVTX 'step N' ranges of the DDP capture (straight from the exports): steps matched by
    name, warm-up left out, per-rank means and the slowest rank per step."""
    from nsighttk.analysis.comm.ranks import iteration_skew, rank_skew
    from nsighttk.api import load

    tables = {r: _nvtx_steps(r) for r in (0, 1)}
    per_rank, per_it = iteration_skew(tables)
    steady = {r: t[~t["warmup"]].set_index("name")["duration_ns"] for r, t in tables.items()}
    assert per_rank["iterations"].tolist() == [5, 5] and "step 0" not in set(per_it["name"])
    for r in (0, 1):
        assert per_rank.loc[per_rank["rank"] == r, "mean_ns"].item() == round(steady[r].mean())
    both = pd.concat(steady, axis=1)
    assert per_it.set_index("name")["spread_ns"].to_dict() == (both.max(axis=1) - both.min(axis=1)).to_dict()
    assert per_it.set_index("name")["slowest_rank"].to_dict() == both.idxmax(axis=1).to_dict()
    assert abs(per_rank["vs_mean_pct"].sum()) < 1e-9
    skew = rank_skew({f"rank{r}.sqlite": load(DDP / f"rank{r}.sqlite") for r in (0, 1)}, iterations=tables)
    assert "its steady-state iterations take" in skew.verdict()
    assert len(skew.as_dict()["iterations"]["per_iteration"]) == 5


def test_iteration_skew_by_position_and_with_too_few_ranks() -> None:
    from nsighttk.analysis.comm.ranks import iteration_skew

    a = pd.DataFrame({"name": ["it", "it", "it"], "duration_ns": [900, 100, 110], "warmup": [True, False, False]})
    b = pd.DataFrame({"name": ["it", "it", "it"], "duration_ns": [950, 130, 100], "warmup": [False, False, False]})
    per_rank, per_it = iteration_skew({0: a, 1: b})
    assert per_it["name"].tolist() == ["1", "2"] and per_it["spread_ns"].tolist() == [30, 10]
    assert per_it["slowest_rank"].tolist() == [1, 0] and per_rank["mean_ns"].tolist() == [105, 115]
    assert iteration_skew({0: a})[0].empty
