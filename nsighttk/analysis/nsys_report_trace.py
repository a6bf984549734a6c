"""The ``cuda_gpu_trace`` report of ``nsys stats``: every GPU operation in start order, in chunks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from nsighttk.analysis import nsys_report_spilled as spilled
from nsighttk.analysis.nsys_catalog import TITLES
from nsighttk.analysis.nsys_report_base import ReportResult, _rows, columns, kernel_name_codes, no_data
from nsighttk.profile import INT_NULL, Profile, obj

if TYPE_CHECKING:
    import pandas as pd

    from nsighttk.spill import Spill

# ------------------------------------------------------------------------------------- GPU trace

TRACE_COLUMNS = ["Start (ns)", "Duration (ns)", "CorrId", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", "Reg/Trd",
                 "StcSMem (B)", "DymSMem (B)", "Bytes (B)", "Throughput (B/s)", "SrcMemKd", "DstMemKd", "Device",
                 "Ctx", "GreenCtx", "Strm", "Name"]


def _ints(values: np.ndarray) -> pd.arrays.IntegerArray:
    """A nullable integer column from int64 values with INT_NULL for missing ones."""
    import pandas as pd

    mask = values == INT_NULL
    return pd.arrays.IntegerArray(np.where(mask, 0, values), mask)


def _nullif0(values: np.ndarray) -> pd.arrays.IntegerArray:
    import pandas as pd

    mask = (values == INT_NULL) | (values == 0)
    return pd.arrays.IntegerArray(np.where(mask, 0, values), mask)


def _device_labels(p: Profile, device_ids: np.ndarray) -> np.ndarray:
    """nsys' ``printf('%s (%d)', gpu.name, deviceId)`` for every row, formatted once per device."""
    gpus = p.gpus
    names = dict(zip(gpus["device_id"], gpus["name"], strict=True)) if len(gpus) else {}
    uniques, codes = np.unique(device_ids, return_inverse=True)
    labels = [" ()" if d == INT_NULL else f"{names.get(int(d), '') or ''} ({int(d)})" for d in uniques]
    table = np.empty(len(labels), dtype=object)
    table[:] = labels
    return table[codes.ravel()]


_TRACE_COMMON = ["start_ns", "duration_ns", "correlation_id", "device_id", "context_id", "green_context_id",
                 "stream_id"]
