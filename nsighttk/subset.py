"""A lazy profile of some rows of another: the steady state of a capture (its iterations after the
warm-up), cut from the parent's tables when first asked for, holding boolean masks, not copies of
tables (:func:`subset`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np

from nsighttk.encoding import Coded, decoded, widen
from nsighttk.profile import Profile, conform_columns, empty_arrays, frame_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["subset"]


class _Subset:
    """A :class:`TableSource` of some rows of another profile's tables (a boolean mask per table;
    tables without one whole).  Columns are read from the parent a chunk at a time and cut when
    asked for, so a subset holds masks, not copies of tables."""

    def __init__(self, parent: Profile, keep: Mapping[str, np.ndarray]) -> None:
        self.parent = parent
        self.keep = keep

    def count(self, table: str) -> int:
        return int(np.count_nonzero(self.keep[table])) if table in self.keep else self.parent.count(table)

    def bound(self, table: str) -> int:
        return self.count(table)

    def arrays(self, table: str, columns: list[str]) -> Mapping[str, np.ndarray | Coded]:
        if table not in self.keep:
            return self.parent.arrays(table, columns, narrow=True)
        got: dict[str, list[np.ndarray]] = {c: [] for c in columns}
        for part in self.parts(table, columns):
            for c in columns:
                got[c].append(widen(decoded(part[c])))  # (chunks may differ in width: int64 joined)
        empty = empty_arrays(table, columns)
        return {c: np.concatenate(v) if v else empty[c] for c, v in got.items()}

    def parts(self, table: str, columns: list[str]) -> Iterator[Mapping[str, np.ndarray | Coded]]:
        """The parent's :meth:`Profile.parts`, each chunk cut by its share of the mask."""
        mask = self.keep.get(table)
        at = 0
        for part in self.parent.parts(table, columns):
            if mask is None:
                yield part
                continue
            n = len(part[columns[0]]) if columns else 0
            m = mask[at:at + n]
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


def subset(parent: Profile, keep: Mapping[str, np.ndarray]) -> Profile:
    """A lazy profile of the rows of ``parent`` selected by ``keep`` (table -> a boolean mask); its
    tables and columns are cut from the parent's when first asked for.  It shares the parent's
    meta (copied) and GPUs."""
    return Profile(source=_Subset(parent, {t: np.asarray(m, dtype=bool) for t, m in keep.items()}),
                   meta=dict(parent.meta))
