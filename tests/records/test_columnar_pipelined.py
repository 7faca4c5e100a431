"""Compressed batches decompressed ahead on worker threads: same rows, errors in batch order."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from segtools.errors import FormatError
from segtools.records import columnar


def _zstd_batch(base_offset: int, n: int = 20) -> bytes:
    b = DefaultRecordBatchBuilder(2, 4, False, -1, -1, -1, 1 << 20)
    for i in range(n):
        b.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"value-%06d;" % (base_offset + i) * 10,
                 headers=[])
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)
    assert buf[22] & 0x07 == 4, "kafka-python must have compressed this batch"
    return bytes(buf)


@pytest.fixture
def segment(tmp_path):
    batches = [_zstd_batch(i * 20) for i in range(60)]   # several worker groups
    path = tmp_path / "t-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(b"".join(batches))
    return path, batches


def test_pipelined_rows_equal_one_by_one(segment, monkeypatch):
    path, _ = segment
    ahead = columnar.read_records(path)
    monkeypatch.setattr("segtools.records.columnar.decompress._decompress_pool", lambda: None)   # sequential path
    one_by_one = columnar.read_records(path)
    assert ahead.equals(one_by_one)
    assert ahead.column("offset").to_pylist() == list(range(1200))
    assert ahead.column("value")[1199].as_py() == b"value-001199;" * 10


def test_error_in_a_group_comes_after_the_good_batches_before_it(segment):
    path, batches = segment
    data = bytearray(path.read_bytes())
    bad = 37
    pos = sum(len(b) for b in batches[:bad])
    for k in range(61 + 8, 61 + 24):             # garbage inside the zstd frame of batch 37
        data[pos + k] = 0xFF
    path.write_bytes(bytes(data))
    offsets: list[int] = []
    with pytest.raises(FormatError) as info:
        for rb in columnar.iter_record_batches(path, max_rows=100):
            offsets.extend(rb.column("offset").to_pylist())
    # located where the compressed records start, as the object reader does
    assert info.value.position == pos + 61 and info.value.base_offset == bad * 20
    assert offsets == list(range(bad * 20))


def test_a_forked_child_gets_its_own_workers(segment):
    import os

    path, _ = segment
    columnar.read_records(path)                      # the parent's pool now exists
    pid = os.fork()
    if pid == 0:                                     # child: must finish, not wait forever
        try:
            ok = columnar.read_records(path).num_rows == 1200
        finally:
            os._exit(0 if ok else 1)
    for _ in range(600):                             # at most 60 s
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        import time
        time.sleep(0.1)
    os.kill(pid, 9)
    pytest.fail("the forked child hung on the parent's decompression pool")
