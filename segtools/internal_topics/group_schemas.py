"""``__consumer_offsets`` (group coordinator) record schemas (FORMATS.md section 12.2).

Declared from ``group-coordinator/src/main/resources/common/message/*.json`` and
``clients/src/main/resources/common/message/ConsumerProtocol{Subscription,Assignment}.json``.
The key's int16 prefix is the record type *and* the key's schema version.
"""

from __future__ import annotations

from segtools.formats.messages import Message, message
from segtools.formats.messages import field as f


def _key(name: str, record_type: int, *names: str) -> Message:
    return message(name, record_type, str(record_type), None, [f(n, "string") for n in names])


_TOPIC_PARTITIONS = [f("TopicId", "uuid"), f("Partitions", "[]int32")]
#: the Topics field of ConsumerGroupPartitionMetadataValue and ShareGroupPartitionMetadataValue
_TOPIC_METADATA = f("Topics", "[]TopicMetadata", fields=[
    f("TopicId", "uuid"), f("TopicName", "string"), f("NumPartitions", "int32"),
    f("PartitionMetadata", "[]PartitionMetadata", fields=[
        f("Partition", "int32"), f("Racks", "[]string"),
    ]),
])

#: record type -> (key schema, value schema)
RECORD_TYPES: dict[int, tuple[Message, Message]] = {}


def _register(record_type: int, key: Message, value: Message) -> None:
    RECORD_TYPES[record_type] = (key, value)


OFFSET_COMMIT_KEY = message("OffsetCommitKey", None, "0-1", None, [
    f("group", "string"), f("topic", "string"), f("partition", "int32"),
])
OFFSET_COMMIT_VALUE = message("OffsetCommitValue", 1, "0-4", "4+", [
    f("offset", "int64"),
    f("leaderEpoch", "int32", "3+", default=-1, ignorable=True),
    f("metadata", "string"),
    f("commitTimestamp", "int64"),
    f("expireTimestamp", "int64", "1", default=-1, ignorable=True),
])
GROUP_METADATA_KEY = message("GroupMetadataKey", None, "2", None, [f("group", "string")])
GROUP_METADATA_VALUE = message("GroupMetadataValue", 2, "0-4", "4+", [
    f("protocolType", "string"),
    f("generation", "int32"),
    f("protocol", "string", nullable="0+"),
    f("leader", "string", nullable="0+"),
    f("currentStateTimestamp", "int64", "2+", default=-1, ignorable=True),
    f("members", "[]MemberMetadata", fields=[
        f("memberId", "string"),
        f("groupInstanceId", "string", "3+", nullable="3+", default=None, ignorable=True),
        f("clientId", "string"),
        f("clientHost", "string"),
        f("rebalanceTimeout", "int32", "1+", ignorable=True),
        f("sessionTimeout", "int32"),
        f("subscription", "bytes"),
        f("assignment", "bytes"),
    ]),
])

_register(0, OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE)
_register(1, OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE)
_register(2, GROUP_METADATA_KEY, GROUP_METADATA_VALUE)
_register(3, _key("ConsumerGroupMetadataKey", 3, "GroupId"),
          message("ConsumerGroupMetadataValue", 3, "0", "0+", [
              f("Epoch", "int32"),
          ]))
_register(4, _key("ConsumerGroupPartitionMetadataKey", 4, "GroupId"),
          message("ConsumerGroupPartitionMetadataValue", 4, "0", "0+", [
              _TOPIC_METADATA,
          ]))
_register(5, _key("ConsumerGroupMemberMetadataKey", 5, "GroupId", "MemberId"),
          message("ConsumerGroupMemberMetadataValue", 5, "0", "0+", [
              f("InstanceId", "string", nullable="0+"),
              f("RackId", "string", nullable="0+"),
              f("ClientId", "string"),
              f("ClientHost", "string"),
              f("SubscribedTopicNames", "[]string"),
              f("SubscribedTopicRegex", "string", nullable="0+"),
              f("RebalanceTimeoutMs", "int32", default=-1),
              f("ServerAssignor", "string", nullable="0+"),
              f("ClassicMemberMetadata", "ClassicMemberMetadata", nullable="0+", default=None,
                tag=0, fields=[
                    f("SessionTimeoutMs", "int32"),
                    f("SupportedProtocols", "[]ClassicProtocol", fields=[
                        f("Name", "string"), f("Metadata", "bytes"),
                    ]),
                ]),
          ]))
