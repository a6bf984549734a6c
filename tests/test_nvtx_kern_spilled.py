"""The NVTX range kernel summary (``nvtx_kern_sum``) out of core (issue 15): the walk's pairs are
a plain reading of the rule (random inputs), and the report prints the same bytes as in memory on
every test export and on the unusual and damaged ones (forced with a tiny budget)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import capture, mutate
from test_nvtx_spilled import _spill, interrupted_leaves_nothing, same_at_a_tiny_budget
from test_spilled_stats import _exports, counted_scans
from test_stats_small import DAMAGED, DAMAGED_IDS, UNUSUAL, UNUSUAL_IDS

from nsighttk.analysis import nsys_report_nvtx, nsys_reports, nvtx_kern_spilled
from nsighttk.errors import NsightTKError
from nsighttk.load import nvtx_walk
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.report import nsys_format

TINY = 8 * 64  # (a budget of 8 rows a slice)


def _summary(p: object) -> str:
    """``nvtx_kern_sum``'s bytes, or its error."""
    try:
        res = nsys_reports.run_report("nvtx_kern_sum", p)  # type: ignore[arg-type]
    except NsightTKError as ex:
        return f"{type(ex).__name__}: {ex}"
    assert res.table is not None
    return nsys_format.to_csv(res.table) + (nsys_format.to_table(res.table) if not res.empty else "")


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each call of the out-of-core path gave the groups (False: in memory after all)."""
    taken: list[bool] = []
    real = nvtx_kern_spilled.kernel_stats

    def spy(*a: object) -> object:
        got = real(*a)  # type: ignore[arg-type]
        taken.append(got is not None)
        return got

    monkeypatch.setattr(nvtx_kern_spilled, "kernel_stats", spy)
    return taken


def _same_out_of_core(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The summary of ``path`` in memory, checked to be the same bytes out of core (taken)."""
    taken = _spied(monkeypatch)
    expected = _summary(load_nsys_sqlite(path))
    small = load_nsys_sqlite(path)
    small.budget = TINY
    assert _summary(small) == expected
    assert taken == [True]
    return expected


