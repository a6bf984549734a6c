"""Large CSV reports stream to their file: however long the names, no write (and so no text held
at once) is much larger than the writer's batch, and the bytes are those of the whole text."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import capture

from nsighttk.analysis.coltable import Table
from nsighttk.report import nsys_cells, nsys_format

NAME = "void k<float, " + "T, " * (1 << 18) + ">(int)"  # ~768 KiB, quoted in CSV (it has commas)


class Writes(io.StringIO):
    """A text file that remembers its largest single write."""

    largest = 0

    def write(self, s: str) -> int:
        self.largest = max(self.largest, len(s))
        return super().write(s)


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(nsys_format, "_CSV_BYTES", 2 * 2**20)
    return 2 * 2**20


def _frame(rows: int) -> pd.DataFrame:
    names = [NAME + str(i % 7) for i in range(rows)]
    return pd.DataFrame({"Start (ns)": np.arange(rows, dtype=np.int64), "Name": pd.Series(names, dtype=object)})


@pytest.mark.parametrize("kind", ["frame", "table"])
def test_rows_of_huge_names_are_written_a_few_at_a_time(kind: str, small_batches: int) -> None:
    frame = _frame(60)
    data: Any = frame if kind == "frame" else Table({c: frame[c].to_numpy() for c in frame.columns})
    fh = Writes()
    assert nsys_format.write_csv([data], fh)
    text = fh.getvalue()
    assert fh.largest <= small_batches + 2 * len(NAME), fh.largest
    lines = text.splitlines()
    assert len(lines) == 61 and lines[0] == "Start (ns),Name"
    assert lines[5] == f'4,"{NAME}4"' and lines[-1] == f'59,"{NAME}3"'
    whole = io.StringIO()
    nsys_format.write_csv([data], whole)  # the same bytes in batches of any size
    assert whole.getvalue() == text


def test_a_summary_given_as_rows_streams_its_lines(small_batches: int) -> None:
    rows = [(NAME + str(i), i * 10, float(i)) for i in range(40)]
    cols = ["Name", "Instances", "Avg (ns)"]
    fh = Writes()
    nsys_format.write_lines(fh, nsys_cells.csv_lines(cols, rows, {"Name"}))
    assert fh.largest <= small_batches + 2 * len(NAME), fh.largest
    assert fh.getvalue() == nsys_cells.render_rows(cols, rows, {"Name"}, "csv")


def test_stats_writes_every_report_as_it_renders_it(tmp_path: Path, small_batches: int) -> None:
    """``stats -f csv -o`` writes the files the text would hold, byte for byte."""
    from nsighttk.commands import stats

    src = capture("streams_demo")
    outs = stats.stats(src, "all", "csv", str(tmp_path / "s"))
    texts = {o.report: o.text for o in stats.stats(src, "all", "csv")}
    for o in outs:
        assert o.path is not None
        assert o.path.read_text() == (texts[o.report] or ""), o.report


def test_rows_of_distinct_huge_names_are_formatted_a_few_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each row its own 64 KiB name: the chunk of rows formatted at once shrinks to the batch, so
    the text alive at once stays near the batch (here 1 MiB), not the 19 MiB of the report."""
    import tracemalloc

    monkeypatch.setattr(nsys_format, "_CSV_BYTES", 2**20)
    monkeypatch.setattr(nsys_format, "_CSV_FIRST", 4)
    names = pd.Series([f"k{i}<" + "a," * (1 << 15) + ">" for i in range(300)], dtype=object)
    frame = pd.DataFrame({"Start (ns)": np.arange(300, dtype=np.int64), "Name": names})
    sink = open("/dev/null", "w")  # noqa: SIM115
    try:
        tracemalloc.start()
        nsys_format.write_csv([frame], sink)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        sink.close()
    assert peak < 8 * 2**20, peak
