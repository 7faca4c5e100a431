"""__consumer_offsets: real broker records (Kafka 2.0, 2.5, 3.6) and kafka-dump-log's own test
vectors (DUMP_LOG.md section 11, testOffsetsMessageParser) with hand-assembled bytes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from segtools.errors import SchemaError
from segtools.internal_topics import consumer_offsets as co
from segtools.records.batches import iter_batches

LOGDIRS = {
    "kafka-2.0": "kafka-2.0-zk-small/logdir",
    "kafka-2.5": "kafka-2.5-zk-first-topic/final",
    "kafka-3.6": "kafka-3.6-kraft-flink-stack/logdir",
}


def _records(realdata: Path, name: str):
    base = realdata / LOGDIRS[name]
    for part in sorted(base.glob("__consumer_offsets-*")):
        for batch in iter_batches(part):
            yield from batch.records()


@pytest.fixture(scope="module")
def real(realdata):
    return {name: list(_records(realdata, name)) for name in LOGDIRS}


def _oracle_count(realdata: Path, name: str) -> int:
    """Records per kafka-python's reader (independent of segtools.records.batches)."""
    n = 0
    for log in (realdata / LOGDIRS[name]).glob("__consumer_offsets-*/*.log"):
        records = MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            n += sum(1 for _ in batch)
    return n


def test_every_real_record_decodes_and_reencodes_identically(realdata, real):
    total = 0
    for name, records in real.items():
        assert records, name
        for r in records:
            k = co.decode_key(r.key)
            assert co.encode_key(k["type"], k["data"]) == bytes(r.key)
            v = co.decode_value(r.value, r.key)
            if r.value is None:
                assert v is None
                continue
            assert co.encode_value(k["type"], v["version"], v["data"]) == bytes(r.value)
            # without the key the value is still recognised (exact-consumption heuristic)
            assert co.decode_value(r.value)["name"] == v["name"]
        total += len(records)
    assert total == sum(_oracle_count(realdata, name) for name in LOGDIRS)


def test_versions_written_by_each_broker(real):
    def versions(name):
        out = set()
        for r in real[name]:
            k = co.decode_key(r.key)
            v = co.decode_value(r.value, k["type"])
            out.add((k["name"], k["type"], v and v["name"], v and v["version"]))
        return out

    # README of realdata: 2.0 = offset commit value v1; 2.5 = key v1 / value v3, group v3
    assert ("OffsetCommitKey", 1, "OffsetCommitValue", 1) in versions("kafka-2.0")
    assert ("OffsetCommitKey", 1, "OffsetCommitValue", 3) in versions("kafka-2.5")
    assert ("GroupMetadataKey", 2, "GroupMetadataValue", 3) in versions("kafka-2.5")
    assert ("GroupMetadataKey", 2, None, None) in versions("kafka-2.5")  # the tombstone
    assert {("OffsetCommitKey", 1, "OffsetCommitValue", 3),
            ("GroupMetadataKey", 2, "GroupMetadataValue", 3)} <= versions("kafka-3.6")


def test_tombstones_render_delete(real):
    lines = [co.format_record(r.key, r.value, offset=r.offset) for r in real["kafka-2.5"]]
    deletes = [k for k, v in lines if v == "<DELETE>"]
    assert len(deletes) == sum(r.value is None for r in real["kafka-2.5"]) >= 1
    assert all(json.loads(k)["type"] == "2" for k in deletes)  # group-metadata tombstones
    assert all(v is not None for _, v in lines)


def test_committed_offsets_point_at_existing_partitions(realdata, real):
    for name in ("kafka-2.5", "kafka-3.6"):
        base = realdata / LOGDIRS[name]
        for r in real[name]:
            k = co.decode_key(r.key)
            if k["type"] != 1 or r.value is None:
                continue
            d = k["data"]
            part = base / f"{d['topic']}-{d['partition']}"
            assert part.is_dir(), part
            offset = co.decode_value(r.value, 1)["data"]["offset"]
            if name == "kafka-2.5" and d["topic"] == "first_topic":
                end = max(b.last_offset for b in iter_batches(part)) + 1
                assert 0 <= offset <= end


def test_real_offset_commit_json(real):
    # kafka-2.0: value v1 carries expireTimestamp (= commit + 7 days, offsets.retention default)
    key, value = co.format_record(next(r for r in real["kafka-2.0"]
                                       if co.decode_key(r.key)["type"] == 1).key,
                                  next(r for r in real["kafka-2.0"]
                                       if co.decode_key(r.key)["type"] == 1).value)
    assert key == ('{"type":"1","data":{"group":"console-consumer-23934","topic":"TestTopic",'
                   '"partition":0}}')
    v = json.loads(value)
    assert v["version"] == "1" and list(v["data"]) == [
        "offset", "metadata", "commitTimestamp", "expireTimestamp"]
    assert v["data"]["expireTimestamp"] - v["data"]["commitTimestamp"] == 7 * 24 * 3600 * 1000


