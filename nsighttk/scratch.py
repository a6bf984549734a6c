"""The process's scratch folder: the temporary files nsighttk writes while it works (DuckDB's
blocks past its memory limit, an ``.nsys-rep`` exported to SQLite), all in one folder per process under
the temporary folder (``TMPDIR``: on a cluster node, its local disk).

Each user takes a folder of its own inside it (:func:`folder`) and removes it when done.  Whatever
such a removal missed (a Ctrl-C or SIGTERM arriving while it ran, an object alive at exit) goes
with the process's folder when the process ends.  A process killed outright (SIGKILL, the kernel's
out-of-memory killer, a node's time limit) cannot remove its own: the next nsighttk process on the
same host removes every such folder whose process is gone.  A process holds a lock on its folder
while it lives (``flock``: released by the kernel however the process ends, and seen across PID
namespaces), so a folder is taken for abandoned only when its lock can be had; where the file
system has no locks, a folder has no lock file and is never taken.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import os
import re
import shutil
import socket
import tempfile
import threading
import weakref
from pathlib import Path

from nsighttk.errors import OutputFileError

try:
    import fcntl
except ImportError:  # (not on Windows: no lock, so no folder is ever taken for abandoned)
    fcntl = None  # type: ignore[assignment]

__all__ = ["Folder", "failed", "folder", "remove", "root"]

PREFIX = "nsighttk-scratch-"
_LOCK = ".lock"
#: the temporary folder (as it was when asked for) -> the scratch folder there, the descriptor holding
#: its lock, and the process that made it (a forked child inherits its parent's)
_roots: dict[str, tuple[Path, int | None, int]] = {}
_mutex = threading.Lock()


def _forked() -> None:
    """In a forked child: a fresh lock (the parent's may have been held by another of its threads,
    which the child does not have: the child would wait on it forever)."""
    global _mutex
    _mutex = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def failed(where: Path | str, ex: OSError) -> OutputFileError:
    """One line for a temporary file that could not be written (a full disk, no permission)."""
    if ex.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = ("free some space there, or point TMPDIR at a disk with room "
                "(or set NSIGHTTK_MEMORY_MB higher, so that less is written)")
    else:
        hint = "point TMPDIR at a folder nsighttk may write to"
    return OutputFileError(f"cannot write temporary files in {where}: {ex.strerror or ex}", hint)


@functools.cache
def _host() -> str:
    """This host's name as it may appear in a folder's name (folders under a TMPDIR shared by
    several hosts are told apart by it: a lock is no proof across hosts); read once, so that a
    name changed while the process runs does not change which folders are its."""
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:48] or "host"


def root() -> Path:
    """The process's scratch folder under the temporary folder, made (and the abandoned ones of this
    host removed) when first asked for; removed when the process ends."""
    with _mutex:
        base = tempfile.gettempdir()
        known = _roots.get(base)
        if known is not None and known[0].is_dir() and known[2] == os.getpid():
            return known[0]
        if known is not None:  # (removed under it, or made by the process this one was forked from)
            _close(known[1])
        try:
            made = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{_host()}-{os.getpid()}-", dir=base))
        except OSError as ex:
            raise failed(base, ex) from None
        fd = _locked(made / _LOCK)
        if not _roots:
            atexit.register(_remove)
        _roots[base] = (made, fd, os.getpid())
        _remove_abandoned(Path(base), made)
        return made


def _locked(path: Path) -> int | None:
    """A descriptor holding an exclusive lock on ``path`` (made), or None where the file system
    has no locks (Lustre without ``-o flock``: ENOSYS): the folder then works unlocked and without a
    lock file, which no other process can take for abandoned."""
    if fcntl is None:
        return None
    fd = None
    new = path.with_name(path.name + ".new")
    try:  # (locked before it has its name: no other process can lock it first and take the folder)
        fd = os.open(new, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(new, path)
    except OSError:
        _close(fd)
        with contextlib.suppress(OSError):
            new.unlink()  # (no lock file, no folder taken for abandoned: whoever looks passes it by)
        return None
    return fd


def folder(prefix: str) -> Path:
    """A new folder of the caller's own in the process's scratch folder (the caller removes it)."""
    base = root()
    try:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    except OSError as ex:
        raise failed(base, ex) from None


class Folder:
    """A folder of its own in the scratch folder, removed when closed (also as a context manager),
    collected, or the process ends; by the process that made it only (not a forked child), unlike
    :class:`tempfile.TemporaryDirectory`.  ``name``: its path, as ``TemporaryDirectory`` has it."""

    def __init__(self, prefix: str) -> None:
        self.path = folder(prefix)
        self.name = str(self.path)
        self._cleanup = weakref.finalize(self, remove, self.path, os.getpid())

    def cleanup(self) -> None:
        self._cleanup()

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def remove(made: Path, pid: int) -> None:
    """Remove the folder ``made`` that process ``pid`` made, if this is that process (a forked
    child exiting must not remove its parent's); a Ctrl-C or SIGTERM does not cut it short."""
    if os.getpid() != pid:
        return
    try:
        shutil.rmtree(made, ignore_errors=True)
    except KeyboardInterrupt:  # (a second Ctrl-C or SIGTERM as the process ends: the removal goes on,
        shutil.rmtree(made, ignore_errors=True)  # and no traceback; the signals are left as they are)


def _remove_abandoned(base: Path, own: Path) -> None:
    """Remove this host's scratch folders whose process has ended (their lock can be had), this
    user's only; never raises."""
    if fcntl is None:
        return
    mine = f"{PREFIX}{_host()}-"
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            if not entry.name.startswith(mine) or entry.path == str(own):
                continue
            with contextlib.suppress(OSError):
                if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                    continue
                fd = os.open(Path(entry.path) / _LOCK, os.O_RDWR | os.O_NOFOLLOW)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (held: its process lives)
                except OSError:
                    continue
                finally:
                    os.close(fd)
                shutil.rmtree(entry.path, ignore_errors=True)


def _close(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _remove() -> None:
    """At exit: the scratch folders this process made go, with all left in them (never raises)."""
    for made, fd, pid in list(_roots.values()):
        remove(made, pid)  # (not those of the process this one was forked from)
        _close(fd)
    _roots.clear()
