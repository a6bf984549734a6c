"""The ``nvtx`` table of an nsys export: NVTX push/pop and start/end ranges with their names.

Numbers come through the bulk reader; range names are read as rows only when asked for, and
each distinct name is kept once (exports with millions of ranges repeat a few names).  A range's
name is its registered string (``textId`` in StringIds) or its own ``text``; its domain is the name
given by the domain-creation event with the same domain id in the same process, as nsys matches
it.  A range whose start is not an integer, or that ends before it starts, is dropped (noted);
``end`` is missing for ranges never closed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from nsighttk.encoding import few_values
from nsighttk.load.nsys_schema import (
    NVTX_BOUNDS_SQL,
    NVTX_PUSHPOP_TYPES,
    NVTX_RANGE_TYPES,
    NVTX_WHERE,
    decode_text,
    nvtx_domain_names,
)
from nsighttk.load.nvtx_nesting import depth_from_parents, parents_of
from nsighttk.load.nvtx_payloads import nccl_sizes
from nsighttk.load.sqlite_columns import corrupt
from nsighttk.profile import INT_NULL, SCHEMAS, Coded, compact, empty_arrays, widen

if TYPE_CHECKING:  # the source calls this module; typed loosely to keep the import one-way
    NsysSource = Any

_PUSHPOP = NVTX_PUSHPOP_TYPES
_RANGES = NVTX_WHERE
_RANGE_TYPES = np.array(NVTX_RANGE_TYPES, dtype=np.int64)


def _bounds(src: NsysSource) -> None:
    """The last NVTX timestamp (of any event, and of ranges): where open ranges end, as nsys."""
    meta = src.meta
    if "nvtx_max_ts_all" in meta:
        return
    rows = src.query(NVTX_BOUNDS_SQL)
    all_ts, ranges_ts = rows[0] if rows else (None, None)
    meta["nvtx_max_ts_all"] = all_ts if isinstance(all_ts, int) else None
    meta["nvtx_max_ts_ranges"] = ranges_ts if isinstance(ranges_ts, int) else None


def _ranges_and_bounds(src: NsysSource, exprs: list[str]) -> list[np.ndarray]:
    """``exprs`` (rowid, start, end, eventType, globalTid, ...) of the NVTX ranges; and the bounds
    of :func:`_bounds`.  Start, end and thread come as int64 (INT_NULL missing), the others as read
    (:func:`widen` gives them: 4.3M ranges' row, event type, end thread, domain and text ids took
    170 MB as int64).  Every event is read once and the bounds found from the same arrays: SQL's
    ``max()`` exactly, where every value came as an integer or NULL.  Otherwise (a value that is
    not an integer, where SQL's ``max()`` and ``IN`` compare otherwise: a real ``59.0`` is a range
    to SQL) SQLite finds the bounds and the ranges."""
    read, integers = src.reader.read_checked("NVTX_EVENTS", exprs)
    if integers:
        is_range = np.isin(widen(read[3]), _RANGE_TYPES)
        if "nvtx_max_ts_all" not in src.meta:
            start, end = widen(read[1]), widen(read[2])
            src.meta["nvtx_max_ts_all"] = _max2(_max(start), _max(end))
            src.meta["nvtx_max_ts_ranges"] = _max2(_max(start[is_range]), _max(end[is_range]))
            del start, end
        every = bool(is_range.all())
        for i, a in enumerate(read):  # (each event column let go as its ranges' is made)
            read[i] = _widened(i, a if every else a[is_range])
            del a
        return read
    del read
    _bounds(src)
    return [_widened(i, a) for i, a in enumerate(src.reader.read("NVTX_EVENTS", exprs, _RANGES))]


def _widened(i: int, a: np.ndarray) -> np.ndarray:
    """Column ``i`` of :func:`_ranges_and_bounds`: start, end and thread (1, 2, 4) as int64."""
    return widen(a) if i in (1, 2, 4) else a


def _max(values: np.ndarray) -> int | None:
    """SQL's ``max()`` of an integer column: the largest value that is not INT_NULL, or None."""
    v = values[values != INT_NULL]
    return int(v.max()) if len(v) else None


