"""The Canal-JSON decoder: messages → events, with the parsed ``mysqlType`` maps and ``pkNames`` of
each table cached, and the readers of the message's names, keys and ``_tidb`` fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdclake.errors import DecodeError, TypeParseError
from cdclake.formats.canal_json.fast_path import _NO_COLUMNS, _Columns, _columns_of
from cdclake.formats.canal_json.rows import _images
from cdclake.formats.canal_json.values import Converter, _converter, _inferred_type
from cdclake.formats.canal_json.wire import (
    _OPS,
    _SNAPSHOT_TYPE,
    _STRUCTURAL,
    _U64_MAX,
    FORMAT,
    WATERMARK_TYPE,
    _documents_by_stdlib,
    _Invalid,
    _json_kind,
    _JSONDecodeError,
    _loads,
    _Untyped,
)
from cdclake.formats.compression import decompressor
from cdclake.formats.ddl import TICDC_DDL_TYPES, kind_of_ticdc_type
from cdclake.formats.limits import too_many_columns
from cdclake.model import Ddl, Event, LargeMessageKind, LargeMessageRef, Op, Origin, RawMessage, RowChange, Watermark
from cdclake.types import MySQLType
from cdclake.values import zone

# Distinct mysqlType maps (and type texts) kept per decoder; a stream has one per table and schema
# version. A full cache is emptied, so that no input can make it grow without end.
_COLUMNS_CACHE_SIZE = 4096


class CanalJsonDecoder:
    """Reads the messages of one partition. Its only state is a cache of the parsed ``mysqlType``
    maps, so that each distinct map is parsed, and its converters built, once."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._decompress = decompressor(options["large-message-handle-compression"])
        self._compressed = options["large-message-handle-compression"] != "none"
        self._tz = zone(options["tz"])
        self._type_of_text: dict[str, tuple[MySQLType, Converter]] = {}
        # Keyed by the map's names and types: two flat tuples hash faster than one of pairs.
        self._columns_of_types: dict[tuple[tuple[str, ...], tuple[Any, ...]], _Columns] = {}
        # Per table name: its last mysqlType map and what it says. A stream repeats a table's map
        # message after message, and comparing two dicts is cheaper than hashing a key of them.
        self._last_columns: dict[str, tuple[dict[str, Any], _Columns]] = {}
        # Per table name: its last pkNames array and the tuple of it.
        self._last_keys: dict[str, tuple[list[Any], tuple[str, ...]]] = {}

    def flush(self) -> list[Event]:
        """Nothing is held between messages of this format."""
        return []

    def decode(self, message: RawMessage) -> list[Event]:
        value = message.value
        if not value:
            return []  # a tombstone or empty value holds no event (Flink and SeaTunnel read none)
        origin = message.origin
        try:
            if self._compressed:
                try:
                    value = self._decompress(value)
                except Exception as exc:  # cramjam and lz4 raise their own error types, not ValueError
                    raise _Invalid(f"cannot decompress the value: {exc}") from exc
            events: list[Event] = []
            try:
                documents = [_loads(value)]
            except _JSONDecodeError:
                documents = _documents_by_stdlib(value)
            for document in documents:
                self._decode_message(document, origin, events)
            return events
        except _Invalid as exc:
            raise DecodeError(FORMAT, str(exc), origin) from exc

    def _decode_message(self, message: Any, origin: Origin, events: list[Event]) -> None:
        if message.__class__ is not dict:
            raise _Invalid(f"expected a JSON object, got {_json_kind(message)}")
        canal_type = message.get("type")
        if canal_type.__class__ is not str:
            raise _Invalid(f'the message has no "type" naming its event, got {_json_kind(canal_type)}')
        is_ddl = message.get("isDdl")
        if is_ddl is not None and is_ddl.__class__ is not bool:
            raise _Invalid(f'"isDdl" must be true or false, got {_json_kind(is_ddl)}')
        op = _OPS.get(canal_type)
        if op is not None and not is_ddl:
            self._decode_rows(message, canal_type, op, origin, events)
        elif is_ddl or canal_type in TICDC_DDL_TYPES:
            events.append(self._ddl(message, canal_type, _origin_at(origin, len(events))))
        elif canal_type == WATERMARK_TYPE:
            events.append(self._watermark(message, _origin_at(origin, len(events))))
        elif canal_type == _SNAPSHOT_TYPE:
            self._decode_rows(message, canal_type, Op.INSERT, origin, events)
        else:
            raise _Invalid(
                f"unknown type {canal_type!r}: expected INSERT, UPDATE, DELETE, {WATERMARK_TYPE}, "
                f"or a DDL ({', '.join(TICDC_DDL_TYPES)}) with isDdl true"
            )

    def _decode_rows(
        self, message: dict[str, Any], canal_type: str, op: Op, origin: Origin, events: list[Event]
    ) -> None:
        # The fields the events hold in their own attributes are popped, not read: what is left of the
        # message, which the decoder has just parsed and owns, is the events' meta.
        pop = message.pop
        data = pop("data", None)
        if data.__class__ is not list:
            raise _Invalid(f'"data" of a {canal_type} message must be an array of rows, got {_json_kind(data)}')
        old = pop("old", None)
        if op is not Op.UPDATE:
            old = None
        if old is not None and old.__class__ is not list:
            raise _Invalid(f'"old" of an UPDATE must be an array of rows, got {_json_kind(old)}')
        if old is not None and len(old) > len(data):
            raise _Invalid(f'"old" has {len(old)} rows for the {len(data)} of "data"')
        table = pop("table", None)
        mysql_types = pop("mysqlType", None)
        columns = self._table_columns(table, mysql_types)
        try:
            images = _images(op, data, old, columns)
        except _Untyped:
            columns = self._with_inferred_types(columns, data, old)
            images = _images(op, data, old, columns)

        database = pop("database", None)
        if database.__class__ is not str:
            database = _name(database, "database")
        if table.__class__ is not str:
            table = _name(table, "table")

        pk_names = pop("pkNames", None)
        last_keys = self._last_keys.get(table)
        if last_keys is not None and last_keys[0] == pk_names and pk_names.__class__ is list:
            key_columns = last_keys[1]
        else:
            key_columns = _key_columns(pk_names)
            if pk_names.__class__ is list:
                if len(self._last_keys) >= _COLUMNS_CACHE_SIZE:
                    self._last_keys.clear()
                self._last_keys[table] = (pk_names, key_columns)
        tidb = pop("_tidb", None)
        pop("type", None)
        pop("isDdl", None)
        pop("sql", None)
        pop("sqlType", None)
        meta = message
        large = None
        if tidb is None:
            commit_ts = None
        else:
            if tidb.__class__ is not dict:
                _tidb(tidb)  # raises
            commit_ts = tidb.get("commitTs")
            if not (commit_ts.__class__ is int and 0 <= commit_ts <= _U64_MAX):
                commit_ts = _tso(tidb, "commitTs")
            if len(tidb) != 1 or commit_ts is None:  # more than the commit ts alone
                large = _large_message(tidb)
                if "rowkey" in tidb:
                    meta["rowkey"] = tidb["rowkey"]
        if canal_type == _SNAPSHOT_TYPE:
            meta["type"] = _SNAPSHOT_TYPE
        types = columns.types
        append = events.append
        for before, after in images:
            index = len(events)
            change = RowChange(
                op,
                database,
                table,
                before,
                after,
                types,
                key_columns,
                commit_ts,
                None,
                None,
                origin.at(index) if index else origin,
                meta,
            )
            append(change if large is None else LargeMessageRef(large[0], change, large[1]))

    def _table_columns(self, table: Any, mysql_types: Any) -> _Columns:
        """:meth:`_columns`, through the table's last map when this one equals it."""
        if table.__class__ is not str:  # not a name (refused later): no cache
            return self._columns(mysql_types)
        last = self._last_columns.get(table)
        if last is not None and last[0] == mysql_types and mysql_types.__class__ is dict:
            return last[1]
        columns = self._columns(mysql_types)
        if mysql_types.__class__ is dict:
            if len(self._last_columns) >= _COLUMNS_CACHE_SIZE:
                self._last_columns.clear()
            self._last_columns[table] = (mysql_types, columns)
        return columns

    def _columns(self, mysql_types: Any) -> _Columns:
        if mysql_types is None:
            return _NO_COLUMNS
        if mysql_types.__class__ is not dict:
            raise _Invalid(f'"mysqlType" must map column names to types, got {_json_kind(mysql_types)}')
        fault = too_many_columns(len(mysql_types), '"mysqlType"')
        if fault is not None:  # each order of so many would be compiled, at a second per 4000 columns
            raise _Invalid(fault)
        key = (tuple(mysql_types), tuple(mysql_types.values()))
        try:
            return self._columns_of_types[key]
        except (KeyError, TypeError):  # not seen yet, or an unhashable value (which _type refuses)
            pass
        types: dict[str, MySQLType] = {}
        converters: dict[str, Converter] = {}
        for name, text in mysql_types.items():
            types[name], converters[name] = self._type(name, text)
        columns = _columns_of(types, converters, self._tz)
        if len(self._columns_of_types) >= _COLUMNS_CACHE_SIZE:
            self._columns_of_types.clear()
        self._columns_of_types[key] = columns
        return columns

    def _type(self, name: str, text: Any) -> tuple[MySQLType, Converter]:
        if text.__class__ is not str:
            raise _Invalid(f"mysqlType of column {name!r} must be a type name, got {_json_kind(text)}")
        known = self._type_of_text.get(text)
        if known is None:
            try:
                mtype = MySQLType.parse(text)
            except TypeParseError as exc:
                raise _Invalid(f"mysqlType of column {name!r}: {exc}") from exc
            if len(self._type_of_text) >= _COLUMNS_CACHE_SIZE:
                self._type_of_text.clear()
            known = self._type_of_text[text] = (mtype, _converter(mtype, self._tz))
        return known

    def _with_inferred_types(self, columns: _Columns, data: list[Any], old: list[Any] | None) -> _Columns:
        values: dict[str, list[Any]] = {}
        for row in [*data, *(old or ())]:
            for name, raw in row.items() if row.__class__ is dict else ():
                if name not in columns.converters and raw is not None:
                    values.setdefault(name, []).append(raw)
        types, converters = dict(columns.types), dict(columns.converters)
        fault = too_many_columns(len(types) + len(values), 'a row message')
        if fault is not None:  # the rows' columns, typed or not: more than a table holds
            raise _Invalid(fault)
        for name, found in values.items():
            types[name] = _inferred_type(name, found)
            converters[name] = _converter(types[name], self._tz)
        return _columns_of(types, converters, None)

    def _ddl(self, message: dict[str, Any], canal_type: str, origin: Origin) -> Ddl:
        sql = message.get("sql")
        if sql.__class__ is not str or not sql.strip():
            raise _Invalid(f'a DDL message needs its statement in "sql", got {_json_kind(sql)}')
        tidb = _tidb(message.get("_tidb"))
        meta = {field: value for field, value in message.items() if field not in _STRUCTURAL}
        meta["type"] = canal_type
        return Ddl(
            kind_of_ticdc_type(canal_type, sql),
            _name(message.get("database"), "database"),
            _name(message.get("table"), "table"),
            sql,
            commit_ts=_tso(tidb, "commitTs") if tidb is not None else None,
            origin=origin,
            meta=meta,
        )

    def _watermark(self, message: dict[str, Any], origin: Origin) -> Watermark:
        tidb = _tidb(message.get("_tidb"))
        ts = _tso(tidb, "watermarkTs") if tidb is not None else None
        if ts is None:
            raise _Invalid(f'a {WATERMARK_TYPE} message needs "_tidb": {{"watermarkTs": ...}}')
        meta = {field: value for field, value in message.items() if field not in _STRUCTURAL}
        return Watermark(ts, origin=origin, meta=meta)


