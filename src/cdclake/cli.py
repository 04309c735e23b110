"""The ``cdclake`` command.

``decode`` prints one JSON object per event on standard output (the form :mod:`cdclake.eventjson`
documents) and one line per message it cannot decode on standard error; ``encode`` reads that JSON and
writes the format's messages (see :mod:`cdclake.message_files` for the file layouts). Exit status: 0 when
every message went through, 1 when some did not (the rest still did) or, for ``decode``, when Simple
protocol rows still wait for their table's schema at the end of the input, 2 for a wrong command line.
``capture`` saves Kafka topics as captured topics; ``replicate`` and ``demo`` (in
:mod:`cdclake.cli_replicate`) run the replication job, ``status`` (:mod:`cdclake.cli_status`) reports
on it, ``maintain`` (:mod:`cdclake.cli_maintain`) compacts its tables; ``transcode`` and ``produce``
(in :mod:`cdclake.cli_transcode`) the encoding side.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from cdclake import samples
from cdclake.claimcheck import HandleKeyOnlyError, decoder_for
from cdclake.cli_maintain import maintain
from cdclake.cli_replicate import demo, replicate
from cdclake.cli_status import status
from cdclake.cli_transcode import produce, transcode
from cdclake.errors import CdclakeError, DecodeError, EncodeError, OptionError
from cdclake.eventjson import dumps_event, loads_event
from cdclake.formats import FORMAT_NAMES, get_codec
from cdclake.formats.base import Codec
from cdclake.message_files import (
    STDIN,
    STDIN_NAME,
    VALUE_SUFFIX,
    key_beside,
    message_file_pairs,
    read_lines,
    read_message_file,
    write_lines,
    write_message_directory,
)
from cdclake.model import Event, Origin, PendingRow, RawMessage, RowChange
from cdclake.sources.captured import CaptureError, partitions, read_partition, topics
from cdclake.values import zone

_Part = TypeVar("_Part")

app = typer.Typer(
    help="Decode, encode, capture and replicate the Kafka change streams of TiCDC and Alibaba DataWorks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help, wrapped to the terminal: rich's tables cut long option names and words short ("--bootstr…")
    # in 80 columns.
    rich_markup_mode=None,
)


def _format_name(name: str) -> str:
    if name not in FORMAT_NAMES:
        raise typer.BadParameter(f"{name!r} is not a format; formats: {', '.join(FORMAT_NAMES)}")
    return name


FormatOption = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        parser=_format_name,
        metavar="FORMAT",
        help="Wire format: " + ", ".join(FORMAT_NAMES) + ".",
        show_default=False,
    ),
]
OptionsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--option",
        "-o",
        metavar="NAME=VALUE",
        help="A format option under its upstream name (enable-tidb-extension=true); repeatable.",
    ),
]
TzOption = Annotated[
    str | None,
    typer.Option(
        "--tz",
        metavar="ZONE",
        help="Time zone TIMESTAMP values are written in (IANA name, UTC or +HH:MM); default UTC.",
    ),
]


@dataclass
class Report:
    """Errors go to standard error as they happen; the count decides the exit status."""

    console: Console = field(default_factory=lambda: Console(stderr=True, soft_wrap=True, highlight=False))
    failures: int = 0

    def failure(self, where: object | None, reason: str) -> None:
        """One message (or line) that failed: where it is, if the reason does not say so, and why."""
        self.failures += 1
        place = "" if where is None else f"{where}: "
        self.console.print(Text.assemble(("error", "bold red"), f": {place}{reason}"))

    def note(self, text: str) -> None:
        self.console.print(Text(text))

    def exit(self) -> NoReturn:
        """End the command: status 1 if anything failed, else 0."""
        raise typer.Exit(1 if self.failures else 0)


def _parse_options(given: Iterable[str], tz: str | None) -> dict[str, str]:
    options = {}
    for item in given:
        name, equals, value = item.partition("=")
        if not equals or not name.strip():
            raise typer.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="'--option'")
        options[name.strip()] = value
    if tz is not None:
        # Checked here, before any message is read, so that the usage error names --tz.
        try:
            zone(tz)
        except OptionError as exc:
            raise typer.BadParameter(str(exc), param_hint="'--tz'") from None
        options["tz"] = tz
    return options


def _built(make: Callable[[Mapping[str, Any]], _Part], codec: Codec, options: Mapping[str, Any]) -> _Part:
    """The codec's decoder or encoder (``make``) for the options; a bad option is a usage error."""
    try:
        # The codec itself judges some values, such as a time zone name, so both steps can refuse.
        return make(codec.resolve(options))
    except OptionError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--option'") from exc


def _check_inputs_exist(paths: Iterable[Path], hint: str) -> None:
    # Checked here rather than by typer, whose own check takes "-" (standard input) for a missing file.
    for path in paths:
        if str(path) != STDIN and not path.exists():
            raise typer.BadParameter(f"{path} does not exist", param_hint=hint)


