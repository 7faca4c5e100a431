"""The verb rule of the public API (docs/CONVENTIONS.md section 8): ``read_*`` returns a whole
value, ``iter_*`` yields lazily; the names from before the rule still work and warn."""

from __future__ import annotations

import inspect
import types
from pathlib import Path

import pyarrow as pa
import pytest

import segtools

pytestmark = pytest.mark.fast

SEGMENT = (Path(__file__).resolve().parents[0] / "data" / "realdata" / "kafka-2.0-zk-small"
           / "logdir" / "subhash-0" / "00000000000000000000.log")


def test_read_names_return_whole_values_and_iter_names_generators() -> None:
    assert isinstance(segtools.read_batch_table(str(SEGMENT)), pa.Table)
    assert isinstance(segtools.read_records(str(SEGMENT)), pa.Table)
    for name in ("iter_batches", "iter_record_batches", "iter_batch_batches"):
        assert isinstance(getattr(segtools, name)(str(SEGMENT)), types.GeneratorType), name
    public = [n for n in segtools.__all__ if n.startswith(("read_", "iter_", "scan_"))]
    assert not [n for n in public if n.startswith("scan_")]
    for name in public:
        fn = getattr(segtools, name)
        lazy = inspect.isgeneratorfunction(fn)
        assert lazy == name.startswith("iter_"), name


def test_the_old_names_warn_and_give_the_same_answer() -> None:
    with pytest.warns(DeprecationWarning, match="iter_batches"):
        old = [(b.base_offset, b.crc) for b in segtools.read_batches(str(SEGMENT))]
    assert old == [(b.base_offset, b.crc) for b in segtools.iter_batches(str(SEGMENT))] != []
    with pytest.warns(DeprecationWarning, match="read_batch_table"):
        table = segtools.scan_batches(str(SEGMENT))
    assert table.equals(segtools.read_batch_table(str(SEGMENT)))
    assert "read_batches" not in segtools.__all__ and "scan_batches" not in segtools.__all__
