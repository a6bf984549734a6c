"""Read a large JSON document's one big array in chunks of whole elements, in bounded memory.

A Kineto trace is one object whose ``traceEvents`` array holds nearly all of its bytes.  Parsing it
whole (``json.load``) holds every event as a dict at once, several times the file's size.  Here the
file (plain or gzip) is read in blocks; a vectorised scan of each block (numpy: quotes not escaped
by an odd run of backslashes open and close strings; brackets outside strings give the depth) finds
the commas between the array's elements, and each chunk of whole elements is handed to the caller
as bytes, ready for a fast parser (``b"[" + chunk + b"]"`` is a JSON array).  Memory is one block,
the chunk and the caller's tables, whatever the file's size.

Bounds: the document must start (after white space and a UTF-8 byte order mark) with ``{`` or
``[``; the key is looked for in the first :data:`MAX_HEAD_BYTES`; no element may exceed
:data:`MAX_ELEMENT_BYTES`, nor anything nest deeper than :data:`~nsighttk.safeio.MAX_JSON_DEPTH`.
The top-level keys other than the array (metadata, before or after it) are parsed once read.
A file that ends early, or whose compressed stream is cut, ends the chunks; :attr:`JsonChunks.truncated_at`
says where.
"""

from __future__ import annotations

import gzip
import itertools
import re
import zlib
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

import msgspec
import numpy as np

from nsighttk.errors import InputFileError
from nsighttk.safeio import MAX_JSON_DEPTH, check_depth, check_input

BLOCK_BYTES = 8 * 1024 * 1024
_PIECE = 256 * 1024
#: the array must begin within this many bytes, and what follows it must end within as many
MAX_HEAD_BYTES = 64 * 1024 * 1024
#: one element (one trace event) larger than this is not a trace event
MAX_ELEMENT_BYTES = 64 * 1024 * 1024

_DELTA = np.zeros(256, dtype=np.int8)
_DELTA[[ord("["), ord("{")]] = 1
_DELTA[[ord("]"), ord("}")]] = -1
_COMMA = ord(",")
_LEADING = re.compile(rb"[ \t\r\n\xef\xbb\xbf]*")  # white space and a UTF-8 byte order mark
T = TypeVar("T")
_READ_ERRORS = (OSError, EOFError, zlib.error)  # gzip.BadGzipFile is an OSError


class _Scan:
    """Structural characters of a buffer that starts outside any string: their positions and the
    depth after each (relative to the buffer's start)."""

    def __init__(self, buf: bytes | memoryview) -> None:
        b = np.frombuffer(buf, dtype=np.uint8)
        quotes = np.flatnonzero(b == 34)
        if len(quotes) and b"\\" in buf:
            quotes = _real_quotes(b, quotes)
        folded = b | 0x20  # [ ] -> { }
        pos = np.flatnonzero((folded == 0x7B) | (folded == 0x7D) | (b == _COMMA))
        if len(quotes) and len(pos):
            pos = pos[(np.searchsorted(quotes, pos) & 1) == 0]  # outside strings
        self.pos = pos
        self.char = b[pos]
        self.depth = np.cumsum(_DELTA[self.char], dtype=np.int64)
        self.open_string = bool(len(quotes) & 1)


def _real_quotes(b: np.ndarray, quotes: np.ndarray) -> np.ndarray:
    """Drop quotes escaped by an odd run of backslashes just before them."""
    after_bs = quotes[(quotes > 0) & (b[np.maximum(quotes - 1, 0)] == 92)]
    if not len(after_bs):
        return quotes
    bs = np.flatnonzero(b == 92)
    run_start = np.where(np.r_[True, np.diff(bs) != 1], bs, 0)
    run_start = np.maximum.accumulate(run_start)
    last = np.searchsorted(bs, after_bs - 1)  # the backslash just before each such quote
    run = after_bs - run_start[last]
    escaped = after_bs[(run & 1) == 1]
    return np.setdiff1d(quotes, escaped, assume_unique=True)


