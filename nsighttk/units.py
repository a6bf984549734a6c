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


def fmt_count(n: Any) -> str:
    """A count with thousands separators; "-" when unknown."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError, OverflowError):
        return "-"


def fmt_pct(x: Any, digits: int = 1) -> str:
    """A percentage ("56.2%"); "-" when unknown."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{float(x):,.{digits}f}%"


def fmt_si(x: Any, unit: str = "", digits: int = 3) -> str:
    """A rate with an SI prefix and ``digits`` significant digits: 12.1 GFLOP/s, 3.77 TFLOP/s."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    v = float(x)
    prefix = ""
    for p in ("k", "M", "G", "T", "P"):
        if abs(float(f"{v:.{digits}g}")) < 1000:
            break
        v, prefix = v / 1000, p
    shown = f"{v:.{digits}g}"
    if "e" in shown:  # beyond peta, or a tiny fraction: plain scientific notation
        shown = f"{v:.{digits - 1}e}"
    return f"{shown} {prefix}{unit}".rstrip()


def fmt_elems(n: Any) -> str:
    """An element count as users pass it to --sizes: 2^20 for powers of two from 2^10, else 65,536."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    n = int(n)
    e = n.bit_length() - 1
    return f"2^{e}" if n > 0 and n == 1 << e and e >= 10 else f"{n:,}"


def fmt_kib(b: Any) -> str:
    """A capacity in binary units, as CUDA's documentation states them (shared memory, register
    file, stack): 48 KiB, 1.5 KiB, 228 KiB, 512 B."""
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return "-"
    v = float(b)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= scale:
            return f"{v / scale:,.2f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{v:,.0f} B"


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
