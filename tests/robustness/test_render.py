"""Names are data, never markup: hostile kernel, NVTX, variant, target and run
names go through every renderer (terminal, rich, HTML in Chromium, Markdown parsed by a CommonMark
parser, JSON, CSV, matplotlib, progress lines) and come out as the text they are.

The escaping functions themselves (one per medium, nsighttk/report/escape.py) are tested here too;
layout for 80/100/120 columns is in tests/cli/test_layout.py."""

from __future__ import annotations

import csv
import html as htmllib
import io
import json
import re
import shutil
import sqlite3
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from browser import render as browser_render
from click.testing import CliRunner
from conftest import assert_exit, capture, fixture
from markdown_it import MarkdownIt
from rich.console import Console

from nsighttk import api, escape, progress
from nsighttk.analysis.ncu_summary import summarize
from nsighttk.bench import BenchReport
from nsighttk.cli import cli
from nsighttk.commands.analyze import analyze_profile
from nsighttk.commands.report import capture_page
from nsighttk.report import (
    bench_text,
    compare_text,
    html,
    inspect_text,
    jsonout,
    markdown,
    ncu_text,
    pages,
    runs_text,
    text,
)

#: names that are markup in some medium: rich tags and links, HTML and comment openers, script
#: breakers, ESC/OSC sequences (a hidden hyperlink, a screen clear), Markdown syntax, spreadsheet
#: formulas, bidi overrides and Unicode line separators, emoji codes, TeX, wide characters
HOSTILE = [
    "[/]",
    "[link=https://x.example/]k[/link]",
    "<!--<script>",
    "</script><script>document.body.dataset.pwned='script'</script>",
    "<img src=x onerror=\"document.body.dataset.pwned='img'\">",
    "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "\x1b[2J\x1b[31mred\x07\x9b1m",
    "*em* _u_ [a](https://x.example) ![i](https://x.example/i.png) `code` <b>b</b> &amp; | pipe ~~s~~",
    '=HYPERLINK("https://x.example","x")',
    "\u202eevil\u2028line\u2029par\u200b",
    ":fire: $\\frac{1}{0}$ 全角カーネル",
]

SGR = re.compile(r"\x1b\[[0-9;]*m")


def terminal_safe(out: str) -> str:
    """``out`` without rich's own colour codes; fails if anything else non-printable is left."""
    plain = SGR.sub("", out)
    bad = sorted({repr(ch) for ch in plain if not (ch.isprintable() or ch in "\n ")})
    assert not bad, f"non-printable characters reached the terminal: {bad}"
    return plain


def term_console(width: int | None = 100) -> tuple[Console, io.StringIO]:
    """A console as make_console makes one, but a colour terminal (so escape codes would show)."""
    buf = io.StringIO()
    return Console(file=buf, width=width or 1 << 20, force_terminal=True, color_system="truecolor", highlight=False,
                   emoji=False, soft_wrap=False), buf


# ------------------------------------------------------------------------------ hostile inputs


def _hostile_sqlite(dst: Path) -> Path:
    """streams_demo.sqlite with every kernel and NVTX range renamed to a hostile name."""
    shutil.copy(capture("streams_demo"), dst)
    con = sqlite3.connect(dst)
    cur = con.cursor()
    top = cur.execute("SELECT max(id) FROM StringIds").fetchone()[0]
    old = [r[0] for r in cur.execute("SELECT DISTINCT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")]
    for i, sid in enumerate(old):
        new = top + 1 + i
        cur.execute("INSERT INTO StringIds (id, value) VALUES (?, ?)", (new, HOSTILE[i % len(HOSTILE)]))
        cur.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = ?, shortName = ?, mangledName = ? "
                    "WHERE demangledName = ?", (new, new, new, sid))
    texts = [r[0] for r in cur.execute("SELECT DISTINCT text FROM NVTX_EVENTS WHERE text IS NOT NULL ORDER BY 1")]
    for i, t in enumerate(texts):
        cur.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", (HOSTILE[(i + len(old)) % len(HOSTILE)], t))
    con.commit()
    con.close()
    return dst


@pytest.fixture(scope="module")
def hostile_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _hostile_sqlite(tmp_path_factory.mktemp("hostile") / "hostile.sqlite")


@pytest.fixture(scope="module")
def hostile_kineto(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = json.loads(fixture("h100-torch2.11", "gelu", "trace.json").read_text())
    names: dict[str, str] = {}
    for ev in data["traceEvents"]:
        if ev.get("cat") in ("kernel", "user_annotation", "gpu_user_annotation"):
            ev["name"] = names.setdefault(ev["name"], HOSTILE[len(names) % len(HOSTILE)])
    out = tmp_path_factory.mktemp("hostile") / "trace.json"
    out.write_text(json.dumps(data))
    return out


def _kernel_names(path: Path) -> list[str]:
    return sorted(set(api.load(path).kernels["name"]))


def test_the_hostile_capture_holds_the_hostile_names(hostile_capture: Path) -> None:
    p = api.load(hostile_capture)
    assert set(p.kernels["name"]) == set(HOSTILE[:9])
    assert set(HOSTILE) <= set(p.kernels["name"]) | set(p.nvtx["name"])


# ------------------------------------------------------------------------------ terminal (rich)


@pytest.mark.parametrize("width", [80, 120, None])
def test_hostile_names_in_analyze_are_shown_as_text(hostile_capture: Path, width: int | None) -> None:
    con, buf = term_console(width)
    text.render(api.analyze(hostile_capture), con)
    out = terminal_safe(buf.getvalue())
    assert "\x1b]8" not in buf.getvalue()  # no hyperlink (OSC 8) was made of [link=...]
    if width is None:  # nothing shortened: every name exactly as escape.term shows it
        for name in HOSTILE[:9]:
            assert escape.term(name) in out, name
        assert "[link=https://x.example/]k[/link]" in out and "\\x1b]8;;https://evil.example/" in out
    for line in out.splitlines():
        assert width is None or len(line) <= width, line


def test_hostile_names_in_a_kineto_trace(hostile_kineto: Path) -> None:
    con, buf = term_console(None)
    text.render(api.analyze(hostile_kineto), con)
    out = terminal_safe(buf.getvalue())
    for name in _kernel_names(hostile_kineto):
        assert escape.term(name) in out
    md = markdown.render(api.analyze(hostile_kineto))
    _markdown_is_literal(md, _kernel_names(hostile_kineto))


def test_hostile_names_in_ncu_views(hostile_capture: Path) -> None:
    p = api.load(fixture("h200-ncu2025.3", "streams_demo.raw.csv"))
    p.kernels["name"] = [HOSTILE[i % len(HOSTILE)] for i in range(len(p.kernels))]
    s = summarize(p)
    con, buf = term_console(None)
    ncu_text.render(s, con)
    out = terminal_safe(buf.getvalue())
    for name in s.kernels["kernel"]:
        assert escape.term(name) in out
    _markdown_is_literal(ncu_text.markdown(s, "ncu [x](https://x.example)"), list(s.kernels["kernel"]))
    joined = api.join(hostile_capture, fixture("h200-ncu2025.3", "streams_demo.raw.csv"))
    for width in (80, None):
        con, buf = term_console(width)
        ncu_text.render_join(joined, con)
        terminal_safe(buf.getvalue())
    html_page = html.render(html.Page("ncu", ["x"], pages.capture_sections(analyze_profile(p))))
    _html_is_inert(html_page)


def test_hostile_bench_compare_runs_inspect(hostile_capture: Path, tmp_path: Path) -> None:
    rows = pd.DataFrame([{"size": 4096, "variant": v, "description": v, "status": st, "reason": why,
                          "rel_error": 1e-7, "median_ms": 0.01, "p20_ms": 0.009, "p80_ms": 0.011, "reps": 10,
                          "gbps": 12.0, "tflops": 0.001, "pct_of_copy": 5.0, "speedup_vs_baseline": 1.0}
                         for v, st, why in [(HOSTILE[0], "ok", ""), (HOSTILE[1], "skipped", HOSTILE[5]),
                                            (HOSTILE[8], "wrong result", HOSTILE[6]), (HOSTILE[10], "ok", "")]])
    rep = BenchReport(HOSTILE[7], HOSTILE[5], "float32", 100.0, rows)
    con, buf = term_console(None)
    bench_text.render(rep, con)
    out = terminal_safe(buf.getvalue())
    for name in (HOSTILE[0], HOSTILE[1], HOSTILE[5], HOSTILE[6], HOSTILE[8], HOSTILE[10]):
        assert escape.term(name) in out

    cmp = api.compare([str(hostile_capture)], [str(hostile_capture)])
    con, buf = term_console(None)
    compare_text.render(cmp, con, show_all=True)
    out = terminal_safe(buf.getvalue())
    assert all(escape.term(n) in out for n in HOSTILE[:9])

    run = {"id": HOSTILE[0], "tool": "bench", "target": HOSTILE[1], "status": HOSTILE[6], "started_utc": "x",
           "gpu": HOSTILE[5], "job_id": None, "run_dir": HOSTILE[3], "command": HOSTILE[2]}
    con, buf = term_console(None)
    runs_text.render_list([run], HOSTILE[4], con)
    runs_text.render_show(run, {HOSTILE[7]: []}, con)
    runs_text.render_jobs([{"job_id": 1, "name": HOSTILE[1], "state": HOSTILE[6], "source": "x",
                            "submitted_utc": "", "runs": 0, "run_dir": HOSTILE[9]}], con)
    out = terminal_safe(buf.getvalue())
    assert escape.term(HOSTILE[1]) in out and escape.term(HOSTILE[9]) in out

    kernels = pd.DataFrame([{"variant": HOSTILE[0], "kernel": HOSTILE[2], "source": HOSTILE[7], "arch": "sm_90",
                             "num_warps": 4, "num_stages": 2, "registers": 32, "stack_bytes": 0, "local_bytes": 0,
                             "static_smem_bytes": 0, "shared_bytes": 1024, "theoretical_occupancy_pct": 50.0,
                             "limiters": HOSTILE[1]}])
    run_i = SimpleNamespace(kernels=kernels, mode="aot", run_dir=tmp_path / "r[/]", output_code={HOSTILE[3]: ["a.py"]},
                            skipped={HOSTILE[6]: HOSTILE[5]})
    con, buf = term_console(None)
    inspect_text.render(run_i, con)
    assert escape.term(HOSTILE[2]) in terminal_safe(buf.getvalue())
    _markdown_is_literal(inspect_text.markdown(run_i), [HOSTILE[0], HOSTILE[2], HOSTILE[7], HOSTILE[6]])


@pytest.mark.parametrize("depth", [1, 4])  # the run directory fits on a line of its own / does not
def test_inspect_prints_every_path_whole_or_broken_at_a_slash(depth: int) -> None:
    """At 100 columns (piped output) each path ``inspect`` prints can be copied: a part of it (between
    two "/") never runs over a line's end, and the run directory's files are named relative to it."""
    run_dir = Path("/home/someone", *["a-rather-long-project-folder"] * depth, "reports",
                   "20261128T103036Z-inspect-square")
    code = "compiled/output_code/ca3u3eb4etp7g7yig5af46xsrccvmygoxfg77ro74lbrkcn7ekg6.py"
    kernels = pd.DataFrame([{"variant": "triton", "kernel": "_square_block_kernel", "source": "triton",
                             "arch": "sm_90", "num_warps": 4, "num_stages": 2, "registers": 46, "stack_bytes": 0,
                             "local_bytes": 0, "static_smem_bytes": 0, "shared_bytes": 0,
                             "theoretical_occupancy_pct": 62.5, "limiters": "registers"}])
    run = SimpleNamespace(kernels=kernels, mode="aot", run_dir=run_dir, output_code={"compiled": [code]}, skipped={})
    con, buf = term_console(100)
    inspect_text.render(run, con)
    lines = terminal_safe(buf.getvalue()).splitlines()
    assert max(len(ln) for ln in lines) <= 100
    parts = [p for p in (*run_dir.parts, *code.split("/")) if len(p) > 8]
    for ln in lines:
        assert not [p for p in parts if p[:8] in ln and p not in ln], ln
    assert str(run_dir) in "".join(ln.strip() for ln in lines)  # its lines, put together, make it whole
    assert [ln.strip() for ln in lines if code in ln] == [code]


def test_explain_of_markup_is_one_clean_answer() -> None:
    for name in ("[/]", "[link=https://x.example/]k[/link]", "\x1b[2Jk"):
        res = CliRunner().invoke(cli, ["explain", name])
        assert_exit(res, 0)
        assert escape.term(name) in res.output and "\x1b" not in res.output


def test_progress_lines_are_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSIGHTTK_QUIET", "0")
    for tty in (False, True):
        buf = io.StringIO()
        monkeypatch.setattr(progress, "console", Console(file=buf, force_terminal=tty, width=100, highlight=False))
        with progress.step(f"nvcc {HOSTILE[0]} {HOSTILE[5]}"):
            pass
        progress.info(HOSTILE[1])
        progress.warn(HOSTILE[6])
        out = terminal_safe(buf.getvalue().replace("\r", "").replace("\x1b[?25l", "").replace("\x1b[?25h", "")
                            .replace("\x1b[2K", "").replace("\x1b[1A", ""))
        assert escape.term(HOSTILE[1]) in out and escape.term(HOSTILE[6]) in out
        assert "[nsighttk] nvcc [/] \\x1b]8" in out


# ------------------------------------------------------------------------------------ Markdown


_ALLOWED_TAGS = {"h1", "h2", "h3", "p", "ul", "li", "strong", "code", "table", "thead", "tbody", "tr", "th", "td"}


class _Tags(HTMLParser):
    """The tags of rendered Markdown; <em> only where nsighttk writes it ("_(no rows)_")."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.text: list[str] = []
        self._em = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "em":
            self._em = True
            return
        self.tags.add(tag)

    def handle_endtag(self, tag: str) -> None:
        self._em = self._em and tag != "em"

    def handle_data(self, data: str) -> None:
        if self._em and not re.fullmatch(r"\(no rows\)|\d+ more rows in summary\.json", data):
            self.tags.add("em")
        self.text.append(data)


def _markdown_is_literal(md: str, names: list[str]) -> None:
    """Rendered by a CommonMark + GFM-tables parser, ``md`` makes only the structure we write
    (no link, image, emphasis, raw HTML, strikethrough) and shows every name as its text."""
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
    tags = _Tags()
    tags.feed(rendered)
    assert tags.tags <= _ALLOWED_TAGS, sorted(tags.tags - _ALLOWED_TAGS)
    shown = " ".join(" ".join(tags.text).split())
    for name in names:
        assert " ".join(escape.term(name).split()) in shown, name


def test_markdown_of_a_hostile_capture_is_literal(hostile_capture: Path) -> None:
    md = markdown.render(api.analyze(hostile_capture), "nsys: [t](https://x.example) <b>")
    _markdown_is_literal(md, HOSTILE[:9])
    assert "\x1b" not in md and "\u202e" not in md


@pytest.mark.parametrize("name", [*HOSTILE, "a|b", "``x``", "`", " lead", "trail\\", "_x_", "a_b_c", "&lt;"])
def test_md_text_and_md_code_round_trip(name: str) -> None:
    for md, in_table in ((f"- {escape.md_text(name)}", False), (f"- {escape.md_code(name)}", False),
                         (f"| HDR |\n|---|\n| {escape.md_text(name)} |", True),
                         (f"| HDR |\n|---|\n| {escape.md_code(name, in_table=True)} |", True)):
        rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
        tags = _Tags()
        tags.feed(rendered)
        assert tags.tags <= _ALLOWED_TAGS, (md, rendered)
        got = "".join(tags.text).replace("\n", "").replace("HDR", "", 1 if in_table else 0).strip()
        assert got == escape.term(name).strip(), (md, rendered)
    assert escape.md_text("a_b_c") == "a_b_c" and escape.md_text("_x_") == "\\_x\\_"


# ---------------------------------------------------------------------------------------- HTML


def _html_is_inert(page: str) -> None:
    m = re.search(r'<script type="application/json" id="nsighttk-specs">(.*?)</script>', page, re.S)
    assert m and "<" not in m.group(1) and "\u2028" not in m.group(1)
    json.loads(m.group(1))
    body = page.split("<main>", 1)[1].split("</main>", 1)[0]
    assert "<script" not in body and "<img" not in body and "<!--" not in body and "\x1b" not in body


def test_script_json_cannot_end_the_script_element() -> None:
    data = {"names": [*HOSTILE, "</SCRIPT>", "<!--", "-->", "]]>", "\u2028\u2029", "&amp;", "\udcff"]}
    out = escape.script_json(data)
    assert not re.search(r"[<>&\u2028\u2029]", out)
    back = json.loads(out)
    assert back == data


def test_html_report_of_hostile_names_draws_its_charts_and_runs_no_script(hostile_capture: Path,
                                                                           tmp_path: Path) -> None:
    page = tmp_path / "hostile.html"
    page.write_text(html.render(capture_page(hostile_capture)))
    text_ = page.read_text()
    _html_is_inert(text_)
    shown = browser_render(page)
    assert shown.errors() == [] and shown.attr("data-errors") == "0" and shown.attr("data-ready") == "1"
    assert shown.attr("data-pwned") is None
    charts = shown.charts()
    assert [k for k, _ in charts] == ["bars", "timeline"] and all(n > 0 for _, n in charts)
    # the names are on the page as text (table cells and the charts' tooltips)
    for name in HOSTILE[:9]:
        assert htmllib.escape(escape.term(name), quote=False) in shown.dom or \
            htmllib.escape(escape.term(name)) in shown.dom, name
    assert "&lt;!--&lt;script&gt;" in shown.dom


def test_html_bench_report_of_hostile_variants(tmp_path: Path) -> None:
    bench = json.loads(fixture("h100-workloads", "bench-add.json").read_text())
    for i, r in enumerate(bench["rows"]):
        r["variant"] = HOSTILE[i % 5 + 2]
    bench["workload"] = HOSTILE[3]
    page = tmp_path / "bench.html"
    page.write_text(html.render(html.Page(HOSTILE[2], [HOSTILE[4]], html.bench_sections(bench))))
    _html_is_inert(page.read_text())
    shown = browser_render(page)
    assert shown.errors() == [] and shown.attr("data-pwned") is None
    assert [k for k, _ in shown.charts()] == ["lines", "roofline"] and all(n > 0 for _, n in shown.charts())


def test_json_output_escapes_control_characters(hostile_capture: Path) -> None:
    out = jsonout.dumps(jsonout.overview_dict(api.analyze(hostile_capture)))
    assert "\x1b" not in out and "\u202e" not in out
    names = {r["Name"] for r in json.loads(out)["tables"]["kernels"]}
    assert names == set(HOSTILE[:9])


# ----------------------------------------------------------------------------------------- CSV


def test_csv_cells_that_spreadsheets_would_run_are_neutralised() -> None:
    df = pd.DataFrame({"variant": ["=1+2", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx", "plain", "a=b"],
                       "median_ms": [-1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]})
    rows = list(csv.reader(io.StringIO(escape.to_csv(df))))
    assert rows[0] == ["variant", "median_ms"]
    assert [r[0] for r in rows[1:]] == ["'=1+2", "'+SUM(A1)", "'-2+3", "'@cmd", "'\tx", "'\rx", "plain", "a=b"]
    assert rows[1][1] == "-1.5"  # numbers, negative ones too, stay numbers
    assert escape.csv_cell(-3) == -3 and escape.csv_cell(None) is None


# ---------------------------------------------------------------------------------- matplotlib


def test_plot_labels_are_not_mathtext(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from nsighttk.report import plots

    rows = pd.DataFrame([{"size": 1 << 12, "variant": v, "status": "ok", "gbps": 10.0 + i}
                         for i, v in enumerate(["$\\badcommand{x}$", "_hidden", "$x$ and $\\frac{1}{$"])])
    rep = BenchReport("$\\badcommand$", "cpu", "float32", 100.0, rows)
    out = plots.bandwidth_vs_size(rep, tmp_path / "p.png")
    assert out.is_file() and out.stat().st_size > 0


# ------------------------------------------------------------------------------ escape.term


def test_term_makes_every_control_and_format_character_visible() -> None:
    assert escape.term("a\x1b[2Jb\tc\nd\x7f\x9b\u202e\u2028\u200b\udcff e") == \
        "a\\x1b[2Jb\\tc\\nd\\x7f\\x9b\\u202e\\u2028\\u200b\\udcff e"
    assert escape.term("plain [bold] 全角 ü") == "plain [bold] 全角 ü"
    assert escape.markup("[/]") == "\\[/]"
    assert escape.html_text("<a href='x'>&") == "&lt;a href=&#x27;x&#x27;&gt;&amp;"


def test_json_text_is_jsons_indented_text_with_nan_as_null() -> None:
    """``dumps`` lays out the C encoder's line with msgspec: the text is ``json.dumps(..., indent=1)``'s
    byte for byte (Python's float spelling, ASCII escapes, empty containers), numpy scalars are
    numbers and NaN, infinities and pandas' NA are null."""
    import math

    import numpy as np

    data = {"floats": [1e16, 1e-5, 0.1, 1.0, -0.0, 2.5e-7, 1.2345678901234568e17, 5e-324],
            "text": ["é", "\u2028", "<\x01\"\\", "日本"], "empty": [{}, [], {"a": []}],
            "ints": [0, -1, 10**30, np.int64(2**62), np.int8(-3)], "flags": [True, np.bool_(False), None],
            "bad": [math.nan, math.inf, -math.inf, np.float64("nan"), pd.NA, np.float32(0.5)], 7: "key",
            "frame": pd.DataFrame({"a": [1, 2], "b": [0.5, math.nan]})}
    text = jsonout.dumps(data)
    assert text == json.dumps(jsonout.clean(data), indent=1) + "\n"
    back = json.loads(text)
    assert back["bad"] == [None, None, None, None, None, 0.5] and back["ints"][3] == 2**62
    assert back["frame"] == [{"a": 1, "b": 0.5}, {"a": 2, "b": None}] and back["7"] == "key"
    assert text.isascii() and "NaN" not in text and "Infinity" not in text
    odd = {"path": "/tmp/\udcff\ud800", "n": [1.5, {}]}  # (lone surrogates: msgspec refuses, json's text)
    assert jsonout.dumps(odd) == json.dumps(odd, indent=1) + "\n"
