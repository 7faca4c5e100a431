"""`segtools dump` on real broker files (tests/data/realdata), checked line by line against
kafka-python's decode of the same bytes, fetch1.txt/fetch2.txt and the README's facts."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from dump_builders import SEG, java_strings, kafka_python_lines, run

from segtools.dump.options import DumpOptions
from segtools.dump.runner import run_dump

REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"
KRAFT = REALDATA / "kafka-3.6-kraft-flink-stack" / "logdir"
LEGACY = REALDATA / "kafka-0.8-0.9-legacy-messages"


def _real_logs() -> list[Path]:
    return sorted(p for p in REALDATA.rglob("*.log") if p.stat().st_size > 0)


def _dump(path: Path, **opts: object) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_dump([str(path)], DumpOptions(**opts), out=out, err=err)  # type: ignore[arg-type]
    # split on "\n" only: payloads may hold other line-break characters (str.splitlines)
    return status, out.getvalue().split("\n")[:-1], err.getvalue()


@pytest.fixture(scope="module")
def java_decoded(tmp_path_factory: pytest.TempPathFactory) -> dict[bytes, str]:
    """Every real key/value that is not valid UTF-8, decoded by the JVM (one java run)."""
    from dump_builders import oracle_batches

    invalid: list[bytes] = []
    for log in _real_logs():
        for batch in oracle_batches(log.read_bytes()):
            for r in batch:
                for raw in (r.key, r.value):
                    if raw is None:
                        continue
                    try:
                        bytes(raw).decode("utf-8")
                    except UnicodeDecodeError:
                        invalid.append(bytes(raw))
    return java_strings(invalid, tmp_path_factory.mktemp("java"))


@pytest.mark.parametrize("log", _real_logs(), ids=lambda p: str(p.relative_to(REALDATA)))
def test_real_log_matches_kafka_python(log: Path, java_decoded: dict[bytes, str]) -> None:
    # kafka_python_lines renders Kafka 3.x's text (LEADER_CHANGE undecoded)
    status, out, err = _dump(log, print_data_log=True, kafka_version="3.9")
    data = log.read_bytes()
    assert out[0] == f"Dumping {log}"
    assert out[1] == f"Log starting offset: {int(log.name.split('.')[0])}"
    expected = kafka_python_lines(data, lambda raw: java_decoded.get(raw) or raw.decode("utf-8"))
    assert len(expected) > 0
    assert "\n".join(out[2:]) == "\n".join(expected)
    assert (status, err) == (0, "")


def test_realdata_present() -> None:
    assert len(_real_logs()) >= 50


# ------------------------------------------------------------------ legacy 0.8/0.9 message sets

def _legacy_log(tmp_path: Path, name: str) -> Path:
    log = tmp_path / f"{SEG}.log"
    shutil.copyfile(LEGACY / name, log)
    return log


@pytest.mark.parametrize("name, shallow_count", [
    ("fetch1.mytopic.1p.nocompression.kafka.0821.tmy-topic.p0.records.bin", 42),
    ("fetch1.mytopic.1p.gzip.kafka.0821.tmy-topic.p0.records.bin", 1),
    ("fetch1.mytopic.1p.snappy.kafka.0821.tmy-topic.p0.records.bin", None),
    ("fetch1.mytopic.1p.snappy.kafka.0822.tmy-topic.p0.records.bin", None),
])
def test_legacy_fetch1_payloads(tmp_path: Path, name: str, shallow_count: int | None) -> None:
    log = _legacy_log(tmp_path, name)
    texts = (LEGACY / "fetch1.txt").read_text(encoding="utf-8").splitlines()
    status, out, err = _dump(log, print_data_log=True, kafka_version="3.9")  # "crc: N}"
    assert (status, err) == (0, "")
    batch_lines = [line for line in out if line.startswith("offset: ")]
    record_lines = [line for line in out if line.startswith("| ")]
    if shallow_count is not None:
        assert len(batch_lines) == shallow_count
    assert all(line.endswith("isvalid: true") and " magic: 0 " in line for line in batch_lines)
    assert len(record_lines) == 42
    for i, line in enumerate(record_lines):
        prefix = f"| offset: {i} NoTimestampType: -1 keySize: -1 valueSize: "
        assert line.startswith(prefix)
        assert line.endswith(f" payload: {texts[i]}")
        assert " isValid: true crc: " in line and "} payload: " in line
    if name.startswith("fetch1.mytopic.1p.gzip"):
        assert batch_lines[0].startswith("offset: 41 position: 0 NoTimestampType: -1 ")
        assert " compresscodec: gzip " in batch_lines[0]


def test_legacy_invalid_crc_reported(tmp_path: Path) -> None:
    good = _legacy_log(tmp_path, "fetch2.mytopic.nocompression.kafka.0900.tmy-topic.p0.records.bin")
    status, out, _ = _dump(good, print_data_log=True)
    assert status == 0
    text = (LEGACY / "fetch2.txt").read_text(encoding="utf-8").rstrip("\n")
    assert out[-1].endswith(f" payload: {text}")
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad = bad_dir / f"{SEG}.log"
    shutil.copyfile(LEGACY / "fetch2.mytopic.nocompression.invalid_crc.kafka.0900.tmy-topic.p0.records.bin", bad)
    status, out, _ = _dump(bad, print_data_log=True)
    assert status == 1
    assert out[2].endswith("isvalid: false")
    assert " isValid: false crc: " in out[3]
    result = run(bad)
    assert result.exit_code == 1


def test_kafka20_subhash_values() -> None:
    log = REALDATA / "kafka-2.0-zk-small/logdir/subhash-0" / f"{SEG}.log"
    status, out, _ = _dump(log, print_data_log=True, skip_record_metadata=True)
    assert status == 0
    assert [line for line in out if "payload" in line] == [
        "| payload: subhash", "| payload: reddy", "| payload: kaipa"]


# ------------------------------------------------------------------ internal-topic decoders

def _metadata_files() -> list[Path]:
    meta = KRAFT / "__cluster_metadata-0"
    return [*sorted(meta.glob("*.log")), *sorted(meta.glob("*.checkpoint")),
            KRAFT / "bootstrap.checkpoint"]


@pytest.mark.parametrize("path", _metadata_files(), ids=lambda p: p.name)
def test_cluster_metadata_decoder_on_real_files(path: Path) -> None:
    status, out, err = _dump(path, cluster_metadata_decoder=True)
    assert (status, err) == (0, "")
    payloads = [line for line in out if " payload: " in line]
    assert payloads and not any("Error at" in line for line in out)
    assert all(" payload: {\"type\":\"" in line for line in payloads)
    assert not any(" key: " in line for line in out)  # metadata records never show a key
    if path.suffix == ".checkpoint":
        assert " SnapshotHeader {\"version\":0,\"lastContainedLogTimestamp\":" in "\n".join(out)
        assert out[-1].endswith(" SnapshotFooter {\"version\":0}")
        if path.name != "bootstrap.checkpoint":
            end, epoch = path.stem.split("-")
            assert out[1] == f"Snapshot end offset: {int(end)}, epoch: {int(epoch)}"
            assert any("\"type\":\"TOPIC_RECORD\"" in p for p in payloads)
            assert any("\"type\":\"REGISTER_BROKER_RECORD\"" in p for p in payloads)
        else:
            assert out[1] == "KRaft bootstrap snapshot"
        skipped = _dump(path, cluster_metadata_decoder=True, skip_record_metadata=True)[1]
        assert not any(w in line for line in skipped
                       for w in ("SnapshotHeader", "SnapshotFooter", "KRaftVersion", "KRaftVoters"))


def test_metadata_log_topic_names_match_partition_dirs() -> None:
    """Every topic directory of the broker appears as a TOPIC_RECORD in the metadata log or
    the latest snapshot (an independent fact: the directory names)."""
    names = set()
    for path in _metadata_files():
        for line in _dump(path, cluster_metadata_decoder=True)[1]:
            marker = "\"type\":\"TOPIC_RECORD\",\"version\":0,\"data\":{\"name\":\""
            if marker in line:
                names.add(line.split(marker)[1].split("\"")[0])
    dirs = {p.name.rsplit("-", 1)[0] for p in KRAFT.iterdir()
            if p.is_dir() and p.name != "__cluster_metadata-0"}
    assert dirs <= names


def _offsets_segments() -> list[Path]:
    return sorted(p for p in REALDATA.rglob(f"__consumer_offsets-*/{SEG}.log")
                  if p.stat().st_size > 0)


@pytest.mark.parametrize("log", _offsets_segments(), ids=lambda p: str(p.relative_to(REALDATA)))
def test_offsets_decoder_on_real_segments(log: Path) -> None:
    status, out, err = _dump(log, offsets_decoder=True)
    assert (status, err) == (0, "")
    records = [line for line in out if line.startswith("| ")]
    assert records
    for line in records:
        assert "Error at offset" not in line and "Unknown record type" not in line
        assert " key: {\"type\":\"" in line
        assert " payload: {\"version\":\"" in line or line.endswith(" payload: <DELETE>")


def test_whole_kraft_log_dir_only_flags_the_missing_segments() -> None:
    """README: customers-0 and products-0 lost their .log (only indexes remain); everything
    else in the broker dir is healthy, so those are the only problems reported."""
    import json

    out, err = io.StringIO(), io.StringIO()
    status = run_dump([str(KRAFT)], DumpOptions(output="ndjson",
                                                quiet=True), out=out, err=err)
    objs = [json.loads(line) for line in out.getvalue().splitlines()]
    problems = {(o["kind"], Path(o["file"]).parent.name, Path(o["file"]).name)
                for o in objs if o["type"] == "finding" and o["problem"]}
    assert problems == {("missing_log", d, f"{SEG}.{ext}")
                        for d in ("customers-0", "products-0") for ext in ("index", "timeindex")}
    assert status == 1
    files = [o["file"] for o in objs if o["type"] == "file"]
    expected_files = sorted(str(p) for p in KRAFT.rglob("*") if p.is_file())
    assert sorted(files) == expected_files
    # 16,340 batches in the metadata log alone (README)
    meta = [o for o in objs if o["type"] == "batch"
            and o["file"].endswith(f"__cluster_metadata-0/{SEG}.log")]
    assert len(meta) == 16340 and meta[-1]["last_offset"] == 17026
