"""The few header fields the log writer needs from a batch it appends or recovers.

This is what Kafka's ``LogSegment``/``ProducerStateManager`` look at (offsets, max timestamp,
producer fields, control type), plus the validity check of ``RecordBatch.ensureValid``
(size and CRC). Full decoding of batches is ``segtools.records.batches``' job.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from segtools.formats.control import CONTROL_KEY_STRUCT_FORMAT, END_TXN_MARKER_STRUCT_FORMAT
from segtools.formats.legacy import (
    LEGACY_ENTRY_HEAD_STRUCT_FORMAT,
    LEGACY_TIMESTAMP_STRUCT_FORMAT,
    RECORD_OVERHEAD_V0,  # LegacyRecord.RECORD_OVERHEAD_V0: smaller size fields are corrupt
)
from segtools.formats.record_batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    HEADER_STRUCT_FORMAT,
    LOG_OVERHEAD,
    LOG_PREFIX_STRUCT_FORMAT,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
)
from segtools.primitives.crc import crc32, crc32c

from ..errors import CorruptBatchError, CrcMismatchError, TruncatedBatchError, UnsupportedMagicError

__all__ = ["BatchHeader", "parse_batch_header", "split_batches"]

_V2_HEADER = struct.Struct(HEADER_STRUCT_FORMAT)
_LEGACY_PREFIX = struct.Struct(LEGACY_ENTRY_HEAD_STRUCT_FORMAT)  # offset, size, crc, magic, attributes


@dataclass(frozen=True, slots=True)
class BatchHeader:
    position: int          # byte position of the batch within the parsed buffer
    size: int              # whole batch incl. the 12-byte offset+length prefix
    magic: int
    base_offset: int       # legacy: the entry's own offset (the last inner offset for wrappers)
    last_offset: int
    max_timestamp: int
    crc_valid: bool
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    last_offset_delta: int = 0
    is_transactional: bool = False
    is_control: bool = False
    partition_leader_epoch: int = -1
    records_count: int = 1
    control_type: int | None = None        # 0 ABORT, 1 COMMIT, ... for a control batch
    coordinator_epoch: int | None = None   # from an ABORT/COMMIT value

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        # sequences wrap at Integer.MAX_VALUE to 0 (DefaultRecordBatch.incrementSequence)
        if self.base_sequence > 0x7FFFFFFF - self.last_offset_delta:
            return self.last_offset_delta - (0x7FFFFFFF - self.base_sequence) - 1
        return self.base_sequence + self.last_offset_delta


def _key_value(offset: int, timestamp: int, key: bytes | None, value: bytes | None,
               *_rest: object) -> tuple[bytes | None, bytes | None]:
    return key, value


def _control_record(buf: bytes | memoryview, pos: int, end: int) -> tuple[int | None, int | None]:
    """(type, coordinator_epoch) of the first record of an uncompressed control batch, read
    with the one v2 record decoder (segtools.records.v2_decoder)."""
    from segtools.records.faults import RecordFault
    from segtools.records.v2_decoder import iter_v2_records

    records = bytes(buf[pos:end])
    try:
        key, value = next(iter_v2_records(records, 0, 1, 0, 0, None, -1, True, _key_value))
    except (RecordFault, StopIteration):
        # a record that does not end with the batch is fine here: only the first one matters
        return None, None
    if key is None or len(key) < 4:
        return None, None
    _, control_type = struct.unpack_from(CONTROL_KEY_STRUCT_FORMAT, key, 0)
    epoch = None
    if control_type in (0, 1) and value is not None and len(value) >= 6:
        _, epoch = struct.unpack_from(END_TXN_MARKER_STRUCT_FORMAT, value, 0)
    return control_type, epoch


def parse_batch_header(buf: bytes | memoryview, pos: int = 0, *, path: str | None = None,
                       file_position: int | None = None) -> BatchHeader:
    """Header of the batch starting at ``pos``; raises a FormatError subclass when the bytes
    cannot be a batch (too short, size < 14, unknown magic). CRC validity is reported, not
    raised."""
    where = file_position if file_position is not None else pos
    end = len(buf)
    if end - pos < 17:
        raise TruncatedBatchError("batch header cut short", path=path, position=where,
                                  field="length", expected=17, actual=end - pos)
    offset, length = struct.unpack_from(LOG_PREFIX_STRUCT_FORMAT, buf, pos)
    if length < RECORD_OVERHEAD_V0:
        raise CorruptBatchError(f"Found record size {length} smaller than minimum record "
                                f"overhead ({RECORD_OVERHEAD_V0})", path=path, position=where,
                                base_offset=offset, field="length")
    size = length + LOG_OVERHEAD
    if pos + size > end:
        raise TruncatedBatchError("batch runs past the end of the data", path=path,
                                  position=where, base_offset=offset, field="length",
                                  expected=size, actual=end - pos)
    magic = buf[pos + 16]
    if magic in (0, 1):
        _, _, stored, _, _ = _LEGACY_PREFIX.unpack_from(buf, pos)
        timestamp = -1
        if magic == 1 and length >= 22:
            (timestamp,) = struct.unpack_from(LEGACY_TIMESTAMP_STRUCT_FORMAT, buf, pos + 18)
        valid = crc32(memoryview(buf)[pos + 16:pos + size]) == stored
        return BatchHeader(position=pos, size=size, magic=magic, base_offset=offset,
                           last_offset=offset, max_timestamp=timestamp, crc_valid=valid)
    if magic != 2:
        raise UnsupportedMagicError(f"unknown magic {magic}", path=path, position=where,
                                    base_offset=offset, field="magic")
    if size < RECORD_BATCH_OVERHEAD:
        raise CorruptBatchError("v2 batch shorter than its 61-byte header", path=path,
                                position=where, base_offset=offset, field="length",
                                expected=RECORD_BATCH_OVERHEAD, actual=size)
    (base_offset, _, leader_epoch, _, stored, attributes, last_offset_delta, _base_ts, max_ts,
     producer_id, producer_epoch, base_sequence, count) = _V2_HEADER.unpack_from(buf, pos)
    valid = crc32c(memoryview(buf)[pos + 21:pos + size]) == stored
    is_control = bool(attributes & CONTROL_FLAG_MASK)
    control_type = coordinator_epoch = None
    if is_control and count > 0 and attributes & COMPRESSION_CODEC_MASK == 0:
        control_type, coordinator_epoch = _control_record(buf, pos + RECORD_BATCH_OVERHEAD, pos + size)
    return BatchHeader(
        position=pos, size=size, magic=2, base_offset=base_offset,
        last_offset=base_offset + last_offset_delta, max_timestamp=max_ts, crc_valid=valid,
        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
        last_offset_delta=last_offset_delta, is_transactional=bool(attributes & TRANSACTIONAL_FLAG_MASK),
        is_control=is_control, partition_leader_epoch=leader_epoch, records_count=count,
        control_type=control_type, coordinator_epoch=coordinator_epoch)


def split_batches(data: bytes | memoryview, *, path: str | None = None,
                  require_valid_crc: bool = True) -> list[BatchHeader]:
    """Headers of the whole batches that make up ``data`` (an append chunk)."""
    headers = []
    pos = 0
    while pos < len(data):
        header = parse_batch_header(data, pos, path=path)
        if require_valid_crc and not header.crc_valid:
            raise CrcMismatchError("CRC mismatch in appended batch", path=path, position=pos,
                                   base_offset=header.base_offset, field="crc")
        headers.append(header)
        pos += header.size
    return headers
