"""Export batches and records to Parquet (CONTRACT.md section 5).

Layout: ``OUT/topic=<t>/partition=<p>/<t>+<p>+<first offset, 10 digits>.<codec>.parquet``,
Hive-style folders that Spark, pyarrow and DuckDB discover, file names as Kafka Connect's S3
sink writes them. One file per source segment, written as a stream of row groups so memory
stays flat whatever the segment size. With ``by_broker`` a ``broker=<id>/`` level comes first
so several replicas of one partition can be exported side by side.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from segtools.errors import InputError
from segtools.schema import BATCH_SCHEMA, RECORD_SCHEMA
from segtools.sources import PartitionSource, Resolution, resolve

_SEGMENT_BASE_DIGITS = 20
#: Columns worth dictionary-encoding (few distinct values). Keys, values, offsets and timestamps
#: are mostly unique: pyarrow's default of trying a dictionary for every column made writing
#: 2.5x slower for nothing.
DICTIONARY_COLUMNS = frozenset({
    "topic", "partition", "timestampType", "leader_epoch", "producer_id", "producer_epoch",
    "is_transactional", "is_control", "broker", "magic", "compression", "crc_valid", "segment",
    "timestamp_type", "attributes", "partition_leader_epoch", "has_delete_horizon",
})
CODEC_SUFFIX = {"snappy": "snappy", "zstd": "zstd", "gzip": "gz", "none": "none", "lz4": "lz4"}


@dataclass(frozen=True)
class ExportOptions:
    level: str = "records"                  # "records" | "batches"
    topics: tuple[str, ...] = ()            # glob patterns; empty = all
    partitions: tuple[int, ...] = ()        # empty = all
    start_offset: int | None = None         # inclusive
    end_offset: int | None = None           # exclusive, like Kafka's end offsets
    start_timestamp: int | None = None      # epoch ms, inclusive
    end_timestamp: int | None = None        # epoch ms, exclusive
    include_control: bool = True
    compression: str = "snappy"
    by_broker: bool = False
    engine: str = "auto"

    def __post_init__(self) -> None:
        if self.level not in ("records", "batches"):
            raise InputError(f"level must be 'records' or 'batches', got {self.level!r}")
        if self.compression not in CODEC_SUFFIX:
            raise InputError(f"compression must be one of {sorted(CODEC_SUFFIX)}, got {self.compression!r}")


@dataclass
class ExportedFile:
    path: str
    topic: str
    partition: int
    broker: int | None
    rows: int
    first_offset: int
    last_offset: int
    source_segment: str
    crc_invalid_rows: int = 0          # rows from batches whose stored CRC does not match


@dataclass
class ExportSummary:
    files: list[ExportedFile] = field(default_factory=list)
    partitions: int = 0
    segments: int = 0
    bytes_read: int = 0

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def crc_invalid_rows(self) -> int:
        return sum(f.crc_invalid_rows for f in self.files)


def select_sources(sources: Iterable[PartitionSource], options: ExportOptions) -> list[PartitionSource]:
    """Apply the --topics / --partitions filters; -delete/-future/-stray dirs stay out unless named."""
    chosen = []
    for src in sources:
        if options.topics and not any(fnmatch.fnmatchcase(src.topic, pat) for pat in options.topics):
            continue
        if options.partitions and src.partition not in options.partitions:
            continue
        chosen.append(src)
    return chosen


def _segment_base(path: str) -> int | None:
    stem = os.path.basename(path)[:_SEGMENT_BASE_DIGITS]
    return int(stem) if stem.isdigit() else None


def _segments_in_range(segments: tuple[str, ...], options: ExportOptions) -> list[str]:
    """Prune whole segments by offset using their base offsets (the file names)."""
    bases = [_segment_base(s) for s in segments]
    kept = []
    for i, seg in enumerate(segments):
        base = bases[i]
        nxt = bases[i + 1] if i + 1 < len(segments) else None
        if options.end_offset is not None and base is not None and base >= options.end_offset:
            continue
        if options.start_offset is not None and nxt is not None and nxt <= options.start_offset:
            continue
        kept.append(seg)
    return kept


def file_stem(topic: str, partition: int, first_offset: int) -> str:
    """Kafka Connect's ``<topic>+<partition>+<offset, 10 digits>``.

    Spark and Hadoop skip files whose names begin with ``_`` or ``.`` (they take them for
    metadata), which would hide internal topics such as ``__consumer_offsets``; those files
    get a ``part-`` prefix."""
    stem = f"{topic}+{partition}+{first_offset:010d}"
    return f"part-{stem}" if stem[0] in "_." else stem


def _partition_folder(src: PartitionSource, options: ExportOptions) -> str:
    parts = []
    if options.by_broker:
        parts.append(f"broker={src.broker if src.broker is not None else 'unknown'}")
    parts.append(f"topic={src.topic}")
    parts.append(f"partition={src.partition}")
    return "/".join(parts)


def _iter_tables(segment: str, src: PartitionSource, options: ExportOptions) -> Iterator[pa.RecordBatch]:
    from segtools import columnar

    if options.level == "batches":
        for rb in columnar.iter_batch_batches(segment, topic=src.topic, partition=src.partition,
                                              broker=src.broker):
            rb = _filter_batch_rows(rb, options)
            if rb.num_rows:
                yield rb
        return
    yield from columnar.iter_record_batches(
        segment, topic=src.topic, partition=src.partition, broker=src.broker,
        include_control=options.include_control, start_offset=options.start_offset,
        end_offset=options.end_offset, start_timestamp=options.start_timestamp,
        end_timestamp=options.end_timestamp, engine=options.engine,
    )


def _filter_batch_rows(rb: pa.RecordBatch, options: ExportOptions) -> pa.RecordBatch:
    mask = None

    def both(cond):
        nonlocal mask
        mask = cond if mask is None else pc.and_(mask, cond)

    if options.start_offset is not None:
        both(pc.greater_equal(rb.column("last_offset"), options.start_offset))
    if options.end_offset is not None:
        both(pc.less(rb.column("base_offset"), options.end_offset))
    if options.start_timestamp is not None:
        both(pc.greater_equal(rb.column("max_timestamp"), options.start_timestamp))
    if options.end_timestamp is not None:
        both(pc.less(rb.column("base_timestamp"), options.end_timestamp))
    if not options.include_control:
        both(pc.invert(rb.column("is_control")))
    return rb if mask is None else rb.filter(mask)


def _open_filesystem(out_dir: str):
    """A pyarrow filesystem and root path: local paths, or s3:// / hdfs:// URIs."""
    from pyarrow import fs as pafs

    if "://" in out_dir:
        return pafs.FileSystem.from_uri(out_dir)
    return pafs.LocalFileSystem(), os.path.abspath(out_dir)


