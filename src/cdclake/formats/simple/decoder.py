"""The Simple protocol decoder: one per partition, holding the table schemas its rows need.

DML messages carry no column types, only ``(database, table, schemaVersion)``. Every ``tableSchema`` and
``preTableSchema`` a BOOTSTRAP or DDL message brings is cached under that key (both, as TiCDC's
``memoryTableInfoProvider`` does, so rows still written with the pre-DDL version decode after the DDL;
RENAME TABLE keeps the version, so the old and new names are both cached). A row whose schema is not
cached yet — a consumer that joined mid-stream — is neither guessed nor dropped: the decoder returns a
:class:`PendingRow`, keeps the row, and returns it decoded, in arrival order, right after the
Bootstrap or Ddl that brings its schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from cdclake.errors import DecodeError
from cdclake.formats.compiled import ImageReader, OldImageReader, compile_old_reader, compile_reader
from cdclake.formats.compression import decompressor
from cdclake.formats.ddl import TICDC_DDL_TYPES, kind_of_ticdc_type
from cdclake.formats.limits import MAX_COMPILED_COLUMNS
from cdclake.formats.simple.fast_path import INLINE_SCOPE
from cdclake.formats.simple.fields import UINT64_MAX, Invalid, as_dict, describe, optional, required, uint64
from cdclake.formats.simple.values import READ_ERRORS, Reader, Zones
from cdclake.formats.simple.wire import Wire
from cdclake.model import (
    Bootstrap,
    Ddl,
    Event,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    Origin,
    PendingRow,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.types import Family, MySQLType
from cdclake.values import zone

_OPS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
_TYPES = ", ".join(("WATERMARK", "BOOTSTRAP", *TICDC_DDL_TYPES, *_OPS))

# Columns whose values are read by a type check alone (see _compile_old_plan).
_TEXT_FAMILIES = frozenset((Family.STRING, Family.JSON, Family.VECTOR))

# Compiled image readers kept per table: one for each order of columns an image came with (a full
# image, a handle-key-only one, ...).
_MAX_PLANS = 8

# What may still escape the explicit checks on a malformed message (a bug would show up here too,
# as a DecodeError that names the exception).
_UNEXPECTED = (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError)


# A DML message's fields, checked; its column values are read once the schema is known. A plain tuple
# (op, database, table, schemaVersion, commitTs, tableID, data, old, large kind, claim-check location,
# meta): building a NamedTuple costs a third of the envelope's checks, once per row.
_Row = tuple[Op, str, str, int, int, int | None, Any, Any, LargeMessageKind | None, str | None, dict[str, Any]]

# A table version's columns: (names, type texts, key columns).
TableColumns = tuple[list[str], list[str], tuple[str, ...]]


class _Table:
    """One cached table schema version and the readers of its columns' values.

    ``readers`` are the careful readers and ``fast`` the fast ones (same values, terser failures).
    ``plans`` holds, per order of columns an image came with (TiCDC writes them sorted by name, as
    Go's encoding/json writes a map), a function compiled for that order which reads the image with
    no per-column lookup and the common conversions inline; ``old_plans`` the same for the old image
    of an UPDATE whose new image came in that order too (see :func:`_compile_old_plan`). A failure on the
    fast path is explained by re-reading the image with the careful readers.
    """

    __slots__ = ("columns", "fast", "inlines", "key_columns", "old_plans", "plans", "readers", "schema", "types")

    def __init__(
        self, schema: TableSchema, readers: dict[str, Reader], fast: dict[str, Reader], inlines: dict[str, str | None]
    ) -> None:
        self.schema = schema
        self.readers = readers
        self.fast = fast
        self.inlines = inlines
        self.types: Mapping[str, MySQLType] = MappingProxyType({c.name: c.type for c in schema.columns})
        self.key_columns = schema.key_columns
        names, types = [c.name for c in schema.columns], [str(c.type) for c in schema.columns]
        self.columns: TableColumns = (names, types, schema.key_columns)
        self.plans: dict[tuple[str, ...], ImageReader] = {}
        self.old_plans: dict[tuple[str, ...], OldImageReader] = {}

    def read_image(self, image: Any, field: str) -> dict[str, Any]:
        if type(image) is not dict:
            raise Invalid(f"field {field!r} must be an object of column values, got {describe(image)}")
        try:
            keys = tuple(image)
            plan = self.plans.get(keys)
            if plan is None:
                plan = self._plan(keys)
            return plan(image)
        except READ_ERRORS:
            raise self._explain(image, field) from None

    def read_images(self, data: Any, old: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(before, after) of a row message: its ``old`` and ``data`` read, ``data`` first, so that its
        failure is the one told."""
        if data is None:
            return None if old is None else self.read_image(old, "old"), None
        after = self.read_image(data, "data")
        return None if old is None else self._read_old_image(old, data, after), after

    def _read_old_image(self, old: Any, data: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        """The old image of an UPDATE whose new image ``data`` read as ``after``. TiCDC sends both
        whole, in the same column order: then the columns an update left alone are taken from
        ``after`` instead of being read a second time."""
        if type(old) is dict:
            keys = tuple(old)
            old_plan = self.old_plans.get(keys)
            if old_plan is not None and keys == tuple(data):
                try:
                    return old_plan(old, data, after)
                except READ_ERRORS:
                    raise self._explain(old, "old") from None
        return self.read_image(old, "old")

    def _plan(self, keys: tuple[str, ...]) -> ImageReader:
        """The compiled reader of images with ``keys``, cached for the first few orders seen; the
        generic reader for others and for keys that are not all columns of the schema."""
        if len(self.plans) >= _MAX_PLANS or not 0 < len(keys) <= MAX_COMPILED_COLUMNS:
            return self._read_any  # enough orders compiled, or too wide an order to compile in time
        if not all(type(k) is str and k in self.fast for k in keys):
            return self._read_any
        plan = self.plans[keys] = _compile_plan(keys, self.fast, self.inlines)
        self.old_plans[keys] = _compile_old_plan(keys, self.fast, self.inlines, self.types)
        return plan

    def _read_any(self, image: dict[str, Any]) -> dict[str, Any]:
        readers = self.fast
        return {name: None if raw is None else readers[name](raw) for name, raw in image.items()}

    def _explain(self, image: dict[str, Any], field: str) -> Invalid:
        """Which column of ``image`` does not fit, and why (the slow path after a failure)."""
        schema = self.schema
        for name, raw in image.items():
            reader = self.readers.get(name)
            if reader is None:
                return Invalid(f"{field}: column {name!r} is not in {schema.database}.{schema.table} "
                               f"schema version {schema.version}")
            try:
                if raw is not None:
                    reader(raw)
            except READ_ERRORS as exc:
                return Invalid(f"{field}.{name} ({self.types[name]}): {describe(raw)} does not fit: {exc}")
        return Invalid(f"{field}: values do not fit {schema.database}.{schema.table}")  # pragma: no cover


def _compile_plan(names: tuple[str, ...], fast: dict[str, Reader], inlines: dict[str, str | None]) -> ImageReader:
    """The reader of images whose keys are ``names``, in order: each column read by its inline
    statements (see :meth:`Wire.inline`) or else its fast reader."""
    scope: dict[str, Any] = dict(INLINE_SCOPE)
    return compile_reader(names, [_read(i, name, fast, inlines, scope) for i, name in enumerate(names)], scope)


def _compile_old_plan(
    names: tuple[str, ...], fast: dict[str, Reader], inlines: dict[str, str | None], types: Mapping[str, MySQLType]
) -> OldImageReader:
    """The reader of an UPDATE's old image whose keys are ``names``, as its new image's are: a column
    of the same string (a TIMESTAMP: the same object, whose location and value are strings wherever
    the new one read) takes the new image's value. Text columns, read by a type check, are read again."""
    scope: dict[str, Any] = dict(INLINE_SCOPE)
    reads = [_read(i, name, fast, inlines, scope) for i, name in enumerate(names)]
    compared = [_compared(types[name].family) for name in names]
    return compile_old_reader(names, reads, compared, scope)


def _compared(family: Family) -> str | None:
    if family in _TEXT_FAMILIES:
        return None
    return "dict" if family is Family.TIMESTAMP else "str"


def _read(
    i: int, name: str, fast: dict[str, Reader], inlines: dict[str, str | None], scope: dict[str, Any]
) -> list[str]:
    """The statements that read column ``name``'s non-NULL value in variable ``v{i}`` in place."""
    scope[f"r{i}"] = fast[name]
    inline = inlines[name]
    return [f"v{i} = r{i}(v{i})"] if inline is None else inline.format(v=f"v{i}", r=f"r{i}").splitlines()


class SimpleDecoder:
    """Decodes one partition's messages in order (see the module docstring for the schema cache)."""

    def __init__(self, wire: Wire, options: Mapping[str, Any]) -> None:
        self._wire = wire
        self._load = wire.load
        self._compression = options["large-message-handle-compression"]
        self._decompress = None if self._compression == "none" else decompressor(self._compression)
        self._zones = Zones(zone(options["tz"]))
        self._readers: dict[MySQLType, tuple[Reader, Reader]] = {}
        self._tables: dict[tuple[str, str, int | None], _Table] = {}
        # How many schemas it has learned: a compiled row reader keeps table_columns' answers while it stays.
        self.schema_changes = 0
        self._held: list[tuple[_Row, Origin]] = []
        # Events decoded but not returned yet: a call that raises keeps what it decoded before the
        # failure (a Ddl whose held rows did not fit), and the next call returns it first.
        self._ready: list[Event] = []

    def decode(self, message: RawMessage) -> list[Event]:
        origin = message.origin
        try:
            # the common case of _decode, inline: an uncompressed row message
            value = message.value
            if value is None or self._decompress is not None:
                self._decode(value, origin)
            else:
                row = self._load(value)
                kind = row.get("type")
                op = _OPS.get(kind) if type(kind) is str else None
                if op is not None and type(row.get("version")) is int and row["version"] == 1:
                    self._on_row(row, op, origin)
                else:
                    self._decode_loaded(row, origin)
        except Invalid as exc:
            raise DecodeError(self._wire.name, str(exc), origin) from None
        except _UNEXPECTED as exc:
            raise DecodeError(self._wire.name, f"malformed message: {type(exc).__name__}: {exc}", origin) from exc
        events, self._ready = self._ready, []
        return events

    def table_columns(self, database: str, table: str, version: int) -> TableColumns | None:
        """The columns of a table version this decoder holds, as (names, type texts, key columns), or None
        while it holds none: the same object for as long as it holds that version's schema (a compiled row
        reader plans by it, :mod:`cdclake.spark.native_rows`)."""
        cached = self._tables.get((database, table, version))
        return None if cached is None else cached.columns

    def flush(self) -> list[Event]:
        """Events decoded by a call that then failed. Rows still waiting for their schema stay held:
        each was already reported as a PendingRow."""
        events, self._ready = self._ready, []
        return events

    def _decode(self, value: bytes | None, origin: Origin) -> None:
        if value is None:
            raise Invalid("no value (a tombstone): every Simple protocol message has one")
        if self._decompress is not None:
            try:
                value = self._decompress(value)
            except Exception as exc:  # each compression library raises its own error types
                raise Invalid(f"cannot decompress ({self._compression}): {exc}") from exc
        self._decode_loaded(self._wire.load(value), origin)

    def _decode_loaded(self, message: dict[str, Any], origin: Origin) -> None:
        version = message.get("version")
        if type(version) is not int or version != 1:
            raise Invalid(f"expected protocol version 1, got {describe(version)}")
        kind = message.get("type")
        if type(kind) is not str:
            raise Invalid(f"field 'type' must be one of {_TYPES}, got {describe(kind)}")
        op = _OPS.get(kind)
        if op is not None:
            self._on_row(message, op, origin)
        elif kind == "WATERMARK":
            build_ts = required(message, "buildTs", int, kind)
            self._ready.append(Watermark(uint64(message, "commitTs", kind), origin, {"buildTs": build_ts}))
        elif kind == "BOOTSTRAP":
            self._on_bootstrap(message, origin)
        elif kind in TICDC_DDL_TYPES:
            self._on_ddl(message, kind, origin)
        else:
            raise Invalid(f"field 'type' must be one of {_TYPES}, got {describe(kind)}")

    # --- rows ---------------------------------------------------------------------------------------

    def _on_row(self, message: dict[str, Any], op: Op, origin: Origin) -> None:
        # One combined check on the hot path; the field helpers only explain a failure.
        get = message.get
        database: Any = get("database")
        table: Any = get("table")
        version: Any = get("schemaVersion")
        commit_ts: Any = get("commitTs")
        build_ts: Any = get("buildTs")
        table_id: Any = get("tableID")
        if not (
            type(database) is str
            and type(table) is str
            and type(version) is int
            and type(commit_ts) is int
            and type(build_ts) is int
            and (table_id is None or type(table_id) is int)
            and 0 <= version <= UINT64_MAX
            and 0 <= commit_ts <= UINT64_MAX
        ):
            _explain_row(message, op)
        data = get("data")
        old = get("old")
        # INSERT carries data (the new row), DELETE old (the deleted row), UPDATE both.
        if (data is None) is not (op is Op.DELETE) or (old is None) is not (op is Op.INSERT):
            carries = {Op.INSERT: "data only", Op.UPDATE: "data and old", Op.DELETE: "old only"}[op]
            raise Invalid(f"{op.name}: a {op.name} message carries {carries}")
        large = location = None
        if get("claimCheckLocation") is not None or get("handleKeyOnly") is not None:
            location = optional(message, "claimCheckLocation", str, op.name) or None
            # TiCDC sets both on a claim-check message; the location decides (its decoder checks it first).
            if location:
                large = LargeMessageKind.CLAIM_CHECK
            elif optional(message, "handleKeyOnly", bool, op.name):
                large = LargeMessageKind.HANDLE_KEY_ONLY
        meta: dict[str, Any] = {"buildTs": build_ts}
        checksum = get("checksum")
        if checksum is not None:
            meta["checksum"] = _checksum(checksum)
        cached = self._tables.get((database, table, version))
        if cached is not None and large is None:
            # _row_event, inline: the common case
            before, after = cached.read_images(data, old)
            self._ready.append(
                RowChange(
                    op,
                    database,
                    table,
                    before,
                    after,
                    cached.types,
                    cached.key_columns,
                    commit_ts,
                    version,
                    table_id,
                    origin,
                    meta,
                )
            )
            return
        row: _Row = (op, database, table, version, commit_ts, table_id, data, old, large, location, meta)
        if cached is None:
            self._held.append((row, origin))
            self._ready.append(PendingRow(database, table, version, origin, commit_ts))
        else:
            self._ready.append(_row_event(row, cached, origin))

    def _release(self, by: Origin) -> None:
        """Return every held row whose schema is now known, in arrival order."""
        waiting: list[tuple[_Row, Origin]] = []
        failures: list[tuple[Origin, Invalid]] = []
        for row, origin in self._held:
            table = self._tables.get(row[1:4])
            if table is None:
                waiting.append((row, origin))
                continue
            try:
                self._ready.append(_row_event(row, table, origin))
            except Invalid as exc:
                failures.append((origin, exc))
        self._held = waiting
        if failures:
            origin, first = failures[0]
            also = "".join(f"; so does the row held at {other}" for other, _ in failures[1:])
            reason = f"a row held for its schema does not fit the schema the message at {by} brought: {first}{also}"
            raise DecodeError(self._wire.name, reason, origin)

    # --- schemas ------------------------------------------------------------------------------------

    def _on_bootstrap(self, message: dict[str, Any], origin: Origin) -> None:
        build_ts = required(message, "buildTs", int, "BOOTSTRAP")
        schema = self._wire.read_table_schema(message.get("tableSchema"), "tableSchema")
        self._remember(schema)
        self._ready.append(Bootstrap(schema, origin, {"buildTs": build_ts}))
        self._release(origin)

    def _on_ddl(self, message: dict[str, Any], ddl_type: str, origin: Origin) -> None:
        sql = optional(message, "sql", str, ddl_type) or ""
        commit_ts = uint64(message, "commitTs", ddl_type)
        build_ts = required(message, "buildTs", int, ddl_type)
        after = self._schema(message, "tableSchema")
        before = self._schema(message, "preTableSchema")
        # DROP DATABASE carries no schema at all; its database is in the SQL only.
        named = after or before
        ddl = Ddl(
            kind=kind_of_ticdc_type(ddl_type, sql),
            database=named.database if named else "",
            table=named.table if named else "",
            sql=sql,
            commit_ts=commit_ts,
            schema_before=before,
            schema_after=after,
            origin=origin,
            meta={"type": ddl_type, "buildTs": build_ts},
        )
        for schema in (before, after):
            if schema is not None:
                self._remember(schema)
        self._ready.append(ddl)
        self._release(origin)

    def _schema(self, message: dict[str, Any], field: str) -> TableSchema | None:
        raw = message.get(field)
        return None if raw is None else self._wire.read_table_schema(raw, field)

    def _remember(self, schema: TableSchema) -> None:
        key = (schema.database, schema.table, schema.version)
        known = self._tables.get(key)
        if known is not None and known.schema == schema:
            return  # TiCDC sends a table's BOOTSTRAP again and again: keep the readers compiled for it
        pairs = {column.name: self._reader(column.type) for column in schema.columns}
        readers = {name: pair[0] for name, pair in pairs.items()}
        fast = {name: pair[1] for name, pair in pairs.items()}
        inlines = {column.name: self._wire.inline(column.type) for column in schema.columns}
        self._tables[key] = _Table(schema, readers, fast, inlines)
        self.schema_changes += 1

    def _reader(self, mtype: MySQLType) -> tuple[Reader, Reader]:
        """The careful and the fast reader of ``mtype``."""
        pair = self._readers.get(mtype)
        if pair is None:
            wire, zones = self._wire, self._zones
            pair = self._readers[mtype] = (wire.reader(mtype, zones), wire.fast_reader(mtype, zones))
        return pair


def _explain_row(message: dict[str, Any], op: Op) -> None:
    """Raise the reason the fast check in :meth:`SimpleDecoder._on_row` failed."""
    where = op.name
    required(message, "database", str, where)
    required(message, "table", str, where)
    uint64(message, "schemaVersion", where)
    uint64(message, "commitTs", where)
    required(message, "buildTs", int, where)
    optional(message, "tableID", int, where)
    raise Invalid(f"{where}: malformed envelope")  # pragma: no cover - one of the checks above raised


def _checksum(raw: Any) -> dict[str, Any]:
    """The row checksum TiCDC adds with ``integrity-check-level = "correctness"``, kept as it came."""
    obj = as_dict(raw, "checksum")
    return {
        "version": required(obj, "version", int, "checksum"),
        "corrupted": required(obj, "corrupted", bool, "checksum"),
        "current": required(obj, "current", int, "checksum"),
        "previous": required(obj, "previous", int, "checksum"),
    }


def _row_event(row: _Row, table: _Table, origin: Origin) -> RowChange | LargeMessageRef:
    op, database, name, version, commit_ts, table_id, data, old, large, location, meta = row
    before, after = table.read_images(data, old)
    change = RowChange(
        op, database, name, before, after, table.types, table.key_columns, commit_ts, version, table_id, origin, meta
    )
    if large is None:
        return change
    return LargeMessageRef(large, change, location)
