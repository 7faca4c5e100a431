"""Which record decoder runs, behind one interface (:data:`RecordDecoder`): the numba kernels
when they import and decode FORMATS.md's worked example right, the Python decoder otherwise,
or the vectorised decoder when asked for (dump's deep-iteration text runs on it)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from segtools.errors import (
    InputError,
)
from segtools.records.columnar.headers import _done, _finish_chunk, _Headers, _scan_chunk
from segtools.records.columnar.rows import _decode_kernel, _decode_python, _Part, _RowChunk
from segtools.records.columnar.vectorised import decode_vectorised
from segtools.records.columnar.window import _SegmentFile

#: the one decoder interface: the rows of the batches of ``parts`` (ranges of indexes into the
#: headers; a numba part may carry its decompressed payloads' addresses) in file order, with
#: the compressed batches' records in ``payloads`` (batch index -> records) for the engines that
#: decompress batch by batch; a batch that cannot be decoded raises the FormatError every
#: entry point raises for it (tests/records/test_one_reader.py)
RecordDecoder = Callable[[_SegmentFile, _Headers, list[_Part], dict[int, bytes]], _RowChunk]

ENGINES = ("auto", "numba", "vectorised", "python")


def available_engines() -> list[str]:
    """Engines usable here: always "vectorised" and "python", first "numba" when numba imports."""
    return (["numba"] if _load_kernel() is not None else []) + ["vectorised", "python"]


_KERNEL: Any = None
_KERNEL_TRIED = False


#: FORMATS.md 1.9 worked example: one batch, null key, value "a", crc 0x965A94B1
_WORKED_EXAMPLE = bytes.fromhex(
    "0000000000000000000000390000000002965a94b10000000000000000018bcfe568000000018bcfe568"
    "00ffffffffffffffffffffffffffff000000010e00000001026100")


class _InMemory:
    """The attributes of :class:`_SegmentFile` the kernels read, over bytes in memory."""

    def __init__(self, data: bytes) -> None:
        self.path = "<self-test>"
        self.array = np.frombuffer(data, dtype=np.uint8)
        self.view = memoryview(data)
        self.base = 0
        self.filled = self.size = len(data)


def _kernel_works(kernel: Any) -> bool:
    """Compile (or load from cache) every kernel on the spec's worked example and check the
    answer, so a broken numba/llvmlite install means the python engine, not a crash later."""
    sf = _InMemory(_WORKED_EXAMPLE)
    h, _next, _status = _scan_chunk(sf, 0, kernel, 4)  # type: ignore[arg-type]
    _finish_chunk(sf, h, kernel)  # type: ignore[arg-type]
    rc = _decode_kernel(kernel, sf, h, [(0, len(h), None, None, None)])  # type: ignore[arg-type]
    return (len(h) == 1 and bool(_done(h.crc_valid)[0]) and rc.value.to_pylist() == [b"a"]
            and rc.key.to_pylist() == [None] and rc.timestamp_ms.tolist() == [1_700_000_000_000])


def kernel_loaded() -> bool:
    """Whether numba's kernels are already loaded in this process (nothing is loaded here)."""
    return _KERNEL is not None


def _load_kernel() -> Any:
    global _KERNEL, _KERNEL_TRIED
    if not _KERNEL_TRIED:
        _KERNEL_TRIED = True
        _KERNEL = None
        try:
            from segtools.records import jit_kernel

            if _kernel_works(jit_kernel):
                _KERNEL = jit_kernel
            else:  # pragma: no cover - would mean a miscompiled kernel
                warnings.warn("segtools: numba kernel self-test failed; using the python engine",
                              RuntimeWarning, stacklevel=2)
        except ImportError:  # numba missing: the python engine takes over
            pass
        except Exception as exc:  # noqa: BLE001 - numba/llvmlite broken in some other way
            warnings.warn(f"segtools: numba kernel unusable ({type(exc).__name__}: {exc}); "
                          "using the python engine", RuntimeWarning, stacklevel=2)
    return _KERNEL


def _pick_engine(engine: str) -> Any:
    """The kernel module for "numba"/"auto" (header scan, CRCs, many-batch decompression and
    records), None for "python" and "vectorised" (their scan is the Python walk)."""
    if engine in ("python", "vectorised"):
        return None
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}: use one of {', '.join(map(repr, ENGINES))}")
    kernel = _load_kernel()
    if kernel is None and engine == "numba":
        raise InputError("engine 'numba' requested but numba is not importable; use engine='python'")
    return kernel


def _pick_decoder(engine: str, kernel: Any) -> RecordDecoder:
    """The record decoder of ``engine`` (``kernel``: what :func:`_pick_engine` gave for it)."""
    if kernel is not None:
        return lambda mf, h, parts, payloads: _decode_kernel(kernel, mf, h, parts)
    if engine == "vectorised":
        return decode_vectorised
    return _decode_python_parts


def _decode_python_parts(mf: _SegmentFile, h: _Headers, parts: list[_Part],
                         payloads: dict[int, bytes]) -> _RowChunk:
    idx = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b, *_ in parts])
    return _decode_python(mf, h, idx, payloads)
