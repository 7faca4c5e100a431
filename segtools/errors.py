"""The one exception hierarchy of segtools.

Every error that bad input can cause is a ``SegtoolsError``. Errors about bytes in a file
(``FormatError`` and below) carry where they happened -- ``path``, ``position`` (byte offset in
the file), ``base_offset`` (of the batch, when known) and ``field`` -- as attributes and in the
message, e.g.::

    00000000000000000000.log @ position 4096 (baseOffset=120) field crc: CRC mismatch,
    stored 0x1a2b3c4d computed 0x5e6f7a8b
"""

from __future__ import annotations

import os
from typing import Any


class SegtoolsError(Exception):
    """Base class of every error segtools raises on purpose."""

    #: process exit code a CLI uses when this error stops a command (CONTRACT.md section 1)
    exit_code: int = 2


class InputError(SegtoolsError):
    """A path that cannot be used at all: missing, unreadable, not a Kafka file or directory."""


class FileChangedError(InputError):
    """The file changed (size or modification time) while it was read: what was read may
    mix two versions, so it is reported as this instead of a corruption finding."""


def display_path(path: str | bytes | os.PathLike[Any] | None) -> str:
    """``path`` printable in any terminal: bytes that are not UTF-8 (a name with byte 0xff)
    become ``\\xff`` escapes instead of surrogates that cannot be written to stdout."""
    if path is None:
        return ""
    raw = os.fsencode(path)
    return raw.decode("utf-8", "backslashreplace")


def format_size(n: int) -> str:
    """``16777216`` -> ``"16 MiB"`` (exact binary units when they fit, else bytes)."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} bytes"


def is_utf8(name: str) -> bool:
    """Whether a name from the file system is UTF-8 (Python keeps other bytes as surrogates:
    pyarrow's file systems, Spark and Parquet take UTF-8 only)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def os_input_error(path: str | bytes | os.PathLike[Any], exc: OSError,
                   action: str = "cannot read") -> InputError:
    """The ``InputError`` for an ``OSError`` (permission, symlink loop, name too long, ...)
    met while opening, listing or reading ``path``."""
    return InputError(f"{display_path(path)}: {action}: {exc.strerror or exc}")


def input_path(path: Any) -> str:
    """``path`` as ``str`` (bytes paths decoded like ``os.fsdecode``); a value that is not a
    path is an ``InputError``, not a ``TypeError``."""
    try:
        return os.fsdecode(path)
    except TypeError:
        raise InputError(f"not a path: {path!r} (expected str, bytes or os.PathLike)") from None


class FormatError(SegtoolsError):
    """Bytes that do not follow Kafka's format, with their location."""

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        position: int | None = None,
        base_offset: int | None = None,
        field: str | None = None,
        expected: Any = None,
        actual: Any = None,
    ) -> None:
        self.reason = message
        self.path = os.fspath(path) if path is not None else None
        self.position = position
        self.base_offset = base_offset
        self.field = field
        self.expected = expected
        self.actual = actual
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.path is not None:
            where.append(display_path(os.path.basename(self.path)))
        if self.position is not None:
            where.append(f"@ position {self.position}")
        if self.base_offset is not None:
            where.append(f"(baseOffset={self.base_offset})")
        if self.field:
            where.append(f"field {self.field}")
        prefix = " ".join(where)
        msg = self.reason
        if self.expected is not None:
            msg = f"{msg}: expected {self.expected!r}, got {self.actual!r}"
        # an ``actual`` without ``expected`` stays an attribute: "expected None" says nothing
        return f"{prefix}: {msg}" if prefix else msg

    def located(self, *, path: str | os.PathLike[str] | None = None, position: int | None = None,
                base_offset: int | None = None) -> FormatError:
        """Fill in location fields that an inner decoder could not know, and re-render."""
        if path is not None and self.path is None:
            self.path = os.fspath(path)
        if position is not None and self.position is None:
            self.position = position
        if base_offset is not None and self.base_offset is None:
            self.base_offset = base_offset
        self.args = (self._render(),)
        return self


class TruncatedBatchError(FormatError):
    """A batch or record ends before the bytes its length fields announce."""


class CorruptBatchError(FormatError):
    """A batch or record whose fields are impossible (bad length, bad varint, bad count...)."""


class CrcMismatchError(CorruptBatchError):
    """The stored CRC does not match the bytes (only raised when CRC checking is strict)."""


class UnsupportedMagicError(FormatError):
    """A magic byte other than 0, 1 or 2."""


class CompressionError(CorruptBatchError):
    """A compressed payload that does not decompress, or decompresses past the size limit."""


class BatchTooLargeError(CompressionError):
    """A batch above ``max_batch_bytes`` (segtools.primitives.limits): on disk, once decompressed, or by
    its record count. The message names the limit and how to raise it."""

    def __init__(self, message: str, *, limit: int, **kw: Any) -> None:
        self.limit = limit
        super().__init__(f"{message} (max_batch_bytes is {limit} bytes = {format_size(limit)}; "
                         "if this batch is genuine, raise the limit with --max-batch-bytes "
                         "or max_batch_bytes=)", **kw)


class IndexCorruptionError(FormatError):
    """An .index/.timeindex/.txnindex file with an impossible size or entries."""


class CheckpointFormatError(FormatError):
    """A text checkpoint, partition.metadata, meta.properties or quorum-state that does not parse."""


class SnapshotFormatError(FormatError):
    """A producer-state .snapshot or KRaft .checkpoint snapshot that does not parse."""


class SchemaError(FormatError):
    """An internal-topic payload (__consumer_offsets, __transaction_state, KRaft metadata) that
    does not match its message schema."""


class MissingCodecError(SegtoolsError, ImportError):
    """A compression codec whose library is not installed (the message says what to install)."""


class ScenarioError(SegtoolsError):
    """A `segtools simulate` scenario file that is invalid."""
