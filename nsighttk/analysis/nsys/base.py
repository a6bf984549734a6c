"""Shared pieces of the ``nsys stats`` reports: the result type, SQLite-exact rounding and the
result of a report without data.

See :mod:`nsighttk.analysis.nsys.reports` for the semantics shared by all reports."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from nsighttk.analysis.coltable import Table
from nsighttk.analysis.nsys.catalog import COLUMNS, NO_DATA, TITLES
from nsighttk.analysis.nsys.result import ReportResult, exact_round, sql_round_value

if TYPE_CHECKING:
    import pandas as pd


def sql_round(values: pd.Series | np.ndarray, digits: int = 1) -> np.ndarray:
    """SQLite's ``round(x, digits)``: half away from zero on the shortest decimal form of x.

    Exact values (:class:`~fractions.Fraction`, from groups whose values reach 2^53) are rounded
    exactly and returned as text, so that no float rounding moves an average outside [min, max]."""
    raw = np.asarray(values)
    if raw.dtype == object and any(isinstance(x, Fraction) for x in raw):
        out_text = np.empty(len(raw), dtype=object)
        out_text[:] = [exact_round(Fraction(x), digits) for x in raw]
        return out_text
    return np.array([sql_round_value(x, digits) for x in raw.astype("float64").tolist()], dtype="float64")


def _empty(columns: list[str]) -> Table:
    return Table.empty_of(columns)


def result(name: str, table: Table) -> ReportResult:
    """Report ``name`` (its catalog title) holding ``table``."""
    return ReportResult(name, TITLES[name], table)


def no_data(name: str, why: str, columns: list[str] | None = None) -> ReportResult:
    """Report ``name`` without rows (nsys prints none), and why: a :data:`NO_DATA` key or the
    reason itself; ``columns`` default to the catalog's."""
    return ReportResult(name, TITLES[name], _empty(columns or COLUMNS[name]), [NO_DATA.get(why, why)])
