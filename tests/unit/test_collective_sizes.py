"""Message sizes, algorithm and bus bandwidths of collective kernels (nsighttk.analysis.comm.sizes):
on the real DDP traces (2 H200s, NCCL 2.28) and HTA's public NCCL trace, checked against the raw Kineto
args; nccl-tests' bus factors per collective; impossible numbers guarded; analyze's text and JSON."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from nsighttk.analysis.comm.collectives import NO_SIZES, collectives
from nsighttk.analysis.comm.sizes import ELEMENT_BYTES, SIZE_COLUMNS, bus_factor
from nsighttk.api import load
from nsighttk.cli import cli
from nsighttk.profile import Profile, conform

DDP = Path(__file__).parents[1] / "fixtures" / "h200x2-ddp"
HTA = Path(__file__).parents[1] / "fixtures" / "hta" / "nccl_parser_config" / "nccl_data.json.gz"


def _raw_nccl_kernels(path: Path) -> list[dict]:
    """The trace's NCCL kernel events as written (ts/dur in microseconds)."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel" and e["name"].startswith("nccl")]


@pytest.mark.parametrize("rank", [0, 1])
def test_ddp_allreduce_sizes_from_the_raw_args(rank: int) -> None:
    """Each size's bytes, count, times and bandwidths equal a hand computation from the trace's own
    ``In msg nelems``/``dtype``/``Group size`` args and ``dur``: Float is 4 bytes, n = 2 gives
    AllReduce a bus factor of 2(2-1)/2 = 1, the H200's nominal NVLink 4 is 450 GB/s a direction."""
    path = DDP / f"rank{rank}.pt.trace.json.gz"
    raw = _raw_nccl_kernels(path)
    s = collectives(load(path)).sizes
    assert list(s.columns) == SIZE_COLUMNS
    assert s["bytes"].tolist() == [2361600 * 4, 7087872 * 4, 44111616 * 4]
    for _, row in s.iterrows():
        mine = [e for e in raw if e["args"]["In msg nelems"] * 4 == row["bytes"]]
        durs = [round(e["dur"] * 1000) for e in mine]  # (three decimals of a microsecond: exact ns)
        assert {e["args"]["dtype"] for e in mine} == {"Float"} and {e["args"]["Group size"] for e in mine} == {2}
        assert (row["collective"], row["op"], row["dtype"], row["group_size"]) == ("AllReduce", "allreduce", "Float", 2)
        assert (row["count"], row["total_ns"], row["min_ns"], row["max_ns"]) == (len(mine), sum(durs), min(durs),
                                                                                 max(durs))
        algbw = row["bytes"] * len(mine) / sum(durs)  # bytes per ns = GB/s
        assert row["bus_factor"] == 1.0
        assert math.isclose(row["algbw_gbps"], algbw) and math.isclose(row["busbw_gbps"], algbw)
        assert math.isclose(row["best_busbw_gbps"], row["bytes"] / min(durs))
        assert (row["link_gbps"], row["reference"], row["above_nominal"]) == (450.0, "nominal", False)
        transfer = sum(min(d, row["bytes"] / 450.0) for d in durs)
        assert row["transfer_ns"] == round(transfer) and row["wait_ns"] == sum(durs) - round(transfer)
        assert math.isclose(row["wait_pct"], 100 * (sum(durs) - round(transfer)) / sum(durs))


def test_one_collective_by_hand() -> None:
    """Rank 0's first 44,111,616-float AllReduce: 176,446,464 bytes in 617.855 us is 285.58 GB/s (and,
    n = 2, the same bus bandwidth); on a 450 GB/s link the bytes take 392.1 us, the other 225.8 us
    (36.5%) are not transfer."""
    path = DDP / "rank0.pt.trace.json.gz"
    first = next(e for e in _raw_nccl_kernels(path) if e["args"]["In msg nelems"] == 44111616)
    assert first["dur"] == 617.855 and first["args"]["Out msg nelems"] == 44111616
    p = load(path)
    k = p.kernels
    only = Profile(kernels=k[k["start_ns"] == k.loc[k["comm_in_nelems"] == 44111616, "start_ns"].min()],
                   gpus=p.gpus)
    (row,) = collectives(only).sizes.to_dict("records")
    assert (row["bytes"], row["total_ns"]) == (176446464, 617855)
    assert round(row["algbw_gbps"], 2) == 285.58 and round(row["busbw_gbps"], 2) == 285.58
    assert row["transfer_ns"] == 392103 and round(row["wait_pct"], 1) == 36.5


