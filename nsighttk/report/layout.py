"""Terminal layout for the width the console has: tables whose columns give way in a set order,
a name column that takes the room left (names shortened to what distinguishes them, never cut
blind), and prose wrapped to the width with a hanging indent.

Every cell and line goes out as a :class:`rich.text.Text` made by :mod:`nsighttk.escape`:
nothing a name says is read as markup.
"""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.cells import cell_len, get_character_cell_size
from rich.console import Console
from rich.table import Table
from rich.text import Text

from nsighttk import escape
from nsighttk.report.console import layout_width

#: characters between two columns (one of padding, one of the box's blank divider)
GAP = 2
#: the most characters of a name a cell holds, whatever the width (``--width 0`` too): a longer one
#: is cut, with "…", before layout, which then measures at most this much (the longest C++ kernel
#: names seen are about 5,200 characters)
LONGEST = 1 << 14
#: the most characters of one paragraph of prose (a name quoted whole in a sentence): a longer one
#: keeps its start and end around "…", so a sentence about a 1 MiB name is a few lines, not 10,000
PROSE = 4096
#: the most characters of one word of prose (a run without a blank: a name without spaces)
WORD = 400


@dataclass
class Col:
    """A column: ``drop`` orders how columns give way when the table is too wide (the highest
    first; 0 never); the ``flex`` column (at most one) takes the width left, down to ``min_width``,
    before any column is dropped for it; ``max_width`` caps a text column (cut with "…") when the
    console has a width limit; a ``wrap`` column narrows to its longest word (its cells then
    take several lines) once the columns with a ``drop`` above its ``wrap`` are gone."""

    header: str
    justify: str = "right"
    drop: int = 0
    flex: bool = False
    min_width: int = 12
    max_width: int | None = None
    wrap: int = 0  # > 0: may wrap onto more lines (at spaces), once the columns with a higher drop are gone


class Flex:
    """A cell that fits itself to a width: ``full`` when there is room, else ``fit(width)``."""

    def __init__(self, full: str, fit: Callable[[int], str] | None = None) -> None:
        self.full = escape.term(clip(full))
        self._fit = fit

    def at(self, width: int | None, short: bool = False) -> str:
        """The full text if it fits in ``width`` (and ``short`` is not asked), else the fitted one."""
        if width is None or (cell_len(self.full) <= width and not short):
            return self.full
        s = escape.term(self._fit(width)) if self._fit else self.full
        return cut(s, width)

    def short_width(self) -> int:
        """Cells its short form takes when nothing limits it."""
        return cell_len(escape.term(self._fit(1 << 20))) if self._fit else cell_len(self.full)


Cell = str | Text | Flex


def clip(s: Any, limit: int = LONGEST) -> str:
    """``s`` in at most ``limit`` characters, ending in "…" when cut (time linear in ``limit``,
    whatever ``s``'s length)."""
    s = "" if s is None else str(s)
    return s if len(s) <= limit else s[:limit - 1] + "…"


def clip_middle(s: str, limit: int = LONGEST) -> str:
    """``s`` in at most ``limit`` characters, its start and end kept around a "…"."""
    if len(s) <= limit:
        return s
    head = (limit - 1) // 2
    return s[:head] + "…" + s[len(s) - (limit - 1 - head):]


def _fit(s: str, width: int, reverse: bool = False) -> int:
    """How many characters of ``s`` from its start (from its end with ``reverse``) fit in
    ``width`` cells: one pass, which stops at the first that does not fit."""
    used = 0
    n = 0
    for ch in reversed(s) if reverse else s:
        used += get_character_cell_size(ch)
        if used > width:
            break
        n += 1
    return n


def cut(s: str, width: int) -> str:
    """``s`` in at most ``width`` terminal cells, ending in "…" when cut (time linear in the part
    of ``s`` read, which stops once ``width`` is passed)."""
    if _fit(s, width) == len(s):
        return s
    return s[:_fit(s, width - 1)].rstrip() + "…" if width > 0 else ""


def cut_middle(s: str, width: int) -> str:
    """``s`` in at most ``width`` terminal cells, its start and end kept around a "…" (paths and
    NVTX ranges differ at either end); linear time, as :func:`cut`."""
    if _fit(s, width) == len(s):
        return s
    if width < 5:
        return cut(s, width)
    head = (width - 1) // 2
    tail = width - 1 - head
    keep = _fit(s, tail, reverse=True)
    return s[:_fit(s, head)].rstrip() + "…" + (s[len(s) - keep:] if keep else "")


def middle(s: Any) -> Flex:
    """A cell for a path or an NVTX range: start and end kept when it must be shortened."""
    full = clip_middle(escape.term(s))
    return Flex(full, functools.partial(cut_middle, full))


