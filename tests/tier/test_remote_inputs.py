"""Remote segments as inputs: a LocalTieredStorage folder given to dump and export (built here;
the expected records are the ones written, the ground truth). The real plugin's layout and a
remote object read back against the broker's own segment and the real kafka-dump-log are in
test_tier_realkafka.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.files.sources import resolve
from tests.tier.test_tier_audit import (
    TOPIC_ID,
    _log_bytes,
    _sid,
    _write_log,
    broker_dir,
    remote_object,
    start,
    update,
)

pytestmark = pytest.mark.fast


def _tiers(tmp_path: Path, local_start: int = 20) -> tuple[Path, Path]:
    """Remote segments [0, 9] and [10, 19] (values r<offset>), a broker holding
    [local_start, 30) locally (values x)."""
    root = tmp_path / "tiered"
    for n, lo in ((1, 10), (0, 0)):        # written out of order: the reader sorts them
        remote_object(root, n, lo, _log_bytes(lo, [f"r{o}".encode() for o in range(lo, lo + 10)]))
    md = [start(0, 0, 9, {0: 0}), update(0, 1), start(1, 10, 19, {0: 10}), update(1, 1)]
    return root, broker_dir(tmp_path, md, local_start=local_start, log_end=30, epochs={0: 0})


def test_resolve_reads_the_layout_at_every_level(tmp_path: Path) -> None:
    root, _ = _tiers(tmp_path)
    part = root / "kafka-tiered-storage" / f"t-0-{TOPIC_ID}"
    for given in (root, root / "kafka-tiered-storage", part):
        (src,) = resolve([str(given)]).partitions
        assert (src.topic, src.partition, src.broker) == ("t", 0, None)
        assert src.extra == {"tier": "remote", "topic_id": TOPIC_ID}
        assert [Path(s).name for s in src.segments] == [
            f"{0:020d}-{_sid(0)}.log", f"{10:020d}-{_sid(1)}.log"]
        assert src.files == src.segments     # the indexes under remote names are not dumped


def test_dump_of_a_remote_folder(tmp_path: Path) -> None:
    root, _ = _tiers(tmp_path)
    res = CliRunner().invoke(cli, ["dump", "--deep-iteration", "--print-data-log",
                                   "--files", str(root)])
    assert res.exit_code == 0, res.output
    payloads = [line.rsplit("payload: ", 1)[1] for line in res.stdout.splitlines()
                if line.startswith("| offset:")]
    assert payloads == [f"r{o}" for o in range(20)]
    assert res.stdout.count("Dumping ") == 2


def _offsets_values(out: Path) -> list[tuple[int, bytes]]:
    t = pq.read_table(out).sort_by("offset")
    return list(zip(t["offset"].to_pylist(), t["value"].to_pylist()))


def test_export_joins_the_remote_tier_and_the_local_replica(tmp_path: Path) -> None:
    root, broker = _tiers(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["export", str(root), str(broker), "--topics", "t",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert _offsets_values(out) == [(o, f"r{o}".encode()) for o in range(20)] + [
        (o, b"x") for o in range(20, 30)]


def test_export_by_broker_keeps_the_remote_tier_apart(tmp_path: Path) -> None:
    root, broker = _tiers(tmp_path)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["export", str(root), str(broker), "--topics", "t",
                                   "--by-broker", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert [o for o, _ in _offsets_values(out / "replica=remote")] == list(range(20))
    assert [o for o, _ in _offsets_values(out / "replica=broker-1")] == list(range(20, 30))


def test_export_refuses_offsets_held_in_both_tiers(tmp_path: Path) -> None:
    # the replica still holds [15, 30) locally: remote segment [10, 19] straddles 15
    root, broker = _tiers(tmp_path, local_start=15)
    res = CliRunner().invoke(cli, ["export", str(root), str(broker), "--topics", "t",
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 2
    assert "10..19" in res.output and "--by-broker" in res.output
    assert "Traceback" not in res.output


def test_compare_reads_each_replica_across_tiers(tmp_path: Path) -> None:
    """The remote tier is no replica: it joins the local replica, whose history then starts at
    the remote tier's first offset (20 without it)."""
    from segtools import compare

    root, broker = _tiers(tmp_path)

    def replicas(paths: list[str]) -> list[tuple[int | None, int | None, int | None]]:
        report = compare(paths)
        return [(r.broker, r.log_start_offset, r.log_end_offset) for p in report.partitions
                if p.verdict.topic == "t" for r in p.verdict.replicas]

    assert replicas([str(broker)]) == [(1, 20, 30)]
    assert replicas([str(broker), str(root)]) == [(1, 0, 30)]


def test_compare_reads_only_what_kafka_serves(tmp_path: Path) -> None:
    """Segment [10, 19] was only STARTED (its upload never finished): Kafka serves none of it,
    nor, through that hole, segment [0, 9]; the replica's history stays local. Without any
    __remote_log_metadata on the evidence nothing remote is read, and a warning says why."""
    from segtools.forensics.collect import discover_replicas

    root = tmp_path / "tiered"
    for n, lo in ((0, 0), (1, 10)):
        remote_object(root, n, lo, _log_bytes(lo, [b"r"] * 10))
    broker = broker_dir(tmp_path, [start(0, 0, 9, {0: 0}), update(0, 1), start(1, 10, 19, {0: 10})],
                        local_start=20, log_end=30, epochs={0: 0})
    (spec,) = [s for s in discover_replicas([str(broker), str(root)]) if s.topic == "t"]
    assert [Path(p).name for p, _ in spec.segments] == [f"{20:020d}.log"]
    bare = tmp_path / "bare"
    _write_log(bare / "broker-1" / "t-0", 20, [b"x"] * 10)
    warnings: list[str] = []
    (spec,) = discover_replicas([str(bare / "broker-1"), str(root)], warnings=warnings)
    assert [Path(p).name for p, _ in spec.segments] == [f"{20:020d}.log"]
    assert any("remote tier is not read" in w for w in warnings)


