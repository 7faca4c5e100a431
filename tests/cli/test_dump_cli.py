"""`segtools dump` as a command: Kafka's flags, positional paths, directories, JSON outputs,
decoder classes, exit codes and start-up imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

SEG = "00000000000000000000"
# FORMATS.md 1.9: one v2 batch, null key, value "a"
SPEC_V2_BATCH = bytes.fromhex(
    "0000000000000000" "00000039" "00000000" "02" "965a94b1" "0000" "00000000"
    "0000018bcfe56800" "0000018bcfe56800" "ffffffffffffffff" "ffff" "ffffffff" "00000001"
    "0e000000010261" "00")
BATCH_LINE = (
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
    "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
    "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 69 "
    "magic: 2 compresscodec: none crc: 2522518705 isvalid: true")


def invoke(*args: object):
    return CliRunner().invoke(cli, ["dump", *map(str, args)], catch_exceptions=False)


@pytest.fixture
def partition(tmp_path: Path) -> Path:
    """A partition dir with the spec batch, its index files and two checkpoint-style files."""
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / f"{SEG}.log").write_bytes(SPEC_V2_BATCH)
    (d / f"{SEG}.index").write_bytes(b"")
    (d / f"{SEG}.timeindex").write_bytes(bytes.fromhex("0000018bcfe56800 00000000"))
    (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (d / "partition.metadata").write_text("version: 0\ntopic_id: dRIZhvotRveXjSZwRXM2gA")
    return d


def test_help() -> None:
    result = CliRunner().invoke(cli, ["dump", "--help"])
    assert result.exit_code == 0
    for flag in ("--files", "--print-data-log", "--deep-iteration", "--skip-record-metadata",
                 "--verify-index-only", "--index-sanity-check", "--max-message-size",
                 "--max-bytes", "--key-decoder-class", "--value-decoder-class",
                 "--offsets-decoder", "--transaction-log-decoder", "--cluster-metadata-decoder",
                 "--output", "--quiet"):
        assert flag in result.output


def test_no_files_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["dump"])
    assert result.exit_code == 2
    assert 'Missing required argument "[files]"' in result.stderr


def test_files_comma_list_and_positional(partition: Path) -> None:
    log = partition / f"{SEG}.log"
    index = partition / f"{SEG}.index"
    result = invoke("--files", f"{log},{index}", log)
    assert result.exit_code == 0
    assert result.stdout.split("\n") == [
        f"Dumping {log}", "Log starting offset: 0", BATCH_LINE,
        f"Dumping {index}", f"{index} is empty.",
        f"Dumping {log}", "Log starting offset: 0", BATCH_LINE, ""]


def test_partition_dir_order(partition: Path) -> None:
    result = invoke(partition)
    assert result.exit_code == 0
    dumped = [line[len("Dumping "):] for line in result.stdout.splitlines()
              if line.startswith("Dumping ")]
    assert [Path(p).name for p in dumped] == [
        "leader-epoch-checkpoint", "partition.metadata",
        f"{SEG}.log", f"{SEG}.index", f"{SEG}.timeindex"]
    assert "epoch: 0 startOffset: 0" in result.stdout
    assert "version: 0 topicId: dRIZhvotRveXjSZwRXM2gA" in result.stdout
    assert "timestamp: 1700000000000 offset: 0" in result.stdout


def test_broker_log_dir_order(tmp_path: Path) -> None:
    for name in ("b-10", "b-2", "a-1", "__consumer_offsets-3"):
        d = tmp_path / "logdir" / name
        d.mkdir(parents=True)
        (d / f"{SEG}.log").write_bytes(SPEC_V2_BATCH)
        (d / f"{100:020d}.log").write_bytes(b"")
    (tmp_path / "logdir" / "meta.properties").write_text("version=0\nbroker.id=1\ncluster.id=x\n")
    result = invoke(tmp_path / "logdir")
    dumped = [line.split("/logdir/")[1] for line in result.stdout.splitlines()
              if line.startswith("Dumping ")]
    assert dumped == [
        "meta.properties",
        f"__consumer_offsets-3/{SEG}.log", f"__consumer_offsets-3/{100:020d}.log",
        f"a-1/{SEG}.log", f"a-1/{100:020d}.log",
        f"b-2/{SEG}.log", f"b-2/{100:020d}.log",
        f"b-10/{SEG}.log", f"b-10/{100:020d}.log"]
    assert "broker.id: 1" in result.stdout
    assert result.exit_code == 0


def test_ndjson(partition: Path) -> None:
    result = invoke("--output", "ndjson", "--print-data-log", partition / f"{SEG}.log")
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["type"] for o in objs] == ["file", "header", "batch", "record"]
    batch, record = objs[2], objs[3]
    assert batch["base_offset"] == 0 and batch["crc"] == 2522518705 and batch["crc_valid"]
    assert batch["size"] == 69 and batch["compression"] == "none"
    assert batch["max_timestamp"] == 1700000000000 and batch["timestamp_type"] == "CreateTime"
    assert record["offset"] == 0 and record["key_size"] == -1 and record["value_size"] == 1
    assert record["payload"] == "a" and "key" not in record
    assert objs[1]["log_starting_offset"] == 0
    assert result.exit_code == 0


def test_ndjson_findings(tmp_path: Path) -> None:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(SPEC_V2_BATCH + b"\x01\x02\x03")
    result = invoke("--output", "ndjson", log)
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    finding = [o for o in objs if o["type"] == "finding"]
    assert finding == [{"type": "finding", "kind": "invalid_bytes", "file": str(log),
                        "problem": True, "position": 69, "size": 3,
                        "message": f"Found 3 invalid bytes at the end of {SEG}.log",
                        "topic": None, "partition": None}]
    assert result.exit_code == 1


def test_json_one_document_per_file(partition: Path) -> None:
    result = invoke("--output", "json", "--deep-iteration", partition / f"{SEG}.log",
                    partition / f"{SEG}.timeindex")
    decoder = json.JSONDecoder()
    text, docs, pos = result.stdout, [], 0
    while pos < len(text.rstrip()):
        doc, end = decoder.raw_decode(text, pos)
        docs.append(doc)
        pos = end + 1
    assert [d["kind"] for d in docs] == ["log", "time_index"]
    assert docs[0]["batches"][0]["records"][0]["offset"] == 0
    assert docs[1]["entries"] == [{"type": "time_index_entry", "timestamp": 1700000000000,
                                   "offset": 0}]
    assert docs[0]["findings"] == [] and result.exit_code == 0


def test_decoder_class_module_callable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mydecoders.py").write_text(textwrap.dedent("""
        def upper(data: bytes) -> str:
            return data.decode().upper() + "!"
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(SPEC_V2_BATCH)
    result = invoke("--value-decoder-class", "mydecoders:upper", log)
    assert result.stdout.splitlines()[-1].endswith("headerKeys: [] payload: A!")
    bad = invoke("--value-decoder-class", "mydecoders:nothing", log)
    assert bad.exit_code == 2 and "cannot be loaded" in bad.stderr


