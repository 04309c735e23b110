"""Where a produced stream goes: a captured topic on disk, or a Kafka topic.

Both take any iterable of messages whose origins name their partition (the transcoder's, or the
simulator's :class:`~cdclake.workload.production.Stream` and :func:`~cdclake.workload.production.messages`
for a stream too large to hold), and keep each partition's messages in order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cdclake.model import RawMessage
from cdclake.producer.rules import ProducerError
from cdclake.sources.captured import CapturedTopicWriter

_POLL_EVERY = 10_000  # messages between two polls, which serve delivery reports and free the queue


def _partition(message: RawMessage) -> int:
    if message.origin is None or message.origin.partition is None:
        raise ProducerError(f"a message without a partition in its origin cannot be placed: {message.origin}")
    return message.origin.partition


def write_captured(messages: Iterable[RawMessage], root: Path, topic: str) -> int:
    """Append the messages to the captured topic ``topic`` under ``root``
    (docs/captured-topics.md), each partition continuing where it ends; the number written."""
    written = 0
    with CapturedTopicWriter(Path(root), topic) as writer:
        for message in messages:
            writer.append(_partition(message), message.key, message.value, message.timestamp_ms, message.headers)
            written += 1
    return written


def produce_to_kafka(messages: Iterable[RawMessage], config: Mapping[str, Any], topic: str) -> int:
    """Send the messages to ``topic`` on the Kafka cluster of ``config`` (librdkafka settings), each to
    its own partition, and wait until every one is acknowledged; the number sent.

    The producer is idempotent unless ``config`` says otherwise, so that a retry neither duplicates nor
    reorders a partition's messages: duplicates belong in the stream only where it puts them.
    """
    # Imported here: the rest of the producer package (and whoever imports it) does not need Kafka.
    from confluent_kafka import KafkaError, Producer

    failures: list[str] = []

    def delivered(error: KafkaError | None, message: Any) -> None:
        if error is not None:
            failures.append(f"partition {message.partition()}: {error}")

    producer = Producer({"enable.idempotence": True, **config})
    sent = 0
    for message in messages:
        headers: list[tuple[str, str | bytes | None]] | None = list(message.headers) or None
        while True:
            try:
                producer.produce(topic, value=message.value, key=message.key, partition=_partition(message),
                                 timestamp=message.timestamp_ms or 0, headers=headers, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.5)
        sent += 1
        if sent % _POLL_EVERY == 0:
            producer.poll(0)
    remaining = producer.flush(60)
    if remaining:
        raise ProducerError(f"Kafka topic {topic}: {remaining} of {sent} messages not acknowledged after 60 s")
    if failures:
        raise ProducerError(f"Kafka topic {topic}: {len(failures)} of {sent} messages not delivered; first: "
                            f"{failures[0]}")
    return sent
