"""The knobs of `segtools dump` (Kafka's DumpLogSegments options plus ours) and run state."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from segtools.dump.pairs import PairStore

#: Integer.MAX_VALUE, kafka-dump-log's --max-bytes default; other values hide the trailer line
MAX_BYTES_DEFAULT = 2147483647
MAX_MESSAGE_SIZE_DEFAULT = 5 * 1024 * 1024

#: kafka-dump-log text dialects, one per Kafka release line (docs/DUMP_LOG.md section 10a):
#: 4.3+ run the Java tool, 4.0-4.2 still the Scala one of 3.x with their own record schemas,
#: "3.9" the Scala tool of Kafka 3.x. The default follows the newest release.
KAFKA_VERSIONS = ("4.4", "4.3", "4.2", "4.1", "4.0", "3.9")
DEFAULT_KAFKA_VERSION = "4.4"


def kafka_release(version: str) -> str:
    """``version`` as one of KAFKA_VERSIONS: "4.4", "4.4.0" and "4.3.1" are accepted (a patch
    release prints its line's text); ValueError names the accepted ones otherwise."""
    parts = version.strip().split(".")
    line = ".".join(parts[:2])
    if line not in KAFKA_VERSIONS or len(parts) > 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"unknown Kafka version {version!r}: one of {', '.join(KAFKA_VERSIONS)} "
                         "(or a full release such as 4.4.0)")
    return line


def release_tuple(version: str) -> tuple[int, int]:
    """(major, minor) of one of KAFKA_VERSIONS."""
    major, minor = kafka_release(version).split(".")
    return int(major), int(minor)


def java_tool(version: str) -> bool:
    """Kafka 4.3+ runs the Java DumpLogSegments; 3.x and 4.0-4.2 the Scala one (whose text,
    summaries and transaction-log lines are 3.x's)."""
    return release_tuple(version) >= (4, 3)

# exit statuses (CONTRACT.md section 1)
EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_TROUBLE = 2


@dataclass
class DumpOptions:
    print_data_log: bool = False
    deep_iteration: bool = False
    skip_record_metadata: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = MAX_MESSAGE_SIZE_DEFAULT
    max_bytes: int = MAX_BYTES_DEFAULT
    key_decoder_class: str | None = None
    value_decoder_class: str | None = None
    key_decoder_given: bool = False
    value_decoder_given: bool = False
    offsets_decoder: bool = False
    transaction_log_decoder: bool = False
    cluster_metadata_decoder: bool = False
    output: str = "text"          # text | json | ndjson
    quiet: bool = False
    debug: bool = False
    #: print the `segtools: ` per-file finding lines and the summary line on stderr at the
    #: end (the command does; library callers get Kafka's stderr only)
    summary: bool = False
    #: segtools.primitives.limits' bound on one batch (on disk and decompressed); None: the default
    max_batch_bytes: int | None = None
    #: walk past corrupt ranges (segtools.dump.skip_corrupt) instead of stopping at the first
    skip_corrupt: bool = False
    #: --where conditions (segtools/dump/where.py) and the producer ids of a transactional_id
    where: tuple[str, ...] = ()
    where_producer_ids: tuple[int, ...] | None = None
    kafka_version: str = DEFAULT_KAFKA_VERSION  # whose text: KAFKA_VERSIONS
    #: Kafka 3.9+/4.x decoders of __remote_log_metadata and __share_group_state
    remote_log_metadata_decoder: bool = False
    share_group_state_decoder: bool = False

    @property
    def kafka4(self) -> bool:
        """The Java DumpLogSegments' text (Kafka 4.3+) rather than the Scala one's (3.x, and
        4.0-4.2, which still ran it)."""
        return java_tool(self.kafka_version)

    @property
    def should_print_data_log(self) -> bool:
        """Kafka: print-data-log OR any decoder option present (even without a value)."""
        return (self.print_data_log or self.offsets_decoder or self.transaction_log_decoder
                or self.cluster_metadata_decoder or self.key_decoder_given
                or self.value_decoder_given or self.remote_log_metadata_decoder
                or self.share_group_state_decoder)

    @property
    def is_deep_iteration(self) -> bool:
        return self.deep_iteration or self.should_print_data_log


#: Kafka's puts of one file's pairs, as recorded for the HashMap order: repeated puts of a key
#: that is already there change the table only through the first two (a repeat may grow the
#: table once; at the grown size it cannot again), so longer runs are cut to this
_PUTS_PER_RUN = 3


