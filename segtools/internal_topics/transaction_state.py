"""``__transaction_state`` records: decode, encode and kafka-dump-log ``--transaction-log-decoder``.

Key = int16 version (0) + ``TransactionalId``; value = int16 version (0, or 1 = flexible with
tagged PreviousProducerId/NextProducerId/ClientTransactionVersion, and NextProducerEpoch since
Kafka 4.1) + TransactionLogValue
(FORMATS.md section 12.4). kafka-dump-log prints (``TransactionLog.formatRecordKeyAndValue``)::

    transaction_metadata::transactionalId=my-txn
    producerId:5,producerEpoch:0,state=Ongoing,partitions=[t-0,t-1],txnLastUpdateTimestamp=…,txnTimeoutMs=…

The partition list is the iteration order of the Scala ``mutable.HashSet`` the broker puts
the partitions in; :func:`scala_hash_set_order` reproduces it.

Example::

    >>> from segtools.internal_topics import transaction_state as ts
    >>> key = ts.encode_key("my-txn")
    >>> value = ts.encode_value(0, {"producerId": 5, "producerEpoch": 0,
    ...     "transactionTimeoutMs": 60000, "transactionStatus": 1,
    ...     "transactionPartitions": [{"topic": "t", "partitionIds": [0]}],
    ...     "transactionLastUpdateTimestampMs": 2, "transactionStartTimestampMs": 1})
    >>> key_text, value_text = ts.format_record(key, value)
    >>> key_text
    'transaction_metadata::transactionalId=my-txn'
    >>> value_text
    'producerId:5,producerEpoch:0,state=Ongoing,partitions=[t-0],txnLastUpdateTimestamp=2,txnTimeoutMs=60000'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from segtools.errors import SchemaError
from segtools.formats.messages import field as f
from segtools.formats.messages import message
from segtools.primitives.java_hash import int32, java_string_hash
from segtools.primitives.messages import fixed_bytes, read_fixed, read_message, write_message

DELETE = "<DELETE>"
KEY_VERSION = 0

TRANSACTION_LOG_KEY = message("TransactionLogKey", 0, "0", None, [f("TransactionalId", "string")])
TRANSACTION_LOG_VALUE = message("TransactionLogValue", 0, "0-1", "1+", [
    f("ProducerId", "int64"),
    f("PreviousProducerId", "int64", "1+", default=-1, tag=0),
    f("NextProducerId", "int64", "1+", default=-1, tag=1),
    f("ProducerEpoch", "int16"),
    # since Kafka 4.1 (KIP-890's epoch bump on the transaction's end); the Scala text of 3.x
    # and 4.0 never printed it
    f("NextProducerEpoch", "int16", "1+", default=-1, tag=3),
    f("TransactionTimeoutMs", "int32"),
    f("TransactionStatus", "int8"),
    f("TransactionPartitions", "[]PartitionsSchema", nullable="0+", fields=[
        f("Topic", "string"), f("PartitionIds", "[]int32"),
    ]),
    f("TransactionLastUpdateTimestampMs", "int64"),
    f("TransactionStartTimestampMs", "int64"),
    f("ClientTransactionVersion", "int16", "1+", default=0, tag=2),
])

#: TransactionState ids -> names as the broker prints them (TransactionMetadata.scala)
TRANSACTION_STATES = {
    0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
    5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence",
}
EMPTY = 0


def decode_key(key: bytes | bytearray | memoryview) -> dict[str, Any]:
    """``{"version": 0, "transactionalId": ...}``; other versions give only ``version``."""
    if key is None:
        raise SchemaError("transaction log record has a null key", field="key")
    buf = bytes(key)
    if len(buf) < 2:
        raise SchemaError("null", field="key.version")  # ByteBuffer.getShort underflow
    version = read_fixed("int16", buf)
    if version != KEY_VERSION:
        return {"version": version}
    data, _ = read_message(TRANSACTION_LOG_KEY, buf, 0, pos=2, path="key")
    return {"version": version, **data}


def decode_value(value: bytes | bytearray | memoryview | None) -> dict[str, Any] | None:
    """``{"version": v, <TransactionLogValue fields>}``; None for a tombstone."""
    if value is None:
        return None
    buf = bytes(value)
    if len(buf) < 2:
        raise SchemaError("null", field="value.version")
    version = read_fixed("int16", buf)
    if version not in TRANSACTION_LOG_VALUE.valid_versions:
        raise SchemaError(f"Unknown version {version} from the transaction log message value",
                          field="value.version")
    data, _ = read_message(TRANSACTION_LOG_VALUE, buf, version, pos=2, path="value")
    return {"version": version, **data}


def encode_key(transactional_id: str) -> bytes:
    return fixed_bytes("int16", KEY_VERSION) + write_message(
        TRANSACTION_LOG_KEY, {"transactionalId": transactional_id}, 0, path="key")


def encode_value(version: int, data: dict[str, Any] | None) -> bytes | None:
    """int16 version + TransactionLogValue; ``None`` data gives a tombstone (``None``)."""
    if data is None:
        return None
    if version not in TRANSACTION_LOG_VALUE.valid_versions:
        raise SchemaError(f"Unknown version {version} from the transaction log message value",
                          field="value.version")
    body = {k: v for k, v in data.items() if k != "version"}
    return fixed_bytes("int16", version) + write_message(TRANSACTION_LOG_VALUE, body, version,
                                                      path="value")


# --------------------------------------------------------------------------------------------
# Scala 2.13 mutable.HashSet iteration order (the broker's TransactionMetadata.topicPartitions)


def topic_partition_hash(topic: str, partition: int) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode."""
    return int32(31 * (31 + partition) + java_string_hash(topic))


