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

The bases are every real capture under ``tests/fixtures`` (:mod:`fuzz.bases` finds them by what
they are, so a fixture a change adds is fuzzed too).  The draws follow the seed
:data:`fuzz.bases.SEED`: fresh on every run and printed in pytest's header; ``NSIGHTTK_FUZZ_SEED=N``
replays a run (CI fixes it, so CI runs one fixed slice).  No example database.
``NSIGHTTK_FUZZ_SCALE=10`` multiplies every ``max_examples`` for a longer run, ``NSIGHTTK_FUZZ_SHRINK=1``
shrinks a failing example; ``make fuzz SECONDS=600`` runs fresh seeds for that long
(``python -m tests.fuzz``); ``pytest --hypothesis-show-statistics`` counts the examples run.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, FullDisk, capture
from fuzz import bases, checks, mutate
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st

SCALE = float(os.environ.get("NSIGHTTK_FUZZ_SCALE", "1"))


#: shrinking a failure costs minutes on these inputs; the drawn damage is a short readable list as
#: it is, so failures are reported unshrunk unless NSIGHTTK_FUZZ_SHRINK=1
PHASES = [Phase.explicit, Phase.generate] + ([Phase.shrink] if os.environ.get("NSIGHTTK_FUZZ_SHRINK") else [])


def fuzz(n: int) -> Callable[[Any], Any]:
    """``n`` examples (times NSIGHTTK_FUZZ_SCALE), drawn from this run's seed."""
    chosen = settings(max_examples=max(1, int(n * SCALE)), derandomize=False, database=None, deadline=None,
                      suppress_health_check=list(HealthCheck), print_blob=False, phases=PHASES)

    def wrap(test: Any) -> Any:
        return seed(bases.SEED)(chosen(test))
    return wrap


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


NSYS_BASES = bases.nsys_exports()


@fuzz(18)
@given(damage=st.lists(mutate.sqlite_damage(), min_size=1, max_size=3), base=st.sampled_from(NSYS_BASES),
       extra=st.lists(st.sampled_from(NSYS_EXTRA), min_size=2, max_size=2, unique=True))
def test_nsys_export_with_damaged_values(damage: list[tuple[Any, ...]], base: Path, extra: list[str]) -> None:
    with workdir() as wd:
        f = mutate.apply_sqlite(base, wd / base.name, damage)
        read_all(f, capture("add"), extra, wd, nsys=True)


@fuzz(12)
@given(damage=st.lists(mutate.sqlite_damage(), max_size=1), raw=mutate.byte_damage(), base=st.sampled_from(NSYS_BASES),
       extra=st.lists(st.sampled_from(NSYS_EXTRA), max_size=1))
def test_nsys_export_with_damaged_bytes(damage: list[tuple[Any, ...]], raw: tuple[Any, ...], base: Path,
                                        extra: list[str]) -> None:
    """Truncated, bit-flipped or zeroed pages (the 100-byte header kept half the time): one error
    line or a sound result, never a traceback."""
    with workdir() as wd:
        f = mutate.apply_sqlite(base, wd / "cut.sqlite", damage)
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

TRACES = bases.kineto_traces()


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
        read_all(f, FIXTURES / "h100-torch2.11" / "gelu" / "trace.json", extra, wd, nsys=False)


# ---------------------------------------------------------------------------------- ncu

NCU = FIXTURES / "h200-ncu2025.3"
NCU_CSVS = bases.ncu_csvs()


@fuzz(36)
@given(damage=st.lists(mutate.ncu_damage(), min_size=1, max_size=3), base=st.sampled_from(NCU_CSVS),
       raw=st.one_of(st.just(("none",)), mutate.byte_damage(max_flips=3)),
       extra=st.lists(st.sampled_from(TRACE_EXTRA[:-1]), min_size=1, max_size=2, unique=True))
def test_ncu_csv_with_damaged_cells(damage: list[tuple[Any, ...]], base: Path, raw: tuple[Any, ...],
                                    extra: list[str]) -> None:
    with workdir() as wd:
        f = mutate.write_ncu(mutate.apply_ncu(mutate.ncu_rows(base), damage), wd / "ncu.csv")
        mutate.apply_bytes(f, raw)
        read_all(f, NCU / "matmul_tiled.details.csv", extra, wd, nsys=False)


