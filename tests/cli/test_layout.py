"""Readable at 80, 100 and 120 columns: every terminal view of the real fixtures
is rendered at each width and checked for what a reader needs: no line wider than the terminal,
every kernel named by what tells it apart (never cut to "void at::native::…"), every finding's
text in full, the essential columns kept, units that scale.  Piped output is 100 columns wide;
``--width 0`` cuts nothing.
Plus the console factory (--width, $COLUMNS, terminal, pipe) and the smaller rendering fixes of
item 6 (Kineto heading, arch caveat, model table, KiB)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import capture, fixture, requires_nvcc
from rich.cells import cell_len
from rich.console import Console

from nsighttk import api, arch
from nsighttk.analysis.ncu_summary import summarize
from nsighttk.bench import BenchReport
from nsighttk.errors import BuildFailed, UsageError
from nsighttk.report import (
    bench_text,
    compare_text,
    kernel_label,
    model_md,
    ncu_text,
    runs_text,
    text,
    toolchain_text,
    torch_text,
)
from nsighttk.report.console import PIPED_WIDTH, UNBOUNDED, make_console, resolve_width
from nsighttk.report.layout import LONGEST, Col, clip, cut, cut_middle, middle, table

WIDTHS = [80, 100, 120]
NSYS = [capture("streams_demo"), fixture("h100-ranks", "rank0.sqlite"),
        fixture("h100-torch2.11", "bert_bs1_seq128.trace.json.gz"), fixture("h100-torch2.11", "gelu", "trace.json")]
NCU = [fixture("h200-ncu2025.3", "matmul_tiled.ncu-rep"), fixture("h200-ncu2025.3", "streams_demo.raw.csv"),
       fixture("h200-ncu2025.3", "add_grid_b256.details.csv")]
BENCH = sorted(fixture("h100-workloads").glob("bench-*.json"))


def rendered(fn: Any, width: int | None, *args: Any, **kw: Any) -> str:
    buf = io.StringIO()
    fn(*args, make_console(width if width is not None else 0, file=buf), **kw)
    out = buf.getvalue()
    if width is not None:
        wide = [ln for ln in out.splitlines() if cell_len(ln) > width]
        assert not wide, f"{len(wide)} line(s) wider than {width}: {wide[:2]}"
    return out


def squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


def column(out: str, title: str, header: str, upto: str | None = None) -> list[str]:
    """The cells of the table titled ``title`` in column ``header`` (up to the column ``upto``,
    else to the end of the line); a cell wrapped over several lines is joined with spaces."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title[:60]))

    def at(line: str, word: str) -> int:
        m = re.search(rf"(^|\s){re.escape(word)}(\s|$)", line)
        assert m, (word, line)
        return m.start() + (1 if m.group(1) else 0)

    head = next(i for i in range(start, len(lines)) if re.search(rf"(^|\s){re.escape(header)}(\s|$)", lines[i]))
    assert set(lines[head + 1].strip()) == {"─"}, lines[head + 1]
    off = at(lines[head], header)
    end = at(lines[head], upto) if upto else None
    first = len(lines[head]) - len(lines[head].lstrip()) + len(lines[head].split()[0])
    cells: list[str] = []
    for ln in lines[head + 2:]:
        if not ln.strip() or re.match(r"  [^\s\d-]", ln):
            break
        part = ln[off:end].strip()
        if ln[:first].strip() or not cells:
            cells.append(part)
        elif part:
            cells[-1] += " " + part
    return cells


def names_are_distinct_and_readable(cells: list[str], names: list[str]) -> None:
    """Each row names its kernel in full, or by its short form (what it does first: its family and
    functor, op, GEMM tile or collective), and no two rows read the same."""
    assert len(cells) == len(names) and len(set(cells)) == len(cells), cells
    for cell, name in zip(cells, names, strict=True):
        label = kernel_label.short_name(name)
        text = cell.rstrip("…").strip()
        assert name.startswith(text) or label.startswith(text) or text.split()[0] == label.split()[0], (cell, name)
        assert not cell.startswith("void ") or name.startswith(text), cell


