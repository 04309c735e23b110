"""What the replication pipeline asks of the place its tables live: the :class:`Sink` protocol.

The pipeline (:mod:`cdclake.spark.replicate`) decides *what* a batch does: which changes apply, in
which order, the net change per key of each table between its DDLs, which schema changes each table
goes through. A sink decides *how* that lands in its store and makes it durable. The pipeline writes
no SQL; everything it writes goes through these calls, in this order per batch:

1. :meth:`Sink.load_state` (in the job's first batch, then :meth:`Sink.apply_layout` for each table the
   job file lays out); if the state holds no plan, :meth:`Sink.record_plan`;
2. :meth:`Sink.append_changelog`, :meth:`Sink.append_dead_letters`;
3. :meth:`Sink.stage_changes` with every table's net changes of the batch; then per table, for each of
   its segments and DDLs in order: :meth:`Sink.create_table`,
   :meth:`Sink.evolve_table`, :meth:`Sink.write_changes`, :meth:`Sink.truncate_table`,
   :meth:`Sink.rename_table`, :meth:`Sink.drop_table` (tables in parallel threads);
4. :meth:`Sink.commit`.

**What a sink must guarantee for exactly once.** A crash may stop the job between any two calls, or
inside one; the job then runs the same batch again from the same state. So:

- :meth:`Sink.commit` replaces the whole state atomically: after a crash :meth:`Sink.load_state` returns
  either the state before the batch (with its plan) or the state after it, never a mix.
- :meth:`Sink.record_plan` is durable before it returns.
- Each :meth:`Sink.write_changes` and :meth:`Sink.truncate_table` is atomic and stores its :class:`Step`
  with the rows, in the same transaction; :meth:`Sink.last_step` returns the newest step stored, so the
  pipeline skips, on a re-run, every step at or below it. The pipeline asks it under every name the
  table goes by in the batch (the crash may have renamed it) and takes the newest, so a rename must keep
  the table's steps with it (a sink that renames by copying carries the newest step into the copy).
- The changelog and dead-letter appends store their batch likewise, and skip themselves when
  ``recovering`` finds that batch stored.
- The DDL calls are idempotent: run again, they find their work done (a table created, a column added,
  a table renamed) and do nothing, or finish what a crash left half-done.

A sink whose store has transactions over DDL as well may keep more than this: make every call of the
batch part of :meth:`Sink.commit`'s one transaction, so that no step of an unfinished batch is ever
stored and :meth:`Sink.last_step` is always (0, 0) (:mod:`cdclake.sinks.postgres`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cdclake.model import ColumnSchema, TableSchema
from cdclake.schema.ddl.changes import SchemaChange
from cdclake.schema.layout import LayoutError, TableLayout
from cdclake.sources.ranges import OffsetRange
from cdclake.spark.progress import JobState
from cdclake.types import MySQLType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdclake.spark.progress import JobState


# The upstream table (database, table) and segment a write's net changes are of, as the batch's net
# changes name them (Sink.stage_changes).
NetPart = tuple[str, str, int]

# (name, Spark SQL type) of the job's changelog and dead-letter rows, as a database sink keeps them (each
# with the batch that appended it).
CHANGELOG_FIELDS = (
    ("database", "string"), ("table", "string"), ("op", "string"), ("commit_ts", "bigint"), ("before", "string"),
    ("after", "string"), ("topic", "string"), ("partition", "int"), ("offset", "bigint"), ("index", "int"),
)
DEAD_LETTER_FIELDS = (
    ("topic", "string"), ("partition", "int"), ("offset", "bigint"), ("timestamp_ms", "bigint"),
    ("raw_key", "binary"), ("raw_value", "binary"), ("reason", "string"),
)


def refuse_layout(layout: TableLayout | None) -> None:
    """What a database sink says of a layout: partitioning and table properties are Iceberg's."""
    if layout is not None:
        raise LayoutError(f"{layout.where() or 'a table layout'}: partition-by and properties lay out Iceberg "
                          "tables; a database sink ([sink] url, --sink) takes neither")


