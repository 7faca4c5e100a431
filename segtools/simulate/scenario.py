"""Scenario files for `segtools simulate` (CONTRACT.md section 3): YAML -> validated dataclasses.

Every problem is a ``ScenarioError`` naming the step (index and kind) and the field, so a user can
fix the file without reading a traceback.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass, field
from typing import Any

from segtools.errors import ScenarioError
from segtools.formats.record_batch import CompressionType

TRUNCATION_MODES = ("leader-epoch", "leader-epoch-kip101", "high-watermark")
ACKS_VALUES = ("0", "1", "all")
COMPRESSIONS = tuple(c.label for c in CompressionType)   # Kafka's names, in id order
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_RECORDS_PER_STEP = 1_000_000
MAX_BYTES_PER_STEP = 64 * 1024 * 1024
MAX_STEPS = 100_000
# the whole model stays in memory: bound the sum over all produce steps too (a few YAML
# aliases of one big step would otherwise ask for 10^11 records)
MAX_RECORDS_TOTAL = 10_000_000
MAX_BYTES_TOTAL = 1024 * 1024 * 1024
MAX_MS = 10 * 365 * 86_400_000  # ten years of virtual time per value
STEP_KINDS = (
    "produce", "pause", "resume", "advance", "crash", "shutdown", "restart", "elect",
    "delete_records", "snapshot", "flush", "begin_transaction", "commit_transaction",
    "abort_transaction", "resend",
)


@dataclass(frozen=True)
class ClusterSpec:
    brokers: tuple[int, ...]
    start_time_ms: int = 1719975664000
    segment_bytes: int = 1073741824
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10485760
    replica_lag_time_max_ms: int = 30000
    request_timeout_ms: int = 30000
    high_watermark_checkpoint_interval_ms: int = 5000
    # recovery-point-offset-checkpoint, log-start-offset-checkpoint and the periodic flush
    # (what survives a power loss) share Kafka's 60 s default
    flush_offset_checkpoint_interval_ms: int = 60000
    truncation: str = "leader-epoch"
    metadata_log: bool = False
    cluster_id: str | None = None
    # Kafka feature levels for the real engine's kafka-storage format (name -> level)
    kafka_features: tuple[tuple[str, int], ...] = (("eligible.leader.replicas.version", 0),)
    #: the real engine only: scenario milliseconds per real millisecond (0: the engine picks
    #: one that makes replica_lag_time_max_ms a few real seconds); the model ignores it
    time_scale: float = 0.0
    #: did the scenario name cluster.kafka_features? (the real engine otherwise formats with
    #: the release's own defaults)
    kafka_features_given: bool = False
    #: Kafka's ISR rule (Replica.isCaughtUp): a follower at the leader's log end is never
    #: dropped for lag, however long ago it fetched. The model drops a paused follower after
    #: replica_lag_time_max_ms either way unless this is set; the real engine sets it for its
    #: lockstep model (not a scenario key: samples/ keep their stories; docs/ENGINES.md)
    caught_up_stays_in_isr: bool = False


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    min_insync_replicas: int
    unclean_leader_election: bool
    assignment: dict[int, tuple[int, ...]] | None
    compression: str = "none"


@dataclass(frozen=True)
class ProducerSpec:
    name: str
    idempotent: bool = False
    transactional_id: str | None = None


@dataclass(frozen=True)
class Step:
    index: int
    kind: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    name: str
    seed: int
    cluster: ClusterSpec
    topics: tuple[TopicSpec, ...]
    producers: tuple[ProducerSpec, ...]
    steps: tuple[Step, ...]


def _err(where: str, msg: str) -> ScenarioError:
    return ScenarioError(f"{where}: {msg}")


def _int(value: Any, where: str, *, minimum: int | None = None, maximum: int = 2**62) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _err(where, f"expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise _err(where, f"must be >= {minimum}, got {value}")
    if value > maximum:
        raise _err(where, f"must be <= {maximum}, got {value}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _err(where, f"expected true or false, got {value!r}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _err(where, f"expected a non-empty string, got {value!r}")
    return value


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _err(where, f"expected a mapping, got {type(value).__name__}")
    return value


def _check_keys(d: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in d if k not in allowed)
    if unknown:
        raise _err(where, f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def load_scenario(path: str | os.PathLike[str], *, seed: int | None = None) -> Scenario:
    """Read and validate a YAML (or JSON) scenario file. ``seed`` replaces the file's seed
    before anything is drawn from it (default replica assignments included), so the result
    is the same as a file that says ``seed: <seed>``."""
    import yaml

    try:
        with open(path, "rb") as fh:
            text = fh.read()
    except OSError as exc:
        raise ScenarioError(f"{os.fspath(path)}: cannot read scenario: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{os.fspath(path)}: not valid YAML: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{os.fspath(path)}: not valid YAML: nested too deeply") from None
    if seed is not None and isinstance(data, dict):
        data = {**data, "seed": seed}
    return parse_scenario(data, source=os.fspath(path))


def parse_scenario(data: Any, *, source: str = "scenario") -> Scenario:
    """Validate a scenario given as a dict (as YAML would load it)."""
    top = _mapping(data, source)
    _check_keys(top, {"name", "seed", "cluster", "topics", "producers", "steps", "description"}, source)
    name = _str(top.get("name", "scenario"), f"{source}: name")
    seed = _int(top.get("seed", 0), f"{source}: seed")
    cluster = _parse_cluster(_mapping(top.get("cluster"), "cluster"))
    topics_raw = top.get("topics") or []
    if not isinstance(topics_raw, list) or not topics_raw:
        raise _err("topics", "expected a non-empty list of topics")
    rng = random.Random(seed)
    topics = []
    for i, t in enumerate(topics_raw):
        topics.append(_parse_topic(_mapping(t, f"topics[{i}]"), i, cluster, rng))
    names = [t.name for t in topics]
    if len(set(names)) != len(names):
        raise _err("topics", "topic names must be unique")
    producers_raw = top.get("producers") or []
    if not isinstance(producers_raw, list):
        raise _err("producers", "expected a list")
    producers = [_parse_producer(_mapping(p, f"producers[{i}]"), i) for i, p in enumerate(producers_raw)]
    if len({p.name for p in producers}) != len(producers):
        raise _err("producers", "producer names must be unique")
    steps_raw = top.get("steps") or []
    if not isinstance(steps_raw, list):
        raise _err("steps", "expected a list")
    if len(steps_raw) > MAX_STEPS:
        raise _err("steps", f"{len(steps_raw)} steps, at most {MAX_STEPS}")
    ctx = _Ctx(cluster, {t.name: t for t in topics}, {p.name: p for p in producers})
    steps = tuple(_parse_step(s, i, ctx) for i, s in enumerate(steps_raw))
    return Scenario(name, seed, cluster, tuple(topics), tuple(producers), steps)


def _parse_cluster(c: dict[str, Any]) -> ClusterSpec:
    allowed = {"brokers", "start_time_ms", "segment_bytes", "index_interval_bytes",
               "segment_index_bytes", "replica_lag_time_max_ms", "request_timeout_ms",
               "high_watermark_checkpoint_interval_ms", "flush_offset_checkpoint_interval_ms",
               "truncation", "metadata_log", "cluster_id", "kafka_features", "time_scale"}
    _check_keys(c, allowed, "cluster")
    brokers_raw = c.get("brokers")
    if not isinstance(brokers_raw, list) or not brokers_raw:
        raise _err("cluster.brokers", "expected a non-empty list of broker ids")
    if len(brokers_raw) > 1000:
        raise _err("cluster.brokers", f"{len(brokers_raw)} brokers, at most 1000")
    brokers = tuple(_int(b, "cluster.brokers", minimum=0, maximum=2**31 - 1) for b in brokers_raw)
    if len(set(brokers)) != len(brokers):
        raise _err("cluster.brokers", "broker ids must be unique")
    kw: dict[str, Any] = {"brokers": brokers}
    for key, minimum in (("start_time_ms", 0), ("segment_bytes", 14), ("index_interval_bytes", 0),
                         ("segment_index_bytes", 8), ("replica_lag_time_max_ms", 1),
                         ("request_timeout_ms", 1), ("high_watermark_checkpoint_interval_ms", 1),
                         ("flush_offset_checkpoint_interval_ms", 1)):
        if key in c:
            kw[key] = _int(c[key], f"cluster.{key}", minimum=minimum,
                           maximum=(2**62 if key == "start_time_ms" else MAX_MS) if key.endswith("_ms")
                           else 2**31 - 1)
    if "truncation" in c:
        if c["truncation"] not in TRUNCATION_MODES:
            raise _err("cluster.truncation", f"expected one of {', '.join(TRUNCATION_MODES)}, got {c['truncation']!r}")
        kw["truncation"] = c["truncation"]
    if "metadata_log" in c:
        kw["metadata_log"] = _bool(c["metadata_log"], "cluster.metadata_log")
    if "cluster_id" in c:
        kw["cluster_id"] = _str(c["cluster_id"], "cluster.cluster_id")
    if "kafka_features" in c:
        kw["kafka_features"] = _parse_features(_mapping(c["kafka_features"], "cluster.kafka_features"))
        kw["kafka_features_given"] = True
    if "time_scale" in c:
        scale = c["time_scale"]
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale <= 1000:
            raise _err("cluster.time_scale", f"expected a number in (0, 1000], got {scale!r}")
        kw["time_scale"] = float(scale)
    return ClusterSpec(**kw)


#: cluster.kafka_features: scenario key -> (Kafka feature name, highest level Kafka 4.3 knows)
KAFKA_FEATURES = {"eligible_leader_replicas": ("eligible.leader.replicas.version", 1),
                  "transaction_version": ("transaction.version", 2)}


def _parse_features(f: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """``{eligible_leader_replicas: true|false, transaction_version: 0..2}``. ELR (KIP-966)
    is off unless asked for: the model elects without it."""
    _check_keys(f, set(KAFKA_FEATURES), "cluster.kafka_features")
    out = {"eligible.leader.replicas.version": 0}
    for key, value in f.items():
        name, top = KAFKA_FEATURES[key]
        if isinstance(value, bool):
            level = int(value)
        else:
            level = _int(value, f"cluster.kafka_features.{key}", minimum=0, maximum=top)
        if key == "eligible_leader_replicas" and level > 1:
            raise _err(f"cluster.kafka_features.{key}", "expected true or false")
        out[name] = level
    return tuple(sorted(out.items()))


def default_assignment(brokers: tuple[int, ...], partitions: int, replication_factor: int,
                       rng: random.Random) -> dict[int, tuple[int, ...]]:
    """Kafka's rack-unaware placement (AdminUtils.assignReplicasToBrokers): a random start
    broker and shift, replicas spread by an increasing shift every len(brokers) partitions."""
    ids = sorted(brokers)
    n = len(ids)
    start = rng.randrange(n)
    shift = rng.randrange(n)
    out: dict[int, tuple[int, ...]] = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            step = 1 + (shift + j) % (n - 1)
            replicas.append(ids[(first + step) % n])
        out[p] = tuple(replicas)
    return out


def _parse_topic(t: dict[str, Any], i: int, cluster: ClusterSpec, rng: random.Random) -> TopicSpec:
    where = f"topics[{i}]"
    _check_keys(t, {"name", "partitions", "replication_factor", "min_insync_replicas",
                    "unclean_leader_election", "assignment", "compression"}, where)
    name = _str(t.get("name"), f"{where}.name")
    if not _TOPIC_NAME.fullmatch(name) or len(name) > 249 or name in (".", ".."):
        # Kafka's Topic.validate: ASCII letters, digits, '.', '_', '-', at most 249 characters
        raise _err(f"{where}.name", f"not a valid Kafka topic name: {name!r}")
    partitions = _int(t.get("partitions", 1), f"{where}.partitions", minimum=1, maximum=10_000)
    rf_default = min(3, len(cluster.brokers))
    rf = _int(t.get("replication_factor", rf_default), f"{where}.replication_factor", minimum=1)
    if rf > len(cluster.brokers):
        raise _err(f"{where}.replication_factor", f"{rf} is larger than the number of brokers ({len(cluster.brokers)})")
    min_isr = _int(t.get("min_insync_replicas", 1), f"{where}.min_insync_replicas", minimum=1)
    unclean = _bool(t.get("unclean_leader_election", False), f"{where}.unclean_leader_election")
    compression = t.get("compression", "none")
    if compression not in COMPRESSIONS:
        raise _err(f"{where}.compression", f"expected one of {', '.join(COMPRESSIONS)}, got {compression!r}")
    assignment_raw = t.get("assignment")
    if assignment_raw is None:
        assignment = default_assignment(cluster.brokers, partitions, rf, rng)
    else:
        a = _mapping(assignment_raw, f"{where}.assignment")
        assignment = {}
        for key, replicas in a.items():
            try:
                p = int(key)
            except (TypeError, ValueError):
                raise _err(f"{where}.assignment", f"partition key {key!r} is not an integer") from None
            if not 0 <= p < partitions:
                raise _err(f"{where}.assignment", f"partition {p} out of range 0..{partitions - 1}")
            if not isinstance(replicas, list) or len(replicas) != rf:
                raise _err(f"{where}.assignment[{p}]", f"expected a list of {rf} broker ids")
            ids = tuple(_int(b, f"{where}.assignment[{p}]") for b in replicas)
            if len(set(ids)) != len(ids) or any(b not in cluster.brokers for b in ids):
                raise _err(f"{where}.assignment[{p}]", f"replicas {list(ids)} must be distinct brokers of the cluster")
            assignment[p] = ids
        missing = [p for p in range(partitions) if p not in assignment]
        if missing:
            raise _err(f"{where}.assignment", f"no replicas given for partition(s) {missing}")
    return TopicSpec(name, partitions, rf, min_isr, unclean, assignment, compression)


def _parse_producer(p: dict[str, Any], i: int) -> ProducerSpec:
    where = f"producers[{i}]"
    _check_keys(p, {"name", "idempotent", "transactional_id"}, where)
    name = _str(p.get("name"), f"{where}.name")
    txn = p.get("transactional_id")
    if txn is not None:
        txn = _str(txn, f"{where}.transactional_id")
    idempotent = _bool(p.get("idempotent", txn is not None), f"{where}.idempotent")
    if txn is not None and not idempotent:
        raise _err(f"{where}.idempotent", "a transactional producer is always idempotent")
    return ProducerSpec(name, idempotent, txn)


@dataclass
class _Ctx:
    cluster: ClusterSpec
    topics: dict[str, TopicSpec]
    producers: dict[str, ProducerSpec]
    snapshots: set[str] = field(default_factory=set)
    records: int = 0
    bytes: int = 0


def _broker(args: dict[str, Any], where: str, ctx: _Ctx) -> int:
    b = _int(args.get("broker"), f"{where}.broker")
    if b not in ctx.cluster.brokers:
        raise _err(f"{where}.broker", f"{b} is not a broker of the cluster {list(ctx.cluster.brokers)}")
    return b


def _topic_partition(args: dict[str, Any], where: str, ctx: _Ctx, *, required: bool) -> tuple[str | None, int | None]:
    topic = args.get("topic")
    if topic is None:
        if required:
            raise _err(f"{where}.topic", "missing")
        if "partition" in args:
            raise _err(f"{where}.partition", "given without a topic")
        return None, None
    topic = _str(topic, f"{where}.topic")
    if topic not in ctx.topics:
        raise _err(f"{where}.topic", f"unknown topic {topic!r}")
    part = args.get("partition")
    if part is None:
        return topic, None
    part = _int(part, f"{where}.partition", minimum=0)
    if part >= ctx.topics[topic].partitions:
        raise _err(f"{where}.partition", f"{part} out of range 0..{ctx.topics[topic].partitions - 1}")
    return topic, part


def _opt_str_list(value: Any, where: str) -> list[str | None] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _err(where, "expected a list")
    out: list[str | None] = []
    for v in value:
        if v is None:
            out.append(None)
        elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
            out.append(str(v))
        else:
            raise _err(where, f"expected strings or null, got {v!r}")
    return out


def _parse_headers(value: Any, where: str) -> tuple[tuple[str, str | None], ...]:
    if value is None:
        return ()
    h = _mapping(value, where)
    out = []
    for k, v in h.items():
        if v is not None and not isinstance(v, (str, int, float)):
            raise _err(where, f"header {k!r}: expected a string or null")
        out.append((str(k), None if v is None else str(v)))
    return tuple(out)


def _parse_step(raw: Any, i: int, ctx: _Ctx) -> Step:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise _err(f"steps[{i}]", "each step is a mapping with exactly one key, e.g. {crash: {broker: 1}}")
    (kind, args_raw), = raw.items()
    where = f"steps[{i}] ({kind})"
    if kind not in STEP_KINDS:
        raise _err(f"steps[{i}]", f"unknown step {kind!r}; known: {', '.join(STEP_KINDS)}")
    args = _mapping(args_raw, where)
    out: dict[str, Any]
    if kind == "produce":
        _check_keys(args, {"topic", "partition", "acks", "values", "keys", "count", "value_bytes",
                           "headers", "producer", "batch_size", "retries", "in_flight"}, where)
        topic, part = _topic_partition(args, where, ctx, required=True)
        acks = str(args.get("acks", "all"))
        if acks == "-1":
            acks = "all"
        if acks not in ACKS_VALUES:
            raise _err(f"{where}.acks", f"expected 0, 1 or all, got {args.get('acks')!r}")
        values = _opt_str_list(args.get("values"), f"{where}.values")
        keys = _opt_str_list(args.get("keys"), f"{where}.keys")
        if values is not None and "count" in args:
            raise _err(where, "give either values or count, not both")
        if values is None:
            count = _int(args.get("count", 1), f"{where}.count", minimum=0)
        else:
            count = len(values)
        if keys is not None and len(keys) != count:
            raise _err(f"{where}.keys", f"{len(keys)} keys for {count} records")
        value_bytes = _int(args.get("value_bytes", 8), f"{where}.value_bytes", minimum=0)
        # bounded memory: everything produced stays in the model until the files are written
        if count > MAX_RECORDS_PER_STEP or count * max(value_bytes, 1) > MAX_BYTES_PER_STEP:
            raise _err(where, f"{count} records of {value_bytes} bytes is more than one step may "
                              f"produce ({MAX_RECORDS_PER_STEP} records, {MAX_BYTES_PER_STEP} bytes)")
        ctx.records += count
        ctx.bytes += count * max(value_bytes, 1) if values is None else sum(len(v or "") + 1 for v in values)
        if ctx.records > MAX_RECORDS_TOTAL or ctx.bytes > MAX_BYTES_TOTAL:
            raise _err(where, f"the produce steps so far ask for {ctx.records} records, "
                              f"{ctx.bytes} bytes: more than a scenario may produce "
                              f"({MAX_RECORDS_TOTAL} records, {MAX_BYTES_TOTAL} bytes)")
        producer = args.get("producer")
        if producer is not None and producer not in ctx.producers:
            raise _err(f"{where}.producer", f"unknown producer {producer!r}")
        if producer is not None and acks != "all" and ctx.producers[producer].idempotent:
            raise _err(f"{where}.acks", "an idempotent producer requires acks: all")
        out = {"topic": topic, "partition": part, "acks": acks, "values": values, "keys": keys,
               "count": count, "value_bytes": value_bytes,
               "headers": _parse_headers(args.get("headers"), f"{where}.headers"),
               "producer": producer,
               "batch_size": _int(args.get("batch_size", 1), f"{where}.batch_size", minimum=1),
               "retries": _int(args.get("retries", 0), f"{where}.retries", minimum=0, maximum=100),
               "in_flight": _bool(args.get("in_flight", False), f"{where}.in_flight")}
    elif kind in ("pause", "resume", "restart", "shutdown"):
        _check_keys(args, {"broker"}, where)
        out = {"broker": _broker(args, where, ctx)}
    elif kind == "crash":
        _check_keys(args, {"broker", "lose_unflushed", "wipe_disk"}, where)
        out = {"broker": _broker(args, where, ctx),
               "lose_unflushed": _bool(args.get("lose_unflushed", False), f"{where}.lose_unflushed"),
               "wipe_disk": _bool(args.get("wipe_disk", False), f"{where}.wipe_disk")}
    elif kind == "flush":
        _check_keys(args, {"broker"}, where)
        out = {"broker": _broker(args, where, ctx)}
    elif kind == "advance":
        _check_keys(args, {"ms"}, where)
        out = {"ms": _int(args.get("ms"), f"{where}.ms", minimum=0, maximum=MAX_MS)}
    elif kind == "elect":
        _check_keys(args, {"topic", "partition", "leader", "unclean", "preferred"}, where)
        topic, part = _topic_partition(args, where, ctx, required=False)
        preferred = _bool(args.get("preferred", False), f"{where}.preferred")
        unclean = _bool(args.get("unclean", False), f"{where}.unclean")
        leader = args.get("leader")
        if leader is not None:
            leader = _broker({"broker": leader}, where, ctx)
            if topic is None or part is None:
                raise _err(where, "leader needs a topic and partition")
        if preferred and (unclean or leader is not None):
            raise _err(where, "preferred cannot be combined with leader or unclean")
        if not preferred and leader is None and not unclean:
            raise _err(where, "give preferred: true, unclean: true or a leader")
        out = {"topic": topic, "partition": part, "leader": leader, "unclean": unclean,
               "preferred": preferred}
    elif kind == "delete_records":
        _check_keys(args, {"topic", "partition", "before_offset"}, where)
        topic, part = _topic_partition(args, where, ctx, required=True)
        if part is None:
            raise _err(f"{where}.partition", "missing")
        out = {"topic": topic, "partition": part,
               "before_offset": _int(args.get("before_offset"), f"{where}.before_offset", minimum=0)}
    elif kind == "snapshot":
        _check_keys(args, {"name"}, where)
        name = _str(args.get("name"), f"{where}.name")
        if any(ch in name for ch in "/\\") or name in (".", ".."):
            raise _err(f"{where}.name", f"not a valid directory name: {name!r}")
        if name in ctx.snapshots:
            # each snapshot is written to DIR/snapshots/<name>/: a second one would collide
            raise _err(f"{where}.name", f"snapshot name {name!r} used twice")
        ctx.snapshots.add(name)
        out = {"name": name}
    elif kind == "resend":
        _check_keys(args, {"producer"}, where)
        producer = args.get("producer")
        if producer is not None and producer not in ctx.producers:
            raise _err(f"{where}.producer", f"unknown producer {producer!r}")
        out = {"producer": producer}
    else:  # transactions
        _check_keys(args, {"producer"}, where)
        producer = args.get("producer")
        if producer not in ctx.producers or ctx.producers[producer].transactional_id is None:
            raise _err(f"{where}.producer", f"{producer!r} is not a transactional producer")
        out = {"producer": producer}
    return Step(i, kind, out)
