"""The timing harness, with a fake clock (deterministic) and, for smoke, the host clock; the
bench options (sizes, budgets, --csv), the host's default sizes and the memory check."""

from __future__ import annotations

import math
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from conftest import assert_exit

from nsighttk import bench
from nsighttk.bench import BenchConfig, HostTimer, time_fn, time_pytorch_function
from nsighttk.cli import cli
from nsighttk.errors import OutputFileError, UsageError


class FakeClock:
    """Time advances only when the fake workload runs: by ``durations_ms`` in turn."""

    name = "fake"
    device = "fake device"

    def __init__(self) -> None:
        self.now = 0.0
        self.syncs = 0

    def mark(self) -> float:
        return self.now

    def sync(self) -> None:
        self.syncs += 1

    def elapsed_ms(self, start: float, end: float) -> float:
        return end - start


def workload(clock: FakeClock, durations_ms: list[float], log: list[str]):
    calls = iter(durations_ms)
    last = durations_ms[-1]

    def fn() -> None:
        log.append("call")
        clock.now += next(calls, last)

    return fn


def test_first_call_is_never_timed_and_budget_sets_counts() -> None:
    clock, log = FakeClock(), []
    fn = workload(clock, [500.0] + [2.0] * 10_000, log)  # a slow first call (compilation), then 2 ms
    t = time_fn(fn, BenchConfig(warmup_ms=10, rep_ms=40, min_reps=3), timer=clock, flush=lambda: log.append("flush"))
    assert t.median_ms == 2.0 and t.max_ms == 2.0  # the 500 ms first call is not in the results
    assert t.reps == 20 and t.warmup_reps == 5 + 5 + 1  # 40/2 reps; 10/2 warm-up; 5 estimate calls; first call
    assert log.count("flush") == 20 and all(log[i] == "flush" for i in range(len(log) - 40, len(log), 2))
    assert t.clock == "fake" and t.device == "fake device" and clock.syncs >= 2


def test_statistics_and_quantiles() -> None:
    clock, log = FakeClock(), []
    pattern = [1.0, 2.0, 3.0, 4.0, 10.0]
    fn = workload(clock, [1.0] * 6 + pattern * 2, log)  # 1 first + 5 estimate calls, warm-up, then pattern
    t = time_fn(fn, BenchConfig(warmup_ms=0, rep_ms=10, min_reps=10, max_reps=10, estimate_calls=5),
                timer=clock, flush=lambda: None)
    assert t.reps == 10
    # warm-up takes one call (1 ms), so the timed calls see the pattern shifted by one
    assert sorted(t.times_ms) == sorted([2.0, 3.0, 4.0, 10.0, 1.0, 2.0, 3.0, 4.0, 10.0, 10.0])
    assert t.median_ms == 3.5 and t.min_ms == 1.0 and t.max_ms == 10.0
    assert t.quantiles_ms["p50"] == 3.5 and t.quantiles_ms["p20"] == 2.0


def test_reps_clamped_and_zero_duration_handled() -> None:
    clock, log = FakeClock(), []
    t = time_fn(workload(clock, [0.0], log), BenchConfig(max_reps=50), timer=clock, flush=lambda: None)
    assert t.reps == 50 and t.median_ms == 0.0
    clock2, log2 = FakeClock(), []
    t = time_fn(workload(clock2, [1000.0], log2), BenchConfig(rep_ms=100, min_reps=7), timer=clock2, flush=lambda: None)
    assert t.reps == 7


def test_host_clock_smoke() -> None:
    t = time_fn(lambda: sum(range(1000)), BenchConfig(warmup_ms=1, rep_ms=5), timer=HostTimer())
    assert t.clock == "perf_counter" and t.device == "cpu" and t.reps >= 10 and t.min_ms >= 0
    assert set(t.as_dict()) >= {"median_ms", "quantiles_ms", "reps", "warmup_reps"} and "times_ms" not in t.as_dict()


def test_seed_compatible_wrapper_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, seen = FakeClock(), []
    monkeypatch.setattr(bench, "default_timer", lambda: clock)  # the clock time_fn picks when given none
    durations = iter([50.0] + [1.0] * 5 + [1.0] * 2 + [4.0, 2.0, 9.0] * 3)  # first, estimate, warm-up, timed

    def func(x: object) -> None:
        seen.append(x)
        clock.now += next(durations)

    median = time_pytorch_function(func, "the input", BenchConfig(warmup_ms=2, rep_ms=9, min_reps=9, max_reps=9))
    assert median == 4.0  # the median of 2,2,2,4,4,4,9,9,9 ms (the mean is 5): the 50 ms first call is untimed
    assert seen == ["the input"] * (1 + 5 + 2 + 9)  # every call gets the input


