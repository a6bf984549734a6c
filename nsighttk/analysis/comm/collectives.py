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

Works on any Profile with a kernels table: nsys captures and Kineto traces alike.  Bytes per
collective come from an optional ``comm_bytes`` column of the kernels table (the message size a
loader may know, e.g. Kineto's ``In msg nelems`` x the element size); without it they are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsighttk.analysis.iterations.intervals import union_length_sql
from nsighttk.analysis.kernels.names import decode, is_collective, short_label
from nsighttk.analysis.nsys.gpu import _kernel_names
from nsighttk.profile import Profile

if TYPE_CHECKING:
    from nsighttk.engine import Engine

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
    with_bytes = p.loaded("kernels") and "comm_bytes" in p.kernels.columns  # (a loader's collective sizes)
    if with_bytes:
        given = pd.to_numeric(p.kernels["comm_bytes"], errors="coerce")
        whole = pd.api.types.is_integer_dtype(given) and not given.isna().any()
        sizes = {"row_index": np.arange(len(given), dtype=np.int64),  # noqa: F841  (DuckDB reads it by name)
                 "b": given.to_numpy(dtype="int64") if whole else np.ma.masked_invalid(given.to_numpy(dtype="float64"))}
        eng.con.execute("CREATE OR REPLACE TEMP TABLE comm_bytes AS SELECT * FROM sizes")
    got = eng.rows(f"""
        SELECT c.d, any_value(n.name), count(*), sum(c.duration_ns::HUGEINT), min(c.duration_ns),
               max(c.duration_ns){', coalesce(sum(b.b), 0)' if with_bytes else ''}
        FROM device_kernels c JOIN (SELECT code, any_value(name) AS name FROM kernel_names GROUP BY code) n USING (code)
        {'LEFT JOIN comm_bytes b USING (row_index)' if with_bytes else ''}
        WHERE c.comm GROUP BY c.d, c.code ORDER BY min(c.row_index)""")
    cols = list(zip(*got, strict=True))
    g = pd.DataFrame({"device_id": np.array(cols[0], dtype=np.int64), "name": pd.array(cols[1], dtype=object),
                      **{c: np.array([int(v) for v in cols[2 + i]], dtype=np.int64)
                         for i, c in enumerate(("count", "total_ns", "min_ns", "max_ns"))}})
    if with_bytes:
        g["bytes"] = np.array([int(v) for v in cols[6]], dtype="int64") if whole else \
            np.array(cols[6], dtype="float64")
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
