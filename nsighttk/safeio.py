"""Safe file I/O: the one place nsighttk opens what a user points it at or writes what it produces.

* Inputs are checked with ``stat`` before anything opens them: a FIFO, a device, a socket or a
  folder where a file is expected is one clear error, never a hang (opening a FIFO blocks until
  a writer comes) or a read of ``/dev/zero`` until memory runs out.
* Reads are bounded: :func:`read_head` reads at most N bytes; :func:`load_json` refuses documents
  larger or deeper than a limit before parsing them.
* Outputs are atomic: :func:`atomic_write` writes ``.NAME.tmp-<pid>-<rand>`` in the target's own
  folder, flushes and fsyncs it, then ``os.replace``\\ s it over the final name.  A reader never
  sees half a file; Ctrl-C or a full disk leaves the previous file intact and no fragment under
  the final name.  Output targets that are not regular files (devices, FIFOs, folders) are
  refused up front: replacing ``/dev/null`` would delete the device node.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from nsighttk.errors import InputFileError, OutputFileError

#: JSON documents nsighttk reads whole (run.json, summaries, bench results): larger ones are not ours
MAX_JSON_BYTES = 256 * 1024 * 1024
#: nesting deeper than this is not a document nsighttk (or a profiler) writes
MAX_JSON_DEPTH = 200

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def _kind(mode: int) -> str | None:
    """What a non-regular file is, or None for a regular file."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


#: the files this command reads (``(st_dev, st_ino)``), so no output of the same command can
#: replace one of them (``report IN -o IN --force``, ``stats IN -o P`` where P_<report> is IN);
#: None when not tracked (the CLI tracks each command's inputs: :func:`track_inputs`)
_inputs: set[tuple[int, int]] | None = None


def track_inputs(on: bool = True) -> None:
    """Start (again) recording what :func:`check_input` accepts, so :func:`check_output` refuses
    to write over it; ``on=False`` stops."""
    global _inputs
    _inputs = set() if on else None


def probe(path: str | Path) -> os.stat_result | None:
    """``stat`` that never raises: None for anything that cannot be stat-ed (missing, a name too
    long for the file system, a symbolic-link loop, a file where a folder is expected).  For
    questions like "is this a run directory?"; the error a user sees comes from :func:`check_input`."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def named(path: str | Path) -> bool:
    """Whether ``path`` names something on the file system as far as a user is concerned: it
    exists (a dangling symbolic link too), or it cannot exist as written (a name too long, a NUL
    byte, a link loop), so that :func:`check_input` explains it instead of a run-id lookup."""
    try:
        os.lstat(path)
        return True
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError):
        return True


def is_dir(path: str | Path) -> bool:
    st = probe(path)
    return st is not None and stat.S_ISDIR(st.st_mode)


def is_file(path: str | Path) -> bool:
    st = probe(path)
    return st is not None and stat.S_ISREG(st.st_mode)


def check_input(path: str | Path, what: str = "", allow_dir: bool = False, track: bool = True) -> os.stat_result:
    """``stat`` ``path`` and refuse what cannot be read as a capture: missing, unreadable, a FIFO,
    a device, a socket, or a folder (unless ``allow_dir``).  Never opens it.  ``track``: the file
    is one of this command's inputs, which no output may replace (:func:`track_inputs`)."""
    p = Path(path)
    label = f"{what} {p}".strip()
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputFileError(f"{label}: no such file", "check the path") from None
    except OSError as ex:
        raise InputFileError(f"{label}: cannot be read ({ex.strerror or ex})", "check the path") from None
    except ValueError as ex:  # a NUL byte in the name
        raise InputFileError(f"{label}: not a usable file name ({ex})", "check the path") from None
    kind = _kind(st.st_mode)
    if kind == "a folder" and allow_dir:
        return st
    if kind is not None:
        raise InputFileError(f"{label}: is {kind}, not a file nsighttk can read",
                             "give a regular file (a capture, an export, a run directory)")
    if not os.access(p, os.R_OK):
        raise InputFileError(f"{label}: permission denied", "check the file's permissions")
    if _inputs is not None and kind is None and track:
        _inputs.add((st.st_dev, st.st_ino))
    return st


