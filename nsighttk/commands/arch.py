"""``nsighttk arch [MODEL|sm_XX]``: GPU model -> compute capability -> ``-arch``, with the per-SM
limits the occupancy calculator uses (the whole table without a query)."""

from __future__ import annotations

from typing import Any

from nsighttk import arch


def run(query: str | None = None) -> Any:
    return arch.table() if query is None else arch.lookup(query)
