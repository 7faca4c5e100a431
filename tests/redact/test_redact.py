"""segtools.redact: the properties compare relies on in a redacted bundle -- same sizes, batch
headers and control batches, CRC validity and invalidity kept, equal payloads stay equal and
different ones stay different -- and that no planted byte survives."""

from __future__ import annotations

import struct

import pytest

from segtools.redact import Redactor, pseudonym
from segtools.writer.batch_builder import NewRecord, build_batch, build_control_batch
from segtools.writer.batch_header import parse_batch_header
from segtools.writer.legacy_builder import build_legacy_message

SALT = b"fixed-test-salt!"


def _batch(values: list[bytes], keys: list[bytes] | None = None, **kw) -> bytes:
    keys = keys or [b"PLANTKEY-%d" % i for i in range(len(values))]
    return build_batch([NewRecord(key=k, value=v, headers=[("h", b"PLANTHDR-value")], timestamp=7)
                        for k, v in zip(keys, values)], base_offset=kw.pop("base_offset", 0), **kw)


@pytest.mark.parametrize("n", [1, 2])
def test_short_pseudonyms_are_a_permutation(n):
    """Every byte string of n bytes maps to a different one: no two keys merge."""
    inputs = [i.to_bytes(n, "big") for i in range(256 ** n)]
    outputs = {pseudonym(x, SALT, kind="key") for x in inputs}
    assert len(outputs) == len(inputs)
    assert all(len(x) == n for x in outputs)


def test_equal_keys_stay_equal_and_different_keys_different():
    keys = [b"user-1", b"user-2", b"user-1", b"a-much-longer-key-000", b"a-much-longer-key-001"]
    out = [pseudonym(k, SALT, kind="key") for k in keys]
    assert out[0] == out[2] and len({out[0], out[1], out[3], out[4]}) == 4
    assert [len(x) for x in out] == [len(k) for k in keys]
    assert pseudonym(b"user-1", b"another salt....", kind="key") != out[0]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_batches_keep_size_headers_and_validity_and_lose_the_payload(codec):
    data = _batch([b"PLANTVAL-%d-" % i * 8 for i in range(6)], compression=codec)
    red = Redactor(SALT).segment(data)
    assert len(red) == len(data) and b"PLANT" not in red
    a, b = parse_batch_header(data), parse_batch_header(red)
    assert b.crc_valid and a.crc_valid
    assert (a.base_offset, a.last_offset, a.max_timestamp, a.records_count, a.size) == \
           (b.base_offset, b.last_offset, b.max_timestamp, b.records_count, b.size)
    assert red[:17] == data[:17] and red[21:61] == data[21:61]   # header but the CRC: same bytes


def test_replicas_that_differ_anywhere_still_differ_and_equal_ones_are_equal():
    base = [b"PLANTVAL-%d-" % i * 8 for i in range(4)]
    other = list(base)
    other[3] = other[3][:-1] + b"!"          # one byte at the end of the last value
    one, same, diverged = (Redactor(SALT).segment(_batch(v)) for v in (base, list(base), other))
    assert one == same
    assert parse_batch_header(one).crc_valid and parse_batch_header(diverged).crc_valid
    (crc1,) = struct.unpack_from(">I", one, 17)
    (crc2,) = struct.unpack_from(">I", diverged, 17)
    assert crc1 != crc2


def test_control_batches_are_copied_unchanged():
    marker = build_control_batch("COMMIT", base_offset=3, producer_id=9, producer_epoch=1,
                                 coordinator_epoch=4, timestamp=11)
    data = _batch([b"PLANTVAL-x" * 3] * 3, producer_id=9, producer_epoch=1, base_sequence=0,
                  is_transactional=True) + marker
    r = Redactor(SALT)
    red = r.segment(data)
    assert red[-len(marker):] == marker and r.control_kept == 1 and r.redacted == 1
    assert parse_batch_header(red, len(data) - len(marker)).control_type == 1


def test_an_invalid_crc_stays_invalid_by_the_same_difference():
    data = bytearray(_batch([b"PLANTVAL-%d-" % i * 8 for i in range(3)]))
    data[-5] ^= 0x40                       # inside the last value: CRC no longer matches
    from segtools.primitives.crc import crc32c

    def syndrome(buf: bytes | bytearray) -> int:
        return struct.unpack_from(">I", buf, 17)[0] ^ crc32c(bytes(buf[21:]))

    red = Redactor(SALT).segment(bytes(data))
    assert not parse_batch_header(red).crc_valid
    assert syndrome(red) == syndrome(data) != 0


def test_unparsable_records_and_a_torn_tail_are_zero_filled_and_named():
    good = _batch([b"PLANTVAL-a" * 4] * 2)
    broken = bytearray(_batch([b"PLANTVAL-b" * 4] * 2, base_offset=2))
    broken[61] = 0x7F                       # first record's length varint: past the batch
    torn = _batch([b"PLANTVAL-c" * 4] * 2, base_offset=4)[:90]
    data = good + bytes(broken) + torn
    r = Redactor(SALT)
    red = r.segment(data)
    assert len(red) == len(data) and b"PLANT" not in red
    positions = [n.position for n in r.notes]
    assert positions == [len(good), len(good) + len(broken)]
    assert red[len(good) + len(broken):][:61] == torn[:61]   # the torn batch's header is kept


def test_legacy_entries_are_redacted_with_their_crc32():
    entry = build_legacy_message(offset=5, magic=1, key=b"PLANTKEY-1", value=b"PLANTVAL-" * 4,
                                 timestamp=3)
    red = Redactor(SALT).segment(entry)
    assert len(red) == len(entry) and b"PLANT" not in red
    assert parse_batch_header(red).crc_valid and red[:26] == entry[:12] + red[12:16] + entry[16:26]


def test_collect_redacts_in_pieces_and_digests_the_source_exactly(tmp_path):
    """The manifest's source_sha256 is the source's sha256, and the copy the redacted bytes,
    also with a torn tail and a batch over the batch limit."""
    import hashlib
    import json

    from segtools.bundle import collect

    broker = tmp_path / "broker-1"
    part = broker / "t-0"
    part.mkdir(parents=True)
    (broker / "meta.properties").write_text("node.id=1\nversion=1\n")
    data = b"".join(_batch([b"PLANTVAL-%d-" % i * 8] * 3, base_offset=3 * i) for i in range(5))
    data += _batch([b"PLANTVAL-torn" * 5], base_offset=15)[:70]
    (part / "00000000000000000000.log").write_bytes(data)
    result = collect([broker], tmp_path / "b", redact=True, redact_salt=SALT)
    manifest = json.loads((tmp_path / "b" / "MANIFEST.json").read_text())
    item = next(f for f in manifest["files"] if f["path"].endswith(".log"))
    copy = (tmp_path / "b" / item["path"]).read_bytes()
    assert item["source_sha256"] == hashlib.sha256(data).hexdigest()
    assert item["sha256"] == hashlib.sha256(copy).hexdigest()
    assert copy == Redactor(SALT).segment(data) and b"PLANT" not in copy
    assert [n["position"] for n in result.redaction_notes] == [len(data) - 70]
    big = Redactor(SALT)
    pieces = list(big.stream(lambda at, n: data[at:at + n], len(data), limit=100))
    assert b"".join(pieces)[:17] == data[:17] and len(b"".join(pieces)) == len(data)
    assert all(len(p) <= max(len(data) // 5, 1 << 20) for p in pieces)
    assert len([n for n in big.notes if "batch limit" in n.note]) == 5
