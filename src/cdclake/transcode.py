"""Transcoding: a decoded stream laid out again by another format's producer rules.

The Spark job (:mod:`cdclake.spark.transcode`) reads a source in bounded batches; this module holds
everything of it that is not Spark: what a source message becomes on the way (:class:`RecordWriter`,
:func:`read_records`), how one target partition's events are laid out and encoded
(:func:`lay_out`), how far a batch may go (:func:`resolve_batch`), and the progress file that makes the
job resumable (:class:`Progress`). :func:`transcode_messages` does it all in this process, for a stream
held in memory, as one batch: the reference the job is tested against.

**Order.** The output is what the target format's producer would have sent for the same upstream:
the same :class:`~cdclake.workload.producer.Router` lays it out (rows by key, DDL broadcast or to
partition 0, watermarks to every partition, Simple BOOTSTRAPs, DataWorks sequenceIds, Open batches).

* A source **with watermarks** (Open Protocol, Simple, Canal-JSON with ``enable-tidb-extension``) is
  transcoded up to its resolved ts R, the minimum over source partitions of the newest watermark each
  announced (and below any row still waiting for its schema). A batch emits the changes with
  ``R_before < commit ts <= R``, in commit-ts order, and a target watermark at each source watermark ts
  in that window, after the changes at or below it: a target watermark never says more than every
  source partition said, each target partition is in commit-ts order, and a DDL comes after every
  change below it and before every change above it. Changes above R wait: the next batch reads their
  partition again from the first message holding one (``resume``), and drops what it finds at or below
  R, which was emitted. That also drops the copies a producer restart re-sent of changes already out;
  copies within the window (and a DDL's copies on every partition) go out once.
* A source **without watermarks** (Canal-JSON without the extension, DataWorks) is ordered by the
  commit time it carries (``es``, ``eventTime``, as a derived ts) and then its sequence. Each partition
  sends its changes in that order, so one read up to ts t has nothing below t to come, and one read to
  its end nothing at all: a batch emits the changes below the lowest newest ts read of the partitions
  it did not read to their end (:func:`unwatermarked_bound`; the replication job's resolved sequence),
  and the rest wait as above. So a DDL does not overtake older rows of a slower partition. A change read
  for the first time below what was emitted (a partition out of order, or a copy a restart re-sent)
  goes out late: at-least-once. DataWorks heartbeats go to a DataWorks target once every source
  partition has passed them and the changes before them are out; a target that needs watermarks gets
  none, for nothing in the source says that a partition has no older change left to send.

**Derived.** What the target needs and the source does not carry:

* a **commit ts** (Open Protocol, Simple, Canal-JSON with the extension) from a source without one:
  the commit's physical millisecond the source carries (:attr:`~cdclake.formats.base.Codec.commit_ms_of`)
  shifted past TiDB's 18 logical bits, so the logical part is 0 and commits of one millisecond share
  it. Where the source carries no such time either, the change is a dead letter with the reason.
* a **table schema** for Simple protocol rows, from a source that sends none: the row's columns and
  types as the source carries them, its key columns as the primary key (NOT NULL), the version the
  commit ts of the first row of that shape; a new shape (after a DDL) is a new version, BOOTSTRAPped
  before its first row. A DDL carries the schema its statement makes of the table's latest
  (:func:`cdclake.schema.ddl.interpret`), versioned by its commit ts, so that it names its table.
* a source format's own fields (``meta``) stay only when the target is the same format.
"""

from __future__ import annotations

import base64
import contextlib
import copyreg
import hashlib
import io
import os
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import orjson

