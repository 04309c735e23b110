"""A batch run again after a crash finds the steps it stored, whatever became of its tables before the
crash: a table the batch made (from its rows or by a CREATE), a table the batch renamed (on the tests'
Hadoop catalog, a copy under the new name). Nothing is applied twice, and the run finishes the batch.

(Without the first, the batch's rows were applied again to each table, and a table whose column a DDL of
the batch renamed stopped the run: the rows' old column name.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdclake.model import ColumnSchema, TableSchema
from cdclake.sinks.base import Step
from cdclake.sinks.iceberg.tables import BATCH_PROPERTY, STEP_PROPERTY
from cdclake.sources.captured import CapturedTopics
from cdclake.spark.replicate import Replicator
from cdclake.types import MySQLType
from cdclake.workload import Workload, WorkloadSpec, produce
from tests.spark.jobs import Job, lake_differences
from tests.spark.streams import write

pytestmark = pytest.mark.spark
OPTIONS = {"enable-tidb-extension": True}


class Crash(Exception):
    """The process dying where the test says."""


def test_a_batch_run_again_finds_its_steps_in_tables_it_made(spark: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """One batch makes every table and writes them all; its state's commit fails. Run again, it must
    find each table's steps under the table it made, not apply them again as a new table's."""
    workload = Workload(WorkloadSpec(seed=23, transactions=30, rename_table=True))
    stream = produce(workload, "canal-json", OPTIONS, duplicates=2)
    job = Job("recovery", "canal-json", OPTIONS)  # one batch
    _crash_at(spark, monkeypatch, stream, tmp_path, job, "commit")
    stored = {table: _steps(spark, table) for table in _mirrors(spark, job)}
    assert stored

    Replicator(spark, CapturedTopics(tmp_path), job.config()).run(once=True)

    again = {table: steps for table in _mirrors(spark, job) if (steps := _steps(spark, table)) != stored.get(table)}
    assert again == {}, "the run again stored steps the crashed run had stored (or lost some)"
    assert lake_differences(spark, job, workload.oracle().carried("canal-json", stream.codec_options).tables) == []


def test_a_batch_run_again_before_it_wrote_anything_applies_a_renamed_tables_rows_under_its_new_name(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One batch renames a table and then changes rows under its new name; the run stops before it writes
    anything. Run again, the rename's copy carries the steps the table stored under its old name in this
    batch, and the rows under the new name must be numbered after them, not taken for stored already.

    (Before 2026-11-28 each table's work numbered its steps from 1: the re-run skipped the renamed
    table's rows, and its mirror lacked them.)"""
    workload = Workload(WorkloadSpec(seed=11, transactions=40, rename_table=True, tables=3))
    stream = produce(workload, "canal-json", OPTIONS)
    job = Job("recovery_rename", "canal-json", OPTIONS)  # one batch
    _crash_at(spark, monkeypatch, stream, tmp_path, job, "append_changelog")
    assert _mirrors(spark, job) == [], "the crashed run wrote a table"

    Replicator(spark, CapturedTopics(tmp_path), job.config()).run(once=True)

    expected = workload.oracle().carried("canal-json", stream.codec_options).tables
    assert any(table.endswith("_renamed") for _, table in expected), "the workload must rename a table"
    assert lake_differences(spark, job, expected) == []


def _crash_at(spark: Any, monkeypatch: pytest.MonkeyPatch, stream: Any, captured: Path, job: Job,
              sink_method: str) -> None:
    """``stream`` captured under ``captured``, and the job's first batch run until it calls the sink's
    ``sink_method``, where the process dies."""
    write(captured, stream.topic, stream.partitions)
    crashing = Replicator(spark, CapturedTopics(captured), job.config())

    def crash(*_: Any) -> None:
        raise Crash

    monkeypatch.setattr(crashing.sink, sink_method, crash)
    with pytest.raises(Crash):
        crashing.step()


def _mirrors(spark: Any, job: Job) -> list[str]:
    namespaces = [row[0] for row in spark.sql("SHOW NAMESPACES IN lake").collect() if row[0].startswith(job.prefix)]
    return [f"lake.{namespace}.{row['tableName']}" for namespace in namespaces if namespace != job.namespace
            for row in spark.sql(f"SHOW TABLES IN lake.{namespace}").collect()]


def _steps(spark: Any, table: str) -> list[tuple[int, int]]:
    """Every (batch, step) the table's snapshots carry, oldest first."""
    rows = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at").collect()
    return [(int(row["summary"][BATCH_PROPERTY]), int(row["summary"][STEP_PROPERTY]))
            for row in rows if BATCH_PROPERTY in row["summary"]]



def test_a_table_renamed_by_copy_keeps_its_newest_step(spark: Any) -> None:
    """A Hadoop catalog cannot rename: the sink copies the table. A batch that crashed right after the
    rename finds the table only under its new name, so the copy must carry the steps stored before."""
    sink = Replicator(spark, None, Job("renamed", "canal-json", OPTIONS).config()).sink
    old, new = sink.target("renamed_shop", "orders"), sink.target("renamed_shop", "orders_renamed")
    sink.create_table(old, TableSchema("shop", "orders", (ColumnSchema("id", MySQLType.parse("int")),)))
    spark.sql(f"INSERT INTO {old} VALUES (1)")
    sink.truncate_table(old, Step(7, 3))
    sink.rename_table(old, new)
    assert (spark.catalog.tableExists(old), sink.last_step(new)) == (False, (7, 3))
