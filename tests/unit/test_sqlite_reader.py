"""Columns read by nsighttk.load.sqlite_columns (SQLite through ADBC, a chunk of rows a query)
equal SQLite's own answers as Python's ``sqlite3`` gives them row by row: an integer where the
value is one, INT_NULL for anything else (text, real, blob, NULL).

Every table here is small, so each test reads it through ADBC as a large one would
(``SMALL_ROWS`` set to 0); the last test checks that a small table takes ``sqlite3`` alone.

Sound exports must come through ADBC whole (no chunk read through ``sqlite3``); unusual ones
(values that are not integers, added columns, overflow pages, other page sizes, WAL, no rowid,
negative and sparse rowids, durations beyond int64) must still give SQLite's answers; damaged
files must give arrays or the one-line corrupt-file error, never another exception.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from nsighttk.encoding import widen
from nsighttk.errors import InputFileError
from nsighttk.load import sqlite_columns
from nsighttk.load.nsys_schema import DURATION_SQL, NVTX_WHERE
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import INT_NULL

FIXTURES = sorted(Path(__file__).parents[1].joinpath("fixtures").rglob("*.sqlite"))
SMALL = Path(__file__).parents[1] / "fixtures" / "h200-nsys2025.3" / "streams_demo.sqlite"
K, R, N = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"


@pytest.fixture(autouse=True)
def _through_adbc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_columns, "SMALL_ROWS", 0)


def _int_columns(path: Path, table: str) -> list[str]:
    con = sqlite3.connect(path)
    try:
        return [r[1] for r in con.execute(f'PRAGMA table_info("{table}")') if "INT" in r[2].upper()]
    finally:
        con.close()


def _queries(path: Path) -> list[tuple[str, list[str], str]]:
    """What the loader asks of each event table (durations, every integer column) and of NVTX ranges."""
    con = sqlite3.connect(path)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    con.close()
    out = []
    for t in sorted(tables):
        if t.startswith("CUPTI_ACTIVITY_KIND_") or t == N:
            cols = [f'"{c}"' for c in _int_columns(path, t)]
            exprs = ["rowid", *cols] + ([DURATION_SQL] if {'"start"', '"end"'} <= set(cols) else [])
            out.append((t, exprs, NVTX_WHERE if t == N else ""))
    return out


def _sqlite(path: Path, table: str, exprs: list[str], where: str) -> list[list[int]]:
    """SQLite's answer, row by row through ``sqlite3``: integers, INT_NULL for any other value."""
    con = sqlite3.connect(path)
    con.text_factory = bytes
    try:
        rows = con.execute(f'SELECT {", ".join(exprs)} FROM "{table}" WHERE {where or 1}').fetchall()
    finally:
        con.close()
    return [[v if type(v) is int else INT_NULL for v in col] for col in zip(*rows, strict=True)] \
        if rows else [[] for _ in exprs]


def read(path: Path, table: str, exprs: list[str], where: str = ""
         ) -> tuple[list[np.ndarray] | str, list[tuple[str, str]]]:
    """The arrays (or the error line) of one read, and the chunks read through ``sqlite3``."""
    reader = sqlite_columns.Reader(path)
    try:
        return reader.read(table, exprs, where), reader.by_stdlib
    except InputFileError as ex:
        return str(ex), reader.by_stdlib
    finally:
        reader.close()


def same(path: Path, table: str, exprs: list[str], where: str) -> list[tuple[str, str]]:
    """The reader gives SQLite's answer; returns the chunks it read through ``sqlite3``."""
    got, by_stdlib = read(path, table, exprs, where)
    assert not isinstance(got, str), got
    want = _sqlite(path, table, exprs, where)
    assert len(got) == len(exprs)
    for e, a, b in zip(exprs, got, want, strict=True):
        assert a.dtype.kind == "i" and widen(a).tolist() == b, (table, e)
    return by_stdlib


