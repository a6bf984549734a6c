"""Kineto (torch.profiler) traces: fidelity on HTA's public test traces and our H100 ones, the
chunked reader, and malformed input.

Expected values are computed in the tests themselves from the raw JSON (``json`` with exact
Decimals), independently of the loader: events counted by category and name, the NVTX GPU
projection by nsys' rule (a range projects the GPU work whose launching runtime call lies inside
it on the same thread, matched by correlation id)."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import assert_exit

from nsighttk.analysis.nsys import reports as R
from nsighttk.cli import cli
from nsighttk.errors import InputFileError
from nsighttk.load import json_chunks
from nsighttk.load.kineto import load_kineto
from nsighttk.load.kineto_columns import nest
from nsighttk.profile import Profile
from tests.conftest import fixture

HTA = ["alexnet_a100", "mi250_rocm6.2", "old_categories", "mtia_inference", "gpu_user_annotation", "nccl_a100",
       "ns_resolution_trimmed"]
BERT = ("h100-torch2.11", "bert_bs1_seq128.trace.json.gz")
GPU_OPS = ("kernel", "gpu_memcpy", "gpu_memset")


def hta(name: str) -> Path:
    if name == "nccl_a100":  # shared with the collectives tests, under HTA's own path
        return fixture("hta", "nccl_parser_config", "nccl_data.json.gz")
    return fixture("hta", f"{name}.json.gz")


def raw(path: Path) -> dict[str, Any]:
    with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as fh:
        return json.load(fh, parse_float=Decimal)  # type: ignore[no-any-return]


def ns(us: Any) -> int:
    return int((Decimal(us) * 1000).to_integral_value())


def timed(path: Path, *cats: str) -> list[dict[str, Any]]:
    return [e for e in raw(path)["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats]


# ------------------------------------------------------------------------------------- fidelity


def test_api_rows_per_function() -> None:
    """The alexnet trace's 361 runtime calls of 22 functions: one row per function, calls and
    total time as counted from the trace."""
    path = hta("alexnet_a100")
    calls: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for e in timed(path, "cuda_runtime", "cuda_driver"):
        calls[e["name"]] += 1
        total[e["name"]] += ns(e["dur"])
    df = R.cuda_api_sum(load_kineto(path)).frame
    assert len(calls) == 22 and len(df) == 22
    got = {r["Name"]: (r["Num Calls"], r["Total Time (ns)"]) for _, r in df.iterrows()}
    assert got == {n: (calls[n], total[n]) for n in calls}


def expected_projection(path: Path) -> dict[str, tuple[int, int, int]]:
    """Per range name: (instances with GPU work, total projection ns, GPU ops), by nsys' rule."""
    events = raw(path)["traceEvents"]
    x = [e for e in events if e.get("ph") == "X"]
    calls = defaultdict(list)
    for e in x:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            calls[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["args"]["correlation"]))
    ops = defaultdict(list)
    for e in x:
        if e.get("cat") in GPU_OPS:
            ops[e["args"]["correlation"]].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in x:
        if r.get("cat") != "user_annotation":
            continue
        start, end = ns(r["ts"]), ns(r["ts"]) + ns(r["dur"])
        inside = [op for s, e, corr in calls[(r["pid"], r["tid"])] if start <= s and e <= end for op in ops[corr]]
        if inside:
            row = out["torch:" + r["name"]]
            row[0] += 1
            row[1] += max(e for _, e in inside) - min(s for s, _ in inside)
            row[2] += len(inside)
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


@pytest.mark.parametrize("name", ["alexnet_a100", "mi250_rocm6.2", "gpu_user_annotation", "nccl_a100",
                                  "ns_resolution_trimmed", "bert"])
def test_nvtx_gpu_projection(name: str) -> None:
    """record_function ranges project onto the GPU through the correlation ids, as nsys does."""
    path = fixture(*BERT) if name == "bert" else hta(name)
    expected = expected_projection(path)
    assert expected, "the trace should have ranges with GPU work"
    df = R.nvtx_gpu_proj_sum(load_kineto(path)).frame
    got = {r["Range"]: (r["Range Instances"], r["Total Proj Time (ns)"], r["Total GPU Ops"])
           for _, r in df.iterrows()}
    assert got == expected


