"""The ``nsys stats`` summaries of exports larger than the memory budget, out of core.

When a table's grouped statistics would take more than the profile's budget
(:func:`spills`), the summaries of :mod:`nsys_report_gpu` ask here instead of grouping columns in
memory: the table's columns are written to temporary files once (:meth:`Profile.spilled`, one
scan for every report of the run) and :func:`spilled_stats.spilled_group_stats` groups them a
budget's worth of rows at a time.  Each function returns what the in-memory path computes (the
same :class:`GroupStats`, the same labels by group code), so the reports' tables, and their
bytes, are the same; ``tests/test_spilled_stats.py`` checks it on every test export.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from nsighttk.analysis.groupstats import GroupStats
from nsighttk.analysis.nsys_report_base import _group_codes, kernel_id_codes, kernel_name_codes
from nsighttk.analysis.spilled_stats import ROW_BYTES, limit_rows, spilled_group_stats, value_ranges
from nsighttk.encoding import INT_NULL, decoded, widen
from nsighttk.profile import Profile
from nsighttk.spill import Spill, partition

Pairs = Iterator[tuple[np.ndarray, np.ndarray]]

DIMS = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]


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


def kernel_stats(p: Profile) -> tuple[GroupStats, np.ndarray]:
    """``cuda_gpu_kern_sum``: kernels' durations by name; the names by group code."""
    found: dict[str, np.ndarray] = {}

    def code_of(ids: np.ndarray) -> np.ndarray:
        uniq, codes = np.unique(_names(p, "kernels", ids), return_inverse=True)
        found["names"] = uniq.astype(object)
        return codes.ravel()

    g = _by_name_id(p, "kernels", code_of)
    return g, found.get("names", np.empty(0, dtype=object))


def _by_name_id(p: Profile, table: str, code_of: Callable[[np.ndarray], np.ndarray]) -> GroupStats:
    """Durations of ``table``'s rows grouped by name id, the distinct ids (INT_NULL: none) made
    group codes by ``code_of``."""
    sp = p.spilled(table, ["name_id", "duration_ns"])

    def chunks() -> Pairs:
        for c in sp.chunks(["name_id", "duration_ns"]):
            yield widen(c["name_id"]), c["duration_ns"]

    return _stats(p, chunks, code_of)


def kernel_shape_stats(p: Profile) -> tuple[GroupStats, list[np.ndarray], np.ndarray]:
    """``cuda_gpu_kern_gb_sum``: kernels' durations by name, grid and block; per group code its
    name code and six dimensions (unknown ones 0), and the names by name code."""
    cols = ["name_id", "duration_ns", *DIMS]
    sp = p.spilled("kernels", cols)
    combos: dict[tuple[int, ...], int] = {}  # (name id, six dimensions) -> a raw key, kept across passes
    found: dict[str, object] = {}

    def chunks() -> Pairs:
        for c in sp.chunks(cols):
            parts = [widen(c["name_id"])] + [_known(c[d]) for d in DIMS]
            yield _combo_keys(parts, combos), c["duration_ns"]

    def code_of(keys: np.ndarray) -> np.ndarray:
        by_key = np.empty((len(combos), 7), dtype=np.int64)
        for combo, k in combos.items():
            by_key[k] = combo
        reps = by_key[keys]
        names, name_codes = np.unique(_names(p, "kernels", reps[:, 0]), return_inverse=True)
        reps[:, 0] = name_codes.ravel()
        rows, codes = np.unique(reps, axis=0, return_inverse=True)  # (lexicographic: name, grid, block)
        found["reps"] = [rows[:, i] for i in range(7)]
        found["names"] = names.astype(object)
        return codes.ravel()

    g = _stats(p, chunks, code_of)
    reps = found.get("reps", [np.empty(0, dtype=np.int64)] * 7)
    return g, reps, found.get("names", np.empty(0, dtype=object))  # type: ignore[return-value]


def _known(arr: np.ndarray) -> np.ndarray:
    return np.where(arr == np.iinfo(arr.dtype).min, 0, arr).astype(np.int64)


