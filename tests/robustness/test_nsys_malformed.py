"""Malformed nsys SQLite exports: real fixtures copied and damaged one way each.

Every reading command must load what is sound, drop or flag the rest with a note saying how many
rows and why, never print an impossible number (average outside [min, max], negative times, a
wrapped-around total), exit 0 or 2 with at most one error line and no traceback, and leave the
input byte-identical.
"""

from __future__ import annotations

import csv
import hashlib
import io
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import capture, mutate

from nsighttk.cli import cli
from nsighttk.load.nsys_sqlite import load_nsys_sqlite

K = "CUPTI_ACTIVITY_KIND_KERNEL"
R = "CUPTI_ACTIVITY_KIND_RUNTIME"
ALL_EVENTS = (K, R, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "NVTX_EVENTS")




def loosen(table: str) -> tuple[str, ...]:
    """SQL recreating ``table`` without its NOT NULL constraints (so NULLs can be written)."""
    return (f"CREATE TABLE loose AS SELECT * FROM {table}", f"DROP TABLE {table}",
            f"ALTER TABLE loose RENAME TO {table}")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception  # a traceback: the test fails with it
    return res.exit_code, res.stdout, res.stderr


def check_commands(f: Path) -> dict[str, str]:
    """stats (every report, CSV) and analyze on ``f``: exit 0, input untouched, numbers possible.
    Returns the CSV text of each report."""
    before = digest(f)
    code, _, err = run("stats", str(f), "-r", "all", "-f", "csv", "-o", str(f.parent / "out"), "--force-overwrite")
    assert code == 0, err
    texts = {p.name.removeprefix("out_").removesuffix(".csv"): p.read_text() for p in f.parent.glob("out_*.csv")}
    for report, text in texts.items():
        check_numbers(report, text)
    code, _, err = run("analyze", str(f), "--json")
    assert code == 0, err
    assert digest(f) == before
    return texts


def check_numbers(report: str, text: str) -> None:
    """Averages and medians inside [min, max], no negative time or count."""
    rows = list(csv.DictReader(io.StringIO(text)))
    for row in rows:
        for prefix in ("", "Proj "):
            lo, hi = row.get(f"{prefix}Min (ns)"), row.get(f"{prefix}Max (ns)")
            if lo and hi:
                for stat in (f"{prefix}Avg (ns)", f"{prefix}Med (ns)"):
                    assert Decimal(lo) <= Decimal(row[stat]) <= Decimal(hi), (report, stat, row)
        for col, value in row.items():
            if value and ("Time" in col or "Instances" in col or col in ("Count", "Num Calls")):
                assert Decimal(value) >= 0, (report, col, row)


def test_text_blob_and_null_in_integer_columns(tmp_path: Path) -> None:
    f = mutate(tmp_path, *loosen(K),
               f"UPDATE {K} SET start = 'yesterday' WHERE rowid = 1",
               f"UPDATE {K} SET \"end\" = x'00ff' WHERE rowid = 2",
               f"UPDATE {K} SET start = NULL WHERE rowid = 3",
               f"UPDATE {K} SET gridX = 'wide', blockY = x'01', correlationId = NULL WHERE rowid = 4",
               f"UPDATE {R} SET \"end\" = 1.5 WHERE rowid = 5")
    p = load_nsys_sqlite(f)
    assert len(p.kernels) == 22 and p.kernels["grid_x"].isna().sum() == 1
    assert len(p.api) == 1222
    assert any(n.startswith("kernels: 3 row(s) dropped") for n in p.notes), p.notes
    assert any(n.startswith("api: 1 row(s) dropped") for n in p.notes), p.notes
    check_commands(f)


def test_null_names_and_missing_or_duplicate_string_ids(tmp_path: Path) -> None:
    con = sqlite3.connect(capture("streams_demo").as_uri() + "?mode=ro", uri=True)
    first, second = (r[0] for r in con.execute(f"SELECT DISTINCT demangledName FROM {K} LIMIT 2"))
    con.close()
    f = mutate(tmp_path, *loosen(K),
               f"UPDATE {K} SET demangledName = NULL WHERE rowid = 1",
               f"DELETE FROM StringIds WHERE id = {first}",
               # StringIds without its primary key, holding one id twice
               "CREATE TABLE s2 AS SELECT * FROM StringIds", "DROP TABLE StringIds",
               "ALTER TABLE s2 RENAME TO StringIds",
               f"INSERT INTO StringIds (id, value) VALUES ({second}, 'a second name for the same id')")
    p = load_nsys_sqlite(f)
    names = set(p.kernels["name"].dropna())
    assert "a second name for the same id" not in names and len(p.kernels) == 25
    assert p.kernels["name"].isna().sum() >= 1
    texts = check_commands(f)
    assert "a second name for the same id" not in texts["cuda_gpu_kern_sum"]


