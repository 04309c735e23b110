"""Table layouts (cdclake.schema.layout) from the job file's ``[tables."<pattern>"]``: partition fields
read in Iceberg's forms and refused otherwise, naming the sub-table; the layouts of every matching
pattern combined in the file's order; a column the table lacks, or of a type its transform does not
take, refused naming the table and the column; and a database sink refusing any layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdclake.errors import OptionError
from cdclake.jobconfig import job_settings, merged, read_toml
from cdclake.model import ColumnSchema, TableSchema
from cdclake.schema.layout import LayoutError, PartitionField, TableLayout, layout_for, layout_rule
from cdclake.sinks.mariadb.connection import parse as mariadb_address
from cdclake.sinks.mariadb.sink import MariaDBSink
from cdclake.sinks.postgres.connection import parse as postgres_address
from cdclake.sinks.postgres.sink import PostgresSink
from cdclake.spark.replicate import ReplicateConfig
from cdclake.types import MySQLType

SCHEMA = TableSchema("shop", "orders", (ColumnSchema("id", MySQLType.parse("bigint")),
                                        ColumnSchema("created_at", MySQLType.parse("datetime")),
                                        ColumnSchema("price", MySQLType.parse("double")),
                                        ColumnSchema("weird col", MySQLType.parse("varchar(8)"))))


@pytest.mark.parametrize(("text", "field", "sql"), [
    ("region", PartitionField("identity", "region"), "`region`"),
    ("bucket(16, id)", PartitionField("bucket", "id", 16), "bucket(16, `id`)"),
    ("truncate(4,`weird col`)", PartitionField("truncate", "weird col", 4), "truncate(4, `weird col`)"),
    (" DAYS( created_at ) ", PartitionField("days", "created_at"), "days(`created_at`)"),
    ("hours(`a``b`)", PartitionField("hours", "a`b"), "hours(`a``b`)"),
])
def test_a_partition_field_is_read_in_icebergs_forms(text: str, field: PartitionField, sql: str) -> None:
    assert PartitionField.parse(text) == field
    assert field.sql() == sql
    assert PartitionField.parse(sql) == field


@pytest.mark.parametrize(("text", "said"), [
    ("day(created_at)", "no transform 'day'; one of: a column, bucket(N, column)"),
    ("bucket(id)", "write it bucket(N, column)"),
    ("days(7, created_at)", "write it days(column)"),
    ("bucket(0, id)", "bucket's width must be at least 1"),
    ("truncate(id, 4)", "is not one of: a column, bucket(N, column)"),
    ("id, region", "is not one of"),
])
def test_a_partition_field_of_no_form_is_refused_naming_its_sub_table(text: str, said: str) -> None:
    with pytest.raises(LayoutError, match=r'^\[tables."shop.orders"\]: partition field ') as refused:
        layout_rule("shop.orders", [text], {})
    assert said in str(refused.value)


def test_every_matching_pattern_applies_in_order_and_the_last_partition_by_wins() -> None:
    rules = [layout_rule("shop.*", ["region"], {"write.target-file-size-bytes": 1024, "a": "x"}),
             layout_rule("shop.orders", ["bucket(16, id)"], {"a": True}),
             layout_rule("other.*", [], {"b": 1.5})]
    orders = layout_for(rules, "shop", "orders")
    assert orders == TableLayout((PartitionField("bucket", "id", 16),),
                                 {"write.target-file-size-bytes": "1024", "a": "true"}, ("shop.*", "shop.orders"))
    items = layout_for(rules, "shop", "items")
    assert items is not None and items.partition_by == (PartitionField("identity", "region"),)
    assert layout_for(rules, "crm", "x") is None
    assert layout_for([layout_rule("shop", None, {"a": "1"})], "shop", "orders") is None  # matched whole
    assert layout_for([layout_rule("shop.orders", None, {"a": "1"})], "shop", "orders") == TableLayout(
        None, {"a": "1"}, ("shop.orders",))


@pytest.mark.parametrize(("partition_by", "said"), [
    (["region"], "shop.orders: partition-by `region` of [tables.\"shop.*\"] names a column the table lacks; "
                 "its columns: id, created_at, price, weird col"),
    (["days(id)"], "days takes date, timestamp, timestamp_ntz, not column id's long"),
    (["bucket(4, price)"], "bucket takes int, long, decimal, string, binary, date, timestamp, timestamp_ntz, "
                           "not column price's double"),
])
def test_a_partition_column_the_table_lacks_or_cannot_transform_is_refused(partition_by: list[str],
                                                                            said: str) -> None:
    layout = layout_for([layout_rule("shop.*", partition_by, {})], "shop", "orders")
    assert layout is not None
    with pytest.raises(LayoutError) as refused:
        layout.check_columns("shop.orders", SCHEMA)
    assert said in str(refused.value)


def test_columns_are_matched_without_case_and_every_transform_its_types() -> None:
    layout = layout_for([layout_rule("shop.orders", ["ID", "hours(Created_At)", "truncate(2, `WEIRD COL`)",
                                                     "price"], {})], "shop", "orders")
    assert layout is not None
    layout.check_columns("shop.orders", SCHEMA)


@pytest.mark.parametrize(("properties", "said"), [
    ({"format-version": "3"}, "property 'format-version' is the job's own"),
    ({"cdclake.key-columns": "id"}, "property 'cdclake.key-columns' is the job's own"),
    ({"x": [1]}, "property 'x' = [1] is not a string, number or boolean"),
])
def test_a_property_the_job_keeps_or_of_no_kind_is_refused(properties: dict[str, object], said: str) -> None:
    with pytest.raises(LayoutError, match=r'^\[tables."t.*"\]: ') as refused:
        layout_rule("t.*", None, properties)
    assert said in str(refused.value)


def _job_file(tmp_path: Path, tables: str) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(f'[source]\ncaptured = "{tmp_path}"\n[format]\nname = "canal-json"\n{tables}\n')
    return path


def test_the_job_file_names_layouts_per_pattern_beside_the_tables_settings(tmp_path: Path) -> None:
    path = _job_file(tmp_path, '[tables]\ninclude = "shop\\\\..*"\n'
                               '[tables."shop.*"]\nproperties = { "write.target-file-size-bytes" = 134217728 }\n'
                               '[tables."shop.orders"]\npartition-by = ["bucket(16, id)", "days(created_at)"]\n')
    config = job_settings(merged(read_toml(path), {})).replicate
    assert config.include == "shop\\..*"
    assert [rule.pattern for rule in config.layouts] == ["shop.*", "shop.orders"]
    assert config.layout_for("shop", "orders") == TableLayout(
        (PartitionField("bucket", "id", 16), PartitionField("days", "created_at")),
        {"write.target-file-size-bytes": "134217728"}, ("shop.*", "shop.orders"))
    assert config.layout_for("crm", "people") is None


@pytest.mark.parametrize(("tables", "said"), [
    ('[tables."shop.*"]\npartition = ["id"]', '[tables."shop.*"] has no partition; valid: history-keep-deleted, '
                                              'partition-by, properties, track-history-columns, track-history-except'),
    ('[tables."shop.*"]\npartition-by = "id"', '[tables."shop.*"] partition-by = "id" is not a list of strings '
                                               '(one is a list too: partition-by = ["id"])'),
    ('[tables."shop.*"]\nproperties = ["a"]', "[tables.\"shop.*\"] properties = ['a'] is not a table"),
    ('[tables]\nexclude = 3', "[tables] exclude = 3 is not a string"),
])
def test_a_layout_key_of_the_wrong_name_or_kind_is_refused_naming_file_and_sub_table(
    tmp_path: Path, tables: str, said: str
) -> None:
    path = _job_file(tmp_path, tables)
    with pytest.raises(OptionError) as refused:
        read_toml(path)
    assert str(refused.value) == f"{path}: {said}"


def test_an_invalid_transform_in_the_job_file_names_its_sub_table(tmp_path: Path) -> None:
    path = _job_file(tmp_path, '[tables."shop.orders"]\npartition-by = ["month(created_at)"]')
    with pytest.raises(LayoutError, match=r'^\[tables."shop.orders"\]: partition field \'month\(created_at\)\': '
                                          "no transform 'month'"):
        job_settings(merged(read_toml(path), {}))


def test_a_pattern_that_is_no_regular_expression_is_refused() -> None:
    with pytest.raises(LayoutError, match=r'^\[tables."shop\.\(\*"\]: not a regular expression'):
        layout_rule("shop.(*", None, {})


def test_a_database_sink_takes_no_layout() -> None:
    """Refused in the job's settings, and by the sinks themselves (handed to a Replicator directly),
    before they touch their database."""
    refusal = r'^\[tables."shop.\*"\]: partition-by and properties lay out Iceberg tables; a database sink'
    layout = layout_for([layout_rule("shop.*", ["id"], {})], "shop", "orders")
    assert layout is not None
    with pytest.raises(LayoutError, match=refusal):
        ReplicateConfig("canal-json", sink="jdbc:postgresql://db:5432/mirror?password=secret",
                        layouts=(layout_rule("shop.*", ["id"], {}),))
    sinks = (PostgresSink(None, postgres_address("jdbc:postgresql://db:5432/mirror")),  # type: ignore[arg-type]
             MariaDBSink(None, mariadb_address("jdbc:mariadb://db:3306/mirror")))  # type: ignore[arg-type]
    for sink in sinks:
        with pytest.raises(LayoutError, match=refusal):
            sink.create_table("mirror.orders", SCHEMA, layout)
        with pytest.raises(LayoutError, match=refusal):
            sink.apply_layout("mirror.orders", SCHEMA, layout)
