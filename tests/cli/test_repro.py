"""`nsighttk repro`: the hot ops of committed traces become workloads that `nsighttk bench --device
cpu` runs against float64 references, with the ops, shapes, dtypes and strides of the trace (read
here straight from the trace's JSON); captures without shapes, files in the way, failures while
writing, markup in names; the NVTX form of an nsys capture."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import assert_exit

from nsighttk.analysis.torch_shapes import parse_nvtx_name
from nsighttk.bench import trace_columns
from nsighttk.cli import cli
from nsighttk.errors import OutputFileError
from nsighttk.workload import load_workload

torch = pytest.importorskip("torch", reason="repro matches ops against PyTorch's schemas")

FIX = Path(__file__).parents[1] / "fixtures"
BERT = FIX / "h100-torch2.11" / "bert_bs1_seq128.trace.json.gz"
GPT = FIX / "h200x2-ddp" / "rank0.pt.trace.json.gz"
TINY_CPU = FIX / "cpu-torch2.13" / "tiny_gpt.trace.json.gz"
NO_SHAPES = FIX / "h100-torch2.11" / "square" / "trace.json"
FAST = ["--warmup-ms", "1", "--rep-ms", "3", "--device", "cpu"]
DTYPES = {"float": torch.float32, "c10::BFloat16": torch.bfloat16, "c10::Half": torch.float16,
          "double": torch.float64, "long int": torch.int64, "int": torch.int32, "bool": torch.bool}


def trace_ops(path: Path) -> list[dict[str, Any]]:
    """The trace's ops grouped by name and recorded arguments, by self device time: each device
    event's time goes to the last op carrying its external id (read from the JSON, not nsighttk)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    by_ext: dict[int, dict[str, Any]] = {}
    for e in events:
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            by_ext[e["args"]["External id"]] = e
    groups: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            op = by_ext.get(e.get("args", {}).get("External id"))
            if op is None:
                continue
            a = op["args"]
            key = json.dumps([op["name"], a.get("Input Dims"), a.get("Input type"), a.get("Input Strides"),
                              a.get("Concrete Inputs")])
            g = groups.setdefault(key, {"op": op["name"], "args": a, "us": 0.0, "ids": set()})
            g["us"] += float(e["dur"])
            g["ids"].add(a["External id"])
    return sorted(groups.values(), key=lambda g: -g["us"])


def trace_self_cpu(path: Path) -> tuple[list[dict[str, Any]], float]:
    """The trace's ops grouped as :func:`trace_ops` does, by self CPU time: an op's duration less
    its direct children's on the same thread (read from the JSON, not nsighttk); and the self CPU
    time of all calls (us)."""
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    ops = sorted((e for e in events if e.get("cat") == "cpu_op"),
                 key=lambda e: (e["pid"], e["tid"], e["ts"], -e["dur"]))
    own: dict[int, float] = {}
    stack: list[dict[str, Any]] = []
    thread = None
    for e in ops:
        if (e["pid"], e["tid"]) != thread:
            stack, thread = [], (e["pid"], e["tid"])
        while stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"] + 1e-3:
            stack.pop()
        if stack:
            own[id(stack[-1])] -= e["dur"]
        own[id(e)] = e["dur"]
        stack.append(e)
    groups: dict[str, dict[str, Any]] = {}
    for e in ops:
        a = e["args"]
        key = json.dumps([e["name"], a.get("Input Dims"), a.get("Input type"), a.get("Input Strides"),
                          a.get("Concrete Inputs")])
        g = groups.setdefault(key, {"op": e["name"], "args": a, "us": 0.0, "calls": 0})
        g["us"] += own[id(e)]
        g["calls"] += 1
    return (sorted((g for g in groups.values() if g["us"] > 0), key=lambda g: -g["us"]),
            sum(max(v, 0.0) for v in own.values()))


def repro(args: list[str]) -> dict[str, Any]:
    res = CliRunner().invoke(cli, ["repro", *args, "--json"])
    assert_exit(res, 0)
    return json.loads(res.stdout)


def recorded_tensors(args: dict[str, Any]) -> list[tuple[list[int], list[int], Any]]:
    return [(d, s, DTYPES[t]) for d, t, s in zip(args["Input Dims"], args["Input type"], args["Input Strides"],
                                                    strict=True) if t in DTYPES]


def check_workload(file: Path, expected: dict[str, Any], tmp_path: Path, variants: str) -> list[dict[str, Any]]:
    """The workload's inputs are the trace's tensors, and bench runs its variants correctly."""
    wl = load_workload(str(file))
    xs = wl.make_inputs(1, torch.float32, "cpu")
    assert [(list(x.shape), list(x.stride()), x.dtype) for x in xs] == recorded_tensors(expected["args"])
    assert wl.trace["op"] == expected["op"]
    res = CliRunner().invoke(cli, ["bench", str(file), "--variants", variants, *FAST, "--reports-dir",
                                   str(tmp_path / "runs"), "--json"])
    assert_exit(res, 0)
    rows = json.loads(res.stdout)["rows"]
    for r in rows:
        assert r["status"] == "ok", r
        assert r["rel_error"] <= wl.tolerance["float32"]
        assert r["trace_ms"] == pytest.approx(wl.trace["per_call_ns"] / 1e6)
    return rows


