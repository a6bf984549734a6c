"""The CUDA reports of ``nsys stats`` (API, kernel, memory-operation and GPU summaries, the GPU
trace) and each kernel's most frequent launch configuration, as SQL over the capture's engine
(:mod:`nsighttk.engine`).

DuckDB groups, counts and sorts (out of core where the rows do not fit its memory limit); Python
turns each group's exact aggregates into nsys' numbers (:func:`_stat_row`), a few rows a report.
See :mod:`nsighttk.analysis.nsys.reports` for the semantics shared by all reports.

Names sort by their bytes, as SQLite's BINARY collation does (DuckDB's default collation).  A
kernel's name is looked up from its string id once per distinct id (:func:`_kernel_names`), and
the kernels are grouped by the rank of that name: ids sharing a name merge, and no grouping hashes
ten million long names.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from nsighttk import engine
from nsighttk.analysis.nsys.catalog import COLUMNS, NO_DATA, TITLES
from nsighttk.analysis.nsys.result import ReportResult, exact_round, sql_round_value
from nsighttk.encoding import INT_NULL

if TYPE_CHECKING:
    import pandas as pd

    from nsighttk.engine import Engine
    from nsighttk.profile import Profile

#: From this size on, a float64 average or median could fall outside [min, max]: they are exact.
EXACT_FLOAT = 2**53


def _aggregates(v: str) -> str:
    """SQL aggregates of one group's values ``v`` (a BIGINT expression) from which
    :func:`_stat_row` computes count, total, average, median, minimum, maximum and sample standard
    deviation, all exact: the total as HUGEINT; both middle values (the discrete quantile a hair
    above one half is the upper one: DuckDB takes row ``n - floor(n - q n) - 1`` of the sorted
    values, ``n / 2`` for an even count); the sum of squares in three parts that cannot overflow
    (``v = h 2^32 + l``: ``h^2``, ``h l`` and ``l^2`` summed apart)."""
    h, low = f"({v} >> 32)", f"({v} & 4294967295)"
    return (f"count(*) AS n, sum({v}) AS total, min({v}) AS lo, max({v}) AS hi, "
            f"quantile_disc({v}, [0.5, 0.5000000001]) AS mid, sum({h} * {h}) AS sq_hh, "
            f"sum({h} * {low}) AS sq_hl, sum({low}::UBIGINT * {low}::UBIGINT) AS sq_ll")


#: The columns :func:`_aggregates` names, in order.
_AGGREGATES = 8


class _Stats:
    """One group's statistics as nsys prints them (averages, medians and deviations rounded as
    SQLite's ``round(x, 1)``; exact text where values reach 2^53)."""

    def __init__(self, agg: tuple[Any, ...], exact: bool) -> None:
        n, total, lo, hi, mid, hh, hl, ll = agg
        self.n, self.total, self.min, self.max = int(n), int(total), int(lo), int(hi)
        m_lo, m_hi = int(mid[0]), int(mid[1])
        if exact:
            self.avg: float | Fraction = Fraction(self.total, self.n)
            self.med: float | Fraction = Fraction(m_lo + m_hi, 2)
        else:  # (as numpy divides an int64 total: both as floats; a larger one exactly)
            self.avg = float(self.total) / float(self.n) if -(2**63) <= self.total < 2**63 else self.total / self.n
            self.med = (float(m_lo) + float(m_hi)) / 2
        squares = (int(hh) << 64) + (int(hl) << 33) + int(ll)
        spread = self.n * squares - self.total * self.total  # n^2 times the population variance, exact
        self.stddev = math.sqrt(spread / (self.n * (self.n - 1))) if self.n > 1 else 0.0

    def rounded(self) -> tuple[float | str, float | str, float]:
        """Average, median and standard deviation as nsys' ``round(x, 1)`` prints them."""
        return _round(self.avg), _round(self.med), sql_round_value(self.stddev)


def _round(x: float | Fraction) -> float | str:
    return exact_round(x, 1) if isinstance(x, Fraction) else sql_round_value(x)


def _groups(eng: Engine, query: str, keys: int) -> list[tuple[tuple[Any, ...], _Stats]]:
    """The rows of ``query`` (``keys`` key columns, then :func:`_aggregates`' columns), each as
    (keys, statistics); averages and medians exact where any value of the report reaches 2^53."""
    rows = eng.rows(query)
    exact = any(max(abs(int(r[keys + 2])), abs(int(r[keys + 3]))) >= EXACT_FLOAT for r in rows)
    return [(r[:keys], _Stats(r[keys:keys + _AGGREGATES], exact)) for r in rows]


