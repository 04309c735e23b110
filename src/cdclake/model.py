"""The events every codec speaks, whatever the wire format.

A decoder turns one :class:`RawMessage` into a list of events; an encoder turns events back into raw
messages. Row values are the exact Python values described in :mod:`cdclake.values`.

What a format carries beyond the common model (Canal's ``es`` and ``ts``, Simple's ``buildTs``,
DataWorks' ``sequenceId`` and Oracle ``rowid``/``scn``) stays in each event's ``meta`` under the
format's own field names, so that an encoder can write it back and a user can still see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

from cdclake.types import MySQLType


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a message came from: a Kafka coordinate, or a file and line for captured input.

    ``index`` numbers the events decoded from one message (an Open Protocol batch, a multi-row
    Canal-JSON message), so that (partition, offset, index) orders every event of a partition.
    """

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    file: str | None = None
    line: int | None = None
    index: int = 0

    def __str__(self) -> str:
        if self.file is not None:
            place = f"{self.file}:{self.line}" if self.line is not None else self.file
        else:
            place = f"{self.topic}[{self.partition}]@{self.offset}"
        return place if self.index == 0 else f"{place} event {self.index}"

    def at(self, index: int) -> Origin:
        """This origin for the ``index``-th event of the message. Decoders call it for every event, so
        it fills the slots directly: a frozen dataclass's __init__ goes through object.__setattr__
        for each field, which takes twice as long."""
        origin = _new_object(Origin)
        _set_topic(origin, self.topic)
        _set_partition(origin, self.partition)
        _set_offset(origin, self.offset)
        _set_file(origin, self.file)
        _set_line(origin, self.line)
        _set_index(origin, index)
        return origin


_new_object = object.__new__
_set_topic, _set_partition, _set_offset, _set_file, _set_line, _set_index = (
    getattr(Origin, field.name).__set__ for field in fields(Origin)
)


@dataclass(frozen=True, slots=True)
class RawMessage:
    """One Kafka record as it travels: key and value bytes plus where it sits in its topic."""

    key: bytes | None
    value: bytes | None
    origin: Origin = field(default_factory=Origin)
    timestamp_ms: int | None = None
    headers: tuple[tuple[str, bytes], ...] = ()


class Op(Enum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class ColumnSchema:
    """One column of a table schema. ``default`` is the default value's text as the producer sent it."""

    name: str
    type: MySQLType
    nullable: bool = True
    default: str | None = None
    charset: str | None = None
    collation: str | None = None


@dataclass(frozen=True, slots=True)
class IndexSchema:
    name: str
    columns: tuple[str, ...]
    unique: bool = False
    primary: bool = False
    nullable: bool = False


@dataclass(frozen=True, slots=True)
class TableSchema:
    """A table's full schema, as Simple protocol BOOTSTRAP and DDL messages carry it."""

    database: str
    table: str
    columns: tuple[ColumnSchema, ...]
    indexes: tuple[IndexSchema, ...] = ()
    table_id: int | None = None
    version: int | None = None

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The primary key, else the first unique index whose columns are all NOT NULL."""
        for index in self.indexes:
            if index.primary:
                return index.columns
        nullable = {c.name for c in self.columns if c.nullable}
        for index in self.indexes:
            if index.unique and not nullable.intersection(index.columns):
                return index.columns
        return ()

    def column(self, name: str) -> ColumnSchema:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)

    def find_column(self, name: str) -> ColumnSchema | None:
        """The column MySQL means by ``name`` (its column names ignore case), or None."""
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


# Not frozen: a decoder builds one of these per row, and a frozen dataclass's __init__ costs twice as much
# (every field goes through object.__setattr__). Treat instances as immutable all the same.
@dataclass(slots=True)
class RowChange:
    """One row inserted, updated or deleted upstream.

    ``before`` is the old image (update, delete) and ``after`` the new one (insert, update), each a
    mapping of column name to value. A format that sends only some columns of an image (Canal's
    partial ``old``, a handle-key-only delete) has the missing ones completed where the format says
    how, and left out where it cannot be known. ``types`` gives every column's MySQL type as far as
    the message tells it; ``key_columns`` the primary (or handle) key. ``commit_ts`` is the TiDB TSO
    of the transaction, ``None`` where the format does not carry one.
    """

    op: Op
    database: str
    table: str
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    types: Mapping[str, MySQLType]
    key_columns: tuple[str, ...] = ()
    commit_ts: int | None = None
    schema_version: int | None = None
    table_id: int | None = None
    origin: Origin | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


class DdlKind(Enum):
    """What a DDL does to the target, as far as the format tells it before the SQL is read."""

    CREATE_DATABASE = "create database"
    DROP_DATABASE = "drop database"
    CREATE_TABLE = "create table"
    DROP_TABLE = "drop table"
    RENAME_TABLE = "rename table"
    TRUNCATE_TABLE = "truncate table"
    ALTER_TABLE = "alter table"
    CREATE_INDEX = "create index"
    DROP_INDEX = "drop index"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Ddl:
    """A schema change. ``sql`` is the statement text; ``schema_before``/``schema_after`` are the
    table schema before and after where the format carries them (Simple protocol)."""

    kind: DdlKind
    database: str
    table: str
    sql: str
    commit_ts: int | None = None
    schema_before: TableSchema | None = None
    schema_after: TableSchema | None = None
    origin: Origin | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Watermark:
    """Every change with commit ts at or below ``ts`` has been sent to this partition."""

    ts: int
    origin: Origin | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """A table's current schema, sent so a consumer that joined mid-stream can decode its rows."""

    schema: TableSchema
    origin: Origin | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """The producer is alive and has nothing older than ``ts_ms`` (epoch milliseconds) left to send."""

    ts_ms: int
    origin: Origin | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


class TransactionMark(Enum):
    BEGIN = "begin"
    END = "end"


@dataclass(frozen=True, slots=True)
class Transaction:
    """A transaction boundary (DataWorks TRANSACTION_BEGIN / TRANSACTION_END)."""

    mark: TransactionMark
    database: str | None = None
    table: str | None = None
    origin: Origin | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


class LargeMessageKind(Enum):
    HANDLE_KEY_ONLY = "handle-key-only"
    CLAIM_CHECK = "claim-check"


@dataclass(frozen=True, slots=True)
class LargeMessageRef:
    """A row change TiCDC shrank because the whole row was too large for Kafka.

    Only the handle-key columns came (``row`` holds them, in ``before``/``after`` as the op has
    them). With ``CLAIM_CHECK`` the full message is stored at ``location``; with
    ``HANDLE_KEY_ONLY`` it must be read back from the upstream at ``row.commit_ts``. Never applied
    as an ordinary row.
    """

    kind: LargeMessageKind
    row: RowChange
    location: str | None = None


@dataclass(frozen=True, slots=True)
class PendingRow:
    """A Simple protocol row whose table schema version is not known yet.

    The decoder holds the message and returns the decoded :class:`RowChange`, in arrival order,
    with the BOOTSTRAP or DDL that brings the schema. ``commit_ts`` is the row's, which the message
    carries outside the row: a consumer must not call a ts resolved while a row at or below it waits.
    """

    database: str
    table: str
    schema_version: int
    origin: Origin | None = None
    commit_ts: int | None = None


Event = RowChange | Ddl | Watermark | Bootstrap | Heartbeat | Transaction | LargeMessageRef | PendingRow
