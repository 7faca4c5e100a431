"""`segtools compare/export --master spark://...` on a real Spark standalone cluster (a master
and two workers in their own JVMs on 127.0.0.1), reading the evidence from the S3 server:
the report and the Parquet rows equal the in-process runner's on the local copy."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import subprocess
import sys
import threading

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

from .spark_cluster import leftover_processes, standalone_cluster

pytestmark = pytest.mark.spark


@contextlib.contextmanager
def _html_server():
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):                      # noqa: N802 - the handler's API
            body = b"<!DOCTYPE html><html><body>another service</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def cluster(s3, tmp_path_factory):
    # started after the S3 server: the workers (and so the executors and their Python
    # workers) inherit AWS_ENDPOINT_URL_S3 and the credentials from this environment
    workdir = tmp_path_factory.mktemp("standalone")
    # The UI port the master is asked for is already serving another web page, as when another
    # test's Spark driver took it first (CI, stop 39): the master moves to the next port, and
    # the cluster must be found there, not read from the other page.
    with _html_server() as taken, standalone_cluster(workdir, ui_port=taken) as c:
        assert not c.ui_url.endswith(f":{taken}")
        yield c
    for proc in c.procs:
        assert proc.poll() is not None, "a cluster JVM outlived the fixture"
    assert leftover_processes(c, workdir) == [], "a cluster JVM or executor outlived the fixture"


# One driver process runs the user's commands one after another through the CLI's entry
# point (segtools.cli.main.main, which `python -m segtools` calls), so the application (driver JVM and executors on
# the workers) starts once for both: each started application costs ~20 s on 2 cores.
_DRIVER = """
import contextlib, io, json, sys
from segtools.cli.main import main
results = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code
    results.append({"returncode": code or 0, "stdout": out.getvalue(), "stderr": err.getvalue()})
print(json.dumps(results))
"""


def _segtools(cluster, *commands: list[str]) -> list[subprocess.CompletedProcess]:
    run = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(commands)], env=cluster.env,
                         capture_output=True, text=True, timeout=420, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-3000:]
    return [subprocess.CompletedProcess(args, r["returncode"], r["stdout"], r["stderr"])
            for args, r in zip(commands, json.loads(run.stdout.splitlines()[-1]))]


def _timeless(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["summary"].pop("generated_at")
    doc["summary"].pop("runner")    # "spark" / "in-process": the only intended difference
    return doc


def _rows(table) -> list[dict]:
    rows = table.to_pylist()
    rows.sort(key=lambda r: (r["topic"], r["partition"], r.get("broker") or -1, r["offset"]))
    return rows


def _compare_args(evidence, cluster, tmp_path) -> list[str]:
    return ["compare", evidence.uri["scenario"], "--master", cluster.master_url,
            "--report", str(tmp_path / "cluster.json")]


def _export_args(evidence, cluster) -> list[str]:
    return ["export", evidence.uri["scenario"], "--by-broker", "--out", _export_uri(evidence),
            "--master", cluster.master_url]


def _export_uri(evidence) -> str:
    return f"s3://{evidence.uri['scenario'].split('/')[2]}/exports/cluster"


def _check_compare(run, evidence, cluster, tmp_path):
    local, uri = evidence.local["scenario"], evidence.uri["scenario"]
    expected_path = tmp_path / "local.json"
    expected_run = CliRunner().invoke(cli, ["compare", str(local), "--no-spark", "--report", str(expected_path)])
    assert expected_run.exit_code == 1
    got_path = tmp_path / "cluster.json"
    assert run.returncode == 1, run.stderr[-3000:]
    assert f"starting Spark ({cluster.master_url})" in run.stderr
    got = json.loads(got_path.read_text())
    assert got["summary"]["runner"] == "spark"
    expected = json.loads(expected_path.read_text().replace(str(local), uri))
    assert _timeless(got) == _timeless(expected), run.stderr[-3000:]
    assert got["partitions"][0]["lost_records"], "the scenario loses records: the drill-down ran"
    assert run.stdout == expected_run.stdout.replace(str(local), uri)


def _check_export(run, s3, evidence, cluster, tmp_path):
    from pyarrow import fs as pafs

    local = evidence.local["scenario"]
    out_local = tmp_path / "local"
    assert CliRunner().invoke(cli, ["export", str(local), "--by-broker", "--out", str(out_local)]).exit_code == 0
    out_uri = _export_uri(evidence)
    assert run.returncode == 0, run.stderr[-3000:]
    filesystem, inner = pafs.FileSystem.from_uri(out_uri)
    expected = _rows(pq.read_table(str(out_local)))
    assert expected
    assert _rows(pq.read_table(inner, filesystem=filesystem)) == expected
    assert "exports/cluster/_SUCCESS" in s3.keys("exports/cluster/")
    assert os.environ.get("AWS_ENDPOINT_URL_S3") == s3.endpoint


def test_compare_and_export_on_standalone_cluster(s3, evidence, cluster, tmp_path):
    """One test, so that pytest-xdist never starts a second cluster on its other worker."""
    compared, exported = _segtools(cluster, _compare_args(evidence, cluster, tmp_path),
                                   _export_args(evidence, cluster))
    _check_compare(compared, evidence, cluster, tmp_path)
    _check_export(exported, s3, evidence, cluster, tmp_path)
