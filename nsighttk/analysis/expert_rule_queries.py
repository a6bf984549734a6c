"""The six expert rules of :mod:`nsighttk.analysis.expert_rules` as queries over Profile tables.

Each rule is ``compute(RuleInput, values) -> DataFrame`` with nsys' columns (sizes in bytes,
``(B)``).  nsys computes them with SQL; the details of that SQL which decide its bytes are kept:
API names match with SQLite's ``LIKE`` (ASCII case-insensitive); a copy joins every runtime call
with its correlation id, of any process; rows of equal duration keep the order in which SQLite
produces the join (:func:`_with_api`); where the SQL takes an id from "the row with the latest
end", the first such row in table order is used; the ``rows`` limit cuts the low-utilization runs
before they are ranked, but not the gaps (SQLite moves the ranking into the gap query).  These
were checked against nsys 2025.3's and 2022.4's rule scripts run by SQLite on synthetic exports.

Two facts a Profile does not carry yet come from the export itself (:func:`read_export_facts`,
the one place the rules read SQLite): CUDA profiling overheads, which count as GPU activity for
the GPU rules, and the source/destination device of each copy.  Without them (a Profile from
another source) the rules run as if there were no overheads and no same-device copies.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis import expert_rules_spilled as spilled
from nsighttk.analysis.expert_rules_spilled import SpilledOps
from nsighttk.analysis.nsys_report_spilled import spills
from nsighttk.analysis.nsys_reports import sql_round
from nsighttk.errors import InputFileError
from nsighttk.load.nsys_sqlite import MEM_KINDS, open_readonly
from nsighttk.profile import INT_NULL, Profile, conform_columns

PAGEABLE, PINNED, MANAGED = MEM_KINDS[0], MEM_KINDS[1], MEM_KINDS[4]

#: Profiling overheads that count as GPU activity (gpustats: they cannot be addressed by the user).
OVERHEAD_NAMES = ("CUDA profiling data flush overhead", "CUDA profiling stop overhead", "CUDA profiling overhead")

_GAP_COLUMNS = ["Row#", "Duration (ns)", "Start (ns)", "PID", "Device ID", "Context ID"]
_UTIL_COLUMNS = ["Row#", "In-Use (%)", "Duration (ns)", "Start (ns)", "PID", "Device ID", "Context ID"]


# ------------------------------------------------------------------------------- export facts

@dataclass
class ExportFacts:
    """What nsys' rules read from an export that the Profile does not carry.

    ``tables``: the export's tables (a rule whose tables are missing is skipped, as nsys does);
    ``memcpy_columns``/``memset_columns``: their columns (2025 rules need ``greenContextId``);
    ``overhead``: PROFILER_OVERHEAD rows (start_ns, end_ns, global_tid, name);
    ``memcpy_devices``: src_device_id, dst_device_id [Int64] per memcpy row, in the Profile's order."""

    path: str = ""
    tables: frozenset[str] | None = None
    memcpy_columns: frozenset[str] = frozenset()
    memset_columns: frozenset[str] = frozenset()
    overhead: pd.DataFrame | None = None
    memcpy_devices: pd.DataFrame | None = None