class JsonChunks(Generic[T]):
    """The elements of the array under ``key`` (or of a top-level array) of a JSON file, decoded
    chunk by chunk.

    ``decode`` gets a JSON array of whole elements (bytes) and returns what iteration yields; when
    it raises one of ``errors``, ``salvage`` gets the chunk's elements one by one (bytes each) and
    returns the same.  After iteration ``top`` holds the document's other top-level keys,
    ``truncated_at`` the offset (in the decompressed text) where a file that ends early stops,
    ``size`` the bytes read, ``found`` whether the array was there."""

    def __init__(self, path: str | Path, decode: Callable[[bytes], T], salvage: Callable[[list[bytes]], T],
                 errors: tuple[type[BaseException], ...] = (ValueError,), key: str = "traceEvents",
                 what: str = "JSON file") -> None:
        self.path = Path(path)
        self.decode = decode
        self.salvage = salvage
        self.errors = errors
        self.key = key
        self.what = what
        self._fh: IO[bytes] | None = None
        self._gzip = False
        self.top: dict[str, Any] = {}
        self.truncated_at: int | None = None
        self.size = 0
        self.found = False
        #: the document after the array could not be parsed (a file cut after its events)
        self.tail_lost = False
        st = check_input(self.path)
        if st.st_size == 0:
            raise InputFileError(f"{self.path}: is empty", "the profiler wrote nothing: did the profiled code run?")

    def _open(self) -> IO[bytes]:
        with open(self.path, "rb") as f:
            magic = f.read(2)
        self._gzip = magic == b"\x1f\x8b"
        if self._gzip:
            return gzip.open(self.path, "rb")  # type: ignore[return-value]
        return open(self.path, "rb")

    def _read(self, fh: IO[bytes], n: int) -> bytes:
        """Up to ``n`` bytes; b"" at the end.  Read in pieces so that a cut compressed stream keeps
        what came before the cut (noted in ``truncated_at``)."""
        if self.truncated_at is not None:
            return b""
        if not self._gzip:  # a plain file: one read
            try:
                data = fh.read(n)
            except OSError:
                self.truncated_at = self.size
                return b""
            self.size += len(data)
            return data
        pieces = []
        got = 0
        while got < n:
            try:
                piece = fh.read(min(_PIECE, n - got))
            except _READ_ERRORS:
                self.truncated_at = self.size + got
                break
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        self.size += got
        return b"".join(pieces)

    def __iter__(self) -> Iterator[T]:
        try:
            fh = self._open()
        except OSError as ex:
            raise InputFileError(f"{self.path}: cannot be read ({ex.strerror or ex})", "check the path") from None
        with fh:
            self._fh = fh
            buf, head = self._find_array(fh)
            if not self.found:
                return
            yield from self._elements(fh, buf, head)

    # -- the part before the array -----------------------------------------------------------

    def _find_array(self, fh: IO[bytes]) -> tuple[bytes, bytes]:
        """Read up to the ``[`` that opens the array; returns (the bytes after it, the bytes before)."""
        buf = b""
        while True:
            more = self._read(fh, BLOCK_BYTES)
            buf += more
            skip = _LEADING.match(buf).end()  # type: ignore[union-attr]  # (matches the empty text)
            if buf[skip: skip + 1] == b"[":  # a bare array of events (Chrome's JSON Array Format)
                self.found = True
                return buf[skip + 1:], b""
            if buf[skip: skip + 1] not in (b"{", b""):
                raise InputFileError(f"{self.path}: not a JSON object or array (it starts with "
                                     f"{buf[skip: skip + 12]!r})", f"is this a {self.what}?")
            at = self._key_position(buf)
            if at is not None:
                self.found = True
                return buf[at:], buf[: at - 1]
            if not more:
                scan = _Scan(buf)
                if len(scan.depth) and scan.depth.max() > MAX_JSON_DEPTH:
                    raise InputFileError(f"{self.path}: nested deeper than {MAX_JSON_DEPTH} levels",
                                         f"is this a {self.what}?")
                if len(scan.depth) and scan.depth[-1] > 0 and self.truncated_at is None:
                    self.truncated_at = self.size  # the file ends inside its top-level object
                self._parse_top(buf, b"", b"")
                return b"", buf
            if len(buf) > MAX_HEAD_BYTES:
                raise InputFileError(f"{self.path}: no {self.key!r} array in its first {MAX_HEAD_BYTES >> 20} MiB",
                                     f"is this a {self.what}?")

    def _key_position(self, buf: bytes) -> int | None:
        """Offset just after the ``[`` of ``"key": [`` at depth 1 outside strings, or None."""
        pattern = re.compile(rb'"' + re.escape(self.key.encode()) + rb'"\s*:\s*\[')
        matches = list(pattern.finditer(buf))
        if not matches:
            return None
        scan = _Scan(memoryview(buf)[: matches[-1].end()])
        if len(scan.depth) and scan.depth.max() > MAX_JSON_DEPTH:
            raise InputFileError(f"{self.path}: nested deeper than {MAX_JSON_DEPTH} levels",
                                 f"is this a {self.what}?")
        for m in matches:
            bracket = m.end() - 1
            i = np.searchsorted(scan.pos, bracket)
            if i < len(scan.pos) and scan.pos[i] == bracket and scan.depth[i] == 2:
                return bracket + 1
        return None

    def _parse_top(self, head: bytes, tail: bytes, middle: bytes = b"[]") -> None:
        """The top-level keys other than the array (best effort: {} when they do not parse)."""
        for i, text in enumerate((head + middle + tail, head + middle + b"}")):
            try:
                check_depth(text)
                top = msgspec.json.decode(text)
            except (ValueError, msgspec.DecodeError):
                continue
            if isinstance(top, dict):
                top.pop(self.key, None)
                self.top = top
                self.tail_lost = i == 1 and tail.strip() not in (b"}", b"")
                return

    # -- the elements --------------------------------------------------------------------------

    def _elements(self, fh: IO[bytes], buf: bytes, head: bytes) -> Iterator[T]:
        """Decoded chunks.  Fast path: cut after the last ``},<newline>`` (Kineto's layout; a newline
        is never inside a JSON string), ``},{`` or ``}, {`` (minified) and decode: a decode that
        succeeds proves the cut lies between elements (a JSON array parses only if every element
        in it is whole).  When it fails, and at the end of the file, the exact scan finds the
        boundaries, and chunks that still do not decode are salvaged element by element."""
        eof = False
        while True:
            if not eof:
                cut = buf.rfind(b"},\n")
                for sep in (b"},{", b"}, {"):  # each looked for after the best cut so far only
                    cut = max(cut, buf.rfind(sep, cut + 1))
                if cut > 0:
                    try:
                        out = self.decode(b"".join((b"[", memoryview(buf)[: cut + 1], b"]")))
                    except self.errors:
                        pass
                    else:
                        yield out
                        more = self._read(fh, BLOCK_BYTES)
                        eof = not more
                        buf = b"".join((memoryview(buf)[cut + 2:], more))
                        continue
            done, buf = yield from self._exact(buf, eof, head)
            if done:
                return
            if len(buf) > MAX_ELEMENT_BYTES:
                raise InputFileError(f"{self.path}: an element of more than {MAX_ELEMENT_BYTES >> 20} MiB in "
                                     f"{self.key!r} (at byte {self.size - len(buf):,})", f"is this a {self.what}?")
            more = self._read(fh, BLOCK_BYTES)
            eof = not more
            buf += more

    def _exact(self, buf: bytes, eof: bool, head: bytes) -> Generator[T, None, tuple[bool, bytes]]:
        """Scan ``buf`` exactly: yield its whole elements; returns (array finished, the rest)."""
        scan = _Scan(buf)
        if len(scan.depth) and scan.depth.max() > MAX_JSON_DEPTH - 2:
            raise InputFileError(f"{self.path}: an event nested deeper than {MAX_JSON_DEPTH} levels",
                                 f"is this a {self.what}?")
        commas = (scan.char == _COMMA) & (scan.depth == 0)
        closed = np.flatnonzero(scan.depth < 0)
        if len(closed):  # the array's closing bracket
            end = int(scan.pos[closed[0]])
            yield self._decode_exact(buf[:end], scan.pos[: closed[0]][commas[: closed[0]]])
            self._finish(buf[end + 1:], head)
            return True, b""
        comma_pos = scan.pos[commas]
        if eof:  # the file ends inside the array: keep the elements that are whole
            if self.truncated_at is None:
                self.truncated_at = self.size
            whole = len(scan.depth) and scan.depth[-1] == 0 and not scan.open_string
            if whole and buf.rstrip()[-1:] in (b"}", b"]"):
                yield self._decode_exact(buf, comma_pos)
            elif len(comma_pos):
                yield self._decode_exact(buf[: int(comma_pos[-1])], comma_pos[:-1])
            return True, b""
        if len(comma_pos):
            cut = int(comma_pos[-1])
            yield self._decode_exact(buf[:cut], comma_pos[:-1])
            return False, buf[cut + 1:]
        return False, buf

    def _decode_exact(self, chunk: bytes, commas: np.ndarray) -> T:
        try:
            return self.decode(b"[" + chunk + b"]")
        except self.errors:
            bounds = [0, *(int(c) + 1 for c in commas), len(chunk) + 1]
            return self.salvage([chunk[a: b - 1] for a, b in itertools.pairwise(bounds)])

    def _finish(self, rest: bytes, head: bytes) -> None:
        """Read what follows the array (bounded) and parse the top-level keys."""
        tail = rest
        while len(tail) <= MAX_HEAD_BYTES:
            more = self._read(self._fh, BLOCK_BYTES) if self._fh is not None else b""
            if not more:
                break
            tail += more
        else:
            tail = b"}"  # a huge tail is not metadata: keep the keys before the array only
        self._parse_top(head, tail)
