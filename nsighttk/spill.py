"""Columns too large for memory, written to temporary files a chunk at a time and read back so.

A :class:`Spill` holds rows of a few integer columns on disk: :meth:`Spill.append` gathers
chunks and writes each column's at the end of that column's file, in the chunk's own type (narrow
columns stay narrow on disk), and :meth:`Spill.chunks` reads them back in the chunks written, so
what a loop holds is one chunk, whatever the number of rows.  :func:`partition` splits rows into
several spills by a part number per row, in one pass.  Out-of-core analyses
(``analysis/spilled_stats``) are built on these.

Files are opened only while a chunk is written or the spill is read, so a partition into
thousands of parts holds no file open.  They live in a folder of their own in the process's
scratch folder (:mod:`nsighttk.scratch`, under ``TMPDIR``: on a cluster node, its local disk),
removed when the spill is closed, collected, or the process ends; a full disk or an unwritable folder is one
:class:`~nsighttk.errors.OutputFileError` line.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from nsighttk import scratch
from nsighttk.encoding import Coded, Sum, decoded, widen
from nsighttk.errors import OutputFileError

#: Rows below which a chunk is read back whole however it was appended (above, in pieces of the
#: spill's ``rows`` or this many rows, whichever is more): a source's part of a million rows, appended
#: to a spill of 100,000-row chunks at a small budget, is read back in 100,000-row pieces.
_PIECE_ROWS = 1 << 16


class Spill:
    """Rows of named integer columns on disk, in chunks of about ``rows`` rows (smaller appended
    chunks are gathered first: fewer, larger reads later; a larger one is read back in pieces of
    ``rows``, at least :data:`_PIECE_ROWS`).

    ``missing``: a narrow type's minimum marks a missing value (as :func:`~nsighttk.encoding.widen`
    reads it), so chunks of different types gathered together are widened; without it the values
    are plain numbers, converted to the wider type as they are."""

    def __init__(self, columns: list[str], rows: int = 1 << 16, missing: bool = True) -> None:
        self.columns = list(columns)
        self.rows = 0
        self._gather = rows
        self._missing = missing
        self._pending: list[list[np.ndarray]] = []
        self._pending_rows = 0
        self._chunks: list[tuple[int, list[np.dtype]]] = []  # (rows, each column's type) per chunk
        self._offsets = [0] * len(self.columns)
        self._values: dict[str, dict[object, int]] = {}  # text columns: each distinct value's code
        self.folder = scratch.folder("spill-")
        self._cleanup = weakref.finalize(self, scratch.remove, self.folder, os.getpid())

    def _path(self, i: int) -> Path:
        return self.folder / f"{i}.bin"

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the files and their folder (never raises)."""
        self._pending = []
        self._cleanup()

    @property
    def nbytes(self) -> int:
        """Bytes on disk."""
        self._write()
        return sum(self._offsets)

    def append(self, arrays: Mapping[str, np.ndarray | Coded | Sum]) -> None:
        """One chunk: an array per column, all of one length.  Text (an object array, or a
        :class:`~nsighttk.encoding.Coded` one) is written as int32 codes into the column's distinct
        values (:meth:`values`)."""
        arrs = [np.ascontiguousarray(self._code(c, arrays[c])) for c in self.columns]
        n = len(arrs[0]) if arrs else 0
        if not n:
            return
        if any(len(a) != n for a in arrs):
            raise ValueError("a spilled chunk's columns differ in length")
        self._pending.append(arrs)
        self._pending_rows += n
        self.rows += n
        if self._pending_rows >= self._gather:
            self._write()
        else:  # (held a while: its own rows, not a view keeping a larger array alive: a partition's part
            # taking a row or two of every chunk held every chunk, 600 MB of a 100M-row group at a 64 MB budget)
            self._pending[-1] = [a if a.base is None else a.copy() for a in arrs]

    def flush(self) -> None:
        """Write the rows still gathered in memory."""
        self._write()

    def _write(self) -> None:
        if not self._pending:
            return
        arrs = [self._joined([p[i] for p in self._pending]) for i in range(len(self.columns))]
        self._pending, n, self._pending_rows = [], self._pending_rows, 0
        try:
            for i, a in enumerate(arrs):
                with open(self._path(i), "ab") as f:
                    f.write(a.data)
                self._offsets[i] += a.nbytes
        except OSError as ex:
            raise scratch.failed(self.folder, ex) from None
        piece = max(self._gather, _PIECE_ROWS)  # (a large chunk appended is read back in pieces of that many rows)
        for lo in range(0, n, piece):
            self._chunks.append((min(piece, n - lo), [a.dtype for a in arrs]))

    def _joined(self, parts: list[np.ndarray]) -> np.ndarray:
        """Chunks of a column end to end, in their type where they share it; else widened (where a
        narrow type's minimum is a missing value, which a wider type would take for a number) or
        converted."""
        if len({a.dtype for a in parts}) > 1:
            parts = [widen(a) if self._missing else a.astype(np.int64) for a in parts]
        return np.ascontiguousarray(np.concatenate(parts)) if len(parts) > 1 else parts[0]

    def _code(self, column: str, arr: np.ndarray | Coded | Sum) -> np.ndarray:
        """A chunk of a column as written: integers as they are, text as codes (a coded column's
        few values looked up, not its rows)."""
        if isinstance(arr, Coded) and arr.values.dtype == object:
            seen = self._values.setdefault(column, {})
            table = [seen.setdefault(v, len(seen)) for v in [*arr.values.tolist(), None]]  # (code -1: None)
            return np.array(table, dtype=np.int32)[arr.codes]
        arr = decoded(arr)
        if arr.dtype != object:
            return arr
        seen = self._values.setdefault(column, {})
        return np.fromiter(map(lambda v: seen.setdefault(v, len(seen)), arr.tolist()), dtype=np.int32,
                           count=len(arr))

    def is_text(self, column: str) -> bool:
        """Whether ``column`` was written as codes into text values (:meth:`values`)."""
        return column in self._values

    def values(self, column: str) -> np.ndarray:
        """The distinct values of a text column, by the codes its chunks hold (an object array)."""
        seen = self._values.get(column, {})
        out = np.empty(len(seen), dtype=object)
        out[:] = list(seen)
        return out

    def chunks(self, columns: list[str] | None = None) -> Iterator[dict[str, np.ndarray]]:
        """The chunks as written, ``columns`` of them (default: all), each a dict of arrays."""
        want = [self.columns.index(c) for c in (columns if columns is not None else self.columns)]
        self._write()
        with contextlib.ExitStack() as files:
            try:
                opened = {i: files.enter_context(open(self._path(i), "rb")) for i in want if self._chunks}
            except OSError as ex:
                raise OutputFileError(f"a temporary file in {self.folder} cannot be read: {ex.strerror or ex}",
                                      "do not clean the temporary folder while nsighttk runs") from None
            for n, types in self._chunks:
                out = {}
                for i in want:
                    size = n * types[i].itemsize
                    buf = opened[i].read(size)
                    if len(buf) != size:
                        raise OutputFileError(f"a temporary file in {self.folder} was cut short while in use",
                                              "do not clean the temporary folder while nsighttk runs")
                    out[self.columns[i]] = np.frombuffer(buf, dtype=types[i])
                yield out

    def read(self, columns: list[str] | None = None) -> dict[str, np.ndarray]:
        """Every row of ``columns`` in memory (chunks of different types joined as when gathered)."""
        cols = columns if columns is not None else self.columns
        parts: dict[str, list[np.ndarray]] = {c: [] for c in cols}
        for chunk in self.chunks(cols):
            for c in cols:
                parts[c].append(chunk[c])
        out = {}
        for c in cols:
            joined = self._joined(parts[c]) if parts[c] else np.empty(0, dtype=np.int64)
            out[c] = joined.copy() if len(parts[c]) == 1 else joined  # (one chunk: the read buffer's view)
        return out


