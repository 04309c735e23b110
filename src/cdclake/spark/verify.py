"""Comparing lake tables with what the upstream holds: the proof behind the demo and the tests.

The expected rows (exact Python values, as :mod:`cdclake.types` describes them) are written as lake
texts and cast to the lake table's own column types, then compared row for row with the table, both
ways (``exceptAll``, so duplicates count). A column the upstream has and the lake lacks, or the other way
round, is reported as such.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cdclake.model import TableSchema
from cdclake.schema.lake import lake_cast, lake_text_function, lake_type, quote
from cdclake.sinks.base import TableComparison
from cdclake.sinks.iceberg.tables import table_exists
from cdclake.spark.frames import local_frame
from cdclake.types import MySQLType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def expected_frame(spark: SparkSession, schema: TableSchema, rows: Iterable[Mapping[str, Any]],
                   lake_types: Mapping[str, str]) -> DataFrame:
    """``rows`` as a DataFrame with the lake table's column types (``lake_types``, name to Spark type)."""
    from pyspark.sql import functions as F

    columns = [c for c in schema.columns if c.name in lake_types]
    types = [_as_the_lake_has_it(c.type, lake_types[c.name]) for c in columns]
    texts = [_text_as_held(mtype, lake_types[c.name]) for c, mtype in zip(columns, types, strict=True)]
    # A frame has a column at least: with none shared, a null one stands in, so that the rows still count.
    data = [tuple(text(row.get(c.name)) for c, text in zip(columns, texts, strict=True)) or (None,) for row in rows]
    names = [f"c{i}" for i in range(len(columns))]
    raw = local_frame(spark, data, [(name, "string") for name in names] or [("dummy", "string")])
    typed = []
    for name, column, mtype in zip(names, columns, types, strict=True):
        expression = F.expr(lake_cast(name, mtype))
        if not _holds(mtype, lake_types[column.name]):
            expression = expression.cast(lake_types[column.name])
        typed.append(expression.alias(column.name))
    return raw.select(*typed)


def _text_as_held(mtype: MySQLType, held: str) -> Callable[[Any], str | None]:
    """The lake text of a value; a value a format carries as text (DataWorks' TIME) stays that text."""
    text = lake_text_function(mtype)
    if held != "string":
        return text
    return lambda value: value if isinstance(value, str) else text(value)


def _as_the_lake_has_it(mtype: MySQLType, held: str) -> MySQLType:
    """The column's type as the lake table was made from it: a table made from a format's row types
    has what the format tells (Open Protocol and Canal-JSON say ``enum``, not its members; ``decimal``,
    not its precision; DataWorks carries some types as text), and holds the values that way."""
    if _holds(mtype, held):
        return mtype
    bare = MySQLType.parse(mtype.name + (" unsigned" if mtype.unsigned else ""))
    if _holds(bare, held):
        return bare
    # DataWorks' LONG is a signed bigint column that holds 64 unsigned bits (bigint unsigned, bit(64))
    # as they are, which the lake's signed bigint reading gives back.
    if held == "bigint" and lake_type(mtype) == "decimal(20,0)":
        return _SIGNED_BIGINT
    # DataWorks sends DECIMAL, DATE, DATETIME and TIME as text, and its tables hold that text.
    return _TEXT if held == "string" else mtype


_TEXT = MySQLType.parse("longtext")
_SIGNED_BIGINT = MySQLType.parse("bigint")


def _holds(mtype: MySQLType, held: str) -> bool:
    """Whether a column Spark describes as ``held`` (``bigint``) is :func:`lake_type`'s (``long``)."""
    return {"long": "bigint"}.get(lake_type(mtype), lake_type(mtype)) == held


def compare_table(spark: SparkSession, upstream: str, lake_table: str, schema: TableSchema,
                  rows: Iterable[Mapping[str, Any]], examples: int = 3) -> TableComparison:
    rows = list(rows)
    comparison = TableComparison(upstream, lake_table, len(rows))
    if not table_exists(spark, lake_table):
        comparison.column_differences.append("the lake table does not exist")
        comparison.missing = len(rows)
        return comparison
    actual = spark.table(lake_table)
    lake_types = {f.name: f.dataType.simpleString() for f in actual.schema.fields}
    upstream_columns = [c.name for c in schema.columns]
    comparison.column_differences += [f"lake lacks column {name}" for name in upstream_columns
                                      if name not in lake_types]
    comparison.column_differences += [f"lake has extra column {name}" for name in lake_types
                                      if name not in upstream_columns]
    shared = [name for name in upstream_columns if name in lake_types]
    expected = expected_frame(spark, schema, rows, lake_types).select(*[quote(n) for n in shared])
    actual = actual.select(*[quote(n) for n in shared])
    comparison.lake_rows = actual.count()
    missing, unexpected = expected.exceptAll(actual), actual.exceptAll(expected)
    comparison.missing, comparison.unexpected = missing.count(), unexpected.count()
    comparison.examples += [f"missing {row.asDict()}" for row in missing.limit(examples).collect()]
    comparison.examples += [f"unexpected {row.asDict()}" for row in unexpected.limit(examples).collect()]
    return comparison


def compare_tables(spark: SparkSession, tables: Mapping[tuple[str, str], Any],
                   lake_name: Callable[[str, str], str]) -> list[TableComparison]:
    """Every upstream table (``tables``: (database, table) -> an object with ``schema`` and ``rows``, a
    mapping whose values are the rows) against its lake table."""
    return [compare_table(spark, f"{database}.{table}", lake_name(database, table), state.schema,
                          state.rows.values())
            for (database, table), state in sorted(tables.items())]


def lake_name_in(catalog: str) -> Callable[[str, str], str]:
    """The default naming: ``catalog.database.table``."""
    return lambda database, table: f"{quote(catalog)}.{quote(database)}.{quote(table)}"
