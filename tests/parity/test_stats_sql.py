"""The CUDA reports of ``nsighttk stats`` as SQL over the engine: out of core (a DuckDB memory
limit of 16 MB, spilling to disk) they print the same bytes and notes on unusual and damaged
exports; the statistics' exact parts; SQLite's rounding."""

from __future__ import annotations

import math
import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import CAPTURES, capture, mutate

from nsighttk import engine, settings
from nsighttk.analysis.nsys import gpu as cuda
from nsighttk.analysis.nsys.base import sql_round
from nsighttk.analysis.nsys.result import sql_round_value
from nsighttk.errors import NsightTKError
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import Profile, conform
from nsighttk.report import nsys_format

REPORTS = ["cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_kern_gb_sum", "cuda_gpu_mem_time_sum",
           "cuda_gpu_mem_size_sum", "cuda_gpu_sum"]


#: Exports unusual but sound.
UNUSUAL = [
    # names with CSV and table metacharacters, an API name with a version suffix, an empty kernel name
    ["UPDATE StringIds SET value = 'k,\"q\"' || value WHERE id IN (SELECT demangledName FROM "
     "CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1)",
     "UPDATE StringIds SET value = '' WHERE id IN (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL "
     "ORDER BY rowid DESC LIMIT 1)"],
    # ranges never closed; a range named by its own text; a domain created for the ranges
    ["UPDATE NVTX_EVENTS SET \"end\" = NULL WHERE rowid IN (SELECT rowid FROM NVTX_EVENTS "
     "WHERE eventType = 59 LIMIT 2)",
     "UPDATE NVTX_EVENTS SET textId = NULL, text = 'own, text' WHERE rowid IN (SELECT rowid FROM NVTX_EVENTS "
     "WHERE eventType = 59 ORDER BY rowid DESC LIMIT 1)",
     "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) SELECT 0, NULL, 75, "
     "'dom', globalTid, 7 FROM NVTX_EVENTS WHERE eventType = 59 LIMIT 1",
     "UPDATE NVTX_EVENTS SET domainId = 7 WHERE rowid IN (SELECT rowid FROM NVTX_EVENTS WHERE eventType = 59 "
     "LIMIT 3)"],
    # a copy of a kind the export's enum does not list (dropped, as nsys), copies without a byte count column
    ["UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 99 WHERE rowid = (SELECT min(rowid) FROM "
     "CUPTI_ACTIVITY_KIND_MEMCPY)"],
    ["ALTER TABLE CUPTI_ACTIVITY_KIND_MEMSET DROP COLUMN bytes"],
    # no tables for some reports: empty reports and their reasons
    ["DROP TABLE NVTX_EVENTS", "DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY", "DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET"],
    ["DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL", "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME"],
    # all durations zero: Time (%) has no value
    ["UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = start"],
    # the CSV quoting of nsys 2022.4 (RFC 4180) chosen by the export's version
    ["UPDATE META_DATA_EXPORT SET value = '2022.4.2.1' WHERE name = 'EXPORT_PRODUCT_VERSION'",
     "UPDATE StringIds SET value = 'k\"q' || value WHERE id IN (SELECT demangledName FROM "
     "CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1)"],
]
UNUSUAL_IDS = ["names", "nvtx", "copy-kind", "no-bytes", "no-tables", "empty", "zero", "quoting-2022"]



#: Exports the engine drops rows of (with a note), reads otherwise, or refuses.
DAMAGED = [
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = start - 1 WHERE rowid = 1",
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = 1",
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = 'late' WHERE rowid = 1",
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 1.5 WHERE rowid = 1",
    "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET bytes = -1 WHERE rowid = 1",
    "UPDATE CUPTI_ACTIVITY_KIND_MEMSET SET bytes = 'x' WHERE rowid = 1",
    "UPDATE NVTX_EVENTS SET start = 'x' WHERE rowid = (SELECT min(rowid) FROM NVTX_EVENTS WHERE eventType = 59)",
    "UPDATE NVTX_EVENTS SET \"end\" = 0 WHERE rowid = (SELECT min(rowid) FROM NVTX_EVENTS WHERE eventType = 59)",
    "UPDATE NVTX_EVENTS SET textId = 999999999 WHERE rowid = (SELECT min(rowid) FROM NVTX_EVENTS "
    "WHERE eventType = 59)",
    f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = start + {2**53} WHERE rowid = 1",
    "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName",
    "DELETE FROM META_DATA_EXPORT",
]
DAMAGED_IDS = ["ends-early", "text-start", "text-end", "real-start", "negative-bytes", "text-bytes",
               "nvtx-text-start", "nvtx-ends-early", "unknown-text-id", "beyond-2^53", "no-demangled", "no-meta-rows"]



@pytest.fixture
def tiny_memory() -> object:
    """DuckDB's memory limit at 16 MB for the engines made within the test."""
    before = settings.current()
    settings.use(before.replace(memory_mb=16))
    yield
    settings.use(before)


def _outcome(path: Path) -> tuple[object, list[str]]:
    """Every CUDA summary as CSV and table text (or the error's type and line), and the notes."""
    from nsighttk.commands import stats

    p = load_nsys_sqlite(path)
    try:
        out = []
        for name in REPORTS:
            res = getattr(cuda, name)(p)
            out += [stats.render_report(res, "csv"), stats.render_report(res, "table"), *res.notes]
        return out, sorted(p.notes)
    except NsightTKError as ex:
        return (type(ex).__name__, str(ex)), sorted(p.notes)


