"""The one segment-file object (segtools.records.segment_file.SegmentFile): read-only, size
fixed at open, a shrink is one FileChangedError, windows bounded, the walk is the one walk.

The batch positions of the real broker segment below come from its own size fields read
with ``struct`` here (Kafka's framing: 8-byte offset, 4-byte length), not from our readers;
tests/records/test_one_walk.py holds ``batches_from`` to the other walkers on every edge file.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from segtools.errors import FileChangedError, InputError
from segtools.records.segment_file import SegmentFile

REAL = Path(__file__).resolve().parents[1] / "data" / "realdata" / "kafka-3.6-kraft-flink-stack" / \
    "logdir" / "promotions-0" / "00000000000000000000.log"


def _framed_positions(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if pos + 12 + length > len(data):
            break
        out.append(pos)
        pos += 12 + length
    return out


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(REAL.read_bytes())
    return path


def test_batches_from_follows_the_size_fields_with_any_window(segment: Path) -> None:
    data = segment.read_bytes()
    expected = _framed_positions(data)
    assert len(expected) > 3
    for window in (64, 4096, 1 << 22):
        with SegmentFile(str(segment), window=window) as log:
            assert [s.position for s in log.batches_from(0)] == expected
            assert log.stop is not None and log.stop.position == len(data)
            assert log.stop_error() is None
            # from the third batch on, and a slice ending inside the fifth (FileRecords.slice)
            assert [s.position for s in log.batches_from(expected[2])] == expected[2:]
            cut = expected[4] + 20
            assert [s.position for s in log.batches_from(0, end=cut)] == expected[:4]


def test_a_file_that_shrinks_is_one_file_changed_error(segment: Path) -> None:
    size = segment.stat().st_size
    with SegmentFile(str(segment), window=64) as log:
        os.truncate(segment, size // 2)
        with pytest.raises(FileChangedError, match="file changed while reading") as err:
            log.read(0, size)
        assert str(segment) in str(err.value) and "\n" not in str(err.value)
        with pytest.raises(FileChangedError):
            list(log.batches_from(0))
        # a copier takes what is left and flags the change itself
        assert log.read_available(0, size) == REAL.read_bytes()[:size // 2]
        with pytest.raises(FileChangedError, match="size"):
            log.check_unchanged()


def test_growth_is_not_read_but_is_seen(segment: Path) -> None:
    data = segment.read_bytes()
    with SegmentFile(str(segment)) as log:
        with open(segment, "ab") as fh:
            fh.write(b"\0" * 100)
        assert log.size == len(data)
        assert log.read(0, len(data) + 100) == data          # never past the size at open
        with pytest.raises(FileChangedError):
            log.check_unchanged()


def test_opened_read_only_and_the_adopted_descriptor_is_closed(segment: Path) -> None:
    fd = os.open(segment, os.O_RDONLY)
    log = SegmentFile(str(segment), fd=fd)
    assert os.fstat(fd).st_size == segment.stat().st_size
    log.close()
    with pytest.raises(OSError):
        os.fstat(fd)
    with pytest.raises(InputError, match="not a regular file"):
        SegmentFile(str(segment.parent))
