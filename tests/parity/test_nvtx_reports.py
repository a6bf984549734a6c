"""The NVTX reports as queries: the projection and the kernel summary follow nsys' rule read plainly
(random inputs), edge cases of the rule, and the same bytes when DuckDB has almost no memory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import CAPTURES, capture, fixture, mutate
from synth import SynthSpec, make_export
from test_stats_sql import DAMAGED, DAMAGED_IDS, UNUSUAL, UNUSUAL_IDS
from test_stats_without_pandas import huge_export

from nsighttk import settings
from nsighttk.analysis.nsys import reports as nsys_reports
from nsighttk.analysis.nsys.nvtx import nvtx_projection
from nsighttk.errors import NsightTKError
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import Profile
from nsighttk.report import nsys_format


def _exports(tmp_path: Path) -> list[Path]:
    """The test captures, a GPT-2 training step, an export with huge values and a synthetic one."""
    synthetic = make_export(capture("streams_demo"), tmp_path / "synthetic.sqlite",
                            SynthSpec(kernels=3000, runtime=4000, memcpys=400, memsets=60, iterations=10))
    return [*(capture(c) for c in CAPTURES), fixture("h200-nsys2025.3", "gpt2_train.sqlite"),
            huge_export(tmp_path), synthetic]


_NVTX_REPORTS = ("nvtx_sum", "nvtx_gpu_proj_sum", "nvtx_kern_sum")


def _inputs(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Ranges nested, crossing and open, some ended on another thread; calls apart, overlapping,
    of no length, some on no thread; kernels sharing, missing or not matching ids; two processes."""
    tids = [(1 << 24) + 7, (1 << 24) + 8, (2 << 24) + 7]
    n_r, n_c, n_k = (int(x) for x in rng.integers(1, 14, size=3))
    start = 5 * rng.integers(0, 20, size=n_r)  # (times on a coarse grid: ranges and calls share bounds)
    end = start + 5 * rng.integers(0, 12, size=n_r)
    nvtx = pd.DataFrame({
        "range_id": np.arange(n_r) + 1, "start_ns": start,
        "end_ns": pd.array(np.where(rng.random(n_r) < 0.1, -1, end), dtype="Int64").astype("Int64"),
        "global_tid": rng.choice(tids, size=n_r),
        "end_global_tid": pd.array([tids[0] if x < 0.1 else None for x in rng.random(n_r)], dtype="Int64"),
        "name": rng.choice(["a", "b", "c"], size=n_r).astype(object),
        "domain": rng.choice(["", "d"], size=n_r).astype(object), "style": ["PushPop"] * n_r})
    nvtx.loc[nvtx["end_ns"] == -1, "end_ns"] = pd.NA
    c_start = 5 * rng.integers(0, 30, size=n_c)
    api = pd.DataFrame({
        "start_ns": c_start, "end_ns": c_start + 5 * rng.integers(0, 3, size=n_c),
        "correlation_id": pd.array(rng.integers(1, 6, size=n_c), dtype="Int64"),
        "global_tid": pd.array([None if x < 0.1 else t for x, t in zip(rng.random(n_c), rng.choice(tids, size=n_c),
                                                                     strict=True)], dtype="Int64")})
    api["duration_ns"] = api["end_ns"] - api["start_ns"]
    k_start = rng.integers(0, 300, size=n_k)
    kernels = pd.DataFrame({
        "start_ns": k_start, "end_ns": k_start + rng.integers(1, 20, size=n_k),
        "correlation_id": pd.array([None if x < 0.1 else int(c) for x, c in zip(rng.random(n_k),
                                                                                rng.integers(1, 7, size=n_k),
                                                                                strict=True)], dtype="Int64"),
        "global_pid": pd.array(rng.choice([1 << 24, 2 << 24], size=n_k), dtype="Int64"),
        "name": rng.choice(["k1", "k2"], size=n_k).astype(object)})
    kernels["duration_ns"] = kernels["end_ns"] - kernels["start_ns"]
    return nvtx, api, kernels


def _last_ts(nvtx: pd.DataFrame) -> int:
    """The last NVTX timestamp: where open ranges end."""
    return int(pd.concat([nvtx["start_ns"], nvtx["end_ns"].dropna()]).max())


