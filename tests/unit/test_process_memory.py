"""The CLI's own process reuses the memory of freed arrays (settings.reuse_freed_memory): glibc
otherwise maps every allocation above 32 MB on its own and unmaps it when freed, so each large
temporary of an analysis is faulted in again, page by page (26 s of system time in a 10M-kernel
``analyze`` on the 2-core VM)."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

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


_ARENAS = """
import ctypes, os, sys, tempfile, threading
if sys.argv[1] == "reuse":
    from nsighttk.settings import reuse_freed_memory
    reuse_freed_memory()
import numpy as np
held, ready, done = [], threading.Barrier(5), threading.Event()
def work():
    held.append(np.ones(1 << 16))  # 512 KB from this thread's arena
    ready.wait()
    done.wait()
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
ready.wait()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
path = os.path.join(tempfile.mkdtemp(), "info.xml")
fp = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, fp)
libc.fclose(fp)
done.set()
print(open(path).read().count("<heap nr="))  # arenas in use
"""


@pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="needs glibc 2.33+")
def test_worker_threads_share_one_arena() -> None:
    """The reader's threads allocate chunks that the main thread frees: in one shared arena that
    memory serves the next arrays, where per-thread arenas kept it for threads that have finished."""
    def arenas(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _ARENAS, mode], capture_output=True, text=True, check=True)
        return int(out.stdout.strip())

    assert arenas("default") > 1  # glibc's own behaviour: an arena per thread, up to 8 per core
    assert arenas("reuse") == 1


@pytest.mark.parametrize("argv", [["--version"], ["stats", "-r", "cuda_gpu_mem_time_sum", "IN"]])
def test_the_cli_sets_it_up(argv: list[str], monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    """Through click and through the quick ``stats`` path alike."""
    import nsighttk.cli as cli
    from nsighttk import settings

    calls: list[str] = []
    monkeypatch.setattr(settings, "reuse_freed_memory", lambda: calls.append("reuse"))
    fixture = next(Path(__file__).parents[1].joinpath("fixtures").rglob("*.sqlite"))
    with pytest.raises(SystemExit) as ex:
        cli.main([str(fixture) if a == "IN" else a for a in argv])
    assert ex.value.code == 0
    assert calls == ["reuse"]


def test_it_is_harmless_where_there_is_no_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    from nsighttk import settings

    def no_libc(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(settings.ctypes, "CDLL", no_libc)
    settings.reuse_freed_memory()  # no exception: nothing changes on musl, macOS, Windows


def test_running_out_of_memory_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """numpy's MemoryError (an export too large for this machine, or a ulimit) is one line that says
    what to do, exit 2, no traceback."""
    import numpy as np

    import nsighttk.cli as cli
    from nsighttk import settings
    from nsighttk.commands import analyze

    def too_large(opts: object) -> None:
        np.zeros(1 << 62, dtype=np.uint8)  # numpy refuses: more than any machine has

    monkeypatch.setattr(settings, "reuse_freed_memory", lambda: None)
    monkeypatch.setattr(analyze, "run", too_large)
    fixture = next(Path(__file__).parents[1].joinpath("fixtures").rglob("*.sqlite"))
    with pytest.raises(SystemExit) as ex:
        cli.main(["analyze", str(fixture)])
    assert ex.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("nsighttk: error: out of memory (Unable to allocate") and "NSIGHTTK_MEMORY_MB" in err
