"""A batch above --max-batch-bytes stops compare with one line naming the whole path (exit 2):
leaving the batch out would make the replica look empty and every replica CONSISTENT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.errors import InputError
from segtools.forensics.collect import discover_replicas
from segtools.writer.batch_builder import NewRecord, build_batch

SEG = "00000000000000000000.log"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bigbatch")
    # one legal 3 MiB batch (a topic with max.message.bytes raised), the same on both replicas
    batch = build_batch([NewRecord(key=b"k", value=b"x" * (3 << 20), timestamp=1_700_000_000_000)],
                        base_offset=0)
    for broker in (1, 2):
        part = root / f"broker-{broker}" / "t-0"
        part.mkdir(parents=True)
        (part / SEG).write_bytes(batch)
        (root / f"broker-{broker}" / "meta.properties").write_text(f"version=0\nbroker.id={broker}\n")
    return root


def test_batch_above_the_limit_is_one_line_exit_2(cluster: Path) -> None:
    result = CliRunner().invoke(cli, ["compare", str(cluster / "broker-1"), str(cluster / "broker-2"),
                                      "--no-spark", "--max-batch-bytes", "1MiB"])
    assert result.exit_code == 2, result.output
    assert "CONSISTENT" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1
    assert str(cluster / "broker-1" / "t-0" / SEG) in lines[0] and "--max-batch-bytes" in lines[0]


def test_raising_the_limit_reads_the_batch(cluster: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["compare", str(cluster / "broker-1"), str(cluster / "broker-2"),
                                      "--no-spark", "--max-batch-bytes", "8MiB", "--report", str(report)])
    # read and consistent; no metadata log to prove nothing is missing: cannot tell, exit 1
    assert result.exit_code == 1 and "answer: CANNOT TELL" in result.output, result.output
    (partition,) = json.loads(report.read_text())["partitions"]
    assert [r["status"] for r in partition["replicas"]] == ["CONSISTENT", "CONSISTENT"]
    assert [r["log_end_offset"] for r in partition["replicas"]] == [1, 1]   # the batch was read


def test_both_runners_scans_raise_too(cluster: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch above the limit is never turned into a read_error row (that would make the
    replica look shorter than it is): stage 1 of both runners raises."""
    from segtools.errors import BatchTooLargeError
    from segtools.forensics.pipeline import scan_segment
    from segtools.spark.datasource import SegmentPartition, read_segment

    monkeypatch.setenv("SEGTOOLS_MAX_BATCH_BYTES", "1MiB")
    spec = next(s for s in discover_replicas([cluster / "broker-1"]) if s.topic == "t")
    path, size = spec.segments[0]
    with pytest.raises(InputError, match="--max-batch-bytes"):
        list(scan_segment(path, spec.topic, spec.partition, spec.replica_id))
    with pytest.raises(BatchTooLargeError):
        list(read_segment(SegmentPartition(path, spec.topic, spec.partition, 0, 0, None, size),
                          level="batches", errors="column"))
