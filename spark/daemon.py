"""Spark's Python worker daemon with segtools already loaded.

Spark forks every Python worker from one daemon process; with this module as
``spark.python.daemon.module`` the daemon imports the reader and compiles (or loads from
numba's cache) its kernel once, so a new worker starts with them instead of paying the
import and the kernel set-up (seconds per worker on a loaded machine) again."""

from __future__ import annotations


def _preload() -> None:
    try:
        from segtools.records.columnar import engines

        engines._pick_engine("auto")
        import segtools.forensics.pipeline  # noqa: F401 - the compare stages
    except Exception:  # noqa: BLE001 - a worker then loads what it needs itself, as without us
        pass


if __name__ == "__main__":
    _preload()
    from pyspark import daemon

    daemon.manager()
