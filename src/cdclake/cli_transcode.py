"""``cdclake transcode`` and ``cdclake produce``: the encoding side from the command line.

A topic is named the same way everywhere: ``kafka://HOST:PORT[,HOST:PORT]/TOPIC``, with librdkafka
settings from ``--kafka-option``, or the directory of a captured topic, ``ROOT/TOPIC``
(docs/captured-topics.md).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from cdclake.cli_replicate import _FORMATS, _pairs, _stopping_on_signals
from cdclake.errors import CdclakeError
from cdclake.model import RawMessage
from cdclake.producer import ProducerSpec, produce_to_kafka, write_captured
from cdclake.transcode.endpoints import Location
from cdclake.transcode.spec import TranscodeSpec
from cdclake.transcode.state import Progress
from cdclake.workload import Workload, WorkloadSpec
from cdclake.workload.production import Production

# Each print is one line, kept whole off a terminal too, where rich would wrap it at 80 columns.
_console = Console(stderr=True, highlight=False, soft_wrap=True)

KafkaOption = Annotated[list[str] | None, typer.Option("--kafka-option", "-X", metavar="KEY=VALUE",
                                                       help="A librdkafka setting; repeatable.")]
DispatcherOption = Annotated[str, typer.Option("--dispatcher", metavar="index-value|table",
                                               help="Rows by their key's hash, or each table to one partition.")]
RawChangeOption = Annotated[bool, typer.Option("--output-raw-change-event", help="Keep key-changing UPDATEs "
                                               "whole (with --dispatcher table).")]


def _location(text: str, kafka_option: list[str] | None, flag: str) -> Location:
    try:
        return Location.parse(text, _pairs(kafka_option, "'--kafka-option'"))
    except CdclakeError as exc:
        raise typer.BadParameter(str(exc), param_hint=flag) from exc


def transcode(
    from_format: Annotated[str, typer.Option("--from", metavar="FORMAT", help=f"The source's format: {_FORMATS}.",
                                             show_default=False)],
    to_format: Annotated[str, typer.Option("--to", metavar="FORMAT", help=f"The format to write: {_FORMATS}.",
                                           show_default=False)],
    source: Annotated[str, typer.Option("--source", metavar="TOPIC", help="kafka://HOST:PORT/TOPIC or ROOT/TOPIC.",
                                        show_default=False)],
    target: Annotated[str, typer.Option("--target", metavar="TOPIC", help="kafka://HOST:PORT/TOPIC (which exists) "
                                        "or ROOT/TOPIC.", show_default=False)],
    state: Annotated[Path, typer.Option("--state", metavar="DIR", help="Where the job keeps its progress; run again "
                                        "with the same DIR to resume.", show_default=False)],
    from_option: Annotated[list[str] | None, typer.Option("--from-option", metavar="NAME=VALUE",
                                                          help="Source format option; repeatable.")] = None,
    to_option: Annotated[list[str] | None, typer.Option("--to-option", metavar="NAME=VALUE",
                                                        help="Target format or producer option "
                                                        "(send-bootstrap-in-msg-count ...); repeatable.")] = None,
    partitions: Annotated[int | None, typer.Option("--partitions", min=1, metavar="N",
                                                   help="Target partitions (default: as many as the source "
                                                   "has).")] = None,
    dispatcher: DispatcherOption = "index-value",
    output_raw_change_event: RawChangeOption = False,
    kafka_option: KafkaOption = None,
    max_records: Annotated[int, typer.Option("--max-records", min=1, metavar="N",
                                             help="New source records per batch, at most.")] = 100_000,
    on_bad_message: Annotated[str, typer.Option("--on-bad-message", metavar="dead-letter|fail",
                                                    help="An undecodable message goes to the dead letters, or "
                                                    "stops the job.")] = "dead-letter",
    once: Annotated[bool, typer.Option("--once", help="Run until caught up, then exit.")] = False,
    interval: Annotated[float, typer.Option("--interval", metavar="SECONDS",
                                            help="Seconds between polls when idle.")] = 5.0,
    master: Annotated[str | None, typer.Option("--master", metavar="URL",
                                               help="Spark master, e.g. local[4].")] = "local[2]",
) -> None:
    """Transcode a stream from one format to another on Spark, by the target format's producer rules.

    Resumable: the job saves its plan before each batch writes and its progress after; a rerun with the
    same --state goes on, and writes no message twice (see docs/transcode.md)."""
    from cdclake.spark.session import build_session
    from cdclake.spark.transcode import TranscodeConfig, Transcoder

    source_at, target_at = _location(source, kafka_option, "'--source'"), _location(target, kafka_option, "'--target'")
    try:
        source_topics = source_at.source()
        count = partitions or len(source_topics.extents()) or 1
        producer = ProducerSpec(to_format, _pairs(to_option, "'--to-option'"), partitions=count,
                                topic=target_at.topic, dispatcher=dispatcher,
                                output_raw_change_event=output_raw_change_event)
        spec = TranscodeSpec(from_format, _pairs(from_option, "'--from-option'"), producer)
        spec.settings(), producer.bootstrap_options()  # the target's options checked before Spark starts
        config = TranscodeConfig(spec, max_batch_records=max_records, on_bad_message=on_bad_message)
        progress = Progress.load(state, spec.settings())  # one made with other settings is refused here
        sink = target_at.sink()
        held = sum(sink.ends(count).values())
    except CdclakeError as exc:
        raise typer.BadParameter(str(exc)) from exc
    for line in (f"{source_at} ({from_format}) -> {target_at} ({to_format}, {count} partitions)",
                 *spec.derivations()):
        _console.print(line)
    if held and progress.batch == 0 and progress.plan is None:
        _console.print(f"[bold yellow]warning[/]: {target_at} already holds {held} messages and {state} has no "
                       "progress: the whole stream goes after them (for a clean copy: an empty target, or the "
                       "--state that wrote them)")
    spark = build_session(master, warehouse=state / "warehouse", conf={"spark.ui.showConsoleProgress": "false"})
    try:
        spark.sparkContext.setLogLevel("ERROR")
        transcoder = Transcoder(spark, source_topics, sink, config, state)
        stop = threading.Event()
        with _stopping_on_signals(stop):
            reports = transcoder.run(once=once, interval_s=interval, stop=stop, on_batch=lambda report: _console.print(
                f"batch {report.batch}: {report.records} records read, {report.changes} row changes and "
                f"{report.messages} messages out, {report.duplicates} copies left out, {report.dead_letters} dead "
                f"letters, mark {report.mark}, {report.seconds:.1f}s"))
    except CdclakeError as exc:
        _console.print(f"[bold red]error[/]: {exc}")
        raise typer.Exit(1) from None
    finally:
        spark.stop()
    _console.print(f"{len(reports)} batches, {sum(r.messages for r in reports)} messages written to {target_at}; "
                   f"dead letters (if any) in {state / 'dead-letters'}")


def produce(
    format_name: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", help=f"The format to send: "
                                                      f"{_FORMATS}.", show_default=False)],
    to: Annotated[str, typer.Option("--to", metavar="TOPIC", help="kafka://HOST:PORT/TOPIC or ROOT/TOPIC.",
                                    show_default=False)],
    workload: Annotated[list[str] | None, typer.Option("--workload", "-w", metavar="NAME=VALUE",
                                                       help="A WorkloadSpec field (seed=7, transactions=100000, "
                                                       "tables=10 ...; docs/workload.md); repeatable.")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", "-o", metavar="NAME=VALUE",
                                                     help="Format or producer option; repeatable.")] = None,
    partitions: Annotated[int, typer.Option("--partitions", min=1, metavar="N", help="Partitions of the topic.")] = 4,
    dispatcher: DispatcherOption = "index-value",
    output_raw_change_event: RawChangeOption = False,
    watermark_interval_ms: Annotated[int, typer.Option("--watermark-interval-ms", min=1, metavar="MS",
                                                       help="Upstream time between watermarks.")] = 1000,
    final_watermark: Annotated[bool, typer.Option("--final-watermark/--no-final-watermark",
                                                  help="End with a watermark past the last commit.")] = True,
    duplicates: Annotated[int, typer.Option("--duplicates", min=0, metavar="N",
                                            help="Producer restarts re-sending what they had sent since their "
                                            "checkpoint.")] = 0,
    rate: Annotated[float, typer.Option("--rate", min=0, metavar="N",
                                        help="Messages per second, at most (0: as fast as they come).")] = 0,
    kafka_option: KafkaOption = None,
) -> None:
    """Simulate an upstream database (docs/workload.md) and send its stream in FORMAT to a topic, by
    the format's producer rules, at a target rate."""
    to_at = _location(to, kafka_option, "'--to'")
    try:
        spec = ProducerSpec(format_name, _pairs(option, "'--option'"), partitions=partitions, topic=to_at.topic,
                            dispatcher=dispatcher, output_raw_change_event=output_raw_change_event,
                            watermark_interval_ms=watermark_interval_ms, final_watermark=final_watermark,
                            duplicates=duplicates)
        spec.bootstrap_options()  # send-bootstrap-* given to a format without BOOTSTRAPs is refused
        production = Production(Workload(workload_from_pairs(_pairs(workload, "'--workload'"))), spec)
    except (CdclakeError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from exc
    started = time.monotonic()
    messages = paced(production.messages(), rate)
    try:
        if to_at.kafka is not None:
            sent = produce_to_kafka(messages, to_at.kafka, to_at.topic)
        else:
            assert to_at.root is not None
            sent = write_captured(messages, to_at.root, to_at.topic)
    except CdclakeError as exc:
        _console.print(f"[bold red]error[/]: {exc}")
        raise typer.Exit(1) from None
    seconds = time.monotonic() - started
    _console.print(f"{sent} messages to {to_at} in {seconds:.1f}s ({sent / seconds if seconds else 0:,.0f}/s); "
                   f"{len(production.watermarks)} watermark rounds, "
                   f"{sum(r.count for r in production.resent)} messages re-sent")


def workload_from_pairs(pairs: dict[str, str]) -> WorkloadSpec:
    """A :class:`WorkloadSpec` from ``name=value`` texts (``rows-per-transaction`` or
    ``rows_per_transaction``), each read as its field's type."""
    defaults = WorkloadSpec()
    names = {field.name for field in dataclasses.fields(WorkloadSpec)}
    values: dict[str, Any] = {}
    for given, text in pairs.items():
        name = given.replace("-", "_")
        if name not in names:
            raise ValueError(f"--workload {given}: not a workload setting; settings: {', '.join(sorted(names))}")
        kind: Any = type(getattr(defaults, name))
        try:
            if kind is bool:
                values[name] = {"true": True, "false": False}[text.strip().lower()]
            elif kind is dt.datetime:
                values[name] = dt.datetime.fromisoformat(text)
            else:
                values[name] = kind(text)
        except (KeyError, ValueError) as exc:
            raise ValueError(f"--workload {given}={text!r}: expected a {kind.__name__}") from exc
    return WorkloadSpec(**values)


def paced(messages: Iterable[RawMessage], rate: float, clock: Any = time) -> Iterator[RawMessage]:
    """The messages, no more than ``rate`` a second on average from the first (0: unpaced)."""
    if rate <= 0:
        yield from messages
        return
    started = clock.monotonic()
    for count, message in enumerate(messages):
        ahead = started + count / rate - clock.monotonic()
        if ahead > 0:
            clock.sleep(ahead)
        yield message

