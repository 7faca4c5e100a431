"""`compare --lost-out` on every generated sample: the records written are exactly the lost
records truth.json lists (what the simulated producers saw lost, independent of compare) that
some replica still holds, each once, in original order, whole (timestamps as on disk), except
records a producer retry wrote again (S10): those survive and are left out."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

from segtools import read_records
from segtools.cli.main import cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "generated"


def test_lost_out_holds_exactly_the_lost_records_of_every_sample(tmp_path):
    runner = CliRunner()
    checked = 0
    for sample in sorted(p for p in SAMPLES.iterdir() if (p / "truth.json").is_file()):
        out = tmp_path / sample.name
        result = runner.invoke(cli, ["compare", str(sample), "--no-spark", "--lost-out", str(out)])
        assert result.exit_code in (0, 1), (sample.name, result.output)
        rows = [json.loads(ln) for ln in (out / "lost.ndjson").read_text().splitlines()]
        table = pq.read_table(out / "lost.parquet")
        assert table.column("replay_id").to_pylist() == [r["replay_id"] for r in rows]
        got = [(r["topic"], r["partition"], r["offset"], r["value"]) for r in rows]
        assert got == sorted(got), sample.name                       # original order
        assert len(set((g[0], g[1], g[2]) for g in got)) == len(got)  # once each
        truth = json.loads((sample / "truth.json").read_text())
        expected = sorted((v["topic"], v["partition"], x["offset"], x["value"])
                          for v in truth.values() for x in v.get("lost", []) if x["on_brokers"])
        if sample.name == "S10-retry-after-failover":
            # the retry wrote them again: each lost value is in the surviving log, so none is out
            assert expected and got == []
            survivors = {v.decode() for v in read_records(sample).column("value").to_pylist() if v}
            assert all(e[3] in survivors for e in expected)
        else:
            assert got == expected, sample.name
        # whole records: timestamps and brokers as on disk
        for r in rows:
            held = read_records(sample / f"broker-{r['broker']}" / f"{r['topic']}-{r['partition']}")
            at = held.column("offset").to_pylist().index(r["offset"])
            assert held.column("timestamp_ms")[at].as_py() == r["timestamp_ms"]
            assert held.column("leader_epoch")[at].as_py() == r["leader_epoch"]
        checked += len(rows)
    assert checked >= 30


def _fingerprint(root: Path) -> dict[str, tuple[bytes, int]]:
    import hashlib

    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).digest(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_lost_out_refuses_a_folder_inside_the_evidence_and_changes_no_input(tmp_path):
    import shutil

    src = SAMPLES / "S7-simple-unclean-election"
    copy = tmp_path / "evidence"
    shutil.copytree(src, copy)
    before = _fingerprint(copy)
    result = CliRunner().invoke(cli, ["compare", str(copy), "--no-spark", "--lost-out", str(copy / "lost")])
    assert result.exit_code == 2 and "inside the input" in result.output
    assert not (copy / "lost").exists()
    for args in (["compare", str(copy), "--no-spark", "--lost-out", str(tmp_path / "lost")],
                 ["advise", str(copy), "--acks", str(copy / "acks.jsonl"), "--json", str(tmp_path / "a.json")]):
        assert CliRunner().invoke(cli, args).exit_code == 1
    assert _fingerprint(copy) == before
