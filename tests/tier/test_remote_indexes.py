"""A remote segment's index, snapshot and leader-epoch objects against its .log
(segtools.tier.remote_indexes, through ``segtools tier --remote``). The clean case is a real
broker's segment with its own index files (a remote segment's objects are the broker's files
byte for byte: checked on a real 4.3.1 cluster, test_tier_realkafka.py); each mutation's
finding follows from the mutation."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from segtools.files.checkpoints import write_leader_epoch_checkpoint
from segtools.files.indexes import read_offset_index, read_time_index
from segtools.records.batches import iter_batches
from segtools.tier import audit
from tests.tier.test_tier_audit import TOPIC_ID, _sid, broker_dir, start, update

pytestmark = pytest.mark.fast

#: a real Kafka 3.6 broker's partition (tests/data/realdata/README.md): one segment with its
#: offset and time indexes, producer snapshot and epoch chain {0: 0}
REAL = (Path(__file__).resolve().parent.parent / "data" / "realdata" /
        "kafka-3.6-kraft-flink-stack" / "logdir" / "customers_keyed-0")


def _tier(tmp: Path) -> tuple[Path, Path, dict[str, Path]]:
    """The real segment as remote segment 0 of partition t-0 in LocalTieredStorage's layout,
    its metadata on a broker whose replica holds the offsets after it."""
    log = REAL / f"{0:020d}.log"
    last = max(b.last_offset for b in iter_batches(str(log)))
    folder = tmp / "tiered" / "kafka-tiered-storage" / f"t-0-{TOPIC_ID}"
    folder.mkdir(parents=True)
    name = f"{0:020d}-{_sid(0)}"
    files = {".log": log, ".index": log.with_suffix(".index"),
             ".timeindex": log.with_suffix(".timeindex"),
             ".snapshot": REAL / f"{last + 1:020d}.snapshot",
             ".leader_epoch_checkpoint": REAL / "leader-epoch-checkpoint"}
    out = {}
    for suffix, src in files.items():
        out[suffix] = folder / (name + suffix)
        shutil.copyfile(src, out[suffix])
    md = [start(0, 0, last, {0: 0}, size=log.stat().st_size), update(0, 1)]
    broker = broker_dir(tmp, md, local_start=last + 1, log_end=last + 10, epochs={0: 0})
    return broker, tmp / "tiered", out


def _index_findings(tmp: Path) -> list[str]:
    """The audit's remote_index_mismatch messages for the tier _tier(tmp) built (and
    nothing else found)."""
    found = audit([str(tmp / "broker-1")], remote_root=str(tmp / "tiered")).findings
    assert {f.kind for f in found} == {"remote_index_mismatch"}
    return [f.message for f in found]


def test_real_segments_own_objects_pass(tmp_path: Path) -> None:
    broker, remote, files = _tier(tmp_path)
    report = audit([str(broker)], remote_root=str(remote))
    assert report.findings == []
    # not vacuous: the indexes have entries to check
    assert len(read_offset_index(files[".index"])) > 100
    assert len(read_time_index(files[".timeindex"])) > 100


def test_offset_index_entry_off_a_batch_start(tmp_path: Path) -> None:
    _, _, files = _tier(tmp_path)
    data = bytearray(files[".index"].read_bytes())
    (pos,) = struct.unpack_from(">i", data, 8 * 7 + 4)
    struct.pack_into(">i", data, 8 * 7 + 4, pos + 1)       # entry 7 one byte late
    files[".index"].write_bytes(bytes(data))
    (msg,) = _index_findings(tmp_path)
    assert "entry 7 (byte 56)" in msg and "no batch of the .log starts" in msg


def test_time_index_past_the_segment_and_epoch_file_of_another_chain(tmp_path: Path) -> None:
    _, _, files = _tier(tmp_path)
    data = bytearray(files[".timeindex"].read_bytes())
    n = len(data) // 12
    struct.pack_into(">i", data, 12 * (n - 1) + 8, 10_000_000)   # last entry: offset far out
    files[".timeindex"].write_bytes(bytes(data))
    write_leader_epoch_checkpoint(files[".leader_epoch_checkpoint"], [(0, 0), (3, 5)])
    msgs = _index_findings(tmp_path)
    assert len(msgs) == 3
    assert any(f"entry {n - 1} (byte {12 * (n - 1)})" in m and "no batch of the .log holds" in m
               for m in msgs)
    # the chain says epoch 3 from offset 5: the metadata says {0: 0}, and the batches at 5 on
    # carry epoch 0
    assert any("epochs {0: 0, 3: 5}" in m and "{0: 0}" in m for m in msgs)
    assert any("carries epoch 0, the file says 3" in m for m in msgs)


def test_snapshot_with_a_broken_crc(tmp_path: Path) -> None:
    _, _, files = _tier(tmp_path)
    data = bytearray(files[".snapshot"].read_bytes())
    data[-1] ^= 0xFF
    files[".snapshot"].write_bytes(bytes(data))
    (msg,) = _index_findings(tmp_path)
    assert ".snapshot: CRC" in msg


def test_txn_index_against_the_abort_markers(tmp_path: Path) -> None:
    """Producer 7's transaction at 0-1 aborted by the marker at 2 (as a broker writes them,
    segtools.writer): a txnindex entry ending at 2 passes, one ending at 1 (a data batch) or of
    another producer does not."""
    from segtools.files.indexes import txn_index_entry
    from segtools.writer.batch_builder import NewRecord, build_batch, build_control_batch
    from tests.tier.test_tier_audit import remote_object

    log = build_batch([NewRecord(None, b"a"), NewRecord(None, b"b")], base_offset=0,
                      producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True,
                      base_timestamp=1) + \
        build_control_batch("abort", base_offset=2, producer_id=7, producer_epoch=0, timestamp=2)
    md = [start(0, 0, 2, {0: 0}, size=len(log)), update(0, 1)]
    broker = broker_dir(tmp_path, md, local_start=3, log_end=5, epochs={0: 0})
    remote_object(tmp_path / "tiered", 0, 0, log)
    txn = next((tmp_path / "tiered").rglob("*.log")).with_suffix(".txnindex")

    def kinds(entries: bytes) -> list[str]:
        txn.write_bytes(entries)
        return [f.message for f in audit([str(broker)], remote_root=str(tmp_path / "tiered"))
                .findings]

    assert kinds(txn_index_entry(7, 0, 2, 0)) == []
    (wrong,) = kinds(txn_index_entry(7, 0, 2, 0) + txn_index_entry(7, 0, 1, 0))
    assert "entry 1 (byte 34) producer 7 [0, 1]" in wrong and "no control batch" in wrong
    (other,) = kinds(txn_index_entry(8, 0, 2, 0))
    assert "producer 8" in other
