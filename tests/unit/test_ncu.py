"""Nsight Compute data: loading (.ncu-rep, details and raw CSV), the per-kernel summary against
ncu's own details export, our occupancy calculator against ncu, CSV quirks and bad input."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_exit, fixture, refused

from nsighttk.analysis.kernels.occupancy import occupancy
from nsighttk.analysis.ncu_summary import FIELDS, summarize
from nsighttk.cli import cli
from nsighttk.errors import InputFileError
from nsighttk.load.ncu import load_ncu_csv, load_ncu_rep
from nsighttk.units import parse_number, to_base

REPS = ["add_grid_b256", "add_grid_b1024", "matmul_tiled"]
ncu_report = pytest.importorskip("ncu_report", reason="pip install ncu-report (make setup does)")


def ncu(name: str) -> Path:
    return fixture("h200-ncu2025.3", name)


@pytest.mark.parametrize("name", REPS)
def test_rep_numbers_equal_ncu_details_export(name: str) -> None:
    ours = summarize(load_ncu_rep(ncu(f"{name}.ncu-rep"))).kernels.iloc[0]
    details = load_ncu_csv(ncu(f"{name}.details.csv")).metrics
    checked = 0
    for field, (_, display) in FIELDS.items():
        if display is None:
            continue
        row = details[(details["section"] == display[0]) & (details["metric"] == display[1])]
        if row.empty:
            continue
        shown = row["text"].iloc[0] if isinstance(row["text"].iloc[0], str) else None
        value, unit = float(row["value"].iloc[0]), str(row["unit"].iloc[0])
        factor = to_base(1.0, unit)[0]
        # ncu prints at most 2 decimals: our value in ncu's unit, rounded the same way, must match.
        ours_in_unit = ours[field] / factor
        assert round(ours_in_unit, 2) == pytest.approx(value, abs=0.0051), (field, ours_in_unit, value, shown)
        checked += 1
    assert checked >= 18


@pytest.mark.parametrize("source", [f"{n}.ncu-rep" for n in REPS] + [f"{n}.raw.csv" for n in REPS]
                         + ["streams_demo.raw.csv"] + [f"{n}.details.csv" for n in REPS])
def test_occupancy_calculator_agrees_with_ncu(source: str) -> None:
    p = load_ncu_rep(ncu(source)) if source.endswith(".ncu-rep") else load_ncu_csv(ncu(source))
    kernels = summarize(p).kernels
    assert len(kernels) >= 1
    for k in kernels.itertuples(index=False):
        assert k.calc_theoretical_pct == pytest.approx(k.theoretical_occupancy_pct), k.kernel
        assert k.calc_limiters == k.limiters, k.kernel


def test_register_limited_kernel_and_block_sizes() -> None:
    m = summarize(load_ncu_rep(ncu("matmul_tiled.ncu-rep"))).kernels.iloc[0]
    assert m.limiters == "registers, shared memory" and m.theoretical_occupancy_pct == 50.0
    b256, b1024 = (summarize(load_ncu_rep(ncu(f"add_grid_{b}.ncu-rep"))).kernels.iloc[0] for b in ("b256", "b1024"))
    assert (b256.block_x, b1024.block_x) == (256, 1024)
    assert b256.limit_warps == 8 and b1024.limit_warps == 2 and b256.verdict == "memory-bound"


def test_calculator_without_a_known_carveout() -> None:
    occ = occupancy("sm_90", 256, 62, 0, 32768)
    # the carveout the driver picked on the H200 for this launch (132 KiB), hence the tie ncu reports
    assert (occ.active_blocks, occ.theoretical_pct, occ.limiters) == (4, 50.0, ["registers", "shared memory"])
    assert occ.smem_config_bytes == 132 * 1024
    occ = occupancy("sm_80", 1024, 16)
    assert occ.theoretical_pct == 100.0 and occ.limiters == ["warps"]
    with pytest.raises(ValueError):
        occupancy("sm_90", 2048, 16)


def test_rules_ordered_by_estimated_speedup() -> None:
    rules = summarize(load_ncu_rep(ncu("matmul_tiled.ncu-rep"))).rules
    sp = rules["speedup_pct"].dropna().tolist()
    assert sp == sorted(sp, reverse=True) and sp[0] == pytest.approx(51.77, abs=0.01)
    assert rules.iloc[0]["rule"] == "AchievedOccupancy" and rules.iloc[0]["speedup_type"] == "local"


def test_csv_quirks() -> None:
    assert parse_number("1,234,567.89") == 1234567.89
    assert math.isnan(parse_number("n/a")) and math.isnan(parse_number("")) and math.isnan(parse_number("all"))
    assert to_base(57.44, "us") == (57440.0, "ns")
    assert to_base(3.19, "Tbyte/s") == (3.19e12, "byte/s")
    assert to_base(32.77, "Kbyte/block") == (32770.0, "byte/block")
    raw = load_ncu_csv(ncu("add_grid_b256.raw.csv")).metrics
    row = raw[raw["metric"] == "dram__bytes_read.sum"].iloc[0]
    assert (row["unit"], row["value"]) == ("byte", 134227456.0)  # "Mbyte","134.227456" in the file


def test_bad_input(tmp_path: Path) -> None:
    refused(load_ncu_csv, tmp_path / "x.csv", "a,b\n1,2\n", "not an Nsight Compute CSV")
    refused(load_ncu_csv, tmp_path / "session.csv", '"ID","Process ID","Attribute","Value"\n"0","1","clock","1"\n',
            "not from the details or raw page")
    cut = tmp_path / "cut.ncu-rep"
    refused(load_ncu_rep, cut, ncu("matmul_tiled.ncu-rep").read_bytes()[:5000])
    res = CliRunner().invoke(cli, ["analyze", str(cut)])
    assert assert_exit(res, 2).startswith("nsighttk: error: ")


def test_cli_analyze_ncu_and_stats_refuses_it() -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["analyze", str(ncu("matmul_tiled.ncu-rep"))])
    said = " ".join(res.stdout.split())  # at any width: the sentence may wrap
    assert res.exit_code == 0 and "limited by registers, shared memory" in said
    res = runner.invoke(cli, ["analyze", str(ncu("add_grid_b1024.details.csv")), "--json"])
    assert res.exit_code == 0 and '"limit_warps": 2.0' in res.stdout
    res = runner.invoke(cli, ["stats", str(ncu("matmul_tiled.ncu-rep"))])
    assert res.exit_code == 2 and "nsighttk analyze" in res.stderr


def test_ncu_command_line_is_a_list_with_filters_as_given() -> None:
    from nsighttk.collect.ncu import NcuOptions, ncu_command

    cmd = ncu_command("/x/ncu", Path("/r/raw/profile"), ["./add", "1"],
                      NcuOptions(kernel="regex:add", nvtx_include=["demo/", "step 0/"], count=3, clock_control="none"))
    assert cmd == ["/x/ncu", "--set", "full", "--clock-control", "none", "-k", "regex:add", "--nvtx",
                   "--nvtx-include", "demo/", "--nvtx-include", "step 0/", "-c", "3", "-f", "-o", "/r/raw/profile",
                   "./add", "1"]


@pytest.mark.parametrize(("built", "gpu", "plan"), [
    (["sm_90"], "sm_90", "native"), (["sm_80"], "sm_86", "native"), (["sm_80"], "sm_90", "jit"),
    (["sm_100"], "sm_90", "cannot"), (["sm_80", "sm_100"], "sm_90", "cannot"), ([], "sm_90", "native"),
])
def test_arch_plan(built: list[str], gpu: str, plan: str) -> None:
    from nsighttk.build import arch_plan

    assert arch_plan(built, gpu)[0] == plan


def test_ncu_failures_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk.collect import ncu as collect
    from nsighttk.errors import ProfilerFailed

    for text, expected in [("==WARNING== No kernels were profiled.\n", "matched nothing"),
                           ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n", "ERR_NVGPUCTRPERM"),
                           ("==ERROR== The application returned an error code (3).\n", "exit code 3")]:
        monkeypatch.setattr(collect, "run_logged", lambda *a, t=text, **k: (1, t))
        with pytest.raises(ProfilerFailed, match=expected):
            collect.profile("ncu", tmp_path, ["./x"], collect.NcuOptions(kernel="nope"))


def test_join_nsys_and_ncu_captures_of_the_same_program() -> None:
    from conftest import capture

    from nsighttk.analysis.join import normalize_kernel_name

    nsys_name = ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::AbsFunctor<float>, "
                 "std::array<char *, (unsigned long)2>>(int, T2, T3)")
    ncu_name = "void at::vectorized_elementwise_kernel<4, at::AbsFunctor<float>, std::array<char *, 2>>(int, T2, T3)"
    assert normalize_kernel_name(nsys_name) == normalize_kernel_name(ncu_name)
    res = CliRunner().invoke(cli, ["analyze", str(capture("streams_demo")), str(ncu("streams_demo.raw.csv")), "--json"])
    assert res.exit_code == 0, res.output
    import json

    rows = json.loads(res.stdout)
    assert len(rows) == 9 and sum(r["ncu_profiled"] for r in rows) == 6  # every profiled kernel found its nsys twin
    gemm = next(r for r in rows if r["kernel"].endswith("execute_kernel__5x_cublas"))
    assert (gemm["nsys_instances"], gemm["theoretical_occupancy_pct"], gemm["limiters"]) == (3, 37.5, "registers")
    assert rows[0]["verdict"] == "not profiled by ncu"
    assert rows[0]["nsys_share_pct"] == max(r["nsys_share_pct"] for r in rows)
    res = CliRunner().invoke(cli, ["analyze", str(capture("add")), str(capture("add"))])
    assert res.exit_code == 2 and "one nsys capture and one Nsight Compute capture" in res.stderr


def test_nsys_kernel_table_gets_theoretical_occupancy_that_ncu_confirms() -> None:
    from conftest import capture

    from nsighttk import api

    kernels = api.analyze(capture("streams_demo")).tables["kernels"]  # type: ignore[union-attr]
    occ = dict(zip(kernels["Name"], kernels["Theoretical Occupancy (%)"], strict=True))
    ncu_view = summarize(load_ncu_csv(ncu("streams_demo.raw.csv"))).kernels
    from nsighttk.analysis.join import normalize_kernel_name

    by_norm = {normalize_kernel_name(n): v for n, v in occ.items()}
    for k in ncu_view.itertuples(index=False):
        assert by_norm[normalize_kernel_name(k.kernel)] == pytest.approx(k.theoretical_occupancy_pct), k.kernel


def test_nvtx_stack_of_a_kernel_is_formatted_like_ncu_shows_it() -> None:
    from nsighttk.load._ncu_rep_worker import _nvtx

    class Domain:
        def __init__(self, name: str, stack: list[str], ranges: list[str]) -> None:
            self._n, self._s, self._r = name, stack, ranges

        def name(self) -> str:
            return self._n

        def push_pop_ranges(self) -> list[str]:
            return self._s

        def start_end_ranges(self) -> list[str]:
            return self._r

    class State:  # the shape ncu_report's INvtxState has (seen on an H200 capture)
        def __init__(self, domains: dict[int, Domain]) -> None:
            self._d = domains

        def domains(self) -> list[int]:
            return list(self._d)

        def domain_by_id(self, i: int) -> Domain:
            return self._d[i]

    class Action:
        def __init__(self, state: State | None) -> None:
            self._s = state

        def nvtx_state(self) -> State | None:
            return self._s

    state = State({0: Domain("<default domain>", ["demo", "step 0", "compute"], []),
                   1: Domain("io", [], ["prefetch"])})
    assert _nvtx(Action(state)) == "demo/step 0/compute; io:prefetch"
    assert _nvtx(Action(None)) == ""


def test_nvtx_columns_of_a_details_export() -> None:
    # ncu --set basic --nvtx --nvtx-include demo/ -c 3 on kernels/streams_demo.py (H200): its
    # details export carries the NVTX stack in extra, version-dependent columns.
    k = summarize(load_ncu_csv(ncu("streams_demo_nvtx.details.csv"))).kernels
    assert k["nvtx_range"].tolist() == ["demo/step 0/compute", "demo/step 0/compute", "demo/step 0/triton"]
    res = CliRunner().invoke(cli, ["analyze", str(ncu("streams_demo_nvtx.details.csv"))])
    assert res.exit_code == 0 and "NVTX range: demo/step 0/triton" in res.stdout


def test_every_kernel_summary_carries_the_decoded_name() -> None:
    from conftest import capture

    from nsighttk import api

    kernels = api.analyze(capture("streams_demo")).tables["kernels"]  # type: ignore[union-attr]
    dec = dict(zip(kernels["Name"], kernels["Decoded"], strict=True))
    gemm = next(v for n, v in dec.items() if n.startswith("sm80_xmma_gemm_f32f32"))
    assert gemm.startswith("cuBLAS (xmma), matrix, sm_80") and "no tensor cores" in gemm
    ncu_view = summarize(load_ncu_csv(ncu("streams_demo.raw.csv"))).kernels
    assert ncu_view["decoded"].iloc[0] == gemm  # the same kernel in ncu and nsys decodes alike
    assert ncu_view["decoded"].iloc[3].endswith("vectorized_elementwise_kernel: abs")


def test_a_crash_of_ncu_report_is_named_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen on an H100 host: the worker reading a sound .ncu-rep died of SIGSEGV; say so, not 'damaged'."""
    import subprocess

    import nsighttk.load.ncu as ncu_mod

    rep = tmp_path / "profile.ncu-rep"
    rep.write_bytes(b"NVR\x00" + bytes(64))  # starts as a report does
    monkeypatch.setattr(ncu_mod.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, -11, "", ""))
    with pytest.raises(InputFileError, match="crashed reading it \\(SIGSEGV\\); the report itself may be sound"):
        ncu_mod.load_ncu_rep(rep)


def test_a_negative_cell_is_missing_and_said(tmp_path: Path) -> None:
    """A duration of "-5,000.5" (a damaged raw CSV) is no kernel time: missing, with a note; the
    other kernels keep theirs."""
    import csv

    src = ncu("streams_demo.raw.csv")
    rows = list(csv.reader(src.read_text().splitlines()))
    col = rows[0].index("gpu__time_duration.sum")
    data = [i for i, r in enumerate(rows) if r and r[0].isdigit()]
    rows[data[1]][col] = "-5,000.5"
    damaged = tmp_path / "ncu.csv"
    with damaged.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    s = summarize(load_ncu_csv(damaged))
    durations = s.kernels["duration_ns"].tolist()
    assert math.isnan(durations[1]) and all(d > 0 for i, d in enumerate(durations) if i != 1)
    assert any("negative metric value" in n for n in s.notes)
