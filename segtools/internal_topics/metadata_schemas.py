"""KRaft ``__cluster_metadata`` record schemas (FORMATS.md section 12.5).

Declared from ``metadata/src/main/resources/common/metadata/*.json`` in apache/kafka. Each entry
covers every version written by Kafka 3.0-4.0 (later versions are included where they only add
fields, so newer logs still decode). All metadata records are flexible from version 0.
"""

from __future__ import annotations

from segtools.formats.messages import Message, message
from segtools.formats.messages import field as f

_ENDPOINT = [
    f("Name", "string"), f("Host", "string"), f("Port", "uint16"), f("SecurityProtocol", "int16"),
]
_FEATURE = [
    f("Name", "string"), f("MinSupportedVersion", "int16"), f("MaxSupportedVersion", "int16"),
]

METADATA_MESSAGES: list[Message] = [
    message("RegisterBrokerRecord", 0, "0-5", "0+", [
        f("BrokerId", "int32"),
        f("IsMigratingZkBroker", "bool", "2+", default=False),
        f("IncarnationId", "uuid"),
        f("BrokerEpoch", "int64"),
        f("EndPoints", "[]BrokerEndpoint", fields=_ENDPOINT),
        f("Features", "[]BrokerFeature", fields=_FEATURE),
        f("Rack", "string", nullable="0+"),
        f("Fenced", "bool", default=True),
        f("InControlledShutdown", "bool", "1+", default=False),
        f("LogDirs", "[]uuid", "3+", tag=0),
        f("CordonedLogDirs", "[]uuid", "4+", tag=1),
        f("StaticConfigs", "[]BrokerStaticConfig", "5+", tag=2, fields=[
            f("Name", "string", "5+"), f("Value", "string", "5+", nullable="5+"),
        ]),
    ]),
    message("UnregisterBrokerRecord", 1, "0", "0+", [
        f("BrokerId", "int32"), f("BrokerEpoch", "int64"),
    ]),
    message("TopicRecord", 2, "0", "0+", [
        f("Name", "string"), f("TopicId", "uuid"),
    ]),
    message("PartitionRecord", 3, "0-2", "0+", [
        f("PartitionId", "int32", default=-1),
        f("TopicId", "uuid"),
        f("Replicas", "[]int32"),
        f("Isr", "[]int32"),
        f("RemovingReplicas", "[]int32"),
        f("AddingReplicas", "[]int32"),
        f("Leader", "int32", default=-1),
        f("LeaderRecoveryState", "int8", default=0, tag=0),
        f("LeaderEpoch", "int32", default=-1),
        f("PartitionEpoch", "int32", default=-1),
        f("Directories", "[]uuid", "1+"),
        f("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", default=None, tag=1),
        f("LastKnownElr", "[]int32", "2+", nullable="2+", default=None, tag=2),
    ]),
    message("ConfigRecord", 4, "0", "0+", [
        f("ResourceType", "int8"), f("ResourceName", "string"), f("Name", "string"),
        f("Value", "string", nullable="0+"),
    ]),
    message("PartitionChangeRecord", 5, "0-3", "0+", [
        f("PartitionId", "int32", default=-1),
        f("TopicId", "uuid"),
        f("Isr", "[]int32", nullable="0+", default=None, tag=0),
        f("Leader", "int32", default=-2, tag=1),
        f("Replicas", "[]int32", nullable="0+", default=None, tag=2),
        f("RemovingReplicas", "[]int32", nullable="0+", default=None, tag=3),
        f("AddingReplicas", "[]int32", nullable="0+", default=None, tag=4),
        f("LeaderRecoveryState", "int8", default=-1, tag=5),
        f("Directories", "[]uuid", "1+", nullable="1+", default=None, tag=8),
        f("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", default=None, tag=6),
        f("LastKnownElr", "[]int32", "2+", nullable="2+", default=None, tag=7),
        f("MinLeaderEpoch", "int32", "3+", default=-1),
    ]),
    # id 6 AccessControlRecord existed in 2.8 only (removed before 3.0); kept for old logs
    message("AccessControlRecord", 6, "0", "0+", [
        f("ResourceType", "int8"), f("ResourceName", "string", nullable="0+"),
        f("PatternType", "int8"), f("Principal", "string"), f("Host", "string"),
        f("Operation", "int8"), f("PermissionType", "int8"),
    ]),
    message("FenceBrokerRecord", 7, "0", "0+", [f("Id", "int32"), f("Epoch", "int64")]),
    message("UnfenceBrokerRecord", 8, "0", "0+", [f("Id", "int32"), f("Epoch", "int64")]),
    message("RemoveTopicRecord", 9, "0", "0+", [f("TopicId", "uuid")]),
    message("DelegationTokenRecord", 10, "0", "0+", [
        f("Owner", "string"), f("Requester", "string"), f("Renewers", "[]string"),
        f("IssueTimestamp", "int64"), f("MaxTimestamp", "int64"),
        f("ExpirationTimestamp", "int64"), f("TokenId", "string"),
    ]),
    message("UserScramCredentialRecord", 11, "0", "0+", [
        f("Name", "string"), f("Mechanism", "int8"), f("Salt", "bytes"),
        f("StoredKey", "bytes"), f("ServerKey", "bytes"), f("Iterations", "int32"),
    ]),
    message("FeatureLevelRecord", 12, "0", "0+", [
        f("Name", "string"), f("FeatureLevel", "int16"),
    ]),
    message("ClientQuotaRecord", 14, "0", "0+", [
        f("Entity", "[]EntityData", fields=[
            f("EntityType", "string"), f("EntityName", "string", nullable="0+"),
        ]),
        f("Key", "string"), f("Value", "float64"), f("Remove", "bool"),
    ]),
    message("ProducerIdsRecord", 15, "0", "0+", [
        f("BrokerId", "int32"), f("BrokerEpoch", "int64", default=-1),
        f("NextProducerId", "int64"),
    ]),
    # id 16 RemoveFeatureLevelRecord: early 3.x only (removed 2022); kept for old logs
    message("RemoveFeatureLevelRecord", 16, "0", "0+", [f("Name", "string")]),
    message("BrokerRegistrationChangeRecord", 17, "0-3", "0+", [
        f("BrokerId", "int32"),
        f("BrokerEpoch", "int64"),
        f("Fenced", "int8", tag=0),
        f("InControlledShutdown", "int8", "1+", tag=1),
        f("LogDirs", "[]uuid", "2+", tag=2),
        # since Kafka 4.3 (a real 4.4 broker writes version 3 with an empty list)
        f("CordonedLogDirs", "[]uuid", "3+", nullable="3+", default=None, tag=3),
    ]),
    message("AccessControlEntryRecord", 18, "0", "0+", [
        f("Id", "uuid"), f("ResourceType", "int8"), f("ResourceName", "string"),
        f("PatternType", "int8"), f("Principal", "string"), f("Host", "string"),
        f("Operation", "int8"), f("PermissionType", "int8"),
    ]),
    message("RemoveAccessControlEntryRecord", 19, "0", "0+", [f("Id", "uuid")]),
    message("NoOpRecord", 20, "0", "0+", []),
    message("ZkMigrationStateRecord", 21, "0", "0+", [f("ZkMigrationState", "int8")]),
    message("RemoveUserScramCredentialRecord", 22, "0", "0+", [
        f("Name", "string"), f("Mechanism", "int8"),
    ]),
    message("BeginTransactionRecord", 23, "0", "0+", [
        f("Name", "string", nullable="0+", default=None, tag=0),
    ]),
    message("EndTransactionRecord", 24, "0", "0+", []),
    message("AbortTransactionRecord", 25, "0", "0+", [
        f("Reason", "string", nullable="0+", default=None, tag=0),
    ]),
    message("RemoveDelegationTokenRecord", 26, "0", "0+", [f("TokenId", "string")]),
    message("RegisterControllerRecord", 27, "0", "0+", [
        f("ControllerId", "int32"), f("IncarnationId", "uuid"), f("ZkMigrationReady", "bool"),
        f("EndPoints", "[]ControllerEndpoint", fields=_ENDPOINT),
        f("Features", "[]ControllerFeature", fields=_FEATURE),
    ]),
    message("ClearElrRecord", 28, "0", "0+", [f("TopicName", "string")]),
    message("UnregisterControllerRecord", 29, "0", "0+", [f("ControllerId", "int32")]),
]


def type_name(record_name: str) -> str:
    """MetadataRecordType enum name: ``TopicRecord`` -> ``TOPIC_RECORD``."""
    out = []
    for i, ch in enumerate(record_name):
        if ch.isupper() and i > 0 and not record_name[i - 1].isupper():
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


BY_API_KEY: dict[int, Message] = {m.api_key: m for m in METADATA_MESSAGES}  # type: ignore[misc]
BY_TYPE_NAME: dict[str, Message] = {type_name(m.name): m for m in METADATA_MESSAGES}
