"""`segtools simulate SCENARIO --out DIR`."""

from __future__ import annotations

import json

from click.testing import CliRunner

from segtools.cli.main import cli


def test_simulate_writes_outputs(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("name: x\nseed: 1\ncluster: {brokers: [1, 2], segment_index_bytes: 1024}\n"
                  "topics: [{name: t, replication_factor: 2}]\n"
                  "steps:\n  - produce: {topic: t, acks: all, values: [a, b]}\n")
    result = CliRunner().invoke(cli, ["simulate", str(sc), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "2 records produced, 2 acknowledged, 0 lost" in result.output
    lines = (tmp_path / "out" / "acks.jsonl").read_text().splitlines()
    assert [json.loads(x)["offset"] for x in lines] == [0, 1]
    assert lines[0].startswith('{"acks": "all", "error": null, "key": null')  # sorted keys
    assert (tmp_path / "out" / "broker-1" / "t-0" / "00000000000000000000.log").exists()


def test_bad_scenario_is_a_one_line_error(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("cluster: {brokers: [1]}\ntopics: [{name: t}]\nsteps: [{crash: {broker: 9}}]\n")
    result = CliRunner().invoke(cli, ["simulate", str(sc), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "steps[0] (crash).broker" in result.output and "Traceback" not in result.output


def test_refuses_a_non_empty_output_dir(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("cluster: {brokers: [1]}\ntopics: [{name: t}]\nsteps: []\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    result = CliRunner().invoke(cli, ["simulate", str(sc), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "not empty" in result.output
    assert (tmp_path / "out" / "keep.txt").read_text() == "x"


def test_seed_override_changes_generated_values_only(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("seed: 1\ncluster: {brokers: [1]}\ntopics: [{name: t, replication_factor: 1}]\n"
                  "steps: [{produce: {topic: t, acks: 1, count: 2, value_bytes: 12}}]\n")
    runner = CliRunner()
    values = []
    for i, extra in enumerate([[], ["--seed", "1"], ["--seed", "2"]]):
        out = tmp_path / f"o{i}"
        assert runner.invoke(cli, ["simulate", str(sc), "--out", str(out), *extra]).exit_code == 0
        values.append([json.loads(x)["value"] for x in (out / "acks.jsonl").read_text().splitlines()])
    assert values[0] == values[1] != values[2]
    assert all(len(v) == 12 for v in values[2])


def test_seed_option_equals_the_seed_in_the_file(tmp_path):
    """--seed N gives the same bytes as a file saying seed: N, default assignments included."""
    body = ("cluster: {brokers: [1, 2, 3, 4]}\n"
            "topics: [{name: orders, partitions: 4, replication_factor: 2}]\n"
            "steps:\n  - produce: {topic: orders, acks: all, count: 8}\n")
    (tmp_path / "a.yaml").write_text("name: t\nseed: 1\n" + body)
    (tmp_path / "b.yaml").write_text("name: t\nseed: 5\n" + body)
    r1 = CliRunner().invoke(cli, ["simulate", str(tmp_path / "a.yaml"), "--seed", "5",
                                  "--out", str(tmp_path / "o1")])
    r2 = CliRunner().invoke(cli, ["simulate", str(tmp_path / "b.yaml"), "--out", str(tmp_path / "o2")])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    files1 = sorted(p.relative_to(tmp_path / "o1") for p in (tmp_path / "o1").rglob("*") if p.is_file())
    files2 = sorted(p.relative_to(tmp_path / "o2") for p in (tmp_path / "o2").rglob("*") if p.is_file())
    assert files1 == files2
    for rel in files1:
        assert (tmp_path / "o1" / rel).read_bytes() == (tmp_path / "o2" / rel).read_bytes(), rel


def test_duplicate_snapshot_name_is_refused_before_anything_is_written(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("cluster: {brokers: [1]}\ntopics: [{name: t}]\n"
                  "steps: [{snapshot: {name: x}}, {snapshot: {name: x}}]\n")
    result = CliRunner().invoke(cli, ["simulate", str(sc), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "steps[1] (snapshot).name" in result.output and "used twice" in result.output
    assert not (tmp_path / "out").exists()
