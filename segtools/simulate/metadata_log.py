"""The controller's KRaft ``__cluster_metadata-0`` log (FORENSICS.md A.9): broker registration and
fencing, topics, partitions and every leader/ISR/leader-recovery-state change, one record per
batch, so ``segtools dump --cluster-metadata-decoder`` (and kafka-dump-log) can replay elections.
"""

from __future__ import annotations

import os

from segtools.files.checkpoints import (
    write_leader_epoch_checkpoint,
    write_partition_metadata,
    write_quorum_state,
)
from segtools.internal_topics.metadata import encode_record
from segtools.simulate.cluster import Cluster
from segtools.writer import LogWriter, NewRecord, build_batch

#: the controller quorum: one voter, leading raft epoch 1 from the start
CONTROLLER_ID = 3000
RAFT_EPOCH = 1
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.ONE_UUID (FORMATS.md section 10)


def write_metadata_log(cluster: Cluster, controller_dir: str) -> None:
    pdir = os.path.join(controller_dir, "__cluster_metadata-0")
    writer = LogWriter(pdir, segment_bytes=cluster.spec.segment_bytes,
                       index_interval_bytes=cluster.spec.index_interval_bytes,
                       segment_index_bytes=cluster.spec.segment_index_bytes)
    for offset, (type_name, version, data, time_ms) in enumerate(cluster.controller.events):
        value = encode_record(type_name, version, data)
        writer.append(build_batch([NewRecord(None, value, (), time_ms)], base_offset=offset,
                                  partition_leader_epoch=RAFT_EPOCH))
    writer.close()
    write_leader_epoch_checkpoint(os.path.join(pdir, "leader-epoch-checkpoint"), [(RAFT_EPOCH, 0)])
    write_partition_metadata(os.path.join(pdir, "partition.metadata"), METADATA_TOPIC_ID)
    write_quorum_state(os.path.join(pdir, "quorum-state"), {
        "clusterId": "", "leaderId": CONTROLLER_ID, "leaderEpoch": RAFT_EPOCH, "votedId": -1,
        "appliedOffset": 0, "currentVoters": [{"voterId": CONTROLLER_ID}], "data_version": 0})
