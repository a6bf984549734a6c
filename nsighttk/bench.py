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

import contextlib
import functools
import math
import os
import re
import statistics
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nsighttk import progress
from nsighttk.errors import OutputFileError, UsageError, WorkloadError
from nsighttk.units import fmt_bytes

#: The longest warm-up or measuring budget accepted, per variant and size (ten minutes).
MAX_BUDGET_MS = 600_000.0


@dataclass
class BenchConfig:
    """How long to warm up and to measure, in milliseconds of the function's own run time.

    Checked when made: budgets are finite, ``0 <= warmup_ms``, ``0 < rep_ms``, both at most
    :data:`MAX_BUDGET_MS`; counts are positive; quantiles lie in [0, 1].  A bad value raises
    :class:`~nsighttk.errors.UsageError` naming the option (``--warmup-ms``, ``--rep-ms``)."""

    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    min_reps: int = 10
    max_reps: int = 100_000
    estimate_calls: int = 5
    flush_l2: bool = True
    quantiles: Sequence[float] = (0.2, 0.5, 0.8)

    def __post_init__(self) -> None:
        for option, value, zero_ok in (("--warmup-ms", self.warmup_ms, True), ("--rep-ms", self.rep_ms, False)):
            hint = f"give {'0' if zero_ok else 'more than 0'} to {MAX_BUDGET_MS:.0f} ms (10 minutes), e.g. {option} 100"
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise UsageError(f"{option} {value!r}: not a number of milliseconds", hint)
            if value < 0 or (value == 0 and not zero_ok):
                raise UsageError(f"{option} {value:g}: a time budget is {'at least' if zero_ok else 'more than'} 0 ms",
                                 hint)
            if value > MAX_BUDGET_MS:
                raise UsageError(f"{option} {value:g}: more than {MAX_BUDGET_MS:.0f} ms (10 minutes) per variant and "
                                 "size", hint)
        if not 1 <= self.min_reps <= self.max_reps or self.estimate_calls < 1:
            raise UsageError(f"repetitions: min_reps {self.min_reps}, max_reps {self.max_reps}, estimate_calls "
                             f"{self.estimate_calls}", "use 1 <= min_reps <= max_reps and estimate_calls >= 1")
        if not all(isinstance(q, (int, float)) and 0 <= q <= 1 for q in self.quantiles):
            raise UsageError(f"quantiles {list(self.quantiles)!r}: each must lie between 0 and 1",
                             "e.g. (0.2, 0.5, 0.8)")


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


# --------------------------------------------------------------------------- options, sizes, memory

#: The most elements ``--sizes`` accepts for one size: more than any device holds.
MAX_SIZE = 1 << 40
#: Bytes per element of each ``--dtype``.
ELEMENT_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}
#: On the host a workload's default sizes are kept while one call moves at most this many bytes and
#: does at most this many FLOPs (each such call takes tens of ms on a laptop core), so that
#: ``nsighttk bench NAME --device cpu`` finishes in seconds; explicit ``--sizes`` are not limited.
HOST_DEFAULT_MAX_BYTES = 256 << 20
HOST_DEFAULT_MAX_FLOPS = 4 * 10**9
#: What :func:`l2_flusher` holds on a GPU while timing.
L2_FLUSH_BYTES = 256 * 1024 * 1024

_NUMBER = re.compile(r"[+-]?(\d[\d_]*(\.\d*)?|\.\d+)([eE][+-]?\d+)?", re.ASCII)  # not '١٢٣'
_POWER = re.compile(r"2\^(\d+)", re.ASCII)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def parse_sizes(text: str | None) -> list[int] | None:
    """``--sizes``: element counts separated by commas (or spaces), each a whole number (``1048576``,
    ``1_048_576``, ``1e6``) or a power of two (``2^20``), each at least 1 and at most
    :data:`MAX_SIZE`, none twice.  ``None`` (the option not given) means the workload's defaults;
    anything else that is not such a list (``""``, ``",,,"``, ``"1.5"``, ``"inf"``, ``"-5"``) raises
    :class:`~nsighttk.errors.UsageError`, before any work."""
    from decimal import Decimal, InvalidOperation

    if text is None:
        return None
    hint = "give element counts separated by commas, e.g. --sizes 2^20,2^24 or --sizes 1048576,16777216"
    parts = re.split(r"\s*,\s*|\s+", text.strip())
    out: list[int] = []
    for part in parts:
        if not part:
            raise UsageError(f"--sizes {_short(text)!r}: an empty size", hint)
        power = _POWER.fullmatch(part)
        if power:
            if len(power.group(1)) > 3 or int(power.group(1)) > MAX_SIZE.bit_length() - 1:
                raise UsageError(f"--sizes: {_short(part)} is more than 2^{MAX_SIZE.bit_length() - 1} elements", hint)
            value = Decimal(2) ** int(power.group(1))
        else:
            try:
                if not _NUMBER.fullmatch(part):
                    raise InvalidOperation
                value = Decimal(part)
            except InvalidOperation:
                raise UsageError(f"--sizes: {_short(part)!r} is not a size (a number of elements)", hint) from None
            if value != value.to_integral_value():
                raise UsageError(f"--sizes: {_short(part)} is not a whole number of elements", hint)
            if value < 1:
                raise UsageError(f"--sizes: {_short(part)} elements: a size is at least 1", hint)
            if value > MAX_SIZE:
                raise UsageError(f"--sizes: {_short(part)} is more than 2^{MAX_SIZE.bit_length() - 1} elements", hint)
        size = int(value)
        if size in out:
            raise UsageError(f"--sizes {_short(text)!r}: {size:,} is given twice", "give each size once")
        out.append(size)
    return out


