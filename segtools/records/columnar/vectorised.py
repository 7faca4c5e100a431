"""The vectorised record decoder (``engine="vectorised"``): the records of many v2 batches as
numpy columns, field by field for all records at once, with no compiler.

One of the three engines behind the one decoder interface (:mod:`.engines`): the Python
decoder (:mod:`segtools.records.v2_decoder`) and its numba twin (:mod:`segtools.records.jit_kernel`)
walk record by record; this one walks only the records' length prefixes one by one, then reads
every other field as a column (varints with masks, keys and values as zero-copy slices of the
buffer). It is the engine of dump's deep-iteration text (:mod:`segtools.dump.fast_text`, which
formats its columns) and of ``read_records(engine="vectorised")``.

It decodes the common record exactly and declines the rest: a batch holding a record it does
not decode here (a varint longer than the common bound, more than :data:`MAX_HEADERS`
headers, a header key that is not UTF-8, any record DefaultRecord.readFrom would reject) ends
the run before that batch, and the caller hands the batch to the Python decoder, which gives
its rows or the exact error every entry point gives (tests/records/test_one_reader.py). The
record layout and its checks are DefaultRecord.readFrom's (Kafka
clients/src/main/java/org/apache/kafka/common/record/DefaultRecord.java).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from segtools.formats.record_batch import RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_MASK
from segtools.records.columnar.headers import _Headers
from segtools.records.columnar.rows import _decode_python, _Part, _RowChunk
from segtools.records.columnar.window import _SegmentFile
from segtools.records.schema import HEADER_TYPE

#: records with more headers are left to the Python decoder (the header loop here runs once
#: per header index over all records that have one)
MAX_HEADERS = 64
_INT32_MAX = 2**31 - 1
_HEADER_FIELDS = list(HEADER_TYPE.value_type)


class _Declined(Exception):
    """Internal: the batch at this index holds a record this engine leaves to the Python
    decoder."""


def decode_records(buf: Any, rec_start: np.ndarray, rec_end: np.ndarray,
                   base_offset: np.ndarray, base_timestamp: np.ndarray,
                   max_timestamp: np.ndarray, log_append_time: np.ndarray,
                   base_sequence: np.ndarray, records_count: np.ndarray) -> tuple[_RowChunk, int]:
    """Rows of the leading batches this engine decodes: ``(rows, done)``.

    Batch ``b``'s records are ``buf[rec_start[b]:rec_end[b]]`` (``buf`` indexes to ints:
    bytes, bytearray or a memoryview of bytes); the other arguments are the batches' header
    fields (int64 columns; ``log_append_time`` bool). ``rows.batch`` indexes these batches.
    ``done < len(rec_start)`` means batch ``done`` is declined (see the module's docstring)
    and nothing after it was decoded."""
    nb = len(rec_start)
    while nb:
        # the checks run one field after another, so the batch found declined is not always
        # the first one: retry on the batches before it until they all pass
        try:
            return _decode(buf, rec_start[:nb], rec_end[:nb], base_offset, base_timestamp,
                           max_timestamp, log_append_time, base_sequence, records_count), nb
        except _Declined as exc:
            nb = exc.args[0]
    return _empty(), 0


def _decode(buf: Any, rec_start: np.ndarray, rec_end: np.ndarray, base_offset: np.ndarray,
            base_timestamp: np.ndarray, max_timestamp: np.ndarray, log_append_time: np.ndarray,
            base_sequence: np.ndarray, records_count: np.ndarray) -> _RowChunk:
    nb = len(rec_start)
    counts = records_count[:nb].astype(np.int64)
    if (counts < 0).any():
        raise _Declined(int(np.argmax(counts < 0)))
    w = np.frombuffer(buf, dtype=np.uint8)
    rs, rend = _record_bounds(buf, rec_start, rec_end, counts)
    bidx = np.repeat(np.arange(nb), counts)
    n = len(rs)
    bad = np.zeros(n, dtype=bool)
    pos = rs + 1  # attributes: read, unused (DefaultRecord ignores them)
    ts_delta, pos = _varint(w, pos, 9, bad)
    off_delta, pos = _varint(w, pos, 4, bad)
    klen, pos = _varint(w, pos, 4, bad)
    kstart = pos
    pos = pos + np.maximum(klen, 0)
    vlen, pos = _varint(w, pos, 4, bad)
    vstart = pos
    pos = pos + np.maximum(vlen, 0)
    hcount, pos = _varint(w, pos, 4, bad)
    # a negative count or more headers than bytes left is the Python decoder's error to
    # report; many headers are its job too
    bad |= (hcount < 0) | (hcount > rend - pos) | (hcount > MAX_HEADERS)
    hc = np.where(bad, 0, hcount)
    h_rec: list[np.ndarray] = []
    hk_start: list[np.ndarray] = []
    hk_len: list[np.ndarray] = []
    hv_start: list[np.ndarray] = []
    hv_len: list[np.ndarray] = []
    j = 0
    while True:
        idx = np.nonzero((hc > j) & ~bad)[0]
        if len(idx) == 0:
            break
        hp = pos[idx]
        sub_bad = np.zeros(len(idx), dtype=bool)
        hkl, hp = _varint(w, hp, 4, sub_bad)
        sub_bad |= (hkl < 0) | (hp + np.maximum(hkl, 0) > rend[idx])
        h_rec.append(idx)
        hk_start.append(hp)
        hk_len.append(np.maximum(hkl, 0))
        hp = hp + np.maximum(hkl, 0)
        hvl, hp = _varint(w, hp, 4, sub_bad)
        hv_start.append(hp)
        hv_len.append(hvl)
        hp = hp + np.maximum(hvl, 0)
        pos[idx] = np.minimum(hp, rend[idx] + 1)
        bad[idx] |= sub_bad
        j += 1
    # every read moved forward, so ending exactly at the record's end means every read was
    # inside it (DefaultRecord.readFrom's "expected to read N bytes" check)
    bad |= pos != rend
    seq_base = base_sequence[:nb].astype(np.int64)[bidx]
    bad |= (seq_base >= 0) & (off_delta < 0)
    if bad.any():
        raise _Declined(int(bidx[np.argmax(bad)]))

    if h_rec:
        order = np.argsort(np.concatenate(h_rec), kind="stable")  # record-major, in order
        hks, hkl_all = np.concatenate(hk_start)[order], np.concatenate(hk_len)[order]
        hvs, hvl_all = np.concatenate(hv_start)[order], np.concatenate(hv_len)[order]
    else:
        hks = hkl_all = hvs = hvl_all = np.zeros(0, dtype=np.int64)
    try:
        # a zero-copy view checked for UTF-8 as a cast would (a cast imports pyarrow.compute)
        hkeys = _slices(buf, hks, hkl_all).view(pa.string())
        hkeys.validate(full=True)
    except pa.ArrowInvalid:  # a header key that is not UTF-8: the Python decoder's replacement
        raise _Declined(_first_bad_key_batch(buf, bidx, hc, hks, hkl_all)) from None
    hvals = _nullable(_slices(buf, hvs, np.maximum(hvl_all, 0)), hvl_all >= 0)
    structs = pa.StructArray.from_arrays([hkeys, hvals], fields=_HEADER_FIELDS)
    h_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(hc, out=h_offsets[1:])
    has = hc > 0
    headers = pa.Array.from_buffers(
        HEADER_TYPE, n, [None if has.all() else _bitmap(has), pa.py_buffer(h_offsets)],
        null_count=int(n - np.count_nonzero(has)), children=[structs])

    # Java long arithmetic wraps like numpy's int64
    log_append = log_append_time[:nb][bidx]
    timestamps = np.where(log_append, max_timestamp[:nb].astype(np.int64)[bidx],
                          base_timestamp[:nb].astype(np.int64)[bidx] + ts_delta)
    return _RowChunk(
        offset=base_offset[:nb].astype(np.int64)[bidx] + off_delta,
        timestamp_ms=timestamps,
        sequence=increment_sequences(seq_base, off_delta).astype(np.int32),
        batch=bidx.astype(np.int32),
        key=_nullable(_slices(buf, kstart, np.maximum(klen, 0)), klen >= 0),
        value=_nullable(_slices(buf, vstart, np.maximum(vlen, 0)), vlen >= 0),
        headers=headers)


#: batches still walking their length prefixes below which the walk goes on batch by batch in
#: Python: one lockstep step (about twenty numpy calls) pays off from about 30 records
_LOCKSTEP_MIN = 32


def _prefix_table() -> np.ndarray:
    """A zig-zag varint's first two bytes (little-endian uint16: first byte low) ->
    ``(value << 2) | size`` for the one- and two-byte varints, 3 for those that go on."""
    pair = np.arange(1 << 16, dtype=np.int64)
    x, y = pair & 0xFF, pair >> 8
    one = x < 0x80
    raw = np.where(one, x, (x & 0x7F) | (y << 7))
    size = np.where(one, 1, np.where(y < 0x80, 2, 3))
    value = (raw >> 1) ^ -(raw & 1)
    return np.where(size == 3, 3, (value << 2) | size)


_PREFIX = _prefix_table()
#: the key into _PREFIX: two bytes at any position as a little-endian uint16 (first byte low);
#: a lookup key, not a Kafka layout
_PAIR = np.dtype(np.uint16).newbyteorder("<")


def _record_bounds(buf: Any, rec_start: np.ndarray, rec_end: np.ndarray,
                   counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each record's body ``[start, end)`` from its length prefix. A record's position is
    known only once the one before it is read, so the walk is sequential within a batch; it
    runs in lockstep across batches (record i of every batch in one set of numpy calls, the
    prefix read through a table of its first two bytes) while many batches are walking, then
    batch by batch in Python for the few left (one batch of 10,000 records would otherwise take
    10,000 lockstep steps). A length prefix longer than three bytes (records of 2 MiB and more)
    is declined."""
    nb = len(rec_start)
    # every record takes at least one byte: a larger count cannot be walked (and must not size
    # the arrays below)
    over = counts > rec_end - rec_start
    if over.any():
        raise _Declined(int(np.argmax(over)))
    total = int(counts.sum())
    before = np.zeros(nb, dtype=np.int64)
    np.cumsum(counts[:-1], out=before[1:])
    out_start = np.empty(total, dtype=np.int64)
    out_len = np.empty(total, dtype=np.int64)
    # the walking batches, compact: index, position, end, next output row, records left
    idx = np.nonzero(counts > 0)[0]
    ps = rec_start[idx].astype(np.int64)
    es = rec_end[idx].astype(np.int64)
    at = before[idx]
    left = counts[idx].astype(np.int64)
    if len(idx) >= _LOCKSTEP_MIN:
        w = np.frombuffer(buf, dtype=np.uint8)
        while len(idx) >= _LOCKSTEP_MIN:
            # the column varint reader; a prefix cut by the buffer's end reads past it, so its
            # record ends past its batch and is declined below, as the batch-by-batch walk does
            bad = ps >= es
            length, body = _varint(w, ps, 3, bad)
            ps = body + length
            bad |= (length < 0) | (ps > es)
            if bad.any():
                raise _Declined(int(idx[np.argmax(bad)]))
            out_start[at] = body
            out_len[at] = length
            at = at + 1
            left -= 1
            finished = left == 0
            if finished.any():
                wrong = finished & (ps != es)
                if wrong.any():
                    raise _Declined(int(idx[np.argmax(wrong)]))
                keep = ~finished
                idx, ps, es, at, left = idx[keep], ps[keep], es[keep], at[keep], left[keep]
    # the few batches left, each from where it stands
    for b, p, e, k, c in zip(idx.tolist(), ps.tolist(), es.tolist(), at.tolist(), left.tolist()):
        try:
            for _ in range(c):
                if p >= e:
                    raise _Declined(b)
                x = buf[p]
                if x < 0x80:
                    p += 1
                else:
                    y = buf[p + 1]
                    if y < 0x80:
                        x = (x & 0x7F) | (y << 7)
                        p += 2
                    else:
                        z = buf[p + 2]
                        if z >= 0x80:
                            raise _Declined(b)
                        x = (x & 0x7F) | ((y & 0x7F) << 7) | (z << 14)
                        p += 3
                length = (x >> 1) ^ -(x & 1)
                if length < 0 or p + length > e:
                    raise _Declined(b)
                out_start[k] = p
                out_len[k] = length
                k += 1
                p += length
        except IndexError:   # the buffer ends inside a length prefix
            raise _Declined(b) from None
        if p != e:
            raise _Declined(b)
    return out_start, out_start + out_len


def _varint(w: np.ndarray, pos: np.ndarray, max_bytes: int,
            bad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints at ``pos`` (ByteUtils.readVarint/readVarlong); longer than
    ``max_bytes`` marks the record in ``bad`` (declined). One- and two-byte varints (nearly
    all) through the table of their first two bytes, longer ones byte by byte. Reads past the
    buffer's end are clamped inside it: such a record ends past its end, which marks it too."""
    if len(w) < 2:
        return _varint_bytewise(w, pos, max_bytes, bad)
    pairs = np.ndarray(shape=(len(w) - 1,), dtype=_PAIR, buffer=w, strides=(1,))
    edge = pos >= len(pairs)   # the buffer's last byte (or past it): read byte by byte
    code = _PREFIX[pairs[np.minimum(pos, len(pairs) - 1)]]
    size = code & 3
    value = code >> 2
    long = (size == 3) | edge
    if long.any():
        sub_bad = np.zeros(int(np.count_nonzero(long)), dtype=bool)
        value[long], ends = _varint_bytewise(w, pos[long], max_bytes, sub_bad)
        size[long] = ends - pos[long]
        bad[long] |= sub_bad
    return value, pos + size


def _varint_bytewise(w: np.ndarray, pos: np.ndarray, max_bytes: int,
                     bad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_varint` one byte at a time, for any length up to ``max_bytes``."""
    last = len(w) - 1
    b = w[np.minimum(pos, last)].astype(np.uint64)
    value = b & np.uint64(0x7F)
    cont = b >= 0x80
    size = np.ones(len(pos), dtype=np.int64)
    k = 1
    while cont.any():
        idx = np.nonzero(cont)[0]
        if k >= max_bytes:
            bad[idx] = True
            cont[idx] = False
            break
        b = w[np.minimum(pos[idx] + k, last)].astype(np.uint64)
        value[idx] |= (b & np.uint64(0x7F)) << np.uint64(7 * k)
        size[idx] += 1
        cont[idx] = b >= 0x80
        k += 1
    signed = (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)
    return signed, pos + size


def increment_sequences(base: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """DefaultRecordBatch.incrementSequence per row (wraps from Int.MAX to 0); -1 without a
    base sequence, as segtools.records.record.increment_sequence (deltas here are >= 0)."""
    wrapped = np.where(base > _INT32_MAX - delta, delta - (_INT32_MAX - base) - 1, base + delta)
    return np.where(base >= 0, wrapped, -1)


def _bitmap(valid: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def _nullable(values: pa.Array, valid: np.ndarray) -> pa.Array:
    """``values`` (offset 0, no nulls) with the rows where ``valid`` is False null."""
    if valid.all():
        return values
    return pa.Array.from_buffers(values.type, len(values), [_bitmap(valid), *values.buffers()[1:]],
                                 null_count=int(len(valid) - np.count_nonzero(valid)))


#: up to this many ranges :func:`_slices` joins them in Python (~0.1 us each) instead of
#: Arrow's take
_JOIN_MAX_ROWS = 256


def _slices(buf: Any, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """The byte ranges ``[start, start + length)`` (in increasing, non-overlapping order) as a
    binary array: one zero-copy array over the buffer whose odd elements are the gaps, then
    the even elements taken out."""
    n = len(start)
    if n == 0:
        return pa.Array.from_buffers(pa.binary(), 0, [None, pa.py_buffer(np.zeros(1, np.int32)),
                                                       pa.py_buffer(b"")])
    if n <= _JOIN_MAX_ROWS:
        # joined here: Array.take imports pyarrow.compute (~45 ms of each export worker's start,
        # where a broker of small partitions decodes a few rows per call)
        view = memoryview(buf).cast("B")
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(length, out=offsets[1:])
        data = b"".join([view[s:s + k] for s, k in zip(start.tolist(), length.tolist())])
        return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    cuts = np.empty(2 * n, dtype=np.int32)
    cuts[0::2] = start
    cuts[1::2] = start + length
    spans = pa.Array.from_buffers(pa.binary(), 2 * n - 1,
                                  [None, pa.py_buffer(cuts), pa.py_buffer(buf)])
    evens = np.arange(0, 2 * n - 1, 2, dtype=np.int64)
    return spans.take(pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(evens)]))


def _first_bad_key_batch(buf: Any, bidx: np.ndarray, hc: np.ndarray, hs: np.ndarray,
                         hl: np.ndarray) -> int:
    """The batch of the first record with a header key that is not UTF-8."""
    mv = memoryview(buf)
    owner = np.repeat(np.arange(len(hc)), hc)
    for h, (s, n) in enumerate(zip(hs.tolist(), hl.tolist())):
        try:
            bytes(mv[s:s + n]).decode("utf-8")
        except UnicodeDecodeError:
            return int(bidx[owner[h]])
    raise AssertionError("Arrow rejected header keys that Python decodes")


def _empty() -> _RowChunk:
    z64 = np.zeros(0, np.int64)
    return _RowChunk(z64, z64, np.zeros(0, np.int32), np.zeros(0, np.int32),
                     pa.array([], pa.binary()), pa.array([], pa.binary()),
                     pa.array([], HEADER_TYPE))


# ---------------------------------------------------------------- the engine of read_records

def decode_vectorised(mf: _SegmentFile, h: _Headers, parts: list[_Part],
                      payloads: dict[int, bytes]) -> _RowChunk:
    """The rows of the batches of ``parts`` (ranges of indexes into ``h``), as the other
    engines give them: plain batches are read in the window, compressed ones from
    ``payloads``; a declined batch is decoded by the Python decoder (its rows, or the error
    every engine raises), and the run goes on after it."""
    idx = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b, *_ in parts])
    if payloads and any(i in payloads for i in idx.tolist()):
        mv = mf.view
        pieces: list[Any] = []
        for i, p, size in zip(idx.tolist(), h.position[idx].tolist(),
                              h.batch_length[idx].tolist()):
            data: Any = payloads.get(i)
            if data is None:
                rel = p - h.base
                data = mv[rel + RECORD_BATCH_OVERHEAD:rel + 12 + size]
            pieces.append(data)
        ends = np.cumsum([len(x) for x in pieces], dtype=np.int64)
        buf: Any = b"".join(pieces)
        starts = ends - np.array([len(x) for x in pieces], dtype=np.int64)
    else:
        buf = mf.view[:mf.filled]
        starts = h.position[idx] - h.base + RECORD_BATCH_OVERHEAD
        ends = h.position[idx] - h.base + 12 + h.batch_length[idx]
    log_append = (h.attributes[idx] & TIMESTAMP_TYPE_MASK) != 0
    chunks: list[_RowChunk] = []
    at = 0
    while at < len(idx):
        rows, done = decode_records(buf, starts[at:], ends[at:], h.base_offset[idx[at:]],
                                    h.base_timestamp[idx[at:]], h.max_timestamp[idx[at:]],
                                    log_append[at:], h.base_sequence[idx[at:]],
                                    h.records_count[idx[at:]])
        if done:
            rows.batch = idx[at:][rows.batch].astype(np.int32)
            chunks.append(rows)
            at += done
        if at < len(idx):
            chunks.append(_decode_python(mf, h, idx[at:at + 1], payloads))
            at += 1
    return chunks[0] if len(chunks) == 1 else _concat(chunks)


def _concat(chunks: list[_RowChunk]) -> _RowChunk:
    return _RowChunk(
        np.concatenate([c.offset for c in chunks]),
        np.concatenate([c.timestamp_ms for c in chunks]),
        np.concatenate([c.sequence for c in chunks]).astype(np.int32),
        np.concatenate([c.batch for c in chunks]).astype(np.int32),
        pa.concat_arrays([c.key for c in chunks]),
        pa.concat_arrays([c.value for c in chunks]),
        pa.concat_arrays([c.headers for c in chunks]))
