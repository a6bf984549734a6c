"""The engine: a Profile's tables as DuckDB views, the columns declared copied in once."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pandas as pd
from conftest import capture
from hypothesis import given, settings
from hypothesis import strategies as st

from nsighttk import engine
from nsighttk.api import load
from nsighttk.load import nvtx_nesting
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


def _copy(tmp_path, name: str = "streams_demo"):
    import shutil

    dst = tmp_path / f"{name}.sqlite"
    shutil.copy(capture(name), dst)
    return dst


def _unreadable(p: Profile) -> None:
    def refuse(*_a, **_k):
        raise AssertionError("read from the capture, not the cache")
    p.parts = refuse  # type: ignore[method-assign]


def test_a_second_look_reads_the_cache_and_a_changed_file_is_read_again(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(engine, "CACHE_MIN_BYTES", 0)
    path = _copy(tmp_path)
    first = engine.of(load(path)).need({"kernels": ["name", "duration_ns"]})
    assert first.cache_file is not None and first.cache_file.parent == tmp_path / "cache"
    want = first.rows("SELECT row_index, name, duration_ns FROM kernels ORDER BY row_index")
    first.con.close()
    again = load(path)
    _unreadable(again)
    eng = engine.of(again).need({"kernels": ["duration_ns", "name"]})
    assert eng.rows("SELECT row_index, name, duration_ns FROM kernels ORDER BY row_index") == want
    eng.con.close()
    import os

    os.utime(path, ns=(1, 1))  # (the same bytes, another modification time: read again)
    changed = load(path)
    eng = engine.of(changed).need({"kernels": ["name"]})
    assert eng.cache_file != first.cache_file
    assert sorted(f.name for f in (tmp_path / "cache").glob("*.duckdb")) == sorted(
        [first.cache_file.name, eng.cache_file.name])
    assert not list(tmp_path.glob("streams_demo.sqlite?*"))  # nothing beside the user's file


def test_a_second_analyze_of_the_same_file_takes_its_summary_from_the_cache(tmp_path, monkeypatch) -> None:
    from nsighttk.commands.analyze import analyze_profile
    from nsighttk.report import jsonout

    monkeypatch.setattr(engine, "CACHE_MIN_BYTES", 0)
    path = _copy(tmp_path)
    p = load(path)
    first = analyze_profile(p, with_timeline=False).overview
    engine.of(p).con.close()  # (one process: the next look opens the file anew)
    again = load(path)
    _unreadable(again)  # (nothing read from the capture: not even the cached columns' engine work)
    with mock.patch("nsighttk.commands.analyze.overview", side_effect=AssertionError("computed again")):
        kept = analyze_profile(again, with_timeline=False).overview
    engine.of(again).con.close()
    assert jsonout.overview_dict(kept) == jsonout.overview_dict(first)
    # another --iteration is another summary; other code (an edited module) computes it again
    with mock.patch("nsighttk.commands.analyze.overview", side_effect=AssertionError("computed again")):
        try:
            analyze_profile(other := load(path), with_timeline=False, iteration="step")
        except AssertionError as ex:
            assert "computed again" in str(ex)
        else:
            raise AssertionError("another --iteration took the first look's summary")
        finally:
            engine.of(other).con.close()
    monkeypatch.setattr(engine, "_code_identity", lambda: "other code")
    calls = []
    real = __import__("nsighttk.analysis.overview", fromlist=["overview"]).overview
    with mock.patch("nsighttk.commands.analyze.overview", side_effect=lambda *a: calls.append(1) or real(*a)):
        analyze_profile(load(path), with_timeline=False)
    assert calls == [1]


def test_the_cache_keeps_the_loaders_notes(tmp_path, monkeypatch) -> None:
    import sqlite3

    monkeypatch.setattr(engine, "CACHE_MIN_BYTES", 0)
    path = _copy(tmp_path)
    with sqlite3.connect(path) as con:  # a kernel that ends before it starts: dropped, and said
        con.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 5 WHERE rowid = 3')
    p = load(path)
    engine.of(p).need({"kernels": ["duration_ns"]}).con.close()
    said = [n for n in p.notes if "kernel" in n]
    assert said
    again = load(path)
    _unreadable(again)
    engine.of(again).need({"kernels": ["duration_ns"]})
    assert [n for n in again.notes if "kernel" in n] == said


def test_an_interrupted_load_leaves_nothing_in_the_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(engine, "CACHE_MIN_BYTES", 0)
    path = _copy(tmp_path)
    p = load(path)
    real = p.parts

    def interrupted(table, cols):
        yield from real(table, cols)
        if table == "kernels":
            raise KeyboardInterrupt

    p.parts = interrupted  # type: ignore[method-assign]
    eng = engine.of(p).need({"api": ["duration_ns"]})
    try:
        eng.need({"kernels": ["duration_ns"]})
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the interruption was swallowed")
    assert eng.rows("SELECT count(*) FROM api")[0][0] == p.count("api")
    eng.con.close()
    again = load(path)
    eng = engine.of(again)
    assert eng.rows("SELECT DISTINCT \"table\" FROM _loaded") == [("api",)]
    assert not eng.rows("SELECT 1 FROM duckdb_tables() WHERE table_name LIKE 'kernels%'")


def test_a_damaged_cache_is_passed_by_and_old_files_go_past_the_limit(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(engine, "CACHE_MIN_BYTES", 0)
    path = _copy(tmp_path)
    eng = engine.of(load(path))
    cache = eng.cache_file
    eng.con.close()
    cache.write_bytes(b"not a database" * 100)
    eng = engine.of(load(path)).need({"kernels": ["duration_ns"]})
    assert eng.cache_file is None  # (in memory)
    assert eng.rows("SELECT count(*) FROM kernels")[0][0] == 25
    import os

    old = tmp_path / "cache" / "capture-old.duckdb"
    old.write_bytes(b"x" * (2 << 20))
    os.utime(old, (1, 1))
    cache.unlink()
    monkeypatch.setenv("NSIGHTTK_CACHE_MB", "1")
    from nsighttk import settings

    settings.use(None)
    eng = engine.of(load(path)).need({"kernels": ["duration_ns"]})
    assert eng.cache_file is not None and eng.cache_file.exists()
    assert not old.exists()


def _brute_holders(s, e, tid, cs, ce, ct, f, la):
    want = {}
    for i in range(len(s)):
        ok = (ct == tid[i]) & (s[i] <= cs) & (np.maximum(cs, ce) <= e[i])
        if ok.any():
            want[i] = (int(ok.sum()), int(f[ok].min()), int(la[ok].max()))
    return want


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12), st.integers(0, 2)), min_size=1, max_size=25),
       st.lists(st.tuples(st.integers(-3, 55), st.integers(-2, 8), st.integers(0, 3), st.integers(0, 99)),
                min_size=1, max_size=25),
       st.integers(0, 4))
def test_the_nesting_walk_finds_every_range_holding_a_call(ranges, calls, rounds) -> None:
    """Ranges that nest, cross, touch or repeat: each range's held calls, first and last time are
    those of comparing it with every call of its thread (ranges still crossing after the layer
    rounds are left to that comparison, and are the only ones left out)."""
    s, length, tid = (np.array(c, dtype=np.int64) for c in zip(*ranges, strict=True))
    cs, cl, ct, f = (np.array(c, dtype=np.int64) for c in zip(*calls, strict=True))
    e, ce, la = s + length, cs + cl, f + 7
    with mock.patch.object(nvtx_nesting, "_LAYER_ROUNDS", rounds):
        h = nvtx_nesting.Holders(s, e, tid, np.arange(len(s)))
        h.add(cs[:10], ce[:10], ct[:10], f[:10], la[:10])  # (in two pieces, as the calls are fetched)
        h.add(cs[10:], ce[10:], ct[10:], f[10:], la[10:])
    got = {int(i): (int(c), int(a), int(b)) for i, c, a, b in zip(*h.spans(), strict=True)}
    want = _brute_holders(s, e, tid, cs, ce, ct, f, la)
    assert got == {i: v for i, v in want.items() if not h.crossing[i]}


def test_iterations_overlapping_their_neighbours_are_walked_in_layers() -> None:
    """Each iteration range starting just before the previous one ends, with nested ranges
    inside: every range is walked (none left to the comparison) and holds what it should."""
    s = np.array([0, 1, 4, 9, 11, 14, 19, 21], dtype=np.int64)
    e = np.array([10, 3, 7, 20, 12, 18, 30, 25], dtype=np.int64)
    tid = np.zeros(len(s), dtype=np.int64)
    cs = np.arange(-1, 32, dtype=np.int64)
    ce, ct, f = cs + 1, np.zeros(len(cs), dtype=np.int64), cs * 10
    h = nvtx_nesting.Holders(s, e, tid, np.arange(len(s)))
    h.add(cs, ce, ct, f, f + 5)
    assert not h.crossing.any() and h.layers == 2
    got = {int(i): (int(c), int(a), int(b)) for i, c, a, b in zip(*h.spans(), strict=True)}
    assert got == _brute_holders(s, e, tid, cs, ce, ct, f, f + 5)


def test_a_look_from_the_cache_ends_open_ranges_where_the_first_did(tmp_path, monkeypatch) -> None:
    """Where NVTX ranges never closed end is found while the loader reads the events: a second look,
    from the cache, reads no event and must still end them there, not at the last start."""
    import sqlite3

    from nsighttk.analysis.nsys.reports import run_report

    monkeypatch.setattr(engine, "CACHE_MIN_BYTES", 0)
    path = _copy(tmp_path)
    with sqlite3.connect(path) as con:  # one range left open, starting before the last one ends
        con.execute('UPDATE NVTX_EVENTS SET "end" = NULL WHERE rowid = (SELECT min(rowid) FROM NVTX_EVENTS '
                    "WHERE eventType = 59)")
    p = load(path)
    first = run_report("nvtx_sum", p).frame
    engine.of(p).con.close()
    again = load(path)
    _unreadable(again)
    pd.testing.assert_frame_equal(run_report("nvtx_sum", again).frame, first)


def test_a_subsets_engine_cuts_its_rows_from_the_parents_and_leaves_the_parent_alone() -> None:
    from nsighttk.subset import subset

    p = load(capture("streams_demo"))
    parent = engine.of(p).need({"kernels": ["name", "start_ns", "duration_ns"], "api": ["name"]})
    before = parent.rows("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()")
    keep = np.zeros(p.count("kernels"), dtype=bool)
    keep[1::3] = True
    sub = subset(p, {"kernels": keep})
    _unreadable(p)  # (every row of the subset comes from the parent's engine)
    eng = engine.of(sub).need({"kernels": ["name", "start_ns"]})
    eng.need({"kernels": ["duration_ns"]})
    whole = parent.rows("SELECT name, start_ns FROM kernels ORDER BY row_index")
    got = eng.rows("SELECT row_index, name, start_ns FROM kernels ORDER BY row_index")
    assert [r[0] for r in got] == list(range(int(keep.sum())))
    assert [r[1:] for r in got] == [w for w, k in zip(whole, keep, strict=True) if k]
    assert eng.rows("SELECT count(duration_ns) FROM kernels") == [(int(keep.sum()),)]
    calls = engine.of(sub).need({"api": ["name"]}).rows("SELECT name FROM api ORDER BY row_index")
    assert calls == parent.rows("SELECT name FROM api ORDER BY row_index")  # (a table the subset keeps whole)
    eng.con.execute("CREATE TABLE kernel_names AS SELECT 1 AS x")  # (an analysis' table, made in the subset)
    assert parent.rows("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()") == before
    assert eng.has_table("kernel_names") and not parent.has_table("kernel_names")


def test_each_operation_knows_the_call_that_launched_it() -> None:
    api = pd.DataFrame({"start_ns": [10, 20, 30, 40, 50], "end_ns": [11, 21, 31, 41, 51],
                        "correlation_id": [7, 7, 8, 9, 10],
                        "global_tid": [(1 << 24) | 5, (2 << 24) | 5, (1 << 24) | 6, (1 << 24) | 5, (2 << 24) | 5]})
    kernels = pd.DataFrame({"start_ns": [100, 200, 300, 400, 500], "end_ns": [101, 201, 301, 401, 501],
                            "duration_ns": [1] * 5, "name": ["k"] * 5,
                            "correlation_id": [7, 7, 8, 9, 11],
                            "global_pid": [2 << 24, 1 << 24, 1 << 24, 2 << 24, 1 << 24]})
    eng = engine.of(Profile(kernels=kernels, api=api)).need({"kernels": ["launch_call", "launch_ns"]})
    # (correlation id 7 in two processes: each operation its own process' call; 9's call is of another
    # process, 11 has none)
    assert eng.rows("SELECT launch_call, launch_ns FROM kernels ORDER BY row_index") == [
        (1, 20), (0, 10), (2, 30), (None, None), (None, None)]
    unknown = kernels.assign(global_pid=pd.array([None] * 5, dtype="Int64"))
    no_pid = engine.of(Profile(kernels=unknown, api=api)).need({"kernels": ["launch_call"]})
    assert no_pid.rows("SELECT launch_call FROM kernels ORDER BY row_index") == [(0,), (0,), (2,), (3,), (None,)]