def test_the_kernel_summary_prints_the_same_bytes_out_of_core(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = _spied(monkeypatch)
    walked = []
    for path in _exports(tmp_path):
        expected = _summary(load_nsys_sqlite(path))
        assert not taken  # (the default budget holds these exports: in memory)
        small = load_nsys_sqlite(path)
        small.budget = TINY
        assert _summary(small) == expected, path.name
        if taken:
            assert taken == [True], path.name
            walked.append(path.name)
        taken.clear()
    assert sorted(walked) == ["gpt2_train.sqlite", "huge.sqlite", "streams_demo.sqlite", "synthetic.sqlite"]


@pytest.mark.parametrize("sql", UNUSUAL + [[s] for s in DAMAGED], ids=UNUSUAL_IDS + DAMAGED_IDS)
def test_unusual_and_damaged_exports_give_the_same_kernel_summary(sql: list[str], tmp_path: Path) -> None:
    same_at_a_tiny_budget(mutate(tmp_path, *sql), _summary)


@pytest.mark.parametrize("sql", ["UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = NULL",
                                 "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = correlationId + 1000000000",
                                 "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = NULL"],
                         ids=["no-kernel-ids", "no-matching-call", "no-call-thread"])
def test_no_kernel_launched_by_a_known_call(sql: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No kernel has a launching call on a known thread: every kernel under no range, without
    process or thread, as in memory (a review's finding: out of core this raised an IndexError)."""
    path = mutate(tmp_path, sql)
    expected = _same_out_of_core(path, monkeypatch)
    assert expected.splitlines()[1].startswith(",")  # (no range)


def test_ranges_around_every_kernel_count_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ranges of one label around all of a thread's calls (the second inside the first), and
    an open one: each kernel counts in each, each range once per kernel name (a range's id in more
    rows than the budget's: its groups gathered a chunk at a time), the same bytes as in memory."""
    outer = ("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
             "SELECT min(start) - {pad}, max(\"end\") + {pad}, 59, 'everything', globalTid, 0 "
             "FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY globalTid")
    path = mutate(tmp_path, outer.format(pad=2), outer.format(pad=1),
                  "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
                  "SELECT min(start), NULL, 59, 'open', globalTid, 0 FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                  "GROUP BY globalTid")
    expected = _same_out_of_core(path, monkeypatch)
    lines = expected.splitlines()
    everything = [x for x in lines if x.startswith(":everything,")]
    assert everything and all(x.split(",")[4] == "2" for x in everything)  # (NVTX Inst: the two ranges)
    assert any(x.startswith(":open,") for x in lines)


def test_deep_nesting_goes_out_of_core_where_its_pairs_would_not_fit(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows that fit in the budget, but 40 ranges around all of each thread's calls: 40 (range,
    kernel) pairs a kernel, more than the budget holds, so the summary is made out of core after
    all, the same bytes as in memory without a limit (where the pairs fit, in memory)."""
    outer = ("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
             "SELECT min(start) - {pad}, max(\"end\") + {pad}, 59, 'level {pad}', globalTid, 0 "
             "FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY globalTid")
    path = mutate(tmp_path, *(outer.format(pad=i) for i in range(1, 41)), name="gpt2_train")
    taken = _spied(monkeypatch)
    expected = _summary(load_nsys_sqlite(path))
    assert taken == []  # (the default budget holds the pairs)
    p = load_nsys_sqlite(path)
    p.budget = 64 * sum(p.count(t) for t in ("kernels", "api", "nvtx"))  # (the rows fit: not out of core at first)
    assert 40 * p.count("kernels") * nsys_report_nvtx.PAIR_BYTES > p.budget
    assert _summary(p) == expected
    assert taken == [True]


def test_ranges_of_two_domains_with_one_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Range ``b:c`` of domain ``a`` around a thread's calls, and range ``c`` of domain ``a:b``
    inside it: one label, ``a:b:c``, so one group per kernel name where each kernel counts once
    (Kern Inst) and the ranges twice (NVTX Inst), the same bytes as in memory."""
    def domain(i: int, name: str) -> str:
        return ("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
                f"SELECT 0, NULL, 75, '{name}', globalTid, {i} FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1")

    def around(pad: int, name: str, i: int) -> str:
        return ("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
                f"SELECT min(start) - {pad}, max(\"end\") + {pad}, 59, '{name}', globalTid, {i} "
                "FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY globalTid")

    path = mutate(tmp_path, domain(7, "a"), domain(8, "a:b"), around(2, "b:c", 7), around(1, "c", 8))
    expected = _same_out_of_core(path, monkeypatch)
    rows = [x.split(",") for x in expected.splitlines() if x.startswith("a:b:c,")]
    assert rows and all(x[4] == "2" for x in rows)


def test_an_interrupted_kernel_summary_leaves_no_temporary_files(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    calls = []

    def stop(*a: object) -> None:
        calls.append(1)
        raise KeyboardInterrupt

    for where, name in ((nvtx_kern_spilled, "launch_rows"), (nvtx_kern_spilled, "spilled_group_stats"),
                        (nvtx_kern_spilled, "_distinct")):
        with monkeypatch.context() as m:
            m.setattr(where, name, stop)
            interrupted_leaves_nothing("nvtx_kern_sum", temp)
    assert len(calls) == 3


def test_a_run_of_nvtx_reports_writes_each_table_once(monkeypatch: pytest.MonkeyPatch) -> None:
    p = load_nsys_sqlite(capture("streams_demo"))
    p.budget = TINY
    scans = counted_scans(p, monkeypatch)
    names = ["cuda_gpu_kern_sum", "nvtx_gpu_proj_sum", "nvtx_kern_sum"]
    nsys_reports.prefetch(p, names)
    for i, name in enumerate(names):
        nsys_reports.run_report(name, p)
        nsys_reports.release_memos(p, names[i + 1:])
    assert sorted(scans) == ["api", "kernels", "memcpy", "memset", "nvtx"]


# ------------------------------------------------------------------------ the walk's pairs


class _Collect:
    def __init__(self) -> None:
        self.got: list[tuple[int, int, int]] = []

    def rows(self, label: np.ndarray, range_id: np.ndarray, kernel: dict[str, np.ndarray]) -> None:
        self.got += zip(kernel["kid"].tolist(), range_id.tolist(), label.tolist(), strict=True)


def _blocks(columns: dict[str, np.ndarray], key: str, size: int) -> list:  # type: ignore[type-arg]
    """Rows in blocks of ``size`` by ascending ``key``, each block's rows shuffled."""
    order = np.argsort(columns[key], kind="stable")
    rng = np.random.default_rng(len(order))
    out = []
    for a in range(0, len(order), size):
        part = rng.permutation(order[a:a + size])
        out.append(_spill({c: v[part] for c, v in columns.items()}, rows=3))
    return out


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("sweep", [64, 0, 1])
def test_the_walk_pairs_each_call_with_the_ranges_that_hold_it(seed: int, sweep: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges nested, crossing and empty, calls inside, across and between them (keys: thread and
    time side by side, one thread here): each call paired with every range holding it whole
    (starting inside it, ending at or before its end; a call ending before it starts is held where
    it starts inside, as in memory), or once with none, as the plain rule pairs them; in blocks of a
    few ranges and calls and room for a few pairs, letting go ended ranges at every push (sweep 0)
    or as the live ones grow."""
    monkeypatch.setattr(nvtx_walk, "SWEEP", sweep)
    rng = np.random.default_rng(500 + seed)
    n, m = int(rng.integers(0, 40)), int(rng.integers(0, 60))
    rs = rng.integers(0, 200, size=n)
    r = {"ks": rs, "ke": rs + rng.integers(-2, 80, size=n), "key": rng.integers(0, 5, size=n),
         "id": rng.permutation(n).astype(np.int64)}
    cs = rng.integers(0, 220, size=m)
    c = {"global_tid": np.full(m, 7), "start_ns": cs, "end_ns": cs + rng.integers(-1, 15, size=m),
         "dur": rng.integers(1, 100, size=m), "name": rng.integers(0, 3, size=m), "kid": np.arange(m)}
    want = []
    for j in range(m):
        held = [(j, int(r["id"][i]), int(r["key"][i])) for i in range(n)
                if r["ks"][i] <= cs[j] <= r["ke"][i] and c["end_ns"][j] <= r["ke"][i]]
        want += held or [(j, -1, -1)]
    for size in (1, 4, 1000):
        out = _Collect()
        nvtx_kern_spilled._merge(_blocks(r, "ks", size), _blocks(c, "start_ns", size), lambda ch, col: ch[col],
                                 n, out, limit=size)  # type: ignore[arg-type]
        assert sorted(out.got) == sorted(want), (seed, size)


def test_a_call_of_no_length_where_one_range_ends_and_the_next_begins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranges [0, 10] and [10, 20], a call at 10 of no length: it is in both, also when the walk
    lets go ended ranges at every push (a range ending where the next begins is not let go)."""
    monkeypatch.setattr(nvtx_walk, "SWEEP", 0)
    r = {"ks": np.array([0, 10]), "ke": np.array([10, 20]), "key": np.array([3, 4]), "id": np.array([0, 1])}
    one = np.ones(1, dtype=np.int64)
    c = {"global_tid": one, "start_ns": 10 * one, "end_ns": 10 * one, "dur": one, "name": 0 * one, "kid": 0 * one}
    out = _Collect()
    nvtx_kern_spilled._merge([_spill(r)], [_spill(c)], lambda ch, col: ch[col], 2, out, limit=8)  # type: ignore[arg-type]
    assert sorted(out.got) == [(0, 0, 3), (0, 1, 4)]
