"""Must-show (i) of issue 28 on real Kafka 4.3.1: a 3-controller dynamic quorum on 127.0.0.1,
the active controller SIGKILLed while it appends (NoOpRecords every 100 ms), copied, then
restarted. Oracle: real Kafka's own truncation of the old leader's log when it rejoins. The
audit of (old leader before restart, the survivors) must place the end of the common prefix
exactly where Kafka's restart kept the old leader's log identical. Every JVM is stopped, also
on failure."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from segtools.quorum import audit_dirs
from segtools.quorum.audit import diverge
from segtools.quorum.nodes import load_node
from tests.quorum.real_controllers import controller_properties, format_controller, kafka_uuid

pytestmark = pytest.mark.realkafka

#: 4.3.1 in CI; SEGTOOLS_QUORUM_RELEASE runs the module on another release by hand
RELEASE = os.environ.get("SEGTOOLS_QUORUM_RELEASE", "4.3.1")


def _state(d: Path) -> dict[str, object]:
    try:
        return dict(json.loads((d / "__cluster_metadata-0" / "quorum-state").read_text()))
    except (OSError, ValueError):
        return {}


def _wait(cond: object, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}", pytrace=False)


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    from segtools.realcluster import config
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.realcluster.processes import JvmProcess

    rt = kafka_runtime(version=RELEASE)
    root = tmp_path_factory.mktemp("quorum-failover")
    (root / "log4j2.properties").write_text(config.LOG4J2)
    ports = {i: config.free_port() for i in (1, 2, 3)}
    dids = {i: kafka_uuid() for i in (1, 2, 3)}
    cid = kafka_uuid()
    boot = ",".join(f"127.0.0.1:{ports[i]}" for i in (1, 2, 3))
    initial = ",".join(f"{i}@127.0.0.1:{ports[i]}:{dids[i]}" for i in (1, 2, 3))
    dirs, props = {}, {}
    for i in (1, 2, 3):
        d = root / f"c{i}"
        d.mkdir()
        p = controller_properties(
            root / f"c{i}.properties", i, ports[i], d, boot,
            "metadata.max.idle.interval.ms=100\ncontroller.quorum.election.timeout.ms=1000\n"
            "controller.quorum.fetch.timeout.ms=2000\n")
        format_controller(rt, cid, p, "--initial-controllers", initial)
        dirs[i], props[i] = d, p
    procs: dict[int, JvmProcess] = {}

    def start(i: int) -> None:
        argv = rt.command("kafka.Kafka", str(props[i]), heap="192m")
        argv[1:1] = [f"-Dlog4j2.configurationFile={root / 'log4j2.properties'}",
                     f"-Dkafka.logs.dir={root}"]
        procs[i] = JvmProcess(f"c{i}", argv, str(root / f"c{i}.log"))

    try:
        for i in (1, 2, 3):
            start(i)
        _wait(lambda: all(int(_state(dirs[i]).get("leaderId", -1)) > 0 for i in (1, 2, 3)),
              90, "a leader known to all three controllers")
        time.sleep(3)                   # NoOpRecords flowing: the leader is appending
        leader = int(_state(dirs[1])["leaderId"])
        old_epoch = int(_state(dirs[leader])["leaderEpoch"])
        procs[leader].kill()            # SIGKILL mid-append
        others = [i for i in (1, 2, 3) if i != leader]
        _wait(lambda: all(int(_state(dirs[i]).get("leaderEpoch", 0)) > old_epoch
                          and int(_state(dirs[i]).get("leaderId", -1)) in others
                          for i in others), 60, "a new leader among the survivors")
        time.sleep(2)
        before = root / "old-leader-before"
        shutil.copytree(dirs[leader], before)
        start(leader)                   # rejoins: Kafka truncates its divergent suffix
        _wait(lambda: int(_state(dirs[leader]).get("leaderEpoch", 0)) > old_epoch, 60,
              "the old leader following the new epoch")
        time.sleep(3)
        # the leader stops last: stopping it first makes the others elect a new leader whose
        # LEADER_CHANGE may reach only its own disk before they stop, and then no prefix can
        # be proven committed (Raft's figure 8) -- a true answer, but not the story tested here
        last = int(_state(dirs[others[0]]).get("leaderId", -1))
        for i in sorted((1, 2, 3), key=lambda i: i == last):
            procs[i].terminate(20.0)
        yield {"leader": leader, "before": before, "dirs": dirs, "others": others,
               "old_epoch": old_epoch}
    finally:
        for p in procs.values():
            if p.alive():
                p.kill()


def test_killed_leader_divergence_matches_kafkas_truncation(quorum: dict[str, object]) -> None:
    dirs: dict[int, Path] = quorum["dirs"]  # type: ignore[assignment]
    leader: int = quorum["leader"]  # type: ignore[assignment]
    before: Path = quorum["before"]  # type: ignore[assignment]
    others: list[int] = quorum["others"]  # type: ignore[assignment]
    survivor = str(dirs[others[0]])
    r = audit_dirs([str(before), survivor, str(dirs[others[1]])])
    assert not [f for f in r.findings if f.kind in ("split-brain", "log-matching-violation",
                                                   "double-vote", "snapshot-mismatch")], \
        [f.message for f in r.findings]
    d = next(x for x in r.divergences if x.a == str(before) and x.b == survivor)
    # Kafka's oracle: where the restarted old leader's log stops being its log before restart
    kept = diverge(load_node(str(before)), load_node(str(dirs[leader])))[0].common_end
    assert d.common_end == kept, (d, kept)
    if d.offset is not None:         # a suffix of the old epoch existed: it was the stale one
        assert d.stale == str(before) and d.epoch_a == quorum["old_epoch"]
    # after the restart: still one leader per epoch, Log Matching holds, a committed prefix
    after = audit_dirs([str(dirs[i]) for i in (1, 2, 3)])
    assert not [f for f in after.findings if f.kind in ("split-brain", "log-matching-violation",
                                                       "double-vote", "snapshot-mismatch")]
    assert after.committed_end > 0, after.committed_reason
    print(f"leader {leader} epoch {quorum['old_epoch']} killed; before-restart log end "
          f"{load_node(str(before)).log_end}; common prefix with survivor {d.common_end}; "
          f"first divergence {d.offset}; after restart committed below {after.committed_end}")


def test_deleted_quorum_state_and_mutated_copy_are_found(quorum: dict[str, object],
                                                         tmp_path: Path) -> None:
    dirs: dict[int, Path] = quorum["dirs"]  # type: ignore[assignment]
    copies = []
    for i in (1, 2, 3):
        copies.append(tmp_path / f"c{i}")
        shutil.copytree(dirs[i], copies[-1])
    os.remove(copies[0] / "__cluster_metadata-0" / "quorum-state")
    log = sorted((copies[1] / "__cluster_metadata-0").glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    data[200] ^= 0x01                # inside an early batch: its CRC no longer matches
    log.write_bytes(bytes(data))
    r = audit_dirs([str(c) for c in copies])
    msgs = [f.message for f in r.findings]
    assert any("quorum-state is missing" in m for m in msgs), msgs
    assert any("CRC mismatch" in m or "unreadable" in m for m in msgs), msgs
    assert any(f.kind in ("log-matching-violation", "divergence") and str(copies[1]) in f.nodes
               for f in r.findings), msgs
