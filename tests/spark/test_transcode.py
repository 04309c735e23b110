"""The transcode job on Spark: in batches it writes what the in-process reference writes in one; a
batch interrupted after writing is written once; a transcoded stream replicates to the same tables as
the original; Kafka to Kafka."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from cdclake.model import RawMessage
from cdclake.sources.captured import CapturedTopics, partition_dir, read_partition
from cdclake.sources.kafka import KafkaTopics, read_range
from cdclake.sources.ranges import OffsetRange
from cdclake.spark.replicate import ReplicateConfig, Replicator
from cdclake.spark.transcode import TranscodeConfig, Transcoder
from cdclake.spark.verify import compare_tables
from cdclake.transcode.endpoints import CapturedSink, KafkaSink
from cdclake.transcode.in_process import transcode_messages
from cdclake.transcode.state import DeadLetter, Progress
from cdclake.workload import Stream, Workload, WorkloadSpec, produce_to_kafka, write_captured
from tests.kafka import Kafka
from tests.test_transcode import CASES, canonical, events_json, source_of, spec_for, stream_of

_names = itertools.count()


def _captured(stream: Stream, root: Path) -> CapturedTopics:
    write_captured(stream, root, stream.topic)
    return CapturedTopics(root, [stream.topic])


def _written(root: Path, topic: str, partitions: int) -> dict[int, list[RawMessage]]:
    return {p: list(read_partition(root, topic, p)) for p in range(partitions)}


def _values(partitions: dict[int, list[RawMessage]]) -> dict[int, list[bytes | None]]:
    return {p: [m.value for m in messages] for p, messages in partitions.items()}


def _transcoder(spark: Any, stream: Stream, target: str, tmp_path: Path, batches: int = 3) -> tuple[Transcoder, Any]:
    spec = spec_for(stream, target, partitions=3, topic="out")
    config = TranscodeConfig(spec, max_batch_records=len(stream) // batches + 1)
    source = _captured(stream, tmp_path / "in")
    return Transcoder(spark, source, CapturedSink(tmp_path / "out", "out"), config, tmp_path / "state"), spec


@pytest.mark.parametrize(("source", "target", "duplicates"), [("open", "simple", 2), ("simple", "dataworks", 2),
                                                              ("canal-json-plain", "open", 0)])
def test_batches_write_what_one_batch_writes(spark: Any, tmp_path: Path, source: str, target: str,
                                             duplicates: int) -> None:
    """Simple BOOTSTRAPs, derived schemas and DataWorks sequenceIds go on across batches as in one; a
    source's copies re-sent across a batch boundary are left out too, given watermarks (without them,
    each batch emits what it read, and copies in different batches both go out: at-least-once)."""
    stream = stream_of(source, Workload(WorkloadSpec(seed=6, transactions=20, rename_table=True)),
                       duplicates=duplicates, watermark_interval_ms=150)
    transcoder, spec = _transcoder(spark, stream, target, tmp_path, batches=2)
    reports = transcoder.run(once=True)
    assert len(reports) >= 2
    expected = transcode_messages(spec, source_of(stream)).partitions
    found = _written(tmp_path / "out", "out", 3)
    if spec.resolves:  # every batch ends at a watermark: the same messages, byte for byte
        assert _values(found) == _values(expected)
        assert sum(r.duplicates for r in reports) > 0
    else:  # Open batches end where the job's batches do: the same events
        target_format, target_options = CASES[target]
        assert {p: canonical(e) for p, e in events_json(target_format, target_options, found).items()} == {
            p: canonical(e) for p, e in events_json(target_format, target_options, expected).items()}


def test_a_batch_interrupted_after_writing_is_written_once(spark: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    stream = stream_of("open", Workload(WorkloadSpec(seed=7, transactions=40)), watermark_interval_ms=150)
    transcoder, spec = _transcoder(spark, stream, "canal-json", tmp_path, batches=2)
    save = Progress.save
    commits = itertools.count()

    def crash_at_the_first_commit(progress: Progress, directory: Path) -> None:
        if progress.plan is None and next(commits) == 0:
            raise KeyboardInterrupt("the process died before it saved the batch's progress")
        save(progress, directory)

    monkeypatch.setattr(Progress, "save", crash_at_the_first_commit)
    with pytest.raises(KeyboardInterrupt):
        transcoder.step()
    written = _written(tmp_path / "out", "out", 3)
    assert sum(map(len, written.values())) > 0
    # It died in the middle of writing partition 1: its last two messages never arrived.
    segment = sorted(partition_dir(tmp_path / "out", "out", 1).glob("*.jsonl"))[-1]
    lines = segment.read_bytes().splitlines(keepends=True)
    segment.write_bytes(b"".join(lines[:-2]))
    transcoder.run(once=True)
    expected = transcode_messages(spec, source_of(stream)).partitions
    assert _values(_written(tmp_path / "out", "out", 3)) == _values(expected)


def test_a_transcoded_stream_replicates_to_the_same_tables(spark: Any, tmp_path: Path) -> None:
    """Canal-JSON into the Simple protocol, whose rows need schemas the source never sent."""
    workload = Workload(WorkloadSpec(seed=11, transactions=20, rename_table=True))
    stream = stream_of("canal-json", workload, duplicates=1)
    transcoder, spec = _transcoder(spark, stream, "simple", tmp_path, batches=1)
    transcoder.run(once=True)
    prefix = f"transcoded_{next(_names)}"
    config = ReplicateConfig(spec.target.format_name, spec.target.codec_options(), namespace=f"{prefix}_cdclake",
                             target_namespace=f"{prefix}_{{database}}", max_batch_records=10_000)
    Replicator(spark, CapturedTopics(tmp_path / "out", ["out"]), config).run(once=True)
    # What the source carried of the upstream, through the target's encoder and decoder, into the lake.
    expected = workload.oracle().carried(stream.spec.format_name, stream.codec_options).tables
    comparisons = compare_tables(spark, expected, lambda database, table: f"`lake`.`{prefix}_{database}`.`{table}`")
    assert [(c.upstream, c.missing, c.unexpected, c.column_differences) for c in comparisons if not c.equal] == []
    assert len(comparisons) == len(expected) >= 7


def test_kafka_to_kafka(spark: Any, kafka: Kafka, tmp_path: Path) -> None:
    config = {"bootstrap.servers": kafka.bootstrap}
    stream = stream_of("simple", Workload(WorkloadSpec(seed=12, transactions=15)))
    produce_to_kafka(stream, config, "tidb-simple")
    kafka.create_topic("tidb-canal", 4)
    spec = spec_for(stream, "canal-json", partitions=4, topic="tidb-canal")
    transcoder = Transcoder(spark, KafkaTopics(config, names=["tidb-simple"]), KafkaSink(config, "tidb-canal"),
                            TranscodeConfig(spec), tmp_path / "state")
    transcoder.run(once=True)
    expected = transcode_messages(spec, source_of(stream)).partitions
    found = {p: list(read_range(config, OffsetRange("tidb-canal", p, 0, len(expected[p])))) for p in range(4)}
    assert _values(found) == _values(expected)
    assert transcoder.run(once=True) == []  # caught up: a rerun finds nothing to do


def test_changes_the_target_cannot_carry_become_the_batch_dead_letters(spark: Any, tmp_path: Path) -> None:
    stream = stream_of("dataworks", Workload(WorkloadSpec(seed=3, transactions=40)))
    transcoder, spec = _transcoder(spark, stream, "canal-json-plain", tmp_path, batches=1)
    reports = transcoder.run(once=True)
    expected = transcode_messages(spec, source_of(stream))
    assert expected.dead_letters and sum(r.dead_letters for r in reports) == len(expected.dead_letters)
    files = sorted((tmp_path / "state" / "dead-letters").iterdir())
    written = [DeadLetter.from_json(json.loads(line)) for path in files for line in path.read_bytes().splitlines()]
    assert sorted(letter.reason for letter in written) == sorted(letter.reason for letter in expected.dead_letters)
    assert _values(_written(tmp_path / "out", "out", 3)) == _values(expected.partitions)