def _max2(a: int | None, b: int | None) -> int | None:
    """SQL's two-argument ``max(a, b)``: NULL when either is."""
    return None if a is None or b is None else max(a, b)


def _texts(src: NsysSource, column: str, rowids: np.ndarray, keep: np.ndarray, part: bool = False
           ) -> tuple[np.ndarray, list[str]]:
    """Codes into a list of distinct text values of ``column`` for the ranges (whose rowids, in
    order, are ``rowids``; those in ``keep`` returned), -1 where the value is not text.  Only the
    rows holding text are read (ranges named by a registered string have none;
    :meth:`Reader.read_texts`), and each distinct value is decoded from UTF-8 once.  With
    ``part``, ``rowids`` are a chunk's: the rows of their rowid range."""
    if part:
        bounds = (int(rowids.min()), int(rowids.max())) if len(rowids) else (1, 0)
        got, codes, values = src.reader._texts_range("NVTX_EVENTS", column, _RANGES, bounds)
    else:
        got, codes, values = src.reader.read_texts("NVTX_EVENTS", column, _RANGES)
    at = np.searchsorted(rowids, got)
    if len(at) and (at.max() >= len(rowids) or not np.array_equal(rowids[at], got)):
        raise corrupt(src.path, ValueError("NVTX rows read twice differ"))  # impossible for an immutable file
    out = np.full(len(rowids), -1, dtype=np.int64)
    out[at] = codes
    return out[keep], [decode_text(v) for v in values]


def _plan(src: NsysSource, columns: list[str]) -> tuple[dict[str, bool], list[str], bool] | None:
    """What to read for ``columns``: which optional NVTX columns the export has, the expressions
    read (rowid, start, end, eventType, globalTid, endGlobalTid, domainId[, textId]) and whether
    textId is among them; None (noted) when the export's NVTX table cannot give ranges."""
    if not src.has("NVTX_EVENTS"):
        return None
    have = set(src.columns("NVTX_EVENTS"))
    if not {"start", "end", "eventType"} <= have:
        src.notes.append("NVTX_EVENTS lacks start/end/eventType columns: NVTX ranges ignored")
        src.tables.discard("NVTX_EVENTS")
        return None
    opt = {c: c in have for c in ("globalTid", "endGlobalTid", "domainId", "textId", "text")}
    exprs = ['rowid', '"start"', '"end"', '"eventType"',
             '"globalTid"' if opt["globalTid"] else "NULL", '"endGlobalTid"' if opt["endGlobalTid"] else "NULL",
             '"domainId"' if opt["domainId"] else "0"]
    with_text_id = "name" in columns and opt["textId"] and src.has("StringIds")
    if with_text_id:  # in the same scan: NVTX tables are wide (their text is inline)
        exprs.append('"textId"')
    return opt, exprs, with_text_id


def nvtx_arrays(src: NsysSource, columns: list[str]) -> Mapping[str, np.ndarray | Coded]:
    plan = _plan(src, columns)
    if plan is None:
        return empty_arrays("nvtx", columns)
    opt, exprs, with_text_id = plan
    read = _ranges_and_bounds(src, exprs)
    src._counts.setdefault("nvtx", len(read[0]))  # (what count(*) of the ranges gives: no scan for it)
    out, bad = _shaped(src, columns, opt, read, with_text_id, part=False)
    _note_ranges(src, len(read[0]), bad)
    return out


def nvtx_parts(src: NsysSource, columns: list[str]) -> Iterator[Mapping[str, np.ndarray | Coded]]:
    """:func:`nvtx_arrays` a chunk of ranges at a time, in rowid order: the same ranges, names and
    domains, what was dropped noted once with its number.  The depth needs every range: asked for,
    the ranges come as one part."""
    plan = _plan(src, columns) if "depth" not in columns else None
    if plan is None:
        yield nvtx_arrays(src, columns)
        return
    opt, exprs, with_text_id = plan
    _bounds(src)  # (SQL's max() over the events: where open ranges end)
    domains = nvtx_domain_names(src.query, opt["textId"] and src.has("StringIds"), opt["text"]) \
        if "domain" in columns and opt["domainId"] else None
    rows = bad = 0
    for read in src.reader.chunks("NVTX_EVENTS", exprs, _RANGES, narrow=True):
        read = [_widened(i, a) for i, a in enumerate(read)]
        rows += len(read[0])
        out, dropped = _shaped(src, columns, opt, read, with_text_id, part=True, domains=domains)
        bad += dropped
        yield out
    src._counts.setdefault("nvtx", rows)
    _note_ranges(src, rows, bad)