def test_projection_agrees_with_kinetos_own_gpu_annotations() -> None:
    """On the H100 BERT trace (one thread, one stream) each ProfilerStep's projection matches
    Kineto's gpu_user_annotation span to within its printing (a few ns)."""
    path = fixture(*BERT)
    spans = {e["name"]: (ns(e["ts"]), ns(e["dur"])) for e in timed(path, "gpu_user_annotation")}
    proj = R.nvtx_projection(load_kineto(path))
    assert len(spans) == 3 and len(proj) == 3
    for r in proj.itertuples():
        start, dur = spans[r.name.removeprefix("torch:")]
        assert abs(r.proj_start_ns - start) <= 5 and abs(r.proj_ns - dur) <= 5


def test_older_category_names() -> None:
    """`Kernel` / `Runtime` (older Kineto) load as kernels and runtime calls, not as CPU-only."""
    path = hta("old_categories")
    kernels = timed(path, "Kernel")
    p = load_kineto(path)
    assert len(kernels) == 4 and len(p.kernels) == 4 and len(p.api) == len(timed(path, "Runtime")) == 8
    assert sorted(p.kernels["duration_ns"]) == sorted(ns(e["dur"]) for e in kernels)
    assert sorted(p.kernels["grid_x"]) == sorted(e["args"]["grid"][0] for e in kernels)
    assert set(p.kernels["external_id"].dropna()) == {e["args"]["external id"] for e in kernels} - {None}
    assert not any("CPU-only" in n for n in p.notes)
    assert len(R.nvtx_gpu_proj_sum(p).frame) == 0  # no annotations in that trace


def test_rocm_trace() -> None:
    """MI250: kernels and copies load; a copy's bytes come from its HIP call's size; no CUDA
    compute capability for an AMD GPU; `analyze` has no traceback."""
    path = hta("mi250_rocm6.2")
    events = timed(path, "kernel", "gpu_memcpy", "cuda_runtime")
    size = {e["args"]["correlation"]: int(e["args"]["size"]) for e in events
            if e["cat"] == "cuda_runtime" and "size" in e["args"]}
    copies = [e for e in events if e["cat"] == "gpu_memcpy"]
    assert copies and all("bytes" not in e["args"] for e in copies)
    p = load_kineto(path)
    assert len(p.kernels) == sum(e["cat"] == "kernel" for e in events)
    assert sorted(p.memcpy["bytes"]) == sorted(size[e["args"]["correlation"]] for e in copies)
    assert p.gpus["compute_capability"].isna().all() and len(p.gpus) > 0
    assert any("HIP call" in n for n in p.notes)
    assert p.meta.get("platform") == "ROCm"
    res = CliRunner().invoke(cli, ["analyze", str(path)])
    assert res.exit_code == 0 and res.exception is None, res.output


def test_mtia_trace_is_named_not_cpu_only() -> None:
    path = hta("mtia_inference")
    p = load_kineto(path)
    assert len(p.ops) == len(timed(path, "cpu_op")) and len(p.nvtx) == len(timed(path, "user_annotation"))
    mtia = [n for n in p.notes if "MTIA" in n]
    assert len(mtia) == 1 and "MTIA 17" in mtia[0]
    assert f"{len(timed(path, 'mtia_runtime', 'mtia_ccp_events')):,} MTIA events" in mtia[0]
    assert not any("CPU-only" in n for n in p.notes) and p.gpus.empty
    res = CliRunner().invoke(cli, ["analyze", str(path)])
    assert res.exit_code == 0 and "MTIA" in res.output and "CPU-only" not in res.output


