"""Internal-topic payload schemas: decode, encode and kafka-dump-log's exact text/JSON.

* the payloads are Kafka message specs declared as data (``segtools.formats.messages``: versions,
  flexible versions, compact strings/arrays, tagged fields, nullable fields, uuid) and read and
  written by the one engine, ``segtools.primitives.messages``;
* :mod:`~segtools.internal_topics.json_render` -- Jackson-compatible JSON of decoded messages;
* :mod:`~segtools.internal_topics.metadata` (+ ``metadata_schemas``) -- KRaft ``__cluster_metadata``;
* :mod:`~segtools.internal_topics.consumer_offsets` (+ ``group_schemas``) -- ``__consumer_offsets``;
* :mod:`~segtools.internal_topics.transaction_state` -- ``__transaction_state``;
* :mod:`~segtools.internal_topics.share_group_state` -- ``__share_group_state`` (KIP-932);
* :mod:`~segtools.internal_topics.remote_log_metadata` -- ``__remote_log_metadata`` (tiered storage).

Every decoder raises :class:`segtools.errors.SchemaError` on bad bytes; its ``reason`` is the
message Kafka itself would give and its ``field`` the path of the failing field.
"""
