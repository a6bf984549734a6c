"""CSV text is quoted as the nsys that made the export quotes it.  nsys 2025.3.1 (its `nsys stats
-f csv` on a synthetic 1M-kernel export, compared byte for byte by tests/gpu/stats_speed.sh on an
H100 host) wraps a name with a comma in quotes and writes a quote as is: `kernel_with_"quotes"`;
nsys 2022.4 follows RFC 4180 (the quotes doubled, the field quoted)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import grown_export

from nsighttk.commands import stats
from nsighttk.report import nsys_format


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return grown_export(tmp_path_factory, kernels=300, runtime=400, memcpys=10, memsets=5, iterations=4)


def _set_version(path: Path, version: str) -> None:
    con = sqlite3.connect(path)
    con.execute("UPDATE META_DATA_EXPORT SET value = ? WHERE name = 'EXPORT_PRODUCT_VERSION'", (version,))
    con.commit()
    con.close()


@pytest.mark.parametrize(("version", "quoted", "comma"), [
    ("2025.3.2.0", ',kernel_with_"quotes"\n', '"square(int, float const*, float*)"'),
    ("2022.4.2.1", ',"kernel_with_""quotes"""\n', '"square(int, float const*, float*)"'),
])
def test_names_are_quoted_as_that_nsys_does(export: Path, tmp_path: Path, version: str, quoted: str,
                                           comma: str) -> None:
    f = tmp_path / "e.sqlite"
    f.write_bytes(export.read_bytes())
    _set_version(f, version)
    [out] = stats.run(stats.Options(f, "cuda_gpu_kern_sum", "csv", None, False))
    assert out.text is not None and quoted in out.text and comma in out.text


def test_quoting_outside_an_export_is_rfc() -> None:
    assert nsys_format._csv_quote('a"b') == '"a""b"'
    with nsys_format.csv_quoting_of("2025.3.1.0"):
        assert nsys_format._csv_quote('a"b') == 'a"b' and nsys_format._csv_quote("a,b") == '"a,b"'
    with nsys_format.csv_quoting_of(None):
        assert nsys_format._csv_quote('a"b') == '"a""b"'
