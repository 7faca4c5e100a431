"""The real kafka-dump-log as the real engine's reader: what the brokers wrote is read by Kafka's
own tool (one JVM for many files), never by segtools' reader, so truth.json stays independent
of the code `segtools compare` runs."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from segtools.realcluster.kafka_runtime import KafkaRuntime, dump_log_main
from segtools.realcluster.processes import run_tool

_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*?partitionLeaderEpoch: (-?\d+) "
                    r"isTransactional: (\w+) isControl: (\w+)")
_RECORD = re.compile(r"^\| offset: (\d+) .*?keySize: (-?\d+) valueSize: (-?\d+) .*?headerKeys: \[[^\]]*\]"
                     r"(?: key: (.*?))?(?: payload: (.*))?$")
# a transaction marker: DumpLogSegments prints the marker instead of key and payload
_MARKER = re.compile(r"^\| offset: (\d+) .*? endTxnMarker: (\w+) coordinatorEpoch: -?\d+")


@dataclass(frozen=True)
class DumpedRecord:
    offset: int
    leader_epoch: int
    key: str | None
    value: str | None
    control: bool


#: one command-line argument may not exceed 128 KiB (Linux MAX_ARG_STRLEN): --files is split
_FILES_ARG_MAX = 100_000


def _run(runtime: KafkaRuntime, files: list[str], *flags: str) -> str:
    chunks: list[list[str]] = [[]]
    size = 0
    for f in files:
        if chunks[-1] and size + len(f) + 1 > _FILES_ARG_MAX:
            chunks.append([])
            size = 0
        chunks[-1].append(f)
        size += len(f) + 1
    return "".join(_run_one(runtime, c, *flags) for c in chunks if c)


def _run_one(runtime: KafkaRuntime, files: list[str], *flags: str) -> str:
    res = run_tool(runtime.command(dump_log_main(runtime.version), *flags, "--files", ",".join(files), heap="256m"),
                   timeout=300)
    if res.returncode != 0:
        from segtools.realcluster.cluster import ClusterError

        tail = " ".join(res.stderr.split()[-30:])
        raise ClusterError(f"kafka-dump-log failed (exit {res.returncode}): {tail}")
    return res.stdout


def dump_records(runtime: KafkaRuntime, files: list[str]) -> dict[str, list[DumpedRecord]]:
    """Every record of every ``.log`` file, per file, with its batch's partition leader epoch."""
    out: dict[str, list[DumpedRecord]] = {f: [] for f in files}
    text = _run(runtime, files, "--deep-iteration", "--print-data-log")
    current: list[DumpedRecord] | None = None
    epoch = -1
    control = False
    for line in text.splitlines():
        if line.startswith("Dumping "):
            current = out.setdefault(line[len("Dumping "):].strip(), [])
            continue
        m = _BATCH.match(line)
        if m:
            epoch = int(m.group(4))
            control = m.group(6) == "true"
            continue
        m = _MARKER.match(line)
        if m and current is not None:
            current.append(DumpedRecord(int(m.group(1)), epoch, None, m.group(2), True))
            continue
        m = _RECORD.match(line)
        if m and current is not None:
            key = m.group(4) if int(m.group(2)) >= 0 else None
            value = m.group(5) if int(m.group(3)) >= 0 else None
            if key is None and int(m.group(2)) == 0:
                key = ""
            if value is None and int(m.group(3)) == 0:
                value = ""
            current.append(DumpedRecord(int(m.group(1)), epoch, key, value, control))
    return out


def dump_metadata(runtime: KafkaRuntime, files: list[str]) -> list[tuple[int, dict[str, Any]]]:
    """The KRaft metadata records (offset, {"type", "version", "data"}) of the given segments,
    decoded by kafka-dump-log --cluster-metadata-decoder."""
    text = _run(runtime, files, "--cluster-metadata-decoder")
    out: list[tuple[int, dict[str, Any]]] = []
    for line in text.splitlines():
        if not line.startswith("| offset: "):
            continue
        m = re.match(r"^\| offset: (\d+) .*? payload: (\{.*\})\s*$", line)
        if not m:
            continue
        try:
            out.append((int(m.group(1)), json.loads(m.group(2))))
        except ValueError:
            continue
    return out
