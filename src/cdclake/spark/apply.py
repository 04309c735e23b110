"""Applying one upstream table's changes of a batch to its Iceberg mirror.

A batch's changes of one table are cut into *segments* by the table's DDLs (the DDL barrier): every
change before a DDL is merged, then the DDL is applied, then the changes after it. Each segment is
reduced to the net change per key — the last change in commit order, ties broken by partition, offset
and index — and written with one MERGE. An update that changed the key also deletes the old key.

Each MERGE (and TRUNCATE) commit carries ``cdclake.batch``, ``cdclake.step`` and
``cdclake.resolved-ts`` in its snapshot summary. A batch re-run after a crash skips the steps a table
already committed; DDL steps are idempotent by themselves (they look at the table first).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdclake.model import ColumnSchema, TableSchema
from cdclake.schema.evolution import quote
from cdclake.schema.lake import lake_cast, lake_type
from cdclake.spark.commit import with_commit_properties

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BATCH_PROPERTY = "cdclake.batch"
STEP_PROPERTY = "cdclake.step"
RESOLVED_PROPERTY = "cdclake.resolved-ts"
KEY_PROPERTY = "cdclake.key-columns"


@dataclass(frozen=True)
class WriteSettings:
    """How mirror tables are created: Iceberg's row-level write mode (``merge-on-read`` writes delete
    files, cheap for small batches; ``copy-on-write`` rewrites data files, cheaper to read)."""

    write_mode: str = "merge-on-read"


def sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def table_exists(spark: SparkSession, ident: str) -> bool:
    return bool(spark.catalog.tableExists(ident))


def create_table(spark: SparkSession, ident: str, schema: TableSchema, settings: WriteSettings) -> None:
    """The mirror of ``schema``, if it does not exist yet. Every column is nullable: a delete's image
    or a partial update may lack any of them, and Iceberg cannot relax a required column later."""
    namespace = ident.rsplit(".", 1)[0]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    columns = ", ".join(f"{quote(c.name)} {lake_type(c.type)}" for c in schema.columns)
    mode = settings.write_mode
    # No distribution for MERGE: the tables are not partitioned, so Iceberg's default (hash by
    # partition) would gather each MERGE's writes into one task; each task writes its own files instead.
    # Position deletes by partition: by file (Iceberg's default) a MERGE writes one delete file for each
    # data file it touches, and a mirror's updates touch most of its files, so each batch would write
    # more files than the one before.
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {ident} ({columns}) USING iceberg TBLPROPERTIES ("
        f"'format-version'='2', 'write.merge.mode'='{mode}', 'write.update.mode'='{mode}', "
        f"'write.delete.mode'='{mode}', 'write.merge.distribution-mode'='none', "
        f"'write.delete.granularity'='partition', '{KEY_PROPERTY}'={sql_string(','.join(schema.key_columns))})"
    )


def last_step(spark: SparkSession, ident: str) -> tuple[int, int]:
    """(batch, step) of the table's newest cdclake commit, (0, 0) if none."""
    rows = spark.sql(f"SELECT summary FROM {ident}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()
    if not rows:
        return (0, 0)
    summary = rows[0]["summary"] or {}
    return (int(summary.get(BATCH_PROPERTY, 0)), int(summary.get(STEP_PROPERTY, 0)))


def net_changes(changes: DataFrame, groups: Sequence[str] = ()) -> DataFrame:
    """One record per key and group (the ``groups`` columns kept, say a batch's table and segment): the
    last change of it, as (``_key``, ``_op``, ``_image``). Copies of a change need not be dropped first:
    whichever copy comes last, its image is the same."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = [F.col("commit_ts"), F.col("partition"), F.col("offset"), F.col("index")]
    new_key = F.struct(F.col("key").alias("k"), F.col("op").alias("op"),
                       F.coalesce(F.col("after"), F.col("before")).alias("image"))
    old_key = F.when(F.col("old_key").isNotNull(),
                     F.struct(F.col("old_key").alias("k"), F.lit("delete").alias("op"), F.col("before").alias("image")))
    exploded = (changes.select(*groups, F.explode(F.array(new_key, old_key)).alias("c"), *order)
                .filter("c IS NOT NULL"))
    newest_first = Window.partitionBy(*groups, "c.k").orderBy(*[column.desc_nulls_last() for column in order])
    return (exploded.withColumn("_rank", F.row_number().over(newest_first)).filter("_rank = 1")
            .select(*groups, F.col("c.k").alias("_key"), F.col("c.op").alias("_op"), F.col("c.image").alias("_image")))


def typed_source(net: DataFrame, schema: TableSchema, whole_images: bool = False) -> DataFrame:
    """The net changes with the table's columns typed, and, unless every image holds every column
    (``whole_images``), ``_absent``: the columns an image lacks."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    if whole_images:
        # Parsed straight into the table's fields: cheaper than building a map of every image.
        fields = StructType([StructField(c.name, StringType()) for c in schema.columns])
        parsed = net.withColumn("_s", F.from_json("_image", fields))
        return parsed.select(F.col("_op"), *(F.expr(lake_cast(f"_s.{quote(c.name)}", c.type)).alias(c.name)
                                             for c in schema.columns))
    parsed = net.withColumn("_m", F.from_json("_image", "map<string,string>"))
    columns = [F.expr(lake_cast(f"_m[{sql_string(c.name)}]", c.type)).alias(c.name) for c in schema.columns]
    names = ", ".join(sql_string(c.name) for c in schema.columns)
    absent = F.expr(f"filter(array({names}), x -> NOT map_contains_key(_m, x))").alias("_absent")
    return parsed.select(F.col("_op"), absent, *columns)


def merge_statement(target: str, source: str, schema: TableSchema, whole_images: bool = False) -> str:
    """The MERGE of ``source``, :func:`typed_source`'s rows, into ``target``. An update keeps the
    target's value of a column its image lacks; with ``whole_images`` it sets every column from the
    source, so the target's rows need only their keys read."""
    keys = schema.key_columns or tuple(c.name for c in schema.columns)
    on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in keys)
    if whole_images:
        sets = ", ".join(f"t.{quote(c.name)} = s.{quote(c.name)}" for c in schema.columns)
    else:
        sets = ", ".join(
            f"t.{quote(c.name)} = CASE WHEN array_contains(s._absent, {sql_string(c.name)}) "
            f"THEN t.{quote(c.name)} ELSE s.{quote(c.name)} END"
            for c in schema.columns
        )
    names = ", ".join(quote(c.name) for c in schema.columns)
    values = ", ".join(f"s.{quote(c.name)}" for c in schema.columns)
    return (
        f"MERGE INTO {target} t USING {source} s ON {on} "
        "WHEN MATCHED AND s._op = 'delete' THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED AND s._op != 'delete' THEN INSERT ({names}) VALUES ({values})"
    )


