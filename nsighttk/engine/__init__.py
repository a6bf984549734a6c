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
(``NSIGHTTK_MEMORY_MB``, default :data:`DEFAULT_MEMORY_MB`, at least :data:`MIN_MEMORY_MB`), its
``temp_directory`` a folder of the process's scratch folder (:mod:`nsighttk.scratch`), where it
writes what does not fit.  No analysis knows whether its input fits in memory.

The cache: the columns of a capture read from a file of :data:`CACHE_MIN_BYTES` or more are kept in
a DuckDB database in the user's cache folder (``NSIGHTTK_CACHE``), named by the file's identity
(path, device, inode, size, modification time) and the engine's layout, so the next look at the same
file reads them from there, and a changed file is read again.  The loader's notes and the facts it
found while reading (where ranges never closed end) are kept with the columns.  Each load is one transaction: an
interrupted one leaves nothing.  The folder holds at most ``NSIGHTTK_CACHE_MB`` (the files used
longest ago removed first); a cache that cannot be opened or written (held by another process, a
full disk, a damaged file) is passed by and the engine works in memory.  Nothing is ever written
next to the user's file.

Types: integer columns are ``BIGINT`` (``NULL`` where the Profile has a missing value), text
``VARCHAR``, reals ``DOUBLE``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import os
import pickle
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

import nsighttk
from nsighttk import scratch, settings
from nsighttk.encoding import INT_NULL, Coded, Sum, decoded, widen
from nsighttk.profile import SCHEMAS, check_columns

if TYPE_CHECKING:
    import duckdb

    from nsighttk.profile import Profile

__all__ = ["CACHE_MIN_BYTES", "DEFAULT_MEMORY_MB", "DERIVED", "DERIVED_FROM", "Engine", "connect", "of", "union"]

#: DuckDB's memory limit where ``NSIGHTTK_MEMORY_MB`` sets none.
DEFAULT_MEMORY_MB = 1024
#: Captures read from a file at least this large have their columns cached (smaller ones load faster
#: than a cache file opens).
CACHE_MIN_BYTES = 32 << 20
#: The cache file's layout: a change of it, of the Profile's schema or of nsighttk's version names new files.
_CACHE_LAYOUT = "nsighttk-engine-2"

#: DuckDB's smallest memory limit (MB), whatever the budget: it works in blocks of 256 KB, a few
#: of them per operator.
MIN_MEMORY_MB = 16

#: Below twice this memory limit (MB), DuckDB runs one thread.
_MB_PER_THREAD = 64

#: Columns the engine derives from others, by table (never read from a capture; see
#: :meth:`Engine._derive_launches`): which runtime call launched each GPU operation, and its start.
DERIVED: dict[str, tuple[str, ...]] = {t: ("launch_call", "launch_ns") for t in ("kernels", "memcpy", "memset")}
#: The columns the derived ones are computed from, by table (read on the first ``need`` of a derived one).
DERIVED_FROM: dict[str, list[str]] = {**{t: ["correlation_id", "global_pid"] for t in DERIVED},
                                      "api": ["start_ns", "correlation_id", "global_tid"]}

_T = TypeVar("_T")

_TYPES = {"int64": "BIGINT", "Int64": "BIGINT", "Int32": "BIGINT", "float64": "DOUBLE", "object": "VARCHAR"}


