"""Every simulated sample in samples/generated/ (FORENSICS.md Part C scenarios and more):
the in-process compare agrees with its truth.json, and the evidence snapshots too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from forensics_helpers import check_against_truth, disk_records_by_replica

import segtools
from segtools.forensics.loss import AckIndex

GENERATED = Path(__file__).resolve().parents[2] / "samples" / "generated"
SAMPLES = sorted(p.name for p in GENERATED.iterdir() if (p / "truth.json").is_file()) if GENERATED.is_dir() else []
BENIGN = ("S0-", "S1-", "S11a-", "S14-", "S15-", "S17-", "S18-", "a-preferred")


def _compare(folder: Path, sample: Path):
    controller = sample / "controller"
    metadata = controller if controller.is_dir() else None
    acks = AckIndex.load(sample / "acks.jsonl")
    return (segtools.compare([str(folder)], acks=acks, metadata_log=metadata, find_metadata_log=False),
            metadata is not None)


def test_samples_are_present():
    assert len(SAMPLES) >= 20, f"expected the generated samples in {GENERATED}"


@pytest.mark.parametrize("name", SAMPLES)
def test_sample_matches_truth(name):
    sample = GENERATED / name
    truth = json.loads((sample / "truth.json").read_text())
    report, meta = _compare(sample, sample)
    assert check_against_truth(report, truth, disk_records_by_replica(sample), with_metadata=meta) == []
    if name.startswith(BENIGN):
        statuses = {r.status for p in report.partitions for r in p.verdict.replicas}
        assert statuses <= {"CONSISTENT", "LAGGING_PREFIX"}
        # nothing lost; "safe" (exit 0) only where the evidence proves it, else cannot tell
        assert report.answer() != "lost"
        assert report.exit_code == (0 if report.answer() == "safe" else 1)
    snapshots = sample / "snapshots"
    for snap in sorted(snapshots.iterdir()) if snapshots.is_dir() else []:
        snap_report, _ = _compare(snap, sample)
        problems = check_against_truth(snap_report, truth, disk_records_by_replica(snap),
                                       with_metadata=False, final_state=False)
        assert problems == [], snap.name


def test_key_scenarios_report_the_spec_verdicts():
    """Spot checks of FORENSICS.md Part C against the generated dirs."""
    by = {}
    for name in ("S7-simple-unclean-election", "S8-acks1-clean-failover", "S5-kip101-only-epoch-regression"):
        report, _ = _compare(GENERATED / name, GENERATED / name)
        by[name] = {r.broker: r for p in report.partitions for r in p.verdict.replicas}
    s7 = by["S7-simple-unclean-election"]
    assert (s7[1].status, s7[1].cause) == ("COMMITTED_LOSS", "UNCLEAN_ELECTION")
    assert by["S8-acks1-clean-failover"][1].status == "DIVERGED_UNCOMMITTED"
    assert by["S5-kip101-only-epoch-regression"][101].status == "LOG_MATCHING_VIOLATION"


def test_evidence_snapshots_show_the_loss_before_it_is_truncated():
    s11b, _ = _compare(GENERATED / "S11b-last-replica-standing/snapshots/before-rejoin",
                       GENERATED / "S11b-last-replica-standing")
    r = {x.broker: x for p in s11b.partitions for x in p.verdict.replicas}
    assert r[3].status == "TRUNCATED_BELOW_HW"                     # S11b: 2 is TRUNCATED_BELOW_HW
    for b in (1, 2):
        assert (r[b].status, r[b].fork_offset, r[b].cause) == ("COMMITTED_LOSS", 0, "LOCAL_LOSS_REELECTED")
    s5, _ = _compare(GENERATED / "S5-kip279-fast-unclean-failovers/snapshots/before-101-returns",
                     GENERATED / "S5-kip279-fast-unclean-failovers")
    r = {x.broker: x for p in s5.partitions for x in p.verdict.replicas}
    assert (r[101].status, r[101].fork_offset) == ("COMMITTED_LOSS", 1)   # S5: T = 1
    assert r[101].divergent["records"] == 2 and r[100].status == "CONSISTENT"
    assert s5.exit_code == 1
