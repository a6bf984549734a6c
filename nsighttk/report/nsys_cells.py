"""How ``nsys stats`` prints one value, one header and one aligned table: the rules alone, in
plain Python (no numpy), so that both renderers follow them.

:mod:`nsighttk.report.nsys_format` applies them to report tables of any size (numpy columns,
DataFrame chunks); :func:`render_rows` prints a summary's rows with them directly, without
importing numpy.  Sizes are kept in bytes (``(B)``, ``(B/s)`` headers) and
printed in nsys' MB (10^6 bytes) with three decimals; rounded statistics with one decimal;
integers as integers; missing values as empty fields.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

_UNIT_HEADERS = {"(B)": "(MB)", "(B/s)": "(MB/s)"}

#: Columns printed as text (left-aligned, quoted in CSV); all others are numbers.
TEXT_COLUMNS = frozenset({"Name", "Operation", "Category", "Range", "Style", "GridXYZ", "BlockXYZ"})


def display_header(col: str) -> str:
    for raw, shown in _UNIT_HEADERS.items():
        if col.endswith(raw):
            return col[: -len(raw)] + shown
    return col


def is_mb(col: str) -> bool:
    return col.endswith("(B)") or col.endswith("(B/s)")


#: how the nsys that made an export quotes CSV text (set by :func:`csv_quoting_of`): "rfc" (nsys
#: 2022.4: a field with a comma, a quote or a line break is quoted, quotes doubled) or "commas"
#: (nsys 2025.3.1, seen on an H100 host: a field with a comma is quoted, a quote is written as is)
_QUOTING: ContextVar[str] = ContextVar("nsighttk_nsys_csv_quoting", default="rfc")


@contextlib.contextmanager
def csv_quoting_of(nsys_version: object) -> Iterator[None]:
    """Within the block, CSV text is quoted as the nsys that wrote the export (its META version)
    does: 2025 and later as 2025.3.1, earlier (and unknown) versions as 2022.4.  Versions between
    were not checked."""
    m = re.match(r"(\d{4})\.", str(nsys_version or ""))
    token = _QUOTING.set("commas" if m and int(m.group(1)) >= 2025 else "rfc")
    try:
        yield
    finally:
        _QUOTING.reset(token)


def csv_quote(v: str) -> str:
    if _QUOTING.get() == "commas":
        return '"' + v + '"' if any(ch in v for ch in ",\r\n") else v
    return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\r\n') else v


def cell(col: str, v: Any) -> str:
    """One value as nsys prints it (unquoted): '' when missing, MB for sizes, one decimal for
    floats.  An integer byte count prints as printf's ``%.3f`` of ``b / 1e6``."""
    if v is None or (isinstance(v, float) and v != v):
        return ""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if is_mb(col):
        return mb_text(v) if isinstance(v, int) else f"{v / 1e6:.3f}"
    return str(v) if isinstance(v, int) else f"{v:.1f}"


def mb_text(b: int) -> str:
    """``'%.3f' % (b / 1e6)`` for an integer byte count, exact beyond 2^53 (where the double
    ``b / 1e6`` is not): the integer rounded, printf itself where it lies halfway."""
    q, r = divmod(abs(b), 1000)
    if r == 500:
        return "%.3f" % (b / 1e6)
    q += r > 500
    return f"{'-' if b < 0 else ''}{q // 1000}.{q % 1000:03d}"


def with_separators(text: str) -> str:
    """nsys' column format groups the integer part of numbers with commas."""
    if not text or not (text[0].isdigit() or (text[0] == "-" and text[1:2].isdigit())):
        return text
    head, dot, tail = text.partition(".")
    try:
        grouped = f"{int(head):,}"
    except ValueError:
        return text
    return grouped + dot + tail


def aligned(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]) -> str:
    """The aligned column layout of ``nsys stats``: headers centred, numbers right-aligned with
    separators, text left-aligned; ``headers`` are display headers, ``rows`` formatted cells."""
    cells = [[with_separators(v) if numeric[i] else v for i, v in enumerate(r)] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str], header: bool = False) -> str:
        parts = []
        for i, v in enumerate(values):
            parts.append(v.center(widths[i]) if header else (v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i])))
        return " " + "  ".join(parts).rstrip()

    out = [line(headers, header=True), " " + "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out) + "\n"


def record_value(col: str, v: Any) -> Any:
    """One value of a JSON record: nsys' units (MB, rounded to 3 decimals for sizes), None when
    missing, plain Python numbers and text otherwise."""
    if v is None or (isinstance(v, float) and v != v):
        return None
    if is_mb(col):
        return round(float(v) / 1e6, 3)
    if isinstance(v, int) or type(v).__name__.startswith(("int", "uint")):
        return int(v)
    if isinstance(v, float) or type(v).__name__.startswith("float"):
        return float(v)
    return str(v)


def json_text(records: list[dict[str, Any]]) -> str:
    import json

    return json.dumps(records, indent=1) + "\n"


def render_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], text_columns: frozenset[str] | set[str],
                fmt: str) -> str:
    """A small report given as Python rows, in ``fmt`` ("csv", "table" or "json") exactly as
    :mod:`nsighttk.report.nsys_format` prints the same values; "" when there are no rows (nsys
    writes an empty file)."""
    if not rows:
        return ""
    if fmt == "json":
        return json_text([{display_header(c): record_value(c, v) for c, v in zip(columns, r, strict=True)}
                          for r in rows])
    if fmt == "csv":
        return "\n".join(csv_lines(columns, rows, text_columns)) + "\n"
    cells = [[cell(c, v) for c, v in zip(columns, r, strict=True)] for r in rows]
    numeric = [c not in text_columns and all(_number(r[i]) for r in rows) for i, c in enumerate(columns)]
    return aligned([display_header(c) for c in columns], cells, numeric)


def csv_lines(columns: Sequence[str], rows: Iterable[Sequence[Any]], text_columns: frozenset[str] | set[str]
              ) -> Iterator[str]:
    """The CSV lines (header first, no line ends) of a report given as Python rows, one at a time:
    a writer streams them (:func:`render_rows` joins them)."""
    quoted = [c in text_columns for c in columns]
    yield ",".join(csv_quote(display_header(c)) for c in columns)
    for r in rows:
        yield ",".join(csv_quote(cell(c, v)) if q else cell(c, v) for c, v, q in zip(columns, r, quoted, strict=True))


def _number(v: Any) -> bool:
    """Whether ``v`` is laid out as a number (right-aligned, separators): a float, or an integer
    of 64 bits; exact text and larger integers are laid out as text, as their DataFrame column
    (of Python objects) is."""
    return isinstance(v, float) or (isinstance(v, int) and -(2**63) <= v < 2**63)
