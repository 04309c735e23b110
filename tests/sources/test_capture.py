"""Capturing Kafka topics into a directory, against a real Apache Kafka broker: every byte and offset kept,
reruns that continue without duplicates or gaps, torn lines cut, and refusals that name what and where."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from typer.testing import CliRunner

import cdclake.sources.kafka
from cdclake.capture import KafkaCapture
from cdclake.cli import app
from cdclake.errors import OptionError
from cdclake.sources.captured import CapturedTopics, CapturedTopicWriter, CaptureError, TornLine, topics
from cdclake.sources.kafka import KafkaSourceError, KafkaTopics
from cdclake.sources.ranges import OffsetRange
from tests.kafka import Kafka

EVERY_BYTE = bytes(range(256))

# (partition, key, value, timestamp ms, headers) in the order produced.
Produced = tuple[int, bytes | None, bytes | None, int, list[tuple[str, bytes]]]
# (offset, key, value, timestamp ms, headers) as a capture holds it.
Kept = tuple[int, bytes | None, bytes | None, int | None, tuple[tuple[str, bytes], ...]]


def produce(kafka: Kafka, topic: str, records: list[Produced]) -> None:
    for partition, key, value, timestamp_ms, headers in records:
        kafka.producer.produce(topic, value=value, key=key, partition=partition, timestamp=timestamp_ms,
                               headers=headers)
    kafka.flush()


def numbered(count: int, partition: int = 0, first: int = 0) -> list[Produced]:
    return [(partition, f"k{i}".encode(), f"v{i}".encode(), 1_700_000_000_000 + i, [])
            for i in range(first, first + count)]


def as_kept(produced: list[Produced]) -> dict[int, list[Kept]]:
    """What a capture of the records produced into an empty topic holds: offsets count from 0 per partition."""
    kept: dict[int, list[Kept]] = {}
    for partition, key, value, timestamp_ms, headers in produced:
        records = kept.setdefault(partition, [])
        records.append((len(records), key, value, timestamp_ms, tuple(headers)))
    return kept


def read_back(root: Path, topic: str) -> dict[int, list[Kept]]:
    source = CapturedTopics(root, [topic])
    return {
        partition: [(offset, key, value, timestamp_ms, headers) for offset, timestamp_ms, key, value, headers
                    in source.records(OffsetRange(topic, partition, extent.low, extent.high))]
        for (_, partition), extent in sorted(source.extents().items())
    }


def capture(kafka: Kafka, root: Path, topic: str, max_records: int | None = None, **options: Any) -> KafkaCapture:
    """A capture of ``topic`` run to its end (or ``max_records``) and closed."""
    with KafkaCapture({"bootstrap.servers": kafka.bootstrap}, root, [topic], **options) as run:
        run.run(max_records)
    return run


def test_a_capture_holds_exactly_what_was_produced(kafka: Kafka, tmp_path: Path) -> None:
    produced: list[Produced] = [
        (0, EVERY_BYTE, EVERY_BYTE, 1_700_000_000_000, [("trace", b"\x00\xff"), ("trace", b"again"), ("empty", b"")]),
        (0, None, b"a null key", 1, []),
        (0, b"a tombstone", None, 1_700_000_000_002, []),
        (1, b"", b"", 1_700_000_000_003, [("h", EVERY_BYTE)]),
        (3, EVERY_BYTE[::-1], EVERY_BYTE[::-1], 1_700_000_000_004, []),
    ]
    produce(kafka, "exact", produced)
    run = capture(kafka, tmp_path, "exact")
    assert read_back(tmp_path, "exact") == as_kept(produced)
    assert sorted(p.name for p in (tmp_path / "exact").iterdir()) == ["0", "1", "3"]  # partition 2 got nothing
    assert [p.name for p in (tmp_path / "exact" / "0").iterdir()] == ["00000000000000000000.jsonl"]
    assert [(c.partition, c.records, c.first, c.last) for c in run.partitions.values()] == [
        (0, 3, 0, 2), (1, 1, 0, 0), (2, 0, None, None), (3, 1, 0, 0)
    ]


def test_records_keep_their_kafka_offsets_across_transaction_markers(kafka: Kafka, tmp_path: Path) -> None:
    transactional = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": "capture-test"})
    transactional.init_transactions(10)
    for value in (b"first", b"second"):
        transactional.begin_transaction()
        transactional.produce("markers", value=value, partition=0)
        transactional.commit_transaction(10)
    assert KafkaTopics({"bootstrap.servers": kafka.bootstrap}, ["markers"]).extents()[("markers", 0)].high == 4
    capture(kafka, tmp_path, "markers")
    assert [(offset, value) for offset, _, value, _, _ in read_back(tmp_path, "markers")[0]] == [
        (0, b"first"), (2, b"second")
    ]
    # The capture ends at 3, before the last marker; continuing it over the marker finds nothing new.
    assert capture(kafka, tmp_path, "markers").partitions[("markers", 0)].records == 0


def test_a_rerun_captures_only_the_new_records(kafka: Kafka, tmp_path: Path) -> None:
    before = numbered(5) + numbered(2, partition=2)
    produce(kafka, "growing", before)
    capture(kafka, tmp_path, "growing", segment_records=3)
    after = numbered(4, first=5) + numbered(1, partition=1)
    produce(kafka, "growing", after)
    rerun = capture(kafka, tmp_path, "growing", segment_records=3)
    assert {tp: (c.records, c.first, c.last) for tp, c in rerun.partitions.items() if c.records} == {
        ("growing", 0): (4, 5, 8), ("growing", 1): (1, 0, 0)
    }
    assert read_back(tmp_path, "growing") == as_kept(before + after)
    # Each run starts a segment at the first offset it writes, and rolls it after three records.
    assert [p.name[-7:] for p in sorted((tmp_path / "growing" / "0").iterdir())] == [
        "0.jsonl", "3.jsonl", "5.jsonl", "8.jsonl"
    ]


def test_max_records_stops_early_and_a_rerun_completes(kafka: Kafka, tmp_path: Path) -> None:
    produced = numbered(6) + numbered(6, partition=1)
    produce(kafka, "budget", produced)
    first = capture(kafka, tmp_path, "budget", max_records=4)
    assert [c.records for c in first.partitions.values()] == [2, 2, 0, 0]  # shared evenly
    capture(kafka, tmp_path, "budget")
    assert read_back(tmp_path, "budget") == as_kept(produced)


def test_a_pattern_selects_topics(kafka: Kafka, tmp_path: Path) -> None:
    for topic in ("pattern.a", "pattern.b", "pattern-not", "other.pattern.a"):
        produce(kafka, topic, numbered(1))
    with KafkaCapture({"bootstrap.servers": kafka.bootstrap}, tmp_path, pattern=r"pattern\.\w") as run:
        assert run.run() == 2
    assert topics(tmp_path) == ["pattern.a", "pattern.b"]


def test_a_torn_last_line_is_cut_and_its_record_captured_again(kafka: Kafka, tmp_path: Path) -> None:
    # The last record is longer than the 64 KiB blocks the cut reads backwards in.
    produced = [*numbered(2), (0, b"big", EVERY_BYTE * 800, 5, [])]
    produce(kafka, "torn", produced)
    capture(kafka, tmp_path, "torn")
    segment = tmp_path / "torn" / "0" / "00000000000000000000.jsonl"
    lines = segment.read_bytes().splitlines(keepends=True)
    torn = len(lines[-1]) // 2
    segment.write_bytes(b"".join(lines[:-1]) + lines[-1][:torn])  # a writer stopped halfway through the line
    more = numbered(1, first=3)
    produce(kafka, "torn", more)
    rerun = capture(kafka, tmp_path, "torn")
    assert rerun.repaired == [TornLine(segment, torn)]
    assert rerun.partitions[("torn", 0)].first == 2
    assert read_back(tmp_path, "torn") == as_kept(produced + more)


def test_follow_goes_on_capturing_what_is_produced_later(kafka: Kafka, tmp_path: Path) -> None:
    produce(kafka, "live", numbered(2))
    copied: list[int] = []
    with KafkaCapture({"bootstrap.servers": kafka.bootstrap}, tmp_path, ["live"]) as run:
        follower = threading.Thread(target=lambda: copied.append(run.run(4, follow=True, every_s=0.05)), daemon=True)
        follower.start()
        try:
            deadline = time.monotonic() + 10
            while getattr(run.partitions.get(("live", 0)), "records", 0) < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            produce(kafka, "live", numbered(2, first=2))  # which also ends the follow, whatever happened above
            follower.join(10)
    assert copied == [4]
    assert read_back(tmp_path, "live") == as_kept(numbered(4))


# --- refusals ---------------------------------------------------------------------------------------


def test_a_missing_topic_is_named_with_the_brokers(kafka: Kafka, tmp_path: Path) -> None:
    produce(kafka, "present", numbered(1))
    with pytest.raises(KafkaSourceError, match=rf"Kafka at {kafka.bootstrap} has no topic 'absent'"):
        capture(kafka, tmp_path, "absent")
    with pytest.raises(KafkaSourceError, match=rf"no topic at Kafka {kafka.bootstrap} matches 'absent.\*'"):
        KafkaCapture({"bootstrap.servers": kafka.bootstrap}, tmp_path, pattern="absent.*").run()
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_an_unreachable_broker_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cdclake.sources.kafka, "_METADATA_TIMEOUT_S", 0.5)
    with pytest.raises(KafkaSourceError, match=r"Kafka at 127\.0\.0\.1:1 did not list the partitions of 't': "
                                               ".*Broker transport failure"):
        KafkaCapture({"bootstrap.servers": "127.0.0.1:1"}, tmp_path, ["t"]).run()


def test_a_setting_librdkafka_refuses_is_named(kafka: Kafka, tmp_path: Path) -> None:
    config = {"bootstrap.servers": kafka.bootstrap, "sasl.mechanismz": "PLAIN"}
    with pytest.raises(OptionError, match=r'librdkafka refuses: No such configuration property: "sasl\.mechanismz"'):
        KafkaCapture(config, tmp_path, ["t"]).run()


@pytest.mark.parametrize(("stray", "named"), [
    ("notes.txt", "holds 'notes.txt', which is not a captured topic"),
    ("t/latest", "holds 'latest', which is not a partition directory"),
    ("t/²", "holds '²', which is not a partition directory"),
    ("t/01", "holds '01', which is not a partition directory"),
    ("t/0/١.jsonl", "holds '١.jsonl', which is not a segment"),
    ("t/0/00000000000000000000.json", "holds '00000000000000000000.json', which is not a segment"),
])
def test_a_directory_holding_something_else_is_refused(tmp_path: Path, stray: str, named: str) -> None:
    path = tmp_path / stray
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix:
        path.write_text("mine\n")
    else:
        path.mkdir()
    with pytest.raises(CaptureError, match=named):
        KafkaCapture({"bootstrap.servers": "unused:9092"}, tmp_path, ["t"])


def test_a_file_is_not_a_capture_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(CaptureError, match=rf"{tmp_path / 'file'} is not a directory"):
        KafkaCapture({"bootstrap.servers": "unused:9092"}, tmp_path / "file", ["t"])


def test_from_beginning_refuses_an_earlier_capture(kafka: Kafka, tmp_path: Path) -> None:
    produce(kafka, "again", numbered(2))
    capture(kafka, tmp_path, "again")
    with pytest.raises(CaptureError, match=r"again/0 already holds a capture of again\[0\], up to offset 1"):
        capture(kafka, tmp_path, "again", fresh=True)


def test_a_capture_longer_than_the_partition_is_refused(kafka: Kafka, tmp_path: Path) -> None:
    produce(kafka, "elsewhere", numbered(3))
    capture(kafka, tmp_path, "elsewhere")
    kafka.delete_topics()  # the topic made anew, shorter than what was captured of it
    produce(kafka, "elsewhere", numbered(1))
    with pytest.raises(CaptureError, match=r"captured up to offset 2, but Kafka's elsewhere\[0\] ends at 0"):
        capture(kafka, tmp_path, "elsewhere")


def test_a_capture_kafka_no_longer_holds_the_continuation_of_is_refused(kafka: Kafka, tmp_path: Path) -> None:
    produce(kafka, "retained", numbered(3))
    capture(kafka, tmp_path, "retained")
    produce(kafka, "retained", numbered(3, first=3))
    # What retention does: the partition's first five offsets deleted, offsets 3 and 4 never captured.
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.delete_records([TopicPartition("retained", 0, 5)])[TopicPartition("retained", 0, 5)].result(timeout=30)
    with pytest.raises(CaptureError, match=r"continues at offset 3, .* now starts at 5: offsets 3 to 4 were "
                                           "deleted before they were captured"):
        capture(kafka, tmp_path, "retained")


def test_the_writer_refuses_an_offset_below_where_the_partition_continues(tmp_path: Path) -> None:
    with CapturedTopicWriter(tmp_path, "t") as writer:
        assert writer.append(0, None, b"a", offset=7) == 7
        with pytest.raises(CaptureError, match="offset 7 is below 8, where the partition continues"):
            writer.append(0, None, b"b", offset=7)
        assert writer.append(0, None, b"c") == 8


# --- the command ------------------------------------------------------------------------------------

runner = CliRunner()


def plain(text: str) -> str:
    """Text without rich's table lines, one space between words."""
    return " ".join(re.sub("[\u2500-\u257f]", " ", text).split())


