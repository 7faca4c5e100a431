"""Hostile bytes through the Kafka 4.x internal-topic decoders: every mutation of a valid
record ends as Kafka's text or a located SchemaError, never another exception (the dump turns
SchemaError into a one-line error; anything else would be a traceback)."""

from __future__ import annotations

import random

import pytest

from segtools.errors import SchemaError
from segtools.internal_topics import consumer_offsets as co
from segtools.internal_topics import remote_log_metadata as rlm
from segtools.internal_topics import share_group_state as sgs
from segtools.internal_topics.group_schemas import RECORD_TYPES_KAFKA_4_3 as GROUP_4_3


class _Record:
    def __init__(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        self.key, self.value, self.offset = key, value, offset


def _mutants(raw: bytes, rng: random.Random, n: int = 150) -> list[bytes]:
    out = [raw[:i] for i in range(len(raw))]
    for _ in range(n):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        out.append(bytes(b) + bytes(rng.randrange(3)))
    return out


SAMPLES = [
    (co.encode_key(23, {"groupId": "g"}, GROUP_4_3), co.encode_value(23, 0, {"epoch": 1, "subtopologies": [
        {"subtopologyId": "0", "sourceTopics": ["a"], "sourceTopicRegex": [], "stateChangelogTopics": [
            {"name": "c", "partitions": 1, "replicationFactor": 3, "topicConfigs": [{"key": "k", "value": "v"}]}],
         "repartitionSinkTopics": [], "repartitionSourceTopics": [],
         "copartitionGroups": [{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": []}]}]},
        GROUP_4_3)),
    (co.encode_key(22, {"groupId": "g", "memberId": "m"}, GROUP_4_3), co.encode_value(22, 0, {
        "memberEpoch": 1, "previousMemberEpoch": 0, "state": 0,
        "activeTasks": [{"subtopologyId": "0", "partitions": [1], "assignmentEpochs": [1]}]}, GROUP_4_3)),
    (co.encode_key(5, {"groupId": "g", "memberId": "m"}, GROUP_4_3), co.encode_value(5, 0, {
        "clientId": "c", "clientHost": "h", "classicMemberMetadata": None}, GROUP_4_3)),
]


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_offsets_decoder_4_3_never_raises_but_schema_errors(index: int) -> None:
    from segtools.dump.parsers import OffsetsKafka4Parser

    parser = OffsetsKafka4Parser()
    notes: list[str] = []
    parser.note = lambda kind, fields, line, problem: notes.append(line)
    key, value = SAMPLES[index]
    assert parser.parse(_Record(key, value, 0))[1].startswith('{"version":"0","data":{')
    rng = random.Random(index)
    for mutant in _mutants(value, rng):
        k, payload = parser.parse(_Record(key, mutant, 7))
        assert k is not None and (payload is not None or k.startswith(("Error at offset 7, skipping. ",
                                                                         "Unknown record type")))
    for mutant in _mutants(key, rng, 40):
        parser.parse(_Record(mutant, value, 7))


def test_share_group_state_4_3_never_raises_but_schema_errors() -> None:
    from segtools.dump.parsers import ShareGroupStateKafka4Parser

    key = sgs.encode_key(0, {"groupId": "g", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 0})
    value = co.encode_value_with(sgs.RECORD_TYPES_KAFKA_4_3, 0, 0, {
        "snapshotEpoch": 1, "deliveryCompleteCount": 2,
        "stateBatches": [{"firstOffset": 0, "lastOffset": 1, "deliveryState": 2, "deliveryCount": 1}]})
    parser = ShareGroupStateKafka4Parser()
    assert '"deliveryCompleteCount":2' in parser.parse(_Record(key, value, 0))[1]
    for mutant in _mutants(value, random.Random(5)):
        parser.parse(_Record(key, mutant, 3))


def test_remote_log_metadata_never_raises_but_schema_errors() -> None:
    raw = rlm.encode_record(0, 0, {
        "remoteLogSegmentId": {"topicIdPartition": {"name": "t", "id": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 0},
                               "id": "AAAAAAAAAAAAAAAAAAAAAg"},
        "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 0}], "customMetadata": None,
        "remoteLogSegmentState": 1})
    assert rlm.format_record(raw, offset=0).startswith("RemoteLogSegmentMetadata{")
    for mutant in _mutants(raw, random.Random(9)):
        text = rlm.format_record(mutant, offset=4)
        assert text.startswith(("Remote", "Error at offset 4, skipping. "))
    with pytest.raises(SchemaError):
        rlm.format_record(b"\x00")
