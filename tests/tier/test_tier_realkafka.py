"""`segtools tier` and `segtools dump` on what a real tiering cluster wrote: Kafka 4.3.1, 3 brokers,
LocalTieredStorage and the topic-based metadata manager (tests/tier/tiered_cluster.py), one
cluster for the module. Oracles: Kafka's own Admin client (ListOffsets EARLIEST, EARLIEST_LOCAL,
LATEST_TIERED, LATEST asked live), the brokers' own local segments, the real kafka-dump-log,
and mutations made here to copies (each one's expected finding follows from the mutation).

Topic ``tt`` keeps nothing tiered locally (local.retention.bytes=1): its history is remote;
topic ``tk`` keeps its local segments, so each remote segment can be compared with the
uploader's own file. The leader-killed and unclean-election cases are in the by-hand script
(realcluster_check.py; docs/TIER.md records their results)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiered_cluster import TieredCluster  # noqa: E402

pytestmark = [pytest.mark.realkafka, pytest.mark.slow]

RECORDS = 2600          # ~2.6 MB of 1 KB values: two rolled 1 MiB segments per topic, tiered


@dataclass
class Tiered:
    out: Path
    brokers: list[str]
    remote: Path
    live: dict[str, dict[str, int]]
    #: offsets a consumer of tt from 0 was served (read from the remote tier: the brokers
    #: fill their remote-log-index-cache/)
    served: list[int]


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tiered]:
    from segtools.realcluster.kafka_runtime import KafkaUnavailableError

    out = tmp_path_factory.mktemp("tiered") / "run"
    try:
        cluster = TieredCluster(out)
    except KafkaUnavailableError as exc:
        pytest.fail(f"real Kafka is needed for this test: {exc}")
    try:
        cluster.start()
        cluster.create_topic("tt", **{"local.retention.bytes": "1"})
        cluster.create_topic("tk")
        cluster.produce("tt", RECORDS)
        cluster.produce("tk", RECORDS)
        cluster.wait(lambda: len(cluster.remote_logs("tt")) >= 2
                     and len(cluster.remote_logs("tk")) >= 2
                     and all(len(v) == 1 for v in cluster.local_logs("tt").values()),
                     "two tiered segments per topic and tt's local copies deleted")
        live = cluster.list_offsets("tt:0", "tk:0")
        served, _ = cluster.consume_from("tt", 0, timeout=30, idle=2)
    finally:
        cluster.stop()
    yield Tiered(out, cluster.brokers, cluster.tiered, live, [o for o, _ in served])


def test_clean_tiering_matches_list_offsets(tiered: Tiered) -> None:
    from segtools.tier import audit

    report = audit(tiered.brokers, remote_root=str(tiered.remote))
    assert report.findings == []
    got = {f"{p.topic}:{p.partition}": {
        "earliest": p.earliest_offset, "earliest_local": p.earliest_local_offset,
        "latest_tiered": p.latest_tiered_offset, "latest": p.log_end_offset}
        for p in report.partitions}
    assert got == tiered.live
    # the cases are not vacuous: tt's history is remote only, tk's is in both tiers
    assert tiered.live["tt:0"]["earliest"] < tiered.live["tt:0"]["earliest_local"]
    assert tiered.live["tk:0"]["earliest_local"] <= tiered.live["tk:0"]["latest_tiered"]


def test_real_remote_index_cache(tiered: Tiered) -> None:
    """The leader of tt served a consumer from offset 0 out of the remote tier: its
    remote-log-index-cache/ holds the indexes of the remote segments it read, named as the
    audit expects, equal to the remote objects (no index_cache finding), one per segment
    below the first local offset."""
    from segtools.tier import audit

    report = audit(tiered.brokers, remote_root=str(tiered.remote))
    live = tiered.live["tt:0"]
    assert tiered.served == list(range(live["earliest"], live["latest"]))
    tt = {s.segment_id: s for s in report.segments if s.topic == "tt"}
    cached = [e for e in report.index_cache if e.segment_id in tt]
    below = {s for s, seg in tt.items() if seg.end_offset < live["earliest_local"]}
    assert {e.segment_id for e in cached} == below, report.index_cache
    assert all(e.start_offset == tt[e.segment_id].start_offset and ".index" in e.files
               for e in cached)
    assert not [f for f in report.findings if f.kind.startswith("index_cache")]


def test_remote_segment_equals_the_uploaders_own(tiered: Tiered) -> None:
    from segtools.files.tiered_storage import scan
    from segtools.tier import audit

    objects = scan(str(tiered.remote))
    segs = [s for s in audit(tiered.brokers).segments if s.topic == "tk"]
    assert len(segs) >= 2
    for seg in segs:
        remote = objects[seg.segment_id].log_path
        assert remote is not None
        local = tiered.out / f"broker-{seg.broker}" / "tk-0" / f"{seg.start_offset:020d}.log"
        assert Path(remote).read_bytes() == local.read_bytes(), seg.segment_id


def test_dump_of_a_remote_segment_equals_kafka_dump_log(tiered: Tiered, tmp_path: Path) -> None:
    """The remote object is dumped where it lies; Kafka's tool cannot parse its name (it dies
    with NumberFormatException), so it reads a copy named as a local segment. Equal except the
    file name and Kafka's "Log starting offset" line, which the name alone gives it."""
    from click.testing import CliRunner

    from segtools.cli.dump import dump
    from segtools.realcluster.kafka_runtime import dump_log_main, kafka_runtime
    from segtools.realcluster.processes import run_tool

    remote = [p for p in sorted(tiered.remote.glob("kafka-tiered-storage/tt-0-*/*.log"))
              if not p.name.startswith("0" * 20)][0]   # a segment not starting at 0
    start = int(remote.name.split("-")[0])
    copy = tmp_path / f"{start:020d}.log"
    shutil.copyfile(remote, copy)
    flags = ["--deep-iteration", "--print-data-log"]
    runtime = kafka_runtime()
    kafka = run_tool(runtime.command(dump_log_main(runtime.version), *flags, "--files", str(copy)),
                     timeout=300)
    assert kafka.returncode == 0, kafka.stderr[-2000:]
    ours = CliRunner().invoke(dump, [*flags, "--files", str(remote)])
    assert ours.exit_code == 0, ours.output[-2000:]
    k_lines = kafka.stdout.splitlines()
    o_lines = ours.stdout_bytes.decode().splitlines()
    assert k_lines[:2] == [f"Dumping {copy}", f"Log starting offset: {start}"]
    assert o_lines[0] == f"Dumping {remote}"
    assert len(k_lines) > 100 and o_lines[1:] == k_lines[2:]


