"""Compacting a merge-on-read mirror: its delete files applied to its data files, then gone.

Each MERGE into a merge-on-read table writes, besides its new rows, position-delete files (one per
write task) that every reader merges into the rows it reads; they pile up batch after batch until a
rewrite applies them. Two of Iceberg's Spark procedures do it, in two commits of their own:

1. ``rewrite_data_files`` with ``delete-file-threshold = 1``: every data file that at least one delete
   file applies to is rewritten without its deleted rows (and small files are packed, as the
   procedure's defaults say);
2. ``rewrite_position_delete_files`` with ``rewrite-all``: the delete files the first left behind, whose
   every position now points into a data file no longer live ("dangling"), are dropped, not rewritten.

Neither changes a row, and neither carries ``cdclake.batch``: :func:`.tables.last_step` looks past them
to the newest batch's commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdclake.schema.lake import quote, sql_string
from cdclake.sinks.base import Compaction

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TOTAL_DELETE_FILES = "total-delete-files"


def delete_files(spark: SparkSession, ident: str) -> int:
    """How many delete files the table's current snapshot holds, from its summary (0 for a table
    without snapshots)."""
    rows = spark.sql(f"SELECT summary[{sql_string(TOTAL_DELETE_FILES)}] AS n FROM {ident}.snapshots "
                     "ORDER BY committed_at DESC LIMIT 1").collect()
    return int(rows[0]["n"] or 0) if rows else 0


def compact(spark: SparkSession, catalog: str, ident: str) -> Compaction | None:
    """``ident`` (a table of ``catalog``) rewritten so no delete file is left; None if it had none."""
    before = delete_files(spark, ident)
    if not before:
        return None
    procedures, table = f"{quote(catalog)}.system", sql_string(ident)
    rewritten = spark.sql(f"CALL {procedures}.rewrite_data_files(table => {table}, "
                          "options => map('delete-file-threshold', '1'))").collect()[0]
    if delete_files(spark, ident):
        spark.sql(f"CALL {procedures}.rewrite_position_delete_files(table => {table}, "
                  "options => map('rewrite-all', 'true'))").collect()
    return Compaction(ident, before, delete_files(spark, ident), int(rewritten["rewritten_data_files_count"]),
                      int(rewritten["added_data_files_count"]))