@dataclass(frozen=True)
class Step:
    """Which write of a batch a table's commit is: the ``step``-th write to that table in batch
    ``batch``, and the resolved ts the batch applies up to (None without watermarks)."""

    batch: int
    step: int
    resolved_ts: int | None = None


@dataclass
class TableComparison:
    """One sink table against the rows it should hold (the demo's and the tests' check)."""

    upstream: str
    lake_table: str
    expected_rows: int
    lake_rows: int = 0
    missing: int = 0
    unexpected: int = 0
    column_differences: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def shared_columns(self, schema: TableSchema, held: Collection[str] | None) -> list[ColumnSchema]:
        """The columns of ``schema`` the sink's table has too (``held``: its column names, None if there is no
        such table); the differences recorded."""
        if held is None:
            self.column_differences.append("the table does not exist")
            self.missing = self.expected_rows
            return []
        names = [c.name for c in schema.columns]
        self.column_differences += [f"table lacks column {n}" for n in names if n not in held]
        self.column_differences += [f"table has extra column {n}" for n in held if n not in names]
        return [c for c in schema.columns if c.name in held]

    @property
    def equal(self) -> bool:
        return not (self.missing or self.unexpected or self.column_differences) and self.lake_rows == self.expected_rows


@dataclass(frozen=True)
class Compaction:
    """What compacting one table did: its delete files (which readers merge into its rows) before and
    after, and the data files rewritten with their deletes applied and the files written instead."""

    table: str
    delete_files_before: int
    delete_files_after: int
    data_files_rewritten: int
    data_files_added: int


class Sink(Protocol):
    """A store for a replication job's tables and progress. ``target`` names one of its tables as
    :meth:`target` made it; the pipeline keeps that name in the job state (``TableState.lake_table``)."""

    # --- progress ----------------------------------------------------------------------------------------

    def load_state(self) -> tuple[JobState, DataFrame]:
        """The job's state as the last :meth:`commit` left it (plus a plan recorded since), without its
        pending changes, and the pending change records."""

    def record_plan(self, ranges: Sequence[OffsetRange], batch: int, stream: tuple[str, int] | None) -> None:
        """Record, durably, the ranges batch ``batch`` is about to apply; ``stream`` the (application id,
        batch id) of a streaming query's batch."""

    def commit(self, state: JobState, batch: int, pending: DataFrame | None) -> None:
        """Replace the whole state, atomically, with ``state`` after ``batch`` and the ``pending`` change
        records: the batch's end."""

    # --- tables ------------------------------------------------------------------------------------------

    def target(self, namespace: str, table: str) -> str:
        """The sink's name for the table ``table`` of ``namespace``."""

    def create_table(self, target: str, schema: TableSchema, layout: TableLayout | None = None) -> None:
        """A table for ``schema``'s rows, laid out as ``layout`` asks, unless ``target`` exists; a sink
        that lays out no table refuses a layout (:func:`refuse_layout`)."""

    def apply_layout(self, target: str, schema: TableSchema, layout: TableLayout) -> None:
        """``layout`` made true of ``target``, a table that exists with ``schema``'s rows (the job's start,
        a renamed table); nothing done where it is already."""

    def changes_in_rows(self, schema: TableSchema, types: Mapping[str, MySQLType]) -> list[SchemaChange]:
        """The changes rows with column ``types`` need of a table known as ``schema``: columns it lacks,
        and types it cannot hold the rows' values in."""

    def evolve_table(self, target: str, schema: TableSchema, changes: Sequence[SchemaChange]) -> None:
        """Make ``changes`` to ``target``, whose rows are ``schema``'s, planned against the table as it
        is now; :class:`~cdclake.schema.policy.SchemaEvolutionError` where the job's policy refuses."""

    def last_step(self, target: str) -> tuple[int, int]:
        """(batch, step) of the newest :class:`Step` stored with ``target``'s rows; (0, 0) if none, or if
        the table does not exist."""

    def stage_changes(self, net: DataFrame) -> None:
        """Before the batch's tables are written: every table's net changes of the batch (``database``,
        ``table``, ``_segment``, then ``_key``, ``_op``, ``_image``), for a sink that loads them into its
        store in one go rather than one write at a time (each :meth:`write_changes` is then given its
        ``part``); nothing to do for one that reads each write's ``net`` itself."""

    def write_changes(self, target: str, schema: TableSchema, net: DataFrame, step: Step, *,
                      whole_images: bool, maybe_empty: bool, part: NetPart) -> None:
        """Apply ``net``, one net change per key (``_key``, ``_op``, ``_image``: JSON of lake texts), with
        ``step``, atomically: the rows of :meth:`stage_changes`'s whose ``database``, ``table`` and
        ``_segment`` are ``part``. ``whole_images``: every insert's and update's image holds every column
        (else a column an image lacks keeps its value). ``maybe_empty``: the table is new to the job."""

    def truncate_table(self, target: str, step: Step) -> None:
        """Delete every row of ``target``, with ``step``, atomically."""

    def rename_table(self, target: str, new_target: str) -> None:
        """``target``'s rows under ``new_target``, ``target`` gone."""

    def drop_table(self, target: str) -> None:
        """``target`` gone, if it exists."""

    # --- the job's own tables ----------------------------------------------------------------------------

    def append_changelog(self, changes: DataFrame, batch: int, recovering: bool) -> None:
        """Append every applied row change of ``batch`` (change records) to the job's changelog."""

    def append_dead_letters(self, errors: DataFrame, batch: int, recovering: bool) -> None:
        """Append the undecodable messages of ``batch`` (error records), raw, with their reasons."""

    def maintain(self, targets: Sequence[str]) -> None:
        """The store's upkeep for ``targets`` and the job's own tables (snapshot expiry, say)."""

    def compact(self, targets: Sequence[str]) -> list[Compaction]:
        """Rewrite those of ``targets`` whose changes lie in files readers must merge (Iceberg's delete
        files) so they no longer do, their rows unchanged; what was done to each table rewritten. No
        :class:`Step` is stored: :meth:`last_step` still returns the newest step of a batch."""


