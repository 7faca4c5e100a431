"""The real engine's fencing of a crashed broker (segtools.realcluster.heartbeat): the broker
epoch read from a real controller's log, and the request's header as kafka-python reads it.
That the controller fences on it is shown by real runs (tests/realkafka/test_engine_seeds.py,
the engine_matrix campaign: controller.log "has requested and been granted fencing")."""

from __future__ import annotations

import io
import re
import struct
from pathlib import Path

import pytest

from segtools.realcluster.heartbeat import broker_epoch, fence_request, parse_response

DATA = Path(__file__).resolve().parents[1] / "data" / "realcluster" / "controller-fencing-4.4.0.log"


def test_broker_epoch_is_the_one_the_controller_fences_at():
    text = DATA.read_bytes()
    # the controller's own statement of each broker's epoch: its fencing records
    fenced_at = {int(b): int(e) for b, e in re.findall(
        rb"BrokerRegistrationChangeRecord\(brokerId=(\d+), brokerEpoch=(\d+), fenced=1", text)}
    assert set(fenced_at) == {1, 2, 3}
    assert {b: broker_epoch(text, b) for b in fenced_at} == fenced_at
    assert broker_epoch(text, 7) is None


def test_fence_request_header_as_kafka_python_reads_it():
    from kafka.protocol.api_header import RequestHeader

    frame = fence_request(2, 11, correlation_id=5)
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    header = RequestHeader.decode(io.BytesIO(frame[4:]), flexible=True)
    assert (header.request_api_key, header.request_api_version, header.correlation_id) == (63, 0, 5)
    assert header.client_id == "segtools-realengine"


def test_a_short_or_foreign_answer_is_an_error_not_a_fencing():
    with pytest.raises(ValueError):
        parse_response(b"\x00\x00\x00\x05\x00", 5)
    answer = struct.pack(">ib ih???b", 6, 0, 0, 0, False, True, False, 0)
    with pytest.raises(ValueError):
        parse_response(answer, 5)
    assert parse_response(answer, 6) == (0, True)
