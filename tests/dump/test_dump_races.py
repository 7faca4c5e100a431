"""Files changing under the dump (issue 16): a broker trimming a large index at segment roll
must give a finding or a one-line error, never a signal (SIGBUS from a mapped file)."""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from pathlib import Path

from dump_builders import SEG, simple_records_log

_INDEX_SIZE = 80 * 1024 * 1024   # above the 64 MiB the dump used to map
_TIME_ENTRIES = 5000

# flips the index between empty and its full (sparse) size until killed, as a broker trimming
# and re-preallocating indexes does
_TRIMMER = """
import os, sys
path, size = sys.argv[1], int(sys.argv[2])
open(sys.argv[3], "w").close()   # ready
while True:
    os.truncate(path, 0)
    os.truncate(path, size)
"""


def test_index_truncated_while_dump_reads_it_never_kills_the_process(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    index = tmp_path / f"{SEG}.index"
    with open(index, "wb") as f:
        f.write(struct.pack(">ii", 9, 0) + struct.pack(">ii", 29, 0))
        f.truncate(_INDEX_SIZE)
    timeindex = tmp_path / f"{SEG}.timeindex"
    # many time-index entries: one offset-index lookup each, touching the index's hot end
    timeindex.write_bytes(b"".join(struct.pack(">qi", 1700000000000 + i, i + 1)
                                   for i in range(_TIME_ENTRIES)))
    ready = tmp_path / "ready"
    trimmer = subprocess.Popen([sys.executable, "-c", _TRIMMER, str(index), str(_INDEX_SIZE),
                                str(ready)])
    codes: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists(), "trimmer did not start"
        for _ in range(2):
            err_path = tmp_path / "stderr.txt"
            with open(err_path, "wb") as err:
                dump = subprocess.run(
                    [sys.executable, "-m", "segtools", "dump", "--verify-index-only", str(index),
                     str(timeindex)], stdout=subprocess.DEVNULL, stderr=err, timeout=120)
            codes.append(dump.returncode)
            text = err_path.read_text(errors="replace")
            assert dump.returncode in (0, 1, 2), (dump.returncode, text[-2000:])
            assert "Traceback" not in text and "internal error" not in text, text[-2000:]
    finally:
        trimmer.kill()
        trimmer.wait()
    assert len(codes) == 2
