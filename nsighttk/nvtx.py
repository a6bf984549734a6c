"""NVTX ranges for workloads: the ``nvtx`` package when installed, else PyTorch's
``torch.cuda.nvtx`` when a GPU is there, else nothing (harmless everywhere)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """``with nvtx_range("gelu/manual_gelu"): ...`` shows up in nsys and ncu (--nvtx-include)."""
    try:
        import nvtx

        with nvtx.annotate(name):
            yield
        return
    except ImportError:
        pass
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()
        return
    yield
