"""One controller's ``__cluster_metadata`` evidence, read for the quorum audit (docs/QUORUM.md).

Everything a controller's metadata dir says about the Raft log: each batch's offsets, epoch and
a digest of its bytes (Log Matching compares digests), the LEADER_CHANGE and VotersRecord
control records, ``quorum-state``, ``meta.properties`` and the KRaft snapshots (``.checkpoint``,
whose ``0-0`` file is the bootstrap written by ``kafka-storage format``).
Inputs are only read; a file that cannot be read becomes a problem naming file and position.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from segtools.errors import SegtoolsError
from segtools.files.checkpoints import read_meta_properties
from segtools.files.logdir import open_partition_dir
from segtools.records.batches import SegmentReader
from segtools.records.control import (
    KRAFT_VOTERS,
    LEADER_CHANGE,
    decode_control_key,
    decode_control_value,
)

METADATA_DIR = "__cluster_metadata-0"


@dataclass(frozen=True)
class BatchInfo:
    """One batch of the metadata log: enough to compare logs without holding their bytes."""

    base_offset: int
    last_offset: int
    epoch: int
    digest: str          # sha256 of the batch's bytes on disk
    path: str
    position: int
    max_timestamp: int = -1


@dataclass(frozen=True)
class LeaderChange:
    """A LEADER_CHANGE control record: the leader of ``epoch`` and the voters that elected it."""

    offset: int
    epoch: int
    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]
    node: str


@dataclass(frozen=True)
class VoterSet:
    """A VotersRecord (log or snapshot): voter id -> directory id (Kafka base64url text)."""

    offset: int
    source: str          # "log" | "snapshot <file>"
    voters: tuple[tuple[int, str], ...]
    node: str


@dataclass(frozen=True)
class Snapshot:
    """A ``<end offset>-<epoch>.checkpoint`` file (end offset exclusive)."""

    end_offset: int
    epoch: int
    path: str


@dataclass
class ControllerNode:
    """What one controller's metadata dir holds."""

    name: str                 # the path as given (findings name nodes by it)
    partition_dir: str
    node_id: int | None = None
    cluster_id: str | None = None
    directory_id: str | None = None
    quorum_state: dict[str, Any] | None = None
    batches: list[BatchInfo] = field(default_factory=list)
    leader_changes: list[LeaderChange] = field(default_factory=list)
    voter_sets: list[VoterSet] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    bootstrap_voters: tuple[tuple[int, str], ...] | None = None   # from 0-0.checkpoint
    problems: list[str] = field(default_factory=list)

    @property
    def log_start(self) -> int:
        """First offset held in the log (0 for an empty log)."""
        return self.batches[0].base_offset if self.batches else 0

    @property
    def log_end(self) -> int:
        """The log end offset (next offset to be written)."""
        return self.batches[-1].last_offset + 1 if self.batches else 0

    def epoch_at(self, offset: int) -> int | None:
        """The epoch of the batch holding ``offset`` (None when not held)."""
        for b in self.batches:
            if b.base_offset <= offset <= b.last_offset:
                return b.epoch
        return None

    def max_epoch(self) -> int:
        """The highest epoch this node shows: log batches, snapshots and quorum-state."""
        epochs = [b.epoch for b in self.batches] + [s.epoch for s in self.snapshots]
        if self.quorum_state is not None:
            e = self.quorum_state.get("leaderEpoch")
            if isinstance(e, int):
                epochs.append(e)
        return max(epochs, default=-1)


def _partition_dir(path: str) -> str:
    inner = os.path.join(path, METADATA_DIR)
    if os.path.isdir(inner):
        return inner
    if os.path.basename(os.path.normpath(path)).startswith("__cluster_metadata-"):
        return path
    raise SegtoolsError(f"{path}: no {METADATA_DIR} directory (give a controller's "
                        "metadata.log.dir or its __cluster_metadata-0 directory)")


