"""The GPU scripts (tests/gpu/) fail when something is wrong: they parse, they call files, commands and
options that exist, they all use lib.sh (strict mode, checks that count failures, one exit status at
the end), and, run here with fake tools on PATH
(no GPU), a mismatch or a failing command makes them exit non-zero while the expected behaviour exits 0."""

from __future__ import annotations

import os
import py_compile
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tests" / "gpu"
SCRIPTS = sorted(GPU.glob("*.sh"))
PYTHON_SCRIPTS = sorted(GPU.glob("*.py"))
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash not installed")


#: a repository path a script names (in a command or in its header), not one under $OUT or a variable
_REPO_PATH = re.compile(r"(?<![\w$/.{-])((?:tests|cuda_samples|kernels)/[\w./-]*[\w/])")
#: nsighttk run as a command (alone, through the lib.sh helpers, in $(...), or a venv's bin/nsighttk)
_NSIGHTTK = re.compile(r"(?:^|\brun |\bexpect_exit \d+ |\bexpect_fail |\$\(|[;|&]\s*|\b[A-Z_]+=\S* )\s*"
                       r"\"?(?:\$\{?\w+\}?/bin/)?nsighttk\"?[ \t]+([a-z][\w-]*)", re.M)
#: a repository Python script run with its options
_PYTHON = re.compile(r"\bpython3? ((?:tests|kernels)/[\w./-]+\.py)([^\n|>;&]*)")


