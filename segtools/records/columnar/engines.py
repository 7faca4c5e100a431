"""Which record decoder runs: the numba kernels when they import and decode FORMATS.md's worked
example right, the Python decoder otherwise."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from segtools.errors import (
    InputError,
)
from segtools.records.columnar.headers import _done, _finish_chunk, _scan_chunk
from segtools.records.columnar.rows import _decode_kernel


def available_engines() -> list[str]:
    """Engines usable here: always "python", plus "numba" when numba imports."""
    return (["numba"] if _load_kernel() is not None else []) + ["python"]


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
    """The kernel module for "numba"/"auto", None for "python"."""
    if engine == "python":
        return None
    if engine not in ("auto", "numba"):
        raise InputError(f"unknown engine {engine!r}: use 'auto', 'numba' or 'python'")
    kernel = _load_kernel()
    if kernel is None and engine == "numba":
        raise InputError("engine 'numba' requested but numba is not importable; use engine='python'")
    return kernel
