"""``nsighttk stats`` without click (:mod:`nsighttk.cli.quick`): the plain calls it reads
run exactly as click runs them (same output, files and exit code), everything else goes to click,
and the quick path imports neither click nor numpy."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import capture, mutate

from nsighttk.cli import _main, quick
from nsighttk.commands import stats as stats_cmd

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("argv", "want"), [
    (["stats", "a.sqlite"], {"path": Path("a.sqlite")}),
    (["stats", "-r", "x,y", "-f", "csv", "-o", "p", "--force-overwrite", "a"],
     {"path": Path("a"), "reports": "x,y", "fmt": "csv", "output": "p", "force_overwrite": True}),
    (["stats", "a", "--report=nvtx_sum", "--format=json", "--output", "o/p"],
     {"path": Path("a"), "reports": "nvtx_sum", "fmt": "json", "output": "o/p"}),
    (["stats", "--report", "[red]x", "a b.sqlite"], {"path": Path("a b.sqlite"), "reports": "[red]x"}),
])
def test_plain_calls_are_read(argv: list[str], want: dict) -> None:
    assert quick.stats_arguments(argv) == want


@pytest.mark.parametrize("argv", [
    [], ["analyze", "a"], ["--width", "80", "stats", "a"], ["stats"], ["stats", "a", "b"], ["stats", "-"],
    ["stats", ""], ["stats", "--help"], ["stats", "-h", "a"], ["stats", "a", "--width", "80"], ["stats", "-rx", "a"],
    ["stats", "-r=x", "a"], ["stats", "-f", "xml", "a"], ["stats", "--format=XML", "a"],
    ["stats", "-r", "a,b", "-r", "c", "a"], ["stats", "-r", "-f", "a"], ["stats", "a", "-r"],
    ["stats", "a", "--report="], ["stats", "--force-overwrite=1", "a"],
    ["stats", "--force-overwrite", "--force-overwrite", "a"], ["stats", "--help-reports"], ["stats", "a", "--nosuch"],
    ["stats", "--", "a"], ["stats", "-o", "", "a"],
])
def test_anything_else_goes_to_click(argv: list[str]) -> None:
    assert quick.stats_arguments(argv) is None


def test_formats_agree_with_the_command_and_click() -> None:
    from nsighttk.cli import cli

    params = {p.name: p for p in cli.get_command(None, "stats").params}  # type: ignore[arg-type]
    assert quick.FORMATS == stats_cmd.FORMATS == tuple(params["fmt"].type.choices)
    opts = {o for p in params.values() for o in p.opts}
    assert set(quick._VALUES) | set(quick._FLAGS) <= opts  # every name read here is click's too


def _run(entry: object, argv: list[str], where: Path, capfd: pytest.CaptureFixture[str]) -> tuple:
    """(exit code, stdout, stderr, {file: bytes}) of one run in folder ``where``."""
    from nsighttk import safeio, settings

    safeio.track_inputs(False)  # as a fresh process: what a run needs, it must set up itself
    settings.use(settings.Settings(memory_mb=1))
    old = Path.cwd()
    os.chdir(where)
    try:
        with pytest.raises(SystemExit) as ex:
            entry(argv)  # type: ignore[operator]
    finally:
        os.chdir(old)
    out, err = capfd.readouterr()
    files = {str(p.relative_to(where)): p.read_bytes() for p in sorted(where.rglob("*")) if p.is_file()}
    return ex.value.code, out, err, files


CASES = [
    ["stats", "IN"],
    ["stats", "IN", "-r", "cuda_gpu_mem_time_sum,nvtx_sum", "-f", "csv"],
    ["stats", "-r", "all", "-f", "json", "IN"],
    ["stats", "IN", "-r", "cuda_gpu_sum,cuda_api_sum", "-f", "csv", "-o", "out/p"],
    ["stats", "IN", "-r", "cuda_gpu_sum", "-o", "old", "--force-overwrite"],
    ["stats", "IN", "-r", "cuda_gpu_sum", "-o", "old"],  # old_cuda_gpu_sum.txt exists: refused
    ["stats", "IN", "--report", "nosuch"],
    ["stats", "missing.sqlite"],
    ["stats", "bad.sqlite"],
    ["stats", "IN", "-r", "cuda_gpu_sum", "-o", "in"],  # in_cuda_gpu_sum.txt is the input
    ["stats", "in_cuda_gpu_sum.txt", "-r", "cuda_gpu_sum", "-o", "in"],
    ["stats", "in_cuda_gpu_sum.txt", "-r", "cuda_gpu_sum", "-o", "in", "--force-overwrite"],  # never the input
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(a[1:]) for a in CASES])
def test_quick_path_runs_as_click_does(argv: list[str], tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from nsighttk.cli import main

    argv = [a.replace("IN", "in.sqlite") for a in argv]
    assert quick.stats_arguments(argv) is not None, "this case is meant for the quick path"
    got = []
    for name, entry in (("quick", main), ("click", _main.main)):
        where = tmp_path / name
        where.mkdir()
        shutil.copy(capture("streams_demo"), where / "in.sqlite")
        shutil.copy(capture("add"), where / "in_cuda_gpu_sum.txt")
        (where / "bad.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
        (where / "old_cuda_gpu_sum.txt").write_text("kept\n")
        got.append(_run(entry, argv, where, capfd))
    assert got[0] == got[1]
    assert got[0][0] in (0, 2), got[0]


def test_quick_path_imports_neither_click_nor_pandas() -> None:
    """(numpy comes with the engine the reports query.)"""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print(sorted(m for m in ('click', 'pandas') if m in sys.modules)))\n"
            "from nsighttk.cli import main\nmain(sys.argv[1:])")
    out = subprocess.run([sys.executable, "-c", code, "stats", "-r", "cuda_gpu_mem_time_sum,nvtx_sum", "-f", "csv",
                          str(capture("streams_demo"))], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]
    assert "Operation" in out.stdout  # the report was printed



@pytest.mark.parametrize("argv", [["runs", "list"], ["explain", "foo"]], ids=" ".join)
def test_commands_with_no_data_to_read_import_no_pandas(argv: list[str], tmp_path: Path) -> None:
    """``runs list`` with nothing recorded and ``explain``: pandas (through sqlite-utils, or a
    renderer's import) costs a second of start-up, and neither needs it."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print(sorted(m for m in ('pandas', 'sqlite_utils') if m in sys.modules)))\n"
            "from nsighttk.cli import main\nmain(sys.argv[1:])")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]
    assert ("no runs recorded yet" if argv[0] == "runs" else "foo") in out.stdout


