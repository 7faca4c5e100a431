"""varint.py against kafka-python's varint codec (an independent implementation) and the
protobuf/Kafka definitions (ByteUtils: at most 5 bytes for a varint, 10 for a varlong)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.util import decode_varint as kp_decode
from kafka.record.util import encode_varint as kp_encode

from segtools.errors import CorruptBatchError, TruncatedBatchError
from segtools.primitives.varint import (
    encode_uvarint,
    encode_varint,
    encode_varlong,
    read_uvarint,
    read_varint,
    read_varlong,
)

INT32 = st.integers(-2**31, 2**31 - 1)
INT64 = st.integers(-2**63, 2**63 - 1)


def kp_bytes(value: int) -> bytes:
    out = bytearray()
    kp_encode(value, out.append)
    return bytes(out)


@given(INT32, st.binary(max_size=3), st.binary(max_size=3))
def test_varint_matches_kafka_python(value, before, after):
    encoded = kp_bytes(value)
    assert encode_varint(value) == encoded
    assert read_varint(before + encoded + after, len(before)) == \
        (value, len(before) + len(encoded))


@given(INT64)
def test_varlong_matches_kafka_python(value):
    encoded = kp_bytes(value)
    assert encode_varlong(value) == encoded
    assert read_varlong(encoded, 0) == (value, len(encoded))
    assert kp_decode(encode_varlong(value), 0) == (value, len(encoded))


@pytest.mark.parametrize("encoded,value", [
    (b"\x00", 0), (b"\x01", -1), (b"\x02", 1), (b"\x7f", -64), (b"\x80\x01", 64),
    (b"\xd7\x04", -300), (b"\xfe\xff\xff\xff\x0f", 2**31 - 1), (b"\xff\xff\xff\xff\x0f", -2**31),
])
def test_known_encodings(encoded, value):
    assert read_varint(encoded, 0) == (value, len(encoded))


def test_uvarint():
    assert read_uvarint(b"\xac\x02", 0) == (300, 2)
    assert encode_uvarint(300) == b"\xac\x02"
    assert read_uvarint(encode_uvarint(2**32 - 1), 0) == (2**32 - 1, 5)


def test_too_long_and_truncated():
    with pytest.raises(CorruptBatchError, match="too long"):
        read_varint(b"\x80\x80\x80\x80\x80\x01", 0)  # a 6th byte (ByteUtils: > 5 bytes)
    with pytest.raises(CorruptBatchError, match="too long"):
        read_varlong(b"\xff" * 11, 0)
    for cut in (b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80"):
        with pytest.raises(TruncatedBatchError) as info:
            read_varint(b"xx" + cut, 2)
        assert info.value.position == 2
