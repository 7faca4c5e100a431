"""Degraded evidence of a simulated incident: the evidence SREs really have (issue 21).

A scenario runs once on the model (``segtools.simulate.run``); each degradation copies the
written folder (broker dirs, the controller's metadata log, acks.jsonl) and takes something away,
as an incident does: a broker's disk is not among the copies, the copies were taken after the
stale replica restarted and truncated, no metadata log, no acks file, replication-offset and
leader-epoch checkpoints missing or stale, the oldest segments deleted by retention. Each
:class:`EvidenceSet` records what was removed (``missing``) and carries the ground truth of the
run its files came from, so a checker can judge the answers given on it.

Nothing here is an oracle of its own: the truth is the simulator's truth.json and its final
cluster state; the degradations only remove or age files.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from segtools.files.checkpoints import (
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_leader_epoch_checkpoint,
    write_offset_checkpoint,
)
from segtools.simulate import random_scenario, run

#: small segments, so retention has whole segments to delete (a batch of the random scenarios
#: is ~70-110 bytes: 2-3 batches per segment)
SEGMENT_BYTES = 240

SAMPLES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "samples", "scenarios")

KINDS = ("full", "drop_last_leader", "drop_holder", "after_restart", "no_metadata_log", "no_acks",
         "no_checkpoints", "stale_checkpoints", "retention", "bare")

#: what one real cluster run is turned into (test_soundness_realkafka.py): every kind that needs
#: no second run, each pair of removals that can go together ("a+b"), and the sets of one topic
#: only ("topic:NAME", alone or with a removal: an SRE who copied the affected topic's dirs).
#: Real segments are at least 1 MiB, so ``retention`` cuts each replica's log at its second
#: batch, as a segment rolled there and then deleted would leave it (:func:`_retain_split`).
_PAIRABLE = ("drop_last_leader", "no_metadata_log", "no_acks", "no_checkpoints", "stale_checkpoints", "retention")


def real_kinds(*topics: str) -> tuple[str, ...]:
    pairs = [f"{a}+{b}" for i, a in enumerate(_PAIRABLE) for b in _PAIRABLE[i + 1:]
             if {a, b} != {"no_checkpoints", "stale_checkpoints"}]
    one_topic = [k for t in topics for k in (f"topic:{t}", *(f"topic:{t}+{k}" for k in _PAIRABLE))]
    return ("full", "drop_last_leader", "drop_holder", "no_metadata_log", "no_acks", "no_checkpoints",
            "stale_checkpoints", "retention", "bare", *pairs, *one_topic)

HW_CKPT = "replication-offset-checkpoint"
EPOCH_CKPT = "leader-epoch-checkpoint"
LOG_START_CKPT = "log-start-offset-checkpoint"
_BROKER_DIR = re.compile(r"broker-(\d+)$")


@dataclass
class EvidenceSet:
    scenario: str
    kind: str
    root: str                          # folder holding the broker-<id> dirs given
    brokers: tuple[int, ...]           # broker dirs in the set
    acks: str | None                   # acks.jsonl, if the set has it
    metadata_log: str | None           # controller/__cluster_metadata-0, if the set has it
    missing: tuple[str, ...]           # what the degradation removed, one token each
    truth: dict[str, Any]              # truth.json of the run these files came from
    cluster: Any                       # that run's final model Cluster (records, replicas)
    clean_stops: frozenset[int] = field(default_factory=frozenset)  # brokers stopped cleanly
    # (topic, value) of records sent inside an aborted transaction: never a loss to consumers
    aborted: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    # brokers the scenario crashed (a ``crash`` step): the only stops that can lose an
    # unflushed tail, so the only ones an "unflushed tail" answer may name
    crashed: frozenset[int] = field(default_factory=frozenset)
    # brokers the run restarted: Kafka deletes .kafka_cleanshutdown at startup, so no file
    # of the set can prove how such a broker's earlier stops went
    restarted: frozenset[int] = field(default_factory=frozenset)

    @property
    def broker_dirs(self) -> list[str]:
        return [os.path.join(self.root, f"broker-{b}") for b in self.brokers]


# -- scenarios ---------------------------------------------------------------------------------

def _prepare(scenario: dict[str, Any]) -> dict[str, Any]:
    sc = copy.deepcopy(scenario)
    sc.setdefault("cluster", {})
    sc["cluster"]["metadata_log"] = True
    sc["cluster"]["segment_bytes"] = SEGMENT_BYTES
    return sc


def sample_scenarios() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name in sorted(os.listdir(SAMPLES_DIR)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(SAMPLES_DIR, name), encoding="utf-8") as fh:
                out.append((name.rsplit(".", 1)[0], _prepare(yaml.safe_load(fh))))
    return out


def scenarios(count: int, *, first_seed: int = 0, samples: bool = True) -> Iterator[tuple[str, dict[str, Any]]]:
    """The sample scenarios (when ``samples``), then random ones from ``first_seed``: ``count``
    in all."""
    n = 0
    if samples:
        for item in sample_scenarios():
            if n >= count:
                return
            yield item
            n += 1
    seed = first_seed
    while n < count:
        yield f"random-{seed}", _prepare(random_scenario(seed))
        seed += 1
        n += 1


# -- degradations ------------------------------------------------------------------------------

def _brokers_in(root: str) -> tuple[int, ...]:
    found = []
    for name in os.listdir(root):
        m = _BROKER_DIR.fullmatch(name)
        if m and os.path.isdir(os.path.join(root, name)):
            found.append(int(m.group(1)))
    return tuple(sorted(found))


def _copy(base: str, target: str, *, drop: Collection[str] = (),
          drop_in_brokers: Collection[str] = ()) -> None:
    """Copy ``base`` to ``target`` leaving out the paths in ``drop`` (relative to ``base``) and
    the files named in ``drop_in_brokers`` anywhere under a ``broker-<id>`` dir."""
    def ignore(directory: str, names: list[str]) -> list[str]:
        rel = os.path.normpath(os.path.relpath(directory, base))
        in_broker = rel.split(os.sep)[0].startswith("broker-")
        return [n for n in names if os.path.normpath(os.path.join(rel, n)) in drop
                or (in_broker and n in drop_in_brokers)]
    shutil.copytree(base, target, ignore=ignore, copy_function=_sparse_copy)


def _sparse_copy(src: str, dst: str) -> None:
    """copy2 keeping holes: the model's .index/.timeindex files are preallocated (10 MiB,
    sparse); copied densely, the ten sets of one scenario took up to 1.5 GB and filled the
    shared /tmp."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while chunk := fin.read(1 << 20):
            if chunk.count(0) == len(chunk):
                fout.seek(len(chunk), os.SEEK_CUR)
            else:
                fout.write(chunk)
        fout.truncate()
    shutil.copystat(src, dst)


