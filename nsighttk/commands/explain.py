"""``nsighttk explain KERNEL_NAME...``: decode kernel names (library, category, op, dtypes, tiles)."""

from __future__ import annotations

from nsighttk.analysis.kernels.names import KernelInfo, decode


def run(names: list[str]) -> list[KernelInfo]:
    return [decode(n) for n in names]
