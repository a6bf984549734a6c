"""Integer columns of an SQLite table into numpy arrays: in parallel, in bounded chunks, validated.

Reading rows through Python's ``sqlite3`` creates a Python object per value (about 1.2 s per
million rows of two columns here).  Instead SQLite formats each column of a rowid range as one
comma-separated string (``group_concat``, in C) and numpy parses it (in C): 0.2-0.4 s per million
values, and ranges are read on several read-only connections at once (SQLite releases the GIL).
Only one range per worker is in memory at a time, so memory is bounded by the chunk size, not by
the table.

Values that are not integers (text, real, blob, NULL) make the fast parse fail for their chunk,
which is then read again with a guard that turns them into :data:`INT_NULL`; so a column always
comes back with exactly one value per row.  Which rows a caller keeps (an event table drops rows
whose start/end are not integers, or end before start) is a ``where`` clause applied to every read
of that table alike, so arrays read at different times line up row for row.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np

from nsighttk import chunked
from nsighttk.errors import InputFileError
from nsighttk.load import sqlite_jit, sqlite_pages
from nsighttk.load.nsys_schema import readonly_uri
from nsighttk.profile import INT_NULL, compact, widen

#: Rows per chunk: about 0.5 MB of text per column, and fine-grained enough to share out.
CHUNK_ROWS = 65_536
#: Every rowid: a table read whole
WHOLE = (-(2**63), 2**63 - 1)
#: Decode plain integer columns from the file's pages (:mod:`nsighttk.load.sqlite_pages`) where
#: they can be; False: ask SQLite for everything (the tests compare both)
USE_PAGES = True
#: ... with at most this many reader threads.  Decoding costs 1.5-4x less CPU than SQLite on wide
#: tables, but numpy holds the GIL between its calls, so it scales to about 1.5 threads where
#: SQLite's reads scale with the cores: on 2 cores the pages were as fast (two columns) or 2x
#: faster (five and more); on a 16-core host (8 threads), 15-35% slower for narrow reports, 10%
#: faster for the NVTX kernel summary (docs/ENGINE.md, "Decoding the pages").  The compiled
#: decoder (:mod:`nsighttk.load.sqlite_jit`) releases the GIL: it decodes with any number of threads.
PAGE_WORKERS = 4


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


class Reader:
    """Parallel chunked reads of integer expressions from the tables of one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.uri = readonly_uri(path)
        self._local = threading.local()
        self._pages: sqlite_pages.Pages | None = None
        #: (table, reason) of every group of pages read through SQL after decoding refused it
        self.refused: list[tuple[str, str]] = []
        #: each table b-tree's leaves by root page, walked once (None: they cannot be walked)
        self._leaves: dict[int, sqlite_pages.Leaves | None] = {}

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.uri, uri=True, check_same_thread=False)
            con.text_factory = bytes  # no UTF-8 decoding of the numbers (nor failure on a blob)
            self._local.con = con
        return con

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
            return []
        lo, hi = int(lo), int(hi)
        step = CHUNK_ROWS
        if (hi - lo) // step > 64:
            try:
                (count,) = self._con().execute(f'SELECT count(*) FROM "{table}"').fetchone()
                if hi - lo + 1 > 2 * count + step:  # sparse rowids: ranges of rows, not of rowid values
                    firsts = [int(r[0]) for r in self._con().execute(
                        f'SELECT rowid FROM (SELECT rowid, row_number() OVER (ORDER BY rowid) AS n FROM "{table}") '
                        f"WHERE n % {step} = 1")]
                    return [(a, b - 1) for a, b in itertools.pairwise(firsts)] + [(firsts[-1], hi)]
            except (sqlite3.DatabaseError, UnicodeDecodeError) as ex:
                raise corrupt(self.path, ex) from None
        return [(a, min(a + step - 1, hi)) for a in range(lo, hi + 1, step)]

    def _read_range(self, table: str, exprs: list[str], where: str, bounds: tuple[int, int]) -> list[np.ndarray]:
        cond = f"rowid >= ? AND rowid <= ?{f' AND ({where})' if where else ''}"
        if bounds == WHOLE:  # the whole table (it may have no rowid)
            cond, bounds = (f"({where})" if where else "1", ())  # type: ignore[assignment]
        con = self._con()
        try:
            row = con.execute(f'SELECT count(*), {", ".join(f"group_concat({e})" for e in exprs)} '
                              f'FROM "{table}" WHERE {cond}', bounds).fetchone()
            count = int(row[0])
            out: list[np.ndarray] = []
            for expr, text in zip(exprs, row[1:], strict=True):
                arr = _parse(text, count)
                if arr is None:  # a NULL or a non-integer somewhere in this chunk
                    (text,) = con.execute(f'SELECT group_concat({guarded(expr)}) FROM "{table}" WHERE {cond}',
                                          bounds).fetchone()
                    arr = _parse(text, count)
                    if arr is None:
                        raise sqlite3.DatabaseError(f"unreadable values in {table}")
                out.append(arr)
            return out
        except (sqlite3.DatabaseError, UnicodeDecodeError, OverflowError) as ex:
            raise corrupt(self.path, ex) from None

    def _plan(self, table: str, exprs: list[str], where: str) -> tuple[sqlite_pages.Plan, sqlite_pages.Leaves] | None:
        """How to decode ``exprs`` from ``table``'s pages, and its leaves; None when it cannot be
        planned or its b-tree walked (SQLite then reads it)."""
        try:
            if self._pages is None:
                self._pages = sqlite_pages.Pages(self.path)
            p = sqlite_pages.plan(self._con(), table, exprs, where)
            if p is None:
                return None
            if p.root not in self._leaves:  # (two threads may both walk it: the same answer)
                try:
                    self._leaves[p.root] = sqlite_pages.leaves(self._pages, p.root)
                except (sqlite_pages.Unusual, OSError, IndexError, ValueError, OverflowError):
                    self._leaves[p.root] = None
            leaves = self._leaves[p.root]
        except (sqlite_pages.Unusual, OSError, IndexError, ValueError, OverflowError):
            return None
        return None if leaves is None else (p, leaves)

    def rows(self, table: str) -> int | None:
        """Rows of ``table``: its leaf pages' cells, as ``count(*)`` counts them but without a scan
        when a read walks (or walked) the b-tree anyway; None when the pages cannot be walked."""
        got = self._plan(table, ["rowid"], "") if USE_PAGES else None
        return None if got is None else int(got[1].cells.sum())

    def _page_plan(self, table: str, exprs: list[str], where: str
                   ) -> tuple[sqlite_pages.Plan, sqlite_pages.Leaves, sqlite_pages.Compiled | None] | None:
        """How a read of ``exprs`` decodes the pages (the plan, the leaves, the compiled functions
        or None for numpy's), or None when it goes through SQL: pages that cannot be planned, or
        more reader threads than numpy's decoder scales to and no compiled one for this read."""
        if USE_PAGES and (workers() <= PAGE_WORKERS or sqlite_jit.possible()):
            got = self._plan(table, exprs, where)
            if got is not None:
                p, leaves = got
                fns = sqlite_jit.functions() if sqlite_jit.wanted(int(leaves.cells.sum()) * len(p.needed)) else None
                if fns is not None or workers() <= PAGE_WORKERS:
                    return p, leaves, fns
        return None

    def decodes(self, table: str, exprs: list[str], where: str = "") -> bool:
        """Whether a read of ``exprs`` would decode the pages (see :meth:`read_checked`)."""
        return self._page_plan(table, exprs or ["0"], where) is not None

    def _tasks(self, table: str, exprs: list[str], where: str, refused: list[str] | None = None,
               narrow: bool = False) -> tuple[list[_Task], int | None]:
        """One task per chunk, in rowid order: decoded from the pages where the plan allows, a group
        of pages read through SQL where it holds anything unusual (its reason appended to
        ``refused``), the whole table through SQL when it cannot be planned; and the table's row
        count when the pages give it (before ``where``).  With ``narrow``, each task gives its
        arrays :func:`compact` (int32 at most), narrowed on the reader's thread."""
        got = self._page_plan(table, exprs, where)
        if got is not None:
            p, leaves, fns = got
            return ([partial(self._decode, table, exprs, where, p, leaves, a, b, fns, refused, narrow)
                     for a, b in _groups(leaves.cells)], int(leaves.cells.sum()))
        return [partial(self._read_sql, table, exprs, where, narrow, b) for b in self.ranges(table)], None

    def _read_sql(self, table: str, exprs: list[str], where: str, narrow: bool,
                  bounds: tuple[int, int]) -> list[np.ndarray]:
        got = self._read_range(table, exprs, where, bounds)
        return [compact(a, np.int32) for a in got] if narrow else got

    def _decode(self, table: str, exprs: list[str], where: str, p: sqlite_pages.Plan, leaves: sqlite_pages.Leaves,
                a: int, b: int, compiled: sqlite_pages.Compiled | None, refused: list[str] | None,
                narrow: bool = False) -> list[np.ndarray]:
        return self._pages_or_sql(table, leaves, a, b,
                                  partial(sqlite_pages.decode, p=p, compiled=compiled, narrow=narrow),
                                  partial(self._read_sql, table, exprs, where, narrow), refused)

    def _pages_or_sql(self, table: str, leaves: sqlite_pages.Leaves, a: int, b: int,
                      decode: Callable[..., _T], by_sql: Callable[[tuple[int, int]], _T],
                      refused: list[str] | None = None) -> _T:
        """Leaf pages ``a:b`` decoded, or (when the decoder refuses them) the same rows through SQL:
        those after the previous page's key, up to this group's last."""
        pages, cells, lo, hi = leaves.span(a, b)
        try:
            assert self._pages is not None
            return decode(self._pages, pages=pages, cells=cells, lo=lo, hi=hi)
        except (sqlite_pages.Unusual, OSError, IndexError, ValueError, OverflowError) as ex:
            self.refused.append((table, str(ex)))
            if refused is not None:
                refused.append(str(ex))
            first = -(2**63) if a == 0 else int(lo) + 1
            return by_sql((first, 2**63 - 1 if b == len(leaves.pages) else int(hi)))

    def chunks(self, table: str, exprs: list[str], where: str = "", narrow: bool = False
               ) -> Iterator[list[np.ndarray]]:
        """The values of ``exprs`` (SQL over ``table``'s columns) per chunk of rows, in rowid order;
        at most two chunks per worker are read ahead.  With ``narrow``, each chunk's arrays as
        :meth:`read` gives them (see :func:`compact`)."""
        if not exprs:
            exprs = ["0"]
        return self._run(self._tasks(table, exprs, where, narrow=narrow)[0])

    def _run(self, tasks: list[Callable[[], _T]]) -> Iterator[_T]:
        """The tasks' results in order, on the chunked threads (:func:`nsighttk.chunked.run`: at
        most two chunks a thread read ahead; an error or a Ctrl-C drops those not started)."""
        return chunked.run(tasks)

    def read_texts(self, table: str, column: str, where: str = "") -> _Texts:
        """The rows of ``table`` (matching ``where``) whose ``column`` holds text, in rowid order:
        their rowids, a code per row, and the distinct values by code as UTF-8 bytes (decoded by
        the caller once per value).  From the pages where they can be decoded exactly
        (:func:`sqlite_pages.decode_texts`), else per group of pages through SQL."""
        tasks: list[Callable[[], _Texts]] = []
        got = self._plan(table, [f'"{column}"'], where) if USE_PAGES and workers() <= PAGE_WORKERS else None
        if got is not None and self._pages is not None and self._pages.utf8:
            p, leaves = got
            tasks = [partial(self._decode_texts, table, column, where, p, leaves, a, b)
                     for a, b in _groups(leaves.cells)]
        if not tasks:
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
        cond = f"rowid >= ? AND rowid <= ?{f' AND ({where})' if where else ''}"
        if bounds == WHOLE:
            cond, bounds = (f"({where})" if where else "1", ())  # type: ignore[assignment]
        try:  # (bytes: the connection's text factory; SQLite gives UTF-8 whatever the file's encoding)
            rows = self._con().execute(f'SELECT rowid, "{column}" FROM "{table}" WHERE {cond} '
                                       f'AND typeof("{column}") = \'text\' ORDER BY rowid', bounds).fetchall()
        except (sqlite3.DatabaseError, UnicodeDecodeError, OverflowError) as ex:
            raise corrupt(self.path, ex) from None
        local: dict[bytes, int] = {}
        codes = np.fromiter(map(local.setdefault, (r[1] for r in rows), itertools.count()), dtype=np.int64,
                            count=len(rows))
        firsts, dense = np.unique(codes, return_inverse=True)
        value_of = {c: v for v, c in local.items()}
        return (np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)), dense.ravel(),
                [value_of[int(c)] for c in firsts])

    def _decode_texts(self, table: str, column: str, where: str, p: sqlite_pages.Plan, leaves: sqlite_pages.Leaves,
                      a: int, b: int) -> _Texts:
        return self._pages_or_sql(table, leaves, a, b, partial(sqlite_pages.decode_texts, p=p),
                                  partial(self._texts_range, table, column, where))

    def read(self, table: str, exprs: list[str], where: str = "") -> list[np.ndarray]:
        """The values of ``exprs`` for every row of ``table`` (matching ``where``), one array each:
        int64 with INT_NULL, or (see :func:`compact`) a narrower integer type whose minimum is the
        missing value, decided column by column so that small ids never take 8 bytes a row.

        Where the table's row count is known before the first chunk (its pages are decoded), each
        column is written into one array of that size, allocated before any chunk is kept: chunks
        kept until the end and then copied into arrays allocated after them left the heap at twice
        the columns' size (10M kernels: 1.16 GB of heap for 0.47 GB of columns)."""
        return self.read_checked(table, exprs, where)[0]

    def read_checked(self, table: str, exprs: list[str], where: str = "") -> tuple[list[np.ndarray], bool]:
        """:meth:`read`, and whether every value came from the decoded pages: then each one was an
        integer or NULL, never a text, real or blob (those make the decoder refuse their pages, and
        SQLite's answer turns them into INT_NULL), so what SQL's ``max()`` would give is known."""
        refused: list[str] = []
        tasks, rows = self._tasks(table, exprs or ["0"], where, refused, narrow=True)
        cols = [_Column(rows) for _ in exprs]
        for chunk in self._run(tasks):  # (each array compact: narrowed on the reader's threads)
            for col, arr in zip(cols, chunk[:len(exprs)], strict=False):
                col.add(arr)
        return [col.done() for col in cols], rows is not None and not refused


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


def _groups(cells: np.ndarray) -> list[tuple[int, int]]:
    """Runs of consecutive leaf pages holding about :data:`CHUNK_ROWS` rows each."""
    if not len(cells):
        return []
    cut = np.flatnonzero(np.diff(np.cumsum(cells, dtype=np.int64) // CHUNK_ROWS)) + 1
    bounds = np.r_[0, cut, len(cells)]
    return [(int(a), int(b)) for a, b in itertools.pairwise(bounds) if b > a]


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