def _plain(c: Cell) -> str:
    if isinstance(c, Flex):
        return c.full
    return c.plain if isinstance(c, Text) else escape.term(clip(c))


def _len(c: Cell) -> int:
    return cell_len(_plain(c))


def _text(c: Cell, width: int | None, short: bool = False) -> Text:
    if isinstance(c, Text):
        return c
    if isinstance(c, Flex):
        return Text(c.at(width, short))
    return escape.text(clip(c))


def columns_that_fit(cols: Sequence[Col], rows: Sequence[Sequence[Any]], width: int | None) -> list[tuple[int, int]]:
    """(column index, width) of the columns kept, in order, for a table at most ``width`` wide.

    When the table is too wide, columns give way (highest ``drop`` first; ``wrap`` columns narrow
    at their level) until the ``flex`` column has ``min_width``; a column given up comes back
    if the names' short forms leave room for it; room left over goes to the names, then to the
    wrapped columns."""
    nat = [max([cell_len(c.header)] + [_len(r[i]) for r in rows]) for i, c in enumerate(cols)]
    for i, c in enumerate(cols):
        if c.max_width and not c.flex and width is not None:  # with no limit, nothing is cut
            nat[i] = min(nat[i], max(c.max_width, len(c.header)))
    # a column that could give way and has nothing to say (every cell empty or "-") goes at once
    keep = [i for i, c in enumerate(cols)
            if not (c.drop > 0 and rows and all(_plain(r[i]).strip() in ("", "-") for r in rows))]
    if width is None:
        return [(i, nat[i]) for i in keep]
    flex = next((i for i, c in enumerate(cols) if c.flex), None)
    cur = list(nat)

    def room() -> int:
        return width - sum(cur[i] for i in keep if i != flex) - GAP * (len(keep) - 1)

    def fits(need: int) -> bool:
        return room() >= (0 if flex is None else min(need, cols[flex].min_width))

    full = nat[flex] if flex is not None else 0
    # what gives way, in order: columns by ``drop``, wrapped columns narrowing at their ``wrap``
    # level (before the columns of that level go)
    steps = sorted([(cols[i].drop, 0, i) for i in keep if cols[i].drop > 0]
                   + [(cols[i].wrap, 1, i) for i in keep if cols[i].wrap > 0], reverse=True)
    dropped: list[int] = []
    for _, is_wrap, i in steps:
        if fits(full):
            break
        if is_wrap:
            cur[i] = max(cell_len(w) for w in [*cols[i].header.split(), *(x for r in rows for x in
                                                                          _plain(r[i]).split())])
        else:
            keep.remove(i)
            dropped.append(i)
    need = full
    if flex is not None and room() < full:  # the names are shortened: their short forms' width
        need = max([cell_len(cols[flex].header)] + [r[flex].short_width() if isinstance(r[flex], Flex)
                                                     else _len(r[flex]) for r in rows])
    for i in reversed(dropped):  # a column given up comes back if the names keep what they need
        keep.append(i)
        keep.sort()
        if room() < need:
            keep.remove(i)
    spare = room() - (min(need, full) if flex is not None else 0)
    for i in sorted((i for i in keep if cols[i].wrap > 0), key=lambda i: cols[i].drop):
        more = max(min(spare, nat[i] - cur[i]), 0)
        cur[i] += more
        spare -= more
    out = []
    for i in keep:
        w = cur[i]
        if i == flex:
            w = max(min(nat[i], room()), min(cols[i].min_width, nat[i]), 1)
        out.append((i, w))
    return out


def table(console: Console, cols: Sequence[Col], rows: Sequence[Sequence[Any]], title: str | None = None,
          width: int | None = -1) -> list[int]:
    """Print ``rows`` as a table that fits the console (or ``width``); returns the kept column
    indices.  ``title`` goes above it, wrapped, in bold."""
    w = layout_width(console) if width == -1 else width
    if title:
        heading(console, title, w)
    kept = columns_that_fit(cols, rows, w)
    # a flex column where some name must be shortened shows every name in its short form, and
    # takes only the width those need
    short = {i: w is not None and any(isinstance(r[i], Flex) and cell_len(r[i].full) > cw for r in rows)
             for i, cw in kept}
    kept = [(i, max([cell_len(cols[i].header)] + [cell_len(_text(r[i], cw, short[i]).plain) for r in rows]))
            if cols[i].flex else (i, cw) for i, cw in kept]
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold",
              expand=False)
    for i, cw in kept:
        c = cols[i]
        t.add_column(escape.text(c.header), justify=c.justify, width=cw, no_wrap=c.wrap == 0,  # type: ignore[arg-type]
                     overflow="fold" if c.wrap > 0 else "ellipsis")
    for r in rows:
        t.add_row(*(_text(r[i], cw, short[i]) for i, cw in kept))
    console.print(t, crop=False)
    return [i for i, _ in kept]


