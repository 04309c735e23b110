"""Captured topics: a Kafka topic saved to a directory, so a stream can be kept, shared and replayed.

Layout (documented in docs/captured-topics.md)::

    <root>/<topic>/<partition>/<base offset, 20 digits>.jsonl

Each partition is a folder of segments named, as Kafka names its log segments, by the offset of their
first record. Each line of a segment is one record::

    {"offset": 42, "timestamp": 1700000000000, "key": "<base64>" | null, "value": "<base64>" | null,
     "headers": [["name", "<base64>"], ...]}

Offsets rise within a partition and may have gaps (a compacted or filtered capture keeps its original
offsets). Base64 keeps every byte of binary formats (Open Protocol, Avro) exact.

Readers check all of it (:func:`partition_records`, which the Spark executors use and ``decode
--captured`` through :func:`read_partition`, and :func:`partition_extent`, which plans what a job
reads): a record out of order, out of shape or in a wrongly named file is refused with a
:class:`CaptureError` naming its file and line, never skipped, since a planner that trusts the layout
would otherwise lose records without a word.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import pybase64

from cdclake._native import captured_line
from cdclake.errors import CdclakeError
from cdclake.model import RawMessage
from cdclake.sources.ranges import OffsetRange, PartitionExtent, SourceRecord, as_messages

SEGMENT_RECORDS = 100_000
_SEGMENT_DIGITS = 20
# Names in ASCII digits only: str.isdigit() takes "²" (which int() refuses) and "١" (which int() reads as
# 1). A partition has one spelling, so that "01" cannot be read as partition 1 a second time.
_DIGITS = re.compile(r"[0-9]+")
_PARTITION_NAME = re.compile(r"0|[1-9][0-9]*")
_SEGMENT_SUFFIX = ".jsonl"
_MAX_OFFSET = 2**63 - 1  # Kafka's offsets are signed 64-bit
# Spark keeps a timestamp as microseconds in 64 bits; a larger millisecond count would overflow there.
_MAX_TIMESTAMP_MS = (2**63 - 1) // 1000


class CaptureError(CdclakeError):
    """A captured topic that does not follow the layout: names what and where."""


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: Any, where: str) -> bytes | None:
    if text is None:
        return None
    try:
        # Six times as fast as Python's on a message's value (the largest cost of reading a record); it
        # refuses what RFC 4648 does, some of which Python's takes (excess padding after a whole quantum),
        # so Python's decides where it refuses.
        return pybase64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError):
        pass
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError) as exc:
        raise CaptureError(f"{where}: not standard base64: {exc}") from exc


def partition_dir(root: Path, topic: str, partition: int) -> Path:
    return root / topic / str(partition)


def is_partition_name(name: str) -> bool:
    return _PARTITION_NAME.fullmatch(name) is not None


def is_segment_name(name: str) -> bool:
    return name.endswith(_SEGMENT_SUFFIX) and _DIGITS.fullmatch(name.removesuffix(_SEGMENT_SUFFIX)) is not None


def _segments(directory: Path) -> list[tuple[int, Path]]:
    """A partition's segments with their base offsets, in offset order (not name order: ``9.jsonl``
    comes before ``10.jsonl``). A ``.jsonl`` file otherwise named is refused rather than left unread."""
    found = []
    for path in directory.glob(f"*{_SEGMENT_SUFFIX}"):
        if not is_segment_name(path.name):
            raise CaptureError(f"{path}: not a segment: a segment is named by its first offset in ASCII digits "
                               f"({0:0{_SEGMENT_DIGITS}d}{_SEGMENT_SUFFIX})")
        found.append((int(path.name.removesuffix(_SEGMENT_SUFFIX)), path))
    return sorted(found)


@dataclass(frozen=True, slots=True)
class TornLine:
    """An incomplete last line cut from a segment: a writer stopped in the middle of writing it."""

    segment: Path
    length: int


def cut_torn_line(root: Path, topic: str, partition: int) -> TornLine | None:
    """Cut the bytes after the last newline of a partition's last segment, if any.

    A writer writes whole lines, so such bytes can only be a record it did not finish writing (the
    process or machine stopped mid-write); appending after them would glue the next record to them.
    """
    segments = _segments(partition_dir(Path(root), topic, partition))
    if not segments:
        return None
    _, last = segments[-1]
    with last.open("r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        end = _end_of_last_line(handle, size)
        if end == size:
            return None
        handle.truncate(end)
        os.fsync(handle.fileno())
    return TornLine(last, size - end)


def _end_of_last_line(handle: BinaryIO, size: int) -> int:
    """The position just past the file's last newline (0 if it has none), read backwards in blocks."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        handle.seek(start)
        newline = handle.read(end - start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _make_directories(directory: Path) -> None:
    """``mkdir -p``, each new directory's name synced in its parent, so that segments synced into it
    cannot be lost with it in a crash."""
    for missing in reversed([d for d in (directory, *directory.parents) if not d.is_dir()]):
        missing.mkdir(exist_ok=True)
        _fsync_directory(missing.parent)


class CapturedTopicWriter:
    """Appends records to a captured topic, continuing each partition where it ends.

    Segments are flushed and fsynced when they roll, on :meth:`sync` and on :meth:`close`, and each new
    segment's name is synced into its directory, so what a crash leaves is every record up to some
    point, at worst followed by one torn line; the writer cuts that line when it next opens the partition
    (see :attr:`repaired`).
    """

    def __init__(self, root: Path, topic: str, segment_records: int = SEGMENT_RECORDS) -> None:
        self.root, self.topic, self.segment_records = Path(root), topic, segment_records
        self.repaired: list[TornLine] = []
        self._next: dict[int, int | None] = {}
        self._in_segment: dict[int, int] = {}
        self._files: dict[int, Any] = {}

    def append(self, partition: int, key: bytes | None, value: bytes | None, timestamp_ms: int | None = None,
               headers: tuple[tuple[str, bytes], ...] = (), offset: int | None = None) -> int:
        """Write one record at ``offset`` (by default the partition's next offset, 0 for a new one); an
        offset may skip ahead, as a compacted topic's do, but never go back. Returns the offset."""
        continues_from = self.next_offset(partition)
        if offset is None:
            offset = continues_from or 0
        elif continues_from is not None and offset < continues_from:
            raise CaptureError(f"{partition_dir(self.root, self.topic, partition)}: offset {offset} is below "
                               f"{continues_from}, where the partition continues")
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

    def next_offset(self, partition: int) -> int | None:
        """Where the partition continues: one past its last record (the base offset of an empty last
        segment), or None where it has no segment yet. The first call for a partition cuts a torn last
        line (:func:`cut_torn_line`) and records it in :attr:`repaired`."""
        if partition not in self._next:
            torn = cut_torn_line(self.root, self.topic, partition)
            if torn is not None:
                self.repaired.append(torn)
            extent = partition_extent(self.root, self.topic, partition)
            self._next[partition] = extent.high if extent else None
        return self._next[partition]

    def _segment_for(self, partition: int, offset: int) -> Any:
        if partition in self._files and self._in_segment[partition] < self.segment_records:
            return self._files[partition]
        if partition in self._files:
            _close_synced(self._files.pop(partition))
        directory = partition_dir(self.root, self.topic, partition)
        _make_directories(directory)
        self._files[partition] = (directory / f"{offset:0{_SEGMENT_DIGITS}d}.jsonl").open("ab")
        _fsync_directory(directory)
        self._in_segment[partition] = 0
        return self._files[partition]

    def sync(self) -> None:
        """Make every record appended so far durable."""
        for handle in self._files.values():
            handle.flush()
            os.fsync(handle.fileno())

    def close(self) -> None:
        for handle in self._files.values():
            _close_synced(handle)
        self._files.clear()

    def __enter__(self) -> CapturedTopicWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _close_synced(handle: BinaryIO) -> None:
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()


def topics(root: Path) -> list[str]:
    return sorted(p.name for p in Path(root).iterdir() if p.is_dir())


def partitions(root: Path, topic: str) -> list[int]:
    """The partitions of a captured topic; a folder in it not named as a partition is refused."""
    directory = Path(root) / topic
    if not directory.is_dir():
        raise CaptureError(f"no captured topic {topic!r} under {root}")
    found = []
    for path in directory.iterdir():
        if not path.is_dir():
            continue
        if not is_partition_name(path.name):
            raise CaptureError(f"{directory} holds {path.name!r}, which is not a partition directory (named by "
                               "its number in ASCII digits: 0, 1, 2 ...)")
        found.append(int(path.name))
    return sorted(found)


def partition_extent(root: Path, topic: str, partition: int) -> PartitionExtent | None:
    """First offset and high watermark of a captured partition, or None where it holds nothing.

    Only the last segment is read (the extent is asked for every batch); the records before it are
    checked where they are read (:func:`partition_records`)."""
    segments = _segments(partition_dir(Path(root), topic, partition))
    if not segments:
        return None
    low, (base, segment) = segments[0][0], segments[-1]
    last, where = None, ""
    with segment.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                last, where = line, f"{segment}:{number}"
    if last is None:
        return PartitionExtent(low, base)
    offset = _offset(_checked(_record(last, where), where), where)
    if offset < base:
        # Else the extent would end below the segment's name, and a job would never read it.
        raise CaptureError(f"{where}: offset {offset} is below {base}, the first offset the segment's name gives")
    return PartitionExtent(low, offset + 1)


def read_partition(root: Path, topic: str, partition: int, start: int = 0, end: int | None = None
                   ) -> Iterator[RawMessage]:
    """The records of one partition with ``start <= offset < end``, in offset order, as raw messages."""
    until = _MAX_OFFSET + 1 if end is None else end
    return as_messages(partition_records(root, topic, partition, start, until), topic, partition)


def partition_records(root: Path, topic: str, partition: int, start: int, end: int) -> Iterator[SourceRecord]:
    """The records of one partition with ``start <= offset < end``, in offset order.

    Every segment touched is checked to its end, past ``end`` too: a record below one the range stopped
    at would otherwise be left behind unseen, by this range and by every later one."""
    segments = _segments(partition_dir(Path(root), topic, partition))
    for i, (base, segment) in enumerate(segments):
        next_base = segments[i + 1][0] if i + 1 < len(segments) else None
        if next_base is not None and next_base <= start:
            continue
        if base >= end:
            return
        yield from _read_segment(segment, (base, next_base), start, end)


def _read_segment(segment: Path, bounds: tuple[int, int | None], start: int, end: int) -> Iterator[SourceRecord]:
    """The segment's records in the range; ``bounds``: its base offset and the next segment's, if any.
    A record outside the range is only placed, its offset read and its order checked: the range that holds
    it checks the rest (a range reads its segments to their ends, mostly records of other ranges).

    Each line goes to the compiled reader first (``native/src/captured.rs``), which reads the usual
    shape of line and leaves any other (unusual base64, anything wrong) to the checks here."""
    previous = None
    with segment.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line or line.isspace():  # as not line.strip(), without copying the line
                continue
            read = captured_line(line, start, end)
            if read is None:
                where = f"{segment}:{number}"
                record = _record(line, where)
                offset = _offset(record, where)
                _check_order(offset, previous, bounds, segment, number)
                previous = offset
                if start <= offset < end:
                    yield _source_record(offset, _checked(record, where), where)
                continue
            offset, fields = read
            _check_order(offset, previous, bounds, segment, number)
            previous = offset
            if fields is not None:
                yield (offset, *fields)


def _check_order(offset: int, previous: int | None, bounds: tuple[int, int | None], segment: Path,
                 number: int) -> None:
    base, next_base = bounds
    if (previous is None and offset != base) or (previous is not None and offset <= previous) or (
            next_base is not None and offset >= next_base):
        _order_error(offset, previous, bounds, f"{segment}:{number}")


def _order_error(offset: int, previous: int | None, bounds: tuple[int, int | None], where: str) -> None:
    base, next_base = bounds
    if previous is None and offset != base:
        raise CaptureError(f"{where}: offset {offset} opens a segment named {base}; a segment is named by the "
                           "offset of its first record")
    if previous is not None and offset <= previous:
        raise CaptureError(f"{where}: offset {offset} follows offset {previous}; offsets must rise within a "
                           "partition")
    if next_base is not None and offset >= next_base:
        raise CaptureError(f"{where}: offset {offset} is not below {next_base}, where the next segment starts")


def _json(value: Any) -> str:
    """``value`` as the file spells it, cut short: for messages."""
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _record(line: bytes, where: str) -> dict[str, Any]:
    """One line's record, a JSON object, its fields not checked yet."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise CaptureError(f"{where}: not a captured record: {exc}") from exc
    if not isinstance(record, dict):
        raise CaptureError(f"{where}: not a captured record: {_json(record)} is not a JSON object")
    return record


def _checked(record: dict[str, Any], where: str) -> dict[str, Any]:
    """``record`` with its fields checked against the layout (its offset by :func:`_offset`). Fields other
    than these are ignored; ``key``, ``value``, ``timestamp`` and ``headers`` may be left out."""
    timestamp = record.get("timestamp")
    if timestamp is not None and not (_is_int(timestamp) and abs(timestamp) <= _MAX_TIMESTAMP_MS):
        raise CaptureError(f"{where}: timestamp {_json(timestamp)} is not epoch milliseconds (an integer) or null")
    for name in ("key", "value"):
        if not isinstance(record.get(name), str | None):
            raise CaptureError(f"{where}: {name} {_json(record[name])} is not base64 text or null")
    headers = record.get("headers")
    if headers is not None and not (isinstance(headers, list) and all(map(_is_header, headers))):
        raise CaptureError(f"{where}: headers {_json(headers)} are not a list of [name, base64 value] pairs")
    return record


def _offset(record: dict[str, Any], where: str) -> int:
    if "offset" not in record:
        raise CaptureError(f"{where}: not a captured record: no offset")
    offset = record["offset"]
    if not _is_int(offset):
        raise CaptureError(f"{where}: offset {_json(offset)} is not an integer")
    if offset < 0:
        raise CaptureError(f"{where}: offset {offset} is negative")
    if offset > _MAX_OFFSET:
        raise CaptureError(f"{where}: offset {offset} is beyond Kafka's offsets (at most {_MAX_OFFSET})")
    return int(offset)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON's true is no number


def _is_header(pair: Any) -> bool:
    return isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and isinstance(pair[1], str | None)


def _source_record(offset: int, record: dict[str, Any], where: str) -> SourceRecord:
    headers = tuple((name, _unb64(data, where) or b"") for name, data in record.get("headers") or ())
    key, value = _unb64(record.get("key"), where), _unb64(record.get("value"), where)
    return offset, record.get("timestamp"), key, value, headers


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

    def records(self, offset_range: OffsetRange) -> Iterator[SourceRecord]:
        return partition_records(self.root, offset_range.topic, offset_range.partition, offset_range.start,
                                 offset_range.end)
