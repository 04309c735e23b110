"""Freshness: the delay from a change's commit upstream to its visibility in the mirror table, while a
producer writes a steady stream and the replication runs continuously.

A local Kafka broker (``cdclake.localkafka.LocalKafka``, Apache Kafka in KRaft mode on 127.0.0.1) gets a
new topic of eight partitions. The workload simulator (docs/workload.md) makes ten tables' transactions of
1 to 9 rows (5 on average) with its DDL, its clock starting now and its commits ``--rate`` changes a second
apart on average; a producer thread lays them out by the producer rules (Canal-JSON with the TiDB
extension unless ``--format`` says otherwise, a watermark on every partition each second of the upstream
clock) and sends each message when the wall clock reaches its newest commit ts (a watermark: its ts), with
``produce_to_kafka``. So a change's commit time is its commit ts, and the producer's lag behind it is
reported apart. Meanwhile ``Replicator.run(once=False)`` — what ``cdclake replicate`` runs — replicates
the topic in the same process, with the job's defaults, for ``--seconds`` of production and then until
it has applied the last commit (at most ``--drain`` seconds more).

Afterwards each mirror's Iceberg snapshots say when each batch committed to it and up to which resolved
ts (``cdclake.resolved-ts`` in the summary): a change is visible once the first batch whose resolved ts
reaches its commit ts has committed its table (the batch's last commit to it). Its delay is that commit
time minus its commit ts's time. Snapshots are not expired during the run (``expire_snapshots_every_s=0``),
so that every one of them is there to read. Targets: p50 at most 10 s, p99 at most 30 s. Run from the
repository root::

    python3 bench/freshness.py                 # five minutes; prints and writes BENCHMARKS.md
    python3 bench/freshness.py --seconds 60 --no-write

This is a benchmark, not a test: nothing here asserts on time. It does check that every change produced
became visible (or says how many did not by the end).
"""

from __future__ import annotations

import argparse
import bisect
import datetime as dt
import heapq
import itertools
import math
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _stream import OPTIONS, PARTITIONS, ROWS_PER_TRANSACTION, SEED, TABLES
from benchmarks_md import command_line, load_average, machine, publish

from cdclake.claimcheck import decoder_for
from cdclake.formats.base import Decoder
from cdclake.localkafka import KAFKA_BROKER, LocalKafka
from cdclake.model import Ddl, Origin, RawMessage, RowChange, Watermark
from cdclake.producer import ProducerSpec
from cdclake.sinks.iceberg.tables import BATCH_PROPERTY, RESOLVED_PROPERTY
from cdclake.sources.kafka import KafkaTopics, create_topic
from cdclake.spark.replicate import BatchReport, ReplicateConfig, Replicator
from cdclake.spark.session import build_session
from cdclake.spark.status import status as replicate_status
from cdclake.workload import Workload, WorkloadSpec, messages, physical_ms, produce_to_kafka

ROOT = Path(__file__).resolve().parents[1]
SECTION_START = "<!-- bench/freshness.py: start -->"
SECTION_END = "<!-- bench/freshness.py: end -->"
P50_TARGET, P99_TARGET = 10.0, 30.0  # seconds, at most
WINDOW_S = 30  # the curve's windows, by commit time
LEAD_S = 2.0  # the first commit is this far ahead of the producer's start
LOOKAHEAD_S = 2.0  # of upstream time read ahead: more than a watermark round
MASTER = "local[2]"
CATALOG = "lake"
NAMESPACE = "fresh_cdclake"


def workload_spec(seconds: float, rate: float) -> WorkloadSpec:
    """``seconds`` of commits at ``rate`` changes a second, about, the clock starting ``LEAD_S`` from now:
    transactions of 5 rows on average, so ``rate / 5`` a second, 1 to ``max_gap_ms`` ms apart."""
    per_second = rate / ((1 + ROWS_PER_TRANSACTION) / 2)
    gap_ms = 1000 / per_second  # on average; the simulator draws each gap from 1 to max_gap_ms
    start = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=LEAD_S)
    return WorkloadSpec(seed=SEED, tables=TABLES, transactions=max(1, round(seconds * per_second)),
                        rows_per_transaction=ROWS_PER_TRANSACTION, start=start,
                        max_gap_ms=max(1, round(2 * gap_ms - 1)))


