"""`analyze` on an nsys export reads columns, not whole tables: the steady state of an
export is a lazy subset of it, equal to cutting the loaded tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import capture

from nsighttk.analysis.iterations.find import iterations, steady_profile
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import TABLES, Coded, Profile


def eager_copy(p: Profile) -> Profile:
    return Profile(**{t: p.table(t) for t in TABLES if t not in ("metrics", "rules")}, meta=dict(p.meta))


def test_steady_state_of_an_export_is_a_lazy_subset_equal_to_the_cut_tables() -> None:
    lazy = load_nsys_sqlite(capture("streams_demo"))
    eager = eager_copy(load_nsys_sqlite(capture("streams_demo")))
    it_lazy, it_eager = iterations(lazy), iterations(eager)
    assert it_lazy is not None and it_eager is not None and it_lazy.steady
    assert it_lazy.table.equals(it_eager.table) and it_lazy.top_kernels.equals(it_eager.top_kernels)
    s_lazy, s_eager = steady_profile(lazy, it_lazy), steady_profile(eager, it_eager)
    assert s_lazy.source is not None and s_eager.source is None
    assert not s_lazy.loaded("kernels")
    for t in ("kernels", "memcpy", "memset", "api", "nvtx"):
        cols = ["start_ns", "duration_ns"]
        a, b = s_lazy.arrays(t, cols), s_eager.arrays(t, cols)
        assert all(np.array_equal(a[c], b[c]) for c in cols), t
        assert s_lazy.count(t) == len(a["start_ns"]) < lazy.count(t) or t == "memset"
    # the whole-table view of the subset matches too, names included
    assert s_lazy.kernels["name"].tolist() == s_eager.kernels["name"].tolist()
    assert not lazy.loaded("kernels")  # nothing read the parent's kernel table whole


def test_iterations_on_coded_nvtx_columns_equal_those_of_the_loaded_tables(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns long enough for the export's reader to hand the NVTX ranges' names, domains and threads
    as codes (20 replays of a capture, with a sample of 4 rows instead of 4,096): the iterations
    found from those codes, and their table, are those of the same tables loaded whole."""
    from synth import replay_export

    from nsighttk import encoding

    monkeypatch.setattr(encoding, "_SAMPLE", 4)
    path = replay_export(capture("streams_demo"), tmp_path / "replayed.sqlite", 20)
    lazy = load_nsys_sqlite(path)
    got = lazy.source.arrays("nvtx", ["start_ns", "name", "domain", "global_tid", "tid", "pid"])  # type: ignore[union-attr]
    assert all(isinstance(got[c], Coded) for c in ("name", "global_tid", "tid"))
    it_lazy, it_eager = iterations(lazy), iterations(eager_copy(load_nsys_sqlite(path)))
    assert it_lazy is not None and it_eager is not None and it_lazy.steady
    assert it_lazy.table.equals(it_eager.table) and it_lazy.top_kernels.equals(it_eager.top_kernels)
    assert (it_lazy.source, it_lazy.pattern, it_lazy.pid) == (it_eager.source, it_eager.pattern, it_eager.pid)
    assert it_lazy.gaps.equals(it_eager.gaps) and it_lazy.steady == it_eager.steady


@pytest.mark.parametrize("name", ["h200-nsys2025.3/gpt2_train.sqlite", "h200-unannotated/eager.sqlite"])
def test_analyze_is_the_same_whatever_columns_the_engine_already_holds(name: str) -> None:
    """A look from the cache finds every column an earlier look loaded in the engine's views; no
    query may bind to one of them by chance (an alias named as a column, a ``*``)."""
    from conftest import fixture

    from nsighttk import engine
    from nsighttk.commands.analyze import analyze_profile
    from nsighttk.profile import SCHEMAS
    from nsighttk.report import jsonout

    def summary(full: bool) -> str:
        p = load_nsys_sqlite(fixture(*name.split("/")))
        if full:  # (every column but the texts a string id stands for)
            engine.of(p).need({t: [c for c in SCHEMAS[t] if not (c == "name" and t in ("kernels", "api"))]
                               for t in ("kernels", "memcpy", "memset", "api", "nvtx")})
        return jsonout.dumps(jsonout.overview_dict(analyze_profile(p, with_timeline=False).overview))

    assert summary(True) == summary(False)
