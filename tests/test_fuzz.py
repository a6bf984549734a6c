"""Property-based fuzzing of every reading command over damaged copies of the real fixtures
(a damaged export, CSV, report or trace loads what is sound or fails with one line).

Hypothesis draws the damage (tests/fuzz/mutate.py: per-column type and NULL changes, missing and
duplicate rows, extreme values, hostile names, truncation, bit flips ...) to nsys SQLite exports,
Kineto traces (JSON and gzip), ncu CSV exports and ``.ncu-rep`` files; each damaged file goes
through ``analyze`` (text, ``--json``, ``--markdown``), ``stats`` (every report, CSV files and
JSON), ``rules``, ``report -o``, ``report --json``, ``compare`` and ``ranks`` in this process
(click's CliRunner), and tests/fuzz/checks.py asserts what must hold whatever the input: exit 0 or
2, no traceback, at most one error line, inputs byte-identical, no partial output under a final
name, no impossible number.

Deterministic: ``derandomize=True`` (examples follow from the test's code, not a clock) and no
example database.  ``NSIGHTTK_FUZZ_SCALE=10`` multiplies every ``max_examples`` for a longer run,
``NSIGHTTK_FUZZ_SHRINK=1`` shrinks a failing example; ``pytest --hypothesis-show-statistics``
counts the examples run.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, capture
from fuzz import checks, mutate
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

SCALE = float(os.environ.get("NSIGHTTK_FUZZ_SCALE", "1"))


#: shrinking a failure costs minutes on these inputs; the drawn damage is a short readable list as
#: it is, so failures are reported unshrunk unless NSIGHTTK_FUZZ_SHRINK=1
PHASES = [Phase.explicit, Phase.generate] + ([Phase.shrink] if os.environ.get("NSIGHTTK_FUZZ_SHRINK") else [])


def fuzz(n: int) -> Callable[[Any], Any]:
    return settings(max_examples=max(1, int(n * SCALE)), derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck), print_blob=False, phases=PHASES)


@contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="nsighttk-fuzz-") as d:
        yield Path(d)


def fresh(folder: Path) -> Path:
    """An empty output folder: what a command writes there is checked."""
    n = len(list(folder.glob("out*")))
    out = folder / f"out{n}"
    out.mkdir()
    return out


# ----------------------------------------------------------------------------------- commands

NSYS_EXTRA = ["text", "markdown", "stats_json", "rules", "rules_json", "report", "report_json", "compare", "ranks"]
TRACE_EXTRA = ["text", "markdown", "report", "report_json", "compare", "ranks"]


def read_all(f: Path, other: Path, extra: list[str], wd: Path, nsys: bool) -> None:
    """``analyze --json`` (and for nsys ``stats -r all -f csv -o``) on every example, plus the
    commands named in ``extra``: each checked by :mod:`fuzz.checks`."""
    inputs = [f, other]
    checks.run(["analyze", f, "--json"], inputs, json_out=True)
    if nsys:
        out = fresh(wd)
        checks.run_with_output(["stats", f, "-r", "all", "-f", "csv", "-o", out / "s"], inputs, out)
    for what in extra:
        if what == "text":
            checks.run(["analyze", f, "--width", "100"], inputs)
        elif what == "markdown":
            checks.run(["analyze", f, "--markdown"], inputs)
        elif what == "stats_json":
            for report in ("cuda_gpu_sum", "nvtx_gpu_proj_sum"):  # one JSON document each
                checks.run(["stats", f, "-r", report, "-f", "json"], inputs, json_out="many")
        elif what == "rules":
            checks.run(["rules", f], inputs)
        elif what == "rules_json":
            checks.run(["rules", f, "-f", "json"], inputs, json_out="many")
        elif what == "report":
            out = fresh(wd)
            checks.run_with_output(["report", f, "-o", out / "r.html"], inputs, out)
        elif what == "report_json":
            checks.run(["report", f, "--json"], inputs, json_out=True)
        elif what == "compare":
            out = fresh(wd)
            checks.run_with_output(["compare", other, f, "--json", "--force", "--html", out / "c.html"], inputs, out,
                                   json_out=True)
        elif what == "ranks":
            checks.run(["ranks", f, other, "--json"], inputs, json_out=True)


# ---------------------------------------------------------------------------------- nsys SQLite


@fuzz(18)
@given(damage=st.lists(mutate.sqlite_damage(), min_size=1, max_size=3),
       base=st.sampled_from(["streams_demo", "streams_demo", "add"]),
       extra=st.lists(st.sampled_from(NSYS_EXTRA), min_size=2, max_size=2, unique=True))
def test_nsys_export_with_damaged_values(damage: list[tuple[Any, ...]], base: str, extra: list[str]) -> None:
    with workdir() as wd:
        f = mutate.apply_sqlite(capture(base), wd / f"{base}.sqlite", damage)
        read_all(f, capture("add"), extra, wd, nsys=True)


@fuzz(12)
@given(damage=st.lists(mutate.sqlite_damage(), max_size=1), raw=mutate.byte_damage(),
       extra=st.lists(st.sampled_from(NSYS_EXTRA), max_size=1))
def test_nsys_export_with_damaged_bytes(damage: list[tuple[Any, ...]], raw: tuple[Any, ...], extra: list[str]) -> None:
    """Truncated, bit-flipped or zeroed pages (the 100-byte header kept half the time): one error
    line or a sound result, never a traceback."""
    with workdir() as wd:
        f = mutate.apply_sqlite(capture("streams_demo"), wd / "cut.sqlite", damage)
        mutate.apply_bytes(f, raw, skip=100 if len(damage) else 0)
        read_all(f, capture("add"), extra, wd, nsys=True)


# Damage that broke `analyze` until it was fixed (every runtime name missing, byte counts that are
# not integers, kernels before their launch calls, sums beyond int64): kept as named cases, and in
# the random draws above as well.
FIXED = [
    [("set", mutate.R, "nameId", None, "all")],
    [("strings", "delete_all")],
    [("drop_table", "StringIds")],
    [("times", mutate.K, "huge_sum")],
    [("set", mutate.K, "start", "12", "all")],
    [("times", mutate.K, "one_instant")],
    [("times", mutate.M, "huge_sum")],
    [("times", mutate.S, "huge_sum")],
    [("times", mutate.N, "huge_sum")],
    [("set", mutate.M, "bytes", None, "some")],
    [("set", mutate.S, "bytes", "abc", "some")],
    [("set", mutate.M, "bytes", mutate.INT64_MAX, "some")],
]


@pytest.mark.parametrize("damage", FIXED, ids=lambda d: f"{d[0][0]}-{'-'.join(map(str, d[0][1:]))}"[:60])
def test_nsys_damage_once_broken(damage: list[tuple[Any, ...]], tmp_path: Path) -> None:
    f = mutate.apply_sqlite(capture("streams_demo"), tmp_path / "pending.sqlite", damage)
    checks.run(["analyze", f, "--json"], [f], json_out=True)


# ---------------------------------------------------------------------------------- Kineto

TRACES = [FIXTURES / "h100-torch2.11" / "gelu" / "trace.json", FIXTURES / "hta" / "mi250_rocm6.2.json.gz",
          FIXTURES / "hta" / "old_categories.json.gz", FIXTURES / "h100-torch2.11" / "raises" / "trace.json"]


@fuzz(32)
@given(damage=st.lists(mutate.kineto_damage(), min_size=1, max_size=3), base=st.sampled_from(TRACES),
       gz=st.booleans(), raw=st.one_of(st.just(("none",)), mutate.byte_damage(max_flips=2)),
       extra=st.lists(st.sampled_from(TRACE_EXTRA), min_size=1, max_size=2, unique=True))
def test_kineto_trace_with_damaged_events(damage: list[tuple[Any, ...]], base: Path, gz: bool, raw: tuple[Any, ...],
                                          extra: list[str]) -> None:
    with workdir() as wd:
        doc = mutate.apply_kineto(mutate.kineto_doc(base), damage)
        f = mutate.write_kineto(doc, wd / ("trace.json.gz" if gz else "trace.json"), gz)
        mutate.apply_bytes(f, raw)
        read_all(f, TRACES[0], extra, wd, nsys=False)


# ---------------------------------------------------------------------------------- ncu

NCU = FIXTURES / "h200-ncu2025.3"
NCU_CSVS = [NCU / "matmul_tiled.details.csv", NCU / "add_grid_b256.raw.csv", NCU / "streams_demo_nvtx.details.csv",
            NCU / "add_grid_b1024.details_base.csv"]


@fuzz(36)
@given(damage=st.lists(mutate.ncu_damage(), min_size=1, max_size=3), base=st.sampled_from(NCU_CSVS),
       raw=st.one_of(st.just(("none",)), mutate.byte_damage(max_flips=3)),
       extra=st.lists(st.sampled_from(TRACE_EXTRA[:-1]), min_size=1, max_size=2, unique=True))
def test_ncu_csv_with_damaged_cells(damage: list[tuple[Any, ...]], base: Path, raw: tuple[Any, ...],
                                    extra: list[str]) -> None:
    with workdir() as wd:
        f = mutate.write_ncu(mutate.apply_ncu(mutate.ncu_rows(base), damage), wd / "ncu.csv")
        mutate.apply_bytes(f, raw)
        read_all(f, NCU_CSVS[0], extra, wd, nsys=False)


NCU_REP = NCU / "add_grid_b256.ncu-rep"


@pytest.mark.parametrize("damage", [("empty",), ("truncate", 0.001), ("truncate", 0.4), ("random", 50_000),
                                    ("flip", [(0.3, 2), (0.5, 7), (0.8, 1)]), ("magic_only",)],
                         ids=lambda d: d[0] + (f"-{d[1]}" if len(d) > 1 and not isinstance(d[1], list) else ""))
def test_ncu_rep_empty_truncated_or_random(damage: tuple[Any, ...], tmp_path: Path) -> None:
    """A damaged .ncu-rep is one error line saying the report is damaged (never "no profiled
    kernels ... did the -k filter match?"), or, where ncu_report still reads every kernel, a
    sound result."""
    import random

    f = tmp_path / "damaged.ncu-rep"
    data = NCU_REP.read_bytes()
    if damage[0] == "empty":
        f.write_bytes(b"")
    elif damage[0] == "random":
        f.write_bytes(random.Random(7).randbytes(damage[1]))
    elif damage[0] == "magic_only":
        f.write_bytes(data[:4])
    else:
        f.write_bytes(data)
        mutate.apply_bytes(f, damage)
    o = checks.run(["analyze", f, "--json"], [f], json_out=True)
    if o.code:
        assert "did the -k" not in o.stderr and "damaged" in o.stderr, o.describe()


# ---------------------------------------------------------------------------------- names

@fuzz(40)
@given(names=st.lists(st.one_of(st.sampled_from(mutate.HOSTILE), st.text(max_size=60)), min_size=1, max_size=3),
       as_json=st.booleans())
def test_explain_hostile_names(names: list[str], as_json: bool) -> None:
    checks.run(["explain", *(["--json"] if as_json else []), "--", *names], [], json_out=as_json)


# ---------------------------------------------------------------------------------- the checks

def test_the_checks_reject_what_must_never_happen() -> None:
    """The checks above can fail: each kind of bad outcome is caught."""
    ok = checks.Outcome(["x"], 0, '{"a": 1}', "")
    checks.check_outcome(ok, json_out=True)
    bad = [
        checks.Outcome(["x"], 1, "", "nsighttk: error: x\n"),  # exit 1
        checks.Outcome(["x"], 0, "Traceback (most recent call last):\n", ""),
        checks.Outcome(["x"], 2, "", "nsighttk: error: a\nnsighttk: error: b\n"),  # two error lines
        checks.Outcome(["x"], 2, "", "nsighttk: error: a\nmore\n"),  # not last
        checks.Outcome(["x"], 2, "", ""),  # failed silently
        checks.Outcome(["x"], 0, "kernel \x1b[31mred\n", ""),  # ESC to the terminal
    ]
    for o in bad:
        with pytest.raises(AssertionError):
            checks.check_outcome(o)
    impossible = ['{"v": NaN}', '{"duration_ns": -5}', '{"Time (%)": 140.0}',
                  '{"Min (ns)": 5, "Avg (ns)": 4.0, "Max (ns)": 9}', '{"min": 1, "median": 10, "max": 3}',
                  '{"Total Time (ns)": 3, "Min (ns)": 1, "Max (ns)": 9}', '{"rows": [{"memcpy_bytes": -1}]}',
                  '[{"StdDev (ns)": -0.5, "Min (ns)": 1, "Max (ns)": 2}]']
    for text in impossible:
        with pytest.raises(AssertionError):
            checks.check_outcome(checks.Outcome(["x"], 0, text, ""), json_out=True)
    checks.check_outcome(checks.Outcome(["x"], 0, '{"start_ns": -5, "extra_ns": -3, "change_pct": 400}', ""),
                         json_out=True)
    with pytest.raises(AssertionError):
        checks.check_csv("Time (%),Avg (ns),Min (ns),Max (ns)\n50.0,1.0,2,3\n", ok)
