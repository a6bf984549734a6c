"""The timing harness, with a fake clock (deterministic) and, for smoke, the host clock."""

from __future__ import annotations

from nsighttk.bench import BenchConfig, HostTimer, time_fn, time_pytorch_function


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


def test_seed_compatible_wrapper_on_cpu() -> None:
    assert time_pytorch_function(lambda x: x * 2, 3, BenchConfig(warmup_ms=1, rep_ms=2)) >= 0
