"""What the database benchmarks (bench/postgres.py, bench/mariadb.py) share: the workload, cdclake's
timed run into the database, the check against the simulator's oracle, and the section they write.

The workload is the simulator's (bench/_stream.py) without strings holding the NUL character (PostgreSQL's
text cannot hold one, and MariaDB's sink refuses it in names only, so both benches take the same bytes),
in Canal-JSON with the TiDB extension on eight partitions. The warm-up (not timed) replicates a stream
of the same shape and ``WARM_UP_EVENTS`` events into scratch tables, so that JVM class loading and code
generation are not charged to the measure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import handwritten
from _stream import CapturedStream, cache_root, prepared_stream
from _timing import Timeline
from benchmarks_md import command_line, load_average, machine, publish

from cdclake.formats import get_codec
from cdclake.sinks import compare_tables
from cdclake.spark.ordering import Facts, Ordering
from cdclake.spark.planning import TablePlanner
from cdclake.spark.replicate import ReplicateConfig, Replicator
from cdclake.spark.session import build_session, new_log_file
from cdclake.workload import Workload

OPTIONS = {"enable-tidb-extension": True}
WARM_UP_EVENTS = 3_000
PREFIX = "bench"  # the measured run's tables go to the databases (schemas) bench_<upstream database>
ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.5  # cdclake's changes/s over the bulk load's rows/s, at least

# The database's bulk load of the final rows, given the server and its URL: (tables, rows, seconds, bytes).
Load = Callable[[Any, str], tuple[int, int, float, int]]


@dataclass
class Measures:
    """cdclake's run (``changes`` applied in ``cdclake_s``) and the bulk load of its final rows (``rows``,
    ``load_bytes`` of the loader's text, in ``load_s``)."""

    workload: str
    batches: int
    changes: int
    cdclake_s: float
    tables: int = 0
    rows: int = 0
    load_s: float = 0.0
    load_bytes: int = 0
    unequal: tuple[str, ...] = ()
    phases: dict[str, float] = field(default_factory=dict)  # cdclake's wall seconds per phase, summed
    parse_s: float = 0.0  # Spark's own parsing of the same messages, the faster of two passes


def phases_of(sink: type) -> tuple[tuple[str, Any, str], ...]:
    """The functions a batch into ``sink`` (the sink's class) spends its time in, in the order it calls them
    (bench/_timing.py wraps them): "stage changes" hands the sink every table's net rows at once (PostgreSQL
    copies them into its staging table), "apply tables" runs the sink's table calls (MariaDB stages each
    write's rows there), "commit" ends the batch with the job's progress."""
    return (("load state", sink, "load_state"), ("record plan", sink, "record_plan"), ("decode + facts", Facts, "of"),
            ("dedupe", Ordering, "deduplicated"), ("plan tables", TablePlanner, "plan_tables"),
            ("changelog", sink, "append_changelog"), ("net changes", Replicator, "_net_changes"),
            ("stage changes", sink, "stage_changes"), ("apply tables", Replicator, "_apply_tables"),
            ("commit", sink, "commit"))


def streams(events: int) -> tuple[CapturedStream, CapturedStream]:
    """The measured stream and the warm-up's, from the cache or generated into it."""
    return (prepared_stream("canal-json", events, cache_root(), text_nul=False),
            prepared_stream("canal-json", WARM_UP_EVENTS, cache_root(), text_nul=False))


def _config(name: str, url: str, max_batch_records: int) -> ReplicateConfig:
    return ReplicateConfig("canal-json", OPTIONS, namespace=f"{name}_cdclake", target_namespace=f"{name}_{{database}}",
                           max_batch_records=max_batch_records, sink=url)


def replicate_timed(spark: Any, stream: CapturedStream, warm_up: CapturedStream, url: str,
                    max_batch_records: int, sink: type) -> Measures:
    """The warm-up, then ``stream`` replicated into the database at ``url`` from the start, timed, with
    the time of each phase of ``sink``'s batches."""
    Replicator(spark, warm_up.source, _config("warm", url, max_batch_records)).run(once=True)
    timeline = Timeline()
    phases = phases_of(sink)
    with timeline.recording(phases):
        started = time.perf_counter()
        reports = Replicator(spark, stream.source, _config(PREFIX, url, max_batch_records)).run(once=True)
        seconds = time.perf_counter() - started
    workload = (f"`{stream.spec}` as `canal-json` {OPTIONS}: {stream.messages:,} messages on eight partitions, "
                f"{stream.bytes / 2**20:.0f} MiB")
    spent = {phase: sum(interval.seconds for interval in timeline.of(phase)) for phase, _, _ in phases}
    return Measures(workload, len(reports), sum(report.changes_applied for report in reports), seconds, phases=spent)


def spark_parsing(spark: Any, stream: CapturedStream) -> float:
    """Seconds Spark's own parsing of the stream's messages takes (bench/handwritten.py's ``parse_only``:
    ``from_json``, ``posexplode``, every image counted), the faster of two passes: how long any Spark job
    needs before it has the changes in hand."""
    messages = handwritten.captured_messages(spark, stream.root, stream.topic)
    return min(handwritten.parse_only(messages, stream.format_name, [])[0] for _ in range(2))