def wrap(s: str, width: int | None, indent: str = "", hanging: str | None = None) -> list[str]:
    """``s`` (made visible with :func:`escape.term`) in lines of at most ``width`` characters,
    the first starting with ``indent``, the others with ``hanging`` (default: ``indent``).  Words
    longer than a line are split.  Prose quoting a huge name is shortened first (:func:`prose`)."""
    s = prose(escape.term(s))
    hanging = indent if hanging is None else hanging
    if width is None:
        return [indent + s]
    return textwrap.wrap(s, width=max(width, len(hanging) + 10), initial_indent=indent, subsequent_indent=hanging,
                         break_long_words=True, break_on_hyphens=False, drop_whitespace=True) or [indent.rstrip()]


def prose(s: str, limit: int = PROSE, word: int = WORD) -> str:
    """``s`` with every word (a run without blanks) longer than ``word`` characters, and then the
    whole if longer than ``limit``, shortened around a "…" (start and end kept): what a sentence
    quoting a name says stays readable, in lines that do not grow with the name.  Linear time."""
    if len(s) <= word:
        return s
    s = re.sub(rf"\S{{{word + 1},}}", lambda m: clip_middle(m.group(), word), s)
    return clip_middle(s, limit)


def path_lines(path: Any, width: int | None, indent: str = "") -> list[str]:
    """``path`` (made visible with :func:`escape.term`) in lines of at most ``width`` characters
    after ``indent``, each but the last ending in "/": a path is broken only between its parts (a
    part longer than a line is split)."""
    s = escape.term(path)
    if width is None:
        return [indent + s]
    room = max(width - len(indent), 10)
    lines = [""]
    for part in re.findall(r"[^/]*/|[^/]+", s):
        if lines[-1] and len(lines[-1]) + len(part) > room:
            lines.append("")
        while len(lines[-1]) + len(part) > room:
            lines[-1], part = lines[-1] + part[:room], part[room:]
            lines.append("")
        lines[-1] += part
    return [indent + ln for ln in lines if ln] or [indent.rstrip()]


def para(console: Console, s: str, indent: str = "", hanging: str | None = None, style: str = "",
         lead: Text | None = None) -> None:
    """Print ``s`` wrapped to the console's width; ``lead`` (already escaped, e.g. a bold label)
    starts the first line."""
    w = layout_width(console)
    first = indent + (lead.plain if lead is not None else "")
    lines = wrap(first + escape.term(s), w, "", hanging if hanging is not None else indent)
    for n, ln in enumerate(lines):
        if n == 0 and lead is not None and ln.startswith(first):
            out = Text(indent) + lead + Text(ln[len(first):], style=style)
        else:
            out = Text(ln, style=style)
        emit(console, out)


def para_path(console: Console, s: str, path: Any, indent: str = "", hanging: str = "  ",
              lead: Text | None = None) -> None:
    """``s`` followed by ``path``: on one line where both fit, else ``s`` as :func:`para` and the
    path on lines of its own after ``hanging``, broken only between its parts (:func:`path_lines`),
    so that it can be copied whole."""
    w = layout_width(console)
    whole = f"{s} {escape.term(path)}"
    if w is None or len(indent) + (len(lead.plain) if lead is not None else 0) + len(whole) <= w:
        para(console, whole, indent, hanging, lead=lead)
        return
    para(console, s, indent, hanging, lead=lead)
    for ln in path_lines(path, w, hanging):
        emit(console, Text(ln))


def emit(console: Console, line: Text) -> None:
    """Print one laid-out line; one still wider than the console in cells (wide characters) is
    folded by rich rather than left to overflow."""
    console.print(line, overflow="fold", no_wrap=False, soft_wrap=False)


def heading(console: Console, s: str, width: int | None = -1) -> None:
    w = layout_width(console) if width == -1 else width
    for ln in wrap(s, w):
        emit(console, Text(ln, style="bold"))


def pairs(console: Console, items: Sequence[tuple[str, Any]], label_width: int = 16, indent: str = "  ") -> None:
    """``label: value`` lines, labels right-aligned, values wrapped under themselves."""
    w = layout_width(console)
    lw = min(label_width, max((len(k) for k, _ in items), default=0))
    for k, v in items:
        lead = f"{indent}{escape.term(k):>{lw}}: "
        for ln in wrap(str(v), w, lead, " " * len(lead)):
            emit(console, Text(ln))
