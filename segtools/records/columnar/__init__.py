"""Columnar fast path: segments straight into Arrow (CONTRACT.md sections 5 and 7).

* :func:`iter_batch_batches` / :func:`read_batch_table`: one row per batch (``BATCH_SCHEMA``):
  header fields, location and CRC validity, no record decoding.
* :func:`iter_record_batches` / :func:`read_records`: one row per record (``RECORD_SCHEMA``):
  Spark's Kafka source columns first, then forensic columns.

Paths mean what :func:`segtools.files.sources.resolve` says (a segment, a partition dir, a broker dir,
a folder of broker dirs), URIs included: an object (``s3://``...) is read like ``iter_batches``
reads it, one segment at a time through a temporary local copy (:func:`_open_segment`).

Files are opened read-only, read through one reusable window and walked like Kafka's
``FileLogInputStream`` (FORMATS.md 1.8): a torn tail ends the walk silently, a size field below
14 raises ``CorruptBatchError``. Output comes in bounded chunks (``max_rows`` rows, at most
``_CHUNK_BYTES`` of record bytes), so memory stays flat however large the segment. Batches
whose CRC does not match still give rows, with ``crc_valid`` False; bytes that cannot be decoded
at all raise a ``FormatError`` that names file, position, base offset and field.

Engines, behind one decoder interface (:mod:`.engines`), identical rows and errors: ``"numba"``
(kernels in :mod:`segtools.records.jit_kernel`), ``"vectorised"`` (numpy columns,
:mod:`.vectorised`), ``"python"`` (:mod:`segtools.records.v2_decoder`), ``"auto"`` (numba when
importable). Legacy
magic 0/1 entries are read through the object reader (:mod:`segtools.records.batches`).

Modules, in the order they build on each other: ``window`` (inputs and the read window),
``headers`` (the header scan), ``rows`` (record decoding), ``vectorised`` (the vectorised
engine), ``engines`` (the decoder interface, which engine runs),
``decompress``, ``arrow_columns``, ``batch_table``, ``record_table`` and ``small_segments``
(export's grouped reads of many small files).
"""

from __future__ import annotations

from segtools.records.columnar.batch_table import iter_batch_batches, read_batch_table, scan_batches
from segtools.records.columnar.engines import available_engines
from segtools.records.columnar.record_table import iter_record_batches, read_records
from segtools.records.columnar.small_segments import SMALL_SEGMENT_BYTES, SmallSegments

__all__ = ["iter_batch_batches", "iter_record_batches", "read_batch_table", "read_records",
           "available_engines", "scan_batches", "SmallSegments", "SMALL_SEGMENT_BYTES"]
