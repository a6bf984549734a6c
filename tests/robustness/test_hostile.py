"""The hostile corpus (tests/hostile/): every case run through nsighttk's entry point and checked
for exit code, traceback, error lines, hangs, untouched inputs, no half-written file and nothing
changed outside its scratch folder.  Known failures in code owned elsewhere are
``xfail(strict=True)`` with the reason, so they turn red the day they are fixed.  The same corpus
runs as a script with a summary: ``python -m tests.hostile``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile.cases import all_cases
from hostile.runner import Case, outside, run_case

CASES = all_cases()


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=case.id.encode("unicode_escape").decode(), marks=marks)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The cases' scratch folders; afterwards, no file of the checkout's fixtures changed (each
    case checks the folders; this checks every file once)."""
    around = outside(full=True)
    yield tmp_path_factory.mktemp("hostile")
    assert outside(full=True) == around, "a file of the checkout or its fixtures changed during the corpus"


def test_the_corpus_is_large_and_covers_every_kind() -> None:
    groups = {c.group for c in CASES}
    assert len(CASES) >= 500
    assert groups >= {"nsys-wrong-file", "nsys-damaged", "ncu", "kineto", "rundir", "db", "output", "option", "names"}
    assert [c.id for c in CASES if c.id.split("/", 1)[0] != c.group] == []


def test_every_command_that_takes_input_meets_the_corpus() -> None:
    """Each command is run by some case (``doctor`` takes nothing from the user but ``--json``)."""
    from nsighttk.cli import COMMAND_MODULES

    run = {next((a for a in c.argv if a in COMMAND_MODULES), None) for c in CASES}
    assert sorted(set(COMMAND_MODULES) - {"doctor"} - run) == []


def test_the_corpus_is_the_same_every_time_and_allows_only_the_promised_exit_codes() -> None:
    """The same cases, in the same order, on every call (ids name a case across runs); each allows
    only what the README promises: 0, 2 for a mistake, 3 for a missing tool, 130 for Ctrl-C."""
    again = all_cases()
    assert [(c.id, c.argv, c.rcs, c.process, c.timeout) for c in again] == \
        [(c.id, c.argv, c.rcs, c.process, c.timeout) for c in CASES]
    assert len({c.id for c in CASES}) == len(CASES)
    assert [c.id for c in CASES if not c.rcs or not c.rcs <= {0, 2, 3, 130}] == []


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_hostile(case: Case, base: Path) -> None:
    o = run_case(case, base)
    assert o.ok, f"{case.id}: rc={o.rc}\n" + "\n".join(o.problems)


def test_every_real_capture_is_a_base() -> None:
    """Each nsys export under tests/fixtures (one a change adds too) is damaged in the ``bases``
    group; the fuzz suite draws from the same discovery (tests/fuzz/bases.py)."""
    from fuzz.bases import FIXTURES, nsys_exports

    exports = set(nsys_exports())
    assert exports == set(FIXTURES.rglob("*.sqlite")) and len(exports) >= 4
    named = {c.id.split("/", 1)[1].rsplit("/", 2)[0] for c in CASES if c.group == "bases"}
    assert named == {p.relative_to(FIXTURES).as_posix().removesuffix(".sqlite") for p in exports}