def merge_changes(spark: SparkSession, ident: str, schema: TableSchema, net: DataFrame,
                  properties: Mapping[str, str], whole_images: bool = False) -> None:
    """MERGE ``net``, the net change per key of this table (:func:`net_changes`), into ``ident``;
    ``whole_images`` if every image of an insert or update in it holds every column of ``schema``."""
    view = f"cdclake_merge_{uuid.uuid4().hex}"
    typed_source(net, schema, whole_images).createOrReplaceTempView(view)
    statement = merge_statement(ident, view, schema, whole_images)
    try:
        with_commit_properties(spark, properties, lambda: spark.sql(statement))
    finally:
        spark.catalog.dropTempView(view)


def upserted_rows(net: DataFrame, schema: TableSchema, whole_images: bool = True) -> DataFrame:
    """The rows ``net`` inserts or updates, typed as :func:`typed_source` types them, in the table's
    columns: deletes left out, and a column an image lacks null."""
    return (typed_source(net, schema, whole_images).filter("_op != 'delete'")
            .select(*(quote(c.name) for c in schema.columns)))


def append_changes(spark: SparkSession, ident: str, schema: TableSchema, net: DataFrame,
                   properties: Mapping[str, str]) -> None:
    """What :func:`merge_changes` does to a table with no rows: the inserts and updates appended (a
    delete finds nothing to delete; a column an image lacks is null, as the MERGE inserts it),
    without reading the target or joining."""
    writer = upserted_rows(net, schema).writeTo(ident)
    for key, value in properties.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    writer.append()


def has_snapshots(spark: SparkSession, ident: str) -> bool:
    """Whether anything was ever committed to ``ident``'s rows (a new table has no snapshot)."""
    return bool(spark.sql(f"SELECT 1 FROM {ident}.snapshots LIMIT 1").collect())


def expire_snapshots(spark: SparkSession, catalog: str, ident: str) -> None:
    """Iceberg's ``expire_snapshots`` on ``ident`` (a table of ``catalog``), with the table's own
    retention properties, deleting the files no snapshot left holds."""
    spark.sql(f"CALL {quote(catalog)}.system.expire_snapshots(table => {sql_string(ident)})")


def truncate(spark: SparkSession, ident: str, properties: Mapping[str, str]) -> None:
    with_commit_properties(spark, properties, lambda: spark.sql(f"DELETE FROM {ident} WHERE true"))


def run_statements(spark: SparkSession, statements: Sequence[str]) -> None:
    for statement in statements:
        spark.sql(statement)


def lake_columns_of(spark: SparkSession, ident: str) -> dict[str, str]:
    """The table's columns and their types, as :func:`~cdclake.schema.lake.lake_type` names them."""
    spelled = {"bigint": "long"}  # Spark prints long as bigint
    return {f.name: spelled.get(f.dataType.simpleString(), f.dataType.simpleString())
            for f in spark.table(ident).schema.fields}


def with_columns(schema: TableSchema, columns: Sequence[ColumnSchema]) -> TableSchema:
    """``schema`` with ``columns`` replacing the columns of the same name, or added at the end."""
    replaced = {c.name: c for c in columns}
    kept = [replaced.pop(c.name, c) for c in schema.columns]
    return TableSchema(schema.database, schema.table, (*kept, *replaced.values()), schema.indexes,
                       schema.table_id, schema.version)
