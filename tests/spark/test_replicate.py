"""Replication end to end: a simulated upstream streamed in each format, replicated into Iceberg from
captured files and from Kafka, leaves every mirror table equal to the upstream, value for value, and
the changelog holding each change once.

Every test gets its own namespaces in the shared warehouse, so tests do not see each other's tables.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from cdclake.formats import get_codec
from cdclake.model import RowChange
from cdclake.sinks.iceberg import tables
from cdclake.sources.captured import CapturedTopics
from cdclake.sources.kafka import KafkaTopics
from cdclake.spark.replicate import ReplicateConfig, Replicator
from cdclake.spark.verify import compare_tables
from cdclake.workload import Stream, Workload, WorkloadSpec, produce, produce_to_kafka, write_captured
from tests.kafka import Kafka

FORMATS: dict[str, dict[str, Any]] = {
    "open": {},
    "canal-json": {"enable-tidb-extension": True},
    "canal-json-plain": {},
    "simple": {},
    "simple-avro": {},
    "dataworks": {},
}
_names = itertools.count()


def _format(case: str) -> str:
    return "canal-json" if case == "canal-json-plain" else case


def _namespaced(tag: str) -> tuple[ReplicateConfig, Callable[[str, str], str]]:
    prefix = f"{tag.replace('-', '_')}_{next(_names)}"
    config = ReplicateConfig("open", namespace=f"{prefix}_cdclake", target_namespace=f"{prefix}_{{database}}")
    return config, lambda database, table: f"`lake`.`{prefix}_{database}`.`{table}`"


def _stream(case: str, duplicates: int = 2, transactions: int = 40) -> tuple[Workload, Stream]:
    workload = Workload(WorkloadSpec(seed=11, transactions=transactions, rename_table=True))
    return workload, produce(workload, _format(case), FORMATS[case], duplicates=duplicates)


def _replicate(spark: Any, source: Any, case: str, stream: Stream, batches: int = 3, **settings: Any
               ) -> tuple[Replicator, Callable[[str, str], str], ReplicateConfig]:
    base, lake_name = _namespaced(case)
    config = ReplicateConfig(
        _format(case), stream.codec_options, namespace=base.namespace, target_namespace=base.target_namespace,
        max_batch_records=max(1, len(stream) // batches + 1), **settings,
    )
    replicator = Replicator(spark, source, config)
    replicator.run(once=True)
    return replicator, lake_name, config


def _distinct_changes(workload: Workload, case: str) -> int:
    """The row changes of the stream without re-sent copies, as a consumer decodes them."""
    clean = produce(workload, _format(case), FORMATS[case], duplicates=0)
    count = 0
    for messages in clean.partitions.values():
        decoder = clean.decoder()
        for message in messages:
            count += sum(isinstance(event, RowChange) for event in decoder.decode(message))
        count += sum(isinstance(event, RowChange) for event in decoder.flush())
    return count


def _assert_equal(spark: Any, expected: Mapping[tuple[str, str], Any], lake_name: Callable[[str, str], str]) -> None:
    comparisons = compare_tables(spark, expected, lake_name)
    differing = [(c.upstream, c.missing, c.unexpected, c.column_differences, c.examples)
                 for c in comparisons if not c.equal]
    assert not differing
    assert len(comparisons) == len(expected) >= 7


@pytest.mark.parametrize("case", FORMATS)
def test_a_captured_stream_replicates_to_the_upstream_tables(spark: Any, tmp_path: Path, case: str) -> None:
    workload, stream = _stream(case)
    assert stream.resent, "the stream must hold re-sent duplicates for this test to mean anything"
    write_captured(stream, tmp_path, stream.topic)
    _, lake_name, config = _replicate(spark, CapturedTopics(tmp_path), case, stream)
    _assert_equal(spark, workload.oracle().carried(_format(case), stream.codec_options).tables, lake_name)
    changelog = spark.table(f"`lake`.`{config.namespace}`.`changelog`").count()
    if case == "canal-json-plain":
        # Without commit ts a re-sent copy of the millisecond a batch ended in is applied again (harmless
        # to the table, see Ordering.not_yet_applied), so the changelog may repeat it.
        assert changelog >= _distinct_changes(workload, case)
    else:
        assert changelog == _distinct_changes(workload, case)
    assert spark.table(f"`lake`.`{config.namespace}`.`dead_letters`").count() == 0


@pytest.mark.parametrize("case", ["simple", "open"])
def test_a_stream_whose_only_copies_are_its_ddls_replicates_each_ddl_once(spark: Any, tmp_path: Path, case: str
                                                                         ) -> None:
    # These formats send each DDL to every partition and nothing is re-sent: only the DDLs may be copies,
    # and Ordering.deduplicated compares them alone, no row hashed.
    workload, stream = _stream(case, duplicates=0)
    assert not stream.resent
    write_captured(stream, tmp_path, stream.topic)
    _, lake_name, config = _replicate(spark, CapturedTopics(tmp_path), case, stream)
    _assert_equal(spark, workload.oracle().carried(_format(case), stream.codec_options).tables, lake_name)
    assert spark.table(f"`lake`.`{config.namespace}`.`changelog`").count() == _distinct_changes(workload, case)


@pytest.mark.parametrize("case", ["open", "simple"])
def test_a_kafka_stream_replicates_to_the_upstream_tables(spark: Any, kafka: Kafka, case: str) -> None:
    workload, stream = _stream(case, transactions=40)
    topic = f"replicate-{case}-{next(_names)}"
    config = {"bootstrap.servers": kafka.bootstrap}
    produce_to_kafka(stream, config, topic)
    _, lake_name, _ = _replicate(spark, KafkaTopics(config, names=[topic]), case, stream, batches=2)
    _assert_equal(spark, workload.oracle().carried(_format(case), stream.codec_options).tables, lake_name)


def test_the_codecs_say_which_order_their_streams_apply_in() -> None:
    assert get_codec("open").has_watermarks(get_codec("open").resolve())
    assert get_codec("canal-json").has_watermarks(get_codec("canal-json").resolve({"enable-tidb-extension": True}))
    assert not get_codec("canal-json").has_watermarks(get_codec("canal-json").resolve())
    assert not get_codec("dataworks").has_watermarks(get_codec("dataworks").resolve())


def test_replaying_every_range_changes_nothing(spark: Any, tmp_path: Path) -> None:
    """A second job over the same tables that reads the whole topic again (its state lost but its
    registry of tables kept: each table's applied resolved ts, and the ts at which a renamed table's
    old name went) applies nothing twice, and brings back no table renamed away."""
    workload, stream = _stream("simple")
    write_captured(stream, tmp_path, stream.topic)
    replicator, lake_name, config = _replicate(spark, CapturedTopics(tmp_path), "simple", stream)
    state_table = f"`lake`.`{config.namespace}`.`state`"
    before = spark.table(f"`lake`.`{config.namespace}`.`changelog`").count()
    # Forget where reading stands (positions, carried messages, pending), keep what each table applied.
    spark.sql(f"DELETE FROM {state_table} WHERE state NOT IN ('table', 'gone')")
    replicator.run(once=True)
    _assert_equal(spark, workload.oracle().carried("simple", stream.codec_options).tables, lake_name)
    assert spark.table(f"`lake`.`{config.namespace}`.`changelog`").count() == before




def test_snapshots_expire_as_each_tables_retention_says(spark: Any, tmp_path: Path) -> None:
    """Expiry after every batch: the state table, told to keep snapshots 1 ms, keeps only its newest;
    the changelog keeps its own (Iceberg's default retention: 5 days); the tables are still right.
    Canal-JSON without watermarks, so that every batch applies changes."""
    case = "canal-json-plain"
    workload, stream = _stream(case, duplicates=0)
    write_captured(stream, tmp_path, stream.topic)
    base, lake_name = _namespaced("expiry")
    config = ReplicateConfig(_format(case), stream.codec_options, namespace=base.namespace,
                             target_namespace=base.target_namespace, max_batch_records=len(stream) // 3 + 1,
                             expire_snapshots_every_s=1e-9)
    replicator = Replicator(spark, CapturedTopics(tmp_path), config)
    state_table = f"`lake`.`{config.namespace}`.`state`"
    spark.sql(f"ALTER TABLE {state_table} SET TBLPROPERTIES ('history.expire.max-snapshot-age-ms'='1')")
    reports = replicator.run(once=True)
    assert sum(report.changes_applied > 0 for report in reports) >= 2
    assert spark.sql(f"SELECT * FROM {state_table}.snapshots").count() == 1
    changelog_snapshots = spark.sql(f"SELECT * FROM `lake`.`{config.namespace}`.`changelog`.snapshots").count()
    assert changelog_snapshots == sum(report.changes_applied > 0 for report in reports)
    _assert_equal(spark, workload.oracle().carried(_format(case), stream.codec_options).tables, lake_name)


def test_merges_side_by_side_share_the_sessions_shuffle_partitions(spark: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables applied four at a time with the session's two shuffle partitions: each MERGE shuffles into
    one, not into both; the session's setting is back once the batch is applied."""
    setting = "spark.sql.shuffle.partitions"
    session_value = spark.conf.get(setting)
    seen: list[str] = []
    merge = tables.merge_changes

    def recording(spark_: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(spark_.conf.get(setting))
        merge(spark_, *args, **kwargs)

    monkeypatch.setattr(tables, "merge_changes", recording)
    workload = Workload(WorkloadSpec(seed=11, transactions=15))
    stream = produce(workload, "open", {}, duplicates=0)
    write_captured(stream, tmp_path, stream.topic)
    _, lake_name, _ = _replicate(spark, CapturedTopics(tmp_path), "open", stream, batches=2, parallel_tables=4)
    _assert_equal(spark, workload.oracle().carried("open", stream.codec_options).tables, lake_name)
    assert session_value == "2"
    assert seen and set(seen) == {"1"}
    assert spark.conf.get(setting) == session_value