# ----------------------------------------------------------------------------- options, sizes, memory

@pytest.mark.parametrize(("text", "sizes"), [
    (None, None), ("2^20,2^24", [1 << 20, 1 << 24]), ("1048576", [1 << 20]), ("1_048_576", [1 << 20]),
    ("1e6", [10**6]), ("2.5e3", [2500]), ("1, 2", [1, 2]), ("1 2", [1, 2]), (" 4096 ", [4096]),
    ("2^40", [1 << 40]), ("100,10", [100, 10]),
])
def test_parse_sizes_accepts(text: str | None, sizes: list[int] | None) -> None:
    assert bench.parse_sizes(text) == sizes


@pytest.mark.parametrize(("text", "message"), [
    ("inf", "'inf' is not a size (a number of elements)"), ("nan", "'nan' is not a size"),
    ("1e400", "1e400 is more than 2^40 elements"), ("2^41", "2^41 is more than 2^40 elements"),
    ("-5", "-5 elements: a size is at least 1"), ("0", "0 elements: a size is at least 1"),
    ("2^20,2^20", "1,048,576 is given twice"), ("1e6,1000000", "1,000,000 is given twice"),
    (",,,", "an empty size"), ("", "an empty size"), ("2^20,,2^24", "an empty size"),
    ("1.5", "1.5 is not a whole number of elements"), ("1e-3", "1e-3 is not a whole number"),
    ("0x10", "'0x10' is not a size"), ("2^20.5", "'2^20.5' is not a size"), ("2**20", "'2**20' is not a size"),
    pytest.param("9" * 10_000, "9" * 40 + "... is more than 2^40 elements", id="10000-digits"),
])
def test_parse_sizes_refuses_with_one_reason(text: str, message: str) -> None:
    with pytest.raises(UsageError) as ex:
        bench.parse_sizes(text)
    assert message in str(ex.value) and len(str(ex.value)) < 300 and "\n" not in str(ex.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"rep_ms": math.nan}, "--rep-ms nan: not a number of milliseconds"), ({"rep_ms": math.inf}, "--rep-ms inf: not"),
    ({"rep_ms": 0}, "--rep-ms 0: a time budget is more than 0 ms"), ({"rep_ms": -1}, "--rep-ms -1: a time budget"),
    ({"warmup_ms": 1e12}, r"--warmup-ms 1e\+12: more than 600000 ms \(10 minutes\)"),
    ({"warmup_ms": -0.5}, "--warmup-ms -0.5: a time budget is at least 0 ms"), ({"rep_ms": "5"}, "--rep-ms '5'"),
    ({"min_reps": 0}, "min_reps 0"), ({"min_reps": 5, "max_reps": 4}, "max_reps 4"),
    ({"quantiles": (0.5, 1.5)}, "each must lie between 0 and 1"),
])
def test_bench_config_refuses_bad_budgets(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        bench.BenchConfig(**kwargs)


def test_bench_config_accepts_the_edges() -> None:
    assert bench.BenchConfig(warmup_ms=0, rep_ms=bench.MAX_BUDGET_MS).rep_ms == bench.MAX_BUDGET_MS


def _no_run_directory(tmp_path: Path) -> None:
    reports = Path(os.environ["NSIGHTTK_REPORTS"])
    assert not reports.exists() or not any(reports.iterdir()), list(reports.iterdir())


def _one_error_line(args: list[str]) -> str:
    res = CliRunner().invoke(cli, args)
    line = assert_exit(res, 2)
    assert line.startswith("nsighttk: error: "), line
    return line


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--sizes", "inf", "'inf' is not a size"), ("--sizes", "1e400", "more than 2^40"),
    ("--sizes", "-5", "a size is at least 1"), ("--sizes", "2^20,2^20", "given twice"),
    ("--sizes", ",,,", "an empty size"), ("--sizes", "1.5", "not a whole number"),
    ("--rep-ms", "nan", "--rep-ms nan: not a number"), ("--warmup-ms", "1e12", "--warmup-ms 1e+12: more than"),
    ("--rep-ms", "-inf", "--rep-ms -inf: not a number"),
])
def test_bench_option_values_are_one_line_before_any_work(tmp_path: Path, option: str, value: str,
                                                          message: str) -> None:
    assert message in _one_error_line(["bench", "add", "--device", "cpu", f"{option}={value}"])
    _no_run_directory(tmp_path)