def read_export_facts(path: str | Path) -> ExportFacts:
    """Read :class:`ExportFacts` from an nsys SQLite export (read-only)."""
    con = open_readonly(path)
    try:
        tables = frozenset(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')"))

        def cols(t: str) -> frozenset[str]:
            return frozenset(r[1] for r in con.execute(f'PRAGMA table_info("{t}")')) if t in tables else frozenset()

        overhead = None
        if "PROFILER_OVERHEAD" in tables and "StringIds" in tables:
            rows = con.execute("SELECT po.start, po.end, po.globalTid, s.value FROM PROFILER_OVERHEAD AS po "
                               "JOIN StringIds AS s ON s.id == po.nameId ORDER BY po.rowid").fetchall()
            overhead = pd.DataFrame(rows, columns=["start_ns", "end_ns", "global_tid", "name"])
        devices = None
        mc = cols("CUPTI_ACTIVITY_KIND_MEMCPY")
        if {"srcDeviceId", "dstDeviceId"} <= mc:
            rows = con.execute("SELECT srcDeviceId, dstDeviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchall()
            devices = pd.DataFrame(rows, columns=["src_device_id", "dst_device_id"], dtype="Int64")
        return ExportFacts(str(path), tables, mc, cols("CUPTI_ACTIVITY_KIND_MEMSET"), overhead, devices)
    except sqlite3.DatabaseError as ex:
        raise InputFileError(f"{path}: corrupt or truncated SQLite file ({ex})",
                             "re-export it with: nsys export --type sqlite") from None
    finally:
        con.close()


# ------------------------------------------------------------------------------- rule inputs

@dataclass
class RuleInput:
    """The tables a rule reads, already cut to the time window (``api_all`` is not: nsys joins
    copies to their API call in the whole capture).  Where the kernels or the CUDA calls do not
    fit in the profile's budget they are read out of core (:mod:`expert_rules_spilled`):
    ``kernels`` and ``api``/``api_all`` are then empty, and ``spilled_calls``/``spilled_ops``
    answer instead."""

    kernels: pd.DataFrame
    memcpy: pd.DataFrame
    memset: pd.DataFrame
    api: pd.DataFrame
    api_all: pd.DataFrame
    overhead: pd.DataFrame
    legacy: bool  # follow nsys 2022.4 where it differs
    spilled_calls: Callable[[Callable[[str], bool], bool], pd.DataFrame] | None = None
    spilled_ops: Callable[[], SpilledOps] | None = None

    def calls(self, keep: Callable[[str], bool], whole: bool) -> pd.DataFrame:
        """The CUDA calls whose name passes ``keep``, of the whole capture or (not ``whole``) the window."""
        if self.spilled_calls is not None:
            return self.spilled_calls(keep, whole)
        return _named(self.api_all if whole else self.api, keep)


def _overlap(df: pd.DataFrame, start: int, end: int) -> np.ndarray:
    """nsys' filter: the row starts, ends, or spans inside [start, end)."""
    s = df["start_ns"].to_numpy(dtype="int64")
    e = df["end_ns"].to_numpy(dtype="int64")
    return ((s >= start) & (s < end)) | ((e >= start) & (e < end)) | ((s < start) & (e >= end))


def _nvtx_range(p: Profile, text: str) -> tuple[int, int | None, int] | None:
    """First range (by start) whose ``name[@domain]`` is ``text``: (start, end or None, global_tid)."""
    n = p.nvtx
    if n.empty:
        return None
    label = n["name"].astype(str) + np.where(n["domain"].astype(str) != "", "@" + n["domain"].astype(str), "")
    hit = n[(label == text).to_numpy()]
    if hit.empty:
        return None
    row = hit.sort_values("start_ns", kind="stable").iloc[0]
    end = None if pd.isna(row["end_ns"]) else int(row["end_ns"])
    return int(row["start_ns"]), end, int(row["global_tid"])


def time_window(p: Profile, values: dict[str, Any]) -> tuple[tuple[int, int, int | None] | None, str | None]:
    """The time window of a request, or a reason to skip it (an NVTX range that is not there)."""
    start, end, nvtx = values["start"], values["end"], values["nvtx"]
    if start is None and end is None and nvtx is None:
        return None, None
    gtid = None
    if nvtx is not None:
        found = _nvtx_range(p, nvtx)
        if found is None:
            return None, f"NVTX range '{nvtx}' could not be found{{IN_DBFILE}}."
        if found[1] is None and end is None:
            return None, f"NVTX range '{nvtx}' never ends in this capture; give end=<ns>."
        start = found[0] if start is None else start
        end = found[1] if end is None else end
        gtid = found[2]
    start = 0 if start is None else start
    end = 0x7FFFFFFFFFFFFFFF if end is None else end
    if start > end:
        return None, "The start time cannot be greater than the end time."
    return (start, end, gtid), None


def _cut(df: pd.DataFrame, window: tuple[int, int, int | None] | None, id_col: str) -> pd.DataFrame:
    if window is None or df.empty:
        return df
    start, end, gtid = window
    keep = _overlap(df, start, end)
    if gtid is not None:
        ids = df[id_col].to_numpy(dtype="int64", na_value=-1)
        pid, tid = (gtid >> 24) & 0xFFFFFF, gtid & 0xFFFFFF
        if id_col == "global_tid" and pid != tid:  # a range on a thread other than the main one: that thread
            keep &= ids == gtid
        else:  # nsys' test for a start/end range (or a table of processes): the same process
            keep &= (ids >> 24) == (gtid >> 24)
    return df[keep]


#: The columns the rules read of the two large tables (copies and memsets: all of them).
_RULE_COLUMNS = {
    "kernels": ["start_ns", "end_ns", "pid", "device_id", "context_id", "global_pid"],
    "api": ["start_ns", "end_ns", "name", "name_id", "correlation_id", "pid", "tid", "global_tid"],
}


def _rule_table(p: Profile, table: str) -> pd.DataFrame:
    """``table`` as the rules read it: of kernels and CUDA calls only the columns they use (10M
    kernels: 6 columns, not 24 with three name lookups), built once per profile."""
    cols = _RULE_COLUMNS.get(table)
    if cols is None:
        return p.table(table)
    key = ("rule_table", table)
    if key not in p.cache:
        p.cache[key] = p.table(table)[cols] if p.loaded(table) or p.source is None else p.table(table, cols)
    out: pd.DataFrame = p.cache[key]
    return out


#: Bytes a call or a kernel takes while the rules read it in memory: the DataFrame of its columns
#: and its chunks joined, cut and converted on the way (the 100M export's steady state: about 130
#: bytes a call at the peak, the frame's construction included), and the rules' work on it.
#: Past the budget at this rate, the rules read them out of core.
RULE_ROW_BYTES = 192


def rule_input(p: Profile, facts: ExportFacts | None, window: tuple[int, int, int | None] | None,
               legacy: bool = False) -> RuleInput:
    overhead = facts.overhead if facts is not None and facts.overhead is not None else \
        pd.DataFrame({"start_ns": pd.Series(dtype="int64"), "end_ns": pd.Series(dtype="int64"),
                      "global_tid": pd.Series(dtype="int64"), "name": pd.Series(dtype=object)})
    memcpy = p.memcpy
    if facts is not None and facts.memcpy_devices is not None and len(facts.memcpy_devices) == len(memcpy):
        memcpy = memcpy.assign(src_device_id=facts.memcpy_devices["src_device_id"].to_numpy(),
                               dst_device_id=facts.memcpy_devices["dst_device_id"].to_numpy())
    memcpy, memset = _cut(memcpy, window, "global_pid"), _cut(p.memset, window, "global_pid")
    overhead = _cut(overhead, window, "global_tid")
    calls_out = spills(p, "api", row_bytes=RULE_ROW_BYTES)
    ops_out = spills(p, "kernels", row_bytes=RULE_ROW_BYTES)
    api = _empty("api", _RULE_COLUMNS["api"]) if calls_out else _rule_table(p, "api")
    kernels = _empty("kernels", _RULE_COLUMNS["kernels"]) if ops_out else _cut(_rule_table(p, "kernels"), window,
                                                                               "global_pid")
    inp = RuleInput(kernels, memcpy, memset, api if calls_out else _cut(api, window, "global_tid"), api,
                    overhead, legacy)
    if calls_out:
        inp.spilled_calls = lambda keep, whole: spilled.named_calls(p, keep, None if whole else window, _cut)
    if ops_out:
        inp.spilled_ops = lambda: spilled.spilled_ops(p, memcpy, memset, overhead, OVERHEAD_NAMES, window, _cut)
    return inp


def _empty(table: str, columns: list[str]) -> pd.DataFrame:
    return conform_columns(table, pd.DataFrame(), columns)


# -------------------------------------------------------------------------------- CUDA rules

def _like(pattern: str) -> re.Pattern[str]:
    """SQLite's ``LIKE`` (``%`` any run, ``_`` one character, ASCII case-insensitive) as a regex."""
    body = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.ASCII | re.DOTALL)


def _named(api: pd.DataFrame, keep: Callable[[str], bool]) -> pd.DataFrame:
    """API rows whose name passes ``keep`` (tested once per distinct name; an export's calls are
    matched by string id, a name being the text of its id: integers hashed, not 12M strings)."""
    if "name_id" in api.columns and len(api) and api["name_id"].notna().all():
        firsts = api.drop_duplicates("name_id")
        wanted = firsts["name_id"][[isinstance(n, str) and keep(n) for n in firsts["name"]]]
        return api[api["name_id"].isin(wanted).to_numpy(dtype=bool)]
    names = api["name"]
    wanted = [n for n in pd.unique(names.dropna()) if keep(n)]
    return api[names.isin(wanted).to_numpy(dtype=bool)]


def _limit(df: pd.DataFrame, rows: int) -> pd.DataFrame:
    """SQL ``LIMIT``: a negative limit is no limit."""
    return df if rows < 0 else df.iloc[:rows]


def _by_duration(df: pd.DataFrame, rows: int) -> pd.DataFrame:
    out = df.sort_values("Duration (ns)", ascending=False, kind="stable")
    return _limit(out, rows).reset_index(drop=True)


def _with_api(ops: pd.DataFrame, api: pd.DataFrame, calls_first: bool) -> pd.DataFrame:
    """Each copy or memset joined with every API call of its correlation id (nsys joins on the id
    only, so ids shared by two processes match both), in the order SQLite produces the join, which
    decides the order of rows of equal duration: ``calls_first`` (nsys 2025's plan) walks the calls
    in table order and finds their operations by (correlation id, start, end); otherwise (nsys
    2022.4's copy rules) the operations in table order find their calls by (correlation id, name id)."""
    calls = api.dropna(subset=["correlation_id"])
    calls = pd.DataFrame({"correlation_id": calls["correlation_id"].astype("int64").to_numpy(),
                          "API Name": calls["name"].to_numpy(dtype=object),
                          "_name_id": calls["name_id"].fillna(0).astype("int64").to_numpy(),
                          "_call": np.arange(len(calls))})
    ops = ops.dropna(subset=["correlation_id"])
    ops = ops.assign(correlation_id=ops["correlation_id"].astype("int64"), _op=np.arange(len(ops)))
    joined = calls.merge(ops, on="correlation_id", how="inner", sort=False)
    keys = ["_call", "start_ns", "end_ns", "_op"] if calls_first else ["_op", "_name_id", "_call"]
    return joined.sort_values(keys, kind="stable").reset_index(drop=True)


def _green(s: pd.Series) -> pd.Series:
    g = s.astype("Int64")
    return g.mask(g == 0)


def _memory_rows(ops: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    out = {"Duration (ns)": (ops["end_ns"] - ops["start_ns"]).astype("int64"),
           "Start (ns)": ops["start_ns"].astype("int64")}
    out.update({header: ops[col].astype(object) for header, col in kinds.items()})
    out.update({"Bytes (B)": ops["bytes"].astype("int64"), "PID": ops["pid"].astype("Int64"),
                "Device ID": ops["device_id"].astype("Int64"), "Context ID": ops["context_id"].astype("Int64"),
                "Green Context ID": _green(ops["green_context_id"]), "Stream ID": ops["stream_id"].astype("Int64"),
                "API Name": ops["API Name"].astype(object)})
    return pd.DataFrame(out)


def cuda_memcpy_async(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    m = inp.memcpy
    m = m[((m["src_kind"] == PAGEABLE) | (m["dst_kind"] == PAGEABLE)).to_numpy(dtype=bool)]
    pat = _like("cudaMemcpy%Async%")
    calls = inp.calls(lambda n: bool(pat.fullmatch(n)), True)
    rows = _memory_rows(_with_api(m, calls, not inp.legacy), {"Src Kind": "src_kind", "Dst Kind": "dst_kind"})
    return _by_duration(rows, values["rows"])


def cuda_memcpy_sync(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    m = inp.memcpy
    small_h2d = (m["bytes"] <= 64000) & (m["kind"] == "HtoD")
    drop = small_h2d.to_numpy(dtype=bool, na_value=False)
    if "src_device_id" in m.columns:
        src, dst = m["src_device_id"].astype("Int64"), m["dst_device_id"].astype("Int64")
        drop = drop | (src.notna() & (src == dst)).to_numpy(dtype=bool, na_value=False)
    m = m[~drop]
    pat, not_async = _like("cudaMemcpy%"), _like("%Async%")
    calls = inp.calls(lambda n: bool(pat.fullmatch(n)) and not not_async.fullmatch(n), True)
    rows = _memory_rows(_with_api(m, calls, not inp.legacy), {"Src Kind": "src_kind", "Dst Kind": "dst_kind"})
    return _by_duration(rows, values["rows"])


def cuda_memset_sync(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    m = inp.memset
    m = m[m["mem_kind"].isin([PINNED, MANAGED]).to_numpy(dtype=bool)]
    pat, not_async = _like("cudaMemset%"), _like("%async%")
    calls = inp.calls(lambda n: bool(pat.fullmatch(n)) and not not_async.fullmatch(n), True)
    rows = _memory_rows(_with_api(m, calls, True), {"Memory Kind": "mem_kind"})
    return _by_duration(rows, values["rows"])


def cuda_api_sync(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    dev, stream = _like("cudaDeviceSynchronize%"), _like("cudaStreamSynchronize%")
    a = inp.calls(lambda n: bool(dev.fullmatch(n) or stream.fullmatch(n)), False)
    rows = pd.DataFrame({"Duration (ns)": (a["end_ns"] - a["start_ns"]).astype("int64"),
                         "Start (ns)": a["start_ns"].astype("int64"), "PID": a["pid"].astype("Int64"),
                         "TID": a["tid"].astype("Int64"), "API Name": a["name"].astype(object)})
    if values.get("process", -1) != -1:
        rows = rows[(rows["PID"] == values["process"]).to_numpy(dtype=bool, na_value=False)]
    if values.get("thread", -1) != -1:
        rows = rows[(rows["TID"] == values["thread"]).to_numpy(dtype=bool, na_value=False)]
    return _by_duration(rows, values["rows"])


# --------------------------------------------------------------------------------- GPU rules

_OPS_COLUMNS = ["start", "end", "pid", "device_id", "context_id"]


def _latest_end_rows(ops: pd.DataFrame) -> pd.DataFrame:
    """Per (device, pid): first and last time, and the ids of the first row ending last."""
    g = ops.groupby(["device_id", "pid"], sort=True)
    last = ops.loc[g["end"].idxmax()].set_index(["device_id", "pid"])
    span = g.agg(first=("start", "min"), last=("end", "max"))
    return span.join(last[["context_id"]]).reset_index()


def gpu_ops(inp: RuleInput) -> pd.DataFrame:
    """Kernels, copies and memsets (start > 0), after the CUDA profiling overheads that fall inside
    each process/device span (attributed to that span), as gpustats builds its GPU operation view."""
    parts = []
    for t in (inp.kernels, inp.memcpy, inp.memset):
        if len(t):
            t = t[(t["start_ns"] > 0).to_numpy()]
            parts.append(pd.DataFrame({"start": t["start_ns"].to_numpy(dtype="int64"),
                                       "end": t["end_ns"].to_numpy(dtype="int64"),
                                       "pid": t["pid"].astype("Int64"),
                                       "device_id": t["device_id"].astype("Int64"),
                                       "context_id": t["context_id"].astype("Int64")}))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype="Int64") for c in _OPS_COLUMNS})
    ops = pd.concat(parts, ignore_index=True)
    over = inp.overhead[(inp.overhead["name"].isin(OVERHEAD_NAMES) & inp.overhead["global_tid"].notna()
                         ).to_numpy(dtype=bool)]  # (an overhead of no thread is of no process: nsys' join drops it)
    if len(over) and len(ops):
        spans = _latest_end_rows(ops)
        o = pd.DataFrame({"start": over["start_ns"].to_numpy(dtype="int64"),
                          "end": over["end_ns"].to_numpy(dtype="int64"),
                          "pid": (over["global_tid"].to_numpy(dtype="int64") >> 24) & 0xFFFFFF})
        o = o.merge(spans, on="pid", how="inner", sort=False)
        o = o[((o["start"] > o["first"]) & (o["end"] < o["last"])).to_numpy(dtype=bool)]
        ops = pd.concat([o[_OPS_COLUMNS], ops], ignore_index=True)
    return ops


def _span_gaps(start: np.ndarray, end: np.ndarray, ctx: np.ndarray, threshold: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One span's gaps longer than ``threshold`` ns (operations in nsys' order): the i-th start (in
    start order) minus the (i-1)-th end (in end order, ties in operation order): (length, start,
    context of that end's operation)."""
    starts = np.sort(start, kind="stable")
    order = np.argsort(end, kind="stable")
    ends = end[order]
    length = starts[1:] - ends[:-1]
    hit = np.flatnonzero((length > threshold) & (ends[:-1] < starts[1:]))
    return length[hit], ends[:-1][hit], ctx[order][:-1][hit]


def gpu_gaps(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    """Idle stretches: per process and device, the i-th start (in start order) minus the (i-1)-th
    end (in end order), when longer than ``gap`` ms."""
    threshold = values["gap"] * 1_000_000
    found = []
    if inp.spilled_ops is not None:
        ops = inp.spilled_ops()
        spans = ops.spans.assign(g=np.arange(len(ops.spans))).sort_values(["pid", "device_id"], kind="stable")
        for pid, dev, g in zip(spans["pid"].tolist(), spans["device_id"].tolist(), spans["g"].tolist(), strict=True):
            length, at, ctx = spilled.span_gaps(ops.groups[g], threshold, ops.limit,
                                                lambda s, e, c: _span_gaps(s, e, c, threshold))
            missing = ctx == INT_NULL
            ctx = ctx.astype(object)
            ctx[missing] = pd.NA
            found.append(pd.DataFrame({"Duration (ns)": length, "Start (ns)": at, "PID": pid, "Device ID": dev,
                                       "Context ID": ctx}))
    else:
        for (pid, dev), g in gpu_ops(inp).groupby(["pid", "device_id"], sort=True):
            length, at, ctx = _span_gaps(g["start"].to_numpy(dtype="int64"), g["end"].to_numpy(dtype="int64"),
                                         g["context_id"].to_numpy(dtype=object), threshold)
            found.append(pd.DataFrame({"Duration (ns)": length, "Start (ns)": at, "PID": pid, "Device ID": dev,
                                       "Context ID": ctx}))
    gaps = pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=_GAP_COLUMNS[1:])
    gaps = gaps.sort_values(["Duration (ns)", "Start (ns)"], ascending=[False, True], kind="stable")
    gaps.insert(0, "Row#", np.arange(1, len(gaps) + 1, dtype="int64"))
    return _typed(_limit(gaps, values["rows"]).reset_index(drop=True), _GAP_COLUMNS)


def _typed(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    types = {"In-Use (%)": "float64", "Row#": "int64", "Duration (ns)": "int64", "Start (ns)": "int64"}
    return pd.DataFrame({c: df[c].astype(types.get(c, "Int64")) for c in columns}, index=df.index)


def sqlite_sum(values: list[float], compensated: bool) -> float:
    """SQLite's ``sum()`` of floats: Kahan-Babuska-Neumaier since SQLite 3.43 (nsys 2025), plain
    left-to-right addition before (the SQLite nsys 2022.4 runs on)."""
    total = err = 0.0
    for v in values:
        if not compensated:
            total += v
            continue
        t = total + v
        err += (total - t) + v if abs(total) > abs(v) else (v - t) + total
        total = t
    return total + err


class _Coverage:
    """Summed time of a set of operations inside any [a, b): ``F(b) - F(a)`` with F(t) the time the
    operations have run before t, counted with multiplicity (overlapping ones add up, as in nsys).
    Exact integer arithmetic on times relative to ``origin``; operations ending before they start
    (never seen, but possible in an export) are summed one by one as nsys' SQL would."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, origin: int) -> None:
        odd = ends < starts
        self.odd = (starts[odd] - origin, ends[odd] - origin)
        self.s = np.sort(starts[~odd] - origin)
        self.e = np.sort(ends[~odd] - origin)
        self.cs, self.ce = spilled.prefix_sums(self.s), spilled.prefix_sums(self.e)  # (exact: no int64 wrap)

    def _run_before(self, t: int) -> int:
        i, j = int(np.searchsorted(self.s, t, "left")), int(np.searchsorted(self.e, t, "left"))
        return (i * t - spilled.prefix_at(self.cs, i)) - (j * t - spilled.prefix_at(self.ce, j))

    def busy(self, a: int, b: int) -> tuple[int, int]:
        """(summed running time inside [a, b), number of operations overlapping it)."""
        total = self._run_before(b) - self._run_before(a)
        count = int(np.searchsorted(self.s, b, "left")) - int(np.searchsorted(self.e, a, "right"))
        os_, oe = self.odd
        inside = (os_ < b) & (oe > a)
        total += int((np.minimum(oe[inside], b) - np.maximum(os_[inside], a)).sum())
        return total, count + int(inside.sum())


def _low_chunks(g: pd.DataFrame, n: int, threshold: int) -> list[dict[str, Any]]:
    """The chunks of one process/device span below ``threshold`` %: the span cut in ``n`` chunks of
    ceil(span / n) ns, the last one cut at the end of the span (nsys computes in doubles; the values
    are whole numbers, exact here)."""
    first, last = int(g["start"].min()), int(g["end"].max())
    size = math.ceil(float(last - first) / n)
    cover = _Coverage(g["start"].to_numpy(dtype="int64"), g["end"].to_numpy(dtype="int64"), first)
    out = []
    for r in range(n):
        a, b = r * size, min(r * size + size, last - first)
        if a >= b:
            continue
        busy, ops = cover.busy(a, b)
        pct = float(busy) / float(b - a) * 100
        if pct < threshold:
            out.append({"r": r, "start": first + a, "end": first + b, "pct": pct, "ops": ops})
    return out


def _low_spans(inp: RuleInput, n: int, threshold: int) -> Iterator[tuple[Any, Any, Any, list[dict[str, Any]]]]:
    """Per process/device span, by device then process: (device, process, context of its first
    operation ending last, its chunks below ``threshold`` %)."""
    if inp.spilled_ops is not None:
        ops = inp.spilled_ops()
        for i, (dev, pid, first, last, ctx) in enumerate(ops.spans.itertuples(index=False)):
            yield dev, pid, ctx, spilled.span_chunks(ops.groups[i], int(first), int(last), n, threshold)
        return
    ops_ = gpu_ops(inp)
    if not len(ops_):
        return
    ids = _latest_end_rows(ops_).set_index(["device_id", "pid"])
    for (dev, pid), g in ops_.groupby(["device_id", "pid"], sort=True):
        yield dev, pid, ids.loc[(dev, pid), "context_id"], _low_chunks(g, n, threshold)


def gpu_time_util(inp: RuleInput, values: dict[str, Any]) -> pd.DataFrame:
    """Runs of consecutive chunks whose summed GPU activity is below ``threshold`` % of the chunk,
    merged (weighted average, rounded to 0.1), lowest first."""
    n, threshold = values["chunks"], values["threshold"]
    low: list[dict[str, Any]] = []
    empty_by_index: dict[int, dict[str, Any]] = {}
    for dev, pid, ctx, found in _low_spans(inp, n, threshold) if n else []:
        for chunk in found:
            chunk.update(pid=pid, dev=dev, ctx=ctx)
            if inp.legacy and chunk["ops"] == 0:
                empty_by_index.setdefault(chunk["r"], chunk)  # 2022.4 groups chunks without operations by index
            else:
                low.append(chunk)
    low += empty_by_index.values()
    if not low:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c == "In-Use (%)" else "int64") for c in _UTIL_COLUMNS})
    chunks = pd.DataFrame(low).sort_values(["pid", "dev", "r"], kind="stable")
    chunks["run"] = chunks["r"] - chunks.groupby(["pid", "dev"]).cumcount() - 1
    runs = []
    for (_, dev, pid), c in chunks.groupby(["run", "dev", "pid"], sort=True):
        size = (c["end"] - c["start"]).astype("float64").to_numpy()
        weighted = sqlite_sum((size * c["pct"].to_numpy()).tolist(), not inp.legacy)
        average = weighted / sqlite_sum(size.tolist(), not inp.legacy)
        runs.append({"In-Use (%)": float(sql_round(np.array([average]))[0]),
                     "Duration (ns)": int(c["end"].max() - c["start"].min()), "Start (ns)": int(c["start"].min()),
                     "PID": pid, "Device ID": dev, "Context ID": c["ctx"].iloc[-1]})
    out = _limit(pd.DataFrame(runs), values["rows"])  # SQLite applies the LIMIT of the grouping query first
    out = out.sort_values(["In-Use (%)", "Duration (ns)"], kind="stable")
    out.insert(0, "Row#", np.arange(1, len(out) + 1, dtype="int64"))
    return _typed(_limit(out, values["rows"]).reset_index(drop=True), _UTIL_COLUMNS)
