"""The DataWorks decoder: messages → events in partition order, the two halves of an update pair joined
into one update, each row message read on the fast path first and on the careful path (which says what
is wrong) where that refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import orjson

from cdclake.errors import DecodeError
from cdclake.formats.dataworks.table import _Table, _Unusual
from cdclake.formats.dataworks.values import _EXACT_READERS, _READERS, _Inexact, _loads, _loads_exactly, _Readers
from cdclake.formats.dataworks.wire import _KNOWN_FIELDS, _OPS, _ROW_OPS, _TRANSACTION_MARKS, FORMAT, _show, ddl_kind
from cdclake.formats.limits import TABLE_CACHE_SIZE, Lru
from cdclake.model import Ddl, Event, Heartbeat, Op, Origin, RawMessage, RowChange, Transaction


def _source_names(source: Any) -> tuple[str | None, str | None]:
    """``schema.source``'s dbName and tableName, each a string or None."""
    if source is None:
        return None, None
    database = source.get("dbName") if type(source) is dict else 0
    table = source.get("tableName") if type(source) is dict else 0
    if not (database is None or type(database) is str) or not (table is None or type(table) is str):
        raise ValueError(f"schema.source: expected {{dbName, tableName, ...}} with string names, got {_show(source)}")
    return database, table


def _meta(document: dict[str, Any], schema: dict[str, Any] | None, payload: dict[str, Any]) -> dict[str, Any]:
    """Every field of the message that is not an image, a type or a name the event already holds."""
    meta = {"op": payload["op"]}
    for name in ("sequenceId", "scn", "timestamp"):
        if name in payload:
            meta[name] = payload[name]
    if schema is not None:
        for name in ("source", "dataColumn", "primaryKey"):
            if name in schema:
                meta[name] = schema[name]
    if "version" in document:
        meta["version"] = document["version"]
    if not (
        document.keys() <= _KNOWN_FIELDS["message"]
        and payload.keys() <= _KNOWN_FIELDS["payload"]
        and (schema is None or schema.keys() <= _KNOWN_FIELDS["schema"])
    ):
        for path, fields in (("message", document), ("schema", schema), ("payload", payload)):
            _keep_unknown_fields(fields, path, meta)
    return meta


def _keep_unknown_fields(fields: dict[str, Any] | None, path: str, meta: dict[str, Any]) -> None:
    """Keeps the fields beside those the spec names at ``path`` in ``meta["unknownFields"][path]``."""
    extra = {name: value for name, value in (fields or {}).items() if name not in _KNOWN_FIELDS[path]}
    if extra:
        meta.setdefault("unknownFields", {})[path] = extra


def _no_images(payload: dict[str, Any], op: str) -> None:
    for name in ("before", "after"):
        if payload.get(name) is not None:
            raise ValueError(f"payload.{name}: a {op} message carries no row image, got {_show(payload[name])}")


