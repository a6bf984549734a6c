"""Integer columns decoded straight from an SQLite file's table b-tree pages, with numpy.

SQLite's own reader costs about 0.1 us per value here (it formats every value as text, which
numpy then parses: :mod:`nsighttk.load.sqlite_columns`).  The file format is documented
(https://www.sqlite.org/fileformat2.html) and the tables of an nsys export are plain rowid
tables of integers, so their leaf pages can be decoded many rows at a time: cell pointers,
record headers (serial types) and big-endian values become numpy gathers and shifts.

This module only ever answers for what it can decode exactly as SQLite would answer the same
query; for anything else it answers None and the caller asks SQLite:

- a table it cannot plan (no rowid, generated columns, an expression it does not know, a
  journal in WAL mode) is read through SQL entirely;
- a group of leaf pages with anything unusual (a value that is not an integer, a record with
  fewer columns than the schema, a payload spilling onto overflow pages, rowids out of order or
  outside their parent's keys, a pointer outside its page, a page that cannot be read) is read
  through SQL for the same rowid range, so SQLite's own rules (and its corruption errors) apply.

The file is read with ``os.pread``: nothing is mapped (a file truncated under us is an error,
not a crash) and memory is bounded by one group of pages per worker.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nsighttk.encoding import narrowed
from nsighttk.load import sqlite_jit
from nsighttk.load.nsys_schema import DURATION_SQL, NVTX_RANGE_TYPES, NVTX_WHERE
from nsighttk.profile import INT_NULL, compact

#: bytes per serial type 0..9 (7 is a float: never decoded here)
_SIZES = np.array([0, 1, 2, 3, 4, 6, 8, 8, 0, 0], dtype=np.int64)
#: bytes per one-byte serial type 0..127 (10 and 11 are reserved; 12 and up: blobs and texts)
#: the right shift that leaves a serial type's value (sign-extended) from the 8 bytes at its start
_SHIFT = (8 * (8 - _SIZES)).astype(np.uint8)
_SIZES_1B = np.array([*_SIZES.tolist(), 0, 0, *[(t - 12) // 2 for t in range(12, 128)]], dtype=np.uint8)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
Compiled = sqlite_jit.Functions
_LEAF, _INTERIOR = 0x0D, 0x05


class Unusual(Exception):
    """Something this decoder does not read exactly as SQLite would: ask SQLite instead."""


# ----------------------------------------------------------------------------- what to read


@dataclass(frozen=True)
class Plan:
    """How to decode one query (``exprs`` over ``table`` with ``where``) from the pages."""

    root: int
    #: per expression: ("col", index in the record) | ("rowid",) | ("const", value) | ("duration", i_start, i_end)
    exprs: tuple[tuple[int | str, ...], ...]
    #: record index of eventType when the query keeps NVTX ranges only, else -1
    where_col: int
    #: record columns to decode (sorted)
    needed: tuple[int, ...]


def _ident(expr: str) -> str | None:
    e = expr.strip()
    if len(e) > 2 and e[0] == e[-1] == '"' and '"' not in e[1:-1]:
        return e[1:-1]
    return None


def _text(v: object) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def plan(con: sqlite3.Connection, table: str, exprs: list[str], where: str) -> Plan | None:
    """A plan for reading ``exprs`` of ``table`` from its pages, or None (read it through SQL)."""
    try:
        row = con.execute("SELECT type, rootpage, sql FROM sqlite_master WHERE name = ? AND type = 'table'",
                          (table,)).fetchone()
        if row is None or not isinstance(row[1], int) or row[1] < 2:
            return None
        sql = _text(row[2] or "").upper()
        if "WITHOUT ROWID" in sql or "GENERATED" in sql or " AS (" in sql or "VIRTUAL" in sql:
            return None
        info = con.execute(f'PRAGMA table_xinfo("{table}")').fetchall()
        (journal,) = con.execute("PRAGMA journal_mode").fetchone()
    except sqlite3.DatabaseError:
        return None
    if _text(journal).lower() == "wal" or any(r[6] for r in info):  # hidden or generated columns
        return None
    names = [_text(r[1]) for r in info]
    pks = [r for r in info if r[5]]
    ipk = _text(pks[0][1]) if len(pks) == 1 and _text(pks[0][2]).upper() == "INTEGER" else None
    index = {n: i for i, n in enumerate(names)}

    def column(name: str) -> tuple[int | str, ...] | None:
        if name == ipk:
            return ("rowid",)
        return ("col", index[name]) if name in index and names.count(name) == 1 else None

    out: list[tuple[int | str, ...]] = []
    for e in exprs:
        s = e.strip()
        ident = _ident(s)
        if s.lower() == "rowid":
            out.append(("rowid",))
        elif s.upper() == "NULL":
            out.append(("const", INT_NULL))
        elif s.isdigit() and len(s) < 18:
            out.append(("const", int(s)))
        elif ident is not None and (c := column(ident)) is not None:
            out.append(c)
        elif e == DURATION_SQL and (a := column("start")) is not None and (b := column("end")) is not None:
            if a[0] != "col" or b[0] != "col":
                return None
            out.append(("duration", a[1], b[1]))
        else:
            return None
    where_col = -1
    if where:
        if where != NVTX_WHERE or (w := column("eventType")) is None or w[0] != "col":
            return None
        where_col = int(w[1])
    needed = sorted({int(x) for spec in out if spec[0] in ("col", "duration") for x in spec[1:]}
                    | ({where_col} if where_col >= 0 else set()))
    return Plan(root=row[1], exprs=tuple(out), where_col=where_col, needed=tuple(needed))


# ----------------------------------------------------------------------------- the file


#: Bytes of pages read at a time when only their headers are wanted (:meth:`Pages.headers`).
HEADER_BATCH_BYTES = 16 << 20


class Pages:
    """Read access to the pages of one SQLite file (``os.pread``, no mapping)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fd = os.open(path, os.O_RDONLY)
        try:
            head = os.pread(fd, 100, 0)
            self.file_size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if len(head) < 100 or head[:16] != b"SQLite format 3\x00":
            raise Unusual("not an SQLite file")
        size = int.from_bytes(head[16:18], "big")
        self.page_size = 65536 if size == 1 else size
        if self.page_size < 512 or self.page_size & (self.page_size - 1) or head[18] == 2 or head[19] == 2:
            raise Unusual("page size or WAL")
        self.usable = self.page_size - head[20]
        if self.usable < 480:
            raise Unusual("reserved bytes")
        self.pages = self.file_size // self.page_size
        self.utf8 = int.from_bytes(head[56:60], "big") == 1  # the text encoding

    def read(self, numbers: np.ndarray) -> np.ndarray:
        """The pages ``numbers`` (1-based), one after the other, plus 8 bytes of padding."""
        ps = self.page_size
        numbers = np.asarray(numbers, dtype=np.int64)
        if len(numbers) and (numbers.min() < 1 or numbers.max() > self.pages):
            raise Unusual("page number outside the file")
        buf = np.empty(len(numbers) * ps + 8, dtype=np.uint8)  # (every page byte is read into it)
        buf[-8:] = 0
        if not len(numbers):
            return buf
        # one pread per run of consecutive pages
        breaks = np.flatnonzero(np.diff(numbers) != 1) + 1
        starts = np.r_[0, breaks]
        ends = np.r_[breaks, len(numbers)]
        fd = os.open(self.path, os.O_RDONLY)
        try:
            mv = buf.data
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
                want = (b - a) * ps
                got = os.preadv(fd, [mv[a * ps:b * ps]], (int(numbers[a]) - 1) * ps)
                if got != want:
                    raise Unusual("short read")
        finally:
            os.close(fd)
        return buf

    def headers(self, numbers: np.ndarray, width: int = 12) -> np.ndarray:
        """The first ``width`` bytes of each page of ``numbers``, as rows: read in batches of
        :data:`HEADER_BATCH_BYTES`, so a table's leaf level (gigabytes at 100M rows) is never held
        whole."""
        numbers = np.asarray(numbers, dtype=np.int64)
        out = np.empty((len(numbers), width), dtype=np.uint8)
        step = max(1, HEADER_BATCH_BYTES // self.page_size)
        for at in range(0, len(numbers), step):
            part = numbers[at:at + step]
            buf = self.read(part)
            out[at:at + len(part)] = buf[:len(part) * self.page_size].reshape(len(part), self.page_size)[:, :width]
        return out


def _varint(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SQLite varints at ``pos``: (values, lengths)."""
    b = buf[pos]
    more = b >= 0x80
    if not more.any():
        return b.astype(np.int64), np.ones(len(pos), dtype=np.int64)
    val = (b & 0x7F).astype(np.int64)
    length = np.ones(len(pos), dtype=np.int64)
    idx = np.flatnonzero(more)
    for i in range(1, 9):
        b = buf[pos[idx] + i].astype(np.int64)
        if i == 8:
            val[idx] = (val[idx] << 8) | b
            length[idx] = 9
            break
        val[idx] = (val[idx] << 7) | (b & 0x7F)
        length[idx] = i + 1
        idx = idx[b >= 0x80]
        if not len(idx):
            break
    return val, length


def _rows_of(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes from each of ``pos``, as rows of a (len(pos), width) array."""
    if (pos + width > len(buf)).any():
        raise Unusual("record beyond the pages read")
    windows = np.ndarray(shape=(len(buf) - width + 1,), dtype=f"V{width}", buffer=buf.data, strides=(1,))
    return windows[pos].view(np.uint8).reshape(len(pos), width)


def _u16(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return (buf[pos].astype(np.int64) << 8) | buf[pos + 1]


def _u32(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return ((buf[pos].astype(np.int64) << 24) | (buf[pos + 1].astype(np.int64) << 16)
            | (buf[pos + 2].astype(np.int64) << 8) | buf[pos + 3])


@dataclass(frozen=True)
class Leaves:
    """A table's leaf pages in rowid order, with the rowid bounds their parents give them: page
    ``i`` holds rowids > ``lo[i]`` (the key before it; the first page: >=) and <= ``lo[i + 1]``
    (the last: <= ``top``).  Held for the whole run, so narrow: 14 bytes a page, not 32 (100M
    kernels, 120M calls and 43M ranges: about 5M leaf pages); :meth:`span` gives a run of them."""

    pages: np.ndarray  # page numbers (uint32, as SQLite's)
    cells: np.ndarray  # cells on each page (uint16, as a page header's count)
    lo: np.ndarray  # int64
    top: int

    def span(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Pages ``a:b``: their numbers and cells (int64), the rowid bound below the first and the
        one at or above the last."""
        hi = int(self.lo[b]) if b < len(self.lo) else self.top
        return self.pages[a:b].astype(np.int64), self.cells[a:b].astype(np.int64), int(self.lo[a]), hi


def leaves(f: Pages, root: int) -> Leaves:
    """Walk the table b-tree from ``root`` level by level (every leaf of a b-tree is at the same depth)."""
    level = np.array([root], dtype=np.int64)
    lo = np.array([_INT64_MIN], dtype=np.int64)  # exclusive bound, except the first (inclusive)
    hi = np.array([_INT64_MAX], dtype=np.int64)
    seen = 0
    for _depth in range(64):
        head = f.headers(level)  # (the leaf level is the table: only the page headers are kept)
        kind = head[:, 0]
        if (kind == _LEAF).all():
            cells = (head[:, 3].astype(np.uint16) << 8) | head[:, 4]
            # (a child's upper bound is its next sibling's lower one, and a page's last child's its
            # parent's: so a page's is the next page's lower bound, and only the last one's is kept)
            return Leaves(level.astype(np.uint32), cells, lo, int(hi[-1]))
        if not (kind == _INTERIOR).all():
            raise Unusual("not a table b-tree")
        del head
        buf = f.read(level)  # interior pages: a few hundredths of the table
        base = np.arange(len(level), dtype=np.int64) * f.page_size
        n = _u16(buf, base + 3)
        right = _u32(buf, base + 8)
        total = int(n.sum())
        seen += total + len(level)
        if seen > f.pages + 1:
            raise Unusual("b-tree larger than the file")
        first = np.repeat(np.cumsum(n) - n, n)
        k = np.arange(total, dtype=np.int64) - first
        owner = np.repeat(np.arange(len(level)), n)
        ptr = np.repeat(base, n) + 12 + 2 * k
        off = _u16(buf, ptr)
        if total and (off.min() < 12 or off.max() > f.usable - 5):
            raise Unusual("cell outside its page")
        cell = np.repeat(base, n) + off
        child = _u32(buf, cell)
        key, _ = _varint(buf, cell + 4)
        # children in order: each page's cells' left children, then its right-most child
        slots = n + 1
        out = np.empty(int(slots.sum()), dtype=np.int64)
        out_lo = np.empty(len(out), dtype=np.int64)  # (int64, not Python ints: 100M kernels' 2M leaf
        out_hi = np.empty(len(out), dtype=np.int64)  # pages held 300 MB of bounds as objects)
        start = np.cumsum(slots) - slots
        at = start[owner] + k
        out[at] = child
        keys = key
        out_hi[at] = keys
        prev = np.empty(total, dtype=np.int64)
        if total:
            prev[:] = keys[np.maximum(np.arange(total) - 1, 0)]
            prev[k == 0] = lo[owner[k == 0]]
        out_lo[at] = prev
        last = start + n
        out[last] = right
        out_hi[last] = hi
        tail_lo = np.empty(len(level), dtype=np.int64)
        for j in range(len(level)):
            tail_lo[j] = keys[int(start[j] - j + n[j] - 1)] if n[j] else lo[j]
        out_lo[last] = tail_lo
        level, lo, hi = out, out_lo, out_hi
    raise Unusual("b-tree too deep")


# ----------------------------------------------------------------------------- decoding


def _values(be: np.ndarray, at: np.ndarray, st: np.ndarray) -> np.ndarray:
    """Integer values of serial types ``st`` (0-6, 8, 9) stored at ``at``; NULL (0) as INT_NULL."""
    out = be[at].astype(np.int64)  # the 8 big-endian bytes from each value's start
    out >>= _SHIFT[st]  # arithmetic shift: the value, sign-extended
    small = st > 7
    if small.any():
        out[small] = st[small] - 8  # serial types 8 and 9: the constants 0 and 1
    out[st == 0] = INT_NULL
    return out


@dataclass
class _Records:
    """The records of a group of leaf pages: where each wanted column's value is, and its type."""

    buf: np.ndarray
    be: np.ndarray  # 8 big-endian bytes from every offset of buf
    rowid: np.ndarray
    st_of: dict[int, np.ndarray]  # serial types per wanted column
    at_of: dict[int, np.ndarray]  # offsets of the values per wanted column


def decode(f: Pages, p: Plan, pages: np.ndarray, cells: np.ndarray, lo: object, hi: object,
           compiled: Compiled | None = None, narrow: bool = False) -> list[np.ndarray]:
    """The values of ``p``'s expressions on these leaf pages (rowid order); raises :class:`Unusual`.
    With ``compiled`` (:func:`sqlite_jit.functions`), decoded by its functions: the same answer.
    With ``narrow``, each array :func:`compact` (int32 at most): the compiled decoder notes each
    column's range as it writes it, so a column is narrowed in one pass, not six."""
    if compiled is not None:
        return _decode_compiled(compiled, f, p, pages, cells, lo, hi, narrow)
    got = _decode_numpy(f, p, pages, cells, lo, hi)
    return [compact(a, np.int32) for a in got] if narrow else got


def _decode_numpy(f: Pages, p: Plan, pages: np.ndarray, cells: np.ndarray, lo: object,
                  hi: object) -> list[np.ndarray]:
    r = _records(f, p, pages, cells, lo, hi)
    cache: dict[int, np.ndarray] = {}

    def col(j: int) -> np.ndarray:
        if j not in cache:
            cache[j] = _values(r.be, r.at_of[j], r.st_of[j])
        return cache[j]

    total = len(r.rowid)
    keep = None
    if p.where_col >= 0:
        keep = np.isin(col(p.where_col), NVTX_RANGE_TYPES)
    out: list[np.ndarray] = []
    for spec in p.exprs:
        if spec[0] == "rowid":
            v = r.rowid
        elif spec[0] == "const":
            v = np.full(total, spec[1], dtype=np.int64)
        elif spec[0] == "col":
            v = col(int(spec[1]))
        else:  # ("end" - "start") / ("end" >= "start"): NULL when either is NULL or end < start
            i, j = int(spec[1]), int(spec[2])
            s, e = col(i), col(j)
            with np.errstate(over="ignore"):
                v = e - s
            null = (r.st_of[i] == 0) | (r.st_of[j] == 0) | (e < s)
            if ((v < 0) & ~null).any():  # e >= s, yet e - s < 0: beyond int64, a float in SQLite
                raise Unusual("duration beyond int64")
            v[null] = INT_NULL
        out.append(v if keep is None else v[keep])
    return out


def _decode_compiled(fns: Compiled, f: Pages, p: Plan, pages: np.ndarray, cells: np.ndarray, lo: object,
                     hi: object, narrow: bool = False) -> list[np.ndarray]:
    buf = f.read(pages)
    total = int(cells.sum())
    col = {c: i for i, c in enumerate(p.needed)}
    kinds = np.zeros((len(p.exprs), 3), dtype=np.int64)
    for e, spec in enumerate(p.exprs):
        if spec[0] == "rowid":
            kinds[e] = (sqlite_jit.ROWID, 0, 0)
        elif spec[0] == "const":
            kinds[e] = (sqlite_jit.CONST, int(spec[1]), 0)
        elif spec[0] == "col":
            kinds[e] = (sqlite_jit.COL, col[int(spec[1])], 0)
        else:
            kinds[e] = (sqlite_jit.DURATION, col[int(spec[1])], col[int(spec[2])])
    out = np.empty((len(p.exprs), total), dtype=np.int64)
    stats = np.zeros((len(p.exprs), 3), dtype=np.int64)  # per expression: least, greatest, NULLs
    stats[:, 0], stats[:, 1] = _INT64_MAX, _INT64_MIN
    code, kept, first, last = fns["decode_ints"](
        buf, f.page_size, f.usable, cells.astype(np.int64), np.array(p.needed, dtype=np.int64), kinds,
        col.get(p.where_col, -1), np.array(NVTX_RANGE_TYPES, dtype=np.int64), INT_NULL, out, stats)
    if code:
        raise Unusual(sqlite_jit.REASONS[code])
    if total and ((lo != _INT64_MIN and first <= lo) or last > hi):
        raise Unusual("rowids outside their parent's keys")
    if narrow:
        return [narrowed(out[e, :kept], int(least), int(most), int(nulls))
                for e, (least, most, nulls) in enumerate(stats)]
    return [out[e, :kept] for e in range(len(p.exprs))]


#: The most bytes one group of pages' texts of one length class take laid out side by side, with
#: their temporaries (masks of the same shape: five bytes a text byte).
TEXT_BYTES = 32 << 20


def decode_texts(f: Pages, p: Plan, pages: np.ndarray, cells: np.ndarray, lo: object,
                 hi: object) -> tuple[np.ndarray, np.ndarray, list[bytes]]:
    """The rows whose value of ``p``'s one column (``exprs == (("col", j),)``) is text, on these
    leaf pages (matching ``p``'s filter): their rowids, a code per row and the distinct values'
    UTF-8 bytes by code, as SQLite's ``CAST(column AS BLOB)`` gives them where ``typeof`` is 'text'.
    Texts are laid out side by side by length class (up to 16, 32, 64, ... bytes), so a long one
    does not widen the short ones.  Raises :class:`Unusual` (read it through SQL) for anything
    else: a text holding a NUL byte, a file not in UTF-8, a length class over :data:`TEXT_BYTES`."""
    if not f.utf8 or len(p.exprs) != 1 or p.exprs[0][0] != "col":
        raise Unusual("not one text column of a UTF-8 file")
    j = int(p.exprs[0][1])
    r = _records(f, p, pages, cells, lo, hi, text_col=j)
    st = r.st_of[j].astype(np.int64)
    is_text = (st >= 13) & (st % 2 == 1)
    if p.where_col >= 0:
        is_text &= np.isin(_values(r.be, r.at_of[p.where_col], r.st_of[p.where_col]), NVTX_RANGE_TYPES)
    rows = np.flatnonzero(is_text)
    codes = np.empty(len(rows), dtype=np.int64)
    values: list[bytes] = []
    if not len(rows):
        return r.rowid[rows], codes, values
    length = (st[rows] - 13) // 2
    at = r.at_of[j][rows]
    widest = int(length.max())
    padded = np.zeros(len(r.buf) + max(widest, 1), dtype=np.uint8)
    padded[:len(r.buf)] = r.buf
    # A text's class follows from its length: equal texts share one, and classes share no value.
    cls = np.maximum(np.ceil(np.log2(np.maximum(length, 1))).astype(np.int64), 4)
    for c in np.unique(cls).tolist():
        sel = np.flatnonzero(cls == c)
        width = max(int(length[sel].max()), 1)
        if 5 * len(sel) * width > TEXT_BYTES:
            raise Unusual("texts too long to lay out side by side")
        text = _rows_of(padded, at[sel], width)  # (a copy: writable)
        beyond = np.arange(width) >= length[sel, None]
        text[beyond] = 0
        if ((text == 0) & ~beyond).any():
            raise Unusual("a text holding a NUL byte")
        del beyond
        uniq, inverse = np.unique(text.view(f"S{width}").ravel(), return_inverse=True)
        codes[sel] = inverse.ravel() + len(values)
        values += uniq.tolist()
    return r.rowid[rows], codes, values


def _records(f: Pages, p: Plan, pages: np.ndarray, cells: np.ndarray, lo: object, hi: object,
             text_col: int = -1) -> _Records:
    """Cell pointers, rowids and record headers of these leaf pages, checked; ``text_col`` may hold
    any serial type but the reserved ones (the others: integers only)."""
    buf = f.read(pages)
    be = np.ndarray(shape=(len(buf) - 7,), dtype=">i8", buffer=buf.data, strides=(1,))
    ps = f.page_size
    base = np.arange(len(pages), dtype=np.int64) * ps
    if (buf[base] != _LEAF).any():
        raise Unusual("not a leaf")
    n = _u16(buf, base + 3)
    if not np.array_equal(n, cells):
        raise Unusual("cell count changed")
    total = int(n.sum())
    first = np.repeat(np.cumsum(n) - n, n)
    k = np.arange(total, dtype=np.int64) - first
    page_base = np.repeat(base, n)
    off = _u16(buf, page_base + 8 + 2 * k)
    if total and (off.min() < 8 or off.max() > f.usable - 4):
        raise Unusual("cell outside its page")
    cell = page_base + off
    length, l1 = _varint(buf, cell)
    rowid, l2 = _varint(buf, cell + l1)
    start = cell + l1 + l2
    if total and ((length > f.usable - 35).any() or (start + length > page_base + f.usable).any()):
        raise Unusual("overflow page or payload outside its page")
    if total > 1 and not (np.diff(rowid) > 0).all():
        raise Unusual("rowids out of order")
    if total and ((lo != _INT64_MIN and int(rowid[0]) <= lo) or int(rowid[-1]) > hi):  # type: ignore[operator]
        raise Unusual("rowids outside their parent's keys")
    hsize, hl = _varint(buf, start)
    end_of_header = start + hsize
    pos = start + hl
    at = end_of_header.copy()
    st_of: dict[int, np.ndarray] = {}
    at_of: dict[int, np.ndarray] = {}
    last = p.needed[-1] if p.needed else -1
    if last < 0:
        at = end_of_header
    elif (pos + last + 1 <= end_of_header).all() and ((hdr := _rows_of(buf, pos, last + 1)) < 0x80).all():
        # the usual record: every serial type up to the last wanted column is one byte
        if ((hdr == 10) | (hdr == 11)).any():
            raise Unusual("reserved serial type")
        sizes = _SIZES_1B[hdr]
        ends = np.cumsum(sizes, axis=1, dtype=np.int32)
        wanted = hdr[:, [c for c in p.needed if c != text_col]]
        if ((wanted == 7) | (wanted >= 10)).any():
            raise Unusual("a value that is not an integer")
        for j in p.needed:
            st_of[j] = hdr[:, j]  # (one byte each: no int64 copy)
            at_of[j] = end_of_header + (ends[:, j] - sizes[:, j])
        at = end_of_header + ends[:, last]
    else:
        at = end_of_header.copy()
        for j in range(last + 1):
            if (pos >= end_of_header).any():
                raise Unusual("record with fewer columns than the table")
            st, ln = _varint(buf, pos)
            pos = pos + ln
            if ((st == 10) | (st == 11) | (st < 0)).any():  # (< 0: a 9-byte varint; SQLite's are 32-bit)
                raise Unusual("reserved serial type")
            if j in p.needed:
                if j != text_col and ((st == 7) | (st >= 10)).any():
                    raise Unusual("a value that is not an integer")
                st_of[j], at_of[j] = st, at
            at = at + np.where(st >= 12, (st - 12) // 2, _SIZES[np.minimum(st, 9)])
    if total and (at > start + length).any():
        raise Unusual("record longer than its payload")
    return _Records(buf, be, rowid, st_of, at_of)