@pytest.mark.parametrize("report", bases.ncu_reports(), ids=lambda p: p.name)
@pytest.mark.parametrize("damage", [("empty",), ("truncate", 0.001), ("truncate", 0.4), ("random", 50_000),
                                    ("flip", [(0.3, 2), (0.5, 7), (0.8, 1)]), ("magic_only",)],
                         ids=lambda d: d[0] + (f"-{d[1]}" if len(d) > 1 and not isinstance(d[1], list) else ""))
def test_ncu_rep_empty_truncated_or_random(damage: tuple[Any, ...], report: Path, tmp_path: Path) -> None:
    """A damaged .ncu-rep is one error line saying the report is damaged (never "no profiled
    kernels ... did the -k filter match?"), or, where ncu_report still reads every kernel, a
    sound result."""
    import random

    f = tmp_path / "damaged.ncu-rep"
    data = report.read_bytes()
    if damage[0] == "empty":
        f.write_bytes(b"")
    elif damage[0] == "random":
        f.write_bytes(random.Random(bases.SEED).randbytes(damage[1]))
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


# ------------------------------------------------------- damage found by an adversarial corpus

@fuzz(6)
@given(base=st.sampled_from(NSYS_BASES), name=st.binary(min_size=1, max_size=40),
       sql=st.binary(min_size=1, max_size=80), kind=st.sampled_from(["table", "index", "view", "trigger"]),
       reader=st.sampled_from(["stats", "analyze", "rules", "report_json", "ranks"]))
def test_nsys_schema_whose_sqlite_errors_are_not_utf8(base: Path, name: bytes, sql: bytes, kind: str,
                                                      reader: str) -> None:
    """A schema entry of bytes that are not UTF-8 (SQLite names it in its own error, which Python
    cannot decode): one line naming the file as corrupt, or a sound result."""
    with workdir() as wd:
        f = wd / base.name
        f.write_bytes(base.read_bytes())
        con = sqlite3.connect(f)
        try:
            con.execute("PRAGMA writable_schema = ON")
            con.execute("INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) "
                        "VALUES (?, CAST(? AS TEXT), 'x', 0, CAST(? AS TEXT))",
                        (kind, b"\xff" + name, b"CREATE TABLE \xfe" + sql))
            con.commit()
        finally:
            con.close()
        argv: dict[str, list[Any]] = {"stats": ["stats", f], "analyze": ["analyze", f, "--width", "100"],
                                      "rules": ["rules", f], "report_json": ["report", f, "--json"],
                                      "ranks": ["ranks", f, capture("add"), "--json"]}
        o = checks.run(argv[reader], [f], json_out=reader in ("report_json", "ranks"))
        if o.code:
            assert "corrupt" in o.stderr or "damaged" in o.stderr, o.describe()


#: characters a 1 MiB name is made of: plain, C++ punctuation and CSV's commas, combining marks and
#: wide characters (cells), control characters, markup (no double quote: the CSV of the nsys
#: version whose bytes are reproduced leaves them unescaped, so its rows cannot be parsed back)
NAME_PARTS = ["a", "void k<float, 4>", "q,", "e\u0301", "字", "\x1b[31m", "[red]", "\t", " ", "\u202e"]


@fuzz(2)
@given(base=st.sampled_from(NSYS_BASES), parts=st.lists(st.sampled_from(NAME_PARTS), min_size=1, max_size=4),
       mib=st.sampled_from([1, 2]), which=st.sampled_from(["kernels", "api", "nvtx", "all"]),
       extra=st.lists(st.sampled_from(["text", "ranks", "compare", "rules"]), min_size=1, max_size=2, unique=True))
