"""The run-directory layout (nsighttk/runs/layout.py): the capture of a run directory of every tool is
found by one function and read by analyze, stats and report alike; the NVTX table of an nsys run reaches
the summary tables, the runs database and compare.  (Both were surviving mutants of the whole suite.)"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_exit, capture, fixture

from nsighttk.analysis.compare import items
from nsighttk.cli import cli
from nsighttk.runs.db import RunsDB
from nsighttk.runs.layout import capture_in, find_capture, summary_tables


def _run_dir(tmp_path: Path, tool: str, files: dict[str, Path | bytes]) -> Path:
    d = tmp_path / f"20260101T000000Z-{tool}-x"
    (d / "raw").mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"tool": tool, "target": "x", "status": "ok"}))
    for name, src in files.items():
        if isinstance(src, bytes):
            (d / "raw" / name).write_bytes(src)
        else:
            shutil.copy(src, d / "raw" / name)
    return d


KINETO = fixture("h100-torch2.11", "square", "trace.json")
CASES = {
    "nsys": ("profile.sqlite", capture("streams_demo")),
    "ncu": ("profile.ncu-rep", fixture("h200-ncu2025.3", "matmul_tiled.ncu-rep")),
    "ncu-csv": ("profile.raw.csv", fixture("h200-ncu2025.3", "matmul_tiled.raw.csv")),
    "torch": ("trace.json", KINETO),
    "torch-gz": ("trace.json.gz", gzip.compress(KINETO.read_bytes())),
    "torch-tensorboard": ("host_1.1700000000.pt.trace.json", KINETO),
}


def _analyze_json(path: Path, source: Path | None = None) -> str:
    """``analyze --json PATH`` with the capture's path (named as the source) replaced."""
    res = CliRunner().invoke(cli, ["analyze", "--json", str(path)])
    assert_exit(res, 0)
    assert str(source or path) in res.stdout
    return res.stdout.replace(str(source or path), "CAPTURE")


@pytest.mark.parametrize("case", CASES)
def test_the_capture_of_a_run_directory_of_every_tool_is_found_and_analysed(case: str, tmp_path: Path) -> None:
    name, src = CASES[case]
    run = _run_dir(tmp_path, case.split("-")[0], {name: src, "nsys-profile.log": b"a log, not a capture\n"})
    found = run / "raw" / name
    assert find_capture(run) == capture_in(run) == found
    assert find_capture(found) == found  # a file is taken as it is
    got = _analyze_json(run, found)
    assert got == _analyze_json(found if isinstance(src, bytes) else src)
    assert json.loads(got)  # and it is a whole analysis


def test_report_reads_the_capture_that_analyze_reads(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "torch", {"trace.json": KINETO})
    res = CliRunner().invoke(cli, ["report", str(run), "--json"])
    assert_exit(res, 0)
    direct = CliRunner().invoke(cli, ["report", str(KINETO), "--json"])
    assert_exit(direct, 0)
    page, direct_page = json.loads(res.stdout), json.loads(direct.stdout)
    assert page["title"] == "nsighttk torch: x"  # from run.json
    assert page["sections"] == direct_page["sections"] and len(page["sections"]) > 1


def test_a_run_directory_prefers_the_nsys_export_to_a_trace(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "nsys", {"trace.json": KINETO, "profile.sqlite": capture("add")})
    assert find_capture(run) == run / "raw" / "profile.sqlite"


@pytest.mark.parametrize(("files", "with_manifest", "message"), [
    ({}, True, "holds no capture (nothing under raw/ nsighttk reads)"),
    ({"notes.txt": b"x", "key_averages.txt": b"y"}, True, "holds no capture"),
    ({"trace.json": KINETO}, False, "is a folder without run.json, so not an nsighttk run directory"),
])
def test_a_folder_without_a_capture_is_one_line(files: dict, with_manifest: bool, message: str,
                                                  tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "torch", files)
    if not with_manifest:
        (run / "run.json").unlink()
    for command in ("analyze", "stats"):
        assert_exit(CliRunner().invoke(cli, [command, str(run)]), 2, line=message)


def test_the_nvtx_table_of_an_nsys_run_reaches_the_summary_tables_the_database_and_compare(
        fake_nsys: Path, tmp_path: Path) -> None:
    script = tmp_path / "work.py"
    script.write_text("print('work')\n")
    assert_exit(CliRunner().invoke(cli, ["nsys", str(script)]), 0)
    (run,) = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    nvtx_gpu = json.loads((run / "summary.json").read_text())["tables"]["nvtx_gpu"]
    assert nvtx_gpu and any(r["Range"].endswith("step 0") for r in nvtx_gpu)  # streams_demo's ranges
    tables = summary_tables(run)
    assert tables["nvtx"] == nvtx_gpu and tables["kernels"]
    kinds = items(tables)
    assert sorted(kinds.loc[kinds["kind"] == "nvtx", "name"]) == sorted(r["Range"] for r in nvtx_gpu)
    db = RunsDB(tmp_path / "reports" / "nsighttk.db", create=False)
    assert db.tables(db.get(str(run))["id"])["nvtx"] == nvtx_gpu
    res = CliRunner().invoke(cli, ["compare", str(run), str(run), "--all", "--json"])
    assert_exit(res, 0)
    compared = [r["name"] for r in json.loads(res.stdout)["rows"] if r["kind"] == "nvtx"]
    assert sorted(compared) == sorted(r["Range"] for r in nvtx_gpu)


def test_summary_tables_of_inspect_bench_and_ranks_runs(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, "inspect", {})
    (run / "kernels.json").write_text(json.dumps({"kernels": [{"kernel": "k", "registers": 32}, "not a row"]}))
    (run / "bench.json").write_text(json.dumps({"rows": [{"variant": "v", "median_ms": 1.0}]}))
    (run / "ranks.json").write_text(json.dumps([{"rank": 0}, {"rank": 1}]))
    assert summary_tables(run) == {"compiled": [{"kernel": "k", "registers": 32}],
                                   "variants": [{"variant": "v", "median_ms": 1.0}],
                                   "ranks": [{"rank": 0}, {"rank": 1}]}


def test_a_finished_run_names_its_artifacts_where_they_ended_up(fake_nsys: Path, tmp_path: Path) -> None:
    script = tmp_path / "work.py"
    script.write_text("print('work')\n")
    assert_exit(CliRunner().invoke(cli, ["nsys", str(script)]), 0)
    (run,) = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    record = json.loads((run / "run.json").read_text())
    assert record["run_dir"] == str(run)
    assert record["summary_md"] == str(run / "summary.md") and record["summary_json"] == str(run / "summary.json")
    assert Path(record["summary_md"]).is_file() and Path(record["report_html"]).is_file()
