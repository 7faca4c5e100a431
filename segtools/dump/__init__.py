"""`segtools dump`: kafka-dump-log's output, plus JSON, directories and exit codes.

Library use::

    from segtools.dump import DumpOptions, run_dump
    status = run_dump(["/var/lib/kafka/orders-0"], DumpOptions(deep_iteration=True))

Modules: ``runner`` (paths -> dispatch -> summaries -> exit status), ``context`` (the
``DumpContext`` every dumper gets), ``paths`` (directory expansion and file kinds), ``log_dump``
(.log/.checkpoint), ``index_dump`` (.index, .txnindex, index helpers), ``time_index_dump``
(.timeindex), ``state_dump`` (producer .snapshot and text state files), ``text`` (Kafka's exact
line templates), ``sinks``/``json_out`` (text, json, ndjson output), ``parsers`` (key/payload
decoders), ``control`` (control-record wording), ``options``. Java's UTF-8 replacement rules are
``segtools.primitives.java_utf8`` (the payload decoders in ``segtools.internal_topics`` share them).
Heavy libraries (pyspark, pandas, numba) are never imported here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DumpOptions", "run_dump"]


def __getattr__(name: str) -> Any:
    # lazy, so `import segtools.dump.text` does not pull in the runner
    if name == "DumpOptions":
        from segtools.dump.options import DumpOptions
        return DumpOptions
    if name == "run_dump":
        from segtools.dump.runner import run_dump
        return run_dump
    raise AttributeError(f"module 'segtools.dump' has no attribute {name!r}")