def read_head(path: str | Path, n: int = 4096) -> bytes:
    """At most ``n`` bytes from the start of a regular file (checked first; a peek, as at an
    output's own header, does not make it an input)."""
    check_input(path, track=False)
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except OSError as ex:
        raise InputFileError(f"{path}: cannot be read ({ex.strerror or ex})", "check the path") from None


#: text files nsighttk reads whole (task lists): larger ones are not what they claim to be
MAX_TEXT_BYTES = 4 * 1024 * 1024


def read_text(path: str | Path, what: str, max_bytes: int = MAX_TEXT_BYTES, hint: str = "is it the file you meant?",
              track: bool = True) -> str:
    """A whole text file, bounded: refused in one line when larger than ``max_bytes``, binary (a NUL
    byte) or not UTF-8 (with the offset of the first bad byte).  Universal newlines, as
    :meth:`Path.read_text`."""
    st = check_input(path, what, track=track)
    label = f"{what} {path}".strip()
    if st.st_size > max_bytes:
        raise InputFileError(f"{label}: {st.st_size:,} bytes, more than the {max_bytes:,} a text file of this "
                             "kind can be", hint)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as ex:
        raise InputFileError(f"{label}: cannot be read ({ex.strerror or ex})", "check the path") from None
    if len(data) > max_bytes:  # grew since the stat
        raise InputFileError(f"{label}: more than the {max_bytes:,} bytes a text file of this kind can be", hint)
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputFileError(f"{label}: a binary file (a NUL byte at offset {nul:,}), not text", hint)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as ex:
        raise InputFileError(f"{label}: not UTF-8 text (byte {ex.start:,} cannot be decoded)", hint) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def check_depth(data: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse JSON nested deeper than ``max_depth`` (one linear scan; strings skipped), before a
    parser spends quadratic time or recursion on it."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    depth = 0
    in_str = False
    skip_to = -1
    for m in re.finditer(rb'[\[\]{}"\\]', raw):
        if m.start() < skip_to:  # the character after a backslash
            continue
        c = m.group()
        if in_str:
            if c == b"\\":
                skip_to = m.end() + 1
            elif c == b'"':
                in_str = False
            continue
        if c == b'"':
            in_str = True
        elif c in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                raise ValueError(f"nested deeper than {max_depth} levels")
        elif c in (b"]", b"}"):
            depth -= 1


def loads_json(data: bytes | str, what: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse a JSON document held in memory, with the depth limit; errors name ``what``."""
    try:
        check_depth(data, max_depth)
        import json

        return json.loads(data)
    except (ValueError, RecursionError) as ex:
        raise InputFileError(f"{what}: not valid JSON ({str(ex)[:120]})", "is it the file you meant?") from None


def load_json(path: str | Path, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH,
              track: bool = True) -> Any:
    """A whole JSON file, refused when larger than ``max_bytes`` or deeper than ``max_depth``
    (``track``: as for :func:`check_input`)."""
    st = check_input(path, track=track)
    if st.st_size > max_bytes:
        raise InputFileError(f"{path}: {st.st_size / 2**20:,.0f} MiB, more than the {max_bytes / 2**20:,.0f} MiB "
                             "a document of this kind can be", "is it the file you meant?")
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as ex:
        raise InputFileError(f"{path}: cannot be read ({ex.strerror or ex})", "check the path") from None
    return loads_json(data, str(path), max_depth)


def read_json_or_none(path: str | Path, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """A JSON file nsighttk wrote itself (run.json, summaries), or None when it is missing,
    unreadable, not a regular file, too large, too deep or not JSON.  Not an input in the sense of
    :func:`track_inputs`: nsighttk may update its own file (a run's manifest) in the same command."""
    try:
        return load_json(path, max_bytes, track=False)
    except InputFileError:
        return None


# ------------------------------------------------------------------------------------ outputs


def check_output(path: str | Path, what: str = "output", overwrite: bool = True) -> Path:
    """Refuse an output target that is not (or would not be) a regular file in a folder that
    exists or can be made: a device, a FIFO, a socket, a folder, a name too long for the file
    system, a parent that is a file.  Nothing is created here."""
    p = Path(path)
    label = f"{what} {p}"
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as ex:
        if ex.errno == errno.ENAMETOOLONG:
            raise OutputFileError(f"{label}: the name is longer than the file system allows",
                                  "choose a shorter path") from None
        if ex.errno == errno.ENOTDIR:
            raise OutputFileError(f"{label}: a folder on its path is a file", "choose another path") from None
        raise OutputFileError(f"{label}: {ex.strerror or ex}", "choose another path") from None
    except ValueError as ex:  # a NUL byte in the name
        raise OutputFileError(f"{label}: not a usable file name ({ex})", "choose another path") from None
    if not p.name or p.name in (".", ".."):
        raise OutputFileError(f"{label}: not a file name", "name a file")
    if st is not None:
        if _inputs and (st.st_dev, st.st_ino) in _inputs:
            raise OutputFileError(f"{label}: is one of this command's inputs; nsighttk never writes over what it "
                                  "reads", "choose another name")
        kind = _kind(st.st_mode)
        if kind is not None:
            raise OutputFileError(f"{label}: is {kind}; nsighttk writes regular files only",
                                  "choose a file name (use - for standard output where offered)")
        if not overwrite:
            raise OutputFileError(f"{label}: already exists", "choose another name, or pass --force")
    name_max = _name_max(p.parent)
    if len(p.name.encode()) + 24 > name_max:  # room for the temporary name beside it
        raise OutputFileError(f"{label}: the name is longer than the file system allows", "choose a shorter name")
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise OutputFileError(f"{label}: {parent} is a file, not a folder", "choose another path")
    if parent.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputFileError(f"{label}: {parent} is not writable", "choose another path")
    return p


def _name_max(folder: Path) -> int:
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return os.pathconf(probe, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def make_dirs(folder: str | Path, what: str = "output folder") -> Path:
    """``mkdir -p`` with one clear error (a parent that is a file, no permission, a full disk)."""
    p = Path(folder)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputFileError(f"{what} {p}: exists and is not a folder", "choose another path") from None
    except OSError as ex:
        raise OutputFileError(f"{what} {p}: cannot be created ({ex.strerror or ex})", "choose another path") \
            from None
    return p


def safe_filename(text: str, limit: int = 80) -> str:
    """A name for one path component made from user text (a target, a kernel, a run id): letters,
    digits and ``-_.`` only, at most ``limit`` characters, never empty, never hidden."""
    keep = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:limit]
    return keep.strip("._") or "target"


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{os.urandom(3).hex()}")


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_error(path: Path, ex: OSError) -> OutputFileError:
    if ex.errno == errno.ENOSPC:
        return OutputFileError(f"cannot write {path}: the disk is full (nothing was replaced)",
                               "free some space or choose another location")
    if ex.errno == errno.EDQUOT:
        return OutputFileError(f"cannot write {path}: disk quota exceeded (nothing was replaced)",
                               "free some space or choose another location")
    return OutputFileError(f"cannot write {path}: {ex.strerror or ex}", "choose another location")


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8",
                 newline: str | None = None, overwrite: bool = True) -> Iterator[IO[Any]]:
    """Write ``path`` atomically: the block writes a temporary file beside it, which replaces
    ``path`` only when the block ends without an exception (including KeyboardInterrupt) and
    the data is on disk.  Any failure removes the temporary file and leaves ``path`` as it was."""
    p = check_output(path, overwrite=overwrite)
    make_dirs(p.parent)
    tmp = _temp_name(p)
    binary = "b" in mode
    try:  # (from before the temporary file exists: a Ctrl-C right after it is made still removes it)
        try:
            fh = open(tmp, mode, encoding=None if binary else encoding, newline=None if binary else newline)  # noqa: SIM115
        except OSError as ex:
            raise write_error(p, ex) from None
        try:
            with fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            if not overwrite and p.exists():
                raise OutputFileError(f"{p}: appeared while it was being written", "choose another name")
            os.replace(tmp, p)
        except OSError as ex:
            raise write_error(p, ex) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _fsync_dir(p.parent)


def write_text(path: str | Path, text: str, overwrite: bool = True) -> Path:
    with atomic_write(path, "w", overwrite=overwrite) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | Path, data: bytes, overwrite: bool = True) -> Path:
    with atomic_write(path, "wb", overwrite=overwrite) as fh:
        fh.write(data)
    return Path(path)


def write_json(path: str | Path, data: Any, overwrite: bool = True) -> Path:
    import json

    return write_text(path, json.dumps(data, indent=1, default=str) + "\n", overwrite=overwrite)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM for the block (a few renames), then deliver them: a set of files is
    never left half old, half new by a signal.  Outside the main thread signals cannot be held
    (Python delivers them to the main thread only): the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        received.append(signum)

    old = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for signum in received:
            signal.raise_signal(signum)


class AtomicFiles:
    """Several outputs that appear together or not at all (``stats -o P`` with several reports,
    ``rules -o P``): each is written to a temporary file beside its target, and only
    :meth:`commit` renames them all, with signals held; a failure or Ctrl-C before that replaces
    none of them and leaves no temporary file.  Use through :func:`atomic_files`."""

    def __init__(self, overwrite: bool = True) -> None:
        self.overwrite = overwrite
        self._pending: list[tuple[Path, Path]] = []

    @contextlib.contextmanager
    def open(self, path: str | Path, mode: str = "w", encoding: str | None = "utf-8",
             newline: str | None = None) -> Iterator[IO[Any]]:
        """Write one member (its temporary file); it appears under ``path`` at :meth:`commit`."""
        p = check_output(path, overwrite=self.overwrite)
        make_dirs(p.parent)
        tmp = _temp_name(p)
        binary = "b" in mode
        self._pending.append((tmp, p))  # before it exists: discard() removes it, whenever a Ctrl-C lands
        try:
            fh = open(tmp, mode, encoding=None if binary else encoding,  # noqa: SIM115
                      newline=None if binary else newline)
        except OSError as ex:
            self._pending.remove((tmp, p))
            raise write_error(p, ex) from None
        try:
            with fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as ex:
            raise write_error(p, ex) from None

    def write_text(self, path: str | Path, text: str) -> Path:
        with self.open(path) as fh:
            fh.write(text)
        return Path(path)

    def commit(self) -> list[Path]:
        """Rename every member over its final name (signals held meanwhile); returns the names."""
        done = []
        with deferred_signals():
            for _, p in self._pending:
                if not self.overwrite and p.exists():
                    raise OutputFileError(f"{p}: appeared while it was being written", "choose another name")
            for tmp, p in self._pending:
                try:
                    os.replace(tmp, p)
                except OSError as ex:
                    raise write_error(p, ex) from None
                done.append(p)
            self._pending.clear()
        for folder in {p.parent for p in done}:
            _fsync_dir(folder)
        return done

    def discard(self) -> None:
        for tmp, _ in self._pending:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        self._pending.clear()


@contextlib.contextmanager
def atomic_files(overwrite: bool = True) -> Iterator[AtomicFiles]:
    """A set of outputs written together: all of them replace their targets when the block ends
    without an exception, none of them otherwise (:class:`AtomicFiles`)."""
    group = AtomicFiles(overwrite)
    try:
        yield group
        group.commit()
    finally:
        group.discard()
