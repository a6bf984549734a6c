"""Collectors: run a profiler, keep its log, return artifact paths; never parse captures."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nsighttk.errors import ProfilerFailed


def run_logged(cmd: list[str], log: Path, timeout_s: float | None, echo: bool,
               env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``cmd`` (with ``env`` added to the environment), copying its output to ``log`` (and to
    stderr when ``echo``)."""
    text: list[str] = []
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", bufsize=1, env={**os.environ, **env} if env else None)
    except OSError as ex:
        raise ProfilerFailed(f"cannot start {cmd[0]}: {ex.strerror}") from None
    assert proc.stdout is not None
    with log.open("w") as fh:
        for line in proc.stdout:
            fh.write(line)
            text.append(line)
            if echo:
                sys.stderr.write(line)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise ProfilerFailed(f"{cmd[1] if len(cmd) > 1 else cmd[0]} ran past {timeout_s} s and was stopped",
                                 f"see {log}") from None
    return rc, "".join(text)