def variant(tmp_path: Path, *sql: str, name: str = "v.sqlite", base: Path = SMALL, page_size: int | None = None,
            wal: bool = False) -> Path:
    dst = tmp_path / name
    shutil.copy(base, dst)
    con = sqlite3.connect(dst)
    for s in sql:
        con.execute(s)
    con.commit()
    if page_size:
        con.execute(f"PRAGMA page_size = {page_size}")
        con.execute("VACUUM")
    if wal:
        con.execute("PRAGMA journal_mode = WAL")
    con.close()
    return dst


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_is_read_as_sqlite_reads_it(path: Path) -> None:
    queries = _queries(path)
    assert queries
    for table, exprs, where in queries:
        assert same(path, table, exprs, where) == [], table  # sound: every chunk through ADBC


def test_a_table_of_many_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_columns, "CHUNK_ROWS", 1000)
    path = variant(tmp_path, *[f"INSERT INTO {N} SELECT * FROM {N}"] * 4, *[f"INSERT INTO {R} SELECT * FROM {R}"] * 4)
    for table, exprs, where in _queries(path):
        assert same(path, table, exprs, where) == []
    reader = sqlite_columns.Reader(path)
    chunks = list(reader.chunks(R, ["rowid"]))
    assert len(chunks) > 10 and max(len(c[0]) for c in chunks) <= 1000
    assert np.concatenate([widen(c[0]) for c in chunks]).tolist() == list(range(1, reader.rows(R) + 1))
    reader.close()


@pytest.mark.parametrize("case,sql,by_stdlib", [
    ("text, real, blob and NULL values", [f"CREATE TABLE t AS SELECT * FROM {K}", f"DROP TABLE {K}",
                                          f"ALTER TABLE t RENAME TO {K}",
                                          f"UPDATE {K} SET gridX = 'x' WHERE rowid = 2",
                                          f"UPDATE {K} SET gridY = 2.5 WHERE rowid = 3",
                                          f"UPDATE {K} SET blockX = x'00' WHERE rowid = 4",
                                          f"UPDATE {K} SET blockY = NULL WHERE rowid = 5",
                                          f"UPDATE {K} SET registersPerThread = '17' WHERE rowid = 6"], True),
    ("a text among integers in a later batch", [f"CREATE TABLE t AS SELECT * FROM {R}", f"DROP TABLE {R}",
                                                f"ALTER TABLE t RENAME TO {R}",
                                                f"UPDATE {R} SET correlationId = 'late' "
                                                f"WHERE rowid = (SELECT max(rowid) FROM {R})"], True),
    ("NULL start and end before start", [f"CREATE TABLE t AS SELECT * FROM {R}", f"DROP TABLE {R}",
                                         f"ALTER TABLE t RENAME TO {R}",
                                         f"UPDATE {R} SET start = NULL WHERE rowid = 3",
                                         f'UPDATE {R} SET "end" = start - 5 WHERE rowid = 4'], False),
    ("a duration beyond int64", [f'UPDATE {R} SET start = -9000000000000000000, "end" = 9000000000000000000 '
                                 "WHERE rowid = 7"], True),
    ("eight-byte and negative values", [f"UPDATE {K} SET globalPid = -9223372036854775807 WHERE rowid = 1",
                                        f"UPDATE {K} SET correlationId = 9223372036854775807 WHERE rowid = 2",
                                        f"UPDATE {K} SET gridZ = -3 WHERE rowid = 3",
                                        f"UPDATE {K} SET gridX = 8388608 WHERE rowid = 4",
                                        f"UPDATE {K} SET gridY = 140737488355327 WHERE rowid = 5"], False),
    ("a column added later", [f"ALTER TABLE {K} ADD COLUMN later INTEGER DEFAULT 7",
                              f"INSERT INTO {K} SELECT * FROM {K} LIMIT 1"], False),
    ("negative and sparse rowids", [f"UPDATE {R} SET rowid = -rowid - 1000000000000 WHERE rowid % 2 = 0",
                                    f"UPDATE {R} SET rowid = rowid + 5000000000 WHERE rowid > 0"], False),
    ("NVTX texts on overflow pages", [f"UPDATE {N} SET text = printf('%.9000c', 'x') WHERE rowid % 3 = 0"], False),
    ("an INTEGER PRIMARY KEY", ["CREATE TABLE k2 (id INTEGER PRIMARY KEY, start INTEGER, \"end\" INTEGER)",
                                f'INSERT INTO k2 (start, "end") SELECT start, "end" FROM {K}',
                                f"DROP TABLE {K}", f"ALTER TABLE k2 RENAME TO {K}"], False),
])
def test_unusual_tables_give_sqlites_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str,
                                             sql: list[str], by_stdlib: bool) -> None:
    """Values ADBC cannot give as integers send their chunk through ``sqlite3`` (and only those)."""
    monkeypatch.setattr(sqlite_columns, "CHUNK_ROWS", 5000)  # (several chunks, of several of ADBC's batches)
    path = variant(tmp_path, *sql)
    went: list[tuple[str, str]] = []
    for table, exprs, where in _queries(path):
        if table == K and case == "an INTEGER PRIMARY KEY":
            exprs = [*exprs, '"id"']
        went += same(path, table, exprs, where)
    assert bool(went) == by_stdlib, went


