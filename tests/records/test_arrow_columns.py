"""records/columnar/arrow_columns.numpy_values: an Arrow column's values as numpy without
``Array.to_numpy`` (which imports pandas). The expected values are the column's own
``to_pylist()``, Arrow's Python conversion."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from segtools.records.columnar.arrow_columns import numpy_values

VALUES = {
    pa.int8(): [-128, 0, 5, 127, -1, 3, 9],
    pa.int16(): [-32768, 1, 32767, 0, 7, -7, 2],
    pa.int32(): [-(2 ** 31), 2 ** 31 - 1, 0, 1, -1, 12, 13],
    pa.int64(): [-(2 ** 63), 2 ** 63 - 1, 0, 10 ** 12, -5, 6, 7],
    pa.bool_(): [True, False, False, True, True, False, True, True, False, True, False],
}


@pytest.mark.parametrize("typ", list(VALUES), ids=str)
@pytest.mark.parametrize("start,stop", [(0, None), (1, None), (3, 6), (2, 2)])
def test_the_values_of_a_column_and_of_its_slices(typ, start, stop):
    """Slices keep their offset into the parent's buffer (and bits past a byte for booleans)."""
    col = pa.array(VALUES[typ], typ)[start:stop]
    got = numpy_values(col)
    assert got.tolist() == col.to_pylist()
    assert got.dtype == (np.bool_ if typ == pa.bool_() else np.dtype(typ.to_pandas_dtype()))


def test_timestamps_are_their_counts():
    col = pa.array([0, 1_700_000_000_000_000, -5], pa.timestamp("us", tz="UTC"))[1:]
    assert numpy_values(col).tolist() == col.cast(pa.int64()).to_pylist()


def test_a_column_with_nulls_goes_through_arrow():
    """Nulls have no value in the buffer: Arrow's own conversion (floats with NaN) is kept."""
    got = numpy_values(pa.array([1, None, 3], pa.int64()))
    assert got[0] == 1 and np.isnan(got[1]) and got[2] == 3


def test_no_pandas_is_imported():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import pyarrow as pa
        from segtools.records.columnar.arrow_columns import _np_arrow, bool_array, numpy_values
        # built from buffers: pa.array on Python or numpy input imports pandas itself
        for typ in (pa.int8(), pa.int32(), pa.int64()):
            assert numpy_values(_np_arrow(np.array([1, 0, 1]), typ)[1:]).tolist() == [0, 1]
        assert numpy_values(bool_array(np.array([True, False, True]))[1:]).tolist() == [False, True]
        print("pandas" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"}, check=True)
    assert out.stdout.strip() == "False"
