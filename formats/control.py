"""Control records of control batches (attribute bit 5): key, transaction markers, KRaft values.

Spec (FORMATS.md section 4; ``ControlRecordType.java``, ``EndTransactionMarker.java``,
``ControlRecordUtils.java``, ``{LeaderChangeMessage,SnapshotHeaderRecord,SnapshotFooterRecord,
KRaftVersionRecord,VotersRecord}.json``)::

    ControlRecordKey => version int16 (0; negative is invalid), type int16
    EndTxnMarker (ABORT 0 / COMMIT 1) => version int16 (0), coordinator_epoch int32

KRaft control values (types 2-6) are flexible message bodies -- compact strings/arrays and a
tagged-field section, no frame prefix -- and Kafka always reads them with schema version 0
(bytes after the message are ignored, as the generated readers do; a null array or string
where the schema has none is an error, as there)::

    LeaderChangeMessage => version int16, leader_id int32, voters [voter_id int32 _tagged],
                           granting_voters [voter_id int32 _tagged], _tagged
    SnapshotHeaderRecord => version int16, last_contained_log_timestamp int64, _tagged
    SnapshotFooterRecord => version int16, _tagged
    KRaftVersionRecord => version int16, kraft_version int16, _tagged
    VotersRecord => version int16, voters [voter_id int32, voter_directory_id uuid,
                    endpoints [name string, host string, port uint16 _tagged],
                    kraft_version_feature {min_supported_version int16,
                    max_supported_version int16 _tagged} _tagged], _tagged
"""

from __future__ import annotations

from enum import IntEnum

from construct import Int16sb, Int32sb, Struct

from segtools.formats.messages import field, message
from segtools.formats.primitives import struct_format

__all__ = [
    "ControlRecordType", "ControlRecordKey", "EndTxnMarker", "LeaderChangeMessage",
    "SnapshotHeaderRecord", "SnapshotFooterRecord", "KRaftVersionRecord", "VotersRecord",
    "KRAFT_CONTROL_MESSAGES", "CONTROL_KEY_SIZE", "END_TXN_MARKER_SIZE",
    "CURRENT_CONTROL_KEY_VERSION", "CURRENT_END_TXN_MARKER_VERSION",
    "CONTROL_KEY_STRUCT_FORMAT", "END_TXN_MARKER_STRUCT_FORMAT",
]


class ControlRecordType(IntEnum):
    """``ControlRecordType.java``; any other type id is UNKNOWN (-1) and ignored by clients."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def from_id(cls, type_id: int) -> ControlRecordType:
        """Kafka's ``fromTypeId``: unknown ids map to UNKNOWN."""
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


#: 4 bytes; a shorter key is InvalidRecordException
CONTROL_KEY_SIZE = 4
#: 6 bytes; a shorter value is an error
END_TXN_MARKER_SIZE = 6
CURRENT_CONTROL_KEY_VERSION = 0
CURRENT_END_TXN_MARKER_VERSION = 0

ControlRecordKey = Struct(
    "version" / Int16sb,
    "type" / Int16sb,
)

#: value of ABORT/COMMIT markers (Kafka reads the first 6 bytes; extra bytes are ignored)
EndTxnMarker = Struct(
    "version" / Int16sb,
    "coordinator_epoch" / Int32sb,
)

#: ``struct`` formats of the two declarations above, derived from them: control record key
#: (version, type), end-transaction marker value (version, coordinator epoch)
CONTROL_KEY_STRUCT_FORMAT = struct_format(ControlRecordKey)
END_TXN_MARKER_STRUCT_FORMAT = struct_format(EndTxnMarker)

# The KRaft control values are Kafka message specs (LeaderChangeMessage.json, ...), declared
# as data and read by the one message engine (segtools.primitives.messages) at version 0

#: LeaderChangeMessage.json's Voter (VoterDirectoryId since version 1; Kafka reads version 0)
_VOTER_ID = (field("VoterId", "int32"), field("VoterDirectoryId", "uuid", "1+"))

LeaderChangeMessage = message("LeaderChangeMessage", None, "0-1", "0+", [
    field("Version", "int16"),
    field("LeaderId", "int32"),
    field("Voters", "[]Voter", fields=_VOTER_ID),
    field("GrantingVoters", "[]Voter", fields=_VOTER_ID),
])

SnapshotHeaderRecord = message("SnapshotHeaderRecord", None, "0", "0+", [
    field("Version", "int16"),
    field("LastContainedLogTimestamp", "int64"),
])

SnapshotFooterRecord = message("SnapshotFooterRecord", None, "0", "0+", [
    field("Version", "int16"),
])

KRaftVersionRecord = message("KRaftVersionRecord", None, "0", "0+", [
    field("Version", "int16"),
    field("KRaftVersion", "int16"),
])

VotersRecord = message("VotersRecord", None, "0", "0+", [
    field("Version", "int16"),
    field("Voters", "[]Voter", fields=[
        field("VoterId", "int32"),
        field("VoterDirectoryId", "uuid"),
        field("Endpoints", "[]Endpoint", fields=[
            field("Name", "string"),
            field("Host", "string"),
            field("Port", "uint16"),
        ]),
        field("KRaftVersionFeature", "KRaftVersionFeature", fields=[
            field("MinSupportedVersion", "int16"),
            field("MaxSupportedVersion", "int16"),
        ]),
    ]),
])

#: the message spec of each KRaft control value (ABORT/COMMIT values are EndTxnMarker)
KRAFT_CONTROL_MESSAGES = {
    ControlRecordType.LEADER_CHANGE: LeaderChangeMessage,
    ControlRecordType.SNAPSHOT_HEADER: SnapshotHeaderRecord,
    ControlRecordType.SNAPSHOT_FOOTER: SnapshotFooterRecord,
    ControlRecordType.KRAFT_VERSION: KRaftVersionRecord,
    ControlRecordType.KRAFT_VOTERS: VotersRecord,
}
