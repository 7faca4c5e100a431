"""Status and error codes shared by the numba kernel and the pure-Python record engine.

Both engines report a problem as ``(code, batch index, record index, byte position)`` and
:func:`record_error` turns that into the one ``FormatError`` both raise, so the two engines
fail identically (FORMATS.md 1.6 gives Kafka's wording for each case).
"""

from __future__ import annotations

from segtools.errors import CorruptBatchError, FormatError, TruncatedBatchError

# header scan status (FileLogInputStream.nextBatch, FORMATS.md 1.8)
SCAN_MORE = 0          # stopped because the output chunk is full; call again from next_pos
SCAN_END = 1           # fewer than 18 bytes left: no more batches
SCAN_TORN_TAIL = 2     # a batch announces more bytes than the file holds (partial trailing batch)
SCAN_SIZE_TOO_SMALL = 3  # size field < 14: Kafka's CorruptRecordException
SCAN_V2_TOO_SHORT = 4    # magic >= 2 but the batch is shorter than the 61-byte v2 header

LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_OVERHEAD_V0 = 14
RECORD_BATCH_OVERHEAD = 61
#: smallest possible v2 record: length, attributes, timestampDelta, offsetDelta, keyLength,
#: valueLength, headersCount, one byte each
MIN_RECORD_SIZE = 7

# record decoding errors
ERR_NONE = 0
ERR_VARINT = 1            # varint/varlong longer than 5/10 bytes
ERR_EOF = 2               # bytes ran out inside a record (or before recordsCount records)
ERR_RECORD_SIZE = 3       # record body did not consume exactly `length` bytes
# 4 was "key/value length < -1": Kafka reads such lengths as null, so no error any more
ERR_HEADER_COUNT = 5      # headersCount < 0
ERR_HEADER_KEY = 6        # header key length < 0
ERR_REMAINING = 7         # bytes left after recordsCount records
ERR_RECORD_COUNT = 8      # recordsCount < 0
ERR_RECORD_LENGTH = 9     # record length < 0 or past the end of the batch

_FIELDS = {
    ERR_VARINT: "records[{rec}]",
    ERR_EOF: "records[{rec}]",
    ERR_RECORD_SIZE: "records[{rec}].length",
    ERR_HEADER_COUNT: "records[{rec}].headers_count",
    ERR_HEADER_KEY: "records[{rec}].headers.key_length",
    ERR_REMAINING: "records_count",
    ERR_RECORD_COUNT: "records_count",
    ERR_RECORD_LENGTH: "records[{rec}].length",
}
_MESSAGES = {
    ERR_VARINT: "varint does not terminate after 5 bytes (10 for varlong)",
    ERR_EOF: "Incorrect declared batch size, premature EOF reached",
    ERR_RECORD_SIZE: "Invalid record size: record body did not consume its declared length",
    ERR_HEADER_COUNT: "Found invalid number of record headers",
    ERR_HEADER_KEY: "Invalid negative header key size",
    ERR_REMAINING: "Incorrect declared batch size, records still remaining in file",
    ERR_RECORD_COUNT: "Found invalid record count in magic v2 batch",
    ERR_RECORD_LENGTH: "Invalid record size: expected more bytes in record payload than the batch holds",
}


def record_error(code: int, *, path: str, position: int, base_offset: int, record_index: int,
                 byte_offset: int, compressed: bool) -> FormatError:
    """The error both engines raise for a record-level problem in one batch.

    ``byte_offset`` is relative to the start of the records (decompressed stream when
    ``compressed``); ``position`` is the batch's byte position in the file.
    """
    where = "decompressed records" if compressed else "records"
    message = f"{_MESSAGES.get(code, 'invalid record')} (at byte {byte_offset} of the batch's {where})"
    field = _FIELDS.get(code, "records").format(rec=record_index)
    cls = TruncatedBatchError if code == ERR_EOF else CorruptBatchError
    return cls(message, path=path, position=position, base_offset=base_offset, field=field)