def _plain(nvtx: pd.DataFrame, api: pd.DataFrame, kernels: pd.DataFrame
           ) -> tuple[dict[int, tuple[int, int, int]], dict[tuple[object, ...], list[int]]]:
    """The rule read plainly: per projected range (its position among the ranges ended on their own
    thread), the launching calls it holds whole, their kernels' first start and span; and per
    (pid, tid, label, kernel name), the kernels and ranges of ``nvtx_kern_sum``."""
    first: dict[tuple[int, int], int] = {}
    for i, (corr, tid) in enumerate(zip(api["correlation_id"], api["global_tid"], strict=True)):
        if not pd.isna(corr) and not pd.isna(tid):
            first.setdefault((int(tid) >> 24, int(corr)), i)
    call_of = [None if pd.isna(c) else first.get((int(g) >> 24, int(c))) for c, g in
               zip(kernels["correlation_id"], kernels["global_pid"], strict=True)]
    last_ts = _last_ts(nvtx)
    closed = nvtx[nvtx["end_global_tid"].isna()].reset_index(drop=True)
    holds: dict[int, list[int]] = {}  # range position -> kernels
    for pos, r in closed.iterrows():
        end = last_ts if pd.isna(r["end_ns"]) else int(r["end_ns"])
        for k, c in enumerate(call_of):
            if c is not None and api["global_tid"][c] == r["global_tid"] and \
                    r["start_ns"] <= api["start_ns"][c] and api["end_ns"][c] <= end:
                holds.setdefault(int(pos), []).append(k)  # type: ignore[call-overload]
    spans = {}
    for pos, ks in holds.items():
        s, e = min(kernels["start_ns"][k] for k in ks), max(kernels["end_ns"][k] for k in ks)
        spans[pos] = (len({call_of[k] for k in ks}), int(s), int(e - s))
    groups: dict[tuple[object, ...], list[int]] = {}
    for k, c in enumerate(call_of):
        g = None if c is None or pd.isna(api["global_tid"][c]) else int(api["global_tid"][c])
        who = (None, None) if g is None else ((g >> 24) & 0xFFFFFF, g & 0xFFFFFF)
        ranges = [pos for pos, ks in holds.items() if k in ks]
        for pos in ranges or [None]:
            label = None if pos is None else f"{closed['domain'][pos]}:{closed['name'][pos]}"
            groups.setdefault((*who, label, kernels["name"][k]), []).append(k)
    return spans, groups


@pytest.mark.parametrize("seed", range(40))
def test_the_projection_and_kernel_summary_follow_the_rule(seed: int) -> None:
    nvtx, api, kernels = _inputs(np.random.default_rng(seed))
    p = Profile(nvtx=nvtx, api=api, kernels=kernels)
    p.meta["nvtx_max_ts_ranges"] = _last_ts(nvtx)
    spans, groups = _plain(nvtx, api, kernels)
    proj = nvtx_projection(p)
    got = {int(r.range_pos): (int(r.gpu_ops), int(r.proj_start_ns), int(r.proj_ns)) for r in proj.itertuples()}
    assert got == spans
    kern = nsys_reports.nvtx_kern_sum(p).frame
    seen = {}
    for r in kern.itertuples(index=False):
        pid, tid = (None if pd.isna(r[2]) else int(r[2])), (None if pd.isna(r[3]) else int(r[3]))
        label = None if pd.isna(r[0]) else r[0]
        seen[(pid, tid, label, r[12])] = (int(r[5]), int(r[6]))  # (Kern Inst, Total Time)
    want = {key: (len(set(ks)), int(sum(kernels["duration_ns"][k] for k in ks))) for key, ks in groups.items()}
    assert seen == want


def _profile(ranges: list[tuple[int, int]], calls: list[tuple[int, int]]) -> Profile:
    """Ranges and calls on one thread, each call launching one kernel [100 + i, 101 + i]."""
    tid = (1 << 24) + 7
    n = len(calls)
    return Profile(
        nvtx=pd.DataFrame({"range_id": range(1, len(ranges) + 1), "start_ns": [s for s, _ in ranges],
                           "end_ns": [e for _, e in ranges], "global_tid": [tid] * len(ranges),
                           "name": [f"r{i}" for i in range(len(ranges))], "domain": [""] * len(ranges),
                           "style": ["PushPop"] * len(ranges),
                           "end_global_tid": pd.array([None] * len(ranges), dtype="Int64")}),
        api=pd.DataFrame({"start_ns": [s for s, _ in calls], "end_ns": [e for _, e in calls],
                          "correlation_id": range(1, n + 1), "global_tid": [tid] * n}),
        kernels=pd.DataFrame({"start_ns": [100 + i for i in range(n)], "end_ns": [101 + i for i in range(n)],
                              "duration_ns": [1] * n, "correlation_id": range(1, n + 1), "global_pid": [1 << 24] * n,
                              "name": ["k"] * n}))


def test_a_call_of_no_length_where_one_range_ends_and_the_next_begins() -> None:
    """Ranges [0, 10] and [10, 20], a call [10, 10]: both hold it."""
    proj = nvtx_projection(_profile([(0, 10), (10, 20)], [(10, 10)]))
    assert proj["name"].tolist() == [":r0", ":r1"] and proj["gpu_ops"].tolist() == [1, 1]


def test_levels_and_children_follow_the_nesting() -> None:
    """An outer range around two inner ones, each around a call, and one inside the second without
    work: levels 0, 1, 1; the outer has two children that projected work."""
    proj = nvtx_projection(_profile([(0, 100), (10, 20), (30, 60), (40, 50)], [(12, 13), (32, 33)]))
    assert proj["range_pos"].tolist() == [0, 1, 2]
    assert proj["level"].tolist() == [0, 1, 1] and proj["children"].tolist() == [2, 0, 0]
    assert proj["gpu_ops"].tolist() == [2, 1, 1] and proj["proj_ns"].tolist() == [2, 1, 1]


