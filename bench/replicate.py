"""Replication end to end, in events per second, next to decoding alone and to a plain Iceberg append.

The workload is the simulator's (docs/workload.md): ten tables of every MySQL type family, about a
million row events in transactions of 1 to 9 rows (inserts, updates, some changing the key, deletes),
DDL mid-stream, laid out on eight partitions in one format (Canal-JSON with the TiDB extension unless
``--format`` says otherwise). The captured topic is generated once and cached under
``$XDG_CACHE_HOME/cdclake/bench`` (default ``~/.cache``), keyed by the workload, the format and the
source of the code that makes the bytes. In one Spark session (``local[2]``), in this order:

1. **Warm-up** (not timed): the first messages of each partition replicated into a scratch namespace,
   so that JVM class loading and code generation are not charged to whichever measure comes first.
2. **Decode only**: the pipeline's own decoding (``decode_tasks`` in ``mapInArrow``, one task per
   offset range) over the very ranges the replication plans, batch by batch, counted by kind: every
   record crosses Spark's Arrow path, nothing is kept or written. It runs again after 3 and 4, and the
   faster pass counts (the machine may be shared; a slow pass would flatter the pipeline).
3. **End to end from files**: ``Replicator.run(once=True)`` over the captured topic, into fresh tables.
4. **End to end from Kafka**: the same messages from a real broker: Apache Kafka 4.1.2 in KRaft mode,
   one node on 127.0.0.1 (``cdclake.localkafka.LocalKafka``, started for this leg and stopped after
   it), or the cluster of ``--bootstrap-servers``. The whole stream is produced once to a new topic of
   eight partitions (idempotent, uncompressed), before the replication and not part of its time (the
   produce time is reported apart), then ``Replicator.run(once=True)`` replicates it in one timed run,
   in batches of the same size as from files: the source is the only difference between the two runs.
5. **Plain append**: one more replication from files (not timed) keeps, for each of its MERGEs, the
   net change records it was given and the rows it inserts or updates (the net change per key, typed,
   deletes left out), both materialized; then each MERGE's rows are appended with
   ``writeTo(...).append()`` into a fresh table of its columns: as many statements as MERGEs, writing
   the same rows, a batch's tables in parallel as the replication applies them. Twice: typing the rows
   from the net change records as the MERGE types its source (so only the write differs: what the
   MERGE costs beyond it is finding and replacing the rows already there), and from the rows typed
   beforehand.

The pipeline's phases are timed by wrapping its functions for the run (``load_state``,
``record_plan``, ``Facts.of``, ``TablePlanner.plan_tables`` ...; ``cdclake.sinks.iceberg.tables.merge_changes``
for the MERGE statements), and Spark's event log tells which jobs each phase ran. MERGE time is the
wall time during which at least one MERGE was under way, since tables are applied in parallel; the
append's is measured the same way. Targets: end to end at least 0.5x the decode-only rate, and MERGE at
most 3x the plain append. Run from the repository root::

    python3 bench/replicate.py                    # one million events; prints and writes BENCHMARKS.md
    python3 bench/replicate.py --events 100000    # a quicker run of the same shape

This is a benchmark, not a test: nothing here asserts on time. It does check that every run applied
each row event once (the changelogs) and that Kafka and files left the same tables; ``--verify``
compares the files run with the simulator's oracle, value for value.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import hashlib
import itertools
import json
import os
import pickle
import platform
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from unittest import mock

from benchmarks_md import write_section  # bench/ is on the path when a script here runs

import cdclake.model
from cdclake.formats import get_codec
from cdclake.localkafka import KAFKA_BROKER, LocalKafka
from cdclake.model import Origin, RawMessage
from cdclake.sinks.iceberg import tables
from cdclake.sinks.iceberg.sink import IcebergSink
from cdclake.sources.captured import CapturedTopics
from cdclake.sources.kafka import KafkaTopics, create_topic
from cdclake.sources.ranges import OffsetRange, PartitionExtent, Source, plan_ranges
from cdclake.spark.changes import CHANGE_DDL, CarriedMessage, DecodeTask, decode_tasks
from cdclake.spark.jars import ICEBERG_VERSION
from cdclake.spark.ordering import Facts, Ordering
from cdclake.spark.planning import TablePlanner
from cdclake.spark.progress import prune_primes
from cdclake.spark.replicate import BatchReport, ReplicateConfig, Replicator
from cdclake.spark.session import build_session
from cdclake.spark.status import status as replicate_status
from cdclake.workload import Workload, WorkloadSpec, messages, produce_to_kafka, write_captured

ROOT = Path(__file__).resolve().parents[1]
SECTION_START = "<!-- bench/replicate.py: start -->"
SECTION_END = "<!-- bench/replicate.py: end -->"
END_TO_END_TARGET = 0.5  # end-to-end events/s over decode-only events/s, at least
MERGE_TARGET = 3.0  # MERGE seconds over plain-append seconds, at most

OPTIONS: dict[str, dict[str, Any]] = {
    "open": {},
    "canal-json": {"enable-tidb-extension": True},  # the only Canal-JSON a consumer can order
    "simple": {},
    "simple-avro": {},
    "dataworks": {},
}
SEED = 3
TABLES = 10
ROWS_PER_TRANSACTION = 9  # each transaction changes 1 to 9 rows: 5 on average
PARTITIONS = 8  # of the captured topic, and of the Kafka topic it is produced to
MASTER = "local[2]"
CATALOG = "lake"
WARM_UP_MESSAGES = 1_000  # per partition


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cdclake" / "bench"


# --- the stream ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapturedStream:
    """A captured topic of the workload, on disk."""

    root: Path
    topic: str
    format_name: str
    options: Mapping[str, Any]
    spec: WorkloadSpec
    messages: int
    bytes: int
    generated_in: float  # seconds, when it was generated (not by this run if cached)

    @property
    def source(self) -> CapturedTopics:
        return CapturedTopics(self.root, [self.topic])


def workload_spec(events: int) -> WorkloadSpec:
    """About ``events`` row changes over ten tables (a transaction has 5 on average)."""
    transactions = max(1, round(events / ((1 + ROWS_PER_TRANSACTION) / 2)))
    return WorkloadSpec(seed=SEED, tables=TABLES, transactions=transactions, rows_per_transaction=ROWS_PER_TRANSACTION)


def _code_digest() -> str:
    """The source of what makes the stream's bytes: a change to it must not reuse an old capture."""
    package = Path(cdclake.model.__file__).parent
    files = sorted([*package.glob("workload/*.py"), *package.glob("formats/**/*"), package / "model.py",
                    package / "types.py", package / "sources/captured.py"])
    digest = hashlib.sha256()
    for path in files:
        if path.is_file():
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def prepared_stream(format_name: str, events: int, cache: Path) -> CapturedStream:
    """The captured topic of the workload in ``format_name``, from the cache or generated into it."""
    spec, options = workload_spec(events), OPTIONS[format_name]
    key = json.dumps({"format": format_name, "options": options, "spec": asdict(spec), "partitions": PARTITIONS,
                      "code": _code_digest()}, sort_keys=True, default=str)
    directory = cache / f"{format_name}-{spec.transactions}tx-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    description = directory / "stream.json"
    if not description.exists():
        shutil.rmtree(directory, ignore_errors=True)  # an interrupted generation
        topic = "cdclake"
        print(f"generating {format_name} for {spec} into {directory} ...", flush=True)
        started = time.perf_counter()
        written = write_captured(messages(Workload(spec), format_name, options, partitions=PARTITIONS, topic=topic),
                                 directory / "topic", topic)
        size = sum(p.stat().st_size for p in (directory / "topic").rglob("*.jsonl"))
        facts = {"topic": topic, "messages": written, "bytes": size, "seconds": time.perf_counter() - started,
                 "key": json.loads(key)}
        description.write_text(json.dumps(facts, indent=2), encoding="utf-8")  # last: marks it complete
    facts = json.loads(description.read_text(encoding="utf-8"))
    return CapturedStream(directory / "topic", facts["topic"], format_name, options, spec, facts["messages"],
                          facts["bytes"], facts["seconds"])


