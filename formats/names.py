"""File and directory names of a Kafka log directory.

Spec (FORMATS.md section 11; ``LogFileUtils.java``, ``LocalLog.scala``, ``Snapshots.java``)::

    segment files      <base offset, 20 digits>.log|.index|.timeindex|.txnindex
    producer snapshot  <offset, 20 digits>.snapshot
    extra suffixes     .deleted (async delete), .cleaned (cleaner output in progress),
                       .swap (cleaner output ready to replace the originals)
    partition dir      <topic>-<partition>, parsed at the LAST '-'
                       <topic>-<partition>.<uuid, 32 hex>-delete|-future|-stray
                       (regex ^(\\S+)-(\\S+)\\.(\\S+)-(delete|future|stray)$)
    KRaft snapshot     <end offset, 20 digits>-<epoch, 10 digits>.checkpoint
                       (+ .part while written, .deleted when pending delete)
"""

from __future__ import annotations

import re

__all__ = [
    "LOG_SUFFIX", "INDEX_SUFFIX", "TIME_INDEX_SUFFIX", "TXN_INDEX_SUFFIX", "SNAPSHOT_SUFFIX",
    "SEGMENT_FILE_SUFFIXES", "DELETED_SUFFIX", "CLEANED_SUFFIX", "SWAP_SUFFIX", "EXTRA_SUFFIXES",
    "KRAFT_CHECKPOINT_SUFFIX", "KRAFT_PART_SUFFIX", "DELETE_DIR_SUFFIX", "FUTURE_DIR_SUFFIX",
    "STRAY_DIR_SUFFIX", "OFFSET_DIGITS", "EPOCH_DIGITS", "SEGMENT_FILE_RE", "KRAFT_SNAPSHOT_RE",
    "SPECIAL_PARTITION_DIR_RE", "PLAIN_PARTITION_DIR_RE", "METADATA_TOPIC",
    "filename_prefix_from_offset", "offset_from_filename", "stem_offset", "dump_stem_offset",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
SEGMENT_FILE_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
EXTRA_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
KRAFT_CHECKPOINT_SUFFIX = ".checkpoint"
KRAFT_PART_SUFFIX = ".part"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
OFFSET_DIGITS = 20
EPOCH_DIGITS = 10
METADATA_TOPIC = "__cluster_metadata"

#: ``<20 digits><kind>[<extra suffix>]`` for .log/.index/.timeindex/.txnindex/.snapshot
SEGMENT_FILE_RE = re.compile(
    r"(?P<offset>[0-9]{20})(?P<kind>\.log|\.index|\.timeindex|\.txnindex|\.snapshot)"
    r"(?P<extra>\.deleted|\.cleaned|\.swap)?\Z"
)
#: ``<20 digits>-<10 digits>.checkpoint[.deleted]`` or ``...-<random>.checkpoint.part``
KRAFT_SNAPSHOT_RE = re.compile(
    r"(?P<end_offset>[0-9]{20})-(?P<epoch>[0-9]{10})(?:-(?P<random>[^.]+))?"
    r"\.checkpoint(?P<extra>\.part|\.deleted)?\Z"
)
#: ``<topic>-<partition>.<unique id>-(delete|future|stray)`` (LocalLog.parseTopicPartitionName)
SPECIAL_PARTITION_DIR_RE = re.compile(r"(\S+)-(\S+)\.(\S+)-(delete|future|stray)\Z")
#: ``<topic>-<partition>``: the partition follows the last '-'
PLAIN_PARTITION_DIR_RE = re.compile(r"(?P<topic>.+)-(?P<partition>[0-9]+)\Z")


def filename_prefix_from_offset(offset: int) -> str:
    """``LogFileUtils.filenamePrefixFromOffset``: 20-digit zero-padded decimal."""
    return f"{offset:020d}"


def _file_name(name: str) -> str:
    """The last component of ``name``, a file name or a path (either slash)."""
    return name.replace("\\", "/").rsplit("/", 1)[-1]


def offset_from_filename(name: str) -> int:
    """The base offset a segment, index or snapshot file name starts with (its first 20
    digits; ``LogFileUtils.offsetFromFileName``). ``name`` may be a path."""
    return int(_file_name(name)[:OFFSET_DIGITS])


#: the largest value ``Long.parseLong`` accepts
_LONG_MAX = (1 << 63) - 1


_JAVA_LONG = re.compile(r"[+-]?\d+")


def dump_stem_offset(name: str) -> int:
    """``Long.parseLong(name.split("\\.")[0])``: how kafka-dump-log reads the offset of a
    .log/.index/.timeindex/.txnindex name (tools/.../DumpLogSegments.java). Java's rules, not
    Python's ``int``: an optional sign and decimal digits only (no blanks, no ``_``), within
    the 64-bit range; ValueError where Java throws. ``name`` may be a path."""
    stem = _file_name(name).split(".")[0]
    if _JAVA_LONG.fullmatch(stem) is None:
        raise ValueError(f"For input string: \"{stem}\"")
    value = int(stem)
    if not -_LONG_MAX - 1 <= value <= _LONG_MAX:
        raise ValueError(f"For input string: \"{stem}\"")
    return value


def stem_offset(name: str) -> int | None:
    """The offset a file name's stem (before its first '.') spells, or None when Kafka could not
    read one from it (a renamed copy such as ``bad.log``). ``name`` may be a path.

    Kafka's rule, ``LogFileUtils.offsetFromFileName``
    (storage/src/main/java/org/apache/kafka/storage/internals/log/LogFileUtils.java):
    ``Long.parseLong(fileName.substring(0, fileName.indexOf('.')))``. So ``123.log`` is 123,
    ``<20 digits>.log.deleted``/``.cleaned``/``.swap`` are their 20 digits, and a 21-digit stem
    is read whole. Where parseLong throws (no digits, a value above Long.MAX_VALUE) this is
    None; a signed stem (``-5.log``, which parseLong would take) is None too, since no Kafka
    writer spells one."""
    stem = _file_name(name).split(".")[0]
    # isdecimal, not isdigit: '²' is a digit int() refuses; parseLong takes any Unicode decimal
    if not stem.isdecimal():
        return None
    value = int(stem)
    return value if value <= _LONG_MAX else None
