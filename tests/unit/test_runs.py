"""The runs database and `nsighttk compare`: runs recorded, listed, shown, compared, re-imported and
removed; 8 concurrent writers x 50 runs lose nothing; foreign, newer and corrupt databases, unknown
ids and different targets are one clear line."""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import assert_exit, capture, fixture, run_cli

from nsighttk.analysis.compare import compare, items, pool, regressions, undecided
from nsighttk.cli import cli
from nsighttk.runs.db import SCHEMA_VERSION, RunsDB


def _bench(tmp_path: Path) -> dict:
    out = run_cli(["bench", "add", "--device", "cpu", "--variants", "torch_add,operator", "--sizes", "4096",
                   "--rep-ms", "5", "--warmup-ms", "1", "--json"])
    return json.loads(out)


def test_bench_runs_are_recorded_listed_shown_compared_reimported_and_removed(tmp_path: Path) -> None:
    a, b = _bench(tmp_path), _bench(tmp_path)
    runs = json.loads(run_cli(["runs", "list", "--json"]))
    assert [r["id"] for r in runs] == [Path(b["run_dir"]).name, Path(a["run_dir"]).name]
    assert {r["tool"] for r in runs} == {"bench"} and {r["target"] for r in runs} == {"add"}
    shown = json.loads(run_cli(["runs", "show", runs[0]["id"], "--json"]))
    assert {v["variant"] for v in shown["tables"]["variants"]} == {"torch_add", "operator"}
    cmp = json.loads(run_cli(["compare", runs[1]["id"], runs[0]["id"], "--json"]))
    assert {r["name"] for r in cmp["rows"]} == {"torch_add @ 4,096", "operator @ 4,096"}
    assert all(r["before_ns"] > 0 and r["after_ns"] > 0 for r in cmp["rows"])
    # a second database from the run directories alone: same rows (what a cluster copy-back needs)
    db2 = tmp_path / "other.db"
    ids = run_cli(["--db", str(db2), "runs", "import", str(tmp_path / "reports")]).split()
    assert sorted(ids) == sorted(r["id"] for r in runs)
    run_cli(["--db", str(db2), "runs", "import", str(tmp_path / "reports")])  # idempotent
    again = RunsDB(db2)
    first = RunsDB(tmp_path / "reports" / "nsighttk.db")
    assert len(again.runs()) == 2 and again.tables(ids[0]) == first.tables(ids[0])
    run_cli(["runs", "rm", runs[1]["id"]])
    assert [r["id"] for r in json.loads(run_cli(["runs", "list", "--json"]))] == [runs[0]["id"]]
    assert Path(a["run_dir"]).is_dir()  # forgetting a run keeps its directory



@pytest.mark.parametrize("fmt", [[], ["--json"]])
def test_bench_says_which_run_it_wrote(fmt: list[str]) -> None:
    res = CliRunner().invoke(cli, ["bench", "add", "--device", "cpu", "--variants", "torch_add", "--sizes", "4096",
                                   "--rep-ms", "2", "--warmup-ms", "1", *fmt])
    assert_exit(res, 0)
    [line] = res.stderr.splitlines()
    assert line.startswith("run directory: ")
    run_dir = Path(line.removeprefix("run directory: "))
    [run] = json.loads(run_cli(["runs", "list", "--json"]))
    assert run_dir.is_dir() and run_dir.name == run["id"]

def test_compare_export_files_and_the_regression_gate(tmp_path: Path) -> None:
    add = str(capture("add"))
    same = json.loads(run_cli(["compare", add, add, "--json", "--fail-if-slower", "0"]))
    assert {r["change"] for r in same["rows"]} == {"same"}
    err = run_cli(["compare", add, str(capture("add_grid_stride"))], code=2)
    assert "different targets (add vs add_grid_stride)" in err and "--force" in err
    forced = json.loads(run_cli(["compare", add, str(capture("add_grid_stride")), "--force", "--json"]))
    changes = {(r["kind"], r["change"]) for r in forced["rows"]}
    assert ("kernel", "new") in changes and ("kernel", "vanished") in changes
    # one run a side, 7.3% slower: the gate cannot tell a change from noise, and fails saying so
    r0, r1 = (str(fixture("h100-ranks", f"rank{i}.sqlite")) for i in (0, 1))
    err = run_cli(["compare", r0, r1, "--force", "--fail-if-slower", "5"], code=1)
    assert "1 item(s) more than 5% slower with one run on a side" in err and "(A1,A2,A3)" in err
    run_cli(["compare", r0, r1, "--force", "--fail-if-slower", "10"])


