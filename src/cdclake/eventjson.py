"""Events as JSON objects: what ``cdclake decode`` prints and ``cdclake encode`` reads.

:func:`event_to_json` turns an event into a JSON-ready dict and :func:`event_from_json` rebuilds the
very same event from it, so a stream can be decoded, inspected or edited as text, and encoded again::

    >>> obj = event_to_json(event)              # {"kind": "row", "op": "insert", ...}
    >>> event_from_json(obj) == event
    True

:func:`dumps_event` and :func:`loads_event` do the same with one line of JSON text.

Every object has a ``kind``: ``row``, ``ddl``, ``watermark``, ``bootstrap``, ``heartbeat``,
``transaction``, ``large-message`` or ``pending``. Its other fields are the event's own, under the
names of :mod:`cdclake.model`. ``origin``, where the event was decoded from, appears only when known,
with the coordinates that are: ``{"file": "orders.jsonl", "line": 3}``, ``{"topic": "cdc",
"partition": 0, "offset": 42, "index": 1}`` (``index`` numbers the events of one message from 0).

============== ===============================================================================
kind           fields
============== ===============================================================================
row            op (insert, update, delete), database, table, commit_ts, before, after, types
               {column: MySQL type text}, key_columns, schema_version, table_id, meta
ddl            ddl_kind (``create table``, ``alter table`` ...), database, table, sql,
               commit_ts, schema_before, schema_after (schemas as below, or null), meta
watermark      commit_ts (the resolved ts), meta
bootstrap      the schema's fields (database, table, table_id, schema_version, columns,
               indexes), meta
heartbeat      ts_ms, meta
transaction    mark (begin, end), database, table, meta
large-message  large_message_handle (handle-key-only, claim-check), location, and the
               fields of the row it stands for
pending        database, table, schema_version
============== ===============================================================================

A schema is ``{database, table, table_id, schema_version, columns: [{name, type, nullable, default,
charset, collation}], indexes: [{name, columns, unique, primary, nullable}]}``. When reading, a field
may be left out where the model gives it a default (``commit_ts``, ``meta``, ``origin`` ...).

Row values are written by what they are and read back by their column's type in ``types``:

==========================  ======================================================================
value                       JSON
==========================  ======================================================================
integer (any size), enum    number (enum and set: their member names as a string where known)
and set indexes             (a ``bool`` in a ``tinyint(1)``, MySQL's BOOLEAN: ``true``, ``false``)
float, double               number; NaN and infinities as the strings ``NaN``, ``Infinity``,
                            ``-Infinity``
decimal                     string with every digit, never an exponent (``"123.4500"``)
binary, blob                standard base64 string
date, datetime              ``isoformat()``: ``2024-05-01``, ``2024-05-01T10:00:00.250000``
timestamp                   ``isoformat()`` in UTC: ``2024-05-01T10:00:00+00:00``
time                        ``[-]HH:MM:SS[.ffffff]``, hours may pass 24: ``-838:59:59``
zero dates                  their text: ``0000-00-00``, ``2024-00-15 00:00:00``
char, text, json            string
NULL                        null
==========================  ======================================================================

A column missing from ``types`` keeps its JSON value as it is. ``meta`` holds JSON values only.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from enum import Enum
from functools import lru_cache
from typing import Any, TypeVar

import orjson

from cdclake.errors import DecodeError
from cdclake.model import (
    Bootstrap,
    ColumnSchema,
    Ddl,
    DdlKind,
    Event,
    Heartbeat,
    IndexSchema,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    Origin,
    PendingRow,
    RowChange,
    TableSchema,
    Transaction,
    TransactionMark,
    Watermark,
)
from cdclake.types import (
    Family,
    MySQLType,
    ZeroTemporal,
    format_decimal,
    format_time,
    parse_date,
    parse_datetime,
    parse_decimal,
    parse_time,
    to_float32,
)

FORMAT_NAME = "event-json"

_E = TypeVar("_E", bound=Enum)

# --- values: Python -> JSON, by the value's own type ------------------------------------------------

_NON_FINITE_TEXT = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _float_to_json(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _bytes_to_json(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _isoformat(value: dt.date) -> str:
    return value.isoformat()


def _same(value: Any) -> Any:
    return value


_VALUE_TO_JSON: dict[type, Callable[[Any], Any]] = {
    type(None): _same,
    str: _same,
    int: _same,
    bool: _same,
    float: _float_to_json,
    Decimal: format_decimal,
    bytes: _bytes_to_json,
    dt.date: _isoformat,
    dt.datetime: _isoformat,
    dt.timedelta: format_time,
    ZeroTemporal: lambda value: value.text,
}


def value_to_json(value: Any) -> Any:
    """The JSON form of one row value (see the module's table)."""
    try:
        return _VALUE_TO_JSON[type(value)](value)
    except KeyError:
        raise TypeError(f"no JSON form for a row value of type {type(value).__name__}: {value!r}") from None


def _image_to_json(image: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if image is None else {column: value_to_json(value) for column, value in image.items()}


# --- values: JSON -> Python, by the column's MySQL type ---------------------------------------------


def _expect(kind: type | tuple[type, ...], value: Any, what: str) -> Any:
    # bool is an int to Python, never to MySQL.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"expected {what}, got {value!r}")
    return value


def _integer(value: Any) -> int:
    return int(_expect(int, value, "a JSON integer"))


def _boolean_or_integer(value: Any) -> int:
    """A ``tinyint(1)``, MySQL's BOOLEAN: ``true`` and ``false`` (DataWorks' BOOLEAN) as bools, or a number."""
    return value if isinstance(value, bool) else _integer(value)


def _double(value: Any) -> float:
    if isinstance(value, str) and value in _NON_FINITE_TEXT:
        return _NON_FINITE_TEXT[value]
    return float(_expect((int, float), value, "a JSON number or NaN, Infinity, -Infinity"))


def _float(value: Any) -> float:
    return to_float32(_double(value))


def _decimal(value: Any) -> Decimal:
    # A JSON float has already lost digits; only text and integers are exact.
    return parse_decimal(str(_expect((str, int), value, "a decimal as a string")))


def _text(value: Any) -> str:
    return str(_expect(str, value, "a string"))


def _binary(value: Any) -> bytes:
    try:
        return base64.b64decode(_text(value), validate=True)
    except binascii.Error as exc:
        raise ValueError(f"expected standard base64, got {value!r}: {exc}") from exc


def _enum_or_set(value: Any) -> str | int:
    result: str | int = _expect((str, int), value, "member names as a string, or an index")
    return result


def _date(value: Any) -> dt.date | ZeroTemporal:
    return parse_date(_text(value))


def _datetime(value: Any) -> dt.datetime | ZeroTemporal:
    return parse_datetime(_text(value))


def _timestamp(value: Any) -> dt.datetime | ZeroTemporal:
    text = _text(value)
    try:
        instant = dt.datetime.fromisoformat(text)
    except ValueError:
        zero = parse_datetime(text)  # raises unless it is a zero date
        if isinstance(zero, ZeroTemporal):
            return zero
        raise
    # A TIMESTAMP is an instant; one written without an offset is taken to be UTC.
    return instant.replace(tzinfo=dt.UTC) if instant.tzinfo is None else instant.astimezone(dt.UTC)


def _time(value: Any) -> dt.timedelta:
    return parse_time(_text(value))


_VALUE_FROM_JSON: dict[Family, Callable[[Any], Any]] = {
    Family.INTEGER: _integer,
    Family.BIT: _integer,
    Family.YEAR: _integer,
    Family.FLOAT: _float,
    Family.DOUBLE: _double,
    Family.DECIMAL: _decimal,
    Family.STRING: _text,
    Family.BINARY: _binary,
    Family.GEOMETRY: _binary,
    Family.ENUM: _enum_or_set,
    Family.SET: _enum_or_set,
    Family.JSON: _text,
    Family.DATE: _date,
    Family.DATETIME: _datetime,
    Family.TIMESTAMP: _timestamp,
    Family.TIME: _time,
    Family.VECTOR: _same,
}


_ValueReader = Callable[[Any], Any]
_BOOLEAN = MySQLType("tinyint", length=1)  # MySQL's BOOLEAN, and what DataWorks' BOOLEAN decodes to


@lru_cache(maxsize=4096)
def _column_reader(type_text: str) -> tuple[MySQLType, _ValueReader]:
    """The type a ``types`` text names and the reader of its values, worked out once per text."""
    mtype = MySQLType.parse(type_text)
    return mtype, _boolean_or_integer if mtype == _BOOLEAN else _VALUE_FROM_JSON[mtype.family]


def _image_from_json(image: Any, readers: Mapping[str, tuple[MySQLType, _ValueReader]]) -> dict[str, Any] | None:
    if image is None:
        return None
    values = {}
    for column, value in _expect(dict, image, "an object of column values").items():
        reader = readers.get(column)
        if value is None or reader is None:
            values[column] = value
            continue
        try:
            values[column] = reader[1](value)
        except ValueError as exc:
            raise ValueError(f"column {column!r} ({reader[0]}): {exc}") from exc
    return values


# --- types and schemas ------------------------------------------------------------------------------


def _readers_from_json(types: Any) -> dict[str, tuple[MySQLType, _ValueReader]]:
    pairs = _expect(dict, types, "types as an object").items()
    return {column: _column_reader(_expect(str, text, "a type text")) for column, text in pairs}


def schema_to_json(schema: TableSchema) -> dict[str, Any]:
    return {
        "database": schema.database,
        "table": schema.table,
        "table_id": schema.table_id,
        "schema_version": schema.version,
        "columns": [
            {
                "name": c.name,
                "type": str(c.type),
                "nullable": c.nullable,
                "default": c.default,
                "charset": c.charset,
                "collation": c.collation,
            }
            for c in schema.columns
        ],
        "indexes": [
            {
                "name": i.name,
                "columns": list(i.columns),
                "unique": i.unique,
                "primary": i.primary,
                "nullable": i.nullable,
            }
            for i in schema.indexes
        ],
    }


def schema_from_json(obj: Mapping[str, Any]) -> TableSchema:
    columns = tuple(_column_from_json(c) for c in _expect(list, obj["columns"], "columns as a list"))
    indexes = tuple(_index_from_json(i) for i in _expect(list, obj.get("indexes", []), "indexes as a list"))
    return TableSchema(
        database=_str(obj, "database"),
        table=_str(obj, "table"),
        columns=columns,
        indexes=indexes,
        table_id=_optional_int(obj, "table_id"),
        version=_optional_int(obj, "schema_version"),
    )


def _column_from_json(obj: Any) -> ColumnSchema:
    _expect(dict, obj, "a column as an object")
    return ColumnSchema(
        name=_str(obj, "name"),
        type=_column_reader(_str(obj, "type"))[0],
        nullable=_bool(obj, "nullable", True),
        default=_optional_str(obj, "default"),
        charset=_optional_str(obj, "charset"),
        collation=_optional_str(obj, "collation"),
    )


def _index_from_json(obj: Any) -> IndexSchema:
    _expect(dict, obj, "an index as an object")
    return IndexSchema(
        name=_str(obj, "name"),
        columns=_names(obj, "columns"),
        unique=_bool(obj, "unique", False),
        primary=_bool(obj, "primary", False),
        nullable=_bool(obj, "nullable", False),
    )


def _bool(obj: Mapping[str, Any], name: str, default: bool) -> bool:
    value = obj.get(name, default)
    if not isinstance(value, bool):
        raise ValueError(f"expected {name} as true or false, got {value!r}")
    return value


def _optional_schema_from_json(obj: Any) -> TableSchema | None:
    return None if obj is None else schema_from_json(obj)


def origin_to_json(origin: Origin) -> dict[str, Any]:
    """The coordinates that are known: ``{"file": "orders.jsonl", "line": 3}``."""
    fields = {
        "topic": origin.topic,
        "partition": origin.partition,
        "offset": origin.offset,
        "file": origin.file,
        "line": origin.line,
    }
    known = {name: value for name, value in fields.items() if value is not None}
    if origin.index:
        known["index"] = origin.index
    return known


# --- events -----------------------------------------------------------------------------------------


def _row_fields(row: RowChange) -> dict[str, Any]:
    return {
        "op": row.op.value,
        "database": row.database,
        "table": row.table,
        "commit_ts": row.commit_ts,
        "before": _image_to_json(row.before),
        "after": _image_to_json(row.after),
        "types": {column: str(mtype) for column, mtype in row.types.items()},
        "key_columns": list(row.key_columns),
        "schema_version": row.schema_version,
        "table_id": row.table_id,
        "meta": dict(row.meta),
    }


def _with_origin(obj: dict[str, Any], origin: Origin | None) -> dict[str, Any]:
    if origin is not None:
        obj["origin"] = origin_to_json(origin)
    return obj


def event_to_json(event: Event) -> dict[str, Any]:
    """The event as a dict of JSON values, ready for ``orjson.dumps`` (see the module's tables)."""
    match event:
        case RowChange():
            return _with_origin({"kind": "row", **_row_fields(event)}, event.origin)
        case Ddl():
            obj = {
                "kind": "ddl",
                "ddl_kind": event.kind.value,
                "database": event.database,
                "table": event.table,
                "sql": event.sql,
                "commit_ts": event.commit_ts,
                "schema_before": None if event.schema_before is None else schema_to_json(event.schema_before),
                "schema_after": None if event.schema_after is None else schema_to_json(event.schema_after),
                "meta": dict(event.meta),
            }
            return _with_origin(obj, event.origin)
        case Watermark():
            return _with_origin({"kind": "watermark", "commit_ts": event.ts, "meta": dict(event.meta)}, event.origin)
        case Bootstrap():
            obj = {"kind": "bootstrap", **schema_to_json(event.schema), "meta": dict(event.meta)}
            return _with_origin(obj, event.origin)
        case Heartbeat():
            return _with_origin({"kind": "heartbeat", "ts_ms": event.ts_ms, "meta": dict(event.meta)}, event.origin)
        case Transaction():
            obj = {
                "kind": "transaction",
                "mark": event.mark.value,
                "database": event.database,
                "table": event.table,
                "meta": dict(event.meta),
            }
            return _with_origin(obj, event.origin)
        case LargeMessageRef():
            obj = {
                "kind": "large-message",
                "large_message_handle": event.kind.value,
                "location": event.location,
                **_row_fields(event.row),
            }
            return _with_origin(obj, event.row.origin)
        case PendingRow():
            obj = {
                "kind": "pending",
                "database": event.database,
                "table": event.table,
                "schema_version": event.schema_version,
                "commit_ts": event.commit_ts,
            }
            return _with_origin(obj, event.origin)
    raise TypeError(f"not an event: {event!r}")


# Readers of one field each: ``obj[name]`` where the model requires the field, ``obj.get(name)`` where
# it has a default; each checks the JSON type so that a wrong one is named here, not in an encoder.


def _str(obj: Mapping[str, Any], name: str) -> str:
    return str(_expect(str, obj[name], f"{name} as a string"))


def _optional_str(obj: Mapping[str, Any], name: str) -> str | None:
    return None if obj.get(name) is None else _str(obj, name)


def _optional_int(obj: Mapping[str, Any], name: str) -> int | None:
    return None if obj.get(name) is None else _int(obj, name)


def _int(obj: Mapping[str, Any], name: str) -> int:
    return int(_expect(int, obj[name], f"{name} as an integer"))


def _names(obj: Mapping[str, Any], name: str) -> tuple[str, ...]:
    names = _expect(list, obj.get(name, []), f"{name} as a list of names")
    return tuple(_expect(str, n, f"{name} as a list of names") for n in names)


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = _expect(dict, obj.get("meta", {}), "meta as an object")
    return result


def _origin(obj: Mapping[str, Any]) -> Origin | None:
    value = obj.get("origin")
    return None if value is None else Origin(**_expect(dict, value, "origin as an object"))


def _choice(enum: type[_E], obj: Mapping[str, Any], name: str) -> _E:
    value = obj[name]
    try:
        return enum(value)
    except ValueError:
        raise ValueError(f"expected {name} as one of {', '.join(m.value for m in enum)}, got {value!r}") from None


def _row_from_json(obj: Mapping[str, Any]) -> RowChange:
    readers = _readers_from_json(obj["types"])
    return RowChange(
        op=_choice(Op, obj, "op"),
        database=_str(obj, "database"),
        table=_str(obj, "table"),
        before=_image_from_json(obj["before"], readers),
        after=_image_from_json(obj["after"], readers),
        types={column: mtype for column, (mtype, _) in readers.items()},
        key_columns=_names(obj, "key_columns"),
        commit_ts=_optional_int(obj, "commit_ts"),
        schema_version=_optional_int(obj, "schema_version"),
        table_id=_optional_int(obj, "table_id"),
        origin=_origin(obj),
        meta=_meta(obj),
    )


def _ddl_from_json(obj: Mapping[str, Any]) -> Ddl:
    return Ddl(
        kind=_choice(DdlKind, obj, "ddl_kind"),
        database=_str(obj, "database"),
        table=_str(obj, "table"),
        sql=_str(obj, "sql"),
        commit_ts=_optional_int(obj, "commit_ts"),
        schema_before=_optional_schema_from_json(obj.get("schema_before")),
        schema_after=_optional_schema_from_json(obj.get("schema_after")),
        origin=_origin(obj),
        meta=_meta(obj),
    )


def _watermark_from_json(obj: Mapping[str, Any]) -> Watermark:
    return Watermark(ts=_int(obj, "commit_ts"), origin=_origin(obj), meta=_meta(obj))


def _bootstrap_from_json(obj: Mapping[str, Any]) -> Bootstrap:
    return Bootstrap(schema=schema_from_json(obj), origin=_origin(obj), meta=_meta(obj))


def _heartbeat_from_json(obj: Mapping[str, Any]) -> Heartbeat:
    return Heartbeat(ts_ms=_int(obj, "ts_ms"), origin=_origin(obj), meta=_meta(obj))


def _transaction_from_json(obj: Mapping[str, Any]) -> Transaction:
    return Transaction(
        mark=_choice(TransactionMark, obj, "mark"),
        database=_optional_str(obj, "database"),
        table=_optional_str(obj, "table"),
        origin=_origin(obj),
        meta=_meta(obj),
    )


def _large_message_from_json(obj: Mapping[str, Any]) -> LargeMessageRef:
    return LargeMessageRef(
        kind=_choice(LargeMessageKind, obj, "large_message_handle"),
        row=_row_from_json(obj),
        location=_optional_str(obj, "location"),
    )


def _pending_from_json(obj: Mapping[str, Any]) -> PendingRow:
    return PendingRow(
        database=_str(obj, "database"),
        table=_str(obj, "table"),
        schema_version=_int(obj, "schema_version"),
        origin=_origin(obj),
        commit_ts=_optional_int(obj, "commit_ts"),
    )


_FROM_JSON: dict[str, Callable[[Mapping[str, Any]], Event]] = {
    "row": _row_from_json,
    "ddl": _ddl_from_json,
    "watermark": _watermark_from_json,
    "bootstrap": _bootstrap_from_json,
    "heartbeat": _heartbeat_from_json,
    "transaction": _transaction_from_json,
    "large-message": _large_message_from_json,
    "pending": _pending_from_json,
}

KINDS = tuple(_FROM_JSON)


def event_from_json(obj: Any) -> Event:
    """The event that :func:`event_to_json` made ``obj`` from; raises :class:`DecodeError` if ``obj`` is
    not one (the reason names the missing field, or the column and value that do not fit its type)."""
    if not isinstance(obj, dict):
        raise DecodeError(FORMAT_NAME, f"expected an event object, got {type(obj).__name__}")
    kind = obj.get("kind")
    build = _FROM_JSON.get(kind) if isinstance(kind, str) else None
    if build is None:
        raise DecodeError(FORMAT_NAME, f"unknown event kind {kind!r}; kinds: {', '.join(KINDS)}")
    try:
        return build(obj)
    except KeyError as exc:
        raise DecodeError(FORMAT_NAME, f"{kind} event without field {exc.args[0]!r}") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        raise DecodeError(FORMAT_NAME, f"{kind} event: {exc}") from exc


# --- lines of text ----------------------------------------------------------------------------------


def dumps_event(event: Event) -> bytes:
    """One event as one line of compact JSON (no newline)."""
    obj = event_to_json(event)
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        # orjson writes no integer beyond 64 bits; the standard library writes any.
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


_LONG_DIGITS = re.compile(rb"\d{19}")


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def loads_event(line: bytes) -> Event:
    """The event in one line of JSON; raises :class:`DecodeError` if the line is not one."""
    try:
        # orjson reads an integer beyond 64 bits as a float, silently; the standard library reads it
        # exactly, so it takes every line with a number that long (19 digits may be below -2**63).
        obj = json.loads(line, parse_constant=_reject_constant) if _LONG_DIGITS.search(line) else orjson.loads(line)
    except ValueError as exc:  # orjson.JSONDecodeError is one
        raise DecodeError(FORMAT_NAME, f"not JSON: {exc}") from exc
    return event_from_json(obj)
