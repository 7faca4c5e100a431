"""Hostile bytes through every declaration via parse_located: only FormatError comes out, and
it names a position inside the data."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.errors import CorruptBatchError, FormatError
from segtools.formats.checkpoints import LeaderEpochCheckpointFile, OffsetCheckpointFile
from segtools.formats.control import ControlRecordKey, EndTxnMarker
from segtools.formats.legacy import LegacyLogEntry
from segtools.formats.primitives import parse_located
from segtools.formats.producer_snapshot import ProducerSnapshot, ProducerSnapshotHeader
from segtools.formats.record_batch import Record, RecordBatch, RecordBatchHeader
from segtools.formats.root_files import (
    CleanShutdownDocument,
    JsonDocument,
    JsonObjectDocument,
    PartitionMetadataText,
    PropertiesFile,
)

DECLARATIONS = [RecordBatchHeader, RecordBatch, Record, LegacyLogEntry, ControlRecordKey,
                EndTxnMarker, ProducerSnapshot, OffsetCheckpointFile, PartitionMetadataText, JsonDocument,
                # the production readers' declarations (Kafka's reading rules)
                ProducerSnapshotHeader, LeaderEpochCheckpointFile, PropertiesFile,
                JsonObjectDocument, CleanShutdownDocument]


@settings(max_examples=150, deadline=None)
@given(index=st.integers(0, len(DECLARATIONS) - 1), data=st.binary(max_size=96))
def test_only_format_errors(index: int, data: bytes) -> None:
    try:
        parse_located(DECLARATIONS[index], data, error=CorruptBatchError, path="x.log", position=1000)
    except CorruptBatchError as err:
        assert err.path == "x.log"
        assert err.position is not None and 1000 <= err.position <= 1000 + len(data)


def test_record_with_impossible_header_count() -> None:
    # length 10: attrs, ts, offset, key null, value null, headers_count 2**30 (no headers follow)
    data = bytes.fromhex("14 00 00 00 01 01 80 80 80 80 08".replace(" ", ""))
    with pytest.raises(FormatError) as info:
        parse_located(Record, data, position=0)
    assert info.value.field is not None and info.value.field.startswith("body.headers")
