"""Mirrors laid out as the job file asks (cdclake.schema.layout, cdclake.sinks.iceberg.layout): a mirror
created with a layout has its partition spec and properties and still equals the upstream after
batches of updates and deletes, and gets another layout when the job starts again with it; an existing
mirror gets a layout (properties set, the partition spec evolved), a second start changes nothing, and
a rename keeps it; a DDL that would drop a column the partition spec uses stops the job, naming the
table, the column and what to do."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from cdclake.model import ColumnSchema, IndexSchema, TableSchema
from cdclake.schema.ddl.changes import DropColumn
from cdclake.schema.layout import PartitionField, layout_for, layout_rule
from cdclake.schema.policy import SchemaEvolutionError
from cdclake.sinks.iceberg.layout import partition_fields, table_properties
from cdclake.sinks.iceberg.sink import IcebergSink
from cdclake.sources.captured import CapturedTopics
from cdclake.spark.replicate import Replicator
from cdclake.types import MySQLType
from cdclake.workload import Workload, WorkloadSpec, produce, write_captured
from tests.spark.jobs import Job, lake_differences

_runs = itertools.count()
OPTIONS = {"enable-tidb-extension": True}
RULES = (layout_rule("shop[.].*", None, {"write.target-file-size-bytes": 4_194_304, "commit.retry.num-retries": 7}),
         layout_rule("shop[.]customers", ["bucket(4, id)", "days(created_at)", "tier"], {}))
CUSTOMERS_SPEC = [PartitionField("bucket", "id", 4), PartitionField("days", "created_at"),
                  PartitionField("identity", "tier")]


def test_a_mirror_created_with_a_layout_has_it_and_equals_the_upstream(spark: Any, tmp_path: Path) -> None:
    workload = Workload(WorkloadSpec(seed=21, transactions=50, tables=3, ddl=False, delete_ratio=0.25))
    stream = produce(workload, "canal-json", OPTIONS)
    write_captured(stream, tmp_path, stream.topic)
    job = Job(f"layout_{next(_runs)}", "canal-json", OPTIONS, len(stream) // 2 + 1)

    reports = Replicator(spark, CapturedTopics(tmp_path), job.config(layouts=RULES)).run(once=True)

    assert len(reports) >= 2 and sum(report.changes_applied for report in reports[1:]) > 0
    customers = job.lake_name("shop", "customers")
    assert partition_fields(spark, customers) == CUSTOMERS_SPEC
    properties = table_properties(spark, customers)
    assert (properties["write.target-file-size-bytes"], properties["commit.retry.num-retries"]) == ("4194304", "7")
    assert "write.merge.distribution-mode" not in properties  # Iceberg's default for a partitioned table
    assert properties["write.merge.mode"] == "merge-on-read"
    for (database, table) in workload.oracle().tables:
        if database == "shop" and table != "customers":
            assert partition_fields(spark, job.lake_name(database, table)) == []
    expected = workload.oracle().carried("canal-json", stream.codec_options).tables
    assert ("shop", "customers") in expected
    assert lake_differences(spark, job, expected) == []

    # The job started again with another layout: the mirror gets it before anything is read.
    again = (layout_rule("shop[.]customers", ["bucket(8, id)"], {"commit.retry.num-retries": "9"}),)
    assert Replicator(spark, CapturedTopics(tmp_path), job.config(layouts=again)).step(finishing=True) is None
    assert partition_fields(spark, customers) == [PartitionField("bucket", "id", 8)]
    assert table_properties(spark, customers)["commit.retry.num-retries"] == "9"
    assert lake_differences(spark, job, expected) == []


SCHEMA = TableSchema("shop", "visits", (ColumnSchema("id", MySQLType.parse("int")),
                                        ColumnSchema("region", MySQLType.parse("varchar(8)")),
                                        ColumnSchema("at", MySQLType.parse("datetime"))),
                     (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),))


def test_an_existing_mirror_gets_the_layout_once_and_keeps_its_partition_columns(spark: Any) -> None:
    namespace = f"layout_{next(_runs)}"
    sink = IcebergSink(spark, "lake", namespace)
    target = sink.target(namespace, "visits")
    sink.create_table(target, SCHEMA)
    spark.sql(f"INSERT INTO {target} VALUES (1, 'eu', TIMESTAMP_NTZ'2024-05-01 10:00:00')")
    layout = layout_for([layout_rule("shop.visits", ["region", "months(at)"], {"read.split.target-size": "1024"})],
                        "shop", "visits")
    assert layout is not None

    sink.apply_layout(target, SCHEMA, layout)
    metadata = spark.sql(f"SELECT count(*) FROM {target}.metadata_log_entries").collect()[0][0]
    sink.apply_layout(target, SCHEMA, layout)

    assert partition_fields(spark, target) == [PartitionField("identity", "region"), PartitionField("months", "at")]
    properties = table_properties(spark, target)
    assert properties["read.split.target-size"] == "1024"
    assert "write.merge.distribution-mode" not in properties
    assert spark.sql(f"SELECT count(*) FROM {target}.metadata_log_entries").collect()[0][0] == metadata
    with pytest.raises(SchemaEvolutionError) as refused:
        sink.evolve_table(target, SCHEMA, [DropColumn("region")])
    assert str(refused.value).startswith(
        f"{target}: column region is to be dropped, but the table is partitioned by `region` and Iceberg "
        f"cannot drop a column its partition spec uses; drop the field first (ALTER TABLE {target} DROP "
        "PARTITION FIELD `region`)")
    assert [f.name for f in spark.table(target).schema.fields] == ["id", "region", "at"]
    sink.evolve_table(target, SCHEMA, [DropColumn("id")])  # not a partition column: dropped
    assert [f.name for f in spark.table(target).schema.fields] == ["region", "at"]

    renamed = sink.target(namespace, "visits_renamed")
    sink.rename_table(target, renamed)  # a copy in a Hadoop catalog: partitioning and properties kept
    assert partition_fields(spark, renamed) == [PartitionField("identity", "region"), PartitionField("months", "at")]
    kept = table_properties(spark, renamed)
    assert (kept["read.split.target-size"], kept["write.merge.mode"]) == ("1024", "merge-on-read")
    assert spark.sql(f"SELECT region FROM {renamed}").collect()[0][0] == "eu"
