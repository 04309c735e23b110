"""``cdclake replicate`` and ``cdclake demo``: the replication job from the command line.

Settings come from a TOML file (:mod:`cdclake.jobconfig`) and flags, flags winning. ``--once`` runs
until caught up and exits; otherwise the job runs until SIGINT or SIGTERM, and stops after the batch
under way has committed.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from cdclake.errors import CdclakeError
from cdclake.formats import FORMAT_NAMES, get_codec
from cdclake.jobconfig import JobSettings, job_settings, merged, read_toml
from cdclake.schema.history import ALL_TABLES, HistorySettings
from cdclake.spark.changes import decode_task_error
from cdclake.spark.config import DEFAULT_MAX_BATCH_RECORDS, ReplicateConfig
from cdclake.spark.replicate import Replicator
from cdclake.spark.reporting import BatchProgress, BatchReport
from cdclake.spark.session import build_session, new_log_file

if TYPE_CHECKING:
    from cdclake.sinks.base import TableComparison
    from cdclake.sources.ranges import Source
    from cdclake.spark.session import SparkSession
    from cdclake.workload import Stream

_console = Console(stderr=True, highlight=False)
_FORMATS = ", ".join(FORMAT_NAMES)
DEAD_LETTERS_EXIT = 3


def _pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    result = {}
    for item in items or ():
        name, equals, value = item.partition("=")
        if not equals or not name.strip():
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint=flag)
        result[name.strip()] = value
    return result


def _settings(config: Path | None, overrides: dict[str, dict[str, Any]]) -> JobSettings:
    try:
        document = read_toml(config) if config is not None else {}
        return job_settings(merged(document, overrides))
    except CdclakeError as exc:
        raise typer.BadParameter(str(exc)) from exc


ConfigOption = Annotated[Path | None, typer.Option("--config", "-c", metavar="FILE",
                                                   help="Job settings in TOML (the keys: cdclake/jobconfig.py).")]
VerboseOption = Annotated[bool, typer.Option("--verbose", help="Spark's own log on the terminal, not in a file.")]

SinkOption = Annotated[str | None, typer.Option("--sink", metavar="URL", help="Tables in this database "
                                                "instead of Iceberg: jdbc:postgresql://HOST:PORT/DATABASE?user="
                                                "U&password=P, or jdbc:mariadb://... (jdbc:mysql://...) "
                                                "(docs/sinks.md).")]

FormatOptionsOption = Annotated[list[str] | None, typer.Option("--option", "-o", metavar="NAME=VALUE",
                                                               help="A format option under its upstream name "
                                                               "(enable-tidb-extension=true); repeatable.")]


def cli_session(master: str | None, verbose: bool, **settings: Any) -> SparkSession:
    """:func:`build_session` for a command: unless ``verbose``, Spark's log goes to a new file, named
    on stderr, and the terminal keeps the command's own output."""
    log_file = None if verbose else new_log_file()
    if log_file is not None:
        _console.print(f"[dim]Spark's log: {log_file}[/]")
    return build_session(master, log_file=log_file, **settings)


# Text, not a Path: typer would make s3a://bucket/lake the local directory s3a:/bucket/lake.
WarehouseOption = Annotated[str | None, typer.Option("--warehouse", metavar="DIR|URI",
                                                     help="The Iceberg warehouse: a directory (default: warehouse) "
                                                     "or a URI (s3a://bucket/lake).")]
CatalogOption = Annotated[str | None, typer.Option("--catalog", metavar="NAME",
                                                   help="The Spark catalog of the lake tables (default: lake).")]


