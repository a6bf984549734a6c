"""The hostile corpus: the same cases, in the same order, on every call (random bytes and bit flips
follow the run's fuzz seed: tests/hostile/files.py).  Groups: wrong files given as an nsys export,
damaged nsys exports, every real nsys export under tests/fixtures damaged (``bases``), Nsight Compute
CSV and .ncu-rep, Kineto JSON, run directories, the runs database, output targets, option values of
every command, hostile names, and binary files where text is expected (``text``).

In ``argv``, ``good.sqlite`` (a real H200 nsys export) and ``good.json`` (a real Kineto trace) are
in every case's folder; ``{d}`` is the folder's absolute path."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from . import files as F
from .runner import Case

#: a path longer than PATH_MAX, and a name longer than NAME_MAX
LONG_NAME = "n" * 300
LONG_PATH = "/".join(["p" * 200] * 25) + "/x"
#: names a user (or a capture) may hold: markup, escapes, control characters, links, scripts
HOSTILE_NAMES = ["[red]x[/red]", "[link=https://example.com/]k[/link]", "\x1b[31mred\x1b[0m", "\x1b]8;;http://x\x07k",
                 "a\nb", "a\rb", "tab\there", "\u202eevil", "<!--<script>alert(1)</script>", "=cmd|'/c calc'!A1",
                 "%s%n", "[/]", "$(touch pwned)", "`id`", "../../../etc/passwd", "nul\x7fdel", " ", "-"]


def _cases() -> Iterable[Case]:
    yield from wrong_nsys_files()
    yield from damaged_nsys()
    yield from ncu_inputs()
    yield from kineto_inputs()
    yield from run_directories()
    yield from runs_database()
    yield from output_targets()
    yield from option_values()
    yield from hostile_names()
    yield from every_base()
    yield from text_inputs()


#: known failures in code this corpus' owner does not own (id prefix -> why); xfail(strict=True) in
#: pytest, so each turns red the day it is fixed, and the mark goes
KNOWN: dict[str, str] = {}


def all_cases() -> list[Case]:
    import dataclasses

    cases = [next((dataclasses.replace(c, xfail=why) for k, why in KNOWN.items() if c.id.startswith(k)), c)
             for c in _cases()]
    ids = [c.id for c in cases]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"duplicate case ids: {sorted(dup)[:5]}"
    return cases


# ------------------------------------------------------------------------------ wrong files

#: what a user may hand over as "an nsys export"
WRONG_FILES: dict[str, F.Maker] = {
    "empty": F.data("in.sqlite", b""),
    "text": F.data("in.sqlite", "this is not a database\n" * 50),
    "truncated-100B": F.head("in.sqlite", F.NSYS, 100),
    "truncated-1page": F.head("in.sqlite", F.NSYS, 4096),
    "truncated-half": F.head("in.sqlite", F.NSYS, 133_120),
    "truncated-last-page": F.head("in.sqlite", F.NSYS, 266_240 - 4096),
    "ncu-rep-renamed": F.copy("in.sqlite", F.NCU_REP),
    "kineto-renamed": F.copy("in.sqlite", F.KINETO),
    "random": F.randbytes("in.sqlite", 65536),
    "sqlite-magic-random": F.randbytes("in.sqlite", 65536, prefix=b"SQLite format 3\x00"),
    "header-flipped": F.flipped("in.sqlite", F.NSYS, (16, 18, 19, 21, 28)),
    "pages-flipped": F.flipped("in.sqlite", F.NSYS, (0.3, 0.31, 0.5, 0.7, 0.71, 0.9), seed=3),
    "sqlite-not-nsys": F.plain_sqlite("in.sqlite", "CREATE TABLE t(x)", "INSERT INTO t VALUES (1)"),
    "sqlite-empty-db": F.plain_sqlite("in.sqlite", "PRAGMA user_version = 1"),
    "gzip": F.gz("in.sqlite", b"SQLite format 3\x00" * 100),
    "fifo": F.fifo("in.sqlite"),
    "directory": F.folder("in.sqlite"),
    "device-zero": F.symlink("in.sqlite", "/dev/zero"),
    "device-null": F.symlink("in.sqlite", "/dev/null"),
    "symlink-loop": F.symlink_loop("in.sqlite"),
    "dangling-symlink": F.symlink("in.sqlite", "nowhere/at/all.sqlite"),
    "unreadable": F.unreadable("in.sqlite", F.NSYS),
    "sparse-64GiB": F.sparse("in.sqlite"),
    "nsys-rep-text": F.data("in.nsys-rep", "not a report\n"),
}

READERS = {
    "stats": ("stats", "IN"),
    "stats-csv-o": ("stats", "IN", "-f", "csv", "-r", "cuda_gpu_sum,cuda_api_sum", "-o", "out/p"),
    "rules": ("rules", "IN"),
    "rules-csv-o": ("rules", "IN", "-f", "csv", "-o", "out/r"),
    "analyze": ("analyze", "IN"),
    "analyze-json": ("analyze", "IN", "--json"),
    "analyze-md": ("analyze", "IN", "--markdown"),
    "report": ("report", "IN", "-o", "out.html"),
    "compare": ("compare", "IN", "good.sqlite"),
    "ranks": ("ranks", "IN", "good.sqlite"),
    "repro": ("repro", "IN", "-o", "out/repro"),
    "recipe": ("recipe", "nccl_sum", "--input", "IN", "--output", "out/recipe", "--workers", "0"),
}


def _reader_cases(group: str, inputs: dict[str, F.Maker], readers: dict[str, tuple[str, ...]], name: str,
                  process: Iterable[str] = ()) -> Iterable[Case]:
    slow = set(process)
    for kind, make in inputs.items():
        target = "in.nsys-rep" if kind == "nsys-rep-text" else name
        for rname, argv in readers.items():
            first = rname == next(iter(readers))
            yield Case(f"{group}/{kind}/{rname}", tuple(target if a == "IN" else a for a in argv), make,
                       rcs=frozenset({0, 2, 3}) if target.endswith(".nsys-rep") else frozenset({0, 2}),
                       process=kind in slow and first, timeout=20 if kind in slow else 60, group=group)


def wrong_nsys_files() -> Iterable[Case]:
    # a FIFO as input is where a hang would be: observed from outside, with a wall-clock limit
    yield from _reader_cases("nsys-wrong-file", WRONG_FILES, READERS, "in.sqlite", process=("fifo",))


# ------------------------------------------------------------------------ damaged nsys exports

K = "CUPTI_ACTIVITY_KIND_KERNEL"
DAMAGED: dict[str, F.Maker] = {
    "no-kernel-table": F.nsys_sql("in.sqlite", f"DROP TABLE {K}"),
    "no-stringids": F.nsys_sql("in.sqlite", "DROP TABLE StringIds"),
    "stringids-empty": F.nsys_sql("in.sqlite", "DELETE FROM StringIds"),
    "no-runtime": F.nsys_sql("in.sqlite", "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME"),
    "no-meta": F.nsys_sql("in.sqlite", "DROP TABLE META_DATA_EXPORT"),
    "no-gpu-info": F.nsys_sql("in.sqlite", "DROP TABLE TARGET_INFO_GPU"),
    "kernel-start-text": F.nsys_sql("in.sqlite", f"UPDATE {K} SET start = 'abc'"),
    "kernel-end-text": F.nsys_sql("in.sqlite", f"UPDATE {K} SET [end] = 'x' || [end]"),
    "kernel-end-before-start": F.nsys_sql("in.sqlite", f"UPDATE {K} SET [end] = start - 1000"),
    "kernel-huge": F.nsys_sql("in.sqlite", f"UPDATE {K} SET start = 0, [end] = 9223372036854775807"),
    "kernel-blob-grid": F.nsys_sql("in.sqlite", f"UPDATE {K} SET gridX = x'00ff', blockX = 'x'"),
    "kernel-names-text": F.nsys_sql("in.sqlite", f"UPDATE {K} SET shortName = 'abc', demangledName = x'00'"),
    "kernel-names-missing-id": F.nsys_sql("in.sqlite", f"UPDATE {K} SET shortName = 987654321"),
    "one-instant": F.nsys_sql("in.sqlite", f"UPDATE {K} SET start = 5, [end] = 5",
                              "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 5, [end] = 5"),
    "kernel-table-empty": F.nsys_sql("in.sqlite", f"DELETE FROM {K}", "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                                     "DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY"),
    "kernel-real-durations": F.nsys_sql("in.sqlite", f"UPDATE {K} SET [end] = [end] + 0.5"),
    "nvtx-text-ends": F.nsys_sql("in.sqlite", "UPDATE NVTX_EVENTS SET [end] = 'x'", src=F.NSYS_NVTX),
    "nvtx-hostile-names": F.nsys_sql(
        "in.sqlite", "UPDATE NVTX_EVENTS SET text = '[red]\x1b[31m<script>' || rowid", src=F.NSYS_NVTX),
}
DAMAGED_READERS = {k: READERS[k] for k in ("stats", "rules", "analyze-json", "report")}


def damaged_nsys() -> Iterable[Case]:
    yield from _reader_cases("nsys-damaged", DAMAGED, DAMAGED_READERS, "in.sqlite")


# ------------------------------------------------------------------------------------------ ncu

def _ncu_csv_text() -> str:
    return F.NCU_CSV.read_text()


NCU_INPUTS: dict[str, tuple[str, F.Maker]] = {
    "csv-empty": ("in.csv", F.data("in.csv", b"")),
    "csv-header-only": ("in.csv", F.head("in.csv", F.NCU_CSV, 400)),
    "csv-garbage": ("in.csv", F.data("in.csv", "a,b,c\n1,2\n\"unterminated\n")),
    "csv-truncated": ("in.csv", F.head("in.csv", F.NCU_CSV, 10_000)),
    "csv-bom": ("in.csv", lambda d: (d / "in.csv").write_bytes(b"\xef\xbb\xbf" + F.NCU_CSV.read_bytes())),
    "csv-nul": ("in.csv", lambda d: (d / "in.csv").write_bytes(F.NCU_CSV.read_bytes().replace(b",", b",\x00", 50))),
    "csv-ids-na": ("in.csv", lambda d: (d / "in.csv").write_text(
        "\n".join(line if i == 0 else '"n/a"' + line[line.index(","):] if "," in line else line
                  for i, line in enumerate(_ncu_csv_text().splitlines())))),
    "csv-values-inf": ("in.csv", lambda d: (d / "in.csv").write_text(
        _ncu_csv_text().replace('"0"', '"inf"').replace('"1"', '"-inf"'))),
    "csv-one-long-line": ("in.csv", F.data("in.csv", "x" * 5_000_000)),
    "csv-random": ("in.csv", F.randbytes("in.csv", 65536, seed=7)),
    "csv-fifo": ("in.csv", F.fifo("in.csv")),
    "raw-truncated": ("in.raw.csv", F.head("in.raw.csv", F.NCU_RAW, 30_000)),
    "raw-duplicate-header": ("in.raw.csv", lambda d: (d / "in.raw.csv").write_bytes(
        F.NCU_RAW.read_bytes().split(b"\n", 1)[0] * 2 + F.NCU_RAW.read_bytes())),
    "rep-empty": ("in.ncu-rep", F.data("in.ncu-rep", b"")),
    "rep-truncated": ("in.ncu-rep", F.head("in.ncu-rep", F.NCU_REP, 1000)),
    "rep-half": ("in.ncu-rep", F.head("in.ncu-rep", F.NCU_REP, 550_000)),
    "rep-random": ("in.ncu-rep", F.randbytes("in.ncu-rep", 65536, seed=9)),
    "rep-text": ("in.ncu-rep", F.data("in.ncu-rep", "not a report\n")),
    "rep-sqlite": ("in.ncu-rep", F.copy("in.ncu-rep", F.NSYS)),
    "rep-flipped": ("in.ncu-rep", F.flipped("in.ncu-rep", F.NCU_REP, (100, 0.2, 0.4, 0.6, 0.8))),
    "rep-directory": ("in.ncu-rep", F.folder("in.ncu-rep")),
    "rep-fifo": ("in.ncu-rep", F.fifo("in.ncu-rep")),
}


def ncu_inputs() -> Iterable[Case]:
    for kind, (name, make) in NCU_INPUTS.items():
        fifo = kind.endswith("fifo")
        readers = (("analyze", ("analyze", name)), ("analyze-json", ("analyze", name, "--json")),
                   ("report", ("report", name, "-o", "out.html")), ("join", ("analyze", "good.sqlite", name)))
        for rname, argv in readers[::3] if kind.startswith("rep-") else readers:  # .ncu-rep: a worker process each
            yield Case(f"ncu/{kind}/{rname}", argv, make, process=fifo and rname == "analyze",
                       timeout=20 if fifo else 120, group="ncu")


# --------------------------------------------------------------------------------------- Kineto

KINETO_INPUTS: dict[str, tuple[str, F.Maker]] = {
    "nesting-bomb-arrays": ("in.json", F.data("in.json", "[" * 80_000)),
    "nesting-bomb-objects": ("in.json", F.data("in.json", '{"a":' * 40_000)),
    "nested-in-events": ("in.json", F.data("in.json", '{"traceEvents": [' + "[" * 50_000 + "]" * 50_000 + "]}")),
    "deep-args": ("in.json", F.data("in.json", F.kineto_events(
        [{"ph": "X", "name": "k", "ts": 1, "dur": 1, "cat": "kernel", "args": json.loads("[" * 150 + "]" * 150)}]))),
    "ts-1e400": ("in.json", F.data("in.json", b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", '
                                            b'"ts": 1e400, "dur": 1e400, "pid": 0, "tid": 7}]}')),
    "ts-huge-int": ("in.json", F.data("in.json", b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", '
                                               b'"ts": ' + b"9" * 400 + b', "dur": -5, "pid": 0, "tid": 7}]}')),
    "nan-literals": ("in.json", F.data("in.json", b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", '
                                                b'"ts": NaN, "dur": Infinity, "pid": 0, "tid": 7}]}')),
    "bom": ("in.json", lambda d: (d / "in.json").write_bytes(b"\xef\xbb\xbf" + F.KINETO.read_bytes())),
    "top-level-list": ("in.json", F.data("in.json", b"[1, 2, 3]")),
    "top-level-string": ("in.json", F.data("in.json", b'"traceEvents"')),
    "top-level-number": ("in.json", F.data("in.json", b"42")),
    "top-level-null": ("in.json", F.data("in.json", b"null")),
    "events-not-list": ("in.json", F.data("in.json", b'{"traceEvents": 5}')),
    "events-scalars": ("in.json", F.data("in.json", b'{"traceEvents": [1, "x", null, true, []]}')),
    "events-wrong-types": ("in.json", F.kineto_with("in.json", ts="abc", dur=None, args=[1, 2], name=123,
                                                      pid={"a": 1})),
    "events-negative-dur": ("in.json", F.kineto_with("in.json", dur=-1000)),
    "events-grid-scalar": ("in.json", F.kineto_with("in.json", args={"grid": 5, "block": "x", "stream": None})),
    "empty": ("in.json", F.data("in.json", b"")),
    "whitespace": ("in.json", F.data("in.json", b" \n\t " * 100)),
    "truncated": ("in.json", F.head("in.json", F.KINETO, 20_000)),
    "invalid-utf8": ("in.json", F.data("in.json", b'{"traceEvents": [{"name": "\xff\xfe", "ph": "X"}]}')),
    "long-name": ("in.json", F.data("in.json", F.kineto_events(
        [{"ph": "X", "cat": "kernel", "name": "k" * 2_000_000, "ts": 1, "dur": 1, "pid": 0, "tid": 7}]))),
    "gz-not-gzip": ("in.json.gz", F.data("in.json.gz", b'{"traceEvents": []}')),
    "gz-truncated": ("in.json.gz", F.head("in.json.gz", F.KINETO_GZ, 5000)),
    "gz-of-garbage": ("in.json.gz", F.gz("in.json.gz", b"\x00\x01garbage" * 1000)),
    "gz-bomb": ("in.json.gz", F.gz_zeros("in.json.gz", 64 * 2**20)),
    "gz-nesting-bomb": ("in.json.gz", F.gz("in.json.gz", b"[" * 2_000_000)),
    "fifo": ("in.json", F.fifo("in.json")),
    "directory": ("in.json", F.folder("in.json")),
}


def kineto_inputs() -> Iterable[Case]:
    for kind, (name, make) in KINETO_INPUTS.items():
        fifo = kind == "fifo"
        for rname, argv in (("analyze", ("analyze", name)), ("analyze-json", ("analyze", name, "--json")),
                            ("report", ("report", name, "-o", "out.html")),
                            ("compare", ("compare", "good.json", name)), ("ranks", ("ranks", name, "good.json"))):
            yield Case(f"kineto/{kind}/{rname}", argv, make, process=fifo and rname == "analyze",
                       timeout=20 if fifo else 120,
                       group="kineto")


# ------------------------------------------------------------------------------ run directories

RD = "runs/20261122T100000Z-nsys-add"
RUN_DIRS: dict[str, F.Maker] = {
    "valid": F.run_dir(RD, F.run_json(RD)),
    "no-run-json": F.run_dir(RD, None),
    "run-json-garbage": F.run_dir(RD, b"{not json"),
    "run-json-empty": F.run_dir(RD, b""),
    "run-json-list": F.run_dir(RD, b"[1, 2]"),
    "run-json-bomb": F.run_dir(RD, b"[" * 100_000),
    "run-json-huge": F.run_dir(RD, b"{" + b" " * (17 * 2**20) + b"}"),
    "run-json-wrong-types": F.run_dir(RD, F.run_json(RD, tool=5, run_dir=["x"], started_utc={}, status=None,
                                                      wall_s="abc", gpu=[1], arch={"a": 1}, command=7)),
    "run-json-hostile-values": F.run_dir(RD, F.run_json("[red]x\x1b[31m", tool="\x1b]8;;x\x07", target="<script>",
                                                         error="a\nb", status="[/]")),
    "capture-dev-zero": F.run_dir(RD, F.run_json(RD), F.symlink("x.sqlite", "/dev/zero")),
    "capture-fifo": F.run_dir(RD, F.run_json(RD), F.fifo("x.sqlite")),
    "capture-outside-link": F.run_dir(RD, F.run_json(RD), F.symlink("x.sqlite", "../../../good.sqlite")),
    "capture-loop": F.run_dir(RD, F.run_json(RD), F.symlink_loop("x.sqlite")),
    "capture-garbage": F.run_dir(RD, F.run_json(RD), F.data("x.sqlite", "garbage")),
    "raw-is-file": lambda d: (F.run_dir(RD, F.run_json(RD), F.nothing)(d), (d / RD / "raw").rmdir(),
                              (d / RD / "raw").write_text("x")),
    "summary-bomb": lambda d: (F.run_dir(RD, F.run_json(RD))(d),
                               (d / RD / "summary.json").write_bytes(b"[" * 100_000),
                               (d / RD / "bench.json").write_bytes(b'{"rows": 5}')),
    "tmp-dir": F.run_dir("runs/.tmp-20261122T100000Z-nsys-add-abc123", F.run_json("x")),
}


RUN_DIRS["run-json-fifo"] = F.both(F.run_dir(RD, None), F.fifo(f"{RD}/run.json"))


def run_directories() -> Iterable[Case]:
    for kind, make in RUN_DIRS.items():
        fifo = "fifo" in kind
        target = RD if kind != "tmp-dir" else "runs/.tmp-20261122T100000Z-nsys-add-abc123"
        for rname, argv, change in (
                ("analyze", ("analyze", target), ()),
                ("stats", ("stats", target, "-r", "cuda_gpu_sum"), ()),
                ("report", ("report", target), (f"{target}/report.html",)),
                ("import", ("runs", "import", target), ("reports",)),
                ("import-parent", ("runs", "import", "runs"), ("reports",)),
                ("compare", ("compare", target, "good.sqlite"), ()),
                ("show", ("runs", "show", target), ())):
            yield Case(f"rundir/{kind}/{rname}", argv, make, process=fifo and rname == "analyze",
                       timeout=20 if fifo else 60,
                       may_change=change, keep_on_error=("reports/nsighttk.db",) if "import" in rname else (),
                       group="rundir")


# ---------------------------------------------------------------------------------- runs DB

DBS: dict[str, tuple[str, F.Maker]] = {
    "valid": ("r.db", F.runs_db("r.db")),
    "text": ("r.db", F.data("r.db", "not a database\n")),
    "empty": ("r.db", F.data("r.db", b"")),
    "random": ("r.db", F.randbytes("r.db", 8192, seed=5)),
    "truncated": ("r.db", lambda d: (F.runs_db("x.db")(d), (d / "r.db").write_bytes((d / "x.db").read_bytes()[:3000]),
                                     (d / "x.db").unlink())),
    "wrong-schema": ("r.db", F.plain_sqlite("r.db", "CREATE TABLE runs(a, b)")),
    "newer-schema": ("r.db", F.plain_sqlite("r.db", "CREATE TABLE nsighttk_meta(key, value)",
                                            "INSERT INTO nsighttk_meta VALUES ('app', 'nsighttk')",
                                            "PRAGMA user_version = 99")),
    "other-app": ("r.db", F.plain_sqlite("r.db", "CREATE TABLE nsighttk_meta(key, value)",
                                         "INSERT INTO nsighttk_meta VALUES ('app', 'other')",
                                         "PRAGMA user_version = 3")),
    "an-nsys-export": ("r.db", F.copy("r.db", F.NSYS)),
    "directory": ("r.db", F.folder("r.db")),
    "fifo": ("r.db", F.fifo("r.db")),
    "dev-zero": ("r.db", F.symlink("r.db", "/dev/zero")),
    "symlink-loop": ("r.db", F.symlink_loop("r.db")),
    "parent-is-file": ("file/r.db", F.data("file", "x")),
    "name-too-long": (LONG_NAME + ".db", F.nothing),
    "path-too-long": (LONG_PATH, F.nothing),
    "read-only": ("r.db", lambda d: (F.runs_db("r.db")(d), (d / "r.db").chmod(0o444))),
    "right-version-other-columns": ("r.db", F.plain_sqlite(
        "r.db", "CREATE TABLE nsighttk_meta(key, value)", "INSERT INTO nsighttk_meta VALUES ('app', 'nsighttk')",
        "CREATE TABLE runs(id TEXT PRIMARY KEY, other TEXT)", "CREATE TABLE run_tables(run_id, name, rows)",
        "CREATE TABLE jobs(job_id)", "PRAGMA user_version = 3")),
    "schema-not-utf8": ("r.db", F.both(F.runs_db("r.db"), F.schema_not_utf8("r.db"))),
    "hostile-rows": ("r.db", lambda d: F.runs_db("r.db", [
        F.run_json(n, run_dir=str(d / "runs" / n)) for n in ("%", "_", "a%b", "[red]x", "a\x1bb", "..", "x y")])(d)),
}

DB_COMMANDS = {
    "list": ("runs", "list"),
    "list-json": ("runs", "list", "--json"),
    "show": ("runs", "show", "2026"),
    "show-percent": ("runs", "show", "%"),
    "rm": ("runs", "rm", "2026"),
    "rm-delete-underscore": ("runs", "rm", "--delete-files", "_"),
    "import": ("runs", "import", RD),
    "compare": ("compare", "2026", "good.sqlite"),
    "report": ("report", "20261122T100000Z-nsys-add"),
}


def runs_database() -> Iterable[Case]:
    for kind, (db, make) in DBS.items():
        fifo = kind == "fifo"
        setup = F.both(make, F.run_dir(RD, F.run_json(RD)))
        for cname, argv in DB_COMMANDS.items():
            writes = cname in ("rm", "rm-delete-underscore", "import")
            # a reading command leaves no -wal or -shm file beside the database
            yield Case(f"db/{kind}/{cname}", ("--db", db, *argv), setup, process=fifo and cname == "list",
                       timeout=20 if fifo else 60,
                       may_change=(db, f"{db}-wal", f"{db}-shm", f"{db}-journal") if writes else
                       (f"{RD}/report.html",),
                       keep_on_error=(f"{db}-wal", f"{db}-shm") if writes else (), group="db")


# ----------------------------------------------------------------------------- output targets

#: where a careless user may send output
BAD_OUTPUTS: dict[str, tuple[str, F.Maker]] = {
    "dev-zero": ("/dev/zero", F.nothing),
    "dev-full": ("/dev/full", F.nothing),
    "dev-null": ("/dev/null", F.nothing),
    "fifo": ("o.html", F.fifo("o.html")),
    "directory": ("o.html", F.folder("o.html")),
    "missing-folder": ("missing/deeper/o.html", F.nothing),
    "parent-is-file": ("file/o.html", F.data("file", "x")),
    "name-too-long": (LONG_NAME + ".html", F.nothing),
    "path-too-long": (LONG_PATH, F.nothing),
    "the-input": ("good.sqlite", F.nothing),
    "the-other-input": ("good.json", F.nothing),
    "symlink-to-input": ("o.html", F.symlink("o.html", "good.sqlite")),
    "symlink-loop": ("o.html", F.symlink_loop("o.html")),
    "existing-foreign": ("o.html", F.data("o.html", "<html>mine</html>")),
    "existing-huge-sparse": ("o.html", F.sparse("o.html", 3 * 2**30)),
    "empty-name": ("", F.nothing),
    "dash": ("-", F.nothing),
}


def output_targets() -> Iterable[Case]:
    for kind, (target, make) in BAD_OUTPUTS.items():
        fifo = kind == "fifo"
        writers = {
            "report": ("report", "good.sqlite", "-o", target),
            "report-force": ("report", "good.sqlite", "-o", target, "--force"),
            "compare-html": ("compare", "good.sqlite", "good.sqlite", "--html", target),
            "stats-o": ("stats", "good.sqlite", "-r", "cuda_gpu_sum", "-f", "csv", "-o", target),
            "stats-o-force": ("stats", "good.sqlite", "-r", "cuda_gpu_sum", "-o", target, "--force-overwrite"),
            "rules-o": ("rules", "good.sqlite", "-r", "gpu_gaps", "-f", "csv", "-o", target, "--force-overwrite"),
            "bench-csv": ("bench", "add", "--device", "cpu", "--sizes", "-5", "--csv", target),
            "bench-plot": ("bench", "add", "--device", "cpu", "--sizes", "0", "--plot", target),
        }
        for wname, argv in writers.items():
            change = (target, "missing", "reports") if kind in ("missing-folder", "empty-name", "dash") else ()
            if kind in ("existing-foreign", "existing-huge-sparse", "symlink-to-input", "the-other-input") \
                    and wname == "report-force":
                change = (target,)  # replaced as asked (a link is replaced, never what it points to)
            yield Case(f"output/{kind}/{wname}", argv, make, process=fifo and wname == "report",
                       timeout=20 if fifo else 60,
                       may_change=(*change, "reports") if wname.startswith(("stats", "rules")) else change,
                       group="output")
    # the input overwritten through a prefix: stats/rules -o P writes P_<report>.<ext>
    yield Case("output/prefix-hits-the-input/stats", ("stats", "p_cuda_gpu_sum.txt", "-r", "cuda_gpu_sum", "-o", "p",
                                                      "--force-overwrite"),
               F.copy("p_cuda_gpu_sum.txt", F.NSYS), group="output")
    yield Case("output/prefix-hits-the-input/rules", ("rules", "p_gpu_gaps.csv", "-r", "gpu_gaps", "-f", "csv", "-o",
                                                      "p", "--force-overwrite"),
               F.copy("p_gpu_gaps.csv", F.NSYS), group="output")


# ------------------------------------------------------------------------------ option values

SIZES = ["inf", "1e400", "-5", "2^20,2^20", ",,,", "1.5", "", "0", "2^99", "nan", "2^", "0x10", "9" * 5000, "1e6.5",
         "\u0661\u0662\u0663", "2^-1", " , ", "1,,2", "\n", "1;2", "2**20", "1e-3", "-0", "+inf", "2^20.5"]
BUDGETS = ["nan", "inf", "-inf", "-1", "1e400", "1e12", "abc", "", "0x10", "1e-400"]


def option_values() -> Iterable[Case]:
    def bad(cid: str, *argv: str, rcs: frozenset[int] = frozenset({2}), **kw: object) -> Case:
        return Case(f"option/{cid}", argv, rcs=rcs, group="option", **kw)  # type: ignore[arg-type]

    for i, s in enumerate(SIZES):
        yield bad(f"bench-sizes-{i}-{s[:12]!r}", "bench", "add", "--device", "cpu", "--sizes", s)
    for i, v in enumerate(BUDGETS):
        yield bad(f"bench-rep-ms-{i}-{v}", "bench", "add", "--device", "cpu", "--rep-ms", v, "--sizes", "2^10")
        if v == "1e-400":  # reads as 0.0: no warm-up, which is allowed
            continue
        yield bad(f"bench-warmup-ms-{i}-{v}", "bench", "add", "--device", "cpu", "--warmup-ms", v, "--sizes", "2^10")
    yield bad("bench-rep-ms-zero", "bench", "add", "--device", "cpu", "--rep-ms", "0", "--sizes", "2^10")
    for csv_kind, target, make in (("missing-folder", "missing/b.csv", F.nothing), ("dev-full", "/dev/full", F.nothing),
                                   ("fifo", "b.csv", F.fifo("b.csv")), ("folder", "b.csv", F.folder("b.csv")),
                                   ("long", LONG_NAME, F.nothing), ("parent-file", "file/b.csv", F.data("file", "x"))):
        yield bad(f"bench-csv-{csv_kind}", "bench", "add", "--device", "cpu", "--sizes", "2^10", "--rep-ms", "1",
                  "--csv", target, setup=make)
    for v in ("nosuch", "[red]x", "\x1b[31m", "a,,b", ",", "torch_add,torch_add"):
        yield bad(f"bench-variants-{v!r}", "bench", "add", "--device", "cpu", "--variants", v, "--sizes", "2^40",
                  rcs=frozenset({2}))
    for w in ("nosuch", "../../etc/passwd", "/dev/zero", "good.sqlite", "[red]x", "\x1b[31m", "", "-x"):
        yield bad(f"bench-workload-{w!r}", "bench", w, "--device", "cpu", "--sizes", "2^40")
    yield bad("bench-dtype", "bench", "add", "--dtype", "int4")
    yield bad("bench-device", "bench", "add", "--device", "tpu")
    yield bad("bench-arch", "bench", "add", "--arch", "sm_1", "--sizes", "2^10")
    yield bad("bench-size-too-big-for-cpu", "bench", "add", "--device", "cpu", "--sizes", "2^40")
    for w in ("0", "-1", str(10**12), "abc", "1e3", "", "5"):
        yield bad(f"width-{w}", "analyze", "good.sqlite", "--width", w, rcs=frozenset({0, 2}))
        yield bad(f"global-width-{w}", "--width", w, "runs", "list", rcs=frozenset({0, 2}))
    for i, it in enumerate(("(", "[", "*", "a" * 10_000, "\x1b[31m", "(a+)+$", "step \\d+", "", "dom:", ":")):
        yield bad(f"iteration-{i}", "analyze", "good.sqlite", "--iteration", it, rcs=frozenset({0, 2}))
        yield bad(f"iteration-nvtx-{i}", "analyze", "nvtx.sqlite", "--iteration", it, rcs=frozenset({0, 2}),
                  setup=F.copy("nvtx.sqlite", F.NSYS_NVTX))
    for r in ("", ",", "all,x", "[red]", "nosuch", "cuda_gpu_sum,,", "\x1b"):
        yield bad(f"stats-report-{r!r}", "stats", "good.sqlite", "-r", r, rcs=frozenset({0, 2}))
    yield bad("stats-format", "stats", "good.sqlite", "-f", "xml")
    for r in ("gpu_gaps:gap=abc", "gpu_gaps:gap=-1", "gpu_gaps:gap=1e400", "x:y=z", "gpu_gaps:rows=nan", ":",
              "gpu_gaps:gap", "gpu_gaps:nosuch=1", "gpu_gaps:start=9e999", "gpu_gaps:nvtx=[", "gpu_gaps:rows=-1"):
        yield bad(f"rules-{r!r}", "rules", "good.sqlite", "-r", r, rcs=frozenset({0, 2}))
    for a in ("sm_", "sm_99999999999999999999", "[red]", "9.", "-1", "H100\n", "sm_90;rm", ""):
        yield bad(f"arch-{a!r}", "arch", a, rcs=frozenset({0, 2}))
        yield bad(f"build-arch-{a!r}", "build", "add", "--arch", a, "--out-dir", "b")
    for t in ("nosuch", "[red]x", "\x1b[31m", "../../x", ""):
        yield bad(f"build-target-{t!r}", "build", t, "--out-dir", "b", rcs=frozenset({2, 3}))
    for v in ("nan", "-1", "inf", "0", "abc"):
        yield bad(f"nsys-timeout-{v}", "nsys", "nosuch_target", "--timeout", v, rcs=frozenset({2, 3}))
    yield bad("nsys-pytorch", "nsys", "nosuch_target", "--pytorch", "bogus", rcs=frozenset({2, 3}))
    for v in ("0", "-1", "abc"):
        yield bad(f"ncu-count-{v}", "ncu", "nosuch_target", "-c", v, rcs=frozenset({2, 3}))
    for v in ("a,b,c,d", "1,2", "-1,0,1,1", "1e400,1,1,1", "0,0,0,0", ",,,"):
        yield bad(f"torch-schedule-{v}", "torch", "square", "--device", "cpu", "--schedule", v)
    for opt, v in (("--size", "0"), ("--iters", "0"), ("--size", "-1"), ("--iters", "abc")):
        yield bad(f"torch{opt}-{v}", "torch", "square", "--device", "cpu", opt, v)
    for opt, v in (("--batch-sizes", "0"), ("--seq-lens", "-1"), ("--batch-sizes", "abc")):
        yield bad(f"model{opt}-{v}", "model", "bert", opt, v, "--device", "cpu")
    for opt, v in (("--size", "0"), ("--size", "-5"), ("--arch", "sm_1"), ("--variants", "nosuch")):
        yield bad(f"inspect{opt}-{v}", "inspect", "add", opt, v)
    for v in ("0", "-1", "abc"):
        yield bad(f"runs-list-n-{v}", "runs", "list", "-n", v)
    for ref in ("", "%", "_", ".", "/", "..", "\x1b[31m", "a" * 5000, "job:", "job:abc", ",", "a,,b", "nul\x00byte"):
        yield bad(f"runs-show-{ref[:10]!r}", "runs", "show", ref)
        yield bad(f"runs-rm-{ref[:10]!r}", "runs", "rm", "--delete-files", ref)
        yield bad(f"compare-{ref[:10]!r}", "compare", ref, "good.sqlite")
    for v in ("-1", "nan", "abc"):
        yield bad(f"compare-threshold-{v}", "compare", "good.sqlite", "good.sqlite", "--threshold", v)
        yield bad(f"compare-fail-if-slower-{v}", "compare", "good.sqlite", "good.sqlite", "--fail-if-slower", v)
    for opt, v in (("-J", "a\nb"), ("--time", "10\n"), ("--mem", "1G;rm -rf /"), ("--array", "0-3\n"),
                   ("-p", "$(id)"), ("--sbatch-arg", "--wrap=id\nid"), ("--module", "x\ny"), ("--gpus", "-1"),
                   ("--timeout", "nan")):
        yield bad(f"submit{opt}-{v[:8]!r}", "submit", "--dry-run", opt, v, "--", "bench", "add")
    yield bad("ranks-launch-unclosed", "ranks", "--launch", "'unclosed", "--", "x", rcs=frozenset({2, 3}))
    yield bad("ranks-none", "ranks")
    yield bad("ranks-width-missing", "ranks", "good.sqlite", "--width")
    yield bad("unknown-command", "nosuchcommand")
    yield bad("unknown-option", "stats", "good.sqlite", "--nosuch")


def hostile_names() -> Iterable[Case]:
    """Names are data: in file names given to reading commands, and in explain."""
    for i, name in enumerate(HOSTILE_NAMES):
        fname = name.replace("/", "_").replace("\x00", "") + ".sqlite"
        yield Case(f"names/{i}/explain", ("explain", name), rcs=frozenset({0, 2}), group="names")
        yield Case(f"names/{i}/analyze-file", ("analyze", fname), F.copy(fname, F.NSYS), group="names")
        yield Case(f"names/{i}/stats-missing-file", ("stats", "missing" + fname), group="names")
        yield Case(f"names/{i}/bench-target", ("bench", name, "--device", "cpu", "--sizes", "2^40"), group="names")
        yield Case(f"names/{i}/report-file", ("report", fname, "-o", "o.html"), F.copy(fname, F.NSYS), group="names")


# ------------------------------------------------------------------- every real capture as a base

#: damage applied to every nsys export under tests/fixtures (found by tests/fuzz/bases.py: an
#: export a change adds is a base from then on)
BASE_DAMAGE: dict[str, tuple[Callable[[Path], F.Maker], tuple[str, ...]]] = {
    # SQLite names the damaged schema entry in its own error message, in bytes that are not UTF-8
    "schema-not-utf8": (lambda src: F.both(F.copy("in.sqlite", src), F.schema_not_utf8("in.sqlite")),
                        ("stats", "analyze", "rules", "ranks")),
    # every kernel and CUDA API name 1 MiB long (quoted whole in a finding's sentence)
    "names-1MiB": (lambda src: F.huge_names("in.sqlite", src, 2**20), ("stats-csv-o", "analyze", "ranks")),
    # the file cut after its schema pages and followed by bytes of an executable
    "binary-tail": (lambda src: F.both(F.head("in.sqlite", src, 8192), F.append("in.sqlite", F.ELF)),
                    ("stats", "analyze")),
}


def every_base() -> Iterable[Case]:
    from fuzz.bases import FIXTURES, nsys_exports

    for src in nsys_exports():
        where = src.relative_to(FIXTURES).as_posix().removesuffix(".sqlite")
        for kind, (maker, readers) in BASE_DAMAGE.items():
            make = maker(src)
            for rname in readers:
                argv = tuple("in.sqlite" if a == "IN" else a for a in READERS[rname])
                yield Case(f"bases/{where}/{kind}/{rname}", argv, make, timeout=120, group="bases")


# ---------------------------------------------------------------- binary where text is expected

TASK_FILES: dict[str, F.Maker] = {
    "elf": F.data("tasks.txt", F.ELF),
    "latin-1": F.data("tasks.txt", "nsighttk bench caf\xe9\n".encode("latin-1")),
    "nul": F.data("tasks.txt", b"nsighttk bench add\n\x00\n"),
    "utf-16": F.data("tasks.txt", "nsighttk bench add\n".encode("utf-16")),
    "huge": F.data("tasks.txt", b"# " + b"x" * (2 * 2**20) + b"\n"),
    "one-long-word": F.data("tasks.txt", b"nsighttk bench " + b"a" * 100_000 + b"\n"),
    "gzip": F.gz("tasks.txt", b"nsighttk bench add\n"),
}


def text_inputs() -> Iterable[Case]:
    """Files read as text given binary, another encoding, or far too much: one line, exit 2."""
    for kind, make in TASK_FILES.items():
        yield Case(f"text/tasks-{kind}/submit", ("submit", "--dry-run", "--tasks", "tasks.txt"), make,
                   rcs=frozenset({2}), group="text")
    for kind, content in (("elf", F.ELF), ("latin-1", "{\"tool\": \"caf\xe9\"}".encode("latin-1"))):
        yield Case(f"text/run-json-{kind}/import", ("runs", "import", RD), F.run_dir(RD, content),
                   rcs=frozenset({2}), keep_on_error=("reports",), group="text")
    # a page a person wrote where a run directory's report.html goes: kept without --force
    yield Case("text/report-html-hand-written/report", ("report", RD),
               F.both(F.run_dir(RD, F.run_json(RD)), F.data(f"{RD}/report.html", "<p>my notes</p>")),
               rcs=frozenset({2}), expect="not written by nsighttk", group="text")