def _side(mean: float, sd: float, n: int = 100) -> pd.DataFrame:
    return items({"kernels": [{"Name": "k", "Instances": n, "Avg (ns)": mean, "StdDev (ns)": sd}]})


def test_one_run_a_side_cannot_tell_a_change_from_noise() -> None:
    # 10% slower with a tight per-call spread, but one run each: how much runs differ is unknown
    one = compare(pool([_side(1000, 10)]), pool([_side(1100, 10)]))
    assert one.loc[0, "change"] == "unclear" and len(regressions(one, 5)) == 0
    assert len(undecided(one, 5)) == 1 and len(undecided(one, 20)) == 0
    assert pd.isna(one.loc[0, "ci_low_pct"]) and one.loc[0, "change_pct"] == pytest.approx(10.0)
    # within the threshold it is the same, one run or not
    assert compare(pool([_side(1000, 10)]), pool([_side(1010, 10)])).loc[0, "change"] == "same"
    # three runs a side that scatter by 1%: the 10% change is real
    before = pool([_side(990, 10), _side(1000, 10), _side(1010, 10)])
    after = pool([_side(1090, 10), _side(1100, 10), _side(1110, 10)])
    real = compare(before, after)
    assert real.loc[0, "change"] == "slower" and len(regressions(real, 5)) == 1 and len(regressions(real, 20)) == 0
    # an item seen in one run of three on a side has one run of its own there
    lone = compare(before, pool([_side(1100, 10), _side(1100, 10).iloc[:0], _side(1100, 10).iloc[:0]]))
    assert lone.loc[0, "change"] == "unclear"


def test_repeated_runs_widen_the_interval_so_noise_is_not_a_regression() -> None:
    # the same means, but the runs of each side scatter by +-15% from run to run: not a regression
    before = pool([_side(850, 10), _side(1000, 10), _side(1150, 10)])
    after = pool([_side(950, 10), _side(1100, 10), _side(1250, 10)])
    noisy = compare(before, after)
    assert noisy.loc[0, "change"] == "same" and noisy.loc[0, "ci_low_pct"] < 0 < noisy.loc[0, "ci_high_pct"]
    assert noisy.loc[0, "change_pct"] == pytest.approx(10.0)


def _write_many(args: tuple[str, int]) -> int:
    path, worker = args
    db = RunsDB(path)
    for i in range(50):
        rid = f"w{worker}-r{i}"
        db.record({"run_dir": f"/x/{rid}", "tool": "bench", "target": "add", "status": "ok",
                   "started_utc": f"2026-01-01T00:00:{i:02d}"}, {"variants": [{"variant": "v", "i": i}]})
    return worker


def test_eight_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    with multiprocessing.get_context("spawn").Pool(8) as p:
        assert sorted(p.map(_write_many, [(path, w) for w in range(8)])) == list(range(8))
    db = RunsDB(path)
    assert len(db.runs()) == 400
    assert db.db.execute("SELECT count(*) FROM run_tables").fetchone()[0] == 400