def test_mutated_copies_are_found(tiered: Tiered, tmp_path: Path) -> None:
    from segtools.files.tiered_storage import scan
    from segtools.tier import audit

    remote = tmp_path / "tiered"
    shutil.copytree(tiered.remote, remote)
    brokers = []
    for b in tiered.brokers:
        shutil.copytree(b, tmp_path / Path(b).name)
        brokers.append(str(tmp_path / Path(b).name))
    objects = scan(str(remote))
    by_topic = {t: sorted((o for o in objects.values() if o.topic == t),
                          key=lambda o: o.start_offset) for t in ("tt", "tk")}
    gone, cut = by_topic["tt"][0], by_topic["tt"][1]
    assert gone.log_path is not None and cut.log_path is not None
    os.remove(gone.log_path)                                   # remote file deleted
    os.truncate(cut.log_path, os.path.getsize(cut.log_path) - 100)   # remote object cut
    stray_id = "ZZZZZZZZZZZZZZZZZZZZZQ"
    for suffix, path in by_topic["tk"][0].files.items():       # a leaked copy of objects
        shutil.copyfile(path, Path(path).with_name(f"{99999:020d}-{stray_id}{suffix}"))
    # broker 2's local copy of tk's first tiered segment loses its second half
    local = Path(brokers[1]) / "tk-0" / f"{by_topic['tk'][0].start_offset:020d}.log"
    os.truncate(local, local.stat().st_size // 2)
    found = {(f.kind, f.segment_id, f.broker if f.kind == "overlap_mismatch" else None)
             for f in audit(brokers, remote_root=str(remote)).findings}
    assert found == {
        ("metadata_without_objects", gone.segment_id, None),
        ("object_size_mismatch", cut.segment_id, None),
        ("object_offsets_mismatch", cut.segment_id, None),
        ("object_without_metadata", stray_id, None),
        ("overlap_mismatch", by_topic["tk"][0].segment_id, 2),
    }


def test_compare_reads_the_history_across_tiers(tiered: Tiered) -> None:
    """tt's tiered segments are gone locally: without the remote folder each replica starts
    at EARLIEST_LOCAL, with it at EARLIEST, as Kafka answered live."""
    from segtools import compare

    def tt(paths: list[str]) -> set[tuple[int | None, int | None]]:
        return {(r.log_start_offset, r.log_end_offset)
                for p in compare(paths).partitions if p.verdict.topic == "tt"
                for r in p.verdict.replicas}

    live = tiered.live["tt:0"]
    assert tt(tiered.brokers) == {(live["earliest_local"], live["latest"])}
    assert tt([*tiered.brokers, str(tiered.remote)]) == {(live["earliest"], live["latest"])}