def _combo_keys(cols: list[np.ndarray], combos: dict[tuple[int, ...], int]) -> np.ndarray:
    """A raw key per row for its combination of ``cols``' values (the same key in every pass)."""
    codes, reps = _group_codes(cols)
    rows = zip(*(r.tolist() for r in reps), strict=True)
    keys = np.array([combos.setdefault(r, len(combos)) for r in rows], dtype=np.int64)
    return keys[codes]


def api_stats(p: Profile) -> tuple[GroupStats, np.ndarray]:
    """``cuda_api_sum``: calls' durations by name id; the ids by group code (INT_NULL: none)."""
    found: dict[str, np.ndarray] = {}

    def code_of(ids: np.ndarray) -> np.ndarray:
        found["ids"] = ids
        return np.arange(len(ids), dtype=np.int64)  # (ascending ids: their rank)

    g = _by_name_id(p, "api", code_of)
    return g, found.get("ids", np.empty(0, dtype=np.int64))


def _memory_chunks(p: Profile, value: str) -> tuple[Callable[[], Pairs], np.ndarray]:
    """Memory operations as (raw key, ``value``) chunks: memcpys by label (codes 0..n-1; those
    without a label left out), memsets as key n; and the operation names by raw key.  Byte counts
    not known are 0, as in :func:`nsys_report_gpu.memory_op_arrays`."""
    copies = p.spilled("memcpy", ["label", value])
    sets = p.spilled("memset", [value])
    labels = copies.values("label")
    names = np.empty(len(labels) + 1, dtype=object)
    names[:len(labels)] = [None if v is None else "[CUDA memcpy " + str(v) + "]" for v in labels]
    names[len(labels)] = "[CUDA memset]"
    labelled = np.array([v is not None for v in labels] + [True], dtype=bool)

    def values(arr: np.ndarray) -> np.ndarray:
        arr = widen(arr)
        return np.where(arr == INT_NULL, 0, arr) if value == "bytes" else arr

    def chunks() -> Pairs:
        for c in copies.chunks(["label", value]):
            keep = labelled[c["label"]]
            yield c["label"][keep].astype(np.int64), values(c[value])[keep]
        for c in sets.chunks([value]):
            yield np.full(len(c[value]), len(labels), dtype=np.int64), values(c[value])

    return chunks, names


def memory_stats(p: Profile, value: str) -> tuple[GroupStats, np.ndarray]:
    """``cuda_gpu_mem_time_sum`` (``duration_ns``) and ``cuda_gpu_mem_size_sum`` (``bytes``):
    memory operations grouped by name; the names by group code."""
    chunks, names = _memory_chunks(p, value)
    found: dict[str, np.ndarray] = {}

    def code_of(keys: np.ndarray) -> np.ndarray:
        uniq, codes = np.unique(names[keys].astype(str), return_inverse=True)
        found["names"] = uniq.astype(object)
        return codes.ravel()

    g = _stats(p, chunks, code_of)
    return g, found.get("names", np.empty(0, dtype=object))


def gpu_stats(p: Profile) -> tuple[GroupStats, np.ndarray, np.ndarray]:
    """``cuda_gpu_sum``: kernels and memory operations by name; per group code the name and
    whether the name's first operation is a kernel (kernels come first, as in memory)."""
    kernels = p.spilled("kernels", ["name_id", "duration_ns"])
    mem_chunks, mem_names = _memory_chunks(p, "duration_ns")
    pairs: dict[tuple[int, int], int] = {}  # (0, kernel name id) or (1, memory key) -> a raw key, every pass
    found: dict[str, np.ndarray] = {}

    def chunks() -> Pairs:
        for c in kernels.chunks(["name_id", "duration_ns"]):
            yield _pair_keys(0, widen(c["name_id"]), pairs), c["duration_ns"]
        for k, v in mem_chunks():
            yield _pair_keys(1, k, pairs), v

    def code_of(keys: np.ndarray) -> np.ndarray:
        by_key = np.array(list(pairs), dtype=np.int64)[keys]
        is_kernel = by_key[:, 0] == 0
        names = np.empty(len(keys), dtype=object)
        names[is_kernel] = _names(p, "kernels", by_key[is_kernel, 1])
        names[~is_kernel] = mem_names[by_key[~is_kernel, 1]]
        uniq, codes = np.unique(names.astype(str), return_inverse=True)
        codes = codes.ravel()
        first_kernel = np.zeros(len(uniq), dtype=bool)
        first_kernel[codes[is_kernel]] = True
        found["names"], found["kernel"] = uniq.astype(object), first_kernel
        return codes

    g = _stats(p, chunks, code_of)
    return g, found.get("names", np.empty(0, dtype=object)), found.get("kernel", np.empty(0, dtype=bool))


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