def _origin_at(origin: Origin, index: int) -> Origin:
    return origin.at(index) if index else origin


def _name(value: Any, field: str) -> str:
    """The message's top-level ``field``, given its ``value``, as a name."""
    if value.__class__ is str:
        return value
    if value is None:
        return ""  # third-party producers may leave database and table out
    raise _Invalid(f'"{field}" must be a string, got {_json_kind(value)}')


def _key_columns(pk_names: Any) -> tuple[str, ...]:
    if pk_names is None:
        return ()
    if pk_names.__class__ is list and all(name.__class__ is str for name in pk_names):
        return tuple(pk_names)
    raise _Invalid(f'"pkNames" must be an array of column names, got {_json_kind(pk_names)}')


def _tidb(tidb: Any) -> dict[str, Any] | None:
    """The message's ``_tidb`` object, given its value."""
    if tidb is None or tidb.__class__ is dict:
        return tidb
    raise _Invalid(f'"_tidb" must be an object, got {_json_kind(tidb)}')


def _tso(tidb: dict[str, Any], field: str) -> int | None:
    value = tidb.get(field)
    if value is None or (value.__class__ is int and 0 <= value <= _U64_MAX):
        return value
    raise _Invalid(f'"_tidb.{field}" must be a TSO (an unsigned 64-bit integer), got {_json_kind(value)}')


def _large_message(tidb: dict[str, Any]) -> tuple[LargeMessageKind, str | None] | None:
    """How TiCDC shrank the message for size, if it did, and where the whole one is stored."""
    location = tidb.get("claimCheckLocation")
    if location is not None:
        if location.__class__ is not str:
            raise _Invalid(f'"_tidb.claimCheckLocation" must be a string, got {_json_kind(location)}')
        return LargeMessageKind.CLAIM_CHECK, location
    only_handle_key = tidb.get("onlyHandleKey")
    if only_handle_key is None or only_handle_key is False:
        return None
    if only_handle_key is True:
        return LargeMessageKind.HANDLE_KEY_ONLY, None
    raise _Invalid(f'"_tidb.onlyHandleKey" must be true or false, got {_json_kind(only_handle_key)}')
