"""segtools.files.checkpoints: real broker files read (values checked with a plain split), written back
byte for byte; Kafka's error rules with line numbers; atomic tmp + rename writes."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import segtools.files.checkpoints as cps
from segtools.errors import CheckpointFormatError, InputError, SegtoolsError
from segtools.files.checkpoints import (
    EpochEntry,
    base64url_to_uuid,
    read_clean_shutdown,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    read_quorum_state,
    uuid_to_base64url,
    write_leader_epoch_checkpoint,
    write_meta_properties,
    write_offset_checkpoint,
    write_partition_metadata,
    write_quorum_state,
)

KRAFT = "kafka-3.6-kraft-flink-stack/logdir"
ZK = "kafka-2.5-zk-first-topic/final"


def _plain_entries(path: Path) -> dict[tuple[str, int], int]:
    lines = path.read_text().splitlines()
    return {(t, int(p)): int(o) for t, p, o in (line.split(" ") for line in lines[2:])}


@pytest.mark.parametrize("root", [KRAFT, ZK, "kafka-2.0-zk-small/logdir"])
def test_real_offset_checkpoints(realdata: Path, tmp_path: Path, root: str) -> None:
    files = sorted((realdata / root).glob("*-offset-checkpoint"))
    assert files
    for path in files:
        cp = read_offset_checkpoint(path)
        assert cp.version == 0
        assert cp.entries == _plain_entries(path)
        out = tmp_path / path.name
        write_offset_checkpoint(out, cp.entries)
        assert out.read_bytes() == path.read_bytes()


def test_known_checkpoint_values(realdata: Path) -> None:
    cp = read_offset_checkpoint(realdata / KRAFT / "recovery-point-offset-checkpoint")
    assert len(cp.entries) == 151
    assert cp.entries[("products", 0)] == 17097
    assert cp.entries[("products_keyed", 0)] == 27566
    assert read_offset_checkpoint(realdata / ZK / "cleaner-offset-checkpoint").entries == {}


def test_real_leader_epoch_checkpoints_roundtrip(realdata: Path, tmp_path: Path) -> None:
    files = sorted(realdata.rglob("leader-epoch-checkpoint"))
    assert len(files) > 200
    distinct = {}
    for path in files:
        entries = read_leader_epoch_checkpoint(path)
        lines = path.read_text().splitlines()
        assert entries == [EpochEntry(int(a), int(b)) for a, b in (line.split() for line in lines[2:])]
        distinct.setdefault(path.read_bytes(), (path, entries))
    assert len(distinct) > 3
    for path, entries in distinct.values():     # write back each distinct content (fsync is slow)
        out = tmp_path / "leader-epoch-checkpoint"
        write_leader_epoch_checkpoint(out, entries)
        assert out.read_bytes() == path.read_bytes()


def test_real_partition_metadata_roundtrip(realdata: Path, tmp_path: Path) -> None:
    files = sorted(realdata.rglob("partition.metadata"))
    assert len(files) >= 150
    for i, path in enumerate(files):
        pm = read_partition_metadata(path)
        assert path.read_text() == f"version: 0\ntopic_id: {pm.topic_id}"
        if i % 15:
            continue    # write back a sample (each write fsyncs)
        out = tmp_path / "partition.metadata"
        write_partition_metadata(out, pm.topic_uuid)
        assert out.read_bytes() == path.read_bytes()
    assert read_partition_metadata(realdata / KRAFT / "__cluster_metadata-0/partition.metadata").topic_uuid \
        == uuid.UUID(int=1)


def test_real_meta_properties(realdata: Path) -> None:
    assert read_meta_properties(realdata / KRAFT / "meta.properties") == \
        {"node.id": "1", "version": "1", "cluster.id": "MkU3OEVBNTcwNTJENDM2Qg"}
    assert read_meta_properties(realdata / ZK / "meta.properties") == \
        {"cluster.id": "lRaQCIBoRh2xRKLuP9CAQg", "version": "0", "broker.id": "0"}


def test_meta_properties_writer_reproduces_broker_file(realdata: Path, tmp_path: Path) -> None:
    import calendar
    import time as _time

    path = realdata / KRAFT / "meta.properties"
    stamp = path.read_text().splitlines()[1][1:]            # "Fri Apr 19 13:20:44 UTC 2024"
    now = calendar.timegm(_time.strptime(stamp, "%a %b %d %H:%M:%S UTC %Y"))
    out = tmp_path / "meta.properties"
    write_meta_properties(out, read_meta_properties(path), now=now)
    assert out.read_bytes() == path.read_bytes()


def test_real_quorum_state(realdata: Path, tmp_path: Path) -> None:
    path = realdata / KRAFT / "__cluster_metadata-0/quorum-state"
    state = read_quorum_state(path)
    assert state == {"clusterId": "", "leaderId": 1, "leaderEpoch": 1, "votedId": -1,
                     "appliedOffset": 0, "currentVoters": [{"voterId": 1}], "data_version": 0}
    write_quorum_state(tmp_path / "quorum-state", state)
    assert (tmp_path / "quorum-state").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("text, line, message", [
    ("1\n0\n", 1, "Unrecognised version:1, expected version: 0"),
    ("zero\n0\n", 1, "Malformed line"),
    ("0\nx\n", 2, "Malformed line"),
    ("0\n-1\n", 2, "Malformed line"),
    ("0\n2\nfoo 0 5\nbar 1\n", 4, "Malformed line in checkpoint file"),
    ("0\n1\nfoo zero 5\n", 3, "Malformed line"),
    ("0\n1\nfoo 0 5_0\n", 3, "Malformed line"),
    ("0\n3\nfoo 0 5\nbar 1 7\n", 4, "Expected [3] entries in checkpoint file"),
    ("0\n1\nfoo 0 5\nbar 1 7\n", 4, "Expected [1] entries"),
    # entry lines are parsed one by one before the count is compared: kafka-storage 4.3.1's
    # OffsetCheckpointFile.read on this file throws NumberFormatException for "x" (run by hand),
    # not "Expected [3] entries"
    ("0\n3\nfoo x 5\nbar 1 7\n", 3, "Malformed line in checkpoint file"),
])
def test_malformed_offset_checkpoint(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointFormatError) as info:
        read_offset_checkpoint(path)
    err = info.value
    assert message in str(err)
    assert err.field == f"line {line}" and err.path == str(path)
    assert err.position == len("\n".join(text.split("\n")[:line - 1])) + (1 if line > 1 else 0)


def test_kafka_reader_leniencies(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text("")
    assert read_offset_checkpoint(path).entries == {}
    path.write_text("0\n")
    assert read_offset_checkpoint(path).version == 0
    path.write_bytes(b"0\r\n2\r\nt\t0   5 \nt 0 6")    # CRLF, tabs, runs, no final newline
    assert read_offset_checkpoint(path).entries == {("t", 0): 6}
    path.write_bytes(b"0\n1\n\xff 0 1\n")
    with pytest.raises(CheckpointFormatError, match="UTF-8") as info:
        read_offset_checkpoint(path)
    assert info.value.position == 4 and info.value.field == "line 3"


def test_non_ascii_checkpoint_positions_in_linear_time(tmp_path: Path) -> None:
    # byte positions of non-ASCII lines used to be recomputed from the start of the file for
    # every line: a 2.4 MB file of such lines took minutes before reporting the first error.
    # Work is counted, not timed: the characters the line splitter slices out of the text
    # must stay linear in the text's length (the quadratic version sliced n^2/2).
    from segtools.formats.text_lines import kafka_lines

    class CountingStr(str):
        sliced = 0

        def __getitem__(self, key):  # type: ignore[no-untyped-def]
            piece = str.__getitem__(self, key)
            CountingStr.sliced += len(piece)
            return piece

    text = CountingStr("0\n20000\n" + "\u00e9t\u00e9 0 1\n" * 20_000)
    lines = kafka_lines(text)
    assert len(lines) == 20_002
    assert lines[-1][1] == len(b"0\n20000\n") + 19_999 * len("\u00e9t\u00e9 0 1\n".encode())
    assert CountingStr.sliced <= 3 * len(text)

    path = tmp_path / "replication-offset-checkpoint"
    path.write_bytes(b"0\n400000\n" + "\u00e9t\u00e9 0 1\n".encode() * 399_999
                     + "\u00e9t\u00e9 0\n".encode())
    with pytest.raises(CheckpointFormatError) as info:
        read_offset_checkpoint(path)
    assert info.value.field == "line 400002"
    assert info.value.position == len(b"0\n400000\n") + 399_999 * len("\u00e9t\u00e9 0 1\n".encode())


def test_leader_epoch_errors(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text("0\n2\n0 0\n1 x\n")
    with pytest.raises(CheckpointFormatError) as info:
        read_leader_epoch_checkpoint(path)
    assert info.value.field == "line 4"


@pytest.mark.parametrize("text, fragment", [
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "Invalid topic ID"),
    ("version: -1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", "Unrecognized version"),
    ("version 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", "Malformed line"),
    ("version: 0\ntopic_id: notauuid", "invalid topic ID"),
    ("version: 0", "no topic_id line"),
    ("", "empty"),
])
def test_malformed_partition_metadata(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "partition.metadata"
    path.write_text(text)
    with pytest.raises(CheckpointFormatError, match=fragment):
        read_partition_metadata(path)


def test_partition_metadata_accepts_padded_uuid(tmp_path: Path) -> None:
    path = tmp_path / "partition.metadata"
    path.write_text("version: 1\ntopic_id:   AAAAAAAAAAAAAAAAAAAAAQ==\n")
    pm = read_partition_metadata(path)
    assert (pm.version, pm.topic_id) == (1, "AAAAAAAAAAAAAAAAAAAAAQ")


def test_meta_properties_java_syntax(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    path.write_text("# comment\n! also comment\n\n  node.id = 3\ncluster.id:abc\\\n   def\n"
                    "directory.id  xyz\nesc\\=key=a\\tb\\u0041\n")
    assert read_meta_properties(path) == {"node.id": "3", "cluster.id": "abcdef",
                                          "directory.id": "xyz", "esc=key": "a\tbA"}
    path.write_text("bad=\\u12\n")
    with pytest.raises(CheckpointFormatError, match="uxxxx"):
        read_meta_properties(path)


def test_meta_properties_write_then_read(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    props = {"version": "1", "node.id": "2", "cluster.id": "a=b:c#d", "directory.id": " x"}
    write_meta_properties(path, props, now=0)
    lines = path.read_text().splitlines()
    assert lines[:2] == ["#", "#Thu Jan 01 00:00:00 UTC 1970"]
    assert "cluster.id=a\\=b\\:c\\#d" in lines
    assert read_meta_properties(path) == props


def test_quorum_state_errors(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    path.write_text('{"leaderId":1,\n"votedId":}')
    with pytest.raises(CheckpointFormatError) as info:
        read_quorum_state(path)
    assert info.value.field == "line 2" and info.value.position == 25
    path.write_text("[1]")
    with pytest.raises(CheckpointFormatError, match="not a JSON object"):
        read_quorum_state(path)


def test_clean_shutdown_file(tmp_path: Path) -> None:
    path = tmp_path / ".kafka_cleanshutdown"
    path.write_text("")
    assert read_clean_shutdown(path) == cps.CleanShutdown(None, None)
    path.write_text('{"version":0,"brokerEpoch":42}')
    assert read_clean_shutdown(path) == cps.CleanShutdown(0, 42)
    path.write_text('{"version":"x"}')
    with pytest.raises(CheckpointFormatError):
        read_clean_shutdown(path)


def test_writes_are_atomic_via_tmp_and_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "replication-offset-checkpoint"
    target.write_text("0\n1\nold 0 1\n")
    seen = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append((src, dst, Path(src).read_text(), target.read_text()))
        real_replace(src, dst)

    monkeypatch.setattr(cps.os, "replace", spy)
    write_offset_checkpoint(target, [("new", 3, 99), ("new", 1, 7)])
    assert seen == [(str(target) + ".tmp", str(target), "0\n2\nnew 3 99\nnew 1 7\n", "0\n1\nold 0 1\n")]
    assert target.read_text() == "0\n2\nnew 3 99\nnew 1 7\n"
    assert not (tmp_path / "replication-offset-checkpoint.tmp").exists()


def test_uuid_helpers_match_kafka_examples() -> None:
    assert uuid_to_base64url(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert base64url_to_uuid("AAAAAAAAAAAAAAAAAAAAAQ") == uuid.UUID(int=1)


def test_missing_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        read_offset_checkpoint(tmp_path / "nope")


@settings(max_examples=80, deadline=None)
@given(data=st.binary(max_size=80))
def test_random_bytes_give_only_segtools_errors(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    d = tmp_path_factory.mktemp("fuzz")
    for reader in (read_offset_checkpoint, read_leader_epoch_checkpoint, read_partition_metadata,
                   read_meta_properties, read_quorum_state, read_clean_shutdown):
        path = d / "f"
        path.write_bytes(data)
        try:
            reader(path)
        except SegtoolsError:
            pass
