"""Communication vs computation per device (nsighttk.analysis.comm.collectives): exact on synthetic
intervals, equal to a plain sweep over the kernel boundaries on HTA's public NCCL trace, collectives
named and summed there, and the same analysis on an nsys capture and a Kineto trace."""

from __future__ import annotations

import bisect
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from nsighttk.analysis.comm.collectives import COLLECTIVE_COLUMNS, NO_SIZES, collectives
from nsighttk.api import load
from nsighttk.profile import Profile, conform

HTA = Path(__file__).parents[1] / "fixtures" / "hta"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
GEMM = "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_bias_TNT"


def _profile(rows: list[tuple[str, int, int, int]], **extra: list[object]) -> Profile:
    df = pd.DataFrame(rows, columns=["name", "start_ns", "end_ns", "device_id"])
    df["duration_ns"] = df["end_ns"] - df["start_ns"]
    df["name_id"] = pd.factorize(df["name"])[0]
    for col, values in extra.items():
        df[col] = values
    p = Profile()
    p.kernels = conform("kernels", df).assign(**{c: df[c] for c in extra})
    return p


def test_overlap_on_known_intervals() -> None:
    p = _profile([(NCCL, 0, 100, 0), (NCCL, 200, 300, 0), (GEMM, 50, 250, 0), (GEMM, 60, 70, 0),
                  (GEMM, 0, 40, 1)])
    r = collectives(p)
    d0, d1 = r.devices
    assert (d0.comm_ns, d0.compute_ns, d0.overlap_ns, d0.exposed_comm_ns, d0.comm_kernels) == (200, 200, 100, 100, 2)
    assert d0.overlap_pct == 50.0 and d0.span_ns == 300
    assert (d1.comm_ns, d1.compute_ns, d1.overlap_pct, d1.comm_kernels) == (0, 40, None, 0)
    row = r.collectives.iloc[0]
    assert list(r.collectives.columns) == COLLECTIVE_COLUMNS and len(r.collectives) == 1
    assert (row["collective"], row["count"], row["total_ns"], row["avg_ns"], row["dtype"], row["algorithm"]) == \
        ("AllReduce", 2, 200, 100, "bfloat16", "RING")
    assert pd.isna(row["bytes"]) and row["pct_of_comm"] == 100.0
    d = r.as_dict()
    assert d["devices"][0]["overlap_pct"] == 50.0 and d["collectives"][0]["bytes"] is None
    assert r.summary() == ["device 0: communication 0.000 ms in 2 kernels, 50.0% of it overlapped with computation "
                           "(0.000 ms); 0.000 ms exposed", NO_SIZES]


def test_bytes_when_the_loader_knows_them() -> None:
    p = _profile([(NCCL, 0, 10, 0), (NCCL, 20, 30, 0)], comm_in_nelems=[1024, 2048], comm_out_nelems=[1024, 2048],
                 comm_dtype=["Float", "Float"], comm_group_size=[2, 2])
    assert collectives(p).collectives.iloc[0]["bytes"] == 12288


def test_no_kernels_and_no_communication() -> None:
    assert collectives(Profile()).devices == [] and not collectives(Profile()).has_communication
    r = collectives(_profile([(GEMM, 0, 10, 0)]))
    assert not r.has_communication and r.collectives.empty and r.summary() == []


def _sweep_overlap(comm: list[tuple[int, int]], comp: list[tuple[int, int]]) -> tuple[int, int, int]:
    """Union and intersection lengths by walking every boundary and counting the intervals that cover
    each piece (starts at or before it minus ends at or before it): independent of the merge code."""
    points = sorted({t for iv in comm + comp for t in iv})
    cs, ce = sorted(s for s, _ in comm), sorted(e for _, e in comm)
    ps, pe = sorted(s for s, _ in comp), sorted(e for _, e in comp)
    c_ns = p_ns = both = 0
    for a, b in itertools.pairwise(points):
        in_c = bisect.bisect_right(cs, a) - bisect.bisect_right(ce, a) > 0
        in_p = bisect.bisect_right(ps, a) - bisect.bisect_right(pe, a) > 0
        c_ns += (b - a) * in_c
        p_ns += (b - a) * in_p
        both += (b - a) * (in_c and in_p)
    return c_ns, p_ns, both


def test_hta_nccl_trace() -> None:
    """HTA's public NCCL trace (one DDP rank): AllReduce and Broadcast named, overlap reported and
    equal to a boundary sweep of the same kernels."""
    p = load(HTA / "nccl_parser_config" / "nccl_data.json.gz")
    r = collectives(p)
    assert r.has_communication
    rows = r.collectives.set_index("collective")
    assert rows.loc["AllReduce", "count"] == 15 and rows.loc["Broadcast", "count"] == 6
    assert rows.loc["AllReduce", "label"] == "nccl AllReduce ring LL f32 sum"
    k = p.kernels
    comm = k[k["name"].str.startswith("nccl")]
    assert rows["total_ns"].sum() == comm["duration_ns"].sum()
    ivs = [(int(s), int(e)) for s, e in zip(k["start_ns"], k["end_ns"], strict=True)]
    is_c = k["name"].str.startswith("nccl").to_numpy()
    c_ns, p_ns, both = _sweep_overlap([iv for iv, c in zip(ivs, is_c, strict=True) if c],
                                      [iv for iv, c in zip(ivs, is_c, strict=True) if not c])
    (d,) = r.devices
    assert (d.comm_ns, d.compute_ns, d.overlap_ns) == (c_ns, p_ns, both)
    assert 0 < d.overlap_pct < 100  # type: ignore[operator]


def test_two_ranks_of_one_job() -> None:
    for rank in (0, 1):
        r = collectives(load(HTA / "trace_filter" / f"sampled_rank-{rank}.json.gz"))
        (d,) = r.devices
        assert d.device_id == rank and d.comm_kernels == 10
        assert r.collectives["collective"].tolist() == ["SendRecv"]
        assert np.isclose(d.exposed_comm_ns + d.overlap_ns, d.comm_ns)
