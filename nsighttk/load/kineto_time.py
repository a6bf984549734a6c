"""Kineto's times, microseconds written as JSON numbers, to exact integer nanoseconds in bulk.

Kineto writes ``"ts": 1712195495519689.047`` (three decimals; nanoseconds on the epoch clock,
which float64 cannot hold above 2^43 us).  The loader decodes ``ts`` and ``dur`` as their JSON text
(``msgspec.Raw``) and :func:`us_to_ns` reads the digits with numpy, all values of a chunk at once:
the value times 1000, rounded to the nearest integer, ties to even (``1.0005`` -> 1000,
``1.0015`` -> 1002, ``-1.0005`` -> -1000), computed from the decimal text exactly, whatever the
number of decimals.  Only numbers with an exponent (``1.5e3``; valid JSON that Kineto never
writes) or longer than :data:`_WIDTH` bytes go one by one, through :class:`decimal.Decimal`.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation

import msgspec
import numpy as np

#: times beyond this many microseconds (about 127 years) are not a profiler's clock
MAX_US = 4 * 10**15
#: the value given to numbers at or beyond ``MAX_US`` us (its sign kept): over ``MAX_US * 1000``
BEYOND_NS = 2**62
#: number texts up to this many bytes are read by the vectorised path
_WIDTH = 40
_POW10 = 10 ** np.arange(19, dtype=np.int64)
_MINUS, _DOT, _ZERO = ord("-"), ord("."), ord("0")
_MILLI = Decimal("0.001")
_CONTEXT = Context(prec=40)


def us_to_ns(raws: Sequence[msgspec.Raw | bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(int64 nanoseconds, is a number) of JSON texts holding microseconds.

    A text that is not a number (empty for a missing field, ``null``, a string, ``true``, an
    array ...) gives 0 and False; a number whose nanoseconds reach :data:`MAX_US` * 1000 in
    magnitude gives +-:data:`BEYOND_NS`.  The texts must be valid JSON (as msgspec hands them over)."""
    n = len(raws)
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    ns = np.zeros(n, dtype=np.int64)
    is_num = np.zeros(n, dtype=bool)
    if not n or not lengths.any():
        return ns, is_num
    buf = np.frombuffer(b"".join(raws), dtype=np.uint8)
    starts = np.cumsum(lengths) - lengths
    first = buf[np.minimum(starts, len(buf) - 1)]
    is_num = (lengths > 0) & ((first == _MINUS) | ((first >= _ZERO) & (first <= _ZERO + 9)))
    short = is_num & (lengths <= _WIDTH)
    rows = np.flatnonzero(short)
    width = int(lengths[rows].max()) if len(rows) else 0
    if width:
        # one row per number, its bytes left-aligned, zero bytes after its end
        col = np.arange(width)
        at = np.minimum(starts[rows, None] + col[None, :], len(buf) - 1)
        mat = np.where(col[None, :] < lengths[rows, None], buf[at], 0)
        exp = ((mat | 0x20) == ord("e")).any(axis=1)  # 'e' or 'E': one by one below
        short[rows[exp]] = False
        ns[rows[~exp]] = _rows_to_ns(mat[~exp], lengths[rows[~exp]])
    for i in np.flatnonzero(is_num & ~short):
        ns[i] = _one_to_ns(bytes(raws[int(i)]))
    return ns, is_num


def _rows_to_ns(mat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Nanoseconds of plain decimal numbers (``-?digits(.digits)?``), one per row of ``mat``."""
    neg = mat[:, 0] == _MINUS
    is_dot = mat == _DOT
    dot = np.where(is_dot.any(axis=1), is_dot.argmax(axis=1), lengths)  # the integer part ends here
    digit = np.where((mat >= _ZERO) & (mat <= _ZERO + 9), mat.astype(np.int64) - _ZERO, 0)
    # the place of each column: 0 for the units digit, -1 for the dot, -2 for the first decimal ...
    place = dot[:, None] - 1 - np.arange(mat.shape[1])[None, :]
    int_w = np.where((place >= 0) & (place < 16), _POW10[np.clip(place, 0, 15)], 0)
    int_us = (digit * int_w).sum(axis=1)  # the integer part's last 16 digits
    beyond = (dot - neg > 16) | (int_us >= MAX_US)  # JSON has no leading zeros: 17 digits are 10^16 or more
    decimal = -place - 1  # 1 for the first decimal
    milli = (digit * np.where((decimal >= 1) & (decimal <= 3), _POW10[np.clip(3 - decimal, 0, 2)], 0)).sum(axis=1)
    mag = np.where(beyond, 0, int_us) * 1000 + milli
    fourth = (digit * (decimal == 4)).sum(axis=1)
    sticky = ((digit != 0) & (decimal >= 5)).any(axis=1)
    mag += (fourth > 5) | ((fourth == 5) & (sticky | ((mag & 1) == 1)))  # half to even
    mag = np.where(beyond | (mag >= MAX_US * 1000), BEYOND_NS, mag)
    return np.where(neg, -mag, mag)


def _one_to_ns(text: bytes) -> int:
    """One number (any JSON form) exactly: its value times 1000, rounded half to even."""
    try:
        d = Decimal(text.decode())
    except (InvalidOperation, UnicodeDecodeError, ValueError):
        return 0
    if not d.is_finite() or d.is_zero():
        return 0
    if d.adjusted() >= 16:  # |value| >= 10^16 us
        return -BEYOND_NS if d.is_signed() else BEYOND_NS
    # one rounding, from all the digits (quantize does not round its operand first); at most 20 digits
    ns = int(d.quantize(_MILLI, ROUND_HALF_EVEN, _CONTEXT).scaleb(3, _CONTEXT))
    if abs(ns) >= MAX_US * 1000:
        return -BEYOND_NS if ns < 0 else BEYOND_NS
    return ns
