"""Issue 24: the hot paths' struct formats and numpy dtypes are computed from the construct
declarations at import (written once). Each derived layout must decode random bytes exactly as
construct's declaration does, and the derivation refuses layouts it cannot express."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest
from construct import Bytes, Int32sb, Struct

from segtools.formats import control, indexes, producer_snapshot
from segtools.formats.primitives import numpy_dtype, struct_format

DERIVED = [
    (indexes.OffsetIndexEntry, indexes.OFFSET_INDEX_ENTRY_STRUCT_FORMAT, indexes.OFFSET_INDEX_DTYPE),
    (indexes.TimeIndexEntry, indexes.TIME_INDEX_ENTRY_STRUCT_FORMAT, indexes.TIME_INDEX_DTYPE),
    (indexes.AbortedTxnEntry, indexes.ABORTED_TXN_STRUCT_FORMAT, None),
    (control.ControlRecordKey, control.CONTROL_KEY_STRUCT_FORMAT, None),
    (control.EndTxnMarker, control.END_TXN_MARKER_STRUCT_FORMAT, None),
    (producer_snapshot.ProducerSnapshotEntry, producer_snapshot.PRODUCER_ENTRY_STRUCT_FORMAT, None),
]


@pytest.mark.parametrize("layout, fmt, dtype", DERIVED)
def test_derived_formats_decode_like_the_declaration(layout, fmt, dtype):
    rng = random.Random(24)
    size = layout.sizeof()
    assert struct.calcsize(fmt) == size
    names = [sub.name for sub in layout.subcons]
    for _ in range(200):
        raw = bytes(rng.getrandbits(8) for _ in range(size))
        parsed = layout.parse(raw)
        assert list(struct.unpack(fmt, raw)) == [parsed[n] for n in names]
        if dtype is not None:
            row = np.frombuffer(raw, dtype=np.dtype(dtype))[0]
            assert [int(row[n]) for n in names] == [parsed[n] for n in names]


def test_index_sizes_and_the_readers_dtypes_come_from_the_declarations():
    from segtools.files import indexes as reader

    assert indexes.OFFSET_INDEX_ENTRY_SIZE == indexes.OffsetIndexEntry.sizeof() == 8   # Kafka's OffsetIndex
    assert indexes.TIME_INDEX_ENTRY_SIZE == indexes.TimeIndexEntry.sizeof() == 12      # TimeIndex
    assert indexes.ABORTED_TXN_SIZE == indexes.AbortedTxnEntry.sizeof() == 34          # AbortedTxn
    assert reader.OFFSET_INDEX_DTYPE == np.dtype(numpy_dtype(indexes.OffsetIndexEntry))
    assert reader.TIME_INDEX_DTYPE == np.dtype(numpy_dtype(indexes.TimeIndexEntry))


def test_a_layout_without_a_fixed_integer_form_is_refused():
    with pytest.raises(TypeError, match="payload"):
        struct_format(Struct("size" / Int32sb, "payload" / Bytes(3)))
    with pytest.raises(TypeError):
        numpy_dtype(Int32sb)