def test_bert_hot_ops_become_workloads_with_the_traces_shapes(tmp_path: Path) -> None:
    out = tmp_path / "bert"
    data = repro([str(BERT), "--top", "8", "-o", str(out)])
    expected = trace_ops(BERT)[:8]
    assert [(o["op"], [a.get("shape") for a in o["args"] if a["kind"] == "tensor"]) for o in data["ops"]] == \
        [(g["op"], [d for d, t in zip(g["args"]["Input Dims"], g["args"]["Input type"], strict=True) if t in DTYPES])
         for g in expected]
    for o, g in zip(data["ops"], expected, strict=True):
        assert o["calls"] == len(g["ids"])
        assert o["self_device_ns"] == pytest.approx(g["us"] * 1e3, abs=o["calls"] * 2)
        assert o["file"], o["why_not"]
    # one op of each kind: a GEMM with a transposed operand, attention (GPU-only: its portable form
    # runs here), layer norm (a list argument and eps), GELU (an argument the trace left out)
    files = {o["rank"]: out / o["file"] for o in data["ops"]}
    check_workload(files[1], expected[0], tmp_path, "eager,mine")
    check_workload(files[5], expected[4], tmp_path, "portable,mine")
    check_workload(files[6], expected[5], tmp_path, "eager")
    check_workload(files[8], expected[7], tmp_path, "eager")
    assert "approximate='none'" in files[8].read_text()
    index = (out / "index.md").read_text()
    for o in data["ops"]:
        assert f"nsighttk bench {out}/{o['file']}" in index
    assert "| 1 | `aten::addmm` | `float32[768]; float32[128x3072]; float32[3072x768] strides (1, 3072); 1; 1` | 36 |" \
        in index
    text = CliRunner().invoke(cli, ["--width", "200", "bench", str(files[1]), "--variants", "eager", *FAST,
                                    "--reports-dir", str(tmp_path / "runs")])
    assert_exit(text, 0)
    assert f"eager: trace {data['ops'][0]['per_call_ns'] / 1e3:.2f} us per call (self device time), measured" \
        in text.stdout


def test_gpt_trace_ops_and_the_ones_that_cannot_be_reproduced(tmp_path: Path) -> None:
    data = repro([str(GPT), "--top", "6", "-o", str(tmp_path / "top")])
    expected = trace_ops(GPT)[:6]
    assert [o["op"] for o in data["ops"]] == [g["op"] for g in expected]
    lost = [o for o in data["ops"] if o["op"] == "record_param_comms"]  # a record function, not an operator
    assert lost and all(not o["file"] and "is not an operator of a PyTorch library" in o["why_not"] for o in lost)
    index = (tmp_path / "top" / "index.md").read_text()
    assert "## Not reproduced" in index and "is not an operator" in index.split("## Not reproduced")[1]
    # foreach AdamW over more parameters than PyTorch records the shapes of
    foreach = repro([str(GPT), "--op", "aten::_foreach_addcdiv_", "-o", str(tmp_path / "foreach")])
    assert foreach["ops"][0]["why_not"] == ("arguments 0, 1, 2 are lists of tensors whose shapes the trace did not "
                                            "keep (PyTorch records them for short lists only)")
    mm = data["ops"][0]
    assert mm["op"] == "aten::mm" and [a["dtype"] for a in mm["args"]] == ["bfloat16", "bfloat16"]
    assert mm["args"][1]["strides"] == [1, 768]
    # a bfloat16 tensor times a float64 number: small enough for this CPU
    one = repro([str(GPT), "--op", "aten::mul", "--top", "1", "-o", str(tmp_path / "mul")])
    g = next(g for g in trace_ops(GPT) if g["op"] == "aten::mul")
    assert [a.get("shape") for a in one["ops"][0]["args"]] == g["args"]["Input Dims"]
    check_workload(tmp_path / "mul" / one["ops"][0]["file"], g, tmp_path, "eager,mine")


def test_a_cpu_trace_ranks_by_self_cpu_time(tmp_path: Path) -> None:
    """A trace without device activity (PyTorch 2.13 on this CPU): ops by their own CPU time."""
    out = tmp_path / "cpu"
    data = repro([str(TINY_CPU), "--top", "12", "-o", str(out)])
    ranked, total_us = trace_self_cpu(TINY_CPU)
    expected = ranked[:12]
    assert [(o["op"], o["calls"], [a.get("shape") for a in o["args"] if a["kind"] == "tensor"]) for o in data["ops"]] \
        == [(g["op"], g["calls"], [d for d, t in zip(g["args"]["Input Dims"], g["args"]["Input type"], strict=True)
                                   if t in DTYPES]) for g in expected]
    for o, g in zip(data["ops"], expected, strict=True):
        assert o["self_cpu_ns"] == pytest.approx(g["us"] * 1e3, abs=o["calls"] * 2)
        assert o["ranked_by"] == "CPU" and o["self_device_ns"] == 0
        assert o["share_pct"] == pytest.approx(100 * g["us"] / total_us, abs=1e-3)
    assert "| Share of CPU time |" in (out / "index.md").read_text()
    files = {o["op"]: (out / o["file"], g) for o, g in zip(data["ops"], expected, strict=True) if o["file"]}
    # a zero result (fill_ 0), a random one (normal_: only finiteness is checked), an input that must
    # not be negative (sqrt), a transposed operand (mm), ten arguments and a tuple result
    for op in ("aten::fill_", "aten::normal_", "aten::sqrt", "aten::mm",
               "aten::_scaled_dot_product_flash_attention_for_cpu_backward"):
        check_workload(*files[op], tmp_path, "eager")


def test_a_trace_without_shapes_is_one_line_saying_how_to_record_them(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["repro", str(NO_SHAPES), "-o", str(tmp_path / "out")])
    line = assert_exit(res, 2, line="no op shapes")
    assert "nsighttk torch --record-shapes" in line and "nsys profile --pytorch autograd-shapes-nvtx" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--top", "0"], "--top 0: at least one op"),
    (["--op", "aten::no_such_op"], "no op named 'aten::no_such_op'"),
    (["-o", str(BERT)], "a folder on its path is a file"),
])
def test_bad_options_are_one_line(args: list[str], says: str, tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["repro", str(BERT), *(["-o", str(tmp_path / "o")] if "-o" not in args else []),
                                   *args])
    assert_exit(res, 2, line=says)