def _time_rows(groups: list[tuple[tuple[Any, ...], _Stats]]) -> list[list[Any]]:
    """Per group: Time (%), Total, count, Avg, Med, Min, Max, StdDev (the share of the exact total
    of all groups, as nsys computes it in floats)."""
    grand = sum(g.total for _, g in groups)
    out = []
    for _, g in groups:
        avg, med, std = g.rounded()
        pct = sql_round_value(float(g.total) * 100.0 / float(grand)) if grand else math.nan
        out.append([pct, g.total, g.n, avg, med, g.min, g.max, std])
    return out


def _result(name: str, rows: list[tuple[Any, ...]], columns: list[str] | None = None) -> ReportResult:
    return ReportResult(name, TITLES[name], columns=columns or COLUMNS[name], rows=rows)


def _none(name: str, why: str, columns: list[str] | None = None) -> ReportResult:
    """Report ``name`` without rows (nsys prints none), and why (a :data:`NO_DATA` key or the reason)."""
    return ReportResult(name, TITLES[name], notes=[NO_DATA.get(why, why)], columns=columns or COLUMNS[name],
                        rows=[])


# ------------------------------------------------------------------------------------ names


def _eager(p: Profile, table: str) -> bool:
    """Whether ``table``'s names are read from its ``name`` column (a table given whole, as Kineto's
    loader and tests give them, may have no string ids) rather than looked up by id."""
    return p.loaded(table) or p.source is None


def _kernel_names(p: Profile) -> tuple[Engine, str]:
    """The engine with table ``kernel_names (name_id, name, code)``: each kernel name id's name
    ('' when it has none) and the rank of that name in byte order; and the join of a kernel row
    ``k`` to its name row ``n``."""
    eng = engine.of(p)
    eager = _eager(p, "kernels")
    eng.need({"kernels": ["name" if eager else "name_id"]})
    if eager:
        join = "n.name = coalesce(k.name, '')"
        source = "SELECT DISTINCT NULL::BIGINT AS name_id, coalesce(name, '') AS name FROM kernels"
    else:
        join = f"n.name_id = coalesce(k.name_id, {INT_NULL})"
        source = "SELECT * FROM kernel_ids"
    if not eng.has_table("kernel_names"):
        if not eager:
            import numpy as np

            ids = np.array([i for (i,) in eng.rows(f"SELECT DISTINCT coalesce(name_id, {INT_NULL}) FROM kernels")],
                           dtype=np.int64)
            names = p.names("kernels", ids).tolist() if len(ids) else []
            kernel_ids = {"name_id": ids, "name": np.array(["" if n is None else str(n) for n in names], dtype=object)}
            eng.con.execute("CREATE TABLE kernel_ids AS SELECT * FROM kernel_ids")
            del kernel_ids
        eng.con.execute(f"CREATE TABLE kernel_names AS SELECT name_id, name, "
                        f"dense_rank() OVER (ORDER BY name) - 1 AS code FROM ({source})")
    return eng, join


# ----------------------------------------------------------------------------------- kernels


def cuda_gpu_kern_sum(p: Profile) -> ReportResult:
    """CUDA GPU Kernel Summary: kernels grouped by name, longest total first (then fewest
    instances, then name)."""
    eng, join = _kernel_names(p)
    eng.need({"kernels": ["duration_ns"]})
    groups = _groups(eng, f"""
        WITH g AS (SELECT n.code, {_aggregates('k.duration_ns')}
                   FROM kernels k JOIN kernel_names n ON {join} GROUP BY n.code)
        SELECT {_NAME_OF_CODE}, g.* EXCLUDE (code) FROM g ORDER BY total DESC, n, code""", 1)
    if not groups:
        return _none("cuda_gpu_kern_sum", "kernels")
    rows = [(*t, key[0]) for t, (key, _) in zip(_time_rows(groups), groups, strict=True)]
    return _result("cuda_gpu_kern_sum", rows)


def _xyz(x: int, y: int, z: int) -> str:
    return f"{x:4d} {y:4d} {z:4d}"


#: The name of a group of kernels (its ``code``), in a query's select list.
_NAME_OF_CODE = "(SELECT any_value(name) FROM kernel_names WHERE kernel_names.code = g.code)"

_DIMS = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"]


