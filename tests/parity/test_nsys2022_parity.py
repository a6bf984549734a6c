"""Parity with a real `nsys stats` (Debian's nsys 2022.4, which runs on a CPU-only machine) on
synthetic exports the fixtures do not cover: thousands of kernels, ties, awkward names, every
memcpy kind, nested and crossing NVTX ranges, an unclosed range, a named domain.

nsys 2022.4's reports predate the 2025 names and differ from them in conventions only, which
this test maps before comparing: memcpy operations are named by short kind (``DtoH``; unified
memory as ``[CUDA Unified Memory memcpy HtoD]``), NVTX ranges carry no ``domain:`` prefix,
``gpukernsum`` is the 2025 ``cuda_gpu_kern_gb_sum`` sorted by total time only, ``gputrace`` has no
GreenCtx column and prints nulls as ``None``, and ``nvtxgpuproj`` lists each range instance
(our :func:`nvtx_projection`).  Every number must be equal.

One real difference, avoided by the synthetic data: nsys 2022.4 decides which range encloses
another from R-tree coordinates scaled to float32 only, so boundaries closer than the float32
resolution of the capture's span (about 200 ns over 2.4 s) can nest the wrong way there; nsys
2025.3 adds exact nanosecond checks, and nsighttk follows 2025.3.
"""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import capture, reference_nsys_or_skip
from synth import SynthSpec, make_export

from nsighttk.analysis.nsys import reports as R
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.report.nsys_format import to_csv

NSYS = reference_nsys_or_skip()

OLD = {"cuda_api_sum": "cudaapisum", "cuda_gpu_kern_gb_sum": "gpukernsum", "cuda_gpu_mem_time_sum": "gpumemtimesum",
       "cuda_gpu_mem_size_sum": "gpumemsizesum", "cuda_gpu_sum": "gpusum", "nvtx_sum": "nvtxsum",
       "nvtx_kern_sum": "nvtxkernsum", "cuda_gpu_trace": "gputrace", "nvtx_projection": "nvtxgpuproj"}
SHORT = {"Host-to-Device": "HtoD", "Device-to-Host": "DtoH", "Device-to-Device": "DtoD", "Host-to-Host": "HtoH",
         "Peer-to-Peer": "PtoP"}


def _old_op(name: str) -> str:
    if name.startswith("[CUDA memcpy Unified "):
        label = name[len("[CUDA memcpy Unified "):-1]
        return f"[CUDA Unified Memory memcpy {SHORT.get(label, label)}]"
    if name.startswith("[CUDA memcpy "):
        label = name[len("[CUDA memcpy "):-1]
        return f"[CUDA memcpy {SHORT.get(label, label)}]"
    return name


@pytest.fixture(scope="module", params=[1, 2, 3])
def exports(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp(f"synth{request.param}")
    spec = SynthSpec(kernels=1500 * request.param, runtime=2500 * request.param, seed=request.param)
    f = make_export(capture("streams_demo"), d / "synth.sqlite", spec)
    out = d / "nsys22"
    subprocess.run([NSYS, "stats", "-r", ",".join(OLD.values()), "-f", "csv", "-o", str(out), "--force-overwrite",
                    "true", str(f)], check=True, capture_output=True)
    return f, out


def _theirs(prefix: Path, report: str) -> pd.DataFrame:
    return pd.read_csv(f"{prefix}_{OLD[report]}.csv", keep_default_na=False, dtype=str).replace("None", "")


def _ours(f: Path, report: str) -> pd.DataFrame:
    p = load_nsys_sqlite(f)
    p.nvtx["domain"] = ""  # nsys 2022 does not prefix ranges with their domain
    df = R.nvtx_projection(p) if report == "nvtx_projection" else R.REPORTS[report](p).frame
    return pd.read_csv(io.StringIO(to_csv(df)), keep_default_na=False, dtype=str)


def _same(ours: pd.DataFrame, theirs: pd.DataFrame, key: list[str] | None = None) -> None:
    if key:
        ours = ours.sort_values(key, kind="mergesort").reset_index(drop=True)
        theirs = theirs.sort_values(key, kind="mergesort").reset_index(drop=True)
    assert len(ours) == len(theirs)
    for c in theirs.columns:
        assert c in ours.columns, c
        diff = ours[c] != theirs[c]
        assert not diff.any(), (c, ours.loc[diff, c].head().tolist(), theirs.loc[diff, c].head().tolist())


def test_cuda_api_sum(exports: tuple[Path, Path]) -> None:
    _same(_ours(exports[0], "cuda_api_sum"), _theirs(exports[1], "cuda_api_sum"))


def test_kernels_by_grid_and_block(exports: tuple[Path, Path]) -> None:
    _same(_ours(exports[0], "cuda_gpu_kern_gb_sum"), _theirs(exports[1], "cuda_gpu_kern_gb_sum"),
          key=["Name", "GridXYZ", "BlockXYZ"])


@pytest.mark.parametrize("report", ["cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "cuda_gpu_sum"])
def test_memory_and_gpu_summaries(exports: tuple[Path, Path], report: str) -> None:
    ours = _ours(exports[0], report)
    ours["Operation"] = ours["Operation"].map(_old_op)
    _same(ours, _theirs(exports[1], report), key=["Operation"])


def test_nvtx_sum(exports: tuple[Path, Path]) -> None:
    ours = _ours(exports[0], "nvtx_sum")
    ours["Range"] = ours["Range"].str.removeprefix(":")
    _same(ours, _theirs(exports[1], "nvtx_sum"), key=["Range", "Style"])


def test_nvtx_kern_sum(exports: tuple[Path, Path]) -> None:
    ours = _ours(exports[0], "nvtx_kern_sum")
    ours["NVTX Range"] = ours["NVTX Range"].str.removeprefix(":")
    _same(ours, _theirs(exports[1], "nvtx_kern_sum"), key=["NVTX Range", "TID", "Kernel Name"])


def test_gpu_trace(exports: tuple[Path, Path]) -> None:
    ours = _ours(exports[0], "cuda_gpu_trace")
    ours["Name"] = ours["Name"].map(_old_op)
    ours = ours.rename(columns={"Throughput (MB/s)": "Throughput (MBps)"})
    _same(ours, _theirs(exports[1], "cuda_gpu_trace"))


def test_nvtx_projection_per_range(exports: tuple[Path, Path]) -> None:
    ours = _ours(exports[0], "nvtx_projection")
    theirs = _theirs(exports[1], "nvtx_projection")
    ours = ours.rename(columns={"name": "Name", "proj_start_ns": "Projected Start (ns)",
                                "proj_ns": "Projected Duration (ns)", "range_ns": "Orig Duration (ns)",
                                "gpu_ops": "NumGPUOps", "level": "Lvl", "children": "NumChild", "style": "Style"})
    ours["Name"] = ours["Name"].str.removeprefix(":")
    cols = ["Name", "Style", "Projected Start (ns)", "Projected Duration (ns)", "Orig Duration (ns)", "NumGPUOps",
            "Lvl", "NumChild"]
    _same(ours[cols], theirs[cols], key=["Projected Start (ns)", "Name", "Orig Duration (ns)"])
