"""__transaction_state: no real data exists, so values are assembled by hand from FORMATS.md
section 12.4 (field order, tags, state ids) and checked field by field; the partition order
kafka-dump-log prints is checked against vectors produced by Scala 2.13's own HashSet
(tests/internal_topics/oracles/Order.java run against scala-library 2.13.18)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.errors import SchemaError
from segtools.internal_topics import transaction_state as ts


def _s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


KEY = b"\x00\x00" + _s16("my-txn")


def _value_v0(status: int, partitions: list[tuple[str, list[int]]] | None) -> bytes:
    body = struct.pack(">qhib", 1001, 3, 60000, status)
    if partitions is None:
        body += struct.pack(">i", -1)
    else:
        body += struct.pack(">i", len(partitions))
        for topic, ids in partitions:
            body += _s16(topic) + struct.pack(">i", len(ids)) + b"".join(
                struct.pack(">i", i) for i in ids)
    body += struct.pack(">qq", 1700000000123, 1700000000000)
    return b"\x00\x00" + body


def _value_v1_tagged() -> bytes:
    # flexible: compact array/string lengths are uvarint(n + 1); tagged fields at the end in
    # tag order: 0 PreviousProducerId, 1 NextProducerId, 2 ClientTransactionVersion
    body = struct.pack(">qhib", 2002, 7, 30000, 2)
    body += bytes([2]) + bytes([len("orders") + 1]) + b"orders" + bytes([3]) + struct.pack(
        ">ii", 4, 1) + b"\x00"
    body += struct.pack(">qq", 5, 4)
    body += bytes([3]) + bytes([0, 8]) + struct.pack(">q", 2001) + bytes([1, 8]) + struct.pack(
        ">q", 2003) + bytes([2, 2]) + struct.pack(">h", 2)
    return b"\x00\x01" + body


def test_key_and_value_v0_fields():
    assert ts.decode_key(KEY) == {"version": 0, "transactionalId": "my-txn"}
    v = ts.decode_value(_value_v0(1, [("t", [0, 1])]))
    assert v == {"version": 0, "producerId": 1001, "producerEpoch": 3,
                 "transactionTimeoutMs": 60000, "transactionStatus": 1,
                 "transactionPartitions": [{"topic": "t", "partitionIds": [0, 1]}],
                 "transactionLastUpdateTimestampMs": 1700000000123,
                 "transactionStartTimestampMs": 1700000000000}


def test_value_v1_tagged_fields():
    raw = _value_v1_tagged()
    v = ts.decode_value(raw)
    assert v["version"] == 1
    assert (v["previousProducerId"], v["nextProducerId"], v["clientTransactionVersion"]) == (
        2001, 2003, 2)
    assert v["transactionPartitions"] == [{"topic": "orders", "partitionIds": [4, 1]}]
    assert ts.encode_value(1, v) == raw
    # defaults (-1, -1, 0) are not written: v1 without tags ends with an empty tag section
    v.update(previousProducerId=-1, nextProducerId=-1, clientTransactionVersion=0)
    assert ts.encode_value(1, v).endswith(struct.pack(">qq", 5, 4) + b"\x00")


def test_format_record_like_transaction_log_decoder():
    key, payload = ts.format_record(KEY, _value_v0(1, [("t", [0])]))
    assert key == "transaction_metadata::transactionalId=my-txn"
    assert payload == ("producerId:1001,producerEpoch:3,state=Ongoing,partitions=[t-0],"
                       "txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000")


@pytest.mark.parametrize("status,name", list(enumerate(
    ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
     "Dead", "PrepareEpochFence"])))
def test_every_state_name(status, name):
    partitions = None if status == 0 else [("t", [0])]
    _, payload = ts.format_record(KEY, _value_v0(status, partitions))
    assert f",state={name}," in payload
    assert ("partitions=[]" in payload) == (status == 0)


def test_empty_state_ignores_partitions_and_tombstone_and_unknown_key():
    _, payload = ts.format_record(KEY, _value_v0(0, [("t", [0])]))
    assert "partitions=[]" in payload  # the broker skips partitions of an Empty transaction
    assert ts.format_record(KEY, None) == ("transaction_metadata::transactionalId=my-txn",
                                           "<DELETE>")
    assert ts.format_record(b"\x00\x01" + _s16("x"), b"junk") == ("unknown::version=1", None)


def test_errors_are_schema_errors_with_kafka_text():
    with pytest.raises(SchemaError) as e:
        ts.format_record(KEY, b"\x00\x02" + b"\x00" * 40)
    assert e.value.reason == "Unknown version 2 from the transaction log message value"
    assert ts.format_record(KEY, b"\x00\x02", offset=9) == (
        "Error at offset 9, skipping. Unknown version 2 from the transaction log message value",
        None)
    with pytest.raises(SchemaError) as e:
        ts.format_record(KEY, _value_v0(9, [("t", [0])]))
    assert "Unknown transaction state id 9" in e.value.reason
    for cut in range(2, len(_value_v0(1, [("t", [0])]))):
        with pytest.raises(SchemaError):
            ts.decode_value(_value_v0(1, [("t", [0])])[:cut])


# (input groups, order printed by a real Scala 2.13 mutable.HashSet; see oracles/Order.java)
SCALA_VECTORS = [
    ("t:0", "t-0"),
    ("t:0,1,2", "t-2,t-1,t-0"),
    ("orders:" + ",".join(map(str, range(20))),
     "orders-7,orders-8,orders-9,orders-10,orders-11,orders-12,orders-13,orders-14,orders-15,"
     "orders-16,orders-17,orders-18,orders-19,orders-0,orders-1,orders-2,orders-3,orders-4,"
     "orders-5,orders-6"),
    ("a:3,1 b:2,0 c:7", "a-1,b-2,b-0,c-7,a-3"),
    ("payments:0,1,2,3,4 x:9,8,7,6,5,4 longer-topic-name:11,12",
     "payments-4,payments-3,payments-0,payments-2,payments-1,longer-topic-name-11,"
     "longer-topic-name-12,x-9,x-8,x-7,x-6,x-5,x-4"),
    ("z:1,2,3,4 y:1,2,3,4 w:1,2,3,4 v:1,2,3,4",
     "v-4,v-3,w-4,v-2,w-3,v-1,w-2,y-4,w-1,y-3,z-4,y-2,z-3,y-1,z-2,z-1"),
]


@pytest.mark.parametrize("groups,expected", SCALA_VECTORS)
def test_partition_order_matches_scala_hash_set(groups, expected):
    parsed = [(g.split(":")[0], [int(p) for p in g.split(":")[1].split(",")])
              for g in groups.split()]
    _, payload = ts.format_record(KEY, _value_v0(1, parsed))
    assert f",partitions=[{expected}]," in payload


def test_java_string_hash_known_values():
    # values of "".hashCode(), "a".hashCode(), "hello".hashCode() in Java
    assert ts.java_string_hash("") == 0
    assert ts.java_string_hash("a") == 97
    assert ts.java_string_hash("hello") == 99162322
    assert ts.java_string_hash("polygenelubricants") == -2147483648


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_random_bytes_raise_only_schema_error(data):
    for args in ((KEY, data), (data, None), (b"\x00\x00" + data, data)):
        try:
            ts.format_record(*args)
        except SchemaError:
            pass


def test_malformed_utf8_transactional_id_decodes_as_java_does():
    # new String(bytes, UTF_8) by the JVM: an encoded surrogate is one U+FFFD (Python: three)
    raw = b"t\xed\xa0\x80"
    assert ts.format_record(struct.pack(">hh", 0, len(raw)) + raw, None) == (
        "transaction_metadata::transactionalId=t\ufffd", "<DELETE>")
