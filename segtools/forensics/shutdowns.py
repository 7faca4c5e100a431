"""Unclean shutdowns (docs/REPORT.md "Unclean shutdowns"): one event per broker restart that
did not follow a clean stop, from three kinds of evidence.

- The controller's answer (Kafka 3.7+, ELR on): a broker registers with the broker epoch its
  ``.kafka_cleanshutdown`` file held (``previousBrokerEpoch``); when that is not the epoch of
  its last registration the controller drops it from every ISR and ELR in the records it
  writes just before the new ``RegisterBrokerRecord`` (metadata/src/main/java/org/apache/kafka/
  controller/ClusterControlManager.java registerBroker; ReplicationControlManager.java
  handleBrokerUncleanShutdown).
- Without ELR the controller writes nothing about how a broker stopped (a follower's clean
  stop is fenced at once, without an InControlledShutdown record, exactly like a crash once
  its session times out), so the metadata alone cannot tell; the log dir can.
- The log dir: ``.kafka_cleanshutdown`` is written at the end of a clean stop and deleted at
  startup (core/src/main/scala/kafka/log/LogManager.scala); its ``brokerEpoch`` names the session it
  closed.
"""

from __future__ import annotations

import os
from typing import Any

UNCLEAN_SHUTDOWN = "unclean shutdown"


def unclean_shutdowns_from_history(histories: Any) -> list[dict[str, Any]]:
    """Events ``{"event": "unclean shutdown", "broker", "broker_epoch" (the new session),
    "previous_broker_epoch", "detected_by": "controller", "removed_from": [{"topic",
    "partition"}], offset/timestamp_ms/file/position of the registration}`` in log order,
    from ``Histories.timeline``: re-registrations the controller answered by dropping the
    broker from ISR/ELR in the records right before the registration (Kafka writes them first,
    in the registration's batch)."""
    names = {h.topic_id: h.topic for h in histories.values()}
    timeline: list[tuple[str, int, dict[str, Any]]] = histories.timeline
    last_epoch: dict[int, int | None] = {}
    out: list[dict[str, Any]] = []
    for i, (kind, broker, info) in enumerate(timeline):
        if kind != "registered":
            continue
        epoch = info.get("broker_epoch")
        if broker in last_epoch:
            removed = []
            j = i - 1
            while j >= 0 and timeline[j][0] == "removed":
                k, b, rinfo = timeline[j]
                if b == broker:
                    removed.append({"topic": names.get(rinfo["topic_id"], rinfo["topic_id"]),
                                    "partition": rinfo["partition"]})
                j -= 1
            if removed:
                ev: dict[str, Any] = {k: v for k, v in info.items()
                                      if k in ("offset", "timestamp_ms", "file", "position")}
                ev.update({"event": UNCLEAN_SHUTDOWN, "broker": broker, "broker_epoch": epoch,
                           "previous_broker_epoch": last_epoch[broker],
                           "detected_by": "controller",
                           "removed_from": sorted(removed, key=lambda r: (str(r["topic"]), r["partition"]))})
                out.append(ev)
        last_epoch[broker] = epoch
    return out


def broker_state_at_end(events: list[dict[str, Any]], broker: int) -> tuple[int | None, bool | None]:
    """(epoch of the broker's last registration, fenced at the end of the metadata log)."""
    epoch: int | None = None
    fenced: bool | None = None
    for e in events:
        if e.get("broker") != broker:
            continue
        if e.get("event") == "registered":
            epoch, fenced = e.get("broker_epoch"), bool(e.get("fenced", True))
        elif e.get("event") in ("fenced", "unfenced", "registration changed", "unregistered"):
            if e.get("event") == "fenced" or e.get("event") == "unregistered":
                fenced = True
            elif e.get("event") == "unfenced":
                fenced = False
            elif "fenced" in e:
                fenced = bool(e["fenced"])
    return epoch, fenced


def last_stop(log_dir: str, clean_shutdown: bool, broker: int | None,
              events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the log dir says about the broker's last stop: ``clean_shutdown_file``,
    ``clean_shutdown_broker_epoch``, ``last_stop`` (``clean``, ``unclean``, ``running``,
    ``unclean or running``). With the metadata log's broker events (``Histories.brokers``): a
    broker fenced at the end without the file stopped uncleanly; one unfenced at the end is
    (was, when copied) running; a file whose epoch is not the broker's last registration is
    ``stale_clean_shutdown_file`` (a restored or copied dir)."""
    epoch = None
    if clean_shutdown and log_dir and os.path.isdir(log_dir):
        from segtools.errors import SegtoolsError
        from segtools.files.checkpoints import read_clean_shutdown

        try:
            epoch = read_clean_shutdown(os.path.join(log_dir, ".kafka_cleanshutdown")).broker_epoch
        except (SegtoolsError, OSError):
            epoch = None
    state = "clean" if clean_shutdown else "unclean or running"
    out: dict[str, Any] = {"clean_shutdown_file": bool(clean_shutdown),
                           "clean_shutdown_broker_epoch": epoch}
    if events and broker is not None:
        reg_epoch, fenced = broker_state_at_end(events, broker)
        if reg_epoch is not None:
            out["last_registration_epoch"] = reg_epoch
            if not clean_shutdown:
                state = "unclean" if fenced else "running"
            elif epoch is not None and epoch != reg_epoch:
                out["stale_clean_shutdown_file"] = True
    out["last_stop"] = state
    return out


def unclean_stops_from_log_dirs(partitions: Any) -> list[dict[str, Any]]:
    """Broker events ``{"event": "unclean shutdown", "broker", "broker_epoch": null,
    "previous_broker_epoch" (the session that ended: the last registration), "detected_by":
    "log_dir", "log_dirs"}``, one per broker whose replicas say ``last_stop: unclean`` (fenced
    at the end of the metadata log, no ``.kafka_cleanshutdown``): the per-replica ``shutdown``
    of ``CompareReport.partitions`` lifted to ``metadata.brokers``, so a crash the controller
    wrote nothing about is listed with the restarts it did answer."""
    found: dict[int, dict[str, Any]] = {}
    for p in partitions:
        for rv in p.verdict.replicas:
            sd = rv.shutdown or {}
            if sd.get("last_stop") != "unclean":
                continue
            ev = found.setdefault(rv.broker, {
                "event": UNCLEAN_SHUTDOWN, "broker": rv.broker, "broker_epoch": None,
                "previous_broker_epoch": sd.get("last_registration_epoch"),
                "detected_by": "log_dir", "log_dirs": []})
            if rv.log_dir and rv.log_dir not in ev["log_dirs"]:
                ev["log_dirs"].append(rv.log_dir)
    for ev in found.values():
        ev["log_dirs"].sort()
    return [found[b] for b in sorted(found)]
