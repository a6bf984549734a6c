"""Every command the README shows is run, and prints what the README says it prints: the CPU
examples here (exactly, or with numbers masked where they are timings), the GPU ones by
tests/gpu/readme_commands.sh on a GPU machine (see tests/readme_examples.py)."""

from __future__ import annotations

import tempfile

import pytest
from readme_examples import Example, examples, mask, run

CPU = [ex for ex in examples() if ex.kind != "gpu"]


def test_the_readme_has_examples_of_both_kinds() -> None:
    kinds = {ex.kind for ex in examples()}
    assert {"exact", "gpu"} <= kinds and len(CPU) >= 8


@pytest.mark.parametrize("ex", CPU, ids=lambda ex: ex.commands[0][0][:60])
def test_readme_example_prints_what_the_readme_shows(ex: Example) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        for command, shown in ex.commands:
            got = run(command, scratch)
            numbers = ex.kind == "numbers vary"
            assert mask(got, scratch, numbers) == mask(shown.replace("/tmp/scratch", scratch), scratch, numbers), \
                command