from cdclake.errors import CdclakeError, DecodeError, EncodeError, OptionError
from cdclake.eventjson import schema_from_json, schema_to_json
from cdclake.formats import get_codec
from cdclake.formats.base import Codec, Encoder
from cdclake.model import (
    Bootstrap,
    ColumnSchema,
    Ddl,
    Event,
    Heartbeat,
    IndexSchema,
    LargeMessageRef,
    Op,
    Origin,
    PendingRow,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.schema.ddl import interpret, schema_after, table_before
from cdclake.sources.captured import CapturedTopics, is_partition_name, partition_extent
from cdclake.sources.kafka import KafkaTopics
from cdclake.sources.ranges import OffsetRange, PartitionExtent, Source
from cdclake.types import MySQLType
from cdclake.workload.output import produce_to_kafka, write_captured
from cdclake.workload.producer import ProducerSpec, Router

if TYPE_CHECKING:
    import pyarrow as pa

INT64_MAX = 2**63 - 1
PROGRESS_FILE = "progress.json"
DEAD_LETTERS_DIR = "dead-letters"
_LOGICAL_BITS = 18
_SEQUENCE_DIGITS = 40  # sequences sort as text: zero-padded


class TranscodeError(CdclakeError):
    """A transcode that cannot go on: a setting, a target, or a progress file that does not fit."""


# --- what to transcode ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TranscodeSpec:
    """From which format (and its options) into which topic layout (a producer spec: format, options,
    partitions, dispatcher ...)."""

    source_format: str
    source_options: Mapping[str, Any]
    target: ProducerSpec

    def __post_init__(self) -> None:
        object.__setattr__(self, "source_options", self.source_codec.resolve(self.source_options))

    @property
    def source_codec(self) -> Codec:
        return get_codec(self.source_format)

    @property
    def resolves(self) -> bool:
        """Whether the source announces resolved timestamps, so batches go up to one."""
        return self.source_codec.has_watermarks(self.source_options)

    @property
    def target_needs_commit_ts(self) -> bool:
        # The formats with watermarks are those that write a commit ts with every change.
        return get_codec(self.target.format_name).has_watermarks(self.target.codec_options())

    @property
    def keeps_meta(self) -> bool:
        return self.source_format == self.target.format_name

    @property
    def target_carries_heartbeats(self) -> bool:
        try:
            get_codec(self.target.format_name).encoder(self.target.codec_options()).encode([Heartbeat(0)])
        except CdclakeError:
            return False
        return True

    def settings(self) -> dict[str, Any]:
        """The settings as JSON: a progress file made with other settings is refused."""
        target = self.target
        return {
            "source": {"format": self.source_format, "options": _json_ready(self.source_options)},
            "target": {"format": target.format_name, "options": _json_ready(target.codec_options()),
                       "bootstrap": _json_ready(target.bootstrap_options()) if target.sends_bootstraps() else None,
                       "partitions": target.partitions, "topic": target.topic, "dispatcher": target.dispatcher,
                       "output_raw_change_event": target.output_raw_change_event},
        }

    def derivations(self) -> list[str]:
        """What the target needs that the source does not carry, and what the transcoder does about it:
        for the job's report and ``cdclake transcode``'s first lines."""
        source, target = self.source_format, self.target.format_name
        lines = []
        if not self.resolves:
            lines.append(f"{source} carries no watermark: changes are ordered by the commit time and sequence it "
                         "carries, each batch emitting those below what every partition not read to its end has "
                         "passed; a change that comes later below it goes out late")
            if self.target.carries_watermarks() and not self.target_carries_heartbeats:
                lines.append(f"the {target} stream gets no watermarks: nothing resolves a ts")
            if self.target_needs_commit_ts:
                lines.append(f"{target} needs a commit ts: derived from the source's commit millisecond "
                             "(logical part 0); a change without one is a dead letter")
        if self.target.sends_bootstraps() and not ProducerSpec(source).sends_bootstraps():
            lines.append("Simple rows need their table's schema: derived from the rows' columns and types, key "
                         "columns as primary key, a new version (BOOTSTRAPped) for each new shape; a DDL's from its "
                         "statement")
        if not self.keeps_meta:
            lines.append(f"fields only {source} has (meta) are left behind; {target}'s are made as its producer makes "
                         "them")
        return lines


def _json_ready(options: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value if isinstance(value, bool | int | float | str) or value is None else str(value)
            for name, value in sorted(options.items())}


# --- where from and where to ---------------------------------------------------------------------------


class Sink(Protocol):
    """Where a transcoded topic goes: its partitions' ends, and appending messages, each to the partition
    its origin names."""

    @property
    def topic(self) -> str: ...

    def ends(self, partitions: int) -> dict[int, int]: ...

    def write(self, messages: list[RawMessage]) -> int: ...


@dataclass(frozen=True)
class CapturedSink:
    """A captured topic (docs/captured-topics.md): ``root/topic/<partition>/``."""

    root: Path
    topic: str

    def ends(self, partitions: int) -> dict[int, int]:
        ends = {}
        for partition in range(partitions):
            extent = partition_extent(self.root, self.topic, partition)
            ends[partition] = 0 if extent is None else extent.high
        return ends

    def write(self, messages: list[RawMessage]) -> int:
        return write_captured(messages, self.root, self.topic)


@dataclass(frozen=True)
class KafkaSink:
    """A Kafka topic that exists with at least the layout's partitions; librdkafka ``config``."""

    config: Mapping[str, Any]
    topic: str

    def ends(self, partitions: int) -> dict[int, int]:
        extents = KafkaTopics(self.config, names=[self.topic]).extents()
        found = sorted(partition for topic, partition in extents if topic == self.topic)
        if len(found) < partitions:
            raise TranscodeError(f"Kafka topic {self.topic} has {len(found)} partitions; the target layout needs "
                                 f"{partitions} (create the topic with them, or give --partitions {len(found)})")
        return {partition: extents[(self.topic, partition)].high for partition in range(partitions)}

    def write(self, messages: list[RawMessage]) -> int:
        return produce_to_kafka(messages, self.config, self.topic)


@dataclass(frozen=True)
class Location:
    """``kafka://HOST:PORT[,HOST:PORT]/TOPIC``, or the directory of a captured topic (``ROOT/TOPIC``)."""

    topic: str
    root: Path | None = None
    kafka: Mapping[str, Any] | None = None

    @classmethod
    def parse(cls, text: str, kafka_config: Mapping[str, Any] | None = None) -> Location:
        if text.startswith("kafka://"):
            parts = urlsplit(text)
            topic = parts.path.strip("/")
            if not parts.netloc or not topic or "/" in topic:
                raise OptionError(f"{text!r}: expected kafka://HOST:PORT[,HOST:PORT]/TOPIC")
            return cls(topic, kafka={**(kafka_config or {}), "bootstrap.servers": parts.netloc})
        if "://" in text:
            raise OptionError(f"{text!r}: a kafka://HOST:PORT/TOPIC address or a captured topic's directory")
        path = Path(text)
        if not path.name:
            raise OptionError(f"{text!r}: name the captured topic's own directory, ROOT/TOPIC")
        return cls(path.name, root=path.parent)

    def source(self) -> Source:
        if self.kafka is not None:
            return KafkaTopics(self.kafka, names=[self.topic])
        assert self.root is not None
        directory = self.root / self.topic
        if not directory.is_dir():
            raise OptionError(f"{directory}: no captured topic there")
        inside = sorted(p.name for p in directory.iterdir() if p.is_dir())
        # Only where no folder is a partition: a stray folder among partitions is the reader's to refuse.
        if not any(map(is_partition_name, inside)):
            hint = f" (a root of captured topics? its topics: {', '.join(inside)})" if inside else ""
            raise OptionError(f"{directory}: no partition directories (0/, 1/ ...) there{hint}; name the captured "
                              "topic's own directory, ROOT/TOPIC")
        return CapturedTopics(self.root, [self.topic])

    def sink(self) -> Sink:
        if self.kafka is not None:
            return KafkaSink(dict(self.kafka), self.topic)
        assert self.root is not None
        return CapturedSink(self.root, self.topic)

    def __str__(self) -> str:
        if self.kafka is not None:
            return f"kafka://{self.kafka['bootstrap.servers']}/{self.topic}"
        assert self.root is not None
        return str(self.root / self.topic)


# --- reading: source messages into records --------------------------------------------------------------

CHANGE, WATERMARK, HEARTBEAT, SCHEMA, PENDING, HELD, PRIME, ERROR, POINT = (
    "change", "watermark", "heartbeat", "schema", "pending", "held", "prime", "error", "point")
# Within one ts, changes come before the watermark (or heartbeat) that covers them.
CHANGE_RANK, POINT_RANK, SCHEMA_RANK = 0, 1, -1

# (name, Spark SQL type) of a record. ``ts`` orders: the commit ts (or the one derived), a watermark's ts,
# a heartbeat's millisecond shifted like a commit ts; ``target`` is a row's target partition, -1 for every;
# ``identity`` is what copies of one change share (:func:`identity`); ``stub`` a row without its images,
# for the partitions that do not get it but count it (:attr:`Router.sees_every_row`).
RECORD_FIELDS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("index", "int"),
    ("piece", "int"),
    ("ts", "bigint"),
    ("rank", "int"),
    ("sequence", "string"),
    ("target", "int"),
    ("identity", "binary"),
    ("payload", "binary"),
    ("stub", "binary"),
    ("raw_key", "binary"),
    ("raw_value", "binary"),
    ("timestamp_ms", "bigint"),
    ("database", "string"),
    ("table", "string"),
    ("version", "bigint"),
    ("reason", "string"),
)
RECORD_DDL = ", ".join(f"`{name}` {sql_type}" for name, sql_type in RECORD_FIELDS)
RECORD_NAMES = tuple(name for name, _ in RECORD_FIELDS)
ORDER = ("ts", "rank", "sequence", "topic", "partition", "offset", "index", "piece")


