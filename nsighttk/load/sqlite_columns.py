"""Integer columns of an SQLite table into numpy arrays, read by SQLite's own engine: in bounded
chunks, in parallel, validated.

Each chunk of rows (a rowid range) is one query through ADBC's SQLite driver, which hands the
rows over as Arrow columns (in C: no Python object per value), and the columns become numpy
arrays (:data:`INT_NULL` where SQLite gave NULL).  Chunks are read on several read-only
connections at once, and only a few are in memory at a time, so memory is bounded by the chunk
size, not by the table.

A chunk ADBC cannot give as integers (a value that is text, real or blob: the driver types a
column by its first rows and refuses what changes type) is read again through Python's
``sqlite3``, where SQLite formats each column as one comma-separated string (``group_concat``)
and numpy parses it, values that are not integers made :data:`INT_NULL` by a guard; so a column
always comes back with exactly one value per row.  A damaged file fails both ways, and the
``sqlite3`` error becomes the loader's one line (:func:`corrupt`).  Which rows a caller keeps (an
event table drops rows whose start/end are not integers, or end before start) is a ``where``
clause applied to every read of that table alike, so arrays read at different times line up row
for row.

A table of at most :data:`SMALL_ROWS` rowids is read through ``sqlite3`` alone, and ADBC and
pyarrow are not imported: a small export is summarised faster than they import.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from nsighttk import chunked
from nsighttk.errors import InputFileError
from nsighttk.load.nsys_schema import readonly_uri
from nsighttk.profile import INT_NULL, compact, widen

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows per chunk: a query's worth, and fine-grained enough to share out.
CHUNK_ROWS = 65_536
#: Every rowid: a table read whole
WHOLE = (-(2**63), 2**63 - 1)
#: What ADBC raises when it cannot give a chunk (a value of another type, a damaged page, a bound
#: it cannot bind): the chunk is then read through ``sqlite3``.
#: Tables of at most this many rowids are read through ``sqlite3`` alone: its few queries answer
#: such a table in milliseconds, where ADBC and pyarrow take longer to import (0.5 s, pandas
#: among pyarrow's imports) than a small export takes to summarise.
SMALL_ROWS = 50_000


def _adbc_errors() -> tuple[type[BaseException], ...]:
    """What a failed ADBC read raises (the modules imported on first use: see :data:`SMALL_ROWS`)."""
    import adbc_driver_manager
    import pyarrow as pa

    return (adbc_driver_manager.Error, pa.ArrowException, OSError, ValueError, OverflowError)

#: Reads one chunk of rows: one array per expression.
_Task = Callable[[], list[np.ndarray]]
#: Reads the texts of one chunk of rows: rowids, a code per row, the distinct values (UTF-8 bytes) by code.
_Texts = tuple[np.ndarray, np.ndarray, list[bytes]]
_T = TypeVar("_T")


def workers() -> int:
    """Reader threads: ``NSIGHTTK_THREADS``, else one per core (at most 8)."""
    return chunked.threads()


def corrupt(path: Path, ex: Exception) -> InputFileError:
    return InputFileError(f"{path}: corrupt or truncated SQLite file ({ex})",
                          "re-export it with: nsys export --type sqlite")


def _parse(text: bytes | str | None, count: int) -> np.ndarray | None:
    """The integers of one ``group_concat`` string, or None unless there are exactly ``count``."""
    if count == 0:
        return np.empty(0, dtype=np.int64)
    if text is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            arr = np.fromstring(text, dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning, TypeError):
            return None
    return arr if len(arr) == count else None


def guarded(expr: str) -> str:
    """``expr`` when it is an integer, else the NULL marker (text, real, blob, NULL, overflow)."""
    return f"CASE WHEN typeof({expr}) = 'integer' THEN {expr} ELSE {INT_NULL} END"


def _reason(ex: BaseException) -> str:
    """ADBC's error as one line (its messages add the query on a second line)."""
    text = str(ex)
    if isinstance(text, bytes):  # pragma: no cover (a driver handing bytes through)
        text = text.decode("utf-8", "replace")
    return text.splitlines()[0] if text else type(ex).__name__


