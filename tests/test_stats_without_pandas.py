"""``nsighttk stats`` summaries are built and printed without pandas: reports hold rows
of Python values (or, the NVTX ones, a numpy column Table), printed byte for byte as the DataFrame
they convert to would be."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import CAPTURES, capture

from nsighttk.analysis import nsys_reports as R
from nsighttk.analysis.coltable import Table
from nsighttk.analysis.groupstats import factorize_sorted
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.report import nsys_format

ROOT = Path(__file__).resolve().parent.parent
SUMMARIES = [r for r in R.REPORTS if r != "cuda_gpu_trace"]


def huge_export(tmp_path: Path) -> Path:
    """streams_demo with three kernels of one name lasting 2^62 ns (exact totals and averages)."""
    k = "CUPTI_ACTIVITY_KIND_KERNEL"
    dst = tmp_path / "huge.sqlite"
    shutil.copy(capture("streams_demo"), dst)
    con = sqlite3.connect(dst)
    con.execute(f"UPDATE {k} SET \"end\" = start + {2**62} WHERE rowid IN (SELECT rowid FROM {k} WHERE "
                f"demangledName = (SELECT demangledName FROM {k} GROUP BY 1 HAVING count(*) >= 3 LIMIT 1) LIMIT 3)")
    con.commit()
    con.close()
    return dst


@pytest.mark.parametrize("name", [*CAPTURES, "huge"])
def test_summaries_render_as_their_dataframes(name: str, tmp_path: Path) -> None:
    from nsighttk.commands.stats import render_report

    path = huge_export(tmp_path) if name == "huge" else capture(name)
    p = load_nsys_sqlite(path)
    for report in SUMMARIES:
        res = R.run_report(report, p)
        frame = res.frame
        assert list(frame.columns) == (res.columns if res.rows is not None else res.table.columns)  # type: ignore[union-attr]
        assert render_report(res, "csv") == nsys_format.to_csv(frame), report
        if not frame.empty:
            assert render_report(res, "table") == nsys_format.to_table(frame), report
            assert render_report(res, "json") == nsys_format.to_json(frame), report


def test_stats_cli_never_imports_pandas(tmp_path: Path) -> None:
    code = ("import sys, runpy; sys.argv = ['nsighttk'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('nsighttk', run_name='__main__')\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "print('pandas' in sys.modules)")
    for fmt in ("csv", "table", "json"):
        out = subprocess.run([sys.executable, "-c", code, "stats", "-r", ",".join(SUMMARIES), "-f", fmt,
                              "-o", str(tmp_path / fmt), str(capture("streams_demo"))],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
        assert out.stdout.strip().splitlines()[-1] == "False", (fmt, out.stdout, out.stderr)
        assert len(list(tmp_path.glob(f"{fmt}_*"))) == len(SUMMARIES)


@pytest.mark.parametrize("values", [
    ["b", "a", None, "b", "c", "a", None],
    [3, 1, 2, 3, -1],
    [10**12, 5, -(10**15), 10**12],
    [2.5, float("nan"), 1.0, 2.5],
    [],
])
def test_factorize_sorted_matches_pandas(values: list) -> None:
    arr = np.array(values, dtype=object if values and isinstance(values[0], str) else None)
    if arr.dtype == np.float64 and not len(values):
        arr = np.array([], dtype=object)
    codes, uniques = factorize_sorted(arr)
    want_codes, want_uniques = pd.factorize(pd.Series(arr, dtype=arr.dtype), sort=True, use_na_sentinel=False)
    assert codes.tolist() == want_codes.tolist()
    assert [None if u is None or u != u else u for u in uniques.tolist()] == \
        [None if u is None or u != u else u for u in list(want_uniques)]


def test_equal_strings_of_different_objects_share_a_code() -> None:
    a = "".join(["ker", "nel"])
    b = "".join(["ke", "rnel"])
    assert a is not b
    codes, uniques = factorize_sorted(np.array([a, "z", b, None], dtype=object))
    assert codes.tolist() == [0, 1, 0, 2] and uniques.tolist() == ["kernel", "z", None]


def test_table_sort_is_stable_with_missing_values_last() -> None:
    t = Table({"k": np.array([2, 1, 2, 5, 1]), "s": np.array(["x", "y", None, "a", "b"], dtype=object),
               "i": np.arange(5)}, masks={"k": np.array([False, False, False, True, False])})
    got = t.sorted(["k", "s"], [False, True])
    want = t.to_pandas().sort_values(["k", "s"], ascending=[False, True], kind="mergesort")
    assert got.data["i"].tolist() == want["i"].tolist() == [0, 2, 4, 1, 3]


@pytest.mark.parametrize("scale", [1, 2**40])
def test_group_stats_one_sort_or_lexsort_agree_with_pandas(scale: int) -> None:
    from nsighttk.analysis.groupstats import group_stats

    rng = np.random.default_rng(7)
    keys = rng.integers(0, 50, 5000) * scale  # scale 2^40: key range x value range beyond 2^62
    values = rng.integers(-(10**6), 10**9, 5000)
    g = group_stats(keys, values)
    want = pd.DataFrame({"k": keys, "v": values}).groupby("k")["v"].agg(["count", "sum", "median", "min", "max"])
    assert g.key.tolist() == want.index.tolist()
    assert g.count.tolist() == want["count"].tolist() and g.total.tolist() == want["sum"].tolist()
    assert g.med.tolist() == want["median"].tolist()
    assert g.min.tolist() == want["min"].tolist() and g.max.tolist() == want["max"].tolist()


def test_group_stats_group_by_group_equal_all_at_once_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Few keys: the groups are found in the sorted pairs and reduced one at a time (memory of one
    group); many: all at once.  Both give the same statistics to the last bit, whatever the
    inputs' integer types, signs, sizes (2^53 and beyond: exact fractions) and group sizes."""
    from nsighttk.analysis import groupstats

    rng = np.random.default_rng(11)
    cases = []
    for dtype in ("int8", "int16", "int32", "int64"):
        hi = np.iinfo(dtype).max
        keys = rng.integers(0, min(hi, 40), 4000).astype(dtype)
        keys[rng.random(4000) < 0.6] = 3  # one large group
        cases.append((keys, rng.integers(-min(hi, 10**6), min(hi, 10**9), 4000).astype(dtype)))
    cases.append((np.array([5, -2, 5, 7], dtype="int32"), np.array([2**53 + 1, 3, 2**60, -(2**61)])))
    cases.append((np.zeros(1, dtype="int16"), np.array([9], dtype="int16")))
    cases.append((rng.integers(-3, 3, 2000), np.full(2000, 2**62)))  # sums past int64: Python ints
    paths = []
    for keys, values in cases:
        paths.append(groupstats._few_groups(groupstats._ints(keys), groupstats._ints(values)) is not None)
        got = groupstats.group_stats(keys, values)
        with monkeypatch.context() as m:
            m.setattr(groupstats, "_FEW_KEYS", 0)
            want = groupstats.group_stats(keys, values)
        for field in ("key", "count", "total", "avg", "med", "min", "max", "stddev"):
            a, b = getattr(got, field), getattr(want, field)
            assert a.dtype == b.dtype and a.tolist() == b.tolist(), (field, keys.dtype)
            if a.dtype == "float64":
                assert a.tobytes() == b.tobytes(), field
        ref = pd.DataFrame({"k": keys.astype("int64"), "v": values.astype("int64")}).groupby("k")["v"]
        assert got.key.tolist() == list(ref.groups) and got.count.tolist() == ref.count().tolist()
    assert paths == [True, True, True, True, False, True, True]  # (2^60 x key range: past one int64)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_factorize_narrow_ids_whose_range_their_type_cannot_hold(dtype: str) -> None:
    """Ids kept narrow, a missing one as the type's minimum: dense ids are ranked by their offset
    from the smallest, an offset the narrow type may not hold (int8: 100 - (-128) = 228)."""
    from nsighttk.analysis.groupstats import factorize_sorted

    info = np.iinfo(dtype)
    ids = np.array([info.min, 100, 3, info.min, 100, 7] * 50, dtype=dtype)
    codes, uniq = factorize_sorted(ids)
    assert uniq.tolist() == [info.min, 3, 7, 100] and uniq.dtype == ids.dtype
    assert codes.tolist() == [0, 3, 1, 0, 3, 2] * 50


