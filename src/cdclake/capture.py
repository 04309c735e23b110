"""Kafka topics captured into a directory (the layout of docs/captured-topics.md), resumably.

A pass reads every partition of the selected topics from where its capture ends (from the partition's
low watermark where nothing is captured yet) up to the high watermark seen when the pass began, and
writes each record under its Kafka offset. Stopping at any point, even by a crash, loses nothing a rerun
cannot complete: the writer syncs what it wrote, cuts a torn last line when it next opens the partition,
and the rerun reads on from one past the last record kept, so the capture has neither duplicates nor
gaps. Where Kafka no longer holds the records a capture would continue with, or holds fewer than were
captured, the capture stops with an error rather than leave a hole or mix two histories.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdclake.sources.captured import (
    SEGMENT_RECORDS,
    CapturedTopicWriter,
    CaptureError,
    TornLine,
    is_partition_name,
    is_segment_name,
    partition_dir,
)
from cdclake.sources.kafka import KafkaTopics
from cdclake.sources.ranges import OffsetRange, PartitionExtent, plan_ranges

# How often a copy reports progress, in records: often enough for a live display, rarely enough to cost
# nothing beside writing the records.
_PROGRESS_EVERY = 1000


@dataclass
class PartitionCapture:
    """What one partition received from a capture: ``records`` records, offsets ``first`` to ``last``."""

    topic: str
    partition: int
    records: int = 0
    first: int | None = None
    last: int | None = None


class KafkaCapture:
    """Kafka topics, named or matching a regular expression, captured into the directory ``root``.

    ``config`` is librdkafka configuration as :class:`~cdclake.sources.kafka.KafkaTopics` takes it
    (``bootstrap.servers``, ``security.protocol``, ``sasl.*``, ``ssl.*`` ...). With ``fresh``, the first
    pass refuses a partition that already holds captured records instead of continuing it.
    """

    def __init__(self, config: Mapping[str, Any], root: Path, names: list[str] | None = None,
                 pattern: str | None = None, *, fresh: bool = False,
                 segment_records: int = SEGMENT_RECORDS) -> None:
        self.root = Path(root)
        check_capture_directory(self.root)
        self.kafka = KafkaTopics(config, names=names, pattern=pattern)
        self.partitions: dict[tuple[str, int], PartitionCapture] = {}
        self._fresh = fresh
        self._segment_records = segment_records
        self._writers: dict[str, CapturedTopicWriter] = {}

    @property
    def repaired(self) -> list[TornLine]:
        """The torn last lines cut from earlier captures before continuing them."""
        return [torn for writer in self._writers.values() for torn in writer.repaired]

    def run(self, max_records: int | None = None, *, follow: bool = False, every_s: float = 1.0,
            on_pass: Callable[[int], None] | None = None, on_records: Callable[[int], None] | None = None) -> int:
        """Capture until caught up with the high watermarks seen at the start; with ``follow``, go on with
        a pass every ``every_s`` seconds until interrupted. Stops early once ``max_records`` are written.

        ``on_pass`` hears how many offsets each pass plans to read (the most records it can copy),
        ``on_records`` how many records were copied since it last heard. Returns the records copied.
        """
        copied = 0
        while True:
            left = None if max_records is None else max_records - copied
            ranges = self.plan(left)
            if on_pass is not None:
                on_pass(sum(r.size for r in ranges))
            copied += sum(self.copy(r, on_records) for r in ranges)
            self.sync()
            if not follow or (max_records is not None and copied >= max_records):
                return copied
            time.sleep(every_s)

    def plan(self, max_records: int | None = None) -> list[OffsetRange]:
        """The ranges that bring every selected partition up to its high watermark now, at most
        ``max_records`` offsets in all, shared evenly between the partitions."""
        extents = self.kafka.extents()
        positions = {}
        for (topic, partition), extent in extents.items():
            self.partitions.setdefault((topic, partition), PartitionCapture(topic, partition))
            position = self._writer(topic).next_offset(partition)
            if position is not None:
                self._check_continues(topic, partition, position, extent)
                positions[(topic, partition)] = position
        self._fresh = False  # later passes continue what the first one wrote
        backlog = sum(extent.high - extent.low for extent in extents.values())
        return plan_ranges(extents, positions, backlog if max_records is None else max_records)

    def copy(self, offset_range: OffsetRange, on_records: Callable[[int], None] | None = None) -> int:
        """Write the records of ``offset_range`` under their offsets; returns how many there were (fewer
        than its size where Kafka holds gaps: compacted records, transaction markers)."""
        topic, partition = offset_range.topic, offset_range.partition
        writer = self._writer(topic)
        summary = self.partitions.setdefault((topic, partition), PartitionCapture(topic, partition))
        copied = 0
        for offset, timestamp_ms, key, value, headers in self.kafka.records(offset_range):
            writer.append(partition, key, value, timestamp_ms, headers, offset=offset)
            if summary.first is None:
                summary.first = offset
            summary.last = offset
            summary.records += 1
            copied += 1
            if on_records is not None and copied % _PROGRESS_EVERY == 0:
                on_records(_PROGRESS_EVERY)
        if on_records is not None and copied % _PROGRESS_EVERY:
            on_records(copied % _PROGRESS_EVERY)
        return copied

    def sync(self) -> None:
        """Make every record copied so far durable."""
        for writer in self._writers.values():
            writer.sync()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()

    def __enter__(self) -> KafkaCapture:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _writer(self, topic: str) -> CapturedTopicWriter:
        if topic not in self._writers:
            self._writers[topic] = CapturedTopicWriter(self.root, topic, self._segment_records)
        return self._writers[topic]

    def _check_continues(self, topic: str, partition: int, position: int, extent: PartitionExtent) -> None:
        """Refuse a capture that Kafka's partition cannot continue without a hole or a second history."""
        where = partition_dir(self.root, topic, partition)
        if self._fresh:
            raise CaptureError(f"{where} already holds a capture of {topic}[{partition}], up to offset "
                               f"{position - 1}; resume it, or capture into another directory")
        if position > extent.high:
            raise CaptureError(f"{where}: captured up to offset {position - 1}, but Kafka's {topic}[{partition}] "
                               f"ends at {extent.high - 1}: the topic was recreated, or this capture is of another "
                               "cluster; capture into another directory")
        if position < extent.low:
            raise CaptureError(f"{where}: the capture continues at offset {position}, but Kafka's "
                               f"{topic}[{partition}] now starts at {extent.low}: offsets {position} to "
                               f"{extent.low - 1} were deleted before they were captured; capture into another "
                               "directory to start again")


def check_capture_directory(root: Path) -> None:
    """Refuse a ``root`` that holds anything but captured topics: each entry a topic directory, each
    of those holding partition directories named by number, each of those holding segments."""
    if not root.exists():
        return
    if not root.is_dir():
        raise CaptureError(f"{root} is not a directory; captured topics go in a directory")
    expected = "<topic>/<partition>/<base offset>.jsonl"
    for topic in root.iterdir():
        if not topic.is_dir():
            raise CaptureError(f"{root} holds {topic.name!r}, which is not a captured topic ({expected}); "
                               "capture into an empty directory or an earlier capture")
        for partition in topic.iterdir():
            if not (partition.is_dir() and is_partition_name(partition.name)):
                raise CaptureError(f"{topic} holds {partition.name!r}, which is not a partition directory "
                                   f"({expected})")
            for segment in partition.iterdir():
                if not (segment.is_file() and is_segment_name(segment.name)):
                    raise CaptureError(f"{partition} holds {segment.name!r}, which is not a segment ({expected})")
