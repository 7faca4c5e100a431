"""``--max-batch-bytes`` on ``segtools export`` and ``segtools compare`` (issue 9): the one
batch limit of segtools.primitives.limits, overridable on the command line."""

from __future__ import annotations

import os
import re
from pathlib import Path

import hostile_files as H
import pyarrow.parquet as pq
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.primitives.limits import MAX_BATCH_BYTES_ENV

MiB = 1 << 20


def _broker(root, name: str) -> str:
    pdir = root / name / "t-0"
    pdir.mkdir(parents=True)
    # one legal 20 MiB batch (sparse: its record value is a hole): above the 16 MiB default
    H.sparse_giant(str(pdir / "00000000000000000000.log"), 20 * MiB, n_batches=1)
    return str(root / name)


def test_export_refuses_a_batch_above_the_limit_and_the_flag_raises_it(tmp_path, monkeypatch):
    monkeypatch.setenv(MAX_BATCH_BYTES_ENV, "")
    broker = _broker(tmp_path, "b1")
    runner = CliRunner()
    result = runner.invoke(cli, ["export", broker, "--out", str(tmp_path / "out1")])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "max_batch_bytes is 16777216 bytes" in lines[0] and "--max-batch-bytes" in lines[0]
    assert "00000000000000000000.log @ position 0 (baseOffset=0)" in lines[0]

    result = runner.invoke(cli, ["export", broker, "--out", str(tmp_path / "out2"),
                                 "--max-batch-bytes", "32MiB"])
    assert result.exit_code == 0, result.output
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path / "out2") for f in fs
             if f.endswith(".parquet")]
    [path] = files
    table = pq.read_table(path)
    assert table.num_rows == 1
    assert len(table.column("value")[0].as_py()) > 19 * MiB


def test_export_rejects_a_bad_size(tmp_path):
    broker = _broker(tmp_path, "b1")
    result = CliRunner().invoke(cli, ["export", broker, "--out", str(tmp_path / "o"),
                                      "--max-batch-bytes", "lots"])
    assert result.exit_code == 2
    assert "--max-batch-bytes" in result.output


def test_compare_reads_with_the_raised_limit(tmp_path, monkeypatch):
    # compare passes the limit to every reader through the environment: undone at teardown
    monkeypatch.setenv(MAX_BATCH_BYTES_ENV, "")
    b1, b2 = _broker(tmp_path, "b1"), _broker(tmp_path, "b2")
    result = CliRunner().invoke(cli, ["compare", "--no-spark", b1, b2,
                                      "--max-batch-bytes", "32MiB", "--all"])
    # read and consistent (--all prints healthy rows too); no metadata log: cannot tell (exit 1)
    assert result.exit_code == 1 and "answer: CANNOT TELL" in result.output, result.output
    # both replicas read up to LEO 1 (with the 16 MiB default the batch is not read)
    rows = [line for line in result.output.splitlines() if line.startswith("t-0")]
    assert len(rows) == 2, result.output
    for row in rows:   # status CONSISTENT, log start 0, LEO 1
        assert re.match(r"^t-0\s+\d\s+\*?\s*CONSISTENT\s+0\s+1\s", row), row


def test_compare_rejects_a_bad_size(tmp_path, monkeypatch):
    monkeypatch.setenv(MAX_BATCH_BYTES_ENV, "")
    b1, b2 = _broker(tmp_path, "b1"), _broker(tmp_path, "b2")
    result = CliRunner().invoke(cli, ["compare", "--no-spark", b1, b2,
                                      "--max-batch-bytes", "12 parsecs"])
    assert result.exit_code == 2
    assert "--max-batch-bytes" in result.output


def test_compare_leaves_the_environment_as_it_found_it(tmp_path: Path) -> None:
    """compare passes --max-batch-bytes to its readers (and Spark workers) through the
    environment; an in-process caller must not keep that limit after the command."""
    sample = Path(__file__).resolve().parents[2] / "samples" / "generated" / "S0-healthy-baseline"
    assert MAX_BATCH_BYTES_ENV not in os.environ
    result = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark", "--max-batch-bytes", "8MiB"])
    assert result.exit_code == 1 and "answer: CANNOT TELL" in result.output, result.output   # no metadata log
    assert MAX_BATCH_BYTES_ENV not in os.environ
