"""The timing harness: ``time_fn`` in the spirit of ``triton.testing.do_bench``.

The seeds time GPU code with one pair of CUDA events after 5 warm-up calls
(``time_pytorch_function``).  ``time_fn`` keeps what is right about that (events, not the host
clock, because launches are asynchronous; warm-up first) and fixes what is fragile:

* the first call (module load, JIT, autotuning, handle creation) is never timed;
* warm-up and repetitions are chosen by time budget (``warmup_ms``, ``rep_ms``) from an estimate
  of one call, so a 5 us kernel gets thousands of repetitions and a 50 ms one a handful;
* on a GPU the L2 cache is flushed before every timed call (writing a buffer larger than any L2),
  so repeated calls do not measure cached inputs;
* every repetition is timed separately and the result carries the median, chosen quantiles, mean,
  min, max and the counts, with the device and the clock used.

Clocks are pluggable (:class:`Timer`): CUDA events through PyTorch, the host's monotonic clock for
CPU work, or a fake one in tests.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol


@dataclass
class BenchConfig:
    """How long to warm up and to measure, in milliseconds of the function's own run time."""

    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    min_reps: int = 10
    max_reps: int = 100_000
    estimate_calls: int = 5
    flush_l2: bool = True
    quantiles: Sequence[float] = (0.2, 0.5, 0.8)


@dataclass
class Timing:
    """One function's timings (ms), with how they were taken."""

    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    quantiles_ms: dict[str, float]
    reps: int
    warmup_reps: int
    device: str
    clock: str
    times_ms: list[float] = field(repr=False, default_factory=list)

    def as_dict(self, with_times: bool = False) -> dict[str, Any]:
        d = asdict(self)
        if not with_times:
            d.pop("times_ms")
        return d


class Timer(Protocol):
    """A clock: ``mark`` returns a point in time (recorded asynchronously on a GPU), ``sync``
    waits for outstanding work, ``elapsed_ms`` measures between two marks after ``sync``."""

    name: str
    device: str

    def mark(self) -> Any: ...

    def sync(self) -> None: ...

    def elapsed_ms(self, start: Any, end: Any) -> float: ...


class HostTimer:
    """The host's monotonic clock: right for CPU work (and wrong for asynchronous GPU work)."""

    name = "perf_counter"
    device = "cpu"

    def mark(self) -> int:
        return time.perf_counter_ns()

    def sync(self) -> None:
        return None

    def elapsed_ms(self, start: int, end: int) -> float:
        return (end - start) / 1e6


class CudaEventTimer:
    """CUDA events on the current stream, through PyTorch."""

    name = "cuda events"

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self.device = f"cuda ({torch.cuda.get_device_name()})"

    def mark(self) -> Any:
        ev = self._torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def sync(self) -> None:
        self._torch.cuda.synchronize()

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end))


def l2_flusher(bytes_: int = 256 * 1024 * 1024) -> Callable[[], None]:
    """A function that overwrites ``bytes_`` of device memory (more than any GPU's L2 today)."""
    import torch

    buf = torch.empty(bytes_ // 4, dtype=torch.int32, device="cuda")

    def flush() -> None:
        buf.zero_()

    return flush


def default_timer() -> Timer:
    try:
        import torch

        if torch.cuda.is_available():
            return CudaEventTimer()
    except ImportError:
        pass
    return HostTimer()


def _quantile(sorted_ms: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), without numpy."""
    if len(sorted_ms) == 1:
        return sorted_ms[0]
    pos = q * (len(sorted_ms) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_ms) - 1)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (pos - lo)


def time_fn(fn: Callable[[], Any], config: BenchConfig | None = None, timer: Timer | None = None,
            flush: Callable[[], None] | None = None) -> Timing:
    """Time ``fn()`` (see the module doc).  ``flush`` runs untimed before every timed call; by
    default it flushes the L2 cache when timing with CUDA events and ``config.flush_l2``."""
    config = config or BenchConfig()
    timer = timer or default_timer()
    if flush is None and config.flush_l2 and isinstance(timer, CudaEventTimer):
        flush = l2_flusher()
    noop: Callable[[], None] = lambda: None  # noqa: E731
    flush = flush or noop

    fn()  # first call: compilation, module loading, autotuning - never timed
    timer.sync()
    n_est = max(1, config.estimate_calls)
    start = timer.mark()
    for _ in range(n_est):
        fn()
    end = timer.mark()
    timer.sync()
    estimate = timer.elapsed_ms(start, end) / n_est
    if estimate > 0:
        warmup = max(1, int(config.warmup_ms / estimate))
        reps = int(config.rep_ms / estimate)
    else:
        warmup, reps = 1, config.max_reps
    reps = max(config.min_reps, min(config.max_reps, reps))
    for _ in range(warmup):
        fn()
    marks = []
    for _ in range(reps):
        flush()
        a = timer.mark()
        fn()
        b = timer.mark()
        marks.append((a, b))
    timer.sync()
    times = [timer.elapsed_ms(a, b) for a, b in marks]
    ordered = sorted(times)
    return Timing(
        median_ms=statistics.median(ordered), mean_ms=statistics.fmean(ordered), min_ms=ordered[0],
        max_ms=ordered[-1], quantiles_ms={f"p{round(q * 100):g}": _quantile(ordered, q) for q in config.quantiles},
        reps=reps, warmup_reps=warmup + n_est + 1, device=timer.device, clock=timer.name, times_ms=times,
    )


def time_pytorch_function(func: Callable[[Any], Any], input: Any, config: BenchConfig | None = None) -> float:
    """The seeds' ``time_pytorch_function(func, input)``, made robust: the median in ms."""
    return time_fn(lambda: func(input), config).median_ms
