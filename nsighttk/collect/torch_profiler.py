"""Run a workload or script under torch.profiler: the driver's command line, its log, the trace
paths it wrote; no parsing of the trace (that is :mod:`nsighttk.load.kineto`).

The profiled code runs in a child process (:mod:`nsighttk.collect.drivers.torch_main`), so a user's script that
crashes or calls ``sys.exit`` cannot take nsighttk with it; what it recorded up to then is kept.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsighttk import safeio
from nsighttk.collect import run_logged

#: ``key_averages().table(sort_by=...)`` keys PyTorch accepts.
SORT_KEYS = ("cpu_time", "cuda_time", "device_time", "cpu_time_total", "cuda_time_total", "device_time_total",
             "self_cpu_time_total", "self_cuda_time_total", "self_device_time_total", "count",
             "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage")


@dataclass
class TorchOptions:
    """``nsighttk torch`` settings (see :mod:`nsighttk.collect.drivers.torch_main`)."""

    device: str = "auto"
    schedule: str | None = None  # "wait,warmup,active,repeat"
    record_shapes: bool = False
    with_stack: bool = False
    tensorboard: Path | None = None
    sort_by: str | None = None
    iters: int = 3
    size: int | None = None
    variants: str | None = None
    timeout_s: float | None = None
    arch: str | None = None  # the CUDA-extension variants' arch (resolved by the command)


@dataclass
class TorchCapture:
    command: list[str]
    rc: int
    traces: list[Path]
    log: Path
    driver: dict[str, Any] = field(default_factory=dict)  # driver.json: what ran, steps, the script's error


def driver_command(out: Path, target: str, args: list[str], device: str, options: TorchOptions) -> list[str]:
    """The child process' command line, as a list; ``device`` is already resolved (cuda or cpu)."""
    cmd = [sys.executable, "-m", "nsighttk.collect.drivers.torch_main", "--out", str(out), "--device", device,
           "--iters", str(options.iters)]
    if options.schedule:
        cmd += ["--schedule", options.schedule]
    if options.record_shapes:
        cmd.append("--record-shapes")
    if options.with_stack:
        cmd.append("--with-stack")
    if options.tensorboard:
        cmd += ["--tensorboard", str(options.tensorboard)]
    if options.sort_by:
        cmd += ["--sort-by", options.sort_by]
    if options.size:
        cmd += ["--size", str(options.size)]
    if options.variants:
        cmd += ["--variants", options.variants]
    if options.arch:
        cmd += ["--arch", options.arch]
    return [*cmd, target, *args]


def profile(raw: Path, target: str, args: list[str], device: str, options: TorchOptions,
            echo: bool = True) -> TorchCapture:
    """Run the driver into ``raw``; keep its log (``driver.log``) and what it reported."""
    cmd = driver_command(raw, target, args, device, options)
    log = raw / "driver.log"
    rc, _ = run_logged(cmd, log, options.timeout_s, echo)
    found = safeio.read_json_or_none(raw / "driver.json")
    driver = found if isinstance(found, dict) else {}
    return TorchCapture(cmd, rc, sorted(raw.glob("trace*.json")), log, driver)