@dataclass
class Produced:
    """What the producer sent: each row change's table and commit ts, and how late each message went
    out after its commit (seconds)."""

    changes: list[tuple[str, int]] = field(default_factory=list)  # (database.table, commit ts)
    lags: list[float] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0
    error: BaseException | None = None


def _timed(stream: Iterator[RawMessage], spec: ProducerSpec) -> Iterator[tuple[float, int, RawMessage, list[Any]]]:
    """Each message with when its events committed (epoch seconds: its newest commit ts or watermark, else
    the message's before it), its place in the stream and its events."""
    decoders: dict[int, Decoder] = {}
    due = time.time()
    for place, message in enumerate(stream):
        assert message.origin is not None and message.origin.partition is not None
        decoder = decoders.setdefault(message.origin.partition, decoder_for(spec.codec, spec.codec_options()))
        events = decoder.decode(message)
        stamps = [e.ts if isinstance(e, Watermark) else e.commit_ts for e in events
                  if isinstance(e, Watermark | RowChange | Ddl)]
        due = max((physical_ms(ts) / 1000 for ts in stamps if ts is not None), default=due)
        yield due, place, message, events


def paced(stream: Iterator[RawMessage], spec: ProducerSpec, produced: Produced,
          stop: threading.Event) -> Iterator[RawMessage]:
    """The messages in the order of their commit times, each held back until the wall clock reaches it,
    their changes recorded. The simulator lays a round (a second of commits, closed by a watermark on
    every partition) out partition after partition once the round is over, so messages are read
    ``LOOKAHEAD_S`` ahead and sent by time (each partition's own stay in order: their times rise)."""
    ahead: list[tuple[float, int, RawMessage, list[Any]]] = []  # a heap, the earliest due first
    for item in itertools.chain(_timed(stream, spec), [None]):
        if item is not None:
            heapq.heappush(ahead, item)
        while ahead and (item is None or item[0] - ahead[0][0] >= LOOKAHEAD_S):
            due, _, message, events = heapq.heappop(ahead)
            if stop.wait(max(0.0, due - time.time())):
                return
            produced.lags.append(time.time() - due)
            produced.changes += [(f"{e.database}.{e.table}", e.commit_ts) for e in events
                                 if isinstance(e, RowChange) and e.commit_ts is not None]
            yield message


def produce(workload: WorkloadSpec, spec: ProducerSpec, kafka: dict[str, str], topic: str, produced: Produced,
            stop: threading.Event) -> None:
    """The producer thread: the workload's messages to ``topic``, in real time."""
    produced.started = time.time()
    try:
        stream = messages(Workload(workload), spec.format_name, spec.options, partitions=PARTITIONS, topic=topic)
        produce_to_kafka(paced(stream, spec, produced, stop), kafka, topic)
    except BaseException as error:  # reported by the main thread, which stops the replication
        produced.error = error
    finally:
        produced.finished = time.time()


@dataclass
class Replicated:
    reports: list[BatchReport] = field(default_factory=list)
    resolved: int = 0  # the newest resolved ts a batch applied
    error: BaseException | None = None

    def on_batch(self, report: BatchReport) -> None:
        self.reports.append(report)
        self.resolved = max(self.resolved, report.resolved_ts or 0)


def replicate(replicator: Replicator, replicated: Replicated, stop: threading.Event) -> None:
    try:
        replicator.run(once=False, stop=stop, on_batch=replicated.on_batch)
    except BaseException as error:  # reported by the main thread, which stops the producer
        replicated.error = error
        stop.set()


def batch_commits(spark: Any, config: ReplicateConfig) -> dict[str, list[tuple[int, float]]]:
    """Per upstream table, each batch that wrote its mirror: (the batch's resolved ts, when its last commit
    to the mirror was made, epoch seconds), in batch order."""
    found: dict[str, list[tuple[int, float]]] = {}
    for table in replicate_status(spark, config.catalog, config.namespace)["tables"]:
        rows = spark.sql(
            f"SELECT CAST(summary['{BATCH_PROPERTY}'] AS bigint) AS batch, "
            f"max(CAST(summary['{RESOLVED_PROPERTY}'] AS bigint)) AS resolved, max(unix_millis(committed_at)) AS at "
            f"FROM {table['lake_table']}.snapshots WHERE summary['{RESOLVED_PROPERTY}'] IS NOT NULL "
            "GROUP BY 1 ORDER BY 1").collect()
        found[table["upstream"]] = [(row["resolved"], row["at"] / 1000) for row in rows]
    return found


