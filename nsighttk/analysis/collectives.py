"""Communication against computation, per device: how long the GPU ran collectives (NCCL, NVSHMEM,
... as :func:`~nsighttk.analysis.kernel_names.is_collective` tells), how long it ran anything else,
and how much of the communication was hidden under computation; plus one row per collective kernel.

Definitions (HTA's ``get_comm_comp_overlap`` uses the same ones: on the kernels HTA keeps of its own
test traces, both give 14.31%, 11.81% and 20.05%; HTA drops events outside its profiler-step window,
so on a whole trace the two can differ): on each device, *communication* is the union of the collective kernels'
[start, end) intervals, *computation* the union of every other kernel's (memory copies and
memsets are neither); *overlap* is the length of their intersection, computed as
``|comm| + |comp| - |comm ∪ comp|``; ``overlap_pct`` is overlap / communication.  A collective
kernel's duration includes the time it waits for the other ranks, so "exposed" communication
(not overlapped) is an upper bound on the time collectives cost this rank.

Works on any Profile with a kernels table: nsys captures and Kineto traces alike.  Bytes per
collective come from an optional ``comm_bytes`` column of the kernels table (the message size a
loader may know, e.g. Kineto's ``In msg nelems`` x the element size); without it they are left out.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis import intervals_spilled
from nsighttk.analysis.groupstats import group_sums
from nsighttk.analysis.intervals import busy_time_ns
from nsighttk.analysis.kernel_names import decode, is_collective, short_label
from nsighttk.analysis.nsys_report_base import kernel_name_codes
from nsighttk.analysis.nsys_report_spilled import kernel_chunks, kernels_in_parts
from nsighttk.encoding import widen
from nsighttk.profile import INT_NULL, Profile

_BIG = np.iinfo(np.int64)
#: Columns of :attr:`CollectivesResult.collectives`.
COLLECTIVE_COLUMNS = ["device_id", "collective", "label", "name", "library", "algorithm", "protocol", "dtype",
                      "count", "total_ns", "avg_ns", "min_ns", "max_ns", "bytes", "pct_of_comm"]
#: ``pct_of_comm``: this kernel's share of the summed duration of the device's collective kernels.


@dataclass
class DeviceOverlap:
    """One device's communication and computation time (ns) and their overlap."""

    device_id: int
    comm_ns: int
    compute_ns: int
    overlap_ns: int
    comm_kernels: int
    span_ns: int  # first kernel start to last kernel end on this device

    @property
    def exposed_comm_ns(self) -> int:
        """Communication not hidden under computation."""
        return self.comm_ns - self.overlap_ns

    @property
    def overlap_pct(self) -> float | None:
        """Share of communication time that overlaps computation (None without communication)."""
        return 100.0 * self.overlap_ns / self.comm_ns if self.comm_ns else None

    def as_dict(self) -> dict[str, Any]:
        return {"device_id": self.device_id, "comm_ns": self.comm_ns, "compute_ns": self.compute_ns,
                "overlap_ns": self.overlap_ns, "exposed_comm_ns": self.exposed_comm_ns,
                "overlap_pct": None if self.overlap_pct is None else round(self.overlap_pct, 2),
                "comm_kernels": self.comm_kernels, "span_ns": self.span_ns}


@dataclass
class CollectivesResult:
    devices: list[DeviceOverlap] = field(default_factory=list)
    #: one row per (device, collective kernel name); columns :data:`COLLECTIVE_COLUMNS`
    collectives: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COLLECTIVE_COLUMNS))

    @property
    def has_communication(self) -> bool:
        return any(d.comm_kernels for d in self.devices)

    def as_dict(self) -> dict[str, Any]:
        rows = []
        for r in self.collectives.to_dict("records"):
            rows.append({k: (None if isinstance(v, float) and np.isnan(v) else
                             int(v) if isinstance(v, (np.integer,)) else v) for k, v in r.items()})
        return {"devices": [d.as_dict() for d in self.devices], "collectives": rows}

    def summary(self) -> list[str]:
        """One line per device with communication, in words."""
        lines = []
        for d in self.devices:
            if not d.comm_kernels:
                continue
            pct = d.overlap_pct or 0.0
            lines.append(f"device {d.device_id}: communication {d.comm_ns / 1e6:.3f} ms in {d.comm_kernels} "
                         f"kernels, {pct:.1f}% of it overlapped with computation ({d.compute_ns / 1e6:.3f} ms); "
                         f"{d.exposed_comm_ns / 1e6:.3f} ms exposed")
        return lines


