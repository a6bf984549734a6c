"""A lazy profile of some rows of another: the steady state of a capture (its iterations after the
warm-up), cut from the parent's tables and kept columns when first asked for, holding masks, not
copies of tables (:func:`subset`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np

from nsighttk.encoding import Coded, decoded, widen
from nsighttk.profile import Profile, conform_columns, frame_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["subset"]


class _Subset:
    """A :class:`TableSource` of some rows of another profile's tables (a boolean mask per table;
    tables without one whole).  Columns are read from the parent (which keeps them within its
    budget) and cut when asked for, so a subset holds masks, not copies of tables."""

    def __init__(self, parent: Profile, keep: dict[str, np.ndarray]) -> None:
        self.parent = parent
        self.keep = keep

    def count(self, table: str) -> int:
        return int(self.keep[table].sum()) if table in self.keep else self.parent.count(table)

    def bound(self, table: str) -> int:
        return int(self.keep[table].sum()) if table in self.keep else self.parent.bound(table)

    def arrays(self, table: str, columns: list[str]) -> Mapping[str, np.ndarray | Coded]:
        mask = self.keep.get(table)
        if mask is None:
            return self.parent.arrays(table, columns, narrow=True)
        # As the parent keeps them, cut: codes (not 13M calls' names decoded for 1M), narrow columns.
        out: dict[str, np.ndarray | Coded] = {c: k.take(mask) for c in columns
                                              if (k := self.parent.coded(table, c)) is not None}
        plain = [c for c in columns if c not in out]
        if plain and self._read_in_parts(table, plain):
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
        analyses of a subset read a chunk at a time, as of the whole profile."""
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


def subset(parent: Profile, keep: dict[str, np.ndarray]) -> Profile:
    """A lazy profile of the rows of ``parent`` selected by ``keep`` (table -> boolean mask); its
    tables and columns are cut from the parent's when first asked for.  It keeps no columns of
    its own (the parent does), shares the parent's meta (copied) and GPUs, and has the parent's
    budget: its analyses go out of core where the parent's would."""
    out = Profile(source=_Subset(parent, keep), meta=dict(parent.meta))
    out.budget = parent.budget
    out.keeps = False
    return out