def record_arrow_schema() -> pa.Schema:
    import pyarrow as pa

    arrow = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "binary": pa.binary()}
    return pa.schema([(name, arrow[sql_type]) for name, sql_type in RECORD_FIELDS])


class RecordWriter:
    """Collects records column by column and hands them out as Arrow record batches."""

    def __init__(self) -> None:
        self._columns: dict[str, list[Any]] = {name: [] for name in RECORD_NAMES}

    def __len__(self) -> int:
        return len(self._columns["kind"])

    def add(self, kind: str, origin: Origin | None, **fields: Any) -> None:
        origin = origin or Origin()
        fields.update(kind=kind, topic=origin.topic, partition=origin.partition, offset=origin.offset,
                      index=origin.index)
        for name, values in self._columns.items():
            values.append(fields.get(name))

    def take(self) -> pa.RecordBatch:
        import pyarrow as pa

        batch = pa.RecordBatch.from_pydict(self._columns, schema=record_arrow_schema())
        self._columns = {name: [] for name in RECORD_NAMES}
        return batch


@dataclass(frozen=True)
class ReadTask:
    """One source range, the schema messages its decoder must see first, and where the partition's
    earlier batches read up to (errors below it were reported then)."""

    offset_range: OffsetRange
    primes: tuple[RawMessage, ...] = ()
    read_until: int = 0


class _PartitionReader:
    """Decodes one source partition's range into records."""

    def __init__(self, spec: TranscodeSpec, writer: RecordWriter, read_until: int) -> None:
        self.spec, self._writer, self._read_until = spec, writer, read_until
        self._codec = spec.source_codec
        self._decoder = self._codec.decoder(spec.source_options)
        self._stubs = Router(spec.target).sees_every_row
        self._waiting: dict[tuple[int | None, int | None], PendingRow] = {}  # by the message's coordinates

    def prime(self, message: RawMessage) -> None:
        with contextlib.suppress(DecodeError):  # it failed when first read too: a dead letter then
            self._decoder.decode(message)

    def read(self, message: RawMessage) -> None:
        try:
            events = self._decoder.decode(message)
        except DecodeError as exc:
            self._error(message, str(exc))
            return
        for event in events:
            self._record(event, message)

    def finish(self) -> None:
        """What the range leaves undone: rows still waiting for their schema, and events the decoder
        still holds (a DataWorks update's first half); the next batch reads the partition again from
        their message."""
        for row in self._waiting.values():
            self._writer.add(PENDING, row.origin, ts=row.commit_ts, database=row.database, table=row.table,
                             version=row.schema_version)
        for event in self._decoder.flush():
            origin = event.row.origin if isinstance(event, LargeMessageRef) else event.origin
            self._writer.add(HELD, origin)

    def _error(self, message: RawMessage, reason: str) -> None:
        assert message.origin is not None
        if (message.origin.offset or 0) >= self._read_until:  # else reported when first read
            self._writer.add(ERROR, message.origin, raw_key=message.key, raw_value=message.value,
                             timestamp_ms=message.timestamp_ms, reason=reason)

    def _record(self, event: Event, message: RawMessage) -> None:
        writer = self._writer
        match event:
            case RowChange() | Ddl():
                if isinstance(event, RowChange):
                    self._waiting.pop(_coordinates(event.origin), None)  # its schema came in this range
                self._change(event, message)
            case LargeMessageRef():
                self._error(message, f"a {event.kind.value} message of {event.row.database}.{event.row.table}: the "
                                     f"full row is not in the stream ({event.location or 'read it from the upstream'})")
            case Watermark():
                writer.add(WATERMARK, event.origin, ts=event.ts)
            case Heartbeat():
                writer.add(HEARTBEAT, event.origin, ts=event.ts_ms)
            case Bootstrap():
                self._schema(event.schema, event.origin, message)
            case PendingRow():
                self._waiting[_coordinates(event.origin)] = event
            case _:
                pass  # transaction marks: the commit ts and the order already say what they say

    def _schema(self, schema: TableSchema, origin: Origin | None, message: RawMessage) -> None:
        self._writer.add(SCHEMA, origin, ts=-1, rank=SCHEMA_RANK, target=-1, payload=_pickled(schema))
        self._writer.add(PRIME, message.origin, raw_key=message.key, raw_value=message.value,
                         timestamp_ms=message.timestamp_ms, database=schema.database, table=schema.table,
                         version=schema.version)

    def _change(self, change: RowChange | Ddl, message: RawMessage) -> None:
        if isinstance(change, RowChange) and change.op is Op.UPDATE and change.after is None:
            self._error(message, f"an update of {change.database}.{change.table} without its new image (a lone "
                                 "first half of an update pair)")
            return
        sequence = self._codec.sequence_of(change)
        commit_ts = change.commit_ts
        if commit_ts is None:
            ms = self._codec.commit_ms_of(change)
            commit_ts = None if ms is None else ms << _LOGICAL_BITS
        if commit_ts is None and self.spec.target_needs_commit_ts:
            self._error(message, f"{self.spec.target.format_name} needs a commit ts; this "
                                 f"{self.spec.source_format} change carries neither one nor a commit time to derive "
                                 "it from")
            return
        if commit_ts is not None and commit_ts > INT64_MAX:
            self._error(message, f"commit ts {commit_ts} is beyond a 64-bit signed integer")
            return
        meta = change.meta if self.spec.keeps_meta else {}
        if isinstance(change, Ddl):
            self._add_change(replace(change, commit_ts=commit_ts, meta=meta), 0, -1, sequence)
            for schema in (change.schema_before, change.schema_after):
                if schema is not None:
                    self._writer.add(PRIME, message.origin, raw_key=message.key, raw_value=message.value,
                                     timestamp_ms=message.timestamp_ms, database=schema.database,
                                     table=schema.table, version=schema.version)
            return
        row = replace(change, commit_ts=commit_ts, meta=meta, before=_in_table_order(change.before, change.types),
                      after=_in_table_order(change.after, change.types))
        for piece_number, piece in enumerate(self.spec.target.pieces(row)):
            self._add_change(piece, piece_number, self.spec.target.partition_of(piece), sequence)

    def _add_change(self, change: RowChange | Ddl, piece: int, target: int, sequence: str | None) -> None:
        stub = None
        if self._stubs and isinstance(change, RowChange):
            stub = _pickled(replace(change, before=None, after=None, meta={}, origin=None))
        self._writer.add(CHANGE, change.origin, piece=piece, ts=-1 if change.commit_ts is None else change.commit_ts,
                         rank=CHANGE_RANK, sequence=_sortable(sequence), target=target, identity=identity(change),
                         payload=_pickled(change), stub=stub)


