"""A synthetic nsys export for the expert rules, grown from a real capture (sync_pitfalls).

Only the standard library, and random numbers from ``Random(seed).random()`` alone (the one
sequence Python promises to keep across versions), so that the GPU machine's nsys 2025 and CI
build the same file from the same seed (tests/gpu/rules_reference.sh).
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class _Stable:
    """``randint`` and ``choice`` computed from ``random()`` only."""

    def __init__(self, seed: int) -> None:
        self._r = random.Random(seed)

    def random(self) -> float:
        return self._r.random()

    def randint(self, a: int, b: int) -> int:
        return a + int(self._r.random() * (b - a + 1))

    def choice(self, seq: Sequence[T]) -> T:
        return seq[int(self._r.random() * len(seq))]


#: Rule requests (nsys 2025 names) that exercise the synthetic export: options, limits, time windows, NVTX ranges.
SYNTH_SPECS = [
    "cuda_memcpy_async", "cuda_memcpy_sync", "cuda_memset_sync", "cuda_api_sync", "gpu_gaps", "gpu_time_util",
    "cuda_memcpy_async:rows=-1", "cuda_memcpy_sync:rows=-1", "cuda_memset_sync:rows=-1", "cuda_api_sync:rows=-1",
    "cuda_api_sync:rows=0", "cuda_api_sync:rows=1", "gpu_gaps:gap=1", "gpu_gaps:gap=1:rows=7", "gpu_gaps:gap=0:rows=-1",
    "gpu_time_util:threshold=80:chunks=100", "gpu_time_util:chunks=7:rows=2",
    "gpu_time_util:threshold=101:chunks=1000:rows=3", "gpu_time_util:threshold=60:chunks=500:rows=5",
    "cuda_api_sync:start=1500000000:end=3000000000", "cuda_api_sync:nvtx=phase:rows=-1",
    "cuda_api_sync:nvtx=window@mydomain:rows=-1", "cuda_memcpy_async:nvtx=phase:rows=-1",
    "cuda_memcpy_sync:start=1500000000:rows=-1", "cuda_memset_sync:end=3000000000:rows=-1",
    "gpu_gaps:gap=1:start=1500000000:end=3000000000", "gpu_gaps:gap=1:nvtx=window@mydomain", "gpu_time_util:nvtx=phase",
    "gpu_time_util:start=1500000000", "gpu_time_util:nvtx=whole:chunks=100:threshold=70", "cuda_api_sync:nvtx=nosuch",
    "cuda_api_sync:process=1751:rows=-1", "cuda_api_sync:thread=754:rows=-1",
]
_NVTX_DDL = """CREATE TABLE IF NOT EXISTS NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
    rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
    textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,
    uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT)"""
_COPY_APIS = ["cudaMemcpy_v3020", "cudaMemcpyAsync_v3020", "cudaMemcpy2DAsync_v3020", "cudaMemcpyPeer_v4000",
              "cudaMemcpyToSymbol_v3020", "CUDAMEMCPYASYNC_v1", "cuMemcpyHtoDAsync_v2"]
_SET_APIS = ["cudaMemset_v3020", "cudaMemsetAsync_v3020", "cudaMemset2D_v3020", "cudaMemset2DAsync_v3020",
             "cuMemsetD32_v2"]
_SYNC_APIS = ["cudaDeviceSynchronize_v3020", "cudaStreamSynchronize_v3020", "cudaStreamSynchronize_ptsz_v7000",
              "cudaEventSynchronize_v3020", "cudaLaunchKernel_v7000"]
# nsys 2022.4 counts the first three as GPU activity; the others are names 2025.3 exports carry (which of
# them nsys 2025.3 counts is what tests/gpu/rules_reference.sh finds out)
_OVERHEADS = ["CUDA profiling overhead", "CUDA profiling data flush overhead", "CUDA profiling stop overhead",
              "TLS allocation", "CUPTI Buffer flush", "CUDA profiling data flush on process exit",
              "CUPTI Resource Management", "dlopen(libcuda.so.1)"]


def make_rules_export(base: Path, dst: Path, seed: int = 0) -> Path:
    """``base`` plus a second process and device, bursts of kernels with gaps from microseconds to
    a second, copies of every kind under runtime and driver names (durations from a small set, so
    ties; small and large host-to-device copies; same-device and peer copies; green contexts; a
    correlation id shared by two processes), memsets of every memory kind, synchronization calls
    on several threads, CUDA profiling overheads inside the GPU spans, and NVTX ranges (push/pop
    ``phase`` on a worker thread, ``whole`` on a main thread, start/end ``window@mydomain``)."""
    rng = _Stable(seed)
    shutil.copy(base, dst)
    con = sqlite3.connect(dst)
    cur = con.cursor()
    cur.execute(_NVTX_DDL)
    strings = {v: i for i, v in cur.execute("SELECT id, value FROM StringIds")}
    next_id = max(strings.values()) + 1

    def sid(text: str) -> int:
        nonlocal next_id
        if text not in strings:
            cur.execute("INSERT INTO StringIds (id, value) VALUES (?, ?)", (next_id, text))
            strings[text], next_id = next_id, next_id + 1
        return strings[text]

    gtid_a, = cur.execute("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1").fetchone()
    pid_a, high = (gtid_a >> 24) & 0xFFFFFF, gtid_a & ~((1 << 48) - 1)
    gpid_a, gpid_b = high | (pid_a << 24), high | ((pid_a + 1000) << 24)
    threads = {gpid_a: [gpid_a | pid_a, gpid_a | (pid_a + 3)],
               gpid_b: [gpid_b | (pid_a + 1000), gpid_b | (pid_a + 1005)]}
    t0 = cur.execute("SELECT max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] + 10_000_000
    corr = 10**6
    kernels, copies, sets, calls, overhead, nvtx = [], [], [], [], [], []
    kname = sid("synthetic_kernel(float*)")
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    for gpid, dev in [(gpid_a, 1), (gpid_b, 0), (gpid_b, 1)]:  # the capture's process already uses device 0
        t = first = t0 + rng.randint(0, 5_000_000)
        for _ in range(rng.randint(120, 200)):
            t += rng.choice([rng.randint(100, 50_000), rng.randint(1_000_000, 40_000_000),
                             rng.randint(400_000_000, 900_000_000) if rng.random() < 0.03 else 2_000])
            ends = []
            for _ in range(rng.randint(1, 3)):  # overlapping launches on other streams
                corr += 1
                s = t + rng.randint(0, 3000)
                ends.append(s + rng.randint(500, 80_000))
                kernels.append((s, ends[-1], dev, rng.choice([1, 2]), None, rng.choice([7, 13]), corr, gpid, kname,
                                kname, kname, 0, 0, 32, 1, 1, 1, 128, 1, 1, 0, 0, 0, 0, corr, 0, None, 0))
                calls.append((s - 5000, s - 1000, 1, threads[gpid][0], corr, sid("cudaLaunchKernel_v7000"), 0, None))
            t = max(ends)
        spans[(gpid, dev)] = (first, t)
    durations = [1500, 2500, 2500, 40_000, 40_000, 1_000_000, 3_000_000]
    for _ in range(160):
        gpid, dev = rng.choice(list(spans))
        call = rng.randint(*spans[(gpid, dev)])
        s = call + rng.choice([200, 5_000, 2_000_000])  # queued: copies start out of call order
        corr += 1
        kind = rng.choice([1, 1, 2, 8, 9, 10])
        src_kind, dst_kind = {1: (rng.choice([0, 1]), 2), 2: (2, rng.choice([0, 1, 4])), 8: (2, 2), 9: (0, 1),
                              10: (2, 2)}[kind]
        src_dev, dst_dev = {8: (dev, dev), 10: (dev, 1 - dev)}.get(kind, (None, None))
        copies.append((s, s + rng.choice(durations), dev, 1, rng.choice([None, 0, 5]), 7, corr, gpid,
                       rng.choice([1, 64_000, 64_001, 1 << 20]), kind, None, src_kind, dst_kind, src_dev, 1, dst_dev, 1,
                       None, None, None, 1))
        calls.append((call, call + 100, 1, rng.choice(threads[gpid]), corr, sid(rng.choice(_COPY_APIS)), 0, None))
    for gpid, other in [(gpid_a, gpid_b), (gpid_b, gpid_a)]:  # a correlation id both processes use (async calls)
        call = rng.randint(*spans[(gpid, 1)])
        corr += 1
        copies.append((call + 700, call + 40_700, 1, 1, None, 7, corr, gpid, 1 << 20, 1, None, 0, 2, None, 1, None, 1,
                       None, None, None, 1))
        calls.append((call, call + 100, 1, threads[gpid][0], corr, sid("cudaMemcpyAsync_v3020"), 0, None))
        calls.append((call + 10, call + 90, 1, threads[other][0], corr, sid("CUDAMEMCPYASYNC_v1"), 0, None))
    for _ in range(200):
        gpid, dev = rng.choice(list(spans))
        call = rng.randint(*spans[(gpid, dev)])
        s = call + rng.choice([200, 5_000, 2_000_000, 20_000_000])
        corr += 1
        sets.append((s, s + rng.choice(durations), dev, 1, rng.choice([None, 0, 3]), 7, corr, gpid, 0,
                     rng.choice([4096, 1 << 20]), None, rng.choice([None, 1, 2, 4])))
        calls.append((call, call + 50, 1, rng.choice(threads[gpid]), corr, sid(rng.choice(_SET_APIS)), 0, None))
    for _ in range(140):
        gpid, dev = rng.choice(list(spans))
        s = rng.randint(*spans[(gpid, dev)])
        calls.append((s, s + rng.choice(durations), 1, rng.choice(threads[gpid]), 0, sid(rng.choice(_SYNC_APIS)), 0,
                      None))
    for (gpid, _), (lo, hi) in spans.items():  # overheads inside (and one after) each span
        for _ in range(10):
            s = rng.randint(lo, hi)
            overhead.append((s, s + rng.randint(1_000_000, 300_000_000), threads[gpid][0],
                             sid(rng.choice(_OVERHEADS)), 0))
        overhead.append((hi + 1000, hi + 5_000_000, threads[gpid][0], sid(_OVERHEADS[0]), 0))
    lo, hi = spans[(gpid_b, 1)]
    nvtx.append((lo, lo, 75, None, None, None, "mydomain", threads[gpid_b][0], None, None, 9))
    nvtx.append((lo + (hi - lo) // 4, lo + (hi - lo) // 2, 60, 1, None, None, None, threads[gpid_b][0], None,
                 sid("window"), 9))
    lo, hi = spans[(gpid_a, 1)]
    nvtx.append((lo + (hi - lo) // 3, lo + 2 * (hi - lo) // 3, 59, None, None, None, "phase", threads[gpid_a][1],
                 None, None, 0))
    nvtx.append((lo, hi, 59, None, None, None, "whole", threads[gpid_a][0], None, None, 0))
    for rows in (kernels, copies, sets, calls):  # exports list events in time order
        rows.sort(key=lambda r: r[0])
    kcols = [r[1] for r in cur.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    cur.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL ({', '.join(kcols)}) VALUES ({', '.join('?' * 28)})",
                    kernels)
    cur.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, "
                    "nameId, returnValue, callchainId) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", calls)
    cur.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, greenContextId, "
                    "streamId, correlationId, globalPid, bytes, copyKind, deprecatedSrcId, srcKind, dstKind, "
                    "srcDeviceId, srcContextId, dstDeviceId, dstContextId, migrationCause, graphNodeId, "
                    "virtualAddress, copyCount) VALUES (" + ", ".join("?" * 21) + ")", copies)
    cur.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, greenContextId, "
                    "streamId, correlationId, globalPid, value, bytes, graphNodeId, memKind) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", sets)
    cur.executemany("INSERT INTO PROFILER_OVERHEAD (start, end, globalTid, nameId, returnValue) VALUES (?, ?, ?, ?, ?)",
                    overhead)
    cur.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, category, color, text, globalTid, "
                    "endGlobalTid, textId, domainId) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", nvtx)
    con.commit()
    con.close()
    return dst
