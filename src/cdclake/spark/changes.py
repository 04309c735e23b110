"""Decoding on the executors: offset ranges in, change records out, as Arrow batches.

Every decoded event becomes one *change record* of one fixed schema (:data:`CHANGE_FIELDS`), whatever
the format and whatever the table, so that one DataFrame holds a whole batch and no message is
collected to the driver. Row images travel as JSON objects of *lake texts* (:mod:`cdclake.schema.lake`):
exact text that a Spark cast turns into each table's typed columns, on the JVM.

========== ==================================================================================
kind       what the record holds
========== ==================================================================================
row        op, database, table, commit_ts, sequence, key (JSON array of the key's texts), old_key
           (the before key of an update that changed it), key_columns, columns (JSON object of
           column name to MySQL type text), before/after (JSON objects of lake texts); ``reason``
           ``partial`` when the after image lacks a column ``columns`` names (the MERGE then keeps
           the table's value of it), else null
ddl        database, table, commit_ts and ``event``: the Ddl as :mod:`cdclake.eventjson` writes it
bootstrap  database, table and ``event``: the table's schema
watermark  commit_ts: the resolved ts this partition announces
heartbeat  commit_ts: the producer's clock (epoch ms)
error      raw_key, raw_value, timestamp_ms and the reason it could not be decoded or applied
carry      a raw message the next batch must decode again, first: ``reason`` is ``prime`` (it
           defines a schema the decoder needs, e.g. a Simple BOOTSTRAP; ``sequence`` holds the
           schema version) or ``held`` (its events are not complete yet: a Simple row waiting for
           its schema, with its ``commit_ts``, database, table and the schema version it waits
           for; a DataWorks update's first half at the end of the range)
========== ==================================================================================

Every record carries the coordinates (topic, partition, offset, index) of the message it came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from cdclake.errors import DecodeError
from cdclake.eventjson import event_to_json
from cdclake.eventjson.schemas import schema_to_json
from cdclake.formats import get_codec
from cdclake.model import (
    Ddl,
    Event,
    Heartbeat,
    Origin,
    PendingRow,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.ordering.reading import PartitionReading, commit_ts_problem, event_origin
from cdclake.ordering.records import RecordColumns, arrow_schema, spark_ddl
from cdclake.schema.lake import value_text_function
from cdclake.schema.names import column_problem
from cdclake.sources.ranges import OffsetRange, Source, SourceRecord
from cdclake.spark.native_rows import NativeReaders, native_readers
from cdclake.types import MySQLType

if TYPE_CHECKING:
    import pyarrow as pa

# The last line of a Python traceback, as Spark passes a task's on to the driver, for one of cdclake's errors.
_TASK_ERROR = re.compile(r"^cdclake(?:\.\w+)+Error: (.+)$", re.MULTILINE)

# (name, Spark SQL type) of every field of a change record, in order. ChangeWriter.add_row and the compiled
# row readers (native/src/rows.rs) write row records as tuples in this order; tests/formats/
# test_canal_native.py and test_simple_native.py hold the two to the same records.
CHANGE_FIELDS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("index", "int"),
    ("op", "string"),
    ("database", "string"),
    ("table", "string"),
    ("commit_ts", "bigint"),
    ("sequence", "string"),
    ("key", "string"),
    ("old_key", "string"),
    ("key_columns", "string"),
    ("columns", "string"),
    ("before", "string"),
    ("after", "string"),
    ("event", "string"),
    ("raw_key", "binary"),
    ("raw_value", "binary"),
    ("timestamp_ms", "bigint"),
    ("reason", "string"),
)
CHANGE_DDL = spark_ddl(CHANGE_FIELDS)
CHANGE_NAMES = tuple(name for name, _ in CHANGE_FIELDS)
_NO_ORIGIN = Origin()
_KEY_COLUMNS_KEPT = 1024  # distinct keys' JSON kept by a writer; a table or two has each


def record_arrow_schema() -> pa.Schema:
    return arrow_schema(RECORD_FIELDS)


@dataclass(frozen=True)
class CarriedMessage:
    """A raw message kept from an earlier batch for the decoder of its partition (see ``carry``)."""

    role: str  # "prime" or "held"
    message: RawMessage
    commit_ts: int | None = None  # of a held row: the resolved ts must stay below it until it is applied


@dataclass(frozen=True)
class DecodeTask:
    """What one executor task decodes: a range, and the messages carried into it."""

    offset_range: OffsetRange
    carried: tuple[CarriedMessage, ...] = ()


class _ImageWriter:
    """Turns a row's images into lake texts, with the per-table work done once per ``types`` mapping."""

    def __init__(self) -> None:
        # Keyed by id(): decoders share one types mapping per table version. The mapping itself is kept
        # in the value so that its id cannot be reused while cached.
        self._plans: dict[int, tuple[Mapping[str, MySQLType], str, dict[str, Callable[[Any], str | None]],
                                     str | None]] = {}

    def plan(self, types: Mapping[str, MySQLType]) -> tuple[str, dict[str, Callable[[Any], str | None]], str | None]:
        """The columns' JSON, each column's lake text function for a value that is not NULL, and why the
        columns cannot make a table (None if they can)."""
        cached = self._plans.get(id(types))
        if cached is None or cached[0] is not types:
            columns = orjson.dumps({name: str(mtype) for name, mtype in types.items()}).decode()
            texts = {name: value_text_function(mtype) for name, mtype in types.items()}
            cached = self._plans[id(types)] = (types, columns, texts, column_problem(types))
        return cached[1], cached[2], cached[3]

    @staticmethod
    def image(values: Mapping[str, Any] | None, texts: Mapping[str, Callable[[Any], str | None]]) -> dict[str, Any]:
        if values is None:
            return {}
        text_of = texts.get
        return {name: None if value is None else (text_of(name) or str)(value) for name, value in values.items()}


