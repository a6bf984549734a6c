"""The leaf-page decoder of :mod:`nsighttk.load.sqlite_pages`, compiled (numba), one pass a row.

The numpy decoder gathers every column of a group of pages with fancy indexing: about 40 ns a
value and the GIL held between numpy's calls (10M kernels x 19 columns: 6.8 CPU s on one thread).
This one walks each record once, in machine code with the GIL released, so the reader's threads
decode side by side.  It answers exactly what the numpy decoder answers: the same values, and a
refusal (:class:`~nsighttk.load.sqlite_pages.Unusual`: the caller asks SQLite) for the same
groups of pages; the tests run both on every fixture and on damaged files.

The NVTX nesting walk (:mod:`nsighttk.load.nvtx_nesting`) is compiled with it.

numba is imported on first use (about 0.3 s, plus the compiled code from numba's cache; the first
run on a machine compiles it, about 2 s), so :mod:`sqlite_columns` loads it for large reads only
(:data:`MIN_VALUES`) and falls back to numpy where numba is not installed or fails to compile.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from nsighttk import settings

#: Values (rows x columns) a read must have before the compiled decoder is loaded for it: loading
#: numba costs about 0.45 s and 110 MB, and saves about 0.12 s of wall time per 19M values on 2
#: cores (10M kernels x 19 columns: 3.9 -> 2.6 s), so below this numpy's decoder is as quick.
#: Once loaded, it decodes every read.  ``NSIGHTTK_COMPILED=0`` never uses it, ``=1`` always.
MIN_VALUES = 50_000_000

#: Why a group of pages was refused, by the code the compiled functions return.
REASONS = ("", "not a leaf", "cell count changed", "cell outside its page",
           "overflow page or payload outside its page", "rowids out of order",
           "record with fewer columns than the table", "reserved serial type", "a value that is not an integer",
           "record longer than its payload", "record beyond the pages read", "duration beyond int64")

#: expression kinds of :func:`decode_ints`' ``kinds`` (0 rowid, 1 constant, 2 column, 3 duration)
ROWID, CONST, COL, DURATION = 0, 1, 2, 3

#: The compiled functions by name (what :func:`functions` gives).
Functions = dict[str, Callable[..., Any]]
_compiled: Functions | None = None
_failed = False


def wanted(values: int) -> bool:
    """Whether a read of ``values`` values should use the compiled decoder (when it loads):
    ``NSIGHTTK_COMPILED`` (:attr:`Settings.compiled`), else once loaded or from :data:`MIN_VALUES`."""
    forced = settings.current().compiled
    return forced if forced is not None else _compiled is not None or values >= MIN_VALUES


def possible() -> bool:
    """Whether the compiled decoder may be used at all (not switched off, numba installed), without
    loading it."""
    if settings.current().compiled is False or _failed:
        return False
    return _compiled is not None or importlib.util.find_spec("numba") is not None


def functions() -> Functions | None:
    """The compiled functions, or None where numba is missing or cannot compile them."""
    global _compiled, _failed
    if _compiled is None and not _failed:
        try:
            _compiled = _build()
        except Exception:  # (numba missing, or unable to compile or cache: an accelerator, not a need)
            _failed = True
    return _compiled


def _build() -> Functions:
    from nsighttk.load import _nesting_kernels, _sqlite_kernels

    return {"decode_ints": _sqlite_kernels.decode_ints, "stack_parents": _nesting_kernels.stack_parents,
            "exact_parents": _nesting_kernels.exact_parents, "depth_walk": _nesting_kernels.depth_walk}


def walk(name: str, steps: int) -> Callable[..., Any]:
    """The NVTX walk ``name`` of :mod:`nsighttk.load.nvtx_walk`: compiled from its ``MIN_COMPILED``
    steps (ranges and calls), or as ``NSIGHTTK_COMPILED`` says; else in Python."""
    from nsighttk.load import nvtx_walk

    forced = settings.current().compiled
    compiled = functions() if (forced if forced is not None else steps >= nvtx_walk.MIN_COMPILED) else None
    return compiled[name] if compiled is not None else getattr(nvtx_walk, name)
