"""A timeline of a capture: GPU work (kernels, memcpys, memsets) in one lane per device and
stream, NVTX ranges in one lane per thread and nesting level, on one clock starting at the first
event.  What Nsight Systems' timeline shows, as a table a report can draw.

Long captures are cut to a window: the earliest ``max_events`` GPU events (and the NVTX ranges
overlapping them), so a drawing stays responsive; ``Timeline.shown``/``total`` say how much.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from nsighttk.profile import Profile

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


def _gpu_events(p: Profile) -> pd.DataFrame:
    parts = []
    k = p.kernels
    if len(k):
        dims = ("grid " + k["grid_x"].astype(str) + "x" + k["grid_y"].astype(str) + "x" + k["grid_z"].astype(str)
                + ", block " + k["block_x"].astype(str) + "x" + k["block_y"].astype(str) + "x"
                + k["block_z"].astype(str))
        name = k["short_name"].where(k["short_name"].fillna("") != "", k["name"])
        parts.append(pd.DataFrame({"lane": _lane(k), "kind": "kernel", "name": name,
                                   "start_ns": k["start_ns"], "duration_ns": k["duration_ns"], "detail": dims}))
    m = p.memcpy
    if len(m):
        parts.append(pd.DataFrame({"lane": _lane(m), "kind": "memcpy", "name": "memcpy " + m["kind"],
                                   "start_ns": m["start_ns"], "duration_ns": m["duration_ns"],
                                   "detail": m["bytes"].map(lambda b: f"{int(b):,} bytes")}))
    s = p.memset
    if len(s):
        parts.append(pd.DataFrame({"lane": _lane(s), "kind": "memset", "name": "memset",
                                   "start_ns": s["start_ns"], "duration_ns": s["duration_ns"],
                                   "detail": s["bytes"].map(lambda b: f"{int(b):,} bytes")}))
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(parts, ignore_index=True).sort_values("start_ns", kind="mergesort", ignore_index=True)


def timeline(p: Profile, max_events: int = 20000) -> Timeline:
    """The capture's GPU work and NVTX ranges as lanes of events (see :class:`Timeline`)."""
    gpu = _gpu_events(p)
    total = len(gpu)
    if total > max_events:
        gpu = gpu.iloc[:max_events]
    nv = p.nvtx.dropna(subset=["end_ns"]) if len(p.nvtx) else p.nvtx
    if len(gpu):
        lo, hi = int(gpu["start_ns"].min()), int((gpu["start_ns"] + gpu["duration_ns"]).max())
        if len(nv):  # ranges around the GPU work: include them whole, the view starts at the first
            nv = nv[(nv["end_ns"].astype("int64") >= lo) & (nv["start_ns"] <= hi)]
            lo = min(lo, int(nv["start_ns"].min())) if len(nv) else lo
            hi = max(hi, int(nv["end_ns"].astype("int64").max())) if len(nv) and total <= max_events else hi
    elif len(nv):
        nv = nv.sort_values("start_ns").iloc[:max_events]
        lo, hi = int(nv["start_ns"].min()), int(nv["end_ns"].astype("int64").max())
    else:
        return Timeline(pd.DataFrame(columns=COLUMNS), [], 0, 0, 0, 0)
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