def _input_messages(format_name: str, files: list[Path], key_files: list[Path]) -> Iterator[RawMessage]:
    """The messages in the FILE arguments, in order, as the format's layout says to read them."""
    if not get_codec(format_name).binary:
        if key_files:
            raise typer.BadParameter(f"{format_name} messages have no keys to read", param_hint="'--key-file'")
        for path in files:
            if path.is_dir():
                raise typer.BadParameter(f"{path} is a directory; {format_name} reads files of lines")
        return chain.from_iterable(read_lines(path) for path in files)
    if key_files:
        if len(key_files) != len(files) or any(path.is_dir() for path in files):
            raise typer.BadParameter(
                f"give one --key-file per value FILE, in the same order ({len(key_files)} keys, {len(files)} files)",
                param_hint="'--key-file'",
            )
        return (read_message_file(value, key) for value, key in zip(files, key_files, strict=True))
    if STDIN in map(str, files):
        raise typer.BadParameter(f"{format_name} messages are binary files; standard input cannot hold several")
    pairs: list[tuple[Path, Path | None]] = []
    for path in files:
        in_directory = message_file_pairs(path) if path.is_dir() else [(path, key_beside(path))]
        if not in_directory:
            raise typer.BadParameter(f"{path} holds no message files (*{VALUE_SUFFIX})", param_hint="'FILE...'")
        pairs += in_directory
    return (read_message_file(value, key) for value, key in pairs)


def _captured_streams(root: Path, report: Report) -> list[Iterable[RawMessage]]:
    """Each partition captured under ``root``; a folder that is not a partition ends the command, since
    the records it may hold would go unread."""
    try:
        return [read_partition(root, topic, partition) for topic in topics(root)
                for partition in partitions(root, topic)]
    except CaptureError as exc:
        report.failure(None, str(exc))
        report.exit()


@app.command(short_help="Print the events of a stream's messages as JSON, one per line.")
def decode(
    format_name: FormatOption,
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="FILE",
            help="JSON formats: files of one message per line (- for standard input). Binary formats: files of "
            "one raw message value each (NAME.value is read with the key in NAME.key beside it, if any), or "
            "directories of such files.",
            show_default=False,
        ),
    ] = None,
    key_files: Annotated[
        list[Path] | None,
        typer.Option(
            "--key-file",
            "-k",
            metavar="KEY",
            exists=True,
            dir_okay=False,
            help="The raw key of the value FILE in the same position; repeat once per FILE.",
        ),
    ] = None,
    sample: Annotated[bool, typer.Option("--sample", help="Decode the sample stream bundled for the format.")] = False,
    captured: Annotated[
        Path | None,
        typer.Option(
            "--captured",
            metavar="ROOT",
            exists=True,
            file_okay=False,
            help="Decode every partition of the topics captured under ROOT (see docs/captured-topics.md).",
        ),
    ] = None,
    option: OptionsOption = None,
    tz: TzOption = None,
) -> None:
    """Print one JSON object per event of the messages in FILE... (or of the bundled --sample, or of the
    topics captured under --captured ROOT).

    A message that cannot be decoded is reported on standard error with its file and line (or topic,
    partition and offset) and the reason; the others are still printed, and the exit status is 1. So is
    it when Simple protocol rows still wait for their table's schema at the end of the input: they are
    printed as pending events only, and standard error says how many.

    TiCDC's large messages: with -o claim-check-storage-uri=DIR|URI a claim-check reference is printed
    as the row its file holds; a row sent as its handle key only is reported as an error, or printed as
    a large-message event with -o on-handle-key-only=dead-letter.
    """
    files = files or []
    options = _parse_options(option or [], tz)
    if [bool(files), sample, captured is not None].count(True) != 1:
        raise typer.BadParameter("give FILE arguments, --sample or --captured: one of them", param_hint="'FILE...'")
    report = Report()
    # Each stream is one partition's messages in order, and gets its own decoder: decoders keep
    # per-partition state, such as the Simple protocol's table schemas.
    streams: list[Iterable[RawMessage]]
    if sample:
        streams = [samples.sample_messages(format_name)]
        options = {**get_codec(format_name).sample_options, **options}
    elif captured is not None:
        streams = _captured_streams(captured, report)
    else:
        _check_inputs_exist(files, "'FILE...'")
        streams = [_input_messages(format_name, files, key_files or [])]
    codec = get_codec(format_name)
    out = sys.stdout.buffer
    count = 0
    pending: dict[Origin | None, PendingRow] = {}
    for stream in streams:
        decoder = _built(partial(decoder_for, codec), codec, options)
        waiting: dict[Origin | None, PendingRow] = {}  # the Simple protocol's rows still without a schema
        try:
            for message in stream:
                count += 1
                try:
                    events = decoder.decode(message)
                except DecodeError as exc:
                    report.failure(exc.origin or message.origin, f"{exc.format_name}: {exc.reason}")
                    continue
                except HandleKeyOnlyError as exc:  # its text names its place
                    report.failure(None, str(exc))
                    continue
                _track_waiting(waiting, events)
                out.write(b"".join(dumps_event(event) + b"\n" for event in events))
        except CaptureError as exc:  # a record the capture cannot read ends its partition
            report.failure(None, str(exc))
        flushed = decoder.flush()
        _track_waiting(waiting, flushed)
        out.write(b"".join(dumps_event(event) + b"\n" for event in flushed))
        pending |= waiting
    out.flush()
    if report.failures:
        report.note(f"{report.failures} of {count} messages could not be decoded")
    if pending:
        _report_pending(report, list(pending.values()))
    report.exit()


