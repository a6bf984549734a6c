"""The small-export path of ``nsighttk stats`` (issue 15): summaries of small sound exports in
plain Python, without numpy, byte for byte what the column engine prints; anything unusual goes
to the engine."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES, capture, mutate
from synth import SynthSpec, make_export

from nsighttk.analysis import nsys_small, pystats
from nsighttk.analysis.groupstats import group_stats
from nsighttk.analysis.nsys_report_base import sql_round
from nsighttk.commands import stats as st
from nsighttk.errors import NsightTKError
from nsighttk.report import nsys_cells

ROOT = Path(__file__).resolve().parent.parent
SMALL = list(nsys_small.SMALL_REPORTS)
EXPORTS = sorted(FIXTURES.rglob("*.sqlite"))


def engine(path: Path, names: list[str], fmt: str) -> list[st.Output]:
    return st._run_engine(st.Options(path, ",".join(names), fmt), names, {}, path)


def assert_same(path: Path, names: list[str] = SMALL) -> None:
    """The small path takes ``path`` and prints what the engine prints, in every format."""
    small = nsys_small.small_summaries(path, names, limit=10**9)
    assert small is not None, f"{path}: the small path refused a sound export"
    reports, version = small
    for fmt in ("csv", "table", "json"):
        with nsys_cells.csv_quoting_of(version):
            got = [nsys_cells.render_rows(r.columns, r.rows, nsys_small.TEXT_COLUMNS, fmt) for r in reports]
        want = engine(path, names, fmt)
        for r, text, w in zip(reports, got, want, strict=True):
            assert text == w.text, (path.name, r.name, fmt)
            assert (r.notes if not text else []) == (w.notes if not w.text else []), (path.name, r.name)


@pytest.mark.parametrize("path", EXPORTS, ids=[p.relative_to(FIXTURES).as_posix() for p in EXPORTS])
def test_small_path_prints_what_the_engine_prints(path: Path) -> None:
    assert_same(path)


@pytest.mark.parametrize("seed", [1, 2])
def test_small_path_on_synthetic_exports(seed: int, tmp_path: Path) -> None:
    """Thousands of kernels, copies, memsets and nested ranges (large groups: the pairwise sum)."""
    path = make_export(capture("streams_demo"), tmp_path / "s.sqlite",
                       SynthSpec(kernels=3000, runtime=5000, memcpys=400, memsets=60, iterations=30, seed=seed))
    assert_same(path)


#: Exports unusual but sound: the small path and the engine print the same bytes.
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


@pytest.mark.parametrize("sql", UNUSUAL, ids=UNUSUAL_IDS)
def test_small_path_on_unusual_but_sound_exports(sql: list[str], tmp_path: Path) -> None:
    assert_same(mutate(tmp_path, *sql))


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


@pytest.mark.parametrize("sql", DAMAGED, ids=DAMAGED_IDS)
def test_unusual_exports_go_to_the_engine(sql: str, tmp_path: Path) -> None:
    """What the engine drops with a note, reads otherwise, or refuses: the small path declines it
    (except where nothing changes: an export without META rows has no version, as in the engine)."""
    path = mutate(tmp_path, sql)
    small = nsys_small.small_summaries(path, SMALL, limit=10**9)
    if "META_DATA_EXPORT" in sql:
        assert small is not None and small[1] is None
        assert_same(path)
        return
    assert small is None, sql
    # and the command still prints the engine's reports, or refuses the file as the engine does
    try:
        want = engine(path, SMALL, "csv")
    except NsightTKError as ex:
        with pytest.raises(type(ex)):
            st.run(st.Options(path, ",".join(SMALL), "csv"))
        return
    assert [o.text for o in st.run(st.Options(path, ",".join(SMALL), "csv"))] == [o.text for o in want]


def test_other_reports_and_large_exports_go_to_the_engine(tmp_path: Path) -> None:
    assert nsys_small.small_summaries(capture("streams_demo"), ["cuda_gpu_trace"]) is None
    assert nsys_small.small_summaries(capture("streams_demo"), ["nvtx_sum", "nvtx_kern_sum"]) is None
    assert nsys_small.small_summaries(capture("streams_demo"), SMALL, limit=10) is None
    assert nsys_small.small_summaries(capture("streams_demo"), SMALL) is not None
    for name, data in [("x.json", b"{}"), ("x.sqlite", b"not sqlite"), ("x.nsys-rep", b"SQLite format 3\x00")]:
        (tmp_path / name).write_bytes(data)
        assert nsys_small.small_summaries(tmp_path / name, SMALL) is None


def test_stats_cli_on_a_small_export_never_imports_numpy(tmp_path: Path) -> None:
    code = ("import sys, runpy; sys.argv = ['nsighttk'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('nsighttk', run_name='__main__')\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "print('numpy' in sys.modules, file=sys.stderr)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args in (["stats"], ["stats", "-r", ",".join(SMALL), "-f", "json", "-o", str(tmp_path / "o")]):
        out = subprocess.run([sys.executable, "-c", code, *args, str(capture("streams_demo"))],
                             capture_output=True, text=True, env=env, check=True)
        assert out.stderr.strip().splitlines()[-1] == "False", out.stderr
    assert len(list(tmp_path.glob("o_*.json"))) == len(SMALL)
    # a report the small path lacks: numpy is imported, and the output is still right
    out = subprocess.run([sys.executable, "-c", code, "stats", "-r", "cuda_gpu_trace", str(capture("add"))],
                         capture_output=True, text=True, env=env, check=True)
    assert out.stderr.strip().splitlines()[-1] == "True" and "Duration" in out.stdout


def test_cli_output_is_the_engines_in_every_format(tmp_path: Path) -> None:
    """Through the command (titles, SKIPPED reasons, -o files): same as the engine's."""
    path = capture("add")  # no NVTX: one SKIPPED report
    for fmt in ("csv", "table", "json"):
        cli = st.run(st.Options(path, None, fmt))
        want = engine(path, list(st.parse_reports(None)), fmt)
        assert [(o.report, o.title, o.text, o.notes if not o.text else []) for o in cli] == \
            [(o.report, o.title, o.text, o.notes if not o.text else []) for o in want]
    files = st.run(st.Options(path, "cuda_api_sum,nvtx_sum", "csv", str(tmp_path / "r")))
    assert (tmp_path / "r_cuda_api_sum.csv").read_text() == engine(path, ["cuda_api_sum"], "csv")[0].text
    assert (tmp_path / "r_nvtx_sum.csv").read_text() == "" and not files[1].rows