def batch_plans(extents: Mapping[tuple[str, int], PartitionExtent], max_records: int) -> list[list[OffsetRange]]:
    """The ranges of each batch, as the replication plans them from the start."""
    plans: list[list[OffsetRange]] = []
    positions: dict[tuple[str, int], int] = {}
    while ranges := plan_ranges(extents, positions, max_records):
        plans.append(ranges)
        positions.update({(r.topic, r.partition): r.end for r in ranges})
    return plans


class Prefix:
    """The first ``per_partition`` records of each partition of ``source``: the warm-up's source."""

    def __init__(self, source: Source, per_partition: int) -> None:
        self.source, self.per_partition = source, per_partition

    def extents(self) -> dict[tuple[str, int], PartitionExtent]:
        return {tp: PartitionExtent(e.low, min(e.high, e.low + self.per_partition))
                for tp, e in self.source.extents().items()}

    def read(self, offset_range: OffsetRange) -> Iterator[Any]:
        return self.source.read(offset_range)


# --- timing the pipeline's phases ------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    phase: str
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


# (phase, owner, attribute): the functions a batch spends its time in, in the order a batch calls them.
# Each is called once per batch except MERGE (once per table and segment, inside "apply tables").
PHASES: tuple[tuple[str, Any, str], ...] = (
    ("load state", IcebergSink, "load_state"),
    ("record plan", IcebergSink, "record_plan"),
    ("decode + facts", Facts, "of"),
    ("dedupe", Ordering, "deduplicated"),
    ("plan tables", TablePlanner, "plan_tables"),  # the first use of the deduplicated changes
    ("changelog", IcebergSink, "append_changelog"),
    ("net changes", Replicator, "_net_changes"),
    ("apply tables", Replicator, "_apply_tables"),
    ("state commit", IcebergSink, "commit"),
)
MERGE = ("MERGE", tables, "merge_changes")
STEP = ("step", Replicator, "step")


