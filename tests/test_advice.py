"""What-to-try-next findings on the real captures and on synthetic edge cases."""

from __future__ import annotations

import pandas as pd
from conftest import capture

from nsighttk.analysis.advice import advise, tiny_kernels
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
    assert "pinned transfers in the same capture reached 51.2 GB/s" in found["pageable_transfers"].evidence
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
