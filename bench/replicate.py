"""Replication end to end, in events per second, against the job a Spark user would write by hand.

The workload is the simulator's (docs/workload.md, bench/_stream.py): ten tables of every MySQL type
family, about a million row events in transactions of 1 to 9 rows (inserts, updates, some changing the
key, deletes), DDL mid-stream, laid out on eight partitions in one format (Canal-JSON with the TiDB
extension unless ``--format`` says otherwise), generated once and cached. In one Spark session
(``local[2]``), in this order:

1. **Warm-up** (not timed): the first messages of each partition replicated into a scratch namespace,
   so that JVM class loading and code generation are not charged to whichever measure comes first.
2. **Decode only**, a reference: the pipeline's own decoding (``decode_tasks`` in ``mapInArrow``, one
   task per offset range) over the very ranges the replication plans, batch by batch, counted by kind:
   every record crosses Spark's Arrow path, nothing is kept or written. It runs again at the end, and
   the faster pass counts.
3. **End to end from files**: ``Replicator.run(once=True)`` over the captured topic, into fresh tables.
4. **Hand-written from files** (bench/handwritten.py; Canal-JSON and Simple): the job a Spark user
   would write, over the same captured files read with Spark's JSON reader: ``from_json`` of Canal-JSON's
   envelope, ``posexplode(data)``, a changelog, the newest image per key by commit ts, one MERGE per
   table, typed by the final schema of the tables run 3 made. It ignores DDL, the resolved ts and
   exactly once. The target: end to end at least as fast (``÷ hand-written ≥ 1.0``). For Simple, the
   same job with Simple's envelope (one image pair per message, the keys from the final schema).
5. **From Kafka**: the same messages on a real broker: Apache Kafka 4.1.2 in KRaft mode, one node on
   127.0.0.1 (``cdclake.localkafka.LocalKafka``, started for this leg and stopped after it), or the
   cluster of ``--bootstrap-servers``. The whole stream is produced once to a new topic of eight
   partitions (idempotent, uncompressed), before the runs and not part of their time, then
   ``Replicator.run(once=True)`` replicates it, in batches of the same size as from files, and the
   hand-written job reads it with Spark's Kafka source (``spark.read.format("kafka")``).

The pipeline's phases are timed by wrapping its functions for the run (bench/_timing.py), and Spark's
event log tells which jobs each phase ran. Run from the repository root::

    python3 bench/replicate.py                    # one million events; prints and writes BENCHMARKS.md
    python3 bench/replicate.py --events 100000    # a quicker run of the same shape

This is a benchmark, not a test: nothing here asserts on time. It does check that every run applied
each row event once (the changelogs, the hand-written job's too) and that Kafka and files left the same
tables; ``--verify`` compares the files run with the simulator's oracle, value for value.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import itertools
import json
import pickle
import platform
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import handwritten  # bench/ is on the path when a script here runs
from _stream import OPTIONS, PARTITIONS, CapturedStream, Prefix, batch_plans, cache_root, prepared_stream
from _timing import PHASES, SparkActivity, StepTimes, Timeline, overhead_table, spark_activity, step_times
from benchmarks_md import command_line, load_average, machine, publish

from cdclake.formats import get_codec
from cdclake.localkafka import KAFKA_BROKER, LocalKafka
from cdclake.model import Origin, RawMessage
from cdclake.sinks.iceberg.tables import KEY_PROPERTY
from cdclake.sources.captured import read_partition
from cdclake.sources.kafka import KafkaTopics, create_topic
from cdclake.sources.ranges import OffsetRange, Source
from cdclake.spark.changes import CHANGE_DDL, CarriedMessage, DecodeTask, decode_tasks
from cdclake.spark.jars import ICEBERG_VERSION
from cdclake.spark.progress import prune_primes
from cdclake.spark.replicate import ReplicateConfig, Replicator
from cdclake.spark.session import build_session
from cdclake.spark.status import status as replicate_status
from cdclake.workload import Workload, produce_to_kafka

ROOT = Path(__file__).resolve().parents[1]
SECTION_START = "<!-- bench/replicate.py: start -->"
SECTION_END = "<!-- bench/replicate.py: end -->"
TARGET = 1.0  # end-to-end events/s over the hand-written job's events/s from the same source, at least
MASTER = "local[2]"
CATALOG = "lake"
WARM_UP_MESSAGES = 1_000  # per partition


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

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    @property
    def batches(self) -> list[StepTimes]:
        return [s for s in self.steps if s.report is not None]

    @property
    def merge_seconds(self) -> float:
        return sum(s.merge_seconds for s in self.steps)


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


@dataclass(frozen=True)
class KafkaTopic:
    """The stream produced to a Kafka topic for the Kafka runs."""

    bootstrap_servers: str
    topic: str
    broker: str  # which cluster, for the report
    produce_seconds: float  # filling the topic, not timed


@contextlib.contextmanager
def produced_to_kafka(stream: CapturedStream, bootstrap_servers: str | None) -> Iterator[KafkaTopic]:
    """The whole stream produced to a new topic, every message at its captured offset so that the batches
    are the files' batches; on ``bootstrap_servers``' cluster, else on a local broker of its own, stopped
    when the runs are done."""
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
            read_partition(stream.root, stream.topic, partition, extent.low, extent.high)
            for (_, partition), extent in sorted(stream.source.extents().items())), kafka, topic)
        produce_seconds = time.perf_counter() - start
        print(f"produced to Kafka: {produced:,} messages in {produce_seconds:,.1f} s (not timed), topic {topic} on "
              f"{bootstrap_servers}", flush=True)
        held = {partition: extent for (_, partition), extent in KafkaTopics(kafka, names=[topic]).extents().items()}
        captured = {partition: extent for (_, partition), extent in stream.source.extents().items()}
        if held != captured:
            raise SystemExit(f"Kafka topic {topic} holds {held}, not the captured topic's {captured}")
        yield KafkaTopic(bootstrap_servers, topic, broker, produce_seconds)


def replicate_kafka(spark: Any, stream: CapturedStream, name: str, max_batch_records: int,
                    produced: KafkaTopic) -> RunResult:
    """``Replicator.run(once=True)`` from the Kafka topic, in batches as from files."""
    source = KafkaTopics({"bootstrap.servers": produced.bootstrap_servers}, names=[produced.topic])
    return replicate_once(spark, stream, name, max_batch_records, source, label="Kafka")


# --- checks ----------------------------------------------------------------------------------------


def lake_tables(spark: Any, run: RunResult) -> dict[str, tuple[str, int]]:
    """upstream ``database.table`` to (lake table, rows), as the run's state knows them."""
    found = replicate_status(spark, run.config.catalog, run.config.namespace)["tables"]
    return {t["upstream"]: (t["lake_table"], t["rows"]) for t in found}


