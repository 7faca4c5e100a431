"""A BrokerHeartbeat request written by hand, sent to the controller on behalf of a crashed
broker with ``WantFence`` set: the controller fences the broker at once, by the same code as a
session that ran out (``ReplicationControlManager.processBrokerHeartbeat`` and
``maybeFenceOneStaleBroker`` both call ``handleBrokerFenced``: the same registration change, the
same elections). The model notices a crash at once; the real controller otherwise only after
``broker.session.timeout.ms``, which must outlast the scenario's longest pause, so the cluster
elected late or not at all while another broker was paused (ENGINES.md, class 5).

BrokerHeartbeatRequest v0 (flexible, request header v2): Kafka 4.0 to 4.4 all answer it.
Layouts: Kafka's clients module, common/message/BrokerHeartbeatRequest.json,
BrokerHeartbeatResponse.json and RequestHeader.json."""

from __future__ import annotations

import re
import socket
import struct

from segtools.realcluster.raw_produce import recv_exact

BROKER_HEARTBEAT_API_KEY = 63
BROKER_HEARTBEAT_VERSION = 0
CLIENT_ID = b"segtools-realengine"

#: the controller's INFO line of a broker's registration (its epoch is the record's offset)
_REGISTER = re.compile(rb"RegisterBrokerRecord\(brokerId=(\d+),[^\n]*?\bbrokerEpoch=(\d+)")


def broker_epoch(controller_log: bytes, broker: int) -> int | None:
    """The epoch of ``broker``'s last registration in the controller's log, None if none."""
    epoch = None
    for m in _REGISTER.finditer(controller_log):
        if int(m.group(1)) == broker:
            epoch = int(m.group(2))
    return epoch


def fence_request(broker: int, epoch: int, correlation_id: int) -> bytes:
    """One size-prefixed BrokerHeartbeatRequest v0 asking the controller to fence ``broker``."""
    header = struct.pack(">hhih", BROKER_HEARTBEAT_API_KEY, BROKER_HEARTBEAT_VERSION,
                         correlation_id, len(CLIENT_ID)) + CLIENT_ID + b"\x00"  # no tagged fields
    # CurrentMetadataOffset 0: only the unfencing of a fenced broker reads it
    body = struct.pack(">iqq??", broker, epoch, 0, True, False) + b"\x00"
    msg = header + body
    return struct.pack(">i", len(msg)) + msg


def parse_response(frame: bytes, correlation_id: int) -> tuple[int, bool]:
    """(ErrorCode, IsFenced) of a BrokerHeartbeatResponse v0 (``frame`` without its size)."""
    if len(frame) < 4 + 1 + 4 + 2 + 3:
        raise ValueError(f"BrokerHeartbeat response of {len(frame)} bytes is too short")
    (corr,) = struct.unpack_from(">i", frame, 0)
    if corr != correlation_id:
        raise ValueError(f"BrokerHeartbeat response to request {corr}, expected {correlation_id}")
    # header v1: correlation id, then its tagged fields (none: one 0 byte)
    _throttle, error, _caught_up, fenced = struct.unpack_from(">ih??", frame, 5)
    return error, fenced


def request_fencing(port: int, broker: int, epoch: int, timeout: float = 5.0) -> tuple[int, bool]:
    """Ask the controller on 127.0.0.1:``port`` to fence ``broker`` (registered at ``epoch``).
    Returns (ErrorCode, IsFenced); raises OSError or ValueError when there is no answer."""
    corr = 1
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(fence_request(broker, epoch, corr))
        (size,) = struct.unpack(">i", recv_exact(sock, 4, "the controller"))
        if not 0 < size < 1 << 16:
            raise ValueError(f"BrokerHeartbeat response of size {size}")
        return parse_response(recv_exact(sock, size, "the controller"), corr)