def _key_text(image: Mapping[str, Any], key_columns: Sequence[str]) -> str:
    names = key_columns or sorted(image)
    return orjson.dumps([image.get(name) for name in names]).decode()


class ChangeWriter(RecordColumns):
    """Collects change records and hands them out as Arrow record batches."""

    def __init__(self, sequence_of: Callable[[RowChange | Ddl], str | None]) -> None:
        super().__init__(CHANGE_FIELDS)
        self.sequence_of = sequence_of
        self._images = _ImageWriter()
        self._key_columns: dict[tuple[str, ...], str] = {}  # each key's column names as a JSON array
        # The Kafka timestamp of the message being decoded: formats without watermarks place rows
        # around a DDL by it (TiCDC and DataWorks send every change before a DDL ahead of the DDL).
        self.timestamp_ms: int | None = None

    def add(self, kind: str, origin: Origin | None, **fields: Any) -> None:
        fields.setdefault("timestamp_ms", self.timestamp_ms)
        super().add(kind, origin, **fields)

    def add_row(self, row: RowChange) -> None:
        problem = commit_ts_problem(row.commit_ts)
        if problem is not None:
            raise DecodeError("cdclake", problem, row.origin)
        if row.after is None and row.before is None:
            what = f"a {row.op.value} of {row.database}.{row.table} with no row image"
            raise DecodeError("cdclake", what, row.origin)
        columns, texts, problem = self._images.plan(row.types)
        if problem is not None:
            raise DecodeError("cdclake", f"a row of {row.database}.{row.table} with {problem}", row.origin)
        before = self._images.image(row.before, texts)
        after = self._images.image(row.after, texts)
        partial = row.after is not None and not after.keys() >= texts.keys()
        key = _key_text(after or before, row.key_columns)
        old_key = _key_text(before, row.key_columns) if before and after else None
        key_columns = self._key_columns.get(row.key_columns)
        if key_columns is None:
            if len(self._key_columns) >= _KEY_COLUMNS_KEPT:
                self._key_columns.clear()
            key_columns = self._key_columns[row.key_columns] = orjson.dumps(list(row.key_columns)).decode()
        origin = row.origin or _NO_ORIGIN
        self.add_values((  # every field of CHANGE_FIELDS, in its order
            "row", origin.topic, origin.partition, origin.offset, origin.index,
            row.op.value, row.database, row.table, row.commit_ts, self.sequence_of(row),
            key, None if old_key == key else old_key, key_columns, columns,
            orjson.dumps(before).decode() if row.before is not None else None,
            orjson.dumps(after).decode() if row.after is not None else None,
            None, None, None, self.timestamp_ms, "partial" if partial else None,
        ))

    def add_error(self, message: RawMessage, reason: str) -> None:
        self.add("error", message.origin, raw_key=message.key, raw_value=message.value,
                 timestamp_ms=message.timestamp_ms, reason=reason)

    def add_carry(self, role: str, message: RawMessage, database: str | None = None, table: str | None = None,
                  version: int | None = None, commit_ts: int | None = None) -> None:
        self.add("carry", message.origin, raw_key=message.key, raw_value=message.value,
                 timestamp_ms=message.timestamp_ms, reason=role, database=database, table=table,
                 sequence=None if version is None else str(version), commit_ts=commit_ts)


