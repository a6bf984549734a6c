"""nsys' expert rules out of core (issue 15): where the kernels or the CUDA calls do not fit in
the profile's budget, the rules read them a chunk at a time (``expert_rules_spilled``) and print
the same bytes as from whole tables, in both nsys styles, on every rules export and option."""

from __future__ import annotations

import collections
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import capture, fixture
from rules_synth import SYNTH_SPECS, make_rules_export

from nsighttk.analysis import expert_rule_queries as Q
from nsighttk.analysis import expert_rules as E
from nsighttk.analysis import expert_rules_spilled as S
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.report import rules_format as F

SYNC = fixture("h200-nsys2025.3", "rules", "sync_pitfalls.sqlite")
REAL = [SYNC, capture("streams_demo"), capture("gpt2_train"), fixture("h200x2-ddp", "rank0.sqlite")]


def _bytes(path: Path, specs: str | None, style: str, budget: int | None) -> list[str]:
    p = load_nsys_sqlite(path)
    if budget is not None:
        p.budget = budget
    results = E.run_rules(p, specs, E.read_export_facts(path), style=style, dbfile=str(path))
    return [F.render(r, fmt) for r in results for fmt in ("csv", "column")]


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """How often each out-of-core step ran."""
    seen: collections.Counter[str] = collections.Counter()
    for name in ("named_calls", "spilled_ops", "span_gaps", "span_chunks", "_sorted_rows"):
        real = getattr(S, name)

        def counted(*a: Any, __real: Any = real, __name: str = name, **k: Any) -> Any:
            seen[__name] += 1
            return __real(*a, **k)

        monkeypatch.setattr(S, name, counted)
    return seen


