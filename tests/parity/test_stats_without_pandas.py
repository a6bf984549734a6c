"""``nsighttk stats`` summaries are built and printed without pandas: reports hold rows
of Python values (or, the NVTX ones, a numpy column Table), printed byte for byte as the DataFrame
they convert to would be."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import CAPTURES, capture

from nsighttk.analysis.coltable import Table
from nsighttk.analysis.nsys import reports as R
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.report import nsys_format

ROOT = Path(__file__).resolve().parents[2]
SUMMARIES = [r for r in R.REPORTS if r != "cuda_gpu_trace"]


def huge_export(tmp_path: Path) -> Path:
    """streams_demo with three kernels of one name lasting 2^62 ns (exact totals and averages)."""
    k = "CUPTI_ACTIVITY_KIND_KERNEL"
    dst = tmp_path / "huge.sqlite"
    shutil.copy(capture("streams_demo"), dst)
    con = sqlite3.connect(dst)
    con.execute(f"UPDATE {k} SET \"end\" = start + {2**62} WHERE rowid IN (SELECT rowid FROM {k} WHERE "
                f"demangledName = (SELECT demangledName FROM {k} GROUP BY 1 HAVING count(*) >= 3 LIMIT 1) LIMIT 3)")
    con.commit()
    con.close()
    return dst


@pytest.mark.parametrize("name", [*CAPTURES, "huge"])
def test_summaries_render_as_their_dataframes(name: str, tmp_path: Path) -> None:
    from nsighttk.commands.stats import render_report

    path = huge_export(tmp_path) if name == "huge" else capture(name)
    p = load_nsys_sqlite(path)
    for report in SUMMARIES:
        res = R.run_report(report, p)
        frame = res.frame
        assert list(frame.columns) == (res.columns if res.rows is not None else res.table.columns)  # type: ignore[union-attr]
        assert render_report(res, "csv") == nsys_format.to_csv(frame), report
        if not frame.empty:
            assert render_report(res, "table") == nsys_format.to_table(frame), report
            assert render_report(res, "json") == nsys_format.to_json(frame), report


def test_stats_cli_never_imports_pandas(tmp_path: Path) -> None:
    code = ("import sys, runpy; sys.argv = ['nsighttk'] + sys.argv[1:]\n"
            "try:\n    runpy.run_module('nsighttk', run_name='__main__')\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "print('pandas' in sys.modules)")
    for fmt in ("csv", "table", "json"):
        out = subprocess.run([sys.executable, "-c", code, "stats", "-r", ",".join(SUMMARIES), "-f", fmt,
                              "-o", str(tmp_path / fmt), str(capture("streams_demo"))],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
        assert out.stdout.strip().splitlines()[-1] == "False", (fmt, out.stdout, out.stderr)
        assert len(list(tmp_path.glob(f"{fmt}_*"))) == len(SUMMARIES)


def test_table_sort_is_stable_with_missing_values_last() -> None:
    t = Table({"k": np.array([2, 1, 2, 5, 1]), "s": np.array(["x", "y", None, "a", "b"], dtype=object),
               "i": np.arange(5)}, masks={"k": np.array([False, False, False, True, False])})
    got = t.sorted(["k", "s"], [False, True])
    want = t.to_pandas().sort_values(["k", "s"], ascending=[False, True], kind="mergesort")
    assert got.data["i"].tolist() == want["i"].tolist() == [0, 2, 4, 1, 3]