def test_cli_captures_and_prints_each_partition(kafka: Kafka, tmp_path: Path) -> None:
    produced = numbered(3) + numbered(1, partition=2)
    produce(kafka, "cli", produced)
    command = ["capture", "--bootstrap-servers", kafka.bootstrap, "--topic", "cli", "--to", str(tmp_path),
               "-X", "client.id=cdclake-test"]
    result = runner.invoke(app, command)
    assert result.exit_code == 0, result.stderr
    assert "topic partition records offsets cli 0 3 0-2 cli 1 0 - cli 2 1 0-0 cli 3 0 -" in plain(result.stdout)
    assert "4 records from 4 partitions" in result.stderr
    assert read_back(tmp_path, "cli") == as_kept(produced)
    segment = tmp_path / "cli" / "0" / "00000000000000000000.jsonl"
    segment.write_bytes(segment.read_bytes()[:-5])  # the last record, offset 2, torn
    rerun = runner.invoke(app, command)
    assert rerun.exit_code == 0, rerun.stderr
    assert f"{segment}: cut a torn last line" in rerun.stderr
    assert "cli 0 1 2-2" in plain(rerun.stdout)
    assert "1 record from 4 partitions" in rerun.stderr
    assert read_back(tmp_path, "cli") == as_kept(produced)


