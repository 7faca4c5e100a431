"""dump, export and compare read s3:// copies of real broker dirs from a real S3-compatible
server (moto's, on 127.0.0.1) and give what they give on the local copy; outputs go to the
bucket or are refused when they would land inside an input prefix; nothing is ever written
under the input prefixes."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

from .conftest import BUCKET


def _run(args: list[str]):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


@pytest.fixture
def untouched(s3, evidence):
    """The objects under the input prefixes, before and after the test: equal."""
    before = {p: s3.keys(p) for p in evidence.prefixes}
    assert all(before.values())
    yield
    assert {p: s3.keys(p) for p in evidence.prefixes} == before


def test_dump_s3_equals_local(evidence, untouched):
    local = evidence.local["realdata"] / "final"
    uri = evidence.uri["realdata"] + "/final"
    for flags in ([], ["--deep-iteration", "--print-data-log"], ["--output", "json"]):
        on_disk = _run(["dump", str(local), *flags])
        remote = _run(["dump", uri, *flags])
        assert on_disk.exit_code == remote.exit_code, remote.output
        assert "Dumping" in on_disk.output or flags
        # the same text, each file named by its URI instead of its local path; Kafka prints
        # its closing "not found" sections in Java HashMap order of the file paths, which
        # differ here, so those sections may come in another order (the lines are the same)
        expected = on_disk.output.replace(str(local), uri)
        cut = "The following indexed offsets are not found"
        assert remote.output.split(cut)[0] == expected.split(cut)[0]
        assert sorted(remote.output.splitlines()) == sorted(expected.splitlines())
        assert uri + "/__consumer_offsets-32/00000000000000000000.log" in remote.output


def test_dump_missing_object_is_one_line(evidence, untouched):
    result = CliRunner().invoke(cli, ["dump", evidence.uri["realdata"] + "/final/no-such-0/00000000000000000000.log"])
    assert result.exit_code == 2
    assert "no-such-0" in result.output and "Traceback" not in result.output


def _rows(path: str) -> list[dict]:
    table = pq.read_table(path) if "://" not in path else None
    if table is None:
        from pyarrow import fs as pafs

        filesystem, inner = pafs.FileSystem.from_uri(path)
        table = pq.read_table(inner, filesystem=filesystem)
    rows = table.to_pylist()
    rows.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
    return rows


def test_export_s3_input_and_output(s3, evidence, untouched, tmp_path):
    local = evidence.local["realdata"] / "final"
    uri = evidence.uri["realdata"] + "/final"
    out_local = tmp_path / "pq"
    out_uri = f"s3://{BUCKET}/exports/realdata"
    assert _run(["export", str(local), "--out", str(out_local)]).exit_code == 0
    result = _run(["export", uri, "--out", out_uri])
    assert result.exit_code == 0, result.output
    expected = _rows(str(out_local))
    assert expected, "the local export has rows"
    # read back by pyarrow from the bucket (its own S3 client, the standard variables)
    assert _rows(out_uri) == expected
    keys = s3.keys("exports/realdata/")
    assert "exports/realdata/_SUCCESS" in keys and "exports/realdata/_PARTIAL" not in keys
    names = sorted(k.rsplit("/", 1)[-1] for k in keys if k.endswith(".parquet"))
    assert names == sorted(p.name for p in out_local.rglob("*.parquet"))
    summary = json.loads(s3.get("exports/realdata/_SUCCESS"))
    assert summary["rows"] == len(expected)
    # a second export into the same prefix is refused without --overwrite
    again = CliRunner().invoke(cli, ["export", uri, "--out", out_uri])
    assert again.exit_code == 2 and "not empty" in again.output


@pytest.mark.parametrize("out", ["evidence/realdata/final/pq", "evidence/realdata", "evidence/realdata/"])
def test_export_into_input_prefix_refused(s3, evidence, untouched, out):
    uri = evidence.uri["realdata"] + "/final"
    result = CliRunner().invoke(cli, ["export", evidence.uri["realdata"], "--out", f"s3://{BUCKET}/{out}"])
    assert result.exit_code == 2, result.output
    assert "inside the input" in result.output
    result = CliRunner().invoke(cli, ["export", uri, "--out", f"s3://{BUCKET}/{out.rstrip('/')}/final/x"])
    assert result.exit_code == 2 and "inside the input" in result.output


def test_output_beside_input_prefix_allowed(s3, evidence, untouched):
    """A prefix is a string on S3: evidence/realdata2 is not inside evidence/realdata."""
    from segtools.files.outputs import check_output_location

    check_output_location(f"s3://{BUCKET}/evidence/realdata2", [evidence.uri["realdata"]])
    check_output_location("s3://other-bucket/evidence/realdata", [evidence.uri["realdata"]])


def _compare(args: list[str]):
    return CliRunner().invoke(cli, ["compare", *args], catch_exceptions=False)


def _timeless(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["summary"].pop("generated_at")   # the wall clock of each run
    return doc


def test_compare_s3_equals_local(s3, evidence, untouched, tmp_path):
    local = evidence.local["scenario"]
    uri = evidence.uri["scenario"]
    report_uri = f"s3://{BUCKET}/reports/s7.json"
    on_disk = _compare([str(local), "--no-spark", "--report", str(tmp_path / "local.json")])
    remote = _compare([uri, "--no-spark", "--report", report_uri, "--acks", uri + "/acks.jsonl"])
    with_acks = _compare([str(local), "--no-spark", "--acks", str(local / "acks.jsonl"),
                          "--report", str(tmp_path / "acks.json")])
    assert on_disk.exit_code == remote.exit_code == with_acks.exit_code == 1, remote.stderr
    assert remote.stdout == with_acks.stdout.replace(str(local), uri)
    expected = json.loads((tmp_path / "acks.json").read_text())
    got = json.loads(s3.get("reports/s7.json"))
    # the same report, every path an s3:// URI (the controller's metadata log found in the bucket)
    assert _timeless(got) == _timeless(json.loads(json.dumps(expected).replace(str(local), uri)))
    assert uri + "/controller/__cluster_metadata-0" in remote.stderr
    assert str(local) not in json.dumps(got)
    # the report may not land in the evidence
    refused = _compare([uri, "--no-spark", "--report", uri + "/report.json"])
    assert refused.exit_code == 2 and "inside the input" in refused.stderr


def test_compare_uri_given_twice_is_compared_once(s3, evidence, untouched):
    """A URI named twice is copied once and the resolver reads it once, saying so with the URI
    (issue 11: one de-duplication, as for a local dir named twice)."""
    uri = evidence.uri["scenario"] + "/broker-1"
    once = _compare([uri, "--no-spark"])
    twice = _compare([uri, uri + "/", "--no-spark"])
    assert twice.exit_code == once.exit_code and twice.stdout == once.stdout
    assert f"{uri}: same directory as {uri}; read once" in twice.stderr, twice.stderr


def test_generic_endpoint_variable(s3, evidence, untouched, monkeypatch):
    """AWS_ENDPOINT_URL (all services) works as well as AWS_ENDPOINT_URL_S3."""
    segment = "/final/first_topic-0/00000000000000000000.log"
    expected = _run(["dump", str(evidence.local["realdata"]) + segment])
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    got = _run(["dump", evidence.uri["realdata"] + segment])
    assert got.exit_code == expected.exit_code == 0
    assert got.output == expected.output.replace(str(evidence.local["realdata"]), evidence.uri["realdata"])


def test_file_uris_are_local_paths(evidence, tmp_path):
    local = evidence.local["realdata"] / "final"
    plain, uri = tmp_path / "plain", tmp_path / "uri"
    assert _run(["export", str(local), "--out", str(plain)]).exit_code == 0
    result = _run(["export", local.as_uri(), "--out", uri.as_uri()])
    assert result.exit_code == 0, result.output
    assert _rows(str(uri)) == _rows(str(plain))
    assert (uri / "_SUCCESS").is_file() and not (uri / "_PARTIAL").exists()
    refused = CliRunner().invoke(cli, ["export", local.as_uri(), "--out", (local / "pq").as_uri()])
    assert refused.exit_code == 2 and "inside the input" in refused.output
    assert not (local / "pq").exists()


def test_compare_html_to_s3(s3, evidence, untouched, tmp_path):
    """--html to the bucket, and --metadata-log given as a URI (read like the local one)."""
    local, uri = evidence.local["scenario"], evidence.uri["scenario"]
    expected = _compare([str(local / "broker-1"), str(local / "broker-2"), str(local / "broker-3"),
                         "--no-spark", "--metadata-log", str(local / "controller"),
                         "--report", str(tmp_path / "local.json")])
    result = _compare([uri + "/broker-1", uri + "/broker-2", uri + "/broker-3", "--no-spark",
                       "--metadata-log", uri + "/controller", "--html", f"s3://{BUCKET}/reports/s7.html",
                       "--report", f"s3://{BUCKET}/reports/s7-brokers.json"])
    assert result.exit_code == expected.exit_code == 1, result.stderr
    got = json.loads(s3.get("reports/s7-brokers.json"))
    want = json.loads((tmp_path / "local.json").read_text().replace(str(local), uri))
    assert _timeless(got) == _timeless(want)
    assert want.get("metadata", {}).get("brokers"), "the metadata log was replayed"
    page = s3.get("reports/s7.html").decode()
    assert page.lstrip().lower().startswith("<!doctype html") and uri in page
    assert "segtools-mirror" not in page


def test_interrupted_export_to_s3_stays_partial(s3, evidence, untouched):
    """An export stopped after its first segment leaves OUT/_PARTIAL (saying so), no
    _SUCCESS, and no half-uploaded Parquet object."""
    from segtools.export import ExportOptions, export_sources, plan_export

    uri = evidence.uri["realdata"] + "/final"
    out = f"s3://{BUCKET}/exports/interrupted"
    options = ExportOptions()
    sources = plan_export([uri], out, options)
    done = []

    def stop(segment: str) -> None:
        done.append(segment)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        export_sources(sources, out, options, on_segment=stop)
    keys = s3.keys("exports/interrupted/")
    assert "exports/interrupted/_PARTIAL" in keys and "exports/interrupted/_SUCCESS" not in keys
    assert b"interrupted" in s3.get("exports/interrupted/_PARTIAL")
    assert not [k for k in keys if k.endswith(".inprogress")]
    assert len(done) == 1 and done[0].startswith("s3://")
