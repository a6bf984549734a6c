"""The analytical engine: a capture's Profile tables as DuckDB relations.

Every analysis that is written as a query reads a capture through one :class:`Engine` (one DuckDB
connection per capture, made on first use and kept with the profile).  An analysis declares the
columns it reads (:meth:`Engine.need`); the engine copies them from the Profile into DuckDB a chunk
at a time, once, and the analysis then runs SQL over views named as the Profile's tables
(``kernels``, ``memcpy``, ``memset``, ``api``, ``nvtx``, ``ops``, ``metrics``, ``rules``, ``gpus``)
with the Profile's column names and units (:data:`nsighttk.profile.SCHEMAS`).  Every view also has
``row_index``: the row's position in the Profile's table, for orders that follow the capture
("first seen", ties kept as the export has them).

DuckDB decides memory and threads: its ``memory_limit`` is the memory budget
(``NSIGHTTK_MEMORY_MB``, default :data:`DEFAULT_MEMORY_MB`), its ``temp_directory`` a folder of the
process's scratch folder (:mod:`nsighttk.scratch`), where it writes what does not fit.  No analysis
knows whether its input fits in memory.

Types: integer columns are ``BIGINT`` (``NULL`` where the Profile has a missing value), text
``VARCHAR``, reals ``DOUBLE``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from nsighttk import scratch, settings
from nsighttk.encoding import INT_NULL, Coded, Sum, decoded, widen
from nsighttk.profile import SCHEMAS, check_columns

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from nsighttk.profile import Profile

__all__ = ["DEFAULT_MEMORY_MB", "Engine", "connect", "of"]

#: DuckDB's memory limit where ``NSIGHTTK_MEMORY_MB`` sets none.
DEFAULT_MEMORY_MB = 1024

_TYPES = {"int64": "BIGINT", "Int64": "BIGINT", "Int32": "BIGINT", "float64": "DOUBLE", "object": "VARCHAR"}


def connect() -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB connection bounded as the settings say: memory limit, threads, and its
    temporary files in a folder of the scratch folder (removed with the connection)."""
    import duckdb

    cfg = settings.current()
    temp = scratch.Folder("duckdb-")
    config: dict[str, Any] = {
        "memory_limit": f"{cfg.memory_mb or DEFAULT_MEMORY_MB}MB",
        "temp_directory": temp.name,
        "preserve_insertion_order": True,
    }
    if cfg.threads:
        config["threads"] = cfg.threads
    con = duckdb.connect(":memory:", config=config)
    weakref.finalize(con, temp.cleanup)
    return con


def of(profile: Profile) -> Engine:
    """The profile's engine, made on first use (and made anew when one of its tables is replaced)."""
    key = ("engine",)
    eng = profile.cache.get(key)
    if eng is None:
        eng = profile.cache[key] = Engine(profile)
    return eng


class Engine:
    """One capture in DuckDB: the columns of its Profile that analyses have asked for."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.con = connect()
        self._parts: dict[str, list[str]] = {}  # table -> its DuckDB tables (one per load), in order
        self._have: dict[str, set[str]] = {}  # table -> the columns loaded
        self._lock = threading.Lock()

    def need(self, wants: Mapping[str, Iterable[str]]) -> Engine:
        """Make sure the views of these tables hold at least these columns (loading what is missing,
        all tables' wishes read together); returns the engine, for ``of(p).need(...).sql(...)``."""
        with self._lock:
            for table, cols in wants.items():
                wanted = check_columns(table, cols)
                have = self._have.get(table)
                missing = [c for c in SCHEMAS[table] if c in set(wanted) and (have is None or c not in have)]
                if have is not None and not missing:
                    continue
                self._load(table, missing)
        return self

    def sql(self, query: str, params: Iterable[object] | None = None) -> duckdb.DuckDBPyRelation:
        """A query over the loaded views (parameters bound, never formatted in)."""
        return self.con.sql(query, params=list(params) if params is not None else None)

    def rows(self, query: str, params: Iterable[object] | None = None) -> list[tuple[Any, ...]]:
        """The rows of a query, as Python tuples."""
        return self.con.execute(query, list(params) if params is not None else []).fetchall()

    def _load(self, table: str, columns: list[str]) -> None:
        part = f"{table}#{len(self._parts.get(table, []))}"
        first = table not in self._parts
        decl = [f'"{c}" {_TYPES[SCHEMAS[table][c]]}' for c in columns]
        if first:
            decl.insert(0, "row_index BIGINT")
        self.con.execute(f'CREATE TABLE "{part}" ({", ".join(decl) or "row_index BIGINT"})')
        at = 0
        if columns or first:
            source = self.profile.parts(table, columns) if columns else \
                iter([{"_n": np.zeros(self.profile.count(table))}])
            for chunk in source:
                n = len(next(iter(chunk.values()))) if chunk else 0
                if not n:
                    continue
                arrays = {c: _arrow(chunk[c], SCHEMAS[table][c]) for c in columns}
                if first:
                    import pyarrow as pa

                    arrays = {"row_index": pa.array(np.arange(at, at + n, dtype=np.int64)), **arrays}
                _append(self.con, part, arrays)
                at += n
        self._parts.setdefault(table, []).append(part)
        self._have.setdefault(table, set()).update(columns)
        joined = " POSITIONAL JOIN ".join(f'"{p}"' for p in self._parts[table])
        self.con.execute(f'CREATE OR REPLACE VIEW "{table}" AS SELECT * FROM {joined}')


def _append(con: duckdb.DuckDBPyConnection, part: str, arrays: dict[str, pa.Array]) -> None:
    import pyarrow as pa

    chunk = pa.table(arrays)  # noqa: F841  (read by name in the query below)
    con.execute(f'INSERT INTO "{part}" SELECT * FROM chunk')


def _arrow(values: np.ndarray | Coded | Sum, dtype: str) -> pa.Array:
    """One chunk of a Profile column as an Arrow array: integers with their missing values as nulls,
    text kept as a dictionary where the Profile has it coded."""
    import pyarrow as pa

    if dtype == "object":
        if isinstance(values, Coded) and values.values.dtype == object:
            codes = np.asarray(values.codes, dtype=np.int32)
            mask = codes < 0
            dictionary = pa.array([v if isinstance(v, str) else None for v in values.values], type=pa.string())
            indices = pa.array(np.where(mask, 0, codes), mask=mask if mask.any() else None)
            return pa.DictionaryArray.from_arrays(indices, dictionary)
        return pa.array([v if isinstance(v, str) else None for v in decoded(values)], type=pa.string())
    arr = decoded(values)
    if dtype == "float64":
        return pa.array(np.asarray(arr, dtype=np.float64))
    arr = widen(np.asarray(arr))
    if arr.dtype == object:  # (a column given by hand as Python objects)
        arr = np.array([INT_NULL if v is None else int(v) for v in arr], dtype=np.int64)
    mask = arr == INT_NULL
    return pa.array(arr.astype(np.int64, copy=False), mask=mask if mask.any() else None)
