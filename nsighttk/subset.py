"""A lazy profile of some rows of another: the steady state of a capture (its iterations after the
warm-up), cut from the parent's tables and kept columns when first asked for, holding masks, not
copies of tables (:func:`subset`), and those as bits (:class:`RowMask`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np

from nsighttk.encoding import Coded, decoded, widen
from nsighttk.profile import Profile, conform_columns, frame_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RowMask", "subset"]


#: the bits set in each byte (numpy's bitwise_count is 2.0's; 1.24 is supported)
_ONES = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


class RowMask:
    """Which of ``n`` rows are kept.  Out of core a bit a row (``packed``, in :func:`numpy.packbits`'
    order): an eighth of a boolean mask's bytes (100M kernels, 120M calls and 43M ranges: 33 MB,
    not 263 MB), read back a slice at a time; in memory a boolean mask (read whole, and often: the
    columns it cuts take 8 bytes a row there).  Made empty and set where rows are kept
    (:meth:`set`, :meth:`put`), or :meth:`of` a boolean mask."""

    __slots__ = ("_count", "bits", "mask", "n")

    def __init__(self, n: int, packed: bool = True) -> None:
        self.n = int(n)
        self.bits = np.zeros((self.n + 7) // 8, dtype=np.uint8) if packed else None
        self.mask = None if packed else np.zeros(self.n, dtype=bool)
        self._count: int | None = 0

    @classmethod
    def of(cls, mask: np.ndarray | RowMask, packed: bool = True) -> RowMask:
        """A boolean mask as bits (``packed``) or as it is; a :class:`RowMask` as it is."""
        if isinstance(mask, RowMask):
            return mask
        out = cls(0, packed)
        out.n, out._count = len(mask), None
        if packed:
            out.bits = np.packbits(np.asarray(mask, dtype=bool))
        else:
            out.mask = np.asarray(mask, dtype=bool)
        return out

    def __len__(self) -> int:
        return self.n

    def set(self, rows: np.ndarray) -> None:
        """Keep the rows numbered ``rows`` (any order, repeats allowed)."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return
        self._count = None
        if self.mask is not None:
            self.mask[rows] = True
        else:
            assert self.bits is not None
            np.bitwise_or.at(self.bits, rows >> 3, (128 >> (rows & 7)).astype(np.uint8))

    def put(self, at: int, chunk: np.ndarray) -> None:
        """Keep the rows ``at``.. where the boolean ``chunk`` is true (the others stay as they are)."""
        if not len(chunk):
            return
        self._count = None
        if self.mask is not None:
            self.mask[at:at + len(chunk)] |= chunk
            return
        assert self.bits is not None
        head = min(-at % 8, len(chunk))
        self.set(np.flatnonzero(chunk[:head]) + at)
        if len(chunk) > head:
            packed = np.packbits(chunk[head:])
            lo = (at + head) >> 3
            self.bits[lo:lo + len(packed)] |= packed

    def append(self, chunk: np.ndarray) -> None:
        """Rows after the last, kept where the boolean ``chunk`` is true (a table read a chunk at a
        time, its length known at the end)."""
        at, n = self.n, self.n + len(chunk)
        if self.mask is not None:
            self.mask = np.concatenate([self.mask, np.asarray(chunk, dtype=bool)])
        else:
            assert self.bits is not None
            need = (n + 7) // 8
            base = self.bits.base if isinstance(self.bits.base, np.ndarray) else self.bits
            if len(base) < need:  # (room for twice as many: appending a chunk at a time copies each byte about twice)
                base = np.concatenate([self.bits, np.zeros(max(need, 2 * len(base)) - len(self.bits), np.uint8)])
            self.bits = base[:need]
        self.n = n
        self.put(at, chunk)

    def count(self) -> int:
        """How many rows are kept."""
        if self._count is None:
            self._count = int(np.count_nonzero(self.mask) if self.mask is not None
                              else _ONES[self.bits].sum(dtype=np.int64))
        return self._count

    def slice(self, at: int, n: int) -> np.ndarray:
        """Rows ``at``..``at + n`` as a boolean mask."""
        if self.mask is not None:
            return self.mask[at:at + n]
        assert self.bits is not None
        lo = at >> 3
        bits = np.unpackbits(self.bits[lo:(at + n + 7) >> 3])
        return bits[at - 8 * lo:at - 8 * lo + n].view(bool)

    def array(self) -> np.ndarray:
        """Every row as a boolean mask."""
        return self.mask if self.mask is not None else self.slice(0, self.n)