def cuda_gpu_kern_gb_sum(p: Profile) -> ReportResult:
    """CUDA GPU Kernel/Grid/Block Summary: kernels grouped by name, grid and block (an unknown
    dimension counts as 0), longest total first (then fewest instances, name, grid, block)."""
    eng, join = _kernel_names(p)
    eng.need({"kernels": ["duration_ns", *_DIMS]})
    dims = ", ".join(f"coalesce(k.{d}, 0) AS {d}" for d in _DIMS)
    groups = _groups(eng, f"""
        WITH g AS (SELECT code, {', '.join(_DIMS)}, {_aggregates('duration_ns')}
                   FROM (SELECT n.code, k.duration_ns, {dims} FROM kernels k JOIN kernel_names n ON {join})
                   GROUP BY code, {', '.join(_DIMS)})
        SELECT {_NAME_OF_CODE}, g.* EXCLUDE (code) FROM g ORDER BY total DESC, n, code, {', '.join(_DIMS)}""", 7)
    if not groups:
        return _none("cuda_gpu_kern_gb_sum", "kernels")
    rows = [(*t, _xyz(*key[1:4]), _xyz(*key[4:7]), key[0])
            for t, (key, _) in zip(_time_rows(groups), groups, strict=True)]
    return _result("cuda_gpu_kern_gb_sum", rows)


# -------------------------------------------------------------------------------- memory ops

#: Memcpys of a known kind and memsets, one row each: name, duration_ns, bytes (0 where unknown).
_MEMORY_OPS = """
    SELECT '[CUDA memcpy ' || label || ']' AS name, duration_ns, coalesce(bytes, 0) AS bytes
    FROM memcpy WHERE label IS NOT NULL
    UNION ALL SELECT '[CUDA memset]', duration_ns, coalesce(bytes, 0) FROM memset"""


def _memory_groups(p: Profile, value: str) -> list[tuple[tuple[Any, ...], _Stats]]:
    """Memory operations' ``value`` (duration_ns or bytes) grouped by operation name, largest
    total first (then name)."""
    eng = engine.of(p).need({"memcpy": ["label", "duration_ns", "bytes"], "memset": ["duration_ns", "bytes"]})
    return _groups(eng, f"SELECT name, {_aggregates(value)} FROM ({_MEMORY_OPS}) GROUP BY name "
                        "ORDER BY total DESC, name", 1)


def cuda_gpu_mem_time_sum(p: Profile) -> ReportResult:
    """CUDA GPU MemOps Summary (by Time)."""
    groups = _memory_groups(p, "duration_ns")
    if not groups:
        return _none("cuda_gpu_mem_time_sum", "memory")
    rows = [(*t, key[0]) for t, (key, _) in zip(_time_rows(groups), groups, strict=True)]
    return _result("cuda_gpu_mem_time_sum", rows)


def cuda_gpu_mem_size_sum(p: Profile) -> ReportResult:
    """CUDA GPU MemOps Summary (by Size); sizes in bytes here, MB when rendered (not rounded)."""
    groups = _memory_groups(p, "bytes")
    if not groups:
        return _none("cuda_gpu_mem_size_sum", "memory")
    rows = [(g.total, g.n, float(g.avg), float(g.med), g.min, g.max, g.stddev, key[0]) for key, g in groups]
    return _result("cuda_gpu_mem_size_sum", rows)


# ------------------------------------------------------------------------------------ CUDA API


def api_display_name(name: str | None) -> str | None:
    """nsys drops a ``_vNNNN`` version suffix (exactly 6 characters) from API names."""
    if name is None or not isinstance(name, str):
        return name
    return name[:-6] if name[-6:-4] == "_v" else name


def cuda_api_sum(p: Profile) -> ReportResult:
    """CUDA API Summary: runtime and driver calls grouped by function (by name id; by name where
    the table has no ids), longest total first (then the function's id or name)."""
    eager = _eager(p, "api")
    key = "coalesce(name, '')" if eager else "name_id"
    eng = engine.of(p).need({"api": ["name" if eager else "name_id", "duration_ns"]})
    groups = _groups(eng, f"SELECT {key} AS key, {_aggregates('duration_ns')} FROM api GROUP BY key "
                          "ORDER BY total DESC, key NULLS FIRST", 1)
    if not groups:
        return _none("cuda_api_sum", "api")
    if eager:
        names = [key[0] for key, _ in groups]
    else:
        import numpy as np

        names = list(p.names("api", np.array([INT_NULL if k[0] is None else k[0] for k, _ in groups], dtype=np.int64)))
    rows = [(*t, api_display_name(n)) for t, n in zip(_time_rows(groups), names, strict=True)]
    return _result("cuda_api_sum", rows)


