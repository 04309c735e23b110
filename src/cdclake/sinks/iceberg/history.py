"""History tables (SCD type 2, :mod:`cdclake.schema.history`) in Iceberg: created beside their mirror,
one MERGE per segment, a TRUNCATE as one UPDATE (or DELETE) of the open versions.

A segment's actions (:class:`~cdclake.schema.history.VersionAction`) land in one MERGE: ``patch``,
``close`` and ``remove`` match the key's open version (``__end_ts`` NULL) by the key columns, ``insert``
never matches and adds a version. Like a mirror's, each commit carries its batch and step in its snapshot
summary (:mod:`.commit`), so a re-run after a crash skips it (:func:`.tables.last_step`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cdclake.model import TableSchema
from cdclake.schema.history import END_AT, END_OP, END_TS, IS_CURRENT, START_AT, START_TS
from cdclake.schema.lake import quote, sql_string
from cdclake.sinks.iceberg import tables
from cdclake.sinks.iceberg.commit import with_commit_properties

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# The version columns as the lake holds them (name, Spark type).
LAKE_VERSION_COLUMNS = ((START_TS, "bigint"), (START_AT, "timestamp"), (END_TS, "bigint"), (END_AT, "timestamp"),
                        (END_OP, "string"), (IS_CURRENT, "boolean"))
_CARRIED = ("_start_ts", "_end_ts", "_end_op")


def create_history(spark: SparkSession, ident: str, schema: TableSchema, settings: tables.WriteSettings) -> None:
    tables.create_table(spark, ident, schema, settings, extra=LAKE_VERSION_COLUMNS)


def _wall_clock(ts: str) -> str:
    """The wall-clock time of a TiDB TSO: its physical part, milliseconds since the epoch."""
    return f"timestamp_millis(shiftright({ts}, 18))"


def _clauses(target: str, source: str, schema: TableSchema) -> tuple[str, dict[str, str], dict[str, str]]:
    """The MERGE's condition, what matching sets and what an insert writes, as SQL over ``target``'s
    and ``source``'s qualifiers."""
    keys = schema.key_columns or tuple(c.name for c in schema.columns)
    on = " AND ".join([f"{source}._op != 'insert'", f"{target}.{quote(END_TS)} IS NULL",
                       *(f"{target}.{quote(k)} <=> {source}.{tables.ROW}.{quote(k)}" for k in keys)])
    ends = {quote(END_TS): f"{source}._end_ts", quote(END_AT): _wall_clock(f"{source}._end_ts"),
            quote(END_OP): f"{source}._end_op", quote(IS_CURRENT): f"{source}._end_ts IS NULL"}
    updates = {quote(c.name): f"CASE WHEN array_contains({source}._absent, {sql_string(c.name)}) "
                              f"THEN {target}.{quote(c.name)} ELSE {source}.{tables.ROW}.{quote(c.name)} END"
               for c in schema.columns}
    inserts = {quote(c.name): f"{source}.{tables.ROW}.{quote(c.name)}" for c in schema.columns}
    inserts.update({quote(START_TS): f"{source}._start_ts", quote(START_AT): _wall_clock(f"{source}._start_ts"),
                    **ends})
    return on, {**updates, **ends}, inserts


def write_history(spark: SparkSession, ident: str, schema: TableSchema, actions: DataFrame,
                  properties: Mapping[str, str]) -> None:
    """One MERGE of a segment's version actions into the history table ``ident``."""
    from pyspark.sql import functions as F

    source = tables.typed_source(actions.withColumn("_image", F.coalesce("_image", F.lit("{}"))), schema,
                                 carried=_CARRIED)
    if hasattr(source, "mergeInto"):  # Spark 4 (see tables.merge_changes for why not SQL there)
        alias = "cdclake_source"
        while alias in ident:
            alias += "_"
        on, updates, inserts = _clauses(ident, alias, schema)
        merge = (source.alias(alias).mergeInto(ident, F.expr(on))
                 .whenMatched(F.expr(f"{alias}._op = 'remove'")).delete()
                 .whenMatched().update({column: F.expr(value) for column, value in updates.items()})
                 .whenNotMatched(F.expr(f"{alias}._op = 'insert'"))
                 .insert({column: F.expr(value) for column, value in inserts.items()}))
        with_commit_properties(spark, properties, merge.merge)
        return
    view = f"cdclake_history_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    on, updates, inserts = _clauses("t", "s", schema)
    statement = (f"MERGE INTO {ident} t USING {view} s ON {on} WHEN MATCHED AND s._op = 'remove' THEN DELETE "
                 f"WHEN MATCHED THEN UPDATE SET {', '.join(f't.{c} = {v}' for c, v in updates.items())} "
                 f"WHEN NOT MATCHED AND s._op = 'insert' THEN INSERT ({', '.join(inserts)}) "
                 f"VALUES ({', '.join(inserts.values())})")
    try:
        with_commit_properties(spark, properties, lambda: spark.sql(statement))
    finally:
        spark.catalog.dropTempView(view)


def close_history(spark: SparkSession, ident: str, end_ts: int, keep: bool,
                  properties: Mapping[str, str]) -> None:
    """A TRUNCATE at ``end_ts``: the open versions ended by it (``keep``), or removed."""
    open_versions = f"{quote(END_TS)} IS NULL"
    if keep:
        ts = f"CAST({end_ts} AS bigint)"
        statement = (f"UPDATE {ident} SET {quote(END_TS)} = {ts}, {quote(END_AT)} = {_wall_clock(ts)}, "
                     f"{quote(END_OP)} = 'truncate', {quote(IS_CURRENT)} = false WHERE {open_versions}")
    else:
        statement = f"DELETE FROM {ident} WHERE {open_versions}"
    with_commit_properties(spark, properties, lambda: spark.sql(statement))
