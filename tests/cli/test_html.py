"""HTML reports: rendered from real captures, then opened in headless Chromium and checked for what
a person sees (every chart drew its marks, no script or console errors); screenshots are kept in
build/test-artifacts/.  Plus: the roofline equals ncu's own, the timeline lanes, the page is
self-contained, every run directory gets one, and bad input is one line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from browser import render, screenshot
from conftest import capture, fixture, run_cli

from nsighttk import api
from nsighttk.analysis.kernels.roofline import roofline
from nsighttk.analysis.timeline import timeline
from nsighttk.commands.report import capture_page
from nsighttk.report import html


def _specs(text: str) -> list[dict]:
    m = re.search(r'<script type="application/json" id="nsighttk-specs">(.*?)</script>', text, re.S)
    assert m
    return json.loads(m.group(1))  # JSON.parse reads it as it is (nothing in it is escaped for HTML)


def _write(tmp_path: Path, page: html.Page, name: str) -> Path:
    out = tmp_path / name
    out.write_text(html.render(page))
    return out


# ----------------------------------------------------------------------------- analyses behind it


def test_roofline_equals_ncus_own_rule() -> None:
    """ncu's SOLFPRoofline rule says "achieved 32% of this device's FP32 peak" for matmul_tiled;
    our roofline (same metrics, same formula) gives 32.3%, and the H200's roofs."""
    p = api.load(fixture("h200-ncu2025.3", "matmul_tiled.ncu-rep"))
    r = roofline(p).set_index("precision")
    said = p.rules.loc[p.rules["rule"] == "SOLFPRoofline", "description"].iloc[0]
    pct = int(re.search(r"achieved (\d+)% of this device's FP32 peak", said).group(1))
    assert round(r.loc["fp32", "pct_of_peak_flops"]) == pct == 32
    assert "2:1" in said and r.loc["fp32", "peak_flop_per_s"] == pytest.approx(2 * r.loc["fp64", "peak_flop_per_s"]
                                                                                if "fp64" in r.index else
                                                                                r.loc["fp32", "peak_flop_per_s"])
    assert r.loc["fp32", "peak_dram_bytes_per_s"] / 1e9 == pytest.approx(4810, rel=0.01)  # H200 HBM3e
    assert r.loc["fp32", "bound"] == "compute" and r.loc["fp32", "intensity_flop_per_byte"] > 200
    add = roofline(api.load(fixture("h200-ncu2025.3", "add_grid_b256.ncu-rep")))
    assert list(add["precision"]) == ["fp32"] and add.loc[0, "bound"] == "memory"
    # 1 FLOP per 12 bytes moved (c = a + b in float32), which is what ncu measured
    assert add.loc[0, "intensity_flop_per_byte"] == pytest.approx(1 / 12, rel=0.15)


def test_roofline_of_a_details_csv_is_empty_not_wrong() -> None:
    p = api.load(fixture("h200-ncu2025.3", "add_grid_b256.details.csv"))
    assert roofline(p).empty


def test_timeline_lanes_per_stream_and_nvtx_level() -> None:
    t = timeline(api.load(capture("streams_demo")))
    assert t.lanes == ["NVTX tid 1009 level 0", "NVTX tid 1009 level 1", "NVTX tid 1009 level 2",
                       "GPU 0 stream 7", "GPU 0 stream 13", "GPU 0 stream 17"]
    ev = t.events
    assert (ev["kind"] == "kernel").sum() == 25 and (ev["kind"] == "memcpy").sum() == 12
    assert (ev["kind"] == "memset").sum() == 3 and ev["start_ns"].min() == 0
    assert t.shown == t.total == 40
    cut = timeline(api.load(capture("streams_demo")), max_events=10)
    assert cut.shown == 10 and cut.total == 40 and (cut.events["kind"] != "nvtx").sum() == 10


