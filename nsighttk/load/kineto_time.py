"""Kineto's times, microseconds written as JSON numbers, to exact integer nanoseconds in bulk.

Kineto writes ``"ts": 1712195495519689.047`` (three decimals; nanoseconds on the epoch clock,
which float64 cannot hold above 2^43 us).  The loader decodes ``ts`` and ``dur`` as their JSON text
(``msgspec.Raw``) and :func:`us_to_ns` reads the digits with numpy, all values of a chunk at once:
the value times 1000, rounded to the nearest integer, ties to even (``1.0005`` -> 1000,
``1.0015`` -> 1002, ``-1.0005`` -> -1000), computed from the decimal text exactly, whatever the
number of decimals.  Only numbers with an exponent (``1.5e3``; valid JSON that Kineto never
writes) go one by one, through :class:`decimal.Decimal`.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation

import msgspec
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

#: times beyond this many microseconds (about 127 years) are not a profiler's clock
MAX_US = 4 * 10**15
#: the value given to numbers at or beyond ``MAX_US`` us (its sign kept): over ``MAX_US * 1000``
BEYOND_NS = 2**62
_MINUS, _DOT, _ZERO, _E = ord("-"), ord("."), ord("0"), ord("e")
#: integer digits read by the vectorised path (more are 10^16 us or more: beyond)
_LEFT = 16
_PAD = b"\0" * _LEFT
_ZEROS = np.uint64(0x3030303030303030)  # eight ASCII '0'
#: masks keeping the last k bytes of a 64-bit word (the k digits just before the dot)
_KEEP_LAST = np.array([0] + [(2**64 - 1) << (8 * (8 - k)) & (2**64 - 1) for k in range(1, 9)], dtype=np.uint64)
#: masks keeping bytes 1 .. k of the word after the dot (byte 0 is the dot)
_KEEP_DECIMALS = np.array([((1 << (8 * k)) - 1) << 8 for k in range(5)], dtype=np.uint64)
_MILLI = Decimal("0.001")
_CONTEXT = Context(prec=40)


def us_to_ns(raws: Sequence[msgspec.Raw | bytes]) -> tuple[np.ndarray, np.ndarray]:
    """(int64 nanoseconds, is a number) of JSON texts holding microseconds.

    A text that is not a number (empty for a missing field, ``null``, a string, ``true``, an
    array ...) gives 0 and False; a number whose nanoseconds reach :data:`MAX_US` * 1000 in
    magnitude gives +-:data:`BEYOND_NS`.  The texts must be valid JSON (as msgspec hands them
    over): a zero byte, never in JSON text, separates them."""
    n = len(raws)
    ns = np.zeros(n, dtype=np.int64)
    if not n:
        return ns, np.zeros(0, dtype=bool)
    text = _PAD + b"\0".join(raws) + _PAD
    buf = np.frombuffer(text, dtype=np.uint8)
    ends = np.empty(n, dtype=np.int64)
    ends[:-1] = np.flatnonzero(buf[_LEFT:-_LEFT] == 0) + _LEFT
    ends[-1] = len(buf) - _LEFT
    starts = np.empty(n, dtype=np.int64)
    starts[0] = _LEFT
    starts[1:] = ends[:-1] + 1
    first = buf[starts]  # a zero byte for an empty text
    is_num = (first == _MINUS) | ((first >= _ZERO) & (first <= _ZERO + 9))
    # the dot and the exponent of each number (strings, the other texts with a '.' or an 'e', are not numbers)
    dot = ends.copy()
    at = np.flatnonzero(buf == _DOT)
    tok = np.searchsorted(ends, at, side="right")
    dot[tok[is_num[tok]]] = at[is_num[tok]]
    exp = np.zeros(n, dtype=bool)
    if b"e" in text or b"E" in text:
        at = np.flatnonzero((buf | 0x20) == _E)
        tok = np.searchsorted(ends, at, side="right")
        exp[tok[is_num[tok]]] = True
    rows = np.flatnonzero(is_num & ~exp)
    if len(rows):
        ns[rows] = _plain_to_ns(buf, starts[rows], ends[rows], dot[rows], first[rows] == _MINUS)
    for i in np.flatnonzero(exp):
        ns[i] = _one_to_ns(bytes(raws[int(i)]))
    return ns, is_num


def _plain_to_ns(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, dot: np.ndarray,
                 neg: np.ndarray) -> np.ndarray:
    """Nanoseconds of plain decimal numbers ``-?digits(.digits)?`` in ``buf``: [starts, ends), the
    dot at ``dot`` (``ends`` without one).  The 24 bytes around each dot are gathered in one row of
    three 64-bit words: the last 16 integer digits, the dot and the first 4 decimals; the bytes that
    are not the number's digits are masked off and 8 digits at a time become a number (SWAR: pairs,
    then fours, then eights).  Any nonzero decimal after the fourth rounds a 5 up."""
    words = sliding_window_view(buf, 3 * 8)[dot - _LEFT].view("<u8")
    int_len = dot - starts - neg
    high = _swar8(words[:, 0], _KEEP_LAST[np.clip(int_len - 8, 0, 8)])
    low = _swar8(words[:, 1], _KEEP_LAST[np.clip(int_len, 0, 8)])
    int_us = (high * np.uint64(10**8) + low).astype(np.int64)
    beyond = (int_len > _LEFT) | (int_us >= MAX_US)  # JSON has no leading zeros: 17 digits are 10^16 or more
    dec_len = np.maximum(ends - dot - 1, 0)
    keep = _KEEP_DECIMALS[np.minimum(dec_len, 4)]
    dec = ((words[:, 2] & keep) - (_ZEROS & keep)).astype(np.int64)  # byte 1..4: the decimals' values
    milli = ((dec >> 8) & 0xFF) * 100 + ((dec >> 16) & 0xFF) * 10 + ((dec >> 24) & 0xFF)
    mag = np.where(beyond, 0, int_us) * 1000 + milli
    fourth = (dec >> 32) & 0xFF
    sticky = np.zeros(len(dot), dtype=bool)
    more = np.flatnonzero(dec_len > 4)
    if len(more):  # decimals after the fourth: any nonzero one
        count = dec_len[more] - 4
        first = np.cumsum(count) - count
        at = np.repeat(dot[more] + 5 - first, count) + np.arange(int(count.sum()))
        sticky[more] = np.bincount(np.repeat(np.arange(len(more)), count), weights=buf[at] > _ZERO,
                                   minlength=len(more)) > 0
    mag += (fourth > 5) | ((fourth == 5) & (sticky | ((mag & 1) == 1)))  # half to even
    mag = np.where(beyond | (mag >= MAX_US * 1000), BEYOND_NS, mag)
    return np.where(neg, -mag, mag)


def _swar8(word: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Eight ASCII digits in a little-endian word (first digit in the lowest byte; bytes outside
    ``keep`` count as leading zeros) -> their value."""
    x = (word & keep) - (_ZEROS & keep)
    x = (x * np.uint64(10) + (x >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    x = (x * np.uint64(100) + (x >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    return (x * np.uint64(10000) + (x >> np.uint64(32))) & np.uint64(0xFFFFFFFF)


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
