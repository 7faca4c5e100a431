"""``partition.metadata``, ``meta.properties``, ``quorum-state``, ``.kafka_cleanshutdown``.

Spec (FORMATS.md section 10; ``PartitionMetadataFile.java``, ``PartitionMetadataReadBuffer.java``,
``MetaProperties.java``, ``PropertiesUtils.java``, ``FileQuorumStateStore.java``,
``CleanShutdownFileHandler.java``, ``Uuid.java``)::

    partition.metadata   "version: 0\\ntopic_id: <uuid>"   no trailing newline; lines split on
                         ":\\s+"; version >= 0; the all-zero UUID is invalid
    meta.properties      java.util.Properties.store: "#<comment>" and "#<date>" lines, then
                         key=value lines; keys version (missing = 0), cluster.id,
                         broker.id (v0, ZooKeeper), node.id (v1, KRaft, required), directory.id
    quorum-state         JSON of QuorumStateData plus "data_version" (in __cluster_metadata-0)
    .kafka_cleanshutdown JSON {"version":0,"brokerEpoch":N} (log-dir root)

UUIDs are 16 bytes shown as URL-safe base64 without padding (22 characters).
"""

from __future__ import annotations

import json
from typing import Any

from construct import Adapter, Const, GreedyRange, GreedyString, Struct

from segtools.formats.primitives import base64url_to_uuid, uuid_to_base64url
from segtools.formats.text_lines import IntLine, Line

__all__ = [
    "PartitionMetadataText", "PropertiesLines", "JsonDocument", "PARTITION_METADATA",
    "META_PROPERTIES", "QUORUM_STATE", "CLEAN_SHUTDOWN", "LOCK_FILE", "BOOTSTRAP_CHECKPOINT",
    "PARTITION_METADATA_VERSION", "ZERO_UUID", "METADATA_TOPIC_ID", "META_PROPERTIES_KEYS",
    "uuid_to_base64url", "base64url_to_uuid",
]

PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
QUORUM_STATE = "quorum-state"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
PARTITION_METADATA_VERSION = 0
#: reserved UUIDs (Uuid.ZERO_UUID, Uuid.ONE_UUID = the __cluster_metadata topic id)
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
#: meta.properties keys (MetaProperties.java)
META_PROPERTIES_KEYS = ("version", "cluster.id", "broker.id", "node.id", "directory.id")

#: ``partition.metadata`` exactly as PartitionMetadataFile writes it
PartitionMetadataText = Struct(
    Const(b"version: "),
    "version" / IntLine,
    Const(b"topic_id: "),
    "topic_id" / GreedyString("utf8"),
)

#: a properties file as its lines (comments included); key/value meaning is the reader's job
PropertiesLines = GreedyRange(Line)


class _Json(Adapter):  # type: ignore[misc]  # construct ships no annotations
    """A compact JSON document (Jackson's default output: no spaces, key order kept)."""

    def _decode(self, obj: Any, context: Any, path: str) -> Any:
        return json.loads(obj)

    def _encode(self, obj: Any, context: Any, path: str) -> str:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


#: ``quorum-state`` / ``.kafka_cleanshutdown``
JsonDocument = _Json(GreedyString("utf8"))
