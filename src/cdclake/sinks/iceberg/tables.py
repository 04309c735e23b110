"""A mirror table's writes in Iceberg: creating it, one MERGE (or append) per segment of net changes,
TRUNCATE, and reading back which steps it holds.

The pipeline cuts a batch's changes of one table into *segments* by the table's DDLs and reduces each
to the net change per key (:func:`cdclake.spark.ordering.net_changes`); each segment is written here
with one MERGE, typed from its lake texts (:mod:`cdclake.schema.lake`).

Each MERGE (and TRUNCATE) commit carries ``cdclake.batch``, ``cdclake.step`` and
``cdclake.resolved-ts`` in its snapshot summary. A batch re-run after a crash skips the steps a table
already committed; DDL steps are idempotent by themselves (they look at the table first).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdclake.model import TableSchema
from cdclake.schema.lake import IMAGE_JSON_OPTIONS, lake_cast, lake_type, quote, sql_string, unquote_parts
from cdclake.schema.layout import TableLayout
from cdclake.sinks.iceberg.commit import with_commit_properties

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BATCH_PROPERTY = "cdclake.batch"
STEP_PROPERTY = "cdclake.step"
RESOLVED_PROPERTY = "cdclake.resolved-ts"
KEY_PROPERTY = "cdclake.key-columns"
ROW = "_row"  # typed_source's struct of a table's columns


@dataclass(frozen=True)
class WriteSettings:
    """How mirror tables are created: Iceberg's row-level write mode (``merge-on-read`` writes delete
    files, cheap for small batches; ``copy-on-write`` rewrites data files, cheaper to read)."""

    write_mode: str = "merge-on-read"


def table_exists(spark: SparkSession, ident: str) -> bool:
    return bool(spark.catalog.tableExists(ident))


def create_table(spark: SparkSession, ident: str, schema: TableSchema, settings: WriteSettings,
                 layout: TableLayout | None = None, extra: Sequence[tuple[str, str]] = ()) -> None:
    """The mirror of ``schema``, if it does not exist yet, with the ``extra`` columns (name, Spark type)
    after its own, partitioned and with the properties ``layout`` asks (:mod:`cdclake.schema.layout`; its
    properties win over the job's). Every column is nullable: a delete's image or a partial update may
    lack any of them, and Iceberg cannot relax a required column later."""
    namespace = ".".join(quote(part) for part in unquote_parts(ident)[:-1])
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    columns = ", ".join([*(f"{quote(c.name)} {lake_type(c.type)}" for c in schema.columns),
                         *(f"{quote(name)} {spark_type}" for name, spark_type in extra)])
    fields = layout.partition_by if layout is not None and layout.partition_by else ()
    mode = settings.write_mode
    # Position deletes by partition: by file (Iceberg's default) a MERGE writes one delete file for each
    # data file it touches, and a mirror's updates touch most of its files, so each batch would write
    # more files than the one before.
    properties = {"format-version": "2", "write.merge.mode": mode, "write.update.mode": mode,
                  "write.delete.mode": mode, "write.delete.granularity": "partition",
                  KEY_PROPERTY: ",".join(schema.key_columns)}
    if not fields:
        # No distribution for MERGE in an unpartitioned table: Iceberg's default (hash by partition) would
        # gather each MERGE's writes into one task; each task writes its own files instead. A partitioned
        # one keeps the default, so that each partition's rows are written by one task, not by all.
        properties["write.merge.distribution-mode"] = "none"
    if layout is not None:
        layout.check_columns(ident, schema)
        properties.update(layout.properties)
    partitioned = f" PARTITIONED BY ({', '.join(f.sql() for f in fields)})" if fields else ""
    listed = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in properties.items())
    spark.sql(f"CREATE TABLE IF NOT EXISTS {ident} ({columns}) USING iceberg{partitioned} TBLPROPERTIES ({listed})")


def last_step(spark: SparkSession, ident: str) -> tuple[int, int]:
    """(batch, step) of the table's newest cdclake commit, (0, 0) if none. The newest snapshot that
    carries a batch, not the newest snapshot: a compaction (:mod:`.compaction`) commits without one, and
    read as (0, 0) it would make a recovering batch apply again the steps the table already holds."""
    rows = spark.sql(f"SELECT summary FROM {ident}.snapshots WHERE summary[{sql_string(BATCH_PROPERTY)}] IS NOT NULL "
                     "ORDER BY committed_at DESC LIMIT 1").collect()
    if not rows:
        return (0, 0)
    summary = rows[0]["summary"] or {}
    return (int(summary.get(BATCH_PROPERTY, 0)), int(summary.get(STEP_PROPERTY, 0)))


def typed_source(net: DataFrame, schema: TableSchema, whole_images: bool = False, carried: Sequence[str] = ()
                 ) -> DataFrame:
    """The net changes as ``_op`` and ``_row``, a struct of the table's columns typed, and, unless every
    image holds every column (``whole_images``), ``_absent``: the columns an image lacks; the ``carried``
    columns of ``net`` kept as they are.

    The table's columns are fields of ``_row``, never columns beside the job's own: a table may have a
    column named ``_op`` or ``_absent`` (any name MySQL allows), and it must not shadow them."""
    # Each expression as SQL text, two projections in all: built column by column, each column cost the
    # driver a few Py4J calls (and a parse), and ten tables' MERGEs a batch made thousands of them.
    kept = [quote(name) for name in carried]
    options = ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in IMAGE_JSON_OPTIONS.items())
    if whole_images:
        # Parsed straight into the table's fields: cheaper than building a map of every image.
        fields = sql_string(f"struct<{', '.join(f'{quote(c.name)}: string' for c in schema.columns)}>")
        parsed = net.selectExpr("_op", *kept, f"from_json(_image, {fields}, map({options})) AS _s")
        row = _named_struct((c.name, lake_cast(f"_s.{quote(c.name)}", c.type)) for c in schema.columns)
        return parsed.selectExpr("_op", *kept, f"{row} AS {ROW}")
    parsed = net.selectExpr("_op", *kept, f"from_json(_image, 'map<string,string>', map({options})) AS _m")
    row = _named_struct((c.name, lake_cast(f"_m[{sql_string(c.name)}]", c.type)) for c in schema.columns)
    names = ", ".join(sql_string(c.name) for c in schema.columns)
    absent = f"filter(array({names}), x -> NOT map_contains_key(_m, x)) AS _absent"
    return parsed.selectExpr("_op", *kept, absent, f"{row} AS {ROW}")


def _named_struct(fields: Iterable[tuple[str, str]]) -> str:
    """A struct of (name, SQL expression) ``fields`` in SQL."""
    return f"named_struct({', '.join(f'{sql_string(name)}, {value}' for name, value in fields)})"


@dataclass(frozen=True)
class MergeClauses:
    """A MERGE of :func:`typed_source`'s rows as SQL expressions, over target columns qualified by one
    name and source columns by another: ``on``, and per column what an update sets and an insert
    writes. An update keeps the target's value of a column its image lacks; with ``whole_images`` it
    sets every column from the source, so the target's rows need only their keys read."""

    on: str
    updates: dict[str, str]
    inserts: dict[str, str]


def merge_clauses(target: str, source: str, schema: TableSchema, whole_images: bool = False) -> MergeClauses:
    keys = schema.key_columns or tuple(c.name for c in schema.columns)
    on = " AND ".join(f"{target}.{quote(k)} <=> {source}.{ROW}.{quote(k)}" for k in keys)
    updates = {}
    for c in schema.columns:
        column, new = quote(c.name), f"{source}.{ROW}.{quote(c.name)}"
        updates[column] = new if whole_images else (
            f"CASE WHEN array_contains({source}._absent, {sql_string(c.name)}) THEN {target}.{column} ELSE {new} END")
    inserts = {quote(c.name): f"{source}.{ROW}.{quote(c.name)}" for c in schema.columns}
    return MergeClauses(on, updates, inserts)


def merge_statement(target: str, source: str, schema: TableSchema, whole_images: bool = False) -> str:
    """The MERGE of ``source``, a view of :func:`typed_source`'s rows, into ``target``, in SQL."""
    clauses = merge_clauses("t", "s", schema, whole_images)
    sets = ", ".join(f"t.{column} = {value}" for column, value in clauses.updates.items())
    return (
        f"MERGE INTO {target} t USING {source} s ON {clauses.on} "
        "WHEN MATCHED AND s._op = 'delete' THEN DELETE "
        f"WHEN MATCHED THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED AND s._op != 'delete' THEN INSERT ({', '.join(clauses.inserts)}) "
        f"VALUES ({', '.join(clauses.inserts.values())})"
    )


def merge_changes(spark: SparkSession, ident: str, schema: TableSchema, net: DataFrame,
                  properties: Mapping[str, str], whole_images: bool = False) -> None:
    """MERGE ``net``, the net change per key of this table (:func:`cdclake.spark.ordering.net_changes`), into ``ident``;
    ``whole_images`` if every image of an insert or update in it holds every column of ``schema``.

    On Spark 4 the MERGE is built with ``DataFrame.mergeInto``: Spark 4.1 cannot plan a MERGE whose
    source is a temporary view over an Iceberg table (SPARK-57539, "No plan for TableReference"), and
    the net changes are read from the job's state table. Spark 3.5, which lacks ``mergeInto``, gets the
    same MERGE in SQL over a temporary view.
    """
    source = typed_source(net, schema, whole_images)
    if hasattr(source, "mergeInto"):
        _merge_with_dataframe_api(spark, ident, schema, source, properties, whole_images)
        return
    view = f"cdclake_merge_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    statement = merge_statement(ident, view, schema, whole_images)
    try:
        with_commit_properties(spark, properties, lambda: spark.sql(statement))
    finally:
        spark.catalog.dropTempView(view)


def _merge_with_dataframe_api(spark: SparkSession, ident: str, schema: TableSchema, source: DataFrame,
                              properties: Mapping[str, str], whole_images: bool) -> None:
    from pyspark.sql import functions as F

    # The target's columns are qualified by its identifier, so the source's alias must be a name that
    # identifier does not hold (a table named cdclake_source would make every reference ambiguous).
    alias = "cdclake_source"
    while alias in ident:
        alias += "_"
    clauses = merge_clauses(ident, alias, schema, whole_images)
    merge = (
        source.alias(alias).mergeInto(ident, F.expr(clauses.on))
        .whenMatched(F.expr(f"{alias}._op = 'delete'")).delete()
        .whenMatched().update({column: F.expr(value) for column, value in clauses.updates.items()})
        .whenNotMatched(F.expr(f"{alias}._op != 'delete'"))
        .insert({column: F.expr(value) for column, value in clauses.inserts.items()})
    )
    with_commit_properties(spark, properties, merge.merge)


def upserted_rows(net: DataFrame, schema: TableSchema, whole_images: bool = True) -> DataFrame:
    """The rows ``net`` inserts or updates, typed as :func:`typed_source` types them, in the table's
    columns: deletes left out, and a column an image lacks null."""
    from pyspark.sql import functions as F

    return (typed_source(net, schema, whole_images).filter("_op != 'delete'")
            .select(*(F.col(ROW).getField(c.name).alias(c.name) for c in schema.columns)))


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
