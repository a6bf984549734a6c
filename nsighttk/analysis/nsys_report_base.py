"""Shared pieces of the ``nsys stats`` reports: the result type, SQLite-exact rounding, grouped
statistics, column access and the kernel-name codes every kernel report uses.

See :mod:`nsighttk.analysis.nsys_reports` for the semantics shared by all reports."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from nsighttk.analysis.coltable import Table
from nsighttk.analysis.groupstats import (
    GroupStats,
)
from nsighttk.analysis.nsys_catalog import COLUMNS, NO_DATA, TITLES
from nsighttk.analysis.nsys_result import ReportResult, exact_round, sql_round_value
from nsighttk.profile import Profile, widen

if TYPE_CHECKING:
    import pandas as pd

STAT_COLUMNS = ["Total Time (ns)", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)"]


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


def _memo(p: Profile, key: str, make: Callable[[], object]) -> object:
    """Derived arrays shared by several reports, computed once per profile (the profile's cache is
    cleared when one of its tables is replaced)."""
    tag = (key,)
    if tag not in p.cache:
        p.cache[tag] = make()
    return p.cache[tag]


def columns(p: Profile, table: str, cols: list[str]) -> dict[str, np.ndarray]:
    """Columns of ``table`` as numpy arrays (int64 with INT_NULL for missing values); the profile
    keeps them for the reports that follow, within its memory budget (see :func:`prefetch`)."""
    return p.arrays(table, cols)



def _rows(p: Profile, table: str) -> int:
    return len(columns(p, table, ["duration_ns"])["duration_ns"]) if table != "nvtx" else \
        len(columns(p, "nvtx", ["start_ns"])["start_ns"])


def exact_sum(values: np.ndarray) -> int:
    """The sum of integer ``values`` as a Python int (no wrap-around, however large): int64 ones
    (INT_NULL counting as its value), or a narrow column as kept (its type's minimum read as
    INT_NULL, as :func:`widen` would), added in int64 where that cannot wrap (no int64 copy),
    else a chunk at a time in two 32-bit halves."""
    v = np.asarray(values)
    if not len(v):
        return 0
    if v.dtype.kind == "i" and v.dtype.itemsize <= 4 and len(v) < 2**31:
        if not (v == np.iinfo(v.dtype).min).any():  # (each value below 2**31 in size: no wrap)
            return int(v.sum(dtype=np.int64))
        v = widen(v)
    v = v.astype(np.int64, copy=False)
    step = 1 << 20
    return sum((int((c >> 32).sum()) << 32) + int((c & 0xFFFFFFFF).sum())
               for c in (v[a:a + step] for a in range(0, len(v), step)))


def _totals(values: pd.Series | np.ndarray) -> np.ndarray:
    """Group totals: int64, or Python ints (object) where a total does not fit in int64."""
    arr = np.asarray(values)
    return arr if arr.dtype == object else arr.astype("int64")


def top_rows(total: np.ndarray, top: int | None) -> np.ndarray | None:
    """The rows (ascending) that a stable sort by ``total``, largest first, puts in its first ``top``
    (those of a report's first ``top`` rows, its table sorted so); None: all of them."""
    if top is None or len(total) <= top:
        return None
    from nsighttk.analysis.coltable import _ranks

    rank = _ranks(np.asarray(total), np.zeros(len(total), dtype=bool))
    return np.sort(np.argsort(-rank, kind="stable")[:top])


def _grand_total(values: np.ndarray) -> int:
    """The exact sum of group totals (the share of each: ``Time (%)``)."""
    total = _totals(values)
    return sum(int(t) for t in total) if total.dtype == object else int(exact_sum(total))


def _time_columns(g: GroupStats, count_name: str, grand: int | None = None) -> dict[str, np.ndarray]:
    """The time columns of groups ``g``; ``grand``: the total of every group where ``g`` holds some."""
    total = _totals(g.total)
    grand = _grand_total(total) if grand is None else grand
    pct = total.astype("float64") * 100.0 / float(grand) if grand else np.full(len(total), np.nan)
    return {
        "Time (%)": sql_round(pct),
        "Total Time (ns)": total,
        count_name: np.asarray(g.count, dtype="int64"),
        "Avg (ns)": sql_round(g.avg),
        "Med (ns)": sql_round(g.med),
        "Min (ns)": np.asarray(g.min, dtype="int64"),
        "Max (ns)": np.asarray(g.max, dtype="int64"),
        "StdDev (ns)": sql_round(g.stddev),
    }


def _empty(columns: list[str]) -> Table:
    return Table.empty_of(columns)


def result(name: str, table: Table) -> ReportResult:
    """Report ``name`` (its catalog title) holding ``table``."""
    return ReportResult(name, TITLES[name], table)


def no_data(name: str, why: str, columns: list[str] | None = None) -> ReportResult:
    """Report ``name`` without rows (nsys prints none), and why: a :data:`NO_DATA` key or the
    reason itself; ``columns`` default to the catalog's."""
    return ReportResult(name, TITLES[name], _empty(columns or COLUMNS[name]), [NO_DATA.get(why, why)])
