"""The Iceberg sink: mirrors, the changelog, the dead letters and the job's state as Iceberg tables of
one Spark catalog.

Exactly once, as :mod:`cdclake.sinks.base` asks it: every MERGE, append and TRUNCATE carries its batch
and step in its snapshot's summary (``cdclake.batch``, ``cdclake.step``, ``cdclake.resolved-ts``), in the
same atomic commit as its rows (:mod:`.commit` for SQL statements), and :meth:`IcebergSink.last_step`
reads the newest such summary back (a compaction, :mod:`.compaction`, commits without one). The state
is one table replaced by one overwrite commit (:mod:`.state`). DDL steps look at the table first
(:mod:`.evolution` plans against its columns as they are).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cdclake.model import TableSchema
from cdclake.schema.ddl.changes import SchemaChange
from cdclake.schema.lake import quote
from cdclake.schema.layout import TableLayout
from cdclake.schema.policy import EvolutionPolicy
from cdclake.sinks.base import Compaction, NetPart, Step
from cdclake.sinks.iceberg import catalogs, compaction, evolution, history, state, tables
from cdclake.sinks.iceberg import layout as mirror_layout
from cdclake.sinks.iceberg.commit import with_commit_properties
from cdclake.sources.ranges import OffsetRange
from cdclake.spark.progress import JobState
from cdclake.types import MySQLType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

CHANGELOG_DDL = (
    "`database` string, `table` string, `op` string, `commit_ts` bigint, `before` string, `after` string, "
    "`topic` string, `partition` int, `offset` bigint, `index` int, `batch` bigint"
)
DEAD_LETTER_DDL = (
    "`topic` string, `partition` int, `offset` bigint, `timestamp_ms` bigint, `raw_key` binary, "
    "`raw_value` binary, `reason` string, `batch` bigint"
)


class IcebergSink:
    """Tables of the Spark catalog ``catalog``; the job's own (``state``, ``changelog``,
    ``dead_letters``) in ``namespace``. Mirrors are created with ``write_mode`` (Iceberg's row-level
    write mode) and follow schema changes under ``evolution``."""

    def __init__(self, spark: SparkSession, catalog: str, namespace: str, write_mode: str = "merge-on-read",
                 evolution: EvolutionPolicy | None = None) -> None:
        self.spark, self.catalog, self.namespace = spark, catalog, namespace
        self.settings = tables.WriteSettings(write_mode)
        self.evolution = evolution or EvolutionPolicy()

    def prepare(self) -> None:
        """The job's own tables, where they do not exist yet."""
        state.ensure_state_table(self.spark, self.catalog, self.namespace)
        for name, ddl in (("changelog", CHANGELOG_DDL), ("dead_letters", DEAD_LETTER_DDL)):
            self.spark.sql(f"CREATE TABLE IF NOT EXISTS {self.job_table(name)} ({ddl}) USING iceberg "
                           "TBLPROPERTIES ('format-version'='2')")

    def job_table(self, name: str) -> str:
        return self.target(self.namespace, name)

    # --- progress ----------------------------------------------------------------------------------------

    def load_state(self) -> tuple[JobState, DataFrame]:
        return state.load_state(self.spark, self.catalog, self.namespace)

    def record_plan(self, ranges: Sequence[OffsetRange], batch: int, stream: tuple[str, int] | None) -> None:
        state.append_plan(self.spark, self.catalog, self.namespace, ranges, batch, stream)

    def commit(self, job_state: JobState, batch: int, pending: DataFrame | None) -> None:
        state.write_state(self.spark, self.catalog, self.namespace, job_state, batch, pending)

    # --- tables ------------------------------------------------------------------------------------------

    def target(self, namespace: str, table: str) -> str:
        return f"{quote(self.catalog)}.{quote(namespace)}.{quote(table)}"

    def create_table(self, target: str, schema: TableSchema, layout: TableLayout | None = None) -> None:
        tables.create_table(self.spark, target, schema, self.settings, layout)

    def apply_layout(self, target: str, schema: TableSchema, layout: TableLayout) -> None:
        mirror_layout.apply_layout(self.spark, target, schema, layout)

    def changes_in_rows(self, schema: TableSchema, types: Mapping[str, MySQLType]) -> list[SchemaChange]:
        return evolution.changes_seen_in_rows(schema, types)

    def evolve_table(self, target: str, schema: TableSchema, changes: Sequence[SchemaChange]) -> None:
        lake_now = tables.lake_columns_of(self.spark, target)
        lake_changes = evolution.plan(target, lake_now, list(changes), self.evolution, mysql_schema=schema)
        catalogs.check_lake_changes(self.spark.conf.get, self.catalog, target, lake_changes)
        dropped = [change.name for change in lake_changes if isinstance(change, evolution.DropLakeColumn)]
        if dropped:
            mirror_layout.refuse_dropping_partition_sources(self.spark, target, dropped)
        for statement in evolution.alter_statements(target, lake_changes):
            self.spark.sql(statement)

    def last_step(self, target: str) -> tuple[int, int]:
        if not tables.table_exists(self.spark, target):
            return (0, 0)
        return tables.last_step(self.spark, target)

    def stage_changes(self, net: DataFrame) -> None:
        """Nothing: each MERGE reads its part of the batch's net changes, which Spark holds already."""

    def write_changes(self, target: str, schema: TableSchema, net: DataFrame, step: Step, *,
                      whole_images: bool, maybe_empty: bool, part: NetPart) -> None:
        # A table that never had rows needs no MERGE: its net changes are appended, without a join.
        if maybe_empty and not tables.has_snapshots(self.spark, target):
            tables.append_changes(self.spark, target, schema, net, _properties(step))
        else:
            tables.merge_changes(self.spark, target, schema, net, _properties(step), whole_images)

    def truncate_table(self, target: str, step: Step) -> None:
        tables.truncate(self.spark, target, _properties(step))

    def rename_table(self, target: str, new_target: str) -> None:
        if not tables.table_exists(self.spark, new_target):
            # Hadoop catalogs cannot rename: copy in one commit, then drop the old table. The copy's commit
            # carries the old table's newest step, as a renamed table's snapshots would: a batch re-run
            # after a crash finds under the new name the steps it stored under the old one.
            batch, step = tables.last_step(self.spark, target)
            carried = _properties(Step(batch, step)) if batch else {}
            with_commit_properties(self.spark, carried,
                                   lambda: mirror_layout.copy_table(self.spark, target, new_target))
        self.drop_table(target)

    def drop_table(self, target: str) -> None:
        self.spark.sql(f"DROP TABLE IF EXISTS {target}")

    # --- history tables (cdclake.schema.history) ---------------------------------------------------------

    def create_history(self, target: str, schema: TableSchema) -> None:
        history.create_history(self.spark, target, schema, self.settings)

    def stage_history(self, actions: DataFrame) -> None:
        """Nothing: each MERGE reads its part of the batch's version actions, which Spark holds already."""

    def write_history(self, target: str, schema: TableSchema, actions: DataFrame, step: Step, part: NetPart) -> None:
        history.write_history(self.spark, target, schema, actions, _properties(step))

    def close_history(self, target: str, end_ts: int, keep: bool, step: Step) -> None:
        history.close_history(self.spark, target, end_ts, keep, _properties(step))

    # --- the job's own tables ----------------------------------------------------------------------------

    def append_changelog(self, changes: DataFrame, batch: int, recovering: bool) -> None:
        columns = ("database", "table", "op", "commit_ts", "before", "after", "topic", "partition", "offset",
                   "index")
        self._append("changelog", changes.filter("kind = 'row'").select(*columns), batch, recovering)

    def append_dead_letters(self, errors: DataFrame, batch: int, recovering: bool) -> None:
        columns = ("topic", "partition", "offset", "timestamp_ms", "raw_key", "raw_value", "reason")
        self._append("dead_letters", errors.select(*columns), batch, recovering)

    def _append(self, name: str, rows: DataFrame, batch: int, recovering: bool) -> None:
        from pyspark.sql import functions as F

        target = self.job_table(name)
        if recovering and tables.last_step(self.spark, target)[0] >= batch:
            return  # appended before the batch was interrupted
        (rows.withColumn("batch", F.lit(batch).cast("bigint"))
         .writeTo(target).option(f"snapshot-property.{tables.BATCH_PROPERTY}", str(batch)).append())

    def maintain(self, targets: Sequence[str]) -> None:
        """Iceberg's snapshot expiry for every table the job writes, as each table's own
        ``history.expire.*`` properties say (Iceberg's defaults: older than 5 days, the newest always
        kept; the state table's: older than an hour). Each batch commits a snapshot to every table it
        touches: unexpired, a long-running job's table metadata, rewritten at each commit, and the files
        only old snapshots hold (the state table is replaced each batch) would grow without bound."""
        for table in (*(self.job_table(name) for name in ("state", "changelog", "dead_letters")), *targets):
            tables.expire_snapshots(self.spark, self.catalog, table)

    def compact(self, targets: Sequence[str]) -> list[Compaction]:
        """Each of ``targets`` that holds delete files compacted (:mod:`.compaction`); a table since
        dropped is passed over. The job's own tables are only appended to or replaced: nothing to compact."""
        done = (compaction.compact(self.spark, self.catalog, target) for target in targets
                if tables.table_exists(self.spark, target))
        return [found for found in done if found is not None]

    def table_status(self, target: str) -> dict[str, Any]:
        last = self.spark.sql(f"SELECT committed_at FROM {target}.snapshots "
                              "ORDER BY committed_at DESC LIMIT 1").collect()
        return {"rows": self.spark.table(target).count(),
                "last_commit": last[0]["committed_at"].isoformat() if last else None}


def _properties(step: Step) -> dict[str, str]:
    properties = {tables.BATCH_PROPERTY: str(step.batch), tables.STEP_PROPERTY: str(step.step)}
    if step.resolved_ts is not None:
        properties[tables.RESOLVED_PROPERTY] = str(step.resolved_ts)
    return properties
