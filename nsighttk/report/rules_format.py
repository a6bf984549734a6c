"""Render expert-rule results byte for byte as ``nsys analyze`` writes them.

Formats (nsys' names): ``csv`` and ``json`` (the files ``-f csv|json -o PREFIX`` writes), ``column``
(the console default: a titled section with nsys' advice wrapped at 80 columns and an aligned
table) and ``table`` (the same with a boxed table).  Sizes are shown in MB (10^6 bytes, three
decimals), the utilization with one decimal, nulls as empty fields.  Nsight Systems 2025 groups
the digits of numbers in the column and table layouts; 2022.4 does not.

A rule with no rows writes an empty CSV file and a JSON file holding ``[`` and ``]``; a skipped
rule (the export lacks its tables) writes empty files and, on the console, ``SKIPPED: reason``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from nsighttk.analysis.nsys.rules import STYLE_2022, RuleResult
from nsighttk.report.nsys_format import display_header
from nsighttk.safeio import atomic_files

FORMATS = ("column", "table", "csv", "json")
EXTENSIONS = {"column": "txt", "table": "txt", "csv": "csv", "json": "json"}
_MAX_WIDTH = 100  # nsys cuts longer cells to 99 characters and an ellipsis


def _is_bytes(col: str) -> bool:
    return col.endswith("(B)")


def _numeric(df: pd.DataFrame, col: str) -> bool:
    return pd.api.types.is_numeric_dtype(df[col].dtype)


def _cell(col: str, value: object) -> str:
    """A value as nsys writes it in CSV."""
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return ""
    if _is_bytes(col):
        return f"{int(value) / 1e6:.3f}"  # type: ignore[call-overload]
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def cells(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Headers (with nsys' units) and the rows as CSV text."""
    cols = list(df.columns)
    rows = [[_cell(c, v) for c, v in zip(cols, row, strict=True)] for row in df.itertuples(index=False, name=None)]
    return [display_header(c) for c in cols], rows


def _csv_field(v: str) -> str:
    return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\r\n') else v


def to_csv(result: RuleResult) -> str:
    """The CSV file nsys writes for this rule ('' when the rule found nothing or was skipped)."""
    if result.frame is None or result.frame.empty:
        return ""
    headers, rows = cells(result.frame)
    return "".join(",".join(_csv_field(v) for v in line) + "\n" for line in [headers, *rows])


def to_json(result: RuleResult) -> str:
    """The JSON file nsys writes: a list of objects, numbers as in the CSV, nulls as ``""``."""
    if result.frame is None:
        return ""
    headers, rows = cells(result.frame)
    numeric = [_numeric(result.frame, c) for c in result.frame.columns]
    objects = []
    for row in rows:
        fields = [f"    {json.dumps(h, ensure_ascii=False)}: {v if num and v else json.dumps(v, ensure_ascii=False)}"
                  for h, v, num in zip(headers, row, numeric, strict=True)]
        objects.append("  {\n" + ",\n".join(fields) + "\n  }")
    return "[\n" + ",\n".join(objects) + ("\n" if objects else "") + "]\n"


def _grouped(cell: str) -> str:
    """nsys 2025 groups the integer part of numbers in thousands."""
    if not cell:
        return cell
    head, dot, tail = cell.partition(".")
    sign = "-" if head.startswith("-") else ""
    digits = head.lstrip("-")
    if not digits.isdigit():
        return cell
    return f"{sign}{int(digits):,}{dot}{tail}"