def check_runs(spark: Any, runs: Sequence[RunResult], written: Sequence[handwritten.HandwrittenResult],
               row_events: int) -> None:
    """Every run applied each row event once and left the same tables, and the hand-written job logged each
    row event once, or a rate means nothing."""
    for result in written:
        if result.changes != row_events:
            raise SystemExit(f"{result.name}: the changelog holds {result.changes} changes, the stream {row_events} "
                             "row events")
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


# --- the report ------------------------------------------------------------------------------------


def _rate(events: int, seconds: float) -> str:
    return f"{events / seconds:,.0f}" if seconds > 0 else "-"


def _verdict(met: bool) -> str:
    return "met" if met else "**not met**"


HANDWRITTEN_HOW = {
    "files": "Spark's JSON reader, `unbase64`",
    "Kafka": "`spark.read.format(\"kafka\")`",
}


def rates_table(measured: Measured) -> str:
    """Each run's rate, and cdclake's over the hand-written job's from the same source: the target."""
    events, decoded = measured.row_events, measured.decoded
    hand = {h.label: h for h in measured.handwritten}
    lines = [
        f"| measure | batches | seconds | row events/s | ÷ hand-written | target ≥ {TARGET:.1f}× |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
        f"| decode only, for reference (`decode_tasks` in `mapInArrow`, counted; the faster of "
        f"{' s and '.join(f'{d.seconds:,.1f}' for d in measured.decodes)} s) | {len(measured.runs[0].batches)} | "
        f"{decoded.seconds:,.1f} | {_rate(events, decoded.seconds)} | | |",
    ]
    if measured.spark_parsing:
        parsed = min(seconds for seconds, _ in measured.spark_parsing)
        lines.append(f"| Spark's own parsing of the same messages, for reference (`from_json`, `posexplode`, counted "
                     f"by op; {measured.spark_parsing[0][1]:,} row changes; the faster of "
                     f"{' s and '.join(f'{s:,.1f}' for s, _ in measured.spark_parsing)} s) | 1 | {parsed:,.1f} | "
                     f"{_rate(events, parsed)} | | decode only ÷ it: {parsed / decoded.seconds:.2f} "
                     f"(target ≥ 1.0×: {_verdict(parsed >= decoded.seconds)}) |")
    for run in measured.runs:
        if run.label in hand:
            written = hand[run.label]
            lines.append(f"| hand-written job from {run.label} ({HANDWRITTEN_HOW[run.label]}, `from_json`, "
                         f"newest per key, {written.merges} MERGEs) | 1 | {written.seconds:,.1f} | "
                         f"{_rate(events, written.seconds)} | 1.00 | |")
        ratio = written.seconds / run.seconds if run.label in hand else None
        verdict = "" if ratio is None else _verdict(ratio >= TARGET)
        lines.append(f"| **end to end from {run.label}** ({run.how}) | {len(run.batches)} | {run.seconds:,.1f} | "
                     f"{_rate(events, run.seconds)} | {'' if ratio is None else f'{ratio:.2f}'} | {verdict} |")
    return "\n".join(lines)


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


