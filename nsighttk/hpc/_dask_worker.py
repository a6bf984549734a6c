"""Preloaded by the Dask workers nsighttk starts: they leave Ctrl-C to the driver, which stops them
(a terminal's Ctrl-C goes to the whole process group, workers included)."""

from __future__ import annotations

import contextlib
import signal
from typing import Any


def dask_setup(worker: Any) -> None:
    with contextlib.suppress(ValueError):  # (only the main thread may set a handler)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
