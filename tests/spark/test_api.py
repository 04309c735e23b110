"""The Python API for Spark users (cdclake.spark): each call on its own, and the applier under Spark's
at-least-once batch retries. The applier inside a Structured Streaming query is examples/streaming_job.py,
which tests/test_examples.py runs.

The workload's streams are cut into a few query batches by offset, each partition's messages in
thirds, as a streaming query over a Kafka topic would see them arrive.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from cdclake.errors import OptionError
from cdclake.model import RowChange
from cdclake.schema.lake import lake_type
from cdclake.sinks.iceberg import tables as apply_module
from cdclake.spark import ChangeApplier, decode_changes, read_records, table_views
from cdclake.workload import Stream, Workload, WorkloadSpec, produce
from tests.spark.jobs import Job, changelog_count, lake_differences, row_changes
from tests.spark.streams import write

SPEC = WorkloadSpec(seed=5, transactions=30, tables=3, rename_table=True)
_names = itertools.count()


def _stream(format_name: str, options: dict[str, Any], duplicates: int = 0) -> tuple[Workload, Stream]:
    workload = Workload(SPEC)
    return workload, produce(workload, format_name, options, duplicates=duplicates, watermark_interval_ms=50)


def _job(format_name: str, options: dict[str, Any]) -> Job:
    return Job(f"api_{next(_names)}", format_name, options)


def _applier(spark: Any, job: Job, **settings: Any) -> ChangeApplier:
    return ChangeApplier(spark, job.format_name, dict(job.options), namespace=job.namespace,
                         target_namespace=job.target_namespace, **settings)


def _record_rows(stream: Stream) -> list[tuple[Any, ...]]:
    """Every message of the stream as a row of Spark's Kafka source (key, value, topic, partition,
    offset, timestamp in epoch ms, timestampType)."""
    return [(m.key, m.value, stream.topic, partition, offset, m.timestamp_ms, 0)
            for partition, messages in stream.partitions.items() for offset, m in enumerate(messages)]


KAFKA_SOURCE_DDL = ("key binary, value binary, topic string, partition int, offset bigint, timestamp bigint, "
                    "timestampType int")


def _batches(spark: Any, stream: Stream, count: int = 3) -> list[Any]:
    """The stream in ``count`` query batches: batch i holds the i-th share of every partition."""
    from pyspark.sql import functions as F

    frames = []
    for index in range(count):
        rows = [row for row in _record_rows(stream)
                if len(stream.partitions[row[3]]) * index // count <= row[4]
                < len(stream.partitions[row[3]]) * (index + 1) // count]
        # Spark's Kafka source gives a timestamp, not epoch milliseconds.
        frames.append(spark.createDataFrame(rows, KAFKA_SOURCE_DDL)
                      .withColumn("timestamp", F.timestamp_millis("timestamp")))
    return frames


def _expected(workload: Workload, stream: Stream) -> Any:
    return workload.oracle().carried(stream.spec.format_name, stream.codec_options).tables


def test_read_records_reads_each_partition_between_the_offsets_asked(spark: Any, tmp_path: Path) -> None:
    _, stream = _stream("open", {})
    write(tmp_path, stream.topic, stream.partitions)

    records = read_records(spark, captured=tmp_path, starting_offsets={(stream.topic, 0): 2},
                           ending_offsets={(stream.topic, 1): 3})

    assert records.columns == ["topic", "partition", "offset", "timestamp", "key", "value"]
    found = {(r["partition"], r["offset"]): (r["key"], r["value"]) for r in records.collect()}
    expected = {(p, o): (m.key, m.value) for p, ms in stream.partitions.items() for o, m in enumerate(ms)
                if not (p == 0 and o < 2) and not (p == 1 and o >= 3)}
    assert found == expected


def test_decode_changes_decodes_spark_kafka_source_rows_into_every_change(spark: Any) -> None:
    _, stream = _stream("simple", {})
    frame = spark.createDataFrame(_record_rows(stream), KAFKA_SOURCE_DDL)

    changes = decode_changes(frame, "simple")

    kinds = {row["kind"]: row["count"] for row in changes.groupBy("kind").count().collect()}
    assert kinds["row"] == row_changes(stream)
    assert "error" not in kinds and "carry" in kinds  # schemas are carried for the next batch
    watermarks = sum(1 for ms in stream.partitions.values() for m in ms if b"WATERMARK" in (m.value or b""))
    assert kinds["watermark"] == watermarks


def test_wrong_options_fail_at_once_naming_the_valid_ones(spark: Any) -> None:
    frame = spark.createDataFrame([(b"{}", 0)], "value binary, offset bigint")
    with pytest.raises(OptionError, match="enable-tidb-extension"):
        decode_changes(frame, "canal-json", enable_tidb_extensions=True)
    with pytest.raises(OptionError, match="on_bad_message"):
        ChangeApplier(spark, "open", on_bad_messages="fail")
    with pytest.raises(OptionError, match="value and offset"):
        decode_changes(spark.createDataFrame([(b"{}",)], "payload binary"), "canal-json")
    with pytest.raises(OptionError, match=r"unknown format|one of"):
        decode_changes(frame, "avro")


def test_table_views_hold_each_tables_rows_with_their_real_types(spark: Any) -> None:
    _, stream = _stream("canal-json", {"enable-tidb-extension": True})
    changes = decode_changes(spark.createDataFrame(_record_rows(stream), KAFKA_SOURCE_DDL), "canal-json",
                             {"enable-tidb-extension": "true"})

    views = table_views(changes)

    counts: dict[str, int] = {}
    newest_types: dict[str, dict[str, str]] = {}
    for event in _events(stream):
        if isinstance(event, RowChange):
            name = f"{event.database}.{event.table}"
            counts[name] = counts.get(name, 0) + 1
            newest_types.setdefault(name, {}).update({c: lake_type(t) for c, t in event.types.items()})
    assert {name: view.count() for name, view in views.items()} == counts
    spelled = {"bigint": "long"}  # Spark's name for Iceberg's long
    found = {name: {f.name: spelled.get(f.dataType.simpleString(), f.dataType.simpleString())
                    for f in view.schema.fields if not f.name.startswith("_")} for name, view in views.items()}
    assert found == newest_types
    assert any(t.startswith("decimal(") for types in found.values() for t in types.values())
    assert views[next(iter(views))].columns[:2] == ["_op", "_commit_ts"]


def _events(stream: Stream) -> list[Any]:
    from tests.spark.streams import decoded_in_order

    return [event for _, _, events in decoded_in_order(stream.spec.format_name, stream.codec_options,
                                                       stream.partitions) for event in events]


def test_the_applier_applies_query_batches_once_whatever_the_retries(spark: Any) -> None:
    """Simple: rows of later batches need the BOOTSTRAPs of earlier ones (Open Protocol's batches go
    through the applier in the half-way test below, a Structured Streaming query in
    examples/streaming_job.py, which tests/test_examples.py runs)."""
    format_name, options = "simple", {}
    workload, stream = _stream(format_name, options, duplicates=1)
    job = _job(format_name, options)
    applier = _applier(spark, job)
    batches = _batches(spark, stream)

    reports = [applier(frame, batch_id) for batch_id, frame in enumerate(batches)]
    retried = applier(batches[1], 1)

    assert all(report is not None for report in reports) and retried is None
    assert lake_differences(spark, job, _expected(workload, stream)) == []
    clean = produce(workload, format_name, options, watermark_interval_ms=50)
    assert changelog_count(spark, job) == row_changes(clean)


def test_a_batch_that_failed_half_way_is_finished_by_its_retry(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    workload, stream = _stream("open", {})
    job = _job("open", {})
    applier = _applier(spark, job)
    batches = _batches(spark, stream)
    applier(batches[0], 0)
    calls = itertools.count(1)
    failed = []
    real_merge = apply_module.merge_changes

    def merge_then_fail(*args: Any, **kwargs: Any) -> None:
        call = next(calls)  # tables merge in parallel: each call takes its number before it runs
        real_merge(*args, **kwargs)
        if call == 1:
            failed.append(call)
            raise RuntimeError("the executor died")

    with monkeypatch.context() as patched:
        patched.setattr(apply_module, "merge_changes", merge_then_fail)
        with pytest.raises(RuntimeError, match="executor died"):
            applier(batches[1], 1)
    applier(batches[1], 1)
    applier(batches[2], 2)

    assert failed == [1]
    assert lake_differences(spark, job, _expected(workload, stream)) == []
    assert changelog_count(spark, job) == row_changes(stream)


def test_the_applier_takes_changes_decoded_batch_by_batch(spark: Any) -> None:
    """Simple rows need the BOOTSTRAP of an earlier batch: decode_changes carries them raw, and the
    applier decodes them again with the schemas it kept."""
    workload, stream = _stream("simple", {})
    job = _job("simple", {})
    applier = _applier(spark, job)

    for batch_id, frame in enumerate(_batches(spark, stream)):
        applier(decode_changes(frame, "simple"), batch_id)

    assert lake_differences(spark, job, _expected(workload, stream)) == []
    assert changelog_count(spark, job) == row_changes(stream)