def test_epoch_clock_times_are_exact_nanoseconds() -> None:
    """1712195495519689.047 us: float64 cannot hold the nanoseconds; the loader keeps them."""
    path = hta("ns_resolution_trimmed")
    events = timed(path, "kernel", "gpu_memcpy", "cuda_runtime", "cpu_op")
    assert any(round(float(e["ts"]) * 1000) != ns(e["ts"]) for e in events)  # the float path would fail
    p = load_kineto(path)
    for table, cats in (("kernels", ("kernel",)), ("memcpy", ("gpu_memcpy",)), ("api", ("cuda_runtime",)),
                        ("ops", ("cpu_op",))):
        want = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events if e["cat"] in cats)
        df = p.table(table)
        assert sorted(zip(df["start_ns"], df["end_ns"], strict=True)) == want, table


@pytest.mark.parametrize("name", HTA)
def test_hta_traces_load_completely(name: str) -> None:
    """Every timed event of a loaded category is in its table (none lost in the chunking)."""
    path = hta(name)
    counts = Counter(e.get("cat", "").lower() for e in raw(path)["traceEvents"] if e.get("ph") == "X")
    p = load_kineto(path)
    assert len(p.kernels) == counts["kernel"]
    assert len(p.api) == counts["cuda_runtime"] + counts["cuda_driver"] + counts["runtime"]
    assert len(p.ops) == counts["cpu_op"] + counts["operator"]
    assert len(p.nvtx) == counts["user_annotation"]
    assert len(p.memcpy) == counts["gpu_memcpy"] and len(p.memset) == counts["gpu_memset"]
    for table in ("kernels", "memcpy", "memset", "api", "ops", "nvtx"):
        df = p.table(table)
        assert (df["duration_ns"] >= 0).all() and (df["end_ns"] - df["start_ns"] == df["duration_ns"]).all()


@pytest.mark.parametrize("name", HTA)
def test_op_summary_accounts_for_all_gpu_time(name: str) -> None:
    """Every kernel, copy and memset is attributed to an op or listed under its own name, also in
    traces without CPU ops (the older one)."""
    from nsighttk.analysis.torch_ops import op_summary

    path = hta(name)
    gpu = sum(ns(e["dur"]) for e in raw(path)["traceEvents"]
              if e.get("ph") == "X" and str(e.get("cat", "")).lower() in (*GPU_OPS, "memcpy", "memset"))
    ops = op_summary(load_kineto(path))
    assert (ops["self_device_ns"].sum() if len(ops) else 0) == gpu


# ---------------------------------------------------------------------------------- the reader


def tables(p: Profile) -> dict[str, pd.DataFrame]:
    return {t: p.table(t) for t in ("kernels", "memcpy", "memset", "api", "ops", "nvtx", "gpus")}


def assert_same(a: Profile, b: Profile) -> None:
    for t, df in tables(a).items():
        pd.testing.assert_frame_equal(df, b.table(t), obj=t)


def relayout(src: Path, dst: Path, how: str) -> Path:
    """The same trace minified (no newline at all) or with CRLF line ends."""
    text = gzip.decompress(src.read_bytes()).decode() if src.suffix == ".gz" else src.read_text()
    if how == "minified":
        out = _unquote_numbers(json.loads(text, parse_float=Decimal))
    else:
        out = text.replace("\n", "\r\n")
    dst.write_text(out)
    return dst