class Timeline:
    """Wall-clock intervals of the pipeline's functions, recorded by wrapping them while it runs."""

    def __init__(self) -> None:
        self.intervals: list[Interval] = []
        self._lock = threading.Lock()

    def _timed(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.time()  # the epoch, as Spark's event log and Iceberg's snapshots have it
            try:
                return function(*args, **kwargs)
            finally:
                with self._lock:
                    self.intervals.append(Interval(phase, start, time.time()))

        return timed

    @contextlib.contextmanager
    def recording(self) -> Iterator[Timeline]:
        with contextlib.ExitStack() as stack:
            for phase, owner, name in (*PHASES, MERGE, STEP):
                original = getattr(owner, name)
                wrapper = self._timed(phase, original)
                # Facts.of is a classmethod: the bound original stays bound, the wrapper must not bind again.
                replacement = staticmethod(wrapper) if isinstance(owner.__dict__[name], classmethod) else wrapper
                stack.enter_context(mock.patch.object(owner, name, replacement))
            yield self

    def of(self, phase: str, within: Interval | None = None) -> list[Interval]:
        return [i for i in self.intervals if i.phase == phase
                and (within is None or (within.start <= i.start and i.end <= within.end))]


@dataclass
class StepTimes:
    """One step of a run: its report (None for the last, which found nothing to read) and phases."""

    report: BatchReport | None
    seconds: float
    phases: dict[str, float]
    merges: int
    merge_seconds: float  # wall time with a MERGE under way


def step_times(timeline: Timeline, reports: Sequence[BatchReport]) -> list[StepTimes]:
    """The run's steps in order, each with its report: a step that decoded ran a batch and reported it (the
    last step of a run finds nothing to read and reports nothing)."""
    remaining = iter(reports)
    found = []
    for step in sorted(timeline.of("step"), key=lambda i: i.start):
        phases = {phase: sum(i.seconds for i in timeline.of(phase, step)) for phase, _, _ in PHASES}
        report = next(remaining) if timeline.of("decode + facts", step) else None
        merges = timeline.of("MERGE", step)
        found.append(StepTimes(report, step.seconds, phases, len(merges), union_seconds(merges)))
    return found


# --- the measures ----------------------------------------------------------------------------------


@dataclass
class DecodeResult:
    seconds: float
    kinds: dict[str, int]

    @property
    def row_events(self) -> int:
        return self.kinds.get("row", 0)


def _decode_frame(spark: Any, source: Source, format_name: str, options: Mapping[str, Any],
                  tasks: Sequence[DecodeTask]) -> Any:
    """The change records of ``tasks``, decoded on the executors exactly as ``Replicator._decode`` does."""
    rows = [(index, pickle.dumps(task)) for index, task in enumerate(tasks)]
    task_rdd = spark.sparkContext.parallelize(rows, max(1, len(rows)))
    task_frame = spark.createDataFrame(task_rdd, "task int, payload binary")

    def decode(batches: Iterable[Any]) -> Iterator[Any]:
        import pickle

        mine = [pickle.loads(payload) for arrow in batches for payload in arrow.column("payload").to_pylist()]
        yield from decode_tasks(source, format_name, options, mine)

    return task_frame.mapInArrow(decode, CHANGE_DDL)


Carried = dict[tuple[str, int], list[tuple[CarriedMessage, str | None, str | None, int | None]]]


def _carried_on(frame: Any, carried: Carried, ranges: Sequence[OffsetRange]) -> Carried:
    """The messages the next batch's decoders get, as the replication carries them (not timed)."""
    new: Carried = {}
    for row in frame.filter("kind = 'carry'").collect():
        message = RawMessage(row["raw_key"], row["raw_value"],
                             Origin(topic=row["topic"], partition=row["partition"], offset=row["offset"]),
                             row["timestamp_ms"])
        version = int(row["sequence"]) if row["sequence"] is not None else None
        new.setdefault((row["topic"], row["partition"]), []).append(
            (CarriedMessage(row["reason"], message), row["database"], row["table"], version))
    result = dict(carried)
    for planned in ranges:
        tp = (planned.topic, planned.partition)
        old_primes = [entry for entry in carried.get(tp, []) if entry[0].role == "prime"]
        result[tp] = prune_primes([*old_primes, *new.get(tp, [])])
    return result


def decode_only(spark: Any, stream: CapturedStream, plans: Sequence[Sequence[OffsetRange]]) -> DecodeResult:
    """Each batch's ranges decoded in one Spark job and counted by kind; the jobs' time summed."""
    options = dict(get_codec(stream.format_name).resolve(stream.options))
    kinds: dict[str, int] = {}
    carried: Carried = {}
    seconds = 0.0
    for ranges in plans:
        tasks = [DecodeTask(r, tuple(entry[0] for entry in carried.get((r.topic, r.partition), []))) for r in ranges]
        frame = _decode_frame(spark, stream.source, stream.format_name, options, tasks)
        start = time.perf_counter()
        counted = frame.groupBy("kind").count().collect()
        seconds += time.perf_counter() - start
        for row in counted:
            kinds[row["kind"]] = kinds.get(row["kind"], 0) + row["count"]
        if any(row["kind"] == "carry" for row in counted):
            carried = _carried_on(frame, carried, ranges)
    return DecodeResult(seconds, kinds)


@dataclass
class RunResult:
    """One end-to-end replication."""

    name: str  # its namespaces' prefix
    label: str
    how: str
    config: ReplicateConfig
    setup_seconds: float  # the Replicator's construction: state, changelog and dead-letter tables
    timeline: Timeline
    steps: list[StepTimes]
    produce_seconds: float = 0.0  # Kafka: filling the topic before the run, not timed
    broker: str = ""  # Kafka: the cluster it was produced to and read from

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def batches(self) -> list[StepTimes]:
        return [s for s in self.steps if s.report is not None]

    @property
    def merge_seconds(self) -> float:
        return sum(s.merge_seconds for s in self.steps)

    @property
    def merges(self) -> int:
        return sum(s.merges for s in self.steps)


def _config(stream: CapturedStream, name: str, max_batch_records: int) -> ReplicateConfig:
    return ReplicateConfig(stream.format_name, stream.options, catalog=CATALOG, namespace=f"{name}_cdclake",
                           target_namespace=f"{name}_{{database}}", max_batch_records=max_batch_records)


def replicate_once(spark: Any, stream: CapturedStream, name: str, max_batch_records: int,
                   source: Source | None = None, label: str = "files") -> RunResult:
    """``Replicator.run(once=True)`` from ``source`` (the captured topic unless given) into fresh tables."""
    config = _config(stream, name, max_batch_records)
    timeline = Timeline()
    with timeline.recording():
        start = time.perf_counter()
        replicator = Replicator(spark, source or stream.source, config)
        setup = time.perf_counter() - start
        reports = replicator.run(once=True)
    return RunResult(name, label, "`Replicator.run(once=True)`", config, setup, timeline,
                     step_times(timeline, reports))


def replicate_kafka(spark: Any, stream: CapturedStream, name: str, max_batch_records: int,
                    bootstrap_servers: str | None) -> RunResult:
    """The whole stream produced to a new topic (not timed), then replicated from it in one run, in batches
    of ``max_batch_records`` as from files. The broker is ``bootstrap_servers``', else a local one of its own
    for the run."""
    with contextlib.ExitStack() as stack:
        if bootstrap_servers is None:
            local = stack.enter_context(LocalKafka())
            bootstrap_servers = local.bootstrap
            broker = (f"Apache Kafka {KAFKA_BROKER.rsplit(':', 1)[1]} in KRaft mode, one node on "
                      f"{local.bootstrap.rsplit(':', 1)[0]} started for the run (`cdclake.localkafka.LocalKafka`)")
        else:
            broker = f"the cluster of `--bootstrap-servers {bootstrap_servers}`"
        kafka = {"bootstrap.servers": bootstrap_servers}
        topic = f"{stream.topic}-bench-{time.strftime('%Y%m%d%H%M%S')}"
        create_topic(kafka, topic, PARTITIONS)
        start = time.perf_counter()
        produced = produce_to_kafka(itertools.chain.from_iterable(
            stream.source.read(OffsetRange(stream.topic, partition, extent.low, extent.high))
            for (_, partition), extent in sorted(stream.source.extents().items())), kafka, topic)
        produce_seconds = time.perf_counter() - start
        print(f"produced to Kafka: {produced:,} messages in {produce_seconds:,.1f} s (not timed), topic {topic} on "
              f"{bootstrap_servers}", flush=True)
        source = KafkaTopics(kafka, names=[topic])
        # Every message at its captured offset, so that the batches are the files' batches.
        held = {partition: extent for (_, partition), extent in source.extents().items()}
        captured = {partition: extent for (_, partition), extent in stream.source.extents().items()}
        if held != captured:
            raise SystemExit(f"Kafka topic {topic} holds {held}, not the captured topic's {captured}")
        run = replicate_once(spark, stream, name, max_batch_records, source, label="Kafka")
    run.produce_seconds, run.broker = produce_seconds, broker
    return run


@dataclass
class AppendResult:
    seconds: float  # wall time of the appends, tables in parallel within a batch
    statements: int
    rows: int


@dataclass(frozen=True)
class NetRows:
    """The rows one MERGE of the run wrote: its batch, its lake table, and its net inserts and updates."""

    batch: int
    lake_table: str
    rows: Any  # a checkpointed DataFrame of the table's columns
    records: Any  # the net change records the MERGE was given, checkpointed
    schema: Any
    whole_images: bool

    def typed_at_append(self) -> Any:
        """The rows typed from the net change records, as the MERGE types its source."""
        return tables.upserted_rows(self.records, self.schema, self.whole_images)


def net_rows_of_merges(spark: Any, stream: CapturedStream, max_batch_records: int) -> list[NetRows]:
    """A replication of the stream (not timed) that keeps, for each MERGE, the rows it inserts or updates
    (the net change per key, typed as the MERGE's source, deletes left out) and the net change records
    it was given, both materialized."""
    kept: list[NetRows] = []
    lock = threading.Lock()
    merge = tables.merge_changes

    def merge_and_keep(spark: Any, ident: str, schema: Any, net: Any, properties: Mapping[str, str],
                       whole_images: bool = False) -> None:
        merge(spark, ident, schema, net, properties, whole_images)
        # Checkpointed, not persisted: a persisted plan would be recomputed, decoding included, once the
        # batch unpersists the frames it was built from.
        rows = tables.upserted_rows(net, schema, whole_images).localCheckpoint(eager=True)
        records = net.localCheckpoint(eager=True)
        with lock:
            kept.append(NetRows(int(properties[tables.BATCH_PROPERTY]), ident, rows, records, schema, whole_images))

    with mock.patch.object(tables, "merge_changes", merge_and_keep):
        Replicator(spark, stream.source, _config(stream, "netrows", max_batch_records)).run(once=True)
    return kept


def plain_append(spark: Any, merges: Sequence[NetRows], name: str, parallel: int, typing: bool) -> AppendResult:
    """Each MERGE's rows appended into a fresh table of its columns, one append per MERGE: the same
    statements writing the same rows, without finding the rows they replace. A batch's appends run
    ``parallel`` at a time, as the replication applies tables; batches one after the other. With
    ``typing`` each append types its rows from the MERGE's net change records, as the MERGE does; else
    it writes the rows typed beforehand."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS `{CATALOG}`.`{name}`")
    intervals = []
    for batch in sorted({merged.batch for merged in merges}):
        jobs = []
        for index, merged in enumerate(m for m in merges if m.batch == batch):
            target = f"`{CATALOG}`.`{name}`.`b{batch}_{index}`"
            merged.rows.limit(0).writeTo(target).using("iceberg").tableProperty("format-version", "2").create()
            jobs.append((merged.typed_at_append() if typing else merged.rows, target))
        start = time.time()
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            for future in [pool.submit(lambda job: job[0].writeTo(job[1]).append(), job) for job in jobs]:
                future.result()
        intervals.append(Interval("append", start, time.time()))
    written = sum(merged.rows.count() for merged in merges)
    return AppendResult(union_seconds(intervals), len(merges), written)


# --- checks ----------------------------------------------------------------------------------------


def lake_tables(spark: Any, run: RunResult) -> dict[str, tuple[str, int]]:
    """upstream ``database.table`` to (lake table, rows), as the run's state knows them."""
    found = replicate_status(spark, run.config.catalog, run.config.namespace)["tables"]
    return {t["upstream"]: (t["lake_table"], t["rows"]) for t in found}


def check_runs(spark: Any, runs: Sequence[RunResult], row_events: int) -> None:
    """Every run applied each row event once and left the same tables, or its rate means nothing."""
    tables = {}
    for run in runs:
        changelog = spark.table(f"`{CATALOG}`.`{run.config.namespace}`.`changelog`").count()
        if changelog != row_events:
            raise SystemExit(f"{run.name}: the changelog holds {changelog} changes, the stream {row_events} row events")
        tables[run.name] = {upstream: rows for upstream, (_, rows) in lake_tables(spark, run).items()}
    first, *others = runs
    for run in others:
        if tables[run.name] != tables[first.name]:
            raise SystemExit(f"{run.name} and {first.name} left different tables: {tables[run.name]} != "
                             f"{tables[first.name]}")


def verify_with_oracle(spark: Any, stream: CapturedStream, run: RunResult) -> None:
    from cdclake.spark.verify import compare_tables

    expected = Workload(stream.spec).oracle().carried(stream.format_name, get_codec(stream.format_name).resolve(
        stream.options)).tables
    names = {tuple(upstream.split(".", 1)): lake for upstream, (lake, _) in lake_tables(spark, run).items()}
    comparisons = compare_tables(spark, expected, lambda database, table: names[(database, table)])
    differing = [c for c in comparisons if not c.equal]
    if differing:
        raise SystemExit(f"{run.name}: tables differ from the upstream: {differing}")
    print(f"verified: the {len(comparisons)} tables of {run.name} equal the upstream's, value for value")


# --- where a batch's time goes: Spark jobs and Iceberg commits -------------------------------------


@dataclass
class SparkActivity:
    """What Spark's event log says the session did: its jobs (submitted to completed) and its tasks
    (launched to finished, with the executor's run time)."""

    jobs: list[Interval] = field(default_factory=list)
    tasks: list[tuple[Interval, float]] = field(default_factory=list)


def spark_activity(log_dir: Path) -> SparkActivity:
    activity = SparkActivity()
    submitted: dict[int, float] = {}
    for log in log_dir.iterdir():
        with log.open(encoding="utf-8") as lines:
            for line in lines:
                event = json.loads(line)
                kind = event["Event"]
                if kind == "SparkListenerJobStart":
                    submitted[event["Job ID"]] = event["Submission Time"] / 1000
                elif kind == "SparkListenerJobEnd" and event["Job ID"] in submitted:
                    activity.jobs.append(Interval("job", submitted[event["Job ID"]], event["Completion Time"] / 1000))
                elif kind == "SparkListenerTaskEnd":
                    info, metrics = event["Task Info"], event.get("Task Metrics") or {}
                    task = Interval("task", info["Launch Time"] / 1000, info["Finish Time"] / 1000)
                    activity.tasks.append((task, metrics.get("Executor Run Time", 0) / 1000))
    return activity


def commit_times(spark: Any, run: RunResult) -> list[float]:
    """When each Iceberg commit of the run's tables (its own and its mirrors) was made, epoch seconds."""
    namespaces = [row[0] for row in spark.sql(f"SHOW NAMESPACES IN `{CATALOG}`").collect()
                  if row[0].startswith(f"{run.name}_")]
    times = []
    for namespace in namespaces:
        for table in spark.sql(f"SHOW TABLES IN `{CATALOG}`.`{namespace}`").collect():
            snapshots = f"`{CATALOG}`.`{namespace}`.`{table['tableName']}`.snapshots"
            rows = spark.sql(f"SELECT unix_millis(committed_at) FROM {snapshots}").collect()
            times += [row[0] / 1000 for row in rows]
    return times


def _segments(intervals: Iterable[Interval]) -> list[tuple[float, float]]:
    """The intervals merged into disjoint segments."""
    merged: list[tuple[float, float]] = []
    for interval in sorted(intervals, key=lambda i: i.start):
        if merged and interval.start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], interval.end))
        else:
            merged.append((interval.start, interval.end))
    return merged