def differences_from_oracle(stream: CapturedStream, url: str) -> tuple[str, ...]:
    """The measured run's tables that differ from the simulator's, each with what differs."""
    expected = Workload(stream.spec).oracle().carried("canal-json", get_codec("canal-json").resolve(OPTIONS)).tables
    compared = compare_tables(url, expected, lambda database, table: (f"{PREFIX}_{database}", table))
    return tuple(f"{c.upstream}: {c.missing} missing, {c.unexpected} unexpected {c.column_differences}"
                 for c in compared if not c.equal)


def section(markers: tuple[str, str], title: str, command: str, m: Measures, loads: tuple[str, str],
            max_batch_records: int, server: str, loader: tuple[str, str], target: float) -> str:
    """The benchmark's section of BENCHMARKS.md: ``loader`` is the bulk load's name and what it loads."""
    cdclake_rate, load_rate = m.changes / m.cdclake_s, m.rows / m.load_s
    ratio = cdclake_rate / load_rate
    verdict = "met" if ratio >= target else "**not met**"
    budget = m.changes / (target * load_rate)  # the seconds cdclake's changes may take at the target
    spent = ", ".join(f"{phase} {seconds:.1f}" for phase, seconds in m.phases.items())
    check = ("every table equal to the simulator's oracle" if not m.unequal
             else "**tables differing from the oracle**: " + "; ".join(m.unequal))
    heading = "  \n".join([
        f"Command: `{command}`",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"Machine: {machine()}; Spark `local[2]`; load average {loads[0]} (1 min) at "
        f"the start, {loads[1]} at the end",
        f"Workload: {m.workload}; batches of at most {max_batch_records:,} records. {server}"])
    return f"""{markers[0]}
## {title}

{heading}

| run | what | count | wall s | per second |
| --- | --- | ---: | ---: | ---: |
| cdclake `--sink` | changes applied, {m.batches} batches, {m.tables} tables | {m.changes:,} | {m.cdclake_s:.1f} \
| {cdclake_rate:,.0f} |
| {loader[0]} | {loader[1]} ({m.load_bytes / 2**20:.1f} MiB of text) | {m.rows:,} | {m.load_s:.2f} | {load_rate:,.0f} |

cdclake's time by phase, wall seconds summed over its batches (bench/_database.py's `phases_of`): {spent}.

cdclake's changes/s ÷ the load's rows/s: {ratio:.3f}, target ≥ {target:g}: {verdict}. At {target:g}× the load's rate
cdclake would have {budget:.2f} s for its {m.changes:,} changes; Spark's own parsing of the same messages
(`from_json`, `posexplode`, every image counted; the faster of two passes) took {m.parse_s:.1f} s alone, \
{m.parse_s / budget:.1f}× that. After the runs (not timed):
{check}; the loaded tables hold as many rows as cdclake's. cdclake's time covers the whole job
(reading the captured topic, decoding, ordering, staging the net rows, merging, the progress); the
load's only the rows, already in the loader's text format.
{markers[1]}"""


@dataclass(frozen=True)
class Bench:
    """One database's benchmark: its server (a context manager, tests/catalogs.py's), its URL, the bulk
    load to compare with, and how its section names them."""

    script: str
    title: str
    service: Callable[[], AbstractContextManager[Any]]
    sink: type  # the sink's class, whose calls are timed
    url_of: Callable[[Any], str]
    load: Load
    server: Callable[[], str]
    loader: tuple[str, str]


def measure(bench: Bench, events: int, max_batch_records: int) -> Measures:
    """cdclake's timed run into a server of ``bench``'s own, then the bulk load and the oracle's check."""
    stream, warm_up = streams(events)
    warehouse = Path(tempfile.mkdtemp(prefix="cdclake-bench-database-"))
    spark = build_session(warehouse=warehouse, log_file=new_log_file())
    try:
        with bench.service() as server:
            url = bench.url_of(server)
            measures = replicate_timed(spark, stream, warm_up, url, max_batch_records, bench.sink)
            measures.tables, measures.rows, measures.load_s, measures.load_bytes = bench.load(server, url)
            measures.unequal = differences_from_oracle(stream, url)
        measures.parse_s = spark_parsing(spark, stream)
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
    return measures


def main(bench: Bench, description: str, argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--events", type=int, default=300_000, help="row events of the stream, about (default 300000)")
    parser.add_argument("--max-batch-records", type=int, default=100_000, help="records per batch (default 100000)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    start_load = load_average()
    measures = measure(bench, args.events, args.max_batch_records)
    markers = (f"<!-- bench/{bench.script}: start -->", f"<!-- bench/{bench.script}: end -->")
    text = section(markers, bench.title, command_line(bench.script, argv), measures, (start_load, load_average()),
                   args.max_batch_records, bench.server(), bench.loader, TARGET)
    publish(text, ROOT / "BENCHMARKS.md", *markers, not args.no_write)
