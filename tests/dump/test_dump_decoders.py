"""--offsets-decoder and --transaction-log-decoder on hand-encoded records (FORMATS.md 12.2 and
12.4 wire layouts, DUMP_LOG.md 3.5 and vector 16 expected strings), progress and --debug."""

from __future__ import annotations

import io
import struct
from pathlib import Path

from dump_builders import SEG, lines, run, v2_batch

from segtools.dump.options import DumpOptions
from segtools.dump.runner import run_dump

TS = 1700000000000


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _log(tmp_path: Path, records: list[tuple[bytes | None, bytes | None]]) -> Path:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(v2_batch([(k, v, TS) for k, v in records]))
    return log


def _payload_parts(line: str) -> str:
    return line.split("headerKeys: [] ", 1)[1]


def test_offsets_decoder_vector16(tmp_path: Path) -> None:
    consumer_group_key = struct.pack(">h", 3) + _string("group")
    consumer_group_value = struct.pack(">hi", 0, 10) + b"\x00"   # flexible v0: empty tags
    offset_key = struct.pack(">h", 1) + _string("g") + _string("t") + struct.pack(">i", 0)
    offset_value_v1 = (struct.pack(">hq", 1, 42) + _string("meta") + struct.pack(">qq", TS, TS + 1))
    log = _log(tmp_path, [
        (consumer_group_key, consumer_group_value),
        (consumer_group_key, None),
        (struct.pack(">h", 32767) + _string("x"), b"\x00\x00"),
        (offset_key, offset_value_v1),
    ])
    result = run("--offsets-decoder", log)
    assert result.exit_code == 0, result.stderr
    records = [_payload_parts(line) for line in lines(result.stdout) if line.startswith("| ")]
    assert records == [
        'key: {"type":"3","data":{"groupId":"group"}} payload: {"version":"0","data":{"epoch":10}}',
        'key: {"type":"3","data":{"groupId":"group"}} payload: <DELETE>',
        "key: Unknown record type 32767 at offset 2, skipping.",
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":0}} payload: '
        '{"version":"1","data":{"offset":42,"metadata":"meta","commitTimestamp":1700000000000,'
        '"expireTimestamp":1700000000001}}',
    ]


def test_offsets_decoder_missing_key_is_an_error(tmp_path: Path) -> None:
    log = _log(tmp_path, [(None, b"\x00\x01")])
    result = run("--offsets-decoder", log)
    assert result.exit_code == 1
    # Kafka 4.3.1's words (CoordinatorRecordMessageParser); 3.x named "offset topic decoder"
    assert ("Failed to decode message at offset 0 using the specified decoder (message had a "
            "missing key)") in result.stderr
    old = run("--kafka-version", "3.9", "--offsets-decoder", log)
    assert ("Failed to decode message at offset 0 using offset topic decoder (message had a "
            "missing key)") in old.stderr
    assert "Traceback" not in result.stderr
    # the record line is still printed, without key/payload
    assert lines(result.stdout)[-1].endswith("headerKeys: []")


def test_transaction_log_decoder(tmp_path: Path) -> None:
    key = struct.pack(">h", 0) + _string("txn-1")
    value = (struct.pack(">hqhib", 0, 5000, 3, 60000, 1)              # Ongoing
             + struct.pack(">i", 1) + _string("orders") + struct.pack(">ii", 1, 2)
             + struct.pack(">qq", TS, TS - 10))
    empty = (struct.pack(">hqhib", 0, 5000, 3, 60000, 0) + struct.pack(">i", -1)
             + struct.pack(">qq", TS, -1))
    log = _log(tmp_path, [(key, value), (key, empty), (key, None),
                          (struct.pack(">h", 7) + _string("x"), b"")])
    result = run("--kafka-version", "3.9", "--transaction-log-decoder", log)  # 3.x text; 4.x: tests/realkafka
    assert result.exit_code == 0, result.stderr
    records = [_payload_parts(line) for line in lines(result.stdout) if line.startswith("| ")]
    assert records == [
        "key: transaction_metadata::transactionalId=txn-1 payload: producerId:5000,producerEpoch:3,"
        "state=Ongoing,partitions=[orders-2],txnLastUpdateTimestamp=1700000000000,"
        "txnTimeoutMs=60000",
        "key: transaction_metadata::transactionalId=txn-1 payload: producerId:5000,producerEpoch:3,"
        "state=Empty,partitions=[],txnLastUpdateTimestamp=1700000000000,txnTimeoutMs=60000",
        "key: transaction_metadata::transactionalId=txn-1 payload: <DELETE>",
        "key: unknown::version=7",
    ]


def test_decoder_precedence_offsets_first(tmp_path: Path) -> None:
    key = struct.pack(">h", 3) + _string("group")
    log = _log(tmp_path, [(key, None)])
    result = run("--cluster-metadata-decoder", "--offsets-decoder",
                 "--value-decoder-class", "org.apache.kafka.tools.api.StringDecoder", log)
    assert lines(result.stdout)[-1].endswith(
        'key: {"type":"3","data":{"groupId":"group"}} payload: <DELETE>')


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_tty_and_not_quiet(tmp_path: Path) -> None:
    log = _log(tmp_path, [(None, b"x")])
    index = tmp_path / f"{SEG}.index"
    index.write_bytes(b"")
    for quiet, expect in ((False, True), (True, False)):
        out, err = io.StringIO(), _Tty()
        assert run_dump([str(log), str(index)], DumpOptions(quiet=quiet), out=out, err=err) == 0
        assert ("[1/2]" in err.getvalue()) is expect
        assert "[1/2]" not in out.getvalue()
    out, err = io.StringIO(), io.StringIO()  # not a terminal: no progress
    run_dump([str(log), str(index)], DumpOptions(), out=out, err=err)
    assert err.getvalue() == ""


def test_debug_shows_traceback(tmp_path: Path) -> None:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"\0" * 100)
    plain = run(log)
    assert plain.exit_code == 1 and "Traceback" not in plain.stderr
    debug = run("--debug", log)
    assert debug.exit_code == 1 and "Traceback" in debug.stderr


def test_internal_error_costs_one_file(tmp_path: Path, monkeypatch) -> None:
    import pytest

    from segtools.dump import index_dump
    log = _log(tmp_path, [(None, b"x")])
    txn = tmp_path / f"{SEG}.txnindex"
    txn.write_bytes(b"")

    def boom(ctx, path):  # a bug in one dumper
        raise KeyError("bug")

    monkeypatch.setattr(index_dump, "dump_txn_index", boom)
    result = run(txn, log)
    assert result.exit_code == 2
    assert "internal error while dumping" in result.stderr and "KeyError" in result.stderr
    assert lines(result.stdout)[-1].startswith("baseOffset: 0 ")  # the next file still dumped
    with pytest.raises(KeyError):
        run("--debug", txn)