class DataWorksDecoder:
    """Decodes the messages of one partition, in order.

    The two halves of an update pair are consecutive messages of a partition; the decoder holds an
    ``UPDATE_BEFOR`` half until the next message. If that is the ``UPDATE_AFTER`` with the same
    ``sequenceId`` and table, one update comes out; otherwise the held half comes out on its own first
    (an update with ``after=None`` and ``meta["unpaired"]``), as does an ``UPDATE_AFTER`` without a
    before image (``before=None``). A message that fails to decode leaves a held half held.
    """

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._held: RowChange | None = None
        # Every row message carries its table's schema, so a table forgotten is read again: bounded,
        # since each table name sent makes an entry.
        self._tables: Lru[tuple[str, str], _Table] = Lru(TABLE_CACHE_SIZE)

    def decode(self, message: RawMessage) -> list[Event]:
        row: RowChange | None
        try:
            row = self._fast_row(_loads(message.value), message.origin)
        except Exception:  # the careful path below says what is wrong
            row = None
        if row is None or self._held is not None:
            return self._paired(self._read_message(message) if row is None else row)
        if row.op is Op.UPDATE and row.after is None:
            self._held = row
            return []
        return [row]

    def _paired(self, event: Event) -> list[Event]:
        """The events out of ``event`` and the held half, if any."""
        held, self._held = self._held, None
        if isinstance(event, RowChange) and event.op is Op.UPDATE and event.after is None:
            self._held = event
            return [] if held is None else [held]
        if held is None:
            return [event]
        if isinstance(event, RowChange) and _completes(held, event):
            return [_joined(held, event)]
        return [held, event]

    def flush(self) -> list[Event]:
        """The held before half of an update, if any, as an unpaired update: call at the end of input."""
        held, self._held = self._held, None
        return [] if held is None else [held]

    def _fast_row(self, document: Any, origin: Origin | None) -> RowChange:
        """A row message of the usual shape, as :meth:`_read` reads it. Raises on anything else (another
        op, a field out of place, a bad value), and the message is read again on the careful path."""
        payload = document["payload"]
        schema = document["schema"]
        if type(payload) is not dict or type(schema) is not dict:
            raise _Unusual
        # Six payload fields, three schema and three message fields, each read below by name: exactly
        # the usual ones (a missing one raises KeyError, and the careful path reads the message).
        usual_fields = len(payload) == 6 and len(schema) == 3 and len(document) == 3
        if usual_fields:
            op = payload["op"]
            sequence_id = payload["sequenceId"]
            timestamp = payload["timestamp"]
            ddl = payload["ddl"]
            before = payload["before"]
            after = payload["after"]
            columns = schema["dataColumn"]
            primary_key = schema["primaryKey"]
            source = schema["source"]
        else:
            op = payload["op"]
            sequence_id = payload.get("sequenceId")
            timestamp = payload.get("timestamp")
            ddl = payload.get("ddl")
            before = payload.get("before")
            after = payload.get("after")
            columns = schema.get("dataColumn")
            primary_key = schema.get("primaryKey")
            source = schema["source"]
        row_op = _ROW_OPS[op]
        if (
            not (sequence_id is None or type(sequence_id) is str)
            or not (timestamp is None or type(timestamp) is dict)
            or type(source) is not dict
            or ddl is not None
        ):
            raise _Unusual
        database = source.get("dbName")
        table = source.get("tableName")
        if type(database) is not str or type(table) is not str:
            raise _Unusual
        if op == "INSERT":
            if after is None or before is not None:
                raise _Unusual
        elif op == "UPDATE_AFTER":
            if after is None:
                raise _Unusual
        elif before is None or after is not None:
            raise _Unusual
        table_schema = self._tables.get((database, table))
        if table_schema is None or table_schema.raw != columns or table_schema.primary_key != primary_key:
            table_schema = self._table(schema, database, table)
        if usual_fields:
            meta = {
                "op": op,
                "sequenceId": sequence_id,
                "timestamp": timestamp,
                "source": source,
                "dataColumn": columns,
                "primaryKey": primary_key,
                "version": document["version"],
            }
        else:
            meta = _meta(document, schema, payload)
        if before is not None:
            before, before_text = table_schema.fast_image(before)
        else:
            before_text = None
        if after is not None:
            after, after_text = table_schema.fast_image(after)
            if after_text or before_text:
                meta["doubleText"] = (
                    {"before": before_text, "after": after_text} if before_text and after_text
                    else {"after": after_text} if after_text else {"before": before_text}
                )
            if before is None and op != "INSERT":
                meta["unpaired"] = True
        else:
            if before_text:
                meta["doubleText"] = {"before": before_text}
            if op != "DELETE":
                meta["unpaired"] = True
        return RowChange(
            row_op, database, table, before, after, table_schema.types, table_schema.key_columns,
            None, None, None, origin, meta,
        )

    def _read_message(self, message: RawMessage) -> Event:
        origin = message.origin
        if message.value is None:
            raise DecodeError(FORMAT, "expected a JSON object, got a null value (a tombstone)", origin)
        try:
            try:
                return self._read(orjson.loads(message.value), origin, _READERS)
            except _Inexact:
                return self._read(_loads_exactly(message.value), origin, _EXACT_READERS)
        except orjson.JSONDecodeError as exc:
            raise DecodeError(FORMAT, f"expected a JSON object, got invalid JSON: {exc}", origin) from None
        except ValueError as exc:
            raise DecodeError(FORMAT, str(exc), origin) from None
        except (TypeError, KeyError, AttributeError, OverflowError, RecursionError) as exc:
            raise DecodeError(FORMAT, f"malformed message ({type(exc).__name__}: {exc})", origin) from None

    def _read(self, document: Any, origin: Origin, readers: _Readers) -> Event:
        if type(document) is not dict:
            raise ValueError(f"expected a JSON object, got {_show(document)}")
        payload = document.get("payload")
        if type(payload) is not dict:
            raise ValueError(f"payload: expected a JSON object, got {_show(payload)}")
        schema = document.get("schema")
        if not (schema is None or type(schema) is dict):
            raise ValueError(f"schema: expected an object, got {_show(schema)}")
        op = payload.get("op")
        if type(op) is not str or op not in _OPS:
            raise ValueError(f"payload.op: expected one of {', '.join(_OPS)}, got {_show(op)}")
        sequence_id = payload.get("sequenceId")
        if not (sequence_id is None or type(sequence_id) is str):
            raise ValueError(f"payload.sequenceId: expected a string, got {_show(sequence_id)}")
        timestamp = payload.get("timestamp")
        if not (timestamp is None or type(timestamp) is dict):
            raise ValueError(f"payload.timestamp: expected {{eventTime, ...}}, got {_show(timestamp)}")
        meta = _meta(document, schema, payload)
        if op in _ROW_OPS:
            return self._read_row(op, schema, payload, meta, origin, readers)
        _no_images(payload, op)
        if op == "MHEARTBEAT":
            event_time = timestamp.get("eventTime") if timestamp is not None else None
            if type(event_time) is not int:
                raise ValueError(f"payload.timestamp.eventTime: a heartbeat needs epoch ms, got {_show(event_time)}")
            return Heartbeat(event_time, origin, meta)
        database, table = _source_names(schema.get("source") if schema is not None else None)
        if op in _TRANSACTION_MARKS:
            return Transaction(_TRANSACTION_MARKS[op], database, table, origin, meta)
        ddl = payload.get("ddl")
        if not isinstance(ddl, dict) or not isinstance(sql := ddl.get("text"), str):
            raise ValueError(f"payload.ddl: a {op} message needs {{\"text\": SQL}}, got {_show(ddl)}")
        if "ddlMeta" in ddl:
            meta["ddlMeta"] = ddl["ddlMeta"]
        _keep_unknown_fields(ddl, "payload.ddl", meta)
        return Ddl(ddl_kind(op, sql), database or "", table or "", sql, origin=origin, meta=meta)

    def _read_row(
        self,
        op: str,
        schema: dict[str, Any] | None,
        payload: dict[str, Any],
        meta: dict[str, Any],
        origin: Origin,
        readers: _Readers,
    ) -> RowChange:
        source = schema.get("source") if schema is not None else None
        database = source.get("dbName") if type(source) is dict else None
        table = source.get("tableName") if type(source) is dict else None
        if schema is None or type(database) is not str or type(table) is not str:
            raise ValueError(f"schema.source: a {op} message needs string dbName and tableName, got {_show(source)}")
        table_schema = self._table(schema, database, table)
        if payload.get("ddl") is not None:
            raise ValueError(f"payload.ddl: a {op} message carries no DDL, got {_show(payload['ddl'])}")
        # INSERT and UPDATE_AFTER carry the after image, the others the before image; UPDATE_AFTER may
        # carry both (an update in one message).
        carried, other = ("after", "before") if op == "INSERT" or op == "UPDATE_AFTER" else ("before", "after")
        if payload.get(carried) is None:
            raise ValueError(f"payload.{carried}: a {op} message needs the {carried} image, got null")
        if payload.get(other) is not None and op != "UPDATE_AFTER":
            raise ValueError(f"payload.{other}: a {op} message has no {other} image, got {_show(payload[other])}")
        before, after = payload.get("before"), payload.get("after")
        texts = {}
        if before is not None:
            before, text = table_schema.read_image(before, readers, "payload.before")
            if text:
                texts["before"] = text
            if len(payload["before"]) > 1:
                _keep_unknown_fields(payload["before"], "payload.before", meta)
        if after is not None:
            after, text = table_schema.read_image(after, readers, "payload.after")
            if text:
                texts["after"] = text
            if len(payload["after"]) > 1:
                _keep_unknown_fields(payload["after"], "payload.after", meta)
        if texts:
            meta["doubleText"] = texts
        if (before is None or after is None) and op != "INSERT" and op != "DELETE":
            meta["unpaired"] = True  # one half of an update pair, until the decoder joins it to the other
        return RowChange(
            _ROW_OPS[op], database, table, before, after, table_schema.types, table_schema.key_columns,
            origin=origin, meta=meta,
        )

    def _table(self, schema: dict[str, Any], database: str, table: str) -> _Table:
        """The table's schema, read once while its ``dataColumn`` and ``primaryKey`` stay the same."""
        columns, primary_key = schema.get("dataColumn"), schema.get("primaryKey")
        cached = self._tables.get((database, table))
        if cached is not None and cached.raw == columns and cached.primary_key == primary_key:
            return cached
        table_schema = _Table(columns, primary_key)
        self._tables.put((database, table), table_schema)
        return table_schema


