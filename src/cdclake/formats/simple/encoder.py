"""The Simple protocol encoder: events → messages as TiCDC writes them.

Field order and omissions follow tiflow's ``message`` struct and Go's ``encoding/json`` (``omitempty``
fields left out when empty, map keys sorted, ``<``, ``>``, ``&`` escaped), so a message TiCDC wrote
re-encodes from its decoded events byte for byte. The Kafka key is nil, as TiCDC sends it.

Rows carry no types on the wire, only their table's schema version, so the encoder writes a row only
for a table whose schema it has encoded (from a Bootstrap, or a Ddl's schema before or after): the
version is the row's ``schema_version`` or, without one, the table's latest; values are written by the
column types of that schema, which is what a consumer will read them with (a temporal column of
unknown fsp as fsp 6, see :func:`_with_known_fsp`). ``buildTs`` is the
event's ``meta["buildTs"]`` when it came from a Simple message, else the commit's physical time
(``commitTs >> 18``, milliseconds) — an encoder reads no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from cdclake.errors import EncodeError
from cdclake.formats.compression import compressor
from cdclake.formats.ddl import ticdc_type
from cdclake.formats.simple.fields import UINT64_MAX
from cdclake.formats.simple.values import Writer
from cdclake.formats.simple.wire import Wire
from cdclake.model import (
    Bootstrap,
    Ddl,
    Event,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.types import Family, MySQLType
from cdclake.values import zone

_VERSION = 1


class _Table:
    """One encoded table schema version and the writers of its columns' values."""

    __slots__ = ("schema", "writers")

    def __init__(self, schema: TableSchema, writers: dict[str, Writer]) -> None:
        self.schema = schema
        self.writers = writers


