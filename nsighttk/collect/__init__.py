"""Collectors: run a profiler, keep its log, return artifact paths; never parse captures."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from nsighttk.errors import ProfilerFailed
from nsighttk.settings import child_environment

#: a progress line of nsys (``[2/2] [====45%    ] profile.sqlite``): through a pipe it prints one
#: per percent; the echo shows only each step's completed line (the log keeps them all)
PROGRESS_LINE = re.compile(r"^\[\d+/\d+\] \[[=\s]*\d+%[=\s]*\] ")
#: Lines a tool prints for its own tracing, not for the user: PyTorch's profiler (Kineto) marks its start
#: and stop as USDT probes ("USDT:2026-11-28 01:40:58 25077:25077 SyncActivityProfilerHandler.cpp:52]
#: profiler_start").  The log keeps them; the echo leaves them out.
TRACE_LINE = re.compile(r"^USDT:\S+ \S+ \d+:\d+ \S+\] ")


def run_logged(cmd: list[str], log: Path, timeout_s: float | None, echo: bool,
               env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``cmd`` (with ``env`` added to the environment), copying its output to ``log`` (and to
    stderr when ``echo``, without nsys' per-percent progress lines and PyTorch's USDT probe lines).
    Past ``timeout_s`` the process and its children are killed, even while they keep the output open;
    on Ctrl-C (or any error here) they get SIGINT, as from a terminal, and 10 s to write what they
    captured."""
    text: list[str] = []
    own_group = timeout_s is not None  # a group of its own, so that a timeout stops the children too
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", bufsize=1, env=child_environment(env),
                                start_new_session=own_group)
    except OSError as ex:
        raise ProfilerFailed(f"cannot start {cmd[0]}: {ex.strerror}") from None

    def stop(sig: int) -> None:
        try:
            if own_group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass

    expired = threading.Event()

    def on_timeout() -> None:
        expired.set()
        stop(signal.SIGKILL)

    timer = threading.Timer(timeout_s, on_timeout) if timeout_s else None
    if timer:
        timer.daemon = True
        timer.start()
    assert proc.stdout is not None
    shown = ""
    try:
        with log.open("w") as fh:
            for line in proc.stdout:
                fh.write(line)
                text.append(line)
                if echo and not TRACE_LINE.match(line):
                    if PROGRESS_LINE.match(line):
                        if "100%" not in line or line == shown:
                            continue
                        shown = line
                    sys.stderr.write(line)
            rc = proc.wait()
    except BaseException:
        for sig, grace in ((None, 2), (signal.SIGINT, 10), (signal.SIGKILL, None)):
            if proc.poll() is not None:
                break
            if sig is not None:  # (a terminal's Ctrl-C reached the children already: give them time first)
                stop(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=grace)
        raise
    finally:
        if timer:
            timer.cancel()
    if expired.is_set():
        raise ProfilerFailed(f"{cmd[1] if len(cmd) > 1 else cmd[0]} ran past {timeout_s} s and was stopped",
                             f"see {log}")
    return rc, "".join(text)
