"""The transcode job: a source's stream laid out again in another format, batch after batch, on Spark.

One batch (:meth:`Transcoder.step`):

1. **Plan** the next ranges of the source toward each partition's end (at most ``max_batch_records``
   new records), each started back where its partition has changes still to emit (``resume``), and
   save the plan with each target partition's end in the progress file before anything is written.
2. **Read** the ranges on the executors (:func:`cdclake.transcode.records.read_records`, one task per
   range): records of changes (already split and dispatched to their target partition), watermarks,
   schemas, rows waiting for their schema, dead letters.
3. **Resolve** on the driver, from the few records that are not changes: how far the batch goes
   (:func:`cdclake.transcode.resolution.resolve`), which watermarks (or heartbeats) it emits, where each
   source partition resumes.
4. **Lay out** on the executors: the changes the batch emits, shuffled to their target partition
   (a DDL, a watermark, a schema to every one; a row's stub to every other one when the layout counts
   every row), sorted, laid out and encoded by the target's producer rules
   (:func:`cdclake.transcode.layout.lay_out`), and written by the task of that partition, which first
   skips what an interrupted run of the same batch had written (the plan says where the partition ended).
5. **Commit** the progress after the output is flushed: resume offsets, marks, schema messages,
   and what the producer rules remember.

A crash anywhere re-runs the batch from its saved plan over the same ranges and the same progress, so
it lays out the same messages and writes only those not yet written: the target gets each message
once, provided nothing else writes to it. Without the plan (a progress file lost), the whole stream
would be transcoded again: at-least-once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.errors import OptionError
from cdclake.ordering.bad_messages import DEAD_LETTER, check_bad_message_policy, stop_at_bad_message
from cdclake.producer import Router
from cdclake.sources.ranges import OffsetRange, PartitionExtent, Source, plan_ranges
from cdclake.spark.batches import run_batches
from cdclake.spark.frames import local_frame
from cdclake.spark.tasks import one_task_each
from cdclake.transcode.endpoints import Sink
from cdclake.transcode.layout import LayoutRecord, lay_out
from cdclake.transcode.records import (
    CHANGE,
    ERROR,
    HEARTBEAT,
    HELD,
    ORDER,
    PENDING,
    POINT_RANK,
    PRIME,
    RECORD_DDL,
    RECORD_FIELDS,
    SCHEMA,
    WATERMARK,
    ReadTask,
    read_records,
)
from cdclake.transcode.resolution import BatchFacts, Resolution, point_records, resolve_batch
from cdclake.transcode.spec import TranscodeError, TranscodeSpec
from cdclake.transcode.state import (
    DeadLetter,
    PartitionProgress,
    Plan,
    Prime,
    Progress,
    dead_letter_of,
    kept_primes,
    prime_of,
    write_dead_letters,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_READ = "read"  # a facts row: the newest change ts read on a partition
_LAYOUT_DDL = ("`partition` int, `written` bigint, `laid_out` bigint, `changes` bigint, `duplicates` bigint, "
               "`router` string, `derived` string, `rejected` string")



@dataclass(frozen=True)
class TranscodeConfig:
    """What ``cdclake transcode`` does, whatever the source and the target."""

    spec: TranscodeSpec
    max_batch_records: int = 100_000
    on_bad_message: str = DEAD_LETTER

    def __post_init__(self) -> None:
        check_bad_message_policy(self.on_bad_message)
        if self.max_batch_records < 1:
            raise OptionError(f"max-batch-records={self.max_batch_records}: must be at least 1")


@dataclass
class BatchReport:
    """What one batch did, for the live display and the logs."""

    batch: int
    records: int = 0
    changes: int = 0
    duplicates: int = 0
    messages: int = 0
    dead_letters: int = 0
    mark: int = 0
    waiting: int = 0
    lag: dict[tuple[str, int], int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class _Facts:
    """The records of a batch that are not changes, gathered on the driver with the newest change ts of
    each partition: what :func:`~cdclake.transcode.resolution.resolve_batch` needs, schema messages, dead
    letters."""

    batch: BatchFacts = field(default_factory=BatchFacts)
    primes: dict[tuple[str, int], list[Prime]] = field(default_factory=dict)
    dead_letters: list[DeadLetter] = field(default_factory=list)

    @classmethod
    def of(cls, records: DataFrame, mark_kind: str) -> _Facts:
        from pyspark.sql import functions as F

        facts = cls()
        raw = F.col("kind").isin(PRIME, ERROR)
        fields = ("kind", "topic", "partition", "offset", "ts", "timestamp_ms", "database", "table", "version",
                  "reason")
        wanted = records.filter(F.col("kind").isin(mark_kind, PENDING, PRIME, ERROR)).select(
            *fields, F.when(raw, F.col("raw_key")).alias("raw_key"), F.when(raw, F.col("raw_value")).alias("raw_value"))
        newest = (records.filter(F.col("kind") == CHANGE).groupBy("topic", "partition").agg(F.max("ts").alias("ts"))
                  .select(F.lit(_READ).alias("kind"), "topic", "partition", "ts"))
        for row in wanted.unionByName(newest, allowMissingColumns=True).collect():
            kind, tp = row["kind"], (row["topic"], row["partition"])
            if kind == mark_kind:
                facts.batch.marks[tp] = max(facts.batch.marks.get(tp, row["ts"]), row["ts"])
                facts.batch.announced.append(row["ts"])
            elif kind == _READ:
                facts.batch.reads[tp] = row["ts"]
            elif kind == PENDING:
                facts.batch.waiting.append(row["ts"])
            elif kind == PRIME:
                facts.primes.setdefault(tp, []).append(prime_of(row.asDict()))
            else:
                facts.dead_letters.append(dead_letter_of(row.asDict()))
        return facts


class Transcoder:
    """Transcodes ``source`` into ``sink`` under ``config``, keeping its progress in ``state_dir``;
    :meth:`run` loops, :meth:`step` runs one batch."""

    def __init__(self, spark: SparkSession, source: Source, sink: Sink, config: TranscodeConfig,
                 state_dir: Path) -> None:
        self.spark, self.source, self.sink, self.config = spark, source, sink, config
        self.spec = config.spec
        self.state_dir = Path(state_dir)
        self._every_row = Router(self.spec.target).sees_every_row

    def run(self, once: bool = True, interval_s: float = 5.0, stop: threading.Event | None = None,
            on_batch: Callable[[BatchReport], None] | None = None) -> list[BatchReport]:
        """Batches until caught up (``once``), or until ``stop`` is set; a stop request waits for the
        batch under way to commit."""
        return run_batches(self.step, once, interval_s, stop, on_batch)

    def step(self) -> BatchReport | None:
        """One batch; None when the source had nothing new."""
        started = time.monotonic()
        progress = Progress.load(self.state_dir, self.spec.settings())
        extents = self.source.extents()
        if progress.plan is None:
            plan = self._plan(progress, extents)
            if plan is None:
                return None
            progress.plan = plan
            progress.save(self.state_dir)
        report = BatchReport(progress.plan.batch)
        self._run(progress, progress.plan, report)
        report.lag = {tp: extent.high - progress.partitions[tp].read_until for tp, extent in extents.items()
                      if tp in progress.partitions}
        report.seconds = time.monotonic() - started
        return report

    # --- one batch ------------------------------------------------------------------------------------

    def _plan(self, progress: Progress, extents: dict[tuple[str, int], PartitionExtent]) -> Plan | None:
        if len(extents) > self.config.max_batch_records:
            raise TranscodeError(f"max-batch-records={self.config.max_batch_records} is below the {len(extents)} "
                                 "source partitions: every partition must advance in every batch")
        for tp, extent in extents.items():
            progress.partitions.setdefault(tp, PartitionProgress(extent.low, extent.low))
        read_until = {tp: p.read_until for tp, p in progress.partitions.items()}
        new = {(r.topic, r.partition): r for r in plan_ranges(extents, read_until, self.config.max_batch_records)}
        if not new:
            return None
        ranges = []
        for tp, known in sorted(progress.partitions.items()):
            end = new[tp].end if tp in new else known.read_until
            if known.resume < end:  # again from its first change still to emit, then on
                ranges.append(OffsetRange(tp[0], tp[1], known.resume, end))
        return Plan(progress.batch + 1, ranges, self.sink.ends(self.spec.target.partitions),
                    {tp: extent.high for tp, extent in extents.items()})

    def _run(self, progress: Progress, plan: Plan, report: BatchReport) -> None:
        from pyspark import StorageLevel

        records = self._read(plan.ranges, progress).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            facts = _Facts.of(records, WATERMARK if self.spec.resolves else HEARTBEAT)
            self._stop_at_bad(plan.batch, facts.dead_letters)
            resolution = resolve_batch(self.spec, progress, facts.batch, plan.behind())
            resume = self._resume_offsets(records, resolution.mark)
            layouts = self._lay_out(records, progress, plan, resolution.mark, resolution.emit)
            rejected = [DeadLetter.from_json(obj) for layout in layouts for obj in orjson.loads(layout["rejected"])]
            write_dead_letters(self.state_dir, plan.batch, [*facts.dead_letters, *rejected])
            self._stop_at_bad(plan.batch, rejected)
            report.records = sum(r.size for r in plan.ranges)
            report.changes = sum(layout["changes"] for layout in layouts)
            report.duplicates = sum(layout["duplicates"] for layout in layouts)
            report.messages = sum(layout["laid_out"] for layout in layouts)
            report.dead_letters = len(facts.dead_letters) + len(rejected)
            report.mark, report.waiting = resolution.mark, len(facts.batch.waiting)
            self._commit(progress, plan, facts, resolution, resume, layouts)
        finally:
            records.unpersist()

    def _read(self, ranges: list[OffsetRange], progress: Progress) -> DataFrame:
        """The records of ``ranges``, read on the executors, one task per range."""
        tasks = [ReadTask(r, tuple(prime.message for prime in progress.primes.get((r.topic, r.partition), [])),
                          progress.partitions[(r.topic, r.partition)].read_until) for r in ranges]
        source, spec = self.source, self.spec
        return one_task_each(self.spark, tasks, lambda mine: read_records(spec, source, mine), RECORD_DDL)

    def _resume_offsets(self, records: DataFrame, mark: int) -> dict[tuple[str, int], int]:
        """Per source partition, the first message with something the batch does not emit: a change above
        the mark, a row waiting for its schema, an update's held first half."""
        from pyspark.sql import functions as F

        undone = F.col("kind").isin(PENDING, HELD) | ((F.col("kind") == CHANGE) & (F.col("ts") > mark))
        rows = records.filter(undone).groupBy("topic", "partition").agg(F.min("offset").alias("resume")).collect()
        return {(row["topic"], row["partition"]): row["resume"] for row in rows}

    def _lay_out(self, records: DataFrame, progress: Progress, plan: Plan, mark: int, points: list[int]
                 ) -> list[dict[str, Any]]:
        """Lay out, encode and write each target partition's share of the batch; what each task did."""
        from pyspark.sql import functions as F

        partitions = self.spec.target.partitions
        changes = records.filter((F.col("kind") == CHANGE) & self._emitted(progress, mark))
        point_rows = [(ts, POINT_RANK, "", "", -1, -1, 0, 0, -1, None, payload)
                      for ts, payload in point_records(self.spec, points)]
        columns = ["ts", "rank", "sequence", "topic", "partition", "offset", "index", "piece", "target", "identity",
                   "payload"]
        types = dict(RECORD_FIELDS)
        point_frame = local_frame(self.spark, point_rows, [(name, types[name]) for name in columns])
        everywhere = (changes.filter(F.col("target") < 0).select(*columns)
                      .unionByName(records.filter(F.col("kind") == SCHEMA).select(*columns))
                      .unionByName(point_frame))
        destinations = self.spark.range(partitions).select(F.col("id").cast("int").alias("dest"))
        shares = (changes.filter(F.col("target") >= 0).select(F.col("target").alias("dest"), *columns)
                  .unionByName(everywhere.crossJoin(destinations)))
        if self._every_row:
            stubs = (changes.filter(F.col("target") >= 0).crossJoin(destinations)
                     .filter(F.col("dest") != F.col("target"))
                     .select("dest", *[F.col("stub").alias("payload") if c == "payload" else c for c in columns]))
            shares = shares.unionByName(stubs)
        ordered = shares.repartition(partitions, "dest").sortWithinPartitions("dest", *ORDER)
        spec, sink, ends = self.spec, self.sink, plan.target_ends
        router, derived = progress.router, progress.derived

        def write(batches: Iterable[Any]) -> Iterator[Any]:
            import pyarrow as pa

            yield from _write_partitions(spec, sink, ends, router, derived, batches, pa)

        return [row.asDict() for row in ordered.mapInArrow(write, _LAYOUT_DDL).collect()]

    def _emitted(self, progress: Progress, mark: int) -> Column:
        """:func:`cdclake.transcode.resolution.emitted` as a column."""
        from pyspark.sql import functions as F

        above = F.col("ts") > progress.mark
        if not self.spec.resolves:
            read_before = F.lit(False)
            for (topic, partition), known in progress.partitions.items():
                read_before = F.when((F.col("topic") == topic) & (F.col("partition") == partition),
                                     F.col("offset") < known.read_until).otherwise(read_before)
            above = above | ~read_before
        return (F.col("ts") <= mark) & above

    def _stop_at_bad(self, batch: int, letters: list[DeadLetter]) -> None:
        first = f"{letters[0].origin}: {letters[0].reason}" if letters else None
        stop_at_bad_message(self.config.on_bad_message, first,
                            f"batch {batch} stopped; a rerun runs it again from its plan")

    def _commit(self, progress: Progress, plan: Plan, facts: _Facts, resolution: Resolution,
                resume: dict[tuple[str, int], int], layouts: list[dict[str, Any]]) -> None:
        for planned in plan.ranges:
            tp = (planned.topic, planned.partition)
            known = progress.partitions[tp]
            known.read_until = planned.end
            known.resume = resume.get(tp, planned.end)
            progress.primes[tp] = kept_primes([*progress.primes.get(tp, []), *facts.primes.get(tp, [])])
        progress.note(facts.batch)
        progress.mark, progress.points = resolution.mark, resolution.later
        progress.point_mark = max([progress.point_mark, *resolution.emit])
        if layouts:
            first = min(layouts, key=lambda layout: layout["partition"])
            progress.router, progress.derived = orjson.loads(first["router"]), orjson.loads(first["derived"])
        progress.written += sum(layout["written"] for layout in layouts)
        progress.batch, progress.plan = plan.batch, None
        progress.save(self.state_dir)


