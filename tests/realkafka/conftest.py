"""Fixtures of the real-Kafka parity tests: the real kafka-dump-log (the default release,
segtools.realcluster.kafka_runtime.KAFKA_VERSION, resolved from jvm/pom.xml; ``kafka_dump_log_of``
gives any other release of KAFKA_VERSIONS) and a work directory holding copies of the inputs.

A missing Java, JDK compiler, Maven or Kafka jar is a FAILURE with the reason, never a skip:
these tests are the project's evidence that `segtools dump` prints what Kafka prints."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import parity_harness as h  # noqa: E402


@pytest.fixture(scope="session")
def kafka_dump_log_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], h.KafkaDumpLog]:
    """The real kafka-dump-log of one release ("4.0.0" ... "4.4.0"), one per session."""
    from segtools.realcluster.kafka_runtime import KafkaUnavailableError

    tools: dict[str, h.KafkaDumpLog] = {}

    def of(version: str) -> h.KafkaDumpLog:
        if version not in tools:
            try:
                tools[version] = h.KafkaDumpLog(tmp_path_factory.mktemp(f"kafka-dump-log-{version}"),
                                                version)
            except (KafkaUnavailableError, h.KafkaUnavailable) as exc:
                pytest.fail(f"the real kafka-dump-log {version} is unavailable, so dump parity "
                            f"cannot be checked: {exc}", pytrace=False)
        return tools[version]

    return of


@pytest.fixture(scope="session")
def kafka_dump_log(kafka_dump_log_of: Callable[[str], h.KafkaDumpLog]) -> h.KafkaDumpLog:
    """The real kafka-dump-log of the default (newest) release."""
    from segtools.realcluster.kafka_runtime import KAFKA_VERSION

    return kafka_dump_log_of(KAFKA_VERSION)


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
