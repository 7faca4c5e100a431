"""The one set of status and error codes of the v2 record decoder, shared by its two twins.

The record decoder exists once, in two faces: the pure Python decoder in
:mod:`segtools.records.v2_decoder` (used by the object reader ``segtools.records.batches`` and by
``engine="python"`` of ``segtools.records.columnar``) and its compiled twin in :mod:`segtools.records.jit_kernel`
(``engine="numba"``). Both report a problem as a *fault*: ``(code, field, record index, header
index, byte offset of the record, expected, actual)``; :func:`record_error` turns a fault into
the one ``FormatError`` every entry point raises (same class, byte position, base offset, field
and message), so the readers cannot drift apart. The numba kernel cannot raise Python
exceptions, which is why the fault is plain integers (written into its ``st`` array).

Kafka's wording for each case: FORMATS.md 1.6 (``DefaultRecord.readFrom``,
``DefaultRecordBatch.RecordIterator``).
"""

from __future__ import annotations

from segtools.errors import CorruptBatchError, FormatError, TruncatedBatchError
from segtools.formats.legacy import RECORD_OVERHEAD_V0
from segtools.formats.record_batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
)

__all__ = [
    "SCAN_MORE", "SCAN_END", "SCAN_TORN_TAIL", "SCAN_SIZE_TOO_SMALL", "SCAN_V2_TOO_SHORT",
    "SCAN_TOO_LARGE", "SCAN_BATCH",
    "LOG_OVERHEAD", "HEADER_SIZE_UP_TO_MAGIC", "RECORD_OVERHEAD_V0", "RECORD_BATCH_OVERHEAD",
    "MIN_RECORD_SIZE", "ST_SIZE", "RecordFault", "record_error",
]

# batch walk status (FileLogInputStream.nextBatch, FORMATS.md 1.8): the one walk is
# segtools.records.batch_walk, its compiled twin segtools.records.jit_kernel.scan_headers
SCAN_MORE = 0          # stopped because the output chunk is full; call again from next_pos
SCAN_END = 1           # at most 17 bytes left: no more batches
SCAN_TORN_TAIL = 2     # a batch announces more bytes than the file holds (partial trailing batch)
SCAN_SIZE_TOO_SMALL = 3  # size field < 14: Kafka's CorruptRecordException
SCAN_V2_TOO_SHORT = 4    # magic >= 2, shorter than the 61-byte v2 header, and the bytes after
#                          it (where Kafka loads its header from) run out
SCAN_TOO_LARGE = 5       # larger on disk than the reader's max_batch_bytes (segtools.primitives.limits)
SCAN_BATCH = 6           # segtools.records.batch_walk.next_batch: a batch starts here

#: smallest possible v2 record: length, attributes, timestampDelta, offsetDelta, keyLength,
#: valueLength, headersCount, one byte each
MIN_RECORD_SIZE = 7

#: the kernel's int64 state array: [row, header, key bytes, value bytes, header key bytes,
#: header value bytes, fault record index, fault byte offset, bad utf-8 flag, fault field,
#: fault header index, fault expected, fault actual]
ST_SIZE = 13

# ----------------------------------------------------------------------------- error codes
ERR_NONE = 0
ERR_EOF = 1               # the bytes ran out while reading ``field`` (Truncated)
ERR_VARINT = 2            # varint longer than 5 bytes / varlong longer than 10; expected = 5|10
ERR_RECORD_NEGATIVE = 3   # record length < 0; actual = length
ERR_RECORD_PAST_END = 4   # record length past the batch end; expected = length, actual = left
ERR_LENGTH_PAST_END = 5   # key/value/header length past the record end; expected, actual = left
ERR_HEADER_COUNT = 6      # headersCount < 0 (expected -1) or > bytes left (expected = left)
ERR_HEADER_KEY = 7        # header key length < 0; actual = length
ERR_RECORD_SIZE = 8       # record body did not use its length; expected = length, actual = read
ERR_REMAINING = 9         # bytes left after recordsCount records; actual = bytes left

# field codes: which field was being read
F_LENGTH = 0
F_ATTRIBUTES = 1
F_TIMESTAMP_DELTA = 2
F_OFFSET_DELTA = 3
F_KEY_LENGTH = 4
F_VALUE_LENGTH = 5
F_HEADERS_COUNT = 6
F_HEADER_KEY_LENGTH = 7
F_HEADER_VALUE_LENGTH = 8
F_RECORDS_COUNT = 9

