"""A produce request written by hand, for the one thing a client library will not do: send a
batch and never read the answer (``in_flight: true``), then send the same batch again later
(``resend``). Only plain (non-idempotent) batches go this way; idempotent ones stay with
librdkafka, which resends them under their sequence numbers by itself.

The request is ProduceRequest v8 (the last version before the flexible encoding; Kafka 4
answers versions 3 to 12), its batch built by :func:`segtools.writer.batch_builder.build_batch`.
Layouts: Kafka's clients module, common/message/ProduceRequest.json and
ProduceResponse.json."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Sequence

from segtools.writer.batch_builder import NewRecord, build_batch

PRODUCE_API_KEY = 0
PRODUCE_VERSION = 8
CLIENT_ID = b"segtools-realengine"

#: the few error codes the engine names (Kafka's Errors enum)
ERROR_NAMES = {0: None, 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT",
               19: "NOT_ENOUGH_REPLICAS", 20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND"}


def _string(s: bytes) -> bytes:
    return struct.pack(">h", len(s)) + s


def produce_request(topic: str, partition: int, records: Sequence[tuple[str | None, str | None]],
                    headers: Sequence[tuple[str, str | None]], acks: int, timeout_ms: int,
                    correlation_id: int) -> bytes:
    """One size-prefixed ProduceRequest v8 carrying one batch of ``records`` (key, value)."""
    hdrs = [(k, None if v is None else v.encode()) for k, v in headers]
    batch = build_batch([NewRecord(None if k is None else k.encode(), None if v is None else v.encode(),
                                   hdrs) for k, v in records],
                        base_offset=0, partition_leader_epoch=-1,
                        base_timestamp=int(time.time() * 1000))
    body = b"".join([
        struct.pack(">hhi", PRODUCE_API_KEY, PRODUCE_VERSION, correlation_id), _string(CLIENT_ID),
        struct.pack(">h", -1),                      # transactional_id: null
        struct.pack(">hi", acks, timeout_ms),
        struct.pack(">i", 1), _string(topic.encode()),
        struct.pack(">i", 1), struct.pack(">i", partition),
        struct.pack(">i", len(batch)), batch,
    ])
    return struct.pack(">i", len(body)) + body


def send(port: int, request: bytes, *, timeout: float = 10.0) -> socket.socket:
    """Open a connection to 127.0.0.1:``port`` and write ``request``; the open socket is
    returned (the caller closes it, reading the answer or not)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(request)
    return sock


def recv_exact(sock: socket.socket, n: int, peer: str = "the broker") -> bytes:
    """Exactly ``n`` bytes of a Kafka response (ConnectionError if ``peer`` closes first)."""
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"{peer} closed the connection")
        out += chunk
    return out


def read_response(sock: socket.socket) -> tuple[str | None, int]:
    """(error name or None, base offset) of the one partition of a ProduceResponse v8."""
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    data = recv_exact(sock, size)
    pos = 4 + 4                                      # correlation id, topics array length
    (name_len,) = struct.unpack_from(">h", data, pos)
    pos += 2 + name_len + 4                          # topic name, partitions array length
    _index, error_code, base_offset = struct.unpack_from(">ihq", data, pos)
    return ERROR_NAMES.get(error_code, f"ERROR_{error_code}"), base_offset