def union_seconds(intervals: Iterable[Interval]) -> float:
    """Time during which at least one of the intervals was under way."""
    return sum(end - start for start, end in _segments(intervals))


def _overlap(first: list[tuple[float, float]], second: list[tuple[float, float]]) -> float:
    total = 0.0
    for start, end in first:
        for other_start, other_end in second:
            total += max(0.0, min(end, other_end) - max(start, other_start))
    return total


def _within(moment: float, segments: list[tuple[float, float]], slack: float = 0.001) -> bool:
    return any(start - slack <= moment <= end + slack for start, end in segments)


def overhead_table(run: RunResult, activity: SparkActivity, commits: Sequence[float]) -> str:
    """Per phase of the run: its Spark jobs, its tasks' run time, its Iceberg commits, and the time when no
    job ran (the driver planning queries, committing, or waiting on Py4J)."""
    lines = ["| phase | calls | seconds | Spark jobs | s with a job running | task s (run time) | Iceberg commits | "
             "s with no job running |", "| --- |" + " ---: |" * 7]
    phases = [name for name, _, _ in PHASES]
    phases.insert(phases.index("apply tables") + 1, "MERGE")
    for phase in phases:
        intervals = run.timeline.of(phase)
        segments = _segments(intervals)
        seconds = sum(end - start for start, end in segments)
        jobs = [job for job in activity.jobs if _within(job.start, segments, slack=0)]
        running = _overlap(segments, _segments(jobs))
        task_seconds = sum(run_time for task, run_time in activity.tasks if _within(task.start, segments, slack=0))
        made = sum(_within(moment, segments) for moment in commits)
        label = "of which MERGE (`merge_changes`)" if phase == "MERGE" else phase
        lines.append(f"| {label} | {len(intervals)} | {seconds:,.1f} | {len(jobs)} | {running:,.1f} | "
                     f"{task_seconds:,.1f} | {made} | {seconds - running:,.1f} |")
    return "\n".join(lines)


