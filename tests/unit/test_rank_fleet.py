"""Many ranks: per-rank summaries reduced in this process or on Dask workers (a LocalCluster, an
external scheduler on loopback), merged into the same figures; faults reported and skipped; Ctrl-C
leaves no process behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from nsighttk.cli import cli

pytest.importorskip("distributed")

FIX = Path(__file__).parents[1] / "fixtures" / "h200x2-ddp"
KINETO = Path(__file__).parents[1] / "fixtures" / "hta" / "trace_filter"


def _copies(folder: Path, n: int) -> list[Path]:
    """n ranks: hard links to the two real DDP captures, rank<i>.sqlite."""
    folder.mkdir(exist_ok=True)
    out = []
    for i in range(n):
        c = folder / f"rank{i}.sqlite"
        os.link(FIX / f"rank{i % 2}.sqlite", c)
        out.append(c)
    return out


def _dumped(fleet: object) -> str:
    from nsighttk.report import jsonout

    return json.dumps(jsonout.clean({"fleet": fleet.as_dict(), "skew": fleet.skew.as_dict()}),  # type: ignore[attr-defined]
                      sort_keys=True, default=str)


def test_merged_summaries_equal_the_in_memory_analysis() -> None:
    from nsighttk.analysis.comm.ranks import rank_skew
    from nsighttk.api import load
    from nsighttk.commands.ranks import fleet_of

    fleet = fleet_of([FIX / "rank0.sqlite", FIX / "rank1.sqlite"])
    old = rank_skew({f"rank{r}.sqlite": load(FIX / f"rank{r}.sqlite") for r in (0, 1)})
    pd.testing.assert_frame_equal(fleet.table, old.table, check_dtype=False)
    assert fleet.skew.slowest_rank == old.slowest_rank == 1
    # the late rank's delay: the others waited for it, its GPU idled longer, its kernels were not longer
    d = fleet.delay
    assert d is not None and d["rank"] == 1 and d["others_wait_ns"] > 0 and d["host_side_ns"] > 0
    assert d["longer_kernels_ns"] == 0
    its = fleet.iteration_skew
    assert its is not None and list(its["name"]) == [f"step {i}" for i in range(6)]
    assert its["warmup"].tolist() == [True] + [False] * 5  # start-up apart from the steady state
    assert fleet.heatmap is not None and fleet.heatmap["ranks"] == [0, 1] and len(fleet.heatmap["values"][0]) == 6


def test_many_ranks_scale_figures_serially(tmp_path: Path) -> None:
    from nsighttk.commands.ranks import fleet_of
    from nsighttk.hpc.dask_ranks import Where

    caps = _copies(tmp_path / "r", 6)
    fleet = fleet_of(caps, where=Where(workers=0))
    assert list(fleet.table["rank"]) == list(range(6))
    dist = fleet.distribution["comm_wait_ns"]
    waits = sorted(fleet.table["comm_wait_ns"])
    assert dist["min"] == waits[0] and dist["max"] == waits[-1] and dist["median"] == (waits[2] + waits[3]) / 2
    # every odd rank is a copy of the late rank 1: they are the ones the others wait for
    assert {s["rank"] for s in fleet.slowest[:3]} == {1, 3, 5}
    assert any("look identical" in n for n in fleet.skew.notes)


def test_missing_damaged_and_other_kind_captures_are_skipped(tmp_path: Path) -> None:
    from nsighttk.commands.ranks import fleet_of
    from nsighttk.hpc.dask_ranks import Where

    caps = _copies(tmp_path / "r", 3)
    damaged = tmp_path / "r" / "rank3.sqlite"
    damaged.write_bytes((FIX / "rank0.sqlite").read_bytes()[:200_000])
    kineto = tmp_path / "r" / "rank4.json.gz"
    kineto.write_bytes((KINETO / "sampled_rank-0.json.gz").read_bytes())
    missing = tmp_path / "r" / "rank5.sqlite"
    fleet = fleet_of([*caps, damaged, kineto, missing], where=Where(workers=0))
    assert list(fleet.table["rank"]) == [0, 1, 2]
    skipped = {s["capture"]: s["reason"] for s in fleet.skipped}
    assert list(skipped) == ["rank3.sqlite", "rank4.json.gz", "rank5.sqlite"]
    assert "corrupt or truncated" in skipped["rank3.sqlite"]
    assert "not an nsys capture like rank0.sqlite" in skipped["rank4.json.gz"]
    assert "no such file" in skipped["rank5.sqlite"]


def test_cli_options_after_the_captures(tmp_path: Path) -> None:
    caps = [str(c) for c in _copies(tmp_path / "r", 2)]
    pq = tmp_path / "ranks.parquet"
    r = CliRunner().invoke(cli, ["ranks", *caps, "--workers", "0", "--parquet", str(pq), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["fleet"]["ranks_count"] == 2
    rows = pd.read_parquet(pq)
    assert list(rows["rank"]) == [0, 1] and "iteration_mean_ns" in rows and "comm_wait_ns" in rows
    bad = CliRunner().invoke(cli, ["ranks", *caps, "--scheduler", "tcp://127.0.0.1:1", "--slurm"])
    assert bad.exit_code == 2 and "give one place for the workers" in bad.stderr
    bad = CliRunner().invoke(cli, ["ranks", *caps, "--workers", "x"])
    assert bad.exit_code == 2 and "--workers" in bad.stderr and "Traceback" not in bad.output
    bad = CliRunner().invoke(cli, ["ranks", *caps, "--nope"])
    assert bad.exit_code == 2 and "no such option: --nope" in bad.stderr


def test_slurm_cluster_job_script() -> None:
    pytest.importorskip("dask_jobqueue")
    from nsighttk.hpc.dask_ranks import Where, slurm_cluster

    cluster = slurm_cluster(Where(slurm=True, slurm_cores=8, slurm_memory="32GB", slurm_partition="gpu",
                                  slurm_account="proj1", slurm_walltime="01:00:00"))
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "#SBATCH -p gpu" in script and "#SBATCH -A proj1" in script and "#SBATCH -t 01:00:00" in script
    assert "--nworkers 8" in script


def _die_once(marker: str, x: int) -> int:
    """Kills its worker process the first time it runs (Dask reruns it elsewhere)."""
    if not os.path.exists(marker):
        Path(marker).write_text("died")
        os._exit(1)
    return x * 2


@pytest.mark.slow
def test_dask_equals_serial_and_a_lost_worker_is_retried(tmp_path: Path) -> None:
    from nsighttk.commands.ranks import fleet_of
    from nsighttk.hpc.dask_ranks import Failed, Where, map_items

    caps = _copies(tmp_path / "r", 5)
    (tmp_path / "r" / "rank5.sqlite").write_bytes(b"not a capture")
    caps.append(tmp_path / "r" / "rank5.sqlite")
    serial = fleet_of(caps, where=Where(workers=0))
    dask = fleet_of(caps, where=Where(workers=2, worker_memory="1GiB"))
    assert _dumped(dask) == _dumped(serial)
    assert [s["capture"] for s in dask.skipped] == ["rank5.sqlite"]

    got: dict[int, object] = {}
    map_items(_die_once, [(str(tmp_path / "marker"), 21)], Where(workers=1, retries=1), got.__setitem__)
    assert got == {0: 42}
    got.clear()
    map_items(_die_once, [(str(tmp_path / "marker2"), 21)], Where(workers=1, retries=0), got.__setitem__)
    assert isinstance(got[0], Failed) and "worker died" in got[0].reason


def _spawn(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
def test_external_scheduler_on_loopback(tmp_path: Path) -> None:
    from nsighttk.commands.ranks import fleet_of
    from nsighttk.hpc.dask_ranks import Where

    sched_file = tmp_path / "scheduler.json"
    procs = [_spawn(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                     "--dashboard-address", ":0", "--scheduler-file", str(sched_file)])]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        procs += [_spawn(["distributed.cli.dask_worker", "--scheduler-file", str(sched_file), "--nthreads", "1",
                          "--no-dashboard", "--memory-limit", "1GiB"]) for _ in range(2)]
        caps = _copies(tmp_path / "r", 4)
        serial = fleet_of(caps, where=Where(workers=0))
        by_file = fleet_of(caps, where=Where(scheduler_file=sched_file))
        by_address = fleet_of(caps, where=Where(scheduler=address))
        assert _dumped(by_file) == _dumped(serial) == _dumped(by_address)
        from distributed import Client

        with Client(address, timeout="10s") as c:
            assert len(c.scheduler_info()["workers"]) == 2  # its workers are still there: nsighttk only used them
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


def _interrupt(caps: list[Path], after_s: float) -> tuple[int, str, list]:
    """Start ``nsighttk ranks`` on ``caps``, press Ctrl-C ``after_s`` seconds after its two workers
    appear (to the whole process group, as a terminal does); (exit code, stderr, workers still alive)."""
    import psutil

    proc = subprocess.Popen([sys.executable, "-m", "nsighttk", "ranks", *map(str, caps), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    me = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    kids: list[psutil.Process] = []
    while time.monotonic() < deadline and proc.poll() is None:
        kids = [k for k in me.children(recursive=True) if "spawn_main" in " ".join(k.cmdline())]
        if len(kids) >= 2:
            break
        time.sleep(0.1)
    assert len(kids) >= 2, "the workers did not start"
    time.sleep(after_s)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    _, alive = psutil.wait_procs(kids, timeout=30)
    return proc.returncode, err.decode(errors="replace"), alive


@pytest.mark.slow
def test_ctrl_c_stops_the_local_cluster(tmp_path: Path) -> None:
    caps = _copies(tmp_path / "r", 64)
    # while the workers work
    rc, err, alive = _interrupt(caps, 12.0)
    assert rc == 130 and err.rstrip().endswith("nsighttk: interrupted"), err[-2000:]
    assert not alive and "Traceback" not in err
    # while the cluster starts (the workers, being started, may say they were interrupted)
    rc, err, alive = _interrupt(caps, 0.5)
    assert rc == 130 and err.rstrip().endswith("nsighttk: interrupted"), err[-2000:]
    assert not alive


@pytest.mark.slow
def test_ranks_page_draws_the_heatmaps(tmp_path: Path) -> None:
    from browser import render, screenshot

    caps = [str(c) for c in _copies(tmp_path / "r", 16)]
    page = tmp_path / "ranks.html"
    r = CliRunner().invoke(cli, ["ranks", *caps, "--workers", "0", "--html", str(page)])
    assert r.exit_code == 0, r.output
    shown = render(page)
    assert shown.errors() == [] and shown.attr("data-ready") == "1"
    # 16 ranks x 6 iterations, for iteration time and for waiting in collectives; no bar per rank
    assert shown.charts() == [("heatmap", 96), ("heatmap", 96)]
    # the slowest rank named is the one the others wait for (rank 1's copies), not the one with most kernel time
    assert re.search(r"<dt>slowest rank</dt><dd>1 ", shown.dom)
    screenshot(page, "ranks-heatmap.png", height=1200)


def test_a_ranks_collective_bytes_are_its_kernels_message_sizes() -> None:
    """Per collective (its short label): the sum over its kernels of the larger of the in and out
    element counts times the element size, as the trace records them."""
    from nsighttk.analysis.comm.rank_summary import summarize
    from nsighttk.analysis.comm.sizes import ELEMENT_BYTES
    from nsighttk.analysis.kernels.names import short_label
    from nsighttk.load import load

    p = load(FIX / "rank0.pt.trace.json.gz")
    k = p.kernels
    sized = k[k["comm_dtype"].notna()]
    n = sized[["comm_in_nelems", "comm_out_nelems"]].fillna(0).max(axis=1).astype("int64")
    want: dict[str, int] = {}
    for name, count, dtype in zip(sized["name"], n, sized["comm_dtype"], strict=True):
        want[short_label(name)] = want.get(short_label(name), 0) + int(count) * ELEMENT_BYTES[dtype]
    assert want and summarize(p, "rank0").coll_bytes == want


def test_ranks_take_annotated_iterations_without_the_works_cross_check(monkeypatch) -> None:
    """A rank whose NVTX ranges mark its iterations is not also searched for iterations in its work
    (a note no rank summary shows); one without them is."""
    from nsighttk.analysis.iterations import find
    from nsighttk.hpc.dask_ranks import reduce_rank

    unannotated = Path(__file__).parents[1] / "fixtures" / "h200-unannotated"
    calls: list[str] = []
    real = find.iteration_detect.detect
    monkeypatch.setattr(find.iteration_detect, "detect", lambda p: calls.append("detect") or real(p))
    nvtx = reduce_rank(str(unannotated / "eager_nvtx.sqlite"), "0", None)
    assert calls == [] and nvtx.iterations is not None and len(nvtx.iterations)
    bare = reduce_rank(str(unannotated / "eager.sqlite"), "0", None)
    assert calls == ["detect"] and bare.iterations is not None and len(bare.iterations)
