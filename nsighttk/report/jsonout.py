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
        return None if math.isnan(float(v)) else float(v)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


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
    }


def dumps(data: Any) -> str:
    return json.dumps(data, indent=1, default=str) + "\n"
