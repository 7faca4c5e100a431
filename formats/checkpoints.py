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
non-integer version/count, a bad entry line, or a count mismatch are errors. The file
declarations below parse by Kafka's reading rules and build the canonical form; production
reads the files through them (``segtools.files.checkpoints``).
"""

from __future__ import annotations

from typing import Any

from construct import Adapter, Construct, Container, ExplicitError

from segtools.errors import display_path
from segtools.formats.primitives import LocatedError, context_value
from segtools.formats.text_lines import KafkaLines, Line, TextLine, java_split, parse_java_int

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
    """A whitespace-separated entry line <-> a dict of named fields (last ones integers).

    The checkpoint formatters' ``fromString``: ``line.split("\\s+")`` must give exactly
    ``len(names)`` parts, integers parse like ``Integer.parseInt``/``Long.parseLong``.
    """

    def __init__(self, names: tuple[str, ...], int_bits: tuple[int | None, ...]) -> None:
        super().__init__(Line)
        self.names = names
        self.int_bits = int_bits

    def fields(self, text: str) -> dict[str, Any] | None:
        """The entry of one line, or None where Kafka's formatter rejects it."""
        parts = java_split(text)
        if len(parts) != len(self.names):
            return None
        out: dict[str, Any] = {}
        for name, bits, part in zip(self.names, self.int_bits, parts):
            try:
                out[name] = part if bits is None else parse_java_int(part, bits)
            except ValueError:
                return None
        return out

    def _decode(self, obj: Any, context: Any, path: str) -> dict[str, Any]:
        out = self.fields(obj)
        if out is None:
            raise ExplicitError(f"malformed line {obj!r}", path=path)
        return out

    def _encode(self, obj: Any, context: Any, path: str) -> str:
        return " ".join(str(obj[name]) for name in self.names)


#: ``<topic> <partition> <offset>``
OffsetCheckpointLine = _FieldsLine(("topic", "partition", "offset"), (None, 32, 64))
#: ``<leader_epoch> <start_offset>``
LeaderEpochLine = _FieldsLine(("leader_epoch", "start_offset"), (32, 64))


class _CheckpointText(Construct):  # type: ignore[misc]  # construct ships no annotations
    """A checkpoint file: written canonically (``version``, ``count``, entry lines, each
    ``\n``-terminated), read by Kafka's rules (``CheckpointFile.CheckpointReadBuffer.read``):

    * lines as ``BufferedReader.readLine`` splits them (:data:`KafkaLines`);
    * an empty file has no entries (``version`` and ``count`` None); a file with only the
      version line too (``count`` None);
    * version and count parse like ``Integer.parseInt``; another version is Kafka's
      "Unrecognised version" error; a negative count is a malformed line (``new
      ArrayList<>(-1)`` throws);
    * entry lines are read in order, the first one the formatter rejects is a malformed line;
      then the number of entries must equal the count.

    Parse keywords: ``filename`` (quoted in Kafka's messages), ``expected_version``.
    Errors are :class:`LocatedError` with Kafka's message, the line's byte position and
    ``field="line N"``. Entries stay in file order (a reader building a map lets later
    duplicates win, as Kafka's does).
    """

    def __init__(self, entry: _FieldsLine, version: int) -> None:
        super().__init__()
        self.entry = entry
        self.version = version

    def _parse(self, stream: Any, context: Any, path: str) -> Container:
        lines: list[TextLine] = KafkaLines._parsereport(stream, context, path)
        filename = str(context_value(context, "filename", ""))
        shown = display_path(filename)

        def malformed(line: TextLine) -> LocatedError:
            return LocatedError(f"Malformed line in checkpoint file [{shown}]: {line.text}",
                                path=path, position=line.position, field=f"line {line.number}")

        def java_int(line: TextLine) -> int:
            try:
                return parse_java_int(line.text, 32)
            except ValueError:
                raise malformed(line) from None

        if not lines:
            return Container(version=None, count=None, entries=[])
        version = java_int(lines[0])
        expected = context_value(context, "expected_version", self.version)
        if version != expected:
            raise LocatedError(
                f"Unrecognised version:{version}, expected version: {expected} in checkpoint "
                f"file at: {filename}", path=path, position=lines[0].position, field="line 1",
                expected=expected, actual=version)
        if len(lines) < 2:
            return Container(version=version, count=None, entries=[])
        count = java_int(lines[1])
        if count < 0:
            raise malformed(lines[1])
        entries = []
        for line in lines[2:]:
            entry = self.entry.fields(line.text)
            if entry is None:
                raise malformed(line)
            entries.append(entry)
        if len(entries) != count:
            last = lines[-1]
            raise LocatedError(
                f"Expected [{count}] entries in checkpoint file [{shown}], but found only "
                f"[{len(entries)}]", path=path, position=last.position,
                field=f"line {last.number}", expected=count, actual=len(entries))
        return Container(version=version, count=count, entries=entries)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        entries = list(obj["entries"])
        lines = [str(int(obj["version"])), str(len(entries))]
        lines += [self.entry._encode(entry, context, path) for entry in entries]
        KafkaLines._build(lines, stream, context, path)
        return obj


#: a whole root offset checkpoint file: canonical when built, Kafka's rules when parsed
OffsetCheckpointFile = _CheckpointText(OffsetCheckpointLine, OFFSET_CHECKPOINT_VERSION)
#: a whole ``leader-epoch-checkpoint``
LeaderEpochCheckpointFile = _CheckpointText(LeaderEpochLine, LEADER_EPOCH_CHECKPOINT_VERSION)
