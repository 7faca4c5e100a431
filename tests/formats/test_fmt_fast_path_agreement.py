"""The declarations are the spec the fast reader (segtools.records.batches) is checked against: on real
broker files every batch header, every uncompressed record and every control record decoded by
the fast path equals what the construct declarations parse from the same bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from fmt_helpers import KRAFT

from segtools.formats.control import KRAFT_CONTROL_MESSAGES, ControlRecordKey, ControlRecordType, EndTxnMarker
from segtools.formats.legacy import LegacyLogEntry
from segtools.formats.record_batch import (
    COMPRESSION_CODEC_MASK,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    RecordBatch,
    Records,
)
from segtools.primitives.messages import read_message, write_message
from segtools.records.batches import SegmentReader

FILES = [
    "kafka-2.0-zk-small/logdir/subhash-0/00000000000000000000.log",
    "kafka-2.0-zk-small/logdir/__consumer_offsets-26/00000000000000000000.log",
    "kafka-2.5-zk-first-topic/final/first_topic-2/00000000000000000000.log",
    "kafka-2.5-zk-first-topic/final/__consumer_offsets-18/00000000000000000000.log",
    KRAFT + "/__cluster_metadata-0/00000000000000000000.log",
    KRAFT + "/__cluster_metadata-0/00000000000000007752-0000000001.checkpoint",
    KRAFT + "/_confluent-monitoring-0/00000000000000000000.log",
    KRAFT + "/promotions-0/00000000000000000000.log",
    KRAFT + "/connect-offsets-14/00000000000000000000.log",
]


@pytest.mark.parametrize("rel", FILES)
def test_fast_reader_agrees_with_declarations(realdata: Path, rel: str) -> None:
    batches = control = records = 0
    with SegmentReader(realdata / rel) as reader:
        for batch in reader:
            raw = batch.raw()
            decl = RecordBatch.parse(raw)
            assert RecordBatch.build(decl) == raw
            assert (batch.base_offset, batch.batch_length, batch.partition_leader_epoch, batch.magic,
                    batch.crc, batch.attributes, batch.last_offset_delta, batch.base_timestamp,
                    batch.max_timestamp, batch.producer_id, batch.producer_epoch,
                    batch.base_sequence, batch.records_count) == \
                (decl.base_offset, decl.batch_length, decl.partition_leader_epoch, decl.magic,
                 decl.crc, decl.attributes, decl.last_offset_delta, decl.base_timestamp,
                 decl.max_timestamp, decl.producer_id, decl.producer_epoch, decl.base_sequence,
                 decl.records_count)
            assert batch.compression_id == decl.attributes & COMPRESSION_CODEC_MASK
            assert batch.size == decl.batch_length + 12 == len(raw)
            batches += 1
            if decl.attributes & COMPRESSION_CODEC_MASK:
                continue
            ours = Records.parse(raw[RECORD_BATCH_OVERHEAD:], records_count=decl.records_count)
            fast = list(batch.records())
            assert len(fast) == len(ours)
            log_append = bool(decl.attributes & TIMESTAMP_TYPE_MASK)
            for f, r in zip(fast, ours):
                assert f.offset == decl.base_offset + r.body.offset_delta
                assert f.timestamp == (decl.max_timestamp if log_append
                                       else decl.base_timestamp + r.body.timestamp_delta)
                assert (f.key, f.value) == (r.body.key, r.body.value)
                assert list(f.headers) == [(h.key, h.value) for h in r.body.headers]
                assert f.size == r.length
                records += 1
            for f, r in zip(batch.control_records(), ours):
                key = ControlRecordKey.parse(r.body.key)
                assert (f.key_version, f.type_id) == (key.version, key.type)
                kind = ControlRecordType.from_id(key.type)
                if kind in KRAFT_CONTROL_MESSAGES:   # the message engine's own bytes again
                    value, _end = read_message(KRAFT_CONTROL_MESSAGES[kind], r.body.value, 0)
                    assert write_message(KRAFT_CONTROL_MESSAGES[kind], value, 0) == r.body.value
                    assert f.value == value
                elif kind in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                    marker = EndTxnMarker.parse(r.body.value)
                    assert f.value == {"version": marker.version,
                                       "coordinatorEpoch": marker.coordinator_epoch}
                control += 1
    assert batches > 0
    if "cluster_metadata" in rel:
        assert control >= 1


def test_fast_reader_agrees_on_legacy_messages(realdata: Path) -> None:
    path = (realdata / "kafka-0.8-0.9-legacy-messages"
            / "fetch1.mytopic.1p.nocompression.kafka.0821.tmy-topic.p0.records.bin")
    n = 0
    with SegmentReader(path) as reader:
        for batch in reader:
            decl = LegacyLogEntry.parse(batch.raw())
            assert (batch.base_offset, batch.magic, batch.crc) == \
                (decl.offset, decl.message.magic, decl.message.crc)
            (rec,) = list(batch.records())
            assert (rec.key, rec.value) == (decl.message.key, decl.message.value)
            n += 1
    assert n == 42
