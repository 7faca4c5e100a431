"""Property test: what we ask the writer to write is what two independent readers find in the
partition directory -- segtools.records.batches and kafka-python -- with the inputs as the oracle."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords

from segtools.records.batches import iter_batches
from segtools.writer import LogWriter, NewRecord, build_batch

nullable_bytes = st.one_of(st.none(), st.binary(max_size=40))
records_st = st.builds(
    NewRecord,
    key=nullable_bytes,
    value=nullable_bytes,
    headers=st.lists(st.tuples(st.text(max_size=5), nullable_bytes), max_size=2),
    timestamp=st.integers(min_value=0, max_value=2**45),
)
batch_st = st.fixed_dictionaries({
    "records": st.lists(records_st, min_size=1, max_size=5),
    "compression": st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
    "producer": st.one_of(st.none(), st.tuples(st.integers(0, 2**40), st.integers(0, 100),
                                               st.integers(0, 2**31 - 1))),
    "gap": st.integers(0, 3),
    "leader_epoch": st.integers(-1, 50),
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(batch_st, min_size=1, max_size=8),
       segment_bytes=st.integers(200, 2000), interval=st.integers(0, 600))
def test_written_log_reads_back_in_both_readers(specs: list[dict], segment_bytes: int,
                                                interval: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        writer = LogWriter(tmp / "t-0", segment_bytes=segment_bytes,
                           index_interval_bytes=interval, segment_index_bytes=1024)
        expected = []  # (offset, key, value, headers, timestamp)
        offset = 0
        for spec in specs:
            offset += spec["gap"]
            pid, epoch, seq = spec["producer"] or (-1, -1, -1)
            data = build_batch(spec["records"], base_offset=offset,
                               compression=spec["compression"], producer_id=pid,
                               producer_epoch=epoch, base_sequence=seq,
                               partition_leader_epoch=spec["leader_epoch"])
            writer.append(data)
            for i, r in enumerate(spec["records"]):
                expected.append((offset + i, r.key, r.value, list(r.headers), r.timestamp))
            offset += len(spec["records"])
        writer.close()
        assert writer.log_end_offset == offset

        ours = [(r.offset, r.key, r.value, list(r.headers), r.timestamp)
                for b in iter_batches(tmp / "t-0") for r in b.records()]
        assert ours == expected
        assert all(b.crc_valid for b in iter_batches(tmp / "t-0"))

        theirs = []
        for log in sorted((tmp / "t-0").glob("*.log")):
            mr = MemoryRecords(log.read_bytes())
            while (batch := mr.next_batch()) is not None:
                assert batch.validate_crc()
                theirs += [(r.offset, r.key, r.value, list(r.headers), r.timestamp) for r in batch]
        assert theirs == expected
    finally:
        shutil.rmtree(tmp)