def replicate(
    config: ConfigOption = None,
    captured: Annotated[Path | None, typer.Option("--captured", metavar="ROOT", help="Read the topics captured "
                                                  "under ROOT (docs/captured-topics.md), not Kafka.")] = None,
    bootstrap_servers: Annotated[str | None, typer.Option("--bootstrap-servers", "-b", metavar="HOST:PORT",
                                                          help="Read from the Kafka brokers at HOST:PORT "
                                                          "(comma-separated).")] = None,
    topic: Annotated[list[str] | None, typer.Option("--topic", "-t", metavar="NAME",
                                                    help="A topic to read; repeatable.")] = None,
    topic_pattern: Annotated[str | None, typer.Option("--topic-pattern", metavar="REGEX",
                                                      help="Read every topic whose whole name matches REGEX.")] = None,
    kafka_option: Annotated[list[str] | None, typer.Option("--kafka-option", "-X", metavar="KEY=VALUE",
                                                           help="A librdkafka setting, such as "
                                                           "security.protocol=SASL_SSL; repeatable.")] = None,
    format_name: Annotated[str | None, typer.Option("--format", "-f", metavar="FORMAT", help="Wire format: "
                                                    f"{_FORMATS}.")] = None,
    option: FormatOptionsOption = None,
    warehouse: WarehouseOption = None,
    catalog: CatalogOption = None,
    sink: SinkOption = None,
    master: Annotated[str | None, typer.Option("--master", metavar="URL", help="Spark master, e.g. local[4] "
                                               "(default: local[2]).")] = None,
    include: Annotated[str | None, typer.Option("--include", metavar="REGEX", help="Replicate only the tables "
                                                "whose database.table matches REGEX.")] = None,
    exclude: Annotated[str | None, typer.Option("--exclude", metavar="REGEX", help="Leave out the tables whose "
                                                "database.table matches REGEX (it wins over --include).")] = None,
    history: Annotated[list[str] | None, typer.Option("--history", metavar="REGEX", help="Keep an SCD type 2 "
                                                      "history table beside the mirror of each table whose "
                                                      "database.table matches REGEX ('*': all); repeatable.")] = None,
    max_records: Annotated[int | None, typer.Option("--max-records", metavar="N", help="Records per batch, at "
                                                    f"most (default: {DEFAULT_MAX_BATCH_RECORDS}).")] = None,
    interval: Annotated[float | None, typer.Option("--interval", metavar="SECONDS",
                                                   help="Seconds between polls when caught up (default: 5).")] = None,
    unresolved_tail: Annotated[str | None, typer.Option("--unresolved-tail", metavar="keep|apply",
                                                        help="With --once, changes above the resolved ts once "
                                                        "caught up: keep them for a later run (the default), or "
                                                        "apply them.")] = None,
    on_bad_message: Annotated[str | None, typer.Option("--on-bad-message", metavar="dead-letter|fail",
                                                       help="An undecodable message goes to the dead-letter "
                                                       "table (the default), or stops the job before its batch "
                                                       "commits.")] = None,
    unsupported_ddl: Annotated[str | None, typer.Option("--unsupported-ddl", metavar="stop|skip|apply-supported",
                                                        help="A DDL the job cannot follow (TRUNCATE PARTITION, "
                                                        "...) stops the job before its batch applies anything "
                                                        "(the default), goes to the dead-letter table, or has "
                                                        "the parts it can follow applied and goes there with "
                                                        "the rest.")] = None,
    once: Annotated[bool, typer.Option("--once", help="Run until caught up, then exit; without it, run until "
                                       "SIGINT or SIGTERM.")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Keep Iceberg tables (or a database's, --sink) in step with a TiCDC or DataWorks stream.

    Settings come from --config FILE and the options, an option winning over the file. Each batch is
    shown as it commits (on standard error); at the end, standard output gets one line: batches, records
    read, changes applied, dead letters, tables touched and seconds. A signal stops the job after the
    batch under way commits. Exit status: 0 when the job stops as asked (caught up with --once, or on a
    signal) and put no message in the dead letters; 3 when it put some there (undecodable messages,
    claim-check files that cannot be read, handle-key-only rows with on-handle-key-only=dead-letter,
    DDLs the job cannot follow with --unsupported-ddl skip or apply-supported);
    1 on an error; 2 for a wrong command line or settings.
    """
    kafka = _pairs(kafka_option, "'--kafka-option'")
    if bootstrap_servers is not None:
        kafka["bootstrap.servers"] = bootstrap_servers
    overrides: dict[str, dict[str, Any]] = {
        "source": {"captured": None if captured is None else str(captured), "kafka": kafka or None,
                   "topics": topic, "topic-pattern": topic_pattern},
        "format": {"name": format_name, "options": _pairs(option, "'--option'") or None},
        "lake": {"warehouse": warehouse, "catalog": catalog, "master": master},
        "sink": {"url": sink},
        "tables": {"include": include, "exclude": exclude, "history": history},
        "batch": {"max-records": max_records, "interval-s": interval, "unresolved-tail": unresolved_tail,
                  "on-bad-message": on_bad_message, "unsupported-ddl": unsupported_ddl},
    }
    settings = _settings(config, overrides)
    try:
        # An unreachable broker or a topic that is not there, said before Spark starts or a table is made.
        settings.source.extents()
    except CdclakeError as exc:
        _console.print(f"[bold red]error[/]: {exc}")
        raise typer.Exit(1) from None
    spark = cli_session(settings.master, verbose, catalog=settings.replicate.catalog, warehouse=settings.warehouse,
                        conf=settings.spark_conf, extra_jars=settings.jars)
    try:
        stop = threading.Event()
        started = time.monotonic()
        with _stopping_on_signals(stop), _LiveDisplay() as display:
            replicator = Replicator(spark, settings.source, settings.replicate, on_progress=display.progress)
            reports = replicator.run(once=once, interval_s=settings.interval_s, stop=stop, on_batch=display.update)
        typer.echo(run_summary(reports, time.monotonic() - started))
        dead = sum(report.dead_letters for report in reports)
    except CdclakeError as exc:
        _console.print(f"[bold red]error[/]: {exc}")
        raise typer.Exit(1) from None
    except Exception as exc:  # Spark's own, for a task that stopped on an executor: say why in one line
        reason = decode_task_error(exc)
        if reason is None:
            raise
        _console.print(f"[bold red]error[/]: {reason}")
        raise typer.Exit(1) from None
    finally:
        spark.stop()
    if dead:
        # A row that did not reach its table must not look like a clean run to whatever started the job.
        job = settings.replicate
        _console.print(f"{dead} messages went to the dead letters ({job.catalog}.{job.namespace}.dead_letters) "
                       "and are not in the tables")
        raise typer.Exit(DEAD_LETTERS_EXIT)


@contextmanager
def _stopping_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM ask the loop to stop after the batch under way commits."""
    def request(signum: int, frame: Any) -> None:
        _console.print("stopping after the batch under way commits ...")
        stop.set()

    previous = {sig: signal.signal(sig, request) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _LiveDisplay:
    """A live table of the latest batch committed (events/s, resolved ts, lag per partition, tables
    touched) under a line of the batch under way (:func:`progress_line`)."""

    def __init__(self, console: Console = _console) -> None:
        self._console = console
        self._live = Live(console=console, refresh_per_second=2, transient=False)
        self._shown = False
        self._lock = threading.Lock()
        self._last: Group | None = None  # the latest batch committed, rendered
        self._under_way: str | None = None

    def __enter__(self) -> _LiveDisplay:
        self._live.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._live.__exit__(None, None, None)
        if self._shown and not self._console.is_terminal:
            # Off a terminal, rich prints the last table once, at the end, without ending its line: what
            # comes next (the run's summary, when stdout and stderr go to one file) would join it.
            self._console.line()

    def progress(self, now: BatchProgress) -> None:
        """The batch under way moved on (called from the job's threads)."""
        with self._lock:
            self._under_way = progress_line(now)
            self._render()

    def update(self, report: BatchReport) -> None:
        """A batch committed."""
        rate = report.records / report.seconds if report.seconds else 0.0
        head = Table.grid(padding=(0, 2))
        head.add_row(f"batch {report.batch}", f"{report.records} records in {report.seconds:.1f}s ({rate:,.0f}/s)",
                     f"resolved ts {report.resolved_ts}",
                     f"dead letters {report.dead_letters}")
        lag = Table("topic", "partition", "lag", title="lag")
        for (topic, partition), behind in sorted(report.lag.items()):
            lag.add_row(topic, str(partition), str(behind))
        touched = Table("table", "changes", title=f"tables touched ({report.writes} writes)")
        for name, count in sorted(report.tables.items()):
            touched.add_row(name, str(count))
        with self._lock:
            self._last, self._under_way = Group(head, lag, touched), None
            self._render()

    def _render(self) -> None:
        parts = [part for part in (self._under_way, self._last) if part is not None]
        self._live.update(Group(*parts))
        self._shown = True


def progress_line(now: BatchProgress) -> str:
    """One line of where the batch under way is: its phase, records read, changes decoded and, once it
    writes any, its tables written."""
    line = (f"batch {now.batch}: {now.phase}, {now.records_read} of {_counted(now.records, 'record')} read, "
            f"{_counted(now.changes_decoded, 'change')} decoded")
    if now.tables:
        last = f" (last: {now.last_table})" if now.last_table else ""
        line += f", {now.tables_done} of {_counted(now.tables, 'table')} written{last}"
    return line


def run_summary(reports: list[BatchReport], seconds: float) -> str:
    """One line for the end of a run: what its batches read, applied and set aside, the tables they
    touched, how long it took and, after a batch, the resolved ts reached."""
    records = sum(r.records for r in reports)
    tables = {name for r in reports for name in r.tables}
    rate = records / seconds if seconds else 0.0
    resolved = f"; resolved ts {reports[-1].resolved_ts}" if reports and reports[-1].resolved_ts is not None else ""
    return (f"replicated {_counted(len(reports), 'batch', 'batches')}: {_counted(records, 'record')} read, "
            f"{_counted(sum(r.changes_applied for r in reports), 'change')} applied, "
            f"{_counted(sum(r.dead_letters for r in reports), 'dead letter')}, "
            f"{_counted(len(tables), 'table')} in {seconds:.1f} s ({rate:,.0f} records/s){resolved}")


def _counted(count: int, noun: str, plural: str | None = None) -> str:
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


DEMO_MARK = ".cdclake-demo"


def demo(
    format_name: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT",
                                             help=f"Wire format: {_FORMATS}.")] = "canal-json",
    option: FormatOptionsOption = None,
    directory: Annotated[Path, typer.Option("--dir", metavar="DIR", help="Where the stream and the warehouse "
                                            "go: a new or empty directory, or an earlier demo's (replaced).")]
    = Path("cdclake-demo"),
    transactions: Annotated[int, typer.Option("--transactions", metavar="N",
                                              help="Upstream transactions to simulate.")] = 300,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Seed of the simulated upstream.")] = 7,
    master: Annotated[str, typer.Option("--master", metavar="URL", help="Spark master, e.g. local[4].")] = "local[2]",
    kafka: Annotated[bool, typer.Option("--kafka", help="Stream through a Kafka broker started for the demo "
                                        "(Apache Kafka from Maven Central, on 127.0.0.1), not through files.")]
    = False,
    bootstrap_servers: Annotated[str | None, typer.Option(
        "--bootstrap-servers", "-b", metavar="HOST:PORT",
        help="Stream through your own Kafka instead: the demo creates a new topic there.")] = None,
    sink: Annotated[str | None, typer.Option("--sink", metavar="URL", help="Replicate into this database "
                                             "instead (jdbc:postgresql://...): into new schemas named "
                                             "demo_<time>_<database>, nothing of the database's own touched.")]
    = None,
    history: Annotated[bool, typer.Option("--history", help="Keep a history table (SCD type 2) of every table "
                                          "too, and compare each with the simulator's history.")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Simulate an upstream database, stream it in FORMAT to a captured topic (or Kafka), replicate it into
    a local Iceberg warehouse (or the database --sink names), and compare every table with the upstream."""
    from cdclake.workload import Workload, WorkloadSpec, produce

    try:
        options = {**get_codec(format_name).demo_options, **_pairs(option, "'--option'")}
    except CdclakeError as exc:
        raise typer.BadParameter(str(exc)) from exc
    console = Console(highlight=False)
    _fresh_demo_directory(directory)
    # PostgreSQL's text cannot hold NUL (docs/sinks.md): a database demo's strings hold none.
    workload = Workload(WorkloadSpec(seed=seed, transactions=transactions, rename_table=True, text_nul=sink is None))
    try:
        stream = produce(workload, format_name, options, duplicates=2)
    except CdclakeError as exc:
        raise typer.BadParameter(str(exc)) from exc
    for line in (*workload.summary().lines(), *stream.lines()):
        console.print(line)
    with ExitStack() as stack:
        source = _demo_source(stream, directory, kafka or bootstrap_servers is not None, bootstrap_servers, stack)
        # The demo's few small batches are over before HotSpot's optimizing compiler pays back its CPU.
        spark = cli_session(master, verbose, warehouse=directory / "warehouse", short_lived=True)
        stack.callback(spark.stop)
        config = _demo_config(format_name, stream.codec_options, max(1000, len(stream) // 3), sink,
                              HistorySettings((ALL_TABLES,) if history else ()))
        started = time.monotonic()
        try:
            with _LiveDisplay() as display:
                replicator = Replicator(spark, source, config, on_progress=display.progress)
                reports = replicator.run(once=True, on_batch=display.update)
        except CdclakeError as exc:
            _console.print(f"[bold red]error[/]: {exc}")
            raise typer.Exit(1) from None
        console.print(run_summary(reports, time.monotonic() - started), soft_wrap=True)
        expected = workload.oracle().carried(format_name, stream.codec_options)
        comparisons = _demo_comparisons(spark, config, {**expected.tables, **expected.history_tables(config.history)})
    _print_comparisons(console, comparisons)
    if not all(c.equal for c in comparisons):
        raise typer.Exit(1)
    where = f"warehouse in {directory / 'warehouse'}" if sink is None else f"schemas {config.namespace}_*"
    histories = ", every history table the upstream's history" if history else ""
    console.print(f"every table equals the upstream{histories}; {where}")


def _demo_config(format_name: str, options: Mapping[str, Any], batch: int, sink: str | None,
                 history: HistorySettings) -> ReplicateConfig:
    """The demo's job: into the local warehouse, or into schemas of the database ``sink`` names that no
    earlier run made (the job's own in ``demo_<time>``, each upstream database's in ``demo_<time>_<db>``)."""
    try:
        if sink is None:
            return ReplicateConfig(format_name, options, max_batch_records=batch, history=history)
        run = f"demo_{time.strftime('%Y%m%d%H%M%S')}"
        return ReplicateConfig(format_name, options, max_batch_records=batch, sink=sink, namespace=run,
                               target_namespace=run + "_{database}", history=history)
    except CdclakeError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--history'" if history else "'--sink'") from exc


def _demo_comparisons(spark: SparkSession, config: ReplicateConfig, tables: Mapping[tuple[str, str], Any]
                      ) -> list[TableComparison]:
    from cdclake.sinks import compare_tables as compare_sink_tables
    from cdclake.spark.verify import compare_tables, lake_name_in

    if config.sink is None:
        return compare_tables(spark, tables, lake_name_in(config.catalog))
    naming = config.naming()
    return compare_sink_tables(config.sink, tables, naming.target)


def _fresh_demo_directory(directory: Path) -> None:
    """``directory`` made empty and marked as a demo's: refused where it holds anything but an earlier
    demo, since a mistyped --dir must not delete a user's files."""
    import shutil

    if directory.exists() and any(directory.iterdir()):
        if not (directory / DEMO_MARK).exists():
            raise typer.BadParameter(f"{directory} holds files of its own, not an earlier demo's: name a new or "
                                     "empty directory", param_hint="'--dir'")
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / DEMO_MARK).write_text("made by cdclake demo, which replaces this directory when run again\n")


def _demo_source(stream: Stream, directory: Path, kafka: bool, bootstrap: str | None, stack: ExitStack) -> Source:
    """The demo's stream as a source: a captured topic under ``directory``, or a new topic on Kafka (a
    broker started here and stopped with ``stack`` unless ``bootstrap`` names one)."""
    from cdclake.sources.captured import CapturedTopics
    from cdclake.sources.kafka import KafkaTopics, create_topic
    from cdclake.workload import produce_to_kafka, write_captured

    if not kafka:
        write_captured(stream, directory / "stream", stream.topic)
        return CapturedTopics(directory / "stream")
    if bootstrap is None:
        from cdclake.localkafka import LocalKafka

        bootstrap = stack.enter_context(LocalKafka()).bootstrap
        _console.print(f"[dim]Kafka broker started at {bootstrap}[/]")
    config = {"bootstrap.servers": bootstrap}
    topic = f"{stream.topic}-{time.strftime('%Y%m%d%H%M%S')}"
    create_topic(config, topic, len(stream.partitions))
    produce_to_kafka(stream, config, topic)
    return KafkaTopics(config, names=[topic])


def _print_comparisons(console: Console, comparisons: list[TableComparison]) -> None:
    table = Table("upstream", "lake table", "rows", "missing", "unexpected", "verdict", title="Lake vs upstream")
    for c in comparisons:
        verdict = "[green]equal[/]" if c.equal else "[red]differs[/] " + "; ".join(c.column_differences)
        table.add_row(c.upstream, c.lake_table, str(c.lake_rows), str(c.missing), str(c.unexpected), verdict)
    console.print(table)
    for c in comparisons:
        for example in c.examples:
            console.print(f"{c.upstream}: {example}")
