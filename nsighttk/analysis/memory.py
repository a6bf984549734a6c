"""Memory traffic: copies and memsets per direction with achieved bandwidth, as queries over the
capture's engine (:mod:`nsighttk.engine`).

GB/s here is 10^9 bytes per second, computed as total bytes over total GPU time of the
operations (bytes per ns = GB/s).  For device-to-device copies, which read and write device
memory, ``dram_pct_of_peak`` compares 2 x bytes / time with the GPU's memory bandwidth from
the export (``gpus.memory_bandwidth_bytes_per_s``); host transfers go over PCIe/NVLink-C2C,
whose peak the export does not record, so they get no percentage.

:func:`host_copies_by_size` sets pinned and pageable host transfers side by side only where their
sizes are alike: a 16 KB pinned batch and a 9 MB pageable weight copy say nothing about each
other, since achieved bandwidth grows with the size of a copy.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsighttk import engine
from nsighttk.profile import Profile

COLUMNS = ["operation", "kind", "count", "total_bytes", "total_time_ns", "avg_bytes", "gbps",
           "best_gbps", "dram_pct_of_peak"]

#: Each copy's host memory (``Pageable``, ``Pinned``, ...): the source of a HtoD copy, the
#: destination of a DtoH one, NULL for the other kinds (an SQL expression over the ``memcpy`` view).
HOST_MEMORY = "CASE kind WHEN 'HtoD' THEN src_kind WHEN 'DtoH' THEN dst_kind END"


def _exact(v: object) -> int | float:
    """A HUGEINT sum as an int64 column takes it: the Python integer where it fits, else a float."""
    return int(v) if -(2**63) <= int(v) < 2**63 else float(int(v))  # type: ignore[call-overload]


def memory_bandwidth(p: Profile) -> pd.DataFrame:
    """One row per memcpy direction (and memset): count, bytes, time, achieved GB/s (the best of
    one operation too), longest total time first (ties by operation and kind)."""
    parts = []
    if p.count("memcpy"):
        parts.append("SELECT '[CUDA memcpy ' || coalesce(label, '?') || ']' AS operation, kind, bytes, duration_ns "
                     "FROM memcpy WHERE kind IS NOT NULL")
    if p.count("memset"):
        parts.append("SELECT '[CUDA memset]' AS operation, 'memset' AS kind, bytes, duration_ns FROM memset")
    if not parts:
        return pd.DataFrame({c: [] for c in COLUMNS})
    eng = engine.of(p).need({t: (["label", "kind"] if t == "memcpy" else []) + ["bytes", "duration_ns"]
                             for t in ("memcpy", "memset") if p.count(t)})
    rows = eng.rows(f"""
        SELECT operation, kind, count(*), sum(bytes::HUGEINT), sum(duration_ns::HUGEINT), avg(bytes),
               max(bytes / duration_ns) FILTER (WHERE duration_ns > 0)
        FROM ({' UNION ALL '.join(parts)}) GROUP BY operation, kind ORDER BY operation, kind""")
    if not rows:
        return pd.DataFrame({c: [] for c in COLUMNS})
    cols = list(zip(*rows, strict=True))
    out = pd.DataFrame({"operation": pd.array(cols[0], dtype=object), "kind": pd.array(cols[1], dtype=object),
                        "count": np.array(cols[2], dtype="int64"),
                        "total_bytes": pd.Series([_exact(v) for v in cols[3]]),
                        "total_time_ns": pd.Series([_exact(v) for v in cols[4]]),
                        "avg_bytes": np.array(cols[5], dtype="float64"),
                        "best_gbps": np.array([np.nan if v is None else v for v in cols[6]], dtype="float64")})
    out["gbps"] = out["total_bytes"] / out["total_time_ns"].where(out["total_time_ns"] > 0)
    peak = None
    if len(p.gpus) and p.gpus["memory_bandwidth_bytes_per_s"].notna().any():
        peak = float(p.gpus["memory_bandwidth_bytes_per_s"].dropna().iloc[0])
    is_dtod = out["kind"].isin(["DtoD"])
    out["dram_pct_of_peak"] = np.where(is_dtod & (peak is not None), 2 * out["gbps"] * 1e9 / (peak or 1) * 100, np.nan)
    return out[COLUMNS].sort_values("total_time_ns", ascending=False, kind="mergesort").reset_index(drop=True)


HOST_COLUMNS = ["kind", "size_lo", "size_hi", "pageable_count", "pageable_bytes", "pageable_time_ns", "pageable_gbps",
                "pinned_count", "pinned_bytes", "pinned_time_ns", "pinned_gbps"]


def host_copies_by_size(p: Profile) -> pd.DataFrame:
    """Host transfers (HtoD, DtoH) grouped by direction and size bucket ``[2^k, 2^(k+1))`` bytes,
    pageable and pinned side by side: count, bytes, GPU time and bytes / time (GB/s) of each.
    Rows only for buckets with copies of either kind; a side without copies has count 0 and
    GB/s NaN.  Columns: :data:`HOST_COLUMNS`, by direction then size."""
    if not p.count("memcpy"):
        return pd.DataFrame({c: [] for c in HOST_COLUMNS})
    eng = engine.of(p).need({"memcpy": ["kind", "src_kind", "dst_kind", "bytes", "duration_ns"]})
    rows = eng.rows(f"""
        SELECT kind, floor(log2(bytes::DOUBLE))::BIGINT AS k,
               {', '.join(f"count(*) FILTER (WHERE host = '{h}'), coalesce(sum(bytes) FILTER (WHERE host = '{h}'), 0), "
                          f"coalesce(sum(duration_ns) FILTER (WHERE host = '{h}'), 0)" for h in ("Pageable", "Pinned"))}
        FROM (SELECT kind, bytes, duration_ns, {HOST_MEMORY} AS host FROM memcpy
              WHERE kind IN ('HtoD', 'DtoH') AND bytes > 0)
        WHERE host IN ('Pageable', 'Pinned') GROUP BY ALL ORDER BY kind, k""")
    if not rows:
        return pd.DataFrame({c: [] for c in HOST_COLUMNS})
    cols = list(zip(*rows, strict=True))
    out = pd.DataFrame({"kind": pd.array(cols[0], dtype=object)})
    out["size_lo"] = np.left_shift(1, np.array(cols[1], dtype="int64"))
    out["size_hi"] = out["size_lo"] * 2
    for i, side in enumerate(("pageable", "pinned")):
        for j, col in enumerate(("count", "bytes", "time_ns")):
            vals = [int(v) for v in cols[2 + 3 * i + j]]  # (sums past int64, a damaged export's: kept exact)
            out[f"{side}_{col}"] = np.array(vals, dtype="int64" if all(-(1 << 63) <= v < 1 << 63 for v in vals)
                                            else object)
        t = out[f"{side}_time_ns"].astype("float64")
        out[f"{side}_gbps"] = out[f"{side}_bytes"] / t.where(t > 0)
    return out[HOST_COLUMNS]
