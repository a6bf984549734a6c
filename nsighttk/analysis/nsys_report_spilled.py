"""Out-of-core reading for the numpy analyses: whether a table's work would exceed the memory
budget (:func:`spills`), its columns a chunk at a time, and the ``nvtx_sum`` groups out of core.

When a table's grouped statistics would take more than the profile's budget, the table's columns
are written to temporary files once (:meth:`Profile.spilled`, one scan for every analysis of the
run) and :func:`spilled_stats.spilled_group_stats` groups them a budget's worth of rows at a
time: the same :class:`GroupStats` as in memory, so the report's bytes are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from nsighttk.analysis.groupstats import GroupStats
from nsighttk.analysis.nsys_report_base import kernel_id_codes, kernel_name_codes
from nsighttk.analysis.spilled_stats import ROW_BYTES, limit_rows, spilled_group_stats
from nsighttk.encoding import INT_NULL, decoded, widen
from nsighttk.profile import Profile

Pairs = Iterator[tuple[np.ndarray, np.ndarray]]

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


def _stats(p: Profile, chunks: Callable[[], Pairs], code_of: Callable[[np.ndarray], np.ndarray]) -> GroupStats:
    return spilled_group_stats(chunks, code_of, limit_rows(p.budget))


def kernel_names(p: Profile, ids: np.ndarray) -> np.ndarray:
    """The kernels' names of name ids, as :func:`nsys_report_base.kernel_name_codes` names them."""
    return _names(p, "kernels", ids).astype(object)


def _names(p: Profile, table: str, ids: np.ndarray) -> np.ndarray:
    """The names of name ids as text ("" where unknown), as the in-memory reports label them."""
    names = p.names(table, ids)
    return np.array(["" if n is None else n for n in names], dtype=object).astype(str)


def _pair_keys(kind: int, values: np.ndarray, pairs: dict[tuple[int, int], int]) -> np.ndarray:
    """A raw key per row for (``kind``, its value): the same in every pass, whatever the values
    (a damaged export's negative ids included)."""
    lo, hi = (int(values.min()), int(values.max())) if len(values) else (0, 0)
    if hi - lo < 1 << 16:  # (ids: their few values found in place, no sort)
        at = np.subtract(values, lo, dtype=np.int64)
        present = np.flatnonzero(np.bincount(at, minlength=hi - lo + 1))
        table = np.zeros(hi - lo + 1, dtype=np.int64)
        table[present] = [pairs.setdefault((kind, v + lo), len(pairs)) for v in present.tolist()]
        return table[at]
    distinct, inverse = np.unique(values, return_inverse=True)
    keys = np.array([pairs.setdefault((kind, v), len(pairs)) for v in distinct.tolist()], dtype=np.int64)
    return keys[inverse.ravel()]


def nvtx_stats(p: Profile) -> tuple[GroupStats, np.ndarray, np.ndarray]:
    """``nvtx_sum``: ranges' durations (open ones ending at the last NVTX timestamp) by
    ``domain:name`` label and style; per group code the label and the style."""
    cols = ["start_ns", "end_ns", "name", "domain", "style"]
    sp = p.spilled("nvtx", cols)
    names, domains, styles = (sp.values(c) for c in ("name", "domain", "style"))
    fill = p.meta.get("nvtx_max_ts_all")
    if fill is None:  # (as the in-memory report: the latest start, where no timestamp bounds them)
        fill = max((int(widen(c["start_ns"]).max()) for c in sp.chunks(["start_ns"]) if len(c["start_ns"])),
                   default=0)
    width = len(domains) * len(styles) or 1
    found: dict[str, np.ndarray] = {}

    def chunks() -> Pairs:
        for c in sp.chunks(cols):
            end = widen(c["end_ns"])
            end = np.where(end == INT_NULL, fill, end)
            key = (c["name"].astype(np.int64) * len(domains) + c["domain"]) * len(styles) + c["style"]
            yield key, end - widen(c["start_ns"])

    def code_of(keys: np.ndarray) -> np.ndarray:
        name, rest = np.divmod(keys, width)
        domain, style = np.divmod(rest, len(styles))
        text = [f"{'' if d is None else d}:{'' if n is None else n}" for d, n in zip(domains[domain], names[name],
                                                                                    strict=True)]
        labels, tag = np.unique(np.array(text, dtype=object), return_inverse=True)  # (not str: see _tag_codes)
        shown, by_style = np.unique(styles[style].astype(str), return_inverse=True)
        found["labels"], found["styles"] = labels.astype(object), shown.astype(object)
        return tag.ravel() * len(shown) + by_style.ravel()

    g = _stats(p, chunks, code_of)
    labels = found.get("labels", np.empty(0, dtype=object))
    shown = found.get("styles", np.empty(0, dtype=object))
    tag, style = np.divmod(g.key, max(len(shown), 1))
    return g, labels[tag], shown[style]