def test_cli_errors_name_what_and_where(kafka: Kafka, tmp_path: Path) -> None:
    result = runner.invoke(app, ["capture", "-b", kafka.bootstrap, "-t", "cli-absent", "--to", str(tmp_path)])
    assert result.exit_code == 1
    assert f"error: Kafka at {kafka.bootstrap} has no topic 'cli-absent'" in result.stderr
    assert result.stdout == ""  # no table of partitions that were never read
    bad_option = runner.invoke(app, ["capture", "-b", kafka.bootstrap, "-t", "x", "--to", str(tmp_path),
                                     "-X", "security.protocol=SASL_PLAINTEXTT"])
    assert bad_option.exit_code == 2  # a wrong command line, as in replicate and transcode
    assert ('a Kafka setting librdkafka refuses: Invalid value "SASL_PLAINTEXTT" for configuration property '
            '"security.protocol"') in plain(bad_option.stderr)


@pytest.mark.parametrize("arguments", [
    [],
    ["-t", "a", "--topic-pattern", "b"],
    ["--topic-pattern", "("],
    ["-t", "a", "-X", "no-equals-sign"],
    ["-t", "a", "-X", "bootstrap.servers=elsewhere:9092"],
])
def test_cli_refuses_a_wrong_command_line(tmp_path: Path, arguments: list[str]) -> None:
    result = runner.invoke(app, ["capture", "-b", "unused:9092", "--to", str(tmp_path), *arguments])
    assert result.exit_code == 2, result.stderr
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_cli_follow_stops_on_an_interrupt_keeping_what_it_captured(kafka: Kafka, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    produce(kafka, "cli-live", numbered(2))

    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("cdclake.capture.time.sleep", interrupt)  # Ctrl-C while waiting for new records
    result = runner.invoke(app, ["capture", "-b", kafka.bootstrap, "-t", "cli-live", "--to", str(tmp_path),
                                 "--follow"])
    assert result.exit_code == 130
    assert "interrupted; a rerun continues" in result.stderr
    assert read_back(tmp_path, "cli-live") == as_kept(numbered(2))
