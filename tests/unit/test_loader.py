"""The Profile contract, and exports from other nsys versions (missing tables and columns)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import capture, mutate

from nsighttk import api
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import SCHEMAS, Profile


def test_tables_follow_the_contract() -> None:
    p = load_nsys_sqlite(capture("streams_demo"))
    for table, schema in SCHEMAS.items():
        assert list(p.table(table).columns) == list(schema), table
    assert p.counts() == {"kernels": 25, "memcpy": 12, "memset": 3, "api": 1223, "nvtx": 16, "ops": 0, "metrics": 0,
                          "rules": 0, "gpus": 1}
    k = p.kernels
    assert (k["duration_ns"] == k["end_ns"] - k["start_ns"]).all()
    assert set(p.memcpy["kind"]) == {"HtoD", "DtoH", "DtoD"}
    g = p.gpus.iloc[0]
    assert (g["name"], g["compute_capability"], g["sm_count"]) == ("NVIDIA H200", "9.0", 132)
    assert g["memory_bandwidth_bytes_per_s"] == 4_814_304_000_000
    assert p.meta["tool_version"] == "2025.3.2.0" and p.meta["command"][0] == "python3"
    n = p.nvtx.set_index("name")
    assert n.loc["demo", "depth"] == 0 and n.loc["step 0", "depth"] == 1 and (n.loc["h2d", "depth"] == 2).all()


def test_empty_profile_has_all_tables() -> None:
    p = Profile()
    assert all(p.table(t).empty and list(p.table(t).columns) == list(s) for t, s in SCHEMAS.items())


def test_no_kernel_table_like_nsys_2022_on_cuda13(tmp_path: Path) -> None:
    f = mutate(tmp_path, "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    p = load_nsys_sqlite(f)
    assert p.kernels.empty and any("no CUDA kernels in this capture" in n for n in p.notes)
    outs = {o.report: o for o in api.stats(f, "all", "csv")}
    assert outs["cuda_gpu_kern_sum"].text == "" and outs["cuda_gpu_kern_sum"].notes == ["no CUDA kernel data"]
    assert "[CUDA memcpy Device-to-Host]" in outs["cuda_gpu_sum"].text
    assert outs["nvtx_kern_sum"].text == ""
    assert outs["nvtx_gpu_proj_sum"].text  # memcpys still project onto ranges
    api.analyze(f)


def test_no_nvtx_table(tmp_path: Path) -> None:
    f = mutate(tmp_path, "DROP TABLE NVTX_EVENTS")
    p = load_nsys_sqlite(f)
    assert p.nvtx.empty and any("no NVTX ranges" in n for n in p.notes)


def test_old_schema_columns_missing(tmp_path: Path) -> None:
    f = mutate(tmp_path,
               "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN shortName",
               "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN greenContextId",
               "ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN copyCount",
               "ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN greenContextId",
               "ALTER TABLE CUPTI_ACTIVITY_KIND_MEMSET DROP COLUMN greenContextId")
    p = load_nsys_sqlite(f)
    assert len(p.kernels) == 25 and p.kernels["green_context_id"].isna().all()
    assert (p.kernels["short_name"] == p.kernels["name"]).all()
    [kern] = api.stats(f, "cuda_gpu_kern_sum", "csv")
    assert kern.text == (capture("streams_demo").parent / "streams_demo" / "nsys_cuda_gpu_kern_sum.csv").read_text()


def test_memcpy_labels_of_the_older_era(tmp_path: Path) -> None:
    f = mutate(tmp_path, "UPDATE ENUM_CUDA_MEMCPY_OPER SET label = CASE id WHEN 1 THEN 'HtoD' WHEN 2 THEN 'DtoH' "
                         "WHEN 8 THEN 'DtoD' ELSE label END")
    p = load_nsys_sqlite(f)
    assert set(p.memcpy["label"]) == {"HtoD", "DtoH", "DtoD"}
    assert set(p.memcpy["kind"]) == {"HtoD", "DtoH", "DtoD"}
    [mem] = api.stats(f, "cuda_gpu_mem_time_sum", "csv")
    assert "[CUDA memcpy DtoH]" in mem.text


def test_no_enum_tables(tmp_path: Path) -> None:
    f = mutate(tmp_path, "DROP TABLE ENUM_CUDA_MEMCPY_OPER", "DROP TABLE ENUM_CUDA_MEM_KIND")
    p = load_nsys_sqlite(f)
    assert set(p.memcpy["label"]) == {"Host-to-Device", "Device-to-Host", "Device-to-Device"}
    assert any("ENUM_CUDA_MEMCPY_OPER" in n for n in p.notes)


def test_only_runtime_calls(tmp_path: Path) -> None:
    f = mutate(tmp_path, "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL", "DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY",
               "DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET", "DROP TABLE NVTX_EVENTS")
    outs = {o.report: o for o in api.stats(f, "all", "csv")}
    assert outs["cuda_api_sum"].text.startswith("Time (%)")
    assert all(o.text == "" and o.notes for r, o in outs.items() if r != "cuda_api_sum")


@pytest.mark.parametrize("name", ["add", "add_grid_stride", "streams_demo"])
def test_analyze_overview(name: str) -> None:
    ov = api.analyze(capture(name))
    assert ov.headline["kernels"] == len(load_nsys_sqlite(capture(name)).kernels)
    assert ov.headline["gpu"].startswith("NVIDIA H200, CC 9.0, 132 SMs")


@pytest.mark.parametrize("rows", [
    [], [(1, None, 34)], [(1, 5, 59)], [(1, None, 59), (3, 9, 34)], [(1, "x", 59), (2, 3, 60)],
    [(1.5, 2, 59), (7, None, 70)], [(None, None, 59)], [(4, 2, None)], [(2, 9, 34), (1, None, 71)],
    [(-5, -1, 59), (3, 4, 34)],
])
def test_nvtx_bounds_in_one_scan_equal_the_two_scan_definition(rows: list[tuple]) -> None:
    """Where ranges never closed end: the last timestamp of any NVTX event, and of ranges, as
    nsys computes them (two queries); ours asks SQLite once, with the same answer on mixed types,
    NULLs and no ranges at all."""
    import sqlite3

    from nsighttk.load.nsys_schema import NVTX_BOUNDS_SQL, NVTX_WHERE

    con = sqlite3.connect(":memory:")
    con.execute('CREATE TABLE NVTX_EVENTS (start, "end", eventType)')
    con.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?)", rows)
    two_scans = ('SELECT max(max(start), max("end")), (SELECT max(max(start), max("end")) FROM NVTX_EVENTS '
                 f"WHERE {NVTX_WHERE}) FROM NVTX_EVENTS")
    assert con.execute(NVTX_BOUNDS_SQL).fetchall() == con.execute(two_scans).fetchall()
