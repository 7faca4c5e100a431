"""Export on Spark: Spark reads our Parquet with its Kafka source names and types, the Spark
path writes the same files and rows as the single-process path, and the kafka_segments data
source returns the same rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from segtools.export import ExportOptions, export, export_with_spark

pytestmark = pytest.mark.spark

SPARK_KAFKA = [("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"),
               ("offset", "bigint"), ("timestamp", "timestamp"), ("timestampType", "int"),
               ("headers", "array<struct<key:string,value:binary>>")]


def _rows(folder: Path):
    return sorted((r for f in sorted(folder.rglob("*.parquet")) for r in pq.read_table(f).to_pylist()),
                  key=lambda r: (r["topic"], r["partition"], r["offset"]))


def test_spark_reads_exported_parquet_with_kafka_schema(spark, realdata, tmp_path):
    """spark.read.parquet(OUT), the default call, on a plain and a --by-broker export; a topic
    named "123" stays a string (a Hive topic=123 folder would have made it an int)."""
    src = tmp_path / "in"
    shutil.copytree(realdata / "kafka-2.5-zk-first-topic/final", src)
    shutil.copytree(src / "first_topic-0", src / "123-9999")
    out = tmp_path / "out"
    export([src], str(out))
    df = spark.read.parquet(str(out))
    assert df.dtypes[:8] == SPARK_KAFKA
    assert df.count() == sum(pq.read_metadata(f).num_rows for f in out.rglob("*.parquet")) > 0
    first = df.where("topic = 'first_topic' and partition = 0").orderBy("offset").first()
    assert first.offset == 0 and isinstance(first.value, (bytes, bytearray))
    assert [r.topic for r in df.where("partition = 9999").select("topic").distinct().collect()] == ["123"]

    both = tmp_path / "both"
    export([realdata / "kafka-2.5-zk-first-topic/early", src], str(both), ExportOptions(by_broker=True))
    replicas = spark.read.parquet(str(both))
    assert replicas.dtypes[:8] == SPARK_KAFKA and ("replica", "string") in replicas.dtypes
    counts = {r.replica: r["count"] for r in replicas.groupBy("replica").count().collect()}
    on_disk = {d.name.split("=", 1)[1]: sum(pq.read_metadata(f).num_rows for f in d.glob("*.parquet"))
               for d in both.iterdir() if d.is_dir()}
    assert counts == on_disk and len(counts) == 2


def test_spark_path_writes_the_same_files_and_rows(spark, realdata, tmp_path):
    src = realdata / "kafka-2.5-zk-first-topic/final"
    local = export([src], str(tmp_path / "local"), ExportOptions(topics=("first_topic", "new_topic")))
    distributed = export_with_spark([src], str(tmp_path / "spark"),
                                    ExportOptions(topics=("first_topic", "new_topic")), spark)
    rel = lambda files, root: sorted(str(Path(f.path).relative_to(root)) for f in files)  # noqa: E731
    assert rel(local.files, tmp_path / "local") == rel(distributed.files, tmp_path / "spark")
    assert _rows(tmp_path / "local") == _rows(tmp_path / "spark")
    for out in ("local", "spark"):     # both runners mark a finished export the same way
        assert (tmp_path / out / "_SUCCESS").is_file() and not (tmp_path / out / "_PARTIAL").exists()


def test_data_source_returns_the_exported_rows(spark, realdata, tmp_path):
    import segtools.spark

    segtools.spark.register(spark)
    src = realdata / "kafka-2.5-zk-first-topic/final"
    export([src], str(tmp_path / "out"), ExportOptions(topics=("first_topic",)))
    exported = _rows(tmp_path / "out")
    df = spark.read.format("kafka_segments").load(str(src)).where("topic = 'first_topic'")
    got = sorted((r.asDict(recursive=True) for r in df.collect()),
                 key=lambda r: (r["topic"], r["partition"], r["offset"]))
    keys = ["key", "value", "topic", "partition", "offset", "timestampType", "leader_epoch",
            "batch_base_offset", "producer_id", "sequence", "is_control"]
    assert [{k: bytes(r[k]) if isinstance(r[k], bytearray) else r[k] for k in keys} for r in got] == \
           [{k: r[k] for k in keys} for r in exported]
    assert len(got) > 0
