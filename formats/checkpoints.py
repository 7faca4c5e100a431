"""Text checkpoint files: offset checkpoints (log-dir root) and ``leader-epoch-checkpoint``.

Spec (FORMATS.md section 9; ``CheckpointFile.java``, ``OffsetCheckpointFile.java``,
``LeaderEpochCheckpointFile.java``)::

    <version>\\n                 0 for every file below
    <entry count>\\n
    <entry line>\\n  x count     fields split on whitespace runs

    replication-offset-checkpoint      <topic> <partition> <offset>   (high watermarks)
    recovery-point-offset-checkpoint   <topic> <partition> <offset>
    log-start-offset-checkpoint        <topic> <partition> <offset>
    cleaner-offset-checkpoint          <topic> <partition> <offset>
    leader-epoch-checkpoint            <leader_epoch> <start_offset>   (partition dir)

Written to ``<name>.tmp``, fsynced and renamed. Readers: empty file = no entries; wrong version,
non-integer version/count, a bad entry line, or a count mismatch are errors.
"""

from __future__ import annotations

from typing import Any

from construct import Adapter, Array, ExplicitError, Struct, this

from segtools.formats.text_lines import IntLine, Line, java_split, parse_java_int

__all__ = [
    "OffsetCheckpointLine", "LeaderEpochLine", "OffsetCheckpointFile", "LeaderEpochCheckpointFile",
    "REPLICATION_OFFSET_CHECKPOINT", "RECOVERY_POINT_OFFSET_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT", "CLEANER_OFFSET_CHECKPOINT", "LEADER_EPOCH_CHECKPOINT",
    "ROOT_OFFSET_CHECKPOINTS", "OFFSET_CHECKPOINT_VERSION", "LEADER_EPOCH_CHECKPOINT_VERSION",
    "TMP_SUFFIX",
]

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
#: the four ``<topic> <partition> <offset>`` files of a log-dir root
ROOT_OFFSET_CHECKPOINTS = (
    REPLICATION_OFFSET_CHECKPOINT, RECOVERY_POINT_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT, CLEANER_OFFSET_CHECKPOINT,
)
OFFSET_CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT_VERSION = 0
#: CheckpointFile writes ``<file>.tmp`` first
TMP_SUFFIX = ".tmp"


class _FieldsLine(Adapter):  # type: ignore[misc]  # construct ships no annotations
    """A whitespace-separated entry line <-> a dict of named fields (last ones integers)."""

    def __init__(self, names: tuple[str, ...], int_bits: tuple[int | None, ...]) -> None:
        super().__init__(Line)
        self.names = names
        self.int_bits = int_bits

    def _decode(self, obj: Any, context: Any, path: str) -> dict[str, Any]:
        parts = java_split(obj)
        if len(parts) != len(self.names):
            raise ExplicitError(f"malformed line {obj!r}", path=path)
        out: dict[str, Any] = {}
        for name, bits, text in zip(self.names, self.int_bits, parts):
            try:
                out[name] = text if bits is None else parse_java_int(text, bits)
            except ValueError:
                raise ExplicitError(f"malformed line {obj!r}", path=path) from None
        return out

    def _encode(self, obj: Any, context: Any, path: str) -> str:
        return " ".join(str(obj[name]) for name in self.names)


#: ``<topic> <partition> <offset>``
OffsetCheckpointLine = _FieldsLine(("topic", "partition", "offset"), (None, 32, 64))
#: ``<leader_epoch> <start_offset>``
LeaderEpochLine = _FieldsLine(("leader_epoch", "start_offset"), (32, 64))


def _checkpoint_file(entry: Any) -> Struct:
    return Struct(
        "version" / IntLine,
        "count" / IntLine,
        "entries" / Array(this.count, entry),
    )


#: a whole root offset checkpoint file in its canonical (written) form
OffsetCheckpointFile = _checkpoint_file(OffsetCheckpointLine)
#: a whole ``leader-epoch-checkpoint``
LeaderEpochCheckpointFile = _checkpoint_file(LeaderEpochLine)
