"""Kernel names for a terminal column: the short form of
:func:`nsighttk.analysis.kernels.names.short_label` (what the kernel does, its dtype, tile or
collective: ``elementwise direct_copy<bf16> vec8``, ``nccl AllReduce ring LL f32 sum``), fitted to
the column's width and distinct within the table (:func:`~nsighttk.analysis.kernels.names.short_labels`).
This module only makes table cells of them: the full name where the column has room, else the
short form for the width the layout gives the column.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from nsighttk.analysis.kernels.names import short_label, short_labels
from nsighttk.report.layout import Flex


def short_name(name: str, width: int | None = None) -> str:
    """The short form of one kernel name (at most ``width`` characters)."""
    return short_label(str(name), width)


def labels(names: Sequence[str], width: int | None = None) -> list[str]:
    """The short forms of a column of names, each in at most ``width`` characters and distinct
    among distinct names."""
    return short_labels([str(n) for n in names], width)


def cells(names: Sequence[str]) -> list[Flex]:
    """Table cells for ``names``: the full name where the column has room, else the short form
    fitted to the column, distinct within the table."""
    texts = [str(n) for n in names]
    column = functools.lru_cache(maxsize=8)(functools.partial(labels, texts))
    return [Flex(n, functools.partial(_pick, column, i)) for i, n in enumerate(texts)]


def _pick(column: Callable[[int], list[str]], i: int, width: int) -> str:
    return column(width)[i]
