"""Payload redaction of log segments for ``segtools collect --redact`` (docs/USAGE.md
"Redacted bundles").

A redacted segment has the same size, the same batch boundaries, offsets, timestamps, producer
ids/epochs/sequences and leader epochs as the original, so indexes stay valid and every
segtools answer that reads batch headers is unchanged. What changes, per record of a data batch:

* a key becomes a same-length pseudonym: up to 8 bytes a salted permutation (bijective), longer
  the first 8 bytes of a salted SHA-256 of the key and zeros; equal keys stay equal, different
  keys different (exactly, or but for a 2^-64 chance), within one salt (one collect run);
* a value or header value up to 8 bytes is permuted as keys are; a longer one becomes zeros,
  the first of which carry a salted digest of the whole original batch, so batches that differ
  anywhere still differ (and their CRCs with them: compare's divergence check keeps working),
  while a compressed batch recompresses small enough to keep its size;
* header keys are kept (they name fields, as a schema does).

Control batches (COMMIT/ABORT markers) are copied unchanged. Each rewritten batch's stored
CRC-32C becomes ``stored ^ crc(original) ^ crc(redacted)``: a valid CRC stays valid, and an
invalid one stays invalid by exactly the same difference (redaction never repairs evidence of
corruption). A compressed batch is decompressed, redacted and recompressed with its codec; the
new stream is padded to the original size with bytes its decoders skip (gzip, lz4: zeros after
the stream's end; zstd: a skippable frame; snappy: empty xerial blocks and stream headers).
Bytes that cannot be parsed (a corrupt record, an undecodable stream, a torn tail) are
zero-filled, and every such batch is listed in the result, never silently.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from segtools.errors import SegtoolsError
from segtools.formats.legacy import (
    LEGACY_CRC_STRUCT_FORMAT,
    LEGACY_ENTRY_HEAD_STRUCT_FORMAT,
    LEGACY_LENGTH_STRUCT_FORMAT,
    LEGACY_PREFIX_STRUCT_FORMAT,
)
from segtools.formats.record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    CRC_STRUCT_FORMAT,
    HEADER_STRUCT_FORMAT,
    LOG_PREFIX_STRUCT_FORMAT,
    RECORD_BATCH_OVERHEAD,
)
from segtools.primitives.codecs import GZIP, LZ4, NONE, SNAPPY, XERIAL_HEADER, ZSTD, compress, decompress
from segtools.primitives.crc import crc32, crc32c
from segtools.primitives.limits import resolve_max_batch_bytes
from segtools.primitives.varint import read_varint, read_varlong

__all__ = ["RULES", "Redactor", "RedactionNote", "pseudonym"]

#: what the manifest says about the rule (docs/CONTRACT.md "segtools collect")
RULES = {
    "keys": "same length; up to 8 bytes: a salted Feistel permutation (bijective); longer: the "
            "first 8 bytes of a salted SHA-256 of the key, then zero bytes (4 where a batch notes it)",
    "values": "same length; up to 8 bytes: as keys; longer: zero bytes, the first ones carrying a "
              "salted SHA-256 of the whole original batch (batches that differ stay different)",
    "header_values": "as values", "header_keys": "kept",
    "control_batches": "kept unchanged",
    "crc": "stored ^ crc(original) ^ crc(redacted): valid stays valid, invalid stays invalid",
    "compressed": "decompressed, redacted, recompressed with the same codec, padded to the "
                  "original size with bytes the codec's decoders skip (gzip, lz4: zeros after "
                  "the stream; zstd: a skippable frame; snappy: empty blocks and stream headers)",
    "unparsable": "zero-filled and listed in notes",
}

_PREFIX = 16
#: values up to this long get a bijective pseudonym; longer ones are zeroed and carry the
#: batch digest (few random bytes per batch, so compressed batches recompress no larger)
_SHORT = 8
_KEY_WIDTH = 8
#: (key pseudonym width, batch digest length) tried in turn for a compressed batch: the
#: digest's length only moves the recompressed size (to a size the padding rule can reach);
#: narrower keys are the last resort, noted per batch
_ATTEMPTS = [(w, n) for w in (_KEY_WIDTH, 6, 4) for n in range(8, 25)]
_LOG_PREFIX = struct.Struct(LOG_PREFIX_STRUCT_FORMAT)
_LEGACY_HEAD = struct.Struct(LEGACY_ENTRY_HEAD_STRUCT_FORMAT)
_LEGACY_CRC_AT = struct.calcsize(LEGACY_PREFIX_STRUCT_FORMAT)
_V2_HEADER = struct.Struct(HEADER_STRUCT_FORMAT)
_V2_MIN = RECORD_BATCH_OVERHEAD
_ZERO_CHUNK = 1 << 20
_ZSTD_SKIPPABLE = 0x184D2A50
#: one xerial block (int32 length 1) holding the raw snappy stream of nothing (its varint 0)
_SNAPPY_EMPTY_BLOCK = (1).to_bytes(4, "big") + b"\x00"


@dataclass
class RedactionNote:
    position: int
    base_offset: int | None
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "base_offset": self.base_offset, "note": self.note}


def _feistel(data: bytes, key: bytes) -> bytes:
    """A keyed permutation of the byte strings of len(data): equal in, equal out; different
    in, different out."""
    half = 4 * len(data)
    mask = (1 << half) - 1
    x = int.from_bytes(data, "big")
    left, right = x >> half, x & mask
    width = (half + 7) // 8
    for rnd in range(4):
        f = int.from_bytes(hashlib.sha256(key + bytes([rnd]) + right.to_bytes(width, "big")).digest(),
                           "big") & mask
        left, right = right, left ^ f
    return ((left << half) | right).to_bytes(len(data), "big")


def _expand(seed: bytes, n: int) -> bytes:
    out = bytearray()
    counter = 0
    while len(out) < n:
        out += hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return bytes(out[:n])


def pseudonym(data: bytes, salt: bytes, *, kind: str, width: int = 8) -> bytes:
    """The same-length pseudonym of a key or a short value: a salted permutation of strings
    up to ``width`` bytes (bijective), else ``width`` bytes of a salted SHA-256 and zeros (so
    compressed batches recompress small)."""
    n = len(data)
    if n == 0:
        return data
    key = salt + kind.encode()
    if n <= width:
        return _feistel(data, key)
    return hashlib.sha256(key + data).digest()[:width] + bytes(n - width)


def _zeros(n: int) -> Iterator[bytes]:
    for at in range(0, n, _ZERO_CHUNK):
        yield bytes(min(_ZERO_CHUNK, n - at))


class _Unparsable(Exception):
    def __init__(self, at: int, why: str) -> None:
        super().__init__(why)
        self.at = at
        self.why = why


def _redact_v2_records(buf: bytearray, count: int, salt: bytes, spot: bytes,
                        key_width: int = 8) -> None:
    """Replace, in place, keys, values and header values of ``count`` v2 records in ``buf``;
    ``spot`` (a digest of the whole original batch) is written over the leading bytes of the
    long values, so batches that differ anywhere still differ when redacted;
    _Unparsable(position, why) where the records stop making sense."""
    pos = 0
    n = len(buf)
    left = [spot]

    def field_(pos: int, end: int, kind: str) -> int:
        length, pos = read_varint(buf, pos)
        if length < -1 or pos + max(length, 0) > end:
            raise _Unparsable(pos, f"{kind} length {length} runs past its record")
        if kind == "key":
            buf[pos:pos + length] = pseudonym(bytes(buf[pos:pos + length]), salt, kind=kind,
                                              width=key_width)
        elif 0 < length <= _SHORT:
            buf[pos:pos + length] = pseudonym(bytes(buf[pos:pos + length]), salt, kind=kind)
        elif length > 0:
            carried = left[0][:length]
            left[0] = left[0][len(carried):]
            buf[pos:pos + length] = carried + bytes(length - len(carried))
        return pos + max(length, 0)

    for _ in range(count):
        start = pos
        try:
            length, pos = read_varint(buf, pos)
            end = pos + length
            if length < 0 or end > n:
                raise _Unparsable(start, f"record length {length} runs past the batch")
            pos += 1                                   # attributes
            _, pos = read_varlong(buf, pos)            # timestamp delta
            _, pos = read_varint(buf, pos)             # offset delta
            pos = field_(pos, end, "key")
            pos = field_(pos, end, "value")
            headers, pos = read_varint(buf, pos)
            if headers < 0:
                raise _Unparsable(start, f"header count {headers}")
            for _h in range(headers):
                hkey, pos = read_varint(buf, pos)
                if hkey < 0 or pos + hkey > end:
                    raise _Unparsable(start, f"header key length {hkey} runs past its record")
                pos = field_(pos + hkey, end, "header")
            if pos != end:
                raise _Unparsable(start, "record fields do not end where its length says")
        except SegtoolsError as exc:     # a varint cut short or too long
            raise _Unparsable(start, str(exc)) from None
        pos = end
    if pos != n:
        raise _Unparsable(pos, f"{n - pos} bytes after the {count} records")


def _pad(codec: int, stream: bytes, target: int) -> bytes | None:
    """``stream`` grown to ``target`` bytes with bytes the codec's decoders skip, or None."""
    gap = target - len(stream)
    if gap == 0:
        return stream
    if gap < 0:
        return None
    if codec in (GZIP, LZ4):
        # JDK GZIPInputStream ends at trailing bytes that are not a gzip header; lz4 frame
        # readers stop at the end mark
        return stream + bytes(gap)
    if codec == ZSTD:
        if gap < 8:
            return None
        # skippable frame: magic, payload length (little-endian uint32s), payload
        return (stream + _ZSTD_SKIPPABLE.to_bytes(4, "little") + (gap - 8).to_bytes(4, "little")
                + bytes(gap - 8))
    if codec == SNAPPY:
        header = len(XERIAL_HEADER)
        for headers in range(gap // header + 1):
            rest = gap - headers * header
            if rest % len(_SNAPPY_EMPTY_BLOCK) == 0:
                return (stream + _SNAPPY_EMPTY_BLOCK * (rest // len(_SNAPPY_EMPTY_BLOCK))
                        + XERIAL_HEADER * headers)
        return None
    return None


@dataclass
class Redactor:
    """Redacts whole segment files' bytes; ``notes`` gathers what could not be kept."""
    salt: bytes
    batches: int = 0
    redacted: int = 0
    control_kept: int = 0
    notes: list[RedactionNote] = field(default_factory=list)

    def segment(self, data: bytes | memoryview, *, file_position: int = 0) -> bytes:
        """The redacted bytes of a run of batches (a whole .log file's content)."""
        return b"".join(self.chunks(data, file_position=file_position))

    def chunks(self, data: bytes | memoryview, *,
               file_position: int = 0) -> Iterator[bytes | memoryview]:
        """The redacted bytes of ``data``, in pieces (see :meth:`stream`)."""
        src = memoryview(data)
        return self.stream(lambda at, n: src[at:at + n], len(src), file_position=file_position)

    def stream(self, read_at: Callable[[int, int], bytes | memoryview], size: int, *,
               file_position: int = 0, limit: int | None = None
               ) -> Iterator[bytes | memoryview]:
        """The redacted bytes of a file of ``size`` bytes read with ``read_at(position, n)``,
        in pieces of at most one batch (or 1 MiB of a zero-filled tail): memory stays at one
        batch. A batch larger than ``limit`` (default: the reader's batch limit) keeps its
        header and is zero-filled after it; a file that ends early (shrank while read) is
        zero-filled to ``size``; both are noted."""
        limit = resolve_max_batch_bytes() if limit is None else limit
        pos = 0
        while pos < size:
            head = bytes(read_at(pos, min(17, size - pos)))
            if len(head) < 17:
                self.notes.append(RedactionNote(file_position + pos, None,
                                                "torn tail shorter than a batch header: zero-filled"))
                yield from _zeros(size - pos)
                return
            base, length = _LOG_PREFIX.unpack_from(head, 0)
            bsize = length + 12
            magic = head[16]
            keep = _V2_MIN if magic == 2 else 17
            if length < 14 or pos + bsize > size or magic not in (0, 1, 2) or (
                    magic == 2 and bsize < _V2_MIN):
                self.notes.append(RedactionNote(
                    file_position + pos, base, "bytes from here do not parse as batches (torn or "
                    "corrupt tail): kept up to the batch header, zero-filled after"))
                kept = bytes(read_at(pos, min(keep, size - pos)))
                yield kept
                yield from _zeros(size - pos - len(kept))
                return
            self.batches += 1
            if bsize > limit:
                self.notes.append(RedactionNote(
                    file_position + pos, base, f"batch of {bsize} bytes is over the {limit}-byte "
                    "batch limit (SEGTOOLS_MAX_BATCH_BYTES): header kept, records zero-filled, CRC "
                    "left as stored"))
                yield bytes(read_at(pos, keep))
                yield from _zeros(bsize - keep)
                pos += bsize
                continue
            batch = memoryview(read_at(pos, bsize))
            if len(batch) < bsize:
                self.notes.append(RedactionNote(file_position + pos, base, "the file ended inside "
                                                "this batch while it was read: zero-filled"))
                yield from _zeros(size - pos)
                return
            new = (self._v2(batch, file_position + pos, base) if magic == 2
                   else self._legacy(batch, file_position + pos, base))
            yield batch if new is None else new
            pos += bsize

    def _v2(self, batch: memoryview, position: int, base: int) -> bytes | None:
        fields = _V2_HEADER.unpack_from(batch, 0)
        attributes, count, stored = fields[5], fields[12], fields[4]
        if attributes & CONTROL_FLAG_MASK:
            self.control_kept += 1
            return None
        codec = attributes & COMPRESSION_CODEC_MASK
        records = bytes(batch[_V2_MIN:])
        new_records = self._records(codec, records, count, position, base)
        new = bytearray(batch[:_V2_MIN]) + new_records
        crc = stored ^ crc32c(batch[ATTRIBUTES_OFFSET:]) ^ crc32c(memoryview(new)[ATTRIBUTES_OFFSET:])
        struct.pack_into(CRC_STRUCT_FORMAT, new, CRC_OFFSET, crc)
        self.redacted += 1
        return bytes(new)

    def _records(self, codec: int, records: bytes, count: int, position: int, base: int) -> bytes:
        if codec == NONE:
            buf = bytearray(records)
            try:
                _redact_v2_records(buf, count, self.salt, self._spot(records, _PREFIX))
            except _Unparsable as exc:
                self.notes.append(RedactionNote(position, base,
                                                f"records unparsable at records byte {exc.at} "
                                                f"({exc.why}): zero-filled from there"))
                buf[exc.at:] = bytes(len(buf) - exc.at)
            return bytes(buf)
        try:
            raw = decompress(codec, records, max_size=resolve_max_batch_bytes())
        except SegtoolsError as exc:
            self.notes.append(RedactionNote(position, base, f"compressed records undecodable "
                                            f"({exc}): records zero-filled"))
            return bytes(len(records))
        # the digest's length only moves the recompressed size: tried until one pads exactly
        for key_width, spot in _ATTEMPTS:
            buf = bytearray(raw)
            try:
                _redact_v2_records(buf, count, self.salt, self._spot(raw, spot), key_width)
            except _Unparsable as exc:
                self.notes.append(RedactionNote(position, base,
                                                f"decompressed records unparsable at byte {exc.at} "
                                                f"({exc.why}): records zero-filled"))
                return bytes(len(records))
            padded = _pad(codec, compress(codec, bytes(buf)), len(records))
            if padded is not None:
                if key_width != _KEY_WIDTH:
                    self.notes.append(RedactionNote(position, base, f"keys longer than {key_width} "
                                                    f"bytes carry a {key_width}-byte pseudonym "
                                                    "(not the bundle's usual 8) so that the batch "
                                                    "recompresses into its size"))
                return padded
        self.notes.append(RedactionNote(position, base, "redacted records do not recompress to "
                                        "the original size: records zero-filled (batch header, "
                                        "offsets and CRC validity kept; records unreadable)"))
        return bytes(len(records))

    def _legacy_field(self, kind: str, data: bytes) -> bytes:
        if kind == "zero":
            return bytes(len(data))
        if kind == "key" or len(data) <= _SHORT:
            return pseudonym(data, self.salt, kind=kind, width=_KEY_WIDTH)
        head = hashlib.sha256(self.salt + b"value" + data).digest()[:min(len(data), _PREFIX)]
        return head + bytes(len(data) - len(head))

    def _spot(self, records: bytes, n: int) -> bytes:
        return hashlib.sha256(self.salt + b"batch" + records).digest()[:n]

    def _legacy(self, batch: memoryview, position: int, base: int) -> bytes | None:
        # magic 0/1 entry: offset, size, crc, magic, attributes[, timestamp], key, value
        _, _, stored, magic, attributes = _LEGACY_HEAD.unpack_from(batch, 0)
        new = bytearray(batch)
        body = pos = _LEGACY_HEAD.size + (8 if magic == 1 else 0)
        if attributes & COMPRESSION_CODEC_MASK:
            # a compressed wrapper: its value is a whole inner message set, not redacted entry
            # by entry here
            self.notes.append(RedactionNote(position, base, "compressed legacy (magic 0/1) "
                                            "wrapper: value zero-filled"))
            kinds: tuple[str, ...] = ("key", "zero")
        else:
            kinds = ("key", "value")
        try:
            for kind in kinds:
                (length,) = struct.unpack_from(LEGACY_LENGTH_STRUCT_FORMAT, new, pos)
                pos += 4
                if length > 0:
                    if pos + length > len(new):
                        raise struct.error("length past entry")
                    new[pos:pos + length] = self._legacy_field(kind, bytes(new[pos:pos + length]))
                    pos += length
        except struct.error:
            self.notes.append(RedactionNote(position, base, "legacy entry unparsable: key/value "
                                            "zero-filled"))
            new[body:] = bytes(len(new) - body)
        crc = stored ^ crc32(batch[16:]) ^ crc32(memoryview(new)[16:])
        struct.pack_into(LEGACY_CRC_STRUCT_FORMAT, new, _LEGACY_CRC_AT, crc)
        self.redacted += 1
        return bytes(new)
