"""nsighttk's expert rules == `nsys analyze`, byte for byte.

* nsys 2025.3.1 (the GPU machine's): its CSV, JSON and console output on six real H200/H100 captures
  (`tests/fixtures/h200-nsys2025.3/rules/`, sync_pitfalls triggers every rule) and runs with options;
  the larger GPT-2 and DDP captures in /work/helpers/gpu-data when that folder is there.
* nsys 2022.4 (Debian's, runs here): the same rules under their 2022 names with ``style="2022.4"``,
  on the real captures and on synthetic exports grown from sync_pitfalls (two processes, two
  devices, ties, every copy and memory kind, overheads, NVTX ranges) with options, time windows
  and NVTX ranges, in all four formats.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import NSYS_FIXTURES, assert_exit, capture, fixture, reference_nsys_or_skip
from rules_synth import SYNTH_SPECS, make_rules_export

from nsighttk.analysis.nsys import rules as E
from nsighttk.errors import ExportSchemaError, InputFileError, OutputFileError, UsageError
from nsighttk.load.kineto import load_kineto
from nsighttk.load.nsys_sqlite import load_nsys_sqlite
from nsighttk.profile import Profile
from nsighttk.report import rules_format as F

RULES_DIR = NSYS_FIXTURES / "rules"
RULE_NAMES = [s.name for s in E.RULES]
LEGACY_NAMES = [s.legacy_name for s in E.RULES]


def _exports() -> dict[str, Path]:
    return {"sync_pitfalls": fixture("h200-nsys2025.3", "rules", "sync_pitfalls.sqlite"),
            "fixture_add": capture("add"), "fixture_add_grid_stride": capture("add_grid_stride"),
            "fixture_streams_demo": capture("streams_demo"),
            "fixture_rank0": fixture("h100-ranks", "rank0.sqlite"),
            "fixture_rank1": fixture("h100-ranks", "rank1.sqlite"),
            # training loops (tests/gpu/rules_training.sh made nsys 2025.3.1's references)
            "fixture_gpt2_train": capture("gpt2_train"),
            "fixture_ddp_rank0": fixture("h200x2-ddp", "rank0.sqlite"),
            "fixture_ddp_rank1": fixture("h200x2-ddp", "rank1.sqlite")}


@functools.lru_cache(maxsize=16)
def _loaded(path: Path) -> tuple[Profile, E.ExportFacts]:
    return load_nsys_sqlite(path), E.read_export_facts(path)


def _run(path: Path, spec: str | None = None, style: str = E.STYLE_2025, dbfile: str = "") -> list[E.RuleResult]:
    p, facts = _loaded(path)
    return E.run_rules(p, spec, facts, style=style, dbfile=dbfile or str(path))


def _sections(console: str) -> list[str]:
    """What nsys prints for each rule after its ``Processing [...]... `` line."""
    return re.split(r"Processing \[[^\n]*\.\.\. \n", console)[1:]


def _compare(results: list[E.RuleResult], reference: dict[str, str]) -> list[str]:
    """Names of the (rule, format) pairs whose bytes differ from ``reference[(tag, fmt)]``."""
    return [f"{r.file_tag}.{fmt}" for r in results for fmt in ("csv", "json", "column", "table")
            if (r.file_tag, fmt) in reference and F.render(r, fmt) != reference[(r.file_tag, fmt)]]


def _nsys2025_reference(folder: Path, name: str) -> dict[tuple[str, str], str]:
    """nsys' csv and json files, and its console output (``rules_table.txt``: the default column
    format, or the boxed table format for the references made by tests/gpu/rules_training.sh)."""
    ref = {}
    console = (folder / f"{name}.rules_table.txt").read_text()
    boxed = "table" if re.search(r"^\+-+\+", console, re.M) else "column"
    for rule, section in zip(RULE_NAMES, _sections(console), strict=True):
        ref[(rule, "csv")] = (folder / f"{name}.rules_{rule}.csv").read_text()
        ref[(rule, "json")] = (folder / f"{name}.rulesjson_{rule}.json").read_text()
        ref[(rule, boxed)] = section
    return ref


# ------------------------------------------------------------------------------ nsys 2025.3.1

@pytest.mark.parametrize("name", list(_exports()))
def test_equals_nsys_2025_on_real_captures(name: str) -> None:
    results = _run(_exports()[name], dbfile=f"/tmp/cap/small/{name}.sqlite")
    assert [r.name for r in results] == RULE_NAMES
    assert _compare(results, _nsys2025_reference(RULES_DIR, name)) == []


def _option_runs(folder: Path) -> list[tuple[Path, str, str]]:
    """(reference CSV, rule spec, file tag) of nsys' runs with options: ``X.opt_<tag>_<rule>_<a=1>_<b=2>.csv``."""
    out = []
    for f in sorted(folder.glob("*.opt_*.csv")):
        stem = f.name[:-4]
        rule = max(RULE_NAMES, key=lambda n: stem.rfind(n + "_"))
        tag = stem[stem.rfind(rule + "_"):]
        out.append((f, ":".join([rule, *tag[len(rule) + 1:].split("_")]), tag))
    return out