_TRACE_KERNEL = [*_TRACE_COMMON, "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                 "registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes"]


def _kernel_rows(p: Profile, rows: np.ndarray) -> pd.DataFrame:
    codes, names = kernel_name_codes(p)
    return _kernel_frame(p, {c: v[rows] for c, v in columns(p, "kernels", _TRACE_KERNEL).items()}, names[codes[rows]])


def _kernel_frame(p: Profile, k: dict[str, np.ndarray], names: np.ndarray) -> pd.DataFrame:
    """Trace rows for kernels: ``k``, their columns (int64, INT_NULL missing), and their names."""
    import pandas as pd

    n = len(names)
    na = pd.array([pd.NA] * n, dtype="Int64")
    return pd.DataFrame({
        "Start (ns)": k["start_ns"], "Duration (ns)": k["duration_ns"], "CorrId": _ints(k["correlation_id"]),
        "GrdX": _ints(k["grid_x"]), "GrdY": _ints(k["grid_y"]), "GrdZ": _ints(k["grid_z"]),
        "BlkX": _ints(k["block_x"]), "BlkY": _ints(k["block_y"]), "BlkZ": _ints(k["block_z"]),
        "Reg/Trd": _ints(k["registers_per_thread"]), "StcSMem (B)": _ints(k["static_smem_bytes"]),
        "DymSMem (B)": _ints(k["dynamic_smem_bytes"]), "Bytes (B)": na, "Throughput (B/s)": na,
        "SrcMemKd": obj([None] * n), "DstMemKd": obj([None] * n),
        "Device": obj(_device_labels(p, k["device_id"])),
        "Ctx": _nullif0(k["context_id"]), "GreenCtx": _nullif0(k["green_context_id"]),
        "Strm": _nullif0(k["stream_id"]), "Name": obj(names),
    })


def _throughput(nbytes: np.ndarray, d: np.ndarray) -> pd.arrays.IntegerArray:
    """nsys: ``bytes * (1000000000 / duration)`` with SQLite integer division; NULL for duration 0."""
    import pandas as pd

    per_s = np.where(d > 0, 1_000_000_000 // np.maximum(d, 1), 0)
    return pd.arrays.IntegerArray(nbytes * per_s, (d <= 0) | (nbytes == INT_NULL))


def _memop_rows(p: Profile, ops: dict[str, np.ndarray], src: np.ndarray, dst: np.ndarray,
                names: np.ndarray) -> pd.DataFrame:
    """Trace rows for memcpys or memsets (no launch configuration; bytes and throughput)."""
    import pandas as pd

    na = pd.array([pd.NA] * len(ops["start_ns"]), dtype="Int64")
    return pd.DataFrame({
        "Start (ns)": ops["start_ns"], "Duration (ns)": ops["duration_ns"],
        "CorrId": _ints(ops["correlation_id"]), "GrdX": na, "GrdY": na, "GrdZ": na, "BlkX": na, "BlkY": na,
        "BlkZ": na, "Reg/Trd": na, "StcSMem (B)": na, "DymSMem (B)": na, "Bytes (B)": _ints(ops["bytes"]),
        "Throughput (B/s)": _throughput(ops["bytes"], ops["duration_ns"]),
        "SrcMemKd": obj(src), "DstMemKd": obj(dst), "Device": obj(_device_labels(p, ops["device_id"])),
        "Ctx": _nullif0(ops["context_id"]), "GreenCtx": _nullif0(ops["green_context_id"]),
        "Strm": _nullif0(ops["stream_id"]), "Name": obj(names),
    })


_COPY = [*_TRACE_COMMON, "bytes", "label", "src_kind", "dst_kind"]
_MEMSET = [*_TRACE_COMMON, "bytes", "mem_kind"]


def _copy_rows(p: Profile, rows: np.ndarray) -> pd.DataFrame:
    return _copy_frame(p, {c: v[rows] for c, v in columns(p, "memcpy", _COPY).items()})


def _copy_frame(p: Profile, m: dict[str, np.ndarray]) -> pd.DataFrame:
    names = np.array(["[CUDA memcpy " + ("" if v is None else str(v)) + "]" for v in m["label"]], dtype=object)
    return _memop_rows(p, m, m["src_kind"], m["dst_kind"], names)


def _memset_rows(p: Profile, rows: np.ndarray) -> pd.DataFrame:
    return _memset_frame(p, {c: v[rows] for c, v in columns(p, "memset", _MEMSET).items()})


def _memset_frame(p: Profile, s: dict[str, np.ndarray]) -> pd.DataFrame:
    n = len(s["start_ns"])
    return _memop_rows(p, s, s["mem_kind"], np.full(n, None, dtype=object), np.full(n, "[CUDA memset]", dtype=object))


TRACE_CHUNK_ROWS = 65_536


def _trace_chunks(p: Profile, chunk_rows: int) -> Iterator[pd.DataFrame]:
    import pandas as pd

    builders = [(_kernel_rows, "kernels"), (_copy_rows, "memcpy"), (_memset_rows, "memset")]
    starts_of = [columns(p, t, ["start_ns"])["start_ns"] for _, t in builders]
    starts = np.concatenate(starts_of)
    part = np.concatenate([np.full(len(s), i, dtype="int8") for i, s in enumerate(starts_of)])
    row = np.concatenate([np.arange(len(s), dtype="int64") for s in starts_of])
    order = np.argsort(starts, kind="stable")  # ORDER BY start; ties keep kernels, memcpys, memsets
    del starts
    for lo in range(0, len(order), chunk_rows):
        sel = order[lo:lo + chunk_rows]
        pieces, positions = [], []
        for i, (build, _) in enumerate(builders):
            where = np.flatnonzero(part[sel] == i)
            if len(where):
                pieces.append(build(p, row[sel][where]))
                positions.append(where)
        frame = pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0]
        frame.index = np.concatenate(positions)
        yield frame.sort_index()[TRACE_COLUMNS].reset_index(drop=True)


def _spilled_chunks(p: Profile, spills: dict[str, Spill], chunk_rows: int) -> Iterator[pd.DataFrame]:
    """:func:`_trace_chunks` out of core: the same frames, from rows put in order a range of starts
    at a time (:func:`nsys_report_spilled.trace_rows`)."""
    import pandas as pd

    names: dict[int, str] = {}  # kernel name id -> name, as kernel_name_codes names them

    def kernel_frame(k: dict[str, np.ndarray]) -> pd.DataFrame:
        ids = k["name_id"]
        new = [i for i in np.unique(ids).tolist() if i not in names]
        if new:
            names.update(zip(new, spilled.kernel_names(p, np.array(new, dtype=np.int64)).tolist(), strict=True))
        return _kernel_frame(p, k, np.array([names[i] for i in ids.tolist()], dtype=object))

    build = [kernel_frame, lambda m: _copy_frame(p, m), lambda s: _memset_frame(p, s)]
    held: list[spilled.Batch] = []
    rows = 0

    def frame(batches: list[spilled.Batch]) -> pd.DataFrame:
        part = np.concatenate([b[0] for b in batches])
        pieces, positions = [], []
        for i in range(3):
            got = [b[1][i] for b in batches if b[1][i] and len(next(iter(b[1][i].values())))]
            if got:
                pieces.append(build[i]({c: np.concatenate([g[c] for g in got]) for c in got[0]}))
                positions.append(np.flatnonzero(part == i))
        out = pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0]
        out.index = np.concatenate(positions)
        return out.sort_index()[TRACE_COLUMNS].reset_index(drop=True)

    for part, data in spilled.trace_rows(p, spills, _SPILLED_COLUMNS):
        at, offsets = 0, [0, 0, 0]  # (each table's rows of the batch already taken)
        while at < len(part):  # (cut where the in-memory trace cuts: every chunk_rows rows)
            take = min(chunk_rows - rows, len(part) - at)
            sel = part[at:at + take]
            counts = np.bincount(sel, minlength=3).tolist()
            held.append((sel, [{c: v[offsets[i]:offsets[i] + counts[i]] for c, v in data[i].items()}
                               if counts[i] else {} for i in range(3)]))
            offsets = [o + c for o, c in zip(offsets, counts, strict=True)]
            rows += take
            at += take
            if rows == chunk_rows:
                yield frame(held)
                held, rows = [], 0
    if held:
        yield frame(held)


