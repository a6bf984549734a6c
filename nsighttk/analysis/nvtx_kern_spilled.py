"""The NVTX range kernel summary (``nvtx_kern_sum``) out of core (issue 15).

In memory (:func:`nsys_report_nvtx.nvtx_kern_sum`) every kernel is joined to the runtime call
that launched it, and that call to every range around it on its thread
(:func:`nvtx.enclosing_ranges`): arrays of the kernels', calls' and (range, kernel) pairs' length.
Where the kernels, calls and ranges hold more rows than the budget groups (64 bytes a row, as the
summaries decide: :func:`spills`), the same groups are made from disk:

1. **Kernels to calls** (:func:`_kernel_calls`).  As the projection joins operations
   (:mod:`nvtx_spilled`), kernels and calls are split by ranges of correlation ids and each range
   joined on its own by :func:`nvtx.launch_rows`: each kernel keeps its launching call's thread,
   start and end (none where no call launched it), its duration, name id and position.
2. **Kernels to ranges** (:func:`_walk`).  The ranges that ended on their own thread, on a thread
   that launched kernels, in start order, and the kernels' calls in (thread, start) order, a block
   of keys at a time, are walked together (:func:`nsighttk.load.nvtx_walk.pairs_walk`):
   a row per kernel and range around its call (the call whole inside it), or one row with no range.
3. **The groups**: the rows grouped by (process, thread, label, style, kernel name) as in memory
   (:func:`spilled_stats.spilled_group_stats`); the distinct ranges and kernels of each group are
   counted by ranges of their positions (:func:`_distinct`), each walked batch's (group, range)
   and (group, kernel) pairs written once, so neither a giant group nor a range around every
   kernel makes a part larger than the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from nsighttk.analysis import nsys_report_spilled as spilled
from nsighttk.analysis import nvtx_spilled
from nsighttk.analysis.groupstats import combine_codes_with_spans
from nsighttk.analysis.nvtx import launch_rows
from nsighttk.analysis.spilled_stats import limit_rows, spilled_group_stats, value_ranges
from nsighttk.encoding import INT_NULL, widen
from nsighttk.profile import Profile
from nsighttk.spill import Spill, partition

_KERNEL = ["correlation_id", "global_pid", "duration_ns", "name_id"]
#: A kernel with its launching call: thread (INT_NULL: none), start, end; duration, name id, position.
_ENTRY = ["global_tid", "start_ns", "end_ns", "dur", "name", "kid"]
_BIG = np.iinfo(np.int64)


def spills(p: Profile) -> bool:
    """Whether ``nvtx_kern_sum`` is made out of core: the kernels, calls and ranges together hold
    more rows than the budget groups."""
    return spilled.spills(p, "kernels", "api", "nvtx")


def rows(p: Profile, table: str) -> int:
    """The rows of ``table`` as this report reads them: written to disk."""
    return p.spilled(table, {"kernels": _KERNEL, "nvtx": nvtx_spilled.NVTX_COLUMNS}.get(
        table, nvtx_spilled.CALL_COLUMNS)).rows


def kernel_stats(p: Profile, labels: nvtx_spilled.Labels, max_ts: int | None) -> dict[str, Any] | None:
    """``nvtx_kern_sum``'s groups out of core: ``stats`` (the kernels' durations by group, its keys
    ordered as the in-memory report orders them), per group ``range`` (label code + 1, 0: no
    range), ``style`` (style code + 1, 0: none), ``pid`` and ``tid`` (-1: no call), ``kernel``
    (name code), ``nvtx_inst`` and ``kern_inst`` (distinct ranges and kernels); and ``tags``,
    ``styles``, ``names``, the texts by code.  ``labels`` ranks labels and styles as in memory;
    ``max_ts`` closes open ranges.  None where the keys would not fit in 64 bits (in memory then)."""
    limit = max(int(p.budget) // nvtx_spilled.JOIN_ROW_BYTES, 8)
    entries, tids, name_ids = _kernel_calls(p.spilled("kernels", _KERNEL), p.spilled("api", nvtx_spilled.CALL_COLUMNS),
                                            limit)
    sp = p.spilled("nvtx", nvtx_spilled.NVTX_COLUMNS)
    n_dom, n_sty = max(len(sp.values("domain")), 1), max(len(sp.values("style")), 1)
    n_labels = max(len(sp.values("name")), 1) * n_dom * n_sty + 1  # (+1: no range)
    spans = (len(tids) + 1, n_labels, max(len(name_ids), 1))
    if float(spans[0]) * spans[1] * spans[2] >= 2.0**62:
        entries.close()
        return None
    out = {k: Spill(c) for k, c in (("pairs", ["key", "dur"]), ("ranges", ["key", "id"]), ("kernels", ["key", "id"]))}
    try:
        try:
            walk_limit = max(int(p.budget) // nvtx_spilled.WALK_ROW_BYTES, 8)
            if not _walk(sp, entries, tids, name_ids, spans, max_ts, out, walk_limit):
                return None
        finally:
            entries.close()
        return _grouped(p, sp, tids, name_ids, spans, labels, out)
    finally:
        for s in out.values():
            s.close()


def _kernel_calls(kernels: Spill, calls: Spill, limit: int) -> tuple[Spill, np.ndarray, np.ndarray]:
    """Every kernel (:data:`_ENTRY`) with its launching call; the calls' threads and the kernels'
    name ids, distinct and ascending."""
    out = Spill(_ENTRY)
    tids: set[int] = set()
    names: set[int] = set()
    cols = nvtx_spilled.CALL_COLUMNS
    try:
        n, lo, hi, at = 0, _BIG.max, _BIG.min, 0
        for c in kernels.chunks(_KERNEL):  # (kernels without an id: no call; every name id)
            corr, name = widen(c["correlation_id"]), widen(c["name_id"])
            names.update(np.unique(name).tolist())
            none = np.flatnonzero(corr == INT_NULL)
            if len(none):
                _no_call(out, widen(c["duration_ns"])[none], name[none], at + none)
            at += len(corr)
        for v in nvtx_spilled.id_values([calls, kernels]):
            if len(v):
                n, lo, hi = n + len(v), min(lo, int(v.min())), max(hi, int(v.max()))
        if n:
            ranges = value_ranges(lambda: nvtx_spilled.id_values([calls, kernels]), lo, hi, n, limit)
            firsts = np.array([r[0] for r in ranges], dtype=np.int64)
            call_parts = partition(nvtx_spilled.by_id(calls, cols, firsts), len(ranges), cols, held=limit)
            k_parts = partition(_numbered(kernels, firsts), len(ranges), [*_KERNEL, "kid"], held=limit)
            try:
                for a_part, k_part in zip(call_parts, k_parts, strict=True):
                    a, k = a_part.read(), k_part.read()
                    a_part.close()
                    k_part.close()
                    row = launch_rows(k["correlation_id"], k["global_pid"], a["correlation_id"], a["global_tid"])
                    has = row >= 0
                    _no_call(out, k["duration_ns"][~has], k["name_id"][~has], k["kid"][~has])
                    row = row[has]
                    gtid = a["global_tid"][row]
                    tids.update(np.unique(gtid).tolist())
                    out.append({"global_tid": gtid, "start_ns": a["start_ns"][row], "end_ns": a["end_ns"][row],
                                "dur": k["duration_ns"][has], "name": k["name_id"][has], "kid": k["kid"][has]})
            finally:
                for s in [*call_parts, *k_parts]:
                    s.close()
    except BaseException:
        out.close()
        raise
    return out, np.array(sorted(tids), dtype=np.int64), np.array(sorted(names), dtype=np.int64)


def _no_call(out: Spill, dur: np.ndarray, name: np.ndarray, kid: np.ndarray) -> None:
    if len(dur):
        zero = np.zeros(len(dur), dtype=np.int64)
        out.append({"global_tid": np.full(len(dur), INT_NULL, dtype=np.int64), "start_ns": zero, "end_ns": zero,
                    "dur": dur, "name": name, "kid": kid})


def _numbered(kernels: Spill, firsts: np.ndarray) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
    """The kernels with an id, as int64 columns with their positions (``kid``), each with the range
    of ids it falls in."""
    at = 0
    for c in kernels.chunks(_KERNEL):
        cols = {k: widen(v) for k, v in c.items()}
        ok = np.flatnonzero(cols["correlation_id"] != INT_NULL)
        cols = {k: v[ok] for k, v in cols.items()}
        cols["kid"] = at + ok
        at += len(c["correlation_id"])
        yield np.searchsorted(firsts, cols["correlation_id"], side="right") - 1, cols


def _walk(sp: Spill, entries: Spill, tids: np.ndarray, name_ids: np.ndarray, spans: tuple[int, int, int],
          max_ts: int | None, out: dict[str, Spill], limit: int) -> bool:
    """Each kernel's rows into ``out`` (raw keys: thread rank + 1, label key + 1, name id's rank);
    False where the (thread, time) keys would not fit in 64 bits."""
    emit = _Emit(tids, name_ids, spans, out)
    for c in entries.chunks():  # (kernels without a call: their row now; a thread's walk gives the rest)
        none = widen(c["global_tid"]) == INT_NULL
        if none.any():
            emit.rows(np.full(int(none.sum()), -1, dtype=np.int64), np.full(int(none.sum()), -1, dtype=np.int64),
                      {k: widen(c[k])[none] for k in ("global_tid", "dur", "name", "kid")})
    if not len(tids):
        return True
    fill = nvtx_spilled.range_fill(sp, max_ts)
    n_dom, n_sty = max(len(sp.values("domain")), 1), max(len(sp.values("style")), 1)

    def ranges() -> Iterator[dict[str, np.ndarray]]:
        at = 0
        for c, k, rank in nvtx_spilled.closed_chunks(sp, tids):
            if len(k):
                start, end = widen(c["start_ns"])[k], widen(c["end_ns"])[k]
                yield {"rank": rank[k], "start": start, "end": np.where(end == INT_NULL, fill, end), "id": at + k,
                       "key": (c["name"][k].astype(np.int64) * n_dom + c["domain"][k]) * n_sty + c["style"][k]}
            at += len(c["start_ns"])

    lo_t, hi_t, n = _BIG.max, _BIG.min, 0
    for c in entries.chunks(["global_tid", "start_ns", "end_ns"]):
        has = widen(c["global_tid"]) != INT_NULL
        if has.any():
            lo_t, hi_t = min(lo_t, int(c["start_ns"][has].min())), max(hi_t, int(c["end_ns"][has].max()))
    for r in ranges():
        n += len(r["start"])
        lo_t, hi_t = min(lo_t, int(r["start"].min())), max(hi_t, int(r["end"].max()))
    span = hi_t - lo_t + 1
    if (len(tids) + 1) * span >= 2**62:
        return False

    def keyed() -> Iterator[dict[str, np.ndarray]]:
        for r in ranges():
            base = r["rank"] * span - lo_t
            yield {"ks": base + r["start"], "ke": base + r["end"], "key": r["key"], "id": r["id"]}

    def calls() -> Iterator[dict[str, np.ndarray]]:
        for c in entries.chunks():
            has = widen(c["global_tid"]) != INT_NULL
            if has.any():
                yield {k: widen(v)[has] for k, v in c.items()}

    r_blocks: list[Spill] = []
    c_blocks: list[Spill] = []
    try:
        if n:
            k_lo = min(int(r["ks"].min()) for r in keyed())
            k_hi = max(int(r["ks"].max()) for r in keyed())
            parts = value_ranges(lambda: (r["ks"] for r in keyed()), k_lo, k_hi, n, limit)
            firsts = np.array([q[0] for q in parts], dtype=np.int64)
            r_blocks = partition(((np.searchsorted(firsts, r["ks"], side="right") - 1, r) for r in keyed()),
                                 len(parts), ["ks", "ke", "key", "id"], held=limit)
        with Spill(_ENTRY) as called:
            for c in calls():
                called.append(c)
            c_blocks, keys = nvtx_spilled.call_blocks(called, tids, span, lo_t, limit, _ENTRY)
        _merge(r_blocks, c_blocks, keys, n, emit, limit)
    finally:
        for b in [*r_blocks, *c_blocks]:
            b.close()
    return True


def _merge(r_blocks: list[Spill], c_blocks: list[Spill], keys: Callable[[dict[str, np.ndarray], str], np.ndarray],
           n: int, emit: _Emit, limit: int) -> None:
    from nsighttk.load import nvtx_walk

    walk = nvtx_walk.pairs_walk

    def call_chunks() -> Iterator[tuple[list[np.ndarray], dict[str, np.ndarray]]]:
        for c, ks, ke in nvtx_walk.ordered_calls(c_blocks, keys):
            yield [ks, ke], {k: c[k] for k in ("global_tid", "dur", "name", "kid")}

    empty = [np.empty(0, dtype=np.int64)] * 4
    r_it = nvtx_walk.ordered_blocks(r_blocks, lambda c: np.argsort(c["ks"], kind="stable"), ["ks", "ke", "key", "id"])
    c_it = call_chunks()
    r, c = next(r_it, None), next(c_it, None)
    ri = ci = n_live = 0
    sweep_at = nvtx_walk.SWEEP
    live = [np.empty(0, dtype=np.int64)] * 3
    o_key = o_uid = o_call = np.empty(0, dtype=np.int64)
    while True:
        rr = r if r is not None else empty
        cc, attrs = c if c is not None else (empty[:2], {})
        room = n_live + len(rr[0]) - ri
        if len(live[0]) < room:  # (room for every range of this chunk, the live ones kept in front)
            grown = [np.empty(2 * room, dtype=np.int64) for _ in range(3)]
            for g, v in zip(grown, live, strict=True):
                g[:n_live] = v[:n_live]
            live = grown
        if len(o_key) < room + 1 or len(o_key) < limit:
            o_key, o_uid, o_call = (np.empty(max(limit, 2 * (room + 1)), dtype=np.int64) for _ in range(3))
        status, di, dj, n_live, got, sweep_at = walk(
            rr[0][ri:], rr[1][ri:], rr[2][ri:], rr[3][ri:], cc[0][ci:], cc[1][ci:], live[0], live[1], live[2],
            n_live, r is None, c is None, o_key, o_uid, o_call, sweep_at, nvtx_walk.SWEEP)
        if got:
            at = ci + o_call[:got]
            emit.rows(o_key[:got], o_uid[:got], {k: v[at] for k, v in attrs.items()})
        ri, ci = ri + di, ci + dj
        if status == nvtx_walk.DONE:
            return
        if status == nvtx_walk.MORE_RANGES:
            r, ri = next(r_it, None), 0
        elif status == nvtx_walk.MORE_CALLS:
            c, ci = next(c_it, None), 0


class _Emit:
    """Writes walked rows: (raw key, duration) for the statistics, and each batch's distinct
    (raw key, range) and (raw key, kernel) pairs for the instance counts."""

    def __init__(self, tids: np.ndarray, name_ids: np.ndarray, spans: tuple[int, int, int],
                 out: dict[str, Spill]) -> None:
        self.tids, self.name_ids, self.spans, self.out = tids, name_ids, spans, out

    def rows(self, label: np.ndarray, range_id: np.ndarray, kernel: dict[str, np.ndarray]) -> None:
        gtid = kernel["global_tid"]
        rank = np.where(gtid == INT_NULL, -1, np.searchsorted(self.tids, gtid))
        raw = combine_codes_with_spans([rank + 1, label + 1, np.searchsorted(self.name_ids, kernel["name"])],
                                       list(self.spans))
        self.out["pairs"].append({"key": raw, "dur": kernel["dur"]})
        ranged = range_id >= 0
        for name, ids, sel in (("ranges", range_id, ranged), ("kernels", kernel["kid"], None)):
            k, v = (raw, ids) if sel is None else (raw[sel], ids[sel])
            k, v = _unique_pairs(k, v)
            self.out[name].append({"key": k, "id": v})


def _unique_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (a, b) pairs of non-negative integers, ascending: side by side in one integer
    sorted in place where that fits (about 17 bytes a pair beside the two columns), else sorted
    as pairs."""
    if not len(a):
        return a, b
    width = int(b.max()) + 1
    if int(a.max()) < (2**63 - 1) // width:
        key = a.astype(np.int64)
        key *= width
        key += b
        key.sort()
        key = key[np.r_[True, key[1:] != key[:-1]]]
        return key // width, key % width
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    new = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])]
    return a[new], b[new]


