from __future__ import annotations

import pytest
from click.testing import CliRunner

from nsighttk import arch
from nsighttk.cli import cli
from nsighttk.errors import UsageError


@pytest.mark.parametrize(("query", "sm"), [
    ("H100", "sm_90"), ("NVIDIA H100 80GB HBM3", "sm_90"), ("NVIDIA H200", "sm_90"), ("A100", "sm_80"),
    ("rtx4090", "sm_89"), ("GeForce RTX 3090", "sm_86"), ("T4", "sm_75"), ("B200", "sm_100"),
    ("RTX 5090", "sm_120"), ("V100", "sm_70"), ("9.0", "sm_90"), ("sm_120", "sm_120"), ("compute_80", "sm_80"),
])
def test_lookup(query: str, sm: str) -> None:
    assert arch.lookup(query)["arch"] == sm


def test_seed_table_corrected_for_blackwell() -> None:
    # the course notes said "B200 ... -arch=sm_90 (uses Hopper parameters)"; B200 is compute capability 10.0
    info = arch.lookup("B200")
    assert info["compute_capability"] == "10.0" and info["nvcc_flag"] == "-arch=sm_100"


def test_volta_marked_unsupported_by_cuda13() -> None:
    assert arch.lookup("V100")["cuda13_supported"] is False
    assert arch.lookup("H100")["cuda13_supported"] is True


def test_limits() -> None:
    h = arch.limits_for("sm_90a")
    assert (h.max_warps_per_sm, h.max_blocks_per_sm, h.registers_per_sm) == (64, 32, 65536)
    assert h.max_smem_per_sm_bytes == 233472  # cuDeviceGetAttribute on an H200
    assert arch.limits_for("8.6").max_threads_per_sm == 1536
    with pytest.raises(UsageError):
        arch.limits_for("sm_70")


def test_unknown_model() -> None:
    with pytest.raises(UsageError, match="unknown GPU model"):
        arch.lookup("Voodoo2")


def test_cli_table_and_query() -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["arch"])
    assert res.exit_code == 0 and "Blackwell" in res.stdout and "Turing" in res.stdout
    res = runner.invoke(cli, ["arch", "H200", "--json"])
    assert res.exit_code == 0 and '"arch": "sm_90"' in res.stdout
