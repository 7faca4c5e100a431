"""Build magic-2 record batches and control (transaction marker) batches as bytes.

Layouts follow FORMATS.md sections 1 and 4 (``DefaultRecordBatch.java``,
``DefaultRecord.java``, ``MemoryRecordsBuilder.java``, ``EndTransactionMarker.java``).
The output is what a Java producer (and, for LogAppendTime, the broker's validator) would
leave on disk for the same inputs.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from segtools.formats.control import (
    CONTROL_KEY_STRUCT_FORMAT,
    END_TXN_MARKER_STRUCT_FORMAT,
    ControlRecordType,
)
from segtools.formats.record_batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    CRC_STRUCT_FORMAT,
    DELETE_HORIZON_FLAG_MASK,
    HEADER_STRUCT_FORMAT,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    CompressionType,
)
from segtools.primitives.crc import crc32c
from segtools.primitives.varint import encode_varlong

__all__ = [
    "NewRecord",
    "build_batch",
    "build_control_batch",
    "codec_id_of",
    "encode_varint",
    "RECORD_BATCH_OVERHEAD",
]


# baseOffset, length, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
_HEADER = struct.Struct(HEADER_STRUCT_FORMAT)

#: codec name as Kafka prints it -> id (CompressionType's labels)
_CODEC_IDS = {c.label: int(c) for c in CompressionType}
#: the control types a transaction marker may carry (ControlRecordType.ABORT / COMMIT)
_END_TXN_TYPES = (ControlRecordType.ABORT, ControlRecordType.COMMIT)

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class NewRecord:
    """One record to write.

    ``timestamp`` None means "not given": the batch's base timestamp (or the current time)
    is used, as a Java producer stamps records without a timestamp with ``now``.
    """

    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


def codec_id_of(compression: str | int) -> int:
    """Codec id (0..4) for a name as Kafka prints it ("none", "gzip", ...) or an id."""
    if isinstance(compression, bool):
        raise TypeError("compression must be a codec name or id")
    if isinstance(compression, int):
        if compression not in _CODEC_IDS.values():
            raise ValueError(f"unknown compression type id: {compression}")
        return compression
    try:
        return _CODEC_IDS[compression.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown compression: {compression!r}") from None


def encode_varint(value: int, out: bytearray) -> None:
    """Append ``value`` as a zig-zag varlong (also valid for 32-bit varints)."""
    out += encode_varlong(value)


def _encode_nullable(data: bytes | None, out: bytearray) -> None:
    if data is None:
        out.append(0x01)  # zig-zag of -1
    else:
        encode_varint(len(data), out)
        out += data


def _encode_record(out: bytearray, offset_delta: int, timestamp_delta: int, key: bytes | None,
                   value: bytes | None, headers: Iterable[tuple[str, bytes | None]]) -> None:
    body = bytearray(b"\x00")  # record attributes: unused, written 0
    encode_varint(timestamp_delta, body)
    encode_varint(offset_delta, body)
    _encode_nullable(key, body)
    _encode_nullable(value, body)
    headers = list(headers)
    encode_varint(len(headers), body)
    for header_key, header_value in headers:
        key_bytes = header_key.encode("utf-8") if isinstance(header_key, str) else bytes(header_key)
        encode_varint(len(key_bytes), body)
        body += key_bytes
        _encode_nullable(header_value, body)
    encode_varint(len(body), out)
    out += body


def _finish_batch(*, base_offset: int, partition_leader_epoch: int, attributes: int,
                  last_offset_delta: int, base_timestamp: int, max_timestamp: int,
                  producer_id: int, producer_epoch: int, base_sequence: int,
                  records_count: int, records_section: bytes) -> bytes:
    size = RECORD_BATCH_OVERHEAD + len(records_section)
    buf = bytearray(size)
    try:
        _HEADER.pack_into(buf, 0, base_offset, size - 12, partition_leader_epoch, 2, 0,
                          attributes, last_offset_delta, base_timestamp, max_timestamp,
                          producer_id, producer_epoch, base_sequence, records_count)
    except struct.error as exc:  # a field outside its int8/16/32/64 range
        raise ValueError(f"batch header field out of range: {exc}") from None
    buf[RECORD_BATCH_OVERHEAD:] = records_section
    struct.pack_into(CRC_STRUCT_FORMAT, buf, CRC_OFFSET, crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]))
    return bytes(buf)


def build_batch(
    records: Sequence[NewRecord],
    *,
    base_offset: int,
    partition_leader_epoch: int = 0,
    compression: str | int = "none",
    timestamp_type: str = "CreateTime",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    log_append_time: int | None = None,
    last_offset_delta: int | None = None,
    offset_deltas: Sequence[int] | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """One magic-2 record batch as it sits in a ``.log`` file.

    Record offsets are ``base_offset + i``. ``base_timestamp`` defaults to the first record's
    timestamp (-1 for an empty batch), record timestamp deltas are relative to it.
    ``max_timestamp`` defaults to the largest record timestamp for CreateTime and to
    ``log_append_time`` for LogAppendTime (the broker's stamp; record deltas are kept, as the
    broker's validator leaves them). ``offset_deltas`` (default 0, 1, 2, ...) gives the
    records' offset deltas, e.g. the gaps compaction leaves; ``last_offset_delta`` defaults to
    the last of them; pass it for an empty batch that keeps its producer's sequence range.
    ``delete_horizon_ms`` (set by the log cleaner) sets attribute bit 6 and becomes the base
    timestamp that record deltas are relative to.
    Compressed batches compress the records section with :func:`segtools.primitives.codecs.compress`,
    i.e. the stream a Java producer writes.
    """
    codec = codec_id_of(compression)
    if timestamp_type not in ("CreateTime", "LogAppendTime"):
        raise ValueError(f"magic 2 timestamp type must be CreateTime or LogAppendTime, "
                         f"not {timestamp_type!r}")
    if is_transactional and producer_id < 0:
        raise ValueError("a transactional batch needs a producer id")

    records = list(records)
    timestamps: list[int] = []
    fallback: int | None = base_timestamp
    for record in records:
        if record.timestamp is not None:
            timestamps.append(record.timestamp)
        else:
            if fallback is None:
                fallback = int(time.time() * 1000)
            timestamps.append(fallback)
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    elif base_timestamp is None:
        base_timestamp = timestamps[0] if timestamps else -1
    if offset_deltas is None:
        offset_deltas = range(len(records))
    elif len(offset_deltas) != len(records) or any(
            not 0 <= b < a for a, b in zip(offset_deltas[1:], offset_deltas)):
        raise ValueError("offset_deltas must be increasing, >= 0, one per record")

    section = bytearray()
    for offset_delta, record, timestamp in zip(offset_deltas, records, timestamps):
        _encode_record(section, offset_delta, timestamp - base_timestamp, record.key, record.value,
                       record.headers)
    if codec != 0:
        from segtools.primitives.codecs import compress  # imported late: only compressed batches need it

        section = bytearray(compress(codec, bytes(section), magic=2))

    attributes = codec
    if timestamp_type == "LogAppendTime":
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG_MASK

    if max_timestamp is None:
        if timestamp_type == "LogAppendTime":
            if log_append_time is None:
                raise ValueError("LogAppendTime needs log_append_time (or max_timestamp)")
            max_timestamp = log_append_time
        else:
            max_timestamp = max(timestamps) if timestamps else -1
    if last_offset_delta is None:
        last_offset_delta = offset_deltas[-1] if records else 0
    if not 0 <= last_offset_delta <= _INT32_MAX:
        raise ValueError(f"last_offset_delta out of int32 range: {last_offset_delta}")

    return _finish_batch(
        base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
        attributes=attributes, last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp, max_timestamp=max_timestamp, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, records_count=len(records),
        records_section=bytes(section))


def build_control_batch(
    control_type: str,
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    partition_leader_epoch: int = 0,
    timestamp: int,
) -> bytes:
    """A transaction marker batch (COMMIT or ABORT) as the coordinator has the leader write it.

    Control batch + transactional, the producer's id/epoch, base sequence -1, one record with
    key ``version int16 = 0, type int16`` and value ``version int16 = 0, coordinator_epoch int32``
    (``MemoryRecords.withEndTransactionMarker``).
    """
    try:
        type_id = int(ControlRecordType[control_type.upper()])
        if type_id not in _END_TXN_TYPES:
            raise KeyError(control_type)
    except (KeyError, AttributeError):
        raise ValueError(f"control_type must be COMMIT or ABORT, not {control_type!r}") from None
    key = struct.pack(CONTROL_KEY_STRUCT_FORMAT, 0, type_id)
    value = struct.pack(END_TXN_MARKER_STRUCT_FORMAT, 0, coordinator_epoch)
    section = bytearray()
    _encode_record(section, 0, 0, key, value, ())
    return _finish_batch(
        base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
        attributes=TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK, last_offset_delta=0,
        base_timestamp=timestamp, max_timestamp=timestamp, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=-1, records_count=1,
        records_section=bytes(section))
