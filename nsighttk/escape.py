"""Names are data, never markup: one escaping function per medium nsighttk writes.

Kernel, NVTX, op, target, run and file names come from programs and users; any of them may hold
``[bold]``, ``<script>``, ``*``, ``|``, ``=cmd()``, an ESC sequence or a right-to-left override.
Every renderer passes such text through the function of its medium here, and nowhere else:

==================  =====================================================================
medium              function
==================  =====================================================================
terminal (plain)    :func:`term`: control and format characters made visible (``\\x1b``)
terminal (rich)     :func:`text` (a :class:`rich.text.Text`, never parsed as markup) or
                    :func:`markup` (escaped for a rich markup string)
HTML                :func:`html_text` (text and attribute values)
JSON in <script>    :func:`script_json` (``<``, ``>``, ``&``, U+2028/2029 as ``\\uXXXX``)
Markdown            :func:`md_text` (inline text, also in table cells), :func:`md_code`
CSV we write        :func:`csv_cell` / :func:`csv_frame` (formula prefixes neutralised)
matplotlib labels   :func:`plot_text` (``$`` would start mathtext)
==================  =====================================================================

``nsighttk stats`` CSV is deliberately not here: it stays byte-identical to ``nsys stats``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

# html, json and csv are imported where used: `nsighttk stats` needs only term() (5 ms saved)

if TYPE_CHECKING:
    from rich.text import Text

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def term(s: Any) -> str:
    """Text a terminal shows as it is: every character Python does not call printable (C0/C1
    controls such as ESC, DEL, line and paragraph separators, bidirectional overrides, zero-width
    and other format characters, surrogates, unassigned and private-use code points) becomes a
    visible escape (``\\x1b``, ``\\u202e``); a space stays a space."""
    s = "" if s is None else str(s)
    if s.isprintable():
        return s
    return "".join(ch if ch.isprintable() or ch == " " else _visible(ch) for ch in s)


def term_lines(s: str) -> str:
    """Lines for the terminal: each as :func:`term` shows it, the newlines between them kept (a
    report printed to stdout; its ``-o`` file keeps the names' bytes, as nsys writes them)."""
    lines = s.split("\n")
    if all(map(str.isprintable, lines)):
        return s
    return "\n".join(map(term, lines))


def text(s: Any, style: str = "") -> Text:
    """A rich :class:`Text` of ``s`` (made visible with :func:`term`): never read as markup or emoji."""
    from rich.text import Text  # (rich is imported by what renders with it: ``nsighttk stats`` never does)

    return Text(term(s), style=style)


def markup(s: Any) -> str:
    """``s`` for inclusion in a rich markup string (``[`` escaped, control characters visible)."""
    from rich.markup import escape

    return escape(term(s))


# ------------------------------------------------------------------------------------------ HTML


def html_text(s: Any) -> str:
    """``s`` for HTML text or a quoted attribute value: ``& < > " '`` as entities, control and
    format characters visible as in the terminal."""
    import html

    return html.escape(term(s), quote=True)


_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_SCRIPT_RE = re.compile("[<>&\u2028\u2029]")


def script_json(data: Any) -> str:
    """JSON to embed in a ``<script>`` element: no ``</script``, ``<!--`` or ``]]>`` can appear in it
    (``<``, ``>`` and ``&`` are ``\\u`` escapes, which JSON.parse reads back unchanged), nor the
    line separators older JavaScript parsers reject.  NaN and infinity are refused (not JSON)."""
    import json

    raw = json.dumps(data, separators=(",", ":"), allow_nan=False, default=str)
    return _SCRIPT_RE.sub(lambda m: _SCRIPT_UNSAFE[m.group(0)], raw)


# -------------------------------------------------------------------------------------- Markdown

# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones that start markup
# inline: emphasis and strikethrough (* _ ~), code (`), links and images ([ ]; "!" needs a "["),
# raw HTML and autolinks (<; ">" alone is inert inline), entities (&), GFM table cells (|), math on
# GitHub ($), and the escape itself.
_MD_ACTIVE = re.compile(r"[\\`*~\[\]<&|$]|_(?![0-9A-Za-z])|(?<![0-9A-Za-z])_")


def md_text(s: Any) -> str:
    """``s`` as literal inline Markdown (after a list marker or heading mark, in a GFM table cell;
    never at the start of a line): no emphasis, link, image, code span, raw HTML, entity, table
    pipe or line break can come out of it.  An underscore inside a word stays as it is
    (CommonMark never reads it as emphasis)."""
    return _MD_ACTIVE.sub(lambda m: "\\" + m.group(0), term(s))


def md_code(s: Any, in_table: bool = False) -> str:
    """``s`` as a Markdown code span, shown verbatim: a fence longer than any run of backticks in
    it, a space inside the fence where ``s`` starts or ends with one; in a GFM table cell ``|`` is
    escaped (GFM reads the cell's pipes before the code span)."""
    body = term(s)
    if in_table:
        body = body.replace("|", "\\|")
    longest = max((len(r) for r in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    if body.startswith("`") or body.endswith("`") or (body.startswith(" ") and body.endswith(" ") and body.strip()):
        body = f" {body} "
    return f"{fence}{body}{fence}" if body else "` `"


# ------------------------------------------------------------------------------------------- CSV

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(v: Any) -> Any:
    """A cell of a CSV we write (bench, runs): a string a spreadsheet would run as a formula
    (starting with ``= + - @``, tab or carriage return) gets a leading ``'``, as OWASP advises;
    numbers (negative ones too) and other text stay as they are."""
    if isinstance(v, str) and v.startswith(_FORMULA_START):
        return "'" + v
    return v


def csv_frame(df: Any) -> Any:
    """A copy of DataFrame ``df`` with :func:`csv_cell` applied to its text cells and headers."""
    import pandas as pd  # only the CSV writers need pandas here

    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col].dtype):
            out[col] = out[col].map(csv_cell).astype(object)
    out.columns = [csv_cell(str(c)) for c in out.columns]
    return out


def to_csv(df: Any) -> str:
    """``df`` as CSV text (header, no index) with formula-looking cells neutralised; text cells
    are quoted (a carriage return inside one cannot split a row), numbers are not."""
    import csv

    return str(csv_frame(df).to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC))


# ------------------------------------------------------------------------------------ matplotlib


def plot_text(s: Any) -> str:
    """A label for matplotlib: ``$`` escaped (it would start mathtext, which fails on bad TeX);
    a leading ``_`` kept visible (matplotlib leaves such labels out of legends)."""
    out = term(s).replace("$", r"\$")
    return " " + out if out.startswith("_") else out
