"""The engine: a Profile's tables as DuckDB views, the columns declared copied in once."""

from __future__ import annotations

import pandas as pd
from conftest import capture

from nsighttk import engine
from nsighttk.api import load
from nsighttk.profile import Profile


def test_views_hold_the_profiles_columns_and_rows_in_order() -> None:
    p = load(capture("streams_demo"))
    eng = engine.of(p).need({"kernels": ["name", "duration_ns"]})
    k = p.table("kernels", ["name", "duration_ns"])
    got = eng.rows("SELECT row_index, name, duration_ns FROM kernels ORDER BY row_index")
    assert [r[0] for r in got] == list(range(len(k)))
    assert [r[1] for r in got] == list(k["name"])
    assert [r[2] for r in got] == list(k["duration_ns"])


def test_need_adds_columns_to_a_loaded_table_row_for_row() -> None:
    p = load(capture("streams_demo"))
    eng = engine.of(p).need({"api": ["duration_ns"]})
    eng.need({"api": ["start_ns", "name"]})
    a = p.table("api", ["start_ns", "duration_ns", "name"])
    got = eng.rows("SELECT start_ns, duration_ns, name FROM api ORDER BY row_index")
    assert got == list(a.itertuples(index=False, name=None))
    assert engine.of(p) is eng  # one connection per profile


def test_missing_values_are_null_and_an_empty_table_has_its_columns() -> None:
    kernels = pd.DataFrame({"start_ns": [5, 1], "end_ns": [7, 4], "duration_ns": [2, 3], "name": ["a", None],
                            "grid_x": pd.array([None, 8], dtype="Int32")})
    eng = engine.of(Profile(kernels=kernels)).need({"kernels": ["name", "grid_x"], "memcpy": ["bytes", "kind"]})
    assert eng.rows("SELECT name, grid_x FROM kernels ORDER BY row_index") == [("a", None), (None, 8)]
    assert eng.rows("SELECT count(*) FROM memcpy") == [(0,)]
    assert [c[0] for c in eng.sql("SELECT * FROM memcpy").description] == ["row_index", "bytes", "kind"]
