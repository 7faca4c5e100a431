"""Helpers for the declaration tests: construct-style parse -> build -> same bytes."""

from __future__ import annotations

from typing import Any

KRAFT = "kafka-3.6-kraft-flink-stack/logdir"
ZK_FINAL = "kafka-2.5-zk-first-topic/final"


def roundtrip(con: Any, data: bytes, **context: Any) -> Any:
    """Parse ``data``, rebuild it, and require identical bytes; returns the parsed object."""
    obj = con.parse(data, **context)
    assert con.build(obj, **context) == data
    return obj