def test_options_equal_nsys_2025() -> None:
    runs = _option_runs(RULES_DIR)
    assert len(runs) == 5
    for ref, spec, tag in runs:
        [r] = _run(_exports()["sync_pitfalls"], spec)
        assert r.file_tag == tag
        assert F.output_path("x", r.file_tag, "csv").name == f"x_{tag}.csv"
        assert F.render(r, "csv") == ref.read_text(), spec


SYNTH_2025 = RULES_DIR / "synthetic"  # made by tests/gpu/rules_reference.sh


@pytest.mark.skipif(not SYNTH_2025.is_dir(), reason="nsys 2025.3's outputs on the synthetic exports are not committed"
                    " yet: run tests/gpu/rules_reference.sh where nsys 2025.3 is")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_nsys_2025_on_synthetic_exports(seed: int, tmp_path: Path) -> None:
    export = make_rules_export(_exports()["sync_pitfalls"], tmp_path / f"synth{seed}.sqlite", seed)
    results = _run(export, ",".join(SYNTH_SPECS))
    reference: dict[tuple[str, str], str] = {}
    for fmt in ("csv", "json"):
        for r in results:
            path = SYNTH_2025 / f"synth{seed}.{fmt}_{r.file_tag}.{fmt}"
            reference[(r.file_tag, fmt)] = path.read_text() if path.exists() else "<no file>"
    for fmt in ("column", "table"):  # skip messages name the export where nsys read it: here, ours
        text = re.sub(r"/tmp/tmp\.\w+/", f"{tmp_path}/", (SYNTH_2025 / f"synth{seed}.{fmt}.txt").read_text())
        sections = _sections(text)
        reference.update({(r.file_tag, fmt): sec for r, sec in zip(results, sections, strict=True)})
    assert _compare(results, reference) == []


def test_console_layout_details() -> None:
    """Digits grouped in 2025's layout (not 2022's), cut by rows with nsys' note, empty box in table form."""
    export = _exports()["sync_pitfalls"]
    [api] = _run(export, "cuda_api_sync:rows=3")
    text = F.render(api, "column")
    assert "    31,148    614,728,725  751  751  cudaDeviceSynchronize_v3020\n" in text
    assert text.endswith("\n\nOnly the top 3 results are displayed. More data may be available.\n\n\n")
    [one] = _run(export, "cuda_api_sync:rows=1")
    assert "Only the top result is displayed." in F.render(one, "column")
    [old] = _run(export, "cuda-sync-api:rows=3", style=E.STYLE_2022)
    assert "         31148   614728725  751  751  cudaDeviceSynchronize_v3020\n" in F.render(old, "column")
    [none] = _run(capture("add"), "cuda_memcpy_async")
    assert F.render(none, "table").startswith("+--+\n\n ** CUDA Async Memcpy with Pageable Memory")
    assert F.render(none, "csv") == "" and F.render(none, "json") == "[\n]\n"


def _named_by_rule(console: str) -> str:
    """nsys' console output with its rule scripts named by their rule, as nsighttk prints it."""
    return re.sub(r"with \[[^\n\]]*/rules/([\w-]+)\.py\]", r"with [\1]", console)