def test_files_not_written_by_repro_need_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.md").write_text("my notes\n")
    res = CliRunner().invoke(cli, ["repro", str(BERT), "--top", "1", "-o", str(out)])
    assert_exit(res, 2, line="was not written by nsighttk repro")
    assert (out / "index.md").read_text() == "my notes\n" and sorted(os.listdir(out)) == ["index.md"]
    repro([str(BERT), "--top", "1", "-o", str(out), "--force"])
    first = (out / "01_aten_addmm.py").read_text()
    repro([str(BERT), "--top", "1", "-o", str(out)])  # its own files: replaced without --force
    assert (out / "01_aten_addmm.py").read_text() == first


def test_a_failure_while_writing_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk.report import repro as render

    calls = []
    real = render.workload_source

    def failing(r: Any, capture: str) -> str:
        calls.append(r.rank)
        if len(calls) == 3:
            raise OutputFileError(f"{out}/03_aten_addmm.py: the disk is full", "free some space")
        return real(r, capture)

    monkeypatch.setattr(render, "workload_source", failing)
    monkeypatch.setattr("nsighttk.commands.repro.workload_source", failing)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["repro", str(BERT), "--top", "4", "-o", str(out)])
    assert_exit(res, 2, line="the disk is full")
    assert os.listdir(out) == []


def test_markup_in_op_and_file_names_is_escaped(tmp_path: Path) -> None:
    name = "my::op<script>*x*|`y`[red]"
    events = [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10, "dur": 50,
               "args": {"External id": 7, "Input Dims": [[4, 4]], "Input type": ["float"],
                        "Input Strides": [[4, 1]], "Concrete Inputs": [""]}},
              {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 70, "dur": 20,
               "args": {"External id": 8, "Input Dims": [[4, 4]], "Input type": ["float"],
                        "Input Strides": [[4, 1]], "Concrete Inputs": [""]}},
              {"ph": "X", "cat": "kernel", "name": "k<b>", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
               "args": {"External id": 7, "correlation": 1, "device": 0, "stream": 7}},
              {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 80, "dur": 3,
               "args": {"External id": 8, "correlation": 2, "device": 0, "stream": 7}}]
    trace = tmp_path / "t<b>*\"q'\\.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    out = tmp_path / "out"
    data = repro([str(trace), "-o", str(out)])
    assert [o["op"] for o in data["ops"]] == [name, "aten::relu"]
    assert data["ops"][0]["file"] is None and "has no operator" in data["ops"][0]["why_not"]
    assert sorted(os.listdir(out)) == ["02_aten_relu.py", "index.md"]
    index = (out / "index.md").read_text()
    assert "# Reproducers of t\\<b>\\*\"q'\\\\.json" in index
    lost = index.split("## Not reproduced")[1]
    assert f"- 1. ``{name}`` " in lost  # a code span: shown verbatim, never markup
    reason = lost.split(f"``{name}``")[1]
    assert "<script>" in reason and not re.findall(r"(?<!\\)[<*|`\[]", reason.split(":", 1)[1])
    src = (out / "02_aten_relu.py").read_text()
    compile(src, "02_aten_relu.py", "exec")
    assert "as t<b>*_q__.json recorded it" in src  # no quote or backslash of the name in the docstring


def test_nvtx_names_of_pytorchs_observer() -> None:
    assert parse_nvtx_name("aten::mm, seq = 12, op_id = 34, sizes = [[64, 128], [128, 256]], "
                           "input_op_ids = [(1,0), (2,0)]") == ("aten::mm", [[64, 128], [128, 256]])
    assert parse_nvtx_name("aten::addmm, sizes = [[768], [128, 3072], [3072, 768], [], []]") == \
        ("aten::addmm", [[768], [128, 3072], [3072, 768], [], []])
    assert parse_nvtx_name("aten::empty, seq = 3") == ("aten::empty", None)
    assert parse_nvtx_name("aten::mm, sizes = [[64, 128], [12") is None