def union(*wants: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """The columns of several :meth:`Engine.need` wishes together, each once, in the order first
    asked: an export's table is read in one pass whatever its columns, so a caller that knows what
    its analyses will read asks for it all at once."""
    out: dict[str, list[str]] = {}
    for want in wants:
        for table, cols in want.items():
            have = out.setdefault(table, [])
            have += [c for c in cols if c not in have]
    return out


def connect(database: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A new DuckDB connection (in memory, or to the file ``database``) bounded as the settings say:
    memory limit, threads, and its temporary files in a folder of the scratch folder (removed with the
    connection)."""
    import duckdb

    cfg = settings.current()
    temp = scratch.Folder("duckdb-")
    memory_mb = max(cfg.memory_mb or DEFAULT_MEMORY_MB, MIN_MEMORY_MB)
    config: dict[str, Any] = {
        "memory_limit": f"{memory_mb}MB",
        "temp_directory": temp.name,
        "preserve_insertion_order": True,
    }
    if cfg.threads:
        config["threads"] = cfg.threads
    elif memory_mb < _MB_PER_THREAD * 2:
        config["threads"] = 1  # (each thread holds buffers of its own: several in a few MB run out of memory)
    try:
        con = duckdb.connect(str(database) if database is not None else ":memory:", config=config)
        con.execute("SET enable_progress_bar = false")  # (it would draw on the terminal nsighttk prints to)
    except BaseException:
        temp.cleanup()
        raise
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
        self._parts: dict[str, list[str]] = {}  # table -> its DuckDB tables (one per load), in order
        self._have: dict[str, set[str]] = {}  # table -> the columns loaded
        self._lock = threading.Lock()
        #: the engine of the profile this one's is a subset of (:func:`nsighttk.subset.subset`), whose
        #: database this one reads: a subset's rows are cut there, never read again from the capture
        self._parent: Engine | None = None
        parent = getattr(profile.source, "parent", None)
        if parent is not None and isinstance(getattr(profile.source, "keep", None), Mapping):
            self._parent = of(parent)
            self.cache_file = None
            self.con = self._open_subset(self._parent)
            return
        #: the cache database this engine reads and writes (None: in memory)
        self.cache_file = _cache_file(profile)
        self.con = self._open()

    def need(self, wants: Mapping[str, Iterable[str]]) -> Engine:
        """Make sure the views of these tables hold at least these columns (loading what is missing,
        all tables' wishes read together); returns the engine, for ``of(p).need(...).sql(...)``."""
        wants = {t: list(cs) for t, cs in wants.items()}
        with self._lock:
            self._need_read({t: [c for c in cs if c not in DERIVED.get(t, ())] for t, cs in wants.items()})
            for table, cols in wants.items():
                if any(c in DERIVED.get(table, ()) and c not in self._have.get(table, ()) for c in cols):
                    self._need_read({t: DERIVED_FROM[t] for t in (table, "api")})
                    self._in_cache_transaction(self._derive_launches, table)
        return self

    def _need_read(self, wants: Mapping[str, list[str]]) -> None:
        """:meth:`need` for columns read from the capture (the lock held)."""
        for table, cols in wants.items():
            wanted = check_columns(table, cols)
            have = self._have.get(table)
            missing = [c for c in SCHEMAS[table] if c in set(wanted) and (have is None or c not in have)]
            if have is not None and not missing:
                continue
            self._load_or_forget_cache(table, missing)

    def remember(self, key: str, compute: Callable[[], _T]) -> tuple[_T, bool]:
        """``compute()``'s result, kept in the cache with the capture's columns, and whether it came
        from there: a later look at the same file by the same code (:func:`_code_identity`) with the
        same ``key`` (the analysis and its options) takes it from the cache instead of computing it.
        Without a cache file (a small capture, no cache, a subset) it is computed every time; a
        result that cannot be stored (a full disk, a value pickle cannot write) is not kept.  (The
        cache folder is the user's own, as trusted as their home: results are pickled.)"""
        import duckdb

        if self.cache_file is None:
            return compute(), False
        full = f"{key}\0{_code_identity()}"
        with contextlib.suppress(duckdb.Error):
            row = self.con.execute("SELECT value FROM _results WHERE key = ?", [full]).fetchone()
            if row is not None:
                with contextlib.suppress(Exception):  # (damaged, or of classes since changed: compute it again)
                    return pickle.loads(row[0]), True
        value = compute()
        if self.cache_file is None:  # (forgotten while computing: a full disk)
            return value, False
        try:
            blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            return value, False
        try:
            self.con.execute("BEGIN TRANSACTION")
            self.con.execute("DELETE FROM _results WHERE key = ?", [full])
            self.con.execute("INSERT INTO _results VALUES (?, ?)", [full, blob])
            self.con.execute("COMMIT")
        except (OSError, duckdb.Error):
            with contextlib.suppress(duckdb.Error):
                self.con.execute("ROLLBACK")
        return value, False

    def sql(self, query: str, params: Iterable[object] | None = None) -> duckdb.DuckDBPyRelation:
        """A query over the loaded views (parameters bound, never formatted in)."""
        return self.con.sql(query, params=list(params) if params is not None else None)

    def has_table(self, name: str) -> bool:
        """Whether this engine's own database holds a table ``name`` (a subset's engine sees its
        parent's tables too, but they are not its own)."""
        return bool(self.rows("SELECT count(*) FROM duckdb_tables() WHERE table_name = ? "
                              "AND (database_name = current_database() OR temporary)", [name])[0][0])

    def rows(self, query: str, params: Iterable[object] | None = None) -> list[tuple[Any, ...]]:
        """The rows of a query, as Python tuples."""
        return self.con.execute(query, list(params) if params is not None else []).fetchall()

    def _open_subset(self, parent: Engine) -> duckdb.DuckDBPyConnection:
        """A connection to the parent's database whose own tables live in a database of their own
        (in memory, under the parent's memory limit), where unqualified names resolve: the parent's
        views stay as they are, and nothing of the subset reaches the parent's cache file."""
        con = parent.con.cursor()
        self._parent_db = con.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        name = f"subset_{next(_SUBSETS)}"
        con.execute(f'ATTACH \':memory:\' AS "{name}"')
        con.execute(f'USE "{name}"')
        weakref.finalize(self, _detach, con, self._parent_db, name)
        return con

    # ------------------------------------------------------------------------------ the cache
    def _open(self) -> duckdb.DuckDBPyConnection:
        """The cache database when there is one and it opens, with what it already holds; else memory."""
        import duckdb

        if self.cache_file is None:
            return connect()
        try:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            con = connect(self.cache_file)
            con.execute('CREATE TABLE IF NOT EXISTS _loaded (seq BIGINT, "table" VARCHAR, part VARCHAR, '
                        "columns VARCHAR, notes VARCHAR, facts VARCHAR)")
            con.execute("CREATE TABLE IF NOT EXISTS _results (key VARCHAR, value BLOB)")
            loaded = con.execute('SELECT "table", part, columns, notes, facts FROM _loaded ORDER BY seq').fetchall()
            os.utime(self.cache_file)  # (used now: the last to go)
        except (OSError, duckdb.Error):  # (held by another process, unreadable, damaged: work in memory)
            self.cache_file = None
            return connect()
        notes, meta = self.profile.notes, self.profile.meta
        for table, part, cols, said, facts in loaded:
            self._parts.setdefault(table, []).append(part)
            self._have.setdefault(table, set()).update(json.loads(cols))
            notes.extend(n for n in json.loads(said) if n not in notes)
            for key, value in json.loads(facts).items():
                meta.setdefault(key, value)
        return con

    def _load_or_forget_cache(self, table: str, columns: list[str]) -> None:
        """Load into the cache in one transaction; where the cache cannot be written (a full disk),
        forget it and load everything again in memory."""
        self._in_cache_transaction(lambda: self._load(table, columns))

    def _in_cache_transaction(self, work: Callable[..., None], *args: Any) -> None:
        """``work(*args)``, in one transaction of the cache where there is one; where the cache
        cannot be written (a full disk), forget it, load everything again in memory, and work there."""
        import duckdb

        if self.cache_file is None:
            work(*args)
            return
        parts = {t: list(ps) for t, ps in self._parts.items()}
        have = {t: set(cs) for t, cs in self._have.items()}
        try:
            self.con.execute("BEGIN TRANSACTION")
            work(*args)
            self.con.execute("COMMIT")
        except BaseException as ex:
            with contextlib.suppress(duckdb.Error):
                self.con.execute("ROLLBACK")
            self._parts, self._have = parts, have  # (as the database holds them again)
            if not isinstance(ex, (OSError, duckdb.IOException, duckdb.OutOfMemoryException)):
                raise
            self._forget_cache()
            work(*args)
            return
        _evict(settings.current().cache_dir, settings.current().cache_mb, self.cache_file)

    def _forget_cache(self) -> None:
        """Close and remove the cache file, and load what it held into memory."""
        assert self.cache_file is not None
        wanted = {t: [c for c in SCHEMAS[t] if c in cs] for t, cs in self._have.items()}
        self.con.close()
        for f in self.cache_file.parent.glob(self.cache_file.name + "*"):
            with contextlib.suppress(OSError):
                f.unlink()
        self.cache_file, self._parts, self._have = None, {}, {}
        self.con = connect()
        for t, cs in wanted.items():
            self._load(t, cs)

    # ------------------------------------------------------------------------------ loading
    def _load(self, table: str, columns: list[str]) -> None:
        if self._parent is not None:
            self._parent_has(table, columns)
        part = f"{table}#{len(self._parts.get(table, []))}"
        first = table not in self._parts
        decl = [f'"{c}" {_TYPES[SCHEMAS[table][c]]}' for c in columns]
        if first:
            decl.insert(0, "row_index BIGINT")
        notes_before = list(self.profile.notes)
        self.con.execute(f'CREATE TABLE "{part}" ({", ".join(decl) or "row_index BIGINT"})')
        at = 0
        if self._parent is not None:
            self._cut(part, table, columns, first)
        elif columns or first:
            source = self.profile.parts(table, columns) if columns else \
                iter([{"_n": np.zeros(self.profile.count(table))}])
            held: list[dict[str, Any]] = []
            arrow = "pyarrow" in sys.modules  # (a large table's loader has imported it: see _arrow)
            for chunk in source:
                n = len(next(iter(chunk.values()))) if chunk else 0
                if not n:
                    continue
                arrays = {c: (_arrow if arrow else _column)(chunk[c], SCHEMAS[table][c]) for c in columns}
                if first:
                    arrays = {"row_index": np.arange(at, at + n, dtype=np.int64), **arrays}
                held.append(arrays)
                at += n
                if sum(len(next(iter(h.values()))) for h in held) >= _INSERT_ROWS:
                    _append(self.con, part, held)
                    held = []
            if held:
                _append(self.con, part, held)
        self._register(table, part, columns, [n for n in self.profile.notes if n not in notes_before])

    def _register(self, table: str, part: str, columns: list[str], said: list[str]) -> None:
        """Make the filled table ``part`` one of ``table``'s (its view joins them row for row), and
        record it in the cache with what the loader said while filling it."""
        self._parts.setdefault(table, []).append(part)
        self._have.setdefault(table, set()).update(columns)
        joined = " POSITIONAL JOIN ".join(f'"{p}"' for p in self._parts[table])
        self.con.execute(f'CREATE OR REPLACE VIEW "{table}" AS SELECT * FROM {joined}')
        if self.cache_file is not None:
            facts = {k: v for k, v in self.profile.meta.items() if _plain(v)}
            self.con.execute("INSERT INTO _loaded VALUES ((SELECT count(*) FROM _loaded), ?, ?, ?, ?, ?)",
                             [table, part, json.dumps(columns), json.dumps(said), json.dumps(facts)])

    def _derive_launches(self, table: str) -> None:
        """Add :data:`DERIVED` to the operations of ``table``: the runtime call that launched each
        (``launch_call``: its ``row_index`` in ``api``, the first of the calls of the operation's
        process with its correlation id; where the operation or the calls have no process, the first
        with the id) and that call's start (``launch_ns``); NULL where no call has the id.  One
        join per capture, kept in the cache like a read column; in a subset, made from the subset's
        own calls (its rows are numbered anew).  The columns it reads are loaded first
        (:meth:`need`), each in a transaction of its own."""
        if not self.has_table("_first_calls"):
            self.con.execute("""CREATE TEMP TABLE _first_calls AS
                SELECT correlation_id AS corr, global_tid >> 24 AS proc, min(row_index) AS call,
                       arg_min(start_ns, row_index) AS call_ns
                FROM api WHERE correlation_id IS NOT NULL GROUP BY ALL""")
        found = "f.call, f.call_ns"
        joins = "LEFT JOIN _first_calls f ON f.corr = o.correlation_id AND f.proc = o.global_pid >> 24"
        [(unknown,)] = self.rows(f'SELECT (SELECT count(*) FROM _first_calls WHERE proc IS NULL) '
                                 f'+ (SELECT count(*) FROM "{table}" WHERE global_pid IS NULL)')
        if unknown:  # (a call or an operation of no known process: matched by correlation id alone)
            pick = "CASE WHEN f.call IS NOT NULL THEN f.{0} WHEN o.global_pid IS NULL THEN g.{0} ELSE h.{0} END"
            found = f"{pick.format('call')} AS call, {pick.format('call_ns')} AS call_ns"
            joins += """ LEFT JOIN (SELECT corr, min(call) AS call, arg_min(call_ns, call) AS call_ns FROM _first_calls
                                    GROUP BY corr) g ON g.corr = o.correlation_id
                         LEFT JOIN _first_calls h ON h.corr = o.correlation_id AND h.proc IS NULL"""
        part = f"{table}#{len(self._parts[table])}"
        self.con.execute(f'CREATE TABLE "{part}" (launch_call BIGINT, launch_ns BIGINT)')
        # (the calls are the hash join's build side, as written: the views' row estimates are low,
        # and DuckDB would build it of every operation instead, past its memory limit)
        self.con.execute("SET disabled_optimizers = 'build_side_probe_side'")
        try:
            self.con.execute(f"""INSERT INTO "{part}" SELECT call, call_ns FROM
                (SELECT o.row_index, {found} FROM "{table}" o {joins}) ORDER BY row_index""")
        finally:
            self.con.execute("RESET disabled_optimizers")
        self._register(table, part, list(DERIVED[table]), [])

    def _cut(self, part: str, table: str, columns: list[str], first: bool) -> None:
        """Fill ``part`` from the parent's table: the rows the subset keeps (all where it keeps the
        table whole), in the parent's order, numbered anew in the table's first part.  One query
        inside DuckDB: no row passes through Python."""
        if not columns and not first:
            return
        keep = getattr(self.profile.source, "keep", {}).get(table)
        cols = ", ".join(f't."{c}"' for c in columns)
        number = "row_number() OVER (ORDER BY t.row_index) - 1 AS row_index" if first else ""
        select = ", ".join(x for x in (number, cols) if x)
        source = f'"{self._parent_db}".main."{table}" t'
        if keep is None:
            self.con.execute(f'INSERT INTO "{part}" SELECT {select} FROM {source} ORDER BY t.row_index')
            return
        kept = {"row_index": np.flatnonzero(keep).astype(np.int64)}  # noqa: F841  (DuckDB reads it by name)
        self.con.execute(f'INSERT INTO "{part}" SELECT {select} FROM {source} SEMI JOIN kept k USING (row_index) '
                         "ORDER BY t.row_index")

    def _parent_has(self, table: str, columns: list[str]) -> None:
        """Have the parent load what a subset's table needs; where that made the parent forget its
        cache (a new database), attach to the new one and cut again what this engine held."""
        assert self._parent is not None
        before = self._parent.con
        self._parent.need({table: columns})
        if self._parent.con is not before:
            held = {t: [c for c in SCHEMAS[t] if c in cs] for t, cs in self._have.items()}
            self._parts, self._have = {}, {}
            self.con = self._open_subset(self._parent)
            for t, cs in held.items():
                self._load(t, cs)


_SUBSETS = itertools.count()


def _detach(con: duckdb.DuckDBPyConnection, home: str, name: str) -> None:
    """Drop a subset's own database (its engine is gone)."""
    import duckdb

    with contextlib.suppress(duckdb.Error):
        con.execute(f'USE "{home}"')
        con.execute(f'DETACH "{name}"')
        con.close()


@functools.cache
def _code_identity() -> str:
    """nsighttk's code as it is now: the version, and each module's path, size and modification time
    (a result remembered by other code, an edited checkout's included, is computed again)."""
    root = Path(nsighttk.__file__).parent
    h = hashlib.sha256(nsighttk.__version__.encode())
    for f in sorted(root.rglob("*.py")):
        with contextlib.suppress(OSError):
            st = f.stat()
            h.update(f"\0{f.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()[:32]


def _plain(value: object) -> bool:
    """Whether a fact of the capture's metadata is kept with the cache: numbers, text and None.  (A
    fact the loader finds while reading a table, such as where NVTX ranges never closed end, is
    not found again when the table comes from the cache; a look from the cache takes what it lacks.)"""
    return value is None or (isinstance(value, (int, float, str)) and not isinstance(value, bool))


def _cache_file(profile: Profile) -> Path | None:
    """Where the columns of ``profile`` are cached: a file named by the identity of the file it reads
    (None: no cache, a capture held in memory, a small file, or tables replaced by hand)."""
    cfg = settings.current()
    path = getattr(profile.source, "path", None)
    if not cfg.cache_mb or path is None or profile.replaced:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_size < CACHE_MIN_BYTES:
        return None
    schema = json.dumps(SCHEMAS, sort_keys=True)
    ident = "\0".join(map(str, (_CACHE_LAYOUT, nsighttk.__version__, schema, os.path.realpath(path), st.st_dev,
                                st.st_ino, st.st_size, st.st_mtime_ns)))
    return cfg.cache_dir / f"capture-{hashlib.sha256(ident.encode()).hexdigest()[:32]}.duckdb"


def _evict(folder: Path, limit_mb: int, keep: Path) -> None:
    """Remove the cache files used longest ago until the folder holds at most ``limit_mb`` (never
    ``keep``, the one in use)."""
    try:
        files = [(f.stat().st_mtime, f.stat().st_size, f) for f in folder.glob("capture-*.duckdb*")]
    except OSError:
        return
    total = sum(size for _, size, _ in files)
    for _, size, f in sorted(files, key=lambda x: x[0]):
        if total <= limit_mb << 20:
            break
        if f.name.startswith(keep.name):
            continue
        with contextlib.suppress(OSError):
            f.unlink()
            total -= size


#: Rows copied into DuckDB by one INSERT (each statement costs some milliseconds of its own).
_INSERT_ROWS = 1 << 20


def _append(con: duckdb.DuckDBPyConnection, part: str, held: list[dict[str, Any]]) -> None:
    """Insert the chunks ``held`` (columns by name, in the table's order: numpy arrays, or Arrow
    arrays from :func:`_arrow`) into table ``part``."""
    if any(not isinstance(v, np.ndarray) for v in held[0].values()):
        import pyarrow as pa

        chunk = pa.Table.from_batches([pa.RecordBatch.from_pydict(h) for h in held])
    else:
        chunk = held[0] if len(held) == 1 else {c: _concatenate([h[c] for h in held]) for c in held[0]}  # noqa: F841
    # (DuckDB reads ``chunk`` by name)
    con.execute(f'INSERT INTO "{part}" SELECT * FROM chunk')


def _arrow(values: np.ndarray | Coded | Sum, dtype: str) -> Any:
    """One chunk of a Profile column as an Arrow array, which DuckDB reads in C: text coded by its
    few values as a dictionary (no Python string per row), integers with their missing values null.
    Twice as fast as :func:`_column`'s numpy (4M rows of a name and two integers into a DuckDB file:
    0.93 against 1.61 CPU s), but building Arrow arrays imports pandas: used where the loader has
    imported pyarrow already, a large capture's."""
    import pyarrow as pa

    if dtype == "object":
        if isinstance(values, Coded) and values.values.dtype == object:
            texts = [v if isinstance(v, str) else None for v in values.values]
            codes = np.asarray(values.codes, dtype=np.int32)
            missing = codes < 0
            if any(t is None for t in texts):
                missing |= np.isin(codes, [i for i, t in enumerate(texts) if t is None])
            return pa.DictionaryArray.from_arrays(pa.array(np.where(missing, 0, codes), mask=missing),
                                                  pa.array([t if t is not None else "" for t in texts] or [""],
                                                           type=pa.string()))
        return pa.array([v if isinstance(v, str) else None for v in decoded(values)], type=pa.string())
    arr = _column(values, dtype)
    if isinstance(arr, np.ma.MaskedArray):
        return pa.array(np.ma.getdata(arr), mask=np.ma.getmaskarray(arr))
    return pa.array(arr)


def _concatenate(parts: list[np.ndarray]) -> np.ndarray:
    """Arrays end to end, masked where any part is (``np.ma.concatenate`` is many times slower)."""
    data = np.concatenate([np.ma.getdata(a) for a in parts])
    if not any(np.ma.isMaskedArray(a) for a in parts):
        return data
    return np.ma.masked_array(data, mask=np.concatenate([np.ma.getmaskarray(a) for a in parts]))


def _column(values: np.ndarray | Coded | Sum, dtype: str) -> np.ndarray:
    """One chunk of a Profile column as an array DuckDB reads: integers as int64 with their missing
    values masked (NULL), text as Python strings or None.  (numpy, not Arrow: building Arrow
    arrays from numpy imports pandas, which costs more than a small capture's whole report.)"""
    if dtype == "object":
        if isinstance(values, Coded) and values.values.dtype == object:
            table = np.empty(len(values.values) + 1, dtype=object)
            table[:-1] = [v if isinstance(v, str) else None for v in values.values]
            table[-1] = None
            codes = np.asarray(values.codes, dtype=np.intp)
            return table[np.where(codes < 0, len(table) - 1, codes)]
        out = np.empty(len(values), dtype=object)
        out[:] = [v if isinstance(v, str) else None for v in decoded(values)]
        return out
    arr = decoded(values)
    if dtype == "float64":
        return np.asarray(arr, dtype=np.float64)
    arr = widen(np.asarray(arr))
    if arr.dtype == object:  # (a column given by hand as Python objects)
        arr = np.array([INT_NULL if v is None else int(v) for v in arr], dtype=np.int64)
    arr = arr.astype(np.int64, copy=False)
    mask = arr == INT_NULL
    return np.ma.masked_array(arr, mask=mask) if mask.any() else arr
