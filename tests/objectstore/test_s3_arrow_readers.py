"""The Arrow readers (``read_batch_table``, ``read_records`` and their iterators) read s3:// URIs
from a real S3-compatible server (moto's, on 127.0.0.1) as ``iter_batches`` does: the same
table as on the local copy of the same bytes, each segment through a temporary local copy
that is gone afterwards, and the same one-line error for a missing object or bucket.

Besides the local read, the batches are checked against a walk of the local files' own
size fields (base offset, batch length, record count: Kafka's v2 batch header,
``DefaultRecordBatch.java``), which does not use segtools' readers."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest

import segtools
from segtools.errors import SegtoolsError
from segtools.records import columnar
from segtools.records.schema import BATCH_SCHEMA

from .conftest import BUCKET

SEGMENT = "final/first_topic-0/00000000000000000000.log"
#: a segment, a partition dir, a broker log dir of real Kafka 2.5 data
TARGETS = [SEGMENT, "final/first_topic-0", "final"]


def _walk(log: Path) -> list[tuple[int, int, int]]:
    """(position, base offset, records count) of every batch, from the size fields alone."""
    data = log.read_bytes()
    out = []
    pos = 0
    while pos + 12 <= len(data):
        base_offset, batch_length = struct.unpack_from(">qi", data, pos)
        assert data[pos + 16] == 2, "this data is v2 batches"
        (records_count,) = struct.unpack_from(">i", data, pos + 57)
        out.append((pos, base_offset, records_count))
        pos += 12 + batch_length
    assert pos == len(data)
    return out


def _expected_batches(local: Path) -> list[tuple[str, int, str, int, int]]:
    """(topic, partition, segment, position, base offset) of every batch under ``local`` in
    reading order: partitions by (topic, partition number), segments by base offset."""
    if local.is_file():
        logs = [local]
    else:
        dirs = [local] if (local / "leader-epoch-checkpoint").exists() else \
            [d for d in local.iterdir() if d.is_dir()]
        dirs.sort(key=lambda d: (d.name.rsplit("-", 1)[0], int(d.name.rsplit("-", 1)[1])))
        logs = [log for d in dirs for log in sorted(d.glob("*.log"))]
    rows = []
    for log in logs:
        topic, partition = log.parent.name.rsplit("-", 1)
        rows.extend((topic, int(partition), log.name, pos, base) for pos, base, _ in _walk(log))
    return rows


@pytest.mark.parametrize("target", TARGETS)
def test_scan_batches_and_read_records_s3_equal_local(evidence, target):
    local = evidence.local["realdata"] / target
    uri = evidence.uri["realdata"] + "/" + target
    want_batches = columnar.read_batch_table(str(local))
    got_batches = columnar.read_batch_table(uri)
    assert got_batches.num_rows > 0
    assert got_batches.equals(want_batches)
    walked = _expected_batches(local)
    assert list(zip(*(got_batches.column(c).to_pylist() for c in
                      ("topic", "partition", "segment", "position", "base_offset")))) == walked
    want_records = columnar.read_records(str(local))
    got_records = columnar.read_records(uri)
    assert got_records.equals(want_records)
    logs = [local] if local.is_file() else sorted(local.rglob("*.log"))
    assert got_records.num_rows == sum(n for log in logs for _, _, n in _walk(log)) > 0
    # the top-level API and the batch iterator are the same readers
    assert segtools.read_records(uri).equals(want_records)
    chunks = list(columnar.iter_batch_batches(uri, max_rows=3))
    assert all(rb.num_rows <= 3 for rb in chunks)
    assert pa.Table.from_batches(chunks, schema=BATCH_SCHEMA).to_pylist() == want_batches.to_pylist()


def test_each_object_is_a_removed_temporary_copy(evidence, tmp_path, monkeypatch):
    """One segment at a time is copied to a private temporary file, removed when it is read
    (never the whole input, never left behind)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    uri = evidence.uri["realdata"] + "/final"
    seen: list[list[str]] = []
    for _ in columnar.iter_record_batches(uri):
        seen.append(sorted(str(p.relative_to(scratch)) for p in scratch.rglob("*") if p.is_file()))
    assert seen and all(len(files) == 1 and files[0].endswith(".log") for files in seen)
    assert len({files[0] for files in seen}) > 1   # several segments, each its own copy
    assert list(scratch.iterdir()) == []
    # an iteration abandoned in mid-segment removes its copy too
    it = columnar.iter_batch_batches(uri, max_rows=1)
    next(it)
    assert len([p for p in scratch.rglob("*") if p.is_file()]) == 1
    it.close()
    assert list(scratch.iterdir()) == []


