"""The one batch walk's edge files against the real kafka-dump-log (Kafka 4.3.1).

tests/records/test_one_walk.py proves every segtools walker gives the answer of
``kafka_walk`` (the size fields as written, read by Kafka's FileLogInputStream rules). Here
the real tool walks the same files (one JVM for all of them): the batch positions it prints,
the torn tail it reports ("Found N invalid bytes at the end") and the exception it dies with
must be ``kafka_walk``'s, and so the object reader's.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "records"))

from test_one_walk import END, WALK_EDGES, kafka_walk, walk_objects  # noqa: E402

pytestmark = pytest.mark.realkafka

#: Kafka walks onto the entry at 0 (magic -1 is a legacy entry), then dies printing it
#: (LegacyRecord.headerSize: "Invalid magic used in LegacyRecord: -1"): no position printed
_KAFKA_CRASHES_PRINTING = {"short_magic_negative_is_legacy"}


def test_real_kafka_dump_log_walks_the_edge_files_like_segtools(kafka_dump_log, tmp_path,
                                                                monkeypatch):
    from segtools.records import batches as batches_module

    monkeypatch.setattr(batches_module, "_SETTLE_SECONDS", 0.0)
    names = [n for n in sorted(WALK_EDGES)
             if not n.startswith("records_") and n not in _KAFKA_CRASHES_PRINTING]
    paths = []
    for name in names:
        d = tmp_path / name / "t-0"
        d.mkdir(parents=True)
        p = d / "00000000000000000000.log"
        p.write_bytes(WALK_EDGES[name][0])
        paths.append(p)
    outcomes = kafka_dump_log.run_jobs([["--files", str(p)] for p in paths], cwd=tmp_path)
    for name, path, out in zip(names, paths, outcomes):
        data = WALK_EDGES[name][0]
        positions, stop, outcome = kafka_walk(data, None)   # Kafka has no batch limit
        printed = [int(m) for m in re.findall(r"\bposition: (\d+)", out.stdout)]
        assert printed == positions, (name, out.stdout)
        tail = re.search(r"Found (\d+) invalid bytes at the end", out.stdout)
        if outcome == END:
            assert not out.exception, (name, out.exception)
            assert (int(tail.group(1)) if tail else 0) == len(data) - stop, (name, out.stdout)
        elif outcome[1] == "CorruptBatchError":
            assert "CorruptRecordException: Found record size" in out.exception, name
        else:
            assert outcome[1] == "TruncatedBatchError", name
            assert f"Failed to load record batch at position {stop} " in out.exception, name
        # and segtools' object reader (every other walker equals it: test_one_walk)
        assert walk_objects(path, None) == (positions, stop, outcome), name
