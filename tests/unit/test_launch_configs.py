"""launch_configs: each kernel name's most frequent launch configuration (ties: the one launched
first), against a plain Python count; names looked up by id as by text."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from nsighttk.analysis.nsys.gpu import LAUNCH_CONFIG, launch_configs
from nsighttk.profile import Profile, conform


def _kernels(rng: np.random.Generator, n: int, wide: bool) -> pd.DataFrame:
    names = np.array(["k_a", "k_b", "k_c", "k_d"], dtype=object)
    which = rng.integers(0, len(names), n)
    cols = {c: rng.integers(0, 3, n) * (rng.integers(1, 2**30) if wide else 32) for c in LAUNCH_CONFIG}
    df = pd.DataFrame({"start_ns": np.arange(n, dtype="int64") * 10, "end_ns": np.arange(n, dtype="int64") * 10 + 5,
                       "duration_ns": np.full(n, 5, dtype="int64"), "name": names[which],
                       "name_id": which.astype("int64") + 100,
                       **{c: pd.array(v, dtype="Int32") for c, v in cols.items()}})
    df.loc[rng.random(n) < 0.05, "block_y"] = pd.NA  # unknown values: left out
    return conform("kernels", df)


def _expected(df: pd.DataFrame) -> pd.DataFrame:
    rows = df.dropna(subset=LAUNCH_CONFIG).reset_index(drop=True)
    seen: dict[tuple, int] = {}
    count: Counter = Counter()
    for i, r in enumerate(rows.itertuples(index=False)):
        key = (r.name, *(int(getattr(r, c)) for c in LAUNCH_CONFIG))
        seen.setdefault(key, i)
        count[key] += 1
    best: dict[str, tuple] = {}
    for key in seen:
        cur = best.get(key[0])
        if cur is None or (count[key], -seen[key]) > (count[cur], -seen[cur]):
            best[key[0]] = key
    chosen = sorted(best.values(), key=lambda k: (-count[k], seen[k]))
    return pd.DataFrame([{"name": k[0], **dict(zip(LAUNCH_CONFIG, k[1:], strict=True))} for k in chosen])


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_most_frequent_configuration_per_name(seed: int, wide: bool) -> None:
    """Few values (32, 64) or values up to 2^31, some unknown."""
    df = _kernels(np.random.default_rng(seed), 400, wide)
    got = launch_configs(Profile(kernels=df))
    exp = _expected(df)
    assert got["name"].tolist() == exp["name"].tolist()
    for c in LAUNCH_CONFIG:
        assert got[c].astype("int64").tolist() == exp[c].tolist(), c


@pytest.mark.parametrize("name", ["gpt2_train", "streams_demo", "ddp_rank0"])
def test_names_by_id_equal_names_by_text(name: str) -> None:
    """An export's kernels named through their string ids, and the same kernels given whole with
    their names: the same table."""
    from conftest import capture, fixture

    from nsighttk.load.nsys_sqlite import load_nsys_sqlite

    path = fixture("h200x2-ddp", "rank0.sqlite") if name == "ddp_rank0" else capture(name)
    lazy = load_nsys_sqlite(path)
    want = launch_configs(Profile(kernels=load_nsys_sqlite(path).kernels))
    got = launch_configs(lazy)
    assert len(want) > 3
    pd.testing.assert_frame_equal(got, want)
    assert got["name"].tolist() == _expected(lazy.kernels)["name"].tolist()