def export_source(src: PartitionSource, out_dir: str, options: ExportOptions,
                  on_segment: Callable[[str], None] | None = None) -> list[ExportedFile]:
    """Export one partition replica: one Parquet file per source segment that has rows."""
    filesystem, root = _open_filesystem(out_dir)
    schema = BATCH_SCHEMA if options.level == "batches" else RECORD_SCHEMA
    offset_col = "base_offset" if options.level == "batches" else "offset"
    folder = f"{root}/{_partition_folder(src, options)}"
    suffix = CODEC_SUFFIX[options.compression]
    kind = ".batches" if options.level == "batches" else ""
    written: list[ExportedFile] = []
    for segment in _segments_in_range(src.segments, options):
        writer = None
        tmp_path = None
        rows = invalid = 0
        first = last = -1
        try:
            for rb in _iter_tables(segment, src, options):
                if writer is None:
                    filesystem.create_dir(folder, recursive=True)
                    first = rb.column(offset_col)[0].as_py()
                    tmp_path = f"{folder}/.{file_stem(src.topic, src.partition, first)}{kind}.inprogress"
                    writer = pq.ParquetWriter(
                        tmp_path, schema, compression=options.compression, filesystem=filesystem,
                        use_dictionary=[n for n in schema.names if n in DICTIONARY_COLUMNS])
                # one row group per reader chunk (<= max_rows rows): memory stays bounded
                writer.write_batch(rb)
                rows += rb.num_rows
                invalid += rb.num_rows - pc.sum(rb.column("crc_valid")).as_py()
                last = rb.column(offset_col)[rb.num_rows - 1].as_py()
            if writer is not None:
                writer.close()
                writer = None
                final = f"{folder}/{file_stem(src.topic, src.partition, first)}{kind}.{suffix}.parquet"
                filesystem.move(tmp_path, final)
                written.append(ExportedFile(path=final, topic=src.topic, partition=src.partition,
                                            broker=src.broker, rows=rows, first_offset=first,
                                            last_offset=last, source_segment=segment,
                                            crc_invalid_rows=invalid))
        finally:
            if writer is not None:  # an error mid-segment: leave no half-written file behind
                writer.close()
                filesystem.delete_file(tmp_path)
        if on_segment is not None:
            on_segment(segment)
    return written


