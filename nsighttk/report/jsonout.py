"""JSON rendering: DataFrames as records in raw units (ns, bytes), nulls as null."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from nsighttk.analysis.overview import Overview


def _clean(v: Any) -> Any:
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
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
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
    return {
        "meta": {k: _clean(v) if not isinstance(v, (list, dict)) else v for k, v in ov.meta.items()},
        "headline": {k: _clean(v) for k, v in ov.headline.items()},
        "notes": ov.notes,
        "findings": [f.as_dict() for f in ov.findings],
        "tables": {name: frame_records(df) for name, df in ov.tables.items()},
        **iterations_dict(ov.iterations),
        "collectives": ov.collectives.as_dict() if ov.collectives is not None else None,
    }


def iterations_dict(it: Any) -> dict[str, Any]:
    """``iterations`` (one object per iteration: name, start_ns, duration_ns, gpu_busy_ns, warmup,
    ..., top_kernels, gaps), ``iterations_source`` and ``steady_state`` (the summary; null when
    the capture has no iterations)."""
    if it is None:
        return {"iterations": [], "iterations_source": None, "steady_state": None}
    return {"iterations": _deep(it.records()), "iterations_source": it.source, "steady_state": _deep(it.steady) or None}


def _deep(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _deep(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_deep(x) for x in v]
    return _clean(v)


def dumps(data: Any) -> str:
    """Valid JSON always: no NaN/Infinity literals, numpy scalars as numbers (:func:`clean`)."""
    return json.dumps(clean(data), indent=1) + "\n"
