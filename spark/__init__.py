"""segtools on Spark: the ``kafka_segments`` data source and the compare pipeline.

    import segtools.spark
    segtools.spark.register(spark)
    spark.read.format("kafka_segments").load("/var/lib/kafka/data")
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``kafka_segments`` Python data source on ``spark`` (idempotent)."""
    from segtools.spark.datasource import KafkaSegmentsDataSource

    spark.dataSource.register(KafkaSegmentsDataSource)


__all__ = ["register"]
