"""What the benchmark scripts measure of their own process (Linux /proc and getrusage)."""

from __future__ import annotations

import os
import resource


def status(key: str) -> int:
    """A line of /proc/self/status in MB (VmRSS: resident now, VmHWM: peak); -1 when absent."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) // 1024
    return -1


def reset_peak() -> None:
    """Start VmHWM again from the resident size now (where the kernel allows it)."""
    try:
        with open(f"/proc/{os.getpid()}/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def cpu() -> float:
    """CPU seconds (user + system) of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
