"""Issue 23: replay checks its input against the `_SUCCESS` manifest compare --lost-out wrote
(record count, schema, size and SHA-256 of each data file) and refuses, with a one-line error
and exit 2, a folder that does not check out. Issue 21: the plan refuses internal topics and
control records and holds duplicated rows, offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "generated" / "S7-simple-unclean-election"


@pytest.fixture(scope="module")
def lost_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lost") / "lost"
    result = CliRunner().invoke(cli, ["compare", str(SAMPLE), "--no-spark", "--lost-out", str(out)])
    assert result.exit_code == 1, result.output
    return out


def _copy(lost_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(lost_dir, copy)
    return copy


def _refused(folder: Path, *words: str) -> str:
    result = CliRunner().invoke(cli, ["replay", str(folder), "--dry-run"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_the_untouched_folder_plans_every_lost_record(lost_dir):
    rows = [json.loads(ln) for ln in (lost_dir / "lost.ndjson").read_text().splitlines()]
    assert rows
    result = CliRunner().invoke(cli, ["replay", str(lost_dir), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.output.count("would produce orders-0") == len(rows)
    assert f"would produce {len(rows)}; plan: {len(rows)} produce, 0 skip, 0 hold, 0 refuse" in result.output
    assert "offline" in result.output


def test_a_deleted_manifest_is_refused(lost_dir, tmp_path):
    copy = _copy(lost_dir, tmp_path)
    (copy / "_SUCCESS").unlink()
    _refused(copy, "_SUCCESS")


def test_an_edited_record_count_is_refused(lost_dir, tmp_path):
    copy = _copy(lost_dir, tmp_path)
    manifest = json.loads((copy / "_SUCCESS").read_text())
    manifest["records"] += 1
    (copy / "_SUCCESS").write_text(json.dumps(manifest))
    _refused(copy, "lost.parquet", "manifest says")


def test_a_parquet_file_changed_after_writing_is_refused(lost_dir, tmp_path):
    copy = _copy(lost_dir, tmp_path)
    table = pq.read_table(copy / "lost.parquet")
    pq.write_table(table.slice(1), copy / "lost.parquet")      # a row removed, schema intact
    _refused(copy, "lost.parquet", "SHA-256")


def test_an_ndjson_file_changed_after_writing_is_refused(lost_dir, tmp_path):
    copy = _copy(lost_dir, tmp_path)
    with open(copy / "lost.ndjson", "a") as fh:
        fh.write("\n")
    _refused(copy, "lost.ndjson", "SHA-256")


def test_a_schema_mismatch_is_refused_even_with_consistent_checksums(lost_dir, tmp_path):
    import hashlib

    copy = _copy(lost_dir, tmp_path)
    table = pq.read_table(copy / "lost.parquet")
    table = table.drop_columns(["txn_state"]).append_column("txn_state", pa.array(["committed"] * table.num_rows))
    pq.write_table(table, copy / "lost.parquet")
    manifest = json.loads((copy / "_SUCCESS").read_text())
    data = (copy / "lost.parquet").read_bytes()
    manifest["files"]["lost.parquet"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (copy / "_SUCCESS").write_text(json.dumps(manifest))
    _refused(copy, "schema")
    manifest["schema"] = manifest["schema"][:-1]
    (copy / "_SUCCESS").write_text(json.dumps(manifest))
    _refused(copy, "schema")


def test_an_old_manifest_without_checksums_and_a_partial_run_are_refused(lost_dir, tmp_path):
    copy = _copy(lost_dir, tmp_path)
    manifest = json.loads((copy / "_SUCCESS").read_text())
    del manifest["files"]
    (copy / "_SUCCESS").write_text(json.dumps(manifest))
    _refused(copy, "checksums")
    (copy / "_SUCCESS").write_text("not json")
    _refused(copy, "manifest")
    other = _copy(lost_dir, tmp_path / "p")
    (other / "_PARTIAL").write_text("incomplete")
    _refused(other, "_PARTIAL")


def test_producing_without_a_cluster_is_a_usage_error(lost_dir):
    result = CliRunner().invoke(cli, ["replay", str(lost_dir)])
    assert result.exit_code == 2 and "--dry-run" in result.output


def _row(topic: str, offset: int, **kw) -> dict:
    row = {"topic": topic, "partition": 0, "offset": offset, "leader_epoch": 0, "key": None,
           "value": b"v", "headers": [], "replay_id": f"{topic}/0/{offset}/0", "is_transactional": False,
           "is_control": False, "txn_state": "none", "producer_id": -1, "producer_epoch": -1,
           "superseded_by": None}
    row.update(kw)
    return row


def test_the_plan_refuses_internal_topics_and_control_records_and_holds_duplicates():
    from segtools.replay import plan

    rows = [_row("__consumer_offsets", 0), _row("__transaction_state", 1), _row("__cluster_metadata", 2),
            _row("__share_group_state", 3), _row("orders", 4, is_control=True),
            _row("orders", 5), _row("orders", 5), _row("orders", 6)]
    got = [(p.row["topic"], p.row["offset"], p.action, p.reason) for p in plan(rows)]
    assert got == [("__consumer_offsets", 0, "refuse", "internal_topic"),
                   ("__transaction_state", 1, "refuse", "internal_topic"),
                   ("__cluster_metadata", 2, "refuse", "internal_topic"),
                   ("__share_group_state", 3, "refuse", "internal_topic"),
                   ("orders", 4, "refuse", "control_record"),
                   ("orders", 5, "produce", "lost"), ("orders", 5, "hold", "duplicate"),
                   ("orders", 6, "produce", "lost")]


def test_the_plan_keeps_transactions_whole_and_never_produces_undecided_ones():
    from segtools.replay import plan

    txn = {"is_transactional": True, "producer_id": 7, "producer_epoch": 0}
    rows = [_row("t", 0, txn_state="committed", **txn),
            _row("t", 1, txn_state="committed", key=b"k", superseded_by=9, **txn),
            _row("t", 2, txn_state="committed", is_transactional=True, producer_id=8, producer_epoch=0),
            _row("t", 3, txn_state="open", is_transactional=True, producer_id=9, producer_epoch=0),
            _row("t", 4, txn_state="unknown", is_transactional=True, producer_id=10, producer_epoch=3),
            _row("t", 5, txn_state="aborted", is_transactional=True, producer_id=11, producer_epoch=0),
            _row("t", 6, txn_state=None)]
    got = [(p.row["offset"], p.action, p.reason) for p in plan(rows)]
    assert got == [(0, "hold", "transaction_incomplete"), (1, "hold", "superseded"), (2, "produce", "lost"),
                   (3, "hold", "transaction_open"), (4, "hold", "transaction_unknown"),
                   (5, "hold", "aborted"), (6, "hold", "transaction_unknown")]
    forced = [(p.row["offset"], p.action) for p in plan(rows, include_superseded=True)][:3]
    assert forced == [(0, "produce"), (1, "produce"), (2, "produce")]
    # with a cluster: what an earlier replay wrote is skipped, a newer value there too
    cluster = [(p.row["offset"], p.action, p.reason)
               for p in plan(rows, present={"t/0/2/0"}, newer_in_cluster={("t", 0, b"k"): 1})][:3]
    assert cluster == [(0, "hold", "transaction_incomplete"), (1, "skip", "superseded_in_cluster"),
                       (2, "skip", "already_in_cluster")]


def test_the_plan_holds_records_older_than_the_topics_retention():
    """With a cluster: a record whose original timestamp is past the topic's retention.ms would
    be deleted by the broker at its next retention check (seen on Kafka 4.3.1:
    tests/realkafka/test_replay_transactions_kafka.py)."""
    from segtools.replay import plan

    day = 86_400_000
    now = 100 * day
    rows = [_row("t", 0, timestamp_ms=now - 8 * day), _row("t", 1, timestamp_ms=now - 6 * day),
            _row("u", 2, timestamp_ms=now - 8 * day), _row("v", 3, timestamp_ms=-1)]
    got = [(p.row["offset"], p.action, p.reason)
           for p in plan(rows, retention_ms={"t": 7 * day, "u": -1, "v": 7 * day}, now_ms=now)]
    assert got == [(0, "hold", "older_than_retention"), (1, "produce", "lost"), (2, "produce", "lost"),
                   (3, "produce", "lost")]


def test_control_characters_in_a_topic_are_printed_visibly(lost_dir, tmp_path):
    """A folder whose checksums agree (as a hand-made one would) with a topic holding NUL and
    U+202E: planned like any record, and the terminal never gets the raw characters."""
    import hashlib

    copy = _copy(lost_dir, tmp_path)
    table = pq.read_table(copy / "lost.parquet")
    topics = pa.array(["or\x00d\u202eers"] * table.num_rows)
    table = table.set_column(table.schema.get_field_index("topic"), "topic", topics)
    pq.write_table(table, copy / "lost.parquet")
    manifest = json.loads((copy / "_SUCCESS").read_text())
    for name in ("lost.parquet", "lost.ndjson"):
        data = (copy / name).read_bytes()
        manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (copy / "_SUCCESS").write_text(json.dumps(manifest))
    result = CliRunner().invoke(cli, ["replay", str(copy), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "\x00" not in result.output and "\u202e" not in result.output
    assert "would produce or\\x00d\\u202eers-0" in result.output