def element_bytes(dtype: str) -> int:
    try:
        return ELEMENT_BYTES[dtype]
    except KeyError:
        raise UsageError(f"unknown dtype {dtype!r}", "use float32, float16, bfloat16 or float64") from None


def check_csv(path: str | Path) -> Path:
    """``--csv``: refuse, before any work, a target that cannot be written: a device (``/dev/full``),
    a FIFO, a folder, a name too long, a folder that does not exist or is not writable."""
    from nsighttk import safeio

    p = safeio.check_output(path, "--csv")
    parent = p.parent
    if not parent.is_dir():
        raise OutputFileError(f"--csv {p}: the folder {parent} does not exist", "create it, or choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputFileError(f"--csv {p}: the folder {parent} is not writable", "choose another path")
    return p


def write_csv(report: BenchReport, path: str | Path) -> Path:
    """The results table as CSV, written atomically (a full disk leaves no half file); text cells
    quoted and cells a spreadsheet would run as a formula neutralised (:func:`nsighttk.escape.to_csv`)."""
    from nsighttk import escape, safeio

    return safeio.write_text(path, escape.to_csv(report.rows))


def default_sizes(workload: Any, device: str) -> list[int]:
    """The workload's own sizes on a GPU; on the host those whose call moves at most
    :data:`HOST_DEFAULT_MAX_BYTES` (float32) and does at most :data:`HOST_DEFAULT_MAX_FLOPS`, or the
    smallest one when none does."""
    sizes = list(workload.sizes)
    if device == "cuda":
        return sizes
    small = [s for s in sizes if workload.bytes(s, 4) <= HOST_DEFAULT_MAX_BYTES
             and workload.flops(s) <= HOST_DEFAULT_MAX_FLOPS]
    return small or [min(sizes)]


def memory_needed(workload: Any, size: int, dtype: str, device: str) -> dict[str, int]:
    """An upper estimate of the bytes the harness holds at once for one size, per memory
    (``"host"``, and ``"cuda"`` on a GPU).  With M = the bytes one call moves in ``dtype`` and
    M64 = the same in float64: on the host, the inputs and an output (M) plus the float64 inputs
    and reference, then the float64 result and its difference from the reference (2 x M64); on a
    GPU, inputs and outputs of consecutive calls (2 x M) and the L2 flush buffer, while the host
    holds the float64 copies (2 x M64)."""
    moved = workload.bytes(size, element_bytes(dtype))
    moved64 = workload.bytes(size, 8)
    if device == "cuda":
        return {"cuda": 2 * moved + L2_FLUSH_BYTES, "host": 2 * moved64}
    return {"host": moved + 2 * moved64}


def _cgroup_headroom() -> int | None:
    """Bytes left under this process's cgroup memory limit (v2, else v1), None without a limit."""
    for limit_f, usage_f, stat_f, inactive in (
            ("memory.max", "memory.current", "memory.stat", "inactive_file"),
            ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat",
             "total_inactive_file")):
        base = Path("/sys/fs/cgroup")
        try:
            limit_s = (base / limit_f).read_text().strip()
            if limit_s == "max" or int(limit_s) >= 1 << 60:
                return None
            usage = int((base / usage_f).read_text())
            stat = dict(line.split() for line in (base / stat_f).read_text().splitlines() if line.count(" ") == 1)
            usage -= int(stat.get(inactive, 0))  # page cache the kernel drops before failing an allocation
            return max(0, int(limit_s) - usage)
        except (OSError, ValueError):
            continue
    return None


