"""`--kafka-version`: Kafka 4.3.1's text by default, the 3.x text with 3.9 (DUMP_LOG.md 10a).

The 4.3.1 expectations are what the real tool prints (read from its bytecode and checked
side by side in tests/realkafka/); the 3.x ones are DUMP_LOG.md sections 3-8.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from dump_builders import SEG, legacy_set, lines, producer_snapshot, run, simple_records_log, v2_batch, write_indexes


def _abs(path: Path) -> str:
    return os.path.abspath(path)


def test_non_consecutive_offsets_treemap_and_first_record(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000005.log"
    # offsets 5, 6 | 9 | 7 | 9 again: gaps and a repeat of "previous offset 6"... kept per key
    log.write_bytes(v2_batch([(None, b"a", 1), (None, b"b", 2)], base_offset=5)
                    + v2_batch([(None, b"c", 3)], base_offset=9)
                    + v2_batch([(None, b"d", 4)], base_offset=7)
                    + v2_batch([(None, b"e", 5)], base_offset=9))
    new = run("--deep-iteration", log)
    assert lines(new.stderr) == [f"Non-consecutive offsets in {_abs(log)}",
                                 "  -1 is followed by 5", "  6 is followed by 9",
                                 "  7 is followed by 9", "  9 is followed by 7"]
    old = run("--kafka-version", "3.9", "--deep-iteration", log)
    assert lines(old.stderr) == [f"Non-consecutive offsets in {_abs(log)}",
                                 "  7 is followed by 9", "  9 is followed by 7",
                                 "  6 is followed by 9"]
    # (-1, 5) is not corruption; 9 -> 7 is
    assert new.exit_code == old.exit_code == 1


def test_index_mismatches_descending_one_per_offset(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)  # batches end at 9, 29, 49, 59
    index = tmp_path / f"{SEG}.index"
    # (offset, position): 29 at batch 0 (ends 9), 20 at batch 0, 29 again at batch 1 (fine)
    index.write_bytes(struct.pack(">ii", 29, 0) + struct.pack(">ii", 20, 0)
                      + struct.pack(">ii", 29, len(batches[0])))
    new = run("--verify-index-only", index)
    assert lines(new.stderr) == [f"Mismatches in :{_abs(index)}",
                                 "  Index offset: 29, log offset: 9",
                                 "  Index offset: 20, log offset: 9"]
    old = run("--kafka-version", "3.9", "--verify-index-only", index)
    assert lines(old.stderr) == [f"Mismatches in :{_abs(index)}",
                                 "  Index offset: 20, log offset: 9",
                                 "  Index offset: 29, log offset: 9"]


def test_time_index_not_found_names_the_file(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    write_indexes(tmp_path, batches)
    timeindex = tmp_path / f"{SEG}.timeindex"
    timeindex.write_bytes(struct.pack(">qi", 1700000000009, 9) + struct.pack(">qi", 1800000000000, 500))
    assert lines(run(timeindex).stderr) == [
        f"The following indexed offsets are not found in :{_abs(timeindex)}",
        "Indexed offset: 500, found log offset: -1"]
    assert lines(run("--kafka-version", "3.9", timeindex).stderr)[0] == \
        "The following indexed offsets are not found in the log."


def test_summary_file_order_is_java_hashmap_order(tmp_path: Path) -> None:
    """13 time indexes with a mismatch each: 4.x prints them in java.util.HashMap order."""
    from segtools.dump.scala_order import java_hashmap_order, scala_hashmap_order

    files = []
    for i in range(13):
        d = tmp_path / f"t{i}-{i}"
        d.mkdir()
        _, batches = simple_records_log(d)
        write_indexes(d, batches)
        timeindex = d / f"{SEG}.timeindex"
        timeindex.write_bytes(struct.pack(">qi", 5, 9))  # wrong timestamp for batch 0..9
        files.append(timeindex)
    paths = [_abs(f) for f in files]
    assert java_hashmap_order(paths) != scala_hashmap_order(paths)  # the test tells them apart
    new = [line for line in lines(run("--verify-index-only", *files).stderr)
           if line.startswith("Found timestamp mismatch in :")]
    assert new == [f"Found timestamp mismatch in :{p}" for p in java_hashmap_order(paths)]
    old = [line for line in lines(run("--kafka-version", "3.9", "--verify-index-only",
                                      *files).stderr)
           if line.startswith("Found timestamp mismatch in :")]
    assert old == [f"Found timestamp mismatch in :{p}" for p in scala_hashmap_order(paths)]


def test_legacy_record_crc_brace(tmp_path: Path) -> None:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(legacy_set([(0, b"k", b"v", 1700000000000)], magic=1))
    new = [line for line in lines(run("--deep-iteration", log).stdout) if line.startswith("| ")]
    old = [line for line in lines(run("--kafka-version", "3.9", "--deep-iteration", log).stdout)
           if line.startswith("| ")]
    assert new[0].endswith(" isValid: true crc: " + new[0].rsplit(" ", 1)[1])
    assert not new[0].endswith("}") and old == [new[0] + "}"]


def test_time_index_sanity_message_lost_its_full_stop(tmp_path: Path) -> None:
    _, batches = simple_records_log(tmp_path)
    _, timeindex = write_indexes(tmp_path, batches)
    timeindex.write_bytes(timeindex.read_bytes() + b"\0")
    n = len(timeindex.read_bytes())
    assert (f"Time index file {_abs(timeindex)} is corrupt, found {n} bytes which is neither "
            f"positive nor a multiple of 12\n") in run("--index-sanity-check", timeindex).stderr
    assert "multiple of 12.\n" in run("--kafka-version", "3.9", "--index-sanity-check",
                                      timeindex).stderr


def test_producer_snapshot_messages_of_4x(tmp_path: Path) -> None:
    good = producer_snapshot([(7, 0, 3, 100, 0, 1700000000000, 0, -1)])
    cases = {
        "short": (good[:5], "Snapshot failed schema validation: null"),
        "negative": (good[:6] + struct.pack(">i", -3) + good[10:],
                     "Snapshot failed schema validation: non-nullable field producerEntries "
                     "was serialized as null"),
        "huge": (good[:6] + struct.pack(">i", 1000) + good[10:],
                 f"Snapshot failed schema validation: Tried to allocate a collection of size "
                 f"1000, but there are only {len(good) - 10} bytes remaining."),
        "two": (good[:6] + struct.pack(">i", 2) + good[10:],
                "Snapshot failed schema validation: null"),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / f"{name}-0" / "00000000000000000001.snapshot"
        path.parent.mkdir()
        path.write_bytes(data)
        result = run(path)
        assert lines(result.stderr) == [message], name
        assert result.exit_code == 1
        assert lines(run("--kafka-version", "3.9", path).stderr) != [message], name


def test_a_release_line_or_a_full_release_and_nothing_else(tmp_path: Path) -> None:
    """`--kafka-version` names a release line or a full release of it; 4.0-4.2 print the Scala
    tool's text (the real jars of those releases still run kafka.tools.DumpLogSegments), 4.3+
    the Java tool's (the non-consecutive block starts with -1 only there)."""
    log = tmp_path / "00000000000000000005.log"
    log.write_bytes(v2_batch([(None, b"a", 1)], base_offset=5) + v2_batch([(None, b"b", 2)],
                                                                           base_offset=9))
    texts = {}
    for version in ("4.4", "4.4.0", "4.3.1", "4.3", "4.2.0", "4.1", "4.0.0", "3.9"):
        result = run("--kafka-version", version, "--deep-iteration", log)
        assert result.exit_code in (0, 1), (version, result.stderr)
        texts[version] = lines(result.stderr)
    assert texts["4.4"] == texts["4.4.0"] == texts["4.3.1"] == texts["4.3"]
    assert texts["4.2.0"] == texts["4.1"] == texts["4.0.0"] == texts["3.9"]
    assert "  -1 is followed by 5" in texts["4.4"] and "  -1 is followed by 5" not in texts["3.9"]
    for bad in ("5.0", "4.5", "4.4.0.1", "4", "latest", "4.x"):
        result = run("--kafka-version", bad, log)
        assert result.exit_code == 2, bad
        assert "unknown Kafka version" in result.stderr
