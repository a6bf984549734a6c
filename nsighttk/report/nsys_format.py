"""Render report tables the way ``nsys stats`` prints them: CSV, aligned columns, JSON.

Report frames keep sizes in bytes (``(B)``, ``(B/s)`` in the header); here they become nsys'
``(MB)`` and ``(MB/s)`` (10^6 bytes) with three decimals.  Rounded statistics print with one
decimal, integers as integers, missing values as empty fields.

Reports come as a :class:`~nsighttk.analysis.coltable.Table` (the summaries; rendered here with
numpy alone, so ``nsighttk stats`` never imports pandas) or as DataFrames (the GPU trace, in
chunks, and other callers); both print the same bytes for the same values.  The rules for one
value, header and layout are :mod:`nsighttk.report.nsys_cells`' (no numpy: the small-export path
prints with them too).
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable
from typing import IO, TYPE_CHECKING, Any, TextIO

import numpy as np

from nsighttk.analysis.coltable import Table
from nsighttk.report.nsys_cells import (
    aligned,
    csv_quote,
    csv_quoting_of,  # noqa: F401  (re-exported: callers set the quoting here)
    display_header,
    is_mb,
    json_text,
    record_value,
)

if TYPE_CHECKING:
    import pandas as pd

_CSV_CHUNK = 32_768  # rows formatted at a time: bounds the Python strings alive at once
#: characters of CSV formatted before they are written: the rows of a chunk adapt to this (rows
#: quoting 1 MiB names go a few at a time), so the text alive at once stays near it
_CSV_BYTES = 16 * 2**20
#: rows of the first chunk, before the width of a row is known
_CSV_FIRST = 64
_is_mb = is_mb
_csv_quote = csv_quote


def _mb_from_int_bytes(values: np.ndarray) -> np.ndarray:
    """``'%.3f' % (b / 1e6)`` for integer byte counts, vectorized.

    Exact integer rounding agrees with printf on the double ``b / 1e6`` except where b/1e6 lies
    exactly halfway between two outputs (``b % 1000 == 500``); those few use printf itself."""
    b = values.astype("int64")
    if len(b) == 0:
        return np.array([], dtype=str)
    neg = b < 0
    q, r = np.divmod(np.abs(b), 1000)
    q = q + (r > 500)
    ties = np.flatnonzero(r == 500)
    whole, frac = np.divmod(q, 1000)
    out = np.strings.add(np.strings.add(whole.astype(str), "."), np.strings.zfill(frac.astype(str), 3))
    out = np.where(neg, np.strings.add("-", out), out)
    if len(ties):
        out = out.astype(object)
        for i in ties:
            out[i] = "%.3f" % (b[i] / 1e6)
    return np.asarray(out, dtype=str)


def _format_values(col: str, s: pd.Series, quote: bool) -> np.ndarray:
    """Format every value of ``s`` (see :func:`_format_column`) into an object array of str."""
    import pandas as pd

    if isinstance(s.dtype, pd.api.extensions.ExtensionDtype) and pd.api.types.is_integer_dtype(s.dtype):
        mask = s.isna().to_numpy()
        vals = s.to_numpy(dtype="int64", na_value=0)
    elif pd.api.types.is_integer_dtype(s.dtype):
        mask = np.zeros(len(s), dtype=bool)
        vals = s.to_numpy(dtype="int64")
    else:
        mask, vals = None, None
    if vals is not None and mask is not None:
        if _is_mb(col):
            text = _mb_from_int_bytes(vals).astype(object)
        else:
            text = np.empty(len(vals), dtype=object)
            text[:] = list(map(str, vals.tolist()))  # twice as fast as numpy's int -> str
        if mask.any():
            text[mask] = ""
        return text
    if _is_mb(col) or pd.api.types.is_float_dtype(s.dtype):
        f = pd.to_numeric(s, errors="coerce").astype("float64").to_numpy()
        text = np.char.mod("%.3f", f / 1e6) if _is_mb(col) else np.char.mod("%.1f", f)
        return np.where(np.isnan(f), "", text).astype(object)
    shown = ["" if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else str(v) for v in s]
    out = np.empty(len(shown), dtype=object)
    out[:] = [_csv_quote(v) for v in shown] if quote else shown
    return out


def _format_column(col: str, s: pd.Series, quote: bool = False) -> np.ndarray:
    """Column values as nsys prints them in CSV: an object array of str ('' for nulls).

    Each distinct value is formatted once and gathered by code: trace columns such as grid,
    block, registers, stream and kernel name have few distinct values among millions of rows."""
    import pandas as pd

    if pd.api.types.is_integer_dtype(s.dtype) and not _is_mb(col) and len(s) > 64:
        head = s.iloc[:64]
        if head.nunique(dropna=False) > 48:  # high cardinality (timestamps, ids): format directly
            return _format_values(col, s, quote)
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    if isinstance(uniques, pd.Index):
        uniq = pd.Series(uniques, dtype=s.dtype if not isinstance(s.dtype, np.dtype) or s.dtype != object else object)
    else:
        uniq = pd.Series(uniques)
    shown = (_format_values(col, uniq.reset_index(drop=True), quote) if len(uniq)
             else np.array([], dtype=object))
    table = np.empty(len(shown) + 1, dtype=object)
    table[:-1] = shown
    table[-1] = ""
    return table[np.where(codes < 0, len(shown), codes)]


def formatted_rows(df: pd.DataFrame | Table) -> tuple[list[str], list[list[str]]]:
    headers = [display_header(c) for c in df.columns]
    if isinstance(df, Table):
        cols = [_table_column(df, c, quote=False) for c in df.columns]
    else:
        cols = [_format_column(c, df[c]).tolist() for c in df.columns]
    return headers, [list(r) for r in zip(*cols, strict=True)] if cols else []


def _low_card_codes(col: str, s: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """(codes, formatted distinct values) for a column with few distinct values, else None."""
    import pandas as pd

    if pd.api.types.is_integer_dtype(s.dtype) and not _is_mb(col) and len(s) > 64 \
            and s.iloc[:64].nunique(dropna=False) > 48:
        return None
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    if len(uniques) > max(64, len(s) // 8):
        return None
    uniq = pd.Series(uniques) if not isinstance(uniques, pd.Index) else pd.Series(uniques, dtype=uniques.dtype)
    shown = _format_values(col, uniq.reset_index(drop=True), True) if len(uniq) else np.array([], dtype=object)
    table = np.empty(len(shown) + 1, dtype=object)
    table[:-1] = shown
    table[-1] = ""
    return np.where(codes < 0, len(shown), codes), table


def _csv_lines(df: pd.DataFrame) -> Iterable[str]:
    """CSV lines (without their line ends) for a chunk.  Runs of adjacent columns with few distinct values (grid, block,
    registers, device, stream, kernel name ...) are joined once per distinct combination, so
    each row joins a handful of fields instead of twenty."""
    fields: list[list[str]] = []
    run_codes: list[np.ndarray] = []
    run_tables: list[np.ndarray] = []

    def flush() -> None:
        if not run_codes:
            return
        if len(run_codes) == 1:
            fields.append(run_tables[0][run_codes[0]].tolist())
        else:
            key = run_codes[0].astype("int64")
            for c, t in zip(run_codes[1:], run_tables[1:], strict=True):
                key = key * len(t) + c
            combos, inverse = np.unique(key, return_inverse=True)
            parts = []
            rest = combos
            for t in reversed(run_tables):
                parts.append(t[rest % len(t)])
                rest = rest // len(t)
            parts.reverse()
            joined = np.array([",".join(row) for row in zip(*(p.tolist() for p in parts), strict=True)],
                              dtype=object)
            fields.append(joined[inverse.ravel()].tolist())
        run_codes.clear()
        run_tables.clear()

    for c in df.columns:
        low = _low_card_codes(c, df[c])
        if low is None:
            flush()
            fields.append(_format_column(c, df[c], quote=True).tolist())
        else:
            run_codes.append(low[0])
            run_tables.append(low[1])
    flush()
    return map(",".join, zip(*fields, strict=True))


def _table_column(t: Table, col: str, quote: bool) -> list[str]:
    """A Table column as nsys prints it (see :func:`_format_values`): a list of str, '' for nulls."""
    v = t.data[col]
    missing = t.missing(col)
    mb = _is_mb(col)
    if v.dtype.kind in "iu":
        text = _mb_from_int_bytes(v).tolist() if mb else list(map(str, v.tolist()))
    elif v.dtype.kind == "f" or mb:
        f = [float("nan") if m else float(x) for x, m in zip(v.tolist(), missing.tolist(), strict=True)]
        text = [f"{x / 1e6:.3f}" for x in f] if mb else [f"{x:.1f}" for x in f]
    else:
        text = [str(x) for x in v.tolist()]
        if quote:  # one quoted copy per distinct name, shared by its rows (not one per row)
            quoted: dict[str, str] = {}
            text = [quoted[x] if x in quoted else quoted.setdefault(x, _csv_quote(x)) for x in text]
    if missing.any():
        for i in np.flatnonzero(missing).tolist():
            text[i] = ""
    return text


def _table_numeric(t: Table, col: str) -> bool:
    return t.data[col].dtype.kind in "iufb" or col in t.masks or _is_mb(col)


def write_csv(frames: Iterable[pd.DataFrame | Table], fh: TextIO) -> bool:
    """Stream CSV exactly as ``nsys stats -f csv`` writes it; returns False when there were no rows."""
    wrote = False
    for df in frames:
        if df.empty:
            continue
        if not wrote:
            fh.write(",".join(_csv_quote(display_header(c)) for c in df.columns) + "\n")
            wrote = True
        lo, step = 0, _CSV_FIRST
        while lo < len(df):
            if isinstance(df, Table):
                part = df.take(np.arange(lo, min(lo + step, len(df))))
                lines: Iterable[str] = map(",".join, zip(*(_table_column(part, c, quote=True) for c in part.columns),
                                                        strict=True))
            else:
                part = df.iloc[lo:lo + step]
                lines = _csv_lines(part)
            size = write_lines(fh, lines)
            lo += len(part)
            step = max(1, min(_CSV_CHUNK, _CSV_BYTES * len(part) // max(size, 1)))
    return wrote


def write_lines(fh: IO[str], lines: Iterable[str]) -> int:
    """Write ``lines``, each ended by ``\\n``, a batch of about :data:`_CSV_BYTES` characters at a
    time (never all of them joined at once); returns the characters written."""
    batch: list[str] = []
    size = total = 0
    for line in lines:
        batch.append(line)
        size += len(line) + 1
        if size >= _CSV_BYTES:
            fh.write("\n".join(batch) + "\n")
            total += size
            batch.clear()
            size = 0
    if batch:
        fh.write("\n".join(batch) + "\n")
    return total + size


def to_csv(df: pd.DataFrame | Table) -> str:
    """CSV exactly as ``nsys stats -f csv`` writes it (header row, ``\\n`` line ends)."""
    if df.empty:
        return ""
    buf = io.StringIO()
    write_csv([df], buf)
    return buf.getvalue()


def to_table(df: pd.DataFrame | Table) -> str:
    """The aligned column layout of ``nsys stats`` (numbers right-aligned, with separators)."""
    headers, rows = formatted_rows(df)
    if isinstance(df, Table):
        numeric = [_table_numeric(df, c) for c in df.columns]
    else:
        import pandas as pd

        numeric = [pd.api.types.is_numeric_dtype(df[c].dtype) or _is_mb(c) for c in df.columns]
    return aligned(headers, rows, numeric)


def _table_rows(t: Table) -> Iterable[tuple[Any, ...]]:
    cols = []
    for c in t.columns:
        values = t.data[c].tolist()
        if c in t.masks:
            values = [None if m else x for x, m in zip(values, t.masks[c].tolist(), strict=True)]
        cols.append(values)
    return zip(*cols, strict=True)


def to_records(df: pd.DataFrame | Table) -> list[dict[str, Any]]:
    """JSON-ready records with nsys' units (MB for sizes), nulls as None."""
    records = []
    cols = list(df.columns)
    if isinstance(df, Table):
        na: Any = None
        rows = _table_rows(df)
    else:
        import pandas as pd

        na = pd.NA
        rows = df.itertuples(index=False, name=None)
    for row in rows:
        records.append({display_header(c): None if v is na else record_value(c, v)
                        for c, v in zip(cols, row, strict=True)})
    return records


def to_json(df: pd.DataFrame | Table) -> str:
    return json_text(to_records(df))