def delays(changes: Sequence[tuple[str, int]], commits: dict[str, list[tuple[int, float]]]
           ) -> tuple[list[tuple[float, float]], int]:
    """Each visible change's (commit time, delay to visibility), and how many changes were not visible."""
    visible, missing = [], 0
    resolved = {table: [ts for ts, _ in batches] for table, batches in commits.items()}
    for table, commit_ts in changes:
        batches = commits.get(table, [])
        first = bisect.bisect_left(resolved.get(table, []), commit_ts)
        if first == len(batches):
            missing += 1
            continue
        committed = physical_ms(commit_ts) / 1000
        visible.append((committed, batches[first][1] - committed))
    return visible, missing


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of sorted ``values``."""
    return values[min(len(values) - 1, max(0, math.ceil(share * len(values)) - 1))]


def _stats(values: Sequence[float]) -> str:
    ordered = sorted(values)
    return " | ".join(f"{percentile(ordered, share):,.1f}" for share in (0.5, 0.9, 0.99)) + f" | {ordered[-1]:,.1f}"


def curve(visible: Sequence[tuple[float, float]], start: float) -> str:
    """Delays by ``WINDOW_S`` windows of commit time since the producer started."""
    windows: dict[int, list[float]] = {}
    for committed, delay in visible:
        windows.setdefault(int((committed - start) // WINDOW_S), []).append(delay)
    lines = ["| commits in (s) | changes | p50 s | p90 s | p99 s | max s |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for index in sorted(windows):
        lines.append(f"| {index * WINDOW_S}–{(index + 1) * WINDOW_S} | {len(windows[index]):,} | "
                     f"{_stats(windows[index])} |")
    return "\n".join(lines)


@dataclass
class Measured:
    workload: WorkloadSpec
    produced: Produced
    replicated: Replicated
    visible: list[tuple[float, float]]
    missing: int
    config: ReplicateConfig


def _verdict(value: float, target: float) -> str:
    return "met" if value <= target else "**not met**"


def report(command: str, args: argparse.Namespace, measured: Measured, loads: tuple[str, str]) -> str:
    produced, replicated, spec = measured.produced, measured.replicated, measured.workload
    ordered = sorted(delay for _, delay in measured.visible)
    p50, p99 = percentile(ordered, 0.5), percentile(ordered, 0.99)
    elapsed = produced.finished - produced.started
    lags = sorted(produced.lags)
    batches = [r for r in replicated.reports if r.records]
    batch_seconds = sorted(r.seconds for r in batches)
    return "\n".join([
        SECTION_START,
        "## Freshness: from a change's commit upstream to its visibility in the mirror table",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC  ",
        f"Machine: {machine()}; Spark `{MASTER}`; load average {loads[0]} (1 min) at the start, {loads[1]} at "
        "the end  ",
        f"Workload: `WorkloadSpec(seed={spec.seed}, tables={spec.tables}, transactions={spec.transactions}, "
        f"rows_per_transaction={spec.rows_per_transaction}, max_gap_ms={spec.max_gap_ms})` with its DDL, its clock "
        f"starting at the run, as `{args.format}` on {PARTITIONS} partitions of Apache Kafka "
        f"{KAFKA_BROKER.rsplit(':', 1)[1]} (one KRaft node on 127.0.0.1): **{len(produced.changes):,} changes in "
        f"{elapsed:,.0f} s, {len(produced.changes) / max(elapsed, 1e-9):,.0f} a second**; each message sent when "
        f"its commit time came, the producer's lag behind it p99 {percentile(lags, 0.99) * 1000:,.0f} ms, max "
        f"{lags[-1] * 1000:,.0f} ms.  ",
        f"Replication: `Replicator.run(once=False)` in the same process, the job's defaults (batches of at most "
        f"{measured.config.max_batch_records:,} records, {measured.config.parallel_tables} tables at a time), "
        f"{len(batches)} batches while it ran, each {percentile(batch_seconds, 0.5):,.1f} s at the median, "
        f"{batch_seconds[-1]:,.1f} s at most.",
        "",
        "| delay from commit to visible, s | p50 | p90 | p99 | max | target |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
        f"| all {len(ordered):,} changes | {_stats(ordered)} | p50 ≤ {P50_TARGET:.0f} s: {_verdict(p50, P50_TARGET)}; "
        f"p99 ≤ {P99_TARGET:.0f} s: {_verdict(p99, P99_TARGET)} |",
        "",
        f"Over time, by the {WINDOW_S} s in which the changes committed (the first window holds the job's first "
        "batches, Spark warming up):",
        "",
        curve(measured.visible, produced.started),
        "",
        "A change is visible when the first batch whose resolved ts reaches its commit ts has made its last commit "
        "to the change's mirror (Iceberg's `committed_at`; the resolved ts from `cdclake.resolved-ts` in the "
        "snapshot summary); its delay is that time minus its commit ts's. "
        + (f"**{measured.missing:,} changes were not visible when the run stopped.**" if measured.missing
           else "Every change produced became visible."),
        SECTION_END,
    ])


def warm_up_broker(kafka: dict[str, str]) -> None:
    """One message sent to a topic of its own: a new broker makes the first idempotent producer wait while
    it loads its coordinator, which would otherwise count as the first changes' delay."""
    create_topic(kafka, "fresh-warm-up", 1)
    produce_to_kafka([RawMessage(None, b"", Origin(topic="fresh-warm-up", partition=0, offset=0))], kafka,
                     "fresh-warm-up")