def _set(name: str, kind: str, root: str, truth: dict[str, Any], cluster: Any,
         missing: tuple[str, ...]) -> EvidenceSet:
    acks = os.path.join(root, "acks.jsonl")
    mlog = os.path.join(root, "controller", "__cluster_metadata-0")
    clean = frozenset(int(b) for p in truth.values() for b, r in p["replicas"].items()
                      if r["clean_shutdown"] and not r["alive"])
    return EvidenceSet(name, kind, root, _brokers_in(root), acks if os.path.exists(acks) else None,
                       mlog if os.path.isdir(mlog) else None, missing, truth, cluster, clean)


def aborted_values(scenario: dict[str, Any]) -> frozenset[tuple[str, str]]:
    """(topic, value) of the records produced between a producer's ``begin_transaction`` and
    its ``abort_transaction`` (produce steps that list their ``values``; the random scenarios'
    values are unique)."""
    out: set[tuple[str, str]] = set()
    pending: dict[str, list[tuple[str, str]]] = {}
    for step in scenario.get("steps", []):
        (kind, args), = step.items()
        args = args or {}
        if kind == "begin_transaction":
            pending[args["producer"]] = []
        elif kind == "produce" and args.get("producer") in pending:
            pending[args["producer"]] += [(args["topic"], str(v)) for v in args.get("values") or []]
        elif kind == "abort_transaction":
            out.update(pending.pop(args["producer"], []))
        elif kind == "commit_transaction":
            pending.pop(args["producer"], None)
    return frozenset(out)


def _last_leader(truth: dict[str, Any]) -> int | None:
    """The broker that was (last) leader of the most partitions, offline ones counted twice:
    the disk whose absence matters most."""
    score: dict[int, int] = {}
    for p in truth.values():
        b = p["leader"] if p["leader"] is not None else p["last_leader"]
        if b is not None:
            score[b] = score.get(b, 0) + (2 if p["leader"] is None else 1)
    return max(sorted(score), key=lambda b: score[b]) if score else None


def _holder(truth: dict[str, Any], exclude: int | None) -> int | None:
    """The broker holding the most records truth counts as lost (the evidence of the loss)."""
    score: dict[int, int] = {}
    for p in truth.values():
        for rec in p["lost"]:
            for b in rec["on_brokers"]:
                score[b] = score.get(b, 0) + 1
    ranked = [b for b in sorted(score, key=lambda b: (-score[b], b)) if b != exclude]
    return ranked[0] if ranked else None