# --- the report ------------------------------------------------------------------------------------


def machine() -> str:
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kilobytes = int(meminfo.read_text().split()[1])
        memory = f", {kilobytes / 2**20:.0f} GiB"
    return f"{model}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}"


def load_average() -> str:
    """The 1-minute load average: other processes on the machine compete with the run."""
    return f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "unknown"


def _rate(events: int, seconds: float) -> str:
    return f"{events / seconds:,.0f}" if seconds > 0 else "-"


def _verdict(met: bool) -> str:
    return "met" if met else "**not met**"


def rates_table(measured: Measured) -> str:
    events, decoded = measured.row_events, measured.decoded
    decode_rate = events / decoded.seconds
    lines = [
        "| measure | batches | seconds | row events/s | × decode only | target ≥ 0.5× |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
        f"| decode only (`decode_tasks` in `mapInArrow`, counted; the faster of "
        f"{' s and '.join(f'{d.seconds:,.1f}' for d in measured.decodes)} s) | {len(measured.runs[0].batches)} | "
        f"{decoded.seconds:,.1f} | {_rate(events, decoded.seconds)} | 1.00 | |",
    ]
    for run in measured.runs:
        ratio = events / run.seconds / decode_rate
        lines.append(f"| end to end from {run.label} ({run.how}) | {len(run.batches)} | {run.seconds:,.1f} | "
                     f"{_rate(events, run.seconds)} | {ratio:.2f} | {_verdict(ratio >= END_TO_END_TARGET)} |")
    return "\n".join(lines)