def test_runs_list_reads_a_database_with_runs_without_pandas(tmp_path: Path) -> None:
    """Listing recorded runs reads them with the standard library (sqlite-utils, which writes them,
    imports pandas: a second of start-up)."""
    from nsighttk.runs.db import RunsDB

    with RunsDB(tmp_path / "runs.db") as db:
        db.record({"run_dir": str(tmp_path / "20261128T000000Z-nsys-add"), "tool": "nsys", "target": "add",
                   "status": "ok"})
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print(sorted(m for m in ('pandas', 'sqlite_utils') if m in sys.modules)))\n"
            "from nsighttk.cli import main\nmain(sys.argv[1:])")
    out = subprocess.run([sys.executable, "-c", code, "--db", str(tmp_path / "runs.db"), "runs", "list"],
                         capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]
    assert "20261128T000000Z-nsys-add" in out.stdout

@pytest.mark.parametrize("entry", ["quick", "click"])
def test_names_reach_the_terminal_escaped_and_files_as_nsys_writes_them(
        entry: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from nsighttk.cli import main

    src = mutate(tmp_path, "UPDATE NVTX_EVENTS SET text = 'a\x1b[31mred\x1b]8;;http://x\x07' || rowid")
    argv = ["stats", "-r", "nvtx_sum", "-f", "csv", str(src)]
    run = main if entry == "quick" else _main.main
    code, out, _, _ = _run(run, argv, tmp_path, capfd)
    assert code == 0 and "\x1b" not in out and "\x07" not in out
    assert "a\\x1b[31mred\\x1b]8;;http://x\\x07" in out, out
    code, _, _, files = _run(run, [*argv, "-o", "p"], tmp_path, capfd)
    assert code == 0 and b"a\x1b[31mred\x1b]8;;http://x\x07" in files["p_nvtx_sum.csv"]


def _process(argv: list[str], entry: str, cwd: Path, env: dict[str, str], pipe: str = "") -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of ``argv`` through ``entry`` (quick: nsighttk.cli, click:
    nsighttk.cli._main) in a real process; ``pipe``: a shell command its stdout goes to."""
    code = f"import sys; from {entry} import main; main(sys.argv[1:])"
    cmd = " ".join(map(shlex.quote, [sys.executable, "-c", code, *argv]))
    if pipe:
        cmd = f"{cmd} | {pipe}; exit ${{PIPESTATUS[0]}}"
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, cwd=cwd,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    return out.returncode, out.stdout, out.stderr


def test_an_ascii_terminal_and_undecodable_names_go_to_click(tmp_path: Path) -> None:
    """A locale whose streams are not UTF-8 (click writes names there its own way) and arguments
    the locale could not decode: the quick path steps aside, so both entries end alike (exit 0,
    the names as UTF-8), never with a UnicodeEncodeError."""
    src = mutate(tmp_path, "UPDATE StringIds SET value = value || ' é' WHERE id = "
                           "(SELECT nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1)")
    odd = tmp_path / "ünï_add.sqlite"
    shutil.copy(capture("add"), odd)  # no NVTX: a SKIPPED line naming the file
    for env, argv in (({"PYTHONIOENCODING": "ascii"}, ["stats", str(src), "-r", "cuda_api_sum"]),
                      ({"PYTHONIOENCODING": "ascii"}, ["stats", odd.name, "-r", "nvtx_sum"]),
                      ({"LC_ALL": "C", "PYTHONUTF8": "0"}, ["stats", odd.name, "-r", "nvtx_sum"])):
        quick_run = _process(argv, "nsighttk.cli", tmp_path, env)
        click_run = _process(argv, "nsighttk.cli._main", tmp_path, env)
        assert quick_run == click_run, (env, argv)
        assert quick_run[0] == 0 and b"Traceback" not in quick_run[2], quick_run
    with pytest.MonkeyPatch.context() as m:
        m.setattr(sys, "stdout", type("Ascii", (), {"encoding": "ascii"})())
        assert quick.stats_arguments(["stats", "a.sqlite"]) is None
    assert quick.stats_arguments(["stats", "a\udcfc.sqlite"]) is None


def test_a_closed_pipe_ends_both_paths_alike(tmp_path: Path) -> None:
    """``nsighttk stats ... | head``: no message and exit status 0 whichever way the options are
    spelled."""
    f = str(capture("gpt2_train"))
    assert quick.stats_arguments(["stats", f, "-r", "all"]) is not None  # the quick path; -rall: click's
    got = [_process(["stats", f, *spelling], "nsighttk.cli", tmp_path, {}, pipe="head -c 100 >/dev/null")
           for spelling in (["-r", "all"], ["-rall"])]
    assert {(rc, err) for rc, _, err in got} == {(0, b"")}, got


@pytest.mark.parametrize("argv", [["arch", "A100"], ["arch", "A100", "--json"], ["--help"], ["explain", "foo"],
                                  ["analyze", str(capture("add"))], ["stats", str(capture("add"))],
                                  ["stats", str(capture("add")), "-fcsv"]], ids=" ".join)
def test_a_pipe_closed_before_the_first_line_ends_any_command_quietly(argv: list[str], tmp_path: Path) -> None:
    """The reader has gone before nsighttk writes (``nsighttk arch A100 | head -1`` when head is
    quick): every write fails with EPIPE; no message, exit status 0."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "nsighttk", *argv], stdout=write, stderr=subprocess.PIPE,
                              cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, b"")
