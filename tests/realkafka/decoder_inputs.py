"""Internal-topic segments written by Kafka's OWN serializers (InternalTopicWriter.java over the
pinned Kafka 4.3.1 jars), for the decoder parity tests: the records are described as JSON that
Kafka's generated JSON converters turn into messages, so no segtools code writes a byte."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

WRITER_SOURCE = Path(__file__).with_name("InternalTopicWriter.java")

U1 = "b6YXW2f9QvC4oGsxvuUF4A"
U2 = "DxcvA2HCQqKpjuyXxvnXEQ"


def _j(data: object) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def group_jobs() -> list[str]:
    """Every record type of Kafka 4.3's group coordinator (0-23 but 9 and 18), with
    non-default values, tagged fields set and unset, and tombstones."""
    tp = [{"topicId": U1, "partitions": [0, 2, 5]}]
    tp_epochs = [{"topicId": U1, "partitions": [0, 2], "assignmentEpochs": [3, 4]},
                 {"topicId": U2, "partitions": [1]}]
    tasks = [{"subtopologyId": "0", "partitions": [0, 1]}, {"subtopologyId": "1", "partitions": []}]
    tasks_epochs = [{"subtopologyId": "0", "partitions": [0, 1], "assignmentEpochs": [7, 7]},
                    {"subtopologyId": "2", "partitions": [3]}]
    topic_info = {"name": "app-store-changelog", "partitions": 0, "replicationFactor": 3,
                  "topicConfigs": [{"key": "cleanup.policy", "value": "compact"}]}
    gid = {"groupId": "g1"}
    gmid = {"groupId": "g1", "memberId": "m-1"}
    rows: list[tuple[int, dict, int | None, dict | None]] = [
        (0, {"group": "g0", "topic": "t", "partition": 1}, 0,
         {"offset": 42, "metadata": "legacy", "commitTimestamp": 1700000000000}),
        (1, {"group": "g1", "topic": "t", "partition": 0}, 1,
         {"offset": 7, "metadata": "", "commitTimestamp": 1700000000001, "expireTimestamp": 1700000009999}),
        (1, {"group": "g1", "topic": "t", "partition": 0}, 3,
         {"offset": 8, "leaderEpoch": 5, "metadata": "m", "commitTimestamp": 1700000000002}),
        (1, {"group": "g1", "topic": "t", "partition": 1}, 4,
         {"offset": 9, "leaderEpoch": 6, "metadata": "ü", "commitTimestamp": 1700000000003, "topicId": U1}),
        (1, {"group": "g1", "topic": "t", "partition": 2}, 4,
         {"offset": 10, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 1700000000004}),
        (1, {"group": "g1", "topic": "t", "partition": 2}, None, None),
        (2, {"group": "classic"}, 4,
         {"protocolType": "connect", "generation": 3, "protocol": "range", "leader": "m-1",
          "currentStateTimestamp": 1700000000005, "members": []}),
        (3, gid, 0, {"epoch": 5}),
        (3, gid, 0, {"epoch": 6, "metadataHash": -1234567890123}),
        (4, gid, 0, {"topics": [{"topicId": U1, "topicName": "t", "numPartitions": 3,
                                 "partitionMetadata": [{"partition": 0, "racks": ["r1", "r2"]}]}]}),
        (5, gmid, 0, {"instanceId": None, "rackId": "r1", "clientId": "c", "clientHost": "/127.0.0.1",
                      "subscribedTopicNames": ["t", "u"], "subscribedTopicRegex": None,
                      "rebalanceTimeoutMs": 300000, "serverAssignor": "uniform"}),
        (5, gmid, 0, {"instanceId": "i-1", "rackId": None, "clientId": "c", "clientHost": "h",
                      "subscribedTopicNames": [], "subscribedTopicRegex": "t.*",
                      "rebalanceTimeoutMs": 1, "serverAssignor": None,
                      "classicMemberMetadata": {"sessionTimeoutMs": 45000, "supportedProtocols": [
                          {"name": "range", "metadata": "AAEAAAABAAF0"}]}}),
        (6, gid, 0, {"assignmentEpoch": 5}),
        (6, gid, 0, {"assignmentEpoch": 6, "assignmentTimestamp": 1700000000006}),
        (7, gmid, 0, {"topicPartitions": tp}),
        (8, gmid, 0, {"memberEpoch": 6, "previousMemberEpoch": 5, "state": 0,
                      "assignedPartitions": tp_epochs, "partitionsPendingRevocation": tp}),
        (8, gmid, None, None),
        (10, gmid, 0, {"rackId": None, "clientId": "share", "clientHost": "h",
                       "subscribedTopicNames": ["s"]}),
        (11, gid, 0, {"epoch": 2, "metadataHash": 99}),
        (12, gid, 0, {"assignmentEpoch": 2, "assignmentTimestamp": 1700000000007}),
        (13, gmid, 0, {"topicPartitions": tp}),
        (14, gmid, 0, {"memberEpoch": 2, "previousMemberEpoch": 1, "state": 1,
                       "assignedPartitions": tp}),
        (15, gid, 0, {"initializingTopics": [{"topicId": U1, "topicName": "s", "partitions": [0]}],
                      "initializedTopics": [{"topicId": U2, "topicName": "s2", "partitions": [0, 1]}],
                      "deletingTopics": [{"topicId": U2, "topicName": "gone"}]}),
        (16, {"groupId": "g1", "regularExpression": "orders-.*"}, 0,
         {"topics": ["orders-1", "orders-2"], "version": 12, "timestamp": 1700000000008}),
        (16, {"groupId": "g1", "regularExpression": "orders-.*"}, None, None),
        (17, gid, 0, {"epoch": 3, "metadataHash": 5}),
        (17, gid, 0, {"epoch": 4, "metadataHash": 6, "validatedTopologyEpoch": 2,
                      "lastAssignmentConfigs": [{"key": "num.standby.replicas", "value": "1"}]}),
        (17, gid, 0, {"epoch": 5, "metadataHash": 7, "lastAssignmentConfigs": None}),
        (19, gmid, 0, {"instanceId": None, "rackId": "r", "clientId": "streams", "clientHost": "h",
                       "rebalanceTimeoutMs": 300000, "topologyEpoch": 1, "processId": "p-1",
                       "userEndpoint": {"host": "localhost", "port": 65535},
                       "clientTags": [{"key": "az", "value": "a"}]}),
        (19, gmid, 0, {"instanceId": "i", "rackId": None, "clientId": "streams", "clientHost": "h",
                       "rebalanceTimeoutMs": 1, "topologyEpoch": 2, "processId": "p-2",
                       "userEndpoint": None, "clientTags": []}),
        (20, gid, 0, {"assignmentEpoch": 3}),
        (20, gid, 0, {"assignmentEpoch": 4, "assignmentTimestamp": 1700000000009}),
        (21, gmid, 0, {"activeTasks": tasks, "standbyTasks": [], "warmupTasks": tasks[:1]}),
        (22, gmid, 0, {"memberEpoch": 3, "previousMemberEpoch": 2, "state": 2,
                       "activeTasks": tasks_epochs, "standbyTasks": tasks, "warmupTasks": [],
                       "activeTasksPendingRevocation": [], "standbyTasksPendingRevocation": tasks_epochs,
                       "warmupTasksPendingRevocation": []}),
        (23, gid, 0, {"epoch": 1, "subtopologies": [{
            "subtopologyId": "0", "sourceTopics": ["in"], "sourceTopicRegex": ["in-.*"],
            "stateChangelogTopics": [topic_info], "repartitionSinkTopics": ["app-rep"],
            "repartitionSourceTopics": [topic_info],
            "copartitionGroups": [{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0]}]}]}),
        (23, gid, None, None),
    ]
    jobs = []
    for record_type, key, version, value in rows:
        jobs.append("\t".join(["group", str(record_type), _j(key),
                               "-" if version is None else str(version),
                               "-" if value is None else _j(value)]))
    return jobs


def share_state_jobs() -> list[str]:
    key = {"groupId": "sg", "topicId": U1, "partition": 0}
    batches = [{"firstOffset": 0, "lastOffset": 4, "deliveryState": 2, "deliveryCount": 1},
               {"firstOffset": 5, "lastOffset": 5, "deliveryState": 4, "deliveryCount": 3}]
    return ["\t".join(row) for row in [
        ["share", "0", _j(key), "0", _j({"snapshotEpoch": 1, "stateEpoch": 0, "leaderEpoch": 2,
                                         "startOffset": 0, "createTimestamp": 1700000000000,
                                         "writeTimestamp": 1700000000001, "stateBatches": batches})],
        ["share", "0", _j(key), "0", _j({"snapshotEpoch": 2, "stateEpoch": 1, "leaderEpoch": 2,
                                         "startOffset": 6, "deliveryCompleteCount": 3,
                                         "createTimestamp": 1700000000002,
                                         "writeTimestamp": 1700000000003, "stateBatches": []})],
        ["share", "1", _j(key), "0", _j({"snapshotEpoch": 2, "leaderEpoch": 2, "startOffset": 6,
                                         "stateBatches": batches[1:]})],
        ["share", "1", _j(key), "0", _j({"snapshotEpoch": 2, "leaderEpoch": 3, "startOffset": 7,
                                         "deliveryCompleteCount": 0, "stateBatches": []})],
        ["share", "1", _j(key), "-"],
    ]]


def remote_log_metadata_jobs() -> list[str]:
    jobs = [f"rlm\t{kind}\t{n}" for kind in ("segment", "update", "delete", "snapshot")
            for n in range(4)]
    # values Kafka's serde refuses: frame versions 0 and 2, an unknown api key, a truncated
    # body, a body with trailing bytes, an empty value and a null value
    trailing = ("01020000" + "01" + "74" + "00" * 16 + "00000000" + "00000001" + "0000000000000005"
                + "00" + "00" + "ffff")
    tip = "0274" + "11" * 16 + "00000003" + "00"   # TopicIdPartitionEntry "t", partition 3
    sid = tip + "22" * 16 + "00"
    common = "0000000000000001" + "0000000000000002" + "00000001" + "0000000000000003" + "0000000000000004"
    epochs = "02" + "00000000" + "0000000000000001" + "00"
    bad_states = (  # unknown states, no leader epochs, both
        "010200" + tip + "00000001" + "0000000000000005" + "09" + "00",
        "010100" + sid + "00000001" + "0000000000000005" + "00" + "07" + "00",
        "010000" + sid + common + epochs + "00000010" + "00" + "09" + "00",
        "010000" + sid + common + "01" + "00000010" + "00" + "00" + "00",
        "010000" + sid + common + "01" + "00000010" + "00" + "09" + "00",
        "010300" + "22" * 16 + common + epochs + "00000010" + "00" + "09" + "00",
        "010300" + "22" * 16 + common + "01" + "00000010" + "00" + "09" + "00",
    )
    # a partition-delete record with a tagged field 4.3 does not know (tag 5, 2 bytes)
    unknown_tag = "010200" + tip + "00000001" + "0000000000000005" + "00" + "010502abcd"
    jobs += [f"raw\t-\t{v}" for v in ("0002", "0202", "01090000", "0102000000", trailing, "", "-",
                                        *bad_states, unknown_tag)]
    return jobs


def transaction_state_jobs() -> list[str]:
    """``__transaction_state`` records as raw bytes (Kafka's generated classes have no JSON
    converter for this topic in the writer), spelled out field by field from
    TransactionLogKey.json / TransactionLogValue.json: good v0 and v1 values, a v1 value with a
    tagged field 4.3 does not know, and keys and values Kafka's serde refuses (strings and
    arrays that overrun the buffer, invalid UTF-8, unknown versions and record types, short
    buffers, trailing bytes, a tombstone)."""
    key = "0000" + "0005" + b"txn-a".hex()
    head = "00000000000003e8" + "0001" + "0000ea60" + "01"   # producerId, epoch, timeout, status
    tail = "0000000000000005" + "0000000000000004"           # last update, start timestamps
    orders = b"orders".hex()
    v0 = "0000" + head + "00000001" + "0006" + orders + "00000002" + "00000000" + "00000002" + tail
    v1_body = head + "02" + "07" + orders + "03" + "00000000" + "00000002" + "00" + tail
    values = [
        v0, "0001" + v1_body + "00",
        "0001" + v1_body + "01" + "05" + "02" + "abcd",          # unknown tag 5
        "0000" + head + "00000001" + "0100" + "6162",            # topic string overruns
        "0001" + head + "02" + "7f" + "6162",                    # compact topic overruns
        "0000" + head + "00000001" + "0002" + "fffe" + "00000000" + tail,   # invalid UTF-8
        "0000" + head + "7fffffff",                              # array count overruns
        "0000" + head + "00000001" + "0001" + "61" + "7fffffff",
        "00", "", "ffff" + head, "0002" + head, "00000000", v0 + "deadbeef", "-"]
    keys = ["", "00", "0001" + "0003" + "616263", "ffff" + "0003" + "616263",
            "0000" + "0010" + "6162", "0000" + "ffff", "0000" + "0002" + "fffe",
            "0000" + "0001" + "61" + "00", "0000", "0000" + "7fff"]
    return [f"raw\t{key}\t{v}" for v in values] + [f"raw\t{k}\t{v0}" for k in keys]


class InternalTopicWriter:
    """Compiles InternalTopicWriter.java once per session and runs it."""

    def __init__(self, workdir: Path) -> None:
        from segtools.realcluster.kafka_runtime import kafka_runtime

        self.runtime = kafka_runtime()
        source = WRITER_SOURCE.read_bytes()
        digest = hashlib.sha256(source + self.runtime.classpath.encode()).hexdigest()[:12]
        self.classes = Path(workdir) / f"writer-{digest}"
        if not (self.classes / "InternalTopicWriter.class").is_file():
            self.classes.mkdir(parents=True, exist_ok=True)
            javac = shutil.which("javac", path=str(Path(self.runtime.java).parent)) or \
                shutil.which("javac")
            if javac is None:
                raise RuntimeError("javac not found: the decoder tests need a JDK 17")
            proc = subprocess.run([javac, "-d", str(self.classes), "-cp", self.runtime.classpath,
                                   str(WRITER_SOURCE)], capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                raise RuntimeError(f"cannot compile {WRITER_SOURCE.name}: {proc.stderr}")

    def write(self, segments: dict[Path, list[str]]) -> None:
        """Each segment (a ``.log`` path) holding one batch per job, written by Kafka's classes
        in one JVM."""
        lines = []
        for log, jobs in segments.items():
            log.parent.mkdir(parents=True, exist_ok=True)
            lines += [f"file\t{log}"] + jobs
        job_file = next(iter(segments)).with_suffix(".jobs")
        job_file.write_text("".join(j + "\n" for j in lines), encoding="utf-8")
        argv = self.runtime.command("InternalTopicWriter", str(job_file), heap="256m")
        argv[argv.index("-cp") + 1] = f"{self.classes}:{self.runtime.classpath}"
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        job_file.unlink()
        if proc.returncode != 0:
            raise RuntimeError(f"InternalTopicWriter failed: {proc.stderr[-3000:]}")
