"""`segtools compare --no-spark`: report JSON shape (CONTRACT.md section 4), summary, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from segtools.cli.main import cli

GENERATED = Path(__file__).resolve().parents[2] / "samples" / "generated"
REPLICA_KEYS = {"broker", "log_start_offset", "log_end_offset", "high_watermark", "status",
                "fork_offset", "cause", "divergent"}
LOST_KEYS = {"broker", "offset", "leader_epoch", "key", "value", "committed", "acked"}


def test_report_shape_and_exit_1_on_loss(tmp_path):
    sample = GENERATED / "S7-simple-unclean-election"
    report = tmp_path / "r.json"
    res = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark", "--report", str(report),
                                   "--acks", str(sample / "acks.jsonl"),
                                   "--metadata-log", str(sample / "controller")])
    assert res.exit_code == 1, res.output
    doc = json.loads(report.read_text())
    # "metadata": the broker events of the metadata log (CONTRACT.md section 4)
    assert set(doc) == {"schema_version", "summary", "partitions", "metadata"}
    part = doc["partitions"][0]
    assert {"topic", "partition", "topic_id", "reference_broker", "replicas", "lost_records"} <= set(part)
    truth = json.loads((sample / "truth.json").read_text())["orders-0"]
    assert part["topic_id"] == truth["topic_id"] and part["reference_broker"] == truth["leader"]
    for r in part["replicas"]:
        assert REPLICA_KEYS <= set(r)
    lost = part["lost_records"]
    assert lost and all(LOST_KEYS <= set(x) for x in lost)
    assert all(isinstance(x["acked"], bool) for x in lost)          # --acks given
    bad = next(r for r in part["replicas"] if r["status"] == "COMMITTED_LOSS")
    assert set(bad["divergent"]) >= {"first_offset", "last_offset", "records", "committed_records"}
    assert bad["divergent"]["records"] == len([x for x in lost if x["broker"] == bad["broker"]])
    # terminal summary: problems first
    lines = res.output.splitlines()
    assert lines[0].split()[:4] == ["partition", "broker", "ref", "status"]
    assert "COMMITTED_LOSS" in lines[1]


def test_benign_sample_cannot_tell_without_metadata_log(tmp_path):
    report = tmp_path / "r.json"
    res = CliRunner().invoke(cli, ["compare", str(GENERATED / "S15-delete-records-log-start"), "--no-spark",
                                   "--report", str(report)])
    # S15 has no metadata log: nothing lost, cannot tell (exit 1, issue 21)
    assert res.exit_code == 1 and "answer: CANNOT TELL" in res.output, res.output
    doc = json.loads(report.read_text())
    assert {r["status"] for p in doc["partitions"] for r in p["replicas"]} <= {"CONSISTENT", "LAGGING_PREFIX"}


def test_tables_inside_input_is_refused(tmp_path):
    sample = GENERATED / "S0-healthy-baseline"
    res = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark", "--tables", str(sample / "t")])
    assert res.exit_code == 2 and not (sample / "t").exists()


def test_folder_of_brokers_uses_the_controllers_metadata_log(tmp_path):
    """DIR/controller/__cluster_metadata-0 is read without --metadata-log, so the unclean
    election is named as the cause, exactly as with the flag."""
    sample = GENERATED / "S7-simple-unclean-election"
    auto, given = tmp_path / "auto.json", tmp_path / "given.json"
    res = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark", "--report", str(auto)])
    assert res.exit_code == 1, res.output
    res = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark", "--report", str(given),
                                   "--metadata-log", str(sample / "controller")])
    assert res.exit_code == 1, res.output
    doc = json.loads(auto.read_text())
    assert doc["partitions"] == json.loads(given.read_text())["partitions"]
    bad = next(r for r in doc["partitions"][0]["replicas"] if r["status"] == "COMMITTED_LOSS")
    assert bad["cause"] == "UNCLEAN_ELECTION"


def test_which_inputs_pick_up_a_metadata_log():
    from segtools.cli.compare import default_metadata_log

    sample = GENERATED / "S7-simple-unclean-election"
    assert default_metadata_log([str(GENERATED / "S0-healthy-baseline")]) is None
    assert default_metadata_log([str(GENERATED / "S0-healthy-baseline" / "broker-1")]) is None
    assert default_metadata_log([str(sample / "broker-1" / "orders-0")]) is None
    assert default_metadata_log([str(sample)]) == str(sample / "controller" / "__cluster_metadata-0")
    # one dir per broker, as the demo passes them: their folder's controller log
    assert default_metadata_log([str(sample / "broker-1"), str(sample / "broker-2")]) == \
        str(sample / "controller" / "__cluster_metadata-0")


def test_an_unreadable_controller_log_found_by_itself_is_skipped_with_a_warning(tmp_path):
    import shutil

    from segtools.writer import LogWriter, NewRecord, build_batch

    sample = tmp_path / "S7"
    shutil.copytree(GENERATED / "S7-simple-unclean-election", sample)
    log = LogWriter(sample / "controller" / "__cluster_metadata-0", create=False)
    log.append(build_batch([NewRecord(None, b"\xff\xff\xff")], base_offset=log.log_end_offset,
                           partition_leader_epoch=1))
    log.close()
    res = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark"])
    assert res.exit_code == 1, res.output           # the loss is still found
    assert "ignoring the controller's metadata log" in res.output and "Traceback" not in res.output
    # asked for explicitly, the same log is an input error
    res = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark",
                                   "--metadata-log", str(sample / "controller")])
    assert res.exit_code == 2, res.output


def test_report_inside_input_is_refused(tmp_path):
    import shutil

    sample = tmp_path / "S0"
    shutil.copytree(GENERATED / "S0-healthy-baseline", sample)
    before = sorted(p.relative_to(sample) for p in sample.rglob("*"))
    for target in (sample / "r.json", sample / "broker-1" / "r.json"):
        res = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark", "--report", str(target)])
        assert res.exit_code == 2 and "inputs are evidence" in res.output, res.output
    assert sorted(p.relative_to(sample) for p in sample.rglob("*")) == before


def test_a_corrupt_checkpoint_is_a_finding_with_exit_1(tmp_path):
    import shutil

    sample = tmp_path / "S0"
    shutil.copytree(GENERATED / "S0-healthy-baseline", sample)
    (sample / "broker-2" / "replication-offset-checkpoint").write_bytes(b"0\n1\norders 0\n")
    report = tmp_path / "r.json"
    res = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark", "--report", str(report)])
    assert res.exit_code == 1, res.output        # CONTRACT.md section 1: corrupt bytes -> 1
    b2 = next(r for p in json.loads(report.read_text())["partitions"] for r in p["replicas"]
              if r["broker"] == 2)
    assert "READ_ERROR" in {f["code"] for f in b2["findings"]}
