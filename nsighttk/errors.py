"""One error hierarchy: every user-facing failure is an :class:`NsightTKError` with a hint.

The CLI turns these into one line on stderr and a non-zero exit code; nothing else should print
a traceback for a user mistake.
"""

from __future__ import annotations


class NsightTKError(Exception):
    """Base error: ``message`` says what is wrong, ``hint`` what to do about it."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(NsightTKError):
    """Bad arguments: an unknown report name, an unsupported arch, a bad option value."""


class InputFileError(NsightTKError):
    """A file given by the user cannot be used: missing, a directory, wrong format, corrupt."""


class OutputFileError(NsightTKError):
    """An output cannot be written where asked: a device or FIFO, a folder, a full disk, no permission."""


class ToolNotFound(NsightTKError):
    """A required external tool (nvcc, nsys, ncu, ...) is not installed or not found."""

    exit_code = 3


class BuildFailed(NsightTKError):
    """nvcc failed."""


class ProfilerFailed(NsightTKError):
    """The profiler itself failed (not the profiled program)."""


class ExportSchemaError(InputFileError):
    """An export does not have the shape we expect (not an nsys export, unknown version)."""


class WorkloadError(NsightTKError):
    """A target cannot be resolved or executed."""


class NoDatabase(UsageError):
    """A command that reads the runs database found no database file."""


def message_of(ex: BaseException) -> str:
    """The text of an error that came from SQLite, a file or a tool, safe to show: invalid UTF-8
    replaced (U+FFFD), one line.

    Python's ``sqlite3`` decodes SQLite's own message strictly: where a damaged schema puts bytes
    that are not UTF-8 into it (``malformed database schema (x\\xff) ...``), the call raises a
    :class:`UnicodeDecodeError` whose ``object`` is that message; it is decoded here with
    replacement instead of showing the codec's complaint."""
    if isinstance(ex, UnicodeDecodeError) and isinstance(ex.object, (bytes, bytearray, memoryview)):
        text = bytes(ex.object).decode("utf-8", "replace")
    else:
        text = str(ex)
    if isinstance(text, (bytes, bytearray)):  # pragma: no cover (a driver handing bytes through)
        text = bytes(text).decode("utf-8", "replace")
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates from surrogateescape
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first or type(ex).__name__
