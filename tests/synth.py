"""Synthetic nsys exports grown from a real capture, for parity tests and the stats benchmark.

Starts from a real export (schema, GPU, enums, strings, the original events) and appends
kernels, memcpys, memsets, CUDA runtime calls and NVTX ranges with the awkward cases real
programs produce: names with commas and quotes, ties in total time, ``_vNNNN`` API names,
peer-to-peer and host-to-host copies, nested push/pop ranges, crossing start/end ranges on
another thread, a named NVTX domain, a range that never ends, unified-memory migrations.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

KERNEL_NAMES = [
    "add(int, float *, float *)", "void gelu_tanh<float>(int, const float *, float *)",
    "square(int, float const*, float*)", 'kernel_with_"quotes"',
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute",
    "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>, "
    "std::array<char*, 2>>(int, T2, T3)",
    "triton_poi_fused_add_mul_0", "reduce_kernel, with a comma", "tiny", "void cub::DeviceReduceKernel<float>(float*)",
]
API_NAMES = ["cudaLaunchKernel", "cudaLaunchKernel_v7000", "cuLaunchKernel", "cudaMemcpyAsync_v3020", "cudaMemsetAsync",
             "cudaStreamSynchronize", "cudaEventRecord_v3020", "cudaGetLastError"]


@dataclass
class SynthSpec:
    kernels: int = 2000
    runtime: int = 3000  # total runtime calls added (>= kernels + memcpys + memsets)
    memcpys: int = 300
    memsets: int = 50
    iterations: int = 40  # outer NVTX push/pop ranges
    seed: int = 0


def make_export(base: Path, dst: Path, spec: SynthSpec) -> Path:
    """Copy ``base`` to ``dst`` and append synthetic activity described by ``spec``."""
    rng = random.Random(spec.seed)
    shutil.copy(base, dst)
    con = sqlite3.connect(dst)
    cur = con.cursor()
    max_sid = cur.execute("SELECT max(id) FROM StringIds").fetchone()[0] or 0
    max_corr = max(cur.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] or 0, 10**6)
    gtid, = cur.execute("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1").fetchone()
    gpid = gtid & ~0xFFFFFF
    tid_b = gpid | ((gtid & 0xFFFFFF) + 7)  # a second thread of the same process
    t0 = (cur.execute("SELECT max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] or 0) + 1_000_000

    strings = {}
    for s in KERNEL_NAMES + API_NAMES + ["iteration", "forward", "backward", "optimizer", "mydomain", "io", "prefetch",
                                        "never closed"]:
        max_sid += 1
        strings[s] = max_sid
    cur.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", [(i, s) for s, i in strings.items()])

    kern_cols = [r[1] for r in cur.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    kernels, runtime, memcpys, memsets, nvtx = [], [], [], [], []
    t = t0
    corr = max_corr
    per_iter = max(1, spec.kernels // spec.iterations)
    k_done = m_done = s_done = 0
    durations = [rng.choice([1000, 1000, 2000]) if rng.random() < 0.2 else int(rng.lognormvariate(8, 1.2)) + 1
                 for _ in range(spec.kernels)]
    for it in range(spec.iterations):
        it_start = t
        phases = []
        for phase in ("forward", "backward", "optimizer"):
            ph_start = t
            n_k = per_iter // 3 if it < spec.iterations - 1 else (spec.kernels - k_done) // max(1, 3 - len(phases))
            for _ in range(max(0, min(n_k, spec.kernels - k_done))):
                corr += 1
                name = strings[rng.choice(KERNEL_NAMES)]
                api = strings[rng.choice(API_NAMES[:3])]
                launch_s, launch_e = t + 100, t + 100 + rng.randint(500, 5000)
                ks = launch_e + rng.randint(1000, 20000)
                ke = ks + durations[k_done]
                grid = rng.choice([(1, 1, 1), (132, 1, 1), (4096, 1, 1), (8, 8, 4)])
                block = rng.choice([(256, 1, 1), (1024, 1, 1), (64, 1, 1)])
                row = {"start": ks, "end": ke, "deviceId": 0, "contextId": 1, "greenContextId": None,
                       "streamId": rng.choice([7, 13, 17]), "correlationId": corr, "globalPid": gpid,
                       "demangledName": name, "shortName": name, "mangledName": name, "launchType": 0,
                       "cacheConfig": 0, "registersPerThread": rng.choice([16, 32, 62, 128]),
                       "gridX": grid[0], "gridY": grid[1], "gridZ": grid[2], "blockX": block[0], "blockY": block[1],
                       "blockZ": block[2], "staticSharedMemory": rng.choice([0, 4096]),
                       "dynamicSharedMemory": rng.choice([0, 32768]), "localMemoryPerThread": 0,
                       "localMemoryTotal": 0, "gridId": corr, "sharedMemoryExecuted": 0, "graphNodeId": None,
                       "sharedMemoryLimitConfig": 0}
                kernels.append(tuple(row.get(c) for c in kern_cols))
                runtime.append((launch_s, launch_e, 1, gtid, corr, api, 0, None))
                t = launch_e + rng.randint(100, 3000)
                k_done += 1
                if m_done < spec.memcpys and rng.random() < spec.memcpys / max(1, spec.kernels):
                    corr += 1
                    kind = rng.choice([1, 2, 8, 9, 10, 11])
                    size = rng.choice([1, 4096, 1 << 20, 3 << 22, 12345])
                    cs = t + 200
                    memcpys.append((cs, cs + max(1, size // 50) + rng.randint(500, 3000), 0, 1, None, 13, corr, gpid,
                                    size, kind, None, rng.choice([0, 1, 2]), rng.choice([0, 2]), 0, 1, 0, 1, 0, None,
                                    None, 1))
                    runtime.append((t, t + 400, 1, gtid, corr, strings["cudaMemcpyAsync_v3020"], 0, None))
                    t += 500
                    m_done += 1
                if s_done < spec.memsets and rng.random() < spec.memsets / max(1, spec.kernels):
                    corr += 1
                    ss = t + 100
                    memsets.append((ss, ss + rng.randint(900, 4000), 0, 1, None, 17, corr, gpid, 0, 1 << 20, None, 2))
                    runtime.append((t, t + 300, 1, gtid, corr, strings["cudaMemsetAsync"], 0, None))
                    t += 400
                    s_done += 1
            nvtx.append((ph_start, t, 59, None, None, strings[phase], 0, gtid, None))
            phases.append(phase)
            t += 2_000
        # Margins of microseconds: nsys 2022.4 compares nesting in float32-scaled coordinates only.
        nvtx.append((it_start - 2_000, t, 59, None, f"iteration {it % 7}", None, 0, gtid, None))
        t += 1000
    # Runtime calls that launch nothing, on both threads, some inside ranges on thread B.
    extra = spec.runtime - len(runtime)
    span = t - t0
    for _ in range(max(0, extra)):
        s = t0 + rng.randint(0, span)
        runtime.append((s, s + rng.randint(50, 50_000), 1, rng.choice([gtid, tid_b]), 0,
                        strings[rng.choice(API_NAMES[4:])], 0, None))
    # Thread B: crossing start/end ranges, a named domain, one range that never ends.
    nvtx.append((t0, t0, 75, None, None, strings["mydomain"], 1, tid_b, None))  # domain create
    for i in range(8):
        s = t0 + i * span // 10
        nvtx.append((s, s + span // 6, 60, None, "io" if i % 2 else None, None if i % 2 else strings["prefetch"],
                     1 if i % 3 == 0 else 0, tid_b, None))
    nvtx.append((t0 + span // 2, None, 59, None, None, strings["never closed"], 0, tid_b, None))

    cur.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL ({', '.join(kern_cols)}) VALUES "
                    f"({', '.join('?' * len(kern_cols))})", kernels)
    cur.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, "
                    "nameId, returnValue, callchainId) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", runtime)
    cur.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, greenContextId, "
                    "streamId, correlationId, globalPid, bytes, copyKind, deprecatedSrcId, srcKind, dstKind, "
                    "srcDeviceId, srcContextId, dstDeviceId, dstContextId, migrationCause, graphNodeId, "
                    "virtualAddress, copyCount) "
                    "VALUES (" + ", ".join("?" * 21) + ")", memcpys)
    cur.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, greenContextId, "
                    "streamId, correlationId, globalPid, value, bytes, graphNodeId, memKind) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", memsets)
    cur.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, rangeId, text, textId, domainId, globalTid, "
                    "endGlobalTid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", nvtx)
    con.commit()
    con.close()
    return dst


#: Tables whose rows :func:`replay_export` repeats, with their id columns shifted per copy.
_REPLAYED = {"CUPTI_ACTIVITY_KIND_KERNEL": ("correlationId",), "CUPTI_ACTIVITY_KIND_RUNTIME": ("correlationId",),
             "CUPTI_ACTIVITY_KIND_MEMCPY": ("correlationId",), "CUPTI_ACTIVITY_KIND_MEMSET": ("correlationId",),
             "NVTX_EVENTS": ()}


def replay_export(base: Path, dst: Path, copies: int) -> Path:
    """Copy ``base`` to ``dst`` and replay its activity ``copies`` times in all (kernels, runtime
    calls, memcpys, memsets, NVTX events), each copy later in time than the last and with fresh
    correlation ids, so the export keeps the base's mix and nesting at ``copies`` times its size.
    Done inside SQLite (INSERT ... SELECT): a 10-million-kernel export takes about a minute."""
    shutil.copy(base, dst)
    con = sqlite3.connect(dst)
    cur = con.cursor()
    cur.execute("PRAGMA journal_mode = OFF")
    cur.execute("PRAGMA synchronous = OFF")
    tables = [t for t in _REPLAYED
              if cur.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone()]
    lo = min(cur.execute(f'SELECT min(start) FROM "{t}"').fetchone()[0] or 0 for t in tables)
    hi = max(cur.execute(f'SELECT max(max(start), coalesce(max("end"), 0)) FROM "{t}"').fetchone()[0] or 0
             for t in tables)
    span = hi - lo + 1_000_000
    corr_span = max(cur.execute(f'SELECT coalesce(max(correlationId), 0) FROM "{t}"').fetchone()[0]
                    for t in tables if t != "NVTX_EVENTS") + 1
    cur.execute(f"CREATE TEMP TABLE copies AS WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r "
                f"WHERE i < {copies - 1}) SELECT i FROM r")
    for t in tables:
        cols = [r[1] for r in cur.execute(f'PRAGMA table_info("{t}")')]
        shifted = {"start": f"start + c.i * {span}", "end": f'"end" + c.i * {span}',
                   **{k: f'"{k}" + c.i * {corr_span}' for k in _REPLAYED[t]}}
        cur.execute(f'CREATE TEMP TABLE tpl AS SELECT * FROM "{t}"')
        select = ", ".join(shifted.get(c, f'tpl."{c}"') for c in cols)
        cur.execute(f'INSERT INTO "{t}" ({", ".join(chr(34) + c + chr(34) for c in cols)}) '
                    f"SELECT {select} FROM copies AS c, tpl ORDER BY c.i, tpl.rowid")
        cur.execute("DROP TABLE tpl")
        con.commit()
    con.close()
    return dst
