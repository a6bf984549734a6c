"""Render report tables the way ``nsys stats`` prints them: CSV, aligned columns, JSON.

Report frames keep sizes in bytes (``(B)``, ``(B/s)`` in the header); here they become nsys'
``(MB)`` and ``(MB/s)`` (10^6 bytes) with three decimals.  Rounded statistics print with one
decimal, integers as integers, missing values as empty fields.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from typing import Any, TextIO

import numpy as np
import pandas as pd

_UNIT_HEADERS = {"(B)": "(MB)", "(B/s)": "(MB/s)"}
_CSV_CHUNK = 8_192  # rows formatted at a time: bounds the Python strings alive at once


def display_header(col: str) -> str:
    for raw, shown in _UNIT_HEADERS.items():
        if col.endswith(raw):
            return col[: -len(raw)] + shown
    return col


def _is_mb(col: str) -> bool:
    return col.endswith("(B)") or col.endswith("(B/s)")


def _format_column(col: str, s: pd.Series) -> list[str]:
    """Column values as nsys prints them in CSV."""
    if _is_mb(col):
        vals = pd.to_numeric(s, errors="coerce").astype("float64").to_numpy()
        out = np.char.mod("%.3f", vals / 1e6).astype(object)
        out[np.isnan(vals)] = ""
        return list(out)
    if pd.api.types.is_float_dtype(s.dtype):
        vals = s.astype("float64").to_numpy()
        out = np.char.mod("%.1f", vals).astype(object)
        out[np.isnan(vals)] = ""
        return list(out)
    if pd.api.types.is_integer_dtype(s.dtype):
        arr = s.astype("Int64")
        mask = arr.isna().to_numpy()
        ints = arr.fillna(0).to_numpy(dtype="int64").astype(str).astype(object)
        ints[mask] = ""
        return list(ints)
    return ["" if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else str(v) for v in s]


def formatted_rows(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    headers = [display_header(c) for c in df.columns]
    cols = [_format_column(c, df[c]) for c in df.columns]
    return headers, [list(r) for r in zip(*cols, strict=True)] if cols else []


def write_csv(frames: Iterable[pd.DataFrame], fh: TextIO) -> bool:
    """Stream CSV exactly as ``nsys stats -f csv`` writes it; returns False when there were no rows."""
    w = csv.writer(fh, lineterminator="\n")
    wrote = False
    for df in frames:
        if df.empty:
            continue
        for lo in range(0, len(df), _CSV_CHUNK):
            headers, rows = formatted_rows(df.iloc[lo:lo + _CSV_CHUNK])
            if not wrote:
                w.writerow(headers)
                wrote = True
            w.writerows(rows)
    return wrote


def to_csv(df: pd.DataFrame) -> str:
    """CSV exactly as ``nsys stats -f csv`` writes it (header row, ``\\n`` line ends)."""
    if df.empty:
        return ""
    buf = io.StringIO()
    write_csv([df], buf)
    return buf.getvalue()


def _with_separators(cell: str) -> str:
    """nsys' column format groups the integer part of numbers with commas."""
    if not cell or not (cell[0].isdigit() or (cell[0] == "-" and cell[1:2].isdigit())):
        return cell
    head, dot, tail = cell.partition(".")
    try:
        grouped = f"{int(head):,}"
    except ValueError:
        return cell
    return grouped + dot + tail


def to_table(df: pd.DataFrame, numeric_hint: set[str] | None = None) -> str:
    """The aligned column layout of ``nsys stats`` (numbers right-aligned, with separators)."""
    headers, rows = formatted_rows(df)
    numeric = [pd.api.types.is_numeric_dtype(df[c].dtype) or _is_mb(c) for c in df.columns]
    cells = [[_with_separators(v) if numeric[i] else v for i, v in enumerate(r)] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: list[str], header: bool = False) -> str:
        parts = []
        for i, v in enumerate(values):
            parts.append(v.center(widths[i]) if header else (v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i])))
        return " " + "  ".join(parts).rstrip()

    out = [line(headers, header=True), " " + "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out) + "\n"


def to_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready records with nsys' units (MB for sizes), nulls as None."""
    records = []
    cols = list(df.columns)
    for row in df.itertuples(index=False, name=None):
        rec: dict[str, Any] = {}
        for c, v in zip(cols, row, strict=True):
            if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
                rec[display_header(c)] = None
            elif _is_mb(c):
                rec[display_header(c)] = round(float(v) / 1e6, 3)
            elif isinstance(v, (np.integer, int)):
                rec[display_header(c)] = int(v)
            elif isinstance(v, (np.floating, float)):
                rec[display_header(c)] = float(v)
            else:
                rec[display_header(c)] = str(v)
        records.append(rec)
    return records


def to_json(df: pd.DataFrame) -> str:
    return json.dumps(to_records(df), indent=1) + "\n"
