"""A produced stream written to a captured topic and to Kafka reads back message for message."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdclake.model import Origin, RawMessage
from cdclake.producer import ProducerError, produce_to_kafka
from cdclake.producer import write_captured as write
from cdclake.sources.captured import CapturedTopics, read_partition
from cdclake.sources.kafka import KafkaTopics
from cdclake.sources.ranges import OffsetRange, as_messages
from cdclake.workload import Stream, Workload, WorkloadSpec, messages, produce
from tests.kafka import Kafka


@pytest.fixture(scope="module")
def stream() -> Stream:
    return produce(Workload(WorkloadSpec(seed=31, transactions=120)), "open", duplicates=1, topic="orders")


def records(found: list[RawMessage]) -> list[tuple[object, ...]]:
    return [(m.origin.partition, m.origin.offset, m.key, m.value, m.timestamp_ms) for m in found]  # type: ignore[union-attr]


def test_a_captured_topic_holds_the_stream(stream: Stream, tmp_path: Path) -> None:
    assert write(stream, tmp_path, stream.topic) == len(stream)
    read = [m for p in range(4) for m in read_partition(tmp_path, "orders", p)]
    assert records(read) == records(list(stream))
    assert set(CapturedTopics(tmp_path).extents()) == {("orders", p) for p in range(4)}


def test_a_stream_too_large_to_hold_is_written_as_it_is_produced(stream: Stream, tmp_path: Path) -> None:
    workload = Workload(WorkloadSpec(seed=31, transactions=120))
    written = write(messages(workload, "open", duplicates=1, topic="orders"), tmp_path, "orders")
    assert written == len(stream)
    assert records([m for p in range(4) for m in read_partition(tmp_path, "orders", p)]) == records(list(stream))


def test_kafka_gets_each_message_in_its_partition(stream: Stream, kafka: Kafka) -> None:
    config = {"bootstrap.servers": kafka.bootstrap}
    assert produce_to_kafka(stream, config, "orders") == len(stream)
    source = KafkaTopics(config, names=["orders"])
    extents = source.extents()
    assert {p: extent.high for (_, p), extent in extents.items()} == {p: len(m) for p, m in stream.partitions.items()}
    read = [m for (topic, p), e in sorted(extents.items())
            for m in as_messages(source.records(OffsetRange(topic, p, e.low, e.high)), topic, p)]
    assert records(read) == records(list(stream))


def test_a_message_without_a_partition_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProducerError, match="without a partition"):
        write([RawMessage(None, b"x", Origin(file="f"))], tmp_path, "t")
