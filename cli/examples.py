"""Examples and document pointers shown at the end of each command's --help (the group adds
them when it loads a command). Every flag used here is checked against the command's options
and every document named here ships in the repository (tests/cli/test_commands.py)."""

from __future__ import annotations

EXAMPLES: dict[str, str] = {
    "tier": """\
\b
Examples:
  segtools tier broker-1/ broker-2/ broker-3/
  segtools tier broker-*/ --remote /var/lib/kafka/tiered --json > tier.json
  segtools tier broker-*/ --remote s3://bucket/tiered/ --private-key rsm-private.pem
\b
Docs: docs/TIER.md (every finding kind), docs/CONTRACT.md "segtools tier".""",
    "dump": """\
\b
Examples:
  segtools dump /var/lib/kafka/data/orders-0 --deep-iteration --print-data-log
  segtools dump --files 00000000000000000000.index --verify-index-only
  segtools dump /var/lib/kafka/data --output ndjson | jq 'select(.type == "finding")'
\b
Lines starting with "segtools: " on stderr are ours (per-file notes, run summary); the
rest is kafka-dump-log's text. Docs: docs/DUMP_LOG.md (every line Kafka prints),
docs/CONTRACT.md section 2 (flags, JSON fields, exit codes).""",
    "compare": """\
\b
Examples:
  segtools compare broker-1/ broker-2/ broker-3/ --report report.json
  segtools compare cluster/ --acks cluster/acks.jsonl --no-spark --report - | jq .summary.answer
  segtools compare cluster/ --all --master spark://host:7077 --tables tables/
\b
Problems come first and healthy partitions are summarised in one line; --all prints every row.
Runner: up to 6 GiB of segments run in this process; on 2 cores local Spark was slower at
every size measured up to 6.1 GB (14 s vs 261 s: its JVM alone takes 20 s or more to
start). Larger inputs, --master or --tables run on Spark; --spark / --no-spark force one.
\b
Docs: docs/REPORT.md (report fields, every status and finding code), docs/FORENSICS.md
(method), docs/CONTRACT.md section 4.""",
    "export": """\
\b
Examples:
  segtools export /var/lib/kafka/data --out parquet/
  segtools export broker-1/ --out parquet/ --topics 'orders*' --start-offset 1000
  segtools export broker-1/ broker-2/ --by-broker --level batches --out batches/
\b
Docs: docs/CONTRACT.md (layout and columns).""",
    "simulate": """\
\b
Examples:
  segtools simulate samples/scenarios/S7-simple-unclean-election.yaml --out cluster/
  segtools simulate my-scenario.yaml --out cluster/ --seed 42
\b
Docs: docs/CONTRACT.md section 3 (scenario format), samples/scenarios/README.md.""",
    "demo": """\
\b
Examples:
  segtools demo
  segtools demo --out /tmp/segtools-demo --master 'local[2]'
\b
Docs: README.md, docs/FORENSICS.md.""",
    "salvage": """\
\b
Examples:
  segtools salvage /var/lib/kafka/data/orders-0/00000000000000000000.log --out salvaged/
  segtools salvage /var/lib/kafka/data/orders-0 --out salvaged/ --index-interval-bytes 4096
\b
Docs: docs/CONTRACT.md ("segtools salvage": manifest fields, exit codes).""",
    "replay": """\
\b
Examples:
  segtools replay lost/ --bootstrap-server kafka-1:9092 --dry-run
  segtools replay lost/ --bootstrap-server kafka-1:9092,kafka-2:9092
\b
lost/ is what segtools compare --lost-out wrote. Docs: docs/CONTRACT.md section 10.""",
    "advise": """\
\b
Examples:
  segtools advise broker-1/ broker-2/ broker-3/ --topic orders --partition 0
  segtools advise cluster/ --acks cluster/acks.jsonl --json advice.json
  segtools advise b1/ b2/ b3/ --metadata-log controller/__cluster_metadata-0
\b
Docs: docs/CONTRACT.md section 11.""",
    "quorum": """\
\b
Examples:
  segtools quorum controller-1/ controller-2/ controller-3/
  segtools quorum c1/__cluster_metadata-0 c2/__cluster_metadata-0 --broker broker-4/ --json
  segtools quorum controller-1/ --image-at end --diff-from 1500
\b
Docs: docs/QUORUM.md (the rules and what each answer proves), docs/CONTRACT.md.""",
    "collect": """\
\b
Examples:
  segtools collect /var/lib/kafka/data --out /srv/incident-42/broker-1
  segtools collect broker-1/ broker-2/ broker-3/ --topic orders --out bundle/
  segtools collect b1/ b2/ --metadata-dir controller-1/ --redact --out for-the-vendor/
\b
Docs: docs/RUNBOOK.md (what to do first in an incident), docs/CONTRACT.md section 12,
docs/USAGE.md "Redacted bundles".""",
    "verify": """\
\b
Examples:
  segtools verify bundle/
  segtools verify bundle/ --output json
\b
Docs: docs/CONTRACT.md section 12.""",
    "docs": """\
\b
Examples:
  segtools docs
  segtools docs RUNBOOK | less
  segtools docs --schema dump-ndjson
\b
Docs: docs/RUNBOOK.md first.""",
}


def add_examples(name: str, command: object) -> None:
    """Append the examples of ``name`` to the command's epilog (once)."""
    text = EXAMPLES.get(name)
    epilog = getattr(command, "epilog", None)
    if text is None or (epilog and "Examples:" in epilog):
        return
    command.epilog = f"{epilog}\n\n{text}" if epilog else text  # type: ignore[attr-defined]