# --------------------------------------------------------------------------------- GPU summary


def cuda_gpu_sum(p: Profile) -> ReportResult:
    """CUDA GPU Summary (Kernels/MemOps): kernels and memory operations grouped by name (a name
    that some kernel has is a kernel's), longest total first (then name)."""
    eng, join = _kernel_names(p)
    eng.need({"kernels": ["duration_ns"], "memcpy": ["label", "duration_ns", "bytes"],
              "memset": ["duration_ns", "bytes"]})
    import numpy as np

    kernel_codes = eng.rows("SELECT DISTINCT code, name FROM kernel_names")
    memory_names = {n for (n,) in eng.rows(f"SELECT DISTINCT name FROM ({_MEMORY_OPS})")}
    names = sorted({n for _, n in kernel_codes} | memory_names)
    code_of = {n: i for i, n in enumerate(names)}  # (by code point: the order of their UTF-8 bytes)
    gpu_names = {"name": np.array(names, dtype=object), "code": np.arange(len(names), dtype=np.int64)}
    kernel_gpu = {"code": np.array([c for c, _ in kernel_codes], dtype=np.int64),
                  "gpu_code": np.array([code_of[n] for _, n in kernel_codes], dtype=np.int64)}
    eng.con.execute("CREATE OR REPLACE TABLE gpu_names AS SELECT * FROM gpu_names")
    eng.con.execute("CREATE OR REPLACE TABLE kernel_gpu AS SELECT * FROM kernel_gpu")
    del gpu_names, kernel_gpu
    groups = _groups(eng, f"""
        WITH ops AS (SELECT g.gpu_code AS code, k.duration_ns, 0 AS memory
                     FROM kernels k JOIN kernel_names n ON {join} JOIN kernel_gpu g ON g.code = n.code
                     UNION ALL SELECT g.code, m.duration_ns, 1 FROM ({_MEMORY_OPS}) m JOIN gpu_names g USING (name))
        SELECT code, min(memory), {_aggregates('duration_ns')} FROM ops GROUP BY code ORDER BY total DESC, code""", 2)
    if not groups:
        return _none("cuda_gpu_sum", "gpu")
    rows = [(*t, "MEMORY_OPER" if key[1] else "CUDA_KERNEL", names[key[0]])
            for t, (key, _) in zip(_time_rows(groups), groups, strict=True)]
    return _result("cuda_gpu_sum", rows)


# ------------------------------------------------------------------------------------- GPU trace

TRACE_COLUMNS = ["Start (ns)", "Duration (ns)", "CorrId", "GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", "Reg/Trd",
                 "StcSMem (B)", "DymSMem (B)", "Bytes (B)", "Throughput (B/s)", "SrcMemKd", "DstMemKd", "Device",
                 "Ctx", "GreenCtx", "Strm", "Name"]

_TRACE_COMMON = ["start_ns", "duration_ns", "correlation_id", "device_id", "context_id", "green_context_id",
                 "stream_id"]
_LAUNCH = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread",
           "static_smem_bytes", "dynamic_smem_bytes"]

#: Rows of the trace produced at a time.
TRACE_CHUNK_ROWS = 65_536


def _trace_query(join: str) -> str:
    """Every kernel, memcpy and memset in start order (ties: kernels, memcpys, memsets, each in the
    export's order) with nsys' trace columns; a kernel's name as its name code (``kernel``), named
    a chunk at a time."""
    common = "start_ns, duration_ns, correlation_id, device_id, context_id, green_context_id, stream_id"
    launch = ", ".join(_LAUNCH)
    nulls = ", ".join(f"NULL::BIGINT AS {c}" for c in _LAUNCH)
    throughput = "CASE WHEN duration_ns > 0 THEN TRY_CAST(bytes::HUGEINT * (1000000000 // duration_ns) AS BIGINT) END"
    return f"""
        WITH ops AS (
            SELECT 0 AS part, k.row_index, {', '.join('k.' + c for c in [*_TRACE_COMMON, *_LAUNCH])},
                   NULL::BIGINT AS bytes, NULL::BIGINT AS throughput, NULL::VARCHAR AS src, NULL::VARCHAR AS dst,
                   n.code AS kernel, NULL::VARCHAR AS name
            FROM kernels k LEFT JOIN kernel_names n ON {join}
            UNION ALL
            SELECT 1, row_index, {common}, {nulls}, bytes, {throughput}, src_kind, dst_kind, NULL,
                   '[CUDA memcpy ' || coalesce(label, '') || ']'
            FROM memcpy
            UNION ALL
            SELECT 2, row_index, {common}, {nulls}, bytes, {throughput}, mem_kind, NULL, NULL, '[CUDA memset]'
            FROM memset)
        SELECT start_ns, duration_ns, correlation_id, {launch}, bytes, throughput, src, dst, device_id,
               NULLIF(context_id, 0), NULLIF(green_context_id, 0), NULLIF(stream_id, 0), kernel, name
        FROM ops ORDER BY start_ns, part, row_index"""