def test_real_group_metadata_consumer_subscription_is_decoded(real):
    for r in real["kafka-2.5"]:
        if co.decode_key(r.key)["type"] == 2 and r.value is not None:
            _, payload = co.format_record(r.key, r.value, offset=r.offset)
            member = json.loads(payload)["data"]["members"][0]
            assert member["subscription"] == {"topics": ["first_topic"], "userData": None,
                                              "ownedPartitions": []}
            assert member["assignment"]["assignedPartitions"] == [
                {"topic": "first_topic", "partitions": [0, 1, 2]}]
            return
    pytest.fail("no group metadata record")


# --- DumpLogSegmentsTest.testOffsetsMessageParser vectors, bytes assembled by hand -----------


def _s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _compact(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw) + 1]) + raw


def test_consumer_group_metadata_vector():
    key = b"\x00\x03" + _s16("group")
    value = b"\x00\x00" + struct.pack(">i", 10) + b"\x00"
    assert co.format_record(key, value, offset=0) == (
        '{"type":"3","data":{"groupId":"group"}}', '{"version":"0","data":{"epoch":10}}')


def _subscription_v3() -> bytes:
    return (b"\x00\x03" + struct.pack(">i", 1) + _s16("foo") + struct.pack(">i", -1)
            + struct.pack(">i", 1) + _s16("foo") + struct.pack(">ii", 1, 0)
            + struct.pack(">i", 0) + _s16("rack"))


def _assignment_v3() -> bytes:
    return (b"\x00\x03" + struct.pack(">i", 1) + _s16("foo") + struct.pack(">ii", 1, 0)
            + struct.pack(">i", -1))


def _group_metadata_v4(subscription: bytes, assignment: bytes) -> bytes:
    return (b"\x00\x04" + _compact("consumer") + struct.pack(">i", 10) + _compact("range")
            + _compact("member") + struct.pack(">q", -1) + b"\x02"
            + _compact("member") + _compact("instance") + _compact("client") + _compact("host")
            + struct.pack(">ii", 1000, 100)
            + bytes([len(subscription) + 1]) + subscription
            + bytes([len(assignment) + 1]) + assignment + b"\x00" + b"\x00")


def test_group_metadata_v4_with_consumer_protocol_vector():
    key = b"\x00\x02" + _s16("group")
    value = _group_metadata_v4(_subscription_v3(), _assignment_v3())
    k, v = co.format_record(key, value, offset=0)
    assert k == '{"type":"2","data":{"group":"group"}}'
    assert v == (
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":{"topics":["foo"],'
        '"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":[{"topic":"foo",'
        '"partitions":[0]}],"userData":null}}]}}')
    d = co.decode_value(value, 2)
    assert co.encode_value(2, 4, d["data"]) == value


def test_malformed_consumer_protocol_bytes_stay_base64():
    key = b"\x00\x02" + _s16("group")
    _, v = co.format_record(key, _group_metadata_v4(b"Subscription", b"Assignment"), offset=0)
    member = json.loads(v)["data"]["members"][0]
    assert member["subscription"] == "U3Vic2NyaXB0aW9u"
    assert member["assignment"] == "QXNzaWdubWVudA=="


def test_tombstone_unknown_type_and_errors():
    key = b"\x00\x02" + _s16("group")
    assert co.format_record(key, None, offset=7) == ('{"type":"2","data":{"group":"group"}}',
                                                     "<DELETE>")
    assert co.format_record(b"\x7f\xff" + _s16("group"), b"\x00\x00", offset=0) == (
        "Unknown record type 32767 at offset 0, skipping.", None)
    # value of a group record that is really an offset commit: bytes run out in a string
    k, v = co.format_record(key, b"\x00\x00" + _s16("consumer"), offset=3)
    assert v is None and k.startswith(
        "Error at offset 3, skipping. Could not read record with version 0 from value's "
        "buffer due to: ")
    k, v = co.format_record(b"\x00", b"\x00\x00", offset=5)
    assert (k, v) == ("Error at offset 5, skipping. Could not read version from key's buffer.",
                      None)
    with pytest.raises(SchemaError, match="missing key"):
        co.format_record(None, b"\x00\x00", offset=1)
    with pytest.raises(SchemaError):
        co.format_record(b"\x00\x01" + _s16("g"), b"\x00\x01")  # no offset: raise


def test_truncations_of_real_records_raise_schema_error_only(real):
    checked = 0
    for r in real["kafka-3.6"][:40]:
        if r.value is None:
            continue
        raw = bytes(r.value)
        for cut in range(len(raw)):
            try:
                co.decode_value(raw[:cut], r.key)
            except SchemaError:
                checked += 1
            # a shorter prefix may still parse when it ends exactly after a field: never
            # anything but SchemaError
    assert checked > 1000


