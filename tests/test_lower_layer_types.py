"""The TypedDicts of the lower layers name exactly the keys their decoders produce.

mypy trusts the declarations; these tests keep them honest against the runtime dicts (a field
added to a decoder but not to its TypedDict, or the reverse, fails here).
"""

from __future__ import annotations

import struct
from typing import Any

from segtools.internal_topics.consumer_offsets import DecodedKey, DecodedValue, decode_key, decode_value
from segtools.records.control import (
    COMMIT,
    KRAFT_VERSION,
    KRAFT_VOTERS,
    LEADER_CHANGE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    Endpoint,
    EndTxnMarker,
    KRaftVersionFeature,
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    Voter,
    VotersRecord,
    VoterWithEndpoints,
    decode_control_value,
)
from segtools.records.record import Record, RecordDict


def _keys(td: Any) -> list[str]:
    return list(td.__annotations__)


def test_record_dict_has_every_record_attribute_in_order() -> None:
    rec = Record(5, 1000, b"k", None, [("h", b"v")], 7, 0, 2, 5, 20, False)
    d = rec.as_dict()
    assert list(d) == list(Record.__slots__) == _keys(RecordDict)
    assert d["offset"] == 5 and d["key"] == b"k" and d["value"] is None and d["sequence"] == 7


def test_control_values_have_the_declared_keys() -> None:
    # values built by hand from Kafka's message schemas (clients/src/main/resources/common/
    # message/*.json, version 0; flexible: compact arrays/strings are uvarint(n + 1), each
    # struct ends with an empty tagged-field section = one 0 byte)
    h, i, q = (lambda v: struct.pack(">h", v)), (lambda v: struct.pack(">i", v)), (lambda v: struct.pack(">q", v))
    end_txn = h(0) + i(9)
    leader_change = h(0) + i(3) + bytes([2]) + i(3) + b"\0" + bytes([2]) + i(3) + b"\0" + b"\0"
    header = h(0) + q(123) + b"\0"
    footer = h(0) + b"\0"
    kraft = h(0) + h(1) + b"\0"
    endpoint = bytes([3]) + b"CT" + bytes([10]) + b"127.0.0.1" + struct.pack(">H", 9093) + b"\0"
    voter = i(1) + bytes(range(16)) + bytes([2]) + endpoint + h(0) + h(1) + b"\0" + b"\0"
    voters = h(0) + bytes([2]) + voter + b"\0"

    v = decode_control_value(COMMIT, end_txn)
    assert v == {"version": 0, "coordinatorEpoch": 9} and list(v) == _keys(EndTxnMarker)
    lc: Any = decode_control_value(LEADER_CHANGE, leader_change)
    assert list(lc) == _keys(LeaderChangeMessage) and lc["leaderId"] == 3
    assert list(lc["voters"][0]) == _keys(Voter) and lc["voters"][0]["voterId"] == 3
    sh: Any = decode_control_value(SNAPSHOT_HEADER, header)
    assert list(sh) == _keys(SnapshotHeaderRecord) and sh["lastContainedLogTimestamp"] == 123
    assert list(decode_control_value(SNAPSHOT_FOOTER, footer) or {}) == _keys(SnapshotFooterRecord)
    kv: Any = decode_control_value(KRAFT_VERSION, kraft)
    assert list(kv) == _keys(KRaftVersionRecord) and kv["kRaftVersion"] == 1
    vr: Any = decode_control_value(KRAFT_VOTERS, voters)
    assert list(vr) == _keys(VotersRecord)
    one = vr["voters"][0]
    assert list(one) == _keys(VoterWithEndpoints) and one["voterId"] == 1
    assert list(one["endpoints"][0]) == _keys(Endpoint)
    assert one["endpoints"][0] == {"name": "CT", "host": "127.0.0.1", "port": 9093}
    assert list(one["kRaftVersionFeature"]) == _keys(KRaftVersionFeature)


def test_coordinator_key_and_value_have_the_declared_keys() -> None:
    # OffsetCommitKey v1 (record type 1): group string, topic string, partition int32;
    # OffsetCommitValue v1: offset int64, metadata string, commit and expire timestamps int64
    # (group-coordinator's OffsetCommitKey.json / OffsetCommitValue.json; v1 is not flexible:
    # strings are int16 length + UTF-8)
    s = lambda text: struct.pack(">h", len(text)) + text.encode()  # noqa: E731
    key = struct.pack(">h", 1) + s("g") + s("t") + struct.pack(">i", 0)
    value = struct.pack(">h", 1) + struct.pack(">q", 42) + s("") + struct.pack(">qq", 1, 2)
    k = decode_key(key)
    assert list(k) == _keys(DecodedKey) and k["type"] == 1 and k["name"] == "OffsetCommitKey"
    v = decode_value(value, key=key)
    assert v is not None and list(v) == _keys(DecodedValue)
    assert v["version"] == 1 and v["name"] == "OffsetCommitValue" and v["data"]["offset"] == 42
