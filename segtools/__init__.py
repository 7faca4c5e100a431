"""segtools: forensics for Apache Kafka log directories.

Public API (CONTRACT.md section 7)::

    import segtools
    for batch in segtools.iter_batches("00000000000000000000.log"):
        for record in batch.records():
            ...
    segtools.read_batch_table(path)   # pyarrow.Table, one row per batch
    segtools.read_records(path)   # pyarrow.Table, one row per record (Spark Kafka schema first)
    segtools.compare([dir1, dir2, dir3])   # CompareReport; .report_json() = compare --report

Attributes are imported lazily so ``import segtools`` stays cheap (the dump CLI starts fast).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from segtools.errors import (
    BatchTooLargeError,
    CheckpointFormatError,
    CompressionError,
    CorruptBatchError,
    CrcMismatchError,
    FileChangedError,
    FormatError,
    IndexCorruptionError,
    InputError,
    MissingCodecError,
    SegtoolsError,
    TruncatedBatchError,
    UnsupportedMagicError,
)
from segtools.version import __version__ as __version__

if TYPE_CHECKING:
    # Real types for type checkers; at runtime these names stay lazy (see __getattr__).
    # `import X as X` marks them as re-exported.
    from segtools.files.logdir import LogDir as LogDir
    from segtools.files.logdir import PartitionDir as PartitionDir
    from segtools.files.logdir import open_log_dir as open_log_dir
    from segtools.forensics.api import compare as compare
    from segtools.forensics.report import CompareReport as CompareReport
    from segtools.records.batches import Record as Record
    from segtools.records.batches import SegmentBatch as SegmentBatch
    from segtools.records.batches import SegmentReader as SegmentReader
    from segtools.records.batches import iter_batches as iter_batches
    from segtools.records.columnar import iter_batch_batches as iter_batch_batches
    from segtools.records.columnar import iter_record_batches as iter_record_batches
    from segtools.records.columnar import read_batch_table as read_batch_table
    from segtools.records.columnar import read_records as read_records


_LAZY = {
    "iter_batches": "segtools.records.batches",
    "SegmentBatch": "segtools.records.batches",
    "Record": "segtools.records.batches",
    "SegmentReader": "segtools.records.batches",
    "read_batch_table": "segtools.records.columnar",
    "read_records": "segtools.records.columnar",
    "iter_record_batches": "segtools.records.columnar",
    "iter_batch_batches": "segtools.records.columnar",
    "open_log_dir": "segtools.files.logdir",
    "LogDir": "segtools.files.logdir",
    "PartitionDir": "segtools.files.logdir",
    "resolve": "segtools.files.sources",
    "compare": "segtools.forensics.api",
    "CompareReport": "segtools.forensics.report",
}
#: old names, kept importable (they warn when called): ``read_*`` is eager and ``iter_*`` lazy
_DEPRECATED = {
    "read_batches": "segtools.records.batches",      # now iter_batches
    "scan_batches": "segtools.records.columnar",     # now read_batch_table
}

__all__ = [
    "SegtoolsError", "InputError", "FormatError", "TruncatedBatchError", "CorruptBatchError",
    "CrcMismatchError", "UnsupportedMagicError", "CompressionError", "IndexCorruptionError",
    "CheckpointFormatError", "MissingCodecError", "BatchTooLargeError", "FileChangedError",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name == "RecordBatch":  # the old name, easily confused with pyarrow.RecordBatch
        import warnings

        warnings.warn("segtools.RecordBatch is now segtools.SegmentBatch", DeprecationWarning, stacklevel=2)
        return __getattr__("SegmentBatch")
    module = _LAZY.get(name) or _DEPRECATED.get(name)
    if module is None:
        raise AttributeError(f"module 'segtools' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