def _control(node: ControllerNode, batch: Any, source: str, at: int | None) -> None:
    """Collect LEADER_CHANGE and VotersRecord; ``at`` places a snapshot's records at the
    snapshot's end offset (the state they describe), None keeps log offsets."""
    for rec in batch.records():
        try:
            key = decode_control_key(rec.key)
            if key.type_id not in (LEADER_CHANGE, KRAFT_VOTERS):
                continue
            value = decode_control_value(key.type_id, rec.value)
        except SegtoolsError as e:
            node.problems.append(f"{batch.path}: byte {batch.position}, offset {rec.offset}: "
                                 f"control record unreadable: {e}")
            continue
        if value is None:
            continue
        if key.type_id == LEADER_CHANGE:
            voters = tuple(v["voterId"] for v in value.get("voters") or ())  # type: ignore[attr-defined]
            granting = tuple(v["voterId"] for v in value.get("grantingVoters") or ())  # type: ignore[attr-defined]
            node.leader_changes.append(LeaderChange(
                rec.offset, batch.partition_leader_epoch, int(value["leaderId"]),  # type: ignore[typeddict-item]
                voters, granting, node.name))
        else:
            vs = tuple((int(v["voterId"]), str(v["voterDirectoryId"]))
                       for v in value.get("voters") or ())  # type: ignore[attr-defined]
            node.voter_sets.append(VoterSet(rec.offset if at is None else at, source, vs,
                                            node.name))


def _read_file(node: ControllerNode, path: str, source: str, at: int | None) -> None:
    keep = at is None
    try:
        with SegmentReader(path) as reader:
            for batch in reader:
                if keep:
                    node.batches.append(BatchInfo(
                        batch.base_offset, batch.last_offset, batch.partition_leader_epoch,
                        hashlib.sha256(batch.raw()).hexdigest(), path, batch.position,
                        batch.max_timestamp))
                    if not batch.crc_valid:
                        node.problems.append(f"{path}: byte {batch.position}, offset "
                                             f"{batch.base_offset}: CRC mismatch")
                if batch.is_control:
                    _control(node, batch, source, at)
            tail = reader.file_size - reader.valid_bytes
            if tail > 0:
                node.problems.append(f"{path}: byte {reader.valid_bytes}: {tail} trailing bytes "
                                     "are not a complete batch (torn tail)")
    except SegtoolsError as e:
        node.problems.append(f"{path}: unreadable: {e}")


def load_node(path: str) -> ControllerNode:
    """Read one controller's metadata dir (``metadata.log.dir`` or ``__cluster_metadata-0``)."""
    pdir = _partition_dir(path)
    node = ControllerNode(name=path, partition_dir=pdir)
    for props_dir in (os.path.dirname(os.path.normpath(pdir)), pdir):
        props = os.path.join(props_dir, "meta.properties")
        if os.path.isfile(props):
            try:
                p = read_meta_properties(props)
            except SegtoolsError as e:
                node.problems.append(f"{props}: unreadable: {e}")
                break
            node.cluster_id = p.get("cluster.id")
            nid = p.get("node.id")
            node.node_id = int(nid) if nid is not None and nid.lstrip("-").isdigit() else None
            node.directory_id = p.get("directory.id")
            break
    part = open_partition_dir(pdir)
    node.problems.extend(f"{pdir}: {p}" for p in part.problems)
    node.quorum_state = part.quorum_state
    for snap in sorted(part.kraft_snapshots, key=lambda s: (s.end_offset, s.epoch)):
        if snap.suffix:
            continue
        node.snapshots.append(Snapshot(snap.end_offset, snap.epoch, snap.path))
        before = len(node.voter_sets)
        _read_file(node, snap.path, f"snapshot {os.path.basename(snap.path)}", snap.end_offset)
        if snap.end_offset == 0 and snap.epoch == 0 and len(node.voter_sets) > before:
            node.bootstrap_voters = node.voter_sets[-1].voters
    for seg in part.segments:
        if seg.log_path is not None:
            _read_file(node, seg.log_path, "log", None)
    # Kafka writes quorum-state when the node first starts: a dir only formatted has none
    started = node.log_end > 0 or any(s.end_offset > 0 for s in node.snapshots)
    if (node.quorum_state is None and started
            and not os.path.exists(os.path.join(pdir, "quorum-state"))):
        node.problems.append(f"{pdir}: quorum-state is missing (the node has run: its log or "
                             "snapshots hold records)")
    return node
