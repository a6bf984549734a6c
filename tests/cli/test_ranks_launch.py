"""`nsighttk ranks --launch` when a rank fails: a fake launcher (two ranks, RANK set, exit 1 when one
fails, as torchrun does) runs the fake nsys of tests/conftest.py, which writes the real H100 rank
exports; rank 1 prints a line and exits 3.  The launcher's exit code, the rank's status and the end
of its output are reported; with two reports the summary is kept, with one the error says why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nsighttk.cli import cli
from nsighttk.collect.nsys import NsysOptions, per_rank_command
from nsighttk.errors import UsageError

FIX = Path(__file__).parents[1] / "fixtures" / "h100-ranks"

FAKE_LAUNCHER = r'''#!/usr/bin/env python3
"""fakerun -n N CMD...: CMD once per rank, all at once, with RANK set; exits 1 if any rank failed.
FAKE_NO_REPORT_RANK=R: that rank's (fake) nsys writes no report."""
import os, subprocess, sys
n, cmd = int(sys.argv[2]), sys.argv[3:]
procs = []
for r in range(n):
    env = dict(os.environ, RANK=str(r))
    if os.environ.get("FAKE_NO_REPORT_RANK") == str(r):
        env["FAKE_NSYS_MODE"] = "importer-fail"
    procs.append(subprocess.Popen(cmd, env=env))
