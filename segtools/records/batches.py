"""Object reader for ``.log`` segments (and KRaft ``.checkpoint`` files, which hold batches too).

``SegmentReader`` walks a file with the one batch walk, ``segtools.records.batch_walk`` (Kafka's
``FileLogInputStream.nextBatch``, FORMATS.md 1.8): at most 17 bytes left ends the walk; a size
field < 14 raises ``CorruptBatchError``; a batch running past the end ends the walk silently
and ``valid_bytes`` tells where the complete batches stop. Byte 16 selects the format: magic
< 2 is a legacy message (``legacy.py``), any other value a v2 batch. Files are read in bounded
chunks, so memory does not grow with the file size, and are opened read-only.

The header of a v2 batch is decoded with one precompiled ``struct.Struct``; the CRC-32C over
``[21, end)`` is computed for every batch and reported in ``crc_valid`` (not raised).
``SegmentBatch.records()`` decodes records (decompressing with a bounded output size) and
raises ``FormatError`` subclasses that carry path, position, base offset and field.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterator
from typing import Any

from segtools.errors import (
    CompressionError,
    CorruptBatchError,
    CrcMismatchError,
    FileChangedError,
    FormatError,
    InputError,
    TruncatedBatchError,
    UnsupportedMagicError,
    display_path,
    input_path,
    os_input_error,
)
from segtools.files.read_window import stat_change
from segtools.formats.record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    HEADER_STRUCT_FORMAT,
    LOG_PREFIX_STRUCT_FORMAT,
    MAGIC_OFFSET,
    MAGIC_STRUCT_FORMAT,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    TimestampType,
)
from segtools.primitives import codecs
from segtools.primitives.crc import crc32c
from segtools.primitives.java_numbers import java_int, java_long
from segtools.primitives.limits import DEFAULT_MAX_BATCH_BYTES, resolve_max_batch_bytes
from segtools.records.batch_walk import next_batch, walk_error
from segtools.records.control import (
    ControlRecord,
    control_type_name,
    decode_control_key,
    decode_control_value,
)
from segtools.records.faults import SCAN_BATCH, SCAN_END, RecordFault, record_error
from segtools.records.legacy import (
    LOG_OVERHEAD,
    RECORD_OVERHEAD_V0,
    LegacyMessage,
    inner_record,
    parse_legacy_entry,
    parse_legacy_header,
    read_inner_messages,
)
from segtools.records.record import NO_SEQUENCE, Record, increment_sequence
from segtools.records.segment_file import SegmentFile
from segtools.records.v2_decoder import check_v2_batch, iter_v2_records

__all__ = [
    "Record",
    "SegmentBatch",
    "SegmentReader",
    "iter_batches",
    "read_batches",
    "iter_records",
    "segment_paths",
    "V2_HEADER",
    "RECORD_BATCH_OVERHEAD",
    "HEADER_SIZE_UP_TO_MAGIC",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "DEFAULT_MAX_BATCH_BYTES",
]

#: baseOffset, length, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
#: baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
V2_HEADER = struct.Struct(HEADER_STRUCT_FORMAT)
CRC_START = ATTRIBUTES_OFFSET  # v2 CRC-32C covers [attributes, end)
_OFFSET_SIZE = struct.Struct(LOG_PREFIX_STRUCT_FORMAT)
_MAGIC = struct.Struct(MAGIC_STRUCT_FORMAT)

#: kafka-dump-log's --max-message-size default; bounds one legacy inner message.
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
#: older name of segtools.primitives.limits.DEFAULT_MAX_BATCH_BYTES (the one bound on a batch)
DEFAULT_MAX_DECOMPRESSED_SIZE = DEFAULT_MAX_BATCH_BYTES

_READ_CHUNK = 1 << 20
#: v2 batches above this are not held in memory: their CRC is computed in streamed windows
#: and their bytes are read again only when records() or raw() needs them
_EAGER_BATCH_BYTES = 8 << 20
_CRC_STEP = 4 << 20
#: before damage is reported, the reader reads the damaged bytes and the file's stat again
#: _SETTLE_CHECKS times, _SETTLE_SECONDS apart (once per file, so a damaged file costs at most
#: 0.15 s more): a writer caught between truncate and rewrite, even when the machine is busy,
#: has moved on by then
_SETTLE_SECONDS = 0.05
_SETTLE_CHECKS = 3

_TIMESTAMP_TYPES = (TimestampType.CREATE_TIME.label, TimestampType.LOG_APPEND_TIME.label)
_INT64_MIN = -2**63
_INT64_MAX = 2**63 - 1
#: base offsets to which any int offsetDelta can be added without leaving the int64 range
_NO_INT_OVERFLOW_LOW = _INT64_MIN + 2**31
_NO_INT_OVERFLOW_HIGH = _INT64_MAX - 2**31


class SegmentBatch:
    """One v2 record batch, or one legacy outer message (a "shallow" entry).

    Attributes follow docs/ARCHITECTURE.md. For legacy entries: ``partition_leader_epoch``,
    ``producer_id``/``producer_epoch``/``base_sequence``/``last_sequence`` are -1,
    ``base_offset`` is the first inner offset (compressed) or the entry offset,
    ``last_offset`` is the entry's offset field, ``last_offset_delta`` their difference as a
    Java int, ``records_count`` the number of inner
    messages (1 when uncompressed; 0 when the wrapper cannot be decompressed),
    ``base_timestamp``/``max_timestamp`` the message timestamp (-1 for magic 0).
    """

    __slots__ = ("path", "segment", "position", "size", "base_offset", "last_offset",
                 "batch_length", "partition_leader_epoch", "magic", "crc", "crc_valid",
                 "computed_crc", "attributes", "compression", "compression_id",
                 "timestamp_type", "is_transactional", "is_control", "has_delete_horizon",
                 "delete_horizon_ms", "last_offset_delta", "base_timestamp", "max_timestamp",
                 "producer_id", "producer_epoch", "base_sequence", "last_sequence",
                 "records_count", "_buf", "_legacy", "_inner", "_inner_error",
                 "_max_decompressed_size", "_max_message_size")
    # _buf is None for a batch too large to hold (see _EAGER_BATCH_BYTES): raw() reads it

    # populated by the constructors below
    path: str
    segment: str
    position: int
    size: int
    base_offset: int
    last_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    crc_valid: bool
    computed_crc: int
    attributes: int
    compression: str
    compression_id: int
    timestamp_type: str
    is_transactional: bool
    is_control: bool
    has_delete_horizon: bool
    delete_horizon_ms: int | None
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    records_count: int
    # private state (in __slots__): the bytes, the parsed legacy entry and its inner messages
    _buf: bytes | bytearray | memoryview | None
    _legacy: LegacyMessage | None
    _inner: list[tuple[int, LegacyMessage]] | None
    _inner_error: FormatError | None
    _max_decompressed_size: int
    _max_message_size: int | None

    # ---------------------------------------------------------------- construction

    @classmethod
    def from_bytes(cls, buf: bytes | bytearray | memoryview, *, path: str = "", position: int = 0,
                   max_decompressed_size: int | None = None,
                   max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                   segment: str | None = None,
                   max_batch_bytes: int | None = None) -> SegmentBatch:
        """Build a batch from its complete on-disk bytes (``buf`` = exactly one batch).

        ``max_batch_bytes`` (older name ``max_decompressed_size``) bounds what the records
        may decompress to (segtools.primitives.limits)."""
        max_decompressed_size = resolve_max_batch_bytes(
            max_batch_bytes, max_decompressed_size=max_decompressed_size)
        if type(buf) is not bytes:  # keys/values must come out as bytes, not views
            buf = bytes(buf)
        if len(buf) < HEADER_SIZE_UP_TO_MAGIC:
            raise TruncatedBatchError(f"{len(buf)} bytes cannot hold a batch header "
                                      f"({HEADER_SIZE_UP_TO_MAGIC} bytes up to magic)",
                                      path=path or None, position=position, field="length")
        base_offset, size = _OFFSET_SIZE.unpack_from(buf, 0)
        if size < RECORD_OVERHEAD_V0 or LOG_OVERHEAD + size != len(buf):
            raise CorruptBatchError(f"length field {size} does not describe the "
                                    f"{len(buf)} bytes given", path=path or None,
                                    position=position, base_offset=base_offset,
                                    field="batch_length")
        if segment is None:
            segment = os.path.basename(path)
        magic = _MAGIC.unpack_from(buf, MAGIC_OFFSET)[0]
        if magic < 2:  # Kafka: any magic below 2 (even negative) is a legacy entry
            return cls._legacy_batch(buf, path, segment, position, max_decompressed_size,
                                     max_message_size)
        return cls._v2_batch(buf, path, segment, position, max_decompressed_size)

    @classmethod
    def _v2_batch(cls, buf: bytes, path: str, segment: str, position: int,
                  max_decompressed_size: int, *, size: int | None = None,
                  computed_crc: int | None = None) -> SegmentBatch:
        """``buf`` is the whole batch, or (``size`` and ``computed_crc`` given) only its
        61-byte header: the bytes of a large batch are read again when needed."""
        self = cls.__new__(cls)
        self.path = path
        self.segment = segment
        self.position = position
        self.size = len(buf) if size is None else size
        if len(buf) < RECORD_BATCH_OVERHEAD:
            base_offset, size = _OFFSET_SIZE.unpack_from(buf, 0)
            raise CorruptBatchError(
                f"batch size {len(buf)} is smaller than the v2 batch overhead "
                f"({RECORD_BATCH_OVERHEAD})", path=path or None, position=position,
                base_offset=base_offset, field="batch_length", actual=size)
        (base_offset, batch_length, ple, magic, crc, attributes, last_offset_delta, base_ts,
         max_ts, producer_id, producer_epoch, base_sequence, count) = V2_HEADER.unpack_from(buf)
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = ple
        self.magic = magic
        self.crc = crc
        if computed_crc is None:
            computed_crc = crc32c(memoryview(buf)[CRC_START:self.size])
        self.computed_crc = computed_crc
        # DefaultRecordBatch.isValid(): sizeInBytes >= 61 and the checksum matches
        self.crc_valid = computed_crc == crc and self.size >= RECORD_BATCH_OVERHEAD
        self.attributes = attributes
        codec = attributes & COMPRESSION_CODEC_MASK
        self.compression_id = codec
        self.compression = codecs.COMPRESSION_NAMES.get(codec, f"unknown({codec})")
        self.timestamp_type = _TIMESTAMP_TYPES[bool(attributes & TIMESTAMP_TYPE_MASK)]
        self.is_transactional = bool(attributes & TRANSACTIONAL_FLAG_MASK)
        self.is_control = bool(attributes & CONTROL_FLAG_MASK)
        self.has_delete_horizon = bool(attributes & DELETE_HORIZON_FLAG_MASK)
        self.delete_horizon_ms = base_ts if attributes & DELETE_HORIZON_FLAG_MASK else None
        self.last_offset_delta = last_offset_delta
        self.last_offset = java_long(base_offset + last_offset_delta)
        self.base_timestamp = base_ts
        self.max_timestamp = max_ts
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.last_sequence = (NO_SEQUENCE if base_sequence == NO_SEQUENCE
                              else increment_sequence(base_sequence, last_offset_delta))
        self.records_count = count
        self._buf = buf if size is None else None
        self._legacy = None
        self._inner = None
        self._inner_error = None
        self._max_decompressed_size = max_decompressed_size
        self._max_message_size = None
        return self

    @classmethod
    def _legacy_batch(cls, buf: bytes, path: str, segment: str, position: int,
                      max_decompressed_size: int, max_message_size: int) -> SegmentBatch:
        self = cls.__new__(cls)
        self.path = path
        self.segment = segment
        self.position = position
        self.size = len(buf)
        self._inner = None
        self._inner_error = None
        # the bound the inner set was read with; None when the entry itself is broken
        self._max_message_size = max_message_size
        try:
            msg = parse_legacy_entry(buf, 0)
        except FormatError as exc:
            # impossible key/value lengths: keep the header for shallow listing, raise the
            # error from records()
            msg = parse_legacy_header(buf, 0)
            self._inner_error = exc.located(path=path or None, position=position,
                                            base_offset=msg.offset)
            self._max_message_size = None
        self._buf = buf
        self._legacy = msg
        self._max_decompressed_size = max_decompressed_size
        self.batch_length = msg.size
        self.partition_leader_epoch = -1
        self.magic = msg.magic
        self.crc = msg.crc
        self.computed_crc = msg.computed_crc
        self.crc_valid = msg.crc_valid
        self.attributes = msg.attributes
        codec = msg.compression_id
        self.compression_id = codec
        self.compression = codecs.COMPRESSION_NAMES.get(codec, f"unknown({codec})")
        self.timestamp_type = msg.timestamp_type
        self.is_transactional = False
        self.is_control = False
        self.has_delete_horizon = False
        self.delete_horizon_ms = None
        self.base_timestamp = msg.timestamp
        self.max_timestamp = msg.timestamp  # AbstractLegacyRecordBatch.maxTimestamp()
        self.producer_id = -1
        self.producer_epoch = -1
        self.base_sequence = -1
        self.last_sequence = -1
        self.last_offset = msg.offset
        if codec == 0 or self._inner_error is not None:
            self.base_offset = msg.offset
            self.records_count = 1
            if self._inner_error is not None and codec != 0:
                self.records_count = 0
        else:
            # baseOffset of a compressed legacy entry needs the inner messages (Kafka
            # loads the full batch too); a failure is kept and raised by records().
            try:
                self._inner = read_inner_messages(msg, max_decompressed_size=max_decompressed_size,
                                                  max_message_size=max_message_size)
            except FormatError as exc:
                self._inner_error = exc.located(path=path or None, position=position,
                                                base_offset=msg.offset)
            if self._inner:
                self.base_offset = self._inner[0][0]
                self.records_count = len(self._inner)
            else:
                self.base_offset = msg.offset
                self.records_count = 0
        # an int like v2's field (hostile inner offsets must not give a value no int32 holds)
        self.last_offset_delta = java_int(self.last_offset - self.base_offset)
        return self

    # ---------------------------------------------------------------- accessors

    def raw(self) -> bytes:
        """The batch bytes exactly as on disk."""
        if self._buf is None:  # a large batch: read again from the file
            return self._read_again()
        return self._buf if isinstance(self._buf, bytes) else bytes(self._buf)

    def _read_again(self) -> bytes:
        with SegmentFile(self.path, window=64) as sf:
            data = sf.read(self.position, self.size)
            if len(data) != self.size or stat_change(sf.stat, os.fstat(sf.fd)) is not None:
                raise FileChangedError(f"{display_path(self.path)}: file changed while "
                                       f"reading (batch at position {self.position})")
        return data

    def records(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> Iterator[Record]:
        """Records of this batch (legacy: the inner messages, or the message itself).

        ``max_message_size`` bounds one legacy inner message (Kafka's DataLogInputStream);
        the decompressed payload of one batch is bounded by the reader's
        ``max_decompressed_size``.
        """
        if self._legacy is not None:
            return self._legacy_records(max_message_size)
        return self._v2_records()

    def header_error(self) -> FormatError | None:
        """What makes Kafka's reader die on this batch's header fields alone (kafka-dump-log
        dies on it even without --deep-iteration), else None: a legacy entry whose magic is
        not 0 or 1 ("Invalid magic used in LegacyRecord", ``LegacyRecord``), or a compression
        id Kafka does not know ("Unknown compression type id", ``CompressionType.forId``)."""
        if self.magic < 2 and self.magic not in (0, 1):
            return UnsupportedMagicError(
                f"Invalid magic used in LegacyRecord: {self.magic}", path=self.path or None,
                position=self.position, base_offset=self.base_offset, field="magic")
        if self.compression_id not in codecs.COMPRESSION_NAMES:
            return CompressionError(
                f"Unknown compression type id: {self.compression_id}", path=self.path or None,
                position=self.position, base_offset=self.base_offset, field="attributes")
        return None

    def control_records(self) -> list[ControlRecord]:
        """Decoded control key/value of every record of a control batch ([] otherwise)."""
        if not self.is_control:
            return []
        out = []
        for i, rec in enumerate(self.records()):
            try:
                key = decode_control_key(rec.key)
                value = decode_control_value(key.type_id, rec.value)
            except FormatError as exc:
                exc.field = f"records[{i}].{exc.field}"
                raise exc.located(path=self.path or None, position=self.position,
                                  base_offset=self.base_offset) from None
            out.append(ControlRecord(rec.offset, rec.timestamp, key.version, key.type_id,
                                     control_type_name(key.type_id), value))
        return out

    def __repr__(self) -> str:
        return (f"SegmentBatch(segment={self.segment!r}, position={self.position}, "
                f"base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"magic={self.magic}, count={self.records_count}, "
                f"compression={self.compression!r}, crc_valid={self.crc_valid})")

    def as_dict(self) -> dict[str, Any]:
        """Public attributes as a dict (for JSON output and tests)."""
        return {name: getattr(self, name) for name in self.__slots__ if not name.startswith("_")}

    # ---------------------------------------------------------------- decoding

    def _error(self, cls: type[FormatError], message: str, *, position: int | None = None,
               field: str | None = None) -> FormatError:
        return cls(message, path=self.path or None,
                   position=self.position if position is None else position,
                   base_offset=self.base_offset, field=field)

    def _legacy_records(self, max_message_size: int) -> Iterator[Record]:
        msg = self._legacy
        assert msg is not None
        if msg.magic not in (0, 1):
            raise self._error(UnsupportedMagicError, f"unsupported magic {msg.magic}",
                              field="magic")
        if self.compression_id != 0 and self._max_message_size not in (None, max_message_size):
            # read with another bound than this one: read the inner set again with this one
            inner: list[tuple[int, LegacyMessage]] | None
            try:
                inner = read_inner_messages(msg, max_decompressed_size=self._max_decompressed_size,
                                            max_message_size=max_message_size)
            except FormatError as exc:
                raise exc.located(path=self.path or None, position=self.position,
                                  base_offset=self.base_offset) from None
        elif self._inner_error is not None:
            raise self._inner_error
        elif self.compression_id == 0:
            yield inner_record(msg, msg.offset, self.base_offset, None)
            return
        else:
            inner = self._inner
            if inner is None:  # pragma: no cover - set in _legacy_batch
                return
        base_offset = inner[0][0]  # = self.base_offset whenever the first read succeeded
        for i, (offset, m) in enumerate(inner):
            if m.compression_id != 0:
                raise self._error(CorruptBatchError, "Inner messages must not be compressed",
                                  field=f"inner[{i}].attributes")
            yield inner_record(m, offset, base_offset, msg)

    def _v2_records(self) -> Iterator[Record]:
        count = self.records_count
        check_v2_batch(path=self.path, position=self.position, base_offset=self.base_offset,
                       size=self.size, count=count, codec=self.compression_id,
                       limit=self._max_decompressed_size)
        if count == 0:  # DefaultRecordBatch.iterator(): empty batches yield nothing
            return iter(())
        buf = self.raw()
        if self.compression_id == 0:
            return self._decode_records(buf, RECORD_BATCH_OVERHEAD, self.position)
        try:
            payload = codecs.decompress(self.compression_id,
                                        memoryview(buf)[RECORD_BATCH_OVERHEAD:], magic=2,
                                        max_size=self._max_decompressed_size)
        except FormatError as exc:
            raise exc.located(path=self.path or None, position=self.position + RECORD_BATCH_OVERHEAD,
                              base_offset=self.base_offset) from None
        return self._decode_records(payload, 0, None)

    def _decode_records(self, buf: bytes, start: int,
                        file_base: int | None) -> Iterator[Record]:
        """Records from ``buf[start:]`` through the one v2 decoder (segtools.records.v2_decoder).

        ``file_base`` is the file position of ``buf[0]`` when ``buf`` is the batch itself
        (uncompressed); for decompressed payloads errors point at the batch and name the
        byte in the decompressed payload.
        """
        try:
            yield from iter_v2_records(
                buf, start, self.records_count, self.base_offset, self.base_timestamp,
                self.max_timestamp if self.timestamp_type == "LogAppendTime" else None,
                self.base_sequence, self.is_control, Record)
        except RecordFault as fault:
            raise record_error(fault, path=self.path, position=self.position,
                               base_offset=self.base_offset,
                               compression=None if file_base is not None else self.compression
                               ) from None


class SegmentReader:
    """Iterate the batches of one ``.log`` (or KRaft ``.checkpoint``) file.

    ``max_bytes`` considers only the first N bytes (kafka-dump-log ``--max-bytes``): batches
    not entirely inside are not read. CRC mismatches are reported in ``crc_valid``; with
    ``strict_crc`` they raise ``CrcMismatchError`` instead. After iteration ``valid_bytes`` is the end of the last
    complete batch; ``file_size - valid_bytes`` trailing bytes are invalid (a torn tail).

    ``max_batch_bytes`` (older name ``max_decompressed_size``; default
    ``segtools.primitives.limits.DEFAULT_MAX_BATCH_BYTES``) bounds one batch: a larger length field raises
    ``BatchTooLargeError`` before anything is read, and so do records decompressing past it.
    A file whose size or modification time changes while it is read, when the read ends
    early or meets a CRC mismatch or broken bytes, raises ``FileChangedError`` instead of
    reporting corruption that may not be on disk.
    """

    def __init__(self, path: str | os.PathLike[str] | bytes, *, max_bytes: int | None = None,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 max_decompressed_size: int | None = None,
                 strict_crc: bool = False, max_batch_bytes: int | None = None,
                 start: int = 0) -> None:
        self.path = input_path(path)
        #: where an iteration begins (a batch boundary; dump's fast path hands over there)
        self.start = start
        self.strict_crc = strict_crc
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise os_input_error(self.path, exc) from None
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{display_path(self.path)} is not a regular file")
        if not os.access(self.path, os.R_OK):
            raise InputError(f"{display_path(self.path)} is not readable")
        self.file_size: int = st.st_size
        self.max_bytes = max_bytes
        self.max_message_size = max_message_size
        self.max_batch_bytes = resolve_max_batch_bytes(
            max_batch_bytes, max_decompressed_size=max_decompressed_size)
        self.max_decompressed_size = self.max_batch_bytes  # older name
        self.valid_bytes: int = 0
        self.batches_read: int = 0
        self._files: set[Any] = set()  # open handles of live iterations

    @property
    def end(self) -> int:
        """Byte position where the walk stops (file size, or ``max_bytes`` if smaller)."""
        if self.max_bytes is None:
            return self.file_size
        return max(0, min(self.file_size, self.max_bytes))

    @property
    def invalid_bytes(self) -> int:
        """Bytes after the last complete batch (meaningful after a full iteration)."""
        return self.end - self.valid_bytes

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file handles of iterations still in progress."""
        for f in list(self._files):
            f.close()
        self._files.clear()

    def __iter__(self) -> Iterator[SegmentBatch]:
        path = self.path
        segment = os.path.basename(path)
        end = self.end
        limit = self.max_batch_bytes
        self.valid_bytes = self.start
        self.batches_read = 0
        # read-only, O_NONBLOCK (a FIFO swapped in since the stat must not block the open),
        # size snapshot at open: the one segment-file object
        sf = SegmentFile(path, _READ_CHUNK)
        self._files.add(sf)
        pos = self.start

        def changed(why: str) -> FileChangedError:
            return FileChangedError(f"{display_path(path)}: file changed while reading "
                                    f"({why}), near position {pos}")

        def check_unchanged(seen: bytes | bytearray | memoryview = b"", at: int = 0) -> None:
            """Raise FileChangedError when the file is not the one we opened any more (the
            one rule, SegmentFile.check_read). Called only where a read looks damaged, so
            healthy files pay nothing."""
            sf.check_read(bytes(seen), at, settle_checks=_SETTLE_CHECKS,
                          settle_seconds=_SETTLE_SECONDS, position=pos)

        try:
            if sf.size < self.file_size:
                # reads stay below the size seen by the constructor: it shrank since
                raise changed("the file shrank")
            stop = min(end, sf.size)
            header_end = sf.size
            while True:
                if sf.fd < 0:
                    raise InputError(f"{display_path(path)}: the reader was closed during "
                                     "iteration")
                # the one walk (segtools.records.batch_walk: FileLogInputStream.nextBatch),
                # as SegmentFile.step_at steps it, inlined: this loop runs once a batch
                window, rel = sf.get(pos, RECORD_BATCH_OVERHEAD)
                step = next_batch(window, rel, pos, stop, header_end, limit)
                status, _, _, size_field, magic = step
                if status == SCAN_END:
                    break
                if status != SCAN_BATCH:
                    # damage read from a file being rewritten is not on disk
                    check_unchanged(window[rel:rel + LOG_OVERHEAD], pos)
                    error = walk_error(step, path=path, file_size=sf.size, limit=limit)
                    if error is None:
                        break  # torn tail: counted as invalid trailing bytes
                    raise error
                total = LOG_OVERHEAD + size_field
                if magic >= 2 and total < RECORD_BATCH_OVERHEAD:
                    # a v2 batch shorter than its 61-byte header has its header loaded from
                    # the file (bytes past the batch's end), is invalid, and the walk goes
                    # on 12 + length bytes later (batch_walk.borrows_header)
                    window, rel = sf.batch_bytes(step)
                    head = window[rel:rel + RECORD_BATCH_OVERHEAD]
                    batch = SegmentBatch._v2_batch(head, path, segment, pos, limit, size=total,
                                                  computed_crc=None)
                elif total > _EAGER_BATCH_BYTES and magic >= 2:
                    batch = self._large_v2_batch(sf, pos, total, segment)
                else:
                    if rel + total > len(window):
                        window, rel = sf.get(pos, total)
                    buf = window[rel:rel + total]   # bytes: what from_bytes would make
                    try:
                        # the walk has checked what from_bytes would (size, limit, magic)
                        if magic >= 2:
                            batch = SegmentBatch._v2_batch(buf, path, segment, pos, limit)
                        else:
                            batch = SegmentBatch._legacy_batch(buf, path, segment, pos, limit,
                                                              self.max_message_size)
                    except FormatError:
                        check_unchanged(buf, pos)
                        raise
                if not batch.crc_valid:
                    # a mismatch read from a file being rewritten is not on disk
                    check_unchanged(batch._buf or b"", pos)
                if self.strict_crc and not batch.crc_valid:
                    raise CrcMismatchError(
                        f"CRC mismatch, stored 0x{batch.crc:08x} computed "
                        f"0x{batch.computed_crc:08x}", path=path, position=pos,
                        base_offset=batch.base_offset, field="crc")
                pos += total
                self.valid_bytes = pos
                self.batches_read += 1
                yield batch
        except OSError as exc:
            raise os_input_error(path, exc) from None
        finally:
            sf.close()
            self._files.discard(sf)

    def _large_v2_batch(self, sf: SegmentFile, pos: int, total: int,
                        segment: str) -> SegmentBatch:
        """A v2 batch too large to hold: header read, CRC-32C computed over streamed reads
        (not through the window), bytes left on disk (``raw()`` reads them again)."""
        head = sf.read(pos, RECORD_BATCH_OVERHEAD)
        crc = crc32c(memoryview(head)[CRC_START:])
        done = RECORD_BATCH_OVERHEAD
        while done < total:
            chunk = sf.read(pos + done, min(_CRC_STEP, total - done))
            crc = crc32c(chunk, crc)
            done += len(chunk)
        return SegmentBatch._v2_batch(head, self.path, segment, pos, self.max_batch_bytes,
                                     size=total, computed_crc=crc)

    def records(self) -> Iterator[Record]:
        """Every record of every batch (deep iteration)."""
        for batch in self:
            yield from batch.records(max_message_size=self.max_message_size)


#: magic bytes read as legacy entries: 0, 1 and every negative int8 (Kafka: magic < 2)
_LEGACY_MAGIC_BYTES = frozenset([0, 1, *range(0x80, 0x100)])


# -------------------------------------------------------------------- directories


def segment_paths(path: str | os.PathLike[str] | bytes) -> list[str]:
    """The ``.log`` files ``iter_batches`` reads for ``path``, in reading order.

    What a path stands for is decided by :func:`segtools.files.sources.resolve` (a segment, a
    partition dir, a broker log dir, a folder of broker dirs); partitions come in (topic,
    partition, broker, state) order, segments by base offset. Warnings about the inputs (links
    out of the input, duplicates) are issued with :mod:`warnings`.
    """
    from segtools.files.sources import resolve

    resolution = resolve([path])
    resolution.warn(stacklevel=4)
    return resolution.segment_paths()


def iter_batches(path: str | os.PathLike[str] | bytes, *, max_bytes: int | None = None,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 max_decompressed_size: int | None = None,
                 max_batch_bytes: int | None = None) -> Iterator[SegmentBatch]:
    """Batches of a segment file, a partition dir (all ``.log`` in offset order) or a broker
    log dir (all partition dirs, by topic then partition number).

    ``max_batch_bytes`` (older name ``max_decompressed_size``) bounds one batch on disk and
    decompressed (segtools.primitives.limits)."""
    from segtools.files.remote import local_file

    limit = resolve_max_batch_bytes(max_batch_bytes, max_decompressed_size=max_decompressed_size)
    for seg in segment_paths(path):
        # a file:// segment is its local path; an object store's a local copy while it is read
        with local_file(seg) as local, SegmentReader(local, max_bytes=max_bytes,
                                                     max_message_size=max_message_size,
                                                     max_batch_bytes=limit) as reader:
            yield from reader


def read_batches(path: str | os.PathLike[str] | bytes, **kw: Any) -> Iterator[SegmentBatch]:
    """Deprecated name of :func:`iter_batches`: it yields lazily, and lazy readers are ``iter_*``
    (docs/CONVENTIONS.md, public API names)."""
    import warnings

    warnings.warn("segtools.read_batches is now segtools.iter_batches (it yields lazily)",
                  DeprecationWarning, stacklevel=2)
    return iter_batches(path, **kw)


def iter_records(path: str | os.PathLike[str] | bytes, **kw: Any) -> Iterator[Record]:
    """Every record under ``path`` (see ``iter_batches``)."""
    max_message_size = kw.get("max_message_size", DEFAULT_MAX_MESSAGE_SIZE)
    for batch in iter_batches(path, **kw):
        yield from batch.records(max_message_size=max_message_size)
