"""Message sizes and bandwidths of collective kernels, as nccl-tests defines them, and how much of each
kernel's time the transfer explains.

Where the sizes come from: PyTorch's NCCL process group records each collective's ``In msg nelems``,
``Out msg nelems``, ``dtype`` and ``Group size`` on its kernels in a torch.profiler (Kineto) trace; the
loader keeps them in the kernels' ``comm_*`` columns (:data:`nsighttk.profile.SCHEMAS`).  In an nsys
export, NCCL's own NVTX ranges (``ncclAllReduce``, ...) carry the message size and the communicator's
rank count in their payloads, which the export keeps with ``nsys export --include-blobs=true`` (the
nvtx table's ``comm_bytes`` and ``comm_group_size``, :mod:`nsighttk.load.nvtx_payloads`); a kernel
takes the sizes of the range that holds the runtime call launching it, on that call's thread, and
its element type from its name.  A plain export keeps no payloads: kernels and times, no sizes.

Definitions (nccl-tests' ``doc/PERFORMANCE.md``): the size *S* of a collective is the bytes of its
whole array, ``max(In, Out) x element size`` (an AllGather's output, a ReduceScatter's input: NCCL's
``count x n``); ``algbw = S / t`` with *t* the average kernel time; ``busbw = algbw x factor``, the
factor ``2(n-1)/n`` for AllReduce, ``(n-1)/n`` for AllGather, ReduceScatter and AlltoAll, 1 for
Broadcast, Reduce and SendRecv, with *n* the group size.  Bandwidths are in GB/s (10^9 bytes/s, as
nccl-tests prints them).

Transfer and waiting: a kernel's bytes need at least ``S x factor / B`` on a link of bus bandwidth
*B*.  *B* is the GPU's nominal NVLink bandwidth per direction (:func:`nsighttk.arch.link_peak`) where
it is known, else the best bus bandwidth measured among the same collectives of the same size on
that device (``reference`` says which); where a measured one beats the nominal figure (NVLS or other
in-network reduction; a link the name does not tell), the measured one is used and ``above_nominal``
says so.  ``transfer_ns`` is that time, capped at the kernel's own; ``wait_ns`` is the rest: waiting
for the other ranks, launch latency and protocol overhead (NCCL's LL protocol moves half as much data
per flag word), an upper bound on what waiting costs.  NVLink is the bottleneck within one node
only: a group that spans nodes moves part of its bytes over the network, slower, and that time is
counted as waiting here.  A kernel of zero duration gets no bandwidth;
a group of one rank moves nothing and gets neither transfer nor waiting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsighttk.arch import LinkPeak, link_peak
from nsighttk.profile import Profile, obj

if TYPE_CHECKING:
    from nsighttk.engine import Engine

#: Bytes per element of PyTorch's dtypes by the names its process group records (c10's ScalarType names).
ELEMENT_BYTES: dict[str, int] = {
    "Byte": 1, "Char": 1, "Bool": 1, "QInt8": 1, "QUInt8": 1, "QUInt4x2": 1, "QUInt2x4": 1,
    "Float8_e5m2": 1, "Float8_e4m3fn": 1, "Float8_e5m2fnuz": 1, "Float8_e4m3fnuz": 1, "Float8_e8m0fnu": 1,
    "Float4_e2m1fn_x2": 1,
    "Short": 2, "UInt16": 2, "Half": 2, "BFloat16": 2,
    "Int": 4, "UInt32": 4, "Float": 4, "QInt32": 4, "ComplexHalf": 4,
    "Long": 8, "UInt64": 8, "Double": 8, "ComplexFloat": 8, "ComplexDouble": 16,
}

#: The busbw factor's form per NCCL collective (as the kernel name says it): "2(n-1)/n", "(n-1)/n" or "1".
BUS_FACTORS: dict[str, str] = {"AllReduce": "2(n-1)/n", "AllGather": "(n-1)/n", "ReduceScatter": "(n-1)/n",
                               "AllToAll": "(n-1)/n", "Broadcast": "1", "Reduce": "1", "SendRecv": "1",
                               "Send": "1", "Recv": "1"}
#: PyTorch's names of an all-to-all (NCCL runs it as SendRecv kernels, whose name does not tell).
ALL_TO_ALL_OPS = ("all_to_all", "all_to_allv", "alltoall", "alltoall_base")

#: Columns of :func:`sizes`: one row per (device, collective, dtype, group size, message size).
SIZE_COLUMNS = ["device_id", "collective", "op", "dtype", "group_size", "bytes", "count", "total_ns", "min_ns",
                "avg_ns", "max_ns", "bus_factor", "algbw_gbps", "busbw_gbps", "best_busbw_gbps", "link_gbps",
                "reference", "above_nominal", "transfer_ns", "wait_ns", "wait_pct"]


def bus_factor(collective: str | None, group_size: int | None, op: str | None = None) -> float | None:
    """nccl-tests' bus-bandwidth factor of ``collective`` over ``group_size`` ranks (None: unknown
    collective or group, or a group of one)."""
    if group_size is None or group_size < 2:
        return None
    form = "(n-1)/n" if op in ALL_TO_ALL_OPS else BUS_FACTORS.get(collective or "")
    n = group_size
    return {"2(n-1)/n": 2 * (n - 1) / n, "(n-1)/n": (n - 1) / n, "1": 1.0}.get(form or "")


def _factor_sql() -> str:
    """:func:`bus_factor` as SQL over columns ``collective``, ``n`` and ``op``."""
    def names(forms: str) -> str:
        return ", ".join(f"'{c}'" for c, f in BUS_FACTORS.items() if f == forms)

    ops = ", ".join(f"'{o}'" for o in ALL_TO_ALL_OPS)
    return (f"CASE WHEN n IS NULL OR n < 2 THEN NULL "
            f"WHEN op IN ({ops}) OR collective IN ({names('(n-1)/n')}) THEN (n - 1)::DOUBLE / n "
            f"WHEN collective IN ({names('2(n-1)/n')}) THEN 2.0 * (n - 1) / n "
            f"WHEN collective IN ({names('1')}) THEN 1.0 END")


def has_sizes(p: Profile) -> bool:
    """Whether ``p``'s kernels carry message sizes (a Kineto trace's collectives, loaded whole), or
    its NVTX ranges do (NCCL's payloads in an nsys export)."""
    if p.loaded("kernels"):
        k = p.kernels
        if len(k) and {"comm_in_nelems", "comm_out_nelems", "comm_dtype"} <= set(k.columns) and \
                bool(k["comm_in_nelems"].notna().any() or k["comm_out_nelems"].notna().any()):
            return True
    return _nvtx_sizes(p)


def _nvtx_sizes(p: Profile) -> bool:
    """Whether ``p``'s NVTX ranges carry NCCL's message sizes (and its kernels know their launching calls)."""
    if not (p.count("nvtx") and p.count("kernels") and p.count("api")) or p.source is None:
        return False
    from nsighttk import engine

    return bool(engine.of(p).need({"nvtx": ["comm_bytes"]}).rows("SELECT count(comm_bytes) FROM nvtx")[0][0])


def links(p: Profile) -> dict[int, tuple[str, LinkPeak]]:
    """Per device id: its GPU's name and nominal link, where :func:`~nsighttk.arch.link_peak` knows it."""
    out = {}
    for dev, name in zip(p.gpus["device_id"], p.gpus["name"], strict=True):
        link = link_peak(str(name or ""))
        if link is not None:
            out[int(dev)] = (str(name), link)
    return out


def prepare(eng: Engine, join: str, comm_kinds: dict[int, str], p: Profile) -> None:
    """Temp view ``comm_sizes (row_index, device_id, collective, op, dtype, n, bytes, t)`` of ``eng``: each
    collective kernel with a known size.  ``comm_kinds``: the collective (``AllReduce``) of each kernel
    name code of ``eng``'s ``kernel_names``."""
    eng.need({"kernels": ["comm_in_nelems", "comm_out_nelems", "comm_dtype", "comm_group_size", "comm_op"]})
    kinds = {"code": np.array(list(comm_kinds), dtype=np.int64),  # noqa: F841  (DuckDB reads them by name)
             "collective": np.array(list(comm_kinds.values()), dtype=object)}
    elements = {"dtype": np.array(list(ELEMENT_BYTES), dtype=object),  # noqa: F841
                "size": np.array(list(ELEMENT_BYTES.values()), dtype=np.int64)}
    eng.con.execute("CREATE OR REPLACE TEMP TABLE comm_kinds AS SELECT * FROM kinds")
    eng.con.execute("CREATE OR REPLACE TEMP TABLE element_bytes AS SELECT * FROM elements")
    traced = f"""
        SELECT k.row_index, coalesce(k.device_id, -1) AS device_id, c.collective, k.comm_op AS op,
               k.comm_dtype AS dtype, k.comm_group_size AS n, k.duration_ns AS t,
               greatest(coalesce(k.comm_in_nelems, 0), coalesce(k.comm_out_nelems, 0))::HUGEINT * e.size AS bytes
        FROM kernels k JOIN kernel_names n ON {join} JOIN comm_kinds c ON c.code = n.code
        JOIN element_bytes e ON e.dtype = k.comm_dtype
        WHERE k.comm_in_nelems IS NOT NULL OR k.comm_out_nelems IS NOT NULL"""
    if p.source is not None and _nvtx_sizes(p):
        eng.need({"kernels": ["launch_call", "device_id", "duration_ns"], "api": ["start_ns", "global_tid"],
                  "nvtx": ["name", "start_ns", "end_ns", "global_tid", "comm_bytes", "comm_group_size"]})
        dtypes = {"code": np.array(list(comm_kinds), dtype=np.int64),  # noqa: F841
                  "dtype": np.array([_dtype(eng, c) for c in comm_kinds], dtype=object)}
        eng.con.execute("CREATE OR REPLACE TEMP TABLE comm_dtypes AS SELECT * FROM dtypes")
        # (each kernel: the NCCL range holding its launching call, the last to start on that thread)
        traced = f"""
        SELECT k.row_index, coalesce(k.device_id, -1) AS device_id, c.collective, r.op, d.dtype,
               r.comm_group_size AS n, k.duration_ns AS t, r.comm_bytes::HUGEINT AS bytes
        FROM kernels k JOIN kernel_names n ON {join} JOIN comm_kinds c ON c.code = n.code
        JOIN api a ON a.row_index = k.launch_call
        ASOF JOIN (SELECT global_tid, start_ns, end_ns, comm_bytes, comm_group_size,
                          lower(regexp_replace(coalesce(name, ''), '^nccl', '')) AS op
                   FROM nvtx WHERE comm_bytes IS NOT NULL) r
          ON r.global_tid = a.global_tid AND a.start_ns >= r.start_ns
        LEFT JOIN comm_dtypes d ON d.code = n.code
        WHERE r.end_ns IS NULL OR a.start_ns <= r.end_ns"""
    eng.con.execute(f"CREATE OR REPLACE TEMP VIEW comm_sizes AS {traced}")
    dev_links = links(p)
    link_rows = {"device_id": np.array(list(dev_links), dtype=np.int64),  # noqa: F841
                 "gbps": np.array([lk.gbps for _, lk in dev_links.values()], dtype=np.float64)}
    eng.con.execute("CREATE OR REPLACE TEMP TABLE comm_links AS SELECT * FROM link_rows")


def _dtype(eng: Engine, code: int) -> str | None:
    """The element type a collective kernel's name (its ``kernel_names`` code) says (``float32``), if any."""
    from nsighttk.analysis.kernels.names import decode

    [(name,)] = eng.rows("SELECT any_value(name) FROM kernel_names WHERE code = ?", [code])
    types = decode(str(name or "")).dtypes
    return types[0] if types else None


def sizes(eng: Engine) -> pd.DataFrame:
    """One row per (device, collective, dtype, group size, message size) of the collective kernels of
    :func:`prepare`'s view, in order of first launch per device; columns :data:`SIZE_COLUMNS` (see the
    module doc).  ``bytes`` is one collective's size S; times are summed over its ``count`` kernels."""
    got = eng.rows(f"""
        WITH f AS (SELECT *, {_factor_sql()} AS factor FROM comm_sizes),
        g AS (SELECT *, max(CASE WHEN t > 0 THEN bytes * factor / t END)
                          OVER (PARTITION BY device_id, collective, op, dtype, n, bytes) AS best FROM f),
        r AS (SELECT g.*, l.gbps AS nominal, CASE WHEN factor > 0 THEN greatest(coalesce(l.gbps, 0), coalesce(best, 0))
                                             END AS ref
              FROM g LEFT JOIN comm_links l USING (device_id))
        SELECT device_id, collective, op, dtype, n, bytes, count(*), sum(t::HUGEINT), min(t), max(t),
               any_value(factor), any_value(best), any_value(nominal),
               sum(CASE WHEN ref > 0 THEN least(t, bytes * factor / ref) ELSE NULL END)
        FROM r GROUP BY device_id, collective, op, dtype, n, bytes
        ORDER BY device_id, min(row_index)""")
    if not got:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in SIZE_COLUMNS})
    cols = list(zip(*got, strict=True))

    def ints(i: int) -> np.ndarray:
        return np.array([int(v) for v in cols[i]], dtype=np.int64)

    def reals(i: int) -> np.ndarray:
        return np.array([np.nan if v is None else float(v) for v in cols[i]], dtype=np.float64)

    df = pd.DataFrame({"device_id": ints(0), "collective": pd.array(cols[1], dtype=object),
                       "op": pd.array(cols[2], dtype=object), "dtype": pd.array(cols[3], dtype=object),
                       "group_size": pd.array([None if v is None else int(v) for v in cols[4]], dtype="Int64"),
                       "bytes": ints(5), "count": ints(6), "total_ns": ints(7), "min_ns": ints(8), "max_ns": ints(9),
                       "bus_factor": reals(10), "best_busbw_gbps": reals(11), "link_gbps": reals(12)})
    transfer = reals(13)
    df["avg_ns"] = df["total_ns"] // df["count"]
    timed = df["total_ns"].to_numpy() > 0
    algbw = np.full(len(df), np.nan)
    moved = df["bytes"].to_numpy(dtype=np.float64) * df["count"].to_numpy()
    np.divide(moved, df["total_ns"].to_numpy(dtype=np.float64), out=algbw, where=timed)
    df["algbw_gbps"] = algbw
    df["busbw_gbps"] = algbw * df["bus_factor"].to_numpy()
    nominal, best = df["link_gbps"].to_numpy(), df["best_busbw_gbps"].to_numpy()
    above = ~np.isnan(nominal) & ~np.isnan(best) & (best > nominal)
    df["above_nominal"] = above
    reference = np.where(~np.isnan(nominal) & ~above, "nominal", "best measured").astype(object)
    reference[np.isnan(df["bus_factor"].to_numpy())] = None
    df["reference"] = obj(reference, index=df.index)
    df["transfer_ns"] = pd.array([None if np.isnan(v) else round(v) for v in transfer], dtype="Int64")
    df["wait_ns"] = df["total_ns"] - df["transfer_ns"]
    share = np.full(len(df), np.nan)
    waited = df["wait_ns"].to_numpy(dtype=np.float64, na_value=np.nan)
    np.divide(100.0 * waited, df["total_ns"].to_numpy(dtype=np.float64), out=share, where=timed)
    df["wait_pct"] = share
    return df[SIZE_COLUMNS]