def _notes(measured: Measured, format_name: str) -> str:
    notes = [
        "Rates are row events ÷ wall time: cdclake's the sum of its steps, each run into fresh tables after an "
        "untimed warm-up; the hand-written job's from reading the first message to its last MERGE's commit, its "
        "tables created beforehand and not counted (as `Replicator(...)` is not). Decode only runs the pipeline's "
        "decoding over the same ranges, one Spark job per batch, and counts the records by kind: Spark's Arrow path "
        "included, nothing kept or written; it ran before the replications and after them, and the faster pass "
        "counts. It has no target: it says how much of a run decoding is."]
    if measured.handwritten:
        parallel = measured.handwritten[0].parallel
        parsing, keys = handwritten.PARSING[format_name]
        notes.append(
            "The hand-written job (bench/handwritten.py) is the job a Spark user would write: the whole stream in "
            f"one pass, {parsing}, every change appended to a changelog, the newest image per primary key ({keys}; "
            "the whole row for a table without one) by commit ts with a window's `row_number`, then one MERGE per "
            "table "
            f"({'one at a time' if parallel == 1 else f'{parallel} at a time'}), typed by the final schema of the "
            "tables the run from files made (`try_cast`), into tables of the same settings. It ignores DDL, the "
            "resolved ts and exactly once, so its tables are not the upstream's. ÷ hand-written is cdclake's rate "
            "over the hand-written job's from the same source.")
    if measured.kafka is not None:
        kafka = measured.kafka
        notes.append(
            f"From Kafka: the whole stream was first produced to a new topic of {PARTITIONS} partitions on "
            f"{kafka.broker}, by `produce_to_kafka` (idempotent, uncompressed, librdkafka's defaults otherwise) in "
            f"{kafka.produce_seconds:,.0f} s, not timed; then cdclake replicated it in batches as from files, so "
            "that the source is the only difference, and the hand-written job read it with Spark's Kafka source.")
    return " ".join(notes)


