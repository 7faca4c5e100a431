"""The offset kafka-dump-log reads from a segment's or index's file name
(``Long.parseLong(name.split("\\.")[0])`` in DumpLogSegments.java) against the real tool:
`segtools dump` prints the same "Log starting offset" for every name Java parses (signs,
leading zeros, non-ASCII digits) and, where Java throws NumberFormatException (blanks,
``_``, out of the 64-bit range, no digits) and the real tool dies, a note instead of a number
Python's ``int`` would have accepted."""

from __future__ import annotations

from pathlib import Path

import parity_harness as h
import pytest

pytestmark = pytest.mark.realkafka

#: stems Java parses (-> the value) or rejects (-> None)
STEMS = {
    "00000000000000000005": 5, "+7": 7, "-1": -1, "\u0663\u0664": 34,
    "9223372036854775807": 9223372036854775807,
    "1_0": None, " 5": None, "5 ": None, "9223372036854775808": None, "": None, "x1": None,
}


def test_offset_from_a_log_file_name_follows_java_long_parse(kafka_dump_log: h.KafkaDumpLog,
                                                            tmp_path: Path) -> None:
    from segtools.formats.names import dump_stem_offset

    src = h.REPO / "samples" / "dump" / "simple-0" / "00000000000000000000.log"
    part = tmp_path / "names-0"
    part.mkdir()
    jobs = []
    for stem in STEMS:
        name = f"{stem}.log"
        (part / name).write_bytes(src.read_bytes())
        jobs.append(["--files", f"names-0/{name}"])
    kafka = kafka_dump_log.run_jobs(jobs, tmp_path)
    ours = [h.run_ours(job, tmp_path) for job in jobs]
    for want, job, k, o in zip(STEMS.values(), jobs, kafka, ours):
        if want is None:
            assert "NumberFormatException" in k.exception, (job, k.stdout, k.exception[:300])
            with pytest.raises(ValueError):
                dump_stem_offset(job[-1])
            assert "Log starting offset" not in o.stdout, (job, o.stdout)
        else:
            line = f"Log starting offset: {want}\n"
            assert not k.crashed and line in k.stdout, (job, k.stdout, k.exception[:300])
            assert o.stdout == k.stdout, (job, h.first_difference(k.stdout, o.stdout))
