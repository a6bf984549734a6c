"""nsys' expert rules as SQL over the engine (``expert_rule_queries``), beyond the byte parity of
tests/parity/test_rules.py: the same bytes where DuckDB has 32 MB (real captures) and works out of core
(an export of 100k kernels), nsys 2022.4's bytes on unusual exports (ties, many spans, unknown
names, times near 2^62, overheads of no thread), the rules of a lazy subset of an export (the
steady state ``analyze`` reads) equal to those of the same rows held in memory, and the chunks'
running time of overlapping operations.

(32 MB: DuckDB's own floor for these queries is above 16 MB, whatever the rows: at 16 MB its hash
joins and aggregates fail to allocate on exports of a thousand rows.)"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import capture, fixture, reference_nsys
from rules_synth import SYNTH_SPECS, make_rules_export
from synth import SynthSpec, make_export

from nsighttk import engine, settings
from nsighttk.analysis.nsys import rule_queries as Q
from nsighttk.analysis.nsys import rules as E
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import TABLES, Profile
from nsighttk.report import rules_format as F
from nsighttk.subset import subset

SYNC = fixture("h200-nsys2025.3", "rules", "sync_pitfalls.sqlite")
REAL = [SYNC, capture("streams_demo"), capture("gpt2_train"), fixture("h200x2-ddp", "rank0.sqlite")]


def _bytes(path: Path, specs: str | None, style: str, profile: Profile | None = None) -> list[str]:
    p = load_nsys_sqlite(path) if profile is None else profile
    results = E.run_rules(p, specs, E.read_export_facts(path), style=style, dbfile=str(path))
    return [F.render(r, fmt) for r in results for fmt in ("csv", "column")]


def _small_engine(monkeypatch: pytest.MonkeyPatch, mb: int | None) -> None:
    """DuckDB's memory limit for the engines made from now on: ``mb`` MB (None: the default)."""
    if mb is None:
        monkeypatch.delenv("NSIGHTTK_MEMORY_MB", raising=False)
    else:
        monkeypatch.setenv("NSIGHTTK_MEMORY_MB", str(mb))
    settings.use(None)