@pytest.mark.parametrize("page_size", [512, 65536])
def test_other_page_sizes(tmp_path: Path, page_size: int) -> None:
    path = variant(tmp_path, page_size=page_size)
    assert path.read_bytes()[16:18] == (page_size if page_size < 65536 else 1).to_bytes(2, "big")
    for table, exprs, where in _queries(path):
        assert same(path, table, exprs, where) == []


@pytest.mark.parametrize("how", ["wal", "without rowid"])
def test_wal_files_and_tables_without_rowid(tmp_path: Path, how: str) -> None:
    sql = [] if how == "wal" else ["CREATE TABLE t (start INTEGER, \"end\" INTEGER, nameId INTEGER, "
                                   "correlationId INTEGER, PRIMARY KEY (start, correlationId)) WITHOUT ROWID",
                                   f'INSERT INTO t SELECT start, "end", nameId, correlationId FROM {R}',
                                   f"DROP TABLE {R}", f"ALTER TABLE t RENAME TO {R}"]
    path = variant(tmp_path, *sql, wal=how == "wal")
    for table, exprs, where in _queries(path):
        if how == "without rowid" and table == R:
            exprs = [e for e in exprs if e != "rowid"]
        assert same(path, table, exprs, where) == []


def test_expressions_are_sqls() -> None:
    assert same(SMALL, K, ['"gridX" * "blockX"', "start + 1", "NULL", "0"], "") == []
    assert same(SMALL, N, ['"start"'], "eventType = 59") == []


def test_the_file_is_opened_read_only(tmp_path: Path) -> None:
    path = variant(tmp_path)
    before = path.read_bytes()
    reader = sqlite_columns.Reader(path)
    reader.read(K, ['"start"'])
    with pytest.raises(Exception, match=r"readonly|read-only|read only"):
        reader._arrow(f"DELETE FROM {K}", ())
    reader.close()
    assert path.read_bytes() == before


def _error_or_contract(path: Path, got: list[np.ndarray] | str, exprs: list[str]) -> None:
    if isinstance(got, str):
        assert got.startswith(f"{path}: corrupt or truncated SQLite file") and "\n" not in got, got
    else:
        assert len(got) == len(exprs) and len({len(a) for a in got}) == 1


