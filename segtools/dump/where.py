"""`segtools dump --where EXPR`: the filter language of segtools/filters.py applied while
dumping (docs/CONTRACT.md section 9). A file whose partition cannot match prints only its
header lines; a batch whose header rules every record out is not printed; with deep iteration
only matching records are printed (a batch line is printed when its header may match)."""

from __future__ import annotations

import os
from typing import Any

from segtools.files.sources import is_partition_dir_name, parse_partition_dir_name
from segtools.filters import RecordFilter, compiled


class DumpWhere:
    def __init__(self, where: tuple[str, ...], producer_ids: tuple[int, ...] | None, path: str) -> None:
        self.filter: RecordFilter = compiled(where, producer_ids)
        folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
        if is_partition_dir_name(folder):
            self.topic, self.partition, _ = parse_partition_dir_name(folder)
        else:
            self.topic, self.partition = "", -1

    def file_wanted(self) -> bool:
        return self.partition < 0 or self.filter.wants_partition(self.topic, self.partition)

    def batch(self, batch: Any) -> bool:
        return self.filter.batch_may_match(batch.base_offset, batch.last_offset, batch.max_timestamp,
                                           batch.producer_id, batch.producer_epoch,
                                           batch.partition_leader_epoch)

    def record(self, batch: Any, record: Any) -> bool:
        return self.filter.record_matches(self.topic, self.partition, record.offset, record.timestamp,
                                          record.key, record.value, batch.producer_id,
                                          batch.producer_epoch, batch.partition_leader_epoch)