def _check_output(out_dir: str, sources: list[PartitionSource], overwrite: bool) -> None:
    if "://" in out_dir:
        return
    out = Path(out_dir).resolve()
    for base in [b for src in sources for b in (src.log_dir, src.partition_dir) if b]:
        if out == Path(base).resolve() or Path(base).resolve() in out.parents:
            raise InputError(f"--out {out_dir} is inside the input {base}: inputs are evidence "
                             "and are never written to")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise InputError(f"--out {out_dir} is not empty (use --overwrite to add to it)")


def _check_collisions(sources: list[PartitionSource], options: ExportOptions) -> None:
    if options.by_broker:
        return
    seen: dict[tuple[str, int], PartitionSource] = {}
    for src in sources:
        key = (src.topic, src.partition)
        if key in seen:
            raise InputError(
                f"{src.topic}-{src.partition} is in more than one input "
                f"({seen[key].partition_dir} and {src.partition_dir}); "
                "use --by-broker to export each replica under broker=<id>/")
        seen[key] = src


def plan_export(paths: list[str | os.PathLike[str]], out_dir: str, options: ExportOptions,
                overwrite: bool = False, resolution: Resolution | None = None) -> list[PartitionSource]:
    """Resolve and filter the inputs, and refuse unsafe or ambiguous outputs.

    ``resolution``: what :func:`segtools.sources.resolve` made of ``paths`` when the caller
    already asked (to print its warnings); resolved here otherwise."""
    if resolution is None:
        resolution = resolve(list(paths))
    if not resolution.partitions:
        raise InputError("no Kafka files found in: " + ", ".join(map(str, paths)))
    sources = select_sources(resolution.partitions, options)
    _check_output(out_dir, sources, overwrite)
    _check_collisions(sources, options)
    return sources


def export(paths: list[str | os.PathLike[str]], out_dir: str, options: ExportOptions | None = None,
           *, overwrite: bool = False,
           on_segment: Callable[[str], None] | None = None) -> ExportSummary:
    """Single-process export: stream every selected segment to Parquet."""
    options = options or ExportOptions()
    return export_sources(plan_export(paths, out_dir, options, overwrite), out_dir, options, on_segment)


def export_sources(sources: list[PartitionSource], out_dir: str, options: ExportOptions,
                   on_segment: Callable[[str], None] | None = None) -> ExportSummary:
    """Export already planned sources (see :func:`plan_export`) in this process."""
    summary = ExportSummary(partitions=len(sources))
    for src in sources:
        summary.files.extend(export_source(src, out_dir, options, on_segment))
        summary.segments += len(src.segments)
        summary.bytes_read += sum(os.path.getsize(s) for s in src.segments)
    return summary


def export_with_spark(paths: list[str | os.PathLike[str]], out_dir: str, options: ExportOptions | None,
                      spark, *, overwrite: bool = False,
                      resolution: Resolution | None = None) -> ExportSummary:
    """The same export, with partition replicas spread over Spark tasks.

    Each task runs :func:`export_source` on one partition replica, so the files (names and
    rows) are identical to the single-process path; only per-file summaries reach the driver.
    """
    options = options or ExportOptions()
    sources = plan_export(paths, out_dir, options, overwrite, resolution)
    summary = ExportSummary(partitions=len(sources))
    if not sources:
        return summary
    rdd = spark.sparkContext.parallelize(sources, numSlices=len(sources))
    for exported in rdd.flatMap(lambda src: export_source(src, out_dir, options)).collect():
        summary.files.append(exported)
    summary.files.sort(key=lambda f: (f.topic, f.partition, f.broker or -1, f.first_offset))
    summary.segments = sum(len(s.segments) for s in sources)
    summary.bytes_read = sum(os.path.getsize(p) for s in sources for p in s.segments)
    return summary
