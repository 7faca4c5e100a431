"""Tiered-storage plugins' own layouts that are Kafka message encodings.

Aiven's tiered-storage plugin returns a segment's custom metadata from ``copyLogSegmentData``
and the broker stores it in ``__remote_log_metadata``: a flexible struct with no fixed fields,
only a tagged-field section (the plugin's ``SegmentCustomMetadataField``, written through
Kafka's ``TaggedFields`` schema type)::

    tag 0 remote_size    varlong (zig-zag): the bytes the plugin uploaded
    tag 1 object_prefix  compact string: the objects are at prefix + key + suffix
    tag 2 object_key     compact string

Declared as a message spec (``formats/messages.py``) so that the one message engine reads it;
the field names are the plugin's, which are also the keys segtools reports.
"""

from __future__ import annotations

from segtools.formats.messages import field, message

__all__ = ["AIVEN_SEGMENT_CUSTOM_METADATA"]

#: (a field the plugin did not write reads as its default, None, as does a null string)
AIVEN_SEGMENT_CUSTOM_METADATA = message("SegmentCustomMetadata", None, "0", "0+", [
    field("remote_size", "varlong", tag=0, default=None),
    field("object_prefix", "string", tag=1, nullable="0+", default=None),
    field("object_key", "string", tag=2, nullable="0+", default=None),
])