@pytest.mark.parametrize("old_numpy", [False, True])
def test_factorize_texts_by_object_then_by_value(monkeypatch: pytest.MonkeyPatch, old_numpy: bool) -> None:
    """Texts are grouped by object first (their ids read off the array), then equal texts held by
    different objects merge; None and NaN last; slices and empty arrays too; numpy before 2.3
    (no hashing ``unique``) gives the same codes."""
    from nsighttk.analysis import groupstats

    if old_numpy:
        unique = np.unique

        def no_sorted(*a: object, **k: object) -> object:
            if "sorted" in k:
                raise TypeError("unique() got an unexpected keyword argument 'sorted'")
            return unique(*a, **k)  # type: ignore[call-overload]

        monkeypatch.setattr(groupstats.np, "unique", no_sorted)
    rng = np.random.default_rng(3)
    pool = np.array(["kernel", "".join(["ker", "nel"]), "a", None, "zé", float("nan"), ""], dtype=object)
    assert pool[0] is not pool[1]  # equal texts, two objects
    arr = pool[rng.integers(0, len(pool), 5000)]
    for a in (arr, arr[::3], arr[:0], arr[arr != "a"]):
        assert groupstats._object_ids(a).tolist() == [id(v) for v in a]
        codes, uniq = groupstats.factorize_sorted(a)
        texts = sorted({v for v in a.tolist() if isinstance(v, str)})
        missing = any(not isinstance(v, str) for v in a.tolist())
        assert uniq[:len(texts)].tolist() == texts and len(uniq) == len(texts) + missing
        want = [texts.index(v) if isinstance(v, str) else len(texts) for v in a.tolist()]
        assert codes.tolist() == want


def test_group_stats_of_values_at_int64s_limits_and_texts_of_several_types() -> None:
    """Edge cases a table given by hand can hold: every value int64's minimum (missing durations
    as nsighttk marks them) or maximum; names of several types (sorted by type, then text)."""
    from nsighttk.analysis.groupstats import factorize_sorted, group_stats

    lo, hi = np.iinfo("int64").min, np.iinfo("int64").max
    g = group_stats(np.array([0, 0, 1]), np.array([lo, lo, lo]))
    assert g.key.tolist() == [0, 1] and g.count.tolist() == [2, 1] and g.min.tolist() == g.max.tolist() == [lo, lo]
    assert g.total.tolist() == [2 * lo, lo]  # (Python integers past int64: exact)
    g = group_stats(np.array([3, 3]), np.array([hi, hi - 1]))
    assert g.min.tolist() == [hi - 1] and g.max.tolist() == [hi] and g.total.tolist() == [2 * hi - 1]
    codes, uniq = factorize_sorted(np.array([1, "step 1", 2.5, None, "a", 1], dtype=object))
    assert uniq.tolist() == [2.5, 1, "a", "step 1", None] and codes.tolist() == [1, 3, 0, 4, 2, 1]