def host_available_bytes() -> int | None:
    """Memory a new allocation can get: ``MemAvailable`` (Linux; free plus reclaimable cache), less
    when a cgroup limit leaves less; None where it cannot be known."""
    avail = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    headroom = _cgroup_headroom()
    return avail if headroom is None else min(avail, headroom)


def _available(where: str) -> int | None:
    if where == "cuda":
        import torch

        return int(torch.cuda.mem_get_info()[0])
    return host_available_bytes()


def plan_sizes(workload: Any, sizes: list[int] | None, dtype: str, device: str) -> list[int]:
    """The sizes a benchmark runs: ``sizes``, or :func:`default_sizes` for ``device`` (``cpu`` or
    ``cuda``, already resolved); each checked against the memory available now
    (:func:`memory_needed`), so a size that cannot fit is one :class:`UsageError` before anything
    is allocated or recorded."""
    chosen = list(sizes) if sizes else default_sizes(workload, device)
    for size in chosen:
        for where, need in memory_needed(workload, size, dtype, device).items():
            free = _available(where)
            if free is not None and need > free:
                label = "GPU" if where == "cuda" else "host"
                raise UsageError(f"size {size:,} needs about {fmt_bytes(need)} of {label} memory, "
                                 f"{fmt_bytes(free)} are available", "choose a smaller --sizes")
    return chosen


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

    element_bytes(name)
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
            "float64": torch.float64}[name]


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

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda, but PyTorch sees no CUDA GPU", "use --device cpu, or run on a GPU machine")
    if device not in ("cpu", "cuda"):
        raise UsageError(f"--device {device!r}: unknown device", "use auto, cuda or cpu")
    return device


def launched_kernels(call: Callable[[], Any]) -> list[str] | None:
    """The names of the GPU kernels one call launches (torch.profiler around it), most time first;
    None where the profiler cannot run (CUPTI missing or taken by another profiler)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
    except RuntimeError as ex:
        progress.warn(f"cannot see which kernels a call launches ({str(ex).splitlines()[0][:120]})")
        return None
    times: dict[str, float] = {}
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            times[e.name] = times.get(e.name, 0.0) + float(e.time_range.elapsed_us())
    return sorted(times, key=lambda k: -times[k])


def trace_columns(trace: dict[str, Any], launched: list[str] | None) -> dict[str, Any]:
    """A reproducer's row: the op's own time per call in its trace (``trace_ms``) and, on a GPU,
    the kernel the call launched and whether the trace's op launched the same one."""
    if not trace:
        return {}
    row: dict[str, Any] = {"trace_ms": float(trace.get("per_call_ns") or 0) / 1e6,
                           "trace_time": trace.get("time"), "trace_kernel": (trace.get("kernels") or [None])[0]}
    if launched is not None:
        row["kernel"] = launched[0] if launched else None
        row["kernel_match"] = bool(launched) and launched[0] in (trace.get("kernels") or [])
    return row


def as_float64(out: Any) -> Any:
    """A variant's output on the host in float64: a tensor, or a list of tensors one after another."""
    import torch

    if isinstance(out, (list, tuple)):
        return torch.cat([o.detach().reshape(-1).to("cpu", torch.float64) for o in out]) if out else \
            torch.zeros(0, dtype=torch.float64)
    return out.detach().to("cpu", torch.float64)


@contextlib.contextmanager
def _interpreter_quiet(interpreted: bool) -> Iterator[None]:
    """Under Triton's interpreter (``TRITON_INTERPRET=1``) a kernel's math runs in numpy, which warns
    where it overflows or divides by zero on the way to a right answer (``exp`` of a large input in
    a saturating tanh): those raw ``RuntimeWarning`` lines are not shown.  Whether the numbers are
    right is what the relative error against the float64 reference says."""
    with warnings.catch_warnings():
        if interpreted:
            warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"triton\.runtime\.interpreter")
        yield