def test_an_nsys_capture_with_autograd_shapes_nvtx(tmp_path: Path) -> None:
    db = tmp_path / "shapes.sqlite"
    shutil.copyfile(FIX / "h200-nsys2025.3" / "gpt2_train.sqlite", db)
    con = sqlite3.connect(db)
    launches = con.execute("SELECT r.start, r.end, r.globalTid, r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                           "JOIN StringIds s ON s.id = r.nameId JOIN CUPTI_ACTIVITY_KIND_KERNEL k "
                           "ON k.correlationId = r.correlationId WHERE s.value LIKE 'cudaLaunchKernel%' "
                           "ORDER BY r.start LIMIT 3").fetchall()
    kernel_ns = [con.execute("SELECT end - start FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = ?",
                             (c,)).fetchone()[0] for *_, c in launches]
    (s0, e0, tid, _), (_, e1, _, _), (s2, e2, _, _) = launches

    def push(start: int, end: int, text: str) -> None:
        con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                    "VALUES (?, ?, 59, ?, ?, 0)", (start, end, text, tid))

    # aten::linear around the first two launches, aten::t and aten::mm inside it: the first kernel
    # is mm's, the second linear's own; the third launch is in a range of its own
    push(s0 - 10, e1 + 10, "aten::linear, seq = 5, op_id = 9, sizes = [[8, 64], [32, 64], []]")
    push(s0 - 5, e0 + 5, "aten::mm, seq = 6, op_id = 10, sizes = [[8, 64], [64, 32]], input_op_ids = [(9,0)]")
    push(s2 - 5, e2 + 5, "aten::add, seq = 7, op_id = 11, sizes = [[8, 32], [8, 32], []]")
    con.commit()
    con.close()
    data = repro([str(db), "--top", "5", "-o", str(tmp_path / "out")])
    got = {o["op"]: o for o in data["ops"]}
    assert got["aten::mm"]["self_device_ns"] == kernel_ns[0]
    assert got["aten::linear"]["self_device_ns"] == kernel_ns[1]
    assert got["aten::add"]["self_device_ns"] == kernel_ns[2]
    assert [a.get("shape") for a in got["aten::mm"]["args"]] == [[8, 64], [64, 32]]
    mm = tmp_path / "out" / got["aten::mm"]["file"]
    wl = load_workload(str(mm))
    assert [tuple(x.shape) for x in wl.make_inputs(1, torch.float32, "cpu")] == [(8, 64), (64, 32)]
    res = CliRunner().invoke(cli, ["bench", str(mm), "--variants", "eager", *FAST, "--reports-dir",
                                   str(tmp_path / "runs"), "--json"])
    assert_exit(res, 0)
    assert json.loads(res.stdout)["rows"][0]["status"] == "ok"
    add = tmp_path / "out" / got["aten::add"]["file"]
    assert "alpha=1" in add.read_text() and "not recorded" in add.read_text()


def test_trace_columns_say_whether_the_kernel_matches() -> None:
    trace = {"per_call_ns": 2500.0, "time": "self device", "kernels": ["sgemm_a", "scal"]}
    assert trace_columns(trace, ["sgemm_a"])["kernel_match"] is True
    row = trace_columns(trace, ["cutlass_b", "sgemm_a"])
    assert row["kernel_match"] is False and row["kernel"] == "cutlass_b" and row["trace_kernel"] == "sgemm_a"
    assert trace_columns(trace, None) == {"trace_ms": 0.0025, "trace_time": "self device", "trace_kernel": "sgemm_a"}
    assert trace_columns({}, ["x"]) == {}


OUTPUT_CODE = """
from torch._inductor.runtime import triton_helpers, triton_heuristics

triton_poi_fused_add_mul_0 = async_compile.triton('triton_poi_fused_add_mul_0', '''
import triton
import triton.language as tl

@triton.jit
def triton_poi_fused_add_mul_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask)
    tl.store(out_ptr0 + (xindex), tmp0 * 2.0 + 1.0, xmask)
''', device_str='cuda')


def call(args):
    arg0_1, = args
    args.clear()
    with torch.cuda._DeviceGuard(0):
        buf0 = empty_strided_cuda((4096, ), (1, ), torch.float32)
        stream0 = get_raw_stream(0)
        triton_poi_fused_add_mul_0.run(arg0_1, buf0, 4096, grid=grid(4096), stream=stream0)
    return (buf0, )


def benchmark_compiled_module(times=10, repeat=10):
    from torch._dynamo.testing import rand_strided
    arg0_1 = rand_strided((4096, ), (1, ), device='cuda:0', dtype=torch.float32)
"""