@pytest.mark.parametrize("max_events", [1, 7, 10, 25, 20000])
def test_timeline_of_an_export_reads_only_its_window(max_events: int) -> None:
    """The window of an export is cut from its columns (10M kernels: 66 s and 4 GB when every
    kernel was formatted to keep 20,000): no table is built whole, and the events equal those
    of the same capture held whole in memory, ties at the window's edge included."""
    from nsighttk.profile import TABLES, Profile

    lazy = api.load(capture("streams_demo"))
    whole = api.load(capture("streams_demo"))
    held = Profile(**{t: whole.table(t) for t in TABLES}, meta=dict(whole.meta))
    a, b = timeline(lazy, max_events=max_events), timeline(held, max_events=max_events)
    assert not any(lazy.loaded(t) for t in ("kernels", "memcpy", "memset", "nvtx"))
    assert (a.lanes, a.t0_ns, a.window_ns, a.shown, a.total, a.focus_ns) == \
        (b.lanes, b.t0_ns, b.window_ns, b.shown, b.total, b.focus_ns)
    assert a.events.astype(str).equals(b.events.astype(str))
    assert a.shown == min(max_events, 40)
    # the earliest GPU operations, ties in table order (kernels, copies, memsets): a stable sort of all
    every = pd.concat([pd.DataFrame({"kind": k, "start_ns": held.table(t)["start_ns"]})
                       for k, t in (("kernel", "kernels"), ("memcpy", "memcpy"), ("memset", "memset"))],
                      ignore_index=True).sort_values("start_ns", kind="stable").head(max_events)
    gpu = a.events[a.events["kind"] != "nvtx"]
    assert list(zip(gpu["kind"], gpu["start_ns"] + a.t0_ns, strict=True)) == \
        list(zip(every["kind"], every["start_ns"], strict=True))


@pytest.mark.parametrize("max_events", [1, 5, 12, 30])
def test_timeline_window_ties_keep_table_order(max_events: int) -> None:
    """Operations starting at the same time: the window keeps kernels, then copies, then memsets,
    each in table order, as a stable sort of all of them would."""
    from nsighttk.profile import TABLES, Profile

    whole = api.load(capture("streams_demo"))
    tables = {t: whole.table(t) for t in TABLES}
    for t in ("kernels", "memcpy", "memset"):  # a coarse clock: many operations start together
        df = tables[t].copy()
        df["start_ns"] = df["start_ns"] // 50_000_000 * 50_000_000
        df["end_ns"] = df["start_ns"] + df["duration_ns"]
        tables[t] = df
    held = Profile(**tables, meta=dict(whole.meta))
    every = pd.concat([pd.DataFrame({"kind": k, "start_ns": tables[t]["start_ns"], "row": range(len(tables[t]))})
                       for k, t in (("kernel", "kernels"), ("memcpy", "memcpy"), ("memset", "memset"))],
                      ignore_index=True).sort_values("start_ns", kind="stable")
    assert every["start_ns"].duplicated().sum() > 20  # (ties at every edge tried)
    t = timeline(held, max_events=max_events)
    gpu = t.events[t.events["kind"] != "nvtx"]
    want = every.head(max_events)
    assert list(zip(gpu["kind"], gpu["start_ns"] + t.t0_ns, strict=True)) == \
        list(zip(want["kind"], want["start_ns"], strict=True))
    for kind, table in (("kernel", "kernels"), ("memcpy", "memcpy"), ("memset", "memset")):
        rows = want.loc[want["kind"] == kind, "row"].to_numpy()
        assert list(gpu.loc[gpu["kind"] == kind, "duration_ns"]) == list(tables[table]["duration_ns"].iloc[rows])


# ----------------------------------------------------------------------------- in the browser


def test_nsys_report_draws_its_charts_in_chromium(tmp_path: Path) -> None:
    page = _write(tmp_path, capture_page(capture("streams_demo")), "streams_demo.html")
    text = page.read_text()
    assert "<script src" not in text and "<link" not in text and "http://" not in text.replace(
        "http://www.w3.org/2000/svg", "")  # self-contained: nothing to fetch
    specs = _specs(text)
    shown = render(page)
    assert shown.errors() == [] and shown.attr("data-errors") == "0" and shown.attr("data-ready") == "1"
    charts = shown.charts()
    assert [k for k, _ in charts] == ["iterations", "bars", "timeline"]
    assert charts[0][1] == len(specs[0]["items"]) == 3  # one column per NVTX step
    assert charts[1][1] == len(specs[1]["items"]) == 13  # one bar per operation of cuda_gpu_sum (9 kernels, 4 copies)
    assert 0 < charts[2][1] <= len(specs[2]["events"]) == 56  # sub-pixel neighbours share a mark
    assert re.search(r'data-in-view="56"', shown.dom)  # the view opens on all of the GPU work
    for heading in ("Summary", "What to look at", "Iterations", "GPU time", "Timeline", "Kernels", "NVTX ranges"):
        assert f">{heading}" in shown.dom
    png = screenshot(page, "report-nsys-streams_demo.png")
    _looks_drawn(png, (0x4E, 0x79, 0xA7))  # kernel blue is on screen


