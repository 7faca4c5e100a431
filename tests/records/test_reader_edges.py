"""Object reader and both columnar engines on the same hostile-but-readable v2 edges.

Expected values are Kafka's (``DefaultRecord.readFrom``, ``DefaultRecordBatch.iterator``,
``incrementSequence`` with Java int/long arithmetic), written here by hand, never taken from
one of our readers.
"""

from __future__ import annotations

import pytest
from test_batches import record_body, v2_batch, write, zz

from segtools.records import columnar
from segtools.records.batches import iter_batches, iter_records

ENGINES = columnar.available_engines()


def _raw_record(body: bytes) -> bytes:
    return zz(len(body)) + body


def _rows_object(path) -> list[tuple]:
    return [(r.offset, r.timestamp, r.sequence, r.key, r.value, r.headers or None)
            for r in iter_records(path)]


def _rows_columnar(path, engine) -> list[tuple]:
    t = columnar.read_records(path, engine=engine)
    return [(r["offset"], r["timestamp_ms"], r["sequence"], r["key"], r["value"],
             [(h["key"], h["value"]) for h in r["headers"]] if r["headers"] else None)
            for r in t.to_pylist()]


def _all_readers(path) -> dict[str, list[tuple]]:
    out = {"object": _rows_object(path)}
    for engine in ENGINES:
        out[engine] = _rows_columnar(path, engine)
    return out


def test_negative_key_and_value_lengths_below_minus_one_are_null(tmp_path):
    # DefaultRecord.readFrom: `if (keySize >= 0)` / `if (valueSize >= 0)`, else null; the same
    # for a header value. Only a negative header *key* size is an error.
    body = bytes([0]) + zz(0) + zz(0) + zz(-2) + zz(-7) + zz(1) + zz(1) + b"h" + zz(-3)
    path = write(tmp_path, v2_batch(_raw_record(body), count=1, base_offset=5))
    for reader, rows in _all_readers(path).items():
        assert rows == [(5, 1_700_000_000_000, -1, None, None, [("h", None)])], reader


def test_empty_batch_with_leftover_bytes_yields_nothing(tmp_path):
    # DefaultRecordBatch.iterator(): count 0 returns an empty iterator without looking at the
    # record bytes (neither the leftover check nor decompression runs).
    empty_plain = v2_batch(_raw_record(record_body()), count=0, base_offset=0)
    empty_gzip = v2_batch(b"not gzip at all", count=0, base_offset=1, attributes=1)
    after = v2_batch(_raw_record(record_body(value=b"x")), count=1, base_offset=2)
    path = write(tmp_path, empty_plain + empty_gzip + after)
    for reader, rows in _all_readers(path).items():
        assert rows == [(2, 1_700_000_000_000, -1, None, b"x", None)], reader


def test_sequence_of_a_negative_offset_delta_uses_java_int_arithmetic(tmp_path):
    # incrementSequence(5, -1): 5 > MAX - (-1) overflows to MIN, so the wrap branch runs:
    # -1 - (MAX - 5) - 1 = -2147483644
    body = record_body(offset_delta=-1, value=b"v")
    path = write(tmp_path, v2_batch(_raw_record(body), count=1, base_offset=10,
                                    base_sequence=5, producer_id=1, producer_epoch=0))
    for reader, rows in _all_readers(path).items():
        assert [r[:3] for r in rows] == [(9, 1_700_000_000_000, -2147483644)], reader


def test_offset_and_timestamp_wrap_like_java_long(tmp_path):
    # baseOffset + offsetDelta and baseTimestamp + timestampDelta are Java long additions
    body = record_body(offset_delta=10, ts_delta=10, value=b"v")
    path = write(tmp_path, v2_batch(_raw_record(body), count=1, base_offset=2**63 - 5,
                                    last_offset_delta=10, base_ts=2**63 - 5))
    for reader, rows in _all_readers(path).items():
        assert [r[:2] for r in rows] == [(-2**63 + 5, -2**63 + 5)], reader
    [batch] = iter_batches(path)
    assert batch.last_offset == -2**63 + 5
    assert columnar.read_batch_table(path).column("last_offset").to_pylist() == [-2**63 + 5]


def _legacy_wrapper(magic: int, wrapper_offset: int, inner_offsets: list[int]) -> bytes:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=1, batch_size=10**7)
    for i, offset in enumerate(inner_offsets):
        builder.append(offset, 1_700_000_000_000 if magic else None, b"k", b"v%d" % i)
    raw = bytearray(builder.build())
    raw[0:8] = wrapper_offset.to_bytes(8, "big", signed=True)  # outside the message CRC
    return bytes(raw)


@pytest.mark.parametrize("magic,wrapper_offset,inner,offsets,delta", [
    # v0: absolute inner offsets; wrapper 2**40 after inner 0..2 (delta 2**40 wraps to 0)
    (0, 2**40, [0, 1, 2], [0, 1, 2], 0),
    # v1: base = 2**62 - 0; 2**62 + (2**63 - 1) wraps like a Java long
    # (delta: 2**62 - (-2**62 - 1) = 2**63 + 1, whose low 32 bits are 1)
    (1, 2**62, [2**63 - 1, 0], [-2**62 - 1, 2**62], 1),
])
def test_hostile_legacy_offsets_wrap_like_java_and_all_readers_agree(tmp_path, magic,
                                                                     wrapper_offset, inner,
                                                                     offsets, delta):
    path = write(tmp_path, _legacy_wrapper(magic, wrapper_offset, inner))
    [batch] = iter_batches(path)
    assert [r.offset for r in batch.records()] == offsets
    assert batch.last_offset_delta == delta
    for engine in ENGINES:
        scan = columnar.read_batch_table(path, engine=engine).to_pylist()
        assert [(b["base_offset"], b["last_offset"], b["last_offset_delta"]) for b in scan] == \
            [(offsets[0], wrapper_offset, delta)], engine
        assert [r[0] for r in _rows_columnar(path, engine)] == offsets, engine