def measure(spark: Any, args: argparse.Namespace, kafka: dict[str, str]) -> Measured:
    warm_up_broker(kafka)
    topic = f"fresh-{time.strftime('%Y%m%d%H%M%S')}"
    create_topic(kafka, topic, PARTITIONS)
    config = ReplicateConfig(args.format, OPTIONS[args.format], catalog=CATALOG, namespace=NAMESPACE,
                             target_namespace="fresh_{database}", expire_snapshots_every_s=0)
    replicator = Replicator(spark, KafkaTopics(kafka, names=[topic]), config)
    stop_replicating, stop_producing = threading.Event(), threading.Event()
    produced, replicated = Produced(), Replicated()
    workload = workload_spec(args.seconds, args.rate)
    spec = ProducerSpec(args.format, OPTIONS[args.format], partitions=PARTITIONS, topic=topic)
    threads = [threading.Thread(target=replicate, args=(replicator, replicated, stop_replicating)),
               threading.Thread(target=produce, args=(workload, spec, kafka, topic, produced, stop_producing))]
    for thread in threads:
        thread.start()
    try:
        while threads[1].is_alive() and replicated.error is None:
            threads[1].join(1)
        last = max((ts for _, ts in produced.changes), default=0)
        deadline = time.time() + args.drain
        print(f"produced {len(produced.changes):,} changes; draining", flush=True)
        while replicated.resolved < last and replicated.error is None and time.time() < deadline:
            time.sleep(1)
    finally:
        stop_producing.set()
        stop_replicating.set()
        for thread in threads:
            thread.join()
    for error in (produced.error, replicated.error):
        if error is not None:
            raise SystemExit(f"the run failed: {error!r}")
    visible, missing = delays(produced.changes, batch_commits(spark, config))
    return Measured(workload, produced, replicated, visible, missing, config)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300, help="of production (default 300)")
    parser.add_argument("--rate", type=float, default=200, help="changes a second, about (default 200)")
    parser.add_argument("--drain", type=float, default=120,
                        help="seconds to wait after production for the last commit to be applied (default 120)")
    parser.add_argument("--format", choices=list(OPTIONS), default="canal-json", help="default canal-json")
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md", help="markdown file to update")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)

    loads_start = load_average()
    with tempfile.TemporaryDirectory(prefix="cdclake-fresh-") as scratch, LocalKafka() as broker:
        spark = build_session(MASTER, warehouse=Path(scratch) / "warehouse",
                              conf={"spark.ui.showConsoleProgress": "false"})
        spark.sparkContext.setLogLevel("ERROR")
        try:
            measured = measure(spark, args, {"bootstrap.servers": broker.bootstrap})
        finally:
            spark.stop()
    if not measured.visible:
        raise SystemExit(f"no change became visible ({measured.missing:,} produced)")
    section = report(command_line('freshness.py', argv), args, measured, (loads_start, load_average()))
    publish(section, args.output, SECTION_START, SECTION_END, write=not args.no_write)


if __name__ == "__main__":
    main()