def _partition_dirs(broker_dir: str) -> Iterator[str]:
    for name in sorted(os.listdir(broker_dir)):
        path = os.path.join(broker_dir, name)
        if os.path.isdir(path):
            yield path


def _age_checkpoints(root: str) -> list[str]:
    """Checkpoints as a broker killed a while after its last flush leaves them: every
    high-watermark entry halved, every leader-epoch checkpoint cut to its first entry."""
    touched = []
    for b in _brokers_in(root):
        bdir = os.path.join(root, f"broker-{b}")
        hw = os.path.join(bdir, HW_CKPT)
        if os.path.exists(hw):
            entries = read_offset_checkpoint(hw).entries
            write_offset_checkpoint(hw, {tp: off // 2 for tp, off in entries.items()})
            touched.append(f"hw_checkpoint:{b}")
        for pdir in _partition_dirs(bdir):
            ep = os.path.join(pdir, EPOCH_CKPT)
            if os.path.exists(ep):
                entries_e = read_leader_epoch_checkpoint(ep)
                if len(entries_e) > 1:
                    write_leader_epoch_checkpoint(ep, entries_e[:1])
                    touched.append(f"epoch_checkpoint:{b}:{os.path.basename(pdir)}")
    return touched


def _segment_bases(pdir: str) -> list[int]:
    return sorted(int(n[:-4]) for n in os.listdir(pdir) if n.endswith(".log") and n[:-4].isdigit())


def _apply_retention(root: str) -> list[str]:
    """Delete the oldest segment of every partition replica that has more than one (with its
    indexes and snapshot) and advance the log-start-offset checkpoint to the next segment, as
    retention does."""
    touched = []
    for b in _brokers_in(root):
        bdir = os.path.join(root, f"broker-{b}")
        starts: dict[tuple[str, int], int] = {}
        ck = os.path.join(bdir, LOG_START_CKPT)
        if os.path.exists(ck):
            starts.update(read_offset_checkpoint(ck).entries)
        for pdir in _partition_dirs(bdir):
            bases = _segment_bases(pdir)
            if len(bases) < 2:
                continue
            stem = f"{bases[0]:020d}"
            for name in os.listdir(pdir):
                if name.startswith(stem + "."):
                    os.remove(os.path.join(pdir, name))
            topic, _, part = os.path.basename(pdir).rpartition("-")
            starts[(topic, int(part))] = max(starts.get((topic, int(part)), 0), bases[1])
            touched.append(f"segments_below:{b}:{os.path.basename(pdir)}:{bases[1]}")
        if touched:
            write_offset_checkpoint(ck, starts)
    return touched


def _batch_starts(data: bytes) -> list[int]:
    """Byte positions of the whole v2 batches of a segment (baseOffset int64, length int32)."""
    out, pos = [], 0
    while pos + 17 <= len(data):
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        if length < 14 or pos + 12 + length > len(data):
            break
        out.append(pos)
        pos += 12 + length
    return out


def _retain_split(root: str) -> list[str]:
    """Retention on logs of one segment each (a real broker's: segment.bytes is at least 1 MiB):
    each replica's log loses its first batch as if a segment had rolled after it and retention
    had deleted that segment. The rest of the segment's bytes become a segment named by its new
    base offset (indexes left out: Kafka rebuilds them), the log-start-offset checkpoint moves
    there, and the leader-epoch checkpoint is cut from the start as Kafka's
    LeaderEpochFileCache.truncateFromStart does (the entry covering the new start begins there)."""
    touched = []
    for b in _brokers_in(root):
        bdir = os.path.join(root, f"broker-{b}")
        ck = os.path.join(bdir, LOG_START_CKPT)
        starts: dict[tuple[str, int], int] = dict(read_offset_checkpoint(ck).entries) if os.path.exists(ck) else {}
        changed = False
        for pdir in _partition_dirs(bdir):
            topic, _, part = os.path.basename(pdir).rpartition("-")
            bases = _segment_bases(pdir)
            if not part.isdigit() or topic.startswith("__") or len(bases) != 1:
                continue
            seg = os.path.join(pdir, f"{bases[0]:020d}.log")
            with open(seg, "rb") as fh:
                data = fh.read()
            batches = _batch_starts(data)
            if len(batches) < 2:
                continue
            cut = int.from_bytes(data[batches[1]:batches[1] + 8], "big")
            for name in os.listdir(pdir):
                if name.startswith(f"{bases[0]:020d}.") and not name.endswith(".snapshot"):
                    os.remove(os.path.join(pdir, name))
            with open(os.path.join(pdir, f"{cut:020d}.log"), "wb") as fh:
                fh.write(data[batches[1]:])
            ep = os.path.join(pdir, EPOCH_CKPT)
            if os.path.exists(ep):
                entries = [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(ep)]
                below = [e for e in entries if e[1] < cut]
                kept = [e for e in entries if e[1] >= cut]
                if below and not any(e[1] == cut for e in kept):
                    kept.insert(0, (below[-1][0], cut))
                write_leader_epoch_checkpoint(ep, kept)
            starts[(topic, int(part))] = max(starts.get((topic, int(part)), 0), cut)
            changed = True
            touched.append(f"segments_below:{b}:{os.path.basename(pdir)}:{cut}")
        if changed:
            write_offset_checkpoint(ck, starts)
    return touched


def _composite(name: str, kind: str, base: str, target: str, truth: dict[str, Any], cluster: Any,
               brokers: tuple[int, ...], has_mlog: bool) -> EvidenceSet | None:
    """A set made by several removals at once (``a+b``), or of one topic's dirs only
    (``topic:NAME``; the truth kept is that topic's). None when a part removes nothing."""
    drop: set[str] = set()
    drop_in: set[str] = set()
    missing: list[str] = []
    post = []
    keep_topic = None
    for part in kind.split("+"):
        if part.startswith("topic:"):
            keep_topic = part[len("topic:"):]
            for b in brokers:
                for pdir in _partition_dirs(os.path.join(base, f"broker-{b}")):
                    if os.path.basename(pdir).rpartition("-")[0] != keep_topic:
                        drop.add(os.path.join(f"broker-{b}", os.path.basename(pdir)))
        elif part == "drop_last_leader":
            victim = _last_leader({k: v for k, v in truth.items() if keep_topic in (None, v["topic"])})
            if len(brokers) < 2 or victim is None or victim not in brokers:
                return None
            drop.add(f"broker-{victim}")
            missing.append(f"log_dir:{victim}")
        elif part == "no_metadata_log":
            if not has_mlog:
                return None
            drop.add("controller")
            missing.append("metadata_log")
        elif part == "no_acks":
            drop.add("acks.jsonl")
            missing.append("acks")
        elif part == "no_checkpoints":
            drop_in |= {HW_CKPT, EPOCH_CKPT}
            missing += [f"hw_checkpoint:{b}" for b in brokers] + ["epoch_checkpoints"]
        elif part == "stale_checkpoints":
            post.append(_age_checkpoints)
        elif part == "retention":
            post.append(lambda root: _apply_retention(root) or _retain_split(root))
        else:
            raise ValueError(f"unknown degradation {part!r} in {kind!r}")
    _copy(base, target, drop=drop, drop_in_brokers=drop_in)
    if not any(True for b in _brokers_in(target) for _p in _partition_dirs(os.path.join(target, f"broker-{b}"))):
        shutil.rmtree(target, ignore_errors=True)     # every replica of the topic dropped: no evidence
        return None
    for fn in post:
        touched = fn(target)
        if not touched:
            shutil.rmtree(target, ignore_errors=True)
            return None
        missing += touched
    if keep_topic is not None:
        truth = {k: v for k, v in truth.items() if v["topic"] == keep_topic}
        if not truth:
            shutil.rmtree(target, ignore_errors=True)
            return None
    return _set(name, kind, target, truth, cluster, tuple(missing))


def _restart_steps(cluster: Any) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for b, st in sorted(cluster.brokers.items()):
        if not st.alive:
            steps.append({"restart": {"broker": b}})
        elif st.paused:
            steps.append({"resume": {"broker": b}})
    if steps:
        steps += [{"advance": {"ms": 12000}}, {"advance": {"ms": 12000}}, {"elect": {"preferred": True}},
                  {"advance": {"ms": 12000}}]
    return steps


def degrade(name: str, scenario: dict[str, Any], workdir: str,
            kinds: tuple[str, ...] = KINDS, engine: str = "model") -> Iterator[EvidenceSet]:
    """Run ``scenario`` into ``workdir/base`` and yield one evidence set per applicable kind
    (a kind that would remove nothing from this scenario is left out). ``engine="kafka"``:
    the run is a real cluster's (``segtools.realcluster.run_on_kafka``), its truth the real
    one; ``after_restart`` is left out there (it would need a second cluster run)."""
    aborted = aborted_values(scenario)
    crashed = frozenset(int(next(iter(step.values()))["broker"]) for step in scenario.get("steps", [])
                        if "crash" in step)
    restarted = frozenset(int(step["restart"]["broker"]) for step in scenario.get("steps", [])
                          if "restart" in step)
    for ev in _degrade(name, scenario, workdir, kinds, engine):
        ev.aborted, ev.crashed = aborted, crashed
        # after_restart's own restarts come on top of the scenario's
        ev.restarted = restarted | frozenset(int(m.rpartition(":")[2]) for m in ev.missing
                                             if m.startswith("pre_restart_log_dir:"))
        yield ev


def _run(scenario: dict[str, Any], out: str, engine: str) -> tuple[dict[str, Any], Any]:
    """(truth, a model Cluster of the run's final state) of one run."""
    if engine == "model":
        result = run(scenario, out)
        return result.truth, result.cluster
    if engine != "kafka":
        raise ValueError(f"unknown engine {engine!r}")
    from segtools.realcluster import run_on_kafka
    from segtools.simulate.scenario import parse_scenario

    # the copies taken after each step stay (kafka/steps): what a broker held before it
    # truncated, for the truncation check
    result = run_on_kafka(parse_scenario(scenario), out, keep_step_copies=True)
    # the real engine fails a run whose story differs from its lockstep model's, so that
    # model's replicas and records stand for the real ones (advise's checks read them)
    return result.truth, result.cluster.model


def _degrade(name: str, scenario: dict[str, Any], workdir: str, kinds: tuple[str, ...],
             engine: str = "model") -> Iterator[EvidenceSet]:
    base = os.path.join(workdir, "base")
    truth, cluster = _run(scenario, base, engine)
    has_mlog = os.path.isdir(os.path.join(base, "controller"))
    brokers = _brokers_in(base)
    for kind in kinds:
        target = os.path.join(workdir, kind.replace(":", "_"))
        if "+" in kind or kind.startswith("topic:"):
            ev = _composite(name, kind, base, target, truth, cluster, brokers, has_mlog)
            if ev is not None:
                yield ev
        elif kind == "full":
            _copy(base, target)
            yield _set(name, kind, target, truth, cluster, ())
        elif kind in ("drop_last_leader", "drop_holder"):
            if len(brokers) < 2:
                continue
            victim = _last_leader(truth) if kind == "drop_last_leader" else _holder(truth, _last_leader(truth))
            if victim is None or victim not in brokers:
                continue
            dropped = f"broker-{victim}"
            _copy(base, target, drop={dropped})
            yield _set(name, kind, target, truth, cluster, (f"log_dir:{victim}",))
        elif kind == "bare":
            # the barest evidence (issue 21's advise case): the last leader's disk, the acks
            # and the metadata log all missing
            leader = _last_leader(truth)
            if len(brokers) < 2 or leader is None or leader not in brokers:
                continue
            gone = {f"broker-{leader}", "acks.jsonl", "controller"}
            _copy(base, target, drop=gone)
            yield _set(name, kind, target, truth, cluster,
                       (f"log_dir:{leader}", "acks", *(("metadata_log",) if has_mlog else ())))
        elif kind == "after_restart":
            extra = _restart_steps(cluster)
            if not extra or engine != "model":
                continue
            later = copy.deepcopy(scenario)
            later["steps"] = [*later["steps"], *extra]
            later_result = run(later, target)
            restarted = tuple(f"pre_restart_log_dir:{s['restart']['broker']}" for s in extra if "restart" in s)
            yield _set(name, kind, target, later_result.truth, later_result.cluster,
                       restarted or ("pre_restart_log_dirs",))
        elif kind == "no_metadata_log":
            if not has_mlog:
                continue
            _copy(base, target, drop={"controller"})
            yield _set(name, kind, target, truth, cluster, ("metadata_log",))
        elif kind == "no_acks":
            _copy(base, target, drop={"acks.jsonl"})
            yield _set(name, kind, target, truth, cluster, ("acks",))
        elif kind == "no_checkpoints":
            _copy(base, target, drop_in_brokers=(HW_CKPT, EPOCH_CKPT))
            yield _set(name, kind, target, truth, cluster,
                       tuple(f"hw_checkpoint:{b}" for b in brokers) + ("epoch_checkpoints",))
        elif kind == "stale_checkpoints":
            _copy(base, target)
            touched = _age_checkpoints(target)
            if touched:
                yield _set(name, kind, target, truth, cluster, tuple(touched))
        elif kind == "retention":
            _copy(base, target)
            # a real broker's logs are one segment each: cut at the second batch instead
            touched = _apply_retention(target) or (_retain_split(target) if engine == "kafka" else [])
            if touched:
                yield _set(name, kind, target, truth, cluster, tuple(touched))
        else:
            raise ValueError(f"unknown degradation {kind!r}")
