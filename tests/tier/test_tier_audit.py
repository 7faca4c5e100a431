"""segtools tier on log dirs built here: each case's expected findings follow from how the
evidence was built (the ground truth), and Kafka's rules are the ones of its source
(RemoteLogSegmentState.isValidTransition, RemoteLogManager.isRemoteSegmentWithinLeaderEpochs,
cases from Kafka's own RemoteLogManagerTest)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.files.checkpoints import (
    write_leader_epoch_checkpoint,
    write_meta_properties,
    write_partition_metadata,
)
from segtools.files.snapshots import producer_snapshot_bytes
from segtools.internal_topics.remote_log_metadata import encode_record
from segtools.tier import audit
from segtools.tier.lineage import within_leader_epochs
from segtools.tier.partitioner import metadata_partition
from segtools.tier.states import is_valid_transition
from segtools.writer.batch_builder import NewRecord, build_batch

pytestmark = pytest.mark.fast

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def _sid(n: int) -> str:
    return f"{'A' * 20}{chr(ord('A') + n)}A"


def _tip(p: int = 0) -> dict[str, object]:
    return {"name": "t", "id": TOPIC_ID, "partition": p}


def start(n: int, lo: int, hi: int, epochs: dict[int, int], broker: int = 1,
          size: int = 100) -> bytes:
    """A segment's metadata record. ``epochs`` are put as Kafka records them: the chain's
    entries truncated at ``lo`` (epochEntriesInRange: the epoch holding ``lo`` starts there)."""
    below = [e for e, o in epochs.items() if o < lo]
    epochs = {e: o for e, o in epochs.items() if o >= lo}
    if below and lo not in epochs.values():
        epochs[max(below)] = lo
    return encode_record(0, 0, {
        "remoteLogSegmentId": {"topicIdPartition": _tip(), "id": _sid(n)},
        "startOffset": lo, "endOffset": hi, "brokerId": broker, "maxTimestampMs": 1,
        "eventTimestampMs": 1, "segmentLeaderEpochs": [
            {"leaderEpoch": e, "offset": o} for e, o in epochs.items()],
        "segmentSizeInBytes": size, "customMetadata": None, "remoteLogSegmentState": 0,
        "txnIndexEmpty": True})


def update(n: int, state: int, broker: int = 1) -> bytes:
    return encode_record(1, 0, {
        "remoteLogSegmentId": {"topicIdPartition": _tip(), "id": _sid(n)},
        "brokerId": broker, "eventTimestampMs": 2, "customMetadata": None,
        "remoteLogSegmentState": state})


def _log_bytes(base: int, values: list[bytes | None], epoch: int = 0) -> bytes:
    return b"".join(build_batch([NewRecord(None, v)], base_offset=base + i,
                                partition_leader_epoch=epoch, base_timestamp=1)
                    for i, v in enumerate(values))


def _write_log(part_dir: Path, base: int, values: list[bytes | None], epoch: int = 0) -> None:
    part_dir.mkdir(parents=True, exist_ok=True)
    (part_dir / f"{base:020d}.log").write_bytes(_log_bytes(base, values, epoch))


def remote_object(root: Path, n: int, lo: int, data: bytes) -> None:
    """One remote segment in LocalTieredStorage's layout (RemoteLogSegmentFileset names)."""
    d = root / "kafka-tiered-storage" / f"t-0-{TOPIC_ID}"
    d.mkdir(parents=True, exist_ok=True)
    # with what a broker uploads beside the .log: epoch 0 from offset 0, no producer state;
    # the indexes empty (a segment with fewer than index.interval.bytes has no entry)
    content = {".log": data, ".index": b"", ".timeindex": b"",
               ".leader_epoch_checkpoint": b"0\n1\n0 0\n", ".snapshot": producer_snapshot_bytes([])}
    for suffix, body in content.items():
        (d / f"{lo:020d}-{_sid(n)}{suffix}").write_bytes(body)


def broker_dir(root: Path, metadata: list[bytes], *, local_start: int, log_end: int,
               epochs: dict[int, int], meta_part: int | None = None, node: int = 1) -> Path:
    d = root / f"broker-{node}"
    d.mkdir(parents=True)
    write_meta_properties(d / "meta.properties", {
        "version": "1", "node.id": str(node), "cluster.id": "c",
        "directory.id": "AAAAAAAAAAAAAAAAAAAAAg"})
    mp = metadata_partition(TOPIC_ID, 0) if meta_part is None else meta_part
    _write_log(d / f"__remote_log_metadata-{mp}", 0, list(metadata))
    tp = d / "t-0"
    _write_log(tp, local_start, [b"x"] * (log_end - local_start), epoch=max(epochs))
    write_partition_metadata(tp / "partition.metadata", TOPIC_ID)
    write_leader_epoch_checkpoint(tp / "leader-epoch-checkpoint", sorted(epochs.items()))
    return d


