"""Control record declarations: real KRaft control records (extracted with kafka-python, an
independent reader) and hand-assembled vectors from the message schemas (FORMATS.md section 4)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from construct import ConstructError
from fmt_helpers import KRAFT, roundtrip
from kafka.record.default_records import DefaultRecordBatch

from segtools.formats.control import (
    CONTROL_VALUE_SCHEMAS,
    ControlRecordKey,
    ControlRecordType,
    EndTxnMarker,
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)

META = KRAFT + "/__cluster_metadata-0"


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
    msg = roundtrip(LeaderChangeMessage, value)
    # quorum-state of the same broker: leaderId 1, voters [1]
    assert msg.version == 0 and msg.leader_id == 1
    assert [v.voter_id for v in msg.voters] == [1]
    assert [v.voter_id for v in msg.granting_voters] == [1]


@pytest.mark.parametrize("rel", [
    META + "/00000000000000007752-0000000001.checkpoint",
    META + "/00000000000000014926-0000000001.checkpoint",
    KRAFT + "/bootstrap.checkpoint",
])
def test_real_snapshot_header_and_footer(realdata: Path, rel: str) -> None:
    records = _control_records(realdata / rel)
    types = [ControlRecordKey.parse(k).type for k, _ in records]
    assert types == [ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.SNAPSHOT_FOOTER]
    header = roundtrip(SnapshotHeaderRecord, records[0][1])
    footer = roundtrip(SnapshotFooterRecord, records[1][1])
    assert header.version == 0 and footer.version == 0
    assert header._tagged_fields == [] and footer._tagged_fields == []
    ts = header.last_contained_log_timestamp
    assert ts == struct.unpack(">q", records[0][1][2:10])[0]
    if "bootstrap" not in rel:   # April 2024, the broker's run
        assert 1_704_067_200_000 < ts < 1_735_689_600_000


def test_end_txn_marker_vector() -> None:
    # key: version 0, type COMMIT(1); value: version 0, coordinator_epoch 100
    assert roundtrip(ControlRecordKey, b"\x00\x00\x00\x01").type == ControlRecordType.COMMIT
    marker = roundtrip(EndTxnMarker, b"\x00\x00\x00\x00\x00\x64")
    assert (marker.version, marker.coordinator_epoch) == (0, 100)
    assert CONTROL_VALUE_SCHEMAS[ControlRecordType.ABORT] is EndTxnMarker
    with pytest.raises(ConstructError):
        EndTxnMarker.parse(b"\x00\x00\x00\x00\x64")   # 5 bytes: too short


def test_kraft_version_vector() -> None:
    rec = roundtrip(KRaftVersionRecord, b"\x00\x00\x00\x01\x00")
    assert (rec.version, rec.kraft_version) == (0, 1)


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
    rec = roundtrip(VotersRecord, data)
    voter = rec.voters[0]
    assert voter.voter_id == 3
    assert voter.voter_directory_id == "AAECAwQFBgcICQoLDA0ODw"
    assert [(e.name, e.host, e.port) for e in voter.endpoints] == [("CONTROLLER", "localhost", 9091)]
    feature = voter.kraft_version_feature
    assert (feature.min_supported_version, feature.max_supported_version) == (0, 1)


def test_unknown_tagged_field_is_kept() -> None:
    data = b"\x00\x00" + b"\x01" + b"\x05\x02\xab\xcd"   # one tagged field, tag 5, 2 bytes
    rec = roundtrip(SnapshotFooterRecord, data)
    assert rec._tagged_fields[0].tag == 5 and rec._tagged_fields[0].data == b"\xab\xcd"


def test_hostile_array_count_fails_fast() -> None:
    for count in (b"\xe9\x07", b"\xff\xff\xff\xff\x07"):    # 1000 and 2**32 - 2 voters
        with pytest.raises(ConstructError, match="array count|null"):
            LeaderChangeMessage.parse(b"\x00\x00\x00\x00\x00\x01" + count + b"\x00" * 8)


def test_unknown_control_type() -> None:
    assert ControlRecordType.from_id(99) is ControlRecordType.UNKNOWN