def test_whole_console_output_equals_nsys_2025() -> None:
    results = _run(_exports()["sync_pitfalls"], dbfile="/tmp/cap/small/sync_pitfalls.sqlite")
    expected = _named_by_rule((RULES_DIR / "sync_pitfalls.rules_table.txt").read_text())
    assert F.render_console(results, "column", "/tmp/cap/small/sync_pitfalls.sqlite") == expected


# ------------------------------------------------------------------------------ nsys 2022.4

@pytest.fixture(scope="module")
def nsys22() -> str:
    return reference_nsys_or_skip()


def _nsys2022_reference(exe: str, export: Path, specs: list[str], out: Path) -> dict[tuple[str, str], str]:
    """nsys 2022.4 analyze's files (csv, json) and console sections (column, table) for ``specs``."""
    ref: dict[tuple[str, str], str] = {}
    rules = ",".join(specs)
    for fmt in ("csv", "json"):
        subprocess.run([exe, "analyze", "-r", rules, "-f", fmt, "-o", str(out / fmt), "--force-overwrite", "true",
                        str(export)], check=True, capture_output=True)
        for spec in specs:
            tag = spec.replace(":", "_")
            path = out / f"{fmt}_{tag}.{fmt}"
            ref[(tag, fmt)] = path.read_text() if path.exists() else "<no file>"
    for fmt in ("column", "table"):
        console = subprocess.run([exe, "analyze", "-r", rules, "-f", fmt, str(export)], check=True,
                                 capture_output=True, text=True).stdout
        for spec, section in zip(specs, _sections(console), strict=True):
            ref[(spec.replace(":", "_"), fmt)] = section
    return ref


@pytest.mark.nsys2022
@pytest.mark.parametrize("name", list(_exports()))
def test_equals_nsys_2022_on_real_captures(nsys22: str, name: str, tmp_path: Path) -> None:
    export = shutil.copy(_exports()[name], tmp_path / f"{name}.sqlite")
    reference = _nsys2022_reference(nsys22, Path(export), LEGACY_NAMES, tmp_path)
    results = _run(Path(export), ",".join(LEGACY_NAMES), style=E.STYLE_2022)
    assert _compare(results, reference) == []


@pytest.mark.nsys2022
@pytest.mark.parametrize("fmt", ["csv", "json", "column", "table"])
def test_whole_console_output_equals_nsys_2022(nsys22: str, fmt: str, tmp_path: Path) -> None:
    export = Path(shutil.copy(capture("add"), tmp_path / "add.sqlite"))
    specs = [*LEGACY_NAMES, "cuda-sync-api:rows=1"]
    console = subprocess.run([nsys22, "analyze", "-r", ",".join(specs), "-f", fmt, str(export)], check=True,
                             capture_output=True, text=True).stdout
    results = _run(export, ",".join(specs), style=E.STYLE_2022)
    assert F.render_console(results, fmt, str(export)) == _named_by_rule(console)


_LEGACY = dict(zip(RULE_NAMES, LEGACY_NAMES, strict=True))
SYNTH_SPECS_2022 = [_LEGACY[spec.split(":")[0]] + spec[len(spec.split(":")[0]):] for spec in SYNTH_SPECS
                    if "process=" not in spec and "thread=" not in spec]  # options 2022.4 does not have


@pytest.mark.nsys2022
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_nsys_2022_on_synthetic_exports(nsys22: str, seed: int, tmp_path: Path) -> None:
    export = make_rules_export(_exports()["sync_pitfalls"], tmp_path / "rules.sqlite", seed)
    reference = _nsys2022_reference(nsys22, export, SYNTH_SPECS_2022, tmp_path)
    results = _run(export, ",".join(SYNTH_SPECS_2022), style=E.STYLE_2022)
    found = {r.file_tag: (0 if r.frame is None else len(r.frame)) for r in results}
    assert found["cuda-sync-memcpy_rows=-1"] > 10 and found["cuda-sync-memset_rows=-1"] > 5  # the data is there
    assert found["gpu-starv_gap=1_rows=7"] == 7 and found["gpu-low-util_threshold=101_chunks=1000_rows=3"] == 3
    assert _compare(results, reference) == []


