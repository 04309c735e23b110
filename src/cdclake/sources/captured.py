"""Captured topics: a Kafka topic saved to a directory, so a stream can be kept, shared and replayed.

Layout (documented in docs/captured-topics.md)::

    <root>/<topic>/<partition>/<base offset, 20 digits>.jsonl

Each partition is a folder of segments named, as Kafka names its log segments, by the offset of their
first record. Each line of a segment is one record::

    {"offset": 42, "timestamp": 1700000000000, "key": "<base64>" | null, "value": "<base64>" | null,
     "headers": [["name", "<base64>"], ...]}

Offsets rise within a partition and may have gaps (a compacted or filtered capture keeps its original
offsets). Base64 keeps every byte of binary formats (Open Protocol, Avro) exact.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from cdclake.errors import CdclakeError
from cdclake.model import Origin, RawMessage
from cdclake.sources.ranges import OffsetRange, PartitionExtent

SEGMENT_RECORDS = 100_000
_SEGMENT_DIGITS = 20


class CaptureError(CdclakeError):
    """A captured topic that does not follow the layout: names what and where."""


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: Any, where: str) -> bytes | None:
    if text is None:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError) as exc:
        raise CaptureError(f"{where}: not standard base64: {exc}") from exc


def partition_dir(root: Path, topic: str, partition: int) -> Path:
    return root / topic / str(partition)


def _segments(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.jsonl") if p.stem.isdigit())


class CapturedTopicWriter:
    """Appends records to a captured topic, continuing each partition's offsets where it ends."""

    def __init__(self, root: Path, topic: str, segment_records: int = SEGMENT_RECORDS) -> None:
        self.root, self.topic, self.segment_records = Path(root), topic, segment_records
        self._next: dict[int, int] = {}
        self._in_segment: dict[int, int] = {}
        self._files: dict[int, Any] = {}

    def append(self, partition: int, key: bytes | None, value: bytes | None, timestamp_ms: int | None = None,
               headers: tuple[tuple[str, bytes], ...] = ()) -> int:
        """Write one record; returns its offset."""
        offset = self._next_offset(partition)
        handle = self._segment_for(partition, offset)
        record = {
            "offset": offset,
            "timestamp": timestamp_ms,
            "key": _b64(key),
            "value": _b64(value),
            "headers": [[name, _b64(data)] for name, data in headers],
        }
        handle.write(orjson.dumps(record) + b"\n")
        self._next[partition] = offset + 1
        self._in_segment[partition] += 1
        return offset

    def _next_offset(self, partition: int) -> int:
        if partition not in self._next:
            extent = partition_extent(self.root, self.topic, partition)
            self._next[partition] = extent.high if extent else 0
        return self._next[partition]

    def _segment_for(self, partition: int, offset: int) -> Any:
        if partition in self._files and self._in_segment[partition] < self.segment_records:
            return self._files[partition]
        if partition in self._files:
            self._files.pop(partition).close()
        directory = partition_dir(self.root, self.topic, partition)
        directory.mkdir(parents=True, exist_ok=True)
        self._files[partition] = (directory / f"{offset:0{_SEGMENT_DIGITS}d}.jsonl").open("ab")
        self._in_segment[partition] = 0
        return self._files[partition]

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()

    def __enter__(self) -> CapturedTopicWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def topics(root: Path) -> list[str]:
    return sorted(p.name for p in Path(root).iterdir() if p.is_dir())


def partitions(root: Path, topic: str) -> list[int]:
    directory = Path(root) / topic
    if not directory.is_dir():
        raise CaptureError(f"no captured topic {topic!r} under {root}")
    return sorted(int(p.name) for p in directory.iterdir() if p.is_dir() and p.name.isdigit())


def partition_extent(root: Path, topic: str, partition: int) -> PartitionExtent | None:
    """First offset and high watermark of a captured partition, or None where it holds nothing."""
    segments = _segments(partition_dir(Path(root), topic, partition))
    if not segments:
        return None
    last = None
    with segments[-1].open("rb") as handle:
        for line in handle:
            if line.strip():
                last = line
    if last is None:
        return PartitionExtent(int(segments[0].stem), int(segments[-1].stem))
    return PartitionExtent(int(segments[0].stem), int(orjson.loads(last)["offset"]) + 1)


def read_partition(root: Path, topic: str, partition: int, start: int = 0, end: int | None = None
                   ) -> Iterator[RawMessage]:
    """The records of one partition with ``start <= offset < end``, in offset order."""
    segments = _segments(partition_dir(Path(root), topic, partition))
    bases = [int(p.stem) for p in segments]
    for i, segment in enumerate(segments):
        next_base = bases[i + 1] if i + 1 < len(bases) else None
        if next_base is not None and next_base <= start:
            continue
        if end is not None and bases[i] >= end:
            return
        yield from _read_segment(segment, topic, partition, start, end)


def _read_segment(segment: Path, topic: str, partition: int, start: int, end: int | None) -> Iterator[RawMessage]:
    with segment.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{segment}:{number}"
            try:
                record = orjson.loads(line)
                offset = int(record["offset"])
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise CaptureError(f"{where}: not a captured record: {exc}") from exc
            if offset < start:
                continue
            if end is not None and offset >= end:
                return
            headers = tuple((str(name), _unb64(data, where) or b"") for name, data in record.get("headers") or ())
            yield RawMessage(
                key=_unb64(record.get("key"), where),
                value=_unb64(record.get("value"), where),
                origin=Origin(topic=topic, partition=partition, offset=offset),
                timestamp_ms=record.get("timestamp"),
                headers=headers,
            )


class CapturedTopics:
    """The captured topics under ``root`` (all, or those named) as a :class:`~cdclake.sources.ranges.Source`."""

    def __init__(self, root: Path, names: list[str] | None = None) -> None:
        self.root = Path(root)
        self.names = names if names is not None else topics(self.root)

    def extents(self) -> dict[tuple[str, int], PartitionExtent]:
        found = {}
        for topic in self.names:
            for partition in partitions(self.root, topic):
                extent = partition_extent(self.root, topic, partition)
                if extent is not None:
                    found[(topic, partition)] = extent
        return found

    def read(self, offset_range: OffsetRange) -> Iterator[RawMessage]:
        return read_partition(self.root, offset_range.topic, offset_range.partition, offset_range.start,
                              offset_range.end)
