"""The tests' Apache Kafka: one KRaft broker on loopback for the whole run (cdclake.localkafka), and
per test a producer into it whose topics are deleted when the test ends.

The broker creates a topic on first use, as a new cluster does, with 4 partitions (the tests'
``num.partitions``); a test that needs another count creates its topic first.
"""

from __future__ import annotations

import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from cdclake.localkafka import LocalKafka

BROKER_SETTINGS = {"num.partitions": "4"}


class Kafka:
    """A producer into ``broker``, and the topics it leaves behind deleted by :meth:`delete_topics`."""

    def __init__(self, broker: LocalKafka) -> None:
        self.broker = broker
        self.bootstrap = broker.bootstrap
        self.producer = Producer({"bootstrap.servers": self.bootstrap})

    def create_topic(self, name: str, partitions: int) -> None:
        self.broker.create_topic(name, partitions)

    def produce(self, topic: str, partition: int, value: bytes | None, key: bytes | None = None) -> None:
        self.producer.produce(topic, value=value, key=key, partition=partition)

    def flush(self) -> None:
        assert self.producer.flush(30) == 0, "Kafka did not take every message within 30 s"

    def delete_topics(self) -> None:
        """Every topic but Kafka's own, gone once this returns, so the next test may use the same names."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        topics = [name for name in admin.list_topics(timeout=10).topics if not name.startswith("__")]
        if not topics:
            return
        for future in admin.delete_topics(topics).values():
            future.result(timeout=30)
        deadline = time.monotonic() + 30
        while set(topics) & set(admin.list_topics(timeout=10).topics) and time.monotonic() < deadline:
            time.sleep(0.05)
        # A producer keeps the deleted topics' metadata: a new one finds the topics made anew.
        self.producer = Producer({"bootstrap.servers": self.bootstrap})