@dataclass
class Summaries:
    """The maps kafka-dump-log prints to stderr after all files, keyed by absolute path.

    Index mismatches and non-consecutive pairs are kept newest first (Kafka 3.x prepends to a
    Scala List); time-index errors in discovery order (Kafka appends to a list).
    ``puts`` records, per map, the keys of Kafka's ``put`` calls so the summaries can be
    printed in Kafka's HashMap order (scala_order.py): Scala 2.13's for 3.x, Java's for 4.x.
    Pairs may be a list (newest first) or a PairStore (pairs.py), which keeps millions of
    pairs in bounded memory.

    Kafka 4.x keeps index mismatches and non-consecutive pairs in a ``TreeMap`` per file
    (``ordered_pairs``): one pair per index offset (the last one found wins), printed by
    descending index offset; one pair per previous offset, printed ascending."""

    index_mismatches: dict[str, list[Any]] = field(default_factory=dict)
    timestamp_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order_timestamps: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    offsets_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[Any]] = field(default_factory=dict)
    puts: dict[str, list[str]] = field(default_factory=dict)
    #: per map, Kafka 4.x's computeIfAbsent calls that can change the table (``_call``)
    calls: dict[str, list[str]] = field(default_factory=dict)
    kafka_version: str = DEFAULT_KAFKA_VERSION
    _seen: dict[str, set[str]] = field(default_factory=dict, repr=False)
    _after_insert: dict[str, bool] = field(default_factory=dict, repr=False)

    def set_newest_first(self, name: str, path: str, pairs: list[tuple[int, int]] | PairStore) -> None:
        """Index mismatches / non-consecutive pairs of one file: Kafka puts once per pair and
        keeps prepending when the same file is dumped again."""
        target = getattr(self, name)
        target[path] = [pairs] + target.get(path, [])
        self.puts.setdefault(name, []).extend([path] * min(len(pairs), _PUTS_PER_RUN))
        for _ in range(min(len(pairs), 2)):
            self._call(name, path)

    def append(self, name: str, path: str, pair: tuple[int, int]) -> None:
        """A time-index error: Kafka puts the file's buffer once, when it is created."""
        target = getattr(self, name)
        if path not in target:
            target[path] = []
            self.puts.setdefault(name, []).append(path)
        target[path].append(pair)
        self._call(name, path)

    def _call(self, name: str, path: str) -> None:
        """Record a computeIfAbsent call of Kafka 4.x for the Java HashMap order. Only calls
        that can change the table are kept: an insert, and the first call after an insert
        (a hit may grow the table once); so memory stays bounded by twice the files."""
        calls = self.calls.setdefault(name, [])
        seen = self._seen.setdefault(name, set())
        if path not in seen:
            seen.add(path)
            calls.append(path)
            self._after_insert[name] = True
        elif self._after_insert.get(name):
            calls.append(path)
            self._after_insert[name] = False

    def ordered(self, name: str) -> list[tuple[str, Iterable[tuple[int, int]]]]:
        """(path, pairs) in Kafka's printing order; pairs may be a one-pass iterator."""
        from segtools.dump.scala_order import java_hashmap_order, scala_hashmap_order

        target = getattr(self, name)
        if java_tool(self.kafka_version):
            return [(path, self.ordered_pairs(name, target[path]))
                    for path in java_hashmap_order(self.calls.get(name, []))]
        if name not in ("index_mismatches", "non_consecutive"):
            return [(path, target[path]) for path in scala_hashmap_order(self.puts.get(name, []))]
        return [(path, _chain(target[path]))
                for path in scala_hashmap_order(self.puts.get(name, []))]

    @staticmethod
    def ordered_pairs(name: str, parts: list[Any]) -> Iterable[tuple[int, int]]:
        """Kafka 4.x's TreeMap view of one file's pairs: the index/non-consecutive maps keep
        one pair per key, the newest (their parts are stored newest first); the time-index
        lists are printed as found."""
        if name in ("index_mismatches", "non_consecutive"):
            # the first pair seen of a key, newest first, is the one the map keeps; streamed,
            # so a million pairs of one key (every record at one offset) hold one entry
            newest: dict[int, int] = {}
            for part in parts:
                if not isinstance(part, PairStore):
                    for a, b in part:
                        newest.setdefault(a, b)
                    continue
                for chunk in part.chunks_newest_first():
                    # oldest first inside a chunk: dict() keeps each key's newest value
                    block = dict(zip(chunk[0::2], chunk[1::2]))
                    for a in block.keys() - newest.keys():
                        newest[a] = block[a]
            return sorted(newest.items(), reverse=name == "index_mismatches")
        return parts

    def close(self) -> None:
        """Release the temporary files of spilled pairs."""
        for name in ("index_mismatches", "non_consecutive"):
            for parts in getattr(self, name).values():
                for part in parts:
                    if isinstance(part, PairStore):
                        part.close()


def _chain(parts: list[Any]) -> Iterator[tuple[int, int]]:
    for part in parts:
        if isinstance(part, PairStore):
            yield from part.newest_first()
        else:
            yield from part