@pytest.mark.parametrize("unknown", ["(SELECT max(id) + 1 FROM StringIds)", "2000000000"])
def test_runtime_calls_without_a_name_id_are_one_unnamed_group(tmp_path: Path, unknown: str) -> None:
    """Calls whose nameId is NULL, or names no string, are summed as a group of their own with no
    name, whatever width the ids are kept in (16 bits, 32); every other function's counts are SQLite's."""
    f = mutate(tmp_path, *loosen(R), f"UPDATE {R} SET nameId = NULL WHERE rowid % 7 = 0",
               f"UPDATE {R} SET nameId = {unknown} WHERE rowid % 11 = 0")  # no such string
    con = sqlite3.connect(f)
    want = dict(con.execute(f"SELECT s.value, count(*) FROM {R} AS r JOIN StringIds AS s ON s.id = r.nameId "
                            "GROUP BY r.nameId").fetchall())
    unnamed = {n for (n,) in con.execute(f"SELECT count(*) FROM {R} WHERE nameId IS NULL UNION ALL "
                                         f"SELECT count(*) FROM {R} WHERE nameId NOT IN (SELECT id FROM StringIds)")}
    con.close()
    from nsighttk.analysis.nsys.gpu import api_display_name, cuda_api_sum

    p = load_nsys_sqlite(f)
    t = cuda_api_sum(p).frame
    assert p.arrays("api", ["name_id"], narrow=True)["name_id"].dtype == ("int16" if "max" in unknown else "int32")
    named = t[t["Name"].notna()]
    got = dict(zip(named["Name"], named["Num Calls"], strict=True))
    assert got == {api_display_name(k): v for k, v in want.items()}
    assert set(t.loc[t["Name"].isna(), "Num Calls"]) == unnamed and t["Name"].isna().sum() == 2
    check_commands(f)


def test_sums_beyond_int64_are_exact(tmp_path: Path) -> None:
    big = 2**62
    same_name = f"SELECT rowid FROM {K} WHERE demangledName = (SELECT demangledName FROM {K} GROUP BY 1 " \
                "HAVING count(*) >= 3 LIMIT 1) LIMIT 3"
    f = mutate(tmp_path, f"UPDATE {K} SET \"end\" = start + {big} WHERE rowid IN ({same_name})")
    texts = check_commands(f)
    top = next(csv.DictReader(io.StringIO(texts["cuda_gpu_kern_sum"])))
    assert int(top["Total Time (ns)"]) >= 3 * big  # one group's total beyond int64, not wrapped around
    assert int(top["Max (ns)"]) == big and int(top["Instances"]) >= 3


def test_negative_durations_and_end_before_start_are_dropped(tmp_path: Path) -> None:
    f = mutate(tmp_path, f"UPDATE {K} SET \"end\" = start - 15190000 WHERE rowid <= 5",
               "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET \"end\" = start - 1 WHERE rowid = 1",
               "UPDATE NVTX_EVENTS SET \"end\" = start - 7 WHERE rowid = (SELECT min(rowid) FROM NVTX_EVENTS)")
    p = load_nsys_sqlite(f)
    assert len(p.kernels) == 20 and (p.kernels["duration_ns"] >= 0).all()
    assert len(p.memcpy) == 11 and len(p.nvtx) == 15
    notes = " | ".join(p.notes)
    assert "kernels: 5 row(s) dropped" in notes and "memcpy: 1 row(s) dropped" in notes and "nvtx: 1 range(s)" in notes
    check_commands(f)
    code, out, _ = run("analyze", str(f), "--json")
    assert code == 0 and '"gpu_busy_ns": -' not in out


def test_every_event_at_one_instant(tmp_path: Path) -> None:
    f = mutate(tmp_path, *(f'UPDATE {t} SET start = 1000, "end" = 1000' for t in ALL_EVENTS))
    texts = check_commands(f)
    assert texts["cuda_gpu_kern_sum"].splitlines()[1].startswith(",0,")  # no percentage of a zero total


def test_meta_table_without_value_column(tmp_path: Path) -> None:
    f = mutate(tmp_path, "ALTER TABLE META_DATA_EXPORT DROP COLUMN value")
    p = load_nsys_sqlite(f)
    assert p.meta["tool_version"] is None and any("META_DATA_EXPORT" in n for n in p.notes)
    check_commands(f)


@pytest.mark.parametrize("keep", [0.25, 0.5, 0.9])
def test_truncated_file_is_one_line_and_exit_2(tmp_path: Path, keep: float) -> None:
    data = capture("streams_demo").read_bytes()
    f = tmp_path / "truncated.sqlite"
    f.write_bytes(data[: int(len(data) * keep)])
    before = digest(f)
    for args in (["stats", str(f), "-r", "all", "-f", "csv"], ["analyze", str(f)]):
        code, _, err = run(*args)
        assert code == 2, (args, err)
        assert (len(err.strip().splitlines()) == 1 and "truncated" in err) or "corrupt" in err, err
    assert digest(f) == before


