"""The compiled functions of :mod:`nsighttk.load.sqlite_jit` (imported on first use: importing
this module imports numba and loads or compiles them)."""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np

#: an integer inside compiled code (Python's int and numpy's int64 alike)
Int = Any

jit = nb.njit(nogil=True, cache=True, boundscheck=False)
#: small functions, inlined where they are called (a call in a row's loop cost more than its work)
inline = nb.njit(nogil=True, cache=True, boundscheck=False, inline="always")
u64 = np.uint64


@inline
def varint(buf: np.ndarray, pos: Int, n: Int) -> tuple[Int, Int]:
    """(value, length) of the varint at ``pos``; length 0 when it runs past ``n``."""
    if pos >= n:
        return 0, 0
    b0 = buf[pos]
    if b0 < 0x80:  # (nearly every serial type and record length)
        return np.int64(b0), 1
    v = u64(0)
    for i in range(8):
        if pos + i >= n:
            return 0, 0
        b = buf[pos + i]
        v = (v << u64(7)) | u64(b & 0x7F)
        if b < 0x80:
            return np.int64(v), i + 1
    if pos + 8 >= n:
        return 0, 0
    v = (v << u64(8)) | u64(buf[pos + 8])
    return np.int64(v), 9


#: bytes of serial types 0-11 (10 and 11 are reserved)
_SIZES = np.array([0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0], dtype=np.int64)
#: the right shift that leaves the value of serial types 0-9 from the 8 bytes at its start
_SHIFT = np.array([0, 56, 48, 40, 32, 16, 0, 0, 0, 0], dtype=np.int64)


@inline
def size_of(st: Int) -> Int:
    return (st - 12) // 2 if st >= 12 else _SIZES[st]


@inline
def value(buf: np.ndarray, at: Int, st: Int, null: Int) -> Int:
    """The integer of serial type ``st`` (0-6, 8, 9) at ``at``: the 8 bytes from ``at`` (the
    pages are followed by 8 bytes of padding) shifted right, sign-extended; NULL as ``null``."""
    if st == 0:
        return null
    if st >= 8:
        return st - 8
    v = u64(0)
    for i in range(8):
        v = (v << u64(8)) | u64(buf[at + i])
    return np.int64(v) >> _SHIFT[st]


@inline
def record(buf: np.ndarray, n_buf: Int, usable: Int, base: Int, k: Int, needed: np.ndarray, text_col: Int,
           sts: np.ndarray, ats: np.ndarray) -> tuple[Int, Int]:
    """Cell ``k`` of the leaf page at ``base``: (0 or a reason code, its rowid), and the serial type
    and offset of each wanted column (``needed``, sorted) in ``sts`` and ``ats``."""
    p = base + 8 + 2 * k
    off = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
    if off < 8 or off > usable - 4:
        return 3, 0
    cell = base + off
    length, l1 = varint(buf, cell, n_buf)
    if l1 == 0:
        return 10, 0
    rid, l2 = varint(buf, cell + l1, n_buf)
    if l2 == 0:
        return 10, 0
    start = cell + l1 + l2
    if length > usable - 35 or start + length > base + usable:
        return 4, 0
    hsize, hl = varint(buf, start, n_buf)
    if hl == 0:
        return 10, 0
    eoh = start + hsize
    pos = start + hl
    at = eoh
    c = 0
    last = needed[-1] if len(needed) else -1
    for j in range(last + 1):
        if pos >= eoh:
            return 6, 0
        st = np.int64(buf[pos])
        if st < 0x80:
            pos += 1
        else:
            st, ln = varint(buf, pos, n_buf)
            if ln == 0:
                return 10, 0
            pos += ln
        if st == 10 or st == 11 or st < 0:  # (< 0: a 9-byte varint; SQLite's serial types are 32-bit)
            return 7, 0
        if needed[c] == j:
            if j != text_col and (st == 7 or st >= 10):
                return 8, 0
            sts[c] = st
            ats[c] = at
            c += 1
        at += size_of(st)
    if at > start + length:
        return 9, 0
    return 0, rid


@jit
def page_cells(buf: np.ndarray, base: Int, expected: Int) -> Int:
    """The cell count of the leaf page at ``base`` (-1: not a leaf, -2: not ``expected``)."""
    if buf[base] != 0x0D:
        return -1
    n = (np.int64(buf[base + 3]) << 8) | np.int64(buf[base + 4])
    return n if n == expected else -2


@jit
def decode_ints(buf: np.ndarray, ps: Int, usable: Int, cells: np.ndarray, needed: np.ndarray,
                kinds: np.ndarray, where_col: Int, keep_types: np.ndarray, null: Int,
                out: np.ndarray, stats: np.ndarray) -> tuple[Int, Int, Int, Int]:
    """The values of the expressions ``kinds`` (rows of kind, a, b: rowid, constant a, column a,
    duration of columns a and b; columns as indexes into ``needed``) on the leaf pages in ``buf``,
    for the rows whose ``where_col`` (an index into ``needed``, or -1) is one of ``keep_types``,
    written to ``out`` from its first column: (0 or a reason code, rows written, first and last
    rowid of the pages).  Per expression, ``stats`` gets the least and the greatest value written
    other than ``null``, and how many ``null`` were written (its rows must come in as the int64
    maximum, minimum and 0)."""
    n_buf = len(buf)
    sts = np.zeros(len(needed), dtype=np.int64)
    ats = np.zeros(len(needed), dtype=np.int64)
    total = 0
    kept = 0
    first = np.int64(0)
    prev = np.int64(0)
    for pg in range(len(cells)):
        base = pg * ps
        n = page_cells(buf, base, cells[pg])
        if n < 0:
            return -n, 0, 0, 0
        for k in range(n):
            code, rid = record(buf, n_buf, usable, base, k, needed, -1, sts, ats)
            if code:
                return code, 0, 0, 0
            if total == 0:
                first = rid
            elif rid <= prev:
                return 5, 0, 0, 0
            prev = rid
            total += 1
            ok = True
            if where_col >= 0:
                w = value(buf, ats[where_col], sts[where_col], null)
                ok = False
                for t in keep_types:
                    if w == t:
                        ok = True
            for e in range(kinds.shape[0]):
                kind = kinds[e, 0]
                if kind == 3:  # ("end" - "start"): NULL when either is NULL or end < start
                    i = kinds[e, 1]
                    j = kinds[e, 2]
                    s = value(buf, ats[i], sts[i], null)
                    f = value(buf, ats[j], sts[j], null)
                    if sts[i] == 0 or sts[j] == 0 or f < s:
                        v = null
                    else:
                        v = np.int64(np.uint64(f) - np.uint64(s))
                        if v < 0:  # beyond int64: a float in SQLite
                            return 11, 0, 0, 0
                elif not ok:
                    continue
                elif kind == 0:
                    v = rid
                elif kind == 1:
                    v = kinds[e, 1]
                else:
                    c = kinds[e, 1]
                    v = value(buf, ats[c], sts[c], null)
                if ok:
                    out[e, kept] = v
                    if v == null:
                        stats[e, 2] += 1
                    else:
                        if v < stats[e, 0]:
                            stats[e, 0] = v
                        if v > stats[e, 1]:
                            stats[e, 1] = v
            if ok:
                kept += 1
    return 0, kept, first, prev
