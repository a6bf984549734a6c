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

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis.intervals import busy_time_ns
from nsighttk.analysis.kernel_names import decode, is_collective, short_label
from nsighttk.analysis.nsys_report_base import kernel_name_codes
from nsighttk.profile import INT_NULL, Profile

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
    kernels."""
    res = CollectivesResult()
    if not p.count("kernels"):
        return res
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
    g = comm.groupby(["device_id", "name"], sort=False).agg(**cols).reset_index()
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
    res.collectives = g.sort_values(["device_id", "total_ns"], ascending=[True, False],
                                    ignore_index=True)[COLLECTIVE_COLUMNS]
    return res
