"""Every user mistake: one line on stderr, a non-zero exit, no traceback, nothing overwritten."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_exit, capture

from nsighttk.cli import cli


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    assert_exit(res, res.exit_code)  # callers check the code; here: no escaped exception, errors on one line
    return res.exit_code, res.stderr.strip()


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("nsighttk: error: ")
    return lines[0]


def test_missing_path() -> None:
    code, err = run("stats", "/no/such/capture.sqlite")
    assert code == 2 and "no such file" in one_line(err)


def test_directory(tmp_path: Path) -> None:
    code, err = run("analyze", str(tmp_path))
    assert code == 2 and "is a folder without run.json, so not an nsighttk run directory" in one_line(err)


def test_not_sqlite(tmp_path: Path) -> None:
    f = tmp_path / "notes.sqlite"
    f.write_text("hello")
    code, err = run("stats", str(f))
    assert code == 2 and "not an SQLite file" in one_line(err) and "nsys export" in err


def test_truncated_sqlite(tmp_path: Path) -> None:
    data = capture("streams_demo").read_bytes()
    f = tmp_path / "cut.sqlite"
    f.write_bytes(data[: len(data) // 3])
    code, err = run("stats", str(f), "-r", "all")
    assert code == 2 and "corrupt or truncated" in one_line(err)


def test_corrupt_pages(tmp_path: Path) -> None:
    data = bytearray(capture("streams_demo").read_bytes())
    data[4096:4096 * 20] = b"\x42" * (4096 * 19)
    f = tmp_path / "bad.sqlite"
    f.write_bytes(bytes(data))
    code, err = run("stats", str(f), "-r", "all")
    assert code == 2 and ("corrupt" in one_line(err) or "not an Nsight Systems export" in err)


def test_sqlite_that_is_not_an_nsys_export(tmp_path: Path) -> None:
    f = tmp_path / "other.sqlite"
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE people (name TEXT)")
    con.commit()
    con.close()
    code, err = run("stats", str(f))
    assert code == 2 and "not an Nsight Systems export" in one_line(err)


def test_unknown_report() -> None:
    code, err = run("stats", str(capture("add")), "-r", "cuda_gpu_kern_sum,gpu_magic")
    assert code == 2 and "unknown report gpu_magic" in one_line(err) and "cuda_gpu_trace" in err


def test_nsys_rep_without_nsys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSIGHTTK_NSYS", str(tmp_path / "no-nsys-here"))
    f = tmp_path / "x.nsys-rep"
    f.write_bytes(b"\0" * 64)
    code, err = run("stats", str(f))
    assert code == 3 and "needs nsys" in one_line(err)


def test_nsys_missing_for_profiling(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NSIGHTTK_NSYS", str(tmp_path / "nope"))
    code, err = run("nsys", "add")
    assert code == 3 and "NSIGHTTK_NSYS" in one_line(err)


def test_unknown_target(fake_nsys: Path) -> None:
    code, err = run("nsys", "no_such_program_xyz")
    assert code == 2 and "unknown target" in one_line(err) and "add" in err


def test_target_path_missing(fake_nsys: Path) -> None:
    code, err = run("nsys", "./missing/prog")
    assert code == 2 and "no such file" in one_line(err)


def test_target_not_executable(fake_nsys: Path, tmp_path: Path) -> None:
    f = tmp_path / "prog"
    f.write_text("data")
    code, err = run("nsys", str(f))
    assert code == 2 and "not executable" in one_line(err)


def test_unsupported_arch() -> None:
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    code, err = run("build", "add", "--arch", "sm_70")
    line = one_line(err)
    assert code == 2 and "cannot build sm_70" in line and "sm_75" in line and "sm_90" in line


def test_bad_arch_spelling() -> None:
    code, err = run("arch", "sm_banana")
    assert code == 2
    assert one_line(err) == ("nsighttk: error: unknown GPU model or architecture: 'sm_banana' (try a model such as "
                             "H100 or RTX 4090, or an arch such as sm_90 (nsighttk arch lists all))")


def test_user_file_is_opened_read_only(tmp_path: Path) -> None:
    f = tmp_path / "c.sqlite"
    shutil.copy(capture("streams_demo"), f)
    f.chmod(0o444)
    before = f.read_bytes()
    code, _ = run("stats", str(f), "-r", "all", "-f", "csv")
    assert code == 0
    assert f.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite"]  # no -journal/-wal left behind


def test_stats_output_location_not_writable() -> None:
    code, err = run("stats", str(capture("add")), "-f", "csv", "-o", "/proc/no-such-dir/x")
    assert code == 2 and "-o folder /proc/no-such-dir: cannot be created" in one_line(err)


def test_unknown_file_type(tmp_path: Path) -> None:
    f = tmp_path / "ncu.log"
    f.write_text("==PROF== Report: x.ncu-rep\n")
    code, err = run("analyze", str(f))
    assert code == 2 and "not a capture nsighttk reads" in one_line(err)


def test_reports_dir_not_writable(fake_nsys: Path, tmp_path: Path) -> None:
    script = tmp_path / "w.py"
    script.write_text("print('hi')\n")
    code, err = run("nsys", str(script), "--reports-dir", "/proc/no-such-dir")
    assert code == 2 and "cannot create a run directory under /proc/no-such-dir" in one_line(err)


def test_ncu_count_must_be_positive() -> None:
    code, _ = run("ncu", "add", "-c", "0")
    assert code == 2


@pytest.mark.parametrize(("argv", "says"), [
    (["ncu", "add", "-c", "0"], "Invalid value for '-c' / '--count': 0 is not in the range x>=1. "
                                "(see nsighttk ncu --help)"),
    (["analyze"], "Missing argument 'FILES...'. (see nsighttk analyze --help)"),
    (["frobnicate"], "No such command 'frobnicate'. (see nsighttk --help)"),
    (["stats", "--bogus", "x"], "No such option '--bogus'. (see nsighttk stats --help)"),
])
def test_usage_errors_are_one_line_from_the_entry_point(argv: list[str], says: str) -> None:
    """What a user's shell shows (the entry point, not CliRunner): click's usage, hint and error
    become one line."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "nsighttk", *argv], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"nsighttk: error: {says}\n")


