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
            where.append(os.path.basename(self.path))
        if self.position is not None:
            where.append(f"@ position {self.position}")
        if self.base_offset is not None:
            where.append(f"(baseOffset={self.base_offset})")
        if self.field:
            where.append(f"field {self.field}")
        prefix = " ".join(where)
        msg = self.reason
        if self.expected is not None or self.actual is not None:
            msg = f"{msg}: expected {self.expected!r}, got {self.actual!r}"
        return f"{prefix}: {msg}" if prefix else msg

    def located(self, *, path: str | os.PathLike[str] | None = None, position: int | None = None,
                base_offset: int | None = None) -> "FormatError":
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
