"""Declarations of Kafka's on-disk formats (construct ``Struct``s, enums, masks, constants).

No file IO and no compression here (docs/ARCHITECTURE.md). Modules:

* :mod:`~segtools.formats.primitives` -- varints, nullable/compact types, tagged fields, UUIDs,
  :func:`~segtools.formats.primitives.parse_located` (construct errors -> segtools errors)
* :mod:`~segtools.formats.record_batch` -- v2 batch header, records, record headers, attributes
* :mod:`~segtools.formats.legacy` -- v0/v1 messages
* :mod:`~segtools.formats.control` -- control record key, transaction markers, KRaft control values
* :mod:`~segtools.formats.indexes` -- ``.index``/``.timeindex``/``.txnindex`` entries
* :mod:`~segtools.formats.producer_snapshot` -- producer state ``.snapshot``
* :mod:`~segtools.formats.checkpoints`, :mod:`~segtools.formats.root_files`,
  :mod:`~segtools.formats.text_lines` -- text checkpoints, partition.metadata, meta.properties,
  quorum-state
* :mod:`~segtools.formats.names` -- file and directory naming rules
"""