def test_a_schema_whose_sqlite_message_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    """SQLite's own error names the damaged schema entry, bytes that are not UTF-8 included:
    every reading command says so in one line, the bytes shown as replacement characters."""
    f = tmp_path / "schema.sqlite"
    f.write_bytes(capture("add").read_bytes())
    with sqlite3.connect(f) as c:
        c.execute("PRAGMA writable_schema = ON")
        c.execute("INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) VALUES "
                  "('table', CAST(X'78FF79' AS TEXT), 'x', 0, CAST(X'435245415445205441424C4520FF28' AS TEXT))")
    c.close()
    before = digest(f)
    for args in (["stats", str(f)], ["analyze", str(f), "--json"], ["rules", str(f)], ["report", str(f), "--json"],
                 ["ranks", str(f), str(capture("add"))]):
        code, _, err = run(*args)
        assert code == 2 and len(err.strip().splitlines()) == 1, (args, err)
        assert "corrupt" in err and "x\ufffdy" in err, (args, err)
    assert digest(f) == before


@pytest.mark.parametrize("seed", range(6))
def test_pages_overwritten_with_garbage(tmp_path: Path, seed: int) -> None:
    """Pages of the file replaced by bytes that are not SQLite: exit 0 (damage in pages no report
    reads) or 2 with one line, never a traceback."""
    import random

    data = bytearray(capture("streams_demo").read_bytes())
    rng = random.Random(seed)
    page = 4096
    for _ in range(3):
        at = rng.randrange(1, len(data) // page) * page
        data[at:at + page] = bytes(rng.randrange(256) for _ in range(page))
    f = tmp_path / "garbled.sqlite"
    f.write_bytes(bytes(data))
    before = digest(f)
    for args in (["stats", str(f), "-r", "all", "-f", "csv"], ["analyze", str(f)]):
        code, _, err = run(*args)
        assert code in (0, 2), (args, err)
        if code == 2:
            assert len(err.strip().splitlines()) == 1, err
    assert digest(f) == before


def test_event_table_without_rowid(tmp_path: Path) -> None:
    f = mutate(tmp_path, "CREATE TABLE k2 (start INTEGER, \"end\" INTEGER, deviceId, contextId, greenContextId, "
                         "streamId, correlationId, globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, "
                         "blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, "
                         "PRIMARY KEY (start, correlationId)) WITHOUT ROWID",
               f"INSERT INTO k2 SELECT start, \"end\", deviceId, contextId, greenContextId, streamId, correlationId, "
               f"globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, "
               f"staticSharedMemory, dynamicSharedMemory FROM {K}", f"DROP TABLE {K}", f"ALTER TABLE k2 RENAME TO {K}")
    assert len(load_nsys_sqlite(f).kernels) == 25
    check_commands(f)


def test_nvtx_names_from_registered_strings_text_or_nothing(tmp_path: Path) -> None:
    """A range's name is its registered string, else its own text, else "": ranges named each way,
    a registered id with no string, text that is not text, and both missing, in one export."""
    con = sqlite3.connect(capture("streams_demo").as_uri() + "?mode=ro", uri=True)
    rows = [r[0] for r in con.execute("SELECT rowid FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71) "
                                      "ORDER BY rowid")]
    con.close()
    assert len(rows) >= 8
    f = mutate(tmp_path, *loosen("NVTX_EVENTS"),
               "INSERT INTO StringIds (id, value) VALUES (900001, 'registered one'), (900002, 'registered two')",
               f"UPDATE NVTX_EVENTS SET textId = 900001, text = NULL WHERE rowid IN ({rows[0]}, {rows[3]})",
               f"UPDATE NVTX_EVENTS SET textId = 900002 WHERE rowid = {rows[1]}",  # a string id and text: the id
               f"UPDATE NVTX_EVENTS SET textId = 999999 WHERE rowid = {rows[2]}",  # no such string: its text
               f"UPDATE NVTX_EVENTS SET textId = NULL, text = NULL WHERE rowid = {rows[4]}",  # nothing: ""
               f"UPDATE NVTX_EVENTS SET text = x'41424344' WHERE rowid = {rows[5]}",  # a blob is no name
               f"UPDATE NVTX_EVENTS SET text = 12345 WHERE rowid = {rows[6]}",  # (stored as text: a name)
               # text whose bytes are not all UTF-8: replaced, as the connection's text factory does
               f"UPDATE NVTX_EVENTS SET textId = NULL, text = CAST(x'ff41c3a9' AS TEXT) WHERE rowid = {rows[7]}")
    con = sqlite3.connect(f.as_uri() + "?mode=ro", uri=True)
    con.text_factory = lambda raw: raw.decode("utf-8", "replace")
    expected = [r[0] for r in con.execute(
        "SELECT coalesce((SELECT value FROM StringIds s WHERE s.id = e.textId), "
        "CASE WHEN typeof(e.text) = 'text' THEN e.text END, '') FROM NVTX_EVENTS e "
        "WHERE eventType IN (59, 60, 70, 71) ORDER BY rowid")]
    con.close()
    assert expected[:2] == ["registered one", "registered two"] and expected[4:6] == ["", ""]
    assert expected[7] == "\ufffdA\u00e9"
    got = load_nsys_sqlite(f).table("nvtx", ["name"])["name"].tolist()
    assert got == expected
    check_commands(f)