def _ints(col: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """An Arrow column of integers (or of NULLs only) as int64, INT_NULL for NULL; None for
    any other type."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_null(col.type):
        return np.full(len(col), INT_NULL, dtype=np.int64)
    if not pa.types.is_integer(col.type):
        return None
    if col.null_count:
        col = pc.fill_null(col.cast(pa.int64()), INT_NULL)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)


class Reader:
    """Parallel chunked reads of integer expressions from the tables of one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.uri = readonly_uri(path)
        self._local = threading.local()
        #: (table, reason) of every chunk read through ``sqlite3`` because ADBC could not give it
        self.by_stdlib: list[tuple[str, str]] = []
        self._rows: dict[str, int] = {}
        self._spans: dict[str, int] = {}  # (table -> its rowids' span, at least its rows: see ranges)
        self._encoding: str | None = None
        self._opened: list[Any] = []  # (every connection, closed with the reader)
        self._close = weakref.finalize(self, _close_all, self._opened)

    def close(self) -> None:
        """Close the reader's connections (they are closed when it is let go, too)."""
        self._close()

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.uri, uri=True, check_same_thread=False)
            con.text_factory = bytes  # no UTF-8 decoding of the numbers (nor failure on a blob)
            self._local.con = con
            self._opened.append(con)
        return con

    def _arrow(self, sql: str, params: tuple[int, ...]) -> pa.Table:
        """One query's rows as Arrow columns, through this thread's ADBC connection."""
        import adbc_driver_sqlite.dbapi as adbc

        con = getattr(self._local, "adbc", None)
        if con is None:
            con = adbc.connect(self.uri)
            self._local.adbc = con
            self._opened.append(con)
        cur = con.cursor()
        try:
            cur.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(CHUNK_ROWS)})
            cur.execute(sql, params)
            return cur.fetch_arrow_table()
        finally:
            cur.close()

    def ranges(self, table: str) -> list[tuple[int, int]]:
        """Rowid ranges (first, last) of about :data:`CHUNK_ROWS` rows covering ``table``."""
        try:
            # two subqueries: SQLite answers each from the b-tree's edge; min and max together scan
            lo, hi = self._con().execute(f'SELECT (SELECT min(rowid) FROM "{table}"), '
                                         f'(SELECT max(rowid) FROM "{table}")').fetchone()
        except sqlite3.OperationalError:  # a WITHOUT ROWID table: read it whole
            return [WHOLE]
        except (sqlite3.DatabaseError, UnicodeDecodeError) as ex:
            raise corrupt(self.path, ex) from None
        if lo is None:
            self._spans[table] = 0
            return []
        lo, hi = int(lo), int(hi)
        self._spans[table] = hi - lo + 1
        step = CHUNK_ROWS
        if (hi - lo) // step > 64:
            count = self.rows(table)
            if hi - lo + 1 > 2 * count + step:  # sparse rowids: ranges of rows, not of rowid values
                try:
                    firsts = [int(r[0]) for r in self._con().execute(
                        f'SELECT rowid FROM (SELECT rowid, row_number() OVER (ORDER BY rowid) AS n FROM "{table}") '
                        f"WHERE n % {step} = 1")]
                except (sqlite3.DatabaseError, UnicodeDecodeError) as ex:
                    raise corrupt(self.path, ex) from None
                return [(a, b - 1) for a, b in itertools.pairwise(firsts)] + [(firsts[-1], hi)]
        return [(a, min(a + step - 1, hi)) for a in range(lo, hi + 1, step)]

    def rows(self, table: str) -> int:
        """Rows of ``table`` (``count(*)``: SQLite counts the b-tree's cells), counted once."""
        if table not in self._rows:
            try:
                self._rows[table] = int(self._con().execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
            except (sqlite3.DatabaseError, UnicodeDecodeError) as ex:
                raise corrupt(self.path, ex) from None
        return self._rows[table]

    def _small(self, table: str) -> bool:
        """Whether ``table`` is read through ``sqlite3`` alone (:data:`SMALL_ROWS`); a table whose
        span is not known yet is not."""
        span = self._spans.get(table)
        return span is not None and span <= SMALL_ROWS

    @staticmethod
    def _cond(where: str, bounds: tuple[int, int]) -> tuple[str, tuple[int, ...]]:
        """The WHERE clause and parameters of the rows of ``bounds`` that match ``where``."""
        if bounds == WHOLE:  # the whole table (it may have no rowid)
            return (f"({where})" if where else "1"), ()
        return f"rowid >= ? AND rowid <= ?{f' AND ({where})' if where else ''}", bounds

    def _read_range(self, table: str, exprs: list[str], where: str, bounds: tuple[int, int]
                    ) -> tuple[list[np.ndarray], bool]:
        """The values of ``exprs`` in the rows of ``bounds``, and whether ADBC gave them (then each
        one was an integer or NULL); else read through ``sqlite3`` (see the module's note)."""
        cond, params = self._cond(where, bounds)
        if self._small(table):
            return self._read_stdlib(table, exprs, cond, params), False
        try:
            got = self._arrow(f'SELECT {", ".join(exprs)} FROM "{table}" WHERE {cond}', params)
            out = [_ints(c) for c in got.columns]
            if all(a is not None for a in out):
                return out, True  # type: ignore[return-value]
            reason = f"a value that is not an integer ({got.schema.types[out.index(None)]})"
        except _adbc_errors() as ex:
            reason = _reason(ex)
        self.by_stdlib.append((table, reason))
        return self._read_stdlib(table, exprs, cond, params), False

    def _read_stdlib(self, table: str, exprs: list[str], cond: str, params: tuple[int, ...]) -> list[np.ndarray]:
        con = self._con()
        try:
            row = con.execute(f'SELECT count(*), {", ".join(f"group_concat({e})" for e in exprs)} '
                              f'FROM "{table}" WHERE {cond}', params).fetchone()
            count = int(row[0])
            out: list[np.ndarray] = []
            for expr, text in zip(exprs, row[1:], strict=True):
                arr = _parse(text, count)
                if arr is None:  # a NULL or a non-integer somewhere in this chunk
                    (text,) = con.execute(f'SELECT group_concat({guarded(expr)}) FROM "{table}" WHERE {cond}',
                                          params).fetchone()
                    arr = _parse(text, count)
                    if arr is None:
                        raise sqlite3.DatabaseError(f"unreadable values in {table}")
                out.append(arr)
            return out
        except (sqlite3.DatabaseError, UnicodeDecodeError, OverflowError) as ex:
            raise corrupt(self.path, ex) from None

    def _read_chunk(self, table: str, exprs: list[str], where: str, narrow: bool,
                    bounds: tuple[int, int]) -> tuple[list[np.ndarray], bool]:
        got, integers = self._read_range(table, exprs, where, bounds)
        return ([compact(a, np.int32) for a in got] if narrow else got), integers

    def _tasks(self, table: str, exprs: list[str], where: str, narrow: bool
               ) -> list[Callable[[], tuple[list[np.ndarray], bool]]]:
        """One task per chunk of rows, in rowid order.  With ``narrow``, each task gives its arrays
        :func:`compact` (int32 at most), narrowed on the reader's thread."""
        return [partial(self._read_chunk, table, exprs, where, narrow, b) for b in self.ranges(table)]

    def chunks(self, table: str, exprs: list[str], where: str = "", narrow: bool = False
               ) -> Iterator[list[np.ndarray]]:
        """The values of ``exprs`` (SQL over ``table``'s columns) per chunk of rows, in rowid order;
        at most two chunks per worker are read ahead.  With ``narrow``, each chunk's arrays as
        :meth:`read` gives them (see :func:`compact`)."""
        for got, _ in self._run(self._tasks(table, exprs or ["0"], where, narrow)):
            yield got

    def _run(self, tasks: Sequence[Callable[[], _T]]) -> Iterator[_T]:
        """The tasks' results in order, on the chunked threads (:func:`nsighttk.chunked.run`: at
        most two chunks a thread read ahead; an error or a Ctrl-C drops those not started)."""
        return chunked.run(tasks)

    def _utf8(self) -> bool:
        """Whether the file holds its texts as UTF-8 (what a blob cast of them then gives)."""
        if self._encoding is None:
            try:
                self._encoding = self._con().execute("PRAGMA encoding").fetchone()[0].decode("ascii", "replace")
            except (sqlite3.DatabaseError, UnicodeDecodeError) as ex:
                raise corrupt(self.path, ex) from None
        return self._encoding.upper() == "UTF-8"

    def read_texts(self, table: str, column: str, where: str = "") -> _Texts:
        """The rows of ``table`` (matching ``where``) whose ``column`` holds text, in rowid order:
        their rowids, a code per row, and the distinct values by code as UTF-8 bytes (decoded by
        the caller once per value)."""
        tasks = [partial(self._texts_range, table, column, where, b) for b in self.ranges(table)]
        seen: dict[bytes, int] = {}
        rowids: list[np.ndarray] = []
        codes: list[np.ndarray] = []
        for rid, local, values in self._run(tasks):
            remap = np.empty(len(values), dtype=np.int64)  # (each chunk's distinct values: a short loop)
            for i, v in enumerate(values):
                remap[i] = seen.setdefault(v, len(seen))
            rowids.append(rid)
            codes.append(remap[local])
        if not rowids:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), []
        by_code = [b""] * len(seen)
        for v, c in seen.items():
            by_code[c] = v
        return np.concatenate(rowids), np.concatenate(codes), by_code

    def _texts_range(self, table: str, column: str, where: str, bounds: tuple[int, int]) -> _Texts:
        """:meth:`read_texts` of the rows of ``bounds``: through ADBC, the texts cast to blobs (their
        bytes as stored, valid UTF-8 or not) and coded by Arrow; through ``sqlite3`` where the file's
        texts are not UTF-8 (SQLite then converts them) or ADBC cannot give them."""
        cond, params = self._cond(where, bounds)
        if self._utf8() and not self._small(table):
            import pyarrow as pa
            import pyarrow.compute as pc

            try:
                got = self._arrow(f'SELECT rowid, CAST("{column}" AS BLOB) FROM "{table}" WHERE {cond} '
                                  f'AND typeof("{column}") = \'text\' ORDER BY rowid', params)
                rid = _ints(got.column(0))
                if rid is not None and got.column(1).null_count == 0:
                    coded = pc.dictionary_encode(got.column(1).combine_chunks().cast(pa.binary()))
                    return (rid, np.asarray(coded.indices.to_numpy(zero_copy_only=False), dtype=np.int64),
                            coded.dictionary.to_pylist())
                reason = "rowids or texts of another type"
            except _adbc_errors() as ex:
                reason = _reason(ex)
            self.by_stdlib.append((table, reason))
        return self._texts_stdlib(table, column, cond, params)

    def _texts_stdlib(self, table: str, column: str, cond: str, params: tuple[int, ...]) -> _Texts:
        try:  # (bytes: the connection's text factory; SQLite gives UTF-8 whatever the file's encoding)
            rows = self._con().execute(f'SELECT rowid, "{column}" FROM "{table}" WHERE {cond} '
                                       f'AND typeof("{column}") = \'text\' ORDER BY rowid', params).fetchall()
        except (sqlite3.DatabaseError, UnicodeDecodeError, OverflowError) as ex:
            raise corrupt(self.path, ex) from None
        local: dict[bytes, int] = {}
        codes = np.fromiter(map(local.setdefault, (r[1] for r in rows), itertools.count()), dtype=np.int64,
                            count=len(rows))
        firsts, dense = np.unique(codes, return_inverse=True)
        value_of = {c: v for v, c in local.items()}
        return (np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)), dense.ravel(),
                [value_of[int(c)] for c in firsts])

    def read(self, table: str, exprs: list[str], where: str = "") -> list[np.ndarray]:
        """The values of ``exprs`` for every row of ``table`` (matching ``where``), one array each:
        int64 with INT_NULL, or (see :func:`compact`) a narrower integer type whose minimum is the
        missing value, decided column by column so that small ids never take 8 bytes a row.

        Without ``where``, each column is written into one array of the table's row count,
        allocated before any chunk is kept: chunks kept until the end and then copied into arrays
        allocated after them left the heap at twice the columns' size (10M kernels: 1.16 GB of heap
        for 0.47 GB of columns)."""
        return self.read_checked(table, exprs, where)[0]

    def read_checked(self, table: str, exprs: list[str], where: str = "") -> tuple[list[np.ndarray], bool]:
        """:meth:`read`, and whether every value came through ADBC as an integer or NULL, never a
        text, real or blob (those send their chunk through ``sqlite3``, whose answer turns them into
        INT_NULL), so what SQL's ``max()`` would give is known."""
        tasks = self._tasks(table, exprs or ["0"], where, narrow=True)
        cols = [_Column(None if where or not tasks else self.rows(table)) for _ in exprs]
        integers = True
        for chunk, by_adbc in self._run(tasks):  # (each array compact: narrowed on the reader's threads)
            integers &= by_adbc
            for col, arr in zip(cols, chunk[:len(exprs)], strict=False):
                col.add(arr)
        return [col.done() for col in cols], integers


