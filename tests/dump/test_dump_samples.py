"""The golden inputs in samples/dump (README.md there): spec vectors with their exact lines,
the rest checked against kafka-python's decode, corrupt ones against their documented finding."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from dump_builders import SEG, kafka_python_lines, oracle_batches

from segtools.dump.options import DumpOptions
from segtools.dump.runner import run_dump

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dump"


def _dump(*paths: Path, **opts: object) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_dump([str(p) for p in paths], DumpOptions(**opts), out=out, err=err)  # type: ignore[arg-type]
    return status, out.getvalue().split("\n")[:-1], err.getvalue()


def test_spec_samples_exact() -> None:
    v2, v1, v0 = (SAMPLES / f"spec-{m}-0" / f"{SEG}.log" for m in ("v2", "v1", "v0"))
    status, out, err = _dump(v2, v1, v0, print_data_log=True, kafka_version="3.9")
    assert (status, err) == (0, "")
    assert out == [
        f"Dumping {v2}", "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 69 "
        "magic: 2 compresscodec: none crc: 2522518705 isvalid: true",
        "| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 1 sequence: -1 "
        "headerKeys: [] payload: a",
        f"Dumping {v1}", "Log starting offset: 0",
        "offset: 0 position: 0 CreateTime: 1700000000000 size: 36 magic: 1 compresscodec: none "
        "crc: 958827571 isvalid: true",
        "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 isValid: true "
        "crc: 958827571} key: k payload: v",
        f"Dumping {v0}", "Log starting offset: 0",
        "offset: 7 position: 0 NoTimestampType: -1 size: 27 magic: 0 compresscodec: none "
        "crc: 3524050933 isvalid: true",
        "| offset: 7 NoTimestampType: -1 keySize: -1 valueSize: 1 isValid: true "
        "crc: 3524050933} payload: v",
    ]


@pytest.mark.parametrize("name", ["txn-0", "simple-0"])
def test_v2_samples_match_kafka_python(name: str) -> None:
    log = SAMPLES / name / f"{SEG}.log"
    status, out, err = _dump(log, print_data_log=True)
    assert (status, err) == (0, "")
    assert out[2:] == kafka_python_lines(log.read_bytes())


def test_txn_sample_directory() -> None:
    status, out, err = _dump(SAMPLES / "txn-0", deep_iteration=True)
    assert (status, err) == (0, "")
    assert out.count(f"Dumping {SAMPLES / 'txn-0' / (SEG + '.txnindex')}") == 1
    assert "version: 0 producerId: 98323 firstOffset: 11 lastOffset: 12 lastStableOffset: 11" in out
    assert any(line.endswith("endTxnMarker: ABORT coordinatorEpoch: 100") for line in out)
    assert any(line.startswith("producerId: 98323 producerEpoch: 99 coordinatorEpoch: 100 ")
               for line in out)


def test_simple_sample_indexes_verify_clean() -> None:
    d = SAMPLES / "simple-0"
    status, out, err = _dump(d / f"{SEG}.index", d / f"{SEG}.timeindex", verify_index_only=True)
    assert (status, err) == (0, "")


def test_legacy_gzip_sample_offsets() -> None:
    log = SAMPLES / "legacy-v1-gzip-0" / f"{SEG}.log"
    (wrapper,) = oracle_batches(log.read_bytes())
    expected = [r.offset for r in wrapper]
    assert expected == [100, 101, 102, 103, 104]
    status, out, _ = _dump(log, deep_iteration=True)
    assert status == 0
    assert out[2].startswith("offset: 104 position: 0 CreateTime: ")
    assert [int(line.split()[2]) for line in out[3:]] == expected


@pytest.mark.parametrize("name, needle, stream", [
    ("corrupt-torn-tail-0", f"Found 91 invalid bytes at the end of {SEG}.log", "out"),
    ("corrupt-crc-flip-0", "isvalid: false", "out"),
    ("corrupt-zero-tail-0", "Found record size 0 smaller than minimum record overhead (14)", "err"),
    ("corrupt-index-past-eof-0", "entry 1 (offset 29, position 1048576)", "err"),
    ("corrupt-non-monotonic-0", "  11 is followed by 5", "err"),
    ("corrupt-garbage-0", f"Found 1024 invalid bytes at the end of {SEG}.log", "out"),
])
def test_corrupt_samples(name: str, needle: str, stream: str) -> None:
    status, out, err = _dump(SAMPLES / name, deep_iteration=True)
    assert status == 1
    text = "\n".join(out) if stream == "out" else err
    assert needle in text
    assert "Traceback" not in err