# ------------------------------------------------------------------------------- nsys / Kineto


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", NSYS, ids=lambda p: p.name)
def test_analyze_fits_the_width_and_keeps_what_matters(path: Path, width: int) -> None:
    ov = api.analyze(path)
    out = rendered(text.render, width, ov)
    flat = squash(out)
    for f in ov.findings:  # every finding in full (wrapped, never cut)
        for part in (f.title, f.evidence, f.suggestion):
            assert squash(part) in flat, part
    k = ov.tables["kernels"].head(text.TOP)
    title = "CUDA kernels (cuda_gpu_kern_sum"
    names_are_distinct_and_readable(column(out, title, "Kernel"), list(k["Name"]))
    header = next(ln for ln in out.splitlines() if ln.startswith("Time %"))
    assert "Total" in header and "Count" in header
    for note in ov.notes:
        assert squash(note) in flat
    assert not re.search(r"\d,\d{3},\d{3}(\.\d+)? (ns|us)", out)  # times scale: no "1,258,400 us"


def test_piped_output_is_100_columns_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    buf = io.StringIO()  # not a terminal
    con = make_console(file=buf)
    assert con.width == PIPED_WIDTH == 100
    ov = api.analyze(NSYS[0])
    text.render(ov, con)
    lines = buf.getvalue().splitlines()
    assert max(map(cell_len, lines)) <= 100 and any(cell_len(ln) > 90 for ln in lines)


@pytest.mark.parametrize("path", NSYS, ids=lambda p: p.name)
def test_output_at_width_0_is_not_cut(path: Path) -> None:
    buf = io.StringIO()
    con = make_console(0, file=buf)
    assert con.width == UNBOUNDED
    ov = api.analyze(path)
    text.render(ov, con)
    out = buf.getvalue()
    assert "…" not in out
    for name in ov.tables["kernels"]["Name"].head(text.TOP):
        assert name in out  # the full C++ name, on one line
    assert all(squash(f.evidence) in squash(out) for f in ov.findings)


