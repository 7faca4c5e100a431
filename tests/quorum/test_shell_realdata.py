"""The image at the end of a real Kafka 3.6 controller's metadata log (tests/data/realdata,
provenance in its README) against Kafka's own kafka-metadata-shell reading a copy of that log:
topics, partitions, brokers, features, topic configs and the next producer id. No 3.6 shell
jar is at hand: the 4.3.1 shell reads it, and it drops the one config Kafka 4.0 removed
(message.timestamp.difference.max.ms, absent from 4.3.1's TopicConfig), which the 3.6 records
still hold; every other entity must be equal. One JVM, no cluster."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from segtools.quorum import load_node
from segtools.quorum.image import image_at
from tests.quorum.metadata_shell import our_view, run_shell, shell_view
from tests.quorum.real_controllers import shell_classpath

pytestmark = pytest.mark.realkafka

LOGDIR = Path(__file__).resolve().parents[1] / "data" / "realdata" / \
    "kafka-3.6-kraft-flink-stack" / "logdir"
REMOVED_IN_4_0 = "message.timestamp.difference.max.ms"


def test_image_at_the_end_of_a_real_36_log_equals_the_metadata_shell(tmp_path: Path) -> None:
    from segtools.realcluster.kafka_runtime import kafka_runtime

    rt = kafka_runtime(version="4.3.1")
    node = load_node(str(LOGDIR))
    (log,) = sorted({b.path for b in node.batches})
    copy = tmp_path / "metadata.log"
    shutil.copy(log, copy)                  # Kafka's tools run on copies only
    shell = shell_view(run_shell(rt, shell_classpath(rt), copy, tmp_path))
    # from the snapshot at 14926 plus the log after it; the shell replays the log from 0
    ours = our_view(image_at(node))
    assert shell.pop("metadata.version").startswith(ours.pop("metadata.version"))
    dropped = 0
    for values in ours["configs"].values():
        dropped += values.pop(REMOVED_IN_4_0, None) is not None
    assert dropped > 0 and ours == shell, [k for k in shell if shell[k] != ours[k]]
    assert len(shell["partitions"]) == 151 and len(shell["configs"]) == 55
    assert shell["next_producer_id"] == 1000 and shell["last_offset"] == 17026
