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
4. **Apply** per table (through the sink, :mod:`cdclake.sinks`), tables in parallel: DDLs cut its changes into
   segments (save those its rows pass, :mod:`cdclake.spark.segments`); each segment is one MERGE. The
   changelog and the dead letters get one append each.
5. **Commit** the new positions, watermarks, carried messages and pending changes in one state commit.

Every commit of steps 1–5 names its batch in the snapshot summary; a batch re-run after a crash skips
what was committed, so each change is applied once, whatever the point of the crash.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from cdclake.errors import OptionError
from cdclake.formats import get_codec
from cdclake.ordering.bad_messages import stop_at_bad_message
from cdclake.sinks import open_sink
from cdclake.sinks.base import Sink
from cdclake.sinks.iceberg.sink import IcebergSink
from cdclake.sources.ranges import OffsetRange, PaceTracker, PartitionExtent, Source, plan_ranges
from cdclake.spark import killpoints, records
from cdclake.spark.batches import run_batches
from cdclake.spark.changes import CHANGE_DDL, CHANGE_NAMES, DecodeTask, decode_tasks
from cdclake.spark.config import ReplicateConfig as ReplicateConfig  # where callers have long imported it from
from cdclake.spark.history import HistoryKeeper
from cdclake.spark.ordering import Facts, Ordering, change_records, net_changes
from cdclake.spark.planning import TablePlanner, TableWork, apply_lanes
from cdclake.spark.progress import JobState, Position, prune_primes
from cdclake.spark.refusals import RawReader, refuse_tables, with_raw_messages
from cdclake.spark.reporting import BatchReport as BatchReport  # where callers have long imported it from
from cdclake.spark.reporting import ProgressListener, ProgressTracker, counting, read_counter, watching
from cdclake.spark.session import session_settings
from cdclake.spark.table_writer import TableWriter
from cdclake.spark.tasks import one_task_each

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# A batch's decoded records are cached as plain column batches. Compressed, they took 40 % less memory,
# and building them cost about half as much as decoding the records did (Spark tries each scheme on every
# value): building the cache of Open Protocol's 1M events took 4.2 s compressed, 1.4 s not; Canal-JSON's
# 5.7 and 0.9 s. The net changes stay compressed: the MERGEs that read them took longer where they were
# not (BENCHMARKS.md).
UNCOMPRESSED_CACHE = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}
# A batch of at most this many records runs its queries with SMALL_BATCH_SETTINGS (_apply_batch).
SMALL_BATCH_RECORDS = 10_000
# A small batch's queries run without Spark's adaptive execution, which runs each shuffle stage as a job
# of its own, its query planned again after each (without it a small batch took ~9 % less CPU), and with
# one shuffle partition: a few thousand changes need no more, and each task costs the same whatever it
# holds (~14 % less wall time a batch, measured side by side; BENCHMARKS.md, "fixed cost").
SMALL_BATCH_SETTINGS = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "1"}


