"""`nsighttk nsys TARGET`: resolve, (build), profile, export, load, summarise, run directory.

nsys itself is replaced by a fake (conftest.FAKE_NSYS) that returns a real H200 capture; the
real thing is exercised on a GPU machine (see README)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import requires_nvcc

from nsighttk.cli import cli
from nsighttk.collect.nsys import NsysOptions, profile_command


def test_profile_command_is_a_list_with_small_capture_defaults() -> None:
    cmd = profile_command("/x/nsys", Path("/r/raw/profile"), ["./add", "10"], NsysOptions())
    assert cmd == ["/x/nsys", "profile", "--trace", "cuda,nvtx,osrt", "--sample", "none", "--cpuctxsw", "none",
                   "--export", "sqlite", "--output", "/r/raw/profile", "--force-overwrite", "true", "./add", "10"]


def test_user_flags_replace_defaults() -> None:
    cmd = profile_command("nsys", Path("o"), ["a"], NsysOptions(extra=["-s", "cpu", "--trace=cuda"]))
    assert "--sample" not in cmd and "--trace" not in cmd
    assert cmd[2:7] == ["--cpuctxsw", "none", "--export", "sqlite", "-s"]


def _script(tmp_path: Path, code: int) -> Path:
    s = tmp_path / "work.py"
    s.write_text(f"import sys\nprint('hello from the workload')\nsys.exit({code})\n")
    return s


def test_python_script_end_to_end(fake_nsys: Path, tmp_path: Path) -> None:
    # (--width 0: whole kernel names; piped output is laid out at 100 columns, names shortened)
    res = CliRunner().invoke(cli, ["nsys", "--width", "0", str(_script(tmp_path, 0)), "--", "--steps", "2"])
    assert res.exit_code == 0, res.output
    assert "CUDA kernels (cuda_gpu_kern_sum" in res.stdout and "theoretical occupancy" in res.stdout
    assert "_scale_add_kernel" in res.stdout and ":step 0" in res.stdout
    runs = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    assert len(runs) == 1 and runs[0].name.endswith("-nsys-work") and not runs[0].name.startswith(".tmp")
    record = json.loads((runs[0] / "run.json").read_text())
    assert record["status"] == "ok" and record["target_exit_code"] == 0
    assert record["command"] == [sys.executable, str(tmp_path / "work.py"), "--steps", "2"]
    assert record["counts"]["kernels"] == 25
    assert (runs[0] / "raw" / "profile.nsys-rep").is_file() and (runs[0] / "raw" / "profile.sqlite").is_file()
    assert (runs[0] / "raw" / "nsys-profile.log").read_text().count("hello from the workload") == 1
    summary = json.loads((runs[0] / "summary.json").read_text())
    assert summary["headline"]["kernels"] == 25
    assert "| Time (%) |" in (runs[0] / "summary.md").read_text()
    assert "--steps 2" in fake_nsys.read_text()


def test_failing_target_still_yields_profile(fake_nsys: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["nsys", str(_script(tmp_path, 7))])
    assert res.exit_code == 7
    assert "exited with code 7" in res.stderr
    [run] = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "target_failed" and record["target_exit_code"] == 7
    assert (run / "summary.md").is_file()


def test_importer_failure_names_the_library(fake_nsys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk import toolchain

    monkeypatch.setenv("FAKE_NSYS_MODE", "importer-fail")
    monkeypatch.setattr("nsighttk.collect.nsys.check_importer",
                        lambda nsys: toolchain.ImporterCheck("/x/QdstrmImporter", False, ["libdw.so.1"],
                                                             toolchain.explain_missing_libraries(["libdw.so.1"])))
    res = CliRunner().invoke(cli, ["nsys", str(_script(tmp_path, 0))])
    assert res.exit_code == 2
    line = res.stderr.strip().splitlines()[-1]
    assert "libdw.so.1" in line and "libdw1" in line and "profile.qdstrm" in line
    [run] = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    assert f"kept at {run}/raw/profile.qdstrm" in line and ".tmp-" not in line
    assert (run / "raw" / "profile.qdstrm").is_file()
    assert json.loads((run / "run.json").read_text())["status"] == "failed"


@requires_nvcc
def test_sample_target_is_built_first(fake_nsys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, ["nsys", "add", "--arch", "sm_80", "--json"])
    # No GPU here: the sample itself fails (CUDA error, exit 2) but its profile is still produced.
    data = json.loads(res.stdout)
    assert data["run"]["build"]["archs"] == ["sm_80"]
    assert Path(data["run"]["build"]["binary"]).is_file()
    assert data["run"]["target_exit_code"] == res.exit_code
    assert (tmp_path / "build" / "sm_80" / "add").is_file()
