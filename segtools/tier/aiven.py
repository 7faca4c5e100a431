"""Aiven's tiered-storage plugin for Kafka (``tiered-storage-for-apache-kafka``): its objects
read back into the plain segment and its indexes. docs/TIER.md, "Aiven's object format", says
what is read and what is assumed.

One remote segment is three objects under the plugin's ``key.prefix``:
``<topic>-<topicId>/<partition>/<startOffset, 20 digits>-<segmentId>.{log,indexes,rsm-manifest}``.

* ``.rsm-manifest``: JSON (``"version": "1"``): ``chunkIndex`` (``fixed``: every transformed
  chunk but the last has one size; ``variable``: the transformed sizes, base64 of a zstd frame
  of a packed int list), ``segmentIndexes`` (position and size of each index inside the
  ``.indexes`` object), ``compression`` and, when encrypted, ``encryption``: ``dataKey`` =
  ``<key id>:<base64 of the AES key wrapped by RSA-OAEP>`` and ``aad`` (base64).
* ``.log``: the segment cut into chunks of ``originalChunkSize`` bytes, each transformed
  alone: zstd (one frame with its content size) when ``compression``, then AES-256-GCM
  (12-byte IV, then ciphertext and 16-byte tag) under the data key and the manifest's AAD.
* ``.indexes``: offset, time, producer-snapshot, leader-epoch and (optional) transaction
  index one after the other, each encrypted alone when the segment is, never compressed.

The RSA wrap is ``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding`` of BouncyCastle: OAEP with
SHA3-512 as both the label hash and MGF1's hash. OpenSSL's OAEP (behind ``cryptography``)
refuses SHA-3, so the OAEP decoding (RFC 8017, 7.1.2) is here, on ``cryptography``'s RSA
private numbers. ``cryptography`` (the ``tier`` extra) reads the PEM and does AES-GCM.

Everything streams: one chunk in memory at a time, bounded by :data:`MAX_CHUNK`. Every error
is an :class:`~segtools.errors.InputError` of one line naming the object and byte position.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from segtools.errors import InputError, SchemaError
from segtools.formats.messages import UNKNOWN_TAGGED_FIELDS
from segtools.formats.tiered_storage import AIVEN_SEGMENT_CUSTOM_METADATA
from segtools.primitives.messages import read_message

LOG, INDEXES, MANIFEST = ".log", ".indexes", ".rsm-manifest"
SUFFIXES = (LOG, INDEXES, MANIFEST)
#: the manifest's ``segmentIndexes`` names, in the order the plugin concatenates them, and the
#: file suffix each has in a broker's (and LocalTieredStorage's) segment file set
INDEX_SUFFIX = {"offset": ".index", "timestamp": ".timeindex", "producerSnapshot": ".snapshot",
                "leaderEpoch": ".leader_epoch_checkpoint", "transaction": ".txnindex"}
IV_SIZE, TAG_SIZE = 12, 16
#: largest transformed chunk or index read into memory (the plugin's chunk.size is a few MiB;
#: a manifest claiming more is damaged or hostile)
MAX_CHUNK = 256 << 20
MAX_MANIFEST = 64 << 20

#: ``[prefix]<topic>-<topicId>/<partition>/<start>-<segmentId>.<suffix>``
KEY_RE = re.compile(r"^(?P<prefix>(?:.*/)?)(?P<topic>[^/]+)-(?P<tid>[A-Za-z0-9_-]{22})/"
                    r"(?P<part>\d+)/(?P<start>\d{20})-(?P<sid>[A-Za-z0-9_-]{22})"
                    r"(?P<suffix>\.log|\.indexes|\.rsm-manifest)$")


@dataclass(frozen=True)
class Chunk:
    """One chunk: where its plain bytes go and where its transformed bytes are."""

    number: int
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


@dataclass(frozen=True)
class ChunkSizes:
    """The transformed size of each chunk, read from the manifest's index without
    materialising a list (a hostile manifest can claim two billion chunks): ``fixed``: every
    chunk ``size`` but the last ``last``; ``variable``: ``base`` plus a ``width``-byte
    big-endian value at ``at + i * width`` of ``packed``, the last one ``last``."""

    count: int
    size: int = 0
    last: int = 0
    packed: bytes = b""
    at: int = 0
    width: int = 0

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> int:
        if not 0 <= i < self.count:
            raise IndexError(i)
        if i == self.count - 1:
            return self.last
        if not self.packed:
            return self.size
        p = self.at + i * self.width
        return self.size + int.from_bytes(self.packed[p:p + self.width], "big")

    def __iter__(self) -> Iterator[int]:
        return (self[i] for i in range(self.count))

    def total(self) -> int:
        if not self.packed:
            return self.size * max(self.count - 1, 0) + (self.last if self.count else 0)
        return sum(self)


@dataclass(frozen=True)
class Encryption:
    key_id: str
    wrapped_key: bytes
    aad: bytes


@dataclass(frozen=True)
class Manifest:
    """A parsed ``.rsm-manifest``."""

    name: str
    original_chunk_size: int
    original_file_size: int
    #: transformed size of every chunk, in order
    transformed_sizes: ChunkSizes
    index_kind: str
    compression: bool
    encryption: Encryption | None
    #: index name -> (position, size) inside the ``.indexes`` object
    indexes: dict[str, tuple[int, int]]
    #: the plugin's copy of the segment's metadata (read-only in its manifest), if present
    segment: dict[str, Any] | None

    def chunks(self) -> Iterator[Chunk]:
        orig = trans = 0
        n = len(self.transformed_sizes)
        for i, size in enumerate(self.transformed_sizes):
            last = i == n - 1
            osize = (self.original_file_size - orig) if last else self.original_chunk_size
            yield Chunk(i, orig, osize, trans, size)
            orig += osize
            trans += size

    @property
    def log_object_size(self) -> int:
        return self.transformed_sizes.total()

    @property
    def indexes_object_size(self) -> int:
        return max((p + s for p, s in self.indexes.values()), default=0)


def _int(obj: dict[str, Any], key: str, name: str, where: str) -> int:
    v = obj.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 31:
        raise InputError(f"{name}: not an Aiven segment manifest: {where}{key} is "
                         f"{'missing' if v is None else repr(v)[:40]}, not a non-negative int32")
    return v


def _b64(text: Any, name: str, what: str) -> bytes:
    if not isinstance(text, str):
        raise InputError(f"{name}: not an Aiven segment manifest: {what} is not a string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(f"{name}: {what} is not valid base64") from None


def decode_chunk_sizes(packed: bytes, name: str) -> ChunkSizes:
    """The plugin's packed int list: count (int32), then when count > 1 a base (int32), a
    width in bytes (1..4) and count-1 big-endian offsets from the base of that width; the last
    value always as a full int32."""
    def need(n: int, at: int) -> None:
        if at + n > len(packed):
            raise InputError(f"{name}: variable chunk index truncated at byte {at} of "
                             f"{len(packed)} (decompressed)")

    need(4, 0)
    count = int.from_bytes(packed[:4], "big", signed=True)
    if count < 0:
        raise InputError(f"{name}: variable chunk index holds a negative count {count}")
    if count == 0:
        return ChunkSizes(0)
    if count == 1:
        need(4, 4)
        return ChunkSizes(1, last=int.from_bytes(packed[4:8], "big", signed=True))
    need(5, 4)
    base = int.from_bytes(packed[4:8], "big", signed=True)
    width = packed[8]
    if not 1 <= width <= 4:
        raise InputError(f"{name}: variable chunk index has {width} bytes per value (1..4)")
    need((count - 1) * width + 4, 9)
    end = 9 + (count - 1) * width
    # the packed bytes stay as they are (at most 16 MiB): one size is read when needed
    return ChunkSizes(count, base, int.from_bytes(packed[end:end + 4], "big", signed=True),
                      packed, 9, width)


def parse_manifest(data: bytes, name: str) -> Manifest:
    """The manifest's JSON (``name`` says which object, for errors)."""
    import zstandard

    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        # RecursionError: arrays nested thousands deep
        raise InputError(f"{name}: not an Aiven segment manifest: not JSON "
                         f"({str(e) or type(e).__name__})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{name}: not an Aiven segment manifest: not a JSON object")
    if str(doc.get("version")) != "1":
        raise InputError(f"{name}: Aiven segment manifest version {doc.get('version')!r} "
                         "is not known (only \"1\")")
    ci = doc.get("chunkIndex")
    if not isinstance(ci, dict):
        raise InputError(f"{name}: not an Aiven segment manifest: no chunkIndex object")
    chunk = _int(ci, "originalChunkSize", name, "chunkIndex.")
    size = _int(ci, "originalFileSize", name, "chunkIndex.")
    if chunk == 0:
        raise InputError(f"{name}: chunkIndex.originalChunkSize is 0")
    count = -(-size // chunk)
    kind = ci.get("type")
    if kind == "fixed":
        t, final = (_int(ci, "transformedChunkSize", name, "chunkIndex."),
                    _int(ci, "finalTransformedChunkSize", name, "chunkIndex."))
        if max(t, final) > MAX_CHUNK:
            raise InputError(f"{name}: a chunk of {max(t, final)} bytes exceeds the "
                             f"{MAX_CHUNK >> 20} MiB this reader holds in memory")
        sizes = ChunkSizes(count, t, final)
    elif kind == "variable":
        packed = _b64(ci.get("transformedChunks"), name, "chunkIndex.transformedChunks")
        try:
            raw = zstandard.ZstdDecompressor().decompress(packed, max_output_size=16 << 20)
        except zstandard.ZstdError as e:
            raise InputError(f"{name}: chunkIndex.transformedChunks is not a zstd frame: {e}"
                             ) from None
        sizes = decode_chunk_sizes(raw, name)
        if len(sizes) != count:
            raise InputError(f"{name}: the variable chunk index lists {len(sizes)} chunks, the "
                             f"file size {size} in chunks of {chunk} makes {count}")
        if sizes.size < 0 or sizes.last < 0:
            raise InputError(f"{name}: the variable chunk index holds a negative size")
    else:
        raise InputError(f"{name}: chunkIndex.type {kind!r} is not known (fixed, variable)")
    si = doc.get("segmentIndexes")
    if not isinstance(si, dict):
        raise InputError(f"{name}: not an Aiven segment manifest: no segmentIndexes object")
    indexes: dict[str, tuple[int, int]] = {}
    for key in INDEX_SUFFIX:
        entry = si.get(key)
        if entry is None and key == "transaction":
            continue
        if not isinstance(entry, dict):
            raise InputError(f"{name}: not an Aiven segment manifest: segmentIndexes.{key} "
                             "is missing")
        indexes[key] = (_int(entry, "position", name, f"segmentIndexes.{key}."),
                        _int(entry, "size", name, f"segmentIndexes.{key}."))
        if indexes[key][1] > MAX_CHUNK:
            raise InputError(f"{name}: segmentIndexes.{key} of {indexes[key][1]} bytes exceeds "
                             f"the {MAX_CHUNK >> 20} MiB this reader holds in memory")
    comp = doc.get("compression")
    if not isinstance(comp, bool):
        raise InputError(f"{name}: not an Aiven segment manifest: compression is not a boolean")
    enc = doc.get("encryption")
    encryption = None
    if enc is not None:
        if not isinstance(enc, dict):
            raise InputError(f"{name}: encryption is not a JSON object")
        dk = enc.get("dataKey")
        if not isinstance(dk, str) or dk.count(":") != 1 or dk.startswith(":"):
            raise InputError(f"{name}: encryption.dataKey is not '<key id>:<base64>'")
        key_id, wrapped = dk.split(":")
        encryption = Encryption(key_id, _b64(wrapped, name, "encryption.dataKey"),
                                _b64(enc.get("aad"), name, "encryption.aad"))
    seg = doc.get("remoteLogSegmentMetadata")
    return Manifest(name, chunk, size, sizes, kind, comp, encryption, indexes,
                    seg if isinstance(seg, dict) else None)


def decode_custom_metadata(raw: bytes | None) -> dict[str, Any]:
    """The plugin's custom metadata in a segment's ``__remote_log_metadata`` record (its
    declaration: ``formats/tiered_storage.py``): the fields it holds, by name (``remote_size``,
    ``object_prefix``, ``object_key``); unknown tags come back as ``tag_N`` with the value in
    hex. A value that does not decode is an InputError naming the field and Kafka's reason."""
    if not raw:
        return {}
    try:
        decoded, _end = read_message(AIVEN_SEGMENT_CUSTOM_METADATA, raw, 0)
    except SchemaError as exc:
        at = f" at {exc.field}" if exc.field and exc.field != AIVEN_SEGMENT_CUSTOM_METADATA.name else ""
        raise InputError(f"custom metadata ({len(raw)} bytes) does not decode{at}: {exc.reason}") from None
    out: dict[str, Any] = {k: v for k, v in decoded.items()
                           if k != UNKNOWN_TAGGED_FIELDS and v is not None}
    out.update((f"tag_{tag}", body.hex()) for tag, body in decoded.get(UNKNOWN_TAGGED_FIELDS, []))
    return out


def object_key(custom: dict[str, Any], main_path: str) -> str:
    """Where the plugin put a segment's objects (without suffix): the custom metadata's
    prefix and key when recorded, else the default main path."""
    return str(custom.get("object_prefix", "")) + str(custom.get("object_key", main_path))


class PrivateKey:
    """An RSA private key from a PEM file (PKCS#8, as the plugin reads it; PKCS#1 too)."""

    def __init__(self, path: str) -> None:
        try:
            from cryptography.hazmat.primitives.asymmetric import rsa
            from cryptography.hazmat.primitives.serialization import load_pem_private_key
        except ImportError:
            raise InputError("reading encrypted Aiven objects needs the cryptography package "
                             "(pip install 'segtools[tier]')") from None
        try:
            with open(path, "rb") as f:
                pem = f.read(1 << 20)
        except OSError as e:
            raise InputError(f"{path}: cannot read the private key: {e.strerror}") from None
        try:
            key = load_pem_private_key(pem, password=None)
        except (ValueError, TypeError) as e:
            raise InputError(f"{path}: not an unencrypted PEM private key ({e})") from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise InputError(f"{path}: not an RSA private key")
        nums = key.private_numbers()
        self.path = path
        self._n = nums.public_numbers.n
        # the CRT parameters: four times fewer multiplications than c^d mod n
        self._p, self._q = nums.p, nums.q
        self._dp, self._dq, self._qinv = nums.dmp1, nums.dmq1, nums.iqmp
        self._k = (self._n.bit_length() + 7) // 8

    def unwrap(self, wrapped: bytes, h: Callable[..., Any] = hashlib.sha3_512) -> bytes | None:
        """The data key, or None when this key did not wrap it: RSA-OAEP with the hash ``h``
        for the label and MGF1 (the plugin's: SHA3-512). Not constant-time: this reads
        evidence offline, there is no padding oracle to guard."""
        hlen = h().digest_size
        if len(wrapped) != self._k or self._k < 2 * hlen + 2:
            return None
        c = int.from_bytes(wrapped, "big")
        if c >= self._n:
            return None
        m1, m2 = pow(c, self._dp, self._p), pow(c, self._dq, self._q)
        m = m2 + (self._qinv * (m1 - m2) % self._p) * self._q
        em = m.to_bytes(self._k, "big")
        masked_seed, masked_db = em[1:1 + hlen], em[1 + hlen:]
        seed = _xor(masked_seed, mgf1(masked_db, hlen, h))
        db = _xor(masked_db, mgf1(seed, len(masked_db), h))
        if em[0] != 0 or db[:hlen] != h(b"").digest():
            return None
        rest = db[hlen:].lstrip(b"\x00")
        return rest[1:] if rest[:1] == b"\x01" else None


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


def mgf1(seed: bytes, length: int, h: Callable[..., Any]) -> bytes:
    """RFC 8017 B.2.1 with the hash ``h`` (a hashlib constructor)."""
    out = bytearray()
    counter = 0
    while len(out) < length:
        out += h(seed + counter.to_bytes(4, "big")).digest()
        counter += 1
    return bytes(out[:length])


def data_key(manifest: Manifest, key: PrivateKey | None) -> bytes | None:
    """The segment's AES key (None when the segment is not encrypted)."""
    enc = manifest.encryption
    if enc is None:
        return None
    if key is None:
        raise InputError(f"{manifest.name}: encrypted (key id {enc.key_id!r}): give the "
                         "plugin's RSA private key (--private-key PEM)")
    plain = key.unwrap(enc.wrapped_key)
    if plain is None or len(plain) not in (16, 24, 32):
        raise InputError(f"{manifest.name}: the data key (key id {enc.key_id!r}) does not "
                         f"unwrap with {key.path}: wrong private key, or a damaged manifest")
    return plain


def _read_exact(src: BinaryIO, n: int) -> bytes:
    parts = []
    while n > 0:
        b = src.read(n)
        if not b:
            break
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def _detransform(body: bytes, dkey: bytes | None, aad: bytes, compressed: bool,
                 expect: int, where: str) -> bytes:
    if dkey is not None:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if len(body) < IV_SIZE + TAG_SIZE:
            raise InputError(f"{where}: {len(body)} bytes, too short for IV and GCM tag")
        try:
            body = AESGCM(dkey).decrypt(body[:IV_SIZE], body[IV_SIZE:], aad)
        except InvalidTag:
            raise InputError(f"{where}: AES-GCM tag mismatch (the bytes were changed, or "
                             "another data key encrypted them)") from None
    if compressed:
        import zstandard

        try:
            claimed = zstandard.frame_content_size(body)
        except zstandard.ZstdError as e:
            raise InputError(f"{where}: not a zstd frame ({e})") from None
        if claimed not in (-1, expect):
            # the frame would allocate what it claims: refuse before decompressing
            raise InputError(f"{where}: the zstd frame says {claimed} bytes, the manifest "
                             f"says {expect}")
        try:
            body = zstandard.ZstdDecompressor().decompress(body, max_output_size=expect)
        except zstandard.ZstdError as e:
            raise InputError(f"{where}: zstd: {e}") from None
    if len(body) != expect:
        raise InputError(f"{where}: decodes to {len(body)} bytes, the manifest says {expect}")
    return body


def iter_log(src: BinaryIO, manifest: Manifest, dkey: bytes | None,
             name: str) -> Iterator[bytes]:
    """The plain segment bytes of the ``.log`` object ``src`` (named ``name``), one chunk
    at a time; the object must end where the chunk index ends."""
    aad = manifest.encryption.aad if manifest.encryption else b""
    for c in manifest.chunks():
        where = (f"{name}: chunk {c.number} at byte {c.transformed_position} "
                 f"({c.transformed_size} bytes)")
        if c.transformed_size > MAX_CHUNK:
            raise InputError(f"{where}: larger than the {MAX_CHUNK >> 20} MiB this reader "
                             "holds in memory (a damaged chunk index)")
        body = _read_exact(src, c.transformed_size)
        if len(body) < c.transformed_size:
            raise InputError(f"{where}: truncated, the object ends at byte "
                             f"{c.transformed_position + len(body)}")
        yield _detransform(body, dkey, aad, manifest.compression, c.original_size, where)
    if src.read(1):
        raise InputError(f"{name}: bytes after the last chunk, at byte "
                         f"{manifest.log_object_size}: the manifest is of another upload")


def iter_indexes(src: BinaryIO, manifest: Manifest, dkey: bytes | None,
                 name: str) -> Iterator[tuple[str, bytes]]:
    """(file suffix, plain bytes) of each index in the ``.indexes`` object ``src``."""
    aad = manifest.encryption.aad if manifest.encryption else b""
    pos = 0
    for key, (position, size) in sorted(manifest.indexes.items(), key=lambda kv: kv[1][0]):
        if position != pos:
            raise InputError(f"{manifest.name}: segmentIndexes.{key} starts at byte {position}, "
                             f"the one before ends at {pos}")
        body = _read_exact(src, size)
        where = f"{name}: {key} index at byte {position} ({size} bytes)"
        if len(body) < size:
            raise InputError(f"{where}: truncated, the object ends at byte {pos + len(body)}")
        pos += size
        if size == 0:
            yield INDEX_SUFFIX[key], b""
            continue
        if dkey is not None:
            from cryptography.exceptions import InvalidTag
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM

            try:
                body = AESGCM(dkey).decrypt(body[:IV_SIZE], body[IV_SIZE:], aad)
            except (InvalidTag, ValueError):
                raise InputError(f"{where}: AES-GCM tag mismatch (the bytes were changed, or "
                                 "another data key encrypted them)") from None
        yield INDEX_SUFFIX[key], body
    if src.read(1):
        raise InputError(f"{name}: bytes after the last index, at byte {pos}")


Opener = Callable[[str], BinaryIO]


def read_manifest(opener: Opener, base: str, *, display: str | None = None) -> Manifest:
    """The manifest object ``base + .rsm-manifest``, parsed."""
    shown = (display if display is not None else base) + MANIFEST
    with opener(base + MANIFEST) as f:
        raw = f.read(MAX_MANIFEST + 1)
    if len(raw) > MAX_MANIFEST:
        raise InputError(f"{shown}: larger than {MAX_MANIFEST >> 20} MiB, not a segment manifest")
    return parse_manifest(raw, shown)


def decode_segment(opener: Opener, base: str, out_prefix: str, key: PrivateKey | None,
                   *, display: str | None = None, manifest: Manifest | None = None) -> Manifest:
    """Read the objects ``base + suffix`` through ``opener`` and write the plain segment and
    its indexes as new files ``out_prefix + .log/.index/...`` (never over an existing file).
    ``display`` names the objects in errors (``base`` when not given)."""
    shown = display if display is not None else base
    if manifest is None:
        manifest = read_manifest(opener, base, display=display)
    dkey = data_key(manifest, key)
    with opener(base + LOG) as src, open(out_prefix + LOG, "xb") as dst:
        for plain in iter_log(src, manifest, dkey, shown + LOG):
            dst.write(plain)
    with opener(base + INDEXES) as src:
        for suffix, plain in iter_indexes(src, manifest, dkey, shown + INDEXES):
            with open(out_prefix + suffix, "xb") as dst:
                dst.write(plain)
    return manifest


def local_opener(root: str) -> Opener:
    """Objects as files under the local folder ``root`` (keys use ``/``)."""
    def open_(key: str) -> BinaryIO:
        path = os.path.join(root, *key.split("/"))
        try:
            return open(path, "rb")
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror}") from None
    return open_