class PartitionDecoder(PartitionReading):
    """Decodes one partition's range after the messages carried into it into change records, and tells
    what to carry on.

    Events of a ``prime`` message were applied in an earlier batch and are dropped; those of a
    ``held`` message come out now (they were not complete before). A message the format's compiled row
    reader reads (made by ``native``, :mod:`cdclake.spark.native_rows`) gives its records without the decoder.
    """

    def __init__(self, format_name: str, options: Mapping[str, Any], writer: ChangeWriter,
                 native: NativeReaders | None) -> None:
        super().__init__(get_codec(format_name), options)
        self._writer = writer
        self._native = None if native is None else native(self.format_decoder)

    def read(self, message: RawMessage) -> None:
        origin = message.origin
        if not self._read_natively(message.key, message.value, origin.topic, origin.partition, origin.offset,
                                   message.timestamp_ms):
            super().read(message)

    def read_record(self, topic: str, partition: int, record: SourceRecord) -> None:
        """As :meth:`read`, for a message given as a source's ``record`` (:data:`SourceRecord`): a
        RawMessage is made only where the decoder reads the message."""
        offset, timestamp_ms, key, value, headers = record
        if not self._read_natively(key, value, topic, partition, offset, timestamp_ms):
            super().read(RawMessage(key, value, Origin(topic=topic, partition=partition, offset=offset), timestamp_ms,
                                    headers))

    def _read_natively(self, key: bytes | None, value: bytes | None, topic: str | None, partition: int | None,
                       offset: int | None, timestamp_ms: int | None) -> bool:
        """Whether the compiled row reader read the message (else the decoder reads it: a message of no
        rows too, which may be held on)."""
        self._writer.timestamp_ms = timestamp_ms
        if self._native is None or value.__class__ is not bytes or not value:
            return False
        return self._native.records(self._writer.columns, key if key.__class__ is bytes else None, value, topic,
                                    partition, offset, timestamp_ms) > 0

    # Carried on: rows still waiting for their schema and the messages whose events the decoder still
    # holds, as raw messages, not events. A held event of a message that did give events (decoded before
    # a failure) comes out now.

    def held(self, event: Event, message: RawMessage | None) -> None:
        if message is not None:
            self._writer.add_carry("held", message)
        else:
            self.dispatch(event, RawMessage(None, None, event_origin(event) or Origin()))

    def waiting(self, message: RawMessage, row: PendingRow) -> None:
        self._writer.add_carry("held", message, row.database, row.table, row.schema_version, row.commit_ts)

    def bad(self, message: RawMessage, reason: str) -> None:
        self._writer.add_error(message, reason)

    def row(self, row: RowChange, message: RawMessage) -> None:
        try:
            self._writer.add_row(row)
        except DecodeError as exc:
            self._writer.add_error(message, str(exc))

    def ddl(self, ddl: Ddl, message: RawMessage) -> None:
        writer = self._writer
        writer.add("ddl", ddl.origin, database=ddl.database, table=ddl.table, commit_ts=ddl.commit_ts,
                   sequence=writer.sequence_of(ddl), event=orjson.dumps(event_to_json(ddl)).decode())
        for schema in (ddl.schema_before, ddl.schema_after):
            if schema is not None:
                writer.add_carry("prime", message, schema.database, schema.table, schema.version)

    def bootstrap(self, schema: TableSchema, origin: Origin | None, message: RawMessage) -> None:
        writer = self._writer
        writer.add("bootstrap", origin, database=schema.database, table=schema.table,
                   sequence=None if schema.version is None else str(schema.version),
                   event=orjson.dumps(schema_to_json(schema)).decode())
        writer.add_carry("prime", message, schema.database, schema.table, schema.version)

    def watermark(self, watermark: Watermark) -> None:
        self._writer.add("watermark", watermark.origin, commit_ts=watermark.ts)

    def heartbeat(self, heartbeat: Heartbeat) -> None:
        self._writer.add("heartbeat", heartbeat.origin, commit_ts=heartbeat.ts_ms)


