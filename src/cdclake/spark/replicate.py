"""The replication job: a source's stream kept in step with Iceberg tables, batch after batch.

One batch:

1. **Plan** offset ranges from each partition's position toward its high watermark (bounded), and
   record the plan in the state table, so that a restart re-runs exactly this batch.
2. **Decode** the ranges on the executors (:mod:`cdclake.spark.changes`) into change records.
3. **Order.** With a watermark-bearing format the resolved ts R is the minimum over partitions of the
   newest watermark each announced; changes at or below R apply, those above wait in the state. Without
   watermarks (Canal-JSON without the TiDB extension, DataWorks) every change read applies, in
   partition order. Changes at or below what a table already applied (TiCDC re-sends after a restart)
   and re-delivered copies within the batch are dropped.
4. **Apply** per table (:mod:`cdclake.spark.apply`), tables in parallel: DDLs cut its changes into
   segments; each segment is one MERGE. The changelog and the dead letters get one append each.
5. **Commit** the new positions, watermarks, carried messages and pending changes in one state commit.

Every commit of steps 1–5 names its batch in the snapshot summary; a batch re-run after a crash skips
what was committed, so each change is applied once, whatever the point of the crash.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.errors import CdclakeError, OptionError
from cdclake.eventjson import event_from_json, schema_from_json
from cdclake.formats import get_codec
from cdclake.model import ColumnSchema, Ddl, DdlKind, IndexSchema, TableSchema
from cdclake.schema.ddl import interpret, table_before
from cdclake.schema.ddl.changes import (
    AddColumn,
    CreateTable,
    DropColumn,
    DropDatabase,
    DropTable,
    RenameColumn,
    RenameTable,
    SchemaChange,
    TruncateTable,
    schema_after,
)
from cdclake.schema.evolution import (
    EvolutionPolicy,
    SchemaEvolutionError,
    alter_statements,
    changes_seen_in_rows,
    plan,
    quote,
)
from cdclake.sources.ranges import OffsetRange, PaceTracker, PartitionExtent, Source, plan_ranges
from cdclake.spark import apply, catalogs, killpoints, records
from cdclake.spark.batches import run_batches
from cdclake.spark.changes import CHANGE_DDL, CHANGE_NAMES, CarriedMessage, DecodeTask, decode_tasks
from cdclake.spark.state import (
    JobState,
    Position,
    TableState,
    append_plan,
    carried_from_record,
    ensure_state_table,
    load_state,
    prune_primes,
    write_state,
)
from cdclake.types import MySQLType

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

CHANGELOG_DDL = (
    "`database` string, `table` string, `op` string, `commit_ts` bigint, `before` string, `after` string, "
    "`topic` string, `partition` int, `offset` bigint, `index` int, `batch` bigint"
)
DEAD_LETTER_DDL = (
    "`topic` string, `partition` int, `offset` bigint, `timestamp_ms` bigint, `raw_key` binary, "
    "`raw_value` binary, `reason` string, `batch` bigint"
)
TAIL_CHOICES = ("keep", "apply")
BAD_MESSAGE_CHOICES = ("dead-letter", "fail")


class BadMessageError(CdclakeError):
    """A message could not be decoded and the job is configured to stop at the first one."""


class SchemaWaitError(CdclakeError):
    """A row has waited for its table's schema longer than ``schema_wait_s`` allows."""


# Each batch pays several seconds of fixed costs (Spark jobs, commits, a MERGE per table) whatever its
# size, so a backlog replicates faster in larger batches (BENCHMARKS.md compares 200,000 and 500,000).
# A task decodes one partition's share of a batch and Spark caches it: 1,100,000 records over 8
# partitions ran out of a 1 GiB heap, hence the larger heap session.py gives a local driver.
DEFAULT_MAX_BATCH_RECORDS = 500_000


@dataclass(frozen=True)
class ReplicateConfig:
    """What ``cdclake replicate`` does, whatever the source.

    ``include``/``exclude`` are regular expressions matched against ``database.table`` (exclude
    wins); ``table_mapping`` maps ``database.table`` to a lake ``namespace.table``; other tables go to
    ``target_namespace`` (``{database}`` stands for the upstream database) under their own name.
    ``unresolved_tail`` says what ``--once`` does with changes above the resolved ts once the source
    has nothing more: ``keep`` them for a later run (transactionally consistent), or ``apply`` them.
    """

    format: str
    format_options: Mapping[str, Any] = field(default_factory=dict)
    catalog: str = "lake"
    namespace: str = "cdclake"
    include: str | None = None
    exclude: str | None = None
    table_mapping: Mapping[str, str] = field(default_factory=dict)
    target_namespace: str = "{database}"
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS
    unresolved_tail: str = "keep"
    on_bad_message: str = "dead-letter"
    evolution: EvolutionPolicy = field(default_factory=EvolutionPolicy)
    write_mode: str = "merge-on-read"
    parallel_tables: int = 4
    schema_wait_s: float = 600.0
    expire_snapshots_every_s: float = 3600.0

    def __post_init__(self) -> None:
        # A wrong format or option name is refused here, before a session or a table is touched.
        get_codec(self.format).resolve(self.format_options)
        if self.unresolved_tail not in TAIL_CHOICES:
            raise OptionError(f"unresolved-tail={self.unresolved_tail!r}: one of {', '.join(TAIL_CHOICES)}")
        if self.on_bad_message not in BAD_MESSAGE_CHOICES:
            raise OptionError(f"on-bad-message={self.on_bad_message!r}: one of {', '.join(BAD_MESSAGE_CHOICES)}")
        if self.max_batch_records < 1:
            raise OptionError(f"max-batch-records={self.max_batch_records}: must be at least 1")
        if self.schema_wait_s < 0:
            raise OptionError(f"schema-wait-s={self.schema_wait_s}: must not be negative")
        if self.expire_snapshots_every_s < 0:
            raise OptionError(f"expire-snapshots-every-s={self.expire_snapshots_every_s}: must not be negative "
                              "(0: never)")
        for name, pattern in (("include", self.include), ("exclude", self.exclude)):
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise OptionError(f"{name}={pattern!r}: not a regular expression: {exc}") from None