@example(base=capture("streams_demo"), parts=["x"], mib=1, which="api", extra=["text"])  # quoted in a finding
def test_nsys_names_of_a_mebibyte_and_more(base: Path, parts: list[str], mib: int, which: str,
                                           extra: list[str]) -> None:
    """Kernel, API or NVTX names of 1-2 MiB: the table output, CSV and JSON finish (linear in the
    names: no quadratic shortening), and every check holds."""
    unit = "".join(parts)
    huge = unit * (mib * 2**20 // len(unit.encode()) + 1)
    with workdir() as wd:
        f = wd / base.name
        f.write_bytes(base.read_bytes())
        con = sqlite3.connect(f)
        try:
            tables = {"kernels": [mutate.K], "api": [mutate.R], "nvtx": [], "all": [mutate.K, mutate.R]}[which]
            have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            ids: set[int] = set()
            for t in (t for t in tables if t in have):
                cols = {r[1] for r in con.execute(f"PRAGMA table_info({t})")}
                for c in ("shortName", "demangledName", "nameId") if t == mutate.K else ("nameId",):
                    if c in cols:
                        ids |= {r[0] for r in con.execute(f"SELECT DISTINCT {c} FROM {t} LIMIT 40")}
            for n, i in enumerate(sorted(i for i in ids if isinstance(i, int))):
                con.execute("UPDATE StringIds SET value = ? WHERE id = ?", (huge + str(n), i))
            if which in ("nvtx", "all") and mutate.N in have:
                con.execute(f"UPDATE {mutate.N} SET text = ? WHERE rowid IN (SELECT rowid FROM {mutate.N} LIMIT 2)",
                            (huge,))
            con.commit()
        finally:
            con.close()
        read_all(f, capture("add"), extra, wd, nsys=True)
        o = checks.run(["analyze", f, "--width", "100"], [f])  # names cut before layout: a page, not a book
        assert o.code or (len(o.stdout.splitlines()) < 1000 and len(o.stdout) < 2**20), o.describe()[:2000]


@contextmanager
def full_disk(free: int) -> Iterator[None]:
    """Every file nsighttk writes (through :mod:`nsighttk.safeio`) and the runs database share a
    disk with ``free`` bytes left: the first write past it fails with ENOSPC, and SQLite's COMMIT
    past it fails as SQLite's own does on a full disk (rolled back, "database or disk is full")."""
    import builtins
    import sqlite3 as real_sqlite
    from unittest import mock

    from nsighttk import safeio
    from nsighttk.runs import db as runs_db

    left = {"left": free}
    real_open = builtins.open
    real_connect = real_sqlite.connect

    def full_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        fh = real_open(file, mode, *args, **kwargs)
        return FullDisk(fh, left) if any(c in mode for c in "wax") else fh

    class FullAtCommit(real_sqlite.Connection):
        def execute(self, sql: str, *args: Any) -> real_sqlite.Cursor:  # type: ignore[override]
            if sql == "COMMIT":
                pages = super().execute("PRAGMA page_count").fetchone()[0]
                if pages * 4096 > left["left"]:
                    super().execute("ROLLBACK")
                    raise real_sqlite.OperationalError("database or disk is full")
            return super().execute(sql, *args)

    def connect(*a: Any, **k: Any) -> real_sqlite.Connection:
        return real_connect(*a, **{**k, "factory": FullAtCommit})

    with mock.patch.object(safeio, "open", full_open, create=True), \
            mock.patch.object(runs_db.sqlite3, "connect", connect):
        yield


def _run_dirs(folder: Path, n: int) -> Path:
    runs = folder / "runs"
    for i in range(n):
        d = runs / f"20261122T1000{i:02d}Z-bench-add"
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"tool": "bench", "target": "add", "status": "ok",
                                                "started_utc": f"2026-11-22T10:00:{i:02d}+00:00"}))
        (d / "bench.json").write_text(json.dumps({"rows": [{"variant": "v", "size": i, "x": "y" * 20_000}]}))
    return runs


WRITERS = ["stats", "rules", "report", "compare", "runs-import"]


@fuzz(12)
@given(writer=st.sampled_from(WRITERS), base=st.sampled_from(NSYS_BASES),
       free=st.one_of(st.integers(0, 4096), st.integers(4096, 2**20), st.integers(2**20, 2**24)),
       old=st.booleans())
