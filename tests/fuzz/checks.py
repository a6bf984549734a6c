"""What every reading command must do on any input, however damaged:

* exit 0 or 2 (3 when a tool is missing), never a Python exception escaping the command;
* no traceback in what it prints, at most one error line (``nsighttk: error: ...``), and that line
  last; no control character (ESC, a bare carriage return) reaching the terminal;
* the input files byte-identical afterwards;
* an output file under its final name only when the command succeeded, and then complete (HTML
  ending with ``</html>``, CSV that parses); no temporary file left beside it;
* no impossible number in JSON or CSV output: NaN or infinity, a negative duration, count or
  size, a share above 100 %, an average or median outside [min, max], a total below the maximum.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from nsighttk.cli import cli

ALLOWED_CODES = (0, 2, 3)
#: control characters other than newline and tab: a terminal would act on them
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


@dataclass
class Outcome:
    args: list[str]
    code: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (f"nsighttk {' '.join(self.args)}\nexit {self.code}\nstderr: {self.stderr[-2000:]!r}\n"
                f"stdout: {self.stdout[:1500]!r}")


def digest(paths: Iterable[Path]) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def invoke(args: Sequence[str]) -> Outcome:
    """Run the CLI in this process; an exception other than SystemExit fails the test with its
    traceback."""
    args = [str(a) for a in args]
    res = CliRunner().invoke(cli, args)
    exc = res.exception
    if exc is not None and not isinstance(exc, SystemExit):
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        raise AssertionError(f"traceback from nsighttk {' '.join(args)}:\n{tb}")
    return Outcome(args, res.exit_code, res.stdout, res.stderr)


def check_outcome(o: Outcome, json_out: bool | str = False) -> None:
    assert o.code in ALLOWED_CODES, o.describe()
    both = o.stdout + o.stderr
    assert "Traceback (most recent call last)" not in both, o.describe()
    errors = [ln for ln in o.stderr.splitlines() if ln.startswith("nsighttk: error")]
    assert len(errors) <= 1, o.describe()
    if o.code != 0:
        assert len(errors) == 1, o.describe()
        assert o.stderr.rstrip("\n").splitlines()[-1] == errors[0], o.describe()
        assert len(errors[0]) < 2000, o.describe()
    for stream, text in (("stderr", o.stderr), ("stdout", "" if json_out else o.stdout)):
        m = _CONTROL.search(text)
        assert m is None, f"control character {m.group()!r} in {stream}\n{o.describe()}"
    if json_out and o.code == 0:
        docs = json_documents(o.stdout)
        assert json_out == "many" or len(docs) == 1, o.describe()
        for data in docs:
            check_numbers(data, o)


def json_documents(text: str) -> list[Any]:
    """The JSON documents in ``text``: one, or several between nsys' own text lines (``rules -f
    json`` prints ``Processing [...] with [rule]...`` before each, and ``SKIPPED: ...`` for a rule
    without its data)."""
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    docs, i = [], 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        if text[i] in "[{":
            doc, i = decoder.raw_decode(text, i)
            docs.append(doc)
        else:
            assert text.startswith(("Processing [", "** ", "SKIPPED: "), i), f"not JSON: {text[i:i + 200]!r}"
            i = text.find("\n", i) + 1 or len(text)
    return docs


def _no_constant(name: str) -> None:
    raise AssertionError(f"{name} in JSON output")


def run(args: Sequence[str], inputs: Sequence[Path], json_out: bool | str = False) -> Outcome:
    """``invoke`` plus :func:`check_outcome` plus: the inputs are unchanged."""
    before = digest(inputs)
    o = invoke(args)
    check_outcome(o, json_out)
    assert digest(inputs) == before, f"an input changed\n{o.describe()}"
    return o


def run_with_output(args: Sequence[str], inputs: Sequence[Path], out_dir: Path,
                    json_out: bool = False) -> tuple[Outcome, list[Path]]:
    """``run`` for a command writing files into ``out_dir`` (empty before): on failure nothing
    was written there; on success the new files are complete and no temporary file remains."""
    assert not any(out_dir.iterdir())
    o = run(args, inputs, json_out)
    made = sorted(out_dir.iterdir())
    names = [p.name for p in made]
    assert not [n for n in names if n.startswith(".") or ".tmp" in n], f"temporary file left: {names}\n{o.describe()}"
    if o.code != 0:
        assert not made, f"failed but wrote {names}\n{o.describe()}"
    for p in made:
        if p.suffix == ".html":
            text = p.read_text()
            assert text.rstrip().endswith("</html>"), f"{p.name} is incomplete\n{o.describe()}"
        elif p.suffix == ".csv":
            check_csv(p.read_text(), o)
        elif p.suffix == ".json":
            check_numbers(json.loads(p.read_text() or "null", parse_constant=_no_constant), o)
    return o, made


# ------------------------------------------------------------------------------------ numbers

_NUM = (int, float)
#: min <= middle <= max, as (min, (middles...), max, total, stddev) key names
_GROUPS = [
    ("Min (ns)", ("Avg (ns)", "Med (ns)"), "Max (ns)", "Total Time (ns)", "StdDev (ns)"),
    ("Proj Min (ns)", ("Proj Avg (ns)", "Proj Med (ns)"), "Proj Max (ns)", "Total Proj Time (ns)",
     "Proj StdDev (ns)"),
    ("Min (bytes)", ("Avg (bytes)", "Med (bytes)"), "Max (bytes)", "Total (bytes)", "StdDev (bytes)"),
    ("Min (MB)", ("Avg (MB)", "Med (MB)"), "Max (MB)", "Total (MB)", "StdDev (MB)"),
    ("min", ("mean", "median"), "max", None, None),
]
#: keys that are a share of a whole: within [0, 100]
_SHARE = re.compile(r"^(Time \(%\)|share_pct|gpu_busy_pct|steady_gpu_busy_pct|Theoretical Occupancy \(%\)|"
                    r"calc_theoretical_pct|occupancy_pct_(before|after))$")
#: keys that can never be negative: durations, counts, sizes
_NONNEG = re.compile(r"(_ns$|\(ns\)$|bytes|count$|^Instances$|^Num Calls$|^kernels$|^iterations$|calls_|"
                     r"Total GPU Ops|Avg GPU Ops|Avg Num Child|gbps|^Count$|\(MB\)$)", re.IGNORECASE)
#: ... unless they are a point in time or a difference
_SIGNED = re.compile(r"(start|end|base_time|extra|delta|diff|change|vs_|_ts_)", re.IGNORECASE)


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, _NUM):
        return float(v)
    return None


def check_numbers(data: Any, o: Outcome, path: str = "") -> None:
    """Walk JSON output: finite numbers, non-negative durations/counts/sizes, shares within
    [0, 100], min <= average, median <= max <= total."""
    if isinstance(data, dict):
        for k, v in data.items():
            where = f"{path}.{k}"
            x = _number(v)
            if x is not None:
                assert math.isfinite(x), f"{where} = {v}\n{o.describe()}"
                if _SHARE.search(str(k)):
                    assert -1e-9 <= x <= 100.05, f"{where} = {v} (a share)\n{o.describe()}"
                elif _NONNEG.search(str(k)) and not _SIGNED.search(str(k)):
                    assert x >= 0, f"{where} = {v} (negative)\n{o.describe()}"
            else:
                check_numbers(v, o, where)
        check_order(data, o, path)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            check_numbers(v, o, f"{path}[{i}]")
    else:
        x = _number(data)
        if x is not None:
            assert math.isfinite(x), f"{path} = {data}\n{o.describe()}"


def _tolerance(*values: float) -> float:
    return 0.051 + 1e-12 * max(abs(v) for v in values)


def check_order(row: dict[str, Any], o: Outcome, where: str = "") -> None:
    for lo_key, mids, hi_key, total_key, sd_key in _GROUPS:
        lo, hi = _number(row.get(lo_key)), _number(row.get(hi_key))
        if lo is None or hi is None:
            continue
        assert lo <= hi + _tolerance(lo, hi), f"{where}: {lo_key} {lo} > {hi_key} {hi}\n{o.describe()}"
        for m in mids:
            x = _number(row.get(m))
            if x is not None:
                tol = _tolerance(lo, hi, x)
                assert lo - tol <= x <= hi + tol, f"{where}: {m} {row.get(m)} outside [{lo}, {hi}]\n{o.describe()}"
        total = _number(row.get(total_key)) if total_key else None
        if total is not None and lo >= 0:
            assert total + _tolerance(total, hi) >= hi, f"{where}: total {total} < max {hi}\n{o.describe()}"
        sd = _number(row.get(sd_key)) if sd_key else None
        if sd is not None:
            assert sd >= 0 and math.isfinite(sd), f"{where}: {sd_key} {sd}\n{o.describe()}"


def check_csv(text: str, o: Outcome) -> None:
    """A CSV we wrote: it parses, every row has the header's width, and its numbers are possible
    (fields of any length: names of several MiB are data)."""
    csv.field_size_limit(2**31 - 1)
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return
    header = rows[0]
    for r in rows[1:]:
        assert len(r) == len(header), f"CSV row {r} does not match header {header}\n{o.describe()}"
        check_numbers({h: _csv_value(v) for h, v in zip(header, r, strict=True)}, o, "csv")


def _csv_value(v: str) -> Any:
    t = v.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if re.fullmatch(r"-?\d+\.\d*(e[+-]?\d+)?", t, re.IGNORECASE):
        return float(t)
    if t.lower() in ("nan", "inf", "-inf", "infinity", "-infinity"):
        return float(t)
    return v