class SimpleEncoder:
    def __init__(self, wire: Wire, options: Mapping[str, Any]) -> None:
        self._wire = wire
        self._compress = compressor(options["large-message-handle-compression"])
        self._location = options["tz"]
        self._tz = zone(self._location)
        self._writers: dict[MySQLType, Writer] = {}
        self._tables: dict[tuple[str, str, int], _Table] = {}
        self._latest: dict[tuple[str, str], int] = {}

    def encode(self, events: Iterable[Event]) -> list[RawMessage]:
        return [RawMessage(None, self._compress(self._dump(self._message(event)))) for event in events]

    def _fail(self, reason: str) -> EncodeError:
        return EncodeError(self._wire.name, reason)

    def _dump(self, message: dict[str, Any]) -> bytes:
        try:
            return self._wire.dump(message)
        except (TypeError, ValueError, OverflowError) as exc:  # e.g. a lone surrogate in a string
            raise self._fail(f"cannot write a {message['type']} message: {exc}") from exc

    def _message(self, event: Event) -> dict[str, Any]:
        if isinstance(event, RowChange):
            return self._dml(event, None, None)
        if isinstance(event, LargeMessageRef):
            return self._dml(event.row, event.kind, event.location)
        if isinstance(event, Watermark):
            ts = self._uint64(event.ts, "watermark ts")
            return {"version": _VERSION, "type": "WATERMARK", "commitTs": ts, "buildTs": _build_ts(event.meta, ts)}
        if isinstance(event, Bootstrap):
            return {
                "version": _VERSION,
                "type": "BOOTSTRAP",
                "commitTs": 0,
                "buildTs": _build_ts(event.meta, 0),
                "tableSchema": self._table_schema(event.schema),
            }
        if isinstance(event, Ddl):
            return self._ddl(event)
        raise self._fail(f"the Simple protocol cannot carry a {type(event).__name__}")

    def _ddl(self, ddl: Ddl) -> dict[str, Any]:
        if ddl.commit_ts is None:
            raise self._fail(f"DDL {ddl.sql!r} has no commit ts; every Simple DDL message carries one")
        commit_ts = self._uint64(ddl.commit_ts, "DDL commit ts")
        message: dict[str, Any] = {"version": _VERSION, "type": ticdc_type(ddl.kind, ddl.sql, ddl.meta.get("type"))}
        if ddl.sql:
            message["sql"] = ddl.sql
        message["commitTs"] = commit_ts
        message["buildTs"] = _build_ts(ddl.meta, commit_ts)
        # The schema before first, so that the one after is the table's latest.
        before = None if ddl.schema_before is None else self._table_schema(ddl.schema_before)
        if ddl.schema_after is not None:
            message["tableSchema"] = self._table_schema(ddl.schema_after)
        if before is not None:
            message["preTableSchema"] = before
        return message

    def _table_schema(self, schema: TableSchema) -> dict[str, Any]:
        """The schema's wire object; from now on rows of this version can be written."""
        if schema.version is None:
            raise self._fail(f"table schema of {schema.database}.{schema.table} has no version; "
                             "Simple protocol rows name their schema by it")
        version = self._uint64(schema.version, f"{schema.database}.{schema.table} schema version")
        schema = _with_known_fsp(schema)
        writers = {column.name: self._writer(column.type) for column in schema.columns}
        self._tables[(schema.database, schema.table, version)] = _Table(schema, writers)
        self._latest[(schema.database, schema.table)] = version
        return self._wire.table_schema(schema)

    def _writer(self, mtype: MySQLType) -> Writer:
        writer = self._writers.get(mtype)
        if writer is None:
            writer = self._writers[mtype] = self._wire.writer(mtype, self._tz, self._location)
        return writer

    def _dml(self, row: RowChange, large: LargeMessageKind | None, location: str | None) -> dict[str, Any]:
        name = f"{row.database}.{row.table}"
        version = row.schema_version if row.schema_version is not None else self._latest.get((row.database, row.table))
        if version is None:
            raise self._fail(f"no table schema of {name} was encoded: a Bootstrap or Ddl carrying it comes first")
        table = self._tables.get((row.database, row.table, version))
        if table is None:
            raise self._fail(f"{name} schema version {version} was not encoded: a Bootstrap or Ddl carrying it "
                             "comes first")
        if row.commit_ts is None:
            raise self._fail(f"row of {name} has no commit ts; every Simple DML message carries one")
        commit_ts = self._uint64(row.commit_ts, f"{name} row commit ts")
        message: dict[str, Any] = {"version": _VERSION, "database": row.database, "table": row.table}
        table_id = row.table_id if row.table_id is not None else table.schema.table_id
        if table_id:
            message["tableID"] = table_id
        message["type"] = row.op.name
        message["commitTs"] = commit_ts
        message["buildTs"] = _build_ts(row.meta, commit_ts)
        if version:
            message["schemaVersion"] = version
        if large is LargeMessageKind.CLAIM_CHECK and location:
            message["claimCheckLocation"] = location
        if large is not None:
            message["handleKeyOnly"] = True
        checksum = row.meta.get("checksum")
        if checksum is not None:
            message["checksum"] = self._checksum(checksum)
        if row.op is not Op.DELETE:
            message["data"] = self._image(table, row.after, "after", row)
        if row.op is not Op.INSERT:
            message["old"] = self._image(table, row.before, "before", row)
        return message

    def _image(self, table: _Table, values: Mapping[str, Any] | None, image: str, row: RowChange) -> dict[str, Any]:
        schema = table.schema
        if not values:
            raise self._fail(f"{row.op.name} of {schema.database}.{schema.table} has no {image} image")
        written = {}
        for name in sorted(values):  # Go's encoding/json writes map keys sorted
            writer = table.writers.get(name)
            if writer is None:
                raise self._fail(f"column {name!r} is not in {schema.database}.{schema.table} "
                                 f"schema version {schema.version}")
            value = values[name]
            try:
                written[name] = None if value is None else writer(value)
            except (TypeError, ValueError, OverflowError) as exc:
                column = schema.column(name)
                raise self._fail(f"{schema.database}.{schema.table}.{name} ({column.type}): "
                                 f"cannot write {value!r}: {exc}") from exc
        return written

    def _checksum(self, checksum: Any) -> dict[str, Any]:
        fields = ("version", "corrupted", "current", "previous")
        if not isinstance(checksum, Mapping) or any(field not in checksum for field in fields):
            raise self._fail(f"meta checksum must have {', '.join(fields)}, got {checksum!r}")
        return {field: checksum[field] for field in fields}

    def _uint64(self, value: int, what: str) -> int:
        if type(value) is not int or not 0 <= value <= UINT64_MAX:
            raise self._fail(f"{what} must be a uint64, got {value!r}")
        return value


_TEMPORAL = (Family.DATETIME, Family.TIMESTAMP, Family.TIME)


def _with_known_fsp(schema: TableSchema) -> TableSchema:
    """A DATETIME/TIMESTAMP/TIME column whose fsp is unknown is written as fsp 6, which holds every
    value: the Simple protocol has no "unknown" (an absent ``decimal`` means 0, which would cut the
    fraction off the values of such a column)."""
    if not any(c.type.family in _TEMPORAL and c.type.decimals is None for c in schema.columns):
        return schema
    columns = tuple(
        replace(c, type=replace(c.type, decimals=6)) if c.type.family in _TEMPORAL and c.type.decimals is None else c
        for c in schema.columns
    )
    return replace(schema, columns=columns)


def _build_ts(meta: Mapping[str, Any], commit_ts: int) -> int:
    build_ts = meta.get("buildTs")
    return build_ts if type(build_ts) is int else commit_ts >> 18