def test_ncu_report_draws_the_roofline(tmp_path: Path) -> None:
    page = _write(tmp_path, capture_page(fixture("h200-ncu2025.3", "matmul_tiled.ncu-rep")), "mm.html")
    shown = render(page)
    assert shown.errors() == [] and shown.charts() == [("roofline", 2)]  # fp32 and fp16 points
    assert "Nsight Compute&#x27;s findings" in shown.dom or "Nsight Compute's findings" in shown.dom
    screenshot(page, "report-ncu-matmul_tiled.png", height=1200)


def test_bench_report_draws_bandwidth_against_size(tmp_path: Path) -> None:
    bench = json.loads(fixture("h100-workloads", "bench-add.json").read_text())
    page = _write(tmp_path, html.Page("bench add", ["H100"], html.bench_sections(bench)), "bench.html")
    shown = render(page)
    ok = [r for r in bench["rows"] if r["status"] == "ok" and r["gbps"]]
    # bandwidth against size, and every (variant, size) on a roofline under the measured copy bandwidth
    assert shown.errors() == [] and shown.charts() == [("lines", len(ok)), ("roofline", len(ok))]
    screenshot(page, "report-bench-add.png", height=1100)


def test_comparison_view_draws_one_bar_per_changed_item(tmp_path: Path) -> None:
    r0, r1 = fixture("h100-ranks", "rank0.sqlite"), fixture("h100-ranks", "rank1.sqlite")
    cmp = api.compare([str(r0)], [str(r1)], force=True)
    out = tmp_path / "cmp.html"
    run_cli(["compare", str(r0), str(r1), "--force", "--html", str(out)])
    shown = render(out)
    n = int(cmp.table["change_pct"].notna().sum())
    assert shown.errors() == [] and shown.charts() == [("delta", n)] and n > 0
    screenshot(out, "report-compare-ranks.png", height=900)
    # the same view from `nsighttk report BEFORE --compare AFTER` (default file under the reports folder)
    err = run_cli(["report", str(r0), "--compare", str(r1)], code=2)
    assert "different targets (rank0 vs rank1)" in err
    msg = run_cli(["report", str(r0), "--compare", str(r1), "--force"])
    made = tmp_path / "reports" / "compare-rank0.sqlite-vs-rank1.sqlite.html"
    assert f"HTML report: {made}" in msg and _specs(made.read_text()) == _specs(out.read_text())


def test_kineto_trace_report(tmp_path: Path) -> None:
    page = _write(tmp_path, capture_page(fixture("h100-torch2.11", "bert_bs1_seq128.trace.json.gz")), "k.html")
    shown = render(page)
    assert shown.errors() == [] and [k for k, n in shown.charts() if n > 0] == ["iterations", "bars", "timeline"]


def test_the_browser_check_catches_a_broken_page(tmp_path: Path) -> None:
    """The harness is not blind: a chart that throws shows up as an error and an undrawn chart."""
    page = html.Page("broken", [], [html.Section("x", "X").chart("bars", {"items": None, "total": 1})])
    shown = render(_write(tmp_path, page, "broken.html"))
    assert shown.errors() and any("TypeError" in e or "null" in e for e in shown.errors())
    assert shown.attr("data-ready") is None and shown.charts() == [("bars", -1)]