codes = [p.wait() for p in procs]
print("fakerun: exit codes", codes)
sys.exit(1 if any(codes) else 0)
'''

TARGET = ("import os, sys\n"
          "r = os.environ['RANK']\n"
          "print(f'rank {r}: step 1 loss 2.5', flush=True)\n"
          "if r in os.environ.get('FAIL_RANKS', '1').split(','):\n"
          "    print('RuntimeError: CUDA error: an illegal memory access was encountered', file=sys.stderr)\n"
          "    sys.exit(3)\n")


@pytest.fixture
def launcher(tmp_path: Path, fake_nsys: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    exe = tmp_path / "bin" / "fakerun"
    exe.write_text(FAKE_LAUNCHER)
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_NSYS_FIXTURE", str(FIX / "rank%q{RANK}.sqlite"))
    return exe


def _launch(launcher: Path, *extra: str) -> object:
    return CliRunner().invoke(cli, ["ranks", "--launch", f"{launcher} -n 2", "--rank-var", "RANK", *extra, "--",
                                    sys.executable, "-c", TARGET])


def _run_dir(tmp_path: Path) -> Path:
    [run] = [p for p in (tmp_path / "reports").iterdir() if p.is_dir()]
    return run


def test_a_failing_rank_with_both_reports_is_summarised_and_named(launcher: Path, tmp_path: Path) -> None:
    res = _launch(launcher, "--json")
    assert res.exit_code == 1, res.output  # (the launcher's: the summary is made, the failure not hidden)
    data = json.loads(res.stdout)
    assert [r["rank"] for r in data["ranks"]] == [0, 1]
    line = ("the launcher exited with 1; rank 1 exited with 3: RuntimeError: CUDA error: an illegal memory access "
            "was encountered")
    assert line in data["notes"]
    assert "rank 1 failed; the end of its output (raw/rank1.log in the run directory):" in res.stderr
    assert "  rank 1: step 1 loss 2.5\n  RuntimeError: CUDA error: an illegal memory access" in res.stderr
    run = _run_dir(tmp_path)
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "target_failed" and record["launcher_exit_code"] == 1
    assert record["rank_exit_codes"] == {"rank0": 0, "rank1": 3}
    assert (run / "raw" / "rank0.log").read_text() == "rank 0: step 1 loss 2.5\n"


def test_a_failing_rank_without_two_reports_is_one_line(launcher: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank 1's nsys leaves no report (only a .qdstrm) and exits 0, so the launcher exits 0 too: the
    rank's own status says it failed."""
    monkeypatch.setenv("FAKE_NO_REPORT_RANK", "1")
    res = _launch(launcher)
    assert res.exit_code == 2
    err = [ln for ln in res.stderr.splitlines() if ln.startswith("nsighttk: error:")]
    assert len(err) == 1 and err[0].startswith(
        "nsighttk: error: the launcher exited with 0; rank 1 exited with 3: RuntimeError: CUDA error: an illegal "
        "memory access was encountered; 1 per-rank report written, two or more are needed for a summary [run "
        "directory kept: ")
    assert "rank 1: step 1 loss 2.5" in res.stderr and "two or more ranks" not in res.stderr
    assert json.loads((_run_dir(tmp_path) / "run.json").read_text())["status"] == "failed"


def test_the_launchers_exit_code_is_the_commands(launcher: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither rank's report can be exported (the fake nsys fails on a missing fixture and exits 1, so
    the launcher exits 1): nothing to summarise; the launcher's exit code is nsighttk's, and each
    failed export is named."""
    monkeypatch.setenv("FAKE_NSYS_FIXTURE", str(tmp_path / "none.sqlite"))
    res = _launch(launcher)
    assert res.exit_code == 1
    err = [ln for ln in res.stderr.splitlines() if ln.startswith("nsighttk: error:")]
    assert len(err) == 1 and err[0].startswith("nsighttk: error: the launcher exited with 1; rank 1 exited with 3: ")
    assert "nsys export failed on rank0.nsys-rep (exit 1)" in err[0] and "0 per-rank reports written" in err[0]


def test_rank_logs_in_the_command_line() -> None:
    cmd = per_rank_command("/opt/nsys", ["srun", "-n", "2"], Path("/r/raw"), ["./app"], "SLURM_PROCID",
                           NsysOptions(), logs=True)
    assert cmd[cmd.index("true") + 1:] == ["sh", "-c", '"$@" >"$0/rank${SLURM_PROCID}.log" 2>&1; s=$?; '
                                           'echo "$s" >"$0/rank${SLURM_PROCID}.status"; exit "$s"', "/r/raw", "./app"]
    with pytest.raises(UsageError, match="not an environment variable name"):
        per_rank_command("/opt/nsys", ["srun"], Path("/r"), ["./app"], "X; rm -rf /", NsysOptions(), logs=True)


def test_a_run_where_every_rank_succeeds_has_no_failure(launcher: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIL_RANKS", "")
    res = _launch(launcher, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["notes"] == [] and "failed" not in res.stderr
    run = _run_dir(tmp_path)
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "ok" and record["rank_exit_codes"] == {"rank0": 0, "rank1": 0}
    assert (run / "raw" / "rank1.log").read_text() == "rank 1: step 1 loss 2.5\n"


def test_when_every_rank_fails_the_first_ones_output_is_shown(launcher: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAIL_RANKS", "0,1")
    res = _launch(launcher, "--json")
    assert res.exit_code == 1, res.output
    (note,) = json.loads(res.stdout)["notes"]
    assert note.startswith("the launcher exited with 1; rank 0 exited with 3: RuntimeError")
    assert "; rank 1 exited with 3: RuntimeError" in note
    assert "rank 0 failed; the end of its output (raw/rank0.log" in res.stderr and "rank 1 failed" not in res.stderr


def test_tail_of_a_rank_log(tmp_path: Path) -> None:
    """The last ten non-empty lines, read from the file's end only; a missing log has none."""
    from nsighttk.collect.nsys import tail

    log = tmp_path / "rank0.log"
    log.write_text("".join(f"line {i}\n\n" for i in range(30)))
    assert tail(log) == [f"line {i}" for i in range(20, 30)]
    assert tail(log, 2, max_bytes=12) == ["line 29"]  # (the last 12 bytes, "8\n\nline 29\n\n": "8" is cut)
    assert tail(tmp_path / "missing.log") == []
