"""The captured-topic layout: every byte kept, offsets continued, ranges read by offset."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import orjson
import pytest

from cdclake.sources import captured
from cdclake.sources.captured import (
    CapturedTopics,
    CapturedTopicWriter,
    CaptureError,
    PartitionExtent,
    partition_extent,
    partitions,
    read_partition,
    topics,
)
from cdclake.sources.ranges import plan_ranges

EVERY_BYTE = bytes(range(256))
NOT_PAIRS = r" are not a list of \[name, base64 value\] pairs"


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


def test_a_value_is_read_as_pythons_base64_reads_it_where_the_fast_decoder_refuses_it(tmp_path: Path) -> None:
    # pybase64 refuses padding after a whole quantum; Python's strict decoder takes it, as it always did here.
    _segment(tmp_path, f"{0:020d}", {"offset": 0, "value": "YWJj="}, {"offset": 1, "value": "YWJj=="})
    assert [m.value for m in read_partition(tmp_path, "t", 0)] == [b"abc", b"abc"]


def test_a_record_outside_the_range_is_only_placed_and_the_range_holding_it_checks_it(tmp_path: Path) -> None:
    _segment(tmp_path, f"{0:020d}", {"offset": 0, "value": "YQ=="}, {"offset": 1, "value": "not base64!"})
    assert [m.value for m in read_partition(tmp_path, "t", 0, start=0, end=1)] == [b"a"]
    with pytest.raises(CaptureError, match=r":2: not standard base64"):
        list(read_partition(tmp_path, "t", 0, start=1, end=2))


def test_unknown_topic_is_named(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="no captured topic 'nope'"):
        partitions(tmp_path, "nope")


def _segment(root: Path, name: str, *lines: str | dict[str, object], topic: str = "t", partition: str = "0") -> Path:
    """A segment written as it stands, bypassing the writer (which would refuse most of these)."""
    directory = root / topic / partition
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.jsonl"
    path.write_bytes(b"".join((line if isinstance(line, str) else orjson.dumps(line).decode()).encode() + b"\n"
                              for line in lines))
    return path


def _read_as_a_job(root: Path, batch_records: int) -> list[int]:
    """The offsets a replication job reads: ranges planned from the extents, read one by one, as the
    Spark executors read them, until the plan is empty."""
    source = CapturedTopics(root)
    positions: dict[tuple[str, int], int] = {}
    read = []
    while ranges := plan_ranges(source.extents(), positions, batch_records):
        for offset_range in ranges:
            read += [offset for offset, *_ in source.records(offset_range)]
            positions[(offset_range.topic, offset_range.partition)] = offset_range.end
    return read


@pytest.mark.parametrize(("segments", "refusal"), [
    ({"0": [0, 1, 10, 2, 3]}, r"0\.jsonl:4: offset 2 follows offset 10; offsets must rise"),
    ({"0": [0, 1, -1, 2]}, r"0\.jsonl:3: offset -1 is negative"),
    ({"5": [0, 1, 2, 3, 4, 5]}, r"5\.jsonl:1: offset 0 opens a segment named 5"),
    ({"0": [0, 1, 10], "2": [2, 3]}, r"0\.jsonl:3: offset 10 is not below 2, where the next segment starts"),
    ({"0": [0, 1], "7": [3, 7]}, r"7\.jsonl:1: offset 3 opens a segment named 7"),
])
@pytest.mark.parametrize("batch_records", [2, 100])
def test_offsets_out_of_order_are_refused_by_every_reader(tmp_path: Path, segments: dict[str, list[int]],
                                                          refusal: str, batch_records: int) -> None:
    for name, offsets in segments.items():
        _segment(tmp_path, name, *({"offset": offset, "value": "eA=="} for offset in offsets))
    with pytest.raises(CaptureError, match=refusal):
        list(read_partition(tmp_path, "t", 0))  # as decode --captured reads
    with pytest.raises(CaptureError, match=refusal):
        _read_as_a_job(tmp_path, batch_records)  # as replicate reads


def test_offsets_with_gaps_across_segments_are_all_read(tmp_path: Path) -> None:
    _segment(tmp_path, "3", *({"offset": offset} for offset in (3, 5, 6)))
    _segment(tmp_path, "10", *({"offset": offset} for offset in (10, 20)))
    _segment(tmp_path, "9", {"offset": 9})  # named by number, not sorted as text
    assert [m.origin.offset for m in read_partition(tmp_path, "t", 0)] == [3, 5, 6, 9, 10, 20]
    for batch_records in (1, 4, 100):
        assert _read_as_a_job(tmp_path, batch_records) == [3, 5, 6, 9, 10, 20]


@pytest.mark.parametrize(("line", "refusal"), [
    ('{"offset": 1, "timestamp": "yesterday"}', r'timestamp "yesterday" is not epoch milliseconds'),
    ('{"offset": 1, "timestamp": true}', r"timestamp true is not epoch milliseconds"),
    ('{"offset": 1, "timestamp": 9300000000000000}', r"timestamp 9300000000000000 is not epoch milliseconds"),
    ('{"offset": 1, "headers": [["x"]]}', r'headers \[\["x"\]\]' + NOT_PAIRS),
    ('{"offset": 1, "headers": "xyz"}', r'headers "xyz"' + NOT_PAIRS),
    ('{"offset": 1, "headers": [[5, "eA=="]]}', r'headers \[\[5,"eA=="\]\]' + NOT_PAIRS),
    ('{"offset": 1, "headers": [["x", 5]]}', r'headers \[\["x",5\]\]' + NOT_PAIRS),
    ('{"offset": 1, "key": 5}', r"key 5 is not base64 text or null"),
    ('{"offset": 1, "value": ["eA=="]}', r'value \["eA=="\] is not base64 text or null'),
    ('{"offset": 2.9}', r"offset 2.9 is not an integer"),
    ('{"offset": true}', r"offset true is not an integer"),
    ('{"offset": "1"}', r'offset "1" is not an integer'),
    ('{"offset": 9223372036854775808}', r"offset 9223372036854775808 is beyond"),
    ('{"value": "eA=="}', r"not a captured record: no offset"),
    ("[1, 2]", r"not a captured record: \[1,2\] is not a JSON object"),
])
def test_a_record_of_the_wrong_shape_is_refused_with_its_file_and_line(tmp_path: Path, line: str,
                                                                       refusal: str) -> None:
    segment = _segment(tmp_path, "0", {"offset": 0}, line)
    where = rf"{re.escape(str(segment))}:2: "
    with pytest.raises(CaptureError, match=where + refusal):
        list(read_partition(tmp_path, "t", 0))
    with pytest.raises(CaptureError, match=where + refusal):
        partition_extent(tmp_path, "t", 0)


def test_headers_and_timestamps_of_the_documented_shape_are_read(tmp_path: Path) -> None:
    _segment(tmp_path, "0", {"offset": 0, "timestamp": 0, "headers": [["a", "eA=="], ["a", None], ["b", ""]]},
             {"offset": 1, "timestamp": None, "headers": None, "key": None, "value": None}, {"offset": 2})
    first, second, third = read_partition(tmp_path, "t", 0)
    assert (first.timestamp_ms, first.headers) == (0, (("a", b"x"), ("a", b""), ("b", b"")))
    assert (second.timestamp_ms, second.headers, second.key, second.value) == (None, (), None, None)
    assert (third.timestamp_ms, third.headers) == (None, ())


@pytest.mark.parametrize(("folders", "refusal"), [
    (["0", "²"], r"t holds '²', which is not a partition directory"),
    (["1", "١"], r"t holds '١', which is not a partition directory"),
    (["1", "01"], r"t holds '01', which is not a partition directory"),
    (["0", "latest"], r"t holds 'latest', which is not a partition directory"),
])
def test_a_partition_folder_must_be_named_by_its_number_in_ascii_digits(tmp_path: Path, folders: list[str],
                                                                        refusal: str) -> None:
    for folder in folders:
        _segment(tmp_path, "0", {"offset": 0}, partition=folder)
    with pytest.raises(CaptureError, match=refusal):
        partitions(tmp_path, "t")
    with pytest.raises(CaptureError, match=refusal):
        CapturedTopics(tmp_path).extents()


@pytest.mark.parametrize("name", ["²", "١", "first", "0x10"])
def test_a_segment_must_be_named_by_its_first_offset_in_ascii_digits(tmp_path: Path, name: str) -> None:
    _segment(tmp_path, "0", {"offset": 0})
    stray = _segment(tmp_path, name, {"offset": 1})
    refusal = rf"{re.escape(str(stray))}: not a segment: a segment is named by its first offset in ASCII digits"
    with pytest.raises(CaptureError, match=refusal):
        list(read_partition(tmp_path, "t", 0))
    with pytest.raises(CaptureError, match=refusal):
        partition_extent(tmp_path, "t", 0)


# --- the compiled line reader (native/src/captured.rs) reads what the checks here read ------------------

_FIELD_VALUES: dict[str, list[object]] = {
    "offset": [None, 1, 2, 5, -1, 2.0, "1", True, 0, 2**63 - 1, 2**63, 2**64],
    "timestamp": [None, 0, -5, 1700000000000, 9223372036854775, 9223372036854776, -9223372036854776, 1.5, "1", True],
    "key": [None, "", "AA==", "QQ", "QR==", "AA===", "A A=", "-_8=", "AA==\n", 5, "\u00e9", "YQ\\/="],
    "value": [None, "eHl6", "eHl6\\n", "e Hl6", "eHl", [1], "//8="],
    "headers": [None, [["h", "AA=="], ["g", None]], [], [["h", "A"]], [["h"]], "x", [[1, "AA=="]]],
}


def _lines(rng: random.Random) -> list[bytes]:
    """Lines of every field's odd and usual values, one field given twice now and then, offsets mostly rising."""
    lines = []
    for number in range(400):
        usual = rng.random() < 0.5  # each field's first value that is not null, or left out
        fields = {name: next(v for v in values[1:] if v is not None) if usual else rng.choice(values)
                  for name, values in _FIELD_VALUES.items() if rng.random() < 0.8}
        if rng.random() < 0.7:
            fields["offset"] = number
        text = json.dumps(fields, separators=(",", ":")).replace("\\\\", "\\")  # stdlib: 2**64 too
        if rng.random() < 0.05:
            text = text.replace("{", '{"offset":3,', 1)
        if rng.random() < 0.1:  # a field no reader reads, which orjson may refuse: 1e400, a lone surrogate
            text = text.replace("{", '{"x":' + rng.choice(["1", "1e400", '"\\ud800"', '"\u00e9"']) + ",", 1)
        lines.append(text.encode())
    return lines


def _read_or_error(root: Path, start: int, end: int | None) -> object:
    try:
        return [(m.key, m.value, m.timestamp_ms, m.headers, m.origin) for m in read_partition(root, "t", 0, start, end)]
    except CaptureError as exc:
        return str(exc)


@pytest.mark.parametrize("seed", range(40))
def test_the_compiled_line_reader_reads_as_the_checks_do(tmp_path: Path, seed: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    lines = _lines(rng)
    # Make the opening line well-formed more often than not, so that reads get past it.
    if rng.random() < 0.7:
        lines[0] = orjson.dumps({"offset": 0, "value": "eHl6"})
    folder = tmp_path / "t" / "0"
    folder.mkdir(parents=True)
    (folder / f"{0:020d}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    ranges = [(0, None), (0, 3), (2, 50), (rng.randint(0, 400), None)]
    native = [_read_or_error(tmp_path, start, end) for start, end in ranges]
    assert any(captured.captured_line(line, 0, 2**63) for line in lines)  # it reads some itself
    monkeypatch.setattr(captured, "captured_line", lambda *_: None)
    assert native == [_read_or_error(tmp_path, start, end) for start, end in ranges]
