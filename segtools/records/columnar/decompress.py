"""Decompression of compressed batches, in groups on a worker pool where cores allow."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from segtools.errors import (
    CorruptBatchError,
    FormatError,
    SegtoolsError,
)
from segtools.formats.record_batch import (
    COMPRESSION_CODEC_MASK,
)
from segtools.primitives import codecs as _codecs
from segtools.records.columnar.arrow_columns import _COMPRESSION_NAMES
from segtools.records.columnar.headers import _Headers
from segtools.records.columnar.window import _SegmentFile
from segtools.records.faults import (
    RECORD_BATCH_OVERHEAD,
)
from segtools.records.v2_decoder import check_v2_batch


def _decompress(mf: _SegmentFile, h: _Headers, i: int, max_uncompressed: int) -> bytes:
    return _decompress_task(*_compressed_payload(mf, h, i), max_uncompressed)


def _compressed_payload(mf: _SegmentFile, h: _Headers, i: int) -> tuple[memoryview, int, str, int, int, int]:
    """The compressed records section of batch ``i``, with what errors need.

    A view into the read window, not a copy (the copy cost as much CPU as lz4 itself): the
    window of ``h`` stays current until every batch of ``h`` is consumed (the next window is
    read into the other buffer), and a task still running after the reader is abandoned only
    reads bytes its memoryview keeps alive, whose result nobody takes."""
    pos = int(h.position[i])
    rel = pos - h.base
    data = mf.view[rel + RECORD_BATCH_OVERHEAD:rel + 12 + int(h.batch_length[i])]
    return (data, int(h.attributes[i]) & COMPRESSION_CODEC_MASK, mf.path, pos, int(h.base_offset[i]),
            int(h.records_count[i]))


def _decompress_task(data: bytes | memoryview, codec: int, path: str, pos: int, base_offset: int,
                     count: int, max_uncompressed: int) -> bytes:
    check_v2_batch(path=path, position=pos, base_offset=base_offset,
                   size=RECORD_BATCH_OVERHEAD + len(data), count=count, codec=codec,
                   limit=max_uncompressed)
    try:
        return _codecs.decompress(codec, data, magic=2, max_size=max_uncompressed)
    except FormatError as exc:  # located where the compressed records start, as batches.py
        raise exc.located(path=path, position=pos + RECORD_BATCH_OVERHEAD,
                          base_offset=base_offset) from None
    except SegtoolsError:
        raise
    except Exception as exc:  # noqa: BLE001 - a codec library's own error on hostile bytes
        raise CorruptBatchError(f"cannot decompress {_COMPRESSION_NAMES[codec]} records: {exc}",
                                path=path, position=pos + RECORD_BATCH_OVERHEAD,
                                base_offset=base_offset,
                                field="records") from exc


#: Compressed batches are decompressed ahead of the decoder on worker threads, in groups of
#: ``_GROUP`` batches (one hand-off per batch cost more than it saved), at most
#: ``_GROUPS_AHEAD`` groups in flight. The codecs release the GIL, so with a spare core
#: decompression overlaps record decoding; the bound keeps a run of bombs to at most
#: ``_GROUP * _GROUPS_AHEAD`` payloads of at most ``max_uncompressed`` bytes each.
_GROUP = 8
_GROUPS_AHEAD = 4
_POOL: Any = None
_POOL_PID = 0


def _decompress_pool() -> Any:
    """The worker pool, or None on a single core. A pool inherited through fork() has no
    threads in the child (Spark forks its Python workers), so each process makes its own."""
    global _POOL, _POOL_PID
    workers = min(4, os.cpu_count() or 1)
    if workers < 2:
        return None
    if _POOL is None or _POOL_PID != os.getpid():
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="segtools-decompress")
        _POOL_PID = os.getpid()
    return _POOL


def _decompress_group(tasks: list[tuple[memoryview, int, str, int, int, int]],
                      max_uncompressed: int) -> list[bytes | SegtoolsError]:
    """Payloads, or the error in place of one, so the caller raises it in batch order (after
    yielding the good batches before it) and later batches are not decompressed in vain."""
    out: list[bytes | SegtoolsError] = []
    for task in tasks:
        try:
            out.append(_decompress_task(*task, max_uncompressed))
        except SegtoolsError as exc:
            # without its traceback: it would tie this frame (and ``out``) into a cycle that
            # keeps every payload alive until the cyclic GC runs
            out.append(exc.with_traceback(None))
            break
    return out


def _decompressed_run(mf: _SegmentFile, h: _Headers, s: int, e: int,
                      max_uncompressed: int) -> Iterator[tuple[int, bytes]]:
    """``(i, payload)`` for the compressed batches ``s..e-1``, in order."""
    pool = _decompress_pool() if e - s > _GROUP else None
    if pool is None:
        for i in range(s, e):
            yield i, _decompress(mf, h, i, max_uncompressed)
        return
    from collections import deque

    pending: deque[tuple[int, list[Any], Any]] = deque()
    nxt = s
    try:
        while nxt < e or pending:
            while nxt < e and len(pending) < _GROUPS_AHEAD:
                stop = min(e, nxt + _GROUP)
                tasks = [_compressed_payload(mf, h, i) for i in range(nxt, stop)]
                pending.append((nxt, tasks, pool.submit(_decompress_group, tasks,
                                                        max_uncompressed)))
                nxt = stop
            first, tasks, future = pending.popleft()
            # a group no worker has started yet (the cores are busy elsewhere) is decompressed
            # here rather than waited for
            results = (_decompress_group(tasks, max_uncompressed)
                       if not future.done() and future.cancel() else future.result())
            for k, payload in enumerate(results):
                if isinstance(payload, SegtoolsError):
                    raise payload
                yield first + k, payload
    finally:  # abandoned or failed: drop what is queued, let running tasks finish
        for _, _, future in pending:
            future.cancel()