def _write_partitions(spec: TranscodeSpec, sink: Sink, ends: dict[int, int], router: dict[str, Any] | None,
                      derived: dict[str, Any], batches: Iterable[Any], pa: Any) -> Iterator[Any]:
    """In a task: lay out each target partition found in its sorted input, write what the partition
    does not hold yet, and say what was done."""
    partition: int | None = None
    records: list[LayoutRecord] = []
    for batch in batches:
        columns = [batch.column(name).to_pylist() for name in ("dest", "ts", "rank", "sequence", "target",
                                                                  "identity", "payload")]
        for dest, *record in zip(*columns, strict=True):
            if dest != partition and partition is not None:
                yield _written(spec, sink, ends, router, derived, partition, records, pa)
                records = []
            partition = dest
            records.append(tuple(record))
    if partition is not None:
        yield _written(spec, sink, ends, router, derived, partition, records, pa)


def _written(spec: TranscodeSpec, sink: Sink, ends: dict[int, int], router: dict[str, Any] | None,
             derived: dict[str, Any], partition: int, records: list[LayoutRecord], pa: Any) -> Any:
    layout = lay_out(spec, partition, router, derived, records)
    # Only this partition's end: other tasks are writing the others, and a line being written is torn.
    already = sink.end(partition) - ends[partition]
    if already < 0:
        raise TranscodeError(f"{sink.topic}[{partition}] ends at {ends[partition] + already}, below {ends[partition]} "
                             "where it ended when this batch began: something truncated it")
    written = sink.write(layout.messages[already:]) if already < len(layout.messages) else 0
    return pa.RecordBatch.from_pylist([{
        "partition": partition, "written": written, "laid_out": len(layout.messages), "changes": layout.changes,
        "duplicates": layout.duplicates, "router": orjson.dumps(layout.router).decode(),
        "derived": orjson.dumps(layout.derived).decode(),
        "rejected": orjson.dumps([letter.to_json() for letter in layout.rejected]).decode(),
    }], schema=pa.schema([("partition", pa.int32()), ("written", pa.int64()), ("laid_out", pa.int64()),
                          ("changes", pa.int64()), ("duplicates", pa.int64()), ("router", pa.string()),
                          ("derived", pa.string()), ("rejected", pa.string())]))
