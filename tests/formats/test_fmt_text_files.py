"""Text file declarations (checkpoints, partition.metadata, meta.properties lines, quorum-state)
rebuild the real broker files byte for byte; names follow FORMATS.md section 11."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from construct import ConstructError
from fmt_helpers import KRAFT, ZK_FINAL, roundtrip

from segtools.formats.checkpoints import LeaderEpochCheckpointFile, OffsetCheckpointFile
from segtools.formats.names import (
    KRAFT_SNAPSHOT_RE,
    SEGMENT_FILE_RE,
    SPECIAL_PARTITION_DIR_RE,
    filename_prefix_from_offset,
)
from segtools.formats.primitives import base64url_to_uuid, uuid_to_base64url
from segtools.formats.root_files import (
    METADATA_TOPIC_ID,
    ZERO_UUID,
    JsonDocument,
    PartitionMetadataText,
    PropertiesLines,
)


def test_every_real_offset_checkpoint_roundtrips(realdata: Path) -> None:
    files = [p for p in realdata.rglob("*-offset-checkpoint")]
    assert len(files) >= 9
    for path in files:
        data = path.read_bytes()
        cp = roundtrip(OffsetCheckpointFile, data)
        assert cp.version == 0
        assert cp.count == len(cp.entries) == len(data.splitlines()) - 2


def test_real_offset_checkpoint_values(realdata: Path) -> None:
    cp = OffsetCheckpointFile.parse((realdata / KRAFT / "recovery-point-offset-checkpoint").read_bytes())
    assert cp.count == 151
    assert {"topic": "products", "partition": 0, "offset": 17097} in cp.entries


def test_every_real_leader_epoch_checkpoint_roundtrips(realdata: Path) -> None:
    files = list(realdata.rglob("leader-epoch-checkpoint"))
    assert len(files) > 100
    for path in files:
        roundtrip(LeaderEpochCheckpointFile, path.read_bytes())
    cp = LeaderEpochCheckpointFile.parse(
        (realdata / KRAFT / "__cluster_metadata-0/leader-epoch-checkpoint").read_bytes())
    assert cp.entries == [{"leader_epoch": 1, "start_offset": 0}]


def test_checkpoint_grammar_rejects_malformed() -> None:
    for bad in (b"0\n1\nfoo 0\n", b"x\n0\n", b"0\n2\nt 0 1\n", b"0\n1\nt 0 1 2\n", b"0\n1\nt 5_0 1\n"):
        with pytest.raises(ConstructError):
            OffsetCheckpointFile.parse(bad)


def test_every_real_partition_metadata_roundtrips(realdata: Path) -> None:
    files = list(realdata.rglob("partition.metadata"))
    assert len(files) >= 150
    for path in files:
        data = path.read_bytes()
        pm = roundtrip(PartitionMetadataText, data)
        assert not data.endswith(b"\n")
        assert base64url_to_uuid(pm.topic_id).bytes != bytes(16)
    meta = PartitionMetadataText.parse((realdata / KRAFT / "__cluster_metadata-0/partition.metadata").read_bytes())
    assert meta.topic_id == METADATA_TOPIC_ID


@pytest.mark.parametrize("rel", [KRAFT + "/meta.properties", ZK_FINAL + "/meta.properties",
                                 "kafka-2.0-zk-small/logdir/meta.properties"])
def test_real_meta_properties_lines_roundtrip(realdata: Path, rel: str) -> None:
    lines = roundtrip(PropertiesLines, (realdata / rel).read_bytes())
    assert lines[0].startswith("#")
    assert any(line.startswith("version=") for line in lines)


def test_real_quorum_state_roundtrips(realdata: Path) -> None:
    state = roundtrip(JsonDocument, (realdata / KRAFT / "__cluster_metadata-0/quorum-state").read_bytes())
    assert state["leaderId"] == 1 and state["data_version"] == 0


def test_uuid_base64url_helpers() -> None:
    assert uuid_to_base64url(bytes(16)) == ZERO_UUID
    assert uuid_to_base64url(uuid.UUID(int=1)) == METADATA_TOPIC_ID
    assert base64url_to_uuid("AAECAwQFBgcICQoLDA0ODw").bytes == bytes(range(16))
    u = uuid.UUID("5ba20e63-3fbb-4b7d-9fa7-c68c2e4e5d43")
    assert base64url_to_uuid(uuid_to_base64url(u)) == u
    assert uuid_to_base64url(b"\xfb" * 16) == "-_v7-_v7-_v7-_v7-_v7-w"     # URL-safe alphabet
    for bad in ("AAAA", "AAAAAAAAAAAAAAAAAAAA!!", "AAAAAAAAAAAAAAAAAAAAAB"):
        with pytest.raises(ValueError):
            base64url_to_uuid(bad)


def test_names() -> None:
    assert filename_prefix_from_offset(123456) == "00000000000000123456"
    m = SEGMENT_FILE_RE.match("00000000000000000000.log.deleted")
    assert m and m.group("kind") == ".log" and m.group("extra") == ".deleted"
    assert SEGMENT_FILE_RE.match("0000000000000000000.log") is None        # 19 digits
    assert SEGMENT_FILE_RE.match("00000000000000000000.log.tmp") is None
    m = KRAFT_SNAPSHOT_RE.match("00000000000000000100-0000000001.checkpoint")
    assert m and (int(m.group("end_offset")), int(m.group("epoch"))) == (100, 1)
    m = KRAFT_SNAPSHOT_RE.match("00000000000000000100-0000000001-abc123.checkpoint.part")
    assert m and m.group("extra") == ".part"
    m = SPECIAL_PARTITION_DIR_RE.match("my-topic-3.0123456789abcdef0123456789abcdef-delete")
    assert m and m.groups() == ("my-topic", "3", "0123456789abcdef0123456789abcdef", "delete")
