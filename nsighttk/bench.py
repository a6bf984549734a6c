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

import functools
import os
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


# --------------------------------------------------------------------------- workload benchmarks


@dataclass
class BenchReport:
    """``nsighttk bench`` results: one row per (size, variant); figures in ms, GB/s, TFLOP/s."""

    workload: str
    device: str
    dtype: str
    copy_gbps: float | None  # measured device copy bandwidth (read + write), the % of peak base
    rows: Any  # pandas DataFrame
    run_dir: Any = None  # the run directory, when recorded


def _torch_dtype(name: str) -> Any:
    import torch

    try:
        return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
                "float64": torch.float64}[name]
    except KeyError:
        from nsighttk.errors import UsageError

        raise UsageError(f"unknown dtype {name!r}", "use float32, float16, bfloat16 or float64") from None


def _host_available_bytes() -> int | None:
    """Available host memory (Linux), None where it cannot be known."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def measure_copy_gbps(nbytes: int, device: str, config: BenchConfig, timer: Timer) -> float:
    """Device copy bandwidth counting bytes read and written (the ceiling for streaming kernels)."""
    import torch

    n = max(1 << 20, nbytes // 4)
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)
    t = time_fn(lambda: dst.copy_(src), config, timer)
    return 2 * n * 4 / (t.median_ms / 1e3) / 1e9


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when PyTorch sees a GPU, else ``cpu``; ``cuda`` without one is an error."""
    import torch

    from nsighttk.errors import UsageError

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda, but PyTorch sees no CUDA GPU", "use --device cpu, or run on a GPU machine")
    return device


def run_workload(workload: Any, variants: list[str], sizes: list[int], dtype: str = "float32",
                 device: str = "auto", config: BenchConfig | None = None) -> BenchReport:
    """Check each variant against the float64 reference, then time it; skipped variants say why."""
    import pandas as pd
    import torch

    from nsighttk.errors import UsageError
    from nsighttk.nvtx import nvtx_range
    from nsighttk.workload import TOLERANCE, missing_requirements

    device = resolve_device(device)
    config = config or BenchConfig()
    timer: Timer = CudaEventTimer() if device == "cuda" else HostTimer()
    tdtype = _torch_dtype(dtype)
    elem = torch.empty((), dtype=tdtype).element_size()
    baseline = workload.baseline or variants[0]
    rows: list[dict[str, Any]] = []
    copy_gbps = None
    for size in sizes:
        need = workload.bytes(size, elem) * 2
        free = torch.cuda.mem_get_info()[0] if device == "cuda" else _host_available_bytes()
        if free is not None and need > free:
            where = "GPU" if device == "cuda" else "host"
            raise UsageError(f"size {size:,} needs about {need / 1e9:.1f} GB of {where} memory, {free / 1e9:.1f} GB "
                             "are free", "choose a smaller --sizes")
        try:
            inputs = workload.make_inputs(size, tdtype, device)
            ref = workload.reference(*(x.detach().to("cpu", torch.float64) for x in inputs))
        except (RuntimeError, MemoryError) as ex:  # allocation failures (torch raises RuntimeError)
            raise UsageError(f"size {size:,} does not fit in memory ({str(ex).splitlines()[0][:120]})",
                             "choose a smaller --sizes") from None
        if copy_gbps is None:  # once, on a buffer far larger than any cache: the device's streaming peak
            floor = (1 << 30) if device == "cuda" else (1 << 26)
            copy_gbps = measure_copy_gbps(max(floor, workload.bytes(max(sizes), elem) // 2), device, config, timer)
        for name in variants:
            v = workload.variants[name]
            row: dict[str, Any] = {"size": size, "variant": name, "description": v.description}
            why = missing_requirements(v, device)
            if why:
                rows.append({**row, "status": "skipped", "reason": "; ".join(why)})
                continue
            try:
                out = v.fn(*inputs)
                if device == "cuda":
                    torch.cuda.synchronize()
                got = out.detach().to("cpu", torch.float64)
                err = float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref))
                tol = workload.tolerance.get(dtype, TOLERANCE.get(dtype, 1e-5))
                ok = bool(torch.isfinite(got).all()) and err <= tol
                call = functools.partial(v.fn, *inputs)
                with nvtx_range(f"{workload.name}/{name}"):
                    t = time_fn(call, config, timer)
            except Exception as ex:  # a variant that fails is reported, the others still run
                rows.append({**row, "status": "failed", "reason": f"{type(ex).__name__}: {ex}"[:200]})
                continue
            gbps = workload.bytes(size, elem) / (t.median_ms / 1e3) / 1e9
            flops = workload.flops(size)
            interpreted = "triton" in v.requires and device != "cuda"
            rows.append({**row, "status": "ok" if ok else "wrong result",
                         "reason": (f"rel. error {err:.2e}" if not ok else
                                    "Triton interpreter: not a GPU time" if interpreted else ""),
                         "rel_error": err, "median_ms": t.median_ms, "p20_ms": t.quantiles_ms.get("p20"),
                         "p80_ms": t.quantiles_ms.get("p80"), "reps": t.reps, "gbps": gbps,
                         "tflops": flops / (t.median_ms / 1e3) / 1e12 if flops else None,
                         "pct_of_copy": 100 * gbps / copy_gbps if copy_gbps else None})
        del inputs
    df = pd.DataFrame(rows)
    if "median_ms" in df:
        base = df[df["variant"] == baseline].set_index("size")["median_ms"]
        df["speedup_vs_baseline"] = df["size"].map(base) / df["median_ms"]
    return BenchReport(workload.name, timer.device, dtype, copy_gbps, df)
