"""`segtools compare` on what users really hand it: which runner runs, the legend of replica
ids, warnings about the inputs, honest loss counts, the report's summary block, outputs that
must never touch an input, odd inputs (issues 9 and 16)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
GENERATED = REPO / "samples" / "generated"
HEALTHY = GENERATED / "S0-healthy-baseline"
STACK = "kafka-3.6-kraft-flink-stack"


def _run(*args: str):
    return CliRunner().invoke(cli, ["compare", *args])


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.fixture()
def no_spark(monkeypatch):
    """Fail loudly if anything starts Spark."""
    import segtools.spark.session as session

    def refuse(*a, **k):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(session, "get_spark", refuse)


# ---------------------------------------------------------------- runner choice (issue 9)

def test_small_input_runs_in_process_by_default(no_spark, tmp_path):
    res = _run(str(HEALTHY), "--report", str(tmp_path / "r.json"))
    # S0 has no metadata log and no acks: nothing lost, but not proven (issue 21)
    assert res.exit_code == 1 and "answer: CANNOT TELL" in res.stdout, res.output
    assert "starting Spark" not in res.stderr
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["runner"] == "in-process"


def test_large_input_or_master_or_spark_flag_picks_spark(monkeypatch):
    """Spark is chosen above the threshold, with --master and with --spark; the stderr line
    says so before the JVM starts (get_spark is replaced by a marker error here)."""
    import segtools.cli.compare as cmd
    import segtools.spark.session as session
    from segtools.errors import SegtoolsError

    class Started(SegtoolsError):
        pass

    calls = []

    def fake(master=None, **k):
        calls.append(master)
        raise Started("spark would start here")

    monkeypatch.setattr(session, "get_spark", fake)
    monkeypatch.setattr(session, "check_java", lambda: "java")
    # another test in this worker may have left a SparkSession active: compare would use it
    from pyspark.sql import SparkSession
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    for args in (["--spark"], ["--master", "local[1]"]):
        res = _run(str(HEALTHY), *args)
        assert res.exit_code == 2 and "spark would start here" in res.stderr, res.output
        assert "compare: starting Spark" in res.stderr
    assert calls == [None, "local[1]"]
    monkeypatch.setattr(cmd, "IN_PROCESS_MAX_BYTES", 1000)       # the sample holds more
    res = _run(str(HEALTHY))
    assert res.exit_code == 2 and "in-process threshold" in res.stderr, res.output
    assert _run(str(HEALTHY), "--no-spark", "--master", "local[1]").exit_code == 2


def test_threshold_is_documented_with_its_measurement():
    import segtools.cli.compare as cmd

    help_text = _run("--help").output
    gib = f"{cmd.IN_PROCESS_MAX_BYTES / 2**30:g} GiB"
    assert gib in " ".join(help_text.split())
    usage = (REPO / "docs" / "USAGE.md").read_text()
    assert "segtools compare`: runner" in usage and gib in usage


def _no_java_env(tmp_path: Path, script: str | None) -> dict[str, str]:
    env = dict(os.environ)
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    if script is not None:
        java = home / "bin" / "java"
        java.write_text(script)
        java.chmod(0o755)
    env["JAVA_HOME"] = str(home)          # Spark uses it before any java on PATH
    return env


@pytest.mark.parametrize("script", [None, "#!/bin/sh\necho 'broken JVM' >&2\nexit 1\n",
                                    # passes -version, then dies: pyspark's own gateway error
                                    "#!/bin/sh\n[ \"$1\" = -version ] && exit 0\nexit 3\n"],
                         ids=["missing", "broken", "gateway-exits"])
def test_spark_without_usable_java_is_one_line_exit_2(tmp_path, script):
    env = _no_java_env(tmp_path, script)
    res = subprocess.run([sys.executable, "-m", "segtools", "compare", str(HEALTHY), "--spark"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    err = [line for line in res.stderr.splitlines() if line.strip()]
    ours = [line for line in err if line.startswith(("compare:", "Error:"))]
    # at most the "starting Spark" line, then one error line (what a dying JVM prints itself
    # may come in between)
    assert len(ours) <= 2 and err[-1].startswith("Error:"), res.stderr
    assert "Java" in err[-1] and "JAVA_HOME" in err[-1] and "--no-spark" in err[-1], err[-1]


# ---------------------------------------------------------------- inputs and legend (issue 9)

def test_legend_names_every_dir_and_its_replica_id():
    res = _run(str(HEALTHY), "--no-spark")
    assert res.exit_code == 1 and "answer: CANNOT TELL" in res.stdout, res.output   # no metadata log
    for b in (1, 2, 3):
        assert re.search(rf"broker {b} = {re.escape(str(HEALTHY / f'broker-{b}'))} \(claims broker id {b}",
                         res.stdout), res.stdout


def test_one_broker_dir_warns_nothing_to_compare():
    res = _run(str(HEALTHY / "broker-1"), "--no-spark")
    assert "warning: nothing to compare" in res.stderr, res.output
    assert "nothing to compare" not in _run(str(HEALTHY), "--no-spark").stderr


def test_different_cluster_ids_warn_and_strict_refuses(tmp_path):
    root = _copy(HEALTHY, tmp_path / "c")
    meta = root / "broker-2" / "meta.properties"
    meta.write_text(meta.read_text().replace("cluster.id=Ag2tC1gczebKGRU0AnoIvA", "cluster.id=OtherClusterXXXXXXXXXXX"))
    res = _run(str(root), "--no-spark")
    warning = next(line for line in res.stderr.splitlines() if "different clusters" in line)
    assert "Ag2tC1gczebKGRU0AnoIvA" in warning and "OtherClusterXXXXXXXXXXX" in warning
    assert str(root / "broker-1") in warning and str(root / "broker-2") in warning
    assert res.exit_code == 1 and "answer: CANNOT TELL" in res.stdout   # a warning, not a refusal
    strict = _run(str(root), "--no-spark", "--strict")
    assert strict.exit_code == 2 and "different clusters" in strict.stderr
    assert "different clusters" not in _run(str(HEALTHY), "--no-spark", "--strict").stderr


def test_two_dirs_claiming_one_broker_id_warn(tmp_path):
    root = _copy(HEALTHY, tmp_path / "c")
    meta = root / "broker-3" / "meta.properties"
    meta.write_text(meta.read_text().replace("node.id=3", "node.id=1"))
    res = _run(str(root), "--no-spark")
    line = next(x for x in res.stderr.splitlines() if "claim broker id 1" in x)
    assert str(root / "broker-1") in line and str(root / "broker-3") in line


def test_byte_exact_copy_is_noticed_in_output_and_report(tmp_path):
    a = _copy(HEALTHY / "broker-1", tmp_path / "a")
    b = _copy(HEALTHY / "broker-1", tmp_path / "b")
    c = _copy(HEALTHY / "broker-2", tmp_path / "c")
    report = tmp_path / "r.json"
    res = _run(str(a), str(b), str(c), "--no-spark", "--report", str(report))
    assert f"{b} (broker" in res.stderr and f"byte-exact copy of {a}" in res.stderr, res.stderr
    dirs = {d["log_dir"]: d for d in json.loads(report.read_text())["summary"]["inputs"]["log_dirs"]}
    assert dirs[str(b)]["copy_of"] == str(a) and dirs[str(c)]["copy_of"] is None
    assert any("byte-exact copy" in w for w in json.loads(report.read_text())["summary"]["warnings"])
    assert "byte-exact" not in _run(str(HEALTHY), "--no-spark").stderr


def test_same_dir_twice_is_compared_once():
    once = _run(str(HEALTHY / "broker-1"), str(HEALTHY / "broker-2"), "--no-spark")
    twice = _run(str(HEALTHY / "broker-1"), str(HEALTHY / "broker-2"), str(HEALTHY / "broker-1") + "/",
                 "--no-spark")
    assert "same directory" in twice.stderr
    assert twice.stdout == once.stdout


def test_a_broker_dir_and_its_partition_dir_are_one_replica():
    from segtools.forensics.collect import discover_replicas

    warnings: list[str] = []
    specs = discover_replicas([str(HEALTHY / "broker-1"), str(HEALTHY / "broker-1" / "orders-0")],
                              warnings=warnings)
    assert len(specs) == 1 and len(warnings) == 1


def test_empty_broker_dir_is_no_phantom_partition(tmp_path):
    root = _copy(HEALTHY, tmp_path / "c")
    shutil.rmtree(root / "broker-3")
    (root / "broker-3").mkdir()
    report = tmp_path / "r.json"
    _run(str(root), "--no-spark", "--report", str(report))
    parts = json.loads(report.read_text())["partitions"]
    assert [(p["topic"], p["partition"]) for p in parts] == [("orders", 0)]


# ---------------------------------------------------------------- honest loss counts (issue 9)

def test_committed_offsets_missing_on_every_replica_are_counted(realdata, tmp_path):
    """Three copies of a 3.6 log dir whose customers-0 and products-0 lost their segments
    (indexes and checkpoints remain): the HW checkpoint says 17,081 and 17,097 committed."""
    src = realdata / STACK / "logdir"
    assert not list((src / "customers-0").glob("*.log")) and not list((src / "products-0").glob("*.log"))
    hw = {}
    for line in (src / "replication-offset-checkpoint").read_text().splitlines()[2:]:
        topic, part, off = line.split()
        hw[(topic, int(part))] = int(off)
    copies = []
    for i in range(3):
        d = tmp_path / f"copy{i}"
        shutil.copytree(src, d, ignore=shutil.ignore_patterns("__*", "_confluent*", "connect-*"))
        copies.append(str(d))
    report = tmp_path / "r.json"
    res = _run(*copies, "--no-spark", "--report", str(report))
    assert res.exit_code == 1
    want = hw[("customers", 0)] + hw[("products", 0)]
    assert want == 17081 + 17097
    last = next(line for line in res.stdout.splitlines() if "lost record(s)" in line)
    assert f"{want} committed offset(s) lost with no copy on any replica" in last, last
    doc = json.loads(report.read_text())
    assert doc["summary"]["offsets_lost"]["total"] == want
    assert doc["summary"]["verdict"] == "COMMITTED_LOSS"
    lost = {(p["topic"], p["partition"]): f for p in doc["partitions"] for f in p["findings"]
            if f["code"] == "COMMITTED_OFFSETS_LOST"}
    assert set(lost) == {("customers", 0), ("products", 0)}
    assert lost[("customers", 0)]["offset"] == 0 and "17081" in lost[("customers", 0)]["detail"]


def test_offsets_held_by_one_replica_are_not_lost():
    import segtools

    # S11a: a follower lost its unflushed tail, the leader still holds it
    report = segtools.compare([str(GENERATED / "S11a-follower-power-loss")], find_metadata_log=False)
    assert all(p.lost_offsets is None for p in report.partitions)


# ---------------------------------------------------------------- report.json summary (issue 9)

def test_report_summary_block(tmp_path):
    sample = GENERATED / "S7-simple-unclean-election"
    report = tmp_path / "r.json"
    res = _run(str(sample), "--no-spark", "--report", str(report), "--acks", str(sample / "acks.jsonl"))
    assert res.exit_code == 1
    doc = json.loads(report.read_text())
    # "metadata" (broker events, CONTRACT.md section 4) follows: S7 has a controller log
    assert list(doc) == ["schema_version", "summary", "partitions", "metadata"]
    s = doc["summary"]
    import segtools
    assert s["version"] == segtools.__version__ and s["exit_code"] == 1 and s["runner"] == "in-process"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", s["generated_at"])
    assert [d["broker"] for d in s["inputs"]["log_dirs"]] == [1, 2, 3]
    assert s["inputs"]["log_dirs"][0]["log_dir"] == str(sample / "broker-1")
    truth = json.loads((sample / "truth.json").read_text())["orders-0"]["lost"]
    assert s["records_lost"]["total"] == len(truth)
    statuses = [r["status"] for p in doc["partitions"] for r in p["replicas"]]
    assert s["totals"]["by_status"] == {x: statuses.count(x) for x in set(statuses)}
    assert s["records_lost"]["acked"] is not None and s["offsets_lost"]["total"] == 0
    assert s["verdict"] == "COMMITTED_LOSS"
    # the partitions list is what it always was
    import segtools
    same = segtools.compare([str(sample)], acks=sample / "acks.jsonl", find_metadata_log=False,
                            metadata_log=sample / "controller").to_json()
    assert doc["partitions"] == same["partitions"]


def test_report_md_lists_every_status_and_finding_code():
    from segtools.forensics.findings import INFO_CODES, STATUS_ORDER

    text = (REPO / "docs" / "REPORT.md").read_text()
    for code in [*STATUS_ORDER, *INFO_CODES, "COMMITTED_OFFSETS_LOST", "ACKED_OFFSETS_LOST", "CLEAN", "PROBLEMS",
                 "CANNOT_TELL", "cannot_tell", "safe", "lost"]:
        assert f"`{code}`" in text, code
    assert "docs/REPORT.md" in (REPO / "README.md").read_text()


# ---------------------------------------------------------------- issue 16

def test_report_through_a_hard_link_to_an_input_is_refused(tmp_path):
    root = _copy(HEALTHY, tmp_path / "c")
    ckpt = root / "broker-1" / "replication-offset-checkpoint"
    before = ckpt.read_bytes()
    link = tmp_path / "report.json"
    os.link(ckpt, link)
    res = _run(str(root), "--no-spark", "--report", str(link))
    assert res.exit_code == 2 and "is an input file" in res.stderr, res.output
    assert ckpt.read_bytes() == before


def test_report_replaces_an_existing_file_by_rename(tmp_path):
    out = tmp_path / "r.json"
    other = tmp_path / "other-name"
    out.write_text("old")
    os.link(out, other)            # not an input: replaced by rename, the other name keeps its bytes
    assert _run(str(HEALTHY), "--no-spark", "--report", str(out)).exit_code == 1     # cannot tell (no metadata log)
    assert other.read_text() == "old" and json.loads(out.read_text())["summary"]["exit_code"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-name", "r.json"]


def test_corrupt_epoch_checkpoint_counts_in_the_table(tmp_path):
    root = _copy(HEALTHY, tmp_path / "c")
    (root / "broker-2" / "orders-0" / "leader-epoch-checkpoint").write_text("garbage\n")
    res = _run(str(root), "--no-spark")
    assert res.exit_code == 1
    assert "1 with problems" in res.stdout, res.stdout


def test_other_topic_id_exits_1(tmp_path):
    root = _copy(HEALTHY, tmp_path / "c")
    meta = root / "broker-2" / "orders-0" / "partition.metadata"
    text = meta.read_text()
    tid = re.search(r"topic_id: (\S+)", text).group(1)
    meta.write_text(text.replace(tid, ("A" if tid[0] != "A" else "B") + tid[1:]))
    res = _run(str(root), "--no-spark")
    assert "NOT_COMPARABLE" in res.stdout and res.exit_code == 1, res.output
    assert "1 with problems" in res.stdout


def test_non_utf8_partition_dir_name_no_traceback(tmp_path):
    root = _copy(HEALTHY, tmp_path / "c")
    bad = os.fsencode(str(root / "broker-2")) + b"/ord\xffers-0"
    os.rename(os.fsencode(str(root / "broker-2" / "orders-0")), bad)
    res = subprocess.run([sys.executable, "-m", "segtools", "compare", str(root), "--no-spark"],
                         capture_output=True, timeout=120)
    assert b"Traceback" not in res.stderr and res.returncode in (0, 1), res.stderr
    assert b"ord\\xffers-0" in res.stdout
    # Spark reads through pyarrow (UTF-8 paths only): refused in one line before it starts
    res = subprocess.run([sys.executable, "-m", "segtools", "compare", str(root), "--spark"],
                         capture_output=True, timeout=120)
    assert res.returncode == 2 and b"Traceback" not in res.stderr, res.stderr
    assert b"not UTF-8" in res.stderr and b"starting Spark" not in res.stderr


def test_report_md_lists_every_missing_evidence_kind():
    """Every `evidence` value compare can name is explained in docs/REPORT.md (issue 21)."""
    import re

    src = (REPO / "segtools" / "forensics" / "answers.py").read_text()
    kinds = set(re.findall(r'_missing\(\s*"(\w+)"', src))
    assert kinds >= {"metadata_log", "log_dir", "acks", "untruncated_log", "segments_below_log_start", "intact_copy"}
    text = (REPO / "docs" / "REPORT.md").read_text()
    for k in kinds:
        assert f"`{k}`" in text, k
