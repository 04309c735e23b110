"""Reading: source messages decoded into records, the rows the Spark job moves between its steps.

:func:`read_records` reads each source range with a :class:`PartitionReader`: changes (commit ts derived
where the source carries none, split and dispatched to their target partition), watermarks,
heartbeats, schemas and the messages that define them, rows waiting for their schema, dead letters.
:data:`RECORD_FIELDS` are the records' columns and :data:`ORDER` their order within a batch."""

from __future__ import annotations

import copyreg
import hashlib
import io
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cdclake.model import (
    ColumnSchema,
    Ddl,
    Event,
    Heartbeat,
    IndexSchema,
    Op,
    Origin,
    PendingRow,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.ordering.reading import PartitionReading, commit_ts_problem, event_origin
from cdclake.ordering.records import RecordColumns, spark_ddl
from cdclake.producer import Router
from cdclake.sources.ranges import OffsetRange, Source, as_messages
from cdclake.transcode.spec import _LOGICAL_BITS, TranscodeSpec
from cdclake.types import MySQLType

if TYPE_CHECKING:
    import pyarrow as pa


_SEQUENCE_DIGITS = 40  # sequences sort as text: zero-padded


# --- reading: source messages into records --------------------------------------------------------------

CHANGE, WATERMARK, HEARTBEAT, SCHEMA, PENDING, HELD, PRIME, ERROR = (
    "change", "watermark", "heartbeat", "schema", "pending", "held", "prime", "error")
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

RECORD_DDL = spark_ddl(RECORD_FIELDS)
ORDER = ("ts", "rank", "sequence", "topic", "partition", "offset", "index", "piece")


class RecordWriter(RecordColumns):
    """Collects records column by column and hands them out as Arrow record batches."""

    def __init__(self) -> None:
        super().__init__(RECORD_FIELDS)


@dataclass(frozen=True)
class ReadTask:
    """One source range, the schema messages its decoder must see first, and where the partition's
    earlier batches read up to (errors below it were reported then)."""

    offset_range: OffsetRange
    primes: tuple[RawMessage, ...] = ()
    read_until: int = 0


class PartitionReader(PartitionReading):
    """Decodes one source partition's range into records."""

    def __init__(self, spec: TranscodeSpec, writer: RecordWriter, read_until: int) -> None:
        super().__init__(spec.source_codec, spec.source_options)
        self.spec, self._writer, self._read_until = spec, writer, read_until
        self._stubs = Router(spec.target).sees_every_row

    # What the range leaves undone: the next batch reads the partition again from its message.

    def waiting(self, message: RawMessage, row: PendingRow) -> None:
        self._writer.add(PENDING, row.origin, ts=row.commit_ts, database=row.database, table=row.table,
                         version=row.schema_version)

    def held(self, event: Event, message: RawMessage | None) -> None:
        self._writer.add(HELD, event_origin(event))

    def bad(self, message: RawMessage, reason: str) -> None:
        assert message.origin is not None
        if (message.origin.offset or 0) >= self._read_until:  # else reported when first read
            self._writer.add(ERROR, message.origin, raw_key=message.key, raw_value=message.value,
                             timestamp_ms=message.timestamp_ms, reason=reason)

    def watermark(self, watermark: Watermark) -> None:
        self._writer.add(WATERMARK, watermark.origin, ts=watermark.ts)

    def heartbeat(self, heartbeat: Heartbeat) -> None:
        self._writer.add(HEARTBEAT, heartbeat.origin, ts=heartbeat.ts_ms)

    def bootstrap(self, schema: TableSchema, origin: Origin | None, message: RawMessage) -> None:
        self._writer.add(SCHEMA, origin, ts=-1, rank=SCHEMA_RANK, target=-1, payload=_pickled(schema))
        self._writer.add(PRIME, message.origin, raw_key=message.key, raw_value=message.value,
                         timestamp_ms=message.timestamp_ms, database=schema.database, table=schema.table,
                         version=schema.version)

    def row(self, row: RowChange, message: RawMessage) -> None:
        if row.op is Op.UPDATE and row.after is None:
            self.bad(message, f"an update of {row.database}.{row.table} without its new image (a lone first half "
                              "of an update pair)")
            return
        commit_ts, problem = self._commit_ts(row)
        if problem is not None:
            self.bad(message, problem)
            return
        sequence = self.codec.sequence_of(row)
        row = replace(row, commit_ts=commit_ts, meta=row.meta if self.spec.keeps_meta else {},
                      before=_in_table_order(row.before, row.types), after=_in_table_order(row.after, row.types))
        for piece_number, piece in enumerate(self.spec.target.pieces(row)):
            self._add_change(piece, piece_number, self.spec.target.partition_of(piece), sequence)

    def ddl(self, ddl: Ddl, message: RawMessage) -> None:
        commit_ts, problem = self._commit_ts(ddl)
        if problem is not None:
            self.bad(message, problem)
            return
        meta = ddl.meta if self.spec.keeps_meta else {}
        self._add_change(replace(ddl, commit_ts=commit_ts, meta=meta), 0, -1, self.codec.sequence_of(ddl))
        for schema in (ddl.schema_before, ddl.schema_after):
            if schema is not None:
                self._writer.add(PRIME, message.origin, raw_key=message.key, raw_value=message.value,
                                 timestamp_ms=message.timestamp_ms, database=schema.database, table=schema.table,
                                 version=schema.version)

    def _commit_ts(self, change: RowChange | Ddl) -> tuple[int | None, str | None]:
        """The change's commit ts, derived from its commit time where the source carries none; and why
        it cannot go on (the target needs a commit ts and there is none, or it is out of range), or None."""
        commit_ts = change.commit_ts
        if commit_ts is None:
            ms = self.codec.commit_ms_of(change)
            commit_ts = None if ms is None else ms << _LOGICAL_BITS
        if commit_ts is None and self.spec.target_needs_commit_ts:
            return None, (f"{self.spec.target.format_name} needs a commit ts; this {self.spec.source_format} change "
                          "carries neither one nor a commit time to derive it from")
        return commit_ts, commit_ts_problem(commit_ts)

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
        reader = PartitionReader(spec, writer, task.read_until)
        for message in task.primes:
            reader.prime(message)
        offset_range = task.offset_range
        for message in as_messages(source.records(offset_range), offset_range.topic, offset_range.partition):
            reader.read(message)
            if len(writer) >= batch_rows:
                yield writer.take()
        reader.finish()
    if len(writer):
        yield writer.take()
