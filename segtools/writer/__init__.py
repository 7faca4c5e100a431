"""Build Kafka record batches and partition logs as a broker would write them.

* :func:`build_batch`, :func:`build_control_batch` -- magic 2 batches (``batch_builder``)
* :func:`build_legacy_message_set` -- magic 0/1 message sets (``legacy_builder``)
* :class:`LogWriter` -- segments, indexes, txn index and producer snapshots (``log_writer``)
"""

from __future__ import annotations

from .batch_builder import NewRecord, build_batch, build_control_batch
from .legacy_builder import build_legacy_message_set

__all__ = [
    "NewRecord",
    "build_batch",
    "build_control_batch",
    "build_legacy_message_set",
    "LogWriter",
    "AppendInfo",
]


def __getattr__(name: str):  # LogWriter loads on first use
    if name in ("LogWriter", "AppendInfo"):
        from . import log_writer

        return getattr(log_writer, name)
    raise AttributeError(name)