@dataclass
class BatchReport:
    """What one batch did, for the live display and the logs."""

    batch: int
    records: int = 0
    changes_applied: int = 0
    dead_letters: int = 0
    resolved_ts: int | None = None
    tables: dict[str, int] = field(default_factory=dict)
    lag: dict[tuple[str, int], int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class _Segment:
    """A table's changes between two of its DDLs; ``columns`` the column sets its rows carry, ``partial``
    whether an after image lacks a column its row's set names."""

    index: int
    changes: int = 0
    columns: list[tuple[dict[str, str], list[str]]] = field(default_factory=list)
    partial: bool = False

    def whole_images(self, schema: TableSchema) -> bool:
        """Whether every image of an insert or update holds every column of ``schema``, the table's
        schema these rows meet (it may have columns rows of an older schema lack)."""
        names = {c.name for c in schema.columns}
        return not self.partial and all(names <= columns.keys() for columns, _ in self.columns)


@dataclass
class _TableWork:
    """A table's part of the batch: its DDLs in order, each with its position (commit ts, or Kafka
    timestamp for formats without watermarks), and its rows' segments."""

    key: tuple[str, str]
    ddls: list[tuple[int, Ddl]] = field(default_factory=list)
    segments: dict[int, _Segment] = field(default_factory=dict)
    bootstrap: TableSchema | None = None


class Replicator:
    """Replicates ``source`` into the catalog's tables: :meth:`run` loops, :meth:`step` runs one batch
    it plans itself. :meth:`apply_query_batch` applies a batch a streaming query hands in instead (the
    engine of :class:`cdclake.spark.ChangeApplier`); ``source`` may then be None."""

    def __init__(self, spark: SparkSession, source: Source | None, config: ReplicateConfig) -> None:
        self.spark, self.source, self.config = spark, source, config
        self.codec = get_codec(config.format)
        self.options = self.codec.resolve(config.format_options)
        self.watermarks = self.codec.has_watermarks(self.options)
        self.settings = apply.WriteSettings(config.write_mode)
        self._paces = PaceTracker()
        self._expired_at = time.monotonic()
        self._include = re.compile(config.include) if config.include else None
        self._exclude = re.compile(config.exclude) if config.exclude else None
        catalog, namespace = config.catalog, config.namespace
        ensure_state_table(spark, catalog, namespace)
        for name, ddl in (("changelog", CHANGELOG_DDL), ("dead_letters", DEAD_LETTER_DDL)):
            spark.sql(f"CREATE TABLE IF NOT EXISTS {self._system(name)} ({ddl}) USING iceberg "
                      "TBLPROPERTIES ('format-version'='2')")

    # --- the loop -------------------------------------------------------------------------------------

    def run(self, once: bool = True, interval_s: float = 5.0, stop: threading.Event | None = None,
            on_batch: Callable[[BatchReport], None] | None = None) -> list[BatchReport]:
        """Batches until caught up (``once``), or until ``stop`` is set; a stop request waits for the
        batch under way to commit."""
        return run_batches(lambda: self.step(finishing=once), once, interval_s, stop, on_batch)

    def step(self, finishing: bool = False) -> BatchReport | None:
        """One batch; None when there was nothing to read (and, finishing, no tail left to apply)."""
        if self.source is None:
            raise OptionError("this Replicator has no source to plan batches from: hand it batches with "
                              "apply_query_batch")
        started = time.monotonic()
        state, pending = load_state(self.spark, self.config.catalog, self.config.namespace)
        batch = state.batch + 1
        recovering = bool(state.plan)
        extents = self.source.extents()
        if recovering:
            _check_not_a_query_batch(state)
            ranges = state.plan
        else:
            self._observe_paces(state)
            ranges = plan_ranges(extents, state.positions_map(), self.config.max_batch_records, self._paces.paces())
            tail = finishing and self.config.unresolved_tail == "apply" and self.watermarks
            if not ranges and not (tail and not pending.isEmpty()):
                return None
            state.plan = ranges
            append_plan(self.spark, self.config.catalog, self.config.namespace, ranges, batch)
            killpoints.reached("planned")
        report = BatchReport(batch)
        # Nothing left to read while finishing: the tail above the resolved ts is applied if asked.
        apply_all = not ranges and finishing and self.config.unresolved_tail == "apply"
        decoded = self._decode(ranges, state)
        self._apply_batch(state, pending, decoded, ranges, extents, batch, recovering, apply_all, report)
        self._expire_snapshots_if_due(state)
        return self._finished(report, state, extents, started)

    def _observe_paces(self, state: JobState) -> None:
        """Tell the planner how far each partition has got, in the order the format carries."""
        for tp, position in state.positions.items():
            self._paces.observe(tp, position.next_offset,
                                position.watermark if self.watermarks else position.read_sequence)

    def apply_query_batch(self, frame: DataFrame, batch_id: int, app_id: str) -> BatchReport | None:
        """Apply batch ``batch_id`` of the streaming query ``app_id``: raw records (columns named as
        Spark's Kafka source names them, see :func:`~cdclake.spark.records.decode_changes`) or change records
        :func:`~cdclake.spark.records.decode_changes` made of them. None if the batch was applied already.

        A query re-runs a batch that failed with the same id and the same records (Spark's
        ``foreachBatch`` is at-least-once): one committed before is skipped, one interrupted is
        finished as :meth:`step` finishes an interrupted batch, skipping what it committed. The
        partitions a batch reads are taken as read to the end they reached (where the query caps its
        batches, ``maxOffsetsPerTrigger``, a format without watermarks may apply a change before an
        older one of a partition the cap held back)."""
        from pyspark import StorageLevel

        started = time.monotonic()
        state, pending = load_state(self.spark, self.config.catalog, self.config.namespace)
        if batch_id <= state.streams.get(app_id, -1):
            return None
        recovering = bool(state.plan)
        batch = state.batch + 1
        changes = "kind" in frame.columns
        frame = frame if changes else records.raw_records(frame)
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        try:
            if recovering:
                if state.plan_stream != (app_id, batch_id):
                    raise OptionError(f"the state in {self._system('state')} holds batch {batch} "
                                      f"{_planned_by(state)}, interrupted: run that to its end first")
                ranges = state.plan
            else:
                ranges = records.ranges_of(frame)
                if not ranges and pending.isEmpty():
                    return None
                state.plan = ranges
                append_plan(self.spark, self.config.catalog, self.config.namespace, ranges, batch, (app_id, batch_id))
                killpoints.reached("planned")
            if changes:
                decoded = records.with_carried_decoded(frame, self.config.format, self.options, state.carried, ranges)
            else:
                decoded = records.decode_frame(frame, self.config.format, self.options, state.carried)
            extents = {(r.topic, r.partition): PartitionExtent(r.start, r.end) for r in ranges}
            state.streams[app_id] = batch_id
            report = BatchReport(batch)
            self._apply_batch(state, pending, decoded, ranges, extents, batch, recovering, False, report)
        finally:
            frame.unpersist()
        self._expire_snapshots_if_due(state)
        return self._finished(report, state, extents, started)

    @staticmethod
    def _finished(report: BatchReport, state: JobState, extents: Mapping[tuple[str, int], PartitionExtent],
                  started: float) -> BatchReport:
        report.lag = {tp: extent.high - state.positions.get(tp, Position(extent.low)).next_offset
                      for tp, extent in extents.items()}
        report.seconds = time.monotonic() - started
        return report

    def _expire_snapshots_if_due(self, state: JobState) -> None:
        """Iceberg's snapshot expiry for every table the job writes, as each table's own
        ``history.expire.*`` properties say (Iceberg's defaults: older than 5 days, the newest always
        kept; the state table's: older than an hour), once per ``expire_snapshots_every_s``. Each batch
        commits a snapshot to every table it touches: unexpired, a long-running job's table metadata,
        rewritten at each commit, and the files only old snapshots hold (the state table is replaced
        each batch) would grow without bound."""
        every = self.config.expire_snapshots_every_s
        if not every or time.monotonic() - self._expired_at < every:
            return
        tables = [self._system(name) for name in ("state", "changelog", "dead_letters")]
        for known in state.tables.values():
            tables.append(known.lake_table)
        for table in tables:
            apply.expire_snapshots(self.spark, self.config.catalog, table)
        self._expired_at = time.monotonic()

    # --- one batch ------------------------------------------------------------------------------------

    def _apply_batch(self, state: JobState, pending: DataFrame, decoded: DataFrame, ranges: list[OffsetRange],
                     extents: Mapping[tuple[str, int], PartitionExtent], batch: int, recovering: bool,
                     apply_all: bool, report: BatchReport) -> None:
        """Apply ``decoded``, the change records of ``ranges`` (what :func:`decode_tasks` makes of them
        after the messages carried into them), and commit the state after batch ``batch``."""
        from pyspark import StorageLevel

        # Deserialized, as Spark caches a DataFrame by default: its cached form is compressed column
        # batches already, and PySpark's MEMORY_AND_DISK serializes those again (BENCHMARKS.md).
        decoded = decoded.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        try:
            facts = _Facts.of(decoded, sequences=not self.watermarks)
            killpoints.reached("decoded")
            report.records = sum(r.size for r in ranges)
            report.dead_letters = len(facts.errors)
            if facts.errors and self.config.on_bad_message == "fail":
                raise BadMessageError(f"{facts.errors[0]} (on-bad-message = fail: nothing of batch {batch} "
                                      "was applied)")
            self._advance_positions(state, facts, ranges, extents)
            resolved = None if apply_all else self._resolved_ts(state, facts)
            report.resolved_ts = resolved
            changes = self._selected(decoded.filter("kind IN ('row', 'ddl')").unionByName(pending))
            ready = self._ready(resolved, None if self.watermarks else self._resolved_sequence(state, extents))
            applicable, compared = self._deduplicated(self._not_yet_applied(
                changes if ready is None else changes.filter(ready), state))
            # Each use of ``applicable`` (planning, changelog, net changes) filters the cached decoded
            # records again, which costs less than caching it too; but where copies were compared, the
            # comparison would run again for each use.
            if compared:
                applicable = applicable.persist(StorageLevel.MEMORY_AND_DISK_DESER)
            net = None
            try:
                work = self._plan_tables(applicable, facts, state, resolved)
                report.changes_applied = sum(s.changes for w in work.values() for s in w.segments.values())
                self._append_changelog(applicable, batch, recovering, report.changes_applied)
                killpoints.reached("changelog")
                if facts.errors:
                    self._append_dead_letters(decoded.filter("kind = 'error'"), batch, recovering)
                net = self._net_changes(applicable, work)
                self._apply_tables(state, work, net, batch, recovering, resolved, report)
                killpoints.reached("tables-applied")
                if not self.watermarks:
                    self._remember_sequences(state, applicable)
            finally:
                applicable.unpersist()
                if net is not None:
                    net.unpersist()
            self._carry_on(state, facts, ranges)
            state.plan = []
            waiting = None if ready is None else changes.filter(~ready).select(*CHANGE_NAMES)
            write_state(self.spark, self.config.catalog, self.config.namespace, state, batch, waiting)
            killpoints.reached("committed")
        finally:
            decoded.unpersist()

    def _decode(self, ranges: list[OffsetRange], state: JobState) -> DataFrame:
        """The change records of ``ranges``, decoded on the executors, one task per range."""
        import pickle

        tasks = [DecodeTask(r, tuple(entry[0] for entry in state.carried.get((r.topic, r.partition), [])))
                 for r in ranges]
        source, format_name, options = self.source, self.config.format, dict(self.options)
        assert source is not None, "step() plans only with a source"
        rows = [(index, pickle.dumps(task)) for index, task in enumerate(tasks)]
        task_rdd = self.spark.sparkContext.parallelize(rows, max(1, len(rows)))
        task_frame = self.spark.createDataFrame(task_rdd, "task int, payload binary")

        def decode(batches: Iterable[Any]) -> Iterator[Any]:
            import pickle

            mine = [pickle.loads(payload) for arrow in batches for payload in arrow.column("payload").to_pylist()]
            yield from decode_tasks(source, format_name, options, mine)

        return task_frame.mapInArrow(decode, CHANGE_DDL)

    def _advance_positions(self, state: JobState, facts: _Facts, ranges: list[OffsetRange],
                           extents: Mapping[tuple[str, int], PartitionExtent]) -> None:
        for tp, extent in extents.items():
            state.positions.setdefault(tp, Position(extent.low))
        for planned in ranges:
            state.positions[(planned.topic, planned.partition)].next_offset = planned.end
        for tp, newest in facts.watermarks.items():
            position = state.positions[tp]
            position.watermark = max(position.watermark or 0, newest)
        for tp, newest in facts.heartbeats.items():
            position = state.positions[tp]
            position.heartbeat_ms = max(position.heartbeat_ms or 0, newest)
        for tp, newest in facts.sequences.items():
            position = state.positions[tp]
            position.read_sequence = max(position.read_sequence or 0, newest)

    def _resolved_ts(self, state: JobState, facts: _Facts) -> int | None:
        """The ts every partition has announced, and below every row still waiting for its schema;
        None for a format without watermarks (every change read applies).

        A waiting row's transaction is not complete in the lake until the row is applied, and a table's
        applied ts must not pass a row it has not applied: a replay drops what is at or below it."""
        if not self.watermarks:
            return None
        marks = [position.watermark for position in state.positions.values()]
        resolved = 0 if not marks or None in marks else min(m for m in marks if m is not None)
        waiting = [entry for entries in facts.carried.values() for entry in entries
                   if entry[0].role == "held" and entry[0].commit_ts is not None]
        self._check_schema_wait(waiting, resolved)
        return min(resolved, min(entry[0].commit_ts or 0 for entry in waiting) - 1) if waiting else resolved

    def _check_schema_wait(self, waiting: list[tuple[CarriedMessage, str | None, str | None, int | None]],
                           resolved: int) -> None:
        """Stop, before anything of the batch is applied, when a row has waited for its schema longer
        than ``schema_wait_s`` of the upstream's time: every partition has announced a ts that far past
        the row's commit, and no BOOTSTRAP or DDL has brought the schema version it needs. TiCDC sends
        BOOTSTRAPs every ``send-bootstrap-interval-in-sec`` (120 s by default): a schema that does not
        come in much longer will not come, and the tables would stay behind the row for good."""
        overdue = [(((resolved >> 18) - ((carried.commit_ts or 0) >> 18)) / 1000, carried, database, table, version)
                   for carried, database, table, version in waiting]
        overdue = [entry for entry in overdue if entry[0] > self.config.schema_wait_s]
        if overdue:
            waited, carried, database, table, version = max(overdue, key=lambda entry: entry[0])
            origin = carried.message.origin
            raise SchemaWaitError(
                f"{origin.topic}[{origin.partition}]@{origin.offset}: a row of {database}.{table} has waited "
                f"{waited:.0f} s of upstream time for its schema version {version}, which no BOOTSTRAP or DDL "
                f"has brought ({len(overdue)} rows wait so); nothing of this batch was applied. Check that the "
                "producer sends BOOTSTRAPs (send-bootstrap-interval-in-sec, send-bootstrap-in-msg-count), or "
                f"set schema-wait-s above {self.config.schema_wait_s:g} to wait longer")

    def _resolved_sequence(self, state: JobState, extents: Mapping[tuple[str, int], PartitionExtent]) -> int | None:
        """For a format without watermarks, the sequence below which every partition has been read: the
        lowest of the newest sequences read on the partitions not read to their end (one read to its
        end has nothing older to come); None when every partition is read to its end.

        A partition's changes come in sequence order, so one that is read up to sequence s can send
        nothing below s any more; a DDL applied above that bound could overtake a row of an older
        schema still unread on a slower partition."""
        behind = [position.read_sequence for tp, position in state.positions.items()
                  if tp in extents and position.next_offset < extents[tp].high and position.read_sequence is not None]
        return min(behind) if behind else None

    def _ready(self, resolved: int | None, resolved_sequence: int | None) -> Column | None:
        """Which changes apply in this batch, or None for all of them: at or below the resolved ts, or
        (formats without watermarks) below the resolved sequence, strictly: changes may share one
        (Canal's ``es``), and the rest of its changes may be unread yet. A change without the value to
        compare applies."""
        from pyspark.sql import functions as F

        if resolved is not None:
            return F.coalesce(F.col("commit_ts") <= resolved, F.lit(True))
        if resolved_sequence is not None:
            below = F.col("sequence").cast("decimal(38,0)") < F.lit(Decimal(resolved_sequence)).cast("decimal(38,0)")
            return F.coalesce(below, F.lit(True))
        return None

    # --- selecting changes ----------------------------------------------------------------------------

    def _selected(self, changes: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        name = F.concat_ws(".", "database", "table")
        if self._include is not None:
            changes = changes.filter(name.rlike(f"^(?:{self.config.include})$"))
        if self._exclude is not None:
            changes = changes.filter(~name.rlike(f"^(?:{self.config.exclude})$"))
        return changes

    def _not_yet_applied(self, changes: DataFrame, state: JobState) -> DataFrame:
        """Without the changes applied already: at or below the resolved ts their table applied (or had
        applied when it was renamed or dropped), or, for a format without watermarks, at or below the
        newest sequence applied from their partition (a re-delivered range after the producer
        restarted)."""
        from pyspark.sql import functions as F

        if not self.watermarks:
            return self._past_sequences(changes, state)
        applied_ts = {**state.gone, **{key: known.applied_ts for key, known in state.tables.items()}}
        applied = [(db, table, ts) for (db, table), ts in applied_ts.items() if ts is not None]
        if not applied:
            return changes
        marks = self.spark.createDataFrame(applied, "`database` string, `table` string, `_applied` bigint")
        joined = changes.join(F.broadcast(marks), ["database", "table"], "left")
        return joined.filter("_applied IS NULL OR commit_ts IS NULL OR commit_ts > _applied").drop("_applied")

    def _past_sequences(self, changes: DataFrame, state: JobState) -> DataFrame:
        from pyspark.sql import functions as F

        applied = [(topic, partition, Decimal(position.sequence))
                   for (topic, partition), position in state.positions.items() if position.sequence is not None]
        if not applied:
            return changes
        marks = self.spark.createDataFrame(applied, "`topic` string, `partition` int, `_applied` decimal(38,0)")
        sequence = F.col("sequence").cast("decimal(38,0)")
        joined = changes.join(F.broadcast(marks), ["topic", "partition"], "left")
        # Where changes share a sequence (Canal-JSON's ``es``: a millisecond), at or above, not above: the
        # rest of a partition's newest millisecond may arrive after the batch that applied part of it.
        # Re-applying the newest change of a partition again is harmless to the tables: no later change
        # of its key was applied (a key stays in one partition); the changelog may show it twice.
        newer = sequence > F.col("_applied") if self.codec.unique_sequences else sequence >= F.col("_applied")
        return joined.filter(F.col("_applied").isNull() | sequence.isNull() | newer).drop("_applied")

    def _remember_sequences(self, state: JobState, applicable: DataFrame) -> None:
        from pyspark.sql import functions as F

        newest = (applicable.groupBy("topic", "partition")
                  .agg(F.max(F.col("sequence").cast("decimal(38,0)")).alias("newest")).collect())
        for row in newest:
            position = state.positions.get((row["topic"], row["partition"]))
            if position is not None and row["newest"] is not None:
                position.sequence = max(position.sequence or 0, int(row["newest"]))

    def _deduplicated(self, changes: DataFrame) -> tuple[DataFrame, bool]:
        """Each change once: re-delivered copies (same table, op, commit ts or sequence, images) dropped,
        the first delivery kept; and whether any changes were compared as possible copies.

        Only changes whose identity hashes like another's can be copies, so a cheap count of the
        hashes finds them, and only those go through the exact comparison (a window over whole images,
        which costs a shuffle and sort of every column): a clean batch pays for the count alone."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        # A DDL is sent to every partition: its copies differ only in their origin.
        event_id = F.when(F.col("kind") == "ddl", F.get_json_object("event", "$.sql"))
        identity = ["kind", "database", "table", "op", "commit_ts", "sequence", "before", "after", "event_id"]
        hashed = changes.withColumn("event_id", event_id).withColumn("_identity", F.xxhash64(*identity))
        shared = hashed.groupBy("_identity").count().filter("count > 1").select("_identity")
        shared_hashes = [(row["_identity"],) for row in shared.collect()]
        if not shared_hashes:
            return changes, False
        suspects = self.spark.createDataFrame(shared_hashes, "_identity bigint").withColumn("_suspect", F.lit(True))
        marked = hashed.join(F.broadcast(suspects), "_identity", "left")
        first = Window.partitionBy(*identity).orderBy("partition", "offset", "index")
        copies_dropped = (marked.filter("_suspect").withColumn("_copy", F.row_number().over(first))
                          .filter("_copy = 1").drop("_copy"))
        unique = marked.filter("_suspect IS NULL")
        return unique.unionByName(copies_dropped).drop("_identity", "_suspect", "event_id"), True

    # --- planning the tables' work --------------------------------------------------------------------

    def _plan_tables(self, applicable: DataFrame, facts: _Facts, state: JobState, resolved: int | None
                     ) -> dict[tuple[str, str], _TableWork]:
        """The DDLs, and the column sets of rows, of each table in this batch (small: collected)."""
        from pyspark.sql import functions as F

        work: dict[tuple[str, str], _TableWork] = {}
        ddl_rows = applicable.filter("kind = 'ddl'").orderBy("commit_ts", "timestamp_ms", "partition", "offset")
        for row in ddl_rows.collect():
            ddl = event_from_json(orjson.loads(row["event"]))
            assert isinstance(ddl, Ddl)
            position = self._position_of(row)
            for key in self._tables_of(ddl, state, work):
                work.setdefault(key, _TableWork(key)).ddls.append((position or 0, ddl))
        partial = F.max(F.col("reason").eqNullSafe("partial")).alias("partial")
        groups = (self._segmented_rows(applicable, work)
                  .groupBy("database", "table", "_segment", "columns", "key_columns")
                  .agg(F.count("*").alias("count"), partial).collect())
        for row in groups:
            key = (row["database"], row["table"])
            segments = work.setdefault(key, _TableWork(key)).segments
            segment = segments.setdefault(row["_segment"], _Segment(row["_segment"]))
            segment.changes += row["count"]
            segment.partial = segment.partial or row["partial"]
            segment.columns.append((orjson.loads(row["columns"]), orjson.loads(row["key_columns"])))
        # The newest schema the resolved ts allows, where the batch read several.
        for schema in sorted(facts.bootstraps, key=lambda b: b.version or 0, reverse=True):
            if self._creates_from(schema, state, work, resolved):
                work[(schema.database, schema.table)] = _TableWork((schema.database, schema.table), bootstrap=schema)
        return work

    def _creates_from(self, bootstrap: TableSchema, state: JobState, work: Mapping[tuple[str, str], _TableWork],
                      resolved: int | None) -> bool:
        """Whether a BOOTSTRAP creates its table now: a table no change of this batch creates, whose schema
        version the resolved ts has passed. A BOOTSTRAP is the table as it is when sent, which may be ahead
        of the changes applied so far: rows still waiting above R, or in this batch before one of its
        DDLs, carry an older schema (a column since renamed, an int since widened), and they must meet
        the table as it was, so their own column types and DDLs create and evolve it."""
        key = (bootstrap.database, bootstrap.table)
        if key in state.tables or key in work or not self._wanted(key):
            return False
        return resolved is None or bootstrap.version is None or bootstrap.version <= resolved

    def _position_of(self, change: Any) -> int:
        """Where a change stands in the upstream's order: its commit ts; for a format without
        watermarks the order it carries (Canal's ``es``, DataWorks' ``sequenceId``), else the Kafka
        timestamp (TiCDC and DataWorks send every change before a DDL ahead of it)."""
        if self.watermarks:
            return int(change["commit_ts"] or 0)
        sequence = change["sequence"]
        return int(sequence) if sequence is not None else int(change["timestamp_ms"] or 0)

    @staticmethod
    def _tables_of(ddl: Ddl, state: JobState, work: Mapping[tuple[str, str], _TableWork]) -> list[tuple[str, str]]:
        """The tables a DDL changes: its own (for a RENAME TABLE, the one it renames, which TiCDC does not
        name), or every table of the database it drops."""
        if ddl.kind is DdlKind.DROP_DATABASE:
            return sorted({key for key in (*state.tables, *work) if key[0] == ddl.database})
        if not ddl.table:
            return []  # CREATE DATABASE and the like: nothing a lake table holds
        return [table_before(ddl)]

    def _segmented_rows(self, applicable: DataFrame, work: Mapping[tuple[str, str], _TableWork]) -> DataFrame:
        """The row changes of ``applicable``, each with ``_segment``: its place among its table's DDLs."""
        return applicable.filter("kind = 'row'").withColumn("_segment", self._segment_column(work))

    def _segment_column(self, work: Mapping[tuple[str, str], _TableWork]) -> Any:
        """Per change, how many of its table's DDLs come before it (the DDL barrier)."""
        from pyspark.sql import functions as F

        position = F.col("commit_ts") if self.watermarks else F.coalesce(
            F.col("sequence").cast("decimal(38,0)"), F.col("timestamp_ms").cast("decimal(38,0)"))
        segment = F.lit(0)
        for (database, table), table_work in work.items():
            if not table_work.ddls:
                continue
            count = sum((F.coalesce(position, F.lit(0)) >= p).cast("int") for p, _ in table_work.ddls)
            segment = F.when((F.col("database") == database) & (F.col("table") == table), count).otherwise(segment)
        return segment

    # --- applying -------------------------------------------------------------------------------------

    def _net_changes(self, applicable: DataFrame, work: Mapping[tuple[str, str], _TableWork]) -> DataFrame:
        """The net change per key of every table's segments (:func:`apply.net_changes`), all tables in
        one shuffle rather than one per MERGE, and materialized: each MERGE reads its part."""
        from pyspark import StorageLevel

        net = apply.net_changes(self._segmented_rows(applicable, work), groups=("database", "table", "_segment"))
        net = net.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        net.count()
        return net

    def _apply_tables(self, state: JobState, work: dict[tuple[str, str], _TableWork], net: DataFrame,
                      batch: int, recovering: bool, resolved: int | None, report: BatchReport) -> None:
        lock = threading.Lock()

        def one(table_work: _TableWork) -> None:
            touched = self._apply_table(state, table_work, net, batch, recovering, resolved, lock)
            with lock:
                report.tables.update(touched)

        # A RENAME TABLE touches two tables' work: then one table after the other, in DDL order.
        renames = any(ddl.kind is DdlKind.RENAME_TABLE for table_work in work.values() for _, ddl in table_work.ddls)
        ordered = sorted(work.values(), key=lambda w: w.ddls[0][0] if w.ddls else 2**63)
        parallel = 1 if renames else self.config.parallel_tables
        with self._shuffle_share(min(parallel, len(ordered))), ThreadPoolExecutor(max_workers=parallel) as pool:
            for future in [pool.submit(one, table_work) for table_work in ordered]:
                future.result()

    @contextmanager
    def _shuffle_share(self, concurrent: int) -> Iterator[None]:
        """While tables are applied, ``concurrent`` MERGEs side by side share the session's
        ``spark.sql.shuffle.partitions`` rather than each shuffling into all of them: more partitions
        only add tasks, and a data file and a delete file for each task that writes (BENCHMARKS.md:
        the bench's MERGEs took 10 % less time). The setting is the session's, so a query the caller
        runs on the same session meanwhile gets the share too."""
        key = "spark.sql.shuffle.partitions"
        before = self.spark.conf.get(key)
        assert before is not None, "a SQL setting has its default when unset"
        self.spark.conf.set(key, str(max(1, int(before) // max(1, concurrent))))
        try:
            yield
        finally:
            self.spark.conf.set(key, before)

    def _apply_table(self, state: JobState, work: _TableWork, net: DataFrame, batch: int,
                     recovering: bool, resolved: int | None, lock: threading.Lock) -> dict[str, int]:
        from pyspark.sql import functions as F

        key = work.key
        known = state.tables.get(key)
        # A table new to the job may have no rows yet: then its first changes are appended, not merged.
        maybe_empty = known is None
        if known is None and work.bootstrap is not None:
            known = self._create(key, work.bootstrap)
        done = apply.last_step(self.spark, known.lake_table) if recovering and known is not None and apply.table_exists(
            self.spark, known.lake_table) else (0, 0)
        step = 0
        touched: dict[str, int] = {}
        table_net = net.filter((F.col("database") == key[0]) & (F.col("table") == key[1]))
        segment_count = len(work.ddls) + 1
        for index in range(segment_count):
            if index > 0:
                known, step = self._apply_ddl(known, work.ddls[index - 1][1], batch, step, done, resolved)
                key = work.key if known is None else (known.schema.database, known.schema.table)
            segment = work.segments.get(index)
            if segment is None or segment.changes == 0:
                continue
            known = self._evolve_for_rows(key, known, segment)
            step += 1
            if (batch, step) > done:
                properties = self._properties(batch, step, resolved)
                segment_net = table_net.filter(F.col("_segment") == index)
                if maybe_empty and not apply.has_snapshots(self.spark, known.lake_table):
                    apply.append_changes(self.spark, known.lake_table, known.schema, segment_net, properties)
                else:
                    apply.merge_changes(self.spark, known.lake_table, known.schema, segment_net, properties,
                                        segment.whole_images(known.schema))
                killpoints.reached("table-merged")
            maybe_empty = False
            touched[known.lake_table] = touched.get(known.lake_table, 0) + segment.changes
        with lock:
            _register(state, work.key, known, resolved)
        return touched

    def _properties(self, batch: int, step: int, resolved: int | None) -> dict[str, str]:
        properties = {apply.BATCH_PROPERTY: str(batch), apply.STEP_PROPERTY: str(step)}
        if resolved is not None:
            properties[apply.RESOLVED_PROPERTY] = str(resolved)
        return properties

    def _create(self, key: tuple[str, str], schema: TableSchema) -> TableState:
        lake_table = self._lake_name(*key)
        apply.create_table(self.spark, lake_table, schema, self.settings)
        return TableState(schema, lake_table)

    def _evolve_for_rows(self, key: tuple[str, str], known: TableState | None, segment: _Segment) -> TableState:
        """The table, created from its rows' column types on first sight, with the columns the rows
        carry added or changed as Iceberg allows."""
        if known is None:
            columns, key_columns = segment.columns[0]
            schema = TableSchema(key[0], key[1], tuple(ColumnSchema(n, MySQLType.parse(t)) for n, t in columns.items()),
                                 (IndexSchema("PRIMARY", tuple(key_columns), unique=True, primary=True),)
                                 if key_columns else ())
            known = self._create(key, schema)
        for columns, _ in segment.columns:
            changes = changes_seen_in_rows(known.schema, {n: MySQLType.parse(t) for n, t in columns.items()})
            if changes:
                known = self._evolve(known, changes)
        return known

    def _evolve(self, known: TableState, changes: list[SchemaChange]) -> TableState:
        # Planned against the lake table as it is, not as the state remembers it: a batch re-run after a
        # crash finds its DDL already applied, and plans nothing.
        changes, lake_now = _not_made_yet(known.schema, changes), apply.lake_columns_of(self.spark, known.lake_table)
        try:
            lake_changes = plan(known.lake_table, lake_now, changes, self.config.evolution, mysql_schema=known.schema)
            catalogs.check_lake_changes(self.spark.conf.get, self.config.catalog, known.lake_table, lake_changes)
        except SchemaEvolutionError as error:
            raise SchemaEvolutionError(
                f"{error} (the batch stopped at this change: the changes before it are applied, none after it; "
                "a run that can make the change finishes the batch)") from None
        apply.run_statements(self.spark, alter_statements(known.lake_table, lake_changes))
        after = schema_after(known.schema, changes)
        assert after is not None
        return TableState(after, known.lake_table, known.applied_ts)

    def _apply_ddl(self, known: TableState | None, ddl: Ddl, batch: int, step: int, done: tuple[int, int],
                   resolved: int | None) -> tuple[TableState | None, int]:
        changes = interpret(ddl, known.schema if known is not None else None)
        for change in changes:
            if isinstance(change, CreateTable):
                known = self._create((change.schema.database, change.schema.table), change.schema)
            elif known is None:
                continue  # a change to a table this job does not mirror (created before the stream began)
            elif isinstance(change, (DropTable, DropDatabase)):
                self.spark.sql(f"DROP TABLE IF EXISTS {known.lake_table}")
                known = None
            elif isinstance(change, TruncateTable):
                step += 1
                if (batch, step) > done:
                    apply.truncate(self.spark, known.lake_table, self._properties(batch, step, resolved))
                    killpoints.reached("table-merged")
            elif isinstance(change, RenameTable):
                known = self._rename(known, change)
            else:
                known = self._evolve(known, [change])
        killpoints.reached("ddl-applied")
        return known, step

    def _rename(self, known: TableState, change: RenameTable) -> TableState:
        target = self._lake_name(change.database, change.table)
        if not apply.table_exists(self.spark, target):
            # Hadoop catalogs cannot rename: copy in one commit, then drop the old table.
            self.spark.sql(f"CREATE TABLE {target} USING iceberg TBLPROPERTIES ('format-version'='2') "
                           f"AS SELECT * FROM {known.lake_table}")
        self.spark.sql(f"DROP TABLE IF EXISTS {known.lake_table}")
        schema = known.schema
        renamed = TableSchema(change.database, change.table, schema.columns, schema.indexes, schema.table_id,
                              schema.version)
        return TableState(renamed, target, known.applied_ts)

    def _lake_name(self, database: str, table: str) -> str:
        mapped = self.config.table_mapping.get(f"{database}.{table}")
        if mapped is not None:
            namespace, _, name = mapped.rpartition(".")
        else:
            namespace, name = self.config.target_namespace.format(database=database), table
        return f"{quote(self.config.catalog)}.{quote(namespace)}.{quote(name)}"

    def _system(self, name: str) -> str:
        return f"{quote(self.config.catalog)}.{quote(self.config.namespace)}.{quote(name)}"

    # --- the job's own tables -------------------------------------------------------------------------

    def _already_committed(self, table: str, batch: int) -> bool:
        return apply.last_step(self.spark, table)[0] >= batch

    def _append_changelog(self, applicable: DataFrame, batch: int, recovering: bool, count: int) -> None:
        from pyspark.sql import functions as F

        target = self._system("changelog")
        if count and not (recovering and self._already_committed(target, batch)):
            (applicable.filter("kind = 'row'")
             .select("database", "table", "op", "commit_ts", "before", "after", "topic", "partition", "offset",
                     "index", F.lit(batch).cast("bigint").alias("batch"))
             .writeTo(target).option(f"snapshot-property.{apply.BATCH_PROPERTY}", str(batch)).append())

    def _append_dead_letters(self, errors: DataFrame, batch: int, recovering: bool) -> None:
        from pyspark.sql import functions as F

        target = self._system("dead_letters")
        if not (recovering and self._already_committed(target, batch)):
            (errors.select("topic", "partition", "offset", "timestamp_ms", "raw_key", "raw_value", "reason",
                           F.lit(batch).cast("bigint").alias("batch"))
             .writeTo(target).option(f"snapshot-property.{apply.BATCH_PROPERTY}", str(batch)).append())

    def _carry_on(self, state: JobState, facts: _Facts, ranges: list[OffsetRange]) -> None:
        """The carried messages after this batch: the decoded partitions' new ones, plus their schema
        messages from before; partitions not read keep theirs."""
        for planned in ranges:
            tp = (planned.topic, planned.partition)
            old_primes = [entry for entry in state.carried.get(tp, []) if entry[0].role == "prime"]
            state.carried[tp] = prune_primes([*old_primes, *facts.carried.get(tp, [])])

    def _wanted(self, key: tuple[str, str]) -> bool:
        name = ".".join(key)
        if self._include is not None and not self._include.fullmatch(name):
            return False
        return self._exclude is None or not self._exclude.fullmatch(name)


@dataclass
class _Facts:
    """What the driver needs of a batch's decoded records beyond the rows, gathered in one pass: the
    newest watermark and heartbeat per partition, schemas bootstrapped, messages to carry, and where
    each undecodable message is."""

    watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    heartbeats: dict[tuple[str, int], int] = field(default_factory=dict)
    bootstraps: list[TableSchema] = field(default_factory=list)
    carried: dict[tuple[str, int], list[tuple[CarriedMessage, str | None, str | None, int | None]]] = field(
        default_factory=dict)
    errors: list[str] = field(default_factory=list)
    sequences: dict[tuple[str, int], int] = field(default_factory=dict)  # the newest read, per partition

    @classmethod
    def of(cls, decoded: DataFrame, sequences: bool = False) -> _Facts:
        """The facts of ``decoded``; with ``sequences``, the newest change sequence per partition too."""
        from pyspark.sql import functions as F

        facts = cls()
        errors: list[tuple[str, int, int, str]] = []
        fields = ("kind", "topic", "partition", "offset", "commit_ts", "database", "table", "sequence", "event",
                  "timestamp_ms", "reason")
        wanted = decoded.filter("kind NOT IN ('row', 'ddl')").select(
            *fields,
            F.when(F.col("kind") == "carry", F.col("raw_key")).alias("raw_key"),
            F.when(F.col("kind") == "carry", F.col("raw_value")).alias("raw_value"))
        if sequences:
            newest = (decoded.filter("kind IN ('row', 'ddl') AND sequence IS NOT NULL").groupBy("topic", "partition")
                      .agg(F.max(F.col("sequence").cast("decimal(38,0)")).cast("string").alias("sequence"))
                      .select(F.lit("sequence").alias("kind"), "topic", "partition", "sequence"))
            wanted = wanted.unionByName(newest, allowMissingColumns=True)
        for row in wanted.collect():
            kind, tp = row["kind"], (row["topic"], row["partition"])
            if kind == "sequence":
                facts.sequences[tp] = int(row["sequence"])
            elif kind == "watermark":
                facts.watermarks[tp] = max(facts.watermarks.get(tp, 0), row["commit_ts"])
            elif kind == "heartbeat":
                facts.heartbeats[tp] = max(facts.heartbeats.get(tp, 0), row["commit_ts"])
            elif kind == "bootstrap":
                facts.bootstraps.append(schema_from_json(orjson.loads(row["event"])))
            elif kind == "carry":
                facts.carried.setdefault(tp, []).append(carried_from_record(row))
            elif kind == "error":
                errors.append((row["topic"], row["partition"], row["offset"],
                               f"{row['topic']}[{row['partition']}]@{row['offset']}: {row['reason']}"))
        facts.errors = [text for *_, text in sorted(errors)]  # in stream order: the first is the first read
        return facts


_SETTINGS = tuple(f.name for f in fields(ReplicateConfig) if f.name not in ("format", "format_options"))


class ChangeApplier:
    """Applies batches of a stream to Iceberg tables as ``cdclake replicate`` does: call it with a
    DataFrame and a batch id, or hand it to ``writeStream.foreachBatch``.

    A batch is raw records (from Spark's Kafka source, a file source,
    :func:`~cdclake.spark.records.read_records`) or the change records
    :func:`~cdclake.spark.records.decode_changes` made of them. Tables, changelog, dead letters and the job's
    state go to ``catalog`` as ``cdclake replicate`` lays them out (``namespace`` holds the job's own
    tables). ``app_id`` names the query: a batch id at or below the newest one applied for it is
    skipped, and one that failed half-way is finished when the query runs it again, so Spark's retries
    apply each change once. A new query (a new checkpoint) on the same state needs a new ``app_id``.

    Settings are :class:`~cdclake.spark.replicate.ReplicateConfig`'s (``catalog``, ``namespace``,
    ``include``, ``exclude``, ``table_mapping``, ``target_namespace``, ``on_bad_message``, ...) and the
    format's options, in ``options`` or as keyword arguments; an unknown name fails at once with the
    valid ones."""

    def __init__(self, spark: SparkSession, format: str, options: Mapping[str, Any] | None = None, *,
                 app_id: str = "cdclake", **settings: Any) -> None:
        codec = get_codec(format)
        config = {name: value for name, value in settings.items() if name in _SETTINGS}
        format_options = {name: value for name, value in settings.items() if name not in _SETTINGS}
        unknown = sorted(name for name in format_options if name.replace("_", "-") not in codec.options)
        if unknown:
            raise OptionError(f"ChangeApplier: unknown setting {', '.join(unknown)}; settings: "
                              f"{', '.join(_SETTINGS)}; {format} options: {', '.join(sorted(codec.options))}")
        resolved = codec.resolve(options, **format_options)
        self.config = ReplicateConfig(format, resolved, **config)
        self.app_id = app_id
        self._replicator = Replicator(spark, None, self.config)

    def __call__(self, batch: DataFrame, batch_id: int) -> BatchReport | None:
        """Apply batch ``batch_id``; None if it was applied before (or holds nothing)."""
        # A streaming query hands each batch in a session of its own (a clone): the batch's temporary
        # views, and so its MERGEs, live there.
        if batch.sparkSession is not self._replicator.spark:
            self._replicator = Replicator(batch.sparkSession, None, self.config)
        return self._replicator.apply_query_batch(batch, batch_id, self.app_id)


def _planned_by(state: JobState) -> str:
    if state.plan_stream is None:
        return "planned by cdclake replicate"
    app_id, batch_id = state.plan_stream
    return f"of query {app_id!r} (its batch id {batch_id})"


def _check_not_a_query_batch(state: JobState) -> None:
    """A batch a streaming query handed in can only be finished by that query: its records are not
    the source's to read again."""
    if state.plan_stream is not None:
        raise OptionError(f"the state holds batch {state.batch + 1} {_planned_by(state)}, interrupted: "
                          "restart that query to finish it before running cdclake replicate on this state")


def _register(state: JobState, upstream: tuple[str, str], known: TableState | None, resolved: int | None) -> None:
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


def _not_made_yet(schema: TableSchema, changes: list[SchemaChange]) -> list[SchemaChange]:
    """The column changes ``schema`` does not show yet: a DDL delivered again (at-least-once) or a
    column its rows brought in before the ADD COLUMN arrived is not made twice."""
    names = {c.name.lower() for c in schema.columns}
    kept: list[SchemaChange] = []
    for change in changes:
        if isinstance(change, AddColumn) and change.column.name.lower() in names:
            continue
        if isinstance(change, DropColumn) and change.name.lower() not in names:
            continue
        if isinstance(change, RenameColumn) and (change.old.lower() not in names or change.new.lower() in names):
            continue
        kept.append(change)
        names = {c.name.lower() for c in (schema_after(schema, kept) or schema).columns}
    return kept


def status(spark: SparkSession, catalog: str = "lake", namespace: str = "cdclake",
           source: Source | None = None) -> dict[str, Any]:
    """Per table the applied resolved ts, rows and last commit; per partition the committed offset and
    (with ``source``) the lag."""
    state, _ = load_state(spark, catalog, namespace)
    extents = source.extents() if source is not None else {}
    tables = []
    for (database, table), known in sorted(state.tables.items()):
        last = spark.sql(f"SELECT committed_at, summary FROM {known.lake_table}.snapshots "
                         "ORDER BY committed_at DESC LIMIT 1").collect()
        rows = spark.table(known.lake_table).count()
        tables.append({"upstream": f"{database}.{table}", "lake_table": known.lake_table, "rows": rows,
                       "applied_ts": known.applied_ts,
                       "last_commit": last[0]["committed_at"].isoformat() if last else None})
    partitions = []
    for (topic, partition), position in sorted(state.positions.items()):
        extent = extents.get((topic, partition))
        partitions.append({"topic": topic, "partition": partition, "offset": position.next_offset,
                           "watermark": position.watermark,
                           "lag": None if extent is None else extent.high - position.next_offset})
    return {"batch": state.batch, "tables": tables, "partitions": partitions}
