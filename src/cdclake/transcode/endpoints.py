"""Where a transcode reads from and writes to: a :class:`Location` as the command line gives it (a Kafka
topic or a captured topic's directory), its source, and the :class:`Sink` its output goes to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from cdclake.errors import OptionError
from cdclake.model import RawMessage
from cdclake.producer import produce_to_kafka, write_captured
from cdclake.sources.captured import CapturedTopics, is_partition_name, partition_extent
from cdclake.sources.kafka import KafkaTopics
from cdclake.sources.ranges import Source
from cdclake.transcode.spec import TranscodeError

# --- where from and where to ---------------------------------------------------------------------------


class Sink(Protocol):
    """Where a transcoded topic goes: its partitions' ends, and appending messages, each to the partition
    its origin names."""

    @property
    def topic(self) -> str: ...

    def ends(self, partitions: int) -> dict[int, int]: ...

    def end(self, partition: int) -> int: ...

    def write(self, messages: list[RawMessage]) -> int: ...


@dataclass(frozen=True)
class CapturedSink:
    """A captured topic (docs/captured-topics.md): ``root/topic/<partition>/``."""

    root: Path
    topic: str

    def ends(self, partitions: int) -> dict[int, int]:
        return {partition: self.end(partition) for partition in range(partitions)}

    def end(self, partition: int) -> int:
        extent = partition_extent(self.root, self.topic, partition)
        return 0 if extent is None else extent.high

    def write(self, messages: list[RawMessage]) -> int:
        return write_captured(messages, self.root, self.topic)


@dataclass(frozen=True)
class KafkaSink:
    """A Kafka topic that exists with at least the layout's partitions; librdkafka ``config``."""

    config: Mapping[str, Any]
    topic: str

    def ends(self, partitions: int) -> dict[int, int]:
        extents = KafkaTopics(self.config, names=[self.topic]).extents()
        found = sorted(partition for topic, partition in extents if topic == self.topic)
        if len(found) < partitions:
            raise TranscodeError(f"Kafka topic {self.topic} has {len(found)} partitions; the target layout needs "
                                 f"{partitions} (create the topic with them, or give --partitions {len(found)})")
        return {partition: extents[(self.topic, partition)].high for partition in range(partitions)}

    def end(self, partition: int) -> int:
        return self.ends(partition + 1)[partition]

    def write(self, messages: list[RawMessage]) -> int:
        return produce_to_kafka(messages, self.config, self.topic)


@dataclass(frozen=True)
class Location:
    """``kafka://HOST:PORT[,HOST:PORT]/TOPIC``, or the directory of a captured topic (``ROOT/TOPIC``)."""

    topic: str
    root: Path | None = None
    kafka: Mapping[str, Any] | None = None

    @classmethod
    def parse(cls, text: str, kafka_config: Mapping[str, Any] | None = None) -> Location:
        if text.startswith("kafka://"):
            parts = urlsplit(text)
            topic = parts.path.strip("/")
            if not parts.netloc or not topic or "/" in topic:
                raise OptionError(f"{text!r}: expected kafka://HOST:PORT[,HOST:PORT]/TOPIC")
            return cls(topic, kafka={**(kafka_config or {}), "bootstrap.servers": parts.netloc})
        if "://" in text:
            raise OptionError(f"{text!r}: a kafka://HOST:PORT/TOPIC address or a captured topic's directory")
        path = Path(text)
        if not path.name:
            raise OptionError(f"{text!r}: name the captured topic's own directory, ROOT/TOPIC")
        return cls(path.name, root=path.parent)

    def source(self) -> Source:
        if self.kafka is not None:
            return KafkaTopics(self.kafka, names=[self.topic])
        assert self.root is not None
        directory = self.root / self.topic
        if not directory.is_dir():
            raise OptionError(f"{directory}: no captured topic there")
        inside = sorted(p.name for p in directory.iterdir() if p.is_dir())
        # Only where no folder is a partition: a stray folder among partitions is the reader's to refuse.
        if not any(map(is_partition_name, inside)):
            hint = f" (a root of captured topics? its topics: {', '.join(inside)})" if inside else ""
            raise OptionError(f"{directory}: no partition directories (0/, 1/ ...) there{hint}; name the captured "
                              "topic's own directory, ROOT/TOPIC")
        return CapturedTopics(self.root, [self.topic])

    def sink(self) -> Sink:
        if self.kafka is not None:
            return KafkaSink(dict(self.kafka), self.topic)
        assert self.root is not None
        return CapturedSink(self.root, self.topic)

    def __str__(self) -> str:
        if self.kafka is not None:
            return f"kafka://{self.kafka['bootstrap.servers']}/{self.topic}"
        assert self.root is not None
        return str(self.root / self.topic)