def cuda_gpu_trace(p: Profile, chunk_rows: int = TRACE_CHUNK_ROWS) -> ReportResult:
    """CUDA GPU Trace: every kernel, memcpy and memset in start order, produced a chunk of rows at
    a time (DuckDB sorts them, out of core where they do not fit its memory)."""
    eng, join = _kernel_names(p)
    eng.need({"kernels": [*_TRACE_COMMON, *_LAUNCH],
              "memcpy": [*_TRACE_COMMON, "bytes", "label", "src_kind", "dst_kind"],
              "memset": [*_TRACE_COMMON, "bytes", "mem_kind"], "gpus": ["device_id", "name"]})
    if not eng.rows("SELECT (SELECT count(*) FROM kernels) + (SELECT count(*) FROM memcpy) "
                    "+ (SELECT count(*) FROM memset)")[0][0]:
        return _none("cuda_gpu_trace", "no GPU trace data", TRACE_COLUMNS)
    return ReportResult("cuda_gpu_trace", TITLES["cuda_gpu_trace"],
                        _chunks=lambda: _trace_chunks(eng, _trace_query(join), chunk_rows))


def _trace_chunks(eng: Engine, query: str, chunk_rows: int) -> Iterator[pd.DataFrame]:
    """The trace's rows as DataFrames of ``chunk_rows`` rows (missing integers as pandas' NA):
    names and device labels looked up a chunk at a time."""
    import numpy as np
    import pandas as pd

    from nsighttk.profile import obj

    names = np.array([n for (n,) in eng.rows("SELECT any_value(name) FROM kernel_names GROUP BY code ORDER BY code")]
                     + [None], dtype=object)
    gpus = dict(eng.rows("SELECT device_id, arg_max(name, row_index) FROM gpus GROUP BY device_id"))
    devices: dict[Any, str] = {}
    import pyarrow as pa

    ints = {pa.int64(): pd.Int64Dtype()}
    cols = TRACE_COLUMNS
    held: list[pd.DataFrame] = []
    rows = 0
    for batch in _interruptible(eng.sql(query).to_arrow_reader(min(chunk_rows, 1 << 16))):  # (streamed)
        df = batch.to_pandas(types_mapper=ints.get)
        kernel = df.pop("kernel")
        label = df.pop("name").astype(object)
        code = kernel.to_numpy(dtype="float64", na_value=np.nan)
        has = ~np.isnan(code)
        name = label.to_numpy(dtype=object, copy=True)
        name[has] = names[code[has].astype(np.int64)]
        dev = df.pop("device_id")
        for d in dev.unique():
            if d not in devices:
                devices[d] = " ()" if pd.isna(d) else f"{gpus.get(int(d), '') or ''} ({int(d)})"
        out = {}
        for c, col in zip(cols[:16], df.columns[:16], strict=True):
            s = df[col]
            out[c] = s.astype(object) if c in ("SrcMemKd", "DstMemKd") else \
                (s.astype("int64") if c in ("Start (ns)", "Duration (ns)") else s.astype("Int64"))
        out["Device"] = obj(dev.map(devices).to_numpy(dtype=object))
        for c, col in zip(cols[17:20], df.columns[16:19], strict=True):
            out[c] = df[col].astype("Int64")
        out["Name"] = obj(name)
        held.append(pd.DataFrame(out))
        rows += len(held[-1])
        if rows >= chunk_rows:
            frame = pd.concat(held, ignore_index=True) if len(held) > 1 else held[0]
            cut = len(frame) - len(frame) % chunk_rows
            for at in range(0, cut, chunk_rows):
                yield frame.iloc[at:at + chunk_rows].reset_index(drop=True)
            held = [frame.iloc[cut:].reset_index(drop=True)] if cut < len(frame) else []
            rows = len(frame) - cut
    if rows:
        yield pd.concat(held, ignore_index=True) if len(held) > 1 else held[0]