def _reports(p: Profile) -> list[str]:
    """The three NVTX reports' bytes (or their errors) and the projection's rows."""
    out = []
    for name in _NVTX_REPORTS:
        try:
            res = nsys_reports.run_report(name, p)
            assert res.table is not None
            out.append(nsys_format.to_csv(res.table) + "\n".join(res.notes))
        except NsightTKError as ex:
            out.append(f"{type(ex).__name__}: {ex}")
    out.append(nvtx_projection(p).to_csv())
    return out


def _same_with_little_memory(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The reports of ``path``, checked to be the same bytes where DuckDB has 16 MB (it spills)."""
    expected = _reports(load_nsys_sqlite(path))
    monkeypatch.setenv("NSIGHTTK_MEMORY_MB", "16")
    settings.use(None)
    try:
        assert _reports(load_nsys_sqlite(path)) == expected, path.name
    finally:
        monkeypatch.delenv("NSIGHTTK_MEMORY_MB")
        settings.use(None)
    return expected


def test_the_reports_are_the_same_with_little_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for path in _exports(tmp_path):
        _same_with_little_memory(path, monkeypatch)


@pytest.mark.parametrize("sql", UNUSUAL + [[s] for s in DAMAGED], ids=UNUSUAL_IDS + DAMAGED_IDS)
def test_unusual_and_damaged_exports(sql: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _same_with_little_memory(mutate(tmp_path, *sql), monkeypatch)


@pytest.mark.parametrize("sql", ["UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = NULL",
                                 "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = correlationId + 1000000000",
                                 "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = NULL"],
                         ids=["no-kernel-ids", "no-matching-call", "no-call-thread"])
def test_no_kernel_launched_by_a_known_call(sql: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No kernel has a launching call on a known thread: every kernel under no range, without
    process or thread."""
    kern = _same_with_little_memory(mutate(tmp_path, sql), monkeypatch)[2]
    assert kern.splitlines()[1].startswith(",")  # (no range)


def test_ranges_around_every_kernel_count_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ranges of one label around all of a thread's calls (the second inside the first), and
    an open one: each kernel counts in each, each range once per kernel name."""
    outer = ("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
             "SELECT min(start) - {pad}, max(\"end\") + {pad}, 59, 'everything', globalTid, 0 "
             "FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY globalTid")
    path = mutate(tmp_path, outer.format(pad=2), outer.format(pad=1),
                  "INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
                  "SELECT min(start), NULL, 59, 'open', globalTid, 0 FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                  "GROUP BY globalTid")
    lines = _same_with_little_memory(path, monkeypatch)[2].splitlines()
    everything = [x for x in lines if x.startswith(":everything,")]
    assert everything and all(x.split(",")[4] == "2" for x in everything)  # (NVTX Inst: the two ranges)
    assert any(x.startswith(":open,") for x in lines)


def test_ranges_of_two_domains_with_one_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Range ``b:c`` of domain ``a`` around a thread's calls, and range ``c`` of domain ``a:b``
    inside it: one label, ``a:b:c``, so one group per kernel name where each kernel counts once
    (Kern Inst) and the ranges twice (NVTX Inst)."""
    def domain(i: int, name: str) -> str:
        return ("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
                f"SELECT 0, NULL, 75, '{name}', globalTid, {i} FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1")

    def around(pad: int, name: str, i: int) -> str:
        return ("INSERT INTO NVTX_EVENTS (start, \"end\", eventType, text, globalTid, domainId) "
                f"SELECT min(start) - {pad}, max(\"end\") + {pad}, 59, '{name}', globalTid, {i} "
                "FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY globalTid")

    path = mutate(tmp_path, domain(7, "a"), domain(8, "a:b"), around(2, "b:c", 7), around(1, "c", 8))
    rows = [x.split(",") for x in _same_with_little_memory(path, monkeypatch)[2].splitlines()
            if x.startswith("a:b:c,")]
    assert rows and all(x[4] == "2" for x in rows)


def test_open_ranges_end_at_the_last_start_without_a_bound(tmp_path: Path) -> None:
    """Every range open and no NVTX bound in the metadata: open ranges end at the latest start of
    the ranges ended on their own thread."""
    p = load_nsys_sqlite(mutate(tmp_path, 'UPDATE NVTX_EVENTS SET "end" = NULL'))
    p.meta["nvtx_max_ts_ranges"] = None
    proj = nvtx_projection(p)
    last = int(p.nvtx["start_ns"].max())
    starts = p.nvtx["start_ns"].to_numpy()[proj["range_pos"].to_numpy()]
    assert len(proj) and (proj["range_ns"].to_numpy() == last - starts).all()