def summary_lines(s: pd.DataFrame, devices: dict[int, tuple[str, LinkPeak]]) -> list[str]:
    """Per device and collective, in words: sizes, bandwidths, and the share of kernel time beyond the transfer."""
    lines: list[str] = []
    for (dev, coll), g in s.groupby(["device_id", "collective"], sort=False):
        count, total, nbytes = int(g["count"].sum()), int(g["total_ns"].sum()), int((g["bytes"] * g["count"]).sum())
        sizes_txt = ", ".join(f"{_mb(b)} x{int(c)}" for b, c in zip(g["bytes"], g["count"], strict=True))
        groups = sorted({int(n) for n in g["group_size"].dropna()})
        dtypes = sorted({str(d) for d in g["dtype"].dropna()})
        head = (f"device {dev} {coll}: {count} kernels of {sizes_txt} ({', '.join(dtypes)}, "
                f"{'/'.join(map(str, groups)) or '?'} ranks), {_mb(nbytes)} in {total / 1e6:.3f} ms")
        if not total:
            lines.append(head)
            continue
        algbw = nbytes / total
        factor = g["bus_factor"].dropna()
        line = f"{head}: algbw {algbw:.1f} GB/s"
        if len(factor):
            busbw = float((g["bytes"] * g["count"] * g["bus_factor"]).sum()) / total
            line += f", busbw {busbw:.1f} GB/s (best {g['best_busbw_gbps'].max():.1f} GB/s)"
        moved = g["transfer_ns"].dropna()
        if len(moved):
            waited = total - int(moved.sum())
            ref = g["reference"].dropna()
            if (ref == "nominal").all() and int(dev) in devices:
                against = devices[int(dev)][1].describe(devices[int(dev)][0])
            else:
                against = "the best busbw measured at each size" + (
                    " (above the nominal link figure: in-network reduction, or another link)"
                    if g["above_nominal"].any() else "")
            line += (f"; at {against}, the bytes need {int(moved.sum()) / 1e6:.3f} ms: "
                     f"{100.0 * waited / total:.1f}% of the time is waiting, latency and protocol overhead")
        lines.append(line)
    return lines


def _mb(n: Any) -> str:
    return f"{int(n) / 1e6:.1f} MB" if int(n) >= 100_000 else f"{int(n) / 1e3:.1f} KB"