def _track_waiting(waiting: dict[Origin | None, PendingRow], events: Iterable[Event]) -> None:
    """A row the decoder holds for its schema comes out as a PendingRow, and again as a RowChange of the
    same origin when the schema arrives."""
    for event in events:
        if isinstance(event, PendingRow):
            waiting[event.origin] = event
        elif isinstance(event, RowChange) and waiting:
            waiting.pop(event.origin, None)


def _report_pending(report: Report, rows: list[PendingRow]) -> None:
    """Rows still waiting for their table's schema at the end of the input: never printed as rows."""
    report.failures += 1
    tables = Counter(f"{row.database}.{row.table} version {row.schema_version}" for row in rows)
    listed = ", ".join(f"{table} ({n})" for table, n in sorted(tables.items()))
    report.console.print(Text.assemble(("error", "bold red"), f": {len(rows)} row{'s' * (len(rows) != 1)} still "
                                       f"wait{'s' * (len(rows) == 1)} for a table schema at the end of the input "
                                       f"(no BOOTSTRAP or DDL brought it): {listed}"))


def _read_events(path: Path, report: Report) -> list[Event]:
    events = []
    for message in read_lines(path):
        try:
            events.append(loads_event(message.value or b""))
        except DecodeError as exc:
            report.failure(message.origin, exc.reason)
    return events


@app.command(short_help="Write the messages of a format that carry event JSON.")
def encode(
    format_name: FormatOption,
    events_file: Annotated[
        Path,
        typer.Argument(
            metavar="EVENTS",
            help="Event JSON, one object per line, as decode prints it (- for standard input).",
            dir_okay=False,
            show_default=False,
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="PATH",
            help="JSON formats: the file to write, one message per line (- for standard output). Binary formats: "
            "a new or empty directory for numbered .value/.key message files.",
            show_default=False,
        ),
    ],
    option: OptionsOption = None,
    tz: TzOption = None,
) -> None:
    """Write the messages of FORMAT that carry the events in EVENTS, in order.

    A line that is not an event is reported with its file, line and reason and left out (exit status 1);
    an event the format cannot carry stops the command before anything is written.
    """
    _check_inputs_exist([events_file], "'EVENTS'")
    source = STDIN_NAME if str(events_file) == STDIN else str(events_file)
    codec = get_codec(format_name)
    encoder = _built(codec.make_encoder, codec, _parse_options(option or [], tz))
    report = Report()
    events = _read_events(events_file, report)
    try:
        messages = encoder.encode(events)
    except EncodeError as exc:
        report.failure(source, f"{exc.format_name}: {exc.reason}; nothing written")
        report.exit()
    try:
        written = write_message_directory(messages, out) if codec.binary else write_lines(messages, out)
    except (OSError, ValueError) as exc:
        report.failure(out, str(exc))
        report.exit()
    target = "standard output" if str(out) == STDIN else out
    report.note(f"{written} messages from {len(events)} events written to {target}")
    if report.failures:
        report.note(f"{report.failures} lines of {source} could not be read as events")
    report.exit()