def _note_ranges(src: NsysSource, rows: int, bad: int) -> None:
    """Note ranges dropped, or none at all: once, however often the table is read."""
    notes = [f"nvtx: {bad:,} range(s) dropped: start missing or not an integer, or the range ends before it "
             "starts"] if bad else []
    if not rows:
        notes.append("NVTX table has no ranges")
    for note in notes:
        if note not in src.notes:
            src.notes.append(note)


def _shaped(src: NsysSource, columns: list[str], opt: dict[str, bool], read: list[np.ndarray],
            with_text_id: bool, part: bool, domains: dict[tuple[int, int], str] | None = None
            ) -> tuple[dict[str, np.ndarray | Coded], int]:
    """The ``columns`` of the ranges in ``read`` (:func:`_plan`'s expressions), and how many were
    dropped; ``part``: ``read`` is a chunk of the table."""
    rid, start, end, etype, gtid, egtid, dom = read[:7]
    text_id = read[7] if with_text_id else None
    keep = (start != INT_NULL) & ((end == INT_NULL) | (end >= start))
    bad = len(start) - int(keep.sum())
    if bad:  # (else no copies)
        rid, start, end, etype, gtid, egtid, dom = (a[keep] for a in (rid, start, end, etype, gtid, egtid, dom))
    n = len(start)
    out: dict[str, np.ndarray | Coded] = {}
    threads: np.ndarray | Coded | None = None
    for c in columns:
        if c == "range_id":
            out[c] = rid
        elif c == "start_ns":
            out[c] = start
        elif c == "end_ns":
            out[c] = end
        elif c == "duration_ns":
            out[c] = np.where(end == INT_NULL, INT_NULL, end - start)
        elif c == "style":
            out[c] = Coded(np.isin(etype, _PUSHPOP).astype(np.int8), np.array(["StartEnd", "PushPop"], dtype=object))
        elif c == "end_global_tid":
            out[c] = egtid
        elif c in ("global_tid", "pid", "tid"):  # (a few threads: codes, pid and tid read off their values)
            if threads is None:
                threads = few_values(gtid) or gtid
            pick = {"global_tid": lambda g: g, "pid": pid_of, "tid": tid_of}[c]
            out[c] = Coded(threads.codes, pick(widen(threads.values))) if isinstance(threads, Coded) else pick(gtid)
        elif c == "name":
            out[c] = _names(src, opt, keep, text_id, read[0], part)
        elif c == "domain":
            out[c] = _domains(src, dom, gtid, opt, domains)
        elif c in ("comm_bytes", "comm_group_size"):
            out[c] = _payload_column(src, rid, c == "comm_bytes")
        elif c == "depth":
            ends = np.where(end == INT_NULL, src.meta.get("nvtx_max_ts_ranges") or 0, end)
            # (the projection nests the same columns again: parents_of's answer is reused)
            out[c] = compact(depth_from_parents(parents_of(start, ends, gtid, rid)))
            del ends
        else:
            out[c] = np.full(n, None, dtype=object) if SCHEMAS["nvtx"][c] == "object" else np.full(n, INT_NULL)
    return out, bad


def _payload_column(src: NsysSource, rowids: np.ndarray, size: bool) -> np.ndarray:
    """Per range (by rowid): the message size (``size``), else the communicator's rank count, that
    NCCL's payload gives (:mod:`nsighttk.load.nvtx_payloads`; read once per export), INT_NULL where
    none."""
    if src.nccl_payloads is None:
        src.nccl_payloads = nccl_sizes(src.query, src.tables, src.columns("NVTX_EVENTS"))
    found = src.nccl_payloads
    out = np.full(len(rowids), INT_NULL, dtype=np.int64)
    if found:
        keys = np.fromiter(found, dtype=np.int64, count=len(found))
        order = np.argsort(keys)
        keys = keys[order]
        vals = np.array([v[0] if size else (INT_NULL if v[1] is None else v[1]) for v in found.values()],
                        dtype=np.int64)[order]
        rowids = widen(rowids)
        at = np.minimum(np.searchsorted(keys, rowids), len(keys) - 1)
        hit = keys[at] == rowids
        out[hit] = vals[at[hit]]
    return out


