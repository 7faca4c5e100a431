"""Plain-Python facts the detector works on: one ``BatchFacts`` per batch on disk and one
``ReplicaFacts`` per (broker, log dir, topic, partition) copy.

These are what stage 1 of the compare pipeline produces (FORENSICS.md Part B, "per-replica
facts"). Everything here is picklable and cheap, so Spark's ``applyInPandas`` can build them
from rows and the in-process path can build them straight from ``segtools.records.columnar``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class BatchFacts:
    """Header facts of one batch (legacy: one outer message), as stored on one replica."""

    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    crc: int
    crc_valid: bool = True
    records_count: int = 1
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    is_control: bool = False
    magic: int = 2
    segment: str = ""
    position: int = 0
    size: int = 0
    max_timestamp: int = -1          # the batch's MaxTimestamp (ms): what the time view draws

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> BatchFacts:
        """Build from a BATCH_SCHEMA row (dict, pandas row or namedtuple-like mapping)."""
        return cls(
            base_offset=int(row["base_offset"]),
            last_offset=int(row["last_offset"]),
            partition_leader_epoch=int(row["partition_leader_epoch"]),
            crc=int(row["crc"]),
            crc_valid=bool(row["crc_valid"]),
            records_count=int(row["records_count"]),
            producer_id=int(row["producer_id"]),
            producer_epoch=int(row["producer_epoch"]),
            base_sequence=int(row["base_sequence"]),
            is_transactional=bool(row["is_transactional"]),
            is_control=bool(row["is_control"]),
            magic=int(row["magic"]),
            segment=str(row["segment"]),
            position=int(row["position"]),
            size=int(row["size"]),
            max_timestamp=int(row["max_timestamp"]) if "max_timestamp" in row else -1,
        )

    @property
    def key(self) -> tuple[int, int, int, int]:
        """What two replicas must agree on for a shared batch (FORENSICS.md Part 0)."""
        return (self.base_offset, self.last_offset, self.partition_leader_epoch, self.crc)


@dataclass(slots=True)
class ReplicaFacts:
    """Everything the detector knows about one replica of one partition.

    Offsets that a checkpoint does not list are ``None``. ``batches`` are in file order
    (segment base offset, then byte position)."""

    broker: int
    topic: str
    partition: int
    #: a list, or columns (segtools.forensics.batch_columns) for a scanned partition
    batches: Sequence[BatchFacts] = field(default_factory=list)
    log_dir: str = ""
    partition_dir: str = ""                      # the folder its segments are in, as discovered
    topic_id: str | None = None
    state: str = ""                              # "" | "delete" | "future" | "stray"
    high_watermark: int | None = None            # replication-offset-checkpoint
    recovery_point: int | None = None            # recovery-point-offset-checkpoint
    log_start_checkpoint: int | None = None      # log-start-offset-checkpoint
    cleaner_checkpoint: int | None = None        # cleaner-offset-checkpoint
    epoch_checkpoint: list[tuple[int, int]] | None = None   # leader-epoch-checkpoint
    clean_shutdown: bool = False
    first_segment_base: int | None = None        # base offset of the oldest segment file
    active_segment_base: int | None = None       # base offset of the newest segment file
    torn_tail_bytes: int = 0                     # bytes after the last complete batch
    torn_tail_segment: str | None = None
    torn_tail_position: int | None = None
    read_error: str | None = None                # a reader error that stopped the scan
    checkpoint_error: str | None = None          # a checkpoint/metadata file that did not parse
    unreadable_before_tail: bool = False         # unread bytes in a segment other than the last

    @property
    def replica_id(self) -> str:
        return f"{self.broker}:{self.log_dir}" if self.log_dir else str(self.broker)


@dataclass(slots=True)
class RecordFacts:
    """One record of a divergent (or reference) range, for loss and relocation matching."""

    offset: int
    leader_epoch: int
    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    producer_epoch: int = -1
    sequence: int = -1
    is_control: bool = False
    headers: tuple[tuple[str, bytes | None], ...] = ()

    @property
    def content(self) -> tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]:
        return (self.key, self.value, self.headers)
