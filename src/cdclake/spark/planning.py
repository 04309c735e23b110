"""Planning a batch's work per table: its DDLs in order, and its row changes cut into *segments* by them
(the DDL barrier: every change before a DDL is applied, then the DDL, then the changes after it), except
by the DDLs the rows' images pass (:mod:`.segments`).

The DDLs are judged here, in order, before the batch writes anything (:class:`DdlFollower`): a
``CREATE TABLE ... LIKE`` gets the schema it copies, and a DDL the job cannot follow stops the job,
or goes to the dead letters whole or in part, as the job's ``unsupported-ddl`` says."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.eventjson import event_from_json
from cdclake.model import ColumnSchema, Ddl, DdlKind, IndexSchema, TableSchema
from cdclake.schema.ddl import table_before
from cdclake.schema.following import DdlFollower
from cdclake.schema.policy import UnsupportedDdl
from cdclake.spark.changes import CHANGE_FIELDS, CHANGE_NAMES
from cdclake.spark.frames import local_frame
from cdclake.spark.ordering import Facts, Ordering
from cdclake.spark.progress import JobState
from cdclake.spark.segments import DdlSeen, RowsChange, Segment, join_segments
from cdclake.types import MySQLType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass
class TableWork:
    """A table's part of the batch: its DDLs in order, each with its position (commit ts, or Kafka
    timestamp for formats without watermarks), and its rows' segments; ``passed`` the indexes of the
    DDLs that cut no segment."""

    key: tuple[str, str]
    ddls: list[tuple[int, Ddl]] = field(default_factory=list)
    segments: dict[int, Segment] = field(default_factory=dict)
    bootstrap: TableSchema | None = None
    passed: set[int] = field(default_factory=set)

    def cuts(self, index: int) -> bool:
        """Whether DDL ``index`` ends a segment."""
        return index not in self.passed


def apply_lanes(work: Mapping[tuple[str, str], TableWork]) -> list[list[TableWork]]:
    """The tables' work in lanes that may be applied side by side, each lane's in the order of its first
    DDL. A RENAME TABLE links the table it renames with the one it names (TiDB's names, which ignore case):
    the renamed table's work starts from the state the renaming one leaves, so linked tables share a lane,
    one after the other. Every table no rename links is a lane of its own."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(key: tuple[str, str]) -> tuple[str, str]:
        name = (key[0].lower(), key[1].lower())
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    for table_work in work.values():
        for _, ddl in table_work.ddls:
            if ddl.kind is DdlKind.RENAME_TABLE:
                parent[root(table_work.key)] = root((ddl.database, ddl.table))
    lanes: dict[tuple[str, str], list[TableWork]] = {}
    for table_work in sorted(work.values(), key=lambda w: w.ddls[0][0] if w.ddls else 2**63):
        lanes.setdefault(root(table_work.key), []).append(table_work)
    return list(lanes.values())


# A DDL record the batch does not follow (wholly or in part), and the reason its dead letter gives.
Unfollowed = tuple[Any, str]


def schema_of_rows(key: tuple[str, str], columns: Mapping[str, str], key_columns: list[str]) -> TableSchema:
    """The schema of a table the job first sees in rows: their columns (name to MySQL type text) and key."""
    typed = tuple(ColumnSchema(name, MySQLType.parse(text)) for name, text in columns.items())
    primary = (IndexSchema("PRIMARY", tuple(key_columns), unique=True, primary=True),) if key_columns else ()
    return TableSchema(key[0], key[1], typed, primary)


class TablePlanner:
    """Plans each table's part of a batch in the order ``ordering`` gives the changes, DDLs the job
    cannot follow treated as ``unsupported_ddl`` says; ``rows_change`` the sink's changes a table needs
    for rows of some column types (:meth:`cdclake.sinks.base.Sink.changes_in_rows`)."""

    def __init__(self, ordering: Ordering, rows_change: RowsChange, unsupported_ddl: UnsupportedDdl = "stop") -> None:
        self.ordering = ordering
        self.rows_change = rows_change
        self.unsupported_ddl = unsupported_ddl

    def plan_tables(self, applicable: DataFrame, facts: Facts, state: JobState, resolved: int | None
                    ) -> tuple[dict[tuple[str, str], TableWork], list[Unfollowed]]:
        """The DDLs, and the column sets of rows, of each table in this batch (small: collected); and the
        DDL records for the dead letters (:meth:`unfollowed_records`)."""
        from pyspark.sql import functions as F

        work: dict[tuple[str, str], TableWork] = {}
        seen: dict[tuple[str, str], list[DdlSeen]] = {}
        unfollowed: list[Unfollowed] = []
        follower = DdlFollower({key: known.schema for key, known in state.tables.items()}, self.unsupported_ddl,
                               lambda key: self._schema_from_rows(applicable, key))
        # A batch holds few DDLs: sorted here, not by Spark, whose sort would sample and shuffle the batch's
        # changes first (two Spark jobs more per batch). Nulls first, as Spark's ascending order puts them.
        order = ("commit_ts", "timestamp_ms", "partition", "offset")
        ddl_rows = sorted(applicable.filter("kind = 'ddl'").collect(),
                          key=lambda row: tuple((row[name] is not None, row[name]) for name in order))
        for row in ddl_rows:
            event = event_from_json(orjson.loads(row["event"]))
            assert isinstance(event, Ddl)
            followed = follower.follow(event)
            if followed.refusal is not None:
                unfollowed.append((row, followed.refusal))
            if followed.ddl is None:
                continue
            position = self.ordering.position_of(row)
            tables = self._tables_of(followed.ddl, state, work)
            for key in tables:
                work.setdefault(key, TableWork(key)).ddls.append((position or 0, followed.ddl))
                # A DDL of several tables (DROP DATABASE) is seen as one of none: it cuts.
                schema = followed.schema if len(tables) == 1 else None
                seen.setdefault(key, []).append(DdlSeen(followed.changes, schema))
        partial = F.max(F.col("reason").eqNullSafe("partial")).alias("partial")
        groups = (self.segmented_rows(applicable, work)
                  .groupBy("database", "table", "_segment", "columns", "key_columns")
                  .agg(F.count("*").alias("count"), partial).collect())
        for row in groups:
            key = (row["database"], row["table"])
            segments = work.setdefault(key, TableWork(key)).segments
            segment = segments.setdefault(row["_segment"], Segment(row["_segment"]))
            segment.changes += row["count"]
            segment.partial = segment.partial or row["partial"]
            segment.columns.append((orjson.loads(row["columns"]), orjson.loads(row["key_columns"])))
        for key, table_work in work.items():
            table_work.passed, table_work.segments = join_segments(table_work.segments, seen.get(key, []),
                                                                   self.rows_change)
        # The newest schema the resolved ts allows, where the batch read several.
        for schema in sorted(facts.bootstraps, key=lambda b: b.version or 0, reverse=True):
            if self._creates_from(schema, state, work, resolved):
                work[(schema.database, schema.table)] = TableWork((schema.database, schema.table), bootstrap=schema)
        return work, unfollowed

    def _schema_from_rows(self, applicable: DataFrame, key: tuple[str, str]) -> TableSchema | None:
        """The schema a table's first row of the batch brings (names compared as TiDB does, ignoring case),
        as the pipeline creates a table it first sees in rows; None without rows."""
        from pyspark.sql import functions as F

        rows = applicable.filter((F.col("kind") == "row") & (F.lower("database") == key[0].lower())
                                 & (F.lower("table") == key[1].lower()))
        first = rows.orderBy(self.ordering.position_column()).select("database", "table", "columns",
                                                                      "key_columns").first()
        if first is None:
            return None
        return schema_of_rows((first["database"], first["table"]), orjson.loads(first["columns"]),
                              orjson.loads(first["key_columns"]))

    @staticmethod
    def unfollowed_records(applicable: DataFrame, unfollowed: list[Unfollowed]) -> DataFrame:
        """The DDL records of ``unfollowed`` as ``error`` records with their reasons, for the dead
        letters; no raw bytes, which change records do not carry (:func:`.refusals.with_raw_messages` reads
        them again, as for its own)."""
        remade = [tuple({"kind": "error", "reason": reason}.get(name, record[name]) for name in CHANGE_NAMES)
                  for record, reason in unfollowed]
        return local_frame(applicable.sparkSession, remade, CHANGE_FIELDS)

    def _creates_from(self, bootstrap: TableSchema, state: JobState, work: Mapping[tuple[str, str], TableWork],
                      resolved: int | None) -> bool:
        """Whether a BOOTSTRAP creates its table now: a table no change of this batch creates, whose schema
        version the resolved ts has passed. A BOOTSTRAP is the table as it is when sent, which may be ahead
        of the changes applied so far: rows still waiting above R, or in this batch before one of its
        DDLs, carry an older schema (a column since renamed, an int since widened), and they must meet
        the table as it was, so their own column types and DDLs create and evolve it."""
        key = (bootstrap.database, bootstrap.table)
        if key in state.tables or key in work or not self.ordering.wanted(key):
            return False
        return resolved is None or bootstrap.version is None or bootstrap.version <= resolved

    @staticmethod
    def _tables_of(ddl: Ddl, state: JobState, work: Mapping[tuple[str, str], TableWork]) -> list[tuple[str, str]]:
        """The tables a DDL changes: its own (for a RENAME TABLE, the one it renames, which TiCDC does not
        name), or every table of the database it drops."""
        if ddl.kind is DdlKind.DROP_DATABASE:
            return sorted({key for key in (*state.tables, *work) if key[0] == ddl.database})
        if not ddl.table:
            return []  # CREATE DATABASE and the like: nothing a lake table holds
        return [table_before(ddl)]

    def segmented_rows(self, applicable: DataFrame, work: Mapping[tuple[str, str], TableWork]) -> DataFrame:
        """The row changes of ``applicable``, each with ``_segment``: its place among its table's DDLs
        that cut."""
        return applicable.filter("kind = 'row'").withColumn("_segment", self._segment_column(work))

    def _segment_column(self, work: Mapping[tuple[str, str], TableWork]) -> Any:
        """Per change, how many of its table's DDLs that cut come before it (the DDL barrier)."""
        from pyspark.sql import functions as F

        position = self.ordering.position_column()
        segment = F.lit(0)
        for (database, table), table_work in work.items():
            cuts = [p for i, (p, _) in enumerate(table_work.ddls) if table_work.cuts(i)]
            if not cuts:
                continue
            count = sum((F.coalesce(position, F.lit(0)) >= p).cast("int") for p in cuts)
            segment = F.when((F.col("database") == database) & (F.col("table") == table), count).otherwise(segment)
        return segment