def pid_of(g: np.ndarray) -> np.ndarray:
    """The process of each global thread or process id (bits 24-47; int64, INT_NULL stays)."""
    return np.where(g == INT_NULL, INT_NULL, (g >> 24) & 0xFFFFFF)


def tid_of(g: np.ndarray) -> np.ndarray:
    """The thread of each global thread id (its low 24 bits; int64, INT_NULL stays)."""
    return np.where(g == INT_NULL, INT_NULL, g & 0xFFFFFF)


def _names(src: NsysSource, opt: dict[str, bool], keep: np.ndarray, text_id: np.ndarray | None,
           rowids: np.ndarray, part: bool = False) -> Coded:
    """coalesce(StringIds[textId], text, '') per range (``text_id``: the textId column, all rows;
    ``rowids``: theirs), as codes: into the registered strings, then the inline texts, then ''."""
    n = int(keep.sum())
    codes = np.full(n, -1, dtype=np.int32)  # -1 until the end: ''
    parts: list[np.ndarray] = []
    has = np.zeros(n, dtype=bool)
    if text_id is not None:
        tid = text_id[keep]
        has = tid != np.iinfo(tid.dtype).min  # (INT_NULL, or a narrow type's minimum)
        if has.any():
            looked = src._coded(tid[has])
            got = looked.codes.astype(np.int32)
            named = np.array([v is not None for v in looked.values] + [False], dtype=bool)  # (code -1: last)
            ok = named[got]
            idx = np.flatnonzero(has)
            codes[idx[ok]] = got[ok]
            has[idx[~ok]] = False
            parts.append(looked.values)
    if opt["text"] and not has.all():
        text, values = _texts(src, "text", widen(rowids), keep, part)
        inline = ~has & (text >= 0)
        codes[inline] = text[inline] + sum(len(v) for v in parts)
        parts.append(np.array(values, dtype=object) if values else np.empty(0, dtype=object))
    table = np.concatenate([*parts, np.array([""], dtype=object)])
    codes[codes < 0] = len(table) - 1
    return Coded(codes, table).compact()


def _domains(src: NsysSource, dom: np.ndarray, gtid: np.ndarray, opt: dict[str, bool],
             names: dict[tuple[int, int], str] | None = None) -> Coded:
    """Domain name per range ('' for the default domain or an unknown one), as codes (``names``:
    :func:`nvtx_domain_names`' answer, when the caller has it)."""
    n = len(dom)
    out = Coded(np.zeros(n, dtype=np.int8), np.array([""], dtype=object))
    if not opt["domainId"] or not n:
        return out
    if names is None:
        names = nvtx_domain_names(src.query, opt["textId"] and src.has("StringIds"), opt["text"])
    if not names:
        return out
    dom = widen(dom)  # (read narrow: shifted below)
    proc = np.where(gtid == INT_NULL, 0, (gtid >> 24) & 0xFFFFFF)  # the process part of the thread id
    if dom.min() >= 0 and dom.max() < 2**38:
        key = (dom << 24) | proc  # one int64 per (domain, process)
        few = few_values(key)  # (a few pairs, the usual case: coded without a sort; 4.3M ranges: 0.4 s less)
        uniq, inverse = (few.values, few.codes) if few is not None else np.unique(key, return_inverse=True)
        pairs = [(int(k) >> 24, (int(k) & 0xFFFFFF) << 24) for k in uniq]
    else:
        uniq2, inverse = np.unique(np.stack([dom, proc], axis=1), axis=0, return_inverse=True)
        pairs = [(int(a), int(b) << 24) for a, b in uniq2]
    labels = np.empty(len(pairs), dtype=object)
    labels[:] = [names.get(pair, "") for pair in pairs]
    return Coded(inverse.ravel(), labels).compact()
