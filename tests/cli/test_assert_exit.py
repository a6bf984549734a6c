"""The CLI-result check in conftest.py fails where it should: an escaped exception, a wrong exit code,
an error over two lines, a missing message."""

from __future__ import annotations

import sys

import click
import pytest
from click.testing import CliRunner
from conftest import assert_exit


@click.command()
@click.argument("what")
def tool(what: str) -> None:
    if what == "raise":
        raise RuntimeError("a bug")
    if what == "one":
        click.echo("nsighttk: error: bad input", err=True)
        sys.exit(2)
    if what == "two":
        click.echo("nsighttk: error: bad input\nmore", err=True)
        sys.exit(2)


def test_assert_exit_accepts_one_line_errors_and_clicks_usage_errors() -> None:
    assert assert_exit(CliRunner().invoke(tool, ["one"]), 2, line="bad input") == "nsighttk: error: bad input"
    assert assert_exit(CliRunner().invoke(tool, []), 2, line="Missing argument").startswith("Error: ")
    assert_exit(CliRunner().invoke(tool, ["fine"]), 0)


@pytest.mark.parametrize(("args", "code", "line", "why"), [
    (["raise"], 1, None, "RuntimeError escaped the CLI"),
    (["one"], 3, None, "expected exit code 3"),
    (["two"], 2, None, "expected one line on stderr"),
    (["one"], 2, "something else", "expected 'something else'"),
])
def test_assert_exit_fails_where_it_should(args: list[str], code: int, line: str | None, why: str) -> None:
    with pytest.raises(AssertionError, match=why):
        assert_exit(CliRunner().invoke(tool, args), code, line=line)