@pytest.mark.parametrize("sql", [*UNUSUAL, *([s] for s in DAMAGED)], ids=UNUSUAL_IDS + DAMAGED_IDS)
def test_unusual_and_damaged_exports_out_of_core(sql: list[str], tmp_path: Path,
                                                 request: pytest.FixtureRequest) -> None:
    """Open ranges, names with metacharacters, dropped rows (noted with their number), values
    beyond 2^53, missing tables and columns: in 16 MB of DuckDB memory, the same bytes, notes and
    errors."""
    path = mutate(tmp_path, *sql)
    want = _outcome(path)
    request.getfixturevalue("tiny_memory")
    assert _outcome(path) == want


def _trace(path: Path, chunk_rows: int) -> list[str]:
    """The trace's CSV a chunk at a time: the header and each chunk's rows (or the note)."""
    res = cuda.cuda_gpu_trace(load_nsys_sqlite(path), chunk_rows)
    if res.empty:
        return [res.name, *res.notes]
    return [nsys_format.to_csv(f) for f in res.frames()]


@pytest.mark.parametrize("chunk_rows", [7, 65_536])
def test_the_gpu_trace_in_chunks_and_out_of_core(chunk_rows: int, tmp_path: Path,
                                                  request: pytest.FixtureRequest) -> None:
    """Chunks of 7 rows print the rows of one chunk (ties at one start: kernels, then copies, each
    in the export's order), and so they do in 16 MB of DuckDB memory."""
    kernel = "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET"
    ties = mutate(tmp_path, f"{kernel} start = 77, \"end\" = 177 WHERE rowid IN (2, 9)",
                  "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = 77, \"end\" = 97 WHERE rowid = 3",
                  f"{kernel} start = 78, \"end\" = 98 WHERE rowid = 4")
    paths = [*(capture(c) for c in CAPTURES), ties]
    whole = {p: _trace(p, 1 << 30) for p in paths}
    request.getfixturevalue("tiny_memory")
    for p in paths:
        got = _trace(p, chunk_rows)
        if whole[p][0] == "cuda_gpu_trace":
            assert got == whole[p]
            continue
        assert len(got) > 1 or chunk_rows > 7
        header = whole[p][0].split("\n", 1)[0]
        assert all(g.split("\n", 1)[0] == header for g in got)
        assert [len(g.splitlines()) - 1 for g in got[:-1]] == [chunk_rows] * (len(got) - 1)
        assert "".join(g.split("\n", 1)[1] for g in got) == whole[p][0].split("\n", 1)[1]
    ordered = _trace(ties, 1 << 30)[0].splitlines()
    at_77 = [r.split(",")[-1] for r in ordered[1:] if r.startswith("77,")]
    assert len(at_77) == 3 and at_77[-1].startswith("[CUDA memcpy")  # (kernels first, then the copy)


@pytest.mark.parametrize("seed", range(3))
def test_statistics_equal_pythons_exactly(seed: int) -> None:
    """Count, total, extremes, middle values and standard deviation from the SQL aggregates against
    exact arithmetic on the same values: odd and even counts, one value, values near 2^62 (totals
    past int64, exact averages and medians)."""
    from fractions import Fraction

    rng = np.random.default_rng(seed)
    groups = {f"k{i}": rng.integers(0, 10**int(rng.integers(1, 12)), int(rng.integers(1, 60))).tolist()
              for i in range(12)}
    groups["big"] = [2**62 - int(x) for x in rng.integers(0, 1000, 5)]
    groups["one"] = [7]
    names = [n for n, v in groups.items() for _ in v]
    durations = np.array([d for v in groups.values() for d in v], dtype=np.int64)
    start = np.arange(len(durations), dtype=np.int64) * 10
    p = Profile(kernels=conform("kernels", pd.DataFrame({
        "start_ns": start, "end_ns": start + durations, "duration_ns": durations, "name": names,
        "name_id": [list(groups).index(n) for n in names]})))
    eng = engine.of(p).need({"kernels": ["name", "duration_ns"]})
    got = cuda._groups(eng, f"SELECT name, {cuda._aggregates('duration_ns')} FROM kernels GROUP BY name", 1)
    assert len(got) == len(groups)
    for (name,), g in got:
        v = sorted(groups[name])
        n = len(v)
        assert (g.n, g.total, g.min, g.max) == (n, sum(v), v[0], v[-1])
        assert g.med == Fraction(v[(n - 1) // 2] + v[n // 2], 2) and g.avg == Fraction(sum(v), n)
        var = sum((Fraction(x) - Fraction(sum(v), n)) ** 2 for x in v) / (n - 1) if n > 1 else Fraction(0)
        assert g.stddev == math.sqrt(var)


@pytest.mark.parametrize("x", [0.05, 0.15, 0.25, 2.5, -2.5, 1234.45, 1e-7, 12345678.95, math.inf, math.nan, -0.04,
                               99.95, -99.95, 0.95, 5e-324, 1.5e16, 0.0, -0.0, 7.0])
def test_sql_round_value_is_decimal_half_up(x: float) -> None:
    want = x if not math.isfinite(x) else float(Decimal(repr(x)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    assert repr(sql_round_value(x)) == repr(want) == repr(float(sql_round(np.array([x]))[0]))


def test_sql_round_value_on_many_values() -> None:
    rng = random.Random(3)
    for _ in range(20_000):
        x = rng.choice([rng.uniform(-1e6, 1e6), rng.randint(0, 10**9) / rng.choice([7, 20, 1000]),
                        round(rng.uniform(-100, 100), 2)])
        for digits in (1, 3):
            q = Decimal(1).scaleb(-digits)
            assert sql_round_value(x, digits) == float(Decimal(repr(x)).quantize(q, rounding=ROUND_HALF_UP))