def _code(text: str) -> str:
    """A script without its comments (whole comment lines, and `  # ...` after a command), each
    command continued with a backslash on one line."""
    lines = [re.sub(r"\s+#\s.*$", "", ln) for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    return "\n".join(lines).replace("\\\n", " ")


def test_the_scripts_the_checks_need_are_there() -> None:
    names = {p.name for p in SCRIPTS} | {p.name for p in PYTHON_SCRIPTS}
    assert {"lib.sh", "capture_insight.sh", "kernel_names.py", "offline_install.sh", "readme_commands.sh",
            "checks.sh", "rules_reference.sh", "stats_speed.sh"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_calls_what_exists(script: Path) -> None:
    """What a script runs is there: every file of the repository it names (scripts, samples,
    fixtures), every nsighttk command it runs, and every option it passes to a Python script of the
    repository (which would otherwise fail only on a GPU machine, after minutes of set-up)."""
    from nsighttk.cli import COMMAND_MODULES

    text = script.read_text()
    missing = [p for p in sorted(set(_REPO_PATH.findall(text))) if not (ROOT / p.rstrip(".")).exists()]
    assert not missing, f"names files that are not in the repository: {missing}"
    code = _code(text)
    unknown = sorted(set(_NSIGHTTK.findall(code)) - set(COMMAND_MODULES))
    assert not unknown, f"runs nsighttk commands that do not exist: {unknown}"
    for path, args in _PYTHON.findall(code):
        called = (ROOT / path).read_text()
        for option in re.findall(r"(?<!\S)--[\w-]+", args):
            assert f'"{option}"' in called, f"passes {option} to {path}, which does not take it"


def test_gpu_checks_has_the_sections_its_header_lists() -> None:
    text = (GPU / "checks.sh").read_text()
    header = text.split("\nsource ", 1)[0]
    listed = set(re.findall(r"^#   (\w+) {2,}", header, re.M))
    defined = set(re.findall(r"^section_(\w+)\(\)", text, re.M))
    assert listed == defined and len(listed) >= 5, (listed, defined)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses_and_uses_lib(script: Path) -> None:
    res = subprocess.run([BASH, "-n", str(script)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    text = script.read_text()
    if script.name != "lib.sh":
        assert re.search(r'^source "\$\(dirname "\$0"\)/lib\.sh"', text, re.M), "does not source lib.sh"
        assert "set -uo pipefail" not in text  # lib.sh's set -euo pipefail is not weakened
    # an exit code only printed, never checked: what these scripts did before
    assert not re.search(r'echo "[^"\n]*\$\?', text), "prints an exit code instead of checking it"


@pytest.mark.parametrize("script", PYTHON_SCRIPTS, ids=lambda p: p.name)
def test_python_script_compiles(script: Path, tmp_path: Path) -> None:
    py_compile.compile(str(script), cfile=str(tmp_path / "x.pyc"), doraise=True)


def _bash(snippet: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BASH, "-c", f'source "{GPU / "lib.sh"}"\n{snippet}'], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "OUT": str(tmp_path)}, timeout=60)


@pytest.mark.parametrize(("snippet", "rc", "says"), [
    ("check same 1 1; run true; expect_exit 3 bash -c 'exit 3'; expect_fail false", 0, "4 run, 0 failed"),
    ("check value 1 2; echo goes on", 1, "CHECK FAILED: value: expected '1', got '2'"),
    ("run false; echo goes on", 1, "exit code of: false: expected '0', got '1'"),
    ("expect_exit 2 true", 1, "expected '2', got '0'"),
    ("expect_fail true", 1, "expected a failure (exit code 1 to 125), got 0"),
    ("expect_fail no-such-command-here", 1, "got 127"),
    ("printf 'a\\nb\\n' > f; check_grep found '^b$' f; check_grep missing '^c$' f", 1, "/^c$/ not found"),
    ("echo x > a; echo y > b; check_same same a a; check_same differ a b", 1, "differ: a and b differ"),
    ("false; echo not reached", 1, "stopped by a failing command (exit code 1)"),
    ("false | cat", 1, "stopped by a failing command"),
    # a section keeps errexit although its result is tested; a check failed inside it fails it
    ("s() { false; echo not reached; }; section one s", 1, "section one (see one.log): expected '0', got '1'"),
    ("s() { check inner 1 2; }; section two s", 1, "section two"),
    ("s() { echo fine; }; section three s", 0, "1 run, 0 failed"),
])
def test_lib_counts_failures_and_sets_the_exit_status(snippet: str, rc: int, says: str, tmp_path: Path) -> None:
    res = _bash(snippet, tmp_path)
    assert res.returncode == rc, res.stderr
    assert says in res.stderr, res.stderr
    assert "not reached" not in res.stdout + res.stderr + "".join(p.read_text() for p in tmp_path.glob("*.log"))


def _fake(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    exe.write_text("#!/usr/bin/env bash\n" + body)
    exe.chmod(0o755)


FAKE_NSIGHTTK = """echo "fake nsighttk $*"
case "$*" in
  *sm_100*) exit "${FAKE_SM100_RC:-2}" ;;  # an arch the (sm_90) GPU cannot run
  *no_such_kernel*) exit 2 ;;               # ncu profiled no kernels
esac
exit "${FAKE_RC:-0}"
"""


@pytest.mark.parametrize(("env", "rc"), [({}, 0), ({"FAKE_SM100_RC": "0"}, 1), ({"FAKE_SM100_RC": "1"}, 1),
                                          ({"FAKE_RC": "1"}, 1)])
def test_ncu_acceptance_fails_on_an_unexpected_exit_code(env: dict[str, str], rc: int, tmp_path: Path) -> None:
    _fake(tmp_path / "bin", "nsighttk", FAKE_NSIGHTTK)
    res = subprocess.run([BASH, str(GPU / "ncu_acceptance.sh")], capture_output=True, text=True, cwd=ROOT,
                         timeout=120, env={**os.environ, **env, "OUT": str(tmp_path / "out"),
                                           "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"})
    assert res.returncode == rc, res.stdout + res.stderr
    log = (tmp_path / "out" / "ncu-acceptance.log").read_text()
    assert ("GPU checks: 6 run, 0 failed" in log) == (rc == 0), log
    assert "fake nsighttk ncu kernels/streams_demo.py" in log  # a failed check does not stop the others


# `nsys analyze -f FMT -o BASE ... EXPORT` writes BASE_<rule>.FMT, as nsys 2025.3 does
FAKE_NSYS = """case "$1" in
  --version) echo "NVIDIA Nsight Systems version 2025.3.1.0-fake"; exit 0 ;;
  analyze) ;;
  *) exit 9 ;;
esac
args="$*"
[ -n "${FAKE_FAIL_ON:-}" ] && [[ "$args" == *"$FAKE_FAIL_ON"* ]] && { echo "fake nsys: failed" >&2; exit 1; }
fmt=table; out=
while [ $# -gt 0 ]; do
  case "$1" in -f) fmt=$2; shift ;; -o) out=$2; shift ;; esac; shift
done
if [ -n "$out" ]; then
  [ -n "${FAKE_NO_OUTPUT_FOR:-}" ] && [[ "$args" == *"$FAKE_NO_OUTPUT_FOR"* ]] && exit 0
  echo "rows" > "${out}_gpu_gaps.$fmt"
else
  echo "a $fmt table"
fi
"""


def _tree(tmp_path: Path) -> Path:
    """A checkout stand-in: tests/gpu copied, the rest linked; .device/gpu-env.sh points at the fake nsys."""
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    shutil.copytree(GPU, tree / "tests" / "gpu")
    for name in ("rules_synth.py", "fixtures"):
        (tree / "tests" / name).symlink_to(ROOT / "tests" / name)
    _fake(tmp_path / "bin", "nsys", FAKE_NSYS)
    (tmp_path / "bin" / "python3").symlink_to(sys.executable)  # the interpreter that has nsighttk's packages
    (tree / ".device").mkdir()
    (tree / ".device" / "gpu-env.sh").write_text(f'export NSIGHTTK_BUNDLED_NSYS={tmp_path / "bin" / "nsys"}\n'
                                                 'false  # setup scripts may end on a failing command\n')
    return tree


@pytest.mark.parametrize(("env", "rc", "says"), [
    ({}, 0, "rules_ref: OK"),
    ({"FAKE_FAIL_ON": "-f json"}, 1, "rules_ref: FAILED"),  # nsys analyze fails once
    ({"FAKE_NO_OUTPUT_FOR": "-f csv"}, 1, "rules_ref: FAILED"),  # nsys analyze exits 0 and writes nothing
])
def test_gpu_checks_fail_when_a_section_does(env: dict[str, str], rc: int, says: str, tmp_path: Path) -> None:
    """checks.sh rules_ref runs rules_reference.sh against the fake nsys (no GPU needed)."""
    tree, out = _tree(tmp_path), tmp_path / "out"
    out.mkdir()
    res = subprocess.run([BASH, str(tree / "tests" / "gpu" / "checks.sh"), "rules_ref"], capture_output=True,
                         text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, **env, "OUT": str(out), "TMPDIR": str(tmp_path),
                              "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"})
    assert res.returncode == rc, res.stdout + res.stderr + (out / "rules_ref.log").read_text()
    assert says in (out / "summary.log").read_text()
    log = (out / "rules_ref.log").read_text()
    if rc == 0:
        assert "GPU checks: 19 run, 0 failed" in log, log  # 3 seeds x (2 x (run + output) + 2 runs) + 1 run
    else:
        assert "CHECK FAILED" in log, log


def test_gpu_checks_unknown_section_fails(tmp_path: Path) -> None:
    tree, out = _tree(tmp_path), tmp_path / "out"
    out.mkdir()
    res = subprocess.run([BASH, str(tree / "tests" / "gpu" / "checks.sh"), "no_such_section"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60,
                         env={**os.environ, "OUT": str(out), "TMPDIR": str(tmp_path),
                              "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"})
    assert res.returncode == 1 and "section no_such_section exists: expected 'yes', got 'no'" in res.stderr
