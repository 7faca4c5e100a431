"""Controller metadata dirs built at test time with a known history (the oracle is the
history chosen here: which node wrote what, in which epoch)."""

from __future__ import annotations

import base64
import json
import os
import struct

from segtools.internal_topics.metadata import encode_record
from segtools.primitives.crc import crc32c
from segtools.writer import NewRecord, build_batch

_ATTR_POS, _CRC_POS, _CONTROL = 21, 17, 0x20


def _leader_change_value(leader: int, voters: list[int], granting: list[int]) -> bytes:
    def arr(ids: list[int]) -> bytes:
        # compact array: uvarint length+1 (all test sizes fit one byte), voterId + no tags
        return bytes([len(ids) + 1]) + b"".join(struct.pack(">i", i) + b"\x00" for i in ids)
    return struct.pack(">hi", 0, leader) + arr(voters) + arr(granting) + b"\x00"


def leader_change(offset: int, epoch: int, leader: int, voters: list[int],
                  granting: list[int]) -> bytes:
    """A LEADER_CHANGE control batch (control type 2) as the new leader appends it."""
    key = struct.pack(">hh", 0, 2)
    raw = bytearray(build_batch([NewRecord(key, _leader_change_value(leader, voters, granting),
                                           (), 1000 + offset)],
                                base_offset=offset, partition_leader_epoch=epoch))
    attrs = struct.unpack_from(">h", raw, _ATTR_POS)[0] | _CONTROL
    struct.pack_into(">h", raw, _ATTR_POS, attrs)
    struct.pack_into(">I", raw, _CRC_POS, crc32c(bytes(raw[_ATTR_POS:])))
    return bytes(raw)


def _control_batch(offset: int, epoch: int, control_type: int, value: bytes,
                   timestamp: int) -> bytes:
    raw = bytearray(build_batch([NewRecord(struct.pack(">hh", 0, control_type), value, (),
                                           timestamp)],
                                base_offset=offset, partition_leader_epoch=epoch))
    attrs = struct.unpack_from(">h", raw, _ATTR_POS)[0] | _CONTROL
    struct.pack_into(">h", raw, _ATTR_POS, attrs)
    struct.pack_into(">I", raw, _CRC_POS, crc32c(bytes(raw[_ATTR_POS:])))
    return bytes(raw)


def voters_record(offset: int, epoch: int, voters: list[tuple[int, str]]) -> bytes:
    """A VotersRecord control batch (control type 6, version 0): each voter's id and
    directory id (Kafka base64url text), no endpoints, kraft.version 0-1."""
    body = struct.pack(">h", 0) + bytes([len(voters) + 1])
    for vid, did in voters:
        uid = base64.urlsafe_b64decode(did + "==")
        # voterId, directory uuid, endpoints (empty compact array), KRaftVersionFeature
        # {min 0, max 1, no tags}, no tags
        body += struct.pack(">i", vid) + uid + b"\x01" + struct.pack(">hh", 0, 1) + b"\x00\x00"
    return _control_batch(offset, epoch, 6, body + b"\x00", 1000 + offset)


def feature_level(offset: int, epoch: int, level: int) -> bytes:
    """A FeatureLevelRecord batch setting metadata.version to ``level``."""
    value = encode_record("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version",
                                                      "featureLevel": level})
    return build_batch([NewRecord(None, value, (), 1000 + offset)], base_offset=offset,
                       partition_leader_epoch=epoch)


def data(offset: int, epoch: int, tag: str = "") -> bytes:
    """A one-record metadata batch (a NoOpRecord; ``tag`` varies the timestamp so two leaders'
    batches at one offset differ in bytes)."""
    value = encode_record("NO_OP_RECORD", 0, {})
    return build_batch([NewRecord(None, value, (), 5000 + offset + 7 * len(tag))],
                       base_offset=offset, partition_leader_epoch=epoch)


def controller(root: str, name: str, node_id: int, batches: list[bytes], *,
               quorum_state: dict[str, object] | None, cluster_id: str = "q1cluster-AAAAAAAAAAAA"
               ) -> str:
    """Write ``root/name``: meta.properties, __cluster_metadata-0/<log>, quorum-state."""
    top = os.path.join(root, name)
    pdir = os.path.join(top, "__cluster_metadata-0")
    os.makedirs(pdir)
    with open(os.path.join(top, "meta.properties"), "w") as fh:
        fh.write(f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n")
    with open(os.path.join(pdir, "00000000000000000000.log"), "wb") as fh:
        fh.write(b"".join(batches))
    if quorum_state is not None:
        with open(os.path.join(pdir, "quorum-state"), "w") as fh:
            json.dump(quorum_state, fh)
    return top


def qs(epoch: int, leader: int, voted: int = -1) -> dict[str, object]:
    return {"leaderId": leader, "leaderEpoch": epoch, "votedId": voted,
            "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA", "data_version": 1}


def failover(root: str, *, node3_leader: int = 2, node3_voted: int = -1,
             node3_state: bool = True) -> list[str]:
    """Node 1 leads epoch 1 (offsets 0-5 reach everyone), appends 6-8 alone and dies; node 2
    wins epoch 2 with votes 2 and 3 and writes 6-9 (LEADER_CHANGE at 6) on nodes 2 and 3."""
    common = [leader_change(0, 1, 1, [1, 2, 3], [1, 2])] + [data(o, 1) for o in range(1, 6)]
    old = common + [data(o, 1, "old") for o in range(6, 9)]
    new2 = common + [leader_change(6, 2, 2, [1, 2, 3], [2, 3])] + [data(o, 2) for o in range(7, 10)]
    new3 = common + [leader_change(6, 2, node3_leader, [1, 2, 3], [2, 3])] + \
        [data(o, 2) for o in range(7, 10)]
    return [controller(root, "c1", 1, old, quorum_state=qs(1, 1)),
            controller(root, "c2", 2, new2, quorum_state=qs(2, 2, 2)),
            controller(root, "c3", 3, new3,
                       quorum_state=qs(2, 2, node3_voted) if node3_state else None)]
