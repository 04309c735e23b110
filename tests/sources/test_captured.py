"""The captured-topic layout: every byte kept, offsets continued, ranges read by offset."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdclake.sources.captured import (
    CapturedTopicWriter,
    CaptureError,
    PartitionExtent,
    partition_extent,
    partitions,
    read_partition,
    topics,
)

EVERY_BYTE = bytes(range(256))


def test_records_keep_every_byte_and_their_coordinates(tmp_path: Path) -> None:
    with CapturedTopicWriter(tmp_path, "cdc") as writer:
        assert writer.append(0, EVERY_BYTE, b"v0", 1700000000000, (("h", b"\x00\xff"),)) == 0
        assert writer.append(0, None, None) == 1
        assert writer.append(2, b"k", EVERY_BYTE) == 0
    assert topics(tmp_path) == ["cdc"]
    assert partitions(tmp_path, "cdc") == [0, 2]
    first, second = read_partition(tmp_path, "cdc", 0)
    assert (first.key, first.value, first.timestamp_ms, first.headers) == (EVERY_BYTE, b"v0", 1700000000000,
                                                                           (("h", b"\x00\xff"),))
    assert (first.origin.topic, first.origin.partition, first.origin.offset) == ("cdc", 0, 0)
    assert (second.key, second.value, second.origin.offset) == (None, None, 1)
    assert [m.value for m in read_partition(tmp_path, "cdc", 2)] == [EVERY_BYTE]


def test_segments_roll_and_ranges_read_across_them(tmp_path: Path) -> None:
    with CapturedTopicWriter(tmp_path, "t", segment_records=3) as writer:
        for i in range(10):
            writer.append(1, None, str(i).encode())
    segment_names = sorted(p.name for p in (tmp_path / "t" / "1").iterdir())
    assert segment_names == [f"{base:020d}.jsonl" for base in (0, 3, 6, 9)]
    assert [m.origin.offset for m in read_partition(tmp_path, "t", 1, start=2, end=8)] == [2, 3, 4, 5, 6, 7]
    assert partition_extent(tmp_path, "t", 1) == PartitionExtent(0, 10)


def test_a_second_writer_continues_the_offsets(tmp_path: Path) -> None:
    with CapturedTopicWriter(tmp_path, "t") as writer:
        writer.append(0, None, b"a")
    with CapturedTopicWriter(tmp_path, "t") as writer:
        assert writer.append(0, None, b"b") == 1
    assert [m.value for m in read_partition(tmp_path, "t", 0)] == [b"a", b"b"]


def test_a_damaged_line_is_reported_with_file_and_line(tmp_path: Path) -> None:
    with CapturedTopicWriter(tmp_path, "t") as writer:
        writer.append(0, None, b"a")
    segment = next((tmp_path / "t" / "0").iterdir())
    with segment.open("a") as handle:
        handle.write('{"offset": 1, "value": "not base64!"}\n')
    with pytest.raises(CaptureError, match=rf"{segment.name}:2: not standard base64"):
        list(read_partition(tmp_path, "t", 0))


def test_unknown_topic_is_named(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="no captured topic 'nope'"):
        partitions(tmp_path, "nope")