def _grouped(p: Profile, sp: Spill, tids: np.ndarray, name_ids: np.ndarray, spans: tuple[int, int, int],
             labels: nvtx_spilled.Labels, out: dict[str, Spill]) -> dict[str, Any]:
    names, domains, styles = (sp.values(c) for c in ("name", "domain", "style"))
    n_dom, n_sty = max(len(domains), 1), max(len(styles), 1)
    found: dict[str, Any] = {}

    def code_of(raw: np.ndarray) -> np.ndarray:
        rank, rest = np.divmod(raw, spans[1] * spans[2])
        label, kname = np.divmod(rest, spans[2])
        rank, label = rank - 1, label - 1
        g = np.append(tids, -1)[rank]  # (rank -1, no call: -1; no thread at all where no call launched a kernel)
        pid = np.where(rank >= 0, (g // (1 << 24)) % (1 << 24), -1)
        tid = np.where(rank >= 0, g % (1 << 24), -1)
        pid_vals, pid_c = np.unique(pid, return_inverse=True)
        tid_vals, tid_c = np.unique(tid, return_inverse=True)
        ranged = label >= 0
        tag_c, sty_c = np.zeros(len(raw), dtype=np.int64), np.zeros(len(raw), dtype=np.int64)
        tags, shown = np.empty(0, dtype=object), np.empty(0, dtype=object)
        if ranged.any():
            name, rest = np.divmod(label[ranged], n_dom * n_sty)
            domain, style = np.divmod(rest, n_sty)
            tag, tags, sty, shown = labels(domain, domains, name, names, style, styles)
            # (an export's ranges always have a style, StartEnd or PushPop: none is missing here)
            tag_c[ranged], sty_c[ranged] = np.asarray(tag, dtype=np.int64) + 1, np.asarray(sty, dtype=np.int64) + 1
        knames, k_c = np.unique(spilled.kernel_names(p, name_ids[kname]).astype(str), return_inverse=True)
        widths = [len(pid_vals), len(tid_vals), len(tags) + 1, len(shown) + 1, max(len(knames), 1)]
        codes = combine_codes_with_spans([pid_c.ravel(), tid_c.ravel(), tag_c, sty_c, k_c.ravel()], widths)
        found.update(raw=raw.copy(), codes=codes, widths=widths, pids=pid_vals, tids=tid_vals, tags=tags,
                     styles=shown, names=knames.astype(object))
        return codes

    pairs = out["pairs"]
    g = spilled_group_stats(lambda: ((c["key"], c["dur"]) for c in pairs.chunks(["key", "dur"])), code_of,
                            limit_rows(p.budget))
    got: dict[str, Any] = {"stats": g}
    if not len(g.key):
        return got
    raw_sorted, codes = found["raw"], found["codes"]

    def group_of(raw: np.ndarray) -> np.ndarray:
        return np.searchsorted(g.key, codes[np.searchsorted(raw_sorted, raw)])

    limit = limit_rows(p.budget) // 2  # (a pair's two columns read, widened and put side by side: 32 bytes)
    got["nvtx_inst"] = _distinct(out["ranges"], group_of, len(g.key), limit)
    if len(np.unique(codes)) == len(codes):  # (each group one raw key: a kernel's rows of a key, made
        kern = np.zeros(len(g.key), dtype=np.int64)  # together, were told apart as they were written)
        for c in out["kernels"].chunks(["key"]):
            kern += np.bincount(group_of(widen(c["key"])), minlength=len(g.key))
        got["kern_inst"] = kern
    else:
        got["kern_inst"] = _distinct(out["kernels"], group_of, len(g.key), limit)
    rest = g.key
    decoded = []
    for width in reversed(found["widths"]):
        rest, d = np.divmod(rest, width)
        decoded.append(d)
    kname_c, style_c, tag_c, tid_c, pid_c = decoded
    got.update(range=tag_c, style=style_c, kernel=kname_c, pid=found["pids"][pid_c], tid=found["tids"][tid_c],
               tags=found["tags"], styles=found["styles"], names=found["names"])
    return got


def _distinct(sp: Spill, group_of: Callable[[np.ndarray], np.ndarray], n_groups: int, limit: int) -> np.ndarray:
    """Per group, the distinct ids among ``sp``'s (raw key, id) rows, taken a range of ids at a time
    (an id in more rows than ``limit``, as a range around every kernel is, on its own, its groups
    marked a chunk at a time)."""
    counts = np.zeros(n_groups, dtype=np.int64)
    if not sp.rows:
        return counts
    lo, hi = _BIG.max, _BIG.min
    for c in sp.chunks(["id"]):
        if len(c["id"]):
            lo, hi = min(lo, int(c["id"].min())), max(hi, int(c["id"].max()))
    ranges = value_ranges(lambda: (c["id"] for c in sp.chunks(["id"])), lo, hi, sp.rows, limit)
    firsts = np.array([r[0] for r in ranges], dtype=np.int64)
    parts = partition(((np.searchsorted(firsts, c["id"], side="right") - 1,
                        {"group": group_of(widen(c["key"])), "id": c["id"]}) for c in sp.chunks()),
                      len(ranges), ["group", "id"], held=limit)
    try:
        for (lo, hi, _), part in zip(ranges, parts, strict=True):
            if lo == hi and part.rows > limit:  # (one id in many rows: its groups gathered a chunk at a time)
                seen = np.zeros(n_groups, dtype=bool)
                for c in part.chunks(["group"]):
                    seen[widen(c["group"])] = True
                counts += seen
            else:
                c = part.read()
                group, _ = _unique_pairs(widen(c["group"]), widen(c["id"]))
                counts += np.bincount(group, minlength=n_groups)
            part.close()
    finally:
        for part in parts:
            part.close()
    return counts