def report(command: str, stream: CapturedStream, measured: Measured, loads: tuple[str, str], driver_memory: str) -> str:
    files = measured.runs[0]
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in ("pyspark", "confluent-kafka"))
    spec = stream.spec
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in sorted(measured.decoded.kinds.items()))
    overhead = []
    if measured.activity is not None:
        overhead = [
            "",
            f"Spark jobs and Iceberg commits per phase of the run from {files.label}, all {len(files.batches)} "
            "batches (Spark's event log; a job or task counts in the phase it started in, a commit in the phase it "
            "was made in; with no job running, the driver plans queries, commits or waits on Py4J):",
            "",
            overhead_table(files.timeline, measured.activity, measured.commits[files.name]),
        ]
    return "\n".join([
        SECTION_START,
        "## Replication: end-to-end events per second against the job a Spark user would write by hand",
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
        _notes(measured, stream.format_name),
        "",
        "Where cdclake's time goes, in seconds (the pipeline's functions wrapped for the run):",
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
    handwritten: list[handwritten.HandwrittenResult]  # one per source, for the formats it reads
    commits: dict[str, list[float]]  # per run, when each of its Iceberg commits was made
    kafka: KafkaTopic | None = None
    activity: SparkActivity | None = None  # from the event log, once the session has stopped
    spark_parsing: list[tuple[float, int]] = field(default_factory=list)  # (s, row changes), twice

    @property
    def decoded(self) -> DecodeResult:
        """The faster decode-only pass: the machine is shared, and a slow pass would flatter the pipeline."""
        return min(self.decodes, key=lambda d: d.seconds)

    @property
    def row_events(self) -> int:
        return self.decoded.row_events


def _final_tables(spark: Any, files_run: RunResult) -> list[handwritten.FinalTable]:
    """The final schema of the tables ``files_run`` made, which the hand-written job is given."""
    given = {upstream: lake for upstream, (lake, _) in lake_tables(spark, files_run).items()}
    return handwritten.final_tables(spark, given, KEY_PROPERTY)


def run_handwritten(spark: Any, stream: CapturedStream, messages: Any, label: str, files_run: RunResult,
                    parallel: int) -> handwritten.HandwrittenResult:
    """The hand-written job over ``messages``, typed by the final schema of the tables ``files_run`` made."""
    result = handwritten.run(spark, messages, stream.format_name, _final_tables(spark, files_run), CATALOG,
                             f"handwritten_{label.lower()}", label, parallel)
    print(f"hand-written from {label}: {result.seconds:,.1f} s", flush=True)
    return result


def measure(spark: Any, stream: CapturedStream, args: argparse.Namespace) -> Measured:
    max_batch_records = args.max_batch_records
    plans = batch_plans(stream.source.extents(), max_batch_records)
    replicate_once(spark, stream, "warmup", max_batch_records, Prefix(stream.source, WARM_UP_MESSAGES))
    decodes = [decode_only(spark, stream, plans)]
    print(f"decode only: {decodes[0].kinds.get('row', 0):,} row events in {decodes[0].seconds:,.1f} s", flush=True)
    runs = [replicate_once(spark, stream, "files", max_batch_records)]
    print(f"from files: {runs[0].seconds:,.1f} s", flush=True)
    by_hand = stream.format_name in handwritten.FORMATS
    written = [run_handwritten(spark, stream, handwritten.captured_messages(spark, stream.root, stream.topic),
                               "files", runs[0], args.handwritten_parallel)] if by_hand else []
    kafka = None
    if not args.no_kafka:
        with produced_to_kafka(stream, args.bootstrap_servers) as kafka:
            runs.append(replicate_kafka(spark, stream, "kafka", max_batch_records, kafka))
            print(f"from Kafka: {runs[-1].seconds:,.1f} s", flush=True)
            if by_hand:
                messages = handwritten.kafka_messages(spark, kafka.bootstrap_servers, kafka.topic)
                written.append(run_handwritten(spark, stream, messages, "Kafka", runs[0], args.handwritten_parallel))
    decodes.append(decode_only(spark, stream, plans))
    print(f"decode only, again: {decodes[1].seconds:,.1f} s", flush=True)
    parsed: list[tuple[float, int]] = []
    if by_hand:
        tables = _final_tables(spark, runs[0])
        parsed = [handwritten.parse_only(handwritten.captured_messages(spark, stream.root, stream.topic),
                                         stream.format_name, tables) for _ in range(2)]
        print(f"Spark's own parsing: {parsed[0][1]:,} row changes in {min(p[0] for p in parsed):,.1f} s", flush=True)
    if decodes[0].kinds != decodes[1].kinds:
        raise SystemExit(f"two decode-only passes decoded different records: {decodes[0].kinds} != {decodes[1].kinds}")
    commits = {run.name: commit_times(spark, run) for run in runs}
    check_runs(spark, runs, written, decodes[0].row_events)  # both passes decoded the same records
    if args.verify:
        verify_with_oracle(spark, stream, runs[0])
    return Measured(decodes, runs, written, commits, kafka, spark_parsing=parsed)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="row events, about (default 1000000)")
    parser.add_argument("--format", choices=list(OPTIONS), default="canal-json",
                        help="default canal-json (the hand-written job reads Canal-JSON and Simple)")
    parser.add_argument("--max-batch-records", type=int, default=ReplicateConfig("open").max_batch_records,
                        help="records per batch, at most (default: the job's)")
    parser.add_argument("--handwritten-parallel", type=int, default=1, metavar="N",
                        help="MERGEs the hand-written job runs at a time (default 1: a loop over the tables)")
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
            measured = measure(spark, stream, args)
        finally:
            spark.stop()
        measured.activity = spark_activity(events)
    section = report(command_line('replicate.py', argv), stream, measured, (loads_start, load_average()), driver_memory)
    publish(section, args.output, SECTION_START, SECTION_END, write=not args.no_write)


if __name__ == "__main__":
    main()