def test_integer_decoder_class(tmp_path: Path) -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, timestamp=5, key=(258).to_bytes(4, "big"), value=(-2).to_bytes(8, "big", signed=True), headers=[])
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(bytes(builder.build()))
    result = invoke("--key-decoder-class", "org.apache.kafka.tools.api.IntegerDecoder",
                    "--value-decoder-class", "org.apache.kafka.tools.api.LongDecoder", log)
    assert result.stdout.splitlines()[-1].endswith("headerKeys: [] key: 258 payload: -2")


def test_negative_max_bytes_is_usage_error(partition: Path) -> None:
    result = invoke("--max-bytes", "-1", partition)
    assert result.exit_code == 2


def test_dump_path_does_not_load_heavy_modules(partition: Path) -> None:
    """Importing the command and dumping every kind of file (samples with txnindex, snapshot,
    indexes, checkpoints; a KRaft dir with the metadata decoder) never loads pyspark, pandas
    or numba."""
    samples = Path(__file__).resolve().parents[2] / "samples" / "dump"
    kraft = Path(__file__).resolve().parents[1] / "data" / "realdata" / \
        "kafka-3.6-kraft-flink-stack" / "logdir" / "__cluster_metadata-0"
    code = textwrap.dedent(f"""
        import io, sys
        import segtools.cli.dump
        heavy = lambda: sorted(m for m in sys.modules if m.split('.')[0] in
                               ('pyspark', 'pandas', 'numba'))
        assert heavy() == [], heavy()
        from segtools.dump import DumpOptions, run_dump
        for opts in (DumpOptions(deep_iteration=True), DumpOptions(offsets_decoder=True),
                     DumpOptions(transaction_log_decoder=True, output="ndjson")):
            run_dump([{str(samples)!r}, {str(partition)!r}], opts, out=io.StringIO(),
                     err=io.StringIO())
        run_dump([{str(kraft)!r}], DumpOptions(cluster_metadata_decoder=True, output="json"),
                 out=io.StringIO(), err=io.StringIO())
        print(','.join(heavy()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.stdout.strip() == ""


def test_console_script_end_to_end(partition: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "segtools", "dump", "--deep-iteration",
                          str(partition / f"{SEG}.log")], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.splitlines()[-1] == ("| offset: 0 CreateTime: 1700000000000 keySize: -1 "
                                           "valueSize: 1 sequence: -1 headerKeys: []")
    assert out.stderr == ("segtools: 1 file, 0 errors, 0 CRC-invalid batches, "
                          "0 index mismatches, 0 benign notes; exit 0\n")


def test_renamed_segment_is_still_dumped(tmp_path: Path) -> None:
    log = tmp_path / "evidence-copy.log"
    log.write_bytes(SPEC_V2_BATCH)
    result = invoke(log)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [f"Dumping {log}", BATCH_LINE]
    assert "No base offset in the file name evidence-copy.log" in result.stderr


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.startswith("segtools ")


def test_ndjson_benign_findings_are_marked(tmp_path: Path) -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    data = b""
    for base in (0, 7):  # a compaction-style gap: reported like Kafka, not a problem
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        builder.append(0, timestamp=5, key=None, value=b"x", headers=[])
        raw = bytearray(builder.build())
        raw[0:8] = base.to_bytes(8, "big")
        data += bytes(raw)
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(data)
    result = invoke("--output", "ndjson", "--deep-iteration", log)
    findings = [json.loads(line) for line in result.stdout.splitlines()
                if json.loads(line)["type"] == "finding"]
    assert findings == [{"type": "finding", "kind": "non_consecutive_offsets", "file": str(log),
                         "problem": False, "previous_offset": 0, "offset": 7,
                         "topic": None, "partition": None}]
    assert result.exit_code == 0


@pytest.mark.parametrize("output", ["text", "json", "ndjson"])
def test_closed_pipe_ends_quietly_with_exit_0(tmp_path: Path, output: str) -> None:
    """`segtools dump DIR | head -3`: the reader going away is not unusable input (cat under
    SIGPIPE): exit 0, nothing on stderr, no traceback."""
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / f"{SEG}.log").write_bytes(SPEC_V2_BATCH * 3000)
    proc = subprocess.Popen([sys.executable, "-m", "segtools", "dump", "--deep-iteration",
                             "--output", output, str(part)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    for _ in range(3):
        proc.stdout.readline()
    proc.stdout.close()  # like `| head -3`
    err = proc.stderr.read().decode()
    assert (proc.wait(timeout=60), err) == (0, "")


def test_closed_pipe_in_a_shell_pipeline(tmp_path: Path) -> None:
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / f"{SEG}.log").write_bytes(SPEC_V2_BATCH * 3000)
    script = (f'"{sys.executable}" -m segtools dump --deep-iteration "{part}" | head -3 >/dev/null;'
              ' echo "status=${PIPESTATUS[0]}"')
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout == "status=0\n"
    assert out.stderr == ""


@pytest.mark.parametrize("output", ["text", "ndjson"])
def test_folder_without_kafka_files_is_unusable_input(tmp_path: Path, output: str) -> None:
    empty = tmp_path / "emptydir"
    empty.mkdir()
    etc = tmp_path / "etc"  # shaped like /etc: plain files and nested folders, nothing Kafka's
    (etc / "ssl" / "certs").mkdir(parents=True)
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    (etc / "ssl" / "certs" / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (etc / "default-1").mkdir()  # named like a partition, but empty
    for folder in (empty, etc):
        result = invoke("--output", output, folder)
        assert result.exit_code == 2, result.stderr
        errors = [line for line in (result.stderr + result.stdout).splitlines()
                  if "no Kafka files found under" in line]
        assert len(errors) == 1 and str(folder) in errors[0]
        assert "Ignoring unknown file" not in result.output + result.stderr
        assert "Traceback" not in result.stderr
        if output == "text":
            assert result.stdout == ""
            assert [line for line in result.stderr.splitlines()
                    if not line.startswith("segtools: ")] == [
                f"Error: no Kafka files found under {folder}"]


def test_folder_without_kafka_files_next_to_a_good_one(partition: Path, tmp_path: Path) -> None:
    empty = tmp_path / "emptydir"
    empty.mkdir()
    result = invoke(partition / f"{SEG}.log", empty)
    assert result.exit_code == 2
    assert BATCH_LINE in result.stdout
    assert f"Error: no Kafka files found under {empty}" in result.stderr


def test_non_utf8_terminal_gets_question_marks(tmp_path: Path) -> None:
    """Java's PrintStream prints '?' for unencodable characters; so do we (no traceback)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, timestamp=5, key=None, value="€".encode() + b"\xed\xa0\x80", headers=[])
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(bytes(builder.build()))
    out = subprocess.run([sys.executable, "-m", "segtools", "dump", "--print-data-log", str(log)],
                         capture_output=True, env={**os.environ, "PYTHONIOENCODING": "latin-1"})
    assert out.returncode == 0 and out.stderr.startswith(b"segtools: 1 file, 0 errors")
    # euro sign and the single U+FFFD Java makes of an encoded surrogate: one '?' each
    assert out.stdout.endswith(b"headerKeys: [] payload: ??\n")


def test_symlink_loop_in_a_log_dir_is_dumped_once(tmp_path: Path) -> None:
    part = tmp_path / "logdir" / "a-0"
    part.mkdir(parents=True)
    (part / f"{SEG}.log").write_bytes(SPEC_V2_BATCH)
    os.symlink("..", part / "b-1")  # a partition-named link back up: a directory loop
    result = invoke(tmp_path / "logdir")
    dumped = [line for line in result.stdout.splitlines() if line.startswith("Dumping ")]
    assert dumped == [f"Dumping {part / (SEG + '.log')}"]
    assert "Ignoring unknown file" not in result.stderr
    assert result.exit_code == 0


def test_directory_that_cannot_be_listed_is_unusable_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logdir = tmp_path / "logdir"
    logdir.mkdir()

    def denied(path: object = ".") -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("segtools.dump.paths.os.scandir", denied)
    result = invoke(logdir)
    assert result.exit_code == 2
    assert "Ignoring unknown file" not in result.stderr
    assert f"cannot read {logdir}: Permission denied" in result.stderr


def test_json_output_is_streamed_batch_by_batch(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A large segment must not be held in memory as one document: each batch is written
    once the next one is read, in json.dumps(indent=2) layout."""
    import io

    from segtools.dump import json_out
    from segtools.dump.options import DumpOptions
    from segtools.dump.runner import run_dump

    log = tmp_path / f"{SEG}.log"
    batch = bytearray(SPEC_V2_BATCH)
    log.write_bytes(b"".join(bytes(batch[:7]) + bytes([i]) + bytes(batch[8:]) for i in range(3))
                    + b"\x00" * 5)
    out = io.StringIO()
    written_when_read: list[str] = []
    real_batch_dict = json_out.batch_dict

    def spy(b: object) -> dict:
        written_when_read.append(out.getvalue())
        return real_batch_dict(b)

    monkeypatch.setattr(json_out, "batch_dict", spy)
    status = run_dump([str(log)], DumpOptions(output="json", deep_iteration=True), out=out,
                      err=io.StringIO())
    assert status == 1  # the 5 trailing bytes
    assert '"base_offset": 0' in written_when_read[2]  # batch 0 was out before batch 2 was read
    doc = json.loads(out.getvalue())
    assert [b["base_offset"] for b in doc["batches"]] == [0, 1, 2]
    assert [b["records"][0]["offset"] for b in doc["batches"]] == [0, 1, 2]
    assert doc["header"] == {"log_starting_offset": 0}
    assert [f["kind"] for f in doc["findings"]] == ["invalid_bytes"]
    assert out.getvalue() == json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def test_segments_in_a_folder_not_named_like_a_partition_keep_segment_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    for base in (0, 5):
        (evidence / f"{base:020d}.log").write_bytes(b"")
        (evidence / f"{base:020d}.index").write_bytes(b"")
    (evidence / "leader-epoch-checkpoint").write_text("0\n0\n")
    expected = ["leader-epoch-checkpoint", f"{0:020d}.log", f"{0:020d}.index",
                f"{5:020d}.log", f"{5:020d}.index"]
    for where in (evidence, Path(".")):
        monkeypatch.chdir(evidence)
        result = invoke(where)
        dumped = [Path(line[len("Dumping "):]).name for line in result.stdout.splitlines()
                  if line.startswith("Dumping ")]
        assert dumped == expected, where


def _terminal(raw: str) -> tuple[list[str], str]:
    """What a terminal shows for ``raw``: finished rows and the row the cursor is on (handles
    CR, LF and ESC[K, which is all the progress display may use)."""
    rows: list[str] = []
    row: list[str] = []
    col = 0
    i = 0
    while i < len(raw):
        if raw.startswith("\x1b[K", i):
            del row[col:]
            i += 3
            continue
        ch = raw[i]
        i += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            rows.append("".join(row))
            row, col = [], 0
        else:
            assert ch != "\x1b", f"unexpected escape sequence at {i}: {raw[i - 1:i + 8]!r}"
            if col < len(row):
                row[col] = ch
            else:
                row.append(ch)
            col += 1
    return rows, "".join(row)


def _run_with_pty(args: list[str], pty_for: str, columns: int = 40) -> tuple[int, str, str]:
    """Run ``segtools dump ARGS`` with a pseudo-terminal of ``columns`` columns as its stderr
    (``pty_for="err"``) or stdout (``"out"``) and a pipe for the other stream."""
    import fcntl
    import pty
    import struct as struct_
    import termios
    import threading

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct_.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    streams = {"stdout": slave, "stderr": subprocess.PIPE} if pty_for == "out" else \
        {"stdout": subprocess.PIPE, "stderr": slave}
    proc = subprocess.Popen([sys.executable, "-m", "segtools", "dump", *args], env=env,
                            stdin=subprocess.DEVNULL, **streams)
    os.close(slave)
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        piped = (proc.stderr if pty_for == "out" else proc.stdout).read().decode()  # type: ignore[union-attr]
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        os.close(master)
    return code, b"".join(chunks).decode(), piped


def _many_files(tmp_path: Path) -> Path:
    """A partition dir with a long path, 12 segments and one corrupt log in the middle."""
    part = tmp_path / ("a-topic-with-a-rather-long-name-to-overflow-the-terminal" + "-0")
    part.mkdir()
    for i in range(12):
        (part / f"{i * 10:020d}.log").write_bytes(SPEC_V2_BATCH)
    (part / f"{55:020d}.log").write_bytes(b"\0" * 12 + b"\0\0\0\x05" + b"\0" * 10)
    return part


def test_progress_on_a_terminal_stderr_is_cut_and_cleared(tmp_path: Path) -> None:
    part = _many_files(tmp_path)
    code, err, out = _run_with_pty([str(part)], pty_for="err", columns=40)
    assert code == 1 and out.count("Dumping ") == 13
    draws = [m for m in err.split("\x1b[K") if m.startswith("[")]
    assert draws, f"no progress drawn: {err!r}"
    for draw in draws:
        shown = draw.split("\r")[0]
        assert len(shown) < 40, shown  # never wraps
    rows, current = _terminal(err)
    assert current == ""  # cleared at the end
    # no progress residue: every row on screen is a real message
    assert rows[0].startswith("Error: ") and "smaller than minimum record overhead" in rows[0]
    assert rows[-1].startswith("segtools: 13 files, 1 error")
    assert all(not row.startswith("[") for row in rows), rows


def test_no_progress_when_stdout_is_the_terminal(tmp_path: Path) -> None:
    part = _many_files(tmp_path)
    code, out, err = _run_with_pty([str(part)], pty_for="out", columns=40)
    assert code == 1 and out.count("Dumping ") == 13
    assert "\x1b[K" not in err and "\r" not in err and "[1/" not in err
    assert err.splitlines()[-1].startswith("segtools: 13 files")


def test_no_progress_with_quiet(tmp_path: Path) -> None:
    part = _many_files(tmp_path)
    code, err, _ = _run_with_pty(["-q", str(part)], pty_for="err", columns=40)
    assert code == 1
    assert "\x1b[K" not in err and "[1/" not in err
