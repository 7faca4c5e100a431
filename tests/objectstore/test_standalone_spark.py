"""`segtools compare/export --master spark://...` on a real Spark standalone cluster (a master
and two workers in their own JVMs on 127.0.0.1), reading the evidence from the S3 server:
the report and the Parquet rows equal the in-process runner's on the local copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

from .spark_cluster import leftover_processes, standalone_cluster

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def cluster(s3, tmp_path_factory):
    # started after the S3 server: the workers (and so the executors and their Python
    # workers) inherit AWS_ENDPOINT_URL_S3 and the credentials from this environment
    workdir = tmp_path_factory.mktemp("standalone")
    with standalone_cluster(workdir) as c:
        yield c
    for proc in c.procs:
        assert proc.poll() is not None, "a cluster JVM outlived the fixture"
    assert leftover_processes(c, workdir) == [], "a cluster JVM or executor outlived the fixture"


def _segtools(cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "segtools", *args], env=cluster.env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def _timeless(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["summary"].pop("generated_at")
    doc["summary"].pop("runner")    # "spark" / "in-process": the only intended difference
    return doc


def _rows(table) -> list[dict]:
    rows = table.to_pylist()
    rows.sort(key=lambda r: (r["topic"], r["partition"], r.get("broker") or -1, r["offset"]))
    return rows


def _check_compare(evidence, cluster, tmp_path):
    local, uri = evidence.local["scenario"], evidence.uri["scenario"]
    expected_path = tmp_path / "local.json"
    expected_run = CliRunner().invoke(cli, ["compare", str(local), "--no-spark", "--report", str(expected_path)])
    assert expected_run.exit_code == 1
    got_path = tmp_path / "cluster.json"
    run = _segtools(cluster, "compare", uri, "--master", cluster.master_url, "--report", str(got_path))
    assert run.returncode == 1, run.stderr[-3000:]
    assert f"starting Spark ({cluster.master_url})" in run.stderr
    got = json.loads(got_path.read_text())
    assert got["summary"]["runner"] == "spark"
    expected = json.loads(expected_path.read_text().replace(str(local), uri))
    assert _timeless(got) == _timeless(expected), run.stderr[-3000:]
    assert got["partitions"][0]["lost_records"], "the scenario loses records: the drill-down ran"
    assert run.stdout == expected_run.stdout.replace(str(local), uri)


def _check_export(s3, evidence, cluster, tmp_path):
    from pyarrow import fs as pafs

    local, uri = evidence.local["scenario"], evidence.uri["scenario"]
    out_local = tmp_path / "local"
    assert CliRunner().invoke(cli, ["export", str(local), "--by-broker", "--out", str(out_local)]).exit_code == 0
    out_uri = f"s3://{evidence.uri['scenario'].split('/')[2]}/exports/cluster"
    run = _segtools(cluster, "export", uri, "--by-broker", "--out", out_uri, "--master", cluster.master_url)
    assert run.returncode == 0, run.stderr[-3000:]
    filesystem, inner = pafs.FileSystem.from_uri(out_uri)
    expected = _rows(pq.read_table(str(out_local)))
    assert expected
    assert _rows(pq.read_table(inner, filesystem=filesystem)) == expected
    assert "exports/cluster/_SUCCESS" in s3.keys("exports/cluster/")
    assert os.environ.get("AWS_ENDPOINT_URL_S3") == s3.endpoint


def test_compare_and_export_on_standalone_cluster(s3, evidence, cluster, tmp_path):
    """One test, so that pytest-xdist never starts a second cluster on its other worker."""
    _check_compare(evidence, cluster, tmp_path)
    _check_export(s3, evidence, cluster, tmp_path)