def test_inductor_kernels_get_their_triton_source_or_the_reason(tmp_path: Path) -> None:
    """A Triton launch recorded as an op of its own (Inductor's record function), one launched
    without any (an orphan kernel), and a kernel of no op that is not Inductor's."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "triton_poi_fused_add_mul_0", "pid": 1, "tid": 1, "ts": 10,
               "dur": 30, "args": {"External id": 3, "Input Dims": [[4096], [4096], []],
                                   "Input type": ["float", "float", "Scalar"], "Input Strides": [[1], [1], []],
                                   "Concrete Inputs": ["", "", "4096"]}},
              {"ph": "X", "cat": "kernel", "name": "triton_poi_fused_add_mul_0", "pid": 0, "tid": 7, "ts": 20,
               "dur": 9, "args": {"External id": 3, "correlation": 1, "device": 0, "stream": 7}},
              {"ph": "X", "cat": "kernel", "name": "triton_red_fused_sum_1", "pid": 0, "tid": 7, "ts": 40,
               "dur": 7, "args": {"correlation": 2, "device": 0, "stream": 7}},
              {"ph": "X", "cat": "kernel", "name": "my_extension_kernel", "pid": 0, "tid": 7, "ts": 60,
               "dur": 5, "args": {"correlation": 3, "device": 0, "stream": 7}}]
    trace = tmp_path / "compiled.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    code = tmp_path / "cache" / "ab"
    code.mkdir(parents=True)
    (code / "cabcdef.py").write_text(OUTPUT_CODE)
    out = tmp_path / "out"
    data = repro([str(trace), "-o", str(out), "--inductor-code", str(tmp_path / "cache")])
    ops = {o["op"]: o for o in data["ops"]}
    assert [o["op"] for o in data["ops"]] == ["triton_poi_fused_add_mul_0", "triton_red_fused_sum_1",
                                              "my_extension_kernel"]
    assert ops["triton_poi_fused_add_mul_0"]["inductor"]["path"] == str(code / "cabcdef.py")
    kept = (out / "01_triton_poi_fused_add_mul_0.triton.txt").read_text()
    assert "def triton_poi_fused_add_mul_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):" in kept
    assert "#   triton_poi_fused_add_mul_0.run(arg0_1, buf0, 4096, grid=grid(4096), stream=stream0)" in kept
    assert "#   arg0_1 = rand_strided((4096, ), (1, ), device='cuda:0', dtype=torch.float32)" in kept
    assert "no Inductor output code defining it was found" in ops["triton_red_fused_sum_1"]["why_not"]
    assert "no recorded op launched" in ops["my_extension_kernel"]["why_not"]
    index = (out / "index.md").read_text()
    kept_part, lost_part = index.split("## Inductor kernels")[1].split("## Not reproduced")
    assert f"- 1. `triton_poi_fused_add_mul_0` (42.9% of device time): `01_triton_poi_fused_add_mul_0.triton.txt`, " \
        f"from `{code / 'cabcdef.py'}`" in kept_part
    assert "triton_red_fused_sum_1" in lost_part and "my_extension_kernel" in lost_part
    assert sorted(os.listdir(out)) == ["01_triton_poi_fused_add_mul_0.triton.txt", "index.md"]


def test_gpu_only_attention_has_a_portable_form_only_where_it_computes_the_same() -> None:
    from nsighttk.workload import replay

    q, k, v = (torch.randn(1, 16, 2, 8, dtype=torch.float64) for _ in range(3))
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / 8 ** 0.5
    causal = scores.masked_fill(torch.ones(16, 16, dtype=torch.bool).triu(1), float("-inf"))
    for mask, s in ((0, scores), (1, causal)):
        want = torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v)
        got = replay.EQUIVALENTS["aten::_efficient_attention_forward"](q, k, v, custom_mask_type=mask, scale=None)
        assert torch.allclose(got, want)
    op = "aten::_efficient_attention_forward"
    assert replay.has_equivalent(op, 3, {"dropout_p": 0.0, "custom_mask_type": 1, "bias": None})
    assert not replay.has_equivalent(op, 3, {"dropout_p": 0.1, "custom_mask_type": 0})
    assert not replay.has_equivalent(op, 3, {"dropout_p": 0.0, "custom_mask_type": 2})
    assert not replay.has_equivalent(op, 4, {"dropout_p": 0.0, "custom_mask_type": 0})
    # cuDNN's attention (PyTorch 2.11 on an H200): [batch, heads, seq, dim], no variable lengths
    cudnn = "aten::_cudnn_attention_forward"
    qh, kh, vh = (x.transpose(1, 2) for x in (q, k, v))
    got = replay.EQUIVALENTS[cudnn](qh, kh, vh, is_causal=True, scale=None)
    assert torch.allclose(got.transpose(1, 2), torch.einsum("bhqk,bkhd->bqhd", causal.softmax(-1), v))
    assert replay.has_equivalent(cudnn, 3, {"cum_seq_q": None, "dropout_p": 0.0, "is_causal": True})
    assert not replay.has_equivalent(cudnn, 3, {"cum_seq_q": [0, 16], "dropout_p": 0.0})


def test_innermost_range_equals_a_search_of_every_range() -> None:
    """Properly nested ranges on three threads (built by pushing and popping at random), points
    anywhere: the deepest range of the point's thread holding it, as a plain search finds it."""
    import numpy as np

    from nsighttk.analysis.torch_shapes import innermost

    rng = np.random.default_rng(7)
    start, end, depth, tid = [], [], [], []
    for t in (1.0, 2.0, 3.0):
        stack: list[int] = []
        for now in range(0, 3000, 3):
            if stack and rng.random() < 0.45:
                end[stack.pop()] = now
            elif rng.random() < 0.5:
                stack.append(len(start))
                start.append(now)
                end.append(-1)
                depth.append(len(stack) - 1)
                tid.append(t)
        for i in stack:
            end[i] = 3000
    s, e, d, th = (np.array(x) for x in (start, end, depth, tid))
    at = rng.integers(-5, 3010, 4000)
    at_tid = rng.choice([1.0, 2.0, 3.0, 4.0, np.nan], 4000)
    got = innermost(s, e, d, th, at, at_tid)
    for k in range(len(at)):
        hits = [i for i in range(len(s)) if th[i] == at_tid[k] and s[i] <= at[k] <= e[i]]
        assert got[k] == (max(hits, key=lambda i: d[i]) if hits else -1)


def test_a_profiler_that_cannot_run_leaves_the_kernel_check_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk.bench import launched_kernels

    def taken(*a: Any, **k: Any) -> Any:
        raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\nmore")

    monkeypatch.setattr("torch.profiler.profile", taken)
    assert launched_kernels(lambda: None) is None
    assert "kernel_match" not in trace_columns({"per_call_ns": 1.0, "kernels": ["k"]}, None)


UNANNOTATED = FIX / "h200-unannotated" / "repro"


def nvtx_op_times(db: Path) -> list[tuple[str, list[list[int]], int]]:
    """(op, sizes, device ns) per op and input sizes of an nsys capture with PyTorch's NVTX ranges:
    each kernel, copy and memset goes to the deepest sized range around its runtime call on the
    same thread (a plain search of every range, in SQL and Python, not nsighttk)."""
    con = sqlite3.connect(db)
    ranges = con.execute("SELECT n.start, n.end, n.globalTid, COALESCE(n.text, s.value) FROM NVTX_EVENTS n "
                         "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.end IS NOT NULL").fetchall()
    ranges = [r for r in ranges if r[3] and ", sizes = [" in r[3]]
    work = []
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        work += con.execute(f"SELECT w.end - w.start, r.start, r.globalTid FROM {table} w JOIN "
                            "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = w.correlationId").fetchall()
    totals: dict[tuple[str, str], int] = {}
    for dur, at, tid in work:
        around = [r for r in ranges if r[2] == tid and r[0] <= at <= r[1]]
        if not around:
            continue
        text = max(around, key=lambda r: r[0])[3]  # nested: the latest start is the deepest
        name, sizes = text.split(",")[0], text.split(", sizes = ")[1].split(", input_op_ids")[0]
        totals[(name, sizes)] = totals.get((name, sizes), 0) + dur
    return sorted(((n, json.loads(s), t) for (n, s), t in totals.items()), key=lambda x: -x[2])


