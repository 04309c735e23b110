"""One table's MERGE (cdclake.sinks.iceberg.tables): an update whose image lacks a column keeps the table's value
of it, the MERGE for whole images (which reads only the target's keys) gives the same table as the
general one when every image is whole, and appending to a table with no rows gives what the MERGE would."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from pyspark.sql import functions as F

from cdclake.model import ColumnSchema, IndexSchema, Op, RowChange, TableSchema
from cdclake.sinks.iceberg import tables
from cdclake.spark.changes import ChangeWriter
from cdclake.types import MySQLType

SCHEMA = TableSchema("db", "t", (ColumnSchema("id", MySQLType.parse("int")),
                                 ColumnSchema("name", MySQLType.parse("varchar(10)")),
                                 ColumnSchema("price", MySQLType.parse("decimal(6,2)"))),
                     (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),))
TYPES = {c.name: c.type for c in SCHEMA.columns}
_tables = itertools.count()


def _reasons(*rows: RowChange) -> list[Any]:
    writer = ChangeWriter(lambda _: None)
    for row in rows:
        writer.add_row(row)
    return writer.take().column("reason").to_pylist()


def test_a_row_whose_after_image_lacks_a_column_is_marked_partial() -> None:
    whole = RowChange(Op.UPDATE, "db", "t", {"id": 1, "name": "a", "price": None},
                      {"id": 1, "name": "b", "price": None}, TYPES, ("id",))
    lacking_price = RowChange(Op.UPDATE, "db", "t", {"id": 1}, {"id": 1, "name": "b"}, TYPES, ("id",))
    key_only_delete = RowChange(Op.DELETE, "db", "t", {"id": 1}, None, TYPES, ("id",))
    assert _reasons(whole, lacking_price, key_only_delete) == [None, "partial", None]


def _table(spark: Any) -> str:
    ident = f"lake.apply_test.t{next(_tables)}"
    tables.create_table(spark, ident, SCHEMA, tables.WriteSettings())
    spark.sql(f"INSERT INTO {ident} VALUES (1, 'one', 1.50), (2, 'two', 2.50), (3, 'three', 3.50)")
    return ident


def _net(spark: Any, *changes: tuple[int, str, dict[str, Any]]) -> Any:
    rows = [(orjson.dumps([key]).decode(), op, orjson.dumps(image).decode()) for key, op, image in changes]
    return spark.createDataFrame(rows, "_key string, _op string, _image string")


def _rows(spark: Any, ident: str) -> list[tuple[Any, ...]]:
    query = f"SELECT id, name, CAST(price AS string) FROM {ident} ORDER BY id"
    return [tuple(row) for row in spark.sql(query).collect()]


def test_an_update_keeps_the_value_of_a_column_its_image_lacks(spark: Any) -> None:
    ident = _table(spark)
    net = _net(spark, (1, "update", {"id": "1", "name": "uno"}), (2, "update", {"id": "2", "price": None}))
    tables.merge_changes(spark, ident, SCHEMA, net, {})
    assert _rows(spark, ident) == [(1, "uno", "1.50"), (2, "two", None), (3, "three", "3.50")]


@pytest.mark.parametrize("whole_images", [False, True])
def test_whole_images_merge_inserts_updates_and_deletes(spark: Any, whole_images: bool) -> None:
    ident = _table(spark)
    net = _net(spark,
               (1, "update", {"id": "1", "name": "uno", "price": "9.99"}),
               (2, "delete", {"id": "2", "name": "two", "price": "2.50"}),
               (4, "insert", {"id": "4", "name": None, "price": "4.00"}),
               (5, "delete", {"id": "5", "name": "gone", "price": None}))
    tables.merge_changes(spark, ident, SCHEMA, net, {}, whole_images=whole_images)
    assert _rows(spark, ident) == [(1, "uno", "9.99"), (3, "three", "3.50"), (4, None, "4.00")]


def test_a_segment_is_whole_only_if_every_row_carries_every_column_of_the_table() -> None:
    from cdclake.spark.segments import Segment

    every = {name: str(mtype) for name, mtype in TYPES.items()}
    older = {"id": "int", "name": "varchar(10)"}  # rows from before the table gained price
    assert Segment(0, 2, [(every, ["id"])]).whole_images(SCHEMA)
    assert not Segment(0, 2, [(every, ["id"]), (older, ["id"])]).whole_images(SCHEMA)
    assert not Segment(0, 2, [(every, ["id"])], partial=True).whole_images(SCHEMA)


def test_a_merge_writes_one_delete_file_however_many_data_files_it_touches(spark: Any) -> None:
    ident = _table(spark)
    spark.sql(f"INSERT INTO {ident} VALUES (4, 'four', 4.50)")  # a second data file
    net = _net(spark, (1, "update", {"id": "1", "name": "uno", "price": "1.00"}),
               (4, "update", {"id": "4", "name": "quattro", "price": "4.00"}))
    tables.merge_changes(spark, ident, SCHEMA, net, {}, whole_images=True)
    summary = spark.sql(f"SELECT summary FROM {ident}.snapshots ORDER BY committed_at DESC LIMIT 1").first()["summary"]
    # Rows 1 and 4 were written by different INSERTs, so they are in different data files.
    assert (summary["added-position-deletes"], summary["added-delete-files"]) == ("2", "1")


def test_appending_to_a_new_table_gives_what_the_merge_gives(spark: Any) -> None:
    changes = ((1, "update", {"id": "1", "name": "uno"}),  # lacks price: null, as a MERGE inserts it
               (2, "delete", {"id": "2", "name": "two", "price": "2.50"}),
               (4, "insert", {"id": "4", "name": None, "price": "4.00"}))
    merged, appended = f"lake.apply_test.t{next(_tables)}", f"lake.apply_test.t{next(_tables)}"
    for ident in (merged, appended):
        tables.create_table(spark, ident, SCHEMA, tables.WriteSettings())
    assert not tables.has_snapshots(spark, appended)
    tables.merge_changes(spark, merged, SCHEMA, _net(spark, *changes), {})
    tables.append_changes(spark, appended, SCHEMA, _net(spark, *changes), {tables.BATCH_PROPERTY: "7"})
    assert _rows(spark, appended) == _rows(spark, merged) == [(1, "uno", None), (4, None, "4.00")]
    assert tables.has_snapshots(spark, appended)
    assert tables.last_step(spark, appended) == (7, 0)


@pytest.mark.parametrize("whole_images", [True, False])
def test_a_value_past_jacksons_20_million_characters_is_kept_whole(spark: Any, whole_images: bool) -> None:
    """Issue 23, point 3: Jackson's default limit made such a value, and a key, NULL without a word."""
    long_text = "x" * 20_000_001
    net = _net(spark, (1, "insert", {"id": "1", "name": long_text, "price": "1.00"}))
    typed = tables.typed_source(net, SCHEMA, whole_images).select("_row.id", F.length("_row.name").alias("n"))
    assert [tuple(row) for row in typed.collect()] == [(1, len(long_text))]
