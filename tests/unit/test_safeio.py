"""nsighttk.safeio: inputs checked with stat before opening (FIFOs, devices, folders refused without
hanging), bounded JSON (size and depth), atomic outputs (no partial file under a final name, the
old file intact after Ctrl-C or a full disk)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from nsighttk import safeio
from nsighttk.errors import InputFileError, OutputFileError


def test_inputs_are_checked_without_opening(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # opening it for reading would block forever
    for path, kind in ((fifo, "FIFO"), (Path("/dev/zero"), "character device"), (tmp_path, "folder"),
                       (tmp_path / "missing", "no such file")):
        with pytest.raises(InputFileError, match=kind):
            safeio.check_input(path)
    assert safeio.check_input(tmp_path, allow_dir=True)
    with pytest.raises(InputFileError, match="FIFO"):
        safeio.read_head(fifo)


def test_json_is_bounded_in_size_and_depth(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 40_000 + "]" * 40_000)  # 80 KB that once took 4 GB to analyse
    with pytest.raises(InputFileError, match="deeper than"):
        safeio.load_json(deep)
    assert safeio.read_json_or_none(deep) is None
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"name": "[" * 1000 + '\\"{', "rows": [[1, 2], {"a": []}]}))
    assert safeio.load_json(ok)["rows"][1] == {"a": []}  # brackets in strings are not nesting
    with pytest.raises(InputFileError, match="MiB"):
        safeio.load_json(ok, max_bytes=10)
    with pytest.raises(InputFileError, match="not valid JSON"):
        safeio.loads_json(b'{"a": ', "x")


def test_outputs_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "sub" / "report.csv"
    safeio.write_text(out, "good\n")
    with pytest.raises(KeyboardInterrupt), safeio.atomic_write(out) as fh:
        fh.write("half of a new report")
        raise KeyboardInterrupt
    assert out.read_text() == "good\n" and os.listdir(out.parent) == ["report.csv"]

    real_write = os.fsync

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OutputFileError, match="disk is full"):
        safeio.write_text(out, "x" * 10_000)
    monkeypatch.setattr(os, "fsync", real_write)
    assert out.read_text() == "good\n" and os.listdir(out.parent) == ["report.csv"]


def test_output_targets_that_are_not_files_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "afile").write_text("x")
    for path, message in ((Path("/dev/null"), "character device"), (fifo, "FIFO"), (tmp_path, "folder"),
                          (tmp_path / "afile" / "out.csv", "is a file"),
                          (tmp_path / ("n" * 300), "longer than the file system allows")):
        with pytest.raises(OutputFileError, match=message):
            safeio.write_text(path, "data")
    assert Path("/dev/null").is_char_device() and fifo.is_fifo()
    with pytest.raises(OutputFileError, match="already exists"):
        safeio.write_text(tmp_path / "afile", "y", overwrite=False)
    assert (tmp_path / "afile").read_text() == "x"