def test_bad_databases_and_ids_are_one_line(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as c:
        c.execute("CREATE TABLE orders (id INTEGER)")
    assert "not an nsighttk runs database" in run_cli(["--db", str(foreign), "runs", "list"], code=2)
    text = tmp_path / "notes.db"
    text.write_text("hello")
    assert "not SQLite" in run_cli(["--db", str(text), "runs", "list"], code=2)
    assert text.read_text() == "hello"  # nothing the user had is touched
    newer = tmp_path / "newer.db"
    RunsDB(newer)
    with sqlite3.connect(newer) as c:
        c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    err = run_cli(["--db", str(newer), "runs", "list"], code=2)
    assert "newer nsighttk" in err and "upgrade nsighttk" in err
    ok = tmp_path / "ok.db"
    RunsDB(ok)
    assert "unknown run 'nope'" in run_cli(["--db", str(ok), "runs", "show", "nope"], code=2)
    assert "unknown run 'nope'" in run_cli(["--db", str(ok), "compare", "nope", "nope"], code=2)
    assert "no run.json" in run_cli(["--db", str(ok), "runs", "import", str(tmp_path)], code=2)


def test_an_older_database_is_migrated_in_place(tmp_path: Path) -> None:
    from nsighttk.runs import db as runsdb

    path = tmp_path / "old.db"
    old = RunsDB.__new__(RunsDB)
    old.path = path
    conn = sqlite3.connect(path, isolation_level=None)
    import sqlite_utils

    old.db = sqlite_utils.Database(conn)
    runsdb.MIGRATIONS[0](old.db)  # a schema-1 database, as the first release wrote it
    old.db.table("nsighttk_meta").insert_all([{"key": "app", "value": "nsighttk"},
                                              {"key": "schema_version", "value": "1"}])
    conn.execute("PRAGMA user_version = 1")
    old.db.table("runs").insert({"id": "r1", "tool": "nsys", "target": "add", "status": "ok"})
    conn.close()
    db = RunsDB(path)
    assert db.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.get("r1")["job_id"] is None and "jobs" in db.db.table_names()
    shutil.rmtree(tmp_path / "reports", ignore_errors=True)


def test_reading_commands_never_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "sub" / "dir" / "runs.db"
    listed = run_cli(["--db", str(missing), "runs", "list"])
    assert f"no runs recorded yet: {missing} does not exist" in listed
    assert json.loads(run_cli(["--db", str(missing), "runs", "list", "--json"])) == []
    for args in (["runs", "show", "x"], ["runs", "rm", "x"], ["compare", "a", "b"]):
        assert "no runs recorded yet" in run_cli(["--db", str(missing), *args], code=2)
    assert not (tmp_path / "sub").exists() and not (tmp_path / "reports").exists()


def test_one_run_name_from_two_folders_keeps_both(tmp_path: Path) -> None:
    """Run directories are named by second, tool and target: two machines (or two array tasks) can
    produce the same name; the second gets its own id instead of replacing the first."""
    db = RunsDB(tmp_path / "x.db")
    name = "20260101T000000Z-bench-add"
    a = db.record({"run_dir": str(tmp_path / "a" / name), "tool": "bench", "target": "add"})
    b = db.record({"run_dir": str(tmp_path / "b" / name), "tool": "bench", "target": "add"})
    assert (a, b) == (name, f"{name}-2")
    assert db.record({"run_dir": str(tmp_path / "a" / name), "tool": "bench", "target": "add"}) == a  # re-import
    assert len(db.runs()) == 2


def test_the_database_opens_with_sqlite_utils_and_datasette_as_it_is(tmp_path: Path) -> None:
    import asyncio
    import subprocess
    import sys

    from datasette.app import Datasette

    path = tmp_path / "runs.db"
    db = RunsDB(path)
    rid = db.record({"run_dir": str(tmp_path / "20260101T000000Z-nsys-add"), "tool": "nsys", "target": "add",
                     "status": "ok"}, {"kernels": [{"Name": "add", "Avg (ns)": 1.0}]})
    out = subprocess.run([sys.executable, "-m", "sqlite_utils", "tables", str(path), "--counts"],
                         capture_output=True, text=True, check=True).stdout
    counts = {t["table"]: t["count"] for t in json.loads(out)}
    assert counts["runs"] == 1 and counts["run_tables"] == 1 and counts["jobs"] == 0
    ds = Datasette([str(path)])
    page = asyncio.run(ds.client.get(f"/{path.stem}/runs.json?_shape=array"))
    assert page.status_code == 200 and [r["id"] for r in page.json()] == [rid]


def _fake_run(root: Path, name: str, tool: str = "nsys", started: str = "2026-11-22T10:00:00+00:00") -> Path:
    d = root / name
    (d / "raw").mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"tool": tool, "target": "add", "status": "ok", "started_utc": started,
                                            "run_dir": str(d)}))
    return d


