"""Arrow helpers shared by the batch and record tables (constant columns, dictionaries)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from segtools.primitives.codecs import COMPRESSION_NAMES

#: codec id (the attributes' 3 bits) -> name: Kafka's codecs, then "unknown(n)" for the ids
#: Kafka does not define, so every 3-bit value indexes Arrow's dictionary
_COMPRESSION_NAMES = [COMPRESSION_NAMES.get(i, f"unknown({i})") for i in range(8)]


_CONST_STRINGS: dict[tuple[str, int], pa.Array] = {}
#: below this many rows a constant column is built, not looked up (a lookup keyed on a
#: segment's file name would never hit again)
_CONST_CACHE_ROWS = 4096


def _const_string(value: str | None, n: int) -> pa.Array:
    """``n`` copies of ``value`` as a string array of exactly ``n`` rows.

    Never a slice of a longer array: a caller that keeps the rows (compare keeps one partition's
    batch rows) would keep the whole longer array alive; a cached 65,536-row column per
    segment name cost compare ~2 MB per segment. Full-size chunks reuse a cached column."""
    if value is None:
        return pa.nulls(n, pa.string())
    key = (value, n)
    if n >= _CONST_CACHE_ROWS:
        cached = _CONST_STRINGS.get(key)
        if cached is not None:
            return cached
    raw = value.encode("utf-8")
    if len(raw) * n >= 1 << 31:   # beyond 32-bit offsets (Arrow says so; never for Kafka's names)
        return pa.repeat(pa.scalar(value, pa.string()), n)
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(raw))
    arr = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])
    if n >= _CONST_CACHE_ROWS:
        if len(_CONST_STRINGS) >= 16:
            _CONST_STRINGS.clear()
        _CONST_STRINGS[key] = arr
    return arr


def _const_int32(value: int | None, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, pa.int32())
    return _np_arrow(np.full(n, value, dtype=np.int32), _INT32)


_INT8, _INT32, _INT64, _BOOL = pa.int8(), pa.int32(), pa.int64(), pa.bool_()
_TS_US = pa.timestamp("us", tz="UTC")
_INT16 = pa.int16()
_NP_TYPES = {_INT8: np.int8, _INT16: np.int16, _INT32: np.int32, _INT64: np.int64, _TS_US: np.int64}


def _np_arrow(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A numpy column as an Arrow array without nulls, wrapped (``pa.array`` costs several
    times as much per call, which a partition of one-batch segments pays per segment)."""
    if typ == _BOOL:
        return bool_array(values)
    values = np.ascontiguousarray(values, dtype=_NP_TYPES[typ])
    return pa.Array.from_buffers(typ, int(values.shape[0]), [None, pa.py_buffer(values)])


def numpy_values(col: pa.Array) -> np.ndarray:
    """A fixed-width column's values as a numpy view of its buffer (booleans unpacked,
    timestamps as their int64 counts).

    ``Array.to_numpy`` imports pandas (pyarrow's conversion goes through its pandas layer):
    ~0.17 s of every ``compare`` and of each forked ``export`` worker, which ``dump`` does not
    pay. Columns with nulls, or of other types, still take that path."""
    typ = col.type
    if col.null_count == 0 and (typ == _BOOL or typ in _NP_TYPES):
        data = col.buffers()[1]
        n, start = len(col), col.offset
        if typ == _BOOL:
            bits = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
            return np.unpackbits(bits, bitorder="little", count=start + n)[start:].astype(np.bool_)
        dtype = np.dtype(_NP_TYPES[typ])
        if data is None or n == 0:
            return np.zeros(0, dtype=dtype)
        return np.frombuffer(data, dtype=dtype, count=n, offset=start * dtype.itemsize)
    return np.asarray(col.to_numpy(zero_copy_only=False))


def _bits(values: np.ndarray) -> pa.Buffer:
    """A numpy bool (or 0/1) column as Arrow's bit-packed buffer (least significant bit first)."""
    return pa.py_buffer(np.packbits(values.astype(np.bool_, copy=False), bitorder="little"))


def validity(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    """An Arrow validity bitmap of ``valid`` (True where a value is there) and the null count;
    no bitmap when nothing is null."""
    nulls = int(valid.shape[0] - np.count_nonzero(valid))
    return (_bits(valid) if nulls else None), nulls


def bool_array(values: np.ndarray) -> pa.Array:
    """A numpy bool column as an Arrow array, its bits packed here: ``pa.array`` on numpy input
    imports pandas (see :func:`string_array`), half a second of start-up in every ``export``
    and ``compare``."""
    return pa.Array.from_buffers(_BOOL, int(values.shape[0]), [None, _bits(values)])


def string_array(values: list[str]) -> pa.Array:
    """A small string array, built from buffers: ``pa.array`` on Python or numpy input asks
    whether it is a pandas object, which imports pandas (a quarter to a whole second of
    start-up that ``dump`` does not otherwise pay)."""
    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum([len(v) for v in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


_COMPRESSION_DICT = string_array(_COMPRESSION_NAMES)
_TS_TYPE_NAMES = ["NoTimestampType", "CreateTime", "LogAppendTime"]
_TS_TYPE_DICT = string_array(_TS_TYPE_NAMES)


def _timestamp_type_column(ts_type: np.ndarray) -> pa.Array:
    """Timestamp type names per batch (-1/0/1): a cached constant column when all agree."""
    if ts_type.shape[0] and (ts_type == ts_type[0]).all():
        return _const_string(_TS_TYPE_NAMES[int(ts_type[0]) + 1], int(ts_type.shape[0]))
    return _TS_TYPE_DICT.take(_np_arrow(ts_type.astype(np.int32) + 1, _INT32))


def _compression_column(codec: np.ndarray) -> pa.Array:
    """Codec names per row: a slice of a cached constant column when every row has the same
    codec (the usual case; a gather of strings per row cost 4% of read_records on lz4)."""
    if codec.shape[0] and (codec == codec[0]).all():
        return _const_string(_COMPRESSION_NAMES[int(codec[0])], int(codec.shape[0]))
    return _COMPRESSION_DICT.take(_np_arrow(codec.astype(np.int32), _INT32))