def test_hta_trace_broadcasts_of_two_dtypes_on_an_a100() -> None:
    """HTA's public trace: Broadcasts of 53,120 Floats and of 53 Longs (8 bytes each) are two sizes;
    A100-PG509-200 is an SXM4 board: NVLink 3, 300 GB/s a direction."""
    raw = _raw_nccl_kernels(HTA)
    r = collectives(load(HTA))
    b = r.sizes[r.sizes["collective"] == "Broadcast"].set_index("dtype")
    assert b.loc["Long", "bytes"] == 53 * 8 and b.loc["Float", "bytes"] == 53120 * 4
    longs = [round(e["dur"] * 1000) for e in raw if e["args"].get("dtype") == "Long"]
    assert b.loc["Long", "total_ns"] == sum(longs) and b.loc["Long", "count"] == 3
    assert set(r.sizes["link_gbps"]) == {300.0} and r.links[0][1].link == "NVLink 3 (12 links)"
    rows = r.collectives.set_index("collective")
    assert rows.loc["Broadcast", "bytes"] == 3 * 53 * 8 + 3 * 53120 * 4
    assert rows.loc["AllReduce", "bytes"] == 4 * sum(e["args"]["In msg nelems"] for e in raw
                                                     if e["args"].get("Collective name") == "allreduce")


def test_element_sizes_are_torchs() -> None:
    """Each dtype name as PyTorch's process group records it (c10's, as in ``torch.FloatTensor``) has
    the element size torch gives it."""
    import warnings

    import torch

    sizes = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dt in {v for v in vars(torch).values() if isinstance(v, torch.dtype)}:
            t = torch.empty(0, dtype=dt)
            sizes[t.type().rsplit(".", 1)[-1].removesuffix("Tensor")] = t.element_size()
    assert {n: sizes[n] for n in ELEMENT_BYTES} == ELEMENT_BYTES
    assert {"Float", "BFloat16", "Half", "Long", "Int", "Byte", "Float8_e4m3fn"} <= set(ELEMENT_BYTES)


def test_bus_factors_follow_nccl_tests() -> None:
    assert bus_factor("AllReduce", 8) == 2 * 7 / 8 and bus_factor("AllReduce", 2) == 1.0
    assert bus_factor("AllGather", 4) == bus_factor("ReduceScatter", 4) == 0.75
    assert bus_factor("SendRecv", 4, op="all_to_all") == 0.75
    assert bus_factor("Broadcast", 8) == bus_factor("Reduce", 8) == bus_factor("SendRecv", 8) == 1.0
    assert bus_factor("AllReduce", 1) is None and bus_factor("AllReduce", None) is None
    assert bus_factor("Mystery", 8) is None


