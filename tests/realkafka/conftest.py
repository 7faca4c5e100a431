"""Fixtures of the real-Kafka parity tests: the real kafka-dump-log (Kafka 4.3.1, resolved by
segtools.realcluster.kafka_runtime from jvm/pom.xml) and a work directory holding copies of the inputs.

A missing Java, JDK compiler, Maven or Kafka jar is a FAILURE with the reason, never a skip:
these tests are the project's evidence that `segtools dump` prints what Kafka prints."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import parity_harness as h  # noqa: E402


@pytest.fixture(scope="session")
def kafka_dump_log(tmp_path_factory: pytest.TempPathFactory) -> h.KafkaDumpLog:
    from segtools.realcluster.kafka_runtime import KafkaUnavailableError

    try:
        return h.KafkaDumpLog(tmp_path_factory.mktemp("kafka-dump-log"))
    except (KafkaUnavailableError, h.KafkaUnavailable) as exc:
        pytest.fail(f"the real kafka-dump-log is unavailable, so dump parity cannot be "
                    f"checked: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def parity_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copies of tests/data/realdata, samples/generated and samples/dump, a
    __transaction_state partition written by segtools' writer and the real 0.8/0.9 message
    sets staged as segments: the real tool writes next to what it dumps (a missing .index)."""
    ws = tmp_path_factory.mktemp("parity-ws")
    h.copy_inputs(ws, [h.REPO / "tests" / "data" / "realdata", h.REPO / "samples" / "generated",
                       h.REPO / "samples" / "dump"])
    h.build_transaction_state(ws / "built")
    h.stage_legacy_message_sets(ws / "built")
    return ws
