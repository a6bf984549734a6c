"""Load Nsight Compute data into a :class:`Profile`: ``.ncu-rep`` files through NVIDIA's
``ncu_report`` module (the PyPI ``ncu-report`` wheel, or the copy in an ncu install's
``extras/python``), and ncu's CSV exports (``ncu -i X.ncu-rep --csv --page details`` or
``--page raw``) when only CSV is at hand.

CSV quirks handled: every field quoted, thousands separators (``"1,234,567.89"``), ``n/a`` and
empty values, the raw page's second row of units, display units with SI prefixes (``Kbyte`` is
10^3 bytes, ``us``, ``Tbyte/s``, ``Ghz``), and columns that vary with the ncu version and the
sections collected.  Raw-page values are converted to base units, like ``ncu_report``'s.
"""

from __future__ import annotations

import csv
import glob
import importlib.util
import json
import math
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.errors import InputFileError, ToolNotFound
from nsighttk.profile import Profile, conform, empty_table
from nsighttk.units import parse_number, to_base

DETAILS_COLUMNS = {"ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value"}
RAW_COLUMNS = {"ID", "Kernel Name", "gpu__time_duration.sum"}
_DIM_RE = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")

def _read_csv(path: Path) -> list[list[str]]:
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError as ex:
        raise InputFileError(f"{path}: cannot read ({ex.strerror})") from None
    # ncu may print ==PROF== / ==WARNING== lines before the table when its output was captured.
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"') or ln.startswith("ID,")), None)
    if start is None:
        raise InputFileError(f"{path}: not an Nsight Compute CSV export (no \"ID\" header row)",
                             "export one with: ncu -i FILE.ncu-rep --csv --page details > FILE.csv")
    return list(csv.reader(lines[start:]))


def _dims(text: str, axis: int) -> float:
    m = _DIM_RE.search(text or "")
    return float(m.group(axis + 1)) if m else math.nan


def load_ncu_csv(path: str | Path) -> Profile:
    """Read a ``--page details`` or ``--page raw`` CSV export of ncu.  Rows without a kernel ID
    that is a whole number, rows too short to hold their columns and values that are not finite
    (``inf``) are dropped or left empty, each counted in a note; a header naming a column twice
    uses the first."""
    p = Path(path)
    rows = _read_csv(p)
    header = rows[0]
    cols = set(header)
    if cols >= DETAILS_COLUMNS:
        return _from_details(p, header, rows[1:])
    if cols >= RAW_COLUMNS:
        return _from_raw(p, header, rows[1:])
    raise InputFileError(f"{p}: an ncu CSV, but not from the details or raw page "
                         f"(columns: {', '.join(header[:6])} ...)",
                         "export with: ncu -i FILE.ncu-rep --csv --page details (or --page raw)")


