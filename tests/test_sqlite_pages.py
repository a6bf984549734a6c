"""Columns decoded from an export's pages (nsighttk.load.sqlite_pages) equal SQLite's own answers.

Every test runs with each decoder: numpy's and the compiled one (nsighttk.load.sqlite_jit).
Every read is done twice, pages on and off, and must give the same arrays (values and types) or the
same error.  Sound exports must be decoded (no group of pages handed to SQLite); unusual ones
(values that are not integers, added columns, overflow pages, other page sizes, WAL, no rowid,
negative rowids, durations beyond int64) must still give SQLite's answers; damaged files must give
the same arrays or the same one-line error.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from nsighttk import settings
from nsighttk.encoding import compact
from nsighttk.errors import InputFileError
from nsighttk.load import sqlite_columns, sqlite_jit, sqlite_pages
from nsighttk.load.nsys_schema import DURATION_SQL, NVTX_WHERE
from nsighttk.load.nsys_sqlite import load_nsys_sqlite

FIXTURES = sorted(Path(__file__).parent.joinpath("fixtures").rglob("*.sqlite"))
SMALL = Path(__file__).parent / "fixtures" / "h200-nsys2025.3" / "streams_demo.sqlite"
K, R, N = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"


@pytest.fixture(autouse=True)
def _decode_whatever_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_columns, "PAGE_WORKERS", 1024)  # (the reader skips pages on many cores)


@pytest.fixture(autouse=True, params=["numpy", "compiled"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once per decoder: numpy's, and the compiled one (which must load where numba is)."""
    if request.param == "compiled":
        pytest.importorskip("numba")
        assert sqlite_jit.functions() is not None, "numba is installed but the compiled decoder did not load"
    monkeypatch.setattr(settings, "_current", settings.Settings.from_env().replace(
        compiled=request.param == "compiled"))
    return str(request.param)


def test_many_reader_threads_read_through_sqlite_unless_compiled(monkeypatch: pytest.MonkeyPatch,
                                                                 decoder: str) -> None:
    decoded: list[bool] = []
    real = sqlite_pages.decode
    monkeypatch.setattr(sqlite_pages, "decode",
                        lambda *a, **k: decoded.append(k["compiled"] is not None) or real(*a, **k))
    monkeypatch.setattr(sqlite_columns, "PAGE_WORKERS", 4)
    monkeypatch.setenv("NSIGHTTK_THREADS", "8")
    for compiled in ("0", "1") if decoder == "compiled" else ("0",):
        monkeypatch.setenv("NSIGHTTK_COMPILED", compiled)
        settings.use(None)  # read the environment again (restored afterwards)
        decoded.clear()
        got = sqlite_columns.Reader(SMALL).read(K, ['"start"'])
        # numpy's decoder holds the GIL (8 threads: SQLite reads); the compiled one does not
        assert decoded == ([True] if compiled == "1" else []) and len(got[0])
        monkeypatch.setenv("NSIGHTTK_THREADS", "2")
        settings.use(None)
        decoded.clear()
        assert np.array_equal(sqlite_columns.Reader(SMALL).read(K, ['"start"'])[0], got[0])
        assert decoded == [compiled == "1"]
        monkeypatch.setenv("NSIGHTTK_THREADS", "8")


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


def read(path: Path, table: str, exprs: list[str], where: str = "", *, pages: bool,
         monkeypatch: pytest.MonkeyPatch) -> tuple[list[np.ndarray] | str, list[tuple[str, str]]]:
    """The arrays (or the error line) of one read, and the groups handed back to SQLite."""
    monkeypatch.setattr(sqlite_columns, "USE_PAGES", pages)
    reader = sqlite_columns.Reader(path)
    try:
        return reader.read(table, exprs, where), reader.refused
    except InputFileError as ex:
        return str(ex), reader.refused