def decode_task_error(exc: BaseException) -> str | None:
    """The message of the cdclake error that stopped a decoding task on an executor (a handle-key-only
    row, :class:`~cdclake.claimcheck.HandleKeyOnlyError`), taken from the exception Spark raises on the
    driver, which holds the task's traceback as text; None if ``exc`` holds none."""
    found = _TASK_ERROR.findall(str(exc))
    return found[-1] if found else None


def decode_tasks(
    source: Source, format_name: str, options: Mapping[str, Any], tasks: Iterable[DecodeTask], batch_rows: int = 10_000
) -> Iterator[pa.RecordBatch]:
    """The change records of each task's carried messages and range, in Arrow batches of about
    ``batch_rows`` records."""
    writer = ChangeWriter(get_codec(format_name).sequence_of)
    native = native_readers(get_codec(format_name), options)
    for task in tasks:
        partition = _primed_decoder(format_name, options, writer, native, task.carried)
        topic, number = task.offset_range.topic, task.offset_range.partition
        for record in source.records(task.offset_range):
            partition.read_record(topic, number, record)
            if len(writer) >= batch_rows:
                yield writer.take()
        partition.finish()
    if len(writer):
        yield writer.take()


# (name, Spark SQL type) of a raw record as :func:`decode_records` reads it. ``role`` is null for a
# message of the stream, or a carried message's role (``prime`` or ``held``, see ``carry`` above).
RECORD_FIELDS: tuple[tuple[str, str], ...] = (
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp_ms", "bigint"),
    ("key", "binary"),
    ("value", "binary"),
    ("role", "string"),
)
RECORD_NAMES = tuple(name for name, _ in RECORD_FIELDS)


def decode_records(
    batches: Iterable[pa.RecordBatch],
    format_name: str,
    options: Mapping[str, Any],
    carried: Mapping[tuple[str, int], Sequence[CarriedMessage]],
    batch_rows: int = 10_000,
) -> Iterator[pa.RecordBatch]:
    """The change records of raw records (:data:`RECORD_FIELDS`) in Arrow batches, each partition's
    records together and in offset order, after the messages ``carried`` into that partition.

    A record whose ``role`` is ``prime`` only teaches the decoder its schema (its events were emitted
    when it was first decoded); one of role ``held`` is decoded as any other."""
    writer = ChangeWriter(get_codec(format_name).sequence_of)
    native = native_readers(get_codec(format_name), options)
    current: tuple[str, int] | None = None
    partition: PartitionDecoder | None = None
    for batch in batches:
        columns = [batch.column(name).to_pylist() for name in RECORD_NAMES]
        for topic, number, offset, timestamp_ms, key, value, role in zip(*columns, strict=True):
            if partition is None or (topic, number) != current:
                if partition is not None:
                    partition.finish()
                current = (topic, number)
                partition = _primed_decoder(format_name, options, writer, native, carried.get(current, ()))
            if role == "prime":
                origin = Origin(topic=topic, partition=number, offset=offset)
                partition.prime(RawMessage(key, value, origin, timestamp_ms))
            else:
                partition.read_record(topic, number, (offset, timestamp_ms, key, value, ()))
            if len(writer) >= batch_rows:
                yield writer.take()
    if partition is not None:
        partition.finish()
    if len(writer):
        yield writer.take()


def _primed_decoder(format_name: str, options: Mapping[str, Any], writer: ChangeWriter,
                    native: NativeReaders | None, carried: Iterable[CarriedMessage]) -> PartitionDecoder:
    """A partition's decoder that has read the messages carried into it: schema messages primed, held
    messages decoded again (their events come out now)."""
    partition = PartitionDecoder(format_name, options, writer, native)
    for message in sorted(carried, key=lambda c: c.message.origin.offset or 0):
        if message.role == "prime":
            partition.prime(message.message)
        else:
            partition.read(message.message)
    return partition
