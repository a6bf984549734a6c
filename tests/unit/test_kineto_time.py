"""Kineto times (microseconds as JSON number text) to integer nanoseconds, in bulk: compared with
an exact reference (:class:`fractions.Fraction`: the value times 1000, rounded half to even) on
random and edge values, alone and through the loader."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import msgspec
import numpy as np
import pytest

from nsighttk.load.kineto import load_kineto
from nsighttk.load.kineto_time import BEYOND_NS, MAX_US, us_to_ns


def reference(text: str) -> int | None:
    """Exact nanoseconds of a JSON value's text; None when it is not a number."""
    try:
        v = json.loads(text, parse_float=Fraction, parse_int=Fraction)
    except ValueError:  # the empty text of a missing field
        return None
    if type(v) is not Fraction:
        return None
    ns = round(v * 1000)  # Fraction rounds half to even
    if abs(ns) >= MAX_US * 1000:
        return -BEYOND_NS if ns < 0 else BEYOND_NS
    return ns


def check(texts: list[str]) -> None:
    ns, is_num = us_to_ns([t.encode() for t in texts])
    for text, got, num in zip(texts, ns.tolist(), is_num.tolist(), strict=True):
        want = reference(text)
        assert (num, got if num else None) == (want is not None, want), text


EDGES = [
    "0", "-0", "0.0", "-0.000", "1", "-1", "7.5", "110", "0.001", "-0.001",
    # halves at the fourth decimal: to even; anything after the 5 rounds up
    "0.0005", "0.0015", "0.0025", "-0.0005", "-0.0015", "1.0005", "1.0015", "2.00050", "2.000500000001",
    "0.00049999999999999999999", "0.0004999", "0.00050001", "9.9995", "9.9985", "-9.9995",
    # one to nine decimals, and many more
    "1.2", "1.23", "1.234", "1.2345", "1.23456", "1.234567", "1.2345678", "1.23456789", "1.234567891",
    "1." + "0" * 60 + "1", "0." + "9" * 45, "-0." + "4" * 50 + "5",
    # Kineto's epoch clock (float64 cannot hold these nanoseconds) and near 2^53 us
    "1712195495519689.047", "1712195495519689.0475", "1712195495519689.0485", "-1712195495519689.047",
    "9007199254740992", "9007199254740993", "9007199254740993.001", "9007199254740991.9995", "4466532843487.209",
    # the range's edge: +-4e15 us and beyond, more than 16 integer digits
    "3999999999999999.999", "3999999999999999.9994", "3999999999999999.9995", "4000000000000000",
    "-3999999999999999.999", "-4000000000000000.0", "9999999999999999.999", "10000000000000000",
    "123456789012345678901234567890", "-123456789012345678901234567890.5",
    # exponent notation (valid JSON)
    "1e3", "1E3", "1.5e-3", "2.5e-4", "3.5e-4", "-1.2345e1", "1.5e+2", "4e15", "3.9e15", "1e300", "-1e300",
    "1e-300", "0e5", "17121954955196.89047e2", "1e400", "1.0005E0",
    # not numbers: missing, null, text, booleans, containers
    "", "null", '"1.5"', '""', "true", "false", "[1]", "{}", '{"ts": 1}',
]


def test_edge_values() -> None:
    check(EDGES)


def test_random_values() -> None:
    rng = random.Random(20240404)
    texts = []
    for _ in range(20_000):
        digits = rng.choice([0, 1, 1, 2, 4, 7, 10, 13, 15, 16, 16, 17])
        whole = "0" if digits == 0 else str(rng.randint(1, 9)) + "".join(rng.choices("0123456789", k=digits - 1))
        decimals = rng.choice([0, 1, 2, 3, 3, 3, 4, 4, 5, 6, 7, 8, 9, 12, 25])
        frac = "".join(rng.choices("0123456789" if rng.random() < 0.8 else "05", k=decimals))
        text = ("-" if rng.random() < 0.2 else "") + whole + (f".{frac}" if decimals else "")
        if rng.random() < 0.05:
            text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 20))
        texts.append(text)
    check(texts)


def test_mixed_lengths_missing_and_raw_texts() -> None:
    """Texts as msgspec hands them over (Raw), empty ones between, one chunk at a time."""
    class E(msgspec.Struct):
        ts: msgspec.Raw = msgspec.Raw()

    doc = b'[{"ts": 1.5}, {}, {"ts": null}, {"ts": 1712195495519689.0475}, {"ts": "7"}, {"ts": -2}, {"ts": 1e2}]'
    raws = [e.ts for e in msgspec.json.decode(doc, type=list[E])]
    ns, is_num = us_to_ns(raws)
    assert ns.tolist() == [1500, 0, 0, 1712195495519689048, 0, -2000, 100_000]
    assert is_num.tolist() == [True, False, False, True, False, True, True]
    assert us_to_ns([])[0].dtype == np.int64 and len(us_to_ns([b"", b""])[0]) == 2


@pytest.mark.parametrize("ts", ["1712195495519689.0475", "110.0005", "110.0015", "1.10005e2", "110.000500001"])
def test_loader_times_are_exact(ts: str, tmp_path: Path) -> None:
    """The loader's start and end: the exact nanoseconds of the text, whatever its form."""
    dur = "20.2505"
    event = (f'{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {ts}, "dur": {dur}, '
             '"args": {"device": 0, "stream": 7, "correlation": 1}}')
    f = tmp_path / "t.json"
    f.write_text('{"traceEvents": [\n' + event + "\n]}")
    k = load_kineto(f).kernels
    start = reference(ts)
    assert k["start_ns"].tolist() == [start]
    assert k["end_ns"].tolist() == [start + reference(dur)]  # type: ignore[operator]