def same(path: Path, table: str, exprs: list[str], where: str,
         monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Both ways give the same answer; returns what the page decoder handed to SQLite."""
    sql, _ = read(path, table, exprs, where, pages=False, monkeypatch=monkeypatch)
    dec, refused = read(path, table, exprs, where, pages=True, monkeypatch=monkeypatch)
    if isinstance(sql, str) or isinstance(dec, str):
        assert dec == sql
        return refused
    assert len(dec) == len(sql)
    for e, a, b in zip(exprs, dec, sql, strict=True):
        assert a.dtype == b.dtype, e
        assert np.array_equal(a, b), e
    return refused


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
def test_every_fixture_is_decoded_as_sqlite_reads_it(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    queries = _queries(path)
    assert queries
    for table, exprs, where in queries:
        assert same(path, table, exprs, where, monkeypatch) == [], table  # sound: nothing handed back


def test_a_table_larger_than_one_page_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # several groups of pages, interior pages on two levels, a text column before the integers
    monkeypatch.setattr(sqlite_columns, "CHUNK_ROWS", 1000)
    path = variant(tmp_path, f"INSERT INTO {N} SELECT * FROM {N}", f"INSERT INTO {N} SELECT * FROM {N}",
                   f"INSERT INTO {N} SELECT * FROM {N}", f"INSERT INTO {N} SELECT * FROM {N}",
                   *[f"INSERT INTO {R} SELECT * FROM {R}"] * 4)
    for table, exprs, where in _queries(path):
        assert same(path, table, exprs, where, monkeypatch) == []
    # the leaf level's headers read a few pages at a time: the same leaves as read whole
    pages = sqlite_pages.Pages(path)
    con = sqlite3.connect(path)
    root, rows = con.execute(f"SELECT rootpage, (SELECT count(*) FROM {R}) FROM sqlite_master WHERE name = ?",
                             (R,)).fetchone()
    con.close()
    whole = sqlite_pages.leaves(pages, root)
    monkeypatch.setattr(sqlite_pages, "HEADER_BATCH_BYTES", 3 * pages.page_size + 7)
    batched = sqlite_pages.leaves(pages, root)
    buf = pages.read(batched.pages.astype(np.int64)).reshape(-1)[:len(batched.pages) * pages.page_size]
    head = buf.reshape(len(batched.pages), pages.page_size)
    assert len(batched.pages) > 10 and int(batched.cells.sum()) == rows
    assert batched.cells.tolist() == ((head[:, 3].astype(int) << 8) | head[:, 4]).tolist()
    for a, b in zip((whole.pages, whole.cells, whole.lo), (batched.pages, batched.cells, batched.lo), strict=True):
        assert a.tolist() == b.tolist()
    assert whole.top == batched.top == 2**63 - 1
    # each page's bounds, as span gives them (the upper one: the next page's lower one), hold its rowids
    con = sqlite3.connect(path)
    plan = sqlite_pages.plan(con, R, ["rowid"], "")
    con.close()
    assert plan is not None
    got = []
    for i in range(len(whole.pages)):
        page, cells, lo, hi = whole.span(i, i + 1)
        rowid = sqlite_pages.decode(pages, plan, page, cells, lo, hi)[0]  # (raises where a rowid is out of bounds)
        assert (rowid > lo).all() and (rowid <= hi).all() and (i == 0 or rowid.min() > lo)
        got.append(rowid)
    assert np.concatenate(got).tolist() == list(range(1, rows + 1))


@pytest.mark.parametrize("case,sql,handed_back", [
    ("text, real, blob and NULL values", [f"CREATE TABLE t AS SELECT * FROM {K}", f"DROP TABLE {K}",
                                          f"ALTER TABLE t RENAME TO {K}",
                                          f"UPDATE {K} SET gridX = 'x' WHERE rowid = 2",
                                          f"UPDATE {K} SET gridY = 2.5 WHERE rowid = 3",
                                          f"UPDATE {K} SET blockX = x'00' WHERE rowid = 4",
                                          f"UPDATE {K} SET blockY = NULL WHERE rowid = 5",
                                          f"UPDATE {K} SET registersPerThread = '17' WHERE rowid = 6"], True),
    ("NULL start and end before start", [f"CREATE TABLE t AS SELECT * FROM {R}", f"DROP TABLE {R}",
                                         f"ALTER TABLE t RENAME TO {R}",
                                         f"UPDATE {R} SET start = NULL WHERE rowid = 3",
                                         f'UPDATE {R} SET "end" = start - 5 WHERE rowid = 4'], False),
    ("a duration beyond int64", [f'UPDATE {R} SET start = -9000000000000000000, "end" = 9000000000000000000 '
                                 "WHERE rowid = 7"], True),
    ("eight-byte and negative values", [f"UPDATE {K} SET globalPid = -9223372036854775807 WHERE rowid = 1",
                                        f"UPDATE {K} SET correlationId = 9223372036854775807 WHERE rowid = 2",
                                        f"UPDATE {K} SET gridZ = -3 WHERE rowid = 3",
                                        f"UPDATE {K} SET gridX = 8388608 WHERE rowid = 4",  # 4 bytes
                                        f"UPDATE {K} SET gridY = 140737488355327 WHERE rowid = 5"], False),  # 6 bytes
    ("a column added later", [f"ALTER TABLE {K} ADD COLUMN later INTEGER DEFAULT 7",
                              f"INSERT INTO {K} SELECT * FROM {K} LIMIT 1"], True),
    ("negative and sparse rowids", [f"UPDATE {R} SET rowid = -rowid - 1000000000000 WHERE rowid % 2 = 0",
                                    f"UPDATE {R} SET rowid = rowid + 5000000000 WHERE rowid > 0"], False),
    ("NVTX texts on overflow pages", [f"UPDATE {N} SET text = printf('%.9000c', 'x') WHERE rowid % 3 = 0"], True),
    ("an INTEGER PRIMARY KEY", ["CREATE TABLE k2 (id INTEGER PRIMARY KEY, start INTEGER, \"end\" INTEGER)",
                                f'INSERT INTO k2 (start, "end") SELECT start, "end" FROM {K}',
                                f"DROP TABLE {K}", f"ALTER TABLE k2 RENAME TO {K}"], False),
])
def test_unusual_tables_give_sqlites_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str,
                                             sql: list[str], handed_back: bool) -> None:
    path = variant(tmp_path, *sql)
    refused: list[tuple[str, str]] = []
    for table, exprs, where in _queries(path):
        if table == K and case == "an INTEGER PRIMARY KEY":
            exprs = [*exprs, '"id"']
        refused += same(path, table, exprs, where, monkeypatch)
    assert bool(refused) == handed_back, refused


@pytest.mark.parametrize("page_size", [512, 65536])
def test_other_page_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page_size: int) -> None:
    path = variant(tmp_path, page_size=page_size)
    assert path.read_bytes()[16:18] == (page_size if page_size < 65536 else 1).to_bytes(2, "big")
    for table, exprs, where in _queries(path):
        assert same(path, table, exprs, where, monkeypatch) == []


@pytest.mark.parametrize("how", ["wal", "without rowid"])
def test_tables_it_does_not_plan_are_read_by_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    sql = [] if how == "wal" else ["CREATE TABLE t (start INTEGER, \"end\" INTEGER, nameId INTEGER, "
                                   "correlationId INTEGER, PRIMARY KEY (start, correlationId)) WITHOUT ROWID",
                                   f'INSERT INTO t SELECT start, "end", nameId, correlationId FROM {R}',
                                   f"DROP TABLE {R}", f"ALTER TABLE t RENAME TO {R}"]
    path = variant(tmp_path, *sql, wal=how == "wal")
    for table, exprs, where in _queries(path):
        if how == "without rowid" and table == R:
            exprs = [e for e in exprs if e != "rowid"]
        assert same(path, table, exprs, where, monkeypatch) == []


def test_expressions_it_does_not_know_are_read_by_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    assert same(SMALL, K, ['"gridX" * "blockX"', "start + 1"], "", monkeypatch) == []
    assert same(SMALL, N, ['"start"'], "eventType = 59", monkeypatch) == []


def test_a_truncated_file_gives_the_same_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = SMALL.read_bytes()
    for cut in (len(data) // 2, len(data) - 4096, len(data) - 100):
        path = tmp_path / f"cut{cut}.sqlite"
        path.write_bytes(data[:cut])
        for table, exprs, where in _queries(SMALL):
            same(path, table, exprs, where, monkeypatch)


def test_damaged_pages_give_arrays_or_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # On a damaged file SQLite's own answer depends on the query's shape (a seek through damaged keys
    # can miss rows a scan finds, or fail where a scan does not), so only the contract is checked:
    # one array per expression, all of one length, or the one-line corrupt-file error; never another
    # exception.  Damage in leaf values (most of the bytes) must still give SQLite's arrays.
    data = bytearray(SMALL.read_bytes())
    con = sqlite3.connect(SMALL)
    roots = [r[0] for r in con.execute("SELECT rootpage FROM sqlite_master WHERE name IN (?, ?, ?)", (K, R, N))]
    con.close()
    ps = int.from_bytes(data[16:18], "big")
    rng = random.Random(15)
    queries = _queries(SMALL)
    outcomes = {"equal": 0, "error": 0, "differ": 0}
    for i in range(90):
        bad = bytearray(data)
        page = rng.choice(roots) - 1 if i % 3 == 0 else rng.randrange(0, len(data) // ps)
        for _ in range(rng.choice([1, 2, 8])):
            bad[page * ps + rng.randrange(ps)] = rng.randrange(256)
        path = tmp_path / f"bad{i}.sqlite"
        path.write_bytes(bad)
        for table, exprs, where in queries:
            sql, _ = read(path, table, exprs, where, pages=False, monkeypatch=monkeypatch)
            dec, _ = read(path, table, exprs, where, pages=True, monkeypatch=monkeypatch)
            for got in (sql, dec):
                if isinstance(got, str):
                    assert got.startswith(f"{path}: corrupt or truncated SQLite file"), got
                else:
                    assert len(got) == len(exprs) and len({len(a) for a in got}) == 1
            if isinstance(sql, str) or isinstance(dec, str):
                outcomes["error"] += 1
            elif all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(sql, dec, strict=True)):
                outcomes["equal"] += 1
            else:
                outcomes["differ"] += 1
        for got in (texts(path, pages=False, monkeypatch=monkeypatch)[0],
                    texts(path, pages=True, monkeypatch=monkeypatch)[0]):  # NVTX texts: the same contract
            assert isinstance(got, list) or got.startswith(f"{path}: corrupt or truncated SQLite file"), got
    assert outcomes["equal"] >= 0.8 * sum(outcomes.values()), outcomes


def test_the_loader_uses_the_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    # what a report reads comes from the decoder, and equals what SQLite gives
    p = load_nsys_sqlite(SMALL)
    got = p.arrays("kernels", ["duration_ns", "name_id", "grid_x"])
    assert p.source.reader.refused == [] and p.source.reader._pages is not None
    monkeypatch.setattr(sqlite_columns, "USE_PAGES", False)
    q = load_nsys_sqlite(SMALL)
    want = q.arrays("kernels", ["duration_ns", "name_id", "grid_x"])
    assert q.source.reader._pages is None
    for c in want:
        assert np.array_equal(got[c], want[c])


@pytest.mark.parametrize("capacity", [None, 0, 1, 50, 400, 10_000])
def test_columns_written_chunk_by_chunk_equal_the_assembled_chunks(capacity: int | None) -> None:
    """A column written into one array as its chunks come (widened when a chunk needs a wider type,
    grown past a row count that was too small, a chunk that is not integers) equals the chunks
    assembled at the end: values, missing values and type."""
    from nsighttk.profile import INT_NULL, compact

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


def texts(path: Path, *, pages: bool, monkeypatch: pytest.MonkeyPatch,
          where: str = NVTX_WHERE) -> tuple[list[tuple[int, bytes]] | str, list[tuple[str, str]]]:
    """(rowid, value) of each NVTX row holding text (or the error line), and what went to SQLite."""
    monkeypatch.setattr(sqlite_columns, "USE_PAGES", pages)
    reader = sqlite_columns.Reader(path)
    try:
        rid, codes, values = reader.read_texts(N, "text", where)
    except InputFileError as ex:
        return str(ex), reader.refused
    assert len(rid) == len(codes) and sorted(set(codes.tolist())) == list(range(len(values)))
    assert len(set(values)) == len(values)  # one code per distinct value
    return [(int(r), values[int(c)]) for r, c in zip(rid, codes, strict=True)], reader.refused


def _sqlite_texts(path: Path, where: str = NVTX_WHERE) -> list[tuple[int, bytes]]:
    con = sqlite3.connect(path)
    con.text_factory = bytes
    try:
        return [(int(r), v) for r, v in con.execute(
            f"SELECT rowid, text FROM {N} WHERE ({where}) AND typeof(text) = 'text' ORDER BY rowid")]
    finally:
        con.close()


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixtures_nvtx_texts_are_decoded_as_sqlite_reads_them(path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    con = sqlite3.connect(path)
    has = bool(con.execute(f"SELECT 1 FROM sqlite_master WHERE name = '{N}'").fetchall())
    con.close()
    if not has:
        pytest.skip("no NVTX table")
    dec, refused = texts(path, pages=True, monkeypatch=monkeypatch)
    assert refused == [] and dec == _sqlite_texts(path)
    assert texts(path, pages=False, monkeypatch=monkeypatch)[0] == dec


@pytest.mark.parametrize("case,sql,handed_back", [
    ("names of every kind", [f"UPDATE {N} SET text = 'é ' || rowid WHERE rowid % 4 = 0",  # non-ASCII, distinct
                             f"UPDATE {N} SET text = '' WHERE rowid % 4 = 1",  # empty
                             f"UPDATE {N} SET text = CAST(x'ff41c3' AS TEXT) WHERE rowid % 4 = 2",  # not UTF-8
                             f"UPDATE {N} SET text = printf('%.300c', 'y') WHERE rowid % 8 = 3",  # long, inline
                             f"UPDATE {N} SET text = x'414243' WHERE rowid % 8 = 7"], False),  # a blob: no text
    ("numbers and NULLs", [f"UPDATE {N} SET text = rowid WHERE rowid % 3 = 0",
                           f"UPDATE {N} SET text = 2.5 WHERE rowid % 3 = 1"], False),
    ("a NUL byte inside a text", [f"UPDATE {N} SET text = CAST(x'410042' AS TEXT) WHERE rowid % 5 = 0"], True),
    ("texts on overflow pages", [f"UPDATE {N} SET text = printf('%.9000c', 'x') WHERE rowid % 3 = 0"], True),
    ("one long text among short ones", [f"UPDATE {N} SET text = printf('%.2000c', 'z') WHERE rowid = 5"], False),
])
def test_unusual_nvtx_texts_give_sqlites_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str,
                                                 sql: list[str], handed_back: bool) -> None:
    path = variant(tmp_path, *sql)
    want = _sqlite_texts(path)
    dec, refused = texts(path, pages=True, monkeypatch=monkeypatch)
    assert dec == want and texts(path, pages=False, monkeypatch=monkeypatch)[0] == want
    assert bool(refused) == handed_back, refused
    assert texts(path, pages=True, monkeypatch=monkeypatch, where="")[0] == _sqlite_texts(path, "1")


def test_texts_of_a_utf16_file_come_through_sqlite_as_utf8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "utf16.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA encoding = 'UTF-16le'")
    con.execute(f'CREATE TABLE {N} (start INTEGER, "end" INTEGER, eventType INTEGER, text TEXT)')
    con.executemany(f"INSERT INTO {N} VALUES (?, ?, 59, ?)", [(i, i + 5, f"r\u00e9{i % 3}") for i in range(50)])
    con.commit()
    con.close()
    dec, refused = texts(path, pages=True, monkeypatch=monkeypatch)
    assert dec == [(i + 1, f"r\u00e9{i % 3}".encode()) for i in range(50)]
    assert sqlite_pages.Pages(path).utf8 is False and refused == []  # (not planned: read through SQL)


def test_texts_too_wide_to_lay_out_go_through_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = variant(tmp_path, f"UPDATE {N} SET text = printf('%.200c', 'w') || rowid WHERE rowid % 2 = 0")
    monkeypatch.setattr(sqlite_pages, "TEXT_BYTES", 4096)  # (a length class of the group is larger)
    dec, refused = texts(path, pages=True, monkeypatch=monkeypatch)
    assert dec == _sqlite_texts(path) and refused and "too long" in refused[0][1]


def test_a_bound_past_int64_is_the_corrupt_file_error() -> None:
    # (a damaged interior key of 2^63 - 1 makes the next group's first rowid 2^63, which SQLite
    # cannot bind: the one-line error, as for any damaged file, not a traceback)
    reader = sqlite_columns.Reader(SMALL)
    for read in (lambda: reader._read_range(K, ['"start"'], "", (2**63, 2**63)),
                 lambda: reader._texts_range(N, "text", NVTX_WHERE, (2**63, 2**63))):
        with pytest.raises(InputFileError, match="corrupt or truncated"):
            read()


@pytest.mark.parametrize("decoder", ["compiled"], indirect=True)  # (compares the two: runs once)
def test_both_decoders_refuse_the_same_damaged_pages(tmp_path: Path, decoder: str) -> None:
    # Stronger than SQLite's answer on a damaged file (which depends on the query's shape): group by
    # group, the compiled decoder gives numpy's arrays where numpy decodes, and refuses where it refuses.
    fns = sqlite_jit.functions()
    data = bytearray(SMALL.read_bytes())
    ps = int.from_bytes(data[16:18], "big")
    rng = random.Random(7)
    outcomes = {"equal": 0, "refused": 0}
    for i in range(150):
        bad = bytearray(data)
        for _ in range(rng.choice([1, 3, 12])):
            page = rng.randrange(1, len(data) // ps)
            # mostly the cell area's start (pointers, record headers), else anywhere on the page
            at = rng.randrange(8, 64) if rng.random() < 0.5 else rng.randrange(ps)
            bad[page * ps + at] = rng.randrange(256)
        path = tmp_path / f"bad{i}.sqlite"
        path.write_bytes(bad)
        con = sqlite3.connect(path)
        try:
            f = sqlite_pages.Pages(path)
            for table, exprs, where in _queries(SMALL):
                try:
                    p = sqlite_pages.plan(con, table, exprs, where)
                    leaves = sqlite_pages.leaves(f, p.root) if p is not None else None
                except (sqlite_pages.Unusual, sqlite3.DatabaseError, IndexError, ValueError, OverflowError):
                    continue
                if p is None or leaves is None:
                    continue
                for a, b in sqlite_columns._groups(leaves.cells):
                    got = []
                    for c in (None, fns):
                        try:
                            got.append(sqlite_pages.decode(f, p, *leaves.span(a, b), compiled=c))
                        except (sqlite_pages.Unusual, IndexError, ValueError, OverflowError):
                            got.append(None)
                    if got[0] is None or got[1] is None:
                        assert got[0] is None and got[1] is None, (i, table, got[0] is None)
                        outcomes["refused"] += 1
                    else:
                        assert all(np.array_equal(x, y) for x, y in zip(got[0], got[1], strict=True)), (i, table)
                        # narrowed as they are decoded: compact's answer, value for value and type for type
                        want = [compact(x, np.int32) for x in got[0]]
                        for c in (None, fns):
                            narrow = sqlite_pages.decode(f, p, *leaves.span(a, b), compiled=c, narrow=True)
                            assert [x.dtype for x in narrow] == [x.dtype for x in want], (i, table)
                            assert all(np.array_equal(x, y) for x, y in zip(narrow, want, strict=True)), (i, table)
                        outcomes["equal"] += 1
        finally:
            con.close()
    assert outcomes["refused"] >= 20 and outcomes["equal"] >= 100, outcomes


def _first_leaf(path: Path, table: str, columns: list[str]) -> tuple[sqlite_pages.Pages, sqlite_pages.Plan,
                                                                     sqlite_pages.Leaves, int]:
    con = sqlite3.connect(path)
    try:
        p = sqlite_pages.plan(con, table, [f'"{c}"' for c in columns], "")
    finally:
        con.close()
    assert p is not None
    f = sqlite_pages.Pages(path)
    leaves = sqlite_pages.leaves(f, p.root)
    return f, p, leaves, (int(leaves.pages[0]) - 1) * f.page_size


@pytest.mark.parametrize("decoder", ["compiled"], indirect=True)  # (compares the two: runs once)
@pytest.mark.parametrize("damage", ["a wanted 8-byte integer made a float", "an unwanted 0-byte value made type 10",
                                    "an unwanted 0-byte value made type 11", "a rowid repeated",
                                    "a cell pointer past the page", "a header longer than the record"])
def test_crafted_damage_is_refused_by_both_decoders(tmp_path: Path, decoder: str, damage: str) -> None:
    # Each damage keeps every value's size (a random byte would also move the values after it, and
    # another check would refuse the page): only the check named can refuse it.
    columns = _int_columns(SMALL, K)
    _, p, _, base = _first_leaf(SMALL, K, columns)
    data = bytearray(SMALL.read_bytes())
    cell = [base + int.from_bytes(data[base + 8 + 2 * k:base + 10 + 2 * k], "big") for k in range(2)]
    assert data[cell[0]] < 0x80 and data[cell[0] + 1] < 0x80 and data[cell[1] + 1] < 0x80  # 1-byte length, rowid
    types = cell[0] + 3  # the record: its header's size, then a serial type per column (one byte each here)
    wanted = columns
    if "float" in damage:
        j = next(j for j in p.needed if data[types + j] == 6)
        data[types + j] = 7
    elif "unwanted" in damage:
        j = next(j for j in range(1, len(columns) - 1) if data[types + j] in (0, 8, 9))
        wanted = [columns[0], columns[-1]]  # the columns between are read past, not wanted
        data[types + j] = int(damage.split()[-1])
    elif damage == "a rowid repeated":
        data[cell[1] + 1] = data[cell[0] + 1]
    elif damage == "a cell pointer past the page":
        data[base + 8:base + 10] = (int.from_bytes(data[16:18], "big") - 2).to_bytes(2, "big")
    else:
        data[cell[0] + 2] = 0x7F
    path = tmp_path / "crafted.sqlite"
    path.write_bytes(data)
    for file, refused in ((SMALL, False), (path, True)):
        f, p, leaves, _ = _first_leaf(file, K, wanted)
        assert int(leaves.cells[0]) > 1
        for c in (None, sqlite_jit.functions()):
            try:
                sqlite_pages.decode(f, p, *leaves.span(0, 1), compiled=c)
                assert not refused, "decoded"
            except sqlite_pages.Unusual:
                assert refused, "refused an undamaged page"


def test_without_numba_numpy_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    want = sqlite_columns.Reader(SMALL).read(K, ['"start"', DURATION_SQL])

    def missing() -> None:
        raise ImportError("No module named 'numba'")

    monkeypatch.setattr(sqlite_jit, "_build", missing)
    monkeypatch.setattr(sqlite_jit, "_compiled", None)
    monkeypatch.setattr(sqlite_jit, "_failed", False)
    monkeypatch.setenv("NSIGHTTK_COMPILED", "1")
    settings.use(None)
    assert sqlite_jit.wanted(1) and sqlite_jit.functions() is None
    reader = sqlite_columns.Reader(SMALL)
    got = reader.read(K, ['"start"', DURATION_SQL])
    assert reader.refused == [] and all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


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
def test_nvtx_bounds_and_counts_equal_sqlites_without_their_scans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 case: str, sql: list[str]) -> None:
    """Where open ranges end (the last NVTX timestamp, of any event and of ranges) and the row
    counts come from the read itself, equal to what SQLite's max() and count(*) give, texts and
    reals included (then SQLite is asked); a sound export asks SQLite for neither."""
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
    for pages in (True, False):
        monkeypatch.setattr(sqlite_columns, "USE_PAGES", pages)
        asked.clear()
        p = load_nsys_sqlite(path)
        assert p.bound("nvtx") >= want_counts["nvtx"]
        got = p.arrays("nvtx", ["start_ns", "depth"])
        assert (p.meta["nvtx_max_ts_all"], p.meta["nvtx_max_ts_ranges"]) == want_bounds, (case, pages)
        assert len(got["start_ns"]) == want_counts["nvtx"], (case, pages)
        assert {t: p.count(t) for t in want_counts} == want_counts, (case, pages)
        scans = [q for q in asked if q == NVTX_BOUNDS_SQL or "count(*)" in q]
        if pages and case in ("as captured", "a mark after the last range", "every range open"):
            assert scans == [], scans
        elif not pages:
            assert NVTX_BOUNDS_SQL in scans