def merge_table(run: RunResult, appended: AppendResult, appended_typing: AppendResult) -> str:
    changes = sum(step.report.changes_applied for step in run.batches if step.report is not None)

    def append_row(label: str, result: AppendResult) -> str:
        ratio = run.merge_seconds / result.seconds
        return (f"| {label} | {result.statements} | {result.rows:,} rows | {result.seconds:,.1f} | {ratio:.2f} | "
                f"{_verdict(ratio <= MERGE_TARGET)} |")

    return "\n".join([
        "| write | statements | of | seconds | MERGE ÷ this | target ≤ 3× |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
        f"| MERGE of each batch's net changes per table (run from {run.label}) | {run.merges} | {changes:,} changes | "
        f"{run.merge_seconds:,.1f} | 1.00 | |",
        append_row("plain append of each MERGE's net rows, typed from its net change records as the MERGE types "
                   "its source", appended_typing),
        append_row("plain append of each MERGE's net rows, typed beforehand (`writeTo(...).append()`)", appended),
    ])


def phases_table(runs: Sequence[RunResult]) -> str:
    """Seconds per phase, summed over each run's steps, and per batch."""
    lines = ["| phase | " + " | ".join(f"{run.label}: s | s per batch" for run in runs) + " |",
             "| --- |" + " ---: | ---: |" * len(runs)]

    def row(label: str, totals: list[float], bold: bool = False) -> str:
        cells = [f"{total:,.1f} | {total / max(1, len(run.batches)):,.2f}"
                 for total, run in zip(totals, runs, strict=True)]
        return f"| {'**' + label + '**' if bold else label} | " + " | ".join(cells) + " |"

    for phase, _, _ in PHASES:
        lines.append(row(phase, [sum(step.phases[phase] for step in run.steps) for run in runs]))
        if phase == "apply tables":
            lines.append(row("of which a MERGE under way", [run.merge_seconds for run in runs]))
    lines.append(row("other (extents, planning, the last step finding nothing)",
                     [sum(step.seconds - sum(step.phases.values()) for step in run.steps) for run in runs]))
    lines.append(row("all steps", [run.seconds for run in runs], bold=True))
    lines.append(row("not counted: `Replicator(...)`, creating the job's tables", [run.setup_seconds for run in runs]))
    return "\n".join(lines)