@app.command(short_help="Save Kafka topics to a directory as captured topics.")
def capture(
    bootstrap_servers: Annotated[
        str,
        typer.Option("--bootstrap-servers", "-b", metavar="HOST:PORT", help="Kafka brokers, comma-separated.",
                     show_default=False),
    ],
    to: Annotated[
        Path,
        typer.Option("--to", metavar="DIR", help="Where to capture: a new or empty directory, or an earlier "
                     "capture to continue.", show_default=False),
    ],
    topic: Annotated[
        list[str] | None, typer.Option("--topic", "-t", metavar="NAME", help="A topic to capture; repeatable.")
    ] = None,
    topic_pattern: Annotated[
        str | None,
        typer.Option("--topic-pattern", metavar="REGEX", help="Capture every topic whose whole name matches "
                     "REGEX (except Kafka's own, named __*)."),
    ] = None,
    kafka_option: Annotated[
        list[str] | None,
        typer.Option("--kafka-option", "-X", metavar="KEY=VALUE", help="A librdkafka setting, such as "
                     "security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512 or ssl.ca.location=PATH; repeatable."),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option("--resume/--from-beginning", help="Continue what DIR holds of these topics, or capture each "
                     "partition from its first offset, refusing a DIR that holds any of them."),
    ] = True,
    max_records: Annotated[
        int | None, typer.Option("--max-records", min=1, metavar="N", help="Stop after N records; a rerun goes on.")
    ] = None,
    until_caught_up: Annotated[
        bool,
        typer.Option("--until-caught-up/--follow", help="Stop at the end each partition had when the capture "
                     "began, or keep capturing new records, looking every second, until interrupted."),
    ] = True,
) -> None:
    """Save Kafka topics to DIR as captured topics (docs/captured-topics.md), every record under its offset.

    Each partition is read from where its capture in DIR ends (from its first offset, if nothing is
    captured yet) to its end; rerunning after a stop or a crash continues without duplicates or gaps.
    Prints what each partition received. Exit status: 0 when caught up, 1 on an error (what was captured
    stays, and a rerun continues), 130 when interrupted, 2 for a wrong command line.
    """
    # Imported here: confluent_kafka and rich's progress display would slow every other command's start.
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from cdclake.capture import KafkaCapture

    if (topic is None) == (topic_pattern is None):
        raise typer.BadParameter("give --topic NAME (repeatable) or --topic-pattern REGEX: one of them")
    config = {}
    for item in kafka_option or []:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="'--kafka-option'")
        config[key.strip()] = value
    if "bootstrap.servers" in config:
        raise typer.BadParameter("give the brokers with --bootstrap-servers", param_hint="'--kafka-option'")
    config["bootstrap.servers"] = bootstrap_servers
    report = Report()
    try:
        kafka_capture = KafkaCapture(config, to, topic, topic_pattern, fresh=not resume)
    except re.error as exc:
        raise typer.BadParameter(f"not a regular expression: {exc}", param_hint="'--topic-pattern'") from exc
    except OptionError as exc:  # a setting librdkafka refuses
        raise typer.BadParameter(str(exc), param_hint="'--kafka-option'") from exc
    except CaptureError as exc:
        report.failure(None, str(exc))
        report.exit()
    started, interrupted = time.monotonic(), False
    progress = Progress(TextColumn("capturing"), BarColumn(), MofNCompleteColumn(), TextColumn("records"),
                        TimeRemainingColumn(), console=report.console, transient=True,
                        disable=not report.console.is_terminal)
    with progress, kafka_capture:
        task = progress.add_task("capture", total=None)
        try:
            kafka_capture.run(max_records, follow=not until_caught_up,
                              on_pass=lambda planned: progress.reset(task, total=planned),
                              on_records=lambda copied: progress.advance(task, copied))
        except KeyboardInterrupt:
            interrupted = True
        except (CdclakeError, OSError) as exc:
            report.failure(None, str(exc))
    for torn in kafka_capture.repaired:
        report.note(f"{torn.segment}: cut a torn last line ({torn.length} bytes) that a stopped capture left")
    records = sum(captured.records for captured in kafka_capture.partitions.values())
    if records or not report.failures:
        table = Table("topic", "partition", "records", "offsets", title=f"captured into {to}")
        for (name, partition), captured in sorted(kafka_capture.partitions.items()):
            offsets = "-" if captured.first is None else f"{captured.first}-{captured.last}"
            table.add_row(name, str(partition), str(captured.records), offsets)
        Console(highlight=False).print(table)
        partitions_read = len(kafka_capture.partitions)
        report.note(f"{records} record{'s' * (records != 1)} from {partitions_read} "
                    f"partition{'s' * (partitions_read != 1)} in {time.monotonic() - started:.1f} s")
    if interrupted:
        report.note("interrupted; a rerun continues where this capture stopped")
        raise typer.Exit(130)
    report.exit()


# The short help of each command in the command list: click would cut a docstring's first sentence.
app.command(short_help="Keep Iceberg tables in step with a TiCDC or DataWorks stream.")(replicate)
app.command(short_help="Show what a replication job has applied, and its lag.")(status)
app.command(short_help="Compact a job's mirror tables and expire old snapshots.")(maintain)
app.command(short_help="Simulate, stream, replicate and verify a database, all locally.")(demo)
app.command(short_help="Transcode a stream from one format to another on Spark.")(transcode)
app.command(short_help="Send a simulated upstream's stream in a format to a topic.")(produce)


def main() -> None:
    """The ``cdclake`` console script."""
    app()
