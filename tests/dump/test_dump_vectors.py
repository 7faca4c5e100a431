"""DUMP_LOG.md section 11: Kafka's DumpLogSegmentsTest vectors and the exact lines derived in
11.1, on inputs built from the spec's bytes or with kafka-python."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from dump_builders import (SEG, SPEC_V0_MESSAGE, SPEC_V1_MESSAGE, SPEC_V2_BATCH, control_batch,
                           kafka_err, lines, oracle_batches, run, simple_records_log, tokens_alternate,
                           v2_batch, write_indexes)

SPEC_BATCH_LINE = (
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 69 "
    "magic: 2 compresscodec: none crc: 2522518705 isvalid: true")
SPEC_RECORD_META = ("| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 1 "
                    "sequence: -1 headerKeys: []")


@pytest.fixture
def spec_log(tmp_path: Path) -> Path:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(SPEC_V2_BATCH)
    return log


def test_spec_v2_batch_shallow(spec_log: Path) -> None:
    result = run("--files", spec_log)
    assert result.exit_code == 0
    assert result.stdout == f"Dumping {spec_log}\nLog starting offset: 0\n{SPEC_BATCH_LINE}\n"
    assert kafka_err(result.stderr) == ""


@pytest.mark.parametrize("flags, record_line", [
    (["--deep-iteration"], SPEC_RECORD_META),
    (["--print-data-log"], SPEC_RECORD_META + " payload: a"),
    # Kafka 4.x puts "| " before the first part printed; 3.x before a key only
    (["--print-data-log", "--skip-record-metadata"], "| payload: a"),
    (["--kafka-version", "3.9", "--print-data-log", "--skip-record-metadata"], " payload: a"),
    (["--value-decoder-class"], SPEC_RECORD_META + " payload: a"),
    (["--key-decoder-class", "org.apache.kafka.tools.api.StringDecoder"],
     SPEC_RECORD_META + " payload: a"),
])
def test_spec_v2_batch_deep(spec_log: Path, flags: list[str], record_line: str) -> None:
    result = run(*flags, "--files", spec_log)
    assert result.exit_code == 0
    assert lines(result.stdout) == [f"Dumping {spec_log}", "Log starting offset: 0",
                                    SPEC_BATCH_LINE, record_line]


def test_spec_garbage_tail(spec_log: Path) -> None:
    spec_log.write_bytes(SPEC_V2_BATCH + b"\x01\x02\x03\x04\x05")
    result = run(spec_log)
    assert lines(result.stdout)[-1] == f"Found 5 invalid bytes at the end of {SEG}.log"
    assert result.exit_code == 1  # a torn/garbage tail is a finding


def test_spec_legacy_v1(tmp_path: Path) -> None:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(SPEC_V1_MESSAGE)
    result = run("--kafka-version", "3.9", "--print-data-log", log)
    assert result.exit_code == 0
    assert lines(result.stdout)[2:] == [
        "offset: 0 position: 0 CreateTime: 1700000000000 size: 36 magic: 1 compresscodec: none "
        "crc: 958827571 isvalid: true",
        "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 isValid: true "
        "crc: 958827571} key: k payload: v",
    ]


def test_spec_legacy_v0(tmp_path: Path) -> None:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(SPEC_V0_MESSAGE)
    result = run("--kafka-version", "3.9", "--deep-iteration", log)
    assert result.exit_code == 0
    assert lines(result.stdout)[2:] == [
        "offset: 7 position: 0 NoTimestampType: -1 size: 27 magic: 0 compresscodec: none "
        "crc: 3524050933 isvalid: true",
        "| offset: 7 NoTimestampType: -1 keySize: -1 valueSize: 1 isValid: true crc: 3524050933}",
    ]


# ------------------------------------------------------------------ 1: batch and record metadata

NOW = 1700000123456


def _vector1_log(tmp_path: Path) -> tuple[Path, list[bytes]]:
    batches = [
        v2_batch([(None, b"a", NOW), (None, b"b", NOW)], base_offset=0, leader_epoch=0),
        v2_batch([(b"c", b"c" * 100, NOW), (None, b"d" * 100, NOW)], base_offset=2, leader_epoch=3,
                 compression=1),
        v2_batch([(b"e", None, NOW), (None, b"f", NOW), (None, b"g", NOW)], base_offset=4,
                 leader_epoch=3),
        v2_batch([(None, b"h", NOW)], base_offset=7, leader_epoch=3, producer_id=29342342,
                 producer_epoch=15, base_sequence=234123),
        v2_batch([(None, b"i" * 100, NOW), (None, b"j" * 100, NOW)], base_offset=8, leader_epoch=5,
                 compression=1, producer_id=98323, producer_epoch=99, base_sequence=266,
                 transactional=True),
        control_batch(1, base_offset=10, producer_id=98323, producer_epoch=99,
                      coordinator_epoch=100, timestamp=NOW, leader_epoch=7),
    ]
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"".join(batches))
    return log, batches


def test_vector1_batch_and_record_metadata(tmp_path: Path) -> None:
    log, batches = _vector1_log(tmp_path)
    result = run("--deep-iteration", "--files", log)
    assert result.exit_code == 0, result.stderr
    out = lines(result.stdout)[2:]
    batch_lines = [i for i, line in enumerate(out) if line.startswith("baseOffset")]
    assert len(batch_lines) == 6
    expected = [(0, 1, "none", 0, -1, -1, -1, False, False),
                (2, 3, "gzip", 3, -1, -1, -1, False, False),
                (4, 6, "none", 3, -1, -1, -1, False, False),
                (7, 7, "none", 3, 29342342, 15, 234123, False, False),
                (8, 9, "gzip", 5, 98323, 99, 266, True, False),
                (10, 10, "none", 7, 98323, 99, -1, True, True)]
    position = 0
    for idx, raw, exp in zip(batch_lines, batches, expected):
        line = out[idx]
        assert tokens_alternate(line), line
        fields = dict(zip(line.split()[0::2], line.split()[1::2]))
        base, last, codec, epoch, pid, pepoch, seq, txn, ctrl = exp
        (oracle,) = oracle_batches(raw)
        assert fields["baseOffset:"] == str(base)
        assert fields["lastOffset:"] == str(last)
        assert fields["count:"] == str(last - base + 1)
        assert fields["partitionLeaderEpoch:"] == str(epoch)
        assert fields["producerId:"] == str(pid)
        assert fields["producerEpoch:"] == str(pepoch)
        assert fields["baseSequence:"] == str(seq)
        assert fields["lastSequence:"] == str(-1 if seq < 0 else seq + last - base)
        assert fields["isTransactional:"] == str(txn).lower()
        assert fields["isControl:"] == str(ctrl).lower()
        assert fields["compresscodec:"] == codec
        assert fields["crc:"] == str(oracle.crc)
        assert fields["isvalid:"] == "true"
        assert fields["size:"] == str(len(raw))
        assert fields["position:"] == str(position)
        assert fields["CreateTime:"] == str(oracle.max_timestamp)
        assert fields["deleteHorizonMs:"] == "OptionalLong.empty"
        position += len(raw)
    record_lines = [line for line in out if line.startswith("|")]
    assert len(record_lines) == 11
    batch_only = {"baseOffset:", "lastOffset:", "baseSequence:", "lastSequence:", "producerId:",
                  "producerEpoch:", "partitionLeaderEpoch:", "isTransactional:", "isControl:",
                  "position:", "size:", "magic:", "compresscodec:", "crc:", "isvalid:"}
    for n, line in enumerate(record_lines):
        assert tokens_alternate(line[2:]), line
        assert line.startswith(f"| offset: {n} CreateTime: {NOW} keySize: ")
        assert not batch_only & set(line.split())
    assert record_lines[1].endswith("keySize: -1 valueSize: 1 sequence: -1 headerKeys: []")
    assert record_lines[2].endswith("keySize: 1 valueSize: 100 sequence: -1 headerKeys: []")
    assert record_lines[4].endswith("keySize: 1 valueSize: -1 sequence: -1 headerKeys: []")
    assert record_lines[7].endswith("sequence: 234123 headerKeys: []")
    assert record_lines[8].endswith("sequence: 266 headerKeys: []")
    assert record_lines[9].endswith("sequence: 267 headerKeys: []")
    assert record_lines[10] == (f"| offset: 10 CreateTime: {NOW} keySize: 4 valueSize: 6 "
                                "sequence: -1 headerKeys: [] endTxnMarker: COMMIT "
                                "coordinatorEpoch: 100")


def test_vector1_control_record_prints_no_data(tmp_path: Path) -> None:
    log, _ = _vector1_log(tmp_path)
    result = run("--print-data-log", log)
    marker = [line for line in lines(result.stdout) if line.startswith("| offset: 10 ")]
    assert marker == [f"| offset: 10 CreateTime: {NOW} keySize: 4 valueSize: 6 sequence: -1 "
                      "headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 100"]
    skipped = run("--print-data-log", "--skip-record-metadata", log)
    out = lines(skipped.stdout)
    # record 10 (control) prints an empty line; record 4 has a key and no value
    assert out[-1] == ""
    assert "| key: e" in out
    assert "| payload: a" in out


# ------------------------------------------------------------------ 2: print data log

def _record_lines(stdout: str) -> list[str]:
    return [line for line in lines(stdout) if line.startswith("| ")]


@pytest.mark.parametrize("flags", [
    ["--print-data-log"],
    ["--print-data-log", "--deep-iteration"],
    ["--value-decoder-class", "org.apache.kafka.tools.api.StringDecoder"],
    ["--key-decoder-class", "org.apache.kafka.tools.api.StringDecoder"],
])
def test_vector2_print_data_log(tmp_path: Path, flags: list[str]) -> None:
    log, _ = simple_records_log(tmp_path)
    result = run(*flags, "--files", log)
    assert result.exit_code == 0
    out = lines(result.stdout)
    last64 = out[-64:]
    assert len(out) == 66
    starts = {0: 0, 11: 10, 32: 30, 53: 50}
    for i, line in enumerate(last64):
        if i in starts:
            assert line.startswith(f"baseOffset: {starts[i]} lastOffset: ")
    recs = _record_lines(result.stdout)
    assert len(recs) == 60
    for n, line in enumerate(recs):
        assert line.startswith(f"| offset: {n} ")
        if n < 10:
            assert line.endswith(f"headerKeys: [] key: message key {n} payload: message value {n}")
        elif n < 30:
            assert line.endswith(f"headerKeys: [] key: message key {n}")
        elif n < 50:
            assert line.endswith(f"headerKeys: [] payload: message value {n}")
        else:
            assert line.endswith("headerKeys: []")


def test_vector2_deep_only_and_shallow(tmp_path: Path) -> None:
    log, _ = simple_records_log(tmp_path)
    deep = run("--deep-iteration", log)
    recs = _record_lines(deep.stdout)
    assert len(recs) == 60 and all(r.endswith("headerKeys: []") for r in recs)
    shallow = run(log)
    assert _record_lines(shallow.stdout) == []
    assert len(lines(shallow.stdout)) == 2 + 4


# ------------------------------------------------------------------ 3-5: indexes

def test_vector3_4_index_checks_on_unclosed_segment(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    index, timeindex = write_indexes(tmp_path, batches, zero_slots=50)
    result = run("--verify-index-only", index, timeindex)
    assert result.exit_code == 0, result.stderr
    assert kafka_err(result.stderr) == ""
    assert lines(result.stdout) == [f"Dumping {index}", f"Dumping {timeindex}"]


def test_index_entries_printed(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    index, timeindex = write_indexes(tmp_path, batches, zero_slots=3)
    sizes = [len(b) for b in batches]
    positions = [0, sizes[0], sizes[0] + sizes[1], sizes[0] + sizes[1] + sizes[2]]
    result = run(index, timeindex)
    assert result.exit_code == 0
    ts0 = 1700000000000
    assert lines(result.stdout) == [
        f"Dumping {index}",
        *(f"offset: {o} position: {p}" for o, p in zip([9, 29, 49, 59], positions)),
        f"Dumping {timeindex}",
        *(f"timestamp: {ts0 + o} offset: {o}" for o in [9, 29, 49, 59]),
    ]


def test_vector5_empty_index(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    index, _ = write_indexes(tmp_path, batches)
    index.write_bytes(b"")
    result = run("--files", index)
    assert result.stdout == f"Dumping {index}\n{index} is empty.\n"
    assert result.exit_code == 0


# ------------------------------------------------------------------ 6: --max-bytes

def test_vector6_max_bytes(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    full = lines(run(log).stdout)
    sizes = [int(re.search(r" size: (\d+) ", line).group(1)) for line in full[2:4]]
    assert sizes == [len(b) for b in batches[:2]]  # the sizes Kafka's test sums, from the bytes
    result = run("--max-bytes", str(sum(sizes)), log)
    out = lines(result.stdout)
    assert [line.startswith("baseOffset") for line in out[2:]] == [True, True]
    assert len(out) == 4  # and no "Found N invalid bytes" line, as Kafka
    assert result.exit_code == 0
    # one byte less: the second batch is not fully inside, so it is not read
    out = lines(run("--max-bytes", str(sum(sizes) - 1), log).stdout)
    assert out[2:] == full[2:3]
    # any value other than Integer.MAX_VALUE hides the trailer, even past a torn tail
    log.write_bytes(b"".join(batches) + b"\x00\x00\x00")
    assert lines(run(log).stdout)[-1] == f"Found 3 invalid bytes at the end of {SEG}.log"
    hidden = run("--max-bytes", str(10 ** 6), log)
    assert lines(hidden.stdout) == full
    assert hidden.exit_code == 0
    shown = run("--max-bytes", "2147483647", log)
    assert lines(shown.stdout)[-1] == f"Found 3 invalid bytes at the end of {SEG}.log"


# ------------------------------------------------------------------ 7: metadata frame errors

def test_vector7_bogus_metadata_frame(tmp_path: Path) -> None:
    varint_10000 = bytes([0x90, 0x4E])
    batch = v2_batch([(None, varint_10000 + varint_10000, NOW)], base_offset=4, leader_epoch=1)
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(batch)
    result = run("--cluster-metadata-decoder", log)
    assert lines(result.stdout)[-1] == (
        f"| offset: 4 CreateTime: {NOW} keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] "
        "payload: Error at 4, skipping. Could not deserialize metadata record due to unknown "
        "frame version 10000(only frame version 1 is supported)")
    skip = run("--cluster-metadata-decoder", "--skip-record-metadata", log)
    assert lines(skip.stdout)[-1].startswith("| payload: Error at 4, skipping.")


def test_headers_keys_listed(tmp_path: Path) -> None:
    batch = v2_batch([(b"k", b"v", NOW)], headers=[[("h1", b"x"), ("h2", None)]])
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(batch)
    out = lines(run("--deep-iteration", log).stdout)
    assert out[-1].endswith(" sequence: -1 headerKeys: [h1,h2]")


def test_log_append_time_batch_uses_max_timestamp(tmp_path: Path) -> None:
    from dump_builders import with_attributes
    raw = v2_batch([(None, b"x", NOW), (None, b"y", NOW + 5)])
    buf = bytearray(with_attributes(raw, 0x08))
    # broker sets maxTimestamp to the append time; it is inside the CRC, so re-sign
    struct.pack_into(">q", buf, 35, NOW + 999)
    import crc32c
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(bytes(buf))
    out = lines(run("--deep-iteration", log).stdout)
    assert f" LogAppendTime: {NOW + 999} size: " in out[2]
    assert out[3].startswith(f"| offset: 0 LogAppendTime: {NOW + 999} ")
    assert out[4].startswith(f"| offset: 1 LogAppendTime: {NOW + 999} ")


# ------------------------------------------------------------------ KRaft control records

def _kraft_control_log(tmp_path: Path, records: list[tuple[int, bytes]]) -> Path:
    from dump_builders import with_attributes
    batch = v2_batch([(struct.pack(">hh", 0, t), value, NOW) for t, value in records])
    log = tmp_path / "00000000000000000100-0000000003.checkpoint"
    log.write_bytes(with_attributes(batch, 0x20))
    return log


def _compact(s: str) -> bytes:
    raw = s.encode()
    return bytes([len(raw) + 1]) + raw


def test_kraft_control_records(tmp_path: Path) -> None:
    dir_id = bytes(range(16))
    voters = (struct.pack(">h", 0) + b"\x02"                     # version, 1 voter
              + struct.pack(">i", 1) + dir_id
              + b"\x02" + _compact("CONTROLLER") + _compact("localhost") + struct.pack(">H", 9093)
              + b"\x00"                                           # endpoint tags
              + struct.pack(">hh", 0, 1) + b"\x00"                # feature + its tags
              + b"\x00"                                           # voter tags
              + b"\x00")                                          # top-level tags
    log = _kraft_control_log(tmp_path, [
        (3, struct.pack(">hq", 0, 10000) + b"\x00"),
        (5, struct.pack(">hh", 0, 1) + b"\x00"),
        (6, voters),
        (2, struct.pack(">hi", 0, 1) + b"\x01\x01\x00"),
        (9, b""),
        (4, struct.pack(">h", 0) + b"\x00"),
    ])
    result = run("--cluster-metadata-decoder", log)
    assert result.exit_code == 0, result.stderr
    out = lines(result.stdout)
    assert out[1] == "Snapshot end offset: 100, epoch: 3"
    suffixes = [line.split("headerKeys: [] ", 1)[1] for line in out if line.startswith("| ")]
    assert suffixes == [
        'SnapshotHeader {"version":0,"lastContainedLogTimestamp":10000}',
        'KRaftVersion {"version":0,"kRaftVersion":1}',
        'KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"AAECAwQFBgcICQoLDA0ODw",'
        '"endpoints":[{"name":"CONTROLLER","host":"localhost","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}',
        # Kafka 4.x decodes LEADER_CHANGE (shape of the real tool's line for the real
        # __cluster_metadata log, tests/realkafka); 3.x printed controlType: LEADER_CHANGE(2)
        'LeaderChange: {"version":0,"leaderId":1,"voters":[],"grantingVoters":[]}',
        "controlType: UNKNOWN(9)",
        'SnapshotFooter {"version":0}',
    ]
    old = lines(run("--kafka-version", "3.9", "--cluster-metadata-decoder", log).stdout)
    assert [line.split("headerKeys: [] ", 1)[1] for line in old if line.startswith("| ")][3] \
        == "controlType: LEADER_CHANGE(2)"
    skipped = lines(run("--cluster-metadata-decoder", "--skip-record-metadata", log).stdout)
    assert skipped[3:] == [""] * 6


def test_index_entry_beyond_max_message_size(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    index, _ = write_indexes(tmp_path, batches)
    result = run("--max-message-size", "100", index)
    assert result.exit_code == 1
    assert "no complete batch within 100 bytes (--max-message-size)" in result.stderr


def test_vector9_empty_segment(tmp_path: Path) -> None:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"")
    result = run("--cluster-metadata-decoder", log)
    assert result.stdout == f"Dumping {log}\nLog starting offset: 0\n"
    assert result.exit_code == 0 and kafka_err(result.stderr) == ""


def test_vector12_non_zero_starting_offset(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000001.log"
    log.write_bytes(v2_batch([(None, b"x", NOW)], base_offset=1))
    out = lines(run("--print-data-log", log).stdout)
    assert out[1] == "Log starting offset: 1"
    assert sum(line.startswith("baseOffset: 1 ") for line in out) == 1
    assert sum(" payload: " in line for line in out) == 1


def test_legacy_inner_message_above_max_message_size_is_dumped(tmp_path: Path) -> None:
    # DumpLogSegments deep-iterates legacy wrappers with maxMessageSize Integer.MAX_VALUE (and
    # --max-message-size is for .index only): a 6 MiB inner message is printed, not an error
    from dump_builders import legacy_set

    big = b"\0" * (6 * 1024 * 1024)
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(legacy_set([(0, b"k", big, 1700000000000), (1, None, b"v", 1700000000001)],
                               magic=1, compression=1))
    (wrapper,) = oracle_batches(log.read_bytes())
    expected = [f"| offset: {r.offset} CreateTime: {r.timestamp} "
                f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {len(r.value)} "
                f"isValid: true crc: {r.checksum}}}" for r in wrapper]
    assert len(expected) == 2 and "valueSize: 6291456 " in expected[0]
    result = run("--kafka-version", "3.9", log, "--deep-iteration", "--max-message-size", "1024")
    assert (result.exit_code, kafka_err(result.stderr)) == (0, "")
    assert lines(result.stdout)[3:] == expected
    # Kafka 4.x dropped the stray '}' after a legacy record's crc
    result = run(log, "--deep-iteration", "--max-message-size", "1024")
    assert lines(result.stdout)[3:] == [line[:-1] for line in expected]

    # the time index check deep-iterates the indexed batch the same way
    timeindex = tmp_path / f"{SEG}.timeindex"
    wrapper_offset = struct.unpack_from(">q", log.read_bytes())[0]  # the batch lastOffset
    timeindex.write_bytes(struct.pack(">qi", 1700000000001, wrapper_offset))
    (tmp_path / f"{SEG}.index").write_bytes(b"")  # without it kafka-dump-log dies
    result = run(timeindex, "--verify-index-only")
    assert (result.exit_code, kafka_err(result.stderr)) == (0, "")
