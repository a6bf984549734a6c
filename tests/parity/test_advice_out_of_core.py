"""nsighttk's rules and the collectives where DuckDB has 16 MB (it spills what does not fit): every
finding is the same, word for word, as with the default memory limit; so are the calls' time per
name, the collectives' overlap per device and their rows."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import capture, fixture, mutate, record_memory_limits

from nsighttk import settings
from nsighttk.analysis import advice
from nsighttk.analysis.comm.collectives import collectives
from nsighttk.load.nsys_sqlite import load_nsys_sqlite

_EXPORTS = {"gpt2_train": lambda: capture("gpt2_train"), "streams_demo": lambda: capture("streams_demo"),
            "ddp_rank0": lambda: fixture("h200x2-ddp", "rank0.sqlite"), "add": lambda: capture("add"),
            "add_grid_stride": lambda: capture("add_grid_stride")}
_RULES = [advice.undersized_launches, advice.unified_memory_migrations, advice.pageable_transfers, advice.gpu_idle,
          advice.tiny_kernels, advice.copies_dominate]


def _findings(path: Path) -> list[object]:
    p = load_nsys_sqlite(path)
    out: list[object] = [None if (f := rule(p)) is None else asdict(f) for rule in _RULES]
    return [*out, advice._top_call(p), advice._top_call(p, (0, 2**62)), advice._top_call(p, (0, 1))]


def _at_16_mb(monkeypatch: pytest.MonkeyPatch, run: Callable[[], Any]) -> Any:
    """``run()`` where DuckDB has 16 MB (checked on every connection it opens)."""
    with monkeypatch.context() as m:
        m.setenv("NSIGHTTK_MEMORY_MB", "16")
        m.setenv("NSIGHTTK_CACHE_MB", "0")
        limits = record_memory_limits(m)
        settings.use(None)
        got = run()
    settings.use(None)
    assert limits and set(limits) == {"15.2 MiB"}
    return got


@pytest.fixture(autouse=True)
def _settings_afresh() -> Iterator[None]:
    settings.use(None)
    yield
    settings.use(None)


@pytest.mark.parametrize("name", [*_EXPORTS, "varied_grids"])
def test_the_rules_with_little_memory_say_what_they_say_with_more(name: str, monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    # (varied: every kernel launched small, with grids that vary: the first launch is shown)
    path = mutate(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 1 + rowid % 7, gridY = 1, gridZ = 1, "
                  "blockX = 32, blockY = 1, blockZ = 1", name="gpt2_train") \
        if name == "varied_grids" else _EXPORTS[name]()
    want = _findings(path)
    assert _at_16_mb(monkeypatch, lambda: _findings(path)) == want


def test_every_rule_finds_something_on_some_export() -> None:
    """The comparison above is not vacuous: each rule fires on one of the exports at least."""
    fired = {rule.__name__ for path in _EXPORTS.values() for rule in _RULES
             if rule(load_nsys_sqlite(path())) is not None}
    assert fired == {rule.__name__ for rule in _RULES}


@pytest.mark.parametrize("devices", [1, 3])
def test_collectives_with_little_memory_are_those_with_more(devices: int, monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    """Communication, computation and their overlap per device, and the per-collective rows, on a
    DDP rank's export (its kernels spread over three devices too)."""
    path = tmp_path / "rank0.sqlite"
    shutil.copy(fixture("h200x2-ddp", "rank0.sqlite"), path)
    with sqlite3.connect(path) as con:
        con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = deviceId + rowid % {devices}")
    con.close()
    want = collectives(load_nsys_sqlite(path))
    got = _at_16_mb(monkeypatch, lambda: collectives(load_nsys_sqlite(path)))
    assert want.has_communication and len(want.devices) == devices
    assert all(d.overlap_ns > 0 for d in want.devices)
    assert got.as_dict() == want.as_dict()
    pd.testing.assert_frame_equal(got.collectives, want.collectives)