def batches_table(run: RunResult) -> str:
    names = [phase for phase, _, _ in PHASES]
    lines = ["| batch | records | changes applied | s | " + " | ".join(names) + " | MERGEs | MERGE s |",
             "| ---: | ---: | ---: | ---: |" + " ---: |" * (len(names) + 2)]
    for step in run.batches:
        report = step.report
        assert report is not None
        lines.append(f"| {report.batch} | {report.records:,} | {report.changes_applied:,} | {step.seconds:,.1f} | "
                     + " | ".join(f"{step.phases[n]:,.1f}" for n in names)
                     + f" | {step.merges} | {step.merge_seconds:,.1f} |")
    return "\n".join(lines)


def report(command: str, stream: CapturedStream, measured: Measured, loads: tuple[str, str], driver_memory: str) -> str:
    files = measured.runs[0]
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in ("pyspark", "confluent-kafka"))
    spec = stream.spec
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in sorted(measured.decoded.kinds.items()))
    kafka_note = ""
    if len(measured.runs) > 1:
        kafka = measured.runs[1]
        kafka_note = (
            f" From Kafka: the whole stream was first produced to a new topic of {PARTITIONS} partitions on "
            f"{kafka.broker}, by `produce_to_kafka` (idempotent, uncompressed, librdkafka's defaults otherwise) in "
            f"{kafka.produce_seconds:,.0f} s, not timed; then one run replicated it in batches of at most "
            f"{kafka.config.max_batch_records:,} records, as from files, so that the source is the only difference.")
    overhead = []
    if measured.activity is not None:
        overhead = [
            "",
            f"Spark jobs and Iceberg commits per phase of the run from {files.label}, all {len(files.batches)} "
            "batches (Spark's event log; a job or task counts in the phase it started in, a commit in the phase it "
            "was made in; with no job running, the driver plans queries, commits or waits on Py4J):",
            "",
            overhead_table(files, measured.activity, measured.commits[files.name]),
        ]
    return "\n".join([
        SECTION_START,
        "## Replication: end-to-end events per second against decoding alone, MERGE against a plain append",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC  ",
        f"Machine: {machine()}; Spark `{MASTER}`, driver memory {driver_memory}; load average {loads[0]} (1 min) "
        f"at the start, {loads[1]} at the end  ",
        f"Python {platform.python_version()}, {versions}, librdkafka {_librdkafka()}, Iceberg {ICEBERG_VERSION}  ",
        f"Workload: `WorkloadSpec(seed={spec.seed}, tables={spec.tables}, transactions={spec.transactions}, "
        f"rows_per_transaction={spec.rows_per_transaction})` with its DDL, as `{stream.format_name}` "
        f"{json.dumps(dict(stream.options))} on {PARTITIONS} partitions: {stream.messages:,} messages "
        f"({stream.bytes / 1e6:,.0f} MB captured), decoded into {kinds} records: **{measured.row_events:,} row "
        f"events**. Batches of at most {files.config.max_batch_records:,} records; tables applied "
        f"{files.config.parallel_tables} at a time, `{files.config.write_mode}`.",
        "",
        rates_table(measured),
        "",
        merge_table(files, measured.appended, measured.appended_typing),
        "",
        "Rates are row events ÷ the wall time of the steps, each run into fresh tables after an untimed warm-up. "
        "Decode only runs the pipeline's decoding over the same ranges, one Spark job per batch, and counts the "
        "records by kind: Spark's Arrow path included, nothing kept or written; it ran before the replications and "
        "after them, and the faster pass counts. MERGE seconds are the wall time "
        "during which at least one `merge_changes` was under way (tables go in parallel); the append writes each "
        "MERGE's net inserted and updated rows into a fresh table, one append per MERGE, a batch's appends as many "
        "at a time as its MERGEs: once typing them from the MERGE's net change records (materialized), as the MERGE "
        "types its source, so that only the write differs, and once from rows typed and materialized beforehand."
        + kafka_note,
        "",
        "Where the time goes, in seconds (the pipeline's functions wrapped for the run):",
        "",
        phases_table(measured.runs),
        *overhead,
        "",
        f"Per batch, from {files.label}:",
        "",
        batches_table(files),
        SECTION_END,
    ])


