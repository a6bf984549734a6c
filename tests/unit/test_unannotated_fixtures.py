"""The captures of unannotated programs (``tests/fixtures/*-unannotated/``, made by
``tests/gpu/capture_unannotated.sh``) load, ``nsighttk analyze --json`` reads each of them, and each
program's ``truth.json`` (what the program printed) agrees with what its capture records itself."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_exit, fixture_script

from nsighttk import api
from nsighttk.cli import cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FOLDERS = sorted(FIXTURES.glob("*-unannotated"))
CAPTURES = sorted(p for d in FOLDERS for p in d.rglob("*") if p.name.endswith((".sqlite", ".json.gz")))


def _truth(capture: Path) -> dict:
    name = capture.name.split(".")[0]
    path = capture.with_name(f"{name}.truth.json")
    if not path.exists():  # one truth for the ranks of one run: rank0.sqlite -> ddp.truth.json
        path = capture.with_name("ddp_kineto.truth.json" if capture.name.endswith(".json.gz") else "ddp.truth.json")
    return json.loads(path.read_text())


def _step_ranges(export: Path) -> list[str]:
    """The names of the NVTX ranges ``step N`` in an nsys export (none where nothing used NVTX)."""
    con = sqlite3.connect(f"file:{export}?mode=ro&immutable=1", uri=True)
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'NVTX_EVENTS'").fetchone():
            return []
        rows = con.execute("SELECT coalesce(n.text, s.value) FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS s "
                           "ON n.textId = s.id WHERE n.end IS NOT NULL").fetchall()
    finally:
        con.close()
    return [r[0] for r in rows if r[0] is not None and r[0].startswith("step ")]


def test_the_captures_are_there() -> None:
    assert FOLDERS, "no tests/fixtures/*-unannotated folder"
    kinds = {p.name.endswith(".sqlite") for p in CAPTURES}
    assert kinds == {True, False} and len(CAPTURES) >= 10, CAPTURES


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_capture_loads_and_analyze_reads_it(capture: Path) -> None:
    profile = api.load(capture)
    assert profile.count("kernels") > 0
    res = CliRunner().invoke(cli, ["analyze", str(capture), "--json"])
    assert_exit(res, 0)
    assert json.loads(res.stdout)
    truth = _truth(capture)
    assert truth["world_size"] >= 1 and truth["command"]


@pytest.mark.parametrize("capture", [p for p in CAPTURES if p.name.endswith(".sqlite")],
                         ids=lambda p: str(p.relative_to(FIXTURES)))
def test_nvtx_step_ranges_are_the_printed_iterations(capture: Path) -> None:
    """A ``--nvtx`` capture has one range ``step N`` per iteration the program printed, in order; the
    unannotated ones have none."""
    steps = _step_ranges(capture)
    truth = _truth(capture)
    if "nvtx" in capture.name:
        assert steps == [f"step {i}" for i in range(truth["iters"])]
    else:
        assert steps == []


def test_trimmer_keeps_only_the_api_calls_of_gpu_work(tmp_path: Path) -> None:
    """``trim_export.py --work-api-only`` (how these fixtures were trimmed) keeps a CUDA API call exactly
    when a kernel, copy, memset or synchronization has its correlation id, and leaves the rest alone."""
    trim = fixture_script("trim_export.py")
    src = FIXTURES / "h200-nsys2025.3" / "streams_demo.sqlite"
    out = tmp_path / "out.sqlite"
    trim.trim(src, out, work_api_only=True)

    def rows(path: Path, sql: str) -> list[tuple]:
        con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()

    work = ("SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION SELECT correlationId FROM "
            "CUPTI_ACTIVITY_KIND_MEMCPY UNION SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET UNION "
            "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    api = "SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME"
    kept, before = rows(out, api + " ORDER BY start, correlationId"), rows(src, api)
    assert kept == rows(src, f"{api} WHERE correlationId IN ({work}) ORDER BY start, correlationId")
    assert 0 < len(kept) < len(before)
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_MEMCPY"):
        assert rows(out, f"SELECT * FROM {table} ORDER BY start") == rows(src, f"SELECT * FROM {table} ORDER BY start")
