"""An encoder of Aiven's tiered-storage object format, written for the tests from the plugin's
published format (its manifest, chunk index, transform and custom-metadata classes, read on
GitHub: aiven/tiered-storage-for-apache-kafka), not from segtools' reader. The plugin is not on
Maven Central, so these are the test vectors: what this writes, segtools.tier.aiven must read
back to the original bytes.

What the plugin does, as written here:
* the ``.log`` object: the segment in chunks of ``chunk_size`` bytes, each zstd-compressed
  alone (a frame that records its content size) when compression is on, then each encrypted
  alone with AES-256-GCM: a fresh 12-byte IV, then ciphertext and 16-byte tag, AAD = the
  segment's random 32-byte AAD;
* the chunk index: ``fixed`` when every transformed chunk but the last has one size (no
  compression), else ``variable``: the transformed sizes packed (count; base, width and
  offsets; last value in full; big endian), zstd-compressed with the content size, base64;
* the ``.indexes`` object: offset, time, producer snapshot, leader epoch, [transaction]
  indexes concatenated, each encrypted alone when encryption is on (never compressed);
* the data key wrapped with RSA-OAEP, SHA3-512 for the hash and MGF1 (BouncyCastle's
  ``RSA/NONE/OAEPWithSHA3-512AndMGF1Padding``), written ``<key id>:<base64>``;
* the custom metadata: Kafka tagged fields 0 remote_size (varlong), 1 object_prefix and
  2 object_key (compact strings).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

INDEX_ORDER = (("offset", ".index"), ("timestamp", ".timeindex"),
               ("producerSnapshot", ".snapshot"), ("leaderEpoch", ".leader_epoch_checkpoint"),
               ("transaction", ".txnindex"))


def _zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_content_size=True).compress(data)


def pack_sizes(values: list[int]) -> bytes:
    out = len(values).to_bytes(4, "big")
    if not values:
        return out
    if len(values) == 1:
        return out + values[0].to_bytes(4, "big")
    head = values[:-1]
    base = min(head)
    width = max(next(w for w in (1, 2, 3, 4) if v - base < 1 << (8 * w)) for v in head)
    out += base.to_bytes(4, "big") + bytes([width])
    out += b"".join((v - base).to_bytes(width, "big") for v in head)
    return out + values[-1].to_bytes(4, "big")


def _mgf1(seed: bytes, n: int) -> bytes:
    out = b""
    i = 0
    while len(out) < n:
        out += hashlib.sha3_512(seed + i.to_bytes(4, "big")).digest()
        i += 1
    return out[:n]


def oaep_sha3_wrap(public_key: Any, message: bytes) -> bytes:
    """RSAES-OAEP encryption (RFC 8017 7.1.1), SHA3-512 for the hash and MGF1, empty label."""
    nums = public_key.public_numbers()
    k = (nums.n.bit_length() + 7) // 8
    hlen = 64
    db = hashlib.sha3_512(b"").digest() + b"\x00" * (k - len(message) - 2 * hlen - 2) \
        + b"\x01" + message
    seed = os.urandom(hlen)
    masked_db = bytes(a ^ b for a, b in zip(db, _mgf1(seed, len(db))))
    masked_seed = bytes(a ^ b for a, b in zip(seed, _mgf1(masked_db, hlen)))
    m = int.from_bytes(b"\x00" + masked_seed + masked_db, "big")
    return pow(m, nums.e, nums.n).to_bytes(k, "big")


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def custom_metadata(remote_size: int | None = None, prefix: str | None = None,
                    key: str | None = None) -> bytes:
    fields = []
    if remote_size is not None:
        fields.append((0, _uvarint((remote_size << 1) ^ (remote_size >> 63))))
    for tag, text in ((1, prefix), (2, key)):
        if text is not None:
            raw = text.encode()
            fields.append((tag, _uvarint(len(raw) + 1) + raw))
    return _uvarint(len(fields)) + b"".join(_uvarint(t) + _uvarint(len(v)) + v for t, v in fields)


@dataclass
class Encoded:
    base: str            # object key without suffix
    sizes: dict[str, int]
    manifest: dict[str, Any]


def encode_segment(root: Path, base: str, log: bytes, indexes: dict[str, bytes], *,
                   chunk_size: int = 4096, compression: bool = False,
                   public_key: Any = None, key_id: str = "key1",
                   segment_metadata: dict[str, Any] | None = None) -> Encoded:
    """Write ``root/base.{log,indexes,rsm-manifest}``. ``indexes``: file suffix -> bytes
    (``.txnindex`` optional)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    dkey = os.urandom(32) if public_key is not None else None
    aad = os.urandom(32)

    def encrypt(b: bytes) -> bytes:
        if dkey is None:
            return b
        iv = os.urandom(12)
        return iv + AESGCM(dkey).encrypt(iv, b, aad)

    chunks = [log[i:i + chunk_size] for i in range(0, len(log), chunk_size)]
    transformed = [encrypt(_zstd(c) if compression else c) for c in chunks]
    sizes = [len(t) for t in transformed]
    ci: dict[str, Any]
    if compression:
        ci = {"type": "variable", "originalChunkSize": chunk_size, "originalFileSize": len(log),
              "transformedChunks": base64.b64encode(_zstd(pack_sizes(sizes))).decode()}
    else:
        ci = {"type": "fixed", "originalChunkSize": chunk_size, "originalFileSize": len(log),
              "transformedChunkSize": sizes[0] if len(sizes) > 1 else (
                  chunk_size + (28 if dkey else 0)),
              "finalTransformedChunkSize": sizes[-1] if sizes else 0}
    seg_idx: dict[str, Any] = {}
    blob = b""
    for name, suffix in INDEX_ORDER:
        if suffix not in indexes:
            seg_idx[name] = None
            continue
        t = encrypt(indexes[suffix]) if indexes[suffix] else b""
        seg_idx[name] = {"position": len(blob), "size": len(t)}
        blob += t
    manifest: dict[str, Any] = {"version": "1", "chunkIndex": ci, "segmentIndexes": seg_idx,
                                "compression": compression}
    if dkey is not None:
        wrapped = oaep_sha3_wrap(public_key, dkey)
        manifest["encryption"] = {"dataKey": f"{key_id}:{base64.b64encode(wrapped).decode()}",
                                  "aad": base64.b64encode(aad).decode()}
    if segment_metadata is not None:
        manifest["remoteLogSegmentMetadata"] = segment_metadata
    out = {".log": b"".join(transformed), ".indexes": blob,
           ".rsm-manifest": json.dumps(manifest).encode()}
    path = root.joinpath(*base.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    for suffix, data in out.items():
        Path(str(path) + suffix).write_bytes(data)
    return Encoded(base, {k: len(v) for k, v in out.items()}, manifest)