def kinds(report: object) -> list[str]:
    return sorted(f.kind for f in report.findings)  # type: ignore[attr-defined]


#: the (source, target) pairs RemoteLogSegmentState.isValidTransition of Kafka 4.3.1's
#: kafka-storage-api jar accepts (all 20 pairs asked from jshell; -1 = no state yet)
KAFKA_VALID = {(-1, 0), (0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2), (2, 3), (3, 3)}

#: Kafka 4.3.1's isRemoteSegmentWithinLeaderEpochs (kafka-storage jar, called by reflection
#: from jshell) on 300 random cases; the file says how they were made
LINEAGE_VECTORS = Path(__file__).parent.parent / "data" / "tier" / "lineage_kafka431.json"

#: RemoteLogMetadataTopicPartitioner(50).metadataPartition of Kafka 4.3.1 (jshell)
KAFKA_METADATA_PARTITIONS = {
    ("AAAAAAAAAAAAAAAAAAAAAQ", 0): 35, ("AAAAAAAAAAAAAAAAAAAAAQ", 1): 6,
    ("AAAAAAAAAAAAAAAAAAAAAQ", 7): 46, ("vD5fO3kDT0ac2aS1b2Tq7g", 0): 7,
    ("vD5fO3kDT0ac2aS1b2Tq7g", 1): 26, ("vD5fO3kDT0ac2aS1b2Tq7g", 7): 21,
    ("_____________________w", 0): 6, ("_____________________w", 1): 30,
    ("_____________________w", 7): 31,
}


def test_transitions_equal_kafkas() -> None:
    ours = {(s, t) for s in (-1, 0, 1, 2, 3) for t in (0, 1, 2, 3)
            if is_valid_transition(None if s < 0 else s, t)}
    assert ours == KAFKA_VALID


def test_lineage_equals_kafkas_on_random_cases() -> None:
    cases = json.loads(LINEAGE_VECTORS.read_text())["cases"]
    assert len(cases) == 300 and 0 < sum(c["kafka"] for c in cases) < 300
    for c in cases:
        seg = {int(k): v for k, v in c["seg"].items()}
        chain = {int(k): v for k, v in c["chain"].items()}
        assert (within_leader_epochs(seg, c["end"], c["leo"], chain) is None) == c["kafka"], c


def test_metadata_partition_equals_kafkas() -> None:
    for (topic_id, part), expected in KAFKA_METADATA_PARTITIONS.items():
        assert metadata_partition(topic_id, part) == expected


def test_lineage_cases_of_kafkas_own_test() -> None:
    # RemoteLogManagerTest.testRemoteSegmentWithinLeaderEpochs: chain {0:0,1:10,2:20,3:30,4:40,5:50}
    chain = {0: 0, 1: 10, 2: 20, 3: 30, 4: 40, 5: 50}
    assert within_leader_epochs({0: 0, 1: 10, 2: 20}, 29, 60, chain) is None
    assert within_leader_epochs({1: 15, 2: 20}, 29, 60, chain) is None
    assert within_leader_epochs({0: 0, 1: 10}, 25, 60, chain) is not None     # past epoch 1
    assert within_leader_epochs({0: 0, 1: 10, 7: 40}, 45, 60, chain) is not None  # unknown 7
    assert within_leader_epochs({0: 0, 1: 12, 2: 20}, 29, 60, chain) is not None  # 1 moved
    assert within_leader_epochs({5: 50}, 60, 60, chain) is not None            # at log end


def test_clean_tiering_has_no_finding(tmp_path: Path) -> None:
    md = [start(0, 0, 9, {0: 0}), update(0, 1), start(1, 10, 19, {0: 10}), update(1, 1)]
    d = broker_dir(tmp_path, md, local_start=15, log_end=30, epochs={0: 0})
    r = audit([str(d)])
    assert r.findings == []
    (p,) = r.partitions
    assert (p.earliest_offset, p.earliest_local_offset, p.latest_tiered_offset,
            p.log_end_offset) == (0, 15, 19, 30)


def test_dangling_unfinished_illegal_and_gap(tmp_path: Path) -> None:
    md = [start(0, 0, 9, {0: 0}), update(0, 1),
          start(1, 10, 19, {0: 10}),                       # never finished
          start(2, 20, 24, {0: 20}), update(2, 1), update(2, 2),   # delete never finished
          update(0, 0)]                                   # FINISHED -> STARTED: illegal
    d = broker_dir(tmp_path, md, local_start=25, log_end=30, epochs={0: 0})
    r = audit([str(d)])
    assert kinds(r) == ["coverage_gap", "dangling_started", "illegal_transition",
                        "unfinished_delete"]
    gap = next(f for f in r.findings if f.kind == "coverage_gap")
    # Kafka refuses the illegal update, so segment 0 stays FINISHED and covers [0, 9]; 1 is
    # only STARTED and 2 is being deleted: [10, 24] is nowhere
    assert (gap.start_offset, gap.end_offset) == (10, 24)