def test_messages_from_sqlite_are_decoded_with_replacement() -> None:
    """Python's sqlite3 raises UnicodeDecodeError where SQLite's own message is not UTF-8: the
    message it could not decode is shown, with replacement characters, on one line."""
    from nsighttk.errors import message_of

    raw = b"malformed database schema (x\xffy) - near \"\xfe\": syntax error\nsecond line"
    try:
        raw.decode()
    except UnicodeDecodeError as ex:
        assert message_of(ex) == 'malformed database schema (x\ufffdy) - near "\ufffd": syntax error'
    assert message_of(sqlite3.OperationalError("disk I/O error")) == "disk I/O error"
    assert message_of(OSError("\udcff name")) == "? name"
    assert message_of(ValueError("")) == "ValueError"


def test_names_a_damaged_ncu_report_gives_as_lone_surrogates_are_decoded_with_replacement() -> None:
    """The .ncu-rep worker hands names over as JSON; a damaged report's bytes arrive as lone
    surrogates, which pandas and every output refuse: they become replacement characters."""
    from nsighttk.load.ncu import _worker_records

    line = '{"k": 0, "n": "kern\\udcda\\udcffel", "m": "sm__x\\ud800", "u": "", "v": 1.5, "t": null}'
    (row,), _, _ = _worker_records(line)
    assert row["kernel_name"] == "kern\ufffd\ufffdel" and row["metric"] == "sm__x?" and row["value"] == 1.5
    row["kernel_name"].encode("utf-8")


def test_duckdb_out_of_memory_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A query past DuckDB's memory limit (kernel names of megabytes, copied per launch) ends the
    command in one line with exit code 2, through the command group as through the entry point."""
    import duckdb

    from nsighttk.commands import analyze as analyze_cmd

    def oom(*_: object, **__: object) -> None:
        raise duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block of size 2.0 MiB\n\nPossible "
                                          "solutions:\n* Reducing the number of threads")

    monkeypatch.setattr(analyze_cmd, "analyze", oom)
    res = CliRunner().invoke(cli, ["analyze", str(capture("add")), "--json"])
    line = assert_exit(res, 2, line="out of memory (Out of Memory Error: failed to pin block of size 2.0 MiB)")
    assert "NSIGHTTK_MEMORY_MB" in line