#: Bytes of memory per row while a range of the GPU trace is put in order (its columns, the order,
#: the rows' frames): a budget of B bytes takes ranges of B // TRACE_ROW_BYTES rows.
TRACE_ROW_BYTES = 512

Batch = tuple[np.ndarray, list[dict[str, np.ndarray]]]


def trace_spills(p: Profile, columns: dict[str, list[str]]) -> dict[str, Spill]:
    """The GPU trace's tables written to disk (:meth:`Profile.spilled`), ``columns`` of each."""
    return {t: p.spilled(t, cols) for t, cols in columns.items()}


def trace_rows(p: Profile, spills: dict[str, Spill], columns: dict[str, list[str]]) -> Iterator[Batch]:
    """The rows of the tables (in ``spills``' order) sorted by start, ties in table then row order
    (``ORDER BY start`` of the tables one after the other, as the in-memory trace's stable sort),
    a batch at a time: each row's table (its index) and, per table, its rows' ``columns`` in
    order (integers as int64 with INT_NULL, text as its values).

    The starts are split into value ranges of at most the budget's rows
    (:func:`spilled_stats.value_ranges`; a range of one start may hold any number, and its rows
    are already in order), each table's rows are split by range in one pass, and each range is
    read back and sorted on its own."""
    tables = list(spills)
    n = sum(sp.rows for sp in spills.values())
    if not n:
        return

    def starts() -> Iterator[np.ndarray]:
        for t in tables:
            for c in spills[t].chunks(["start_ns"]):
                yield widen(c["start_ns"])

    lo = min(int(s.min()) for s in starts() if len(s))
    hi = max(int(s.max()) for s in starts() if len(s))
    limit = max(int(p.budget) // TRACE_ROW_BYTES, 8)
    ranges = value_ranges(starts, lo, hi, n, limit)
    firsts = np.array([r[0] for r in ranges], dtype=np.int64)
    pieces = {t: partition(((np.searchsorted(firsts, widen(c["start_ns"]), side="right") - 1, c)
                            for c in spills[t].chunks()), len(ranges), spills[t].columns, held=limit)
              for t in tables}
    try:
        for i, (r_lo, r_hi, rows) in enumerate(ranges):
            if r_lo == r_hi and rows > limit:  # one start: already in table and row order, a chunk at a time
                for k, t in enumerate(tables):
                    for c in pieces[t][i].chunks():
                        yield np.full(len(c["start_ns"]), k, dtype=np.int8), \
                            [_trace_columns(spills[t], columns[t], c) if j == k else {} for j in range(len(tables))]
            else:
                data = [_trace_columns(spills[t], columns[t], pieces[t][i].read()) for t in tables]
                start = np.concatenate([d["start_ns"] for d in data])
                part = np.concatenate([np.full(len(d["start_ns"]), k, dtype=np.int8) for k, d in enumerate(data)])
                order = np.argsort(start, kind="stable")
                del start
                row = np.concatenate([np.arange(len(d["start_ns"])) for d in data])[order]
                part = part[order]
                yield part, [{c: v[row[part == k]] for c, v in d.items()} for k, d in enumerate(data)]
            for t in tables:
                pieces[t][i].close()
    finally:
        for t in tables:
            for sp in pieces[t]:
                sp.close()


def _trace_columns(sp: Spill, columns: list[str], chunk: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A spilled chunk's ``columns`` as the trace reads them: text as its values, the rest int64."""
    out = {}
    for c in columns:
        arr = chunk[c]
        out[c] = sp.values(c)[arr] if sp.is_text(c) else widen(arr)
    return out
