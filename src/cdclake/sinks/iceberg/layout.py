"""A mirror's layout (:mod:`cdclake.schema.layout`) made true of an Iceberg table that exists, and what
its partitioning forbids.

A new mirror is created partitioned and with its properties (:func:`.tables.create_table`). One that
exists gets the layout when the job starts: the properties that differ set (``ALTER TABLE ... SET
TBLPROPERTIES``), and, when the layout says ``partition-by``, the partition spec evolved to it, field by
field (``DROP PARTITION FIELD``, ``ADD PARTITION FIELD``). Iceberg's partition evolution rewrites no
data: the files written before keep the spec they were written with, and readers plan over both.

A mirror copied to rename it (:func:`copy_table`) keeps its partitioning and properties.

Iceberg refuses to drop a column its current partition spec uses; an upstream DDL that drops one (or a
type change rewritten through a new column) stops the job, naming the table, the column and what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cdclake.model import TableSchema
from cdclake.schema.lake import sql_string
from cdclake.schema.layout import PartitionField, TableLayout
from cdclake.schema.policy import SchemaEvolutionError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DISTRIBUTION_PROPERTY = "write.merge.distribution-mode"


def partition_fields(spark: SparkSession, ident: str) -> list[PartitionField]:
    """The fields of ``ident``'s current partition spec, as ``DESCRIBE TABLE`` lists them."""
    fields, listing = [], False
    for row in spark.sql(f"DESCRIBE TABLE {ident}").collect():
        name = row["col_name"]
        if name == "# Partitioning":
            listing = True
        elif listing and name.startswith("Part "):
            fields.append(PartitionField.parse(row["data_type"]))
        elif listing:
            break
    return fields


def table_properties(spark: SparkSession, ident: str) -> dict[str, str]:
    return {row["key"]: row["value"] for row in spark.sql(f"SHOW TBLPROPERTIES {ident}").collect()}


# What SHOW TBLPROPERTIES lists of an Iceberg table beside its own properties: the table's state, not
# settings a copy may be created with.
_STATE_PROPERTIES = ("current-snapshot-id", "format", "provider", "location", "owner", "sort-order",
                     "identifier-fields")


def copy_table(spark: SparkSession, ident: str, new_ident: str) -> None:
    """``ident``'s rows as the new table ``new_ident``, in one commit, partitioned as ``ident`` is now
    and with its properties: a rename where the catalog cannot rename (Hadoop catalogs)."""
    fields = partition_fields(spark, ident)
    properties = {name: value for name, value in table_properties(spark, ident).items()
                  if name not in _STATE_PROPERTIES}
    partitioned = f" PARTITIONED BY ({', '.join(f.sql() for f in fields)})" if fields else ""
    listed = ", ".join(f"{sql_string(name)}={sql_string(value)}" for name, value in properties.items())
    spark.sql(f"CREATE TABLE {new_ident} USING iceberg{partitioned} TBLPROPERTIES ({listed}) AS SELECT * FROM {ident}")


def apply_layout(spark: SparkSession, ident: str, schema: TableSchema, layout: TableLayout) -> None:
    """``layout`` made true of ``ident``, an existing mirror of ``schema``'s rows; nothing done where it
    is already, so that each start of the job commits nothing new."""
    layout.check_columns(ident, schema)
    properties = table_properties(spark, ident)
    wanted = dict(layout.properties)
    if layout.partition_by is not None and DISTRIBUTION_PROPERTY not in wanted:
        # As a new mirror has it (tables.create_table): none unpartitioned, Iceberg's default partitioned.
        if not layout.partition_by:
            wanted[DISTRIBUTION_PROPERTY] = "none"
        elif properties.get(DISTRIBUTION_PROPERTY) == "none":
            spark.sql(f"ALTER TABLE {ident} UNSET TBLPROPERTIES ({sql_string(DISTRIBUTION_PROPERTY)})")
    changed = {name: value for name, value in wanted.items() if properties.get(name) != value}
    if changed:
        listed = ", ".join(f"{sql_string(name)}={sql_string(value)}" for name, value in changed.items())
        spark.sql(f"ALTER TABLE {ident} SET TBLPROPERTIES ({listed})")
    if layout.partition_by is not None:
        _evolve_partitioning(spark, ident, layout.partition_by)


def _evolve_partitioning(spark: SparkSession, ident: str, wanted: Sequence[PartitionField]) -> None:
    have = partition_fields(spark, ident)
    wanted_keys, have_keys = {f.key() for f in wanted}, {f.key() for f in have}
    for gone in (f for f in have if f.key() not in wanted_keys):
        spark.sql(f"ALTER TABLE {ident} DROP PARTITION FIELD {gone.sql()}")
    for new in (f for f in wanted if f.key() not in have_keys):
        spark.sql(f"ALTER TABLE {ident} ADD PARTITION FIELD {new.sql()}")


def refuse_dropping_partition_sources(spark: SparkSession, ident: str, dropped: Sequence[str]) -> None:
    """Stop before a column of ``dropped`` that ``ident``'s partition spec uses is dropped: Iceberg
    refuses it, and with a message that names neither the table nor what to do."""
    names = {name.lower() for name in dropped}
    for field in partition_fields(spark, ident):
        if field.column.lower() in names:
            raise SchemaEvolutionError(
                f"{ident}: column {field.column} is to be dropped, but the table is partitioned by "
                f"{field.sql()} and Iceberg cannot drop a column its partition spec uses; drop the field "
                f"first (ALTER TABLE {ident} DROP PARTITION FIELD {field.sql()}) and take it out of the job "
                "file's partition-by, then run the job again")
