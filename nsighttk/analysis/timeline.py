"""A timeline of a capture: GPU work (kernels, memcpys, memsets) in one lane per device and
stream, NVTX ranges in one lane per thread and nesting level, on one clock starting at the first
event.  What Nsight Systems' timeline shows, as a table a report can draw.

Long captures are cut to a window: the earliest ``max_events`` GPU events (and the NVTX ranges
overlapping them), so a drawing stays responsive; ``Timeline.shown``/``total`` say how much.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsighttk.profile import INT_NULL, Profile, frame_of

COLUMNS = ["lane", "kind", "name", "start_ns", "duration_ns", "detail"]


@dataclass
class Timeline:
    """``events``: ``lane`` (e.g. ``GPU 0 stream 7``, ``NVTX tid 1234 level 0``), ``kind``
    (``kernel``, ``memcpy``, ``memset``, ``nvtx``), ``name``, ``start_ns`` (from ``t0_ns``),
    ``duration_ns``, ``detail`` (grid/block of a kernel, bytes and direction of a copy).
    ``lanes``: lane names in drawing order (NVTX lanes first, as in Nsight Systems);
    ``focus_ns``: the span of the GPU work (relative to ``t0_ns``), where a view opens."""

    events: pd.DataFrame
    lanes: list[str]
    t0_ns: int
    window_ns: int
    shown: int
    total: int
    focus_ns: tuple[int, int] = (0, 0)


def _ids(col: pd.Series) -> pd.Series:
    """Integer ids as text, ``?`` where missing (whatever pandas' string type makes of <NA>)."""
    return pd.Series([str(v) if v is not pd.NA else "?" for v in col.astype("Int64")], index=col.index, dtype=object)


def _lane(df: pd.DataFrame) -> pd.Series:
    return "GPU " + _ids(df["device_id"]) + " stream " + _ids(df["stream_id"])


_GPU_TABLES = ("kernels", "memcpy", "memset")
_GPU_COLUMNS = {
    "kernels": ["start_ns", "duration_ns", "device_id", "stream_id", "name", "short_name", "grid_x", "grid_y",
                "grid_z", "block_x", "block_y", "block_z"],
    "memcpy": ["start_ns", "duration_ns", "device_id", "stream_id", "kind", "bytes"],
    "memset": ["start_ns", "duration_ns", "device_id", "stream_id", "bytes"],
}
_NVTX_COLUMNS = ["start_ns", "end_ns", "name", "domain", "depth", "tid"]


def _rows(p: Profile, table: str, rows: np.ndarray, cols: list[str]) -> pd.DataFrame:
    """``cols`` of these rows of ``table``, with the Profile's dtypes: cut from the table when it
    is held, else from its columns (an export's table is never built whole for a few rows)."""
    if p.loaded(table) or p.source is None:
        return p.table(table)[cols].iloc[rows].reset_index(drop=True)
    return frame_of(table, {c: v[rows] for c, v in p.arrays(table, cols).items()})


def _gpu_events(p: Profile, max_events: int) -> tuple[pd.DataFrame, int]:
    """The earliest ``max_events`` GPU operations (ties: kernels, then copies, then memsets, each in
    table order) as events, and how many there are in all.  Only their rows are formatted."""
    starts = [p.arrays(t, ["start_ns"])["start_ns"] if p.count(t) else np.empty(0, dtype=np.int64)
              for t in _GPU_TABLES]
    at = np.cumsum([0] + [len(s) for s in starts])
    every = np.concatenate(starts)
    total = len(every)
    if total > max_events:  # the first max_events of a stable sort, without sorting them all
        kth = np.partition(every, max_events - 1)[max_events - 1]
        below = np.flatnonzero(every < kth)
        sel = np.sort(np.r_[below, np.flatnonzero(every == kth)[:max_events - len(below)]])
    else:
        sel = np.arange(total)
    sel = sel[np.argsort(every[sel], kind="stable")]
    parts = []
    for i, t in enumerate(_GPU_TABLES):
        mine = sel[(sel >= at[i]) & (sel < at[i + 1])] - at[i]
        if not len(mine):
            continue
        df = _rows(p, t, np.sort(mine), _GPU_COLUMNS[t])
        if t == "kernels":
            dims = ("grid " + df["grid_x"].astype(str) + "x" + df["grid_y"].astype(str) + "x"
                    + df["grid_z"].astype(str) + ", block " + df["block_x"].astype(str) + "x"
                    + df["block_y"].astype(str) + "x" + df["block_z"].astype(str))
            name = df["short_name"].where(df["short_name"].fillna("") != "", df["name"])
            parts.append(pd.DataFrame({"lane": _lane(df), "kind": "kernel", "name": name, "start_ns": df["start_ns"],
                                       "duration_ns": df["duration_ns"], "detail": dims}))
        else:
            parts.append(pd.DataFrame({"lane": _lane(df), "kind": t,
                                       "name": "memcpy " + df["kind"] if t == "memcpy" else "memset",
                                       "start_ns": df["start_ns"], "duration_ns": df["duration_ns"],
                                       "detail": df["bytes"].map(lambda b: f"{int(b):,} bytes")}))
    if not parts:
        return pd.DataFrame(columns=COLUMNS), total
    return pd.concat(parts, ignore_index=True).sort_values("start_ns", kind="mergesort", ignore_index=True), total


def _nvtx_events(p: Profile, lo: int | None, hi: int | None, max_events: int) -> pd.DataFrame:
    """Closed NVTX ranges overlapping [lo, hi] (all of them when there is no GPU work: the earliest
    ``max_events``), in table order, or by start when cut."""
    if not p.count("nvtx"):
        return p.table("nvtx", _NVTX_COLUMNS).iloc[0:0]
    a = p.arrays("nvtx", ["start_ns", "end_ns"])
    closed = a["end_ns"] != INT_NULL
    if lo is not None and hi is not None:
        rows = np.flatnonzero(closed & (a["end_ns"] >= lo) & (a["start_ns"] <= hi))
        return _rows(p, "nvtx", rows, _NVTX_COLUMNS)
    rows = np.flatnonzero(closed)
    rows = rows[np.argsort(a["start_ns"][rows], kind="stable")][:max_events]
    return _rows(p, "nvtx", rows, _NVTX_COLUMNS)


def timeline(p: Profile, max_events: int = 20000) -> Timeline:
    """The capture's GPU work and NVTX ranges as lanes of events (see :class:`Timeline`)."""
    gpu, total = _gpu_events(p, max_events)
    if len(gpu):
        lo, hi = int(gpu["start_ns"].min()), int((gpu["start_ns"] + gpu["duration_ns"]).max())
        nv = _nvtx_events(p, lo, hi, max_events)
        if len(nv):  # ranges around the GPU work: include them whole, the view starts at the first
            lo = min(lo, int(nv["start_ns"].min()))
            hi = max(hi, int(nv["end_ns"].astype("int64").max())) if total <= max_events else hi
    else:
        nv = _nvtx_events(p, None, None, max_events)
        if not len(nv):
            return Timeline(pd.DataFrame(columns=COLUMNS), [], 0, 0, 0, 0)
        lo, hi = int(nv["start_ns"].min()), int(nv["end_ns"].astype("int64").max())
    frames = [gpu]
    if len(nv):
        tid = _ids(nv["tid"])
        frames.append(pd.DataFrame({
            "lane": "NVTX tid " + tid + " level " + nv["depth"].astype(str), "kind": "nvtx",
            "name": nv["name"].fillna(""), "start_ns": nv["start_ns"].astype("int64"),
            "duration_ns": (nv["end_ns"].astype("int64") - nv["start_ns"].astype("int64")),
            "detail": nv["domain"].fillna("").map(lambda d: f"domain {d}" if d else "")}))
    events = pd.concat([f for f in frames if len(f)], ignore_index=True)
    events["start_ns"] = events["start_ns"].astype("int64") - lo
    events["duration_ns"] = events["duration_ns"].astype("int64")
    gpu_lanes = sorted(events.loc[events["kind"] != "nvtx", "lane"].unique(), key=_lane_key)
    nvtx_lanes = sorted(events.loc[events["kind"] == "nvtx", "lane"].unique(), key=_lane_key)
    shown = int((events["kind"] != "nvtx").sum())
    g = events[events["kind"] != "nvtx"]
    focus = (int(g["start_ns"].min()), int((g["start_ns"] + g["duration_ns"]).max())) if len(g) else (0, hi - lo)
    return Timeline(events.reset_index(drop=True), nvtx_lanes + gpu_lanes, lo, hi - lo, shown, total, focus)


def _lane_key(lane: str) -> tuple[object, ...]:
    """Natural order: numbers compare as numbers (stream 7 before stream 13)."""
    out: list[object] = []
    for token in lane.split():
        out.append((0, int(token), "") if token.lstrip("-").isdigit() else (1, 0, token))
    return tuple(out)
