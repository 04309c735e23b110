"""Where raw records come from: Kafka, or topics captured to files. Both yield RawMessages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cdclake.errors import OptionError
from cdclake.sources.captured import CapturedTopics
from cdclake.sources.kafka import KafkaTopics
from cdclake.sources.ranges import Source


def open_source(*, captured: str | Path | None = None, kafka: Mapping[str, Any] | None = None,
                topics: Sequence[str] | None = None, topic_pattern: str | None = None) -> Source:
    """A captured topic directory, or Kafka topics (``kafka``: librdkafka settings, ``bootstrap.servers``
    at least) named or matching ``topic_pattern``; all the captured topics where none are named."""
    if (captured is None) == (kafka is None):
        raise OptionError("give captured (a directory) or kafka (librdkafka settings), one of them")
    if isinstance(topics, str):  # else read letter by letter: "shop" as the topics s, h, o, p
        raise OptionError(f"topics is a list of topic names, not one string: topics=[{topics!r}]")
    if captured is not None:
        if topic_pattern is not None:
            raise OptionError("a topic pattern is for Kafka; name captured topics with topics")
        root = Path(captured)
        if not root.is_dir():
            raise OptionError(f"captured = {str(captured)!r} is not a directory")
        return CapturedTopics(root, list(topics) if topics else None)
    assert kafka is not None
    if "bootstrap.servers" not in kafka:
        raise OptionError("kafka needs at least bootstrap.servers")
    if (topics is None) == (topic_pattern is None):
        raise OptionError("with kafka, give topics or a topic pattern, one of them")
    return KafkaTopics({k: str(v) for k, v in kafka.items()}, list(topics) if topics else None, topic_pattern)
