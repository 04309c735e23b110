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

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from cdclake.errors import DecodeError
from cdclake.eventjson.schemas import (
    optional_schema_from_json,
    origin_to_json,
    readers_from_json,
    schema_from_json,
    schema_to_json,
)
from cdclake.eventjson.values import (
    choice_field,
    image_from_json,
    image_to_json,
    int_field,
    meta_field,
    names_field,
    optional_int_field,
    optional_text_field,
    origin_field,
    text_field,
)
from cdclake.model import (
    Bootstrap,
    Ddl,
    DdlKind,
    Event,
    Heartbeat,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    Origin,
    PendingRow,
    RowChange,
    Transaction,
    TransactionMark,
    Watermark,
)

FORMAT_NAME = "event-json"


# --- events -----------------------------------------------------------------------------------------


def _row_fields(row: RowChange) -> dict[str, Any]:
    return {
        "op": row.op.value,
        "database": row.database,
        "table": row.table,
        "commit_ts": row.commit_ts,
        "before": image_to_json(row.before),
        "after": image_to_json(row.after),
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


def _row_from_json(obj: Mapping[str, Any]) -> RowChange:
    readers = readers_from_json(obj["types"])
    return RowChange(
        op=choice_field(Op, obj, "op"),
        database=text_field(obj, "database"),
        table=text_field(obj, "table"),
        before=image_from_json(obj["before"], readers),
        after=image_from_json(obj["after"], readers),
        types={column: mtype for column, (mtype, _) in readers.items()},
        key_columns=names_field(obj, "key_columns"),
        commit_ts=optional_int_field(obj, "commit_ts"),
        schema_version=optional_int_field(obj, "schema_version"),
        table_id=optional_int_field(obj, "table_id"),
        origin=origin_field(obj),
        meta=meta_field(obj),
    )


def _ddl_from_json(obj: Mapping[str, Any]) -> Ddl:
    return Ddl(
        kind=choice_field(DdlKind, obj, "ddl_kind"),
        database=text_field(obj, "database"),
        table=text_field(obj, "table"),
        sql=text_field(obj, "sql"),
        commit_ts=optional_int_field(obj, "commit_ts"),
        schema_before=optional_schema_from_json(obj.get("schema_before")),
        schema_after=optional_schema_from_json(obj.get("schema_after")),
        origin=origin_field(obj),
        meta=meta_field(obj),
    )


def _watermark_from_json(obj: Mapping[str, Any]) -> Watermark:
    return Watermark(ts=int_field(obj, "commit_ts"), origin=origin_field(obj), meta=meta_field(obj))


def _bootstrap_from_json(obj: Mapping[str, Any]) -> Bootstrap:
    return Bootstrap(schema=schema_from_json(obj), origin=origin_field(obj), meta=meta_field(obj))


def _heartbeat_from_json(obj: Mapping[str, Any]) -> Heartbeat:
    return Heartbeat(ts_ms=int_field(obj, "ts_ms"), origin=origin_field(obj), meta=meta_field(obj))


def _transaction_from_json(obj: Mapping[str, Any]) -> Transaction:
    return Transaction(
        mark=choice_field(TransactionMark, obj, "mark"),
        database=optional_text_field(obj, "database"),
        table=optional_text_field(obj, "table"),
        origin=origin_field(obj),
        meta=meta_field(obj),
    )


def _large_message_from_json(obj: Mapping[str, Any]) -> LargeMessageRef:
    return LargeMessageRef(
        kind=choice_field(LargeMessageKind, obj, "large_message_handle"),
        row=_row_from_json(obj),
        location=optional_text_field(obj, "location"),
    )


def _pending_from_json(obj: Mapping[str, Any]) -> PendingRow:
    return PendingRow(
        database=text_field(obj, "database"),
        table=text_field(obj, "table"),
        schema_version=int_field(obj, "schema_version"),
        origin=origin_field(obj),
        commit_ts=optional_int_field(obj, "commit_ts"),
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