_NAMES = {"AllReduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
          "AllGather": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
          "ReduceScatter": "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
          "Broadcast": "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
          "Reduce": "ncclDevKernel_Reduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
          "SendRecv": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"}


def _profile(rows: list[tuple[str, int, int, int, int, str, int, str]], gpu: str = "NVIDIA H100 80GB HBM3") -> Profile:
    """Kernels (name, start, duration, in nelems, out nelems, dtype, group size, op) on device 0."""
    df = pd.DataFrame(rows, columns=["name", "start_ns", "duration_ns", "comm_in_nelems", "comm_out_nelems",
                                     "comm_dtype", "comm_group_size", "comm_op"])
    df["end_ns"] = df["start_ns"] + df["duration_ns"]
    df["device_id"] = 0
    df["name_id"] = pd.factorize(df["name"])[0]
    gpus = conform("gpus", pd.DataFrame({"device_id": [0], "name": [gpu]}))
    return Profile(kernels=conform("kernels", df), gpus=gpus)


def test_bus_bandwidth_per_collective_type() -> None:
    """Eight ranks, arrays of 2^28 floats (1 GiB) in 10 ms: busbw is algbw x 1.75 for AllReduce, x 0.875
    for AllGather (an eighth in, all out), ReduceScatter (all in) and an all_to_all, x 1 for the rest."""
    g = 1 << 28
    rows = [(_NAMES["AllReduce"], 0, 10_000_000, g, g, "Float", 8, "allreduce"),
            (_NAMES["AllGather"], 1, 10_000_000, g // 8, g, "Float", 8, "_allgather_base"),
            (_NAMES["ReduceScatter"], 2, 10_000_000, g, g // 8, "Float", 8, "_reduce_scatter_base"),
            (_NAMES["Broadcast"], 3, 10_000_000, g, g, "Float", 8, "broadcast"),
            (_NAMES["Reduce"], 4, 10_000_000, g, g, "Float", 8, "reduce"),
            (_NAMES["SendRecv"], 5, 10_000_000, g, g, "Float", 8, "send"),
            (_NAMES["SendRecv"], 6, 10_000_000, g // 2, g // 2, "BFloat16", 8, "all_to_all")]
    s = collectives(_profile(rows)).sizes
    assert (s["bytes"] == 4 * g).iloc[:-1].all() and s["bytes"].iloc[-1] == g  # (bf16: 2 bytes)
    algbw = 4 * g / 10_000_000
    assert np.allclose(s["algbw_gbps"].iloc[:-1], algbw)
    got = dict(zip(s["collective"] + "/" + s["op"], s["busbw_gbps"] / s["algbw_gbps"], strict=True))
    assert got == {"AllReduce/allreduce": 1.75, "AllGather/_allgather_base": 0.875,
                   "ReduceScatter/_reduce_scatter_base": 0.875, "Broadcast/broadcast": 1.0, "Reduce/reduce": 1.0,
                   "SendRecv/send": 1.0, "SendRecv/all_to_all": 0.875}


def test_impossible_numbers_are_not_presented_as_real() -> None:
    """A zero-duration kernel has no bandwidth (not infinity); a bus bandwidth above the GPU's nominal
    link (here 2 GB in 1 ms on an H100: 2,000 GB/s) makes the measured best the reference, flagged,
    and no kernel waits a negative time; a group of one rank has no bus factor, transfer or waiting;
    a GPU whose link is not known is measured against the best of its own kind."""
    big = 1 << 29
    r = collectives(_profile([(_NAMES["AllReduce"], 0, 0, 256, 256, "Float", 2, "allreduce"),
                              (_NAMES["AllReduce"], 10, 1_000_000, big, big, "Float", 2, "allreduce"),
                              (_NAMES["AllReduce"], 2_000_000, 4_000_000, big, big, "Float", 2, "allreduce"),
                              (_NAMES["AllReduce"], 9_000_000, 500, 256, 256, "Float", 1, "allreduce")]))
    s = r.sizes.set_index(["bytes", "group_size"])
    zero = s.loc[(1024, 2)]
    assert zero["total_ns"] == 0 and np.isnan(zero["algbw_gbps"]) and np.isnan(zero["wait_pct"])
    fast = s.loc[(4 * big, 2)]
    assert fast["best_busbw_gbps"] > fast["link_gbps"] == 450.0
    assert fast["above_nominal"] and fast["reference"] == "best measured"
    assert fast["transfer_ns"] == 1_000_000 + 1_000_000 and fast["wait_ns"] == 3_000_000
    alone = s.loc[(1024, 1)]
    assert np.isnan(alone["bus_factor"]) and pd.isna(alone["transfer_ns"]) and alone["reference"] is None
    assert (r.sizes["wait_ns"].dropna() >= 0).all()
    assert "above the nominal link figure" in "\n".join(r.summary())
    pcie = collectives(_profile([(_NAMES["AllReduce"], 0, 2_000, 256, 256, "Float", 2, "allreduce"),
                                 (_NAMES["AllReduce"], 9, 1_000, 256, 256, "Float", 2, "allreduce")],
                                gpu="NVIDIA H100 PCIe"))
    (row,) = pcie.sizes.to_dict("records")
    assert np.isnan(row["link_gbps"]) and row["reference"] == "best measured" and row["transfer_ns"] == 2_000
    assert pcie.links == {}


def test_nsys_capture_has_no_sizes() -> None:
    """nsys 2025.3's export of the same DDP run: NCCL's payload schemas, no payload values."""
    r = collectives(load(DDP / "rank0.sqlite"))
    assert r.sizes.empty and r.collectives["bytes"].isna().all() and r.summary()[-1] == NO_SIZES


def test_analyze_text_and_json() -> None:
    path = str(DDP / "rank0.pt.trace.json.gz")
    res = CliRunner().invoke(cli, ["analyze", path, "--json"])
    assert res.exit_code == 0, res.output
    comm = json.loads(res.stdout)["collectives"]
    assert comm["links"]["0"] == {"gpu": "NVIDIA H200", "link": "NVLink 4 (18 links)", "gbps": 450.0,
                                  "nominal": True}
    rows = {r["bytes"]: r for r in comm["sizes"]}
    assert set(rows) == {9446400, 28351488, 176446464} and rows[176446464]["dtype"] == "Float"
    assert all(0 <= r["wait_pct"] <= 100 and r["busbw_gbps"] <= 450 for r in comm["sizes"])
    text = CliRunner().invoke(cli, ["analyze", path, "--width", "400"]).stdout
    line = next(ln for ln in text.splitlines() if "device 0 AllReduce:" in ln)
    assert "busbw" in line and "nominal NVLink 4 (18 links) of NVIDIA H200: 450 GB/s per direction" in line


def test_html_section() -> None:
    from nsighttk.analysis.overview import overview
    from nsighttk.report import html

    sections = html.overview_sections(overview(load(DDP / "rank1.pt.trace.json.gz")), None)
    (sec,) = [s for s in sections if s.id == "collective-sizes"]
    (_, (_, intro)), (_, (table, columns, *_)) = sec.blocks
    assert intro.count("nominal NVLink 4 (18 links) of NVIDIA H200: 450 GB/s per direction") == 1
    assert table["bytes"].tolist() == [9446400, 28351488, 176446464]
    assert "wait_pct" in [c.key for c in columns]


def _unpacked(tmp_path: Path, *parts: str) -> Path:
    import lzma

    from conftest import fixture

    out = tmp_path / parts[-1].removesuffix(".xz")
    out.write_bytes(lzma.decompress(fixture(*parts).read_bytes()))
    return out


def test_nccls_nvtx_payloads_give_each_calls_message_size(tmp_path: Path) -> None:
    """A one-rank NCCL program (H200, nsys 2025.3.1, exported with --include-blobs=true) printed each
    call's size: the ranges of its calls, in order, carry those sizes and a group of one."""
    from conftest import fixture

    truth = json.loads(fixture("h200-nccl", "nccl_payloads.truth.json").read_text())["calls"]
    p = load(_unpacked(tmp_path, "h200-nccl", "nccl_payloads.sqlite.xz"))
    nv = p.table("nvtx", ["name", "start_ns", "comm_bytes", "comm_group_size"]).sort_values("start_ns")
    calls = nv[nv["name"].isin(["ncclAllReduce", "ncclBroadcast", "ncclAllGather"])]
    assert list(calls["name"]) == [f"nccl{c['op']}" for c in truth]
    assert list(calls["comm_bytes"]) == [c["bytes"] for c in truth]
    assert set(calls["comm_group_size"]) == {1}
    assert nv[~nv.index.isin(calls.index)]["comm_bytes"].isna().all()  # (init, finalize: no message)


def test_an_nsys_ddp_ranks_collectives_take_the_sizes_of_nccls_ranges(tmp_path: Path) -> None:
    """The DDP rank exported with its payloads: every NCCL kernel gets the size of the range that
    launched it, and the bucket sizes equal those the torch.profiler trace of the same model
    records (42.5 MB, then buckets of 4.2 and 38.3 MB), in a group of two; the plain export of the
    same capture has none."""
    from conftest import fixture

    r = collectives(load(_unpacked(tmp_path, "h200-unannotated", "ddp", "rank0_blobs.sqlite.xz")))
    assert r.sizes is not None and int(r.sizes["count"].sum()) == sum(d.comm_kernels for d in r.devices) == 36
    got = set(zip(r.sizes["collective"], r.sizes["bytes"], r.sizes["group_size"], strict=True))
    kineto = collectives(load(fixture("h200-unannotated", "ddp", "rank0.pt.trace.json.gz"))).sizes
    want = set(zip(kineto["collective"], kineto["bytes"], kineto["group_size"], strict=True))
    assert want and want <= got
    allreduce = r.sizes[r.sizes["collective"] == "AllReduce"]
    assert set(allreduce["dtype"]) == {"float32"} and (allreduce["busbw_gbps"] > 0).all()
    plain = collectives(load(fixture("h200-unannotated", "ddp", "rank0.sqlite")))
    assert plain.sizes is None or not len(plain.sizes)


def test_a_damaged_payload_gives_its_range_no_size(tmp_path: Path) -> None:
    import sqlite3

    path = _unpacked(tmp_path, "h200-nccl", "nccl_payloads.sqlite.xz")
    with sqlite3.connect(path) as con:
        first, second = [r for (r,) in con.execute(
            "SELECT e.rowid FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value = 'ncclAllReduce' "
            "ORDER BY e.start LIMIT 2")]
        con.execute("UPDATE NVTX_EVENTS SET binaryData = substr(binaryData, 1, 40) WHERE rowid = ?", [first])
        con.execute("UPDATE NVTX_EVENTS SET binaryData = x'ffffffffffffffff' WHERE rowid = ?", [second])
    nv = load(path).table("nvtx", ["range_id", "name", "comm_bytes"])
    by_row = dict(zip(nv["range_id"], nv["comm_bytes"], strict=True))
    assert pd.isna(by_row[first]) and pd.isna(by_row[second])
    assert nv[nv["name"] == "ncclAllReduce"]["comm_bytes"].notna().sum() == 9 - 2
