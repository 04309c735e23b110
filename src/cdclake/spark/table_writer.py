"""One table's work of a replication batch applied through the sink: its segments and DDLs in order,
each write a step the sink stores with its rows, so that a batch re-run after a crash skips what it
stored (:class:`TableWriter`, used by :class:`cdclake.spark.replicate.Replicator` for every table of
a batch, several tables side by side)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cdclake.model import Ddl, TableSchema
from cdclake.schema.ddl.changes import (
    CreateTable,
    DropDatabase,
    DropTable,
    RenameTable,
    SchemaChange,
    TruncateTable,
    changes_not_made,
    schema_after,
)
from cdclake.schema.following import changes_to_apply
from cdclake.schema.names import Naming
from cdclake.schema.policy import SchemaEvolutionError
from cdclake.sinks.base import Sink, Step
from cdclake.spark import killpoints
from cdclake.spark.config import ReplicateConfig
from cdclake.spark.history import HistoryKeeper
from cdclake.spark.planning import TableWork, schema_of_rows
from cdclake.spark.progress import JobState, TableState
from cdclake.spark.segments import Segment
from cdclake.types import MySQLType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class TableWriter:
    """Writes tables' work of a batch through ``sink``, keeping ``history`` in step; ``naming`` and ``config``
    say where each upstream table goes, how it is laid out, and which DDLs it follows."""

    def __init__(self, sink: Sink, history: HistoryKeeper, naming: Naming, config: ReplicateConfig) -> None:
        self.sink, self.history, self.naming, self.config = sink, history, naming, config

    def write(self, state: JobState, work: TableWork, net: DataFrame, batch: int, recovering: bool,
              resolved: int | None, lock: threading.Lock, steps_before: int) -> TableWrite:
        """One table's segments and DDLs in order, each write a step the sink stores with its rows,
        numbered after ``steps_before``: a re-run of the batch skips the steps the table holds (``done``).
        A segment is written before the DDL that ends it, after the DDLs inside it (:mod:`.segments`).
        What the table's work did: rows and writes, and the batch's steps then."""
        from pyspark.sql import functions as F

        known = state.tables.get(work.key)
        # A table new to the job may have no rows yet: then its first changes are appended, not merged.
        maybe_empty = known is None
        if known is None and work.bootstrap is not None:
            known = self._create(work.key, work.bootstrap)
        table = TableWrite(work.key, known, net.filter((F.col("database") == work.key[0])
                                                        & (F.col("table") == work.key[1])),
                            self._steps_done(work, known) if recovering else (0, 0), steps_before, maybe_empty)
        segment = 0
        for index, (_, ddl) in enumerate(work.ddls):
            if work.cuts(index):
                self._write_segment(work, segment, table, batch, resolved, recovering)
                segment += 1
            table.known, table.step = self._apply_ddl(table.known, ddl, Step(batch, table.step, resolved),
                                                      table.done, recovering)
            table.key = work.key if table.known is None else (table.known.schema.database, table.known.schema.table)
        self._write_segment(work, segment, table, batch, resolved, recovering)
        with lock:
            register(state, work.key, table.known, resolved)
        return table

    def _write_segment(self, work: TableWork, index: int, table: TableWrite, batch: int, resolved: int | None,
                       recovering: bool) -> None:
        """Segment ``index`` of the table's changes written as the next step, unless a crashed run of the
        batch stored it (then its history is written, as that skips itself likewise)."""
        from pyspark.sql import functions as F

        segment = work.segments.get(index)
        if segment is None or segment.changes == 0:
            return
        # A segment across DDLs holds rows that fit the schemas on their way (the planner checked): rows of
        # a schema since changed, taken for new columns, would undo the DDLs.
        if not segment.spans_ddls or table.known is None:
            table.known = self._evolve_for_rows(table.key, table.known, segment)
        known = table.known
        table.step += 1
        step = Step(batch, table.step, resolved)
        if (batch, table.step) > table.done:
            self.sink.write_changes(known.lake_table, known.schema, table.net.filter(F.col("_segment") == index),
                                    step, whole_images=segment.whole_images(known.schema),
                                    maybe_empty=table.maybe_empty, part=(*work.key, index))
            table.writes += 1
            killpoints.reached("table-merged")
        self.history.write(work.key, known, index, step, recovering)
        table.maybe_empty = False
        table.touched[known.lake_table] = table.touched.get(known.lake_table, 0) + segment.changes

    def _steps_done(self, work: TableWork, known: TableState | None) -> tuple[int, int]:
        """The newest step a crashed run of this batch stored for the table, under any name the table goes
        by in the batch: the one it had, the one its rows or a CREATE give it, each one a RENAME gives it.
        A re-run meets the table as the crash left it: made in this batch, or renamed already."""
        names = {known.lake_table} if known is not None else set()
        for database, table in [work.key, *((ddl.database, ddl.table) for _, ddl in work.ddls if ddl.table)]:
            if self.naming.refusal(database, table) is None:
                names.add(self._target(database, table))
        return max((self.sink.last_step(name) for name in names), default=(0, 0))

    def _create(self, key: tuple[str, str], schema: TableSchema) -> TableState:
        target = self._target(*key)
        self.sink.create_table(target, schema, self.config.layout_for(*key))
        self.history.created(TableState(schema, target))
        return TableState(schema, target)

    def _evolve_for_rows(self, key: tuple[str, str], known: TableState | None, segment: Segment) -> TableState:
        """The table, created from its rows' column types on first sight, with the columns the rows
        carry added or changed as the sink allows."""
        if known is None:
            known = self._create(key, schema_of_rows(key, *segment.columns[0]))
        for columns, _ in segment.columns:
            changes = self.sink.changes_in_rows(known.schema, {n: MySQLType.parse(t) for n, t in columns.items()})
            if changes:
                known = self._evolve(known, changes)
        return known

    def _evolve(self, known: TableState, changes: list[SchemaChange]) -> TableState:
        changes = changes_not_made(known.schema, changes)
        try:
            # The sink plans against the table as it is, not as the state remembers it: a batch re-run after
            # a crash finds its DDL already applied, and plans nothing.
            self.sink.evolve_table(known.lake_table, known.schema, changes)
            self.history.evolved(known, changes)
        except SchemaEvolutionError as error:
            raise SchemaEvolutionError(
                f"{error} (the batch stopped at this change: the changes before it are applied, none after it; "
                "a run that can make the change finishes the batch)") from None
        after = schema_after(known.schema, changes)
        assert after is not None
        return TableState(after, known.lake_table, known.applied_ts)

    def _apply_ddl(self, known: TableState | None, ddl: Ddl, last: Step, done: tuple[int, int], recovering: bool
                   ) -> tuple[TableState | None, int]:
        """``ddl`` applied to the table ``known`` after step ``last`` of the batch; the table after it and
        the batch's step count then (a TRUNCATE is a step of its own)."""
        step = last.step
        policy = self.config.evolution.unsupported_ddl
        for change in changes_to_apply(ddl, known.schema if known is not None else None, policy):
            if isinstance(change, CreateTable):
                known = self._create((change.schema.database, change.schema.table), change.schema)
            elif known is None:
                continue  # a change to a table this job does not mirror (created before the stream began)
            elif isinstance(change, (DropTable, DropDatabase)):
                self.sink.drop_table(known.lake_table)
                self.history.dropped(known)
                known = None
            elif isinstance(change, TruncateTable):
                step += 1
                if (last.batch, step) > done:
                    self.sink.truncate_table(known.lake_table, Step(last.batch, step, last.resolved_ts))
                    killpoints.reached("table-merged")
                self.history.truncated(known, ddl, Step(last.batch, step, last.resolved_ts), recovering)
            elif isinstance(change, RenameTable):
                known = self._rename(known, change)
            else:
                known = self._evolve(known, [change])
        killpoints.reached("ddl-applied")
        return known, step

    def _rename(self, known: TableState, change: RenameTable) -> TableState:
        target = self._target(change.database, change.table)
        self.sink.rename_table(known.lake_table, target)
        schema = known.schema
        renamed = TableSchema(change.database, change.table, schema.columns, schema.indexes, schema.table_id,
                              schema.version)
        layout = self.config.layout_for(change.database, change.table)
        if layout is not None:
            self.sink.apply_layout(target, renamed, layout)
        self.history.renamed(known, TableState(renamed, target))
        return TableState(renamed, target, known.applied_ts)

    def _target(self, database: str, table: str) -> str:
        """The sink's table for the upstream ``database.table`` (:class:`Naming`: the batch's records of a
        table it refuses were made dead letters, so every table asked for here has one)."""
        return self.sink.target(*self.naming.target(database, table))


@dataclass
class TableWrite:
    """Where one table's work of a batch stands: its upstream name and state now, its net changes, the
    newest step a crashed run stored (``done``), the steps so far, whether it may have no rows yet, the
    rows written per lake table and the writes made."""

    key: tuple[str, str]
    known: TableState | None
    net: DataFrame
    done: tuple[int, int]
    step: int
    maybe_empty: bool
    touched: dict[str, int] = field(default_factory=dict)
    writes: int = 0


def register(state: JobState, upstream: tuple[str, str], known: TableState | None, resolved: int | None) -> None:
    """Record what a batch left of the upstream table it knew as ``upstream``: ``known`` (under its
    new name after a RENAME TABLE), or nothing after a DROP. A name that went is remembered with the
    resolved ts it went at, so that a replay of its older changes does not bring it back."""
    now = None
    if known is not None:
        now = (known.schema.database, known.schema.table)
        if resolved is not None:
            known.applied_ts = resolved
        state.tables[now] = known
        state.gone.pop(now, None)
    if upstream != now:
        state.tables.pop(upstream, None)
        if resolved is not None:
            state.gone[upstream] = resolved