def test_out_of_lineage_after_unclean_election(tmp_path: Path) -> None:
    # segment uploaded in epoch 1 from offset 10, but the replica's chain says epoch 1 began
    # at 12 (its history diverged): Kafka would not serve it
    md = [start(0, 0, 9, {0: 0}), update(0, 1), start(1, 10, 19, {1: 10}), update(1, 1)]
    d = broker_dir(tmp_path, md, local_start=12, log_end=30, epochs={0: 0, 1: 12})
    r = audit([str(d)])
    assert kinds(r) == ["coverage_gap", "out_of_lineage"]
    assert next(f for f in r.findings if f.kind == "out_of_lineage").segment_id == _sid(1)
    # and the replica's own 10-11 (epoch 0 by its chain) are below its first local offset
    # with no remote segment holding epoch 0 past 9: Kafka's read finds nothing for them
    gap = next(f for f in r.findings if f.kind == "coverage_gap")
    assert (gap.start_offset, gap.end_offset) == (10, 11)


def test_metadata_partition_missing_is_cannot_tell(tmp_path: Path) -> None:
    mp = (metadata_partition(TOPIC_ID, 0) + 1) % 50
    d = broker_dir(tmp_path, [start(0, 0, 9, {0: 0}), update(0, 1)], local_start=10,
                   log_end=20, epochs={0: 0}, meta_part=mp)
    assert "cannot_tell" in kinds(audit([str(d)]))


def test_remote_objects_missing_and_leaked(tmp_path: Path) -> None:
    seg0 = _log_bytes(0, [b"x"] * 10)
    md = [start(0, 0, 9, {0: 0}, size=len(seg0)), update(0, 1), start(1, 10, 19, {0: 10}),
          update(1, 1)]
    d = broker_dir(tmp_path, md, local_start=20, log_end=30, epochs={0: 0})
    remote_object(tmp_path / "tiered", 0, 0, seg0)
    remote_object(tmp_path / "tiered", 5, 40, _log_bytes(40, [b"y"]))  # 1 absent, 5 unknown
    r = audit([str(d)], remote_root=str(tmp_path / "tiered"))
    assert kinds(r) == ["metadata_without_objects", "object_without_metadata"]
    assert {f.segment_id for f in r.findings} == {_sid(1), _sid(5)}


def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    runner = CliRunner()
    clean = broker_dir(tmp_path / "a", [start(0, 0, 9, {0: 0}), update(0, 1)],
                       local_start=10, log_end=20, epochs={0: 0})
    res = runner.invoke(cli, ["tier", str(clean)])
    assert res.exit_code == 0, res.output
    assert "0 findings" in res.output
    bad = broker_dir(tmp_path / "b", [start(0, 0, 9, {0: 0})], local_start=10, log_end=20,
                     epochs={0: 0})
    res = runner.invoke(cli, ["tier", str(bad), "--json"])
    assert res.exit_code == 1
    assert [f["kind"] for f in json.loads(res.output)["findings"]] == ["dangling_started"]
    empty = tmp_path / "empty"
    os.makedirs(empty)
    res = runner.invoke(cli, ["tier", str(empty)])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_remote_object_against_metadata_and_local_overlap(tmp_path: Path) -> None:
    # segment 0 covers [0, 9] remotely; the replica still holds [5, 19] locally. The remote
    # object's batch at 7 carries another value than the local one (a CRC differs), and
    # segment 1's object holds [10, 13] where the metadata says [10, 14]
    remote0 = _log_bytes(0, [b"x"] * 7 + [b"other"] + [b"x"] * 2)
    remote1 = _log_bytes(10, [b"x"] * 4)
    md = [start(0, 0, 9, {0: 0}, size=len(remote0)), update(0, 1),
          start(1, 10, 14, {0: 10}, size=len(remote1)), update(1, 1)]
    d = broker_dir(tmp_path, md, local_start=5, log_end=20, epochs={0: 0})
    remote_object(tmp_path / "tiered", 0, 0, remote0)
    remote_object(tmp_path / "tiered", 1, 10, remote1)
    r = audit([str(d)], remote_root=str(tmp_path / "tiered"))
    # segment 1's missing offset 14 is also a difference inside its overlap [10, 14]
    assert kinds(r) == ["object_offsets_mismatch", "overlap_mismatch", "overlap_mismatch"]
    o0, o1 = sorted((f for f in r.findings if f.kind == "overlap_mismatch"),
                    key=lambda f: f.segment_id)
    assert o0.segment_id == _sid(0) and (o0.start_offset, o0.end_offset) == (5, 9)
    assert "at 7 differ" in o0.message
    assert o1.segment_id == _sid(1) and "at 14 differ" in o1.message