def _layout(result: RuleResult) -> tuple[list[str], list[list[str]], list[bool], list[int]]:
    assert result.frame is not None
    headers, rows = cells(result.frame)
    numeric = [_numeric(result.frame, c) for c in result.frame.columns]
    if result.style != STYLE_2022:
        rows = [[_grouped(v) if num else v for v, num in zip(row, numeric, strict=True)] for row in rows]
    rows = [[v if len(v) <= _MAX_WIDTH else v[:_MAX_WIDTH - 1] + "…" for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return headers, rows, numeric, widths


def _center(text: str, width: int) -> str:
    pad = width - len(text)
    return " " * (pad // 2) + text + " " * (pad - pad // 2)


def _aligned(value: str, width: int, numeric: bool) -> str:
    return value.rjust(width) if numeric else value.ljust(width)


def column_table(result: RuleResult) -> str:
    """nsys' console ``column`` layout: centered headers, dashes, aligned cells."""
    headers, rows, numeric, widths = _layout(result)
    lines = [" " + "  ".join(_center(h, w) for h, w in zip(headers, widths, strict=True)),
             " " + "  ".join("-" * w for w in widths)]
    lines += [" " + "  ".join(_aligned(v, w, n) for v, w, n in zip(row, widths, numeric, strict=True))
              for row in rows]
    return "\n".join(lines) + "\n"


def boxed_table(result: RuleResult) -> str:
    """nsys' ``table`` layout: the same cells in a box of ``+-|``."""
    headers, rows, numeric, widths = _layout(result)
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = [rule, "|" + "|".join(f" {_center(h, w)} " for h, w in zip(headers, widths, strict=True)) + "|", rule]
    lines += ["|" + "|".join(f" {_aligned(v, w, n)} " for v, w, n in zip(row, widths, numeric, strict=True)) + "|"
              for row in rows]
    lines.append(rule)
    return "\n".join(lines) + "\n"


def _wrap_line(line: str, width: int) -> list[str]:
    """Greedy, counting the space after each word but the paragraph's last (so such a line may
    reach ``width``, any other stops one short); leading indentation kept."""
    words = line.split()
    lines: list[str] = []
    current = line[: len(line) - len(line.lstrip(" "))]
    for i, word in enumerate(words):
        room = 0 if i == len(words) - 1 else 1
        if not current.strip():
            current += word
        elif len(current) + 1 + len(word) + room > width:
            lines.append(current)
            current = word
        else:
            current += " " + word
    lines.append(current)
    return lines


def wrap(text: str, width: int = 80) -> str:
    """nsys' advice text: each line wrapped at 80 columns, continuation lines not indented."""
    return "\n".join("\n".join(_wrap_line(line, width)) if line else "" for line in text.split("\n"))


def to_console(result: RuleResult, fmt: str = "column") -> str:
    """The section nsys prints for one rule on the console (after its ``Processing [...]`` line):
    title, advice (or the no-result message) and the table, or ``SKIPPED: reason``."""
    if result.skipped is not None:
        return f"SKIPPED: {result.skipped}\n\n"
    head = f"\n ** {result.title} ({result.name}):\n\n"
    if result.frame is None or result.frame.empty:  # nsys' table formatter draws an empty box first
        return ("+--+\n" if fmt == "table" else "") + head + wrap(result.noresult) + "\n\n"
    table = boxed_table(result) if fmt == "table" else column_table(result)
    note = result.limit_note()
    return head + wrap(result.advice) + "\n\n" + table + "\n" + (note + "\n\n\n" if note else "")


def render(result: RuleResult, fmt: str) -> str:
    """One rule in ``fmt`` (see :data:`FORMATS`): a file's bytes for csv/json, a console section otherwise."""
    if fmt == "csv":
        return to_csv(result)
    if fmt == "json":
        return to_json(result)
    return to_console(result, fmt)


def render_console(results: Iterable[RuleResult], fmt: str, dbfile: str) -> str:
    """What ``nsys analyze -f FMT EXPORT`` prints without ``-o``: per rule a ``Processing [EXPORT]
    with [RULE(OPTIONS)]...`` line (nsys names its script where this names the rule), then the
    section, or the file's bytes and a blank line when there are rows."""
    out = []
    for r in results:
        options = "(" + ":".join(r.args) + ")" if r.args else ""
        out.append(f"Processing [{dbfile}] with [{r.name}]{options}... \n")
        if r.skipped is not None or fmt not in ("csv", "json"):
            out.append(to_console(r, fmt))
        else:
            out.append(render(r, fmt) + ("\n" if r.frame is not None and len(r.frame) else ""))
    return "".join(out)


def output_path(prefix: str | Path, file_tag: str, fmt: str) -> Path:
    """nsys' file name for a rule: ``<prefix>_<rule>[_<opt=value>...].<ext>`` (``file_tag`` of a
    request or result)."""
    return Path(f"{prefix}_{file_tag}.{EXTENSIONS[fmt]}")


def write_rules(results: Iterable[RuleResult], fmt: str, prefix: str | Path, overwrite: bool = True) -> list[Path]:
    """Write one file per rule as ``nsys analyze -f FMT -o PREFIX`` does (empty files for rules that
    found nothing), all together or none (:func:`nsighttk.safeio.atomic_files`); returns the paths."""
    with atomic_files(overwrite=overwrite) as files:
        return [files.write_text(output_path(prefix, r.file_tag, fmt), render(r, fmt)) for r in results]