# ------------------------------------------------------------------------------ statistics

def _groups(rng: random.Random) -> dict[int, list[int]]:
    out = {}
    for k in range(rng.randint(1, 6)):
        n = rng.choice([1, 2, 3, 7, 8, 9, 127, 128, 129, 300, 1000, 4099])
        top = 10 ** rng.randint(0, 12)
        out[k * 3] = [rng.randint(0, top) for _ in range(n)]
    return out


@pytest.mark.parametrize("seed", range(40))
def test_python_statistics_equal_numpys_to_the_bit(seed: int) -> None:
    groups = _groups(random.Random(seed))
    keys = np.concatenate([np.full(len(v), k) for k, v in groups.items()])
    values = np.concatenate([np.array(v, dtype=np.int64) for v in groups.values()])
    perm = np.random.default_rng(seed).permutation(len(keys))
    want = group_stats(keys[perm], values[perm])
    got = pystats.group_stats(groups)  # type: ignore[arg-type]
    assert [g.key for g in got] == want.key.tolist()
    assert [g.count for g in got] == want.count.tolist() and [g.total for g in got] == want.total.tolist()
    assert [g.min for g in got] == want.min.tolist() and [g.max for g in got] == want.max.tolist()
    for field in ("avg", "med", "stddev"):
        assert [getattr(g, field).hex() for g in got] == [float(x).hex() for x in getattr(want, field)], field


def test_python_statistics_refuse_what_numpy_computes_exactly() -> None:
    with pytest.raises(pystats.Inexact):
        pystats.group_stats({0: [2**53, 1]})
    with pytest.raises(pystats.Inexact):
        pystats.group_stats({0: [2**52, 2**52]})  # the total reaches 2^53


@pytest.mark.parametrize("x", [0.05, 0.15, 0.25, 2.5, -2.5, 1234.45, 1e-7, 12345678.95, math.inf, math.nan, -0.04,
                               99.95, -99.95, 0.95, 5e-324, 1.5e16, 0.0, -0.0, 7.0])
def test_sql_round_value_is_decimal_half_up(x: float) -> None:
    want = x if not math.isfinite(x) else float(Decimal(repr(x)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    assert repr(pystats.sql_round_value(x)) == repr(want) == repr(float(sql_round(np.array([x]))[0]))


def test_sql_round_value_on_many_values() -> None:
    rng = random.Random(3)
    for _ in range(20_000):
        x = rng.choice([rng.uniform(-1e6, 1e6), rng.randint(0, 10**9) / rng.choice([7, 20, 1000]),
                        round(rng.uniform(-100, 100), 2)])
        for digits in (1, 3):
            q = Decimal(1).scaleb(-digits)
            assert pystats.sql_round_value(x, digits) == float(Decimal(repr(x)).quantize(q, rounding=ROUND_HALF_UP))


@pytest.mark.parametrize("name", ["streams_demo", "gpt2_train"])
def test_tables_read_in_parallel_chunks_give_the_same_groups(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Large tables are grouped in rowid ranges on several threads and merged (here from 4 rows)."""
    from nsighttk.load import nsys_rows

    monkeypatch.setattr(nsys_rows, "_CHUNK", 4)
    monkeypatch.setattr(nsys_rows, "_THREADS", 4)
    assert_same(capture(name))


@pytest.mark.parametrize(("name", "sql"), [
    ("gpt2_train", "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = start - 1 WHERE rowid = 3000"),
    ("gpt2_train", "UPDATE NVTX_EVENTS SET start = 'x' WHERE rowid = (SELECT max(rowid) FROM NVTX_EVENTS "
                   "WHERE eventType = 59)"),
    ("streams_demo", "UPDATE NVTX_EVENTS SET \"end\" = 'late' WHERE rowid = (SELECT max(rowid) FROM NVTX_EVENTS)"),
])
def test_parallel_chunks_still_refuse_unusual_rows(name: str, sql: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk.load import nsys_rows

    monkeypatch.setattr(nsys_rows, "_CHUNK", 4)
    monkeypatch.setattr(nsys_rows, "_THREADS", 4)
    assert nsys_small.small_summaries(mutate(tmp_path, sql, name=name), SMALL, limit=10**9) is None