def _launch_metrics(kid: int, name: str, row: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for label, key in (("Block Size", "launch__block_dim"), ("Grid Size", "launch__grid_dim")):
        for axis, suffix in enumerate("xyz"):
            out.append({"kernel_id": kid, "kernel_name": name, "section": "", "metric": f"{key}_{suffix}",
                        "unit": "", "value": _dims(row.get(label, ""), axis), "text": None})
    return out


_NVTX_ENTRY = re.compile(r'"([^"]*)"')


def nvtx_from_csv(row: dict[str, str]) -> str:
    """The NVTX columns ncu adds when a capture used --nvtx (their names vary by version):
    ``'503  "<default domain>:demo:none:..."  "<default domain>:step 0:none:..."'`` -> ``demo/step 0``."""
    parts = []
    for col, value in row.items():
        if "Push/Pop_Range" not in col and "Start/Stop_Range" not in col:
            continue
        names = []
        for entry in _NVTX_ENTRY.findall(value or ""):
            head = entry.rsplit(":", 6)[0] if entry.count(":") >= 7 else entry
            if "Start/Stop_Range" in col and head.count(":") >= 2:
                head = head.split(":", 1)[1]  # leading range id
            domain, _, name = head.partition(":")
            prefix = "" if domain in ("", "<default domain>") else f"{domain}:"
            names.append((prefix, name))
        if names:
            if "Push/Pop_Range" in col:
                parts.append(names[0][0] + "/".join(n for _, n in names))
            else:
                parts += [p + n for p, n in names]
    return "; ".join(parts)


class _Checked:
    """Counts what a damaged CSV holds (rows dropped, values left empty) for the profile's notes."""

    def __init__(self, header: list[str]) -> None:
        self.ix: dict[str, int] = {}
        for i, h in enumerate(header):
            self.ix.setdefault(h, i)  # a column named twice: the first one
        self.twice = sorted({h for h in header if header.count(h) > 1})
        self.bad_id = 0
        self.short = 0
        self.not_finite = 0

    def kernel_id(self, text: str) -> int | None:
        v = parse_number(text)
        if not math.isfinite(v) or v != int(v) or not 0 <= v < 2**53:
            self.bad_id += 1
            return None
        return int(v)

    def number(self, text: str) -> float:
        v = parse_number(text)
        if math.isinf(v):
            self.not_finite += 1
            return math.nan
        return v

    def notes(self) -> list[str]:
        out = []
        if self.twice:
            out.append(f"the CSV header names {', '.join(repr(h) for h in self.twice[:5])} more than once: "
                       "the first column of each name is used")
        if self.bad_id:
            out.append(f"{self.bad_id:,} rows have no kernel ID that is a whole number (dropped)")
        if self.short:
            out.append(f"{self.short:,} rows are too short for the header (dropped)")
        if self.not_finite:
            out.append(f"{self.not_finite:,} values are infinite (left empty)")
        return out


def _from_details(path: Path, header: list[str], body: list[list[str]]) -> Profile:
    metrics: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    seen: set[int] = set()
    check = _Checked(header)
    ix = check.ix
    need = max(ix[c] for c in DETAILS_COLUMNS) + 1
    for r in body:
        if not any(c.strip() for c in r):
            continue
        if len(r) < min(need, 5):
            check.short += 1
            continue
        r = r + [""] * (len(header) - len(r))  # metric rows omit the trailing rule columns
        row = {h: r[i] for h, i in ix.items()}
        kid = check.kernel_id(row["ID"])
        if kid is None:
            continue
        name = row["Kernel Name"]
        if kid not in seen:
            seen.add(kid)
            metrics += _launch_metrics(kid, name, row)
            nvtx = nvtx_from_csv(row)
            if nvtx:
                metrics.append({"kernel_id": kid, "kernel_name": name, "section": "", "metric": "nvtx__range",
                                "unit": "", "value": math.nan, "text": nvtx})
            for extra in ("Device", "CC", "Process Name", "Stream", "Context"):
                if extra in row:
                    metrics.append({"kernel_id": kid, "kernel_name": name, "section": "", "metric": extra,
                                    "unit": "", "value": check.number(row[extra]), "text": row[extra]})
        if row.get("Metric Name"):
            v = check.number(row["Metric Value"])
            metrics.append({"kernel_id": kid, "kernel_name": name, "section": row["Section Name"],
                            "metric": row["Metric Name"], "unit": row["Metric Unit"], "value": v,
                            "text": row["Metric Value"] if math.isnan(v) and row["Metric Value"] else None})
        if row.get("Rule Name"):
            rules.append({"kernel_id": kid, "kernel_name": name, "section": row["Section Name"],
                          "rule": row["Rule Name"], "type": row.get("Rule Type", ""),
                          "description": row.get("Rule Description", ""),
                          "speedup_type": row.get("Estimated Speedup Type", "") or None,
                          "speedup_pct": check.number(row.get("Estimated Speedup", ""))})
    if not seen:
        raise InputFileError(f"{path}: the ncu CSV has no kernels" + _why(check),
                             "was anything profiled? check ncu's log")
    return Profile(metrics=conform("metrics", pd.DataFrame(metrics)),
                   rules=conform("rules", pd.DataFrame(rules)) if rules else empty_table("rules"),
                   meta={"tool": "ncu", "source": str(path), "format": "ncu csv (details page)",
                         "notes": check.notes()})


def _why(check: _Checked) -> str:
    notes = check.notes()
    return f" that can be read ({'; '.join(notes)})" if notes else ""


def _from_raw(path: Path, header: list[str], body: list[list[str]]) -> Profile:
    has_units = bool(body) and (not body[0] or not body[0][0].strip())
    units = body[0] + [""] * (len(header) - len(body[0])) if has_units else [""] * len(header)
    data = body[1:] if has_units else body
    metrics: list[dict[str, Any]] = []
    check = _Checked(header)
    ix = check.ix
    columns = [(i, h) for i, h in enumerate(header) if "__" in h and ix[h] == i]
    for r in data:
        if not any(c.strip() for c in r):
            continue
        if len(r) < len(header):
            check.short += 1
            continue
        kid = check.kernel_id(r[ix["ID"]])
        if kid is None:
            continue
        name = r[ix["Kernel Name"]]
        if "launch__block_dim_x" not in ix:
            metrics += _launch_metrics(kid, name, {h: r[i] for h, i in ix.items()})
        for i, h in columns:
            metric = h.split(".", 2)[-1] if h.count(".") >= 2 and "__" not in h.split(".")[0] else h
            v = check.number(r[i])
            base, unit = to_base(v, units[i])
            if math.isinf(base):  # a finite value in a unit that overflows
                check.not_finite += 1
                base = math.nan
            metrics.append({"kernel_id": kid, "kernel_name": name, "section": "", "metric": metric, "unit": unit,
                            "value": base, "text": r[i] if math.isnan(v) and r[i] else None})
    if not metrics:
        raise InputFileError(f"{path}: the ncu CSV has no kernels" + _why(check),
                             "was anything profiled? check ncu's log")
    return Profile(metrics=conform("metrics", pd.DataFrame(metrics)),
                   meta={"tool": "ncu", "source": str(path), "format": "ncu csv (raw page)", "notes": check.notes()})


def ncu_report_location() -> str | None:
    """Where ``ncu_report`` can be imported from: "" (this environment), an ncu install's
    extras/python directory, or None when it is not available."""
    if importlib.util.find_spec("ncu_report") is not None:
        return ""
    from nsighttk.toolchain import NVIDIA_OPT, find_tool

    dirs = sorted(glob.glob(f"{NVIDIA_OPT}/nsight-compute/*/extras/python"), reverse=True)
    ncu = find_tool("ncu")
    if ncu.path:
        dirs.insert(0, os.path.join(os.path.dirname(os.path.realpath(ncu.path)), "extras", "python"))
    for d in dirs:
        if os.path.isfile(os.path.join(d, "ncu_report.py")):
            return d
    return None


# ncu_report's integer enums, as the CSV export spells them (checked against the same report).
_MSG_TYPES = {0: "", 1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
_SPEEDUP_TYPES = {1: "local", 2: "global"}
_URL_RE = re.compile(r"@url:([^:@]+):[^@]+@")


def _plain(text: str) -> str:
    """Rule messages carry markup (``@url:Title:https://...@``); keep the title like ncu's CSV."""
    return _URL_RE.sub(r"\1", text or "")


#: the first bytes of every .ncu-rep (Nsight Compute 2019.5 to 2025.3)
NCU_REP_MAGIC = b"NVR\x00"
#: longest a report may take to read in the worker (a hostile file must not hang the command)
_WORKER_TIMEOUT_S = 600
_DAMAGED_HINT = "re-run ncu to recreate it, or export a CSV with ncu -i FILE --csv --page details"


def load_ncu_rep(path: str | Path) -> Profile:
    """Read a ``.ncu-rep`` with ncu_report (works without a GPU), in a separate process.  A file
    that is empty, does not start as a report, or whose kernels have no readable metric (truncated,
    damaged) is one :class:`InputFileError` saying so."""
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"{p}: no such file", "check the path")
    with p.open("rb") as fh:
        head = fh.read(16)
    if head.startswith(b"SQLite format 3"):
        raise InputFileError(f"{p}: an SQLite file named .ncu-rep", "is it an nsys export? try nsighttk stats")
    if not head:
        raise InputFileError(f"{p}: is empty (damaged or truncated: ncu writes its report at the end)", _DAMAGED_HINT)
    if not head.startswith(NCU_REP_MAGIC):
        raise InputFileError(f"{p}: not an Nsight Compute report (damaged, or another kind of file: it does "
                             "not start as one)", _DAMAGED_HINT)
    where = ncu_report_location()
    if where is None:
        raise ToolNotFound("reading .ncu-rep files needs NVIDIA's ncu_report module, which is not installed",
                           "pip install 'nsighttk[ncu]' (the ncu-report wheel), or export a CSV with "
                           "ncu -i FILE.ncu-rep --csv --page details")
    try:
        proc = subprocess.run([sys.executable, "-m", "nsighttk.load._ncu_rep_worker", str(p), where],
                              capture_output=True, text=True, errors="replace", check=False,
                              timeout=_WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise InputFileError(f"{p}: ncu_report did not finish reading it in {_WORKER_TIMEOUT_S} s (damaged?)",
                             _DAMAGED_HINT) from None
    if proc.returncode < 0:  # ncu_report itself crashed (seen: SIGSEGV on an H100 host whose report ncu reads)
        sig = signal.Signals(-proc.returncode).name if -proc.returncode in signal.valid_signals() else "a signal"
        raise InputFileError(f"{p}: NVIDIA's ncu_report module (from {where or 'this environment'}) crashed "
                             f"reading it ({sig}); the report itself may be sound",
                             "export a CSV with ncu -i FILE --csv --page details, or use the ncu_report of the "
                             "ncu that wrote it")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise InputFileError(f"{p}: not a readable Nsight Compute report, damaged or truncated ({last[:300]})",
                             _DAMAGED_HINT)
    metrics, rules, actions = _worker_records(proc.stdout)
    if not metrics:
        if actions:
            raise InputFileError(f"{p}: the report is damaged or truncated: it lists {actions:,} profiled "
                                 "kernel(s) but none of their metrics can be read", _DAMAGED_HINT)
        raise InputFileError(f"{p}: no profiled kernel in this report (damaged or truncated, or ncu's "
                             "-k/--nvtx-include filter matched nothing)", _DAMAGED_HINT)
    return Profile(metrics=conform("metrics", pd.DataFrame(metrics)),
                   rules=conform("rules", pd.DataFrame(rules)) if rules else empty_table("rules"),
                   meta={"tool": "ncu", "source": str(p), "format": "ncu-rep", "notes": []})


def _int(v: Any, default: int = 0) -> int:
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return default


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _scrub(v: Any) -> Any:
    """``v`` with every string valid UTF-8: a damaged report's names reach the worker's JSON as
    lone surrogates (``\\udcda``), which no table or output can hold; the bytes they stand for are
    decoded with replacement."""
    if isinstance(v, str):
        if v.isascii():
            return v
        try:
            return v.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:  # a surrogate that stands for no byte
            return v.encode("utf-8", "replace").decode("utf-8")
    if isinstance(v, dict):
        return {_scrub(k): _scrub(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_scrub(x) for x in v]
    return v


def _worker_records(stdout: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """The worker's JSON lines -> (metric rows, rule rows, number of kernels the report lists)."""
    metrics: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    actions = 0
    for line in stdout.splitlines():
        rec = _scrub(json.loads(line))
        if "actions" in rec:
            actions = _int(rec["actions"])
        elif "rule" in rec:
            r = _dict(rec["rule"])
            msg, speed = _dict(r.get("rule_message")), _dict(r.get("speedup_estimation"))
            try:
                pct = float(speed["speedup"]) if "speedup" in speed else np.nan
            except (TypeError, ValueError):
                pct = np.nan
            rules.append({"kernel_id": rec["k"], "kernel_name": rec["n"], "section": r.get("section_identifier", ""),
                          "rule": r.get("rule_identifier", ""), "type": _MSG_TYPES.get(_int(msg.get("type")), ""),
                          "description": _plain(str(msg.get("message", ""))),
                          "speedup_type": _SPEEDUP_TYPES.get(_int(speed.get("type"))),
                          "speedup_pct": pct if math.isfinite(pct) else np.nan})
        else:
            v = math.nan if rec["v"] is None else float(rec["v"])
            metrics.append({"kernel_id": rec["k"], "kernel_name": rec["n"], "section": "", "metric": rec["m"],
                            "unit": rec["u"], "value": v if math.isfinite(v) else math.nan, "text": rec["t"]})
    return metrics, rules, actions
