"""Shared test helpers.  Tests need no GPU: they use real captures under tests/fixtures/."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import traceback
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nsighttk import settings, toolchain

#: The files that take most of the suite's time (each 10 s or more on the 2-core development
#: machine: the hostile corpus and fuzzing, real processes and signals, nvcc, Triton, torch, a real
#: Slurm, Chromium, the wheel, the out-of-core twins): their tests are marked ``slow``, and
#: ``make test-fast`` (``pytest -m "not slow"``) runs the rest.  Under pytest-xdist (``make test``:
#: ``-n auto --dist loadfile``, each file run whole by one worker) the files are handed out in this
#: order, the longest first, and then the others.
SLOW_FILES = (
    "test_hostile.py", "test_fuzz.py", "test_cuda_variants.py", "test_build.py", "test_torch_path.py",
    "test_slurm.py", "test_rank_fleet.py", "test_inspect.py", "test_kineto.py", "test_nvtx_reports.py",
    "test_layout.py", "test_readme.py", "test_html.py", "test_analyze_out_of_core.py", "test_rules.py",
    "test_workloads.py", "test_atomic_outputs.py", "test_iteration_detect.py", "test_iterations.py",
    "test_cli_quick.py", "test_install.py", "test_rules_engine.py", "test_iterations_exports.py",
    "test_runs_concurrency.py", "test_ncu.py", "test_repro.py", "test_advice_out_of_core.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow files' tests ``slow``.  In a pytest-xdist worker, whose order of the tests is
    the order in which ``--dist loadfile --no-loadscope-reorder`` hands their files out, put the
    slow files first, longest first, so that the short ones fill in at the end."""
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):
        rank = {name: i for i, name in enumerate(SLOW_FILES)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own order kept


def pytest_configure(config: pytest.Config) -> None:
    """Before any test (and any pytest-xdist worker) starts: the folder of the browser tests'
    screenshots exists, so that a test that checks that nothing appears in the checkout
    (tests/robustness/test_hostile.py) does not see the one another worker makes."""
    if not hasattr(config, "workerinput"):
        from browser import ARTIFACTS

        ARTIFACTS.mkdir(parents=True, exist_ok=True)


def pytest_report_header(config: pytest.Config) -> str:
    """The seed of this run's fuzz draws and hostile damage (a failure replays with it)."""
    from fuzz import bases

    return bases.replay()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed fuzz or hostile case says the seed that replays it (``-q`` hides the header)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and item.path.name in ("test_fuzz.py", "test_hostile.py"):
        from fuzz import bases

        report.sections.append(("fuzz seed", bases.replay()))


FIXTURES = Path(__file__).parent / "fixtures"
NSYS_FIXTURES = FIXTURES / "h200-nsys2025.3"
CAPTURES = ["add", "add_grid_stride", "streams_demo"]


def fixture(*parts: str) -> Path:
    """Path of a committed fixture; fails loudly (not skip) when it is missing."""
    p = FIXTURES.joinpath(*parts)
    if not p.exists():
        raise FileNotFoundError(f"fixture missing: {p} (see tests/fixtures/README.md for how it was made)")
    return p


def fixture_script(name: str) -> types.ModuleType:
    """The fixture folder's script ``name`` (e.g. ``trim_export.py``) as a module, run from its source
    without writing ``__pycache__`` into tests/fixtures (which tests/robustness/test_hostile.py checks
    is left alone, maybe while this runs beside it)."""
    path = fixture(name)
    module = types.ModuleType(path.stem)
    module.__file__ = str(path)
    exec(compile(path.read_text(), path, "exec"), module.__dict__)
    return module


def capture(name: str) -> Path:
    return fixture("h200-nsys2025.3", f"{name}.sqlite")


def grown_export(tmp_path_factory: pytest.TempPathFactory, **spec: int) -> Path:
    """A synthetic nsys export grown from the streams_demo capture by tests/synth.py (``spec``: the
    fields of ``synth.SynthSpec``), in a fresh temporary folder."""
    from synth import SynthSpec, make_export

    return make_export(capture("streams_demo"), tmp_path_factory.mktemp("synth") / "synthetic.sqlite",
                       SynthSpec(**spec))


def kernels_profile(rows: list[tuple[Any, ...]], columns: tuple[str, ...] = ("name", "start_ns", "end_ns")) -> Any:
    """A Profile holding only the kernels ``rows`` (``columns``: their fields; durations and name
    ids follow from them)."""
    import pandas as pd

    from nsighttk.profile import Profile, conform

    df = pd.DataFrame(rows, columns=list(columns))
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    df["name_id"] = pd.factorize(df["name"])[0]
    p = Profile()
    p.kernels = conform("kernels", df)
    return p


def refused(load: Callable[[Path], object], path: Path, content: str | bytes, match: str | None = None) -> None:
    """With ``content`` written to ``path``, ``load(path)`` raises InputFileError (its message
    matching ``match``)."""
    from nsighttk.errors import InputFileError

    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(InputFileError, match=match):
        load(path)


def mutate(tmp_path: Path, *sql: str, name: str = "streams_demo") -> Path:
    """A copy of capture ``name`` in ``tmp_path`` with the SQL statements ``sql`` applied to it."""
    dst = tmp_path / f"{name}-mutated.sqlite"
    shutil.copy(capture(name), dst)
    con = sqlite3.connect(dst)
    for stmt in sql:
        con.execute(stmt)
    con.commit()
    con.close()
    return dst


def _own_user_state(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nsighttk's user state (home, run directories, cache) under ``base``; progress lines off."""
    monkeypatch.setenv("NSIGHTTK_HOME", str(base / "home"))
    monkeypatch.setenv("NSIGHTTK_REPORTS", str(base / "reports"))
    monkeypatch.setenv("NSIGHTTK_QUIET", "1")
    monkeypatch.setenv("NSIGHTTK_CACHE", str(base / "cache"))
    for var in ("NSIGHTTK_NSYS", "NSIGHTTK_NCU", "NSIGHTTK_NVCC", "NSIGHTTK_NVIDIA_SMI", "NSIGHTTK_COMPUTE_SANITIZER",
                "NSIGHTTK_CUOBJDUMP", "NSIGHTTK_DB"):
        monkeypatch.delenv(var, raising=False)
    # pytest-xdist starts its workers with COLUMNS=80 and LINES=24: tests see the width a pipe gets
    # (tests of $COLUMNS set it themselves)
    for var in ("COLUMNS", "LINES"):
        monkeypatch.delenv(var, raising=False)
    settings.use(None)  # the environment above is read afresh


@pytest.fixture(scope="session", autouse=True)
def _isolated_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Module and session fixtures (set up before ``_isolated``) keep their user state in this
    process's own temporary folder too (one per pytest-xdist worker): never in the user's cache,
    ``~/.config`` or ``./reports``."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _own_user_state(tmp_path_factory.mktemp("session"), monkeypatch)
        yield
    settings.use(None)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """User state goes to tmp_path; discovery caches start empty; progress lines are off."""
    _own_user_state(tmp_path, monkeypatch)
    toolchain.clear_cache()
    yield
    toolchain.clear_cache()
    settings.use(None)


def run_cli(args: list[str], code: int = 0, *, stdout: bool | None = None) -> str:
    """``nsighttk ARGS`` through click's ``CliRunner``, ending as :func:`assert_exit` checks with
    exit status ``code``: its stdout for 0 (or where ``stdout`` says so), else its stderr."""
    from click.testing import CliRunner

    from nsighttk.cli import cli

    res = CliRunner().invoke(cli, args)
    assert_exit(res, code)
    return str(res.stdout) if (code == 0 if stdout is None else stdout) else str(res.stderr)


def reference_nsys_or_skip() -> str:
    """Debian's nsys 2022.4 (:func:`reference_nsys`); without it the test skips, and in CI, where
    ``make setup`` installs it, fails."""
    exe = reference_nsys()
    if exe is None:
        if os.environ.get("CI"):
            raise RuntimeError("nsys 2022.4 is missing: `make setup` (tests/tools/nsys2022.sh) should have "
                               "installed it")
        pytest.skip("reference nsys 2022.4 not installed (run tests/tools/nsys2022.sh)", allow_module_level=True)
    return exe


def assert_exit(res: Any, code: int, *, line: str | None = None, one_line: bool | None = None) -> str:
    """Check a ``CliRunner`` result the way a user sees the command end: exit status ``code``, and no
    exception other than ``SystemExit`` (``CliRunner`` catches any other and never prints its
    traceback, so ``"Traceback" not in res.output`` can never fail).

    ``one_line`` (the default for codes 2 and 3, a user mistake or a missing tool): stderr is exactly
    one line ``nsighttk: ...`` (or click's own usage error for a bad option value: ``Usage:``,
    ``Try ...``, then one ``Error: ...`` line), containing ``line`` when given; that line is returned.
    ``one_line=False`` (a profiled target that failed: nsighttk also names the run directory):
    some ``nsighttk: ...`` line of stderr contains ``line``; stderr is returned."""
    exc = res.exception
    detail = (f"exit code {res.exit_code}\nstdout: {res.stdout!r}\nstderr: {res.stderr!r}\n"
              + ("".join(traceback.format_exception(*res.exc_info)) if res.exc_info else ""))
    assert exc is None or isinstance(exc, SystemExit), f"{type(exc).__name__} escaped the CLI:\n{detail}"
    assert res.exit_code == code, f"expected exit code {code}:\n{detail}"
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    if one_line is None:
        one_line = code in (2, 3)
    if not one_line:
        if line is not None:
            assert any(x.startswith("nsighttk: ") and line in x for x in lines), f"expected {line!r}:\n{detail}"
        return str(res.stderr)
    if len(lines) == 3 and lines[0].startswith("Usage: ") and lines[2].startswith("Error: "):
        lines = lines[2:]  # click's own usage error (a bad option value): usage, help hint, one error line
    else:
        assert len(lines) == 1, f"expected one line on stderr:\n{detail}"
        assert lines[0].startswith("nsighttk: "), detail
    if line is not None:
        assert line in lines[0], f"expected {line!r} in the error line:\n{detail}"
    return lines[0]


def have_nvcc() -> bool:
    return shutil.which("nvcc") is not None or any(Path(p).exists() for p in ("/usr/local/cuda/bin/nvcc",))


requires_nvcc = pytest.mark.skipif(not have_nvcc(), reason="nvcc not installed")


def reference_nsys() -> str | None:
    """Debian's nsys 2022.4 (unpacked by tests/tools/nsys2022.sh) or $NSIGHTTK_REF_NSYS."""
    env = os.environ.get("NSIGHTTK_REF_NSYS")
    if env and Path(env).is_file():
        return env
    local = (Path(__file__).parent / "tools" / "nsys2022" /
             "usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64/nsys")
    return str(local) if local.is_file() else None


FAKE_NSYS = r'''#!/usr/bin/env python3
"""A stand-in for `nsys` in tests: `profile` runs the target and writes a report whose content
names a real fixture; `export` copies that fixture.  FAKE_NSYS_MODE=importer-fail mimics nsys
without libdw (only a .qdstrm).  Messages are the ones nsys 2025.3 prints.  As nsys does, %q{VAR}
in --output (and here in FAKE_NSYS_FIXTURE) is the variable's value, and --export sqlite exports."""
import os, re, shutil, subprocess, sys
expand = lambda s: re.sub(r"%q\{(\w+)\}", lambda m: os.environ.get(m.group(1), ""), s)
args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("NVIDIA Nsight Systems version 2025.3.1.0-fake"); sys.exit(0)
if args[:1] == ["profile"]:
    i = 1
    opts = {}
    while i < len(args) and args[i].startswith("-"):
        if "=" in args[i]:
            i += 1; continue
        opts[args[i]] = args[i + 1]; i += 2
    base, target = expand(opts["--output"]), args[i:]
    with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
        log.write(" ".join(args) + "\n")
    rc = subprocess.call(target)
    if os.environ.get("FAKE_NSYS_MODE") == "importer-fail":
        open(base + ".qdstrm", "w").write("raw")
        print("Importer error status: An unknown error occurred.")
        print("Unable to retrieve the importer version: skipping importation of the QDSTRM file.")
        print("Generated:\n\t" + base + ".qdstrm"); sys.exit(0)
    fixture = expand(os.environ["FAKE_NSYS_FIXTURE"])
    open(base + ".nsys-rep", "w").write(fixture)
    if opts.get("--export") == "sqlite":
        shutil.copy(fixture, base + ".sqlite")
    print("Generated:\n\t" + base + ".nsys-rep")
    sys.exit(rc)  # as nsys 2025.3 does (seen on an H200): the profiled program's exit code
if args[:1] == ["export"]:
    out, rep = args[args.index("--output") + 1], args[-1]
    shutil.copy(open(rep).read().strip(), out); sys.exit(0)
print("fake nsys: unsupported", args, file=sys.stderr); sys.exit(1)
'''


@pytest.fixture
def fake_nsys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install the fake nsys as NSIGHTTK_NSYS; returns the log of its `profile` calls."""
    exe = tmp_path / "bin" / "nsys"
    exe.parent.mkdir()
    exe.write_text(FAKE_NSYS)
    exe.chmod(0o755)
    log = tmp_path / "fake-nsys.log"
    monkeypatch.setenv("NSIGHTTK_NSYS", str(exe))
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    monkeypatch.setenv("FAKE_NSYS_FIXTURE", str(capture("streams_demo")))
    toolchain.clear_cache()
    return log


def temporary_files(temp: Path) -> list[str]:
    """What nsighttk's temporary files and folders left under ``temp`` (``TMPDIR``), but for this
    process's scratch folder and its lock (they go when the process ends: test_scratch.py)."""
    own = {q for q in temp.glob("nsighttk-scratch-*") if (q / ".lock").is_file()}
    return sorted(str(q.relative_to(temp)) for q in temp.rglob("*") if q not in own and q.name != ".lock")


def record_memory_limits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The memory limit of every DuckDB connection the engine opens from now on (for tests that
    check an analysis really ran at a small limit)."""
    from nsighttk import engine

    limits: list[str] = []
    real_connect = engine.connect

    def connect(*args: Any, **kwargs: Any) -> Any:
        con = real_connect(*args, **kwargs)
        limits.append(con.execute("SELECT current_setting('memory_limit')").fetchone()[0])
        return con

    monkeypatch.setattr(engine, "connect", connect)
    return limits


class FullDisk:
    """A file opened for writing on a disk with ``state['left']`` bytes free."""

    def __init__(self, fh: Any, state: dict[str, int]) -> None:
        self._fh, self._state = fh, state

    def write(self, data: Any) -> int:
        left = self._state["left"]
        if len(data) > left:
            self._fh.write(data[:left])
            self._fh.flush()
            self._state["left"] = 0
            raise OSError(errno.ENOSPC, "No space left on device")
        self._state["left"] -= len(data)
        return int(self._fh.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()
