"""The CLI's own process reuses the memory of freed arrays (settings.reuse_freed_memory): glibc
otherwise maps every allocation above 32 MB on its own and unmaps it when freed, so each large
temporary of an analysis is faulted in again, page by page (26 s of system time in a 10M-kernel
``analyze`` on the 2-core VM)."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import pytest

_PROBE = """
import ctypes, sys
class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]
if sys.argv[1] == "reuse":
    from nsighttk.settings import reuse_freed_memory
    reuse_freed_memory()
import numpy as np
a = np.ones(64 << 17)  # 64 MB
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
print(libc.mallinfo2().hblkhd >> 20)  # MB in separately mapped blocks
"""


def _glibc_with_mallinfo2() -> bool:
    try:
        return hasattr(ctypes.CDLL("libc.so.6"), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="needs glibc 2.33+ (mallinfo2)")
def test_large_arrays_come_from_the_heap_once_reused() -> None:
    def mapped_mb(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True)
        return int(out.stdout.strip())

    assert mapped_mb("default") >= 64  # glibc's own behaviour: the array is a mapping of its own
    assert mapped_mb("reuse") < 64  # ours: it comes from the heap, where freed arrays stay for the next


def test_the_cli_sets_it_up(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import nsighttk.cli as cli

    calls: list[str] = []
    monkeypatch.setattr(cli, "reuse_freed_memory", lambda: calls.append("reuse"))
    with pytest.raises(SystemExit) as ex:
        cli.main(["--version"])
    assert ex.value.code == 0
    assert calls == ["reuse"]


def test_it_is_harmless_where_there_is_no_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk import settings

    def no_libc(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(settings.ctypes, "CDLL", no_libc)
    settings.reuse_freed_memory()  # no exception: nothing changes on musl, macOS, Windows
