"""`segtools dump`: a drop-in for kafka-dump-log.sh (Kafka's flags, Kafka's exact text) plus
--output json|ndjson, positional paths, partition and broker log directories, and diff-style
exit codes (0 clean, 1 findings, 2 unusable input or usage)."""

from __future__ import annotations

import os
import sys

import click

from segtools.cli.errors import handle_errors
from segtools.cli.options import max_batch_bytes_option
from segtools.dump.options import (
    DEFAULT_KAFKA_VERSION,
    KAFKA_VERSIONS,
    MAX_BYTES_DEFAULT,
    MAX_MESSAGE_SIZE_DEFAULT,
    DumpOptions,
    kafka_release,
)

_STRING_DECODER = "org.apache.kafka.tools.api.StringDecoder"


def _files(value: str | None) -> list[str]:
    # Kafka: String.split(","), no trimming; Java drops trailing empty strings
    if not value:
        return []
    parts = value.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _kafka_version(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return kafka_release(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--files", "files", metavar="file1,file2,...",
              help="Comma-separated list of data and index files to dump (Kafka's flag); "
                   "positional paths work too.")
@click.option("--print-data-log", is_flag=True,
              help="Print the key and payload of each record (implies --deep-iteration).")
@click.option("--deep-iteration", is_flag=True,
              help="Print every record of each batch, decompressing as needed.")
@click.option("--skip-record-metadata", is_flag=True,
              help="With deep iteration, omit per-record metadata.")
@click.option("--verify-index-only", is_flag=True,
              help="Check .index/.timeindex entries against the log without printing them.")
@click.option("--index-sanity-check", is_flag=True,
              help="Only run the broker start-up sanity check on .index/.timeindex files.")
@click.option("--max-message-size", type=int, default=MAX_MESSAGE_SIZE_DEFAULT, show_default=True,
              help="Bytes of log read at each .index position.")
@click.option("--max-bytes", type=int, default=MAX_BYTES_DEFAULT, show_default=True,
              help="Only read batches entirely within the first N bytes of a .log/.checkpoint.")
@click.option("--key-decoder-class", is_flag=False, flag_value=_STRING_DECODER, default=None,
              metavar="[module:callable]",
              help="Key decoder: module:callable (bytes -> str) or a Kafka decoder class name. "
                   "Implies --print-data-log.")
@click.option("--value-decoder-class", is_flag=False, flag_value=_STRING_DECODER, default=None,
              metavar="[module:callable]",
              help="Value decoder, as --key-decoder-class. Implies --print-data-log.")
@click.option("--offsets-decoder", is_flag=True,
              help="Decode records as __consumer_offsets data (JSON).")
@click.option("--transaction-log-decoder", is_flag=True,
              help="Decode records as __transaction_state data.")
@click.option("--cluster-metadata-decoder", is_flag=True,
              help="Decode record values as KRaft metadata records (JSON).")
@click.option("--remote-log-metadata-decoder", is_flag=True,
              help="Decode record values as __remote_log_metadata (tiered storage) records.")
@click.option("--share-group-state-decoder", is_flag=True,
              help="Decode records as __share_group_state data (JSON).")
@max_batch_bytes_option("A batch above it stops that file with exit 2. ")
@click.option("--output", "output", type=click.Choice(["text", "json", "ndjson"]),
              default="text", show_default=True,
              help="text: kafka-dump-log's exact lines; json: one document per file; "
                   "ndjson: one object per batch, record, entry or finding.")
@click.option("--kafka-version", "kafka_version", default=DEFAULT_KAFKA_VERSION,
              show_default=True, callback=_kafka_version, metavar="VERSION",
              help="Whose kafka-dump-log text to print: a Kafka release line "
                   f"({', '.join(KAFKA_VERSIONS)}) or a full release such as 4.3.1; 3.9 is "
                   "the Scala tool of Kafka 3.x; docs/DUMP_LOG.md lists the differences.")
@click.option("--skip-corrupt", is_flag=True,
              help="Print past corrupt byte ranges of a .log (one 'Skipped N corrupt bytes' line "
                   "each) instead of stopping at the first, as segtools salvage reads it.")
@click.option("--where", "where", multiple=True, metavar="EXPR",
              help="Print only batches and records matching EXPR (repeatable, all must hold), e.g. "
                   "'offset>=100', 'key^=order-', 'producer_id=4001': docs/CONTRACT.md section 9.")
@click.option("-q", "--quiet", is_flag=True, help="No progress display on stderr.")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(package_name="segtools", message="segtools %(version)s")
@handle_errors
def dump(paths: tuple[str, ...], files: str | None, print_data_log: bool, deep_iteration: bool,
         skip_record_metadata: bool, verify_index_only: bool, index_sanity_check: bool,
         max_message_size: int, max_bytes: int, key_decoder_class: str | None,
         value_decoder_class: str | None, offsets_decoder: bool, transaction_log_decoder: bool,
         cluster_metadata_decoder: bool, output: str, quiet: bool, debug: bool,
         max_batch_bytes: int | None = None,
         kafka_version: str = DEFAULT_KAFKA_VERSION, skip_corrupt: bool = False,
         where: tuple[str, ...] = (),
         remote_log_metadata_decoder: bool = False,
         share_group_state_decoder: bool = False) -> None:
    """Dump Kafka log segments, indexes, snapshots and checkpoints like kafka-dump-log.

    PATHS may be files, partition directories or broker log directories (every file in
    them is dumped, ordered by topic, partition, base offset and file kind).

    Exit status: 0 nothing wrong, 1 corrupt or inconsistent data found, 2 unusable input
    or usage error.
    """
    all_paths = _files(files) + list(paths)
    if not all_paths:
        raise click.UsageError('Missing required argument "[files]" (use --files or give paths)')
    if max_bytes < 0 or max_message_size < 0:
        raise click.UsageError("--max-bytes and --max-message-size must not be negative")
    options = DumpOptions(
        print_data_log=print_data_log,
        deep_iteration=deep_iteration,
        skip_record_metadata=skip_record_metadata,
        verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check,
        max_message_size=max_message_size,
        max_bytes=max_bytes,
        key_decoder_class=key_decoder_class,
        value_decoder_class=value_decoder_class,
        key_decoder_given=key_decoder_class is not None,
        value_decoder_given=value_decoder_class is not None,
        offsets_decoder=offsets_decoder,
        transaction_log_decoder=transaction_log_decoder,
        cluster_metadata_decoder=cluster_metadata_decoder,
        output=output,
        quiet=quiet,
        debug=debug,
        summary=True,
        max_batch_bytes=max_batch_bytes,
        kafka_version=kafka_version,
        skip_corrupt=skip_corrupt,
        where=where,
        where_producer_ids=_where_producers(all_paths, where),
        remote_log_metadata_decoder=remote_log_metadata_decoder,
        share_group_state_decoder=share_group_state_decoder,
    )
    from segtools.dump.runner import run_dump

    # Java's PrintStream writes '?' for characters the terminal charset cannot encode; a
    # non-UTF-8 locale must not turn a payload into a UnicodeEncodeError
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # pragma: no cover - exotic streams
                pass
    from segtools.files.remote import RewritingStream, mirror_inputs

    try:
        # s3://, gs://, hdfs:// inputs: their Kafka files are copied to a temporary tree and
        # dumped from there; the paths printed are the URIs
        with mirror_inputs(all_paths) as mirror:
            out, err = sys.stdout, sys.stderr
            if mirror.active:
                out, err = RewritingStream(out, mirror), RewritingStream(err, mirror)
            status = run_dump(mirror.paths, options, out=out, err=err)
            sys.stdout.flush()
    except BrokenPipeError:
        # the reader went away (`segtools dump ... | head`): stop quietly with exit 0, as
        # `cat` does under SIGPIPE; the input was fine, and no second error when Python
        # flushes stdout at exit
        _silence_stdout()
        sys.exit(0)
    if status:
        sys.exit(status)


def _where_producers(paths: list[str], where: tuple[str, ...]) -> tuple[int, ...] | None:
    """Check --where before dumping (exit 2) and look up transactional ids once."""
    if not where:
        return None
    from segtools.filters import parse_where, transaction_producer_ids

    flt = parse_where(where)
    if not flt.of("transactional_id"):
        return None
    return tuple(sorted(transaction_producer_ids(paths, flt)))


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (e.g. CliRunner)
        pass