def _librdkafka() -> str:
    import confluent_kafka

    return str(confluent_kafka.libversion()[0])


# --- main ------------------------------------------------------------------------------------------


@dataclass
class Measured:
    """Everything one run of the benchmark measured."""

    decodes: list[DecodeResult]  # before the replications and after them
    runs: list[RunResult]
    appended: AppendResult  # of rows typed beforehand
    appended_typing: AppendResult  # typing its rows from the MERGE's net change records, as the MERGE does
    commits: dict[str, list[float]]  # per run, when each of its Iceberg commits was made
    activity: SparkActivity | None = None  # from the event log, once the session has stopped

    @property
    def decoded(self) -> DecodeResult:
        """The faster decode-only pass: the machine is shared, and a slow pass would flatter the pipeline."""
        return min(self.decodes, key=lambda d: d.seconds)

    @property
    def row_events(self) -> int:
        return self.decoded.row_events


def measure(spark: Any, stream: CapturedStream, max_batch_records: int, kafka: bool, bootstrap_servers: str | None,
            verify: bool) -> Measured:
    plans = batch_plans(stream.source.extents(), max_batch_records)
    replicate_once(spark, stream, "warmup", max_batch_records, Prefix(stream.source, WARM_UP_MESSAGES))
    decodes = [decode_only(spark, stream, plans)]
    print(f"decode only: {decodes[0].kinds.get('row', 0):,} row events in {decodes[0].seconds:,.1f} s", flush=True)
    runs = [replicate_once(spark, stream, "files", max_batch_records)]
    print(f"from files: {runs[0].seconds:,.1f} s", flush=True)
    if kafka:
        runs.append(replicate_kafka(spark, stream, "kafka", max_batch_records, bootstrap_servers))
        print(f"from Kafka: {runs[-1].seconds:,.1f} s", flush=True)
    decodes.append(decode_only(spark, stream, plans))
    print(f"decode only, again: {decodes[1].seconds:,.1f} s", flush=True)
    if decodes[0].kinds != decodes[1].kinds:
        raise SystemExit(f"two decode-only passes decoded different records: {decodes[0].kinds} != {decodes[1].kinds}")
    commits = {run.name: commit_times(spark, run) for run in runs}
    check_runs(spark, runs, decodes[0].row_events)  # both passes decoded the same records
    if verify:
        verify_with_oracle(spark, stream, runs[0])
    merges = net_rows_of_merges(spark, stream, max_batch_records)
    parallel = runs[0].config.parallel_tables
    appended = plain_append(spark, merges, "append", parallel, typing=False)
    appended_typing = plain_append(spark, merges, "append_typing", parallel, typing=True)
    for merged in merges:
        merged.rows.unpersist()
        merged.records.unpersist()
    return Measured(decodes, runs, appended, appended_typing, commits)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="row events, about (default 1000000)")
    parser.add_argument("--format", choices=list(OPTIONS), default="canal-json", help="default canal-json")
    parser.add_argument("--max-batch-records", type=int, default=ReplicateConfig("open").max_batch_records,
                        help="records per batch, at most (default: the job's)")
    parser.add_argument("--no-kafka", action="store_true", help="files only")
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT",
                        help="the Kafka cluster to produce the stream to and replicate it from (default: a local "
                             "broker started for the run)")
    parser.add_argument("--verify", action="store_true", help="compare the files run with the upstream's oracle")
    parser.add_argument("--cache", type=Path, default=cache_root(), help="where captured topics are kept")
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md", help="markdown file to update")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the session (repeatable), to try one")
    args = parser.parse_args(argv)
    settings = dict(setting.split("=", 1) for setting in args.conf)

    stream = prepared_stream(args.format, args.events, args.cache)
    print(f"{stream.messages:,} messages, {stream.bytes / 1e6:,.0f} MB under {stream.root} "
          f"(generated in {stream.generated_in:,.0f} s)", flush=True)
    loads_start = load_average()
    with tempfile.TemporaryDirectory(prefix="cdclake-bench-") as scratch:
        events = Path(scratch) / "events"
        events.mkdir()
        # The event log tells which Spark jobs each phase ran, read as one plain file of JSON lines per session
        # (Spark 4 would roll it into a folder of compressed files); the progress bars would only clutter the output.
        spark = build_session(MASTER, warehouse=Path(scratch) / "warehouse", conf={
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false",
            "spark.ui.showConsoleProgress": "false", **settings})
        spark.sparkContext.setLogLevel("ERROR")
        driver_memory = spark.sparkContext.getConf().get("spark.driver.memory", "1g (Spark's default)")
        try:
            measured = measure(spark, stream, args.max_batch_records, not args.no_kafka, args.bootstrap_servers,
                               args.verify)
        finally:
            spark.stop()
        measured.activity = spark_activity(events)
    command = "python3 bench/replicate.py" + "".join(f" {a}" for a in (argv or sys.argv[1:]))
    section = report(command, stream, measured, (loads_start, load_average()), driver_memory)
    print(section)
    if not args.no_write:
        write_section(args.output, section, SECTION_START, SECTION_END)
        print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
