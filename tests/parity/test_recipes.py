"""``nsighttk recipe``: nsys recipe's nccl_sum and cuda_gpu_kern_sum over many captures: the files
and columns nsys writes, values against SQL over the exports, and (where a fixture holds one) the
output of a real ``nsys recipe`` run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from nsighttk.cli import cli

FIX = Path(__file__).parents[1] / "fixtures"
DDP = FIX / "h200x2-ddp"
CAPS = [DDP / "rank0.sqlite", DDP / "rank1.sqlite"]
#: where real `nsys recipe` outputs are committed, with the exports of the reports they ran over
ORACLE_ROOTS = [FIX / "h200-unannotated", FIX / "h100-unannotated"]


def _sql_kernels(path: Path) -> pd.DataFrame:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return pd.read_sql("SELECT s.value AS name, k.end - k.start AS d FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                           "JOIN StringIds s ON s.id = k.shortName WHERE k.end > k.start", con)


def _sql_nccl(path: Path) -> pd.DataFrame:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        dom = con.execute("SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'NCCL'").fetchone()[0]
        return pd.read_sql("SELECT coalesce(e.text, s.value) AS name, e.end - e.start AS d FROM NVTX_EVENTS e "
                           "LEFT JOIN StringIds s ON s.id = e.textId WHERE e.domainId = ? AND e.eventType IN (59, 60) "
                           "AND e.end > e.start", con, params=(dom,))


@pytest.mark.parametrize(("recipe", "sql", "index"), [("cuda_gpu_kern_sum", _sql_kernels, "Name"),
                                                      ("nccl_sum", _sql_nccl, "Text")])
def test_recipe_files_columns_and_values(tmp_path: Path, recipe: str, sql: object, index: str) -> None:
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["recipe", recipe, "--input", *map(str, CAPS), "--output", str(out), "--csv",
                                 "--workers", "0"])
    assert r.exit_code == 0, r.output
    names = {"files", "rank_stats", "all_stats"}
    names |= {"rank_stats_by_device"} if recipe == "cuda_gpu_kern_sum" else set()
    assert {p.name for p in out.iterdir()} == {f"{n}.{e}" for n in names for e in ("csv", "parquet")}
    files = pd.read_csv(out / "files.csv")
    assert list(files.columns) == ["Rank", "File"] and list(files["File"]) == ["rank0", "rank1"]
    rank_stats = pd.read_parquet(out / "rank_stats.parquet")
    assert list(rank_stats.columns) == ["Count", "Mean", "Std", "Min", "Q1", "Median", "Q3", "Max", "Sum", "Rank"]
    assert rank_stats.index.name == index
    all_stats = pd.read_parquet(out / "all_stats.parquet")
    assert list(all_stats.columns) == ["Count", "Mean", "Std (approx)", "Min", "Q1 (approx)", "Median (approx)",
                                       "Q3 (approx)", "Max", "Sum"]
    both = []
    for rank, cap in enumerate(CAPS):
        d = sql(cap)  # type: ignore[operator]
        both.append(d)
        mine = rank_stats[rank_stats["Rank"] == rank]
        g = d.groupby("name")["d"]
        assert mine["Sum"].to_dict() == g.sum().to_dict()
        assert mine["Count"].to_dict() == g.count().to_dict()
        for name, durs in g:
            row = mine.loc[name]
            assert row["Q1"] == round(np.percentile(durs, 25), 1) and row["Median"] == round(np.median(durs), 1)
            assert row["Min"] == durs.min() and row["Max"] == durs.max()
        assert list(mine.index) == sorted(mine.index)
    every = pd.concat(both).groupby("name")["d"]
    assert all_stats["Sum"].to_dict() == every.sum().to_dict()
    assert all_stats["Count"].to_dict() == every.count().to_dict()
    assert all_stats["Max"].to_dict() == every.max().to_dict() and all_stats["Min"].to_dict() == every.min().to_dict()
    assert (all_stats["Mean"] == (all_stats["Sum"] / all_stats["Count"]).round(1)).all()


def test_recipe_mistakes_are_one_line(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["recipe", "nccl_sum", "--input", str(tmp_path), "--output", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no capture" in r.stderr and "Traceback" not in r.output
    (tmp_path / "o").mkdir()
    r = CliRunner().invoke(cli, ["recipe", "nccl_sum", "--input", *map(str, CAPS), "--output", str(tmp_path / "o"),
                                 "--workers", "0"])
    assert r.exit_code != 0 and "already exists" in r.stderr


def _oracle_runs() -> list[Path]:
    """Folders of a real `nsys recipe` run committed under the fixtures."""
    return sorted(p.parent for root in ORACLE_ROOTS if root.is_dir() for p in root.rglob("all_stats.csv")
                  if any(r in p.parent.name for r in ("nccl_sum", "cuda_gpu_kern_sum")))


@pytest.mark.parametrize("oracle", _oracle_runs() or [None], ids=lambda p: "none" if p is None else p.name)
def test_recipe_equals_nsys_recipe(tmp_path: Path, oracle: Path | None) -> None:
    if oracle is None:
        pytest.skip(f"no nsys recipe output under {', '.join(map(str, ORACLE_ROOTS))}")
    recipe = "cuda_gpu_kern_sum" if "cuda_gpu_kern_sum" in str(oracle) else "nccl_sum"
    stems = list(pd.read_csv(oracle / "files.csv")["File"])
    # (the exports of the reports the recipe ran over: beside its output folder, else anywhere in the fixture)
    caps = [next(oracle.parent.rglob(f"{s}.sqlite")) for s in stems]
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["recipe", recipe, "--input", *map(str, caps), "--output", str(out), "--csv",
                                 "--workers", "0"])
    assert r.exit_code == 0, r.output
    for csv in sorted(oracle.glob("*.csv")):  # byte for byte
        assert (out / csv.name).read_bytes() == csv.read_bytes(), csv.name
    for pq in sorted(oracle.glob("*.parquet")):  # the same frames (the writers' metadata differ)
        pd.testing.assert_frame_equal(pd.read_parquet(out / pq.name), pd.read_parquet(pq), obj=pq.name)
