"""What-to-try-next findings on the real captures and on synthetic edge cases."""

from __future__ import annotations

import pandas as pd
from conftest import capture

from nsighttk.analysis.advice import advise, pageable_transfers, tiny_kernels, undersized_launches
from nsighttk.analysis.iterations.find import iterations
from nsighttk.analysis.memory import host_copies_by_size
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import Profile, conform


def rules(name: str) -> list[str]:
    return [f.rule for f in advise(load_nsys_sqlite(capture(name)))]


def test_seed_add_one_thread_and_managed_memory() -> None:
    found = {f.rule: f for f in advise(load_nsys_sqlite(capture("add")))}
    assert set(found) == {"undersized_launch", "unified_memory_migrations"}
    assert "1 thread(s) (grid 1x1x1, block 1x1x1) on 132 SMs" in found["undersized_launch"].evidence
    assert "72 unified-memory migrations" in found["unified_memory_migrations"].evidence
    assert "add_prefetch" in found["unified_memory_migrations"].suggestion


def test_grid_stride_sample_copies_from_pageable_vectors() -> None:
    # The kernel fills the GPU; what is left is std::vector (pageable) host memory and copies
    # that outweigh five short kernels.
    assert rules("add_grid_stride") == ["pageable_transfers", "copies_dominate"]


def test_pytorch_script_idle_gpu_and_pageable_copies() -> None:
    found = {f.rule: f for f in advise(load_nsys_sqlite(capture("streams_demo")))}
    assert {"gpu_idle", "pageable_transfers", "copies_dominate"} <= set(found)
    # its pageable copies are 4 MB device-to-host, its pinned ones 4 MB host-to-device: no comparison
    assert "no pinned copies of a similar size (within a factor of two) and direction" in \
        found["pageable_transfers"].evidence
    assert "GB/s pinned" not in found["pageable_transfers"].evidence
    assert next(iter(advise(load_nsys_sqlite(capture("streams_demo"))))).rule == "gpu_idle"


def test_tiny_kernels_rule() -> None:
    n = 2000
    starts = list(range(0, n * 10_000, 10_000))
    k = conform("kernels", pd.DataFrame({"start_ns": starts, "end_ns": [s + 3000 for s in starts],
                                         "duration_ns": [3000] * n, "name": ["k"] * n, "name_id": [1] * n}))
    f = tiny_kernels(Profile(kernels=k))
    assert f is not None and "2,000 kernel launches with a median duration of 3.00 us" in f.evidence
    assert tiny_kernels(Profile()) is None


def test_empty_profile_has_no_findings() -> None:
    assert advise(Profile()) == []


# ----------------------------------------------------------------------------- steady state


def test_gpt2_findings_are_about_the_steady_state_not_the_model_load() -> None:
    p = load_nsys_sqlite(capture("gpt2_train"))
    whole = {f.rule: f for f in advise(p)}
    # over the whole capture: 2 s of model build and module loading, 4-17 MB pageable weight copies
    assert {"gpu_idle", "pageable_transfers"} <= set(whole) and whole["gpu_idle"].scope == "whole capture"
    found = {f.rule: f for f in advise(p, iterations(p))}
    assert set(found) == {"gpu_idle", "tiny_kernels", "unsteady_iterations"}  # no pageable copy inside a step
    scope = "steady state, 3 iterations (step 1 to step 3)"
    assert all(f.scope == scope and f.evidence.startswith(scope + ": ") for f in found.values())
    idle = found["gpu_idle"]
    assert idle.title == "The GPU is idle most of each iteration"
    t = iterations(p).steady_table
    assert f"GPU busy {t['gpu_busy_pct'].median():.1f}% of each iteration (median of 3" in idle.evidence
    assert "the GPU waits for the CPU to launch work" in idle.suggestion  # kernels start ~10 us after launch
    assert "3,402 kernel launches" in found["tiny_kernels"].evidence  # 3 x 1,134


def _copies(rows: list[tuple[int, int, str, str]]) -> pd.DataFrame:
    """(bytes, duration_ns, kind, host side) per copy."""
    t, out = 0, []
    for b, d, kind, host in rows:
        out.append({"start_ns": t, "end_ns": t + d, "duration_ns": d, "bytes": b, "kind": kind,
                    "src_kind": host if kind == "HtoD" else "Device", "dst_kind": host if kind == "DtoH" else "Device"})
        t += d + 10
    return conform("memcpy", pd.DataFrame(out))


def test_pinned_and_pageable_compared_only_at_similar_sizes() -> None:
    mb = 1 << 20
    # the case: large pageable weights, small pinned batches: no comparison is drawn
    f = pageable_transfers(Profile(memcpy=_copies([(9 * mb, 1_000_000, "HtoD", "Pageable"),
                                                   (16 << 10, 1_500, "HtoD", "Pinned")])))
    assert f is not None and "no pinned copies of a similar size (within a factor of two) and direction" in f.evidence
    # same direction, same size bucket [8 MiB, 16 MiB): both rates quoted, pageable 9.4 GB/s vs pinned 25.2 GB/s
    f = pageable_transfers(Profile(memcpy=_copies([(9 * mb, 1_000_000, "HtoD", "Pageable"),
                                                   (12 * mb, 500_000, "HtoD", "Pinned"),
                                                   (16 << 10, 1_500, "HtoD", "Pinned"),
                                                   (9 * mb, 100_000, "DtoH", "Pinned")])))
    assert f is not None and ("HtoD copies of 8 MiB to 16 MiB reached 25.2 GB/s pinned (1) against 9.4 GB/s "
                              "pageable (1)") in f.evidence
    assert pageable_transfers(Profile(memcpy=_copies([(16 << 10, 1_500, "HtoD", "Pageable")]))) is None  # < 1 MB
    b = host_copies_by_size(Profile(memcpy=_copies([(9 * mb, 1_000_000, "HtoD", "Pageable"),
                                                    (12 * mb, 500_000, "HtoD", "Pinned")])))
    assert b[["size_lo", "pageable_count", "pinned_count"]].values.tolist() == [[8 * mb, 1, 1]]


def _kernels(names: list[str], grid: int) -> pd.DataFrame:
    n = len(names)
    return conform("kernels", pd.DataFrame({
        "start_ns": [i * 1000 for i in range(n)], "end_ns": [i * 1000 + 900 for i in range(n)],
        "duration_ns": [900] * n, "name": names, "name_id": 0, "grid_x": grid, "grid_y": 1, "grid_z": 1,
        "block_x": 544, "block_y": 1, "block_z": 1}))


def test_no_launch_geometry_advice_for_collectives() -> None:
    gpus = conform("gpus", pd.DataFrame({"device_id": [0], "name": ["H200"], "sm_count": [132]}))
    nccl = ["ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs4K)", "void ncclKernel_AllGather_RING_LL(x)",
            "nvshmemi_barrier_kernel"]
    assert undersized_launches(Profile(kernels=_kernels(nccl * 4, 8), gpus=gpus)) is None
    mine = undersized_launches(Profile(kernels=_kernels(["my_reduce(float*)"] * 4, 8), gpus=gpus))
    assert mine is not None and "grid 8x1x1" in mine.evidence
