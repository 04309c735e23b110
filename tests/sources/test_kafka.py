"""Kafka sources against a real Apache Kafka broker: extents, range reads, topic patterns."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator

import pytest

from cdclake.localkafka import LocalKafka, free_ports, new_cluster_id
from cdclake.sources.kafka import KafkaTopics, read_range
from cdclake.sources.ranges import OffsetRange, PartitionExtent, plan_ranges
from tests.kafka import Kafka


@pytest.fixture(scope="module")
def filled(kafka_broker: LocalKafka) -> Iterator[Kafka]:
    cluster = Kafka(kafka_broker)
    for i in range(10):
        cluster.produce("orders", i % 2, f"v{i}".encode(), key=bytes([i, 0, 255]))
    cluster.produce("orders-archive", 0, b"x")
    cluster.produce("other", 3, None)
    cluster.flush()
    yield cluster
    cluster.delete_topics()


def test_extents_are_the_partition_watermarks(filled: Kafka) -> None:
    extents = KafkaTopics({"bootstrap.servers": filled.bootstrap}, names=["orders"]).extents()
    assert extents == {("orders", 0): PartitionExtent(0, 5), ("orders", 1): PartitionExtent(0, 5),
                       ("orders", 2): PartitionExtent(0, 0), ("orders", 3): PartitionExtent(0, 0)}


def test_pattern_selects_topics(filled: Kafka) -> None:
    extents = KafkaTopics({"bootstrap.servers": filled.bootstrap}, pattern="orders.*").extents()
    assert {topic for topic, _ in extents} == {"orders", "orders-archive"}


def test_a_range_reads_exactly_its_records(filled: Kafka) -> None:
    messages = list(read_range({"bootstrap.servers": filled.bootstrap}, OffsetRange("orders", 1, 1, 4)))
    assert [(m.origin.partition, m.origin.offset, m.value) for m in messages] == [
        (1, 1, b"v3"), (1, 2, b"v5"), (1, 3, b"v7")
    ]
    assert messages[0].key == bytes([3, 0, 255])
    assert messages[0].timestamp_ms is not None


def test_a_null_value_is_kept(filled: Kafka) -> None:
    (message,) = read_range({"bootstrap.servers": filled.bootstrap}, OffsetRange("other", 3, 0, 1))
    assert message.value is None


def test_plan_shares_the_budget_and_resumes_from_positions() -> None:
    extents = {("t", 0): PartitionExtent(0, 100), ("t", 1): PartitionExtent(10, 12), ("t", 2): PartitionExtent(0, 0)}
    assert plan_ranges(extents, {("t", 0): 40}, max_records=10) == [OffsetRange("t", 0, 40, 48),
                                                                    OffsetRange("t", 1, 10, 12)]
    assert plan_ranges(extents, {("t", 0): 100, ("t", 1): 12}, max_records=10) == []
    assert sum(r.size for r in plan_ranges(extents, {}, max_records=1000)) == 102


def test_free_ports_are_all_different_and_bindable() -> None:
    import socket

    ports = free_ports(64)
    assert len(set(ports)) == 64
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", ports[0]))


def test_a_cluster_id_never_starts_with_a_dash() -> None:
    # 0xf8 encodes to "-" first in URL-safe base64: Kafka's storage tool reads such an id as an option.
    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" + bytes(15))])
    assert new_cluster_id(lambda: next(draws)) == base64.urlsafe_b64encode(b"\x01" + bytes(15)).decode().rstrip("=")
