"""The README stays true: every command has help and is documented, the two set-up commands come
first and exist in the Makefile, and .ci/run calls the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from nsighttk.cli import COMMAND_MODULES, cli

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("command", sorted(COMMAND_MODULES))
def test_every_command_has_help_and_is_documented(command: str) -> None:
    res = CliRunner().invoke(cli, [command, "--help"])
    assert res.exit_code == 0 and "Usage:" in res.stdout
    assert f"### `nsighttk {command}" in README


def test_the_two_setup_commands_are_the_readme_s_first_code_block() -> None:
    """A reader meets `make demo` and `make test` before any other code, under "Set up", and both
    are targets of the Makefile."""
    first = re.search(r"^```(\w*)\n(.*?)^```", README, re.S | re.M)
    assert first is not None
    commands = [ln.split("#")[0].strip() for ln in first.group(2).splitlines() if ln.strip()]
    assert (first.group(1), commands) == ("bash", ["make demo", "make test"])
    headings = re.findall(r"^## (.+)$", README[:first.start()], re.M)
    assert headings == ["Set up"], headings
    targets = re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M)
    assert {"demo", "test"} <= set(targets)


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci and "make lint" in ci


def test_python_module_entry_point() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "nsighttk", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and "nsighttk" in out.stdout


def test_every_command_has_a_whole_line_in_the_help() -> None:
    """`nsighttk --help` once cut the torch entry to "Profile a workload (e.g.": every command has
    its own short help, and none is cut at any width the help is printed at."""
    from nsighttk.cli import SHORT_HELP, cli, declare_all

    declare_all()
    assert set(SHORT_HELP) == set(cli.commands) == set(COMMAND_MODULES)
    for width in (80, 100):
        out = CliRunner().invoke(cli, ["--help"], terminal_width=width).stdout
        listed = out.split("Commands:", 1)[1]
        for name, text in SHORT_HELP.items():
            assert text in " ".join(listed.split()), (name, width)
        assert "..." not in listed
