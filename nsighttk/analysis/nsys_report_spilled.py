"""Out-of-core reading for the numpy analyses not yet written over the engine (advice, collectives,
the overview, the iterations): whether a table's work would exceed the memory budget
(:func:`spills`), and its columns a chunk at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from nsighttk.analysis.nsys_report_base import kernel_id_codes, kernel_name_codes
from nsighttk.analysis.spilled_stats import ROW_BYTES
from nsighttk.encoding import decoded, widen
from nsighttk.profile import Profile


def spills(p: Profile, *tables: str, row_bytes: int = ROW_BYTES) -> bool:
    """Whether the summaries of ``tables`` (together) go out of core: their rows come from a
    source, not all held as whole tables (one held whole, as ``analyze`` holds the copies, is
    read from memory a chunk at a time), and grouping them would take more than the profile's
    budget (columns it keeps count for nothing here: they fit in that budget, the grouping's
    sorted pairs and deviations would not)."""
    return can_spill(p, *tables) and sum(p.bound(t) for t in tables) * row_bytes > p.budget


def can_spill(p: Profile, *tables: str) -> bool:
    """Whether ``tables`` can be read out of core: from a source, a chunk at a time, not all held whole."""
    return p.source is not None and hasattr(p.source, "parts") and not all(p.loaded(t) for t in tables)


def table_chunks(p: Profile, table: str, cols: list[str]) -> Iterator[dict[str, np.ndarray]]:
    """``cols`` of ``table`` (integers, narrow as kept): whole where they are kept or fit in the
    budget (:func:`spills`), else a chunk of rows at a time (the export's 100M kernels: no whole
    column read)."""
    if not spills(p, table) or all(p.kept(table, c) for c in cols):
        yield p.arrays(table, cols, narrow=True)
        return
    for part in p.parts(table, cols):
        yield {c: decoded(v) for c, v in part.items()}


def kernels_in_parts(p: Profile) -> bool:
    """Whether analyses read the kernels a chunk at a time: from a source, not held, past the budget."""
    return spills(p, "kernels") and not p.loaded("kernels")


def kernel_chunks(p: Profile, cols: list[str], names: np.ndarray | None
                  ) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]]:
    """The kernels' ``cols`` (narrow, as kept) with each one's name code (:func:`kernel_name_codes`'
    ranks) and the names by code: all at once where they fit (``names``: those codes' names), else
    a chunk at a time, the codes from the name ids (:func:`kernel_id_codes`)."""
    if names is not None:
        yield kernel_name_codes(p)[0], p.arrays("kernels", cols, narrow=True), names
        return
    ids, code_of_id, by_code = kernel_id_codes(p, lambda: (c["name_id"] for c in p.parts("kernels", ["name_id"])))
    for part in p.parts("kernels", [*cols, "name_id"]):
        c = {k: decoded(v) for k, v in part.items()}
        yield code_of_id[np.searchsorted(ids, widen(c["name_id"]))], c, by_code