# ------------------------------------------------------------------------- library behaviour

def test_rule_names_options_and_errors() -> None:
    reqs = E.parse_rules("gpu_gaps:gap=100:rows=5,gpu-low-util,cuda_api_sync:process=7")
    assert [(r.spec.name, r.args) for r in reqs] == [("gpu_gaps", ("gap=100", "rows=5")), ("gpu_time_util", ()),
                                                     ("cuda_api_sync", ("process=7",))]
    assert reqs[0].values == {"rows": 5, "start": None, "end": None, "nvtx": None, "gap": 100}
    assert [r.spec.name for r in E.parse_rules(None)] == RULE_NAMES
    with pytest.raises(UsageError, match="unknown rule 'gpu_gap'") as ex:
        E.parse_rules("gpu_gap")
    assert ex.value.hint == "known rules: " + ", ".join(RULE_NAMES)
    with pytest.raises(UsageError, match="unknown rule") as ex:
        E.parse_rules("nope", style=E.STYLE_2022)
    assert ex.value.hint == "known rules: " + ", ".join(LEGACY_NAMES)
    with pytest.raises(UsageError, match=r"gpu_gaps: unknown option 'gaps=3'") as ex:
        E.parse_rules("gpu_gaps:gaps=3")
    assert ex.value.hint == "options of this rule: rows=, start=, end=, nvtx=, gap="
    with pytest.raises(UsageError, match="rows='x' is not an integer"):
        E.parse_rules("cuda_api_sync:rows=x")
    with pytest.raises(UsageError, match="chunks must be between 1 and 1000"):
        E.parse_rules("gpu_time_util:chunks=1001")
    with pytest.raises(UsageError, match="start is after end"):
        E.parse_rules("gpu_gaps:start=10:end=5")
    with pytest.raises(UsageError, match="unknown option 'process=1'"):  # 2022.4's rule has no such option
        E.parse_rules("cuda-sync-api:process=1", style=E.STYLE_2022)
    with pytest.raises(UsageError, match="unknown nsys version"):
        E.parse_rules(None, style="2024.1")
    [zero] = _run(_exports()["sync_pitfalls"], "gpu_time_util:chunks=0")  # nsys lets 0 through: no chunks
    assert zero.frame is not None and zero.frame.empty


def test_names_follow_the_style_asked_for() -> None:
    export = _exports()["sync_pitfalls"]
    [new] = _run(export, "gpu-starv")
    [old] = _run(export, "gpu_gaps", style=E.STYLE_2022)
    assert (new.name, new.title, old.name, old.title) == ("gpu_gaps", "GPU Gaps", "gpu-starv", "GPU Starvation")
    assert "Green Context ID" in _run(export, "cuda_memcpy_async")[0].frame.columns  # type: ignore[union-attr]
    assert "Green Context ID" not in _run(export, "cuda_memcpy_async", style=E.STYLE_2022)[0].frame.columns  # type: ignore[union-attr]


def test_process_and_thread_filter_the_sync_calls() -> None:
    export = _exports()["fixture_rank0"]
    [every] = _run(export, "cuda_api_sync")
    [mine] = _run(export, "cuda_api_sync:process=2052:thread=2052")
    [other] = _run(export, "cuda_api_sync:process=1")
    assert len(every.frame) == len(mine.frame) == 6 and other.frame is not None and other.frame.empty  # type: ignore[arg-type]