def run_workload(workload: Any, variants: list[str], sizes: list[int] | None = None, dtype: str = "float32",
                 device: str = "auto", config: BenchConfig | None = None) -> BenchReport:
    """Check each variant against the float64 reference, then time it; skipped variants say why.
    ``sizes``: None for :func:`default_sizes` (checked by :func:`plan_sizes` either way).  Each
    step (copy bandwidth, inputs and reference, each variant) shows progress on stderr."""
    import pandas as pd
    import torch

    from nsighttk.nvtx import nvtx_range
    from nsighttk.workload import TOLERANCE, missing_requirements

    device = resolve_device(device)
    config = config or BenchConfig()
    trace = getattr(workload, "trace", None) or {}
    if trace.get("dtype") in ELEMENT_BYTES:  # a reproducer runs in the dtype its trace recorded
        dtype = trace["dtype"]
    sizes = plan_sizes(workload, sizes, dtype, device)
    timer: Timer = CudaEventTimer() if device == "cuda" else HostTimer()
    tdtype = _torch_dtype(dtype)
    elem = element_bytes(dtype)
    baseline = workload.baseline or variants[0]
    name = workload.name
    # once, before any input exists, on a buffer far larger than any cache: the device's streaming peak
    floor = (1 << 30) if device == "cuda" else (1 << 26)
    with progress.step(f"bench {name}: {device} copy bandwidth"):
        copy_gbps = measure_copy_gbps(max(floor, workload.bytes(max(sizes), elem) // 2), device, config, timer)
    rows: list[dict[str, Any]] = []
    runnable = {v: missing_requirements(workload.variants[v], device) for v in variants}
    steps, step = len(sizes) * sum(not why for why in runnable.values()), 0
    for size in sizes:
        try:
            with progress.step(f"bench {name}: n={size:,} float64 reference"):
                inputs = workload.make_inputs(size, tdtype, device)
                ref = as_float64(workload.reference(*(x.detach().to("cpu", torch.float64) for x in inputs)))
        except (RuntimeError, MemoryError) as ex:  # allocation failures (torch raises RuntimeError)
            first = (str(ex).splitlines() or [""])[0][:120]
            if isinstance(ex, MemoryError) or "memory" in str(ex).lower():
                raise UsageError(f"size {size:,} does not fit in memory ({first})",
                                 "choose a smaller --sizes") from None
            raise WorkloadError(f"{name}: the inputs or the float64 reference failed at size {size:,} "
                                f"({type(ex).__name__}: {first})",
                                "the reference runs on the host: an op without a CPU kernel needs a portable form "
                                "there") from None
        used = False  # whether a variant has run on these inputs
        for vname in variants:
            v = workload.variants[vname]
            row: dict[str, Any] = {"size": size, "variant": vname, "description": v.description}
            if runnable[vname]:
                rows.append({**row, "status": "skipped", "reason": "; ".join(runnable[vname])})
                continue
            step += 1
            interpreted = "triton" in v.requires and device != "cuda"
            try:
                with (progress.step(f"bench {name}: n={size:,} {vname} ({step}/{steps})"),
                      _interpreter_quiet(interpreted)):
                    if used and getattr(workload, "mutates", False):  # the last variant changed them
                        inputs = workload.make_inputs(size, tdtype, device)
                    used = True
                    out = v.fn(*inputs)
                    if device == "cuda":
                        torch.cuda.synchronize()
                    got = as_float64(out)
                    del out
                    scale = float(torch.linalg.vector_norm(ref))  # a zero reference (fill_(0)): absolute error
                    err = float(torch.linalg.vector_norm(got - ref)) / (scale if scale > 0 else 1.0)
                    ok = bool(torch.isfinite(got).all()) and err <= workload.tolerance.get(
                        dtype, TOLERANCE.get(dtype, 1e-5))
                    del got
                    call = functools.partial(v.fn, *inputs)
                    with nvtx_range(f"{name}/{vname}"):
                        t = time_fn(call, config, timer)
                    launched = launched_kernels(call) if device == "cuda" and trace.get("kernels") else None
            except Exception as ex:  # a variant that fails is reported, the others still run
                rows.append({**row, "status": "failed", "reason": f"{type(ex).__name__}: {ex}"[:200]})
                continue
            gbps = workload.bytes(size, elem) / (t.median_ms / 1e3) / 1e9
            flops = workload.flops(size)
            rows.append({**row, "status": "ok" if ok else "wrong result",
                         "reason": (f"rel. error {err:.2e}" if not ok else
                                    "Triton interpreter: not a GPU time" if interpreted else ""),
                         "rel_error": err, "median_ms": t.median_ms, "p20_ms": t.quantiles_ms.get("p20"),
                         "p80_ms": t.quantiles_ms.get("p80"), "reps": t.reps, "gbps": gbps,
                         "tflops": flops / (t.median_ms / 1e3) / 1e12 if flops else None,
                         "pct_of_copy": 100 * gbps / copy_gbps if copy_gbps else None,
                         **trace_columns(trace, launched)})
        del inputs, ref
    df = pd.DataFrame(rows)
    if "median_ms" in df:
        base = df[df["variant"] == baseline].set_index("size")["median_ms"]
        df["speedup_vs_baseline"] = df["size"].map(base) / df["median_ms"]
    return BenchReport(workload.name, timer.device, dtype, copy_gbps, df)
