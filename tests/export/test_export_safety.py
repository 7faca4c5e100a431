"""Export on the unhappy paths (issues 9 and 16): outputs never land in the evidence whatever
shape the input has, two inputs never overwrite each other, an interrupted export is visibly
partial, odd names give one line, and the folder opens in the default calls of pandas, pyarrow
and DuckDB (Spark: test_export_spark.py)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from kafka.record import MemoryRecords

from segtools.cli.main import cli
from segtools.errors import InputError
from segtools.export import ExportOptions, export

#: Spark's Kafka source columns as Arrow reads them back (written out, not taken from our schema)
SPARK_KAFKA_ARROW = [("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int32"),
                     ("offset", "int64"), ("timestamp", "timestamp[us, tz=UTC]"), ("timestampType", "int32"),
                     ("headers", "list<element: struct<key: string, value: binary>>")]
NAME = re.compile(r"^part-[A-Za-z0-9._-]+\+\d+\+\d{10}(\.batches)?\.(snappy|zstd|gz|none)\.parquet$")


def _kp_count(log_dir: Path) -> int:
    """Records in every segment under log_dir, counted by kafka-python (independent reader)."""
    total = 0
    for seg in log_dir.rglob("*.log"):
        records = MemoryRecords(seg.read_bytes())
        while (batch := records.next_batch()) is not None:
            total += sum(1 for _ in batch)
    return total


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else "-",
            st.st_mtime_ns)
    return out


@pytest.fixture
def cluster(realdata, tmp_path) -> Path:
    """clusterB: a folder of two small broker dirs, as `segtools simulate` lays them out."""
    root = tmp_path / "clusterB"
    shutil.copytree(realdata / "kafka-2.0-zk-small/logdir", root / "broker-0")
    shutil.copytree(realdata / "kafka-2.0-zk-small/logdir", root / "broker-1")
    return root


def _error_lines(output: str) -> list[str]:
    """The output without input warnings (a byte-exact copy, a duplicate...), which may precede."""
    return [ln for ln in output.strip().splitlines() if not ln.startswith("warning:")]


def _one_line_refusal(result) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.exception is None or \
        isinstance(result.exception, SystemExit)
    assert len(_error_lines(result.output)) == 1, result.output
    assert "inside the input" in result.output, result.output


@pytest.mark.parametrize("shape", ["folder of broker dirs", "broker dir", "partition dir", "segment file",
                                   "symlink to the folder", "out through a symlink"])
def test_out_inside_any_named_input_is_refused(cluster, tmp_path, shape):
    link = tmp_path / "link"
    link.symlink_to(cluster, target_is_directory=True)
    seg = cluster / "broker-1/subhash-0/00000000000000000000.log"
    inp, out = {
        "folder of broker dirs": (cluster, cluster / "pq"),            # issue 9: was accepted
        "broker dir": (cluster / "broker-1", cluster / "broker-1/pq"),
        "partition dir": (seg.parent, seg.parent / "pq"),
        "segment file": (seg, seg.parent / "pq"),
        "symlink to the folder": (link, cluster / "pq"),
        "out through a symlink": (cluster, link / "deeper/pq"),
    }[shape]
    before = _tree(cluster)
    result = CliRunner().invoke(cli, ["export", str(inp), "--out", str(out)])
    _one_line_refusal(result)
    assert _tree(cluster) == before                                   # nothing written, nothing created


def test_same_broker_id_twice_keeps_both_and_counts_what_is_on_disk(realdata, tmp_path):
    """early/ and final/ both say broker.id=0: each gets its own replica folder and the counts
    printed are the rows read back (before: 79 printed, 41 on disk)."""
    early, final = realdata / "kafka-2.5-zk-first-topic/early", realdata / "kafka-2.5-zk-first-topic/final"
    out = tmp_path / "pq"
    result = CliRunner().invoke(cli, ["export", str(early), str(final), "--by-broker", "--out", str(out)])
    assert result.exit_code == 0, result.output
    printed_rows = int(re.search(r"exported (\d+) records", result.output).group(1))
    printed_files = int(re.search(r"-> (\d+) Parquet file", result.output).group(1))
    files = list(out.rglob("*.parquet"))
    assert printed_files == len(files)
    assert printed_rows == sum(pq.read_metadata(f).num_rows for f in files) == \
        _kp_count(early) + _kp_count(final)
    # the legend says which input is which folder; each folder holds exactly its input's records
    legend = dict(re.findall(r"^(replica=broker-0(?:-2)?)/ <- (.+)$", result.output, re.M))
    assert set(legend) == {"replica=broker-0", "replica=broker-0-2"}
    for folder, source in legend.items():
        rows = sum(pq.read_metadata(f).num_rows for f in (out / folder).glob("*.parquet"))
        assert rows == _kp_count(Path(source)), folder
    table = pq.read_table(out)                                        # default call: replica column
    assert sorted(set(table.column("replica").to_pylist())) == ["broker-0", "broker-0-2"]
    assert set(table.column("broker").to_pylist()) == {0}            # the id the files say


def test_same_input_named_twice_is_exported_once(realdata, tmp_path):
    src = realdata / "kafka-2.0-zk-small/logdir"
    summary = export([src, src / "subhash-0", src], str(tmp_path / "pq"))
    assert summary.rows == _kp_count(src) == pq.read_table(tmp_path / "pq").num_rows


def test_non_empty_out_needs_overwrite_and_same_name_files_are_replaced_not_written_through(
        realdata, tmp_path):
    src = tmp_path / "in/subhash-0"
    shutil.copytree(realdata / "kafka-2.0-zk-small/logdir/subhash-0", src)
    out = tmp_path / "pq"
    export([src], str(out))
    victim = out / "part-subhash+0+0000000000.snappy.parquet"
    victim.unlink()
    os.link(src / "00000000000000000000.log", victim)                 # an output name hard-linked to evidence
    before = _tree(src)
    with pytest.raises(InputError, match="not empty"):
        export([src], str(out))
    export([src], str(out), overwrite=True)
    assert _tree(src) == before                                       # renamed over, never written through
    assert pq.read_table(victim).num_rows == 3


def test_every_layout_uses_one_file_name_scheme(realdata, tmp_path):
    src = realdata / "kafka-2.0-zk-small/logdir"                     # an internal topic and a plain one
    for i, opts in enumerate([ExportOptions(), ExportOptions(level="batches"), ExportOptions(by_broker=True),
                              ExportOptions(compression="zstd"), ExportOptions(level="batches", by_broker=True)]):
        export([src], str(tmp_path / f"o{i}"), opts)
        names = [p.name for p in (tmp_path / f"o{i}").rglob("*.parquet")]
        assert names and all(NAME.match(n) for n in names), names
        assert any(n.startswith("part-subhash+") for n in names)
        assert any(n.startswith("part-__consumer_offsets+") for n in names)


def test_success_marker_after_a_complete_export(realdata, tmp_path):
    export([realdata / "kafka-2.0-zk-small/logdir"], str(tmp_path / "pq"))
    assert (tmp_path / "pq/_SUCCESS").is_file() and not (tmp_path / "pq/_PARTIAL").exists()


def test_an_exception_mid_export_leaves_the_partial_marker(realdata, tmp_path, monkeypatch):
    import segtools.export as ex

    real, calls = ex.export_source, []

    def failing(src, *args, **kwargs):
        calls.append(src)
        if len(calls) == 3:
            raise InputError("disk gone")
        return real(src, *args, **kwargs)

    monkeypatch.setattr(ex, "export_source", failing)
    out = tmp_path / "pq"
    with pytest.raises(InputError):
        export([realdata / "kafka-2.0-zk-small/logdir"], str(out))
    assert (out / "_PARTIAL").is_file() and "disk gone" in (out / "_PARTIAL").read_text()
    assert not (out / "_SUCCESS").exists()


@pytest.mark.parametrize("where", ["writer set-up", "row group write"])
def test_a_writer_failure_leaves_no_temporary_file(realdata, tmp_path, monkeypatch, where):
    # the output stream is opened by export (buffered), not by the Parquet writer: whichever
    # fails, the stream is closed and the hidden temporary file removed
    import pyarrow.parquet as pq_mod

    import segtools.export as ex

    real_writer, streams = pq_mod.ParquetWriter, []

    class Failing(real_writer):  # type: ignore[misc, valid-type]
        def __init__(self, where_, *args, **kwargs):
            streams.append(where_)
            if where == "writer set-up":
                raise OSError(28, "No space left on device")
            super().__init__(where_, *args, **kwargs)

        def write_table(self, *args, **kwargs):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(ex.pq, "ParquetWriter", Failing)
    out = tmp_path / "pq"
    with pytest.raises(OSError):
        export([realdata / "kafka-2.0-zk-small/logdir"], str(out), jobs=1)
    assert streams and all(s.closed for s in streams)
    left = [p.name for p in out.rglob("*") if p.is_file()]
    assert left == ["_PARTIAL"], left


_SLOW_EXPORT = textwrap.dedent("""
    import signal, sys, time
    # a Ctrl-C in a terminal: Python's handler even when the test runner was started in the
    # background (a non-interactive shell starts background jobs with SIGINT ignored, and
    # Python then keeps it ignored, as a tool run with `&` should)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import segtools.export as ex
    real_iter = ex._iter_tables
    started = []

    def slow(segment, src, options, *rest):    # the second segment stalls mid-file
        started.append(segment)
        for i, rb in enumerate(real_iter(segment, src, options, *rest)):
            yield rb
            if len(started) == 2:
                print("READY", flush=True)
                time.sleep(60)

    ex._iter_tables = slow
    from segtools.cli.main import main
    sys.argv = ["segtools", "export", *sys.argv[1:]]
    main()
