"""The generated-message engine and the Jackson-compatible JSON writer.

JSON expectations come from running Jackson 2.21 itself (tests/internal_topics/oracles/
JacksonVectors.java against the jackson-databind jar shipped with pyspark, Java 17); byte
layouts are assembled by hand from FORMATS.md section 12.1; metadata error lines are the ones
DUMP_LOG.md documents for kafka-dump-log."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.errors import SchemaError
from segtools.internal_topics import consumer_offsets as co
from segtools.internal_topics import metadata
from segtools.internal_topics.json_render import JavaDouble, dumps, quote
from segtools.internal_topics.metadata_schemas import METADATA_MESSAGES, type_name
from segtools.primitives.messages import uuid_to_text

# --- Jackson oracle vectors -------------------------------------------------------------------

JACKSON_STRINGS = [
    ("plain", '{"s":"plain"}'),
    ('quote" back\\slash /', '{"s":"quote\\" back\\\\slash /"}'),
    ("tab\tnl\ncr\rbs\bff\f", '{"s":"tab\\tnl\\ncr\\rbs\\bff\\f"}'),
    ("ctl\u0001\u001f\u007f", '{"s":"ctl\\u0001\\u001F\u007f"}'),
    ("unicode é ü 漢 \U0001F600", '{"s":"unicode é ü 漢 \U0001F600"}'),
    ("<DELETE>&'", '{"s":"<DELETE>&\'"}'),
]
JACKSON_DOUBLES = [
    (0.0, "0.0"), (-0.0, "-0.0"), (1.0, "1.0"), (1024.0, "1024.0"), (0.5, "0.5"),
    (0.001, "0.001"), (0.0001, "1.0E-4"), (1.0e7, "1.0E7"), (9999999.0, "9999999.0"),
    (12345678.9, "1.23456789E7"), (1.5e-10, "1.5E-10"), (123456.789, "123456.789"),
    (3.0e20, "3.0E20"), (-2.5, "-2.5"), (1.0 / 3, "0.3333333333333333"), (100.0, "100.0"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (0.002, "0.002"),
    (5e-324, "4.9E-324"),
]
JACKSON_BYTES = [
    (b"", '{"b":""}'), (b"a", '{"b":"YQ=="}'), (b"ab", '{"b":"YWI="}'),
    (b"Subscription", '{"b":"U3Vic2NyaXB0aW9u"}'), (b"Assignment", '{"b":"QXNzaWdubWVudA=="}'),
    (b"\xfb\xff\xfe", '{"b":"+//+"}'),
]


@pytest.mark.parametrize("text,expected", JACKSON_STRINGS)
def test_strings_escape_like_jackson(text, expected):
    assert dumps({"s": text}) == expected
    assert quote(text) == expected[5:-1]


@pytest.mark.parametrize("value,expected", JACKSON_DOUBLES)
def test_doubles_print_like_java(value, expected):
    assert dumps({"d": JavaDouble(value)}) == '{"d":' + expected + "}"


@pytest.mark.parametrize("raw,expected", JACKSON_BYTES)
def test_bytes_are_standard_base64_like_jackson_binary_node(raw, expected):
    user_scram = {"name": "u", "mechanism": 1, "salt": raw, "storedKey": b"", "serverKey": b"",
                  "iterations": 4096}
    value = metadata.encode_record("USER_SCRAM_CREDENTIAL_RECORD", 0, user_scram)
    assert '"salt":' + expected[5:-1] + "," in metadata.format_record(value)


def test_mixed_nodes_compact():
    node = {"l": -9223372036854775808, "n": None, "t": True, "a": [1, -2], "e": {}}
    assert dumps(node) == '{"l":-9223372036854775808,"n":null,"t":true,"a":[1,-2],"e":{}}'


# --- byte layouts ---------------------------------------------------------------------------

TOPIC_ID = uuid.UUID("a9634b89-436f-47b7-8647-9733a26a9024")  # = qWNLiUNvR7eGR5czomqQJA


def test_uuid_text_is_base64url_without_padding():
    assert uuid_to_text(TOPIC_ID.bytes) == "qWNLiUNvR7eGR5czomqQJA"
    assert uuid_to_text(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"


def test_topic_record_bytes_by_hand():
    raw = bytes([1, 2, 0]) + bytes([4]) + b"foo" + TOPIC_ID.bytes + b"\x00"
    assert metadata.decode_record(raw) == ("TOPIC_RECORD", 0,
                                           {"name": "foo", "topicId": "qWNLiUNvR7eGR5czomqQJA"})
    for topic_id in (TOPIC_ID, TOPIC_ID.bytes, "qWNLiUNvR7eGR5czomqQJA"):
        assert metadata.encode_record("TOPIC_RECORD", 0, {"name": "foo", "topicId": topic_id}) == raw
    assert metadata.encode_record("TopicRecord", 0, {"name": "foo", "topicId": TOPIC_ID}) == raw
    assert metadata.encode_record("NO_OP_RECORD", 0, {}).hex() == "01140000"


def test_tagged_fields_binary_in_tag_order_json_in_declaration_order():
    # PartitionChangeRecord v2: Directories is tag 8 but declared before ELR (tag 6)
    dir_a = bytes(range(16))
    # tag 6 = ELR [1, 2] (compact array: 03 + two int32), tag 8 = Directories [dir_a]
    elr = bytes([3]) + struct.pack(">ii", 1, 2)
    dirs = bytes([2]) + dir_a
    raw = (bytes([1, 5, 2]) + struct.pack(">i", 3) + TOPIC_ID.bytes + bytes([2])
           + bytes([6, len(elr)]) + elr + bytes([8, len(dirs)]) + dirs)
    name, version, data = metadata.decode_record(raw)
    assert (name, version) == ("PARTITION_CHANGE_RECORD", 2)
    assert data["eligibleLeaderReplicas"] == [1, 2]
    assert data["directories"] == [uuid_to_text(dir_a)]
    assert data["leader"] == -2 and data["isr"] is None  # untagged defaults
    assert metadata.encode_record(name, version, data) == raw
    assert metadata.format_record(raw) == (
        '{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":3,'
        '"topicId":"qWNLiUNvR7eGR5czomqQJA","directories":["' + uuid_to_text(dir_a) + '"],'
        '"eligibleLeaderReplicas":[1,2]}}')


def test_unknown_tagged_fields_survive_reencoding_and_stay_out_of_json():
    raw = bytes([1, 2, 0, 4]) + b"foo" + TOPIC_ID.bytes + bytes([1, 9, 2, 0xAB, 0xCD])
    name, version, data = metadata.decode_record(raw)
    assert data["_unknownTaggedFields"] == [(9, b"\xab\xcd")]
    assert metadata.encode_record(name, version, data) == raw
    assert "_unknown" not in metadata.format_record(raw)


def test_client_quota_float64_and_nullable_string():
    raw = metadata.encode_record("CLIENT_QUOTA_RECORD", 0, {
        "entity": [{"entityType": "user", "entityName": None}], "key": "producer_byte_rate",
        "value": 1024.0, "remove": False})
    # compact array of 1 (02), "user" (05 user), null compact string (00), struct tags (00)
    assert raw[3:11] == bytes([2, 5]) + b"user" + bytes([0, 0])
    assert metadata.format_record(raw) == (
        '{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user",'
        '"entityName":null}],"key":"producer_byte_rate","value":1024.0,"remove":false}}')


@pytest.mark.parametrize("msg", METADATA_MESSAGES, ids=lambda m: m.name)
def test_every_metadata_type_and_version_encodes_defaults_and_decodes_back(msg):
    for version in range(msg.valid_versions.low, msg.valid_versions.high + 1):
        raw = metadata.encode_record(type_name(msg.name), version, {})
        assert raw[:1] == b"\x01" and raw[1] == msg.api_key and raw[2] == version
        name, got_version, data = metadata.decode_record(raw)
        assert (name, got_version) == (type_name(msg.name), version)
        assert metadata.encode_record(name, version, data) == raw


# --- errors ---------------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_metadata_error_lines_like_kafka_dump_log():
    # DUMP_LOG.md 11 #7: a value of uvarint 10000 twice at offset 4
    bogus = _varint(10000) + _varint(10000)
    assert metadata.format_record(bogus, offset=4) == (
        "Error at 4, skipping. Could not deserialize metadata record due to unknown frame "
        "version 10000(only frame version 1 is supported)")
    assert metadata.format_record(b"\x00\x02\x00", offset=1).startswith(
        "Error at 1, skipping. Could not deserialize metadata record with frame version 0.")
    assert metadata.format_record(b"\x01\x0d\x00", offset=2) == (
        "Error at 2, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
        "Unknown metadata id 13")
    assert metadata.format_record(bytes([1, 20, 0, 0, 7, 7]), offset=3) == (
        "Error at 3, skipping. Found 2 byte(s) of garbage after 20")
    assert metadata.format_record(bytes([1, 2, 0, 4]) + b"fo", offset=5) == (
        "Error at 5, skipping. Failed to deserialize record with type 2")
    assert metadata.format_record(b"\x01" + _varint(40000), offset=6) == (
        "Error at 6, skipping. Value for type was too large.")
    assert metadata.format_record(b"", offset=7) == (
        "Error at 7, skipping. Error while reading frame version")
    assert metadata.format_record(None, offset=7) == (
        "Error at 7, skipping. Error while reading frame version")
    assert metadata.format_record(b"\x01\x02\x80\x80\x80\x80\x80", offset=8) == (
        "Error at 8, skipping. Error while reading version")
    with pytest.raises(SchemaError) as e:
        metadata.format_record(bytes([1, 2, 0, 4]) + b"fo")
    assert e.value.reason == "Failed to deserialize record with type 2"
    assert e.value.field and e.value.field.startswith("TopicRecord.name")


def test_hostile_counts_are_bounded():
    # PartitionRecord claiming 2**31 replicas must fail fast, not allocate
    raw = bytes([1, 3, 0]) + struct.pack(">i", 0) + TOPIC_ID.bytes + _varint(0x7FFFFFFF)
    with pytest.raises(SchemaError) as e:
        metadata.decode_record(raw)
    assert e.value.__cause__ is not None
    assert "Tried to allocate a collection of size" in str(e.value.__cause__)


def test_encode_rejects_bad_input_with_schema_error():
    cases = [
        ("NOT_A_RECORD", 0, {}),
        ("TOPIC_RECORD", 5, {}),
        ("TOPIC_RECORD", 0, {"name": 3}),
        ("TOPIC_RECORD", 0, {"nmae": "typo"}),
        ("TOPIC_RECORD", 0, {"topicId": "not-a-uuid"}),
        ("PARTITION_RECORD", 0, {"replicas": [2**40]}),
        ("PARTITION_RECORD", 0, {"replicas": None}),
        ("REGISTER_BROKER_RECORD", 0, {"isMigratingZkBroker": True}),  # v2+ only
        ("CONFIG_RECORD", 0, {"name": "x" * 40000}),
    ]
    for type_name_, version, data in cases:
        with pytest.raises(SchemaError):
            metadata.encode_record(type_name_, version, data)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=64))
def test_random_metadata_values_only_raise_schema_error(data):
    try:
        metadata.decode_record(b"\x01" + data)
    except SchemaError:
        pass
    line = metadata.format_record(data, offset=0)
    assert line.startswith("{") or line.startswith("Error at 0, skipping. ")


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 15), st.binary(max_size=64), st.one_of(st.none(), st.binary(max_size=64)))
def test_random_offsets_records_never_escape(record_type, key_body, value):
    key = struct.pack(">h", record_type) + key_body
    k, v = co.format_record(key, value, offset=11)
    assert k is not None
    if v is None:
        assert k.startswith(("Error at offset 11, skipping. ", "Unknown record type "))


def test_metadata_frame_fields_are_java_ints_cast_to_short():
    # ByteUtils.readUnsignedVarint returns an int (5-byte varints wrap negative); the serde
    # rejects only values > Short.MAX_VALUE and casts the rest: 0xFFFFFFFF is frame version -1
    assert metadata.format_record(bytes.fromhex("ffffffff0f"), offset=1) == (
        "Error at 1, skipping. Could not deserialize metadata record due to unknown frame "
        "version -1(only frame version 1 is supported)")
    # bits past 32 are dropped: 0x7FFFFFFFF keeps 0xFFFFFFFF
    assert metadata.format_record(bytes.fromhex("ffffffff7f"), offset=1) == (
        "Error at 1, skipping. Could not deserialize metadata record due to unknown frame "
        "version -1(only frame version 1 is supported)")
    assert metadata.format_record(b"\x01" + bytes.fromhex("ffffffff0f") + b"\x00", offset=2) == (
        "Error at 2, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
        "Unknown metadata id -1")


@pytest.mark.parametrize("raw, converted", [
    # ByteUtils.readUnsignedVarint: the value so far, 5th group included (shifted by 28, so a
    # Java int keeps its low 4 bits), printed with Integer.toHexString
    (b"\x80\x80\x80\x80\x81", "10000000"),
    (b"\xff\xff\xff\xff\xff", "ffffffff"),
    (b"\x81\x80\x80\x80\x8f", "f0000001"),
])
def test_an_overlong_compact_length_words_its_error_like_kafka(raw, converted):
    from segtools.formats.messages import field, message
    from segtools.primitives.messages import read_message

    msg = message("Probe", None, "0", "0+", [field("Name", "string")])
    with pytest.raises(SchemaError) as caught:
        read_message(msg, raw + b"\x00", 0)
    assert caught.value.reason == ("Varint is too long, the most significant bit in the 5th byte is set, "
                                   f"converted value: {converted}")


def test_a_compact_length_cut_off_by_the_end_reads_as_null_like_kafka():
    from segtools.formats.messages import field, message
    from segtools.primitives.messages import read_message

    msg = message("Probe", None, "0", "0+", [field("Name", "string")])
    with pytest.raises(SchemaError) as caught:
        read_message(msg, b"\x80\x80", 0)
    assert caught.value.reason == "null"  # BufferUnderflowException's message
