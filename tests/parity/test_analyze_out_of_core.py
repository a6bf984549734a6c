"""`analyze` at a small memory limit: every analysis runs in the engine, which takes what does not
fit out of core; the summary is the same, number for number."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import capture, fixture, grown_export, mutate, record_memory_limits

from nsighttk import settings
from nsighttk.analysis import overview
from nsighttk.commands.analyze import analyze
from nsighttk.report import jsonout


def _json(path: Path) -> str:
    return json.dumps(jsonout.overview_dict(analyze(path)), sort_keys=True, default=str)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return grown_export(tmp_path_factory, kernels=3000, runtime=4000, memcpys=400, memsets=60, iterations=10)


@pytest.mark.parametrize("name", ["gpt2_train", "streams_demo", "ddp_rank0", "synthetic"])
def test_analyze_at_a_small_memory_limit_says_the_same(name: str, synthetic: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = {"gpt2_train": capture("gpt2_train"), "streams_demo": capture("streams_demo"),
            "ddp_rank0": fixture("h200x2-ddp", "rank0.sqlite"), "synthetic": synthetic}[name]
    expected = _json(path)
    monkeypatch.setenv("NSIGHTTK_MEMORY_MB", "32")  # (16, DuckDB's smallest, is too small for gpt2_train)
    settings.use(None)
    limits = record_memory_limits(monkeypatch)
    assert _json(path) == expected
    assert limits and set(limits) == {"30.5 MiB"}  # (every connection made ran at that limit)


def test_analyze_of_a_large_capture_says_each_step(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Minutes at 100M kernels: each step is said as it starts and ends (on stderr: --json's stdout
    stays clean); a small capture says nothing."""
    from nsighttk import settings

    monkeypatch.delenv("NSIGHTTK_QUIET")
    settings.use(None)
    path = capture("streams_demo")
    quiet = _json(path)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(overview, "PROGRESS_BYTES", path.stat().st_size)  # (this one counts as large)
    assert _json(path) == quiet
    err = capsys.readouterr().err.splitlines()
    started = [x.removeprefix("[nsighttk] ").removesuffix(" ...") for x in err if x.endswith(" ...")]
    assert started == ["reading the kernels, copies, runtime calls and NVTX ranges", "finding the iterations",
                       "summarising kernels, copies, calls and ranges", "communication and computation",
                       "what to try next (nsighttk's and nsys' rules)"]
    assert len([x for x in err if ": done in " in x]) == len(started) == len(err) // 2


@pytest.mark.parametrize("tiny", [False, True])
def test_an_overview_keeps_the_nvtx_names_with_most_time(tiny: bool, monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    """A name per range (emit_nvtx's ``seq = N``) must not make the summary as long as the capture:
    the NVTX summaries keep their rows with the most time (the others never formatted), say so, and
    the ops are summed over every name first; at the default memory limit and the smallest alike."""
    path = mutate(tmp_path, "UPDATE NVTX_EVENTS SET text = 'aten::op' || (rowid % 2) || ', seq = ' || rowid "
                            "WHERE eventType = 59")
    if tiny:
        monkeypatch.setenv("NSIGHTTK_MEMORY_MB", "16")
        settings.use(None)
    whole = analyze(path)
    assert whole.tables["nvtx"].shape[0] == 16 and len(whole.tables["autograd_ops"]) == 2
    assert not any("NVTX range names" in n for n in whole.notes)
    monkeypatch.setattr(overview, "NVTX_ROWS", 3)
    cut = analyze(path)
    for name, report in (("nvtx", "nvtx_sum"), ("nvtx_gpu", "nvtx_gpu_proj_sum")):
        pd.testing.assert_frame_equal(cut.tables[name], whole.tables[name].head(3))
        assert f"{len(whole.tables[name]):,} NVTX range names: the summary keeps the 3 with the most time " \
               f"(nsighttk stats -r {report} lists them all)" in cut.notes
    pd.testing.assert_frame_equal(cut.tables["autograd_ops"], whole.tables["autograd_ops"])
    assert cut.tables["nvtx"]["Total Time (ns)"].min() >= whole.tables["nvtx"]["Total Time (ns)"].iloc[3:].max()
