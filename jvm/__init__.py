"""Holds ``pom.xml``: the pinned Apache Kafka that segtools resolves with Maven (see
``segtools.realcluster.kafka_runtime``). Installed as ``segtools.jvm`` so the pom ships with the package."""