def test_tier_takes_the_remote_folder_as_an_input(tmp_path: Path) -> None:
    """Given among the inputs, the remote folder is checked like --remote: segment 1's objects
    are missing, an unknown segment 5's are there. A partition folder of another partition
    given alone does not vouch for t-0 (no finding about t-0's objects either way)."""
    from segtools.tier import audit

    seg0 = _log_bytes(0, [b"x"] * 10)
    md = [start(0, 0, 9, {0: 0}, size=len(seg0)), update(0, 1), start(1, 10, 19, {0: 10}),
          update(1, 1)]
    broker = broker_dir(tmp_path, md, local_start=20, log_end=30, epochs={0: 0})
    root = tmp_path / "tiered"
    remote_object(root, 0, 0, seg0)
    remote_object(root, 5, 40, _log_bytes(40, [b"y"]))

    def found(report: object) -> set[tuple[str, str]]:
        return {(f.kind, f.segment_id) for f in report.findings}  # type: ignore[attr-defined]

    expected = {("metadata_without_objects", _sid(1)), ("object_without_metadata", _sid(5))}
    assert found(audit([str(broker)], remote_root=str(root))) == expected
    assert found(audit([str(broker), str(root)])) == expected
    other = root / "kafka-tiered-storage" / f"u-3-{TOPIC_ID}"
    other.mkdir()
    (other / f"{0:020d}-{_sid(7)}.log").write_bytes(_log_bytes(0, [b"z"]))
    assert found(audit([str(broker), str(other)])) == {("object_without_metadata", _sid(7))}


def test_the_audit_joins_compares_report(tmp_path: Path) -> None:
    """Clean tiering: the report carries the audit with no finding. A dangling upload of the
    partition: its answer cannot be "safe", and the missing evidence names the finding."""
    from segtools.forensics.api import compare
    from segtools.forensics.report_html import render_html

    _, clean = _tiers(tmp_path / "clean")
    report = compare([str(clean)]).report_json()
    assert report["tier"]["findings"] == [] and len(report["tier"]["partitions"]) == 1
    assert not any(x["evidence"] == "remote_tier" for m in report["summary"]["missing_evidence"]
                   for x in m["missing"])
    md = [start(0, 0, 9, {0: 0}), update(0, 1), start(1, 10, 19, {0: 10})]   # 1 never finished
    bad = broker_dir(tmp_path / "bad", md, local_start=20, log_end=30, epochs={0: 0})
    result = compare([str(bad)])
    report = result.report_json()
    assert [f["kind"] for f in report["tier"]["findings"]] == ["dangling_started", "coverage_gap"]
    assert report["summary"]["answer"] != "safe" and result.exit_code == 1
    tier_gaps = [x for m in report["summary"]["missing_evidence"] if m["topic"] == "t"
                 for x in m["missing"] if x["evidence"] == "remote_tier"]
    assert [x["detail"].split(":")[0] for x in tier_gaps] == ["dangling_started", "coverage_gap"]
    html = render_html(report)
    assert '<section id="tier">' in html and "dangling_started" in html


def test_an_unreadable_replica_leaves_compare_standing_but_not_safe(tmp_path: Path) -> None:
    from segtools.forensics.api import compare

    _, broker = _tiers(tmp_path)
    (broker / "t-0" / "partition.metadata").write_bytes(b"\xff\xfe not a checkpoint")
    result = compare([str(broker)])
    report = result.report_json()
    assert [f["kind"] for f in report["tier"]["findings"]] == ["unreadable_replica", "cannot_tell"]
    assert "partition.metadata" in report["tier"]["findings"][0]["message"]
    assert any(x["evidence"] == "remote_tier" for m in report["summary"]["missing_evidence"]
               for x in m["missing"]) and result.exit_code == 1


def test_an_unreadable_metadata_partition_is_no_all_clear(monkeypatch) -> None:
    """compare's tier section: only "no __remote_log_metadata partition" means nothing was
    tiered; an error reading one names the topic in its path and must leave compare at
    cannot tell (a tier finding), not drop the section."""
    from segtools.errors import InputError
    from segtools.tier import compare_section

    def fails(message: str):
        def audit(paths, **_options):
            raise InputError(message)
        return audit

    monkeypatch.setattr(compare_section, "audit", fails("/d/__remote_log_metadata-3/0.log: truncated batch"))
    section = compare_section.tier_section(["/d"])
    assert section is not None and [f["kind"] for f in section["findings"]] == ["cannot_tell"]
    assert compare_section.missing_evidence(section)
    monkeypatch.setattr(compare_section, "audit",
                        fails("no __remote_log_metadata partition under the inputs: nothing tells"))
    assert compare_section.tier_section(["/d"]) is None
