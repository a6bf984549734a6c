"""Run one hostile case and check what nsighttk promises.

A case runs in its own scratch folder (the current folder while it runs; ``reports/``, ``home/``
and the runs database inside it), in-process through :func:`nsighttk.cli.main` (fast: no
interpreter start), or as a real ``python -m nsighttk`` process where a hang must be observed with
a wall-clock limit.  In-process cases have a limit too (``SIGALRM``), which catches every hang in
Python code and in blocking system calls.

Checks (each failure is one line in :attr:`Outcome.problems`):

* the exit code is one the case allows (0 or 2 by default; 3 for a missing tool, 130 for Ctrl-C);
* no traceback (an exception escaping ``main``, or ``Traceback`` in the output);
* at most one error line (``nsighttk: error`` / click's ``Error:``); a failure says why (a line);
* no raw control character (ESC, NUL, ...) reaches the terminal;
* no hang;
* every file that was there before is byte-identical afterwards (outputs the case names may
  change only when the command succeeds);
* after a failure nothing new was left (no run directory, no database, no output), unless the
  case names it; after any run no temporary file (``.NAME.tmp-*``) and no unfinished run
  directory (``.tmp-*``) is left;
* nothing outside the scratch folder changed (the checkout, its fixtures).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import stat
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .files import Maker, good_inputs, nothing

REPO = Path(__file__).resolve().parents[2]
ALLOWED = frozenset({0, 2})
_TMP_FILE = re.compile(r"^\..+\.tmp-\d+-[0-9a-f]+$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x9b]")
_ERROR_LINE = re.compile(r"^(nsighttk: error|Error:)", re.M)


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # "{d}" is replaced by the scratch folder's absolute path
    setup: Maker = nothing
    rcs: frozenset[int] = ALLOWED
    process: bool = False  # a real process (a hang or a signal must be observed from outside)
    timeout: float = 60.0
    may_change: tuple[str, ...] = ()  # path prefixes (relative) that a successful run may change
    keep_on_error: tuple[str, ...] = ()  # path prefixes that may appear even when the command fails
    expect: str | None = None  # a substring the output must hold (what the one line says)
    xfail: str | None = None  # a known failure in code this corpus' owner does not own: why
    group: str = ""


@dataclass
class Outcome:
    case: Case
    rc: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    traceback: bool = False
    hang: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems


class CaseTimeout(BaseException):
    """Raised in-process by SIGALRM when a case runs past its limit."""


# ------------------------------------------------------------------------------------ snapshots

def _digest(path: Path, st: os.stat_result) -> object:
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if not stat.S_ISREG(st.st_mode):
        return ("special", stat.S_IFMT(st.st_mode), st.st_mode)
    if st.st_size > 64 * 2**20 or not os.access(path, os.R_OK):
        return ("big", st.st_size, st.st_mtime_ns, st.st_mode)
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return ("file", h.hexdigest(), st.st_mode)


def snapshot(root: Path, skip: tuple[str, ...] = ("home",)) -> dict[str, object]:
    """Every entry under ``root`` (symbolic links not followed): its kind and content hash."""
    out: dict[str, object] = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        if rel_folder.split(os.sep)[0] in skip:
            dirs[:] = []
            continue
        for name in dirs + files:
            p = Path(folder) / name
            rel = os.path.normpath(os.path.join(rel_folder, name))
            if rel.split(os.sep)[0] in skip:
                continue
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[rel] = ("dir", st.st_mode) if stat.S_ISDIR(st.st_mode) else _digest(p, st)
    return out


#: What the test tools themselves make at the checkout's top level, maybe while the corpus runs (other
#: tests run beside it under pytest-xdist): never an output of nsighttk.
TEST_TOOL_CACHES = frozenset({".hypothesis", ".pytest_cache"})


def outside(full: bool = False) -> dict[str, object]:
    """What a case must not change outside its folder: the checkout's top level (but for the test
    tools' caches) and its fixtures (each folder's modification time: a file made, removed or renamed
    there; with ``full`` also every file's size and modification time, which the summary compares
    once per corpus run)."""
    out: dict[str, object] = {f"repo/{n}": None for n in os.listdir(REPO) if n not in TEST_TOOL_CACHES}
    for folder, _dirs, files in os.walk(REPO / "tests" / "fixtures"):
        out[folder] = os.lstat(folder).st_mtime_ns
        for name in files if full else ():
            st = os.lstat(os.path.join(folder, name))
            out[os.path.join(folder, name)] = (st.st_size, st.st_mtime_ns)
    return out


# ------------------------------------------------------------------------------------ running

def case_env(d: Path) -> dict[str, str | None]:
    return {"NSIGHTTK_REPORTS": str(d / "reports"), "NSIGHTTK_HOME": str(d / "home"), "NSIGHTTK_DB": None,
            "NSIGHTTK_BUILD": str(d / "build"), "NSIGHTTK_QUIET": "1", "NSIGHTTK_THREADS": "2", "COLUMNS": "100",
            "NSIGHTTK_NO_DB": None, "NSIGHTTK_RUN_TAG": None, "NSIGHTTK_ARCH": None}


def _alarm(signum: int, frame: object) -> None:
    raise CaseTimeout()


@contextlib.contextmanager
def _in_folder(d: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(d)
    try:
        yield
    finally:
        os.chdir(old)


def run_inprocess(argv: list[str], d: Path, timeout: float) -> tuple[int | None, str, str, bool, str | None]:
    """``nsighttk ARGV`` in this process: (exit code, stdout, stderr, hung, traceback text)."""
    from click.testing import CliRunner

    from nsighttk import settings, toolchain
    from nsighttk.cli import main

    runner = CliRunner()
    rc: int | None = None
    hung, tb = False, None
    old_alarm = signal.signal(signal.SIGALRM, _alarm)
    old_term = signal.getsignal(signal.SIGTERM)
    settings.use(None)
    toolchain.clear_cache()
    try:
        with _in_folder(d), runner.isolation(env=case_env(d)) as (out, err, _):
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                main(argv)
                rc = 0
            except SystemExit as ex:
                rc = ex.code if isinstance(ex.code, int) else (0 if ex.code is None else 1)
            except CaseTimeout:
                hung = True
            except BaseException:  # a traceback: what the corpus is here to find
                tb = traceback.format_exc()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            stdout = out.getvalue().decode("utf-8", "backslashreplace")
            stderr = err.getvalue().decode("utf-8", "backslashreplace")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_alarm)
        signal.signal(signal.SIGTERM, old_term)
        settings.use(None)
        toolchain.clear_cache()
    return rc, stdout, stderr, hung, tb


def run_process(argv: list[str], d: Path, timeout: float) -> tuple[int | None, str, str, bool, str | None]:
    """``python -m nsighttk ARGV`` as a real process, killed (with its children) at ``timeout``."""
    env = dict(os.environ)
    for k, v in case_env(d).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen([sys.executable, "-m", "nsighttk", *argv], cwd=d, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        hung = False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        hung = True
    return (None if hung else proc.returncode, out.decode("utf-8", "backslashreplace"),
            err.decode("utf-8", "backslashreplace"), hung, None)


def _under(rel: str, prefixes: tuple[str, ...]) -> bool:
    return any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in prefixes)


def run_case(case: Case, base: Path) -> Outcome:
    """Make the case's folder under ``base``, run it, check it."""
    tag = hashlib.sha1(case.id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    d = base / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', case.id)[:80]}-{tag}"
    d.mkdir(parents=True)
    good_inputs(d)
    try:
        case.setup(d)
    except Exception as ex:  # a broken case, not a finding about nsighttk
        return Outcome(case, problems=[f"the case's setup failed: {type(ex).__name__}: {ex}"])
    before = snapshot(d)
    around = outside()
    argv = [a.replace("{d}", str(d)) for a in case.argv]
    t0 = time.monotonic()
    runner = run_process if case.process else run_inprocess
    rc, stdout, stderr, hung, tb = runner(argv, d, case.timeout)
    o = Outcome(case, rc, stdout, stderr, time.monotonic() - t0, hang=hung)
    o.problems.extend(check(o, before, snapshot(d), tb))
    if outside() != around:
        o.problems.append("something outside the scratch folder changed (the checkout or its fixtures)")
    return o


def check(o: Outcome, before: dict[str, object], after: dict[str, object], tb: str | None) -> list[str]:
    case, problems = o.case, []
    text = o.stdout + o.stderr
    if o.hang:
        problems.append(f"hang: still running after {case.timeout:.0f} s")
    if tb is not None:
        o.traceback = True
        problems.append("traceback: " + tb.strip().splitlines()[-1][:300])
    elif "Traceback (most recent call last)" in text:
        o.traceback = True
        problems.append("traceback in the output")
    if not o.hang and o.rc not in case.rcs:
        problems.append(f"exit code {o.rc}, expected one of {sorted(case.rcs)}: {o.stderr.strip()[-300:]!r}")
    errors = _ERROR_LINE.findall(o.stderr)
    if len(errors) > 1:
        problems.append(f"{len(errors)} error lines: {o.stderr.strip()[-300:]!r}")
    if o.rc not in (0, None) and not o.stderr.strip():
        problems.append(f"exit code {o.rc} without a line saying why")
    bad = _CONTROL.search(text)
    if bad:
        problems.append(f"a raw control character {bad.group()!r} reached the terminal")
    if case.expect and case.expect not in text:
        problems.append(f"the output does not say {case.expect!r}: {text.strip()[-300:]!r}")
    failed = o.rc != 0
    for rel, was in before.items():
        now = after.get(rel)
        if now == was:
            continue
        if not failed and _under(rel, case.may_change):
            continue
        problems.append(f"{rel} {'vanished' if now is None else 'changed'}"
                        + (" although the command failed" if failed and _under(rel, case.may_change) else ""))
    filled = {os.path.dirname(rel) for rel, kind in after.items() if kind[0] != "dir"}  # type: ignore[index]
    for rel in after:
        if rel not in before and rel.endswith(("-wal", "-shm", "-journal")) and not _under(rel, case.may_change):
            problems.append(f"left behind: {rel} (SQLite's side file, by a command that only reads)")
        if rel in before or not any(f == rel or f.startswith(rel + "/") for f in filled):
            # folders without files (made for an output, -o missing/...) hold no partial file
            continue
        name = os.path.basename(rel)
        if _TMP_FILE.match(name) or name.startswith(".tmp-"):
            problems.append(f"left behind: {rel} (a temporary file or an unfinished run directory)")
        elif failed and not _under(rel, case.keep_on_error) and os.path.dirname(rel) in ("", *before):
            problems.append(f"left behind after a failure: {rel}")
    return problems