def _crafted(copy_order: list[int], call_order: list[int]) -> Profile:
    """Two pageable async copies of equal duration; the copy table and the call table list them in
    the given orders (by correlation id)."""
    copies = pd.DataFrame({"start_ns": [100, 200], "end_ns": [150, 250], "bytes": [10, 20], "kind": "HtoD",
                           "label": "Host-to-Device", "src_kind": "Pageable", "dst_kind": "Device", "device_id": 0,
                           "context_id": 1, "green_context_id": 0, "stream_id": 7, "correlation_id": [1, 2],
                           "global_pid": 5 << 24, "pid": 5}).iloc[copy_order].reset_index(drop=True)
    calls = pd.DataFrame({"start_ns": [10, 20], "end_ns": [15, 25], "name": "cudaMemcpyAsync_v3020", "name_id": 3,
                          "correlation_id": [1, 2], "global_tid": (5 << 24) | 5, "pid": 5, "tid": 5}
                         ).iloc[call_order].reset_index(drop=True)
    return Profile(memcpy=copies, api=calls)


def test_rows_of_equal_duration_keep_sqlite_join_order() -> None:
    """nsys 2025's plan walks the calls first, 2022.4's copy rules the copies first (both then sort
    by duration, keeping that order among ties): checked against both versions' SQL run by SQLite."""
    p = _crafted(copy_order=[0, 1], call_order=[1, 0])
    [new] = E.run_rules(p, "cuda_memcpy_async")
    [old] = E.run_rules(p, "cuda_memcpy_async", style=E.STYLE_2022)
    assert new.frame["Start (ns)"].tolist() == [200, 100]  # type: ignore[index]
    assert old.frame["Start (ns)"].tolist() == [100, 200]  # type: ignore[index]


def test_green_context_zero_is_no_green_context() -> None:
    p = _crafted(copy_order=[0, 1], call_order=[0, 1])
    p.memcpy["green_context_id"] = pd.array([0, 5], dtype="Int32")
    [r] = E.run_rules(p, "cuda_memcpy_async")
    assert F.render(r, "csv").splitlines()[1:] == ["50,100,Pageable,Device,0.000,5,0,1,,7,cudaMemcpyAsync_v3020",
                                                   "50,200,Pageable,Device,0.000,5,0,1,5,7,cudaMemcpyAsync_v3020"]
    assert [o["Green Context ID"] for o in json.loads(F.render(r, "json"))] == ["", 5]


def test_profiles_from_elsewhere_run_without_export_facts() -> None:
    p = load_kineto(fixture("h100-torch2.11", "square", "trace.json"))
    results = E.run_rules(p)
    assert [r.skipped is None for r in results] == [False, False, False, True, True, True]
    assert results[0].skipped is not None and "does not contain the required CUDA data" in results[0].skipped


def test_run_rules_reads_exports_and_refuses_other_files(tmp_path: Path) -> None:
    [r] = E.run_rules(capture("add"), "cuda_api_sync")
    assert r.frame is not None and r.frame["Duration (ns)"].tolist() == [95_071_335]
    [skipped] = E.run_rules(capture("add"), "cuda_memset_sync")
    assert skipped.skipped == f"{capture('add')} could not be analyzed because it does not contain the required CUDA" \
        " data. Does the application use CUDA memset APIs?"
    with pytest.raises(UsageError, match="unknown rule"):  # names are checked before the file is read
        E.run_rules(tmp_path / "missing.sqlite", "nope")
    with pytest.raises(InputFileError, match="no such file"):
        E.run_rules(tmp_path / "missing.sqlite")
    (tmp_path / "text.sqlite").write_text("not a database")
    with pytest.raises(InputFileError, match="not an SQLite file"):
        E.run_rules(tmp_path / "text.sqlite")
    con = sqlite3.connect(tmp_path / "other.sqlite")
    con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    with pytest.raises(ExportSchemaError, match="not an Nsight Systems export"):
        E.run_rules(tmp_path / "other.sqlite")


def _without(tmp_path: Path, sql: str) -> Path:
    """A copy of the streams_demo export changed by ``sql`` (a table or column dropped)."""
    export = Path(shutil.copy(capture("streams_demo"), tmp_path / "changed.sqlite"))
    con = sqlite3.connect(export)
    con.execute(sql)
    con.commit()
    con.close()
    return export


SKIP_CASES = {
    "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME": "{} could not be analyzed because it does not contain the required"
                                              " CUDA data. Does the application use CUDA runtime APIs?",
    "DROP TABLE StringIds": "{} file does not contain StringIds table.",
    "DROP TABLE ENUM_CUDA_MEM_KIND": "{} does not contain ENUM_CUDA_MEM_KIND table.",
    "ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN greenContextId":
        "{} could not be analyzed due to missing 'greenContextId'. Please re-export the report file with a recent"
        " version of Nsight Systems.",
}