def _interruptible(batches: Iterator[Any]) -> Iterator[Any]:
    """``batches``, with DuckDB's answer to Ctrl-C while it computes one (its InterruptException)
    raised as Python's KeyboardInterrupt, as everywhere else."""
    import duckdb

    it = iter(batches)
    while True:
        try:
            batch = next(it)
        except StopIteration:
            return
        except duckdb.InterruptException as ex:
            raise KeyboardInterrupt from ex
        yield batch


# -------------------------------------------------------------------------- launch configurations

LAUNCH_CONFIG = ["block_x", "block_y", "block_z", "registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes"]


def launch_configs(p: Profile) -> pd.DataFrame:
    """Each kernel name's most frequent launch configuration: name, block_x/y/z,
    registers_per_thread, static_smem_bytes, dynamic_smem_bytes (one row per name; kernels with an
    unknown value left out; among equally frequent ones, the one launched first), for occupancy.
    Names in the order of their configuration's count (most first), then of its first launch."""
    import pandas as pd

    from nsighttk.profile import obj

    eng, join = _kernel_names(p)
    eng.need({"kernels": LAUNCH_CONFIG})
    cfg = ", ".join(LAUNCH_CONFIG)
    rows = eng.rows(f"""
        WITH c AS (SELECT n.code, {', '.join('k.' + c for c in LAUNCH_CONFIG)}, count(*) AS n,
                          min(k.row_index) AS first
                   FROM kernels k JOIN kernel_names n ON {join}
                   WHERE {' AND '.join(f'k.{c} IS NOT NULL' for c in LAUNCH_CONFIG)}
                   GROUP BY n.code, {', '.join('k.' + c for c in LAUNCH_CONFIG)}),
        best AS (SELECT * FROM c QUALIFY row_number() OVER (PARTITION BY code ORDER BY n DESC, first) = 1)
        SELECT (SELECT any_value(name) FROM kernel_names WHERE kernel_names.code = best.code), {cfg}
        FROM best ORDER BY n DESC, first""")
    cols: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) if rows else [() for _ in range(1 + len(LAUNCH_CONFIG))]
    return pd.DataFrame({"name": obj(list(cols[0])),
                         **{c: pd.array(list(v), dtype="int64") for c, v in zip(LAUNCH_CONFIG, cols[1:], strict=True)}})


# ------------------------------------------------------------------------------------- prefetch

_MEMORY = {"memcpy": ["label", "duration_ns", "bytes"], "memset": ["duration_ns", "bytes"]}

#: Columns each report reads (``name_id``: a kernel's or call's name; its text where the table has none).
NEEDS: dict[str, dict[str, list[str]]] = {
    "cuda_api_sum": {"api": ["name_id", "duration_ns"]},
    "cuda_gpu_kern_sum": {"kernels": ["name_id", "duration_ns"]},
    "cuda_gpu_kern_gb_sum": {"kernels": ["name_id", "duration_ns", *_DIMS]},
    "cuda_gpu_mem_time_sum": _MEMORY,
    "cuda_gpu_mem_size_sum": _MEMORY,
    "cuda_gpu_sum": {"kernels": ["name_id", "duration_ns"], **_MEMORY},
    "cuda_gpu_trace": {"kernels": ["name_id", *_TRACE_COMMON, *_LAUNCH],
                       "memcpy": [*_TRACE_COMMON, "bytes", "label", "src_kind", "dst_kind"],
                       "memset": [*_TRACE_COMMON, "bytes", "mem_kind"], "gpus": ["device_id", "name"]},
}


def prefetch(p: Profile, names: list[str]) -> None:
    """Load into the engine every column the reports ``names`` read, each table in one scan."""
    wants: dict[str, list[str]] = {}
    for n in names:
        for table, cols in NEEDS.get(n, {}).items():
            name = "name" if table in ("kernels", "api") and _eager(p, table) else "name_id"
            wants.setdefault(table, [])
            wants[table] += [name if c == "name_id" else c for c in cols if c not in wants[table]]
    if wants:
        engine.of(p).need(wants)