def _unquote_numbers(doc: Any) -> str:
    """Minified JSON that writes Decimals as the numbers they are."""
    def enc(v: Any) -> str:
        if isinstance(v, Decimal):
            return str(v)
        if isinstance(v, dict):
            return "{" + ",".join(json.dumps(k) + ":" + enc(x) for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ",".join(enc(x) for x in v) + "]"
        return json.dumps(v)
    return enc(doc)


@pytest.mark.parametrize("name", ["bert", "nccl_a100"])
def test_chunking_does_not_change_the_tables(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny blocks (so elements straddle every boundary), a minified file (no newlines: the exact
    scan alone) and CRLF line ends give exactly the tables of the default read."""
    path = fixture(*BERT) if name == "bert" else hta(name)
    ref = load_kineto(path)
    minified = load_kineto(relayout(path, tmp_path / "min.json", "minified"))
    crlf = load_kineto(relayout(path, tmp_path / "crlf.json", "crlf"))
    monkeypatch.setattr(json_chunks, "BLOCK_BYTES", 4093)
    small = load_kineto(path)
    for other in (minified, crlf, small):
        assert_same(ref, other)
        assert other.notes == ref.notes


def _stack_nesting(tid: list[int | None], start: list[int], end: list[int]) -> tuple[list[int], list[int]]:
    """Kineto's rule, one event at a time: per thread, by (start, longest first), each event's parent
    is the innermost open one, those that ended before its start (and before its end) closed first."""
    order = sorted(range(len(start)), key=lambda i: (-1 if tid[i] is None else tid[i], start[i], -end[i], i))
    parent, depth = [-1] * len(start), [0] * len(start)
    stack: list[int] = []
    for n, i in enumerate(order):
        if n and tid[i] != tid[order[n - 1]]:
            stack = []
        while stack and end[stack[-1]] < end[i] and start[i] >= end[stack[-1]]:
            stack.pop()
        if stack:
            parent[i], depth[i] = stack[-1], depth[stack[-1]] + 1
        stack.append(i)
    return parent, depth


def _nested_events(rng: np.random.Generator, lo: int, hi: int, level: int = 0,
                   out: tuple[list[int], list[int]] | None = None) -> tuple[list[int], list[int]]:
    """Up to 30 (start, end) pairs in [lo, hi], each inside the one it follows or after it."""
    start, end = out if out is not None else ([], [])
    at = lo
    while at <= hi and len(start) < 30:
        a = int(rng.integers(at, hi + 1))
        b = int(rng.integers(a, hi + 1))
        start.append(a)
        end.append(b)
        if level < 4 and rng.random() < 0.6:
            _nested_events(rng, a, b, level + 1, (start, end))
        at = b + int(rng.integers(0, 2))
    return start, end


def test_op_nesting_follows_the_stack_walk() -> None:
    """Parents and depths of events nested, disjoint, crossing, of equal times, empty, on several
    threads (one missing) are those of the stack walk, event by event."""
    rng = np.random.default_rng(7)
    crossing = nested = 0
    for trial in range(3000):
        span = int(rng.integers(1, 12))
        if trial % 2:  # nested by construction, with shared edges and empty events
            start, end = _nested_events(rng, 0, 3 * span)
        else:
            start = rng.integers(0, span, int(rng.integers(0, 30))).tolist()
            end = [s + int(rng.integers(0, span)) for s in start]
        tid = [None if rng.random() < 0.1 else int(rng.integers(0, 3)) for _ in start]
        df = pd.DataFrame({"start_ns": np.array(start, dtype=np.int64), "end_ns": np.array(end, dtype=np.int64),
                           "tid": pd.array(tid, dtype="Int64")})
        got = nest(df)
        parent, depth = _stack_nesting(tid, start, end)
        assert got["parent"].fillna(-1).tolist() == parent and got["depth"].tolist() == depth, (start, end, tid)
        crosses = any(s1 < s2 < e1 < e2 for s1, e1 in zip(start, end, strict=True)
                      for s2, e2 in zip(start, end, strict=True))
        crossing += crosses
        nested += not crosses
    assert crossing > 100 and nested > 100


def test_strings_with_escapes_brackets_and_newlines(tmp_path: Path) -> None:
    names = ['a "quoted" {name}', 'one " quote ]}, then', '\\" tricky ],', "back\\slash\\", "ends with \\\\",
             "brackets ]]}} [[{{", "line\nbreak},\n", "é ü 漢"]
    events = [{"ph": "X", "cat": "cpu_op", "name": n, "ts": 10 + i, "dur": 1, "pid": 1, "tid": 1,
               "args": {"Input type": [n]}} for i, n in enumerate(names)]
    pretty, minified = tmp_path / "pretty.json", tmp_path / "min.json"
    pretty.write_text(json.dumps({"traceEvents": events}, indent=1))
    minified.write_text(json.dumps({"traceEvents": events}))  # no newline: the exact scan only
    for f in (pretty, minified):
        for block in (7, 61, 4096):
            json_chunks.BLOCK_BYTES, saved = block, json_chunks.BLOCK_BYTES
            try:
                p = load_kineto(f)
            finally:
                json_chunks.BLOCK_BYTES = saved
            assert list(p.ops["name"]) == names and not p.notes[1:], (f.name, block, p.notes)


def test_metadata_after_the_events_and_bare_arrays(tmp_path: Path) -> None:
    ev = {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 7,
          "args": {"device": 0, "stream": 7, "correlation": 3, "grid": [1, 1, 1], "block": [32, 1, 1]}}
    props = [{"id": 0, "name": "NVIDIA H100", "computeMajor": 9, "computeMinor": 0, "numSms": 132, "warpSize": 32}]
    after = tmp_path / "after.json"
    after.write_text(json.dumps({"traceEvents": [ev], "deviceProperties": props, "baseTimeNanoseconds": 5}))
    p = load_kineto(after)
    assert len(p.kernels) == 1 and p.gpus["name"].tolist() == ["NVIDIA H100"] and p.meta["base_time_ns"] == 5
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([ev, ev]))
    assert len(load_kineto(bare).kernels) == 2


def test_benchmark_trace_has_consistent_ids(tmp_path: Path) -> None:
    """The benchmark's replicated trace: unique correlation ids, every kernel linked to its call,
    each replica's ProfilerSteps projecting as the original's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("kineto_speed", Path(__file__).parents[1] / "benchmarks" /
                                                  "kineto_speed.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = bench.build_trace(tmp_path / "big.json", 6_000_000)
    src = load_kineto(fixture(*BERT))
    p = load_kineto(out)
    k = len(p.kernels) // len(src.kernels)
    assert k >= 3 and len(p.kernels) == k * len(src.kernels) and len(p.api) == k * len(src.api)
    assert p.api["correlation_id"].is_unique
    assert p.kernels["correlation_id"].isin(p.api["correlation_id"]).all()
    proj = R.nvtx_projection(p)["proj_ns"].to_numpy()
    assert np.array_equal(proj, np.tile(R.nvtx_projection(src)["proj_ns"].to_numpy(), k))


# ------------------------------------------------------------------------------- hostile input

GOOD = [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 100.5, "dur": 5,
     "args": {"correlation": 1, "External id": 1}},
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 110, "dur": 20.25,
     "args": {"device": 0, "stream": 7, "correlation": 1, "External id": 1, "grid": [4, 1, 1], "block": [128, 1, 1],
              "registers per thread": 16, "shared memory": 0}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 140,
     "dur": 3, "args": {"device": 0, "stream": 7, "correlation": 2, "bytes": 4096}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 9, "tid": 9, "ts": 99, "dur": 10,
     "args": {"External id": 1}},
    {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 9, "tid": 9, "ts": 98, "dur": 50, "args": {}},
]


def trace_with(bad: dict[str, Any] | Any) -> dict[str, Any]:
    return {"schemaVersion": 1, "traceEvents": [*GOOD, bad]}


def kernel(**fields: Any) -> dict[str, Any]:
    e = json.loads(json.dumps(GOOD[1]))
    args = fields.pop("args", None)
    e.update(fields)
    if args is not None:
        e["args"] = args if not isinstance(args, dict) else {**e["args"], **args}
    return e


# (the odd event, the table it would go to, the note expected (None: none), rows kept in that table)
BAD_EVENTS = [
    (kernel(ts=None), "kernels", "start time (ts) missing", 1),
    (kernel(ts="110"), "kernels", "start time (ts) missing", 1),
    (kernel(ts=1e300), "kernels", "time beyond", 1),
    (kernel(ts=10**30), "kernels", "time beyond", 1),
    (kernel(dur=-5), "kernels", "negative duration", 1),
    (kernel(dur=None), "kernels", "duration (dur) missing", 1),
    (kernel(dur=float("nan")), "kernels", None, None),  # NaN is not JSON: written as NaN, see below
    (kernel(args=[1, 2]), "kernels", "args that are not an object", 2),
    (kernel(args="x"), "kernels", "args that are not an object", 2),
    (kernel(args=None), "kernels", None, 2),
    (kernel(args={"grid": 64}), "kernels", "grid that is not 3 numbers", 2),
    (kernel(args={"grid": [64]}), "kernels", "grid that is not 3 numbers", 2),
    (kernel(args={"grid": [1, "a", 3]}), "kernels", "grid_y is not an integer", 2),
    (kernel(args={"block": [2**40, 1, 1]}), "kernels", "block_x is not an integer", 2),
    (kernel(args={"correlation": "7"}), "kernels", "correlation_id is not an integer", 2),
    (kernel(args={"External id": 1.5}), "kernels", "external_id is not an integer", 2),
    (kernel(args={"stream": -3}), "kernels", None, 2),
    (kernel(name=123), "kernels", "name that is not text", 2),
    (kernel(name=None), "kernels", "without a name", 2),
    (kernel(name=["a", "b"]), "kernels", "name that is not text", 2),
    (kernel(cat=5), "kernels", None, 1),
    (kernel(cat=None), "kernels", None, 1),
    (kernel(ph=None), "kernels", None, 1),
    (kernel(cat="Kernel"), "kernels", None, 2),
    (kernel(pid="Spans", tid="x"), "kernels", None, 2),
    ({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "ts": 150, "dur": 1,
      "args": {"correlation": 9}}, "memcpy", "no byte count", 2),
    (5, "kernels", "not valid events", 1),
    ("text", "kernels", "not valid events", 1),
    ([1, [2]], "kernels", "not valid events", 1),
    ({"ph": "X", "cat": "cpu_op", "name": "deep", "ts": 1, "dur": 1, "args": {"x": [[[[[[[[[[1]]]]]]]]]]}},
     "ops", None, 2),
]


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=1))
    return path