def _looks_drawn(png: Path, rgb: tuple[int, int, int]) -> None:
    import matplotlib.image as mpimg
    import numpy as np

    img = (mpimg.imread(png)[..., :3] * 255).round().astype(int)
    hits = (np.abs(img - np.array(rgb)).sum(axis=2) <= 6).sum()
    assert hits > 200, f"{png.name}: the chart colour {rgb} covers only {hits} pixels"


# ----------------------------------------------------------------------------- runs and the command


def test_every_run_directory_gets_a_report_and_nsighttk_report_renders_it(tmp_path: Path) -> None:
    out = json.loads(run_cli(["bench", "add", "--device", "cpu", "--variants", "torch_add,operator", "--sizes",
                              "4096,16384", "--rep-ms", "5", "--warmup-ms", "1", "--json"]))
    run_dir = Path(out["run_dir"])
    rec = json.loads((run_dir / "run.json").read_text())
    assert rec["report_html"] == str(run_dir / "report.html") and (run_dir / "report.html").is_file()
    assert run_dir.name in (run_dir / "report.html").read_text()
    shown = render(run_dir / "report.html")
    assert shown.errors() == [] and shown.charts() == [("lines", 4), ("roofline", 4)]
    # by run id (the database), again into the run directory, and as JSON
    msg = run_cli(["report", run_dir.name])
    assert f"HTML report: {run_dir / 'report.html'}" in msg
    data = json.loads(run_cli(["report", str(run_dir), "--json"]))
    sections = {sec["id"]: sec for sec in data["sections"]}
    assert sections["bandwidth"]["charts"][0]["kind"] == "lines"
    assert {r["variant"] for r in sections["variants"]["tables"][0]["rows"]} == {"torch_add", "operator"}


def test_report_of_a_capture_goes_to_the_reports_folder_and_never_replaces_a_users_file(tmp_path: Path) -> None:
    src = tmp_path / "add.sqlite"
    shutil.copy(capture("add"), src)
    run_cli(["report", str(src)])
    made = tmp_path / "reports" / "add.sqlite.html"
    assert made.is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["add.sqlite", "reports"]
    run_cli(["report", str(src)])  # ours: replaced without asking
    mine = tmp_path / "mine.html"
    mine.write_text("my notes")
    err = run_cli(["report", str(src), "-o", str(mine)], code=2)
    assert err.strip() == f"nsighttk: error: {mine} exists and was not written by nsighttk (choose another -o, or " \
                          "pass --force)"
    assert mine.read_text() == "my notes"
    run_cli(["report", str(src), "-o", str(mine), "--force"])
    assert "<!DOCTYPE html>" in mine.read_text()
    run_cli(["report", str(src), "-o", str(tmp_path / "new" / "folder" / "add.html")])  # folders are made
    assert (tmp_path / "new" / "folder" / "add.html").is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["report", "nope.sqlite"], "nope.sqlite: no such file or run directory"),
    (["report", "20990101T000000Z-nsys-add"], "no runs recorded yet"),
    (["report", "{dir}"], "is a folder without run.json"),
    (["report", "{bad}"], ""),
])
def test_report_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "bad.sqlite").write_text("not sqlite")
    args = [a.format(dir=tmp_path, bad=tmp_path / "bad.sqlite") for a in args]
    err = run_cli(args, code=2)
    assert err.startswith("nsighttk: error: ") and len(err.strip().splitlines()) <= 2
    assert message in err
    assert not (tmp_path / "reports" / "nsighttk.db").exists()


def test_gpu_time_bars_are_labelled_apart_by_short_names() -> None:
    # four CUTLASS gemms whose names share their first 48 characters: the bars' labels tell them apart
    from nsighttk.analysis.nsys.reports import cuda_gpu_sum

    spec = html.gpu_time_bars(cuda_gpu_sum(api.load(capture("gpt2_train"))).frame)
    assert spec is not None
    kernels = [d for d in spec["items"] if d["kind"] == "kernel"]
    assert len({d["label"][:48] for d in kernels}) < len(kernels)  # (the raw names cut to the width collide)
    assert len({d["short"] for d in kernels}) == len(kernels)
    assert all(len(d["short"]) <= 48 for d in kernels)
    assert all(d.get("short", d["label"]) == d["label"] for d in spec["items"] if d not in kernels)