def test_csv_targets_that_cannot_be_written_are_one_line_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "folder.csv").mkdir()
    for target, message in ((tmp_path / "missing" / "x.csv", "does not exist"), ("/dev/full", "a character device"),
                            (tmp_path / "folder.csv", "is a folder"), (tmp_path / ("x" * 300 + ".csv"), "longer than")):
        assert message in _one_error_line(["bench", "add", "--device", "cpu", "--sizes", "4096", "--csv", str(target)])
    _no_run_directory(tmp_path)
    assert not (tmp_path / "missing").exists()


def test_check_csv_and_atomic_write(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    if not os.access(ro, os.W_OK):  # root writes anywhere: the check has nothing to refuse then
        with pytest.raises(OutputFileError, match="not writable"):
            bench.check_csv(ro / "x.csv")
    with pytest.raises(OutputFileError, match="does not exist"):
        bench.check_csv(tmp_path / "missing" / "x.csv")
    out = tmp_path / "t.csv"
    report = bench.BenchReport("w", "cpu", "float32", None, pd.DataFrame({"size": [1, 2], "variant": ["a", "=b"]}))
    assert bench.write_csv(report, bench.check_csv(out)) == out
    assert out.read_text() == '"size","variant"\n1,"a"\n2,"\'=b"\n'  # a formula is never a formula
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def _fake_workload(sizes: tuple[int, ...], bytes_per_elem: int = 3, flops_per_elem: int = 1) -> SimpleNamespace:
    return SimpleNamespace(name="fake", sizes=sizes, bytes=lambda s, e: bytes_per_elem * s * e,
                           flops=lambda s: flops_per_elem * s)


def test_default_sizes_on_the_host_stay_small() -> None:
    wl = _fake_workload((1 << 20, 1 << 24, 1 << 28))
    assert bench.default_sizes(wl, "cuda") == [1 << 20, 1 << 24, 1 << 28]
    assert bench.default_sizes(wl, "cpu") == [1 << 20, 1 << 24]  # 2^28 x 3 x 4 B = 3.2 GB moved per call: left out
    square = SimpleNamespace(sizes=(1024, 4096), bytes=lambda s, e: 3 * s * s * e, flops=lambda s: 2 * s**3)
    assert bench.default_sizes(square, "cpu") == [1024]  # 4096: 137 GFLOP per call
    assert bench.default_sizes(_fake_workload((1 << 30, 1 << 31)), "cpu") == [1 << 30]  # none fits: the smallest


def test_every_builtin_workload_has_small_host_defaults() -> None:
    from nsighttk.workload import list_workloads, load_workload

    pytest.importorskip("torch")
    for name in list_workloads():
        wl = load_workload(name)
        for size in bench.default_sizes(wl, "cpu"):
            assert wl.bytes(size, 4) <= bench.HOST_DEFAULT_MAX_BYTES and wl.flops(size) <= bench.HOST_DEFAULT_MAX_FLOPS
            assert bench.memory_needed(wl, size, "float32", "cpu")["host"] < 2 * 10**9, (name, size)


def test_plan_sizes_checks_memory_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    wl = _fake_workload((1 << 20, 1 << 24))
    monkeypatch.setattr(bench, "host_available_bytes", lambda: 500 * 10**6)
    assert bench.plan_sizes(wl, [1 << 20], "float32", "cpu") == [1 << 20]
    # 2^24: 201 MB moved in float32 plus twice 403 MB in float64
    with pytest.raises(UsageError, match=r"^size 16,777,216 needs about 1\.01 GB of host memory, 500\.00 MB are "
                                         r"available"):
        bench.plan_sizes(wl, None, "float32", "cpu")
    assert bench.memory_needed(wl, 1 << 24, "float16", "cpu")["host"] < bench.memory_needed(wl, 1 << 24, "float32",
                                                                                            "cpu")["host"]
    gpu = bench.memory_needed(wl, 1 << 24, "float32", "cuda")
    assert gpu == {"cuda": 2 * 201_326_592 + bench.L2_FLUSH_BYTES, "host": 2 * 402_653_184}


def test_host_available_bytes_is_plausible() -> None:
    avail = bench.host_available_bytes()
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert avail is not None and 0 < avail <= total


def test_a_size_too_large_for_memory_leaves_no_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.setattr(bench, "host_available_bytes", lambda: 10**6)
    line = _one_error_line(["bench", "add", "--device", "cpu", "--sizes", "2^20"])
    assert "size 1,048,576 needs about 62.91 MB of host memory, 1.00 MB are available" in line
    assert "choose a smaller --sizes" in line
    _no_run_directory(tmp_path)


def test_cpu_defaults_run_small_sizes_with_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    from nsighttk.workload import load_workload

    monkeypatch.delenv("NSIGHTTK_QUIET")
    wl = load_workload("add")
    wl.sizes = (1 << 12, 1 << 14, 1 << 40)  # the last one would need terabytes: not a host default
    report = bench.run_workload(wl, ["torch_add", "cuda"], None, device="cpu",
                                config=BenchConfig(warmup_ms=1, rep_ms=2))
    assert sorted(set(report.rows["size"])) == [1 << 12, 1 << 14]
    err = capsys.readouterr().err
    for line in ("bench add: cpu copy bandwidth", "bench add: n=4,096 float64 reference",
                 "bench add: n=4,096 torch_add (1/2)", "bench add: n=16,384 torch_add (2/2): done in"):
        assert line in err, err
    assert " cuda (" not in err  # skipped variants are not steps


def test_variants_writing_their_inputs_are_each_checked_on_fresh_ones() -> None:
    """An in-place op returning a list (an optimizer step): its tensors are checked one after
    another, and each variant on inputs the one before it did not change."""
    torch = pytest.importorskip("torch")
    from nsighttk.workload import Variant, Workload

    def step(a: object, b: object) -> list[object]:
        a.add_(1.0)  # type: ignore[attr-defined]
        b.mul_(-1.0)  # type: ignore[attr-defined]
        return [a, b]

    def make(size: int, dtype: object, device: object) -> tuple[object, ...]:
        return torch.arange(4, dtype=dtype), torch.ones(2, 3, dtype=dtype)

    wl = Workload("in_place", "", make, reference=lambda a, b: [a + 1, -b],
                  variants={"first": Variant(step), "second": Variant(step)}, bytes=lambda size, elem: 0,
                  sizes=(1,), mutates=True)
    config = BenchConfig(warmup_ms=1, rep_ms=2, min_reps=3)
    rows = bench.run_workload(wl, ["first", "second"], device="cpu", config=config).rows
    assert list(rows["status"]) == ["ok", "ok"] and list(rows["rel_error"]) == [0.0, 0.0]
    wl.mutates = False  # the second variant then starts from what the first one's timing left
    rows = bench.run_workload(wl, ["first", "second"], device="cpu", config=config).rows
    assert list(rows["status"]) == ["ok", "wrong result"]


@pytest.mark.parametrize(("raised", "says"), [
    ("Could not run 'aten::_cudnn_attention_forward' with arguments from the 'CPU' backend.\nmore",
     "in_host: the inputs or the float64 reference failed at size 1 (RuntimeError: Could not run "
     "'aten::_cudnn_attention_forward' with arguments from the 'CPU' backend.)"),
    ("DefaultCPUAllocator: not enough memory: you tried to allocate 8 GB.",
     "size 1 does not fit in memory (DefaultCPUAllocator: not enough memory: you tried to allocate 8 GB.)"),
])
def test_a_reference_that_fails_is_not_called_a_memory_shortage(raised: str, says: str) -> None:
    torch = pytest.importorskip("torch")
    from nsighttk.errors import NsightTKError
    from nsighttk.workload import Variant, Workload

    def reference(x: object) -> object:
        raise RuntimeError(raised)

    wl = Workload("in_host", "", lambda size, dtype, device: (torch.ones(2),), reference,
                  {"one": Variant(lambda x: x)}, bytes=lambda size, elem: 0, sizes=(1,))
    with pytest.raises(NsightTKError) as info:
        bench.run_workload(wl, ["one"], device="cpu", config=BenchConfig(warmup_ms=1, rep_ms=2, min_reps=3))
    assert str(info.value).startswith(says)