def check_sound(p: Profile) -> None:
    """No impossible number: durations >= 0, end = start + duration, ids within their types."""
    for t in ("kernels", "memcpy", "memset", "api", "ops", "nvtx"):
        df = p.table(t)
        assert (df["duration_ns"] >= 0).all() and (df["end_ns"] - df["start_ns"] == df["duration_ns"]).all(), t
    assert (p.memcpy["bytes"] >= 0).all()


@pytest.mark.parametrize(("bad", "table", "note", "rows"), BAD_EVENTS)
def test_malformed_events(bad: Any, table: str, note: str | None, rows: int | None, tmp_path: Path) -> None:
    f = write(tmp_path / "t.json", trace_with(bad))
    if rows is None:  # NaN: json.dumps writes a bare NaN, which is not JSON: the event is dropped
        rows, note = 1, "not valid events"
    before = hashlib.sha256(f.read_bytes()).hexdigest()
    p = load_kineto(f)
    check_sound(p)
    assert len(p.table(table)) == rows
    if note is not None:
        assert any(note in n for n in p.notes), p.notes
    assert len(p.kernels) >= 1 and len(p.api) == 1 and len(p.ops) + len(p.nvtx) >= 2  # the sound rows load
    assert hashlib.sha256(f.read_bytes()).hexdigest() == before
    res = CliRunner().invoke(cli, ["analyze", str(f)])
    assert_exit(res, 0)


