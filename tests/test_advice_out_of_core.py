"""nsighttk's rules past the memory budget (issue 15): the kernels' launch sizes, durations and
names, the calls' time per name, the GPU's busy time and span are read a chunk at a time (a
hundred rows here), and every finding is the same, word for word, as from whole columns; so are
the collectives' overlap per device and their rows."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest
from conftest import capture, fixture, mutate

from nsighttk.analysis import advice, intervals_spilled
from nsighttk.analysis.collectives import collectives
from nsighttk.load.nsys_sqlite import load_nsys_sqlite

_EXPORTS = {"gpt2_train": lambda: capture("gpt2_train"), "streams_demo": lambda: capture("streams_demo"),
            "ddp_rank0": lambda: fixture("h200x2-ddp", "rank0.sqlite"), "add": lambda: capture("add"),
            "add_grid_stride": lambda: capture("add_grid_stride")}
_RULES = [advice.undersized_launches, advice.gpu_idle, advice.tiny_kernels, advice.copies_dominate]


def _findings(path: Path, budget: int | None) -> list[object]:
    p = load_nsys_sqlite(path)
    if budget is not None:
        p.budget = budget
    out: list[object] = [None if (f := rule(p)) is None else asdict(f) for rule in _RULES]
    return [*out, advice._top_call(p), advice._top_call(p, (0, 2**62)), advice._top_call(p, (0, 1))]


@pytest.mark.parametrize("name", [*_EXPORTS, "varied_grids"])
def test_the_rules_a_chunk_at_a_time_say_what_whole_columns_say(name: str, monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.setattr("nsighttk.load.sqlite_columns.CHUNK_ROWS", 97)
    # (varied: every kernel launched small, with grids that vary: the first launch is shown)
    path = mutate(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 1 + rowid % 7, gridY = 1, gridZ = 1, "
                  "blockX = 32, blockY = 1, blockZ = 1", name="gpt2_train") \
        if name == "varied_grids" else _EXPORTS[name]()
    want = _findings(path, None)
    chunks: list[int] = []
    real = advice.table_chunks

    def counted(*a: object) -> object:
        got = list(real(*a))  # type: ignore[arg-type]
        chunks.append(len(got))
        return iter(got)

    monkeypatch.setattr(advice, "table_chunks", counted)
    parts: list[str] = []
    real_chunks = advice.kernel_chunks

    def watched(p: object, cols: list[str], names: object) -> object:
        parts.append("whole" if names is not None else "parts")
        return real_chunks(p, cols, names)  # type: ignore[arg-type]

    monkeypatch.setattr(advice, "kernel_chunks", watched)
    assert _findings(path, 1024) == want
    if load_nsys_sqlite(path).count("kernels") > 97:  # (read a chunk at a time, not whole)
        assert parts == ["parts"] and max(chunks) > 1


def test_every_rule_finds_something_on_some_export() -> None:
    """The comparison above is not vacuous: each rule fires on one of the exports at least."""
    fired = {rule.__name__ for path in _EXPORTS.values() for rule in _RULES
             if rule(load_nsys_sqlite(path())) is not None}
    assert fired == {rule.__name__ for rule in _RULES}


@pytest.mark.parametrize("devices", [1, 3])
def test_collectives_a_chunk_at_a_time_are_those_of_whole_columns(devices: int, monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """Communication, computation and their overlap per device (unions made on disk), and the
    per-collective rows, on a DDP rank's export (its kernels spread over three devices too)."""
    monkeypatch.setattr("nsighttk.load.sqlite_columns.CHUNK_ROWS", 97)
    path = tmp_path / "rank0.sqlite"
    shutil.copy(fixture("h200x2-ddp", "rank0.sqlite"), path)
    with sqlite3.connect(path) as con:
        con.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = deviceId + rowid % {devices}")
    con.close()
    want = collectives(load_nsys_sqlite(path))
    p = load_nsys_sqlite(path)
    p.budget = 1024
    unions: list[int] = []
    real = intervals_spilled.union_ns
    monkeypatch.setattr(intervals_spilled, "union_ns", lambda *a: unions.append(1) or real(*a))
    got = collectives(p)
    assert len(unions) == 3 * devices
    assert want.has_communication and len(want.devices) == devices
    assert got.as_dict() == want.as_dict()
    pd.testing.assert_frame_equal(got.collectives, want.collectives)