def test_consumer_group_member_with_tagged_nullable_struct():
    # ConsumerGroupMemberMetadataValue v0 (flexible): ClassicMemberMetadata is tag 0, a
    # nullable struct: tag, size (= struct + 1), uvarint presence marker 1, then the struct
    classic = (struct.pack(">i", 45000) + bytes([2]) + _compact("range") + bytes([3]) + b"\x01\x02"
               + b"\x00" + b"\x00")
    value = (b"\x00\x00" + b"\x00" + _compact("rack-a") + _compact("client") + _compact("/10.0.0.1")
             + bytes([2]) + _compact("orders") + b"\x00" + struct.pack(">i", 300000)
             + _compact("uniform") + bytes([1, 0, len(classic) + 1, 1]) + classic)
    key = b"\x00\x05" + _s16("g") + _s16("m")
    k, v = co.format_record(key, value, offset=0)
    assert k == '{"type":"5","data":{"groupId":"g","memberId":"m"}}'
    assert v == ('{"version":"0","data":{"instanceId":null,"rackId":"rack-a","clientId":"client",'
                 '"clientHost":"/10.0.0.1","subscribedTopicNames":["orders"],'
                 '"subscribedTopicRegex":null,"rebalanceTimeoutMs":300000,'
                 '"serverAssignor":"uniform","classicMemberMetadata":{"sessionTimeoutMs":45000,'
                 '"supportedProtocols":[{"name":"range","metadata":"AQI="}]}}}')
    d = co.decode_value(value, 5)
    assert co.encode_value(5, 0, d["data"]) == value
    # Kafka's generated writer leaves the tag out only for a default-constructed struct; a
    # null one is written as tag 0, size 1, null marker 0 (and kafka-dump-log prints
    # "classicMemberMetadata":null, as a real 4.3.1 broker's records show:
    # tests/realkafka/test_decoder_realcluster.py)
    head = value[:value.index(bytes([1, 0, len(classic) + 1]))]
    d["data"]["classicMemberMetadata"] = None
    assert co.encode_value(5, 0, d["data"]) == head + bytes([1, 0, 1, 0])
    d["data"]["classicMemberMetadata"] = {"sessionTimeoutMs": 0, "supportedProtocols": []}
    assert co.encode_value(5, 0, d["data"]) == head + b"\x00"
    absent = co.decode_value(head + b"\x00", 5)["data"]
    assert absent["classicMemberMetadata"] == {"sessionTimeoutMs": 0, "supportedProtocols": []}
    assert '"classicMemberMetadata"' not in co.format_record(key, head + b"\x00", offset=0)[1]
    assert co.format_record(key, head + bytes([1, 0, 1, 0]), offset=0)[1].endswith(
        '"serverAssignor":"uniform","classicMemberMetadata":null}}')


def test_offset_commit_value_v4_flexible_layout():
    # v4 = v3 fields with a compact metadata string and an (empty) tagged-field section
    value = (b"\x00\x04" + struct.pack(">qi", 42, 7) + _compact("meta") + struct.pack(">q", 1234)
             + b"\x00")
    key = b"\x00\x01" + _s16("g") + _s16("t") + struct.pack(">i", 3)
    assert co.format_record(key, value, offset=0) == (
        '{"type":"1","data":{"group":"g","topic":"t","partition":3}}',
        '{"version":"4","data":{"offset":42,"leaderEpoch":7,"metadata":"meta",'
        '"commitTimestamp":1234}}')
    assert co.encode_value(1, 4, co.decode_value(value, key)["data"]) == value
    # the same fields at v3 use an int16 string length and no tag section
    v3 = b"\x00\x03" + struct.pack(">qi", 42, 7) + _s16("meta") + struct.pack(">q", 1234)
    assert co.encode_value(1, 3, co.decode_value(value, key)["data"]) == v3


@pytest.mark.parametrize("raw, shown", [
    # new String(bytes, UTF_8) as computed by the JVM (Java 17), not Python's "replace"
    (b"g\xed\xa0\x80", "g\ufffd"),
    (b"\xed\xbf\x80\xa0\xbf", "\ufffd\ufffd\ufffd"),
    (b"\xf0\xf4\xed\xbf\xbf", "\ufffd\ufffd\ufffd"),
])
def test_malformed_utf8_strings_decode_as_java_does(raw, shown):
    key = struct.pack(">hh", 2, len(raw)) + raw  # GroupMetadataKey v2, group as raw bytes
    assert co.format_record(key, None, offset=0) == (
        '{"type":"2","data":{"group":"' + shown + '"}}', "<DELETE>")
