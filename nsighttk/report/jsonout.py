"""JSON rendering: DataFrames as records in raw units (ns, bytes), nulls as null."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis.overview import Overview

#: Types a value of which is JSON as it is (checked first: nearly every value is one)
_PLAIN = frozenset({str, int, bool, type(None)})


def _clean(v: Any) -> Any:
    t = type(v)
    if t in _PLAIN:
        return v
    if t is float:
        return v if math.isfinite(v) else None
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if not math.isfinite(float(v)) else float(v)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


def clean(v: Any) -> Any:
    """Any result as JSON-ready data: numpy scalars as numbers, NaN/inf/NA as null, frames as
    records, paths and other objects as text; dicts and lists recursively."""
    t = type(v)
    if t in _PLAIN:
        return v
    if t is float:
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k if type(k) is str else str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if isinstance(v, pd.DataFrame):
        return frame_records(v)
    v = _clean(v)
    return v if v is None or isinstance(v, (str, int, float, bool)) else str(v)


def frame_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    cols = list(df.columns)
    return [{c: _clean(v) for c, v in zip(cols, row, strict=True)} for row in df.itertuples(index=False, name=None)]


def overview_dict(ov: Overview) -> dict[str, Any]:
    """The overview as JSON; the loader's notes (``meta["notes"]``) are in ``notes`` with the
    analyses', each once."""
    return {
        "meta": {k: _clean(v) if not isinstance(v, (list, dict)) else v for k, v in ov.meta.items()
                 if k != "notes"},
        "headline": {k: _clean(v) for k, v in ov.headline.items()},
        "notes": ov.notes,
        "findings": [f.as_dict() for f in ov.findings],
        "tables": {name: frame_records(df) for name, df in ov.tables.items()},
        **iterations_dict(ov.iterations),
        "collectives": ov.collectives.as_dict() if ov.collectives is not None else None,
        "phases": _deep(ov.phases) or None,
    }


def iterations_dict(it: Any) -> dict[str, Any]:
    """``iterations`` (one object per iteration: name, start_ns, duration_ns, gpu_busy_ns, warmup,
    ..., top_kernels, gaps), ``iterations_source``, ``iterations_signal`` (what they were found
    from), ``iterations_confidence`` (period_cv, covered_pct) and ``steady_state`` (the summary;
    null when the capture has no iterations)."""
    if it is None:
        return {"iterations": [], "iterations_source": None, "iterations_signal": None, "iterations_confidence": None,
                "steady_state": None}
    return {"iterations": _deep(it.records()), "iterations_source": it.source, "iterations_signal": it.signal,
            "iterations_confidence": _deep(it.confidence) or None, "steady_state": _deep(it.steady) or None}


def _deep(v: Any) -> Any:
    if type(v) in _PLAIN:
        return v
    if isinstance(v, dict):
        return {k: _deep(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_deep(x) for x in v]
    return _clean(v)


def dumps(data: Any) -> str:
    """Valid JSON always: no NaN/Infinity literals, numpy scalars as numbers (:func:`clean`).

    The text of ``json.dumps(..., indent=1)``, byte for byte (Python's numbers, ASCII escapes),
    made by the C encoder on one line and laid out by msgspec: ``json`` encodes with an indent in
    Python, 3.5x slower (a 10M-kernel ``analyze``: 5 MB of JSON, 0.37 -> 0.11 s)."""
    import msgspec

    cleaned = clean(data)
    try:
        return msgspec.json.format(json.dumps(cleaned, separators=(",", ":")).encode(), indent=1).decode() + "\n"
    except msgspec.DecodeError:  # (a lone surrogate's escape, say a path the locale cannot decode: json's own)
        return json.dumps(cleaned, indent=1) + "\n"