@pytest.mark.parametrize("sql", list(SKIP_CASES))
def test_exports_without_a_rule_s_tables_skip_it_as_nsys_2025(sql: str, tmp_path: Path) -> None:
    export = _without(tmp_path, sql)
    [r] = _run(export, "cuda_memcpy_sync")
    assert r.skipped == SKIP_CASES[sql].format(export)
    assert F.render(r, "column") == f"SKIPPED: {SKIP_CASES[sql].format(export)}\n\n"


@pytest.mark.nsys2022
@pytest.mark.parametrize("sql", [s for s in SKIP_CASES if "StringIds" not in s])  # 2022.4 fails without StringIds
def test_exports_without_a_rule_s_tables_as_nsys_2022(nsys22: str, sql: str, tmp_path: Path) -> None:
    export = _without(tmp_path, sql)
    console = subprocess.run([nsys22, "analyze", "-r", ",".join(LEGACY_NAMES), str(export)], check=True,
                             capture_output=True, text=True).stdout
    assert F.render_console(_run(export, ",".join(LEGACY_NAMES), style=E.STYLE_2022), "column", str(export)) == \
        _named_by_rule(console)


def test_missing_nvtx_range_skips_the_rule_as_nsys_does() -> None:
    export = _exports()["sync_pitfalls"]
    [r] = _run(export, "gpu_gaps:nvtx=step 3")  # nsys 2025 names the export (seen on the synthetic exports)
    assert r.skipped == f"NVTX range 'step 3' could not be found in {export}." and r.frame is None
    assert F.render(r, "column") == f"SKIPPED: NVTX range 'step 3' could not be found in {export}.\n\n"
    assert F.render(r, "csv") == "" and F.render(r, "json") == ""


def test_findings_carry_nsys_numbers() -> None:
    results = _run(_exports()["sync_pitfalls"])
    found = {f.rule: f for f in E.as_findings(results)}
    assert list(found) == [f"nsys:{n}" for n in RULE_NAMES]
    gaps = found["nsys:gpu_gaps"]
    assert gaps.weight_ns == 600_320_505 and "600.32 ms" in gaps.evidence and "device 0 of process 751" in gaps.evidence
    assert "32 cudaStreamSynchronize, 4 cudaDeviceSynchronize" in found["nsys:cuda_api_sync"].evidence
    util = found["nsys:gpu_time_util"]
    assert "0.9% in use" in util.evidence and 0 < util.weight_ns < 639_163_432
    assert E.as_findings(_run(capture("add"), "cuda_memcpy_async,cuda_memset_sync")) == []  # nothing found, skipped


def test_write_rules_writes_nsys_file_names_atomically(tmp_path: Path) -> None:
    results = _run(capture("add"))
    prefix = tmp_path / "new" / "add"
    paths = F.write_rules(results, "json", prefix)
    assert [p.name for p in paths] == [f"add_{n}.json" for n in RULE_NAMES]
    assert paths[0].read_text() == "[\n]\n" and paths[2].read_text() == ""  # nothing found; skipped (no memsets)
    assert json.loads(paths[3].read_text())[0]["API Name"] == "cudaDeviceSynchronize_v3020"
    assert sorted(p.name for p in prefix.parent.iterdir()) == sorted(p.name for p in paths)  # no temporary files
    with pytest.raises(OutputFileError, match="already exists"):
        F.write_rules(results, "json", prefix, overwrite=False)
    (tmp_path / "x_cuda_api_sync.csv").mkdir()
    with pytest.raises(OutputFileError, match="is a folder"):
        F.write_rules(_run(capture("add"), "cuda_api_sync"), "csv", tmp_path / "x")


