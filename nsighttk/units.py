"""Human-readable units (ns, bytes, numbers), shared by analyses that write evidence and by renderers."""

from __future__ import annotations

import math
from typing import Any


def fmt_ns(ns: Any) -> str:
    """Nanoseconds in the largest unit that keeps a leading digit: 171.46 ms, 3.58 us."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "-"
    v = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:,.2f} {unit}"
    return f"{v:,.0f} ns"


def fmt_bytes(b: Any) -> str:
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return "-"
    v = float(b)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:,.2f} {unit}"
    return f"{v:,.0f} B"


def fmt_num(x: Any, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:,.{digits}f}"


def shorten(name: Any, width: int = 90) -> str:
    s = "" if name is None else str(name)
    return s if len(s) <= width else s[: width - 3] + "..."
