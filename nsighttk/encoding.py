"""How a loader hands a column (:meth:`nsighttk.profile.TableSource.arrays`): integers in the
narrowest type that holds them (:func:`compact`, :func:`widen`; a type's minimum stands for a
missing value), columns of few distinct values as codes into them (:class:`Coded`), an end as the
sum of start and duration (:class:`Sum`)."""

from __future__ import annotations

import numpy as np

#: Missing value in the int64 arrays of :meth:`Profile.arrays` (no nsys id or timestamp takes it;
#: a narrowed column uses its own type's minimum).
INT_NULL = int(np.iinfo(np.int64).min)

_NARROW = [(np.int8, -(2**7)), (np.int16, -(2**15)), (np.int32, -(2**31))]


def compact(arr: np.ndarray, widest: type = np.int32) -> np.ndarray:
    """``arr`` (int64, INT_NULL missing, or a narrower signed type, its minimum missing) in the
    narrowest integer type up to ``widest`` holding its values, the type's minimum standing for a
    missing value; unchanged if none narrower does."""
    if arr.dtype.kind != "i" or arr.dtype.itemsize == 1 or not len(arr):
        return arr
    null = arr == np.iinfo(arr.dtype).min
    vals = arr[~null] if null.any() else arr
    lo, hi = (int(vals.min()), int(vals.max())) if len(vals) else (0, 0)
    for dtype, low in _NARROW:
        if np.dtype(dtype).itemsize >= arr.dtype.itemsize:
            break
        if lo > low and hi <= -low - 1:
            out = arr.astype(dtype)
            out[null] = low
            return out
        if dtype is widest:
            break
    return arr


def narrowed(arr: np.ndarray, lo: int, hi: int, nulls: int, widest: type = np.int32) -> np.ndarray:
    """:func:`compact` of an int64 ``arr`` whose least and greatest values other than INT_NULL
    (``lo``, ``hi``) and count of INT_NULL (``nulls``) are known: the same array in one pass (and
    one more where some are missing)."""
    if arr.dtype != np.int64:
        raise TypeError(f"narrowed takes int64, not {arr.dtype}")
    if not len(arr):
        return arr
    if nulls >= len(arr):
        lo = hi = 0
    for dtype, low in _NARROW:
        if lo > low and hi <= -low - 1:
            out = arr.astype(dtype)
            if nulls:
                out[arr == INT_NULL] = low
            return out
        if dtype is widest:
            break
    return arr


def widen(arr: np.ndarray) -> np.ndarray:
    """The int64 array (INT_NULL missing) that :func:`compact` narrowed."""
    if arr.dtype == np.int64 or arr.dtype.kind != "i":
        return arr
    out = arr.astype(np.int64)
    out[arr == np.iinfo(arr.dtype).min] = INT_NULL
    return out


class Coded:
    """A column as a code per row into its values (``values[codes]``; for text, code -1: None).

    A loader that looks names up by string id has both for free, and a few hundred names over
    13M runtime calls cost 13 MB as int8 codes where the column of pointers costs 104 MB; the
    threads of those calls (six values) cost 13 MB where their int64 ids cost 104 MB
    (:func:`few_values`).  :meth:`Profile.arrays` decodes them; a text value may appear under more
    than one code."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: np.ndarray, values: np.ndarray) -> None:
        self.codes = codes
        self.values = values

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.values.nbytes)

    def decode(self) -> np.ndarray:
        """The column: an object array (one shared object per value) for text, else the values'
        type."""
        if self.values.dtype != object:
            return self.values[self.codes]
        table = np.empty(len(self.values) + 1, dtype=object)  # the last one, None, is code -1's
        table[:-1] = self.values
        return table[self.codes]

    def compact(self) -> Coded:
        """The codes in the narrowest integer type that holds them (-1 included)."""
        for dtype in (np.int8, np.int16, np.int32):
            if len(self.values) <= np.iinfo(dtype).max:
                return Coded(self.codes.astype(dtype, copy=False), self.values)
        return self

    def take(self, rows: np.ndarray) -> Coded:
        """The rows ``rows`` (positions or a mask) of the column."""
        return Coded(self.codes[rows], self.values)


class Sum:
    """A column that is ``a + b`` value for value, neither part missing anywhere (an event's end,
    derived by the reader as start plus duration): the Profile keeps it as that rule, with no bytes
    of its own, where it keeps both parts; decoded, it is the int64 sum."""

    __slots__ = ("a", "b")

    def __init__(self, a: np.ndarray, b: np.ndarray) -> None:
        self.a, self.b = a, b

    def __len__(self) -> int:
        return len(self.a)

    def decode(self) -> np.ndarray:
        return np.add(self.a, self.b, dtype=np.int64)


def decoded(arr: np.ndarray | Coded | Sum) -> np.ndarray:
    """``arr`` as an array (a :class:`Coded` column decoded, a :class:`Sum` added)."""
    return arr.decode() if isinstance(arr, (Coded, Sum)) else arr


#: :func:`few_values` looks at this many rows first, and codes a column in chunks of this many
_SAMPLE = 4096
_CHUNK = 1 << 20


def few_values(arr: np.ndarray, most: int = 127) -> Coded | None:
    """An integer column with at most ``most`` distinct values as int8 codes into them (thread and
    process ids, launch shapes, name ids); None when it has more, or is short or already one byte a
    value.  Rows spread over the column are looked at first, so a column of many values costs that
    look only; the codes are made a chunk at a time, each checked to hold exactly its rows' values.
    Values the look missed (a name called 4,000 times in 13M calls) are then found in one more pass
    and the codes made again."""
    if arr.dtype.kind != "i" or arr.dtype.itemsize == 1 or len(arr) < 16 * _SAMPLE or most > 127:
        return None
    values = np.unique(arr[:: len(arr) // _SAMPLE])
    if len(values) > most:
        return None
    codes = _codes_of_values(arr, values)
    if codes is None:  # values the look missed: all of them, then the codes again
        for a in range(0, len(arr), _CHUNK):
            part = arr[a:a + _CHUNK]
            at = np.minimum(np.searchsorted(values, part), len(values) - 1)
            missed = part[values[at] != part]
            if len(missed):
                values = np.union1d(values, missed)
                if len(values) > most:
                    return None
        codes = _codes_of_values(arr, values)
    return None if codes is None else Coded(codes, values)


def _codes_of_values(arr: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """Each row's position in ``values`` (sorted, at most 127 of them) as int8, a chunk at a time;
    None at the first row whose value is not among them."""
    lo, hi = int(values[0]), int(values[-1])
    if int(arr.min()) < lo or int(arr.max()) > hi:
        return None
    codes = np.empty(len(arr), dtype=np.int8)
    if hi - lo < 1 << 16:  # a table by value: one subtraction and one look-up a row
        table = np.full(hi - lo + 1, -1, dtype=np.int8)
        table[values.astype(np.int64) - lo] = np.arange(len(values), dtype=np.int8)
        for a in range(0, len(arr), _CHUNK):
            at = table[np.subtract(arr[a:a + _CHUNK], lo, dtype=np.int64)]
            if (at < 0).any():
                return None
            codes[a:a + _CHUNK] = at
        return codes
    for a in range(0, len(arr), _CHUNK):  # (few values far apart: thread ids)
        part = arr[a:a + _CHUNK]
        at = np.searchsorted(values, part)
        np.minimum(at, len(values) - 1, out=at)
        if not np.array_equal(values[at], part):
            return None
        codes[a:a + _CHUNK] = at
    return codes
