"""The detection core on real broker directories (tests/data/realdata)."""

from __future__ import annotations

import segtools


def test_kraft_logdir_missing_segments_are_truncated_below_hw(realdata):
    # README: customers-0 and products-0 lost their .log on the way (only indexes remain)
    logdir = realdata / "kafka-3.6-kraft-flink-stack" / "logdir"
    report = segtools.compare([str(logdir)], metadata_log=logdir, find_metadata_log=False)
    status = {(p.verdict.topic, p.verdict.partition): p.verdict.replicas[0] for p in report.partitions}
    assert len(status) == 152
    bad = {k for k, r in status.items() if r.status != "CONSISTENT"}
    assert bad == {("customers", 0), ("products", 0)}
    for k in bad:
        r = status[k]
        assert (r.status, r.log_end_offset) == ("TRUNCATED_BELOW_HW", 0) and r.high_watermark > 17000
    assert report.exit_code == 1
    # nothing but the S14-benign notes elsewhere
    codes = {f.code for r in status.values() for f in r.findings if r.status == "CONSISTENT"}
    assert codes <= {"EMPTY_TAIL_EPOCH", "GAP"}, codes


def test_early_vs_final_in_process(realdata):
    src = realdata / "kafka-2.5-zk-first-topic"
    report = segtools.compare([str(src / "early"), str(src / "final")], find_metadata_log=False)
    assert {r.status for p in report.partitions for r in p.verdict.replicas} == {"CONSISTENT", "LAGGING_PREFIX"}
    assert not any(p.lost for p in report.partitions)
    # no metadata log among the real dirs: nothing seen lost, not proven (issue 21)
    assert report.answer() == "cannot_tell" and report.exit_code == 1
    assert all(m["evidence"] in ("metadata_log", "acks") for p in report.partitions for m in p.answer["missing"])