def test_a_real_autograd_shapes_nvtx_capture(tmp_path: Path) -> None:
    """nsys profile --pytorch autograd-shapes-nvtx of a small GPT on an H200 (h-gpu's capture)."""
    db = UNANNOTATED / "small_gpt_shapes.sqlite"
    data = repro([str(db), "--top", "8", "-o", str(tmp_path / "out")])
    expected = nvtx_op_times(db)[:8]
    assert [(o["op"], [a.get("shape", []) for a in o["args"]], o["self_device_ns"]) for o in data["ops"]] == \
        [(n, s, t) for n, s, t in expected]
    log_softmax = next(o for o in data["ops"] if o["op"] == "aten::_log_softmax")
    assert "argument 1 (dim: int) was not recorded" in log_softmax["why_not"]  # NVTX has no scalars
    adamw = next(o for o in data["ops"] if o["op"] == "aten::_fused_adamw_")  # lists flattened, one size per tensor
    assert adamw["why_not"].endswith("default: 90 arguments recorded, the schema has 15 (a list of tensors, self, "
                                     "recorded as one size per tensor, as NVTX ranges do, with nothing saying where "
                                     "the list ends); tensor_lr: 90 arguments recorded, the schema has 15 (a list of "
                                     "tensors, self, recorded as one size per tensor, as NVTX ranges do, with nothing "
                                     "saying where the list ends))")
    copy = next(o for o in data["ops"] if o["op"] == "aten::copy_" and o["args"][0]["shape"] == [2048, 512])
    check_workload(tmp_path / "out" / copy["file"], {"op": "aten::copy_", "args": {
        "Input Dims": [[2048, 512], [2048, 512], []], "Input type": ["float", "float", ""],
        "Input Strides": [[512, 1], [512, 1], []]}}, tmp_path, "eager")


def test_real_gpu_kineto_traces_with_shapes(tmp_path: Path) -> None:
    """Kineto traces with record_shapes of a bf16 BERT training step and a small GPT (H200)."""
    bert = UNANNOTATED / "bert.pt.trace.json.gz"
    data = repro([str(bert), "--top", "6", "-o", str(tmp_path / "bert")])
    expected = trace_ops(bert)[:6]
    assert [(o["op"], o["calls"]) for o in data["ops"]] == [(g["op"], len(g["ids"])) for g in expected]
    adamw = data["ops"][0]
    assert adamw["op"] == "aten::_fused_adamw_" and adamw["why_not"].startswith(
        "arguments 0, 1, 2, 3, 4, 5 are lists of tensors")
    total = next(o for o in data["ops"] if o["op"] == "aten::sum")
    assert [a.get("value", a.get("shape")) for a in total["args"]] == [[1024, 768], [0], True, None]
    g = next(g for g in expected if g["op"] == "aten::sum")
    check_workload(tmp_path / "bert" / total["file"], g, tmp_path, "eager")
    gpt = UNANNOTATED / "small_gpt.pt.trace.json.gz"
    data = repro([str(gpt), "--op", "aten::embedding_dense_backward", "--top", "1", "-o", str(tmp_path / "gpt")])
    g = next(g for g in trace_ops(gpt) if g["op"] == "aten::embedding_dense_backward")
    wl = load_workload(str(tmp_path / "gpt" / data["ops"][0]["file"]))
    ids = wl.make_inputs(1, torch.float32, "cpu")[1]
    assert int(ids.max()) > 4096 and int(ids.max()) < 8192  # spread over the 8192 rows, all in range
    check_workload(tmp_path / "gpt" / data["ops"][0]["file"], g, tmp_path, "eager")


def trace_events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