_register(6, _key("ConsumerGroupTargetAssignmentMetadataKey", 6, "GroupId"),
          message("ConsumerGroupTargetAssignmentMetadataValue", 6, "0", "0+", [
              f("AssignmentEpoch", "int32"),
          ]))
_register(7, _key("ConsumerGroupTargetAssignmentMemberKey", 7, "GroupId", "MemberId"),
          message("ConsumerGroupTargetAssignmentMemberValue", 7, "0", "0+", [
              f("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
          ]))
_register(8, _key("ConsumerGroupCurrentMemberAssignmentKey", 8, "GroupId", "MemberId"),
          message("ConsumerGroupCurrentMemberAssignmentValue", 8, "0", "0+", [
              f("MemberEpoch", "int32"),
              f("PreviousMemberEpoch", "int32"),
              f("State", "int8"),
              f("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
              f("PartitionsPendingRevocation", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
          ]))

# Share groups (KIP-932, early access in 4.0): record types 9-15, values flexible from v0.
_register(9, _key("ShareGroupPartitionMetadataKey", 9, "GroupId"),
          message("ShareGroupPartitionMetadataValue", 9, "0", "0+", [
              _TOPIC_METADATA,
          ]))
_register(10, _key("ShareGroupMemberMetadataKey", 10, "GroupId", "MemberId"),
          message("ShareGroupMemberMetadataValue", 10, "0", "0+", [
              f("RackId", "string", nullable="0+"), f("ClientId", "string"),
              f("ClientHost", "string"), f("SubscribedTopicNames", "[]string"),
          ]))
_register(11, _key("ShareGroupMetadataKey", 11, "GroupId"),
          message("ShareGroupMetadataValue", 11, "0", "0+", [f("Epoch", "int32")]))
_register(12, _key("ShareGroupTargetAssignmentMetadataKey", 12, "GroupId"),
          message("ShareGroupTargetAssignmentMetadataValue", 12, "0", "0+", [
              f("AssignmentEpoch", "int32"),
          ]))
_register(13, _key("ShareGroupTargetAssignmentMemberKey", 13, "GroupId", "MemberId"),
          message("ShareGroupTargetAssignmentMemberValue", 13, "0", "0+", [
              f("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
          ]))
_register(14, _key("ShareGroupCurrentMemberAssignmentKey", 14, "GroupId", "MemberId"),
          message("ShareGroupCurrentMemberAssignmentValue", 14, "0", "0+", [
              f("MemberEpoch", "int32"), f("PreviousMemberEpoch", "int32"), f("State", "int8"),
              f("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
          ]))
_register(15, _key("ShareGroupStatePartitionMetadataKey", 15, "GroupId"),
          message("ShareGroupStatePartitionMetadataValue", 15, "0", "0+", [
              f("InitializedTopics", "[]TopicPartitionsInfo", fields=[
                  f("TopicId", "uuid"), f("TopicName", "string"), f("Partitions", "[]int32"),
              ]),
              f("DeletingTopics", "[]TopicInfo", fields=[
                  f("TopicId", "uuid"), f("TopicName", "string"),
              ]),
          ]))

# The embedded consumer protocol (GroupMetadataValue member subscription/assignment bytes,
# version-prefixed) -- decoded by kafka-dump-log when protocolType is "consumer".
CONSUMER_PROTOCOL_SUBSCRIPTION = message("ConsumerProtocolSubscription", None, "0-3", None, [
    f("Topics", "[]string"),
    f("UserData", "bytes", nullable="0+", default=None),
    f("OwnedPartitions", "[]TopicPartition", "1+", ignorable=True, fields=[
        f("Topic", "string", "1+"), f("Partitions", "[]int32", "1+"),
    ]),
    f("GenerationId", "int32", "2+", default=-1, ignorable=True),
    f("RackId", "string", "3+", nullable="3+", default=None, ignorable=True),
])
CONSUMER_PROTOCOL_ASSIGNMENT = message("ConsumerProtocolAssignment", None, "0-3", None, [
    f("AssignedPartitions", "[]TopicPartition", fields=[
        f("Topic", "string"), f("Partitions", "[]int32"),
    ]),
    f("UserData", "bytes", nullable="0+", default=None),
])


# --------------------------------------------------------------------------------------------
# Kafka 4.3 (the pinned 4.3.1, jvm/pom.xml): the group coordinator's record types as its
# generated classes define them (group-coordinator/src/main/resources/common/message/*.json,
# enumerated by the generated CoordinatorRecordType). Differences from the table above:
# type 0 is LegacyOffsetCommitValue (version 0 only), type 9 (ShareGroupPartitionMetadata) is
# gone, tagged fields were added to types 1, 3, 6, 8 and 12, ShareGroupMetadataValue gained
# MetadataHash, ShareGroupStatePartitionMetadataValue InitializingTopics, and types 16-23 are
# new (consumer-group regex, KIP-1071 streams groups; 18 is unused). kafka-dump-log
# --offsets-decoder of 4.3 reads exactly these (tests/realkafka/test_decoder_parity.py).

#: record type -> (key schema, value schema) of Kafka 4.3's group coordinator
RECORD_TYPES_KAFKA_4_3: dict[int, tuple[Message, Message]] = {
    t: RECORD_TYPES[t] for t in (2, 4, 5, 7, 10, 13, 14)
}

# a tagged nullable array without a declared default: absent = empty (the generated read
# starts from an empty list), and it is written/printed when null or non-empty
_TOPIC_PARTITIONS_EPOCHS = _TOPIC_PARTITIONS + [
    f("AssignmentEpochs", "[]int32", nullable="0+", tag=0),
]
_TASK_IDS = [f("SubtopologyId", "string"), f("Partitions", "[]int32")]
_TASK_IDS_EPOCHS = _TASK_IDS + [f("AssignmentEpochs", "[]int32", nullable="0+", tag=0)]
_TOPIC_INFO = [
    f("Name", "string"), f("Partitions", "int32"), f("ReplicationFactor", "int16"),
    f("TopicConfigs", "[]TopicConfig", fields=[f("key", "string"), f("value", "string")]),
]


def _register_4_3(record_type: int, key: Message, value: Message) -> None:
    RECORD_TYPES_KAFKA_4_3[record_type] = (key, value)


_register_4_3(0, OFFSET_COMMIT_KEY, message("LegacyOffsetCommitValue", 0, "0", None, [
    f("offset", "int64"), f("metadata", "string"), f("commitTimestamp", "int64"),
]))
_register_4_3(1, OFFSET_COMMIT_KEY, message("OffsetCommitValue", 1, "0-4", "4+", [
    f("offset", "int64"),
    f("leaderEpoch", "int32", "3+", default=-1, ignorable=True),
    f("metadata", "string"),
    f("commitTimestamp", "int64"),
    f("expireTimestamp", "int64", "1", default=-1, ignorable=True),
    f("topicId", "uuid", "4+", tag=0, ignorable=True),
]))
_register_4_3(3, RECORD_TYPES[3][0], message("ConsumerGroupMetadataValue", 3, "0", "0+", [
    f("Epoch", "int32"),
    f("MetadataHash", "int64", default=0, tag=0),
]))
_register_4_3(6, RECORD_TYPES[6][0],
              message("ConsumerGroupTargetAssignmentMetadataValue", 6, "0", "0+", [
                  f("AssignmentEpoch", "int32"),
                  f("AssignmentTimestamp", "int64", default=0, tag=0),
              ]))
_register_4_3(8, RECORD_TYPES[8][0],
              message("ConsumerGroupCurrentMemberAssignmentValue", 8, "0", "0+", [
                  f("MemberEpoch", "int32"), f("PreviousMemberEpoch", "int32"), f("State", "int8"),
                  f("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS_EPOCHS),
                  f("PartitionsPendingRevocation", "[]TopicPartitions",
                    fields=_TOPIC_PARTITIONS_EPOCHS),
              ]))
_register_4_3(11, RECORD_TYPES[11][0], message("ShareGroupMetadataValue", 11, "0", "0+", [
    f("Epoch", "int32"), f("MetadataHash", "int64"),
]))
_register_4_3(12, RECORD_TYPES[12][0],
              message("ShareGroupTargetAssignmentMetadataValue", 12, "0", "0+", [
                  f("AssignmentEpoch", "int32"),
                  f("AssignmentTimestamp", "int64", default=0, tag=0),
              ]))
_register_4_3(15, RECORD_TYPES[15][0],
              message("ShareGroupStatePartitionMetadataValue", 15, "0", "0+", [
                  f("InitializingTopics", "[]TopicPartitionsInfo", fields=[
                      f("TopicId", "uuid"), f("TopicName", "string"), f("Partitions", "[]int32"),
                  ]),
                  f("InitializedTopics", "[]TopicPartitionsInfo", fields=[
                      f("TopicId", "uuid"), f("TopicName", "string"), f("Partitions", "[]int32"),
                  ]),
                  f("DeletingTopics", "[]TopicInfo", fields=[
                      f("TopicId", "uuid"), f("TopicName", "string"),
                  ]),
              ]))
_register_4_3(16, _key("ConsumerGroupRegularExpressionKey", 16, "GroupId", "RegularExpression"),
              message("ConsumerGroupRegularExpressionValue", 16, "0", "0+", [
                  f("Topics", "[]string"), f("Version", "int64"), f("Timestamp", "int64"),
              ]))
# KIP-1071 streams groups
_register_4_3(17, _key("StreamsGroupMetadataKey", 17, "GroupId"),
              message("StreamsGroupMetadataValue", 17, "0", "0+", [
                  f("Epoch", "int32"), f("MetadataHash", "int64"),
                  f("ValidatedTopologyEpoch", "int32", default=-1, tag=0),
                  f("LastAssignmentConfigs", "[]LastAssignmentConfig", nullable="0+", tag=1,
                    fields=[f("Key", "string"), f("Value", "string")]),
              ]))
_register_4_3(19, _key("StreamsGroupMemberMetadataKey", 19, "GroupId", "MemberId"),
              message("StreamsGroupMemberMetadataValue", 19, "0", "0+", [
                  f("InstanceId", "string", nullable="0+"),
                  f("RackId", "string", nullable="0+"),
                  f("ClientId", "string"), f("ClientHost", "string"),
                  f("RebalanceTimeoutMs", "int32", default=-1),
                  f("TopologyEpoch", "int32"), f("ProcessId", "string"),
                  f("UserEndpoint", "Endpoint", nullable="0+", default=None, fields=[
                      f("Host", "string"), f("Port", "uint16"),
                  ]),
                  f("ClientTags", "[]KeyValue", fields=[f("Key", "string"), f("Value", "string")]),
              ]))
_register_4_3(20, _key("StreamsGroupTargetAssignmentMetadataKey", 20, "GroupId"),
              message("StreamsGroupTargetAssignmentMetadataValue", 20, "0", "0+", [
                  f("AssignmentEpoch", "int32"),
                  f("AssignmentTimestamp", "int64", default=0, tag=0),
              ]))
_register_4_3(21, _key("StreamsGroupTargetAssignmentMemberKey", 21, "GroupId", "MemberId"),
              message("StreamsGroupTargetAssignmentMemberValue", 21, "0", "0+", [
                  f(name, "[]TaskIds", fields=_TASK_IDS)
                  for name in ("ActiveTasks", "StandbyTasks", "WarmupTasks")
              ]))
_register_4_3(22, _key("StreamsGroupCurrentMemberAssignmentKey", 22, "GroupId", "MemberId"),
              message("StreamsGroupCurrentMemberAssignmentValue", 22, "0", "0+", [
                  f("MemberEpoch", "int32"), f("PreviousMemberEpoch", "int32"), f("State", "int8"),
              ] + [
                  f(name, "[]TaskIds", fields=_TASK_IDS_EPOCHS)
                  for name in ("ActiveTasks", "StandbyTasks", "WarmupTasks",
                               "ActiveTasksPendingRevocation", "StandbyTasksPendingRevocation",
                               "WarmupTasksPendingRevocation")
              ]))
_register_4_3(23, _key("StreamsGroupTopologyKey", 23, "GroupId"),
              message("StreamsGroupTopologyValue", 23, "0", "0+", [
                  f("Epoch", "int32"),
                  f("Subtopologies", "[]Subtopology", fields=[
                      f("SubtopologyId", "string"),
                      f("SourceTopics", "[]string"),
                      f("SourceTopicRegex", "[]string"),
                      f("StateChangelogTopics", "[]TopicInfo", fields=_TOPIC_INFO),
                      f("RepartitionSinkTopics", "[]string"),
                      f("RepartitionSourceTopics", "[]TopicInfo", fields=_TOPIC_INFO),
                      f("CopartitionGroups", "[]CopartitionGroup", fields=[
                          f("SourceTopics", "[]int16"), f("SourceTopicRegex", "[]int16"),
                          f("RepartitionSourceTopics", "[]int16"),
                      ]),
                  ]),
              ]))


# --------------------------------------------------------------------------------------------
# The other 4.x releases, as differences from 4.3 (each release's
# group-coordinator/src/main/resources/common/message/*.json, compared field by field):
# 4.4 added StreamsGroupMetadataValue's tags 2 and 3; 4.3 added the AssignmentTimestamp tags
# (types 6, 12, 20) and AssignmentEpochs to type 8's partitions; 4.2 added
# StreamsGroupMetadataValue's tags 0 and 1 and AssignmentEpochs to type 22's tasks; 4.1 added
# the streams groups (17-23), LegacyOffsetCommitValue (type 0), OffsetCommitValue's topicId,
# the MetadataHash of types 3 and 11, InitializingTopics of type 15, and dropped type 9.

_STREAMS_METADATA_4_2 = RECORD_TYPES_KAFKA_4_3[17]
_STREAMS_CURRENT_ASSIGNMENT_4_2 = RECORD_TYPES_KAFKA_4_3[22]

RECORD_TYPES_KAFKA_4_4: dict[int, tuple[Message, Message]] = dict(RECORD_TYPES_KAFKA_4_3)
RECORD_TYPES_KAFKA_4_4[17] = (_STREAMS_METADATA_4_2[0], message(
    "StreamsGroupMetadataValue", 17, "0", "0+", [
        f("Epoch", "int32"), f("MetadataHash", "int64"),
        f("ValidatedTopologyEpoch", "int32", default=-1, tag=0),
        f("LastAssignmentConfigs", "[]LastAssignmentConfig", nullable="0+", tag=1,
          fields=[f("Key", "string"), f("Value", "string")]),
        f("StoredDescriptionTopologyEpoch", "int32", default=-1, tag=2),
        f("FailedDescriptionTopologyEpoch", "int32", default=-1, tag=3),
    ]))

RECORD_TYPES_KAFKA_4_2: dict[int, tuple[Message, Message]] = dict(RECORD_TYPES_KAFKA_4_3)
RECORD_TYPES_KAFKA_4_2[6] = RECORD_TYPES[6]
RECORD_TYPES_KAFKA_4_2[8] = RECORD_TYPES[8]
RECORD_TYPES_KAFKA_4_2[12] = RECORD_TYPES[12]
RECORD_TYPES_KAFKA_4_2[20] = (RECORD_TYPES_KAFKA_4_3[20][0], message(
    "StreamsGroupTargetAssignmentMetadataValue", 20, "0", "0+", [f("AssignmentEpoch", "int32")]))

RECORD_TYPES_KAFKA_4_1: dict[int, tuple[Message, Message]] = dict(RECORD_TYPES_KAFKA_4_2)
RECORD_TYPES_KAFKA_4_1[17] = (_STREAMS_METADATA_4_2[0], message(
    "StreamsGroupMetadataValue", 17, "0", "0+", [f("Epoch", "int32"), f("MetadataHash", "int64")]))
RECORD_TYPES_KAFKA_4_1[22] = (_STREAMS_CURRENT_ASSIGNMENT_4_2[0], message(
    "StreamsGroupCurrentMemberAssignmentValue", 22, "0", "0+", [
        f("MemberEpoch", "int32"), f("PreviousMemberEpoch", "int32"), f("State", "int8"),
    ] + [
        f(name, "[]TaskIds", fields=_TASK_IDS)
        for name in ("ActiveTasks", "StandbyTasks", "WarmupTasks", "ActiveTasksPendingRevocation",
                     "StandbyTasksPendingRevocation", "WarmupTasksPendingRevocation")
    ]))

#: Kafka 4.0: the 3.x table above plus the consumer-group regular expressions (16)
RECORD_TYPES_KAFKA_4_0: dict[int, tuple[Message, Message]] = dict(RECORD_TYPES)
RECORD_TYPES_KAFKA_4_0[16] = RECORD_TYPES_KAFKA_4_3[16]

_BY_RELEASE = {(4, 0): RECORD_TYPES_KAFKA_4_0, (4, 1): RECORD_TYPES_KAFKA_4_1,
               (4, 2): RECORD_TYPES_KAFKA_4_2, (4, 3): RECORD_TYPES_KAFKA_4_3,
               (4, 4): RECORD_TYPES_KAFKA_4_4}


def record_types_of(release: tuple[int, int]) -> dict[int, tuple[Message, Message]]:
    """The group coordinator's record types of Kafka ``release`` ((4, 0) to (4, 4); 3.x
    releases get ``RECORD_TYPES``)."""
    return _BY_RELEASE.get(release, RECORD_TYPES)