_FIELD_NAMES = ("length", "attributes", "timestamp_delta", "offset_delta", "key_length",
                "value_length", "headers_count", "headers[{h}].key_length",
                "headers[{h}].value_length", "records_count")
_LENGTH_NAMES = {F_KEY_LENGTH: "key length", F_VALUE_LENGTH: "value length",
                 F_HEADER_KEY_LENGTH: "header key length",
                 F_HEADER_VALUE_LENGTH: "header value length"}


class RecordFault(Exception):
    """Internal: where and why decoding one batch's records failed (see :func:`record_error`).

    ``byte_offset`` is the start of the failing record, relative to the first record byte."""

    def __init__(self, code: int, field: int, record_index: int, header_index: int,
                 byte_offset: int, expected: int = 0, actual: int = 0) -> None:
        super().__init__(code, field, record_index, header_index, byte_offset, expected, actual)
        self.code = code
        self.field = field
        self.record_index = record_index
        self.header_index = header_index
        self.byte_offset = byte_offset
        self.expected = expected
        self.actual = actual


def _message(code: int, field: int, expected: int, actual: int) -> tuple[type[FormatError], str]:
    if code == ERR_EOF:
        return TruncatedBatchError, "Incorrect declared batch size, premature EOF reached"
    if code == ERR_VARINT:
        what = "varlong" if expected == 10 else "varint"
        return CorruptBatchError, (f"{what} is too long, the most significant bit in the "
                                   f"{expected}th byte is set")
    if code == ERR_RECORD_NEGATIVE:
        return CorruptBatchError, f"Invalid record size {actual}"
    if code == ERR_RECORD_PAST_END:
        return TruncatedBatchError, (f"Invalid record size: expected {expected} bytes in record "
                                     f"payload, but instead the buffer has only {actual} "
                                     "remaining bytes.")
    if code == ERR_LENGTH_PAST_END:
        return CorruptBatchError, (f"{_LENGTH_NAMES.get(field, 'length')} {expected} runs past "
                                   f"the record end ({actual} bytes left)")
    if code == ERR_HEADER_COUNT:
        if actual < 0:
            return CorruptBatchError, f"Found invalid number of record headers {actual}"
        return CorruptBatchError, (f"Found invalid number of record headers {actual} "
                                   f"({expected} bytes left)")
    if code == ERR_HEADER_KEY:
        return CorruptBatchError, f"Invalid negative header key size {actual}"
    if code == ERR_RECORD_SIZE:
        return CorruptBatchError, (f"Invalid record size: expected to read {expected} bytes in "
                                   f"record payload, but instead read {actual}")
    if code == ERR_REMAINING:
        return CorruptBatchError, ("Incorrect declared batch size, records still remaining in "
                                   f"file ({actual} bytes left after the last record)")
    return CorruptBatchError, f"invalid record (code {code})"


def record_error(fault: RecordFault, *, path: str | None, position: int, base_offset: int,
                 compression: str | None) -> FormatError:
    """The error every reader raises for a record-level problem in one v2 batch.

    ``position`` is the batch's byte position in the file. For an uncompressed batch
    (``compression`` None) the error points at the failing record's own byte in the file;
    for a compressed one at the batch, the message naming the byte in the decompressed
    records."""
    cls, message = _message(fault.code, fault.field, fault.expected, fault.actual)
    field = _FIELD_NAMES[fault.field].format(h=fault.header_index) if 0 <= fault.field < len(
        _FIELD_NAMES) else "records"
    if fault.field != F_RECORDS_COUNT:
        field = f"records[{fault.record_index}].{field}"
    if compression is None:
        message = f"{message} (record {fault.record_index})"
        position = position + RECORD_BATCH_OVERHEAD + fault.byte_offset
    else:
        message = (f"{message} (record {fault.record_index} at byte {fault.byte_offset} of the "
                   f"decompressed {compression} payload)")
    return cls(message, path=path or None, position=position, base_offset=base_offset,
               field=field, actual=fault.actual if fault.code != ERR_EOF else None)