def test_ops_on_lists_of_tensors_are_reproduced(tmp_path: Path) -> None:
    """A fused AdamW step (six lists of 28 tensors, one of them empty, step counts of 0-dim
    tensors), the step counter update and a concatenation, from the GPT trace: the tensors of each
    list are the trace's, the reference and bench agree, and index.md names them with their share."""
    gpt = UNANNOTATED / "small_gpt.pt.trace.json.gz"
    events = trace_events(gpt)
    device_us = sum(e["dur"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    for op, variants in (("aten::_fused_adamw_", "eager,mine"), ("aten::_foreach_add_", "eager"),
                         ("aten::cat", "eager")):
        out = tmp_path / op.split("::")[1]
        data = repro([str(gpt), "--op", op, "--top", "1", "-o", str(out)])
        o = data["ops"][0]
        assert o["file"], o["why_not"]
        g = next(g for g in trace_ops(gpt) if g["op"] == op)
        a = g["args"]
        lists = [i for i, t in enumerate(a["Input type"]) if t == "TensorList"]
        wl = load_workload(str(out / o["file"]))
        xs = wl.make_inputs(1, torch.float32, "cpu")
        assert [(list(x.shape), list(x.stride())) for x in xs] == \
            [(d, s) for i in lists for d, s in zip(a["Input Dims"][i], a["Input Strides"][i], strict=True)]
        check_workload_rows(out / o["file"], tmp_path, variants)
        index = (out / "index.md").read_text()
        share = f"{100 * g['us'] / device_us:.1f}%"
        row = next(line for line in index.splitlines() if line.startswith(f"| 1 | `{op}` |"))
        assert f"| {len(g['ids'])} |" in row and f"| {share} |" in row
        shapes = [x for i in lists for x in a["Input Dims"][i]]
        assert f"{len(a['Input Dims'][lists[0]])} " in row and "x".join(map(str, shapes[0])) in row
    adamw = load_workload(str(tmp_path / "_fused_adamw_" / "01_aten__fused_adamw.py"))
    xs = adamw.make_inputs(1, torch.float32, "cpu")
    steps, sq = xs[-28:], xs[3 * 28:4 * 28]  # state_steps; exp_avg_sqs
    assert all(float(s) >= 1 and float(s).is_integer() for s in steps) and all(bool((t >= 0).all()) for t in sq)
    cat = (tmp_path / "cat" / "index.md").read_text()
    assert "`3 bfloat16 [8x8x256x64 x3] strided; 0`" in cat and "bfloat16, as its kernel copies 2-byte elements" in cat


def check_workload_rows(file: Path, tmp_path: Path, variants: str) -> list[dict[str, Any]]:
    res = CliRunner().invoke(cli, ["bench", str(file), "--variants", variants, *FAST, "--reports-dir",
                                   str(tmp_path / "runs"), "--json"])
    assert_exit(res, 0)
    rows = json.loads(res.stdout)["rows"]
    wl = load_workload(str(file))
    for r in rows:
        assert r["status"] == "ok" and r["rel_error"] <= wl.tolerance["float32"], r
    return rows


def kineto_copies(path: Path) -> dict[str, set[str]]:
    """The names of the memory copies each op signature (as :func:`trace_ops` groups) launched
    itself: ``Memcpy HtoD (Pinned -> Device)`` (read from the JSON, not nsighttk)."""
    events = trace_events(path)
    key_of = {}
    for e in events:
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            a = e["args"]
            key_of[a["External id"]] = json.dumps([e["name"], a.get("Input Dims"), a.get("Concrete Inputs")])
    out: dict[str, set[str]] = {}
    for e in events:
        if e.get("cat") == "gpu_memcpy" and e["args"].get("External id") in key_of:
            out.setdefault(key_of[e["args"]["External id"]], set()).add(e["name"])
    return out


def test_host_to_device_copies_keep_their_source_in_host_memory(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Every aten::copy_ of two traces whose copy was HtoD has its source on the host, pinned or
    pageable as the trace's copy says; the others (DtoD, kernels) stay on the device."""
    for trace in (UNANNOTATED / "small_gpt.pt.trace.json.gz", GPT):
        data = repro([str(trace), "--op", "aten::copy_", "--top", "200", "-o", str(tmp_path / trace.stem)])
        copies = kineto_copies(trace)
        seen = 0
        for o in data["ops"]:
            key = json.dumps([o["op"], [a.get("shape", []) for a in o["args"]],
                              ["" if a["kind"] == "tensor" else str(a.get("value")) for a in o["args"]]])
            names = copies.get(key, set())
            htod = sorted(n for n in names if n.startswith("Memcpy HtoD"))
            host = [i for i, a in enumerate(o["args"]) if a.get("device") == "cpu"]
            assert host == ([1] if htod else []), (key, names)
            if htod:
                seen += 1
                assert o["args"][1]["pinned"] == ("(Pinned -> Device)" in htod[0])
                assert o["copies"][0] == htod[0].removeprefix("Memcpy ")
        assert seen == 1
    out = tmp_path / "small_gpt.pt.trace.json"
    pinned = next(o for o in repro([str(UNANNOTATED / "small_gpt.pt.trace.json.gz"), "--op", "aten::copy_",
                                    "--top", "200", "-o", str(out)])["ops"] if o["copies"])
    text = (out / pinned["file"]).read_text()
    assert "# the trace copied HtoD (Pinned -> Device): the source is made in pinned host memory." in text
    index = (out / "index.md").read_text()
    assert "`int64[8x257]; int64[8x257] on the host (pinned); True`" in index
    assert f"- {pinned['rank']}. `aten::copy_`: copy `HtoD (Pinned -> Device)`; the trace copied" in index
    wl = load_workload(str(out / pinned["file"]))
    check_workload_rows(out / pinned["file"], tmp_path, "eager")
    # on a GPU the destination is made there and the source in pinned host memory
    pins: list[Any] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: pins.append(self.shape) or self)
    dst, src = wl.make_inputs(1, torch.float32, "meta")
    assert dst.device.type == "meta" and src.device.type == "cpu" and pins == [torch.Size([8 * 257])]


def test_host_copies_of_an_nvtx_capture_and_ones_the_trace_cannot_place(tmp_path: Path) -> None:
    """The NVTX capture's weights copied from pageable memory at start (nsys' own memory kinds),
    and an op whose host-side tensor the trace cannot name: said in the reproducer and the index."""
    db = UNANNOTATED / "small_gpt_shapes.sqlite"
    con = sqlite3.connect(db)
    kinds = con.execute("SELECT DISTINCT s.label FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEM_KIND s "
                        "ON s.id = m.srcKind WHERE m.copyKind = 1 AND m.bytes = ?", (8192 * 512 * 4,)).fetchall()
    con.close()
    assert kinds == [("Pageable",)]
    data = repro([str(db), "--top", "1", "-o", str(tmp_path / "nvtx")])
    top = data["ops"][0]
    assert top["op"] == "aten::copy_" and [a.get("shape") for a in top["args"]][:2] == [[8192, 512], [8192, 512]]
    assert top["args"][1]["device"] == "cpu" and top["args"][1]["pinned"] is False
    assert top["copies"] == ["HtoD (Pageable -> Device)"]
    bert = UNANNOTATED / "bert.pt.trace.json.gz"
    out = tmp_path / "bert"
    item = repro([str(bert), "--op", "aten::_local_scalar_dense", "-o", str(out)])["ops"][0]
    assert item["copies"] == ["DtoH (Device -> Pinned)"] and item["file"]
    says = ("the op copied DtoH (Device -> Pinned), and the trace does not record which of its tensors was in host "
            "memory")
    assert says in " ".join(line.lstrip("# ") for line in (out / item["file"]).read_text().splitlines())
    assert says in (out / "index.md").read_text()


def test_cudnn_attention_of_a_real_trace_runs_off_the_gpu(tmp_path: Path) -> None:
    """aten::_cudnn_attention_forward (causal, no dropout) of the GPT trace: the op itself needs a
    GPU, its portable form passes the float64 reference here."""
    gpt = UNANNOTATED / "small_gpt.pt.trace.json.gz"
    op = "aten::_cudnn_attention_forward"
    data = repro([str(gpt), "--op", op, "--top", "1", "-o", str(tmp_path / "out")])
    g = next(g for g in trace_ops(gpt) if g["op"] == op)
    file = tmp_path / "out" / data["ops"][0]["file"]
    rows = check_workload(file, g, tmp_path, "portable,mine")
    assert [r["variant"] for r in rows] == ["portable", "mine"]
    res = CliRunner().invoke(cli, ["bench", str(file), "--variants", "eager", *FAST, "--reports-dir",
                                   str(tmp_path / "runs"), "--json"])
    assert_exit(res, 0)
    assert json.loads(res.stdout)["rows"][0]["reason"] == "needs a CUDA GPU"


FOREACH = FIX / "cpu-torch2.13" / "foreach_adamw.trace.json.gz"


def schema_fits(op: str, types: list[str]) -> list[str]:
    """The overloads of ``op`` whose arguments have the kinds Kineto recorded, one by one (a list of
    tensors, of numbers, a number, a tensor), read from PyTorch's schemas here, not nsighttk."""
    packet = getattr(torch.ops.aten, op.split("::")[1])
    kinds = {"TensorList": ("List[Tensor]",), "ScalarList": ("List[number]", "List[float]", "List[int]"),
             "Scalar": ("number", "float", "int", "bool")}
    fits = []
    for o in packet.overloads():
        formal = getattr(packet, o)._schema.arguments
        if len(formal) == len(types) and all(str(f.type) in kinds.get(t, ("Tensor",)) for f, t in zip(formal, types,
                                                                                                       strict=False)):
            fits.append(o)
    return fits


def test_the_foreach_adamw_family_is_reproduced(tmp_path: Path) -> None:
    """AdamW(foreach=True) of a small MLP on this CPU: every aten::_foreach_* call becomes a workload
    of the overload its recorded kinds fit (a list of numbers is never a list of tensors), with the
    trace's tensors, checked against the float64 reference by bench --device cpu."""
    out = tmp_path / "foreach"
    data = repro([str(FOREACH), "--top", "500", "-o", str(out)])
    ranked, _ = trace_self_cpu(FOREACH)
    expected = [g for g in ranked if g["op"].startswith("aten::_foreach_")]
    got = [o for o in data["ops"] if o["op"].startswith("aten::_foreach_")]
    assert [o["op"] for o in got] == [g["op"] for g in expected] and len(got) == 11
    benched = set()
    for o, g in zip(got, expected, strict=True):
        a = g["args"]
        assert [o["overload"]] == schema_fits(o["op"], a["Input type"]), a["Input type"]
        wl = load_workload(str(out / o["file"]))
        tensors = [(d, s) for d, t, s in zip(a["Input Dims"], a["Input type"], a["Input Strides"], strict=True)
                   for d, s in (zip(d, s, strict=True) if t == "TensorList" else [(d, s)] if t in DTYPES else [])]
        assert [(list(x.shape), list(x.stride())) for x in wl.make_inputs(1, torch.float32, "cpu")] == tensors
        if (o["op"], o["overload"]) not in benched:
            benched.add((o["op"], o["overload"]))
            check_workload_rows(out / o["file"], tmp_path, "eager")
    assert ("aten::_foreach_div_", "ScalarList") in benched and ("aten::_foreach_add_", "Tensor") in benched


def test_tensor_lists_as_kineto_records_them() -> None:
    """One dims entry per tensor; ``[]`` for a list PyTorch kept no shapes of, unless another list of
    the call has tensors (then it is an empty list: AdamW's max_exp_avg_sqs without amsgrad); dims
    that are not integers are said so; strides of another length are dropped."""
    from nsighttk.analysis.torch_shapes import kineto_args, labels

    args, problems = kineto_args([[[4, 2], [3]], [], []], ["TensorList", "TensorList", "Scalar"],
                                 [[[2, 1], [1]], [], []], ["", "", "0"])
    assert problems == [] and [a.shapes for a in args[:2]] == [[[4, 2], [3]], []] and args[0].strides == [[2, 1], [1]]
    args[0].dtype = args[1].dtype = "float32"
    assert labels(args) == "2 float32 [4x2, 3]; [] (an empty list); 0"
    args, problems = kineto_args([[], []], ["TensorList", "Scalar"], [[], []], ["", "1"])
    assert args[0].shapes is None and problems == ["argument 0 is a list of tensors whose shapes the trace did not "
                                                   "keep (PyTorch records them for short lists only)"]
    args, problems = kineto_args([[[2, "x"]], [[5], [5]]], ["TensorList", "TensorList"], [[[1]], [[1]]], ["", ""])
    assert problems == ["argument 0: a list of tensors whose dims cannot be read"]
    assert args[1].shapes == [[5], [5]] and args[1].strides is None