def _same_out_of_core(path: Path, specs: str | None, taken: collections.Counter[str]) -> None:
    p = load_nsys_sqlite(path)
    kernels, calls = p.count("kernels"), p.count("api")
    for style in (E.STYLE_2025, E.STYLE_2022):
        if specs is not None and style == E.STYLE_2022:  # (2022.4 has no process or thread options)
            specs = ",".join(s for s in specs.split(",") if "process=" not in s and "thread=" not in s)
        expected = _bytes(path, specs, style, None)
        assert not taken  # (the default budget holds these exports: in memory)
        # 8 rows at a time: every span sorted by ranges; then spans of up to half the kernels read whole
        for budget in (8 * S.OPS_ROW_BYTES, max(kernels // 2, 9) * S.OPS_ROW_BYTES):
            assert _bytes(path, specs, style, budget) == expected, (path.name, style, budget)
            assert taken["named_calls"] > 0 or calls * 64 <= budget
            assert taken["spilled_ops"] > 0 or kernels * 64 <= budget
            taken.clear()


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_rules_out_of_core_print_the_same_bytes_on_real_captures(path: Path, taken: collections.Counter[str]) -> None:
    _same_out_of_core(path, None, taken)


@pytest.mark.parametrize("seed", [0, 1])
def test_rules_out_of_core_print_the_same_bytes_with_every_option(seed: int, tmp_path: Path,
                                                                  taken: collections.Counter[str]) -> None:
    export = make_rules_export(SYNC, tmp_path / f"synth{seed}.sqlite", seed)
    _same_out_of_core(export, ",".join(SYNTH_SPECS), taken)


def _damaged(tmp_path: Path, sql: str) -> Path:
    path = tmp_path / "damaged.sqlite"
    shutil.copy(make_rules_export(SYNC, tmp_path / "synth.sqlite", 2), path)
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.commit()
    con.close()
    return path


@pytest.mark.parametrize("sql", [
    # kernels ending before they start, and long runs of equal starts and ends (ties in both orders)
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 1000 WHERE rowid % 5 = 0;",
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
], ids=["end-before-start", "equal-times", "spans-and-contexts", "unknown-names", "near-2^62", "overhead-no-thread"])
def test_rules_out_of_core_on_unusual_exports(sql: str, tmp_path: Path, taken: collections.Counter[str]) -> None:
    _same_out_of_core(_damaged(tmp_path, sql), ",".join(SYNTH_SPECS[:18]), taken)


def test_a_span_sorted_by_ranges_gives_the_in_memory_gaps() -> None:
    """A span's gaps from its starts and ends sorted a range at a time, against the in-memory
    pairing, on random operations with many equal times and operations ending before they start."""
    rng = np.random.default_rng(7)
    for n, rows in ((1, 8), (2, 8), (50, 8), (400, 16), (3000, 64)):
        start = rng.integers(1, 40, n) * 1000 + rng.integers(0, 3, n)
        end = start + rng.integers(-200, 5000, n)
        ctx = rng.integers(-1, 4, n).astype(np.int64)
        _check_gaps(start, end, ctx, rows)
    # clusters of operations ending together (each gap after an end shared by about 20, of random
    # contexts), three clusters to a sorted range: the context is the last of them in order
    cluster = rng.integers(0, 150, 3000)
    start = cluster * 10_000 + rng.integers(0, 100, 3000)
    _check_gaps(start, cluster * 10_000 + 5_000, rng.integers(0, 1000, 3000), 64)


def _check_gaps(start: np.ndarray, end: np.ndarray, ctx: np.ndarray, rows: int) -> None:
    sp = S.Spill(["start", "end", "ctx"])
    for a in range(0, len(start), 37):
        sp.append({"start": start[a:a + 37], "end": end[a:a + 37], "ctx": ctx[a:a + 37]})
    for threshold in (0, 100, 2000):
        want = Q._span_gaps(start, end, ctx, threshold)
        got = S.span_gaps(sp, threshold, rows, lambda s, e, c, t=threshold: Q._span_gaps(s, e, c, t))
        for w, g in zip(want, got, strict=True):
            assert np.array_equal(w, g), (len(start), rows, threshold)
    sp.close()


def test_chunks_below_the_threshold_are_counted_a_chunk_of_operations_at_a_time() -> None:
    """A span's chunk coverage from its operations on disk, 37 at a time, against the in-memory
    coverage, on random overlapping operations (some ending before they start; on a grid of the
    chunks' size, so that many start or end on a chunk's bound)."""
    rng = np.random.default_rng(3)
    for n, grid in ((1, 1), (5, 1000), (300, 1), (300, 1000), (2000, 1000)):
        start = 10**9 + rng.integers(0, 100, n) * grid + (rng.integers(0, 10**4, n) if grid == 1 else 0)
        end = start + rng.integers(-3, 30, n) * grid
        sp = S.Spill(["start", "end", "ctx"])
        for a in range(0, n, 37):
            sp.append({"start": start[a:a + 37], "end": end[a:a + 37], "ctx": np.zeros(len(start[a:a + 37]), np.int64)})
        first, last = int(start.min()), int(end.max())
        for chunks, threshold in ((1, 101), (7, 50), (30, 90), ((last - first) // grid or 1, 101), (1000, 101)):
            want = Q._low_chunks(pd.DataFrame({"start": start, "end": end}), chunks, threshold)
            assert S.span_chunks(sp, first, last, chunks, threshold) == want, (n, chunks, threshold)
        sp.close()


def test_spans_take_the_first_operation_ending_last_across_chunks() -> None:
    """Each process and device's first start, last end and the context of the first operation
    ending last, from chunks of operations, against nsys' grouping of them all at once; the last
    end tied across chunks."""
    rng = np.random.default_rng(5)
    for n in (1, 10, 400):
        c = {"start": rng.integers(1, 50, n), "pid": rng.integers(1, 3, n), "dev": rng.integers(0, 2, n),
             "ctx": rng.integers(1, 9, n)}
        c["end"] = 50 + rng.integers(0, 3, n) * 10  # (the last end shared by many operations)
        ops = pd.DataFrame({"start": c["start"], "end": c["end"], "pid": pd.array(c["pid"], dtype="Int64"),
                            "device_id": pd.array(c["dev"], dtype="Int64"),
                            "context_id": pd.array(c["ctx"], dtype="Int64")})
        want = Q._latest_end_rows(ops).sort_values(["device_id", "pid"]).reset_index(drop=True)
        for step in (1, 3, n):
            got = S._spans(iter([{k: v[a:a + step] for k, v in c.items()} for a in range(0, n, step)]))
            assert got[["device_id", "pid", "first", "last", "context_id"]].equals(
                want[["device_id", "pid", "first", "last", "context_id"]].astype(
                    {"first": "int64", "last": "int64"})), (n, step)


def test_the_spans_on_disk_follow_the_export_facts_asked_with(tmp_path: Path, taken: collections.Counter[str]) -> None:
    """One profile asked twice, without the export's facts (no profiling overheads) then with
    them: each answer is the in-memory one for those facts (the spans on disk are not reused)."""
    export = make_rules_export(SYNC, tmp_path / "synth.sqlite", 0)
    specs = "gpu_gaps:gap=0:rows=-1,gpu_time_util:chunks=97:rows=-1"
    facts = E.read_export_facts(export)
    memory = load_nsys_sqlite(export)
    want = [[F.render(r, "csv") for r in E.run_rules(memory, specs, f)] for f in (None, facts)]
    assert want[0] != want[1]  # (the overheads count as GPU activity)
    small = load_nsys_sqlite(export)
    small.budget = 8 * S.OPS_ROW_BYTES
    assert [[F.render(r, "csv") for r in E.run_rules(small, specs, f)] for f in (None, facts)] == want
    assert taken["spilled_ops"] == 4
