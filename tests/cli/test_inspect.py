"""`nsighttk inspect` without a GPU: Triton kernels compiled ahead of time for sm_90 with the JIT's
own specialization (PTX, SASS, registers from the cubin, occupancy), torch.compile's output code
captured into the run directory, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_exit

from nsighttk.analysis.kernels.occupancy import occupancy
from nsighttk.cli import cli

pytest.importorskip("triton")
pytest.importorskip("torch")


def test_triton_variants_compile_ahead_of_time_with_ptx_sass_and_resources(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["inspect", "square", "--variants", "triton,triton_rows", "--arch", "sm_90",
                                   "--reports-dir", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    run = Path(doc["run_dir"])
    assert doc["mode"] == "ahead-of-time for sm_90" and json.loads((run / "run.json").read_text())["status"] == "ok"
    by = {k["variant"]: k for k in doc["kernels"]}
    assert set(by) == {"triton", "triton_rows"}
    block, rows = by["triton"], by["triton_rows"]
    assert (block["kernel"], block["num_warps"], rows["kernel"], rows["num_warps"]) == (
        "_square_block_kernel", 4, "_square_row_kernel", 16)  # square.py's num_warps heuristic for 4096 columns
    ptx = (run / block["ptx"]).read_text()
    assert ".target sm_90a" in ptx and ".entry _square_block_kernel" in ptx
    sass = (run / block["sass"]).read_text()
    assert "Function : _square_block_kernel" in sass
    for k in (block, rows):
        assert k["arch"] == "sm_90" and 0 < k["registers"] <= 255 and k["stack_bytes"] == 0
        occ = occupancy("sm_90", k["threads"], k["registers"], k["static_smem_bytes"], k["shared_bytes"])
        assert k["theoretical_occupancy_pct"] == pytest.approx(occ.theoretical_pct)
    # the JIT specializes 16-byte-aligned pointers and sizes divisible by 16, as for this launch: without
    # that the same kernel compiles to scalar LDG.E loads (checked by hand: 32 LDG.E, 72 registers)
    assert "LDG.E.128" in sass and "ld.global.v4" in ptx


def test_compile_variant_keeps_inductor_output_code(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["inspect", "add", "--variants", "compiled", "--reports-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    run = next(tmp_path.glob("*-inspect-add"))
    code = list((run / "compiled" / "output_code").glob("*.py"))
    assert code and "def call(" in code[0].read_text()
    assert "generated C++ for the CPU" in res.stdout
    assert "Inductor output code" in res.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["add", "--variants", "torch_add"], "not a Triton or torch.compile variant of add"),
    (["add", "--variants", "nope"], "workload add has no variant nope"),
    (["nosuch"], "unknown workload 'nosuch'"),
    (["square", "--variants", "triton", "--arch", "sm_9x"], "sm_9x"),
    (["square", "--variants", "triton", "--arch", "sm_50"], "--arch sm_50: no occupancy limits for sm_50"),
    (["square", "--variants", "triton", "--size", "0"], "--size 0: a workload needs at least one element"),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    res = CliRunner().invoke(cli, ["inspect", *args, "--reports-dir", str(tmp_path)])
    assert_exit(res, 2, line=message)


def test_missing_cuobjdump_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk import toolchain

    monkeypatch.setenv("NSIGHTTK_CUOBJDUMP", str(tmp_path / "no-cuobjdump"))
    toolchain.clear_cache()
    try:
        res = CliRunner().invoke(cli, ["inspect", "square", "--variants", "triton", "--reports-dir", str(tmp_path)])
    finally:
        toolchain.clear_cache()
    assert_exit(res, 3, line="NSIGHTTK_CUOBJDUMP")
    assert not list(tmp_path.glob("*-inspect-*"))  # nothing started
