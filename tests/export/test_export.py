"""Parquet export: values equal kafka-python's decode (an independent reader) for generated
segments of every codec and for the real broker files; layout, filters and safety rules."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import crc32c
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatchBuilder

from segtools.cli.main import cli
from segtools.errors import InputError
from segtools.export import ExportOptions, export
from segtools.records.schema import RECORD_SCHEMA

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _kp_batch(base_offset, rows, *, codec=0, transactional=False, producer_id=-1,
              producer_epoch=-1, base_sequence=-1, log_append_time=None, leader_epoch=0) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        base_sequence=base_sequence, batch_size=1 << 22)
    for i, (ts, key, value, headers) in enumerate(rows):
        builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    if log_append_time is not None:  # broker-assigned time: attribute bit 3 + max timestamp
        attrs = struct.unpack_from(">h", buf, 21)[0] | 0x08
        struct.pack_into(">h", buf, 21, attrs)
        struct.pack_into(">q", buf, 35, log_append_time)
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def _kp_decode(log_bytes: bytes):
    """(offset, timestamp, timestamp_type, key, value, headers, is_control) per record."""
    out = []
    records = MemoryRecords(log_bytes)
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        assert batch.validate_crc()
        for rec in batch:
            out.append((rec.offset, rec.timestamp, rec.timestamp_type, rec.key, rec.value,
                        list(rec.headers) if rec.headers else None, batch.is_control_batch))
    return out


def _parquet_rows(out_dir: Path, topic: str, partition: int):
    rows = []
    for f in sorted(out_dir.glob(f"part-{topic}+{partition}+*.parquet")):
        table = pq.read_table(f, partitioning=None)
        assert table.schema.names == RECORD_SCHEMA.names
        for r in table.to_pylist():
            ts_ms = r["timestamp_ms"]
            headers = [(h["key"], h["value"]) for h in r["headers"]] if r["headers"] is not None else None
            rows.append((r["offset"], ts_ms, r["timestampType"], r["key"], r["value"], headers,
                         r["is_control"]))
            if ts_ms >= 0:
                assert int(r["timestamp"].timestamp() * 1000) == ts_ms
    return rows


@pytest.fixture(scope="module")
def generated_dir(tmp_path_factory) -> Path:
    """A partition dir of kafka-python-built batches covering codecs, headers, nulls,
    idempotent/transactional fields and LogAppendTime."""
    pdir = tmp_path_factory.mktemp("gen") / "payments-3"
    pdir.mkdir()
    segments = {0: bytearray(), 20: bytearray()}
    offset = 0
    for codec in CODECS:
        for variant in range(2):
            rows = []
            for i in range(4):
                key = None if (i == 1) else f"k{codec}-{variant}-{i}".encode()
                value = None if (i == 2) else b"value-%d-%d;" % (offset, i) * 8  # compressible
                headers = [("trace", b"abc"), ("nul", None)] if i == 3 else []
                rows.append((1_700_000_000_000 + offset + i, key, value, headers))
            batch = _kp_batch(offset, rows, codec=codec, transactional=bool(variant),
                              producer_id=1000 + codec if variant else -1,
                              producer_epoch=3 if variant else -1,
                              base_sequence=offset if variant else -1,
                              log_append_time=1_800_000_000_000 if (codec == 1 and variant) else None,
                              leader_epoch=codec)
            segments[0 if offset < 20 else 20] += batch
            offset += 4
    for base, data in segments.items():
        (pdir / f"{base:020d}.log").write_bytes(bytes(data))
    return pdir


def test_generated_segments_match_kafka_python(generated_dir, tmp_path):
    summary = export([generated_dir], str(tmp_path / "out"))
    expected = []
    for seg in sorted(generated_dir.glob("*.log")):
        expected += _kp_decode(seg.read_bytes())
    assert summary.rows == len(expected) == 40
    assert _parquet_rows(tmp_path / "out", "payments", 3) == expected
    # two small consecutive segments share one file, named for its first offset (FILE_BYTES)
    names = sorted(p.name for p in (tmp_path / "out").glob("*.parquet"))
    assert names == ["part-payments+3+0000000000.snappy.parquet"]
    manifest = json.loads((tmp_path / "out" / "_SUCCESS").read_text())
    assert [Path(s).name for s in manifest["parquet_files"][0]["source_segments"]] == [
        "00000000000000000000.log", "00000000000000000020.log"]


def test_a_segment_of_file_bytes_or_more_gets_its_own_file(generated_dir, tmp_path, monkeypatch):
    import segtools.export as export_module

    sizes = sorted(p.stat().st_size for p in generated_dir.glob("*.log"))
    monkeypatch.setattr(export_module, "FILE_BYTES", sizes[0])   # both segments count as large
    summary = export([generated_dir], str(tmp_path / "out"))
    names = sorted(p.name for p in (tmp_path / "out").glob("*.parquet"))
    assert names == ["part-payments+3+0000000000.snappy.parquet", "part-payments+3+0000000020.snappy.parquet"]
    assert [len(f.source_segments) for f in summary.files] == [1, 1]
    assert summary.rows == 40


def test_forensic_columns_carry_batch_fields(generated_dir, tmp_path):
    export([generated_dir], str(tmp_path / "out"))
    table = pq.read_table(tmp_path / "out/part-payments+3+0000000000.snappy.parquet")
    rows = table.to_pylist()
    by_offset = {r["offset"]: r for r in rows}
    # offsets 4..7: codec 0, transactional variant; 12..15 gzip transactional with LogAppendTime
    assert by_offset[5]["producer_id"] == 1000 and by_offset[5]["producer_epoch"] == 3
    assert by_offset[5]["sequence"] == 5 and by_offset[5]["is_transactional"] is True
    assert by_offset[1]["producer_id"] == -1 and by_offset[1]["is_transactional"] is False
    assert by_offset[13]["timestampType"] == 1 and by_offset[13]["timestamp_ms"] == 1_800_000_000_000
    assert by_offset[13]["compression"] == "gzip" and by_offset[13]["leader_epoch"] == 1
    assert by_offset[13]["batch_base_offset"] == 12
    assert all(r["crc_valid"] for r in rows)


@pytest.mark.parametrize("folder", ["kafka-2.5-zk-first-topic/final", "kafka-2.0-zk-small/logdir",
                                    "kafka-3.6-kraft-flink-stack/logdir"])
def test_real_broker_dirs_match_kafka_python(realdata, tmp_path, folder):
    log_dir = realdata / folder
    out = tmp_path / "out"
    summary = export([log_dir], str(out))
    total = 0
    for pdir in sorted(p for p in log_dir.iterdir() if p.is_dir()):
        logs = sorted(pdir.glob("*.log"))
        expected = []
        for seg in logs:
            expected += _kp_decode(seg.read_bytes())
        if not expected:
            continue
        topic, _, part = pdir.name.rpartition("-")
        assert _parquet_rows(out, topic, int(part)) == expected, pdir.name
        total += len(expected)
    assert summary.rows == total > 0


def test_filters(generated_dir, tmp_path):
    opts = ExportOptions(start_offset=6, end_offset=18, include_control=False)
    summary = export([generated_dir], str(tmp_path / "a"), opts)
    offsets = [r[0] for r in _parquet_rows(tmp_path / "a", "payments", 3)]
    assert offsets == list(range(6, 18)) and summary.rows == 12
    ts = 1_700_000_000_000
    export([generated_dir], str(tmp_path / "b"), ExportOptions(start_timestamp=ts + 30, end_timestamp=ts + 34))
    assert [r[0] for r in _parquet_rows(tmp_path / "b", "payments", 3)] == [30, 31, 32, 33]
    none = export([generated_dir], str(tmp_path / "c"), ExportOptions(topics=("orders*",)))
    assert none.partitions == 0 and not (tmp_path / "c").exists()


def test_batch_level_export(generated_dir, tmp_path):
    export([generated_dir], str(tmp_path / "out"), ExportOptions(level="batches"))
    files = sorted((tmp_path / "out").glob("*.parquet"))
    assert [f.name for f in files] == ["part-payments+3+0000000000.batches.snappy.parquet"]
    rows = [r for f in files for r in pq.read_table(f).to_pylist()]
    assert [r["base_offset"] for r in rows] == list(range(0, 40, 4))
    assert [r["compression"] for r in rows[:4]] == ["none", "none", "gzip", "gzip"]
    assert all(r["size"] == r["batch_length"] + 12 and r["crc_valid"] for r in rows)


def test_output_inside_input_is_refused_and_input_untouched(generated_dir):
    before = {p.name: p.read_bytes() for p in generated_dir.iterdir()}
    with pytest.raises(InputError, match="inside the input"):
        export([generated_dir], str(generated_dir / "out"))
    assert {p.name: p.read_bytes() for p in generated_dir.iterdir()} == before


def test_replicas_of_one_partition_need_by_broker(generated_dir, tmp_path):
    cluster = tmp_path / "cluster"
    b1, b2 = cluster / "broker-1", cluster / "broker-2"
    for b in (b1, b2):
        (b / "payments-3").mkdir(parents=True)
        for seg in generated_dir.glob("*.log"):
            (b / "payments-3" / seg.name).write_bytes(seg.read_bytes())
    with pytest.raises(InputError, match="--by-broker"):
        export([b1, b2], str(tmp_path / "out"))
    summary = export([cluster], str(tmp_path / "out2"), ExportOptions(by_broker=True))
    assert summary.rows == 80
    assert (tmp_path / "out2/replica=broker-1").is_dir()
    assert (tmp_path / "out2/replica=broker-2").is_dir()


def test_cli_exit_codes_and_snappy_files(generated_dir, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(cli, ["export", str(generated_dir), "--out", str(tmp_path / "o")])
    assert ok.exit_code == 0, ok.output
    assert "exported 40 records" in ok.output
    f = next((tmp_path / "o").rglob("*.parquet"))
    assert pq.ParquetFile(f).metadata.row_group(0).column(0).compression == "SNAPPY"
    again = runner.invoke(cli, ["export", str(generated_dir), "--out", str(tmp_path / "o")])
    assert again.exit_code == 2 and "not empty" in again.output
    garbage = tmp_path / "g" / "t-0"
    garbage.mkdir(parents=True)
    (garbage / "00000000000000000000.log").write_bytes(b"\x00" * 8 + b"\x00\x00\x00\x05" + b"x" * 40)
    bad = runner.invoke(cli, ["export", str(garbage), "--out", str(tmp_path / "o3")])
    # a size field below Kafka's minimum is a finding, exit 1, as in dump (issue 16)
    assert bad.exit_code == 1 and "Traceback" not in bad.output
    assert "00000000000000000000.log" in bad.output
    flipped = tmp_path / "f" / "payments-3"
    flipped.mkdir(parents=True)
    data = bytearray((generated_dir / "00000000000000000000.log").read_bytes())
    data[-1] ^= 0x01                      # last byte of the last batch: its CRC no longer matches
    (flipped / "00000000000000000000.log").write_bytes(bytes(data))
    corrupt = runner.invoke(cli, ["export", str(flipped), "--out", str(tmp_path / "o4")])
    assert corrupt.exit_code == 1 and "CRC does not match" in corrupt.output
    rows = [r for f in (tmp_path / "o4").rglob("*.parquet") for r in pq.read_table(f).to_pylist()]
    assert sum(not r["crc_valid"] for r in rows) == 4 and len(rows) == 20


def test_internal_topic_files_stay_visible_to_spark(realdata, tmp_path):
    # Spark/Hadoop skip names starting with "_" or "."; internal topics get a part- prefix
    export([realdata / "kafka-2.0-zk-small/logdir"], str(tmp_path / "out"), ExportOptions(topics=("__*",)))
    names = sorted(p.name for p in (tmp_path / "out").rglob("*.parquet"))
    assert names and all(n.startswith("part-__consumer_offsets+") for n in names)


def test_read_records_to_pandas_for_notebooks(realdata):
    import segtools

    log_dir = realdata / "kafka-2.0-zk-small/logdir"
    df = segtools.read_records(log_dir / "subhash-0").to_pandas()
    expected = _kp_decode((log_dir / "subhash-0/00000000000000000000.log").read_bytes())
    assert list(df["offset"]) == [e[0] for e in expected]
    assert [v.decode() for v in df["value"]] == ["subhash", "reddy", "kaipa"]   # realdata README
    assert set(df["topic"]) == {"subhash"} and set(df["partition"]) == {0}
    assert str(df["timestamp"].dt.tz) == "UTC"