""")


def test_sigint_mid_export_leaves_visibly_partial_output(realdata, tmp_path):
    out = tmp_path / "pq"
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_EXPORT, str(realdata / "kafka-2.0-zk-small/logdir"),
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "READY"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "_PARTIAL" in err and len(err.strip().splitlines()) == 1, err
    assert (out / "_PARTIAL").is_file() and "interrupted" in (out / "_PARTIAL").read_text()
    assert not (out / "_SUCCESS").exists()
    assert not [p for p in out.rglob(".*")], "the half-written file must be removed"
    done = list(out.rglob("*.parquet"))
    assert len(done) == 1 and pq.read_metadata(done[0]).num_rows > 0   # the finished one is whole


def test_reexport_over_a_partial_folder_clears_the_marker(realdata, tmp_path):
    out = tmp_path / "pq"
    out.mkdir()
    (out / "_PARTIAL").write_text("incomplete")
    with pytest.raises(InputError, match="did not finish"):
        export([realdata / "kafka-2.0-zk-small/logdir"], str(out))
    export([realdata / "kafka-2.0-zk-small/logdir"], str(out), overwrite=True)
    assert (out / "_SUCCESS").is_file() and not (out / "_PARTIAL").exists()


@pytest.mark.parametrize("folder", ["kafka-2.0-zk-small/logdir", "kafka-2.5-zk-first-topic/final",
                                    "kafka-3.6-kraft-flink-stack/logdir"])
def test_default_readers_open_the_export_folder(realdata, tmp_path, folder):
    """pd.read_parquet(OUT), pq.read_table(OUT), DuckDB's read_parquet('OUT/**/*.parquet'):
    before, pandas and pyarrow raised ArrowTypeError (topic/partition both columns and
    key=value folder names). A topic named "123" stays a string."""
    import duckdb
    import pandas as pd

    src = tmp_path / "in"
    shutil.copytree(realdata / folder, src)
    donor = next(p for p in sorted(src.iterdir()) if p.is_dir() and list(p.glob("*.log"))
                 and any(f.stat().st_size for f in p.glob("*.log")))
    shutil.copytree(donor, src / "123-9999")                             # a numeric topic name
    out = tmp_path / "pq"
    summary = export([src], str(out))
    expected = _kp_count(src)
    assert summary.rows == expected > 0

    table = pq.read_table(out)
    assert [(f.name, str(f.type)) for f in table.schema][:8] == SPARK_KAFKA_ARROW
    assert table.num_rows == expected
    df = pd.read_parquet(out)
    assert len(df) == expected and list(df.columns[:8]) == [n for n, _ in SPARK_KAFKA_ARROW]
    assert str(df["partition"].dtype) == "int32" and str(df["offset"].dtype) == "int64"
    assert str(df["timestamp"].dt.tz) == "UTC"
    assert set(df.loc[df["partition"] == 9999, "topic"]) == {"123"}       # a str, not the int 123
    con = duckdb.connect()
    try:
        glob = f"read_parquet('{out}/**/*.parquet')"                  # DuckDB's default call
        types = {row[0]: row[1] for row in con.execute(f"describe select * from {glob}").fetchall()}
        assert [types[c] for c in ("key", "value", "topic", "partition", "offset", "timestamp",
                                   "timestampType")] == \
            ["BLOB", "BLOB", "VARCHAR", "INTEGER", "BIGINT", "TIMESTAMP WITH TIME ZONE", "INTEGER"]
        assert con.execute(f"select count(*) from {glob}").fetchall() == [(expected,)]
        assert con.execute(f"select distinct topic from {glob} where partition = 9999").fetchall() == [("123",)]
    finally:
        con.close()


def test_non_utf8_partition_dir_name_is_one_line(realdata, tmp_path):
    log_dir = tmp_path / "broker-0"
    shutil.copytree(realdata / "kafka-2.0-zk-small/logdir", log_dir)
    bad = os.path.join(os.fsencode(log_dir), b"orders\xff-0")
    shutil.copytree(log_dir / "subhash-0", os.fsdecode(bad))
    result = CliRunner().invoke(cli, ["export", str(log_dir), "--out", str(tmp_path / "pq")])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert len(_error_lines(result.output)) == 1 and "UTF-8" in result.output
    assert not (tmp_path / "pq").exists()
    if "--topics" in result.output:      # the hint is only given where --topics can help
        ok = CliRunner().invoke(cli, ["export", str(log_dir), "--topics", "subhash", "--out", str(tmp_path / "pq")])
        assert ok.exit_code == 0, ok.output


def test_non_utf8_out_path_is_one_line(realdata, tmp_path):
    out = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"o\xffut"))
    result = subprocess.run([sys.executable, "-m", "segtools", "export",
                             str(realdata / "kafka-2.0-zk-small/logdir/subhash-0"), "--out", out],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(_error_lines(result.stderr)) == 1 and "UTF-8" in result.stderr
    assert not os.path.exists(out)


def test_non_utf8_folder_above_the_evidence_is_exported_or_refused_in_one_line(realdata, tmp_path):
    case = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"case\xff"))
    shutil.copytree(realdata / "kafka-2.0-zk-small/logdir", os.path.join(case, "broker-0"))
    result = subprocess.run([sys.executable, "-m", "segtools", "export", os.path.join(case, "broker-0"),
                             "--out", str(tmp_path / "pq")], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in result.stderr
    if result.returncode == 2:           # refused: one line that names the odd name
        assert len(_error_lines(result.stderr)) == 1 and "UTF-8" in result.stderr, result.stderr
        return
    assert result.returncode == 0, result.stderr
    assert pq.read_table(tmp_path / "pq").num_rows == _kp_count(Path(case) / "broker-0")
