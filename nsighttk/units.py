"""Human-readable units (ns, bytes, numbers), shared by analyses that write evidence and by renderers."""

from __future__ import annotations

import math
import re
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


# Nsight Compute's display units (SI prefixes: Kbyte is 10^3 bytes), converted to base units.
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}


def parse_number(text: str) -> float:
    """ncu's CSV numbers: ``"1,234,567.89"`` -> 1234567.89; ``n/a``/empty/words -> NaN."""
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan", "-"):
        return math.nan
    try:
        return float(t)
    except ValueError:
        return math.nan


def to_base(value: float, unit: str) -> tuple[float, str]:
    """A display value and unit -> base units (ns, byte, byte/s, hz, ...)."""
    u = unit.strip()
    if u in _TIME:
        return value * _TIME[u], "ns"
    m = re.fullmatch(r"([KMGTP]?)(byte|hz|Hz|cycle|inst|sector|request|warp|block|thread)(/.+)?", u)
    if m:
        base = m.group(2).lower() if m.group(2) in ("hz", "Hz") else m.group(2)
        per = m.group(3) or ""
        if per in ("/s", "/second"):
            per = "/s"
        return value * _PREFIX[m.group(1)], base + per
    m = re.fullmatch(r"([KMGTP]?)byte/(.+)", u)
    if m:
        return value * _PREFIX[m.group(1)], "byte/" + m.group(2)
    if u.lower() in ("ghz", "mhz", "khz"):
        return value * _PREFIX[u[0].upper()], "hz"
    return value, u