def _close_all(opened: list[Any]) -> None:
    for con in opened:
        with contextlib.suppress(Exception):  # (closing at exit, or from another thread: nothing left to do)
            con.close()
    opened.clear()


class _Column:
    """One column's values, chunk after chunk: written into an array of ``capacity`` rows (when
    known) in the widest type its chunks have needed so far, or kept as chunks and assembled."""

    def __init__(self, capacity: int | None) -> None:
        self.capacity = capacity
        self.buf: np.ndarray | None = None
        self.n = 0
        self.parts: list[np.ndarray] = []

    def add(self, arr: np.ndarray) -> None:
        if self.capacity is None or arr.dtype.kind != "i" or self.parts:
            if self.buf is not None:  # (a chunk that is not integers: assembled as before)
                self.parts.append(self.buf[:self.n])
                self.buf = None
            self.parts.append(arr)
            return
        if not len(arr):
            return
        if self.buf is None:
            self.buf = np.empty(max(self.capacity, len(arr)), dtype=arr.dtype)
        if arr.dtype.itemsize > self.buf.dtype.itemsize:  # a wider type from now on
            self.buf = _cast(self.buf, arr.dtype, self.n)
        elif arr.dtype != self.buf.dtype:
            arr = _cast(arr, self.buf.dtype, len(arr))
        if self.n + len(arr) > len(self.buf):  # more rows than the count said (a file that changed)
            grown = np.empty(max(2 * len(self.buf), self.n + len(arr)), dtype=self.buf.dtype)
            grown[:self.n] = self.buf[:self.n]
            self.buf = grown
        self.buf[self.n:self.n + len(arr)] = arr
        self.n += len(arr)

    def done(self) -> np.ndarray:
        if self.parts or self.buf is None:
            return assemble(self.parts)
        out = self.buf[:self.n]
        if self.n < len(self.buf) * 15 // 16:  # rows filtered out (NVTX's ranges): no unused tail kept
            out = out.copy()
        self.buf = None
        return out


def _cast(arr: np.ndarray, dtype: np.dtype, n: int) -> np.ndarray:
    """The first ``n`` values of a compact ``arr`` (its type's minimum: missing) in the wider
    integer type ``dtype`` (whose minimum then marks them), in an array as long as ``arr``."""
    out = np.empty(len(arr), dtype=dtype)
    out[:n] = arr[:n]
    if arr.dtype != np.int64:
        low = np.iinfo(arr.dtype).min
        out[:n][arr[:n] == low] = np.iinfo(dtype).min  # (INT_NULL for int64)
    return out


def assemble(parts: list[np.ndarray]) -> np.ndarray:
    """One compact array from compact chunks (their types may differ)."""
    if not parts:
        return np.empty(0, dtype=np.int64)
    if all(p.dtype == parts[0].dtype for p in parts):
        return compact(widen(np.concatenate(parts))) if parts[0].dtype != np.int64 else np.concatenate(parts)
    out = np.empty(sum(len(p) for p in parts), dtype=np.int64)
    at = 0
    for p in parts:
        out[at:at + len(p)] = widen(p)
        at += len(p)
    return compact(out)