def _pairs(a: dict[str, np.ndarray], rows: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    if not rows.any():
        return []
    return [(a["start_ns"][rows], a["end_ns"][rows])]


def collectives(p: Profile) -> CollectivesResult:
    """Communication vs computation per device and a per-collective summary (see the module doc).
    Reads the kernels' times, devices and name codes; a table of rows only for the communication
    kernels.  Past the budget, a chunk of kernels at a time (:func:`_out_of_core`)."""
    res = CollectivesResult()
    if not p.count("kernels"):
        return res
    if kernels_in_parts(p):
        return _out_of_core(p, res)
    a = p.arrays("kernels", ["start_ns", "end_ns", "duration_ns", "device_id"])
    codes, names = kernel_name_codes(p)
    is_comm = np.array([is_collective(str(n)) for n in names], dtype=bool)[codes] if len(names) \
        else np.zeros(0, dtype=bool)
    dev = np.where(a["device_id"] == INT_NULL, -1, a["device_id"])
    for d in sorted(set(np.unique(dev).tolist())):
        on = dev == d
        comm_i = _pairs(a, on & is_comm)
        comp_i = _pairs(a, on & ~is_comm)
        c_ns, p_ns = busy_time_ns(comm_i), busy_time_ns(comp_i)
        both = busy_time_ns(comm_i + comp_i)
        span = int(a["end_ns"][on].max() - a["start_ns"][on].min())
        res.devices.append(DeviceOverlap(device_id=int(d), comm_ns=c_ns, compute_ns=p_ns,
                                         overlap_ns=c_ns + p_ns - both, comm_kernels=int((on & is_comm).sum()),
                                         span_ns=span))
    if not is_comm.any():
        return res
    rows = np.flatnonzero(is_comm)
    comm = pd.DataFrame({"device_id": dev[rows], "name": names[codes[rows]].astype(object),
                         "duration_ns": a["duration_ns"][rows]})
    if p.loaded("kernels") and "comm_bytes" in p.kernels.columns:  # Kineto's collective sizes
        comm["comm_bytes"] = p.kernels["comm_bytes"].to_numpy()[rows]
    cols = {"count": ("duration_ns", "size"), "total_ns": ("duration_ns", "sum"),
            "min_ns": ("duration_ns", "min"), "max_ns": ("duration_ns", "max")}
    if "comm_bytes" in comm.columns:
        cols["bytes"] = ("comm_bytes", "sum")
    res.collectives = _described(comm.groupby(["device_id", "name"], sort=False).agg(**cols).reset_index())
    return res


def _described(g: pd.DataFrame) -> pd.DataFrame:
    """The per-collective table from its (device_id, name, count, total_ns, min_ns, max_ns[, bytes])
    rows in order of first launch: averages, what each collective is, shares of the device's."""
    if "bytes" not in g.columns:
        g["bytes"] = pd.array([pd.NA] * len(g), dtype="Int64")
    g["avg_ns"] = g["total_ns"] // g["count"]
    info = g["name"].map(decode)
    g["collective"] = info.map(lambda i: i.collective or i.functor or "")
    g["label"] = g["name"].map(short_label)
    g["library"] = info.map(lambda i: i.library)
    g["algorithm"] = info.map(lambda i: i.algorithm)
    g["protocol"] = info.map(lambda i: i.protocol)
    g["dtype"] = info.map(lambda i: i.dtypes[0] if i.dtypes else None)
    dev_total = g.groupby("device_id")["total_ns"].transform("sum")
    g["pct_of_comm"] = 100.0 * g["total_ns"] / dev_total
    return g.sort_values(["device_id", "total_ns"], ascending=[True, False], ignore_index=True)[COLLECTIVE_COLUMNS]


def _out_of_core(p: Profile, res: CollectivesResult) -> CollectivesResult:
    """:func:`collectives` a chunk of kernels at a time: each device's communication, computation
    and both as unions made on disk (:func:`intervals_spilled.union_ns`), its span and collective
    kernels counted as they come, and the per-collective rows summed by (device, name) in order of
    first launch."""
    cols = ["start_ns", "end_ns", "duration_ns", "device_id"]
    comm_of: np.ndarray | None = None
    span: dict[int, list[int]] = {}
    per: dict[tuple[int, int], list[int]] = {}  # (device, code) -> count, total, min, max
    names = np.empty(0, dtype=object)
    for codes, c, names in kernel_chunks(p, cols, None):
        if comm_of is None:
            comm_of = np.array([is_collective(str(n)) for n in names], dtype=bool)
        dev = widen(c["device_id"])
        dev = np.where(dev == INT_NULL, -1, dev)
        start, end, dur = widen(c["start_ns"]), widen(c["end_ns"]), widen(c["duration_ns"])
        for d in np.unique(dev).tolist():
            on = dev == d
            got = span.setdefault(d, [int(start[on].min()), int(end[on].max())])
            got[0], got[1] = min(got[0], int(start[on].min())), max(got[1], int(end[on].max()))
        comm = comm_of[codes] if len(codes) else np.zeros(0, dtype=bool)
        if comm.any():  # (the collective kernels' sums, per (device, name) in order of first launch)
            d_c, k_c, v = dev[comm], codes[comm].astype(np.int64), dur[comm]
            keys, first, at = np.unique(np.stack([d_c, k_c], axis=1), axis=0, return_index=True, return_inverse=True)
            at = at.ravel()
            n, total = np.bincount(at, minlength=len(keys)), group_sums(at, v, len(keys))
            lo, hi = np.full(len(keys), _BIG.max), np.full(len(keys), _BIG.min)
            np.minimum.at(lo, at, v)
            np.maximum.at(hi, at, v)
            for j in np.argsort(first, kind="stable").tolist():
                key = (int(keys[j, 0]), int(keys[j, 1]))
                acc = per.setdefault(key, [0, 0, int(lo[j]), int(hi[j])])
                acc[0], acc[1] = acc[0] + int(n[j]), acc[1] + int(total[j])
                acc[2], acc[3] = min(acc[2], int(lo[j])), max(acc[3], int(hi[j]))
    limit = max(int(p.budget) // intervals_spilled.ROW_BYTES, 8)
    is_comm = comm_of if comm_of is not None else np.zeros(0, dtype=bool)
    for d in sorted(span):
        def intervals(want: int, d: int = d) -> Iterator[dict[str, np.ndarray]]:
            for codes, c, _ in kernel_chunks(p, cols, None):
                dev = widen(c["device_id"])
                on = np.where(dev == INT_NULL, -1, dev) == d
                if want < 2:
                    on &= is_comm[codes] if want == 0 else ~is_comm[codes]
                yield {"start_ns": widen(c["start_ns"])[on], "end_ns": widen(c["end_ns"])[on]}

        c_ns, p_ns, both = (intervals_spilled.union_ns(functools.partial(intervals, w), limit) for w in (0, 1, 2))
        n_comm = sum(v[0] for (dd, _), v in per.items() if dd == d)
        res.devices.append(DeviceOverlap(device_id=int(d), comm_ns=c_ns, compute_ns=p_ns, overlap_ns=c_ns + p_ns - both,
                                         comm_kernels=n_comm, span_ns=span[d][1] - span[d][0]))
    if not per:
        return res
    g = pd.DataFrame({"device_id": np.array([k[0] for k in per], dtype=np.int64),
                      "name": np.array([names[k[1]] for k in per], dtype=object),
                      **{c: np.array([v[i] for v in per.values()], dtype=np.int64)
                         for i, c in enumerate(("count", "total_ns", "min_ns", "max_ns"))}})
    res.collectives = _described(g)
    return res
