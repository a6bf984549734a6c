"""nsighttk stats == nsys 2025.3's own `nsys stats`, byte for byte, on real H200 captures."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from conftest import CAPTURES, capture, fixture

from nsighttk import api
from nsighttk.analysis.nsys.reports import REPORTS
from nsighttk.cli import cli


@pytest.mark.parametrize("report", list(REPORTS))
@pytest.mark.parametrize("name", CAPTURES)
def test_csv_equals_nsys_stats(name: str, report: str) -> None:
    expected = fixture("h200-nsys2025.3", name, f"nsys_{report}.csv").read_text()
    [out] = api.stats(capture(name), report, "csv")
    assert out.text == expected


def test_every_report_has_rows_on_the_pytorch_capture() -> None:
    for out in api.stats(capture("streams_demo"), "all", "csv"):
        assert out.text.count("\n") > 1, out.report


def test_missing_nvtx_gives_empty_report_and_note() -> None:
    [out] = api.stats(capture("add"), "nvtx_sum", "csv")
    assert out.text == ""
    assert out.notes == ["no NVTX data"]


def test_cli_csv_to_stdout_and_prefix_files(tmp_path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["stats", str(capture("add")), "-r", "cuda_gpu_kern_sum", "-f", "csv"])
    assert res.exit_code == 0, res.output
    assert res.stdout == fixture("h200-nsys2025.3", "add", "nsys_cuda_gpu_kern_sum.csv").read_text()
    prefix = tmp_path / "out" / "x"
    res = runner.invoke(cli, ["stats", str(capture("add")), "-r", "cuda_api_sum,nvtx_sum", "-f", "csv",
                              "-o", str(prefix)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "x_cuda_api_sum.csv").read_text() == \
        fixture("h200-nsys2025.3", "add", "nsys_cuda_api_sum.csv").read_text()
    assert (tmp_path / "out" / "x_nvtx_sum.csv").read_text() == ""  # as nsys: an empty file
    # nothing the user has is overwritten without --force-overwrite
    res = runner.invoke(cli, ["stats", str(capture("add")), "-r", "cuda_api_sum", "-f", "csv", "-o", str(prefix)])
    assert res.exit_code == 2
    assert "already exists" in res.stderr and "--force-overwrite" in res.stderr
    res = runner.invoke(cli, ["stats", str(capture("add")), "-r", "cuda_api_sum", "-f", "csv", "-o", str(prefix),
                              "--force-overwrite"])
    assert res.exit_code == 0


def test_table_and_json_formats_carry_the_same_numbers() -> None:
    [table] = api.stats(capture("add"), "cuda_gpu_kern_sum", "table")
    assert "95,053,890" in table.text and "add(int, float *, float *)" in table.text
    [js] = api.stats(capture("add"), "cuda_gpu_mem_size_sum", "json")
    import json

    rows = json.loads(js.text)
    assert rows[0]["Operation"] == "[CUDA memcpy Unified Host-to-Device]"
    assert rows[0]["Total (MB)"] == 8.389  # nsys: 8.389


def test_old_report_names_are_aliases() -> None:
    [a] = api.stats(capture("streams_demo"), "gpukernsum", "csv")
    [b] = api.stats(capture("streams_demo"), "cuda_gpu_kern_gb_sum", "csv")
    assert a.text == b.text
