"""The result of an ``nsys stats`` report and SQLite's rounding, in plain Python (no numpy, no
pandas: a small capture's summaries are computed and printed without importing either)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from nsighttk.analysis.coltable import Table


@dataclass
class ReportResult:
    """One report: its nsys name, a title, its rows, and why it is empty when it is.

    Summaries hold ``rows`` (Python values under ``columns``, sizes in bytes; rendered without
    numpy or pandas by :func:`nsighttk.report.nsys_cells.render_rows`) or a
    :class:`~nsighttk.analysis.coltable.Table` (``table``); :attr:`frame` is either as a DataFrame.
    Large reports (the GPU trace) are produced in chunks: :meth:`frames` yields DataFrames without
    ever holding the whole table; :attr:`frame` concatenates them on first use."""

    name: str
    title: str
    table: Table | None = None  # (the NVTX reports' tables)
    notes: list[str] = field(default_factory=list)
    _chunks: Callable[[], Iterator[pd.DataFrame]] | None = None
    _frame: pd.DataFrame | None = None
    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] | None = None

    @property
    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            if self.rows is not None:
                self._frame = rows_frame(self.columns, self.rows)
            elif self.table is not None:
                self._frame = self.table.to_pandas()
            else:
                import pandas as pd

                assert self._chunks is not None
                parts = list(self._chunks())
                self._frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else \
                    parts[0] if parts else pd.DataFrame({c: [] for c in self.columns})
        return self._frame

    def frames(self) -> Iterator[pd.DataFrame]:
        if self._frame is None and self._chunks is not None:
            yield from self._chunks()
        else:
            yield self.frame

    @property
    def empty(self) -> bool:
        if self.rows is not None:
            return not self.rows
        if self.table is not None:
            return self.table.empty
        return self._frame is not None and self._frame.empty


def rows_frame(columns: list[str], rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """Report rows as a DataFrame: integer columns int64 (Python ints where a value leaves int64),
    floats float64, text (and exact averages, as text) Python objects."""
    import numpy as np
    import pandas as pd

    from nsighttk.profile import obj

    out: dict[str, Any] = {}
    for i, c in enumerate(columns):
        values = [r[i] for r in rows]
        kinds = {type(v) for v in values}
        if kinds == {int} and all(-(2**63) <= v < 2**63 for v in values):
            out[c] = np.array(values, dtype=np.int64)
        elif kinds == {float}:
            out[c] = np.array(values, dtype=np.float64)
        else:
            out[c] = obj(values)
    return pd.DataFrame(out, columns=columns)


def sql_round_value(x: float, digits: int = 1) -> float:
    """SQLite's ``round(x, digits)``: half away from zero on the shortest decimal form of x
    (``repr``), as ``Decimal(repr(x)).quantize(..., ROUND_HALF_UP)``.  Plain forms ("123.456") are
    rounded on their digits; exponent forms go through :mod:`decimal` (imported only then)."""
    if not math.isfinite(x):
        return x
    text = repr(float(x))
    whole, dot, frac = text.partition(".")
    if "e" in text or not dot:
        from decimal import ROUND_HALF_UP, Decimal

        return float(Decimal(text).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    if len(frac) <= digits:
        return float(x)
    neg = whole.startswith("-")
    kept = int(whole.lstrip("-") + frac[:digits]) + (frac[digits] >= "5")
    scaled = str(kept).rjust(digits + 1, "0")
    return float(f"{'-' if neg else ''}{scaled[:-digits]}.{scaled[-digits:]}")


def exact_round(x: Fraction, digits: int) -> str:
    """``x`` rounded half away from zero to ``digits`` decimals, exactly, as text."""
    scaled = abs(x) * 10**digits
    n = int(scaled) + (1 if scaled - int(scaled) >= Fraction(1, 2) else 0)
    whole, frac = divmod(n, 10**digits)
    return f"{'-' if x < 0 and n else ''}{whole}.{frac:0{digits}d}"