def _same_in_32_mb(path: Path, specs: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    for style in (E.STYLE_2025, E.STYLE_2022):
        if specs is not None and style == E.STYLE_2022:  # (2022.4 has no process or thread options)
            specs = ",".join(s for s in specs.split(",") if "process=" not in s and "thread=" not in s)
        expected = _bytes(path, specs, style)
        _small_engine(monkeypatch, 32)
        assert engine.of(Profile()).rows("SELECT current_setting('memory_limit')") == [("30.5 MiB",)]
        assert _bytes(path, specs, style) == expected, (path.name, style)
        _small_engine(monkeypatch, None)


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_rules_in_32_mb_print_the_same_bytes_on_real_captures(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _same_in_32_mb(path, None, monkeypatch)


def test_rules_out_of_core_print_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """100k kernels and 120k calls in 32 MB: DuckDB writes part of its work to disk, and every
    rule prints what it prints in memory (every row, every chunk)."""
    export = make_export(capture("streams_demo"), tmp_path / "mid.sqlite",
                         SynthSpec(kernels=100_000, runtime=120_000, memcpys=2000, memsets=500))
    specs = "cuda_memcpy_async:rows=-1,cuda_memcpy_sync:rows=-1,cuda_memset_sync:rows=-1,cuda_api_sync:rows=-1," \
            "gpu_gaps:gap=0:rows=-1,gpu_time_util:threshold=101:chunks=1000:rows=-1"
    expected = _bytes(export, specs, E.STYLE_2025)
    _small_engine(monkeypatch, 32)
    p = load_nsys_sqlite(export)
    spilled = 0
    for spec in specs.split(","):
        expected_one, expected = expected[:2], expected[2:]
        assert _bytes(export, spec, E.STYLE_2025, p) == expected_one, spec
        spilled = max(spilled, engine.of(p).rows("SELECT sum(temporary_storage_bytes) FROM duckdb_memory()")[0][0])
    assert spilled > 0


def _damaged(tmp_path: Path, sql: str) -> Path:
    path = tmp_path / "damaged.sqlite"
    shutil.copy(make_rules_export(SYNC, tmp_path / "synth.sqlite", 2), path)
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.commit()
    con.close()
    return path


@pytest.mark.nsys2022
@pytest.mark.parametrize("sql", [
    # long runs of equal starts and ends (ties in both orders)
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = (start / 100000000) * 100000000,"
    " end = (start / 100000000) * 100000000 + 5000000 WHERE rowid % 3 != 0;",
    # kernels of another process and device, and of another context
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET globalPid = globalPid + (1 << 24), deviceId = 1 WHERE rowid % 4 = 1;"
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET contextId = contextId + 1 WHERE rowid % 6 = 2;",
    # calls whose name id names nothing
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 999999999 WHERE rowid % 7 = 3;",
    # half the kernels near 2^62 ns: the chunks' running time past what an int64 running sum holds
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 4611686018427387904 + rowid * 1000,"
    " end = 4611686018427387904 + rowid * 1000 + 500 WHERE rowid % 2 = 0;",
    # profiling overheads of no thread (of no process: nsys' join drops them)
    "UPDATE PROFILER_OVERHEAD SET globalTid = NULL WHERE rowid % 2 = 0;",
], ids=["equal-times", "spans-and-contexts", "unknown-names", "near-2^62", "overhead-no-thread"])
def test_rules_on_unusual_exports_equal_nsys_2022(sql: str, tmp_path: Path) -> None:
    exe = reference_nsys()
    if exe is None:
        pytest.skip("reference nsys 2022.4 not installed (run tests/tools/nsys2022.sh)")
    export = _damaged(tmp_path, sql)
    legacy = {s.name: s.legacy_name for s in E.RULES}
    specs = [legacy[s.split(":")[0]] + s[len(s.split(":")[0]):] for s in SYNTH_SPECS[:18]]
    subprocess.run([exe, "analyze", "-r", ",".join(specs), "-f", "csv", "-o", str(tmp_path / "nsys"),
                    "--force-overwrite", "true", str(export)], check=True, capture_output=True)
    results = E.run_rules(load_nsys_sqlite(export), ",".join(specs), E.read_export_facts(export), style=E.STYLE_2022)
    found = {r.file_tag: (0 if r.frame is None else len(r.frame)) for r in results}
    assert found["gpu-starv_gap=0_rows=-1"] > 10 and found["cuda-sync-memcpy_rows=-1"] > 10  # (the data is there)
    for r in results:
        ref = tmp_path / f"nsys_{r.file_tag}.csv"
        assert F.render(r, "csv") == (ref.read_text() if ref.exists() else ""), r.file_tag


def test_the_export_facts_asked_with_are_the_ones_used(tmp_path: Path) -> None:
    """One profile asked without the export's facts (no profiling overheads, no copy devices),
    then with them, then without again: each answer is that of a fresh profile."""
    export = make_rules_export(SYNC, tmp_path / "synth.sqlite", 0)
    specs = "gpu_gaps:gap=0:rows=-1,gpu_time_util:chunks=97:rows=-1,cuda_memcpy_sync:rows=-1"
    facts = E.read_export_facts(export)
    want = [[F.render(r, "csv") for r in E.run_rules(load_nsys_sqlite(export), specs, f)] for f in (None, facts)]
    assert want[0][0] != want[1][0] and want[0][2] != want[1][2]  # (overheads are GPU activity; same-device copies)
    p = load_nsys_sqlite(export)
    assert [[F.render(r, "csv") for r in E.run_rules(p, specs, f)] for f in (None, facts, None)] == [*want, want[0]]


def test_the_rules_of_a_lazy_subset_are_those_of_its_rows(tmp_path: Path) -> None:
    """A subset of an export (as ``analyze`` cuts the steady state) is read by the engine through
    its parts: the rules see its rows, as in a profile holding those rows."""
    export = make_rules_export(SYNC, tmp_path / "synth.sqlite", 1)
    p = load_nsys_sqlite(export)
    rng = np.random.default_rng(0)
    keep = {t: rng.random(p.count(t)) < 0.6 for t in ("kernels", "memcpy", "memset", "api")}
    lazy = subset(p, keep)
    held = Profile(**{t: p.table(t)[keep[t]].reset_index(drop=True) if t in keep else p.table(t) for t in TABLES},
                   meta=dict(p.meta))
    specs = ",".join(s for s in SYNTH_SPECS if "nvtx=" not in s)
    facts = E.read_export_facts(export)
    got = [F.render(r, "csv") for r in E.run_rules(lazy, specs, facts)]
    assert got == [F.render(r, "csv") for r in E.run_rules(held, specs, facts)]
    assert got != [F.render(r, "csv") for r in E.run_rules(p, specs, facts)]  # (other rows: other findings)
    assert engine.of(lazy).rows("SELECT count(*) FROM kernels") == [(int(keep["kernels"].sum()),)]


@pytest.mark.parametrize("grid", [1, 10])
def test_chunks_count_overlapping_operations_twice(grid: int) -> None:
    """Each chunk's running time is the operations' time inside it, overlapping ones added up and
    those ending before they start summed as nsys' SQL sums them; with the number overlapping it
    (on a grid of 10 ns, many start or end on a chunk's bound)."""
    rng = np.random.default_rng(0)
    s = 1 + rng.integers(0, 1000 // grid, 300) * grid
    e = s + rng.integers(0, 100 // grid, 300) * grid
    e[:5] = s[:5] - 3 * grid  # operations ending before they start
    e[5] = e.max() + 50  # (the last end: a span of known bounds)
    kernels = pd.DataFrame({"start_ns": s, "end_ns": e, "pid": 7, "device_id": 0, "context_id": 1})
    inp = Q.rule_input(Profile(kernels=kernels), None, None)
    first, last = int(s.min()), int(e.max())
    for n in (1, 7, 30, (last - first) // 10, 1000):
        got = Q.chunk_use(inp, n)
        size = -(-(last - first) // n)
        want = []
        for r in range(n):
            a, b = first + r * size, min(first + r * size + size, last)
            if a < b:
                inside = (s < b) & (e > a)
                want.append((0, 7, 1, r, a, b, int((np.minimum(e[inside], b) - np.maximum(s[inside], a)).sum()),
                             int(inside.sum())))
        assert got == want, n