UNUSABLE = [
    (b"", "is empty"),
    (b"   \n ", "no traceEvents"),
    (b'{"a": 1}', "no traceEvents"),
    (b'{"traceEvents": 5}', "no traceEvents"),
    (b"[" * 40_000 + b"]" * 40_000, "nested deeper"),
    (b'{"traceEvents": [' + b"[" * 40_000, "nested deeper"),
    (b"{" * 80_000, "nested deeper"),
    (b'{"schemaVersion": 1, "deviceProp', "ends early"),
    (b"\x00\x01binary garbage", "not a JSON object"),
    (b'"just a string"', "not a JSON object"),
    (b'{"traceEvents": [', "ends early"),
    (b'{"traceEvents": [{"ph": "X", "cat": "ker', "ends early"),
    (b"[1, 2, 3]", "not a Kineto trace"),
    # (mtime 0: the same bytes, so the same test id, in every pytest-xdist worker)
    (gzip.compress(b'{"traceEvents": [{"ph": "X"}]}', mtime=0)[:20], "ends early"),
]


@pytest.mark.parametrize(("data", "message"), UNUSABLE)
def test_unusable_files_are_one_line(data: bytes, message: str, tmp_path: Path) -> None:
    f = tmp_path / "t.json"
    f.write_bytes(data)
    with pytest.raises(InputFileError, match=message):
        load_kineto(f)
    res = CliRunner().invoke(cli, ["analyze", str(f)])
    assert_exit(res, 2)
    assert len([line for line in res.output.splitlines() if line.strip()]) == 1, res.output
    assert f.read_bytes() == data