def _in_table_order(image: Mapping[str, Any] | None, types: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """An image with its columns in the table's order (that of ``types``), as TiCDC writes them: the
    Simple protocol sends them sorted by name, and Open Protocol tells a composite key's order only by
    the order of its columns."""
    if image is None or list(image) == list(types):
        return image
    ordered = {name: image[name] for name in types if name in image}
    ordered.update((name, value) for name, value in image.items() if name not in ordered)
    return ordered


def identity(change: RowChange | Ddl) -> bytes:
    """What two copies of a change share and two different changes of the same ts and sequence do not:
    a digest of its table, op and images (a DDL: its statement). ``repr`` writes every value exactly,
    and the same way for equal values, unlike pickle, whose output depends on which objects are shared."""
    if isinstance(change, Ddl):
        text = repr(("ddl", change.database, change.table, change.sql))
    else:
        images = tuple(None if image is None else tuple(image.items()) for image in (change.before, change.after))
        text = repr((change.op.value, change.database, change.table, images))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _mapping_as_dict(proxy: MappingProxyType[Any, Any]) -> tuple[type, tuple[dict[Any, Any]]]:
    return dict, (dict(proxy),)


def _by_fields(kind: type) -> Callable[[Any], tuple[type, tuple[Any, ...]]]:
    """A reducer that rebuilds a dataclass from its fields in order: the default one for slotted
    dataclasses calls ``dataclasses.fields`` for every object, and events hold one per column."""
    names = tuple(f.name for f in fields(kind))

    def reduce(item: Any) -> tuple[type, tuple[Any, ...]]:
        return kind, tuple([getattr(item, name) for name in names])

    return reduce


# Events are pickled with the read-only mappings decoders share (MappingProxyType) as plain dicts (the
# encoders take any mapping), and their dataclasses by their fields in order.
_DISPATCH: dict[type, Any] = {**copyreg.dispatch_table, MappingProxyType: _mapping_as_dict,
             **{kind: _by_fields(kind) for kind in (RowChange, Ddl, Origin, MySQLType, TableSchema, ColumnSchema,
                                                     IndexSchema, Watermark, Heartbeat)}}


def _pickled(item: Any) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(item)
    return buffer.getvalue()


def _coordinates(origin: Origin | None) -> tuple[int | None, int | None]:
    return (None, None) if origin is None else (origin.partition, origin.offset)


def _sortable(sequence: str | None) -> str:
    """A format's sequence (digits) as text that sorts as the number does; "" where there is none."""
    if sequence is None or not sequence.isdigit():
        return ""
    return sequence.rjust(_SEQUENCE_DIGITS, "0")


def read_records(spec: TranscodeSpec, source: Source, tasks: Iterable[ReadTask], batch_rows: int = 10_000
                 ) -> Iterator[pa.RecordBatch]:
    """The records of each task's range, its schema messages decoded first, in Arrow batches of about
    ``batch_rows`` records."""
    writer = RecordWriter()
    for task in tasks:
        reader = _PartitionReader(spec, writer, task.read_until)
        for message in task.primes:
            reader.prime(message)
        for message in source.read(task.offset_range):
            reader.read(message)
            if len(writer) >= batch_rows:
                yield writer.take()
        reader.finish()
    if len(writer):
        yield writer.take()


# --- laying out: one target partition ------------------------------------------------------------------


class _Discard(list[Any]):
    """The events of a partition this task does not write: routed, then forgotten."""

    def append(self, item: Any) -> None:
        pass


def derived_schema(row: RowChange, version: int) -> TableSchema:
    """A Simple protocol table schema for rows of ``row``'s shape (see the module docstring)."""
    keys = set(row.key_columns)
    columns = tuple(ColumnSchema(name, mtype, nullable=name not in keys) for name, mtype in row.types.items())
    indexes = (IndexSchema("PRIMARY", tuple(row.key_columns), unique=True, primary=True),) if row.key_columns else ()
    return TableSchema(row.database, row.table, columns, indexes, table_id=row.table_id, version=version)


class SchemaDeriver:
    """Table schemas for a Simple protocol target from a source that sends none: for rows, one version
    per shape (:func:`derived_schema`); for DDL, the schema before (the table's latest) and the schema
    after, read from the statement (:func:`cdclake.schema.ddl.interpret`), versioned by its commit ts."""

    def __init__(self, router: Router, state: Mapping[str, Any] | None = None) -> None:
        self._router = router
        self._schemas = {(s.database, s.table): s for s in map(schema_from_json, (state or {}).get("schemas", []))}

    def versioned(self, row: RowChange) -> RowChange:
        if row.schema_version is not None:
            return row
        latest = self._schemas.get((row.database, row.table))
        if latest is None or _shape(latest) != _row_shape(row):
            version = max(row.commit_ts or 0, latest.version + 1 if latest is not None and latest.version else 0)
            latest = self._schemas[(row.database, row.table)] = derived_schema(row, version)
            self._router.learn(latest)
            self._router.rebootstrap(row.database, row.table, row.table_id)
        return replace(row, schema_version=latest.version)

    def with_schemas(self, ddl: Ddl) -> Ddl:
        """``ddl`` with its schemas before and after, where it carries none and the statement can be read
        against the table's latest schema (else as it is: a Simple DDL message without ``tableSchema``)."""
        if ddl.schema_before is not None or ddl.schema_after is not None or ddl.commit_ts is None:
            return ddl
        before = self._schemas.get(table_before(ddl))
        try:
            after = schema_after(before, interpret(ddl, before))
        except CdclakeError:
            return ddl
        if after is not None:
            after = replace(after, table_id=None, version=ddl.commit_ts)
            self._schemas[(after.database, after.table)] = after
        if before is not None and (after is None or (after.database, after.table) != (before.database, before.table)):
            del self._schemas[(before.database, before.table)]
        return replace(ddl, schema_before=before, schema_after=after)

    def state(self) -> dict[str, Any]:
        return {"schemas": [schema_to_json(schema) for schema in self._schemas.values()]}


def _row_shape(row: RowChange) -> tuple[Any, ...]:
    return tuple((name, str(mtype)) for name, mtype in row.types.items()), tuple(row.key_columns)


def _shape(schema: TableSchema) -> tuple[Any, ...]:
    return tuple((column.name, str(column.type)) for column in schema.columns), tuple(schema.key_columns)


@dataclass(frozen=True)
class DeadLetter:
    """A source message that could not be transcoded (or one change of it the target cannot carry), where it
    came from, and why; the raw message where it is at hand."""

    origin: Origin | None
    reason: str
    key: bytes | None = None
    value: bytes | None = None
    timestamp_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        origin = self.origin or Origin()
        return {"topic": origin.topic, "partition": origin.partition, "offset": origin.offset, "index": origin.index,
                "timestamp": self.timestamp_ms, "key": _b64(self.key), "value": _b64(self.value),
                "reason": self.reason}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> DeadLetter:
        origin = Origin(topic=obj["topic"], partition=obj["partition"], offset=obj["offset"], index=obj["index"])
        return cls(origin, obj["reason"], _unb64(obj["key"]), _unb64(obj["value"]), obj["timestamp"])


@dataclass
class Layout:
    """One target partition's messages for a batch, what the producer rules remember after it, the row
    changes laid out on it and the re-delivered copies of them left out, and the changes the target
    format could not carry."""

    partition: int
    messages: list[RawMessage]
    router: dict[str, Any]
    derived: dict[str, Any]
    changes: int = 0
    duplicates: int = 0
    rejected: list[DeadLetter] = field(default_factory=list)


LayoutRecord = tuple[int, int, str, int, bytes | None, bytes]


def lay_out(spec: TranscodeSpec, partition: int, router_state: Mapping[str, Any] | None,
            derived_state: Mapping[str, Any] | None, records: Iterable[LayoutRecord]) -> Layout:
    """Lay out and encode target ``partition``'s events of a batch.

    ``records`` are ``(ts, rank, sequence, target, identity, payload)`` in :data:`ORDER`: the
    schemas a Simple source sent, then this partition's changes and the stubs of other partitions' rows
    (for a layout that sees every row), DDLs and points. Copies of one change (same ts, sequence and
    identity) go out once. A change the target format cannot carry is left out and returned in
    ``rejected``; the messages carry the physical time of the batch's newest ts as their timestamp."""
    target = spec.target
    router = Router.restore(target, router_state) if router_state is not None else Router(target)
    deriver = SchemaDeriver(router, derived_state) if target.sends_bootstraps() else None
    encoder = get_codec(target.format_name).encoder(target.codec_options())
    router.prime(encoder, partition)
    events: list[list[Any]] = [[] if p == partition else _Discard() for p in range(target.partitions)]
    group: tuple[int, int, str] | None = None
    identities: set[bytes] = set()
    changes = duplicates = newest = 0
    for ts, rank, sequence, row_partition, change_identity, payload in records:
        if (ts, rank, sequence) != group:
            group, identities, newest = (ts, rank, sequence), set(), max(newest, ts)
        if change_identity is not None:
            if change_identity in identities:
                duplicates += row_partition == partition
                continue
            identities.add(change_identity)
        item = pickle.loads(payload)
        match item:
            case TableSchema():
                router.learn(item)
            case RowChange():
                if deriver is not None:
                    item = deriver.versioned(item)
                router.place_row(item, row_partition, events)
                changes += row_partition == partition
            case Ddl():
                router.route_ddl(item if deriver is None else deriver.with_schemas(item), events)
            case Watermark() | Heartbeat():
                router.broadcast(item, events)
    try:
        messages, _ = router.encode(encoder, events[partition])
        rejected: list[DeadLetter] = []
    except EncodeError:
        messages, rejected = _encoded_apart(spec, router_state, partition, events[partition])
    sent_ms = newest >> _LOGICAL_BITS
    messages = [RawMessage(m.key, m.value, Origin(target.topic, partition), sent_ms, m.headers) for m in messages]
    return Layout(partition, messages, router.state(), deriver.state() if deriver is not None else {},
                  changes, duplicates, rejected)


def _encoded_apart(spec: TranscodeSpec, router_state: Mapping[str, Any] | None, partition: int, events: list[Any]
                   ) -> tuple[list[RawMessage], list[DeadLetter]]:
    """The partition's messages without the events its encoder refuses, found one by one with an encoder
    brought to where the batch began."""
    target = spec.target
    start = Router.restore(target, router_state) if router_state is not None else Router(target)

    def encoder() -> Encoder:
        fresh = get_codec(target.format_name).encoder(target.codec_options())
        start.prime(fresh, partition)
        return fresh

    probe, kept, rejected = encoder(), [], []
    for event in events:
        try:
            start.encode(probe, [event])
        except EncodeError as exc:
            rejected.append(DeadLetter(getattr(event, "origin", None), f"{exc} (not sent to {target.topic}"
                                                                       f"[{partition}])"))
            continue
        kept.append(event)
    messages, _ = start.encode(encoder(), kept)
    return messages, rejected


# --- progress: what a batch leaves for the next ---------------------------------------------------------


@dataclass
class PartitionProgress:
    """A source partition: the next batch reads from ``resume`` (again up to ``read_until``, where the
    last batch stopped, then on); ``newest_mark`` is the newest watermark ts (or DataWorks heartbeat
    millisecond) it announced, ``newest_read`` the newest commit ts (or ts derived) of a change read."""

    resume: int
    read_until: int
    newest_mark: int | None = None
    newest_read: int | None = None


@dataclass(frozen=True)
class Prime:
    """A message that defines a table schema (a Simple BOOTSTRAP or DDL) before a partition's ``resume``:
    the next batch's decoder reads it first."""

    message: RawMessage
    database: str
    table: str
    version: int | None


@dataclass(frozen=True)
class Plan:
    """A batch under way: what it reads, where each source partition ended and where each target
    partition ended before it wrote."""

    batch: int
    ranges: list[OffsetRange]
    target_ends: dict[int, int]
    source_ends: dict[tuple[str, int], int] = field(default_factory=dict)

    def behind(self) -> set[tuple[str, int]]:
        """The source partitions this batch does not read to their end."""
        ends = {(r.topic, r.partition): r.end for r in self.ranges}
        return {tp for tp, high in self.source_ends.items() if ends.get(tp, high) < high}


@dataclass
class Progress:
    """Everything a transcode keeps between batches, in ``progress.json`` of its state directory.

    A batch first saves its :class:`Plan`, then writes its output, then saves the progress after it
    with no plan. A batch found planned was interrupted: it runs again over the same ranges from the
    same progress, so it lays out the same messages, and writes only those past what each target
    partition had received (``target_ends``)."""

    settings: dict[str, Any]
    batch: int = 0
    partitions: dict[tuple[str, int], PartitionProgress] = field(default_factory=dict)
    mark: int = 0
    point_mark: int = 0
    points: list[int] = field(default_factory=list)
    primes: dict[tuple[str, int], list[Prime]] = field(default_factory=dict)
    router: dict[str, Any] | None = None
    derived: dict[str, Any] = field(default_factory=dict)
    plan: Plan | None = None
    written: int = 0

    # ``mark``: the changes at or below it are out (see :func:`resolve_batch`); ``point_mark``: the newest
    # watermark ts (heartbeat millisecond) emitted; ``points``: those announced above it, not emitted yet.

    def note(self, facts: BatchFacts) -> None:
        """Remember the newest watermark (heartbeat) and change ts each partition announced in a batch."""
        for tp, known in self.partitions.items():
            known.newest_mark = _newest(known.newest_mark, facts.marks.get(tp))
            known.newest_read = _newest(known.newest_read, facts.reads.get(tp))

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": self.settings,
            "batch": self.batch,
            "partitions": [[topic, partition, p.resume, p.read_until, p.newest_mark, p.newest_read]
                           for (topic, partition), p in sorted(self.partitions.items())],
            "mark": self.mark,
            "point_mark": self.point_mark,
            "points": self.points,
            "primes": [[topic, partition, *_message_to_json(prime.message), prime.database, prime.table, prime.version]
                       for (topic, partition), primes in sorted(self.primes.items()) for prime in primes],
            "router": self.router,
            "derived": self.derived,
            "plan": None if self.plan is None else {
                "batch": self.plan.batch,
                "ranges": [[r.topic, r.partition, r.start, r.end] for r in self.plan.ranges],
                "target_ends": [[partition, end] for partition, end in sorted(self.plan.target_ends.items())],
                "source_ends": [[topic, partition, end] for (topic, partition), end in
                                sorted(self.plan.source_ends.items())],
            },
            "written": self.written,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Progress:
        primes: dict[tuple[str, int], list[Prime]] = {}
        for topic, partition, offset, key, value, timestamp_ms, database, table, version in obj["primes"]:
            message = _message_from_json(topic, partition, offset, key, value, timestamp_ms)
            primes.setdefault((topic, partition), []).append(Prime(message, database, table, version))
        plan = obj["plan"]
        return cls(
            settings=obj["settings"],
            batch=obj["batch"],
            partitions={(topic, partition): PartitionProgress(*positions)
                        for topic, partition, *positions in obj["partitions"]},
            mark=obj["mark"],
            point_mark=obj["point_mark"],
            points=list(obj["points"]),
            primes=primes,
            router=obj["router"],
            derived=obj["derived"],
            plan=None if plan is None else Plan(plan["batch"], [OffsetRange(*r) for r in plan["ranges"]],
                                                dict(plan["target_ends"]),
                                                {(topic, partition): end for topic, partition, end in
                                                 plan["source_ends"]}),
            written=obj["written"],
        )

    @classmethod
    def load(cls, directory: Path, settings: Mapping[str, Any]) -> Progress:
        """The progress kept in ``directory``, or a fresh one; refuses one made with other settings."""
        path = Path(directory) / PROGRESS_FILE
        if not path.exists():
            return cls(dict(settings))
        try:
            progress = cls.from_json(orjson.loads(path.read_bytes()))
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise TranscodeError(f"{path}: not a transcode progress file: {exc}") from exc
        if progress.settings != settings:
            raise TranscodeError(f"{path} was made by a transcode with other settings ({progress.settings}); this one "
                                 f"has {dict(settings)}: give another state directory, or the same settings")
        return progress

    def save(self, directory: Path) -> None:
        """Write the progress durably and atomically: a crash leaves the old file or the new one."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        _write_durably(directory / PROGRESS_FILE, orjson.dumps(self.to_json()))


def _message_to_json(message: RawMessage) -> list[Any]:
    assert message.origin is not None
    return [message.origin.offset, _b64(message.key), _b64(message.value), message.timestamp_ms]


def _message_from_json(topic: str, partition: int, offset: int, key: str | None, value: str | None,
                       timestamp_ms: int | None) -> RawMessage:
    return RawMessage(_unb64(key), _unb64(value), Origin(topic=topic, partition=partition, offset=offset), timestamp_ms)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _write_durably(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    descriptor = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_dead_letters(directory: Path, batch: int, letters: Iterable[DeadLetter]) -> Path | None:
    """A batch's dead letters (messages it could not transcode, raw, with the reason), one JSON object a
    line (:meth:`DeadLetter.to_json`) in ``dead-letters/<batch>.jsonl``; written whole again if the batch
    runs again."""
    lines = [orjson.dumps(letter.to_json()) for letter in letters]
    if not lines:
        return None
    folder = Path(directory) / DEAD_LETTERS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{batch:08d}.jsonl"
    _write_durably(path, b"\n".join(lines) + b"\n")
    return path


def kept_primes(primes: Iterable[Prime], versions_kept: int = 2) -> list[Prime]:
    """One message per table schema version, for the newest ``versions_kept`` versions of each table:
    rows of an older version cannot still be on their way (TiCDC sends a DDL after every row before it)."""
    first: dict[tuple[str, str, int | None], Prime] = {}
    for prime in sorted(primes, key=lambda p: p.message.origin.offset or 0 if p.message.origin else 0):
        first.setdefault((prime.database, prime.table, prime.version), prime)
    versions: dict[tuple[str, str], list[int]] = {}
    for database, table, version in first:
        versions.setdefault((database, table), []).append(-1 if version is None else version)
    newest = {table: sorted(found)[-versions_kept:] for table, found in versions.items()}
    return [prime for (database, table, version), prime in first.items()
            if (-1 if version is None else version) in newest[(database, table)]]


# --- how far a batch goes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolution:
    """How far a batch goes: its changes at or below ``mark`` go out (those read again, only above the
    previous mark), and the watermarks (heartbeats) ``emit``; ``later`` are announced, not emitted yet."""

    mark: int
    emit: list[int]
    later: list[int]


@dataclass
class BatchFacts:
    """What a batch read beside its changes: per source partition the newest watermark (heartbeat)
    and the newest change ts, every watermark (heartbeat) announced, the ts of rows waiting for their
    schema."""

    marks: dict[tuple[str, int], int] = field(default_factory=dict)
    reads: dict[tuple[str, int], int] = field(default_factory=dict)
    announced: list[int] = field(default_factory=list)
    waiting: list[int | None] = field(default_factory=list)


def resolve(previous: int, newest: Mapping[tuple[str, int], int | None], announced: Iterable[int],
            waiting: Iterable[int | None] = ()) -> Resolution:
    """The minimum over every source partition of the newest mark it announced (no partition may be
    without one), kept below the commit ts of every row still waiting for its schema (a row whose ts
    the source did not say holds everything), never below ``previous``. ``announced`` are the marks
    the partitions announced so far and not yet emitted; those the new mark passes are emitted."""
    marks = list(newest.values())
    mark = previous if not marks or None in marks else min(m for m in marks if m is not None)
    for ts in waiting:
        mark = min(mark, previous if ts is None else ts - 1)
    mark = max(mark, previous)
    points = sorted({point for point in announced if point > previous})
    return Resolution(mark, [p for p in points if p <= mark], [p for p in points if p > mark])


def unwatermarked_bound(previous: int, reads: Mapping[tuple[str, int], int | None],
                        behind: set[tuple[str, int]]) -> int:
    """For a source without watermarks, the ts below which every partition has been read: each
    partition's changes come in commit order, so one read up to ts t sends nothing below t any more;
    one read to its end has nothing older to come. So the bound is just below the lowest newest ts
    read of the partitions not read to their end (strictly: changes of one millisecond share a derived
    ts), or, when every partition is read to its end, the newest ts read; never below ``previous``.
    A change read later below the bound (a partition out of order) goes out late, not lost."""
    read = {tp: ts for tp, ts in reads.items() if ts is not None}
    lagging = [ts for tp, ts in read.items() if tp in behind]
    bound = min(lagging) - 1 if lagging else max(read.values(), default=previous)
    return max(previous, bound)


def resolve_batch(spec: TranscodeSpec, progress: Progress, facts: BatchFacts, behind: set[tuple[str, int]]
                  ) -> Resolution:
    """Where a batch goes up to: with watermarks, the resolved ts (:func:`resolve`); without, the bound of
    :func:`unwatermarked_bound`, and the heartbeats every partition passed that it covers."""
    marks: dict[tuple[str, int], int | None] = {}
    reads: dict[tuple[str, int], int | None] = {}
    for tp, known in progress.partitions.items():
        marks[tp] = _newest(known.newest_mark, facts.marks.get(tp))
        reads[tp] = _newest(known.newest_read, facts.reads.get(tp))
    announced = [*progress.points, *facts.announced]
    if spec.resolves:
        return resolve(progress.mark, marks, announced, facts.waiting)
    bound = unwatermarked_bound(progress.mark, reads, behind)
    heartbeats = resolve(progress.point_mark, marks, announced)
    covered = [ms for ms in heartbeats.emit if (ms << _LOGICAL_BITS) - 1 <= bound]
    return Resolution(bound, covered, sorted({*heartbeats.later, *(ms for ms in heartbeats.emit if ms not in covered)}))


def _newest(*values: int | None) -> int | None:
    present = [value for value in values if value is not None]
    return max(present) if present else None


def point_records(spec: TranscodeSpec, points: Iterable[int]) -> list[tuple[int, bytes]]:
    """The target events for the points a batch emits, as ``(ts, payload)``: a watermark at each
    resolved ts for a target that carries watermarks; for a source without watermarks, a heartbeat at
    each millisecond every partition passed, for a target that carries heartbeats; else nothing."""
    if spec.resolves:
        if not spec.target.carries_watermarks():
            return []
        return [(ts, _pickled(Watermark(ts))) for ts in points]
    if not spec.target_carries_heartbeats:
        return []
    return [(ms << _LOGICAL_BITS, _pickled(Heartbeat(ms))) for ms in points]


class MessageSource:
    """Messages held in memory as a :class:`~cdclake.sources.ranges.Source`: ``{(topic, partition):
    [messages in offset order]}``, each message's origin naming its offset."""

    def __init__(self, partitions: Mapping[tuple[str, int], Sequence[RawMessage]]) -> None:
        self.partitions = partitions

    def extents(self) -> dict[tuple[str, int], PartitionExtent]:
        extents = {}
        for tp, messages in self.partitions.items():
            offsets = [m.origin.offset for m in messages if m.origin is not None and m.origin.offset is not None]
            extents[tp] = PartitionExtent(min(offsets, default=0), max(offsets, default=-1) + 1)
        return extents

    def read(self, offset_range: OffsetRange) -> Iterator[RawMessage]:
        for message in self.partitions[(offset_range.topic, offset_range.partition)]:
            offset = message.origin.offset if message.origin is not None else None
            if offset is not None and offset_range.start <= offset < offset_range.end:
                yield message


def dead_letter_of(record: Mapping[str, Any]) -> DeadLetter:
    """An ``error`` record as the dead letter it stands for."""
    origin = Origin(topic=record["topic"], partition=record["partition"], offset=record["offset"])
    return DeadLetter(origin, record["reason"], record["raw_key"], record["raw_value"], record["timestamp_ms"])


def prime_of(record: Mapping[str, Any]) -> Prime:
    """A ``prime`` record as the schema message it keeps."""
    origin = Origin(topic=record["topic"], partition=record["partition"], offset=record["offset"])
    message = RawMessage(record["raw_key"], record["raw_value"], origin, record["timestamp_ms"])
    return Prime(message, record["database"], record["table"], record["version"])


@dataclass
class Transcoded:
    """A transcoded topic held in memory: each target partition's messages (origins name the target
    topic, partition and offset), and what could not be transcoded."""

    partitions: dict[int, list[RawMessage]]
    dead_letters: list[DeadLetter]


def emitted(spec: TranscodeSpec, previous: int, mark: int, ts: int, read_before: bool) -> bool:
    """Whether a batch emits a change (see :class:`Resolution`): at or below the mark; of those read in
    an earlier batch, only the ones above the previous mark, the rest went out then. A change read for
    the first time below the previous mark is, with watermarks, a copy a producer restart re-sent; without
    them, a late change, which goes out late."""
    return ts <= mark and (ts > previous or not (spec.resolves or read_before))


def transcode_messages(spec: TranscodeSpec, partitions: Mapping[tuple[str, int], Sequence[RawMessage]]) -> Transcoded:
    """A whole stream held in memory, transcoded in this process as one batch: the reference the Spark
    job is held to, which writes the same events whatever its batches (and the same bytes from a source
    with watermarks, whose batches end at a watermark). Changes above the last resolved ts are left out."""
    source = MessageSource(partitions)
    extents = source.extents()
    tasks = [ReadTask(OffsetRange(topic, partition, extent.low, extent.high))
             for (topic, partition), extent in sorted(extents.items())]
    records = [row for batch in read_records(spec, source, tasks) for row in batch.to_pylist()]
    progress = Progress(spec.settings(), partitions={tp: PartitionProgress(e.low, e.low) for tp, e in extents.items()})
    facts = BatchFacts()
    mark_kind = WATERMARK if spec.resolves else HEARTBEAT
    for record in records:
        tp = (record["topic"], record["partition"])
        if record["kind"] == mark_kind:
            facts.marks[tp] = max(facts.marks.get(tp, record["ts"]), record["ts"])
            facts.announced.append(record["ts"])
        elif record["kind"] == CHANGE:
            facts.reads[tp] = max(facts.reads.get(tp, record["ts"]), record["ts"])
        elif record["kind"] == PENDING:
            facts.waiting.append(record["ts"])
    resolution = resolve_batch(spec, progress, facts, behind=set())
    emitted_records = [r for r in records if r["kind"] == SCHEMA or (
        r["kind"] == CHANGE and emitted(spec, 0, resolution.mark, r["ts"], read_before=False))]
    points = [{"ts": ts, "rank": POINT_RANK, "sequence": "", "topic": "", "partition": -1, "offset": -1, "index": 0,
               "piece": 0, "target": -1, "identity": None, "payload": payload}
              for ts, payload in point_records(spec, resolution.emit)]
    every_row = Router(spec.target).sees_every_row
    output = Transcoded({}, [dead_letter_of(r) for r in records if r["kind"] == ERROR])
    for partition in range(spec.target.partitions):
        mine = []
        for record in [*emitted_records, *points]:
            if record["target"] in (partition, -1):
                mine.append(record)
            elif every_row and record["stub"] is not None:
                mine.append({**record, "payload": record["stub"]})
        mine.sort(key=lambda r: tuple(r[name] for name in ORDER))
        layout = lay_out(spec, partition, None, None, [
            (r["ts"], r["rank"], r["sequence"], r["target"], r["identity"], r["payload"]) for r in mine])
        output.partitions[partition] = [
            RawMessage(m.key, m.value, Origin(spec.target.topic, partition, offset), m.timestamp_ms, m.headers)
            for offset, m in enumerate(layout.messages)]
        output.dead_letters += layout.rejected
    return output
