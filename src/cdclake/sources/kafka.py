"""Kafka through confluent-kafka (librdkafka): the driver asks for partition extents, executors read
offset ranges. The consumer group is never the source of truth: positions come from the tables, and
no offset is committed to Kafka.

``config`` is librdkafka configuration passed through as it is (``bootstrap.servers``,
``security.protocol``, ``sasl.*``, ``ssl.*`` ...).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from cdclake.errors import CdclakeError, OptionError
from cdclake.model import RawMessage
from cdclake.sources.ranges import OffsetRange, PartitionExtent, SourceRecord, as_messages

_TIMEOUT_S = 30.0
# How long the driver waits for a broker's metadata: an unreachable broker is reported in seconds.
_METADATA_TIMEOUT_S = 10.0
_POLL_S = 0.5
_BATCH = 1000


class KafkaSourceError(CdclakeError):
    """Kafka did not answer as expected: names the broker's error and the partition."""


def _consumer(config: Mapping[str, Any]) -> Consumer:
    settings = {
        "group.id": "cdclake",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
        # librdkafka logs every failed connection attempt to stderr, hundreds for an unreachable
        # broker; its errors reach us as exceptions anyway. A user's own log_level wins.
        "log_level": 0,
        **config,
    }
    return Consumer(settings)


def _reason(exc: KafkaException) -> str:
    """librdkafka's own words for a failure: its KafkaError's text, without the wrapper's repr."""
    error = exc.args[0] if exc.args else exc
    return error.str() if isinstance(error, KafkaError) else str(error)


def check_settings(config: Mapping[str, Any]) -> None:
    """Refuse a setting librdkafka does not take (an unknown name, a value out of its range) with its
    reason, before anything else is done: librdkafka judges them only where a client is made, and that
    is inside a batch, or on a Spark executor. The client made here has no brokers, so it asks none, and
    logs nothing (a producer setting's warning is left to the clients that do the work)."""
    try:
        _consumer({"log_level": 0, **{k: v for k, v in config.items() if k != "bootstrap.servers"}}).close()
    except KafkaException as exc:
        raise OptionError(f"a Kafka setting librdkafka refuses: {_reason(exc)}") from None


def create_topic(config: Mapping[str, Any], name: str, partitions: int) -> None:
    """A new topic of ``partitions`` partitions (one replica each) on the cluster of ``config``, there
    for every client once this returns."""
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic  # where confluent-kafka defines it

    admin = AdminClient({"log_level": 0, **config})
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=_TIMEOUT_S)
    except KafkaException as exc:
        raise KafkaSourceError(f"Kafka at {config.get('bootstrap.servers')} did not create topic {name!r}: "
                               f"{_reason(exc)}") from None
    deadline = time.monotonic() + _TIMEOUT_S
    while name not in admin.list_topics(timeout=_METADATA_TIMEOUT_S).topics and time.monotonic() < deadline:
        time.sleep(0.05)


class KafkaTopics:
    """Topics named, or matching a regular expression, on one Kafka cluster."""

    def __init__(self, config: Mapping[str, Any], names: list[str] | None = None, pattern: str | None = None) -> None:
        if (names is None) == (pattern is None):
            raise ValueError("give topic names or a pattern, not both or neither")
        check_settings(config)
        self.config = dict(config)
        self.names = names
        self.pattern = re.compile(pattern) if pattern is not None else None

    def extents(self) -> dict[tuple[str, int], PartitionExtent]:
        """Every partition of the topics wanted, with its offsets; an error where a named topic does
        not exist or the pattern matches none, since a job reading nothing would otherwise end as if
        it had caught up."""
        brokers = self.config.get("bootstrap.servers")
        consumer = _consumer(self.config)
        try:
            metadata = consumer.list_topics(timeout=_METADATA_TIMEOUT_S)
            wanted = [t for t in sorted(metadata.topics) if self._wants(t)]
            self._check_found(brokers, wanted)
            found = {}
            for topic in wanted:
                for partition in sorted(metadata.topics[topic].partitions):
                    low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=_TIMEOUT_S)
                    found[(topic, partition)] = PartitionExtent(low, high)
            return found
        except KafkaException as exc:
            raise KafkaSourceError(f"Kafka at {brokers} did not list the partitions of {self._wanted()}: "
                                   f"{_reason(exc)}") from None
        finally:
            consumer.close()

    def _check_found(self, brokers: Any, wanted: list[str]) -> None:
        if self.pattern is not None and not wanted:
            raise KafkaSourceError(f"no topic at Kafka {brokers} matches {self.pattern.pattern!r}")
        missing = [name for name in self.names or () if name not in wanted]
        if missing:
            raise KafkaSourceError(f"Kafka at {brokers} has no topic {', '.join(map(repr, missing))}")

    def _wanted(self) -> str:
        if self.pattern is not None:
            return f"the topics matching {self.pattern.pattern!r}"
        return ", ".join(map(repr, self.names or ()))

    def _wants(self, topic: str) -> bool:
        if self.pattern is not None:
            return self.pattern.fullmatch(topic) is not None and not topic.startswith("__")
        return self.names is not None and topic in self.names

    def records(self, offset_range: OffsetRange) -> Iterator[SourceRecord]:
        return range_records(self.config, offset_range)


def read_range(config: Mapping[str, Any], offset_range: OffsetRange) -> Iterator[RawMessage]:
    """The records of ``offset_range`` in offset order as raw messages (see :func:`range_records`)."""
    return as_messages(range_records(config, offset_range), offset_range.topic, offset_range.partition)


def range_records(config: Mapping[str, Any], offset_range: OffsetRange) -> Iterator[SourceRecord]:
    """The records of ``offset_range`` in offset order; stops at its end, or where the partition ends
    first (a range planned past a compacted tail)."""
    if offset_range.size <= 0:
        return
    topic, partition = offset_range.topic, offset_range.partition
    consumer = _consumer(config)
    try:
        consumer.assign([TopicPartition(topic, partition, offset_range.start)])
        next_offset, waited_since = offset_range.start, time.monotonic()
        while True:
            # Ask for no more than the range still holds, so consume() returns as soon as it has them.
            messages = consumer.consume(min(_BATCH, offset_range.end - next_offset), timeout=_POLL_S)
            if not messages:
                if time.monotonic() - waited_since > _TIMEOUT_S:
                    raise KafkaSourceError(f"{topic}[{partition}]: no record for {_TIMEOUT_S}s reading {offset_range}")
                continue
            waited_since = time.monotonic()
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return
                    raise KafkaSourceError(f"{topic}[{partition}]: {error}")
                offset = message.offset()
                if offset is None:
                    raise KafkaSourceError(f"{topic}[{partition}]: a record without an offset")
                if offset >= offset_range.end:
                    return
                timestamp_type, timestamp = message.timestamp()
                yield (offset, timestamp if timestamp_type else None, message.key(), message.value(),
                       _headers(message.headers()))
                next_offset = offset + 1
                if next_offset >= offset_range.end:
                    return
    finally:
        consumer.close()


def _headers(headers: Any) -> tuple[tuple[str, bytes], ...]:
    pairs = headers.items() if isinstance(headers, dict) else headers or ()
    return tuple((name, value.encode() if isinstance(value, str) else value or b"") for name, value in pairs)
