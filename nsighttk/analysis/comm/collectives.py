"""Communication against computation, per device: how long the GPU ran collectives (NCCL, NVSHMEM,
... as :func:`~nsighttk.analysis.kernels.names.is_collective` tells), how long it ran anything else,
and how much of the communication was hidden under computation; plus one row per collective kernel.

Definitions (HTA's ``get_comm_comp_overlap`` uses the same ones: on the kernels HTA keeps of its own
test traces, both give 14.31%, 11.81% and 20.05%; HTA drops events outside its profiler-step window,
so on a whole trace the two can differ): on each device, *communication* is the union of the collective kernels'
[start, end) intervals, *computation* the union of every other kernel's (memory copies and
memsets are neither); *overlap* is the length of their intersection, computed as
``|comm| + |comp| - |comm ∪ comp|``; ``overlap_pct`` is overlap / communication.  A collective
kernel's duration includes the time it waits for the other ranks, so "exposed" communication
(not overlapped) is an upper bound on the time collectives cost this rank.

Works on any Profile with a kernels table: nsys captures and Kineto traces alike.  Where the kernels
carry their message sizes (a Kineto trace's ``In msg nelems`` / ``Out msg nelems`` / ``dtype`` /
``Group size``), :mod:`~nsighttk.analysis.comm.sizes` adds per message size the algorithm and
bus bandwidths and how much of the kernels' time the transfer explains (``sizes``), and ``bytes``
per collective kernel name; without them (nsys' exports) those are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsighttk.analysis.comm import sizes as collective_sizes
from nsighttk.analysis.iterations.intervals import union_length_sql
from nsighttk.analysis.kernels.names import decode, is_collective, short_label
from nsighttk.analysis.nsys.gpu import _kernel_names
from nsighttk.arch import LinkPeak
from nsighttk.profile import Profile

if TYPE_CHECKING:
    from nsighttk.engine import Engine

#: Columns of :attr:`CollectivesResult.collectives`.
COLLECTIVE_COLUMNS = ["device_id", "collective", "label", "name", "library", "algorithm", "protocol", "dtype",
                      "count", "total_ns", "avg_ns", "min_ns", "max_ns", "bytes", "pct_of_comm"]
#: The summary's line where the collectives' message sizes are not known.
NO_SIZES = ("message sizes and bandwidths: not recorded in this capture (torch.profiler traces record them on NCCL "
            "kernels; nsys keeps NCCL's NVTX payloads in: nsys export --type sqlite --include-blobs=true)")
#: ``pct_of_comm``: this kernel's share of the summed duration of the device's collective kernels;
#: ``bytes``: the summed message sizes of its kernels (null where the capture has no sizes).


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
    #: per message size: :data:`~nsighttk.analysis.comm.sizes.SIZE_COLUMNS` (empty without sizes)
    sizes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=collective_sizes.SIZE_COLUMNS))
    #: per device id: its GPU's name and the nominal link the waiting shares are measured against
    links: dict[int, tuple[str, LinkPeak]] = field(default_factory=dict)

    @property
    def has_communication(self) -> bool:
        return any(d.comm_kernels for d in self.devices)

    def as_dict(self) -> dict[str, Any]:
        rows = [_plain(r) for r in self.collectives.to_dict("records")]
        return {"devices": [d.as_dict() for d in self.devices], "collectives": rows,
                "sizes": [_plain(r) for r in self.sizes.to_dict("records")],
                "links": {str(d): {"gpu": g, "link": lk.link, "gbps": lk.gbps, "nominal": True}
                          for d, (g, lk) in self.links.items()}}

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
        if len(self.sizes):
            lines += collective_sizes.summary_lines(self.sizes, self.links)
        elif lines:
            lines.append(NO_SIZES)
        return lines


def _plain(r: dict[str, Any]) -> dict[str, Any]:
    """A record with JSON's values: NaN and NA as None, numpy scalars as Python's."""
    out: dict[str, Any] = {}
    for k, v in r.items():
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            out[k] = None
        elif isinstance(v, np.integer):
            out[k] = int(v)
        elif isinstance(v, np.floating):
            out[k] = round(float(v), 3)
        elif isinstance(v, np.bool_):
            out[k] = bool(v)
        else:
            out[k] = round(v, 3) if isinstance(v, float) else v
    return out


def _comm_codes(eng: Engine) -> list[int]:
    """The codes of the collective kernels' names (of the engine's ``kernel_names``)."""
    return [c for c, n in eng.rows("SELECT code, any_value(name) FROM kernel_names GROUP BY code")
            if is_collective(str(n))]


def has_collectives(p: Profile) -> bool:
    """Whether any kernel of ``p`` is a collective (each distinct name looked at once)."""
    return bool(p.count("kernels")) and bool(_comm_codes(_kernel_names(p)[0]))


def collectives(p: Profile) -> CollectivesResult:
    """Communication vs computation per device and a per-collective summary (see the module doc),
    as queries over the capture's engine: each device's unions of communication, computation and
    both (:func:`~nsighttk.analysis.iterations.intervals.union_length_sql`), its span, and the collective
    kernels' sums per (device, name) in order of first launch.  A kernel without a device counts
    as device -1."""
    res = CollectivesResult()
    if not p.count("kernels"):
        return res
    eng, join = _kernel_names(p)
    eng.need({"kernels": ["start_ns", "end_ns", "duration_ns", "device_id"]})
    codes = _comm_codes(eng)
    eng.con.execute("CREATE OR REPLACE TEMP TABLE comm_codes AS SELECT unnest(?::BIGINT[]) AS code", [codes])
    eng.con.execute(f"""
        CREATE OR REPLACE TEMP VIEW device_kernels AS
        SELECT coalesce(k.device_id, -1) AS d, k.start_ns AS s, k.end_ns AS e, k.duration_ns, k.row_index, n.code,
               n.code IN (SELECT code FROM comm_codes) AS comm
        FROM kernels k JOIN kernel_names n ON {join}""")
    spans = eng.rows("SELECT d, max(e) - min(s), count(*) FILTER (WHERE comm) FROM device_kernels "
                     "GROUP BY d ORDER BY d")
    unions = {int(d): (int(c or 0), int(w or 0), int(a or 0)) for d, c, w, a in eng.rows(union_length_sql(
        "SELECT d, s, e, comm FROM device_kernels", "d", {"comm": "comm", "comp": "NOT comm", "both": "true"}))}
    for d, span, n_comm in spans:
        c_ns, p_ns, both = unions[int(d)]
        res.devices.append(DeviceOverlap(device_id=int(d), comm_ns=c_ns, compute_ns=p_ns, overlap_ns=c_ns + p_ns - both,
                                         comm_kernels=int(n_comm), span_ns=int(span)))
    if not codes:
        return res
    with_sizes = collective_sizes.has_sizes(p)
    if with_sizes:
        comm = set(codes)
        kinds = {int(c): decode(str(n)).collective or "" for c, n in
                 eng.rows("SELECT code, any_value(name) FROM kernel_names GROUP BY code") if int(c) in comm}
        collective_sizes.prepare(eng, join, kinds, p)
        res.sizes = collective_sizes.sizes(eng)
        res.links = collective_sizes.links(p)
    got = eng.rows(f"""
        SELECT c.d, any_value(n.name), count(*), sum(c.duration_ns::HUGEINT), min(c.duration_ns),
               max(c.duration_ns){', sum(b.bytes)' if with_sizes else ''}
        FROM device_kernels c JOIN (SELECT code, any_value(name) AS name FROM kernel_names GROUP BY code) n USING (code)
        {'LEFT JOIN comm_sizes b USING (row_index)' if with_sizes else ''}
        WHERE c.comm GROUP BY c.d, c.code ORDER BY min(c.row_index)""")
    cols = list(zip(*got, strict=True))
    g = pd.DataFrame({"device_id": np.array(cols[0], dtype=np.int64), "name": pd.array(cols[1], dtype=object),
                      **{c: np.array([int(v) for v in cols[2 + i]], dtype=np.int64)
                         for i, c in enumerate(("count", "total_ns", "min_ns", "max_ns"))}})
    if with_sizes:
        g["bytes"] = pd.array([None if v is None else int(v) for v in cols[6]], dtype="Int64")
    res.collectives = _described(g)
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