def test_a_full_disk_during_every_writer(writer: str, base: Path, free: int, old: bool) -> None:
    """Whatever the space left: exit 0 with complete files, or one line saying the disk is full;
    an older output kept byte for byte, no temporary file, the runs database as it was or with
    the runs it says it recorded."""
    with workdir() as wd:
        out = wd / "out"
        out.mkdir()
        target = {"stats": out / "s_cuda_gpu_sum.csv", "rules": out / "r_cuda_api_sync.csv",
                  "report": out / "r.html", "compare": out / "c.html", "runs-import": wd / "runs.db"}[writer]
        argv: list[Any] = {
            "stats": ["stats", base, "-r", "cuda_gpu_sum,cuda_gpu_trace", "-f", "csv", "-o", out / "s",
                      "--force-overwrite"],
            "rules": ["rules", base, "-f", "csv", "-o", out / "r", "--force-overwrite"],
            "report": ["report", base, "-o", out / "r.html", "--force"],
            "compare": ["compare", capture("add"), base, "--force", "--html", out / "c.html"],
            "runs-import": ["--db", wd / "runs.db", "runs", "import", _run_dirs(wd, 6)],
        }[writer]
        if old and writer != "runs-import":
            target.write_text('<html><meta name="generator" content="nsighttk x">an older page</html>'
                              if target.suffix == ".html" else "old,csv\n1,2\n")
        elif old:
            checks.run(["--db", wd / "runs.db", "runs", "list"], [])
        before = target.read_bytes() if target.exists() else None
        with full_disk(free):
            o = checks.invoke([str(a) for a in argv])
        checks.check_outcome(o, json_out=False)
        names = [p.name for p in wd.rglob("*")]
        assert not [n for n in names if ".tmp" in n], f"temporary file left: {names}\n{o.describe()}"
        if o.code:
            assert "disk is full" in o.stderr, o.describe()
            if writer != "runs-import":
                assert (target.read_bytes() if target.exists() else None) == before, o.describe()
        lst = checks.run(["--db", wd / "runs.db", "runs", "list", "--json"], [], json_out=True)
        if writer == "runs-import" and o.code:
            said = re.search(r"recorded (\d+) run", o.stderr)
            got = len(json.loads(lst.stdout)) if lst.code == 0 and lst.stdout.strip() else 0
            assert said is None or int(said.group(1)) == got, (o.describe(), lst.stdout)


#: where nsighttk expects text: each given bytes that are not (NUL bytes, invalid UTF-8, an ELF
#: header, a gzip stream)
BINARY = [b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4, b"\xff\xfe\xfd" * 1000,
          b"\x1f\x8b\x08\x00" + b"\x00" * 64,
          b"text then \x00 a NUL", "caf\xe9 latin-1".encode("latin-1")]
TEXT_INPUTS = ["tasks", "ncu-csv", "kineto", "run-json", "runs-db", "capture"]


@fuzz(16)
@given(where=st.sampled_from(TEXT_INPUTS), junk=st.sampled_from(BINARY), keep=st.integers(0, 4096))
def test_binary_files_where_text_is_expected(where: str, junk: bytes, keep: int) -> None:
    """A binary file (or text cut and followed by binary bytes) wherever nsighttk reads text: a
    task list, an ncu CSV, a Kineto trace, a run.json, the runs database, a capture: one line."""
    with workdir() as wd:
        src = {"tasks": None, "ncu-csv": NCU / "add_grid_b256.details.csv",
               "kineto": FIXTURES / "h100-torch2.11" / "square" / "trace.json", "run-json": None,
               "runs-db": None, "capture": capture("add")}[where]
        data = (src.read_bytes()[:keep] if src is not None else b"nsighttk bench add\n"[:keep]) + junk
        if where == "tasks":
            f = wd / "tasks.txt"
            argv: list[Any] = ["submit", "--tasks", f, "--dry-run"]
        elif where == "ncu-csv":
            f = wd / "ncu.csv"
            argv = ["analyze", f, "--json"]
        elif where == "kineto":
            f = wd / "trace.json"
            argv = ["analyze", f, "--json"]
        elif where == "run-json":
            d = wd / "runs" / "20261122T100000Z-bench-add"
            d.mkdir(parents=True)
            f = d / "run.json"
            argv = ["--db", wd / "r.db", "runs", "import", d]
        elif where == "runs-db":
            f = wd / "r.db"
            argv = ["--db", f, "runs", "list"]
        else:
            f = wd / "in.sqlite"
            argv = ["stats", f]
        f.write_bytes(data)
        o = checks.run(argv, [f], json_out=argv[-1] == "--json")
        if where in ("tasks", "run-json", "runs-db"):
            assert o.code == 2, o.describe()
