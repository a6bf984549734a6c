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
    """Read a ``--page details`` or ``--page raw`` CSV export of ncu."""
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


def _from_details(path: Path, header: list[str], body: list[list[str]]) -> Profile:
    metrics: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    seen: set[int] = set()
    ix = {h: i for i, h in enumerate(header)}
    for r in body:
        if len(r) < 5:
            continue
        r = r + [""] * (len(header) - len(r))  # metric rows omit the trailing rule columns
        row = {h: r[i] for h, i in ix.items()}
        kid = int(parse_number(row["ID"]))
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
                                    "unit": "", "value": parse_number(row[extra]), "text": row[extra]})
        if row.get("Metric Name"):
            v = parse_number(row["Metric Value"])
            metrics.append({"kernel_id": kid, "kernel_name": name, "section": row["Section Name"],
                            "metric": row["Metric Name"], "unit": row["Metric Unit"], "value": v,
                            "text": row["Metric Value"] if math.isnan(v) and row["Metric Value"] else None})
        if row.get("Rule Name"):
            rules.append({"kernel_id": kid, "kernel_name": name, "section": row["Section Name"],
                          "rule": row["Rule Name"], "type": row.get("Rule Type", ""),
                          "description": row.get("Rule Description", ""),
                          "speedup_type": row.get("Estimated Speedup Type", "") or None,
                          "speedup_pct": parse_number(row.get("Estimated Speedup", ""))})
    if not seen:
        raise InputFileError(f"{path}: the ncu CSV has no kernels", "was anything profiled? check ncu's log")
    return Profile(metrics=conform("metrics", pd.DataFrame(metrics)),
                   rules=conform("rules", pd.DataFrame(rules)) if rules else empty_table("rules"),
                   meta={"tool": "ncu", "source": str(path), "format": "ncu csv (details page)", "notes": []})


def _from_raw(path: Path, header: list[str], body: list[list[str]]) -> Profile:
    units = body[0] if body and not body[0][0].strip() else [""] * len(header)
    data = body[1:] if body and not body[0][0].strip() else body
    metrics: list[dict[str, Any]] = []
    ix = {h: i for i, h in enumerate(header)}
    for r in data:
        if len(r) < len(header):
            continue
        kid = int(parse_number(r[ix["ID"]]))
        name = r[ix["Kernel Name"]]
        if "launch__block_dim_x" not in ix:
            metrics += _launch_metrics(kid, name, {h: r[i] for h, i in ix.items()})
        for i, h in enumerate(header):
            if "__" not in h:
                continue
            metric = h.split(".", 2)[-1] if h.count(".") >= 2 and "__" not in h.split(".")[0] else h
            v = parse_number(r[i])
            base, unit = to_base(v, units[i])
            metrics.append({"kernel_id": kid, "kernel_name": name, "section": "", "metric": metric, "unit": unit,
                            "value": base, "text": r[i] if math.isnan(v) and r[i] else None})
    if not metrics:
        raise InputFileError(f"{path}: the ncu CSV has no kernels", "was anything profiled? check ncu's log")
    return Profile(metrics=conform("metrics", pd.DataFrame(metrics)),
                   meta={"tool": "ncu", "source": str(path), "format": "ncu csv (raw page)", "notes": []})


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


def load_ncu_rep(path: str | Path) -> Profile:
    """Read a ``.ncu-rep`` with ncu_report (works without a GPU), in a separate process."""
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"{p}: no such file", "check the path")
    with p.open("rb") as fh:
        head = fh.read(16)
    if head.startswith(b"SQLite format 3"):
        raise InputFileError(f"{p}: an SQLite file named .ncu-rep", "is it an nsys export? try nsighttk stats")
    where = ncu_report_location()
    if where is None:
        raise ToolNotFound("reading .ncu-rep files needs NVIDIA's ncu_report module, which is not installed",
                           "pip install 'nsighttk[ncu]' (the ncu-report wheel), or export a CSV with "
                           "ncu -i FILE.ncu-rep --csv --page details")
    proc = subprocess.run([sys.executable, "-m", "nsighttk.load._ncu_rep_worker", str(p), where],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise InputFileError(f"{p}: not a readable Nsight Compute report ({last})",
                             "re-run ncu to recreate it, or export a CSV with ncu -i FILE --csv --page details")
    metrics: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    for line in proc.stdout.splitlines():
        rec = json.loads(line)
        if "rule" in rec:
            r = rec["rule"]
            msg = r.get("rule_message") or {}
            speed = r.get("speedup_estimation") or {}
            rules.append({"kernel_id": rec["k"], "kernel_name": rec["n"], "section": r.get("section_identifier", ""),
                          "rule": r.get("rule_identifier", ""), "type": _MSG_TYPES.get(int(msg.get("type", 0)), ""),
                          "description": _plain(msg.get("message", "")),
                          "speedup_type": _SPEEDUP_TYPES.get(int(speed.get("type", 0))),
                          "speedup_pct": float(speed["speedup"]) if "speedup" in speed else np.nan})
        else:
            metrics.append({"kernel_id": rec["k"], "kernel_name": rec["n"], "section": "", "metric": rec["m"],
                            "unit": rec["u"], "value": math.nan if rec["v"] is None else float(rec["v"]),
                            "text": rec["t"]})
    if not metrics:
        raise InputFileError(f"{p}: the report has no profiled kernels", "did the -k/--nvtx-include filter match?")
    return Profile(metrics=conform("metrics", pd.DataFrame(metrics)),
                   rules=conform("rules", pd.DataFrame(rules)) if rules else empty_table("rules"),
                   meta={"tool": "ncu", "source": str(p), "format": "ncu-rep", "notes": []})
