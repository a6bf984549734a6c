"""The lazy Profile over an nsys export: tables and columns read on demand."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import capture

from nsighttk import engine, settings
from nsighttk.analysis.nsys import reports as nsys_reports
from nsighttk.load import sqlite_columns
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import INT_NULL, SCHEMAS, Profile, compact, widen


def test_nothing_is_read_until_asked_and_columns_come_alone() -> None:
    p = load_nsys_sqlite(capture("streams_demo"))
    assert not any(p.loaded(t) for t in ("kernels", "api", "nvtx", "memcpy"))
    cols = p.arrays("kernels", ["name_id", "duration_ns"])
    assert set(cols) == {"name_id", "duration_ns"} and len(cols["duration_ns"]) == 25
    assert not p.loaded("kernels")
    part = p.table("kernels", ["name", "grid_x"])
    assert list(part.columns) == ["name", "grid_x"] and str(part["grid_x"].dtype) == "Int32"
    assert not p.loaded("kernels")
    full = p.kernels
    assert p.loaded("kernels") and list(full.columns) == list(SCHEMAS["kernels"])
    pd.testing.assert_frame_equal(full[["name", "grid_x"]], part)
    assert (full["duration_ns"].to_numpy() == cols["duration_ns"]).all()


def test_unknown_table_or_column_is_a_clear_key_error() -> None:
    p = load_nsys_sqlite(capture("add"))
    with pytest.raises(KeyError, match="no column"):
        p.arrays("kernels", ["nope"])
    with pytest.raises(KeyError, match="no table"):
        p.table("nope")


def test_eager_profiles_answer_the_same_calls() -> None:
    lazy = load_nsys_sqlite(capture("streams_demo"))
    eager = Profile(kernels=lazy.kernels, api=lazy.api, meta=dict(lazy.meta))
    for table in ("kernels", "api"):
        a = lazy.arrays(table, ["start_ns", "correlation_id"])
        b = eager.arrays(table, ["start_ns", "correlation_id"])
        assert all((a[c] == b[c]).all() for c in a)
    ids = eager.arrays("api", ["name_id"])["name_id"][:5]
    assert list(eager.names("api", ids)) == list(lazy.names("api", ids))
    assert eager.counts()["kernels"] == lazy.counts()["kernels"] == 25


def test_the_smallest_memory_limit_changes_no_report(monkeypatch: pytest.MonkeyPatch) -> None:
    want = {n: nsys_reports.run_report(n, load_nsys_sqlite(capture("streams_demo"))).frame
            for n in nsys_reports.REPORTS}
    monkeypatch.setenv("NSIGHTTK_MEMORY_MB", "16")
    settings.use(None)
    p = load_nsys_sqlite(capture("streams_demo"))
    for n, df in want.items():
        pd.testing.assert_frame_equal(nsys_reports.run_report(n, p).frame, df, obj=n)
    assert engine.of(p).rows("SELECT current_setting('memory_limit')")[0][0] == "15.2 MiB"


def test_kept_columns_are_narrow_and_widen_back() -> None:
    for values in ([1, 2, INT_NULL], [0, 70_000, INT_NULL], [2**40, INT_NULL], [-(2**31) + 1, 5]):
        arr = np.array(values, dtype=np.int64)
        small = compact(arr, np.int32)
        assert small.nbytes <= arr.nbytes and (widen(small) == arr).all()
    assert compact(np.array([-(2**31), 0], dtype=np.int64)).dtype == np.int64  # the minimum itself


def test_reader_keeps_rows_aligned_across_chunks_with_nulls_and_text(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks with a NULL or a text value are re-read with a guard: one value per row, in order."""
    monkeypatch.setattr(sqlite_columns, "CHUNK_ROWS", 7)
    f = tmp_path / "t.sqlite"
    shutil.copy(capture("streams_demo"), f)
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE t (a, b)")
    con.executemany("INSERT INTO t VALUES (?, ?)",
                    [(i, None if i % 11 == 3 else "x" if i % 13 == 5 else i * 2) for i in range(100)])
    con.commit()
    con.close()
    a, b = (widen(x) for x in sqlite_columns.Reader(f).read("t", ['"a"', '"b"']))
    assert (a == np.arange(100)).all()
    want = np.array([INT_NULL if i % 11 == 3 or i % 13 == 5 else i * 2 for i in range(100)])
    assert (b == want).all()


def test_an_exported_nsys_rep_lives_as_long_as_its_profile(tmp_path: Path, fake_nsys: Path) -> None:
    """A .nsys-rep is exported to a temporary SQLite file that lazy reads still need after load()."""
    import gc

    from nsighttk.load import load

    rep = tmp_path / "capture.nsys-rep"
    rep.write_text(str(capture("streams_demo")))  # the fake nsys exports the file named inside
    p = load(rep)
    folder = Path(p.source.keep_alive.name)  # type: ignore[union-attr]
    gc.collect()
    assert folder.is_dir() and len(p.kernels) == 25 and p.meta["source"] == str(rep)
    del p
    gc.collect()
    assert not folder.exists()


def test_a_source_without_bound_is_bounded_by_its_count() -> None:
    """``TableSource.bound`` came later: a source written before it is asked for its count."""
    import numpy as np

    from nsighttk.profile import Profile, empty_arrays

    class Old:
        def count(self, table: str) -> int:
            return 3 if table == "kernels" else 0

        def arrays(self, table: str, columns: list[str]) -> dict[str, np.ndarray]:
            if table != "kernels":
                return empty_arrays(table, columns)
            return {c: np.arange(3, dtype=np.int64) for c in columns}

        def frame(self, table: str, columns: list[str]):  # type: ignore[no-untyped-def]
            raise AssertionError("not asked")

        def names(self, table: str, ids: np.ndarray) -> np.ndarray:
            return np.full(len(ids), None, dtype=object)

    p = Profile(source=Old())  # type: ignore[arg-type]
    assert p.bound("kernels") == 3 and p.arrays("kernels", ["duration_ns"])["duration_ns"].tolist() == [0, 1, 2]
