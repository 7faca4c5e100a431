"""The one bound on what a record batch may cost a reader (``max_batch_bytes``).

Every reader -- the object reader (``iter_batches``, ``SegmentReader``, ``iter_records``), the
columnar readers (``read_batch_table``, ``read_records``, ``iter_record_batches``,
``iter_batch_batches``) and the commands built on them (``segtools dump``, ``export``,
``compare``: flag ``--max-batch-bytes``) -- applies the same limit to one batch:

* its size on disk (the length field + 12) is refused above the limit before anything is
  allocated, so a hostile length field (2**31-1 in a sparse file) costs nothing;
* its records section may decompress to at most the limit (a decompression bomb stops there);
* a compressed batch whose ``recordsCount`` needs more than the limit (a record takes at
  least 7 bytes) is refused before it is decompressed.

Why real data never reaches the default (16 MiB): a Kafka producer refuses a record whose
serialized, *uncompressed* size exceeds ``max.request.size`` (default 1 MiB), closes batches at
``batch.size`` (default 16 KiB), and the broker refuses a batch above ``message.max.bytes``
(default 1 MiB + 12 bytes, checked on the compressed batch). A default 16 times those limits
leaves room for clusters that raised them, while a bomb (a 5 KB batch claiming 8,000,000
records, 250 MiB of compressed zeros) stops at a cost of tens of MB. A cluster configured
beyond it needs ``--max-batch-bytes`` (or ``max_batch_bytes=``); the error says so.
"""

from __future__ import annotations

import os
import re

# format_size lives with the messages that use it (errors.py) and is re-exported here
from segtools.errors import InputError, format_size

__all__ = ["DEFAULT_MAX_BATCH_BYTES", "MIN_RECORD_BYTES", "MAX_BATCH_BYTES_ENV", "parse_size",
           "format_size", "resolve_max_batch_bytes"]

#: default bound on one batch: on-disk size and decompressed records (see module docstring)
DEFAULT_MAX_BATCH_BYTES = 16 * 1024 * 1024
#: the smallest v2 record: length, attributes, timestampDelta, offsetDelta, keyLength,
#: valueLength, headersCount, one varint byte each
MIN_RECORD_BYTES = 7
#: environment variable holding the limit when a call does not pass one: how a command's
#: ``--max-batch-bytes`` reaches readers deep in a pipeline and Spark's Python workers
#: (which inherit the driver's environment) without threading it through every function
MAX_BATCH_BYTES_ENV = "SEGTOOLS_MAX_BATCH_BYTES"

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
          "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3, "t": 1000**4,
          "tb": 1000**4, "tib": 1024**4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str | int) -> int:
    """A byte count from ``"256MiB"``, ``"64 MB"``, ``"1.5GiB"`` or a plain ``"1048576"``.

    Raises ``ValueError`` (argparse turns it into a usage error) for anything else or for a
    size below 1 byte.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        m = _SIZE.match(str(text))
        unit = _UNITS.get(m.group(2).lower()) if m else None
        if m is None or unit is None:
            raise ValueError(f"invalid size {text!r}: use a byte count or a number with a unit "
                             "(KiB, MiB, GiB, KB, MB, GB), e.g. 256MiB")
        value = int(float(m.group(1)) * unit)
    if value < 1:
        raise ValueError(f"invalid size {text!r}: must be at least 1 byte")
    return value


def resolve_max_batch_bytes(max_batch_bytes: int | None = None, **aliases: int | None) -> int:
    """The limit from ``max_batch_bytes`` or one of its older names (``max_decompressed_size``
    of the object reader, ``max_uncompressed_bytes`` of the columnar reader)."""
    given = [v for v in (max_batch_bytes, *aliases.values()) if v is not None]
    if not given:
        env = os.environ.get(MAX_BATCH_BYTES_ENV)
        if not env:
            return DEFAULT_MAX_BATCH_BYTES
        try:
            return parse_size(env)
        except ValueError as exc:
            raise InputError(f"environment variable {MAX_BATCH_BYTES_ENV}: {exc}") from None
    if len(set(given)) > 1:
        raise InputError("max_batch_bytes and its alias "
                         f"{', '.join(k for k, v in aliases.items() if v is not None)} disagree")
    value = int(given[0])
    if value < 1:
        raise InputError(f"max_batch_bytes must be at least 1, got {value}")
    return value