class Replicator:
    """Replicates ``source`` into the catalog's tables: :meth:`run` loops, :meth:`step` runs one batch
    it plans itself. :meth:`apply_query_batch` applies a batch a streaming query hands in instead (the
    engine of :class:`cdclake.spark.ChangeApplier`); ``source`` may then be None. ``on_progress`` hears
    each batch move on while it runs (:mod:`cdclake.spark.reporting`)."""

    def __init__(self, spark: SparkSession, source: Source | None, config: ReplicateConfig,
                 sink: Sink | None = None, on_progress: ProgressListener | None = None) -> None:
        self.spark, self.source, self.config = spark, source, config
        self.codec = get_codec(config.format)
        self.options = self.codec.resolve(config.format_options)
        self.ordering = Ordering(spark, self.codec.has_watermarks(self.options), self.codec.unique_sequences,
                                 config.include, config.exclude, config.schema_wait_s)
        self.naming = config.naming()
        self.sink = sink or _default_sink(spark, config)
        self.planner = TablePlanner(self.ordering, self.sink.changes_in_rows, config.evolution.unsupported_ddl)
        self.history = HistoryKeeper(self.sink, config.history, self.naming)
        self.table_writer = TableWriter(self.sink, self.history, self.naming, config)
        self._paces = PaceTracker()
        self._progress = ProgressTracker(on_progress)
        self._read_counter = read_counter(spark)
        self._laid_out = False
        self._upkeep_at = dict.fromkeys(("compacted", "expired"), time.monotonic())

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
        state, pending = self.sink.load_state()
        self._lay_out_at_start(state)
        batch = state.batch + 1
        recovering = bool(state.plan)
        extents = self.source.extents()
        if recovering:
            _check_not_a_query_batch(state)
            ranges = state.plan
        else:
            self._observe_paces(state)
            ranges = plan_ranges(extents, state.positions_map(), self.config.max_batch_records, self._paces.paces())
            tail = finishing and self.config.unresolved_tail == "apply" and self.ordering.watermarks
            if not ranges and not (tail and not pending.isEmpty()):
                return None
            state.plan = ranges
            self.sink.record_plan(ranges, batch, None)
            killpoints.reached("planned")
        report = BatchReport(batch)
        self._progress.start(batch, sum(r.size for r in ranges))
        # Nothing left to read while finishing: the tail above the resolved ts is applied if asked.
        apply_all = not ranges and finishing and self.config.unresolved_tail == "apply"
        decoded = self._decode(ranges, state)
        source = self.source
        assert source is not None, "checked above"
        self._apply_batch(state, pending, decoded, ranges, extents, batch, recovering, apply_all, report,
                          lambda needed: records.read_ranges(self.spark, source, needed))
        self._upkeep_if_due(state)
        return self._finished(report, state, extents, started)

    def _lay_out_at_start(self, state: JobState) -> None:
        """Once, before the job's first batch: the mirrors it has laid out as the job file asks now."""
        if self._laid_out:
            return
        for (database, table), known in state.tables.items():
            layout = self.config.layout_for(database, table)
            if layout is not None:
                self.sink.apply_layout(known.lake_table, known.schema, layout)
        self._laid_out = True

    def _observe_paces(self, state: JobState) -> None:
        """Tell the planner how far each partition has got, in the order the format carries."""
        for tp, position in state.positions.items():
            self._paces.observe(tp, position.next_offset,
                                position.watermark if self.ordering.watermarks else position.read_sequence)

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
        state, pending = self.sink.load_state()
        self._lay_out_at_start(state)
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
                    raise OptionError(f"the job's state holds batch {batch} "
                                      f"{_planned_by(state)}, interrupted: run that to its end first")
                ranges = state.plan
            else:
                ranges = records.ranges_of(frame)
                if not ranges and pending.isEmpty():
                    return None
                state.plan = ranges
                self.sink.record_plan(ranges, batch, (app_id, batch_id))
                killpoints.reached("planned")
            if changes:
                decoded = records.with_carried_decoded(frame, self.config.format, self.options, state.carried, ranges)
            else:
                decoded = records.decode_frame(frame, self.config.format, self.options, state.carried)
            extents = {(r.topic, r.partition): PartitionExtent(r.start, r.end) for r in ranges}
            state.streams[app_id] = batch_id
            report = BatchReport(batch)
            self._progress.start(batch, sum(r.size for r in ranges))
            # Raw records hold every message of the batch; change records carry no raw bytes to find again.
            self._apply_batch(state, pending, decoded, ranges, extents, batch, recovering, False, report,
                              None if changes else lambda needed: frame)
        finally:
            frame.unpersist()
        self._upkeep_if_due(state)
        return self._finished(report, state, extents, started)

    @staticmethod
    def _finished(report: BatchReport, state: JobState, extents: Mapping[tuple[str, int], PartitionExtent],
                  started: float) -> BatchReport:
        report.lag = {tp: extent.high - state.positions.get(tp, Position(extent.low)).next_offset
                      for tp, extent in extents.items()}
        report.seconds = time.monotonic() - started
        return report

    def _upkeep_if_due(self, state: JobState) -> None:
        """The sink's upkeep of the tables the job writes, between batches, each on its own clock: the
        tables compacted once per ``compact_every_s``, snapshots expired once per ``expire_snapshots_every_s``
        (after a compaction, so the files it replaced go once they are old enough)."""
        targets = [known.lake_table for known in state.tables.values()] + self.history.targets()
        if self._due("compacted", self.config.compact_every_s):
            self.sink.compact(targets)
        if self._due("expired", self.config.expire_snapshots_every_s):
            self.sink.maintain(targets)

    def _due(self, upkeep: str, every: float) -> bool:
        """Whether ``every`` seconds (0: never) have passed since ``upkeep`` last ran; if so, it runs now."""
        now = time.monotonic()
        if not every or now - self._upkeep_at[upkeep] < every:
            return False
        self._upkeep_at[upkeep] = now
        return True

    # --- one batch ------------------------------------------------------------------------------------

    def _apply_batch(self, state: JobState, pending: DataFrame, decoded: DataFrame, ranges: list[OffsetRange],
                     extents: Mapping[tuple[str, int], PartitionExtent], batch: int, recovering: bool,
                     apply_all: bool, report: BatchReport, reread: RawReader | None) -> None:
        """Apply ``decoded``, the change records of ``ranges`` (what :func:`decode_tasks` makes of them
        after the messages carried into them), and commit the state after batch ``batch``; ``reread``
        reads the batch's messages again, for dead letters made of change records."""
        from pyspark import StorageLevel

        # Spark takes the setting when a DataFrame is persisted, not when its cache is built.
        with session_settings(self.spark, UNCOMPRESSED_CACHE):
            # Deserialized, as Spark caches a DataFrame by default: its cached form is column batches
            # already, and PySpark's MEMORY_AND_DISK serializes those again (BENCHMARKS.md).
            cached = decoded.persist(StorageLevel.MEMORY_AND_DISK_DESER)
            # The pending changes too: each use of the batch's changes would read them from the sink again
            # (the Iceberg state table's scan planned anew; a database sink's rows, made by a Python worker).
            pending = pending.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        report.records = sum(r.size for r in ranges)
        small = report.records <= SMALL_BATCH_RECORDS
        try:
            with session_settings(self.spark, SMALL_BATCH_SETTINGS if small else {}):
                self._apply_cached(state, pending, cached, ranges, extents, batch, recovering, apply_all, report,
                                   reread)
        finally:
            cached.unpersist()
            pending.unpersist()

    def _apply_cached(self, state: JobState, pending: DataFrame, cached: DataFrame, ranges: list[OffsetRange],
                      extents: Mapping[tuple[str, int], PartitionExtent], batch: int, recovering: bool,
                      apply_all: bool, report: BatchReport, reread: RawReader | None) -> None:
        """What :meth:`_apply_batch` does once the batch's records and pending changes are cached."""
        self._read_counter.value = (0, 0)
        with watching(self._read_counter, self._progress):
            facts = Facts.of(cached, sequences=not self.ordering.watermarks,
                             candidates=change_records(cached).unionByName(pending))
        self._progress.ordering(facts.rows)
        for tp, (offset, mark) in facts.first_marks.items():
            # With where the batch ends (observed as the next batch starts), a pace after one batch.
            self._paces.observe(tp, offset + 1, mark)
        decoded = refuse_tables(cached, facts, self.naming, self.ordering.wanted)
        killpoints.reached("decoded")
        report.dead_letters = len(facts.errors)
        stop_at_bad_message(self.config.on_bad_message, next(iter(facts.errors), None),
                            f"nothing of batch {batch} was applied")
        self.ordering.advance_positions(state, facts, ranges, extents)
        resolved = None if apply_all else self.ordering.resolved_ts(state, facts)
        report.resolved_ts = resolved
        changes = self.ordering.selected(change_records(decoded).unionByName(pending))
        ready = self.ordering.ready(resolved, self.ordering.resolved_sequence(state, extents))
        # Each use of ``applicable`` (planning, changelog, net changes) filters the cached decoded
        # records again, which costs less than caching it too; where copies were found, it joins them away.
        applicable, copies = self.ordering.deduplicated(self.ordering.not_yet_applied(
            changes if ready is None else changes.filter(ready), state), facts.shared_kinds)
        try:
            self._apply_changes(state, applicable, decoded, facts, batch, recovering, resolved, report, reread)
        finally:
            if copies is not None:
                copies.unpersist()
        self._carry_on(state, facts, ranges)
        self.history.record(state)
        state.plan = []
        self._progress.committing()
        self.sink.commit(state, batch, None if ready is None else changes.filter(~ready).select(*CHANGE_NAMES))
        killpoints.reached("committed")

    def _apply_changes(self, state: JobState, applicable: DataFrame, decoded: DataFrame, facts: Facts, batch: int,
                       recovering: bool, resolved: int | None, report: BatchReport, reread: RawReader | None) -> None:
        """The changelog, the dead letters and every table's changes of the batch, written to the sink."""
        work, unfollowed = self.planner.plan_tables(applicable, facts, state, resolved)
        report.changes_applied = sum(s.changes for w in work.values() for s in w.segments.values())
        self._progress.applying(len(work))
        if report.changes_applied:
            self.sink.append_changelog(applicable, batch, recovering)
        killpoints.reached("changelog")
        dead = decoded.filter("kind = 'error'")
        if unfollowed:
            report.dead_letters += len(unfollowed)
            dead = dead.unionByName(self.planner.unfollowed_records(applicable, unfollowed))
        if facts.errors or unfollowed:
            self.sink.append_dead_letters(with_raw_messages(dead, reread), batch, recovering)
        net = self._net_changes(applicable, work)
        try:
            if report.changes_applied:  # a batch of DDLs and watermarks alone writes no table's rows
                self.sink.stage_changes(net)
            with self.history.batch(self.planner.segmented_rows(applicable, work), work, state.tables):
                self._apply_tables(state, work, net, batch, recovering, resolved, report)
        finally:
            net.unpersist()
        killpoints.reached("tables-applied")
        if not self.ordering.watermarks:
            self.ordering.remember_sequences(state, applicable)

    def _decode(self, ranges: list[OffsetRange], state: JobState) -> DataFrame:
        """The change records of ``ranges``, decoded on the executors, one task per range."""
        tasks = [DecodeTask(r, tuple(entry[0] for entry in state.carried.get((r.topic, r.partition), [])))
                 for r in ranges]
        source, format_name, options = self.source, self.config.format, dict(self.options)
        assert source is not None, "step() plans only with a source"
        work = counting(lambda mine: decode_tasks(source, format_name, options, mine), self._read_counter)
        return one_task_each(self.spark, tasks, work, CHANGE_DDL)

    # --- applying -------------------------------------------------------------------------------------

    def _net_changes(self, applicable: DataFrame, work: Mapping[tuple[str, str], TableWork]) -> DataFrame:
        """The net change per key of every table's segments (:func:`net_changes`), all tables in one
        shuffle rather than one per MERGE, and materialized: each MERGE reads its part."""
        from pyspark import StorageLevel

        rows = self.planner.segmented_rows(applicable, work)
        net = net_changes(rows, groups=("database", "table", "_segment")).persist(StorageLevel.MEMORY_AND_DISK_DESER)
        net.count()
        return net

    def _apply_tables(self, state: JobState, work: dict[tuple[str, str], TableWork], net: DataFrame,
                      batch: int, recovering: bool, resolved: int | None, report: BatchReport) -> None:
        lock = threading.Lock()

        def one(table_work: TableWork, steps_before: int) -> int:
            table = self.table_writer.write(state, table_work, net, batch, recovering, resolved, lock, steps_before)
            with lock:
                report.tables.update(table.touched)
                report.writes += table.writes
            self._progress.table_done(".".join(table_work.key))
            return table.step

        def lane(table_works: list[TableWork]) -> None:
            # One count of steps for the lane: a table renamed in the batch carries the steps it stored under
            # its old name (the copy's commit says so), and its work under the new name must number its
            # steps after those, or a re-run of the batch takes them for stored already and skips them.
            steps = 0
            for table_work in table_works:
                steps = one(table_work, steps)

        lanes = apply_lanes(work)
        parallel = min(self.config.parallel_tables, len(lanes))
        with self._shuffle_share(parallel), ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
            for future in [pool.submit(lane, table_works) for table_works in lanes]:
                future.result()

    def _shuffle_share(self, concurrent: int) -> contextlib.AbstractContextManager[None]:
        """While tables are applied, ``concurrent`` MERGEs side by side share the session's
        ``spark.sql.shuffle.partitions`` rather than each shuffling into all of them: more partitions
        only add tasks, and a data file and a delete file for each task that writes (BENCHMARKS.md:
        the bench's MERGEs took 10 % less time)."""
        key = "spark.sql.shuffle.partitions"
        before = self.spark.conf.get(key)
        assert before is not None, "a SQL setting has its default when unset"
        return session_settings(self.spark, {key: str(max(1, int(before) // max(1, concurrent)))})

    def _carry_on(self, state: JobState, facts: Facts, ranges: list[OffsetRange]) -> None:
        """The carried messages after this batch: the decoded partitions' new ones, plus their schema
        messages from before; partitions not read keep theirs."""
        for planned in ranges:
            tp = (planned.topic, planned.partition)
            old_primes = [entry for entry in state.carried.get(tp, []) if entry[0].role == "prime"]
            state.carried[tp] = prune_primes([*old_primes, *facts.carried.get(tp, [])])


def _default_sink(spark: SparkSession, config: ReplicateConfig) -> Sink:
    """The sink ``config.sink`` names, or Iceberg tables of ``config.catalog``; its own tables made."""
    if config.sink is not None:
        return open_sink(spark, config.sink, config.namespace)
    iceberg = IcebergSink(spark, config.catalog, config.namespace, config.write_mode, config.evolution)
    iceberg.prepare()
    return iceberg


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