def _completes(before_half: RowChange, event: RowChange) -> bool:
    """Whether ``event`` is the UPDATE_AFTER half that goes with the held UPDATE_BEFOR half."""
    return (
        event.op is Op.UPDATE
        and event.before is None
        and event.database == before_half.database
        and event.table == before_half.table
        and event.meta.get("sequenceId") == before_half.meta.get("sequenceId")
    )


def _joined(before_half: RowChange, after_half: RowChange) -> RowChange:
    """The update of a before and an after half. Made of ``after_half`` itself, which this decoder has just
    built and which no caller has seen: it becomes the joined update."""
    before_meta = before_half.meta
    meta: dict[str, Any] = after_half.meta  # type: ignore[assignment]  # a dict: the decoder built it
    del meta["unpaired"]
    # The fields of the before half's own payload, what it keeps in meta["updateBefore"], written out
    # (op is always there).
    update_before = {"op": before_meta["op"]}
    if "sequenceId" in before_meta:
        update_before["sequenceId"] = before_meta["sequenceId"]
    if "scn" in before_meta:
        update_before["scn"] = before_meta["scn"]
    if "timestamp" in before_meta:
        update_before["timestamp"] = before_meta["timestamp"]
    if "unknownFields" in before_meta:
        update_before["unknownFields"] = before_meta["unknownFields"]
    meta["updateBefore"] = update_before
    if "doubleText" in before_meta or "doubleText" in meta:
        texts = {**before_meta.get("doubleText", {}), **meta.get("doubleText", {})}
        if texts:
            meta["doubleText"] = texts
    if "unknownFields" in before_meta:
        before_fields = before_meta["unknownFields"].get("payload.before")
        if before_fields:
            meta["unknownFields"] = {**meta.get("unknownFields", {}), "payload.before": before_fields}
    types = after_half.types
    if before_half.types is not types:
        after_half.types = MappingProxyType({**before_half.types, **types})
    after_half.before = before_half.before
    return after_half