def test_truncated_trace_loads_what_is_whole(tmp_path: Path) -> None:
    whole = fixture(*BERT).read_bytes()
    text = gzip.decompress(whole)
    last = text.rindex(b'"Record Window End"')
    for cut in (len(text) // 3, len(text) // 2, last):
        f = tmp_path / f"cut{cut}.json"
        f.write_bytes(text[:cut])
        p = load_kineto(f)
        check_sound(p)
        n = sum(len(p.table(t)) for t in ("kernels", "api", "ops", "memset", "nvtx"))
        assert 0 < n <= 3994
        assert any("truncated" in note for note in p.notes)
    f.write_bytes(text[:-10])  # cut after the events: all of them load, the metadata after them is lost
    p = load_kineto(f)
    assert sum(len(p.table(t)) for t in ("kernels", "api", "ops", "memset", "nvtx")) == 3994
    assert any("after its events" in note for note in p.notes) and p.gpus["name"].notna().all()
    gz = tmp_path / "cut.json.gz"
    gz.write_bytes(whole[: len(whole) * 2 // 3])
    p = load_kineto(gz)
    assert len(p.ops) > 0 and any("truncated" in note for note in p.notes)


def test_folder_and_fifo_are_refused(tmp_path: Path) -> None:
    import os

    with pytest.raises(InputFileError, match="folder"):
        load_kineto(tmp_path)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="FIFO"):
        load_kineto(fifo)


def test_fuzzed_traces(tmp_path: Path) -> None:
    """A real trace truncated, bit-flipped, or with JSON tokens inserted or bytes deleted: the
    loader either loads what is sound (no impossible number) or raises one InputFileError."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    base = fixture("h100-torch2.11", "raises", "trace.json").read_bytes()
    tokens = [b"null", b"1e400", b'"x"', b"[", b"]", b"{", b"}", b",", b"\\", b'"', b"-1", b"NaN", b"\x00",
              b'"ts": "1"', b'"args": 5,', b"9" * 40, b"},\n"]

    @settings(max_examples=150, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data: st.DataObject) -> None:
        kind = data.draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
        at = data.draw(st.integers(0, len(base) - 1))
        if kind == "truncate":
            mutated = base[:at]
        elif kind == "flip":
            mutated = base[:at] + bytes([base[at] ^ (1 << data.draw(st.integers(0, 7)))]) + base[at + 1:]
        elif kind == "insert":
            mutated = base[:at] + data.draw(st.sampled_from(tokens)) + base[at:]
        else:
            mutated = base[:at] + base[at + data.draw(st.integers(1, 200)):]
        f = tmp_path / "fuzz.json"
        f.write_bytes(mutated)
        try:
            p = load_kineto(f)
        except InputFileError as ex:
            assert "\n" not in str(ex)
            return
        check_sound(p)

    run()