def _improve_hash(h: int) -> int:
    u = h & 0xFFFFFFFF
    return int32(u ^ (u >> 16))


def _table_size_for(capacity: int) -> int:
    n = max(capacity - 1, 4)
    return min((1 << (n.bit_length() - 1)) * 2, 1 << 30)


def scala_hash_set_order(groups: Iterable[Sequence[tuple[str, int]]]) -> list[tuple[str, int]]:
    """Order of ``mutable.Set.empty ++= g1 ++= g2 …`` iteration (Scala 2.13 HashSet).

    Each group is one ``addPartitions(set)`` call: ``sizeHint(len)`` first; groups of more than
    four elements are immutable HashSets added without per-element growth checks, smaller ones
    (Set1..Set4) through ``add`` which grows the table at the load factor 0.75.
    """
    length = 16
    size = 0
    seq = 0
    members: dict[tuple[str, int], tuple[int, int]] = {}  # tp -> (improved hash, insertion seq)
    for group in groups:
        unique = list(dict.fromkeys(group))
        target = _table_size_for(int((len(unique) + 1) / 0.75))
        if target > length:
            length = target
        for tp in unique:
            if len(unique) <= 4 and size + 1 >= int(length * 0.75):
                length *= 2
            if tp in members:
                continue
            members[tp] = (_improve_hash(topic_partition_hash(*tp)), seq)
            seq += 1
            size += 1
    mask = length - 1
    return sorted(members, key=lambda tp: (members[tp][0] & mask, members[tp][0], members[tp][1]))


def status_json(status: int) -> str:
    """Kafka 4.4's ``transactionStatus`` in the dump JSON: the state's name, or the id as a
    string when no state has it (TransactionState.fromId fails, the tool prints the number)."""
    return TRANSACTION_STATES.get(status, str(status))


def format_record(key: bytes | bytearray | memoryview | None,
                  value: bytes | bytearray | memoryview | None, *,
                  offset: int | None = None) -> tuple[str | None, str | None]:
    """(key text, payload text) exactly as kafka-dump-log ``--transaction-log-decoder`` prints.

    Where kafka-dump-log itself would abort (unknown value version or state id, unreadable
    bytes) this raises :class:`SchemaError` (``reason`` = Kafka's message), or, when
    ``offset`` is given, returns ``("Error at offset {offset}, skipping. {reason}", None)`` so a
    forensic dump can go on.
    """
    try:
        return _format(key, value)
    except SchemaError as e:
        if offset is None:
            raise
        return f"Error at offset {offset}, skipping. {e.reason}", None


def _format(key: bytes | bytearray | memoryview | None,
            value: bytes | bytearray | memoryview | None) -> tuple[str | None, str | None]:
    k = decode_key(key)  # type: ignore[arg-type]
    if k["version"] != KEY_VERSION:
        return f"unknown::version={k['version']}", None
    key_text = f"transaction_metadata::transactionalId={k['transactionalId']}"
    v = decode_value(value)
    if v is None:
        return key_text, DELETE
    status = v["transactionStatus"]
    state = TRANSACTION_STATES.get(status)
    if state is None:
        raise SchemaError(f"Unknown transaction state id {status} from the transaction status "
                          "message", field="value.transactionStatus")
    partitions: list[tuple[str, int]] = []
    if status != EMPTY:
        groups = v["transactionPartitions"]
        if groups is None:
            raise SchemaError("null", field="value.transactionPartitions")  # NullPointerException
        partitions = scala_hash_set_order(
            [[(g["topic"], p) for p in g["partitionIds"]] for g in groups])
    listing = ",".join(f"{t}-{p}" for t, p in partitions)
    payload = (f"producerId:{v['producerId']},producerEpoch:{v['producerEpoch']},state={state},"
               f"partitions=[{listing}],txnLastUpdateTimestamp="
               f"{v['transactionLastUpdateTimestampMs']},txnTimeoutMs={v['transactionTimeoutMs']}")
    return key_text, payload
