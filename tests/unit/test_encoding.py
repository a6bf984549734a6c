"""How a Profile holds columns (:mod:`nsighttk.encoding`): text and few-valued integers as codes,
decoded to exactly the column read (10M kernels' names, threads and processes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import capture

from nsighttk import encoding
from nsighttk.encoding import INT_NULL, Coded, few_values
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import SCHEMAS, widen

N = 16 * encoding._SAMPLE + 123  # long enough to be coded; not a whole number of samples


def test_text_codes_decode_to_shared_objects_and_none() -> None:
    names = np.array(["a", "b", None], dtype=object)
    c = Coded(np.array([0, 1, -1, 2, 1], dtype=np.int64), names).compact()
    assert c.codes.dtype == np.int8 and len(c) == 5
    got = c.decode()
    assert got.dtype == object and got.tolist() == ["a", "b", None, None, "b"]
    assert got[1] is got[4]  # one object per value, not a copy per row
    many = Coded(np.arange(300), np.array([str(i) for i in range(300)], dtype=object)).compact()
    assert many.codes.dtype == np.int16 and many.decode()[299] == "299"
    assert c.take(np.array([4, 0])).decode().tolist() == ["b", "a"]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16])
def test_few_values_are_coded_and_decode_exactly(dtype: type) -> None:
    rng = np.random.default_rng(3)
    low = np.iinfo(dtype).min  # (a narrowed column's missing value is a value like any other)
    values = np.array([low, 5, 7, (1 << 40) + 1 if dtype is np.int64 else 9], dtype=dtype)
    arr = values[rng.integers(0, 4, N)]
    c = few_values(arr)
    assert c is not None and c.codes.dtype == np.int8 and c.nbytes <= arr.nbytes / arr.itemsize + 64
    out = c.decode()
    assert out.dtype == arr.dtype and np.array_equal(out, arr)


@pytest.mark.parametrize(("seen", "missed"), [(100, 50), (1 << 40, 1 << 20), (100, 101), (100, -1)])
def test_a_value_the_sample_missed_is_found_and_coded(seen: int, missed: int) -> None:
    """A value between the rows the sample looks at, inside the values seen (a table by value; far
    apart: a search) or outside them, is found in one more pass and the column coded exactly; so
    many missed values that they pass ``most`` leave the column as it is."""
    arr = np.where(np.arange(N) % 3 == 0, 0, seen).astype(np.int64)
    step = N // encoding._SAMPLE
    arr[step * 3 + 1] = missed  # between two rows the sample looks at
    assert missed not in arr[::step]
    c = few_values(arr)
    assert c is not None and missed in c.values.tolist() and np.array_equal(c.decode(), arr)
    arr[step * np.arange(4, 204) + 1] = np.arange(1000, 1200)  # 200 more values the sample misses
    assert few_values(arr) is None


def test_many_values_short_columns_and_bytes_are_not_coded() -> None:
    assert few_values(np.arange(N, dtype=np.int64)) is None
    assert few_values(np.zeros(100, dtype=np.int64)) is None  # short: not worth it
    assert few_values(np.zeros(N, dtype=np.int8)) is None  # already one byte a value
    assert few_values(np.zeros(N, dtype=np.float64)) is None


def test_an_exports_text_columns_come_coded_and_read_as_before() -> None:
    path = capture("streams_demo")
    lazy = load_nsys_sqlite(path)
    for table in ("kernels", "api", "nvtx"):
        text = [c for c, t in SCHEMAS[table].items() if t == "object"]
        got = lazy.source.arrays(table, text)  # type: ignore[union-attr]
        coded = [c for c in text if isinstance(got[c], Coded)]
        assert coded, table
        frame = load_nsys_sqlite(path).table(table)  # every column, through frames
        arrays = lazy.arrays(table, text)
        for c in text:
            assert arrays[c].tolist() == frame[c].tolist(), (table, c)


def test_a_grown_exports_ids_come_coded_and_its_ends_as_sums(tmp_path: Path) -> None:
    """Runtime calls past the sample's length: the reader hands their thread ids as codes, pid and
    tid read off the same codes, and their ends as start plus duration; every column reads as the
    eager frames give it."""
    import shutil
    import sqlite3

    from nsighttk.profile import Sum

    path = tmp_path / "grown.sqlite"
    shutil.copy(capture("streams_demo"), path)
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_RUNTIME)")]
    while con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0] < N:
        con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME ({', '.join(cols)}) "
                    f"SELECT {', '.join(cols)} FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = globalTid + 7 WHERE rowid % 3 = 0")  # a 2nd thread
    con.commit()
    con.close()
    lazy = load_nsys_sqlite(path)
    wanted = ["start_ns", "end_ns", "duration_ns", "global_tid", "pid", "tid"]
    got = lazy.source.arrays("api", wanted)  # type: ignore[union-attr]
    assert isinstance(got["end_ns"], Sum)
    assert all(isinstance(got[c], Coded) for c in ("global_tid", "pid", "tid"))
    assert got["pid"].codes is got["global_tid"].codes  # one set of codes for the three
    arrays = lazy.arrays("api", wanted)
    frame = load_nsys_sqlite(path).table("api")
    for c in wanted:
        assert widen(arrays[c]).tolist() == frame[c].astype("Int64").fillna(INT_NULL).astype("int64").tolist(), c
    gtid = arrays["global_tid"]  # (and the ids' parts are the ids' bits, whatever path made them)
    assert len(set(gtid.tolist())) == 2 and (arrays["pid"] == (gtid >> 24) & 0xFFFFFF).all()
    assert (arrays["tid"] == gtid & 0xFFFFFF).all()
    assert (arrays["end_ns"] == arrays["start_ns"] + arrays["duration_ns"]).all()


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_string_ids_of_any_width_and_spread_look_up_their_texts(dtype: type) -> None:
    """The reader's look-up of string ids by offset from the smallest (offsets in 32 bits, codes in
    their final type): ids spread over a narrow type's whole range (an int16 loop would wrap
    -32767 .. 32767 to -2) and far from zero still find their texts; missing ids give None."""
    src = load_nsys_sqlite(capture("streams_demo")).source
    low, high = (-(2**15) + 1, 2**15 - 1) if dtype is np.int16 else (-(2**31) + 1, 2**31 - 1) \
        if dtype is np.int32 else ((1 << 40) + 3, (1 << 40) + 900)
    src._strings = {low: "low", high: "high", (low + high) // 2: "mid"}
    null = np.iinfo(dtype).min
    ids = np.array([high, low, null, (low + high) // 2, high, low + 1], dtype=dtype)
    got = src._coded(ids)
    assert got.decode().tolist() == ["high", "low", None, "mid", "high", None]
    assert got.codes.dtype == np.int8


def test_nvtx_domains_coded_from_few_pairs_equal_the_sorted_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """The loader labels each range with its (domain, process) pair: coded from a few pairs without
    a sort (``few_values``, here from 64 rows on) or by a sort, the same domains."""
    from synth import SynthSpec, make_export

    path = make_export(capture("streams_demo"), tmp_path / "domains.sqlite",
                       SynthSpec(kernels=200, runtime=300, memcpys=5, memsets=2, iterations=30))
    sorted_ = load_nsys_sqlite(path).arrays("nvtx", ["domain", "name"])
    from nsighttk.load import nsys_nvtx

    monkeypatch.setattr(encoding, "_SAMPLE", 4)
    coded: list[bool] = []

    def spy(a: np.ndarray) -> Coded | None:
        got = encoding.few_values(a)
        coded.append(got is not None)
        return got

    monkeypatch.setattr(nsys_nvtx, "few_values", spy)
    few = load_nsys_sqlite(path).arrays("nvtx", ["domain", "name"])
    assert all(coded) and coded and len(few["domain"]) >= 64 and {"", "mydomain"} <= set(few["domain"].tolist())
    assert few["domain"].tolist() == sorted_["domain"].tolist()


def test_narrowed_from_known_ranges_is_compact() -> None:
    """What the compiled page decoder hands on (the least and greatest values and the missing ones
    noted as it writes a column) narrows a column exactly as :func:`compact` does: values, type
    and missing values, at every type's edges, for empty, all-missing and int64-only columns."""
    rng = np.random.default_rng(11)
    edges = [0, 1, -1, 127, 128, -127, -128, -129, 32767, 32768, -32767, -32768, -32769,
             2**31 - 1, 2**31, -(2**31) + 1, -(2**31), -(2**31) - 1, 2**40, -(2**40), 2**63 - 1]
    cases = [np.empty(0, dtype=np.int64), np.full(5, INT_NULL, dtype=np.int64)]
    for _ in range(300):
        arr = rng.choice(np.array(edges, dtype=np.int64), size=int(rng.integers(1, 40)))
        if rng.random() < 0.5:
            arr[rng.random(len(arr)) < 0.3] = INT_NULL
        cases.append(arr)
    for arr in cases:
        known = arr[arr != INT_NULL]
        lo, hi = (int(known.min()), int(known.max())) if len(known) else (2**40, 2**40)  # (no value: any)
        for widest in (np.int8, np.int16, np.int32):
            want = encoding.compact(arr, widest)
            got = encoding.narrowed(arr.copy(), lo, hi, int((arr == INT_NULL).sum()), widest)
            assert got.dtype == want.dtype and np.array_equal(got, want), (arr, widest)
    with pytest.raises(TypeError):
        encoding.narrowed(np.zeros(3, dtype=np.int32), 0, 0, 0)