def test_ids_match_literally_and_only_the_runs_own_directory_is_deleted(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`runs rm --delete-files .` (or %, _, /, an empty id) once matched every run through SQL LIKE
    and deleted a directory nobody named.  Ids match literally; deletion needs proof."""
    root = tmp_path / "reports"
    a = _fake_run(root, "20261122T100000Z-nsys-add")
    b = _fake_run(root, "20261122T100001Z-nsys-add")
    victim = tmp_path / "precious"
    victim.mkdir()
    (victim / "thesis.tex").write_text("years of work")
    db_path = tmp_path / "r.db"
    db = RunsDB(db_path)
    for d in (a, b):
        db.record({**json.loads((d / "run.json").read_text()), "run_dir": str(d)})
    # a third run whose recorded directory is someone else's folder
    db.record({"tool": "nsys", "target": "x", "status": "ok", "started_utc": "2026-11-22T10:00:02+00:00",
               "run_dir": str(victim), "id": "zz-victim"})
    monkeypatch.chdir(tmp_path)
    for ref in (".", "%", "_", "/", "", " ", "2026%", "2026_1122", "..", "\n"):
        err = run_cli(["--db", str(db_path), "runs", "rm", "--delete-files", ref], code=2)
        assert err.count("\n") == 1 and ("not a run id" in err or "unknown run" in err), (ref, err)
    assert "ambiguous" in run_cli(["--db", str(db_path), "runs", "rm", "--delete-files", "2026"], code=2)
    assert len(RunsDB(db_path).runs()) == 3 and a.is_dir() and b.is_dir()
    # the victim's row: refused, nothing removed (not even the row)
    err = run_cli(["--db", str(db_path), "runs", "rm", "--delete-files", "precious"], code=2)
    assert "not deleting" in err and "run.json" in err
    assert (victim / "thesis.tex").read_text() == "years of work" and len(RunsDB(db_path).runs()) == 3
    # a run.json of another run in the recorded directory: refused
    (b / "run.json").write_text(json.dumps({"tool": "ncu", "run_dir": str(b), "started_utc": "x"}))
    assert "does not describe this run" in run_cli(["--db", str(db_path), "runs", "rm", "--delete-files",
                                                    b.name], code=2)
    # a unique literal prefix, and a run directory path, delete exactly that run
    run_cli(["--db", str(db_path), "runs", "rm", "--delete-files", "20261122T100000"])
    assert not a.exists() and b.is_dir() and victim.is_dir()
    assert {r["id"] for r in RunsDB(db_path).runs()} == {b.name, "precious"}
    run_cli(["--db", str(db_path), "runs", "rm", str(b)])  # by path, without --delete-files: kept
    assert b.is_dir()


def _one_run(folder: Path) -> Path:
    d = folder / "runs" / "20261122T100000Z-bench-add"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"tool": "bench", "target": "add", "status": "ok"}))
    return d


@pytest.mark.parametrize("table", ["runs", "jobs", "run_tables"])
def test_the_right_version_with_other_columns_is_one_line(tmp_path: Path, table: str) -> None:
    """A database at this schema version whose table lacks its columns is refused as a foreign
    one, by every command that reads or writes it (not ``no such column`` from a query)."""
    path = tmp_path / "odd.db"
    RunsDB(path).close()
    with sqlite3.connect(path) as c:
        c.execute(f"DROP TABLE {table}")
        c.execute(f"CREATE TABLE {table} (id TEXT PRIMARY KEY, other TEXT)")
    run = _one_run(tmp_path)
    for args in (["runs", "list"], ["runs", "jobs"], ["runs", "show", "x"], ["runs", "import", str(run)]):
        err = run_cli(["--db", str(path), *args], code=2)
        assert "not an nsighttk runs database" in err and f"{table}: no column" in err, (args, err)


def test_a_schema_whose_sqlite_message_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    """SQLite names a damaged schema entry in its error; where that name is not UTF-8 the message
    is shown with replacement characters, not as a UnicodeDecodeError."""
    path = tmp_path / "bad.db"
    RunsDB(path).close()
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA writable_schema = ON")
        c.execute("INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES "
                  "('table', CAST(X'78FF79' AS TEXT), 'x', 0, CAST(X'435245415445205441424C4520FF28' AS TEXT))")
    run = _one_run(tmp_path)
    for args in (["runs", "list"], ["runs", "show", "x"], ["runs", "import", str(run)]):
        err = run_cli(["--db", str(path), *args], code=2)
        assert "x\ufffdy" in err, (args, err)


def test_reading_leaves_no_wal_or_shm_files_behind(tmp_path: Path) -> None:
    """A WAL database read by ``runs list``/``show``/``jobs``: nothing beside it afterwards."""
    path = tmp_path / "runs.db"
    RunsDB(path).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db"]
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    c.close()
    before = path.read_bytes()
    for args in (["runs", "show", "nope"], ["runs", "list"], ["runs", "jobs"], ["compare", "a", "b"]):
        run_cli(["--db", str(path), *args], code=2 if args[-1] in ("nope", "b") else 0)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db"], args
    assert path.read_bytes() == before