def test_the_cli_follows_columns_and_else_is_100_wide_when_piped(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from nsighttk.cli import cli

    path = str(NSYS[0])
    longest = max(api.analyze(NSYS[0]).tables["kernels"]["Name"].head(text.TOP), key=len)
    widths = {}
    for env, args in [({}, []), ({"COLUMNS": "130"}, []), ({"COLUMNS": "130"}, ["--width", "0"])]:
        monkeypatch.delenv("COLUMNS", raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        res = CliRunner().invoke(cli, ["analyze", path, *args])
        assert res.exit_code == 0, res.output
        widths[(tuple(env.items()), tuple(args))] = max(map(cell_len, res.stdout.splitlines()))
        if args:
            assert longest in res.stdout
    assert list(widths.values())[:2] == [100, 130] and list(widths.values())[2] > 1000
    res = CliRunner().invoke(cli, ["analyze", path, "--json"])  # JSON: every name in full
    assert longest in re.findall(r'"((?:[^"\\]|\\.)*)"', res.stdout)


def test_a_name_is_cut_to_the_longest_a_cell_holds_in_time_linear_in_its_length() -> None:
    assert clip("ab" * 10, 7) == "ababab…" and clip("abc", 3) == "abc"
    assert len(clip("x" * (1 << 20))) == LONGEST and clip("x" * (1 << 20)).endswith("x…")
    assert cut("字" * 1000, 9) == "字" * 4 + "…" and cut("abc", 3) == "abc" and cut("abcd", 3) == "ab…"
    assert cut("e\u0301" * 8, 8) == "e\u0301" * 8  # combining marks take no cell: nothing to cut
    assert cut_middle("a/" + "字" * 1000 + "/end", 12) == "a/字…字/end"
    huge = "void k<" + "字" * (1 << 20) + ">(int)"  # a 1 MiB name, as a kernel name and as a range
    for width in (100, 0):
        buf = io.StringIO()
        table(make_console(width, file=buf), [Col("n"), Col("Kernel", "left", flex=True, min_width=40),
                                               Col("Range", "left", flex=True, min_width=20)],
              [[str(i), c, middle(huge + str(i))] for i, c in enumerate(kernel_label.cells([huge, huge + "x"]))])
        lines = buf.getvalue().splitlines()
        assert len(lines) == 4 and all(cell_len(ln) <= (width or 4 * LONGEST + 20) for ln in lines)
        assert ("…" in lines[2]) and (width == 0) == (cell_len(lines[2]) > 2 * (LONGEST - 8))


def test_cutting_reads_each_character_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """cut and cut_middle measure a name in one pass (no slice re-measured per character): the
    cells of at most three passes over it are looked up, whatever its length and width."""
    from nsighttk.report import layout

    looked = [0]
    real = layout.get_character_cell_size

    def counted(ch: str) -> int:
        looked[0] += 1
        return real(ch)

    monkeypatch.setattr(layout, "get_character_cell_size", counted)
    for s in ("e\u0301" * 5000, "字" * 10_000, "x" * 10_000, "\x1b" * 5000 + "tail", "abc" * 100 + "\u0301" * 3000):
        for width in (8, 80):
            looked[0] = 0
            assert cell_len(cut(s, width)) <= width and cell_len(cut_middle(s, width)) <= width
            assert looked[0] <= 6 * len(s) + 4 * width, (s[:3], width, looked[0])


@pytest.mark.parametrize("name", ["cudaLaunch_" + "x" * (1 << 20), "void k<" + "float, " * (1 << 17) + ">(int)"])
def test_a_sentence_quoting_a_huge_name_is_a_few_lines_keeping_both_ends(name: str) -> None:
    """Prose that quotes a 1 MiB name (with or without blanks) wraps to a bounded number of lines,
    its start and its end (where the sentence ends) kept."""
    from nsighttk.report.layout import PROSE, wrap

    lines = wrap(f"the CUDA call taking most CPU time is {name} (41.2% of it).", 100, "  ", "    ")
    assert 2 <= len(lines) <= PROSE // 90 + 1 and all(len(ln) <= 100 for ln in lines)
    assert lines[0].startswith("  the CUDA call taking") and lines[-1].endswith("(41.2% of it).")
    assert "…" in "".join(lines)


def test_a_kineto_trace_is_headed_as_one(tmp_path: Path) -> None:
    out = rendered(text.render, 100, api.analyze(NSYS[2]))
    first = out.splitlines()[:3]
    assert first[0] == "torch.profiler trace" and first[1] == f"  {NSYS[2]}"[:len(first[1])]
    assert any(ln.startswith("  Kineto trace schema 1 |") for ln in out.splitlines()[1:8])
    assert "nsys" not in "\n".join(first)
    assert rendered(text.render, 100, api.analyze(NSYS[0])).startswith("nsys capture\n")
    deep = tmp_path.joinpath(*["a-long-folder-name-" + str(i) for i in range(12)], "trace.json.gz")
    deep.parent.mkdir(parents=True)
    deep.write_bytes(NSYS[2].read_bytes())
    lines = rendered(text.render, 100, api.analyze(deep)).splitlines()
    path_lines = lines[1:lines.index(next(ln for ln in lines if ln.startswith("  Kineto trace schema 1 |")))]
    assert lines[0] == "torch.profiler trace" and len(path_lines) > 1
    assert "".join(ln.strip() for ln in path_lines) == str(deep)  # broken only after a "/"
    assert all(ln.endswith("/") for ln in path_lines[:-1])



def test_each_note_is_said_once_in_each_output() -> None:
    from click.testing import CliRunner

    from nsighttk.cli import cli

    add = str(capture("add"))  # no NVTX: the loader and the reports each note it
    notes = api.analyze(add).notes
    assert notes and len(set(notes)) == len(notes)
    assert len([n for n in notes if "NVTX" in n]) == 1, notes  # (one fact, in one wording)
    for args in ([], ["--json"], ["--markdown"]):
        res = CliRunner().invoke(cli, ["analyze", add, *args])
        assert res.exit_code == 0, res.output
        for note in notes:
            assert res.stdout.count(note) == 1, (args, note)

#: kernel names of a PyTorch training step (GPT-2-like: copies, softmax, dropout, bf16 GEMMs,
#: reductions, layer norm and its gradient, GELU and its gradient, fused AdamW, embedding
#: gathers), spelled as nsys and Kineto print them; there is no such capture in the fixtures yet
TRAINING_KERNELS = [
    'void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_k'
    'ernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const:'
    ':{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&'
    ')::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambd'
    'a(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIterato'
    'rBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::Tens'
    'orIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()('
    ') const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1})',
    'void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&'
    ')::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<cha'
    'r*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::nat'
    'ive::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel'
    '_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lam'
    'bda(float)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator'
    '<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)',
    'void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymo'
    'us namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)',
    'void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonym'
    'ous namespace)::SoftMaxBackwardEpilogue>(float*, float const*, float const*, long)',
    'void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>'
    '(at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<float, unsigned i'
    'nt>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)',
    'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_ker'
    'nel__5x_cublas',
    'sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_ker'
    'nel__5x_cublas',
    'void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, flo'
    'at, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, floa'
    't, float>, unsigned int, float, 4>)',
    'void at::native::reduce_kernel<128, 4, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at:'
    ':native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, u'
    'nsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_f'
    'unctor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, f'
    'loat, 4>)',
    'void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float con'
    'st*, float const*, float const*, float*, float*, float*)',
    'void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, float>(float cons'
    't*, float const*, float const*, float const*, float const*, float*, int)',
    'void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorItera'
    'torBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{la'
    'mbda(float, float)#1}, std::array<char*, 3ul> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIt'
    'eratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::'
    '{lambda(float, float)#1}, std::array<char*, 3ul>)',
    'void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&'
    ', at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(flo'
    'at)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native'
    '::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std:'
    ':array<char*, 2ul>)',
    'void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::Ten'
    'sorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_'
    'MODE)1, false>, double*, double, double, double, double, double, bool, bool*, bool*>(at::native::(anonym'
    'ous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4,'
    ' (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, bool*, bool*)',
    'void cutlass::Kernel2<cutlass_80_simt_sgemm_128x64_8x5_nn_align1>(cutlass_80_simt_sgemm_128x64_8x5_nn_al'
    'ign1::Params)',
    'void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_kernel_'
    'impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{la'
    'mbda(char*, char const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at'
    '::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c1'
    '0::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&)::{lambda(int)#1}>(long, at::native::gpu'
    '_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::Ar'
    'rayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, c10::'
    'ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::Tenso'
    'rIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&):'
    ':{lambda(int)#1})',
    'void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::nat'
    'ive::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<float'
    ', float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)',
    'void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul>'
    ' >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)',
    'nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN',
    'ampere_sgemm_128x64_tn',
]


@pytest.mark.parametrize("width", [28, 36, 44, 60])
def test_training_kernels_keep_what_they_do_in_a_narrow_column(width: int) -> None:
    cells = [c.at(width, short=True) for c in kernel_label.cells(TRAINING_KERNELS)]
    assert all(cell_len(c) <= width for c in cells)
    assert len(set(cells)) == len(cells), cells
    by = dict(zip(TRAINING_KERNELS, cells, strict=True))
    copies = [c for n, c in by.items() if "direct_copy_kernel_cuda" in n]
    assert len(copies) == 2 and all("direct_copy" in c for c in copies)  # the functor, not "void at::"
    assert "mean" in by[TRAINING_KERNELS[7]] and "sum" in by[TRAINING_KERNELS[8]]
    assert "gelu_backward" in by[TRAINING_KERNELS[11]]
    assert "gelu" in by[TRAINING_KERNELS[12]].replace("gelu_backward", "")


# ------------------------------------------------------------------------------------------ ncu


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", NCU, ids=lambda p: p.name)
def test_ncu_view_fits_and_shows_every_finding(path: Path, width: int) -> None:
    s = summarize(api.load(path))
    out = rendered(ncu_text.render, width, s, top_rules=50)
    flat = squash(out)
    rules = s.rules[s.rules["type"].isin(["OPT", "WRN", "ERR"])]
    for r in rules.itertuples(index=False):
        assert squash(ncu_text.ncu_prose(r.description)) in flat, r.rule
        assert "@section:" not in out
    for r in s.kernels.itertuples(index=False):
        assert f"[{r.kernel_id}] {kernel_label.short_name(r.kernel)}"[:width] in out
        assert squash(str(r.verdict)) in flat


def test_ncu_shared_memory_is_in_kib_as_arch_says() -> None:
    s = summarize(api.load(NCU[0]))
    r = s.kernels.iloc[0]
    smem = int(r["static_smem_bytes"] + r["dynamic_smem_bytes"])
    assert smem % 1024 == 0
    out = rendered(ncu_text.render, 120, s)
    assert f"{smem // 1024} KiB shared memory/block" in out and " kB shared" not in out
    out = rendered(toolchain_text.render_arch, 120, "H100", arch.lookup("H100"))
    assert " KiB shared memory" in out


@pytest.mark.parametrize("width", WIDTHS)
def test_nsys_ncu_join_keeps_limiter_and_verdict(width: int) -> None:
    joined = api.join(capture("streams_demo"), NCU[1])
    out = rendered(ncu_text.render_join, width, joined)
    header = next(ln for ln in out.splitlines() if ln.startswith("GPU %"))
    assert "Limiter" in header and "Verdict" in header
    assert column(out, "Kernels: GPU time share", "Verdict", "Kernel") == list(joined["verdict"])
    limiters = [x if isinstance(x, str) else "-" for x in joined["limiters"]]
    assert column(out, "Kernels: GPU time share", "Limiter", header.split()[header.split().index("Limiter") + 1]) \
        == limiters
    cells = column(out, "Kernels: GPU time share", "Kernel")
    assert len(cells) == len(joined) and len(set(cells)) == len(cells)


# ---------------------------------------------------------------------------------------- bench


def _bench(path: Path) -> BenchReport:
    d = json.loads(path.read_text())
    return BenchReport(d["workload"], d["device"], d["dtype"], d.get("copy_gbps"), pd.DataFrame(d["rows"]))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", BENCH, ids=lambda p: p.stem)
def test_bench_table_fits_without_cutting_values(path: Path, width: int) -> None:
    rep = _bench(path)
    out = rendered(bench_text.render, width, rep)
    assert "…" not in out  # no value cut ("1,048,…", "torch_a…")
    lines = out.splitlines()
    header = next(ln for ln in lines if ln.startswith("Size"))
    for col in ("Variant", "Median", "GB/s"):
        assert col in header
    body = "\n".join(lines[lines.index(header) + 2:])
    for v in rep.rows["variant"].unique():
        assert re.search(rf"\s{re.escape(v)}\s", body), v
    assert "0.000" not in out and not re.search(r"\d{4,}(,\d{3})*\.\d us", out)
    medians = re.findall(r"\d[\d,.]* (ns|us|ms|s)\b", body)
    assert len(medians) >= len(rep.rows[rep.rows["status"] == "ok"])



@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", BENCH, ids=lambda p: p.stem)
def test_bench_names_the_columns_the_width_leaves_out(path: Path, width: int) -> None:
    rep = _bench(path)
    lines = rendered(bench_text.render, width, rep).splitlines()
    header = next(ln for ln in lines if ln.startswith("Size"))
    said = squash(" ".join(ln for ln in lines if "Not shown at this width:" in ln))
    assert ("Rel. error" in header) != ("Rel.error" in said)  # the correctness figure: shown, or said to be left out
    ps = "p20-p80"
    assert (ps in header) != (ps in said)
    assert "Not shown" not in rendered(bench_text.render, None, rep)

def test_bench_units_scale_and_cache_figures_say_why() -> None:
    rows = pd.DataFrame([
        {"size": 1 << 20, "variant": "small", "status": "ok", "reason": "", "median_ms": 1258.4, "p20_ms": 1250.0,
         "p80_ms": 1270.0, "gbps": 0.5, "tflops": 2e-6, "pct_of_copy": 1777.9, "speedup_vs_baseline": 1.0,
         "rel_error": 0.0},
        {"size": 1000, "variant": "odd", "status": "skipped", "reason": "needs triton (not installed)"},
    ])
    out = rendered(bench_text.render, 80, BenchReport("w", "cpu", "float32", 10.0, rows))
    assert "1.26 s" in out and " 2 M " in out and "0.000" not in out  # 2e-6 TFLOP/s = 2 MFLOP/s
    assert "1777.9" not in out and "cache" in out and "didnotcomefromDRAM" in squash(out)
    assert "2^20" in out and "1,000" in out
    assert "[1] skipped: needs triton (not installed)" in out


# ------------------------------------------------------------------------------ compare, ranks


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_and_ranks_fit(width: int) -> None:
    r0, r1 = fixture("h100-ranks", "rank0.sqlite"), fixture("h100-ranks", "rank1.sqlite")
    cmp = api.compare([str(r0)], [str(r1)], force=True)
    out = rendered(compare_text.render, width, cmp, show_all=True)
    for name in cmp.table["name"]:
        assert kernel_label.short_name(str(name))[: width // 3] in out or str(name)[: width // 3] in out
    skew = api.ranks.skew_of([r0, r1])
    out = rendered(runs_text.render_ranks, width, skew)
    assert "is the slowest" in out


# ----------------------------------------------------------------------------------- model, arch


def _comparison() -> dict[str, Any]:
    """nsighttk model's comparison of the BERT run whose Markdown is in the fixtures."""
    md = fixture("h100-torch2.11", "bert_comparison.md").read_text().splitlines()
    head = next(ln for ln in md if ln.startswith("| batch"))
    cats = [c.strip() for c in head.strip("|").split("|")][6:]
    configs = []
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
    for ln in md[md.index(head) + 2:]:
        c = [x.strip() for x in ln.strip("|").split("|")]
        times = {cat: {"self_device_ns": int(float(v.split()[0]) * unit[v.split()[1]]), "self_cpu_ns": 0}
                 for cat, v in zip(cats, c[6:], strict=True)}
        configs.append({"batch_size": int(c[0]), "seq_len": int(c[1]), "status": c[2],
                        "latency": {"median_ms": float(c[3]), "sequences_per_s": float(c[4].replace(",", "")),
                                    "tokens_per_s": float(c[5].replace(",", ""))}, "categories": times})
    return {"model": "bert", "device": "cuda", "dtype": "float32", "configs": configs}


@pytest.mark.parametrize("width", WIDTHS)
def test_model_comparison_is_a_table_for_the_terminal(width: int) -> None:
    c = _comparison()
    md = model_md.comparison(c)
    assert max(len(ln) for ln in md.splitlines()) > 120  # the Markdown is too wide for a terminal...
    out = rendered(torch_text.render_model_comparison, width, c)  # ...this is not
    for r in c["configs"]:
        assert f"{r['batch_size']}x{r['seq_len']}" in out
    for cat in ("matrix", "attention", "normalization", "activation"):
        assert re.search(rf"^{cat}\s", out, re.M), cat
    assert "no time in: memory, other" in out


def test_model_report_leaves_out_missing_native_functions_entries() -> None:
    ops = pd.DataFrame([{"op": "aten::mm", "category": "matrix", "calls": 3, "self_device_ns": 10,
                         "device_total_ns": 10, "self_cpu_ns": 5, "kernels": 1, "func": float("nan"),
                         "cuda_sources": float("nan")},
                        {"op": "aten::add", "category": "elementwise", "calls": 3, "self_device_ns": 5,
                         "device_total_ns": 5, "self_cpu_ns": 5, "kernels": 1,
                         "func": "add.Tensor(Tensor self, Tensor other) -> Tensor", "cuda_sources": ["a.cu"]}])
    cats = pd.DataFrame([{"category": "matrix", "self_device_ns": 10, "self_cpu_ns": 5, "calls": 3,
                          "device_pct": 66.7}])
    cfg = type("Cfg", (), {"real_bert": False, "dtype": "float32"})()
    md = model_md.config_report("bert", 1, 8, "cuda", cfg, ops, cats, pd.DataFrame(), None)
    assert "nan" not in md
    assert md.count("native_functions.yaml") == 1 and "`add.Tensor(Tensor self, Tensor other) -> Tensor`" in md


def test_arch_keeps_its_caveat() -> None:
    out = rendered(toolchain_text.render_arch, 80, "A100", arch.lookup("A100"))
    assert "[fromtheCUDAguide;notyetcheckedonadevice]" in squash(out)  # (wrapped at 80)


# ------------------------------------------------------------------------------- console factory


def test_console_width_comes_from_the_option_then_columns_then_the_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert resolve_width(100, io.StringIO(), {"COLUMNS": "90"}) == 100
    assert resolve_width(0, io.StringIO(), {}) == UNBOUNDED
    assert resolve_width(None, io.StringIO(), {"COLUMNS": "90"}) == 90
    assert resolve_width(None, io.StringIO(), {"COLUMNS": "abc"}) == PIPED_WIDTH
    assert resolve_width(None, io.StringIO(), {}) == PIPED_WIDTH  # a pipe or a file
    assert resolve_width(None, Tty(), {}) is None  # a terminal: rich measures it
    with pytest.raises(UsageError, match="--width 10 is too narrow"):
        resolve_width(10, io.StringIO(), {})
    assert isinstance(make_console(100, file=io.StringIO()), Console)


# ------------------------------------------------------------------------------------- nvcc log


@requires_nvcc
def test_a_failed_build_says_where_the_full_log_is(tmp_path: Path) -> None:
    from nsighttk.build import BuildConfig, build

    src = tmp_path / "bad.cu"
    src.write_text("__global__ void k( { }\n")
    with pytest.raises(BuildFailed) as info:
        build(src, BuildConfig(["sm_80"], out_root=tmp_path / "b"))
    assert "full log above" not in str(info.value)
    log = Path(re.search(r"nvcc's full output: (\S+\.nvcc\.log)", str(info.value.hint)).group(1))
    assert log.is_file() and "error" in log.read_text()