def _error(fn, uri: str) -> SegtoolsError:
    with pytest.raises(SegtoolsError) as info:
        fn(uri)
    return info.value


_READERS = {
    "iter_batches": lambda u: list(segtools.iter_batches(u)),
    "read_batch_table": segtools.read_batch_table,
    "read_records": segtools.read_records,
    "iter_record_batches": lambda u: list(columnar.iter_record_batches(u)),
}


@pytest.mark.parametrize("missing", [
    f"s3://{BUCKET}/evidence/realdata/final/first_topic-0/00000000000000000999.log",
    f"s3://{BUCKET}/evidence/realdata/final/no-such-0",
    "s3://segtools-no-such-bucket/final/first_topic-0/00000000000000000000.log",
])
def test_missing_object_same_one_line_error(evidence, missing):
    errors = {name: _error(fn, missing) for name, fn in _READERS.items()}
    reference = errors.pop("iter_batches")
    text = str(reference)
    assert "\n" not in text and missing in text, text
    for name, exc in errors.items():
        assert (type(exc), str(exc)) == (type(reference), text), name


def test_object_gone_before_it_is_read(s3, evidence, monkeypatch):
    """An object listed, then deleted before its turn: the error names its URI, as for
    iter_batches (its own prefix: the shared evidence is never changed)."""
    import segtools.files.remote

    local = evidence.local["realdata"] / "final" / "first_topic-0"
    real_fetch = segtools.files.remote.fetch
    messages = {}
    for name in ("iter_batches", "read_records", "read_batch_table"):
        prefix = f"gone/{name}/first_topic-0"
        uri = s3.upload(local, prefix)
        key = f"{prefix}/00000000000000000000.log"

        def fetch_after_delete(src: str, dest: str, _key: str = key) -> None:
            s3.client.delete_object(Bucket=BUCKET, Key=_key)   # listed, now gone
            real_fetch(src, dest)

        monkeypatch.setattr(segtools.files.remote, "fetch", fetch_after_delete)
        exc = _error(_READERS[name], uri)
        monkeypatch.setattr(segtools.files.remote, "fetch", real_fetch)
        assert f"s3://{BUCKET}/{key}" in str(exc) and "\n" not in str(exc), str(exc)
        messages[name] = (type(exc), str(exc).replace(f"/{name}/", "/X/"))
    assert messages["read_records"] == messages["read_batch_table"] == messages["iter_batches"]


def test_damaged_object_error_names_the_uri(s3, evidence, tmp_path):
    """A damaged segment read from the bucket fails as its local copy does, named by its URI
    (never by the temporary copy)."""
    source = evidence.local["realdata"] / SEGMENT
    data = bytearray(source.read_bytes())
    second = _walk(source)[1][0]
    struct.pack_into(">i", data, second + 8, 5)   # batch length below any header's size
    local = tmp_path / "first_topic-0" / "00000000000000000000.log"
    local.parent.mkdir()
    local.write_bytes(bytes(data))
    uri = s3.upload(local.parent, "damaged/first_topic-0") + "/" + local.name
    for name in ("read_batch_table", "read_records", "iter_batches"):
        want = _error(_READERS[name], str(local))
        got = _error(_READERS[name], uri)
        assert str(local) in str(want)
        assert (type(got), str(got)) == (type(want), str(want).replace(str(local), uri)), name
        assert getattr(got, "path", uri) == uri and "segtools-remote" not in str(got)
