"""``nsighttk recipe NAME --input CAPTURE... --output DIR [--csv]``: Nsight Systems' multi-report
recipes ``nccl_sum`` and ``cuda_gpu_kern_sum`` over many captures, each capture mapped on a Dask
worker (:mod:`nsighttk.hpc.dask_ranks`), the tables written as ``nsys recipe`` writes them
(Parquet, and CSV with ``--csv``): ``files``, ``rank_stats``, ``all_stats`` and, for
``cuda_gpu_kern_sum``, ``rank_stats_by_device``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nsighttk import progress, safeio
from nsighttk.analysis.nsys import recipes
from nsighttk.errors import OutputFileError, UsageError
from nsighttk.hpc import dask_ranks
from nsighttk.hpc.dask_ranks import Failed, Where

#: what a folder given as --input contributes: its captures
CAPTURE_SUFFIXES = (".sqlite", ".nsys-rep")


@dataclass
class Options:
    name: str
    inputs: list[Path]
    output: Path | None = None  # default: NAME-N, the first free N, in the current folder
    csv: bool = False
    force_overwrite: bool = False
    where: Where | None = None


@dataclass
class Result:
    output: Path
    files: list[str] = field(default_factory=list)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"output": str(self.output), "files": self.files, "skipped": self.skipped,
                "tables": {k: len(v) for k, v in self.tables.items()}}


def captures_of(inputs: list[Path]) -> list[Path]:
    """The captures the inputs name: files as given, folders by their .sqlite (else .nsys-rep)
    files, one per report (an export beside its report counts once)."""
    out: list[Path] = []
    for i in inputs:
        if safeio.is_dir(i):
            found = sorted(p for p in Path(i).iterdir() if p.suffix in CAPTURE_SUFFIXES)
            stems = {p.with_suffix("") for p in found if p.suffix == ".sqlite"}
            out += [p for p in found if p.suffix == ".sqlite" or p.with_suffix("") not in stems]
        else:
            out.append(Path(i))
    return out


def output_dir(opts: Options) -> Path:
    if opts.output is None:
        n = 1
        while Path(f"{opts.name}-{n}").exists():
            n += 1
        return Path(f"{opts.name}-{n}")
    if opts.output.exists() and not opts.force_overwrite:
        raise OutputFileError(f"--output {opts.output}: already exists", "choose another folder, or --force-overwrite")
    if opts.output.exists() and not opts.output.is_dir():
        raise OutputFileError(f"--output {opts.output}: is not a folder", "choose a folder name")
    return opts.output


def run(opts: Options) -> Result:
    if opts.name not in recipes.RECIPES:
        raise UsageError(f"no recipe {opts.name!r} here", f"nsighttk recipe takes: {', '.join(recipes.RECIPES)}")
    if not opts.inputs:
        raise UsageError("--input is required", f"e.g. nsighttk recipe {opts.name} --input reports/")
    caps = captures_of(opts.inputs)
    if not caps:
        raise UsageError(f"no capture (.sqlite, .nsys-rep) in {', '.join(map(str, opts.inputs))}",
                         "give the per-rank nsys captures")
    out = output_dir(opts)
    got: dict[int, tuple[str, Any]] = {}
    skipped: list[dict[str, str]] = []

    def arrived(i: int, res: Any) -> None:
        if isinstance(res, Failed):
            skipped.append({"capture": str(caps[i]), "reason": res.reason})
        else:
            got[i] = res

    where = opts.where or (Where(workers=0) if len(caps) <= 2 else Where())
    with progress.step(f"{opts.name} over {len(caps)} captures"):
        dask_ranks.map_items(dask_ranks.recipe_rank, [(str(c), opts.name) for c in caps], where, arrived)
    tables = recipes.reduce(opts.name, [got[i] for i in sorted(got)])
    if "rank_stats" not in tables:
        raise UsageError(f"{opts.name}: no capture has data for it", "nccl_sum needs NCCL's NVTX ranges (nsys "
                         "--trace nvtx with NCCL); cuda_gpu_kern_sum needs kernels")
    safeio.make_dirs(out, "--output folder")
    for name, df in tables.items():
        with safeio.atomic_write(out / f"{name}.parquet", "wb", encoding=None) as f:
            df.to_parquet(f)
        if opts.csv:
            safeio.write_text(out / f"{name}.csv", df.to_csv())
    return Result(out, list(tables["files"]["File"]), tables, sorted(skipped, key=lambda s: s["capture"]))
