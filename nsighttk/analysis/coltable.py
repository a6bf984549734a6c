"""A small column table for report results, so that ``nsighttk stats`` never imports pandas.

A :class:`Table` is named numpy columns of one length: integers (int64, with an optional mask of
missing values), floats (NaN missing), or objects (text, ``None`` missing, or exact Python
integers).  :meth:`Table.to_pandas` gives the DataFrame the rest of nsighttk works with (missing
integers as pandas' nullable ``Int64``); the renderers of :mod:`nsighttk.report.nsys_format`
print a Table as they print that DataFrame, byte for byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


class Table:
    """Ordered named columns of equal length; ``masks`` marks missing values of integer columns."""

    def __init__(self, data: dict[str, Any], masks: dict[str, np.ndarray] | None = None) -> None:
        self.data: dict[str, np.ndarray] = {}
        for name, values in data.items():
            arr = np.asarray(values)
            if arr.dtype.kind in "USV":  # numpy text: object, as pandas keeps it
                arr = arr.astype(object)
            self.data[name] = arr
        self.masks: dict[str, np.ndarray] = {c: np.asarray(m, dtype=bool) for c, m in (masks or {}).items()}
        lengths = {len(v) for v in self.data.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: {sorted(lengths)}")

    @classmethod
    def empty_of(cls, columns: list[str]) -> Table:
        """No rows; every column of object type (as an empty report's DataFrame)."""
        return cls({c: np.empty(0, dtype=object) for c in columns})

    @property
    def columns(self) -> list[str]:
        return list(self.data)

    def __len__(self) -> int:
        return len(next(iter(self.data.values()))) if self.data else 0

    @property
    def empty(self) -> bool:
        return len(self) == 0 or not self.data

    def missing(self, col: str) -> np.ndarray:
        """Where ``col`` has no value."""
        v = self.data[col]
        if col in self.masks:
            return self.masks[col]
        if v.dtype.kind == "f":
            return np.isnan(v)
        if v.dtype == object:
            return np.array([x is None or (isinstance(x, float) and x != x) for x in v], dtype=bool)
        return np.zeros(len(v), dtype=bool)

    def take(self, rows: np.ndarray) -> Table:
        return Table({c: v[rows] for c, v in self.data.items()}, {c: m[rows] for c, m in self.masks.items()})

    def drop(self, columns: list[str]) -> Table:
        return Table({c: v for c, v in self.data.items() if c not in columns},
                     {c: m for c, m in self.masks.items() if c not in columns})

    def sorted(self, by: list[str], ascending: list[bool]) -> Table:
        """Rows ordered by ``by`` (stable: ties keep their order), missing values last."""
        keys = []
        for col, asc in zip(by, ascending, strict=True):
            rank = _ranks(self.data[col], self.missing(col))
            keys.append(rank if asc else np.where(rank == np.iinfo(np.int64).max, rank, -rank))
        if not keys or not len(self):
            return self
        return self.take(np.lexsort(keys[::-1]))

    def to_pandas(self) -> pd.DataFrame:
        import pandas as pd

        out: dict[str, Any] = {}
        for c, v in self.data.items():
            if c in self.masks:
                out[c] = pd.arrays.IntegerArray(np.where(self.masks[c], 0, v).astype("int64"), self.masks[c].copy())
            elif v.dtype == object:
                out[c] = pd.Series(v, dtype=object)
            else:
                out[c] = v
        if not len(self):
            return pd.DataFrame({c: pd.Series(v, dtype=v.dtype if c not in self.masks else "Int64")
                                 for c, v in self.data.items()})
        return pd.DataFrame(out)


def _ranks(values: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """Dense rank of each value (equal values, equal rank); missing ones the largest rank."""
    out = np.full(len(values), np.iinfo(np.int64).max, dtype=np.int64)
    have = ~missing
    if have.any():
        _, inverse = np.unique(values[have], return_inverse=True)
        out[have] = inverse.ravel()
    return out