_SPILLED_COLUMNS = {"kernels": [*_TRACE_KERNEL, "name_id"], "memcpy": _COPY, "memset": _MEMSET}


def cuda_gpu_trace(p: Profile, chunk_rows: int = TRACE_CHUNK_ROWS) -> ReportResult:
    """CUDA GPU Trace: every kernel, memcpy and memset in start order (produced in chunks; out of
    core where the tables hold more rows than the budget lets them be put in order)."""
    if spilled.spills(p, "kernels", "memcpy", "memset", row_bytes=spilled.TRACE_ROW_BYTES):
        spills = spilled.trace_spills(p, _SPILLED_COLUMNS)
        if not any(sp.rows for sp in spills.values()):
            return no_data("cuda_gpu_trace", "no GPU trace data", TRACE_COLUMNS)
        return ReportResult("cuda_gpu_trace", TITLES["cuda_gpu_trace"],
                            _chunks=lambda: _spilled_chunks(p, spills, chunk_rows))
    if not (_rows(p, "kernels") or _rows(p, "memcpy") or _rows(p, "memset")):
        return no_data("cuda_gpu_trace", "no GPU trace data", TRACE_COLUMNS)
    return ReportResult("cuda_gpu_trace", TITLES["cuda_gpu_trace"], _chunks=lambda: _trace_chunks(p, chunk_rows))