def test_a_truncated_file_gives_the_one_line_error(tmp_path: Path) -> None:
    data = SMALL.read_bytes()
    errors = 0
    for cut in (len(data) // 2, len(data) - 4096, len(data) - 100):
        path = tmp_path / f"cut{cut}.sqlite"
        path.write_bytes(data[:cut])
        for table, exprs, where in _queries(SMALL):
            got, _ = read(path, table, exprs, where)
            _error_or_contract(path, got, exprs)
            errors += isinstance(got, str)
    assert errors


def test_damaged_pages_give_arrays_or_one_error_line(tmp_path: Path) -> None:
    # On a damaged file SQLite's own answer depends on the query's shape (a seek through damaged keys
    # can miss rows a scan finds, or fail where a scan does not), so only the contract is checked:
    # one array per expression, all of one length, or the one-line corrupt-file error; never another
    # exception.  Damage in leaf values (most of the bytes) must still give SQLite's answer.
    data = bytearray(SMALL.read_bytes())
    con = sqlite3.connect(SMALL)
    roots = [r[0] for r in con.execute("SELECT rootpage FROM sqlite_master WHERE name IN (?, ?, ?)", (K, R, N))]
    con.close()
    ps = int.from_bytes(data[16:18], "big")
    rng = random.Random(15)
    queries = _queries(SMALL)
    outcomes = {"equal": 0, "error": 0, "differ": 0}
    for i in range(60):
        bad = bytearray(data)
        page = rng.choice(roots) - 1 if i % 3 == 0 else rng.randrange(0, len(data) // ps)
        for _ in range(rng.choice([1, 2, 8])):
            bad[page * ps + rng.randrange(ps)] = rng.randrange(256)
        path = tmp_path / f"bad{i}.sqlite"
        path.write_bytes(bad)
        for table, exprs, where in queries:
            got, _ = read(path, table, exprs, where)
            _error_or_contract(path, got, exprs)
            if isinstance(got, str):
                outcomes["error"] += 1
                continue
            try:
                want = _sqlite(path, table, exprs, where)
            except sqlite3.DatabaseError:
                want = None
            equal = want is not None and all(widen(a).tolist() == b for a, b in zip(got, want, strict=True))
            outcomes["equal" if equal else "differ"] += 1
        got_texts = texts(path)
        assert isinstance(got_texts, list) or got_texts.startswith(f"{path}: corrupt or truncated SQLite file")
    assert outcomes["equal"] >= 0.8 * sum(outcomes.values()), outcomes


def test_what_adbc_cannot_read_is_read_through_sqlite3(monkeypatch: pytest.MonkeyPatch) -> None:
    """ADBC failing on a chunk (here: every chunk, with a message of invalid UTF-8 on two lines)
    leaves the answer to ``sqlite3``: the same arrays and texts."""
    want = sqlite_columns.Reader(SMALL).read(K, ['"start"', DURATION_SQL])
    want_texts = texts(SMALL)

    def fails(self: sqlite_columns.Reader, sql: str, params: tuple[int, ...]) -> None:
        raise OSError(b"[SQLite] disk I/O error \xff\xfe".decode("utf-8", "replace") + "\nquery: " + sql)

    monkeypatch.setattr(sqlite_columns.Reader, "_arrow", fails)
    reader = sqlite_columns.Reader(SMALL)
    got = reader.read(K, ['"start"', DURATION_SQL])
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    assert reader.by_stdlib and all("\n" not in why and why.startswith("[SQLite] disk I/O error")
                                    for _, why in reader.by_stdlib)
    assert texts(SMALL) == want_texts


@pytest.mark.parametrize("capacity", [None, 0, 1, 50, 400, 10_000])
def test_columns_written_chunk_by_chunk_equal_the_assembled_chunks(capacity: int | None) -> None:
    """A column written into one array as its chunks come (widened when a chunk needs a wider type,
    grown past a row count that was too small, a chunk that is not integers) equals the chunks
    assembled at the end: values, missing values and type."""
    from nsighttk.profile import compact

    rng = np.random.default_rng(7)
    for _ in range(200):
        chunks = []
        for _ in range(int(rng.integers(0, 6))):
            n = int(rng.integers(0, 80))
            bound = int(rng.choice([100, 30_000, 2**31 - 1, 2**40]))
            arr = rng.integers(-bound, bound, n, dtype=np.int64)
            arr[rng.random(n) < 0.1] = INT_NULL
            chunks.append(compact(arr, np.int32))
        if chunks and rng.random() < 0.05:
            chunks.append(np.array([1.5, 2.5]))  # not integers: assembled as before
        col = sqlite_columns._Column(capacity)
        for c in chunks:
            col.add(c)
        got, want = col.done(), sqlite_columns.assemble(chunks)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


def texts(path: Path, where: str = NVTX_WHERE) -> list[tuple[int, bytes]] | str:
    """(rowid, value) of each NVTX row holding text, or the error line."""
    reader = sqlite_columns.Reader(path)
    try:
        rid, codes, values = reader.read_texts(N, "text", where)
    except InputFileError as ex:
        return str(ex)
    finally:
        reader.close()
    assert len(rid) == len(codes) and sorted(set(codes.tolist())) == list(range(len(values)))
    assert len(set(values)) == len(values)  # one code per distinct value
    return [(int(r), values[int(c)]) for r, c in zip(rid, codes, strict=True)]


def _sqlite_texts(path: Path, where: str = NVTX_WHERE) -> list[tuple[int, bytes]]:
    con = sqlite3.connect(path)
    con.text_factory = bytes
    try:
        return [(int(r), v) for r, v in con.execute(
            f"SELECT rowid, text FROM {N} WHERE ({where}) AND typeof(text) = 'text' ORDER BY rowid")]
    finally:
        con.close()


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixtures_nvtx_texts_are_read_as_sqlite_reads_them(path: Path) -> None:
    con = sqlite3.connect(path)
    has = bool(con.execute(f"SELECT 1 FROM sqlite_master WHERE name = '{N}'").fetchall())
    con.close()
    if not has:
        pytest.skip("no NVTX table")
    assert texts(path) == _sqlite_texts(path)


@pytest.mark.parametrize("case,sql", [
    ("names of every kind", [f"UPDATE {N} SET text = 'é ' || rowid WHERE rowid % 4 = 0",  # non-ASCII, distinct
                             f"UPDATE {N} SET text = '' WHERE rowid % 4 = 1",  # empty
                             f"UPDATE {N} SET text = CAST(x'ff41c3' AS TEXT) WHERE rowid % 4 = 2",  # not UTF-8
                             f"UPDATE {N} SET text = printf('%.300c', 'y') WHERE rowid % 8 = 3",  # long
                             f"UPDATE {N} SET text = x'414243' WHERE rowid % 8 = 7"]),  # a blob: no text
    ("numbers and NULLs", [f"UPDATE {N} SET text = rowid WHERE rowid % 3 = 0",
                           f"UPDATE {N} SET text = 2.5 WHERE rowid % 3 = 1"]),
    ("a NUL byte inside a text", [f"UPDATE {N} SET text = CAST(x'410042' AS TEXT) WHERE rowid % 5 = 0"]),
    ("texts on overflow pages", [f"UPDATE {N} SET text = printf('%.9000c', 'x') WHERE rowid % 3 = 0"]),
])
def test_unusual_nvtx_texts_give_sqlites_answers(tmp_path: Path, case: str, sql: list[str]) -> None:
    path = variant(tmp_path, *sql)
    assert texts(path) == _sqlite_texts(path)
    assert texts(path, where="") == _sqlite_texts(path, "1")


def test_texts_of_a_utf16_file_come_through_sqlite3_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "utf16.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA encoding = 'UTF-16le'")
    con.execute(f'CREATE TABLE {N} (start INTEGER, "end" INTEGER, eventType INTEGER, text TEXT)')
    con.executemany(f"INSERT INTO {N} VALUES (?, ?, 59, ?)", [(i, i + 5, f"r\u00e9{i % 3}") for i in range(50)])
    con.commit()
    con.close()
    assert texts(path) == [(i + 1, f"r\u00e9{i % 3}".encode()) for i in range(50)]


def test_a_bound_past_int64_is_the_corrupt_file_error() -> None:
    reader = sqlite_columns.Reader(SMALL)
    for go in (lambda: reader._read_range(K, ['"start"'], "", (2**63, 2**63)),
               lambda: reader._texts_range(N, "text", NVTX_WHERE, (2**63, 2**63))):
        with pytest.raises(InputFileError, match="corrupt or truncated"):
            go()


_LAST = f"(SELECT max(start) FROM {N})"
_NVTX_COLUMNS = [f'"{c}"' for c in ("start", "end", "eventType", "rangeId", "category", "color", "text", "globalTid",
                                     "endGlobalTid", "textId", "domainId")]


@pytest.mark.parametrize("case, sql", [
    ("as captured", []),
    ("a mark after the last range", [f"INSERT INTO {N} (start, eventType) VALUES ({_LAST} + 1000, 34)"]),
    ("every range open", [f'UPDATE {N} SET "end" = NULL']),
    ("a text start on a mark", [f"INSERT INTO {N} (start, eventType) VALUES ('soon', 34)"]),
    ("a real end, the largest", [f'UPDATE {N} SET "end" = "end" + 0.5 WHERE rowid = (SELECT max(rowid) FROM {N})']),
    ("a real end among integers", [f'UPDATE {N} SET "end" = start + 0.5 WHERE rowid = (SELECT min(rowid) FROM {N})']),
    ("no ranges, marks only", [f"UPDATE {N} SET eventType = 34"]),
    ("real event types, a range to SQL", [  # (a column without a type keeps 59.0 a real)
        f"CREATE TABLE n2 ({', '.join(_NVTX_COLUMNS)})", f"INSERT INTO n2 SELECT {', '.join(_NVTX_COLUMNS)} FROM {N}",
        f"DROP TABLE {N}", f"ALTER TABLE n2 RENAME TO {N}", f"UPDATE {N} SET eventType = 59.0 WHERE rowid % 3 = 0"]),
])
def test_nvtx_bounds_and_counts_equal_sqlites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              case: str, sql: list[str]) -> None:
    """Where open ranges end (the last NVTX timestamp, of any event and of ranges) and the row
    counts equal what SQLite's max() and count(*) give, texts and reals included (then SQLite is
    asked for the bounds); where every value is an integer, the bounds come from the read itself."""
    from nsighttk.load.nsys_schema import NVTX_BOUNDS_SQL
    from nsighttk.load.nsys_sqlite import NsysSource

    path = variant(tmp_path, *sql)
    con = sqlite3.connect(path)
    want_bounds = tuple(v if isinstance(v, int) else None for v in con.execute(NVTX_BOUNDS_SQL).fetchone())
    want_counts = {"nvtx": con.execute(f"SELECT count(*) FROM {N} WHERE {NVTX_WHERE}").fetchone()[0],
                   "kernels": con.execute(f"SELECT count(*) FROM {K}").fetchone()[0],
                   "api": con.execute(f"SELECT count(*) FROM {R}").fetchone()[0]}
    con.close()
    asked: list[str] = []
    query = NsysSource.query
    monkeypatch.setattr(NsysSource, "query", lambda self, q, params=(): asked.append(q) or query(self, q, params))
    p = load_nsys_sqlite(path)
    assert p.bound("nvtx") >= want_counts["nvtx"]
    got = p.arrays("nvtx", ["start_ns", "depth"])
    assert (p.meta["nvtx_max_ts_all"], p.meta["nvtx_max_ts_ranges"]) == want_bounds, case
    assert len(got["start_ns"]) == want_counts["nvtx"], case
    assert {t: p.count(t) for t in want_counts} == want_counts, case
    scans = [q for q in asked if q == NVTX_BOUNDS_SQL]
    assert (scans == []) == (case in ("as captured", "a mark after the last range", "every range open",
                                      "no ranges, marks only")), (case, scans)


def test_a_small_table_is_read_through_sqlite3_without_importing_arrow() -> None:
    import subprocess
    import sys

    code = ("import sys\n"
            "from nsighttk.load.nsys_sqlite import load_nsys_sqlite\n"
            f"p = load_nsys_sqlite({str(SMALL)!r})\n"
            "k = p.arrays('kernels', ['duration_ns', 'name'])\n"
            "print(len(k['duration_ns']), p.source.reader.by_stdlib,"
            " 'pyarrow' in sys.modules or 'adbc_driver_manager' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert out.stdout.split() == ["25", "[]", "False"], out.stderr
    con = sqlite3.connect(SMALL)
    expected = [r[0] for r in con.execute(f'SELECT {DURATION_SQL} FROM {K} ORDER BY rowid')]
    con.close()
    reader = sqlite_columns.Reader(SMALL)
    try:
        assert reader.read(K, [DURATION_SQL])[0].tolist() == expected  # (SMALL_ROWS is 0 here: ADBC)
    finally:
        reader.close()
