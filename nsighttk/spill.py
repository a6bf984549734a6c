"""Columns too large for memory, written to temporary files a chunk at a time and read back so.

A :class:`Spill` holds rows of a few integer columns on disk: :meth:`Spill.append` writes each
column's chunk at the end of that column's file, in the chunk's own type (narrow columns stay
narrow on disk), and :meth:`Spill.chunks` reads them back in the same chunks, so what a loop holds
is one chunk, whatever the number of rows.  :meth:`Spill.partition` splits the rows into several
spills by a part number per row, in one pass.  Out-of-core analyses (``analysis/spilled_stats``)
are built on these three.

The files live in a folder of their own under the temporary folder (``TMPDIR``: on a cluster
node, its local disk), removed when the spill is closed, collected, or the process ends; a full
disk or an unwritable folder is one :class:`~nsighttk.errors.OutputFileError` line.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np

from nsighttk.encoding import Coded, Sum, decoded, widen
from nsighttk.errors import OutputFileError


def _failed(where: Path | str, ex: OSError) -> OutputFileError:
    return OutputFileError(f"cannot write temporary files in {where}: {ex.strerror or ex}",
                           "free some space there, or point TMPDIR at a disk with room "
                           "(or set NSIGHTTK_MEMORY_MB higher, so that less is written)")


class Spill:
    """Rows of named integer columns on disk, in chunks of at least ``rows`` rows (small appended
    chunks are gathered: fewer, larger reads later).

    ``folder`` is a folder of the caller's (kept); by default a new temporary folder, removed
    with the spill."""

    def __init__(self, columns: list[str], folder: Path | None = None, rows: int = 1 << 16) -> None:
        self.columns = list(columns)
        self.rows = 0
        self._gather = rows  # appended chunks are gathered up to this many rows before written
        self._pending: list[list[np.ndarray]] = []
        self._pending_rows = 0
        self._chunks: list[tuple[int, list[np.dtype]]] = []  # (rows, each column's type) per chunk
        self._offsets = [0] * len(self.columns)
        self._files: list[BinaryIO] = []
        self._values: dict[str, dict[object, int]] = {}  # text columns: each distinct value's code
        own = folder is None
        if folder is None:
            try:
                folder = Path(tempfile.mkdtemp(prefix="nsighttk-spill-"))
            except OSError as ex:
                raise _failed(tempfile.gettempdir(), ex) from None
        self.folder = folder
        self._prefix = f"{id(self):x}"
        self._cleanup = weakref.finalize(self, _remove, folder, [self._path(i) for i in range(len(self.columns))],
                                         own)
        try:
            self._files = [open(self._path(i), "w+b") for i in range(len(self.columns))]  # noqa: SIM115
        except OSError as ex:
            self.close()
            raise _failed(folder, ex) from None

    def _path(self, i: int) -> Path:
        return self.folder / f"{self._prefix}-{i}.bin"

    def __enter__(self) -> Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the files (and the spill's own folder)."""
        for f in self._files:
            f.close()
        self._files = []
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

    def _write(self) -> None:
        if not self._pending:
            return
        arrs = [_joined([p[i] for p in self._pending]) for i in range(len(self.columns))]
        self._pending, n, self._pending_rows = [], self._pending_rows, 0
        try:
            for i, (f, a) in enumerate(zip(self._files, arrs, strict=True)):
                f.write(a.data)
                self._offsets[i] += a.nbytes
        except OSError as ex:
            raise _failed(self.folder, ex) from None
        self._chunks.append((n, [a.dtype for a in arrs]))

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

    def values(self, column: str) -> np.ndarray:
        """The distinct values of a text column, by the codes its chunks hold (an object array)."""
        seen = self._values.get(column, {})
        out = np.empty(len(seen), dtype=object)
        out[:] = list(seen)
        return out

    def chunks(self, columns: list[str] | None = None) -> Iterator[dict[str, np.ndarray]]:
        """The chunks as appended, ``columns`` of them (default: all), each a dict of arrays."""
        want = [self.columns.index(c) for c in (columns if columns is not None else self.columns)]
        self._write()
        for f in self._files:
            f.flush()
        at = [0] * len(self.columns)
        for n, types in self._chunks:
            out = {}
            for i in want:
                self._files[i].seek(at[i])
                buf = self._files[i].read(n * types[i].itemsize)
                if len(buf) != n * types[i].itemsize:
                    raise OutputFileError(f"a temporary file in {self.folder} was cut short while in use",
                                          "do not clean the temporary folder while nsighttk runs")
                out[self.columns[i]] = np.frombuffer(buf, dtype=types[i])
            for i in range(len(self.columns)):
                at[i] += n * types[i].itemsize
            yield out

    def read(self, columns: list[str] | None = None) -> dict[str, np.ndarray]:
        """Every row of ``columns`` in memory (each column in the widest type its chunks have)."""
        cols = columns if columns is not None else self.columns
        parts: dict[str, list[np.ndarray]] = {c: [] for c in cols}
        for chunk in self.chunks(cols):
            for c in cols:
                parts[c].append(chunk[c])
        out = {}
        for c in cols:
            if parts[c]:
                out[c] = np.concatenate(parts[c]) if len(parts[c]) > 1 else parts[c][0].copy()
            else:
                out[c] = np.empty(0, dtype=np.int64)
        return out


def _remove(folder: Path, files: list[Path], own: bool) -> None:
    for f in files:
        f.unlink(missing_ok=True)
    if own:
        shutil.rmtree(folder, ignore_errors=True)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    """Chunks of a column end to end: in their type where they share it, else widened (a narrow
    type's minimum marks a missing value, which a wider type would take for a number)."""
    if len({a.dtype for a in parts}) > 1:
        parts = [widen(a) for a in parts]
    return np.ascontiguousarray(np.concatenate(parts)) if len(parts) > 1 else parts[0]


def partition(chunks: Iterator[tuple[np.ndarray, dict[str, np.ndarray]]], n_parts: int,
              columns: list[str], held: int = 1 << 20) -> list[Spill]:
    """Rows split into ``n_parts`` spills in one pass: ``chunks`` yields, per chunk, each row's
    part number (0 to ``n_parts`` - 1) and the columns; within a part the rows keep their order.
    About ``held`` rows wait to be written, all parts together (each part gathers its share)."""
    parts = [Spill(columns, rows=max(held // max(n_parts, 1), 1024)) for _ in range(n_parts)]
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
    except BaseException:
        for s in parts:
            s.close()
        raise
    return parts