def partition(chunks: Iterator[tuple[np.ndarray, dict[str, np.ndarray]]], n_parts: int,
              columns: list[str], held: int = 1 << 20, missing: bool = True) -> list[Spill]:
    """Rows split into ``n_parts`` spills in one pass: ``chunks`` yields, per chunk, each row's
    part number (0 to ``n_parts`` - 1) and the columns; within a part the rows keep their order.
    About ``held`` rows wait to be written, all parts together (each part gathers its share, at
    least 256 rows); none is left waiting at the end."""
    parts = [Spill(columns, rows=max(held // max(n_parts, 1), 256), missing=missing) for _ in range(n_parts)]
    try:
        for part, arrays in chunks:
            if not len(part):
                continue
            order = np.argsort(part, kind="stable")
            counts = np.bincount(part, minlength=n_parts)
            ends = np.cumsum(counts)
            sorted_cols = {c: arrays[c][order] for c in columns}
            del order
            for p in np.flatnonzero(counts).tolist():
                a, b = int(ends[p] - counts[p]), int(ends[p])
                parts[p].append({c: sorted_cols[c][a:b] for c in columns})
            del sorted_cols
        for s in parts:  # (the rows still gathered: written, not held through what follows)
            s.flush()
    except BaseException:
        for s in parts:
            s.close()
        raise
    return parts
