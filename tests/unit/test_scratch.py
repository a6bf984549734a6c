"""The process's scratch folder (nsighttk.scratch): nothing nsighttk writes while it works outlives
the process, whether it ends normally, on SIGTERM while it works, or is killed outright (then the
next process removes it), and a living process's folder is never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import capture

#: a process that writes a file in a folder of its scratch folder, says where, and waits for a line
#: on stdin (or dies as told)
_HOLDER = """
import os, signal, sys
from nsighttk.scratch import Folder
f = Folder("work-")
(f.path / "a.bin").write_bytes(bytes(80))
if sys.argv[1] == "detach":
    f._cleanup.detach()  # (as if its own removal were cut short)
print(f.path.parent, flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
sys.stdin.readline()
"""

#: analyze through the CLI as a user runs it (the environment gives it a small memory limit)
_ANALYZE = """
import sys
from nsighttk.cli import main
main(["analyze", "--json", sys.argv[1]])
"""


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp), "NSIGHTTK_NO_DB": "1", "NSIGHTTK_MEMORY_MB": "32"}


def _holder(tmp: Path, how: str) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, how], env=_env(tmp), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    root = Path(proc.stdout.readline().strip())
    assert root.parent == tmp and root.name.startswith("nsighttk-scratch-")
    return proc, root


def test_a_killed_process_folder_goes_with_the_next_process_and_a_living_one_stays(tmp_path: Path) -> None:
    killed, dead_root = _holder(tmp_path, "kill")
    assert killed.wait(30) == -signal.SIGKILL
    assert any(dead_root.rglob("*.bin"))  # (left behind: nothing runs in a killed process)
    alive, live_root = _holder(tmp_path, "wait")  # (this one removes the killed one's)
    try:
        assert not dead_root.exists()
        assert any(live_root.rglob("*.bin"))
        other, other_root = _holder(tmp_path, "wait")  # (a living process's folder is not taken)
        assert live_root.exists() and other_root.exists()
        assert other.communicate("\n", timeout=30)[0] == "" and other.returncode == 0
    finally:
        alive.communicate("\n", timeout=30)
    assert alive.returncode == 0
    assert list(tmp_path.iterdir()) == []


def test_what_a_folder_left_goes_with_the_process(tmp_path: Path) -> None:
    proc, root = _holder(tmp_path, "detach")
    assert any(root.rglob("*.bin"))
    proc.communicate("\n", timeout=30)
    assert proc.returncode == 0
    assert list(tmp_path.iterdir()) == []


def test_analyze_out_of_core_leaves_nothing(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", _ANALYZE, str(capture("streams_demo"))], env=_env(tmp_path),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert '"iterations"' in out.stdout
    assert list(tmp_path.iterdir()) == []


def test_sigterm_while_analyzing_leaves_nothing(tmp_path: Path) -> None:
    """SIGTERM while analyze works (a Slurm time limit, scancel): one line, exit 143, no folder."""
    proc = subprocess.Popen([sys.executable, "-c", _ANALYZE, str(capture("gpt2_train"))], env=_env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(tmp_path.glob("nsighttk-scratch-*/duckdb-*")) and proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("analyze made no DuckDB folder in 120 s")
        time.sleep(0.01)
    if proc.poll() is not None:
        pytest.skip("analyze finished before it could be interrupted")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "nsighttk: interrupted"
    assert list(tmp_path.iterdir()) == []


def test_a_file_system_without_locks_still_takes_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lustre without -o flock refuses flock (ENOSYS): the folder works unlocked, and is not taken for
    abandoned by another process (which cannot lock there either)."""
    import errno
    import types

    from nsighttk import scratch

    def refused(fd: int, how: int) -> None:
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(scratch, "fcntl", types.SimpleNamespace(flock=refused, LOCK_EX=2, LOCK_NB=4))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with scratch.Folder("work-") as f:
        (f.path / "a.bin").write_bytes(b"abc")
        assert (f.path / "a.bin").read_bytes() == b"abc"
        assert f.path.parent.parent == tmp_path
        other, other_root = _holder(tmp_path, "wait")  # (a process that can lock: it leaves this folder be)
        assert f.path.is_dir()
        other.communicate("\n", timeout=30)
    assert not other_root.exists()


_FORKED = """
import os, sys
from nsighttk.scratch import Folder
s = Folder("work-")
(s.path / "a.bin").write_bytes(b"abc")
export = Folder("export-")  # (as an .nsys-rep's SQLite export is kept)
(export.path / "x.sqlite").write_text("x")
pid = os.fork()
if pid == 0:
    from nsighttk import scratch
    print(scratch.root() != s.path.parent, flush=True)  # (a folder of its own: its parent's is its parent's)
    sys.exit(0)  # (a normal exit: atexit and the finalizers run in the child)
os.waitpid(pid, 0)
print(s.path.is_dir(), (s.path / "a.bin").read_bytes().decode(), (export.path / "x.sqlite").is_file(), flush=True)
"""


def test_a_forked_child_leaves_its_parent_folders_be(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", _FORKED], env=_env(tmp_path), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["True", "True abc True"]
    assert list(tmp_path.iterdir()) == []


_LIBRARY = """
import atexit, signal
atexit.register(lambda: print(signal.getsignal(signal.SIGINT) is signal.default_int_handler,
                               signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True))
from nsighttk import scratch
scratch.folder("x-")
"""


def test_a_library_user_keeps_its_signals_at_exit(tmp_path: Path) -> None:
    """Removing the scratch folder at exit leaves Ctrl-C and SIGTERM as they were (a Jupyter kernel,
    pytest: a hung exit handler after it can still be stopped)."""
    out = subprocess.run([sys.executable, "-c", _LIBRARY], env=_env(tmp_path), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True True"
    assert list(tmp_path.iterdir()) == []


def test_the_folder_stays_the_process_own_when_the_host_is_renamed(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk import scratch

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    first = scratch.root()
    monkeypatch.setattr("socket.gethostname", lambda: "renamed")
    assert scratch.root() == first
    assert [q.name for q in tmp_path.iterdir()] == [first.name]


def test_an_interrupted_command_in_process_leaves_the_signals_as_they_were() -> None:
    """The CLI's Ctrl-C ending (exit 130) changes no signal handler of the process calling it (a test
    run, a notebook): processes it starts afterwards still stop on Ctrl-C."""
    from nsighttk.cli._main import fail

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(SystemExit) as ended:
        fail(KeyboardInterrupt())
    assert ended.value.code == 130
    assert {s: signal.getsignal(s) for s in before} == before