def test_advice_wraps_as_nsys() -> None:
    """A paragraph's last word may reach column 80; any other word must leave room for its space."""
    line = "aaaa " * 15 + "bbbbb"  # 80 characters
    assert F.wrap(line) == line
    assert F.wrap(line + " c") == ("aaaa " * 15).rstrip() + "\nbbbbb c"  # textwrap would keep bbbbb on line 1
    assert F.wrap("   2. indented " + "x" * 70) == "   2. indented\n" + "x" * 70


# ------------------------------------------------------------------------------------- the CLI

def _cli(*args: str) -> Any:
    from click.testing import CliRunner

    from nsighttk.cli import cli

    return CliRunner().invoke(cli, ["rules", *args])


def test_cli_prints_what_nsys_prints_and_writes_its_files(tmp_path: Path) -> None:
    export = _exports()["sync_pitfalls"]
    res = _cli(str(export), "-r", "gpu_gaps:gap=100", "-r", "cuda_api_sync:rows=3", "-f", "csv")
    assert res.exit_code == 0, res.output
    gaps = (RULES_DIR / "sync_pitfalls.opt_gpu_gaps_gap_100_gpu_gaps_gap=100.csv").read_text()
    calls = (RULES_DIR / "sync_pitfalls.opt_cuda_api_sync_rows_3_cuda_api_sync_rows=3.csv").read_text()
    assert res.stdout == (f"Processing [{export}] with [gpu_gaps](gap=100)... \n{gaps}\n"
                          f"Processing [{export}] with [cuda_api_sync](rows=3)... \n{calls}\n")
    prefix = tmp_path / "out" / "sp"
    res = _cli(str(export), "-r", "gpu_gaps:gap=100,cuda_memset_sync", "-f", "json", "-o", str(prefix))
    assert res.exit_code == 0 and res.stdout == ""
    assert (tmp_path / "out" / "sp_cuda_memset_sync.json").read_text() == \
        (RULES_DIR / "sync_pitfalls.rulesjson_cuda_memset_sync.json").read_text()
    assert f"wrote {prefix}_gpu_gaps_gap=100.json\n" in res.stderr
    res = _cli(str(export), "-r", "gpu_gaps:gap=100", "-f", "json", "-o", str(prefix))
    assert res.exit_code == 2 and "already exists" in res.stderr and "--force-overwrite" in res.stderr
    assert _cli(str(export), "-r", "gpu_gaps:gap=100", "-f", "json", "-o", str(prefix),
                "--force-overwrite").exit_code == 0
    res = _cli(str(capture("add")), "--as-nsys", "2022.4", "-r", "gpu_gaps")
    assert res.exit_code == 0 and "\n ** GPU Starvation (gpu-starv):\n" in res.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["-r", "nope"], "nsighttk: error: unknown rule 'nope' (known rules: cuda_memcpy_async, cuda_memcpy_sync, "
                     "cuda_memset_sync, cuda_api_sync, gpu_gaps, gpu_time_util)\n"),
    (["-r", "gpu_gaps:gaps=1"], "nsighttk: error: gpu_gaps: unknown option 'gaps=1' (options of this rule: rows=, "
                                "start=, end=, nvtx=, gap=)\n"),
    (["-r", "gpu_time_util:chunks=x"], "nsighttk: error: gpu_time_util: chunks='x' is not an integer (give a whole "
                                      "number, e.g. chunks=30)\n"),
])
def test_cli_bad_rule_or_option_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    res = _cli(str(capture("add")), *args)
    assert (res.exit_code, res.stdout, res.stderr) == (2, "", message)


def test_cli_bad_files_are_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    cases = {str(tmp_path / "missing.sqlite"): "no such file",
             str(tmp_path / "notes.txt"): "not a capture nsighttk reads",
             str(fixture("h100-torch2.11", "square", "trace.json")): "not an Nsight Systems capture",
             str(tmp_path): "not an nsighttk run directory"}
    for path, message in cases.items():
        res = _cli(path)
        assert_exit(res, 2, line=message)
        assert res.stdout == "" and res.stderr.count("\n") == 1, (path, res.output)
    assert _cli().exit_code == 2
    res = _cli("--help-rules")
    assert res.exit_code == 0 and res.stdout.startswith("cuda_memcpy_async ")
