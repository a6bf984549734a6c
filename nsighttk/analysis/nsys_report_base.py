"""Shared pieces of the ``nsys stats`` reports: the result type, SQLite-exact rounding, grouped
statistics, column access and the kernel-name codes every kernel report uses.

See :mod:`nsighttk.analysis.nsys_reports` for the semantics shared by all reports."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from nsighttk.analysis.coltable import Table
from nsighttk.analysis.groupstats import (
    GroupStats,
    combine_codes_with_spans,
    factorize_coded,
    factorize_sorted,
    group_stats,
    small_codes,
)
from nsighttk.analysis.nsys_catalog import COLUMNS, NO_DATA, TITLES
from nsighttk.analysis.nsys_result import ReportResult, exact_round, sql_round_value
from nsighttk.encoding import Coded, decoded
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


def _stats(values: np.ndarray, groups: list[np.ndarray | tuple[np.ndarray, np.ndarray]]
           ) -> tuple[GroupStats, list[np.ndarray]]:
    """Statistics of ``values`` per combination of ``groups`` (in key order), and each group's
    key values, one array per key column.

    Group keys are factorized (sorted, missing values last as pandas does) and combined into one
    integer key, so the statistics come from one sort (:mod:`nsighttk.analysis.groupstats`).  A
    group given as ``(codes, values)`` is already factorized so (:func:`factorize_sorted`'s output)."""
    codes, uniques = [], []
    for c in groups:
        cd, un = c if isinstance(c, tuple) else factorize_sorted(np.asarray(c))
        codes.append(cd)
        uniques.append(un)
    spans = [max(len(u), 1) for u in uniques]
    key = codes[0] if len(codes) == 1 else combine_codes_with_spans(codes, spans)
    del codes
    g = group_stats(key, values)  # (both in their own integer types: no int64 copies)
    del key
    parts = []
    rest = g.key
    for span, un in zip(reversed(spans), reversed(uniques), strict=True):
        rest, code = np.divmod(rest, span)
        parts.append(np.asarray(un)[code] if len(un) else np.array([], dtype=object))
    parts.reverse()
    return g, parts


def _group_codes(cols: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """One code per row for the combination of several integer columns, codes ranking the
    combinations lexicographically, and each combination's values (by code).  Rows are grouped
    through one 64-bit hash (one sort of one column), checked against the rows each group
    stands for; an exact sort of all columns on a collision."""
    h = np.zeros(len(cols[0]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in cols:
            h = (h ^ col.astype(np.uint64)) * np.uint64(0x100000001B3) + np.uint64(0x9E3779B97F4A7C15)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    del h
    inverse = inverse.ravel()
    if not all((col == col[first][inverse]).all() for col in cols):
        _, first, inverse = np.unique(np.stack(cols, axis=1), axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    reps = [col[first].astype(np.int64) for col in cols]
    order = np.lexsort(reps[::-1])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse], [r[order] for r in reps]


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


def ranked_text(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct texts in code-point order, i.e. UTF-8 byte order, as an object array; each
    value's index in it).  None is the empty text; trailing NUL characters are dropped, as numpy's
    fixed-width text does.  Sorted as Python strings, never copied into a fixed-width array (one
    long kernel name made such a copy of a million names take gigabytes)."""
    index: dict[str, int] = {}
    first = [index.setdefault("" if v is None else str(v).rstrip("\0"), len(index)) for v in values]
    distinct = list(index)
    order = sorted(range(len(distinct)), key=distinct.__getitem__)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    texts = np.empty(len(order), dtype=object)
    texts[:] = [distinct[i] for i in order]
    return texts, rank[np.asarray(first, dtype=np.int64)]


def kernel_name_codes(p: Profile) -> tuple[np.ndarray, np.ndarray]:
    """Per kernel, a code ranking its name in byte order, and the names by code.

    Computed from the integer string ids (one per distinct name in an nsys export), which is far
    cheaper than hashing a million name strings."""
    def make() -> tuple[np.ndarray, np.ndarray]:
        if p.loaded("kernels") or p.source is None:
            names = columns(p, "kernels", ["name"])["name"]
            # each distinct name's first row, one dict look-up a kernel (pandas' factorize of Python
            # strings infers a text type first: ten times slower)
            first: dict[object, int] = {}
            at = np.fromiter(map(first.setdefault, names, itertools.count()), dtype=np.int64, count=len(names))
            slot = np.zeros(len(names), dtype=np.int64)
            slot[np.fromiter(first.values(), dtype=np.int64, count=len(first))] = np.arange(len(first))
            distinct = np.empty(len(first), dtype=object)
            distinct[:] = list(first)
            uniq_names, by_name = ranked_text(distinct)
            return small_codes(by_name[slot[at]], len(uniq_names)), uniq_names
        coded = p.coded("kernels", "name_id")
        if coded is not None and bool(np.bincount(coded.codes, minlength=len(coded.values)).all()):
            # (kept as codes, each value used: the ids factorized on their few values, and one int32
            # gathered a kernel; 10M kernels' ids widened and ranked took 200 MB more)
            by_value, ids = factorize_sorted(coded.values)
            names = p.names("kernels", ids)
            uniq_names, by_name = ranked_text(names)
            return small_codes(by_name, len(uniq_names))[by_value][coded.codes], uniq_names
        if _name_ids_in_parts(p):
            return _name_codes_in_parts(p)
        inverse, ids = factorize_sorted(columns(p, "kernels", ["name_id"])["name_id"])  # (dense ids: no sort)
        names = p.names("kernels", ids)
        uniq_names, by_name = ranked_text(names)  # ids sharing a name merge
        return small_codes(by_name, len(uniq_names))[inverse.ravel()], uniq_names
    out = _memo(p, "kernel_name_codes", make)
    return out  # type: ignore[return-value]


def _name_ids_in_parts(p: Profile) -> bool:
    """Whether the kernels' name ids are read a chunk at a time for their codes: they come from a
    source that reads in chunks, are not kept and could not be (100M kernels: the whole int64
    column, its offsets and its codes, 2.4 GB, were analyze's peak at a 768 MB budget)."""
    if p.source is None or not hasattr(p.source, "parts") or p.loaded("kernels") or p.kept("kernels", "name_id"):
        return False
    return 8 * p.bound("kernels") > p.budget


def _name_codes_in_parts(p: Profile) -> tuple[np.ndarray, np.ndarray]:
    """:func:`kernel_name_codes` from the name ids a chunk at a time: their distinct values, then
    each chunk's codes (the result, a byte or two a kernel, is all that is held)."""
    ids, code_of_id, names = kernel_id_codes(p, lambda: (c["name_id"] for c in p.parts("kernels", ["name_id"])))
    codes = [code_of_id[np.searchsorted(ids, widen(decoded(c["name_id"])))] for c in p.parts("kernels", ["name_id"])]
    return (np.concatenate(codes) if codes else code_of_id[:0]), names


def kernel_id_codes(p: Profile, chunks: Callable[[], Iterator[np.ndarray | Coded]]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernels' distinct name ids (ascending; ``chunks`` gives them a chunk at a time), each
    one's code as :func:`kernel_name_codes` numbers names, and the names by code (memoized)."""
    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        seen = [np.unique(widen(decoded(c))) for c in chunks()]
        ids = np.unique(np.concatenate(seen)) if seen else np.empty(0, dtype=np.int64)
        names = p.names("kernels", ids)
        uniq_names, by_name = ranked_text(names)  # ids sharing a name merge
        return ids, small_codes(by_name, len(uniq_names)), uniq_names
    out = _memo(p, "kernel_id_codes", make)
    return out  # type: ignore[return-value]


def nvtx_text_codes(p: Profile) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per NVTX range (every row), for ``name`` and ``domain``: a code ranking the text in byte
    order (:func:`factorize_sorted`, None last) and the texts by code.  Computed once per profile:
    the NVTX reports label ranges with them and the iterations group ranges by them (4.3M ranges:
    0.3 s per column, paid once)."""
    def make() -> dict[str, tuple[np.ndarray, np.ndarray]]:
        out = {}
        for c in ("name", "domain"):
            codes, uniq = text_codes(p, "nvtx", c)
            out[c] = (small_codes(codes, len(uniq)), uniq)
        return out
    out = _memo(p, "nvtx_text_codes", make)
    return out  # type: ignore[return-value]


def text_codes(p: Profile, table: str, col: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`factorize_sorted` of a text column: from the codes the Profile keeps it as where it
    does (:meth:`Profile.coded`), else from the column."""
    coded = p.coded(table, col)
    if coded is None:
        arr = columns(p, table, [col])[col]
        coded = p.coded(table, col)  # (kept by that read)
        if coded is None:
            return factorize_sorted(arr)
    return factorize_coded(coded)


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


def take_groups(g: GroupStats, rows: np.ndarray) -> GroupStats:
    """The groups ``rows`` of ``g``."""
    return GroupStats(*(getattr(g, f)[rows] for f in ("key", "count", "total", "avg", "med", "min", "max", "stddev")))


def top_note(groups: int, top: int, report: str) -> str:
    """What a report cut to its ``top`` rows says."""
    return (f"{groups:,} NVTX range names: the summary keeps the {top} with the most time "
            f"(nsighttk stats -r {report} lists them all)")


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


def _order(table: Table, by: list[str], ascending: list[bool]) -> Table:
    return table.sorted(by, ascending)


def _empty(columns: list[str]) -> Table:
    return Table.empty_of(columns)


def result(name: str, table: Table) -> ReportResult:
    """Report ``name`` (its catalog title) holding ``table``."""
    return ReportResult(name, TITLES[name], table)


def no_data(name: str, why: str, columns: list[str] | None = None) -> ReportResult:
    """Report ``name`` without rows (nsys prints none), and why: a :data:`NO_DATA` key or the
    reason itself; ``columns`` default to the catalog's."""
    return ReportResult(name, TITLES[name], _empty(columns or COLUMNS[name]), [NO_DATA.get(why, why)])
