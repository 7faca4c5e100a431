"""Control record declarations: real KRaft control records (extracted with kafka-python, an
independent reader) and hand-assembled vectors from the message schemas (FORMATS.md section 4).
The key and end-transaction marker are construct declarations; the KRaft values are message
specs read and written by the one message engine (segtools.primitives.messages)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from construct import ConstructError
from fmt_helpers import KRAFT, roundtrip
from kafka.record.default_records import DefaultRecordBatch

from segtools.errors import SchemaError
from segtools.formats.control import (
    KRAFT_CONTROL_MESSAGES,
    ControlRecordKey,
    ControlRecordType,
    EndTxnMarker,
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)
from segtools.formats.messages import Message
from segtools.primitives.messages import read_message, write_message

META = KRAFT + "/__cluster_metadata-0"


def message_roundtrip(spec: Message, data: bytes) -> dict:
    """Read ``data`` at version 0 (Kafka's only one), write it again and require the same bytes."""
    value, end = read_message(spec, data, 0)
    assert end == len(data)
    assert write_message(spec, value, 0) == data
    return value


def _control_records(path: Path) -> list[tuple[bytes, bytes]]:
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 61 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        batch = DefaultRecordBatch(bytearray(data[pos:pos + size]))
        if batch.is_control_batch:
            out += [(bytes(r.key), bytes(r.value)) for r in batch]
        pos += size
    return out


def test_real_leader_change_record(realdata: Path) -> None:
    records = _control_records(realdata / META / "00000000000000000000.log")
    assert len(records) == 1
    key, value = records[0]
    k = roundtrip(ControlRecordKey, key)
    assert ControlRecordType.from_id(k.type) is ControlRecordType.LEADER_CHANGE
    msg = message_roundtrip(LeaderChangeMessage, value)
    # quorum-state of the same broker: leaderId 1, voters [1]
    assert msg["version"] == 0 and msg["leaderId"] == 1
    assert [v["voterId"] for v in msg["voters"]] == [1]
    assert [v["voterId"] for v in msg["grantingVoters"]] == [1]


@pytest.mark.parametrize("rel", [
    META + "/00000000000000007752-0000000001.checkpoint",
    META + "/00000000000000014926-0000000001.checkpoint",
    KRAFT + "/bootstrap.checkpoint",
])
def test_real_snapshot_header_and_footer(realdata: Path, rel: str) -> None:
    records = _control_records(realdata / rel)
    types = [ControlRecordKey.parse(k).type for k, _ in records]
    assert types == [ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.SNAPSHOT_FOOTER]
    header = message_roundtrip(SnapshotHeaderRecord, records[0][1])
    footer = message_roundtrip(SnapshotFooterRecord, records[1][1])
    assert header["version"] == 0 and footer == {"version": 0}
    assert "_unknownTaggedFields" not in header
    ts = header["lastContainedLogTimestamp"]
    assert ts == struct.unpack(">q", records[0][1][2:10])[0]
    if "bootstrap" not in rel:   # April 2024, the broker's run
        assert 1_704_067_200_000 < ts < 1_735_689_600_000


def test_end_txn_marker_vector() -> None:
    # key: version 0, type COMMIT(1); value: version 0, coordinator_epoch 100
    assert roundtrip(ControlRecordKey, b"\x00\x00\x00\x01").type == ControlRecordType.COMMIT
    marker = roundtrip(EndTxnMarker, b"\x00\x00\x00\x00\x00\x64")
    assert (marker.version, marker.coordinator_epoch) == (0, 100)
    assert ControlRecordType.ABORT not in KRAFT_CONTROL_MESSAGES
    with pytest.raises(ConstructError):
        EndTxnMarker.parse(b"\x00\x00\x00\x00\x64")   # 5 bytes: too short


def test_kraft_version_vector() -> None:
    rec = message_roundtrip(KRaftVersionRecord, b"\x00\x00\x00\x01\x00")
    assert rec == {"version": 0, "kRaftVersion": 1}


def test_voters_record_vector() -> None:
    directory_id = bytes(range(16))
    data = (
        b"\x00\x00"                         # version 0
        + b"\x02"                           # 1 voter (compact: n + 1)
        + b"\x00\x00\x00\x03" + directory_id
        + b"\x02"                           # 1 endpoint
        + b"\x0bCONTROLLER" + b"\x0alocalhost" + b"\x23\x83"   # port 9091
        + b"\x00"                           # endpoint tagged fields
        + b"\x00\x00\x00\x01\x00"           # kraft.version feature 0..1 + tagged
        + b"\x00"                           # voter tagged fields
        + b"\x00"                           # record tagged fields
    )
    rec = message_roundtrip(VotersRecord, data)
    voter = rec["voters"][0]
    assert voter["voterId"] == 3
    assert voter["voterDirectoryId"] == "AAECAwQFBgcICQoLDA0ODw"
    assert [(e["name"], e["host"], e["port"]) for e in voter["endpoints"]] == \
        [("CONTROLLER", "localhost", 9091)]
    assert voter["kRaftVersionFeature"] == {"minSupportedVersion": 0, "maxSupportedVersion": 1}


def test_unknown_tagged_field_is_kept() -> None:
    data = b"\x00\x00" + b"\x01" + b"\x05\x02\xab\xcd"   # one tagged field, tag 5, 2 bytes
    rec = message_roundtrip(SnapshotFooterRecord, data)
    assert rec["_unknownTaggedFields"] == [(5, b"\xab\xcd")]


def test_hostile_array_count_fails_fast() -> None:
    for count in (b"\xe9\x07", b"\xff\xff\xff\xff\x07"):    # 1000 and 2**32 - 2 voters
        with pytest.raises(SchemaError, match="Tried to allocate a collection|null"):
            read_message(LeaderChangeMessage, b"\x00\x00\x00\x00\x00\x01" + count + b"\x00" * 8, 0)


def test_unknown_control_type() -> None:
    assert ControlRecordType.from_id(99) is ControlRecordType.UNKNOWN
