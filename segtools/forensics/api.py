"""``segtools.compare()``: compare the log dirs of several brokers from Python.

    import segtools
    report = segtools.compare(["broker-1", "broker-2", "broker-3"])
    report.answer()             # "lost", "safe" (proven) or "cannot_tell" (docs/REPORT.md)
    report.exit_code            # 0 only when safe, 1 findings or cannot tell (CONTRACT.md 4)
    report.report_json()        # what `segtools compare --report` writes (docs/REPORT.md)

`segtools compare` is a thin layer over this function (argument parsing, printing, exit
codes). Inputs are only read; nothing is written unless ``tables_dir`` is given.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from segtools.errors import InputError, SegtoolsError, display_path, is_utf8

if TYPE_CHECKING:
    from segtools.forensics.loss import AckIndex
    from segtools.forensics.report import CompareReport

#: Inputs up to this many bytes of segments run in this process under ``engine="auto"``;
#: larger ones on Spark. See benchmarks/README.md (compare) for the measurements behind it.
IN_PROCESS_MAX_BYTES = 6 << 30

Engine = Literal["local", "spark", "auto"]
PathArg = str | os.PathLike[str]


def default_metadata_log(dirs: Sequence[PathArg]) -> str | None:
    """The controller's ``__cluster_metadata-0`` of the first given folder of broker dirs that
    has one (what `segtools simulate` writes with ``metadata_log: true``); a given
    ``DIR/broker-<id>`` dir stands for its folder ``DIR``."""
    from segtools.files.sources import resolve

    folders = []
    for d in dirs:
        d = os.path.normpath(os.fspath(d))
        folders.append(os.path.dirname(d) if re.fullmatch(r"broker-\d+", os.path.basename(d)) else d)
    for d in dict.fromkeys(folders):
        try:
            found = resolve([d or "."], errors="collect", check_copies=False, list_brokers=False)
        except SegtoolsError:
            continue
        if found.inputs[0].kind == "cluster" and found.metadata_logs:
            return found.metadata_logs[0].partition_dir
    return None


@contextlib.contextmanager
def _batch_limit(max_batch_bytes: int | None) -> Iterator[None]:
    """Every reader of the run (here, and Spark's local Python workers, which inherit the
    environment) takes the limit from the environment; restored afterwards."""
    from segtools.primitives.limits import MAX_BATCH_BYTES_ENV

    if max_batch_bytes is None:
        yield
        return
    previous = os.environ.get(MAX_BATCH_BYTES_ENV)
    os.environ[MAX_BATCH_BYTES_ENV] = str(max_batch_bytes)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(MAX_BATCH_BYTES_ENV, None)
        else:
            os.environ[MAX_BATCH_BYTES_ENV] = previous


def compare(paths: PathArg | Sequence[PathArg], *, engine: Engine = "local",
            acks: PathArg | AckIndex | None = None, metadata_log: PathArg | None = None,
            find_metadata_log: bool = True, master: str | None = None, spark: Any = None,
            tables_dir: PathArg | None = None, max_batch_bytes: int | None = None, strict: bool = False,
            progress: bool | None = None, on_note: Callable[[str], None] | None = None,
            in_process_max_bytes: int = IN_PROCESS_MAX_BYTES,
            spark_specs: Callable[[list[Any]], list[Any]] | None = None) -> CompareReport:
    """Compare the replicas under ``paths`` (one log dir per broker, or a folder of
    ``broker-*`` dirs) and return the report.

    ``engine``: ``"local"`` (this process), ``"spark"`` (``spark`` if given, else the active
    session, else a new one on ``master``, default ``local[*]``) or ``"auto"`` (local up to
    ``in_process_max_bytes`` (6 GiB) of segments, Spark above or with ``master``/``tables_dir``).
    ``acks``: acks.jsonl path or an ``AckIndex``. ``metadata_log``: the KRaft
    ``__cluster_metadata-0`` (or a dir holding it); without it, ``find_metadata_log`` looks for
    the controller's log next to the broker dirs. ``max_batch_bytes``: largest batch read.
    ``strict``: refuse log dirs of different clusters. ``progress``: a status line on stderr
    (default: when stderr is a terminal). ``on_note``: receives one-line notes (warnings,
    Spark's UI address) as they happen. ``spark_specs``: maps the discovered replicas to the
    paths Spark's executors read (the CLI gives executors the object-store URIs of inputs it
    copied locally).

    Raises ``InputError`` (and other ``SegtoolsError``) for unusable input."""
    from segtools.files.sources import resolve
    from segtools.forensics.collect import discover_replicas
    from segtools.forensics.elections import load_histories
    from segtools.forensics.inputs import check_inputs, unique_inputs
    from segtools.forensics.loss import AckIndex
    from segtools.forensics.progress import Progress

    note = on_note or (lambda _text: None)
    if engine not in ("local", "spark", "auto"):
        raise ValueError(f"engine must be 'local', 'spark' or 'auto', not {engine!r}")
    if engine == "local" and (master or tables_dir or spark is not None):
        raise InputError(f"{'master' if master else 'tables_dir' if tables_dir else 'spark'} needs the Spark engine")
    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    with _batch_limit(max_batch_bytes):
        # the resolver alone decides what repeats (links out of the input, nested
        # duplicates, copies); its warnings say so
        resolution = resolve(given)
        dirs, _ = unique_inputs(given, resolution)
        warnings = [w.message for w in resolution.messages]
        ack_index = acks if isinstance(acks, AckIndex) or acks is None else AckIndex.load(os.fspath(acks))
        histories = load_histories(metadata_log) if metadata_log is not None else None
        auto_log = default_metadata_log(dirs) if metadata_log is None and find_metadata_log else None
        if auto_log:
            # found, not asked for: a log that cannot be replayed only costs the causes
            try:
                histories = load_histories(auto_log)
                note(f"using the controller's metadata log {auto_log}")
            except SegtoolsError as exc:
                note(f"ignoring the controller's metadata log: {exc}")
        specs = discover_replicas(dirs, resolution, warnings=warnings)
        from segtools.tier.compare_section import METADATA_TOPIC

        tiered = any(p.topic == METADATA_TOPIC for p in resolution.partitions)   # something was tiered
        # the listing held a path per segment (~270 bytes each): the specs hold what is read
        del resolution
        check = check_inputs(dirs, specs)
        warnings += check.warnings
        for w in warnings:
            note(f"warning: {w}")
        if strict and check.cluster_conflict:
            raise InputError(f"{check.cluster_conflict} (--strict)")
        total = sum(size for s in specs for _p, size in s.segments)
        use_spark = engine == "spark" or (engine == "auto" and bool(
            master or tables_dir or spark is not None or total > in_process_max_bytes))
        show = Progress.for_terminal() if progress is None else (Progress() if progress else None)
        if use_spark:
            odd = next((s.partition_dir for s in specs if not is_utf8(s.partition_dir)), None)
            if odd is not None:
                # Spark reads through pyarrow filesystems, which take UTF-8 paths only
                raise InputError(f"{display_path(odd)}: a path that is not UTF-8 cannot be read on Spark; "
                                 "run compare with --no-spark (or rename a copy of the evidence)")
            why = ("--spark" if engine == "spark" else "--master" if master else "--tables" if tables_dir
                   else "a Spark session was given" if spark is not None
                   else f"above the {in_process_max_bytes / 2**30:g} GiB in-process threshold")
            from segtools.spark.compare_job import run_specs

            session = spark if spark is not None else _session(master, total, why, note)
            executor_specs = spark_specs(specs) if spark_specs else specs
            report = run_specs(session, executor_specs, acks=ack_index, histories=histories,
                               tables_dir=None if tables_dir is None else os.fspath(tables_dir), progress=show)
            runner = "spark"
        else:
            from segtools.forensics.pipeline import LocalRunner

            report = LocalRunner().run(specs, acks=ack_index, histories=histories, progress=show)
            runner = "in-process"
    if histories is not None:
        from segtools.forensics.shutdowns import unclean_stops_from_log_dirs

        # the metadata log's events, then the unclean stops only the log dirs show (after
        # them: they describe the end of the log, and have no metadata offset)
        report.broker_events = [*getattr(histories, "brokers", []), *unclean_stops_from_log_dirs(report.partitions)]
    report.attach_replicas(specs)
    from segtools.tier.compare_section import tier_section

    if tiered:
        report.tier = tier_section(given, histories)
    if histories is not None:
        # a partition of a compared topic that the metadata log knows and no given dir holds:
        # its answer is cannot tell, not silence
        report.note_unseen_partitions(histories)
    report.describe(inputs=check.to_json(), warnings=warnings, runner=runner, legend=check.legend_lines())
    return report


def _session(master: str | None, total: int, why: str, note: Callable[[str], None]) -> Any:
    """The active Spark session (spark-submit, a notebook, a test), else a new one; says which
    and where its UI is (one line, before the JVM's ~20 s start)."""
    from segtools.spark import session

    session.require_pyspark()
    if "SPARK_SUBMIT" not in os.environ and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        session.check_java()          # before the line below: no usable Java is one line
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        note(f"running on the active Spark session ({why}); Spark UI "
             f"{active.sparkContext.uiWebUrl or 'disabled'}")
        return active
    port = _free_port()
    host = "localhost" if (master or "local").startswith("local") else _hostname()
    note(f"starting Spark ({master or 'local[*]'}) for {total / 2**20:.1f} MiB of segments "
         f"({why}); Spark UI http://{host}:{port}")
    spark = session.get_spark(master=master, app_name="segtools-compare", config={"spark.ui.port": str(port)})
    ui = spark.sparkContext.uiWebUrl
    if ui and not ui.rstrip("/").endswith(f":{port}"):
        note(f"Spark UI moved to {ui}")      # the port was taken meanwhile
    return spark


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _hostname() -> str:
    import socket

    return socket.gethostname()
