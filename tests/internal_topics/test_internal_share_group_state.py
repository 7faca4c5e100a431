"""__share_group_state: DumpLogSegmentsTest.testShareGroupStateMessageParser vectors
(DUMP_LOG.md section 11 #17) with record bytes assembled by hand from FORMATS.md 12.3."""

from __future__ import annotations

import base64
import struct

import pytest

from segtools.errors import SchemaError
from segtools.internal_topics import share_group_state as sgs

TOPIC_ID = base64.urlsafe_b64decode("Uj5wn_FqTXirEASvVZRY1w==")


def _key(record_type: int) -> bytes:
    return struct.pack(">h", record_type) + struct.pack(">h", 3) + b"gs1" + TOPIC_ID + struct.pack(
        ">i", 0)


BATCHES = bytes([2]) + struct.pack(">qqbh", 0, 4, 2, 1) + b"\x00"
SNAPSHOT = b"\x00\x00" + struct.pack(">Hiiq", 0, 0, 0, 0) + BATCHES + b"\x00"
UPDATE = b"\x00\x00" + struct.pack(">Hiq", 0, 0, 0) + BATCHES + b"\x00"


def test_snapshot_vector():
    assert sgs.format_record(_key(0), SNAPSHOT, offset=0) == (
        '{"type":"0","data":{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w","partition":0}}',
        '{"type":"0","data":{"snapshotEpoch":0,"stateEpoch":0,"leaderEpoch":0,"startOffset":0,'
        '"stateBatches":[{"firstOffset":0,"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}')


def test_update_vector_and_round_trip():
    k, v = sgs.format_record(_key(1), UPDATE, offset=0)
    assert k.startswith('{"type":"1","data":{"groupId":"gs1",')
    assert v == ('{"type":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,"startOffset":0,'
                 '"stateBatches":[{"firstOffset":0,"lastOffset":4,"deliveryState":2,'
                 '"deliveryCount":1}]}}')
    d = sgs.decode_value(UPDATE, 1)
    assert sgs.encode_value(1, 0, d["data"]) == UPDATE
    dk = sgs.decode_key(_key(1))
    assert sgs.encode_key(1, dk["data"]) == _key(1)


def test_tombstone_unknown_type_and_parse_error():
    assert sgs.format_record(_key(0), None, offset=0)[1] == "<DELETE>"
    assert sgs.format_record(b"\x7f\xff", SNAPSHOT, offset=0) == (
        "Unknown record type 32767 at offset 0, skipping.", None)
    null_batches = b"\x00\x00" + struct.pack(">Hiiq", 0, 0, 0, 0) + b"\x00" + b"\x00"
    assert sgs.format_record(_key(0), null_batches, offset=0) == (
        "Error at offset 0, skipping. Could not read record with version 0 from value's buffer "
        "due to: non-nullable field stateBatches was serialized as null.", None)
    with pytest.raises(SchemaError, match="share group state topic decoder"):
        sgs.format_record(None, SNAPSHOT, offset=2)