@runtime_checkable
class HistorySink(Protocol):
    """A sink that keeps SCD type 2 history tables (:mod:`cdclake.schema.history`) beside mirrors. The
    pipeline names a history table ``target`` as it names mirrors, and also evolves, renames, drops it and
    reads its :meth:`Sink.last_step` with the :class:`Sink` calls; what is a history table's own:"""

    def create_history(self, target: str, schema: TableSchema) -> None:
        """A history table for the versions of ``schema``'s rows, unless ``target`` exists."""

    def stage_history(self, actions: DataFrame) -> None:
        """Before the batch's tables are written: every history table's version actions of the batch
        (``database``, ``table``, ``_segment``, then as :meth:`write_history` reads them), as
        :meth:`Sink.stage_changes` has the net changes."""

    def write_history(self, target: str, schema: TableSchema, actions: DataFrame, step: Step, part: NetPart) -> None:
        """Apply ``actions`` (one segment's :class:`~cdclake.schema.history.VersionAction` records: ``_op``,
        ``_image`` JSON of lake texts, ``_start_ts``, ``_end_ts``, ``_end_op``; the rows of
        :meth:`stage_history`'s that are ``part``) to ``target``, the history of ``schema``'s rows, with
        ``step``, atomically."""

    def close_history(self, target: str, end_ts: int, keep: bool, step: Step) -> None:
        """A TRUNCATE at ``end_ts``: every open version of ``target`` ended (``keep``) or removed, with
        ``step``, atomically."""


class StatusReader(Protocol):
    """What ``cdclake status`` reads of a sink's job, without Spark (a sink package's ``open_reader``):
    nothing is made, changed or dropped, so a job may be running meanwhile."""

    read_with: str  # what reads it, for the report: "pyiceberg", "psycopg"

    def read_state(self) -> JobState:
        """The job's state as its last commit left it, without its pending changes."""

    def table_status(self, target: str) -> dict[str, Any]:
        """``rows`` and ``last_commit`` (ISO time, or None) of ``target``."""