class _Subset:
    """A :class:`TableSource` of some rows of another profile's tables (a :class:`RowMask` per table;
    tables without one whole).  Columns are read from the parent (which keeps them within its
    budget) and cut when asked for, so a subset holds masks, not copies of tables."""

    def __init__(self, parent: Profile, keep: Mapping[str, RowMask]) -> None:
        self.parent = parent
        self.keep = keep

    def count(self, table: str) -> int:
        return self.keep[table].count() if table in self.keep else self.parent.count(table)

    def bound(self, table: str) -> int:
        return self.keep[table].count() if table in self.keep else self.parent.bound(table)

    def arrays(self, table: str, columns: list[str]) -> Mapping[str, np.ndarray | Coded]:
        if table not in self.keep:
            return self.parent.arrays(table, columns, narrow=True)
        coded = {c: k for c in columns if (k := self.parent.coded(table, c)) is not None}
        plain = [c for c in columns if c not in coded]
        in_parts = bool(plain) and self._read_in_parts(table, plain)
        # (a boolean mask for the columns the parent holds whole; those read in parts are cut a part at a time)
        mask = self.keep[table].array() if coded or (plain and not in_parts) else np.empty(0, dtype=bool)
        # As the parent keeps them, cut: codes (not 13M calls' names decoded for 1M), narrow columns.
        out: dict[str, np.ndarray | Coded] = {c: k.take(mask) for c, k in coded.items()}
        if in_parts:
            got: dict[str, list[np.ndarray]] = {c: [] for c in plain}
            for part in self.parts(table, plain):
                for c in plain:
                    got[c].append(widen(decoded(part[c])))  # (chunks may differ in width: int64 joined)
            out.update({c: np.concatenate(v) if v else np.empty(0, dtype=np.int64) for c, v in got.items()})
        elif plain:
            out.update({c: v[mask] for c, v in self.parent.arrays(table, plain, narrow=True).items()})
        return {c: out[c] for c in columns}

    def _read_in_parts(self, table: str, columns: list[str]) -> bool:
        """Whether ``columns`` are read a chunk at a time, each chunk cut: the parent keeps none of
        them and could not (the whole columns would be read for a part of their rows, and dropped)."""
        if any(self.parent.kept(table, c) for c in columns) or not hasattr(self.parent.source, "parts"):
            return False
        return 8 * self.parent.bound(table) * len(columns) > self.parent.budget

    def parts(self, table: str, columns: list[str]) -> Iterator[Mapping[str, np.ndarray | Coded]]:
        """The parent's :meth:`Profile.parts`, each chunk cut by its share of the mask: out-of-core
        analyses of a subset read a chunk at a time, as of the whole profile.  Columns the parent
        keeps are cut at once (one chunk), not read again from its source."""
        if columns and all(self.parent.kept(table, c) for c in columns):
            yield dict(self.arrays(table, columns))
            return
        mask = self.keep.get(table)
        at = 0
        for part in self.parent.parts(table, columns):
            if mask is None:
                yield part
                continue
            n = len(part[columns[0]]) if columns else 0
            m = mask.slice(at, n)
            at += n
            yield {c: v.take(m) if isinstance(v, Coded) else v[m] for c, v in part.items()}
        if mask is not None and columns and at != len(mask):
            raise AssertionError(f"{table}: the parent's parts hold {at} rows, the subset's mask {len(mask)}")

    def whole(self, table: str) -> set[str]:
        whole: set[str] = getattr(self.parent.source, "whole", lambda _: set())(table)
        return whole

    def frame(self, table: str, columns: list[str]) -> pd.DataFrame:
        if table not in self.keep:
            return self.parent.table(table, columns)
        arrays = {c: decoded(a) for c, a in self.arrays(table, columns).items()}
        return conform_columns(table, frame_of(table, arrays), columns)

    def names(self, table: str, ids: np.ndarray) -> np.ndarray:
        return self.parent.names(table, ids)


def subset(parent: Profile, keep: Mapping[str, np.ndarray | RowMask]) -> Profile:
    """A lazy profile of the rows of ``parent`` selected by ``keep`` (table -> a boolean mask or a
    :class:`RowMask`); its
    tables and columns are cut from the parent's when first asked for.  It keeps no columns of
    its own (the parent does), shares the parent's meta (copied) and GPUs, and has the parent's
    budget: its analyses go out of core where the parent's would."""
    out = Profile(source=_Subset(parent, {t: RowMask.of(m, packed=False) for t, m in keep.items()}),
                  meta=dict(parent.meta))
    out.budget = parent.budget
    out.keeps = False
    return out
