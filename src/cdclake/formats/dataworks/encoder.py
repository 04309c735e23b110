"""The DataWorks encoder: events → messages, one per event (an update pair is two), keeping what the
decoded message had (sequenceId, timestamps, DataWorks types, DOUBLE text, unknown fields) while it
still fits the event.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from cdclake.errors import EncodeError
from cdclake.formats.dataworks.values import _TEXT_FAMILIES, _WRITERS, _same_double, dataworks_type
from cdclake.formats.dataworks.wire import _DDL_KIND_OF_OP, DOUBLE, FORMAT, MYSQL_TYPE_OF, STRING, ddl_kind
from cdclake.model import (
    Bootstrap,
    Ddl,
    DdlKind,
    Event,
    Heartbeat,
    Op,
    RawMessage,
    RowChange,
    Transaction,
    TransactionMark,
    Watermark,
)
from cdclake.types import MySQLType
from cdclake.values import value_to_text, zone


def _kept(meta: Mapping[str, Any], name: str, *kinds: type | None) -> bool:
    """Whether ``meta`` holds ``name`` with a value of one of ``kinds`` (another format's meta may use
    the same name for something else)."""
    if name not in meta:
        return False
    value = meta[name]
    return any(value is None if kind is None else isinstance(value, kind) for kind in kinds)


def _unknown_fields(meta: Mapping[str, Any], path: str) -> dict[str, Any]:
    fields = meta.get("unknownFields")
    found = fields.get(path) if isinstance(fields, dict) else None
    return found if isinstance(found, dict) else {}


def _source(meta: Mapping[str, Any], database: str | None, table: str | None) -> dict[str, Any] | None:
    given = meta.get("source")
    if isinstance(given, dict):
        if (given.get("dbName") or "", given.get("tableName") or "") == (database or "", table or ""):
            return given
        return {**given, "dbName": database, "tableName": table}
    if not database and not table:
        return None
    return {"dbType": "MySQL", "dbName": database, "tableName": table}


def _primary_key(meta: Mapping[str, Any], key_columns: tuple[str, ...]) -> list[str] | None:
    given = meta.get("primaryKey")
    if isinstance(given, list) and tuple(given) == key_columns:
        return given
    return list(key_columns) or None


def _data_column(meta: Mapping[str, Any], columns: Mapping[str, tuple[str, Any]]) -> list[Any]:
    """``schema.dataColumn``: the decoded message's own list (with any fields it had) while it still fits."""
    written = [{"name": name, "type": kind} for name, (kind, _) in columns.items()]
    given = meta.get("dataColumn")
    if isinstance(given, list) and [
        (column.get("name"), column.get("type")) if isinstance(column, dict) else None for column in given
    ] == [(column["name"], column["type"]) for column in written]:
        return given
    return written


def _timestamp(meta: Mapping[str, Any], event_ms: int) -> Any:
    if _kept(meta, "timestamp", dict):
        return meta["timestamp"]
    return {"eventTime": event_ms, "checkpointTime": event_ms}


def _event_ms(commit_ts: int | None) -> int:
    """eventTime for an event from another format: a TiDB commit ts's physical part (epoch ms), else -1,
    what DataWorks itself writes where it has no event time (Paimon's full-sync sample)."""
    return commit_ts >> 18 if commit_ts is not None else -1


def _payload(
    op: str,
    meta: Mapping[str, Any],
    sequence_id: str | None,
    timestamp: Any,
    before: Any = None,
    after: Any = None,
    ddl: Any = None,
) -> dict[str, Any]:
    payload = {"before": before, "after": after, "sequenceId": sequence_id}
    if "scn" in meta:
        payload["scn"] = meta["scn"]
    payload.update(timestamp=timestamp, op=op, ddl=ddl)
    payload.update(_unknown_fields(meta, "payload"))
    return payload


def _version(meta: Mapping[str, Any]) -> Any:
    return meta["version"] if _kept(meta, "version", str) else "0.0.1"


def _message(meta: Mapping[str, Any], schema: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    schema.update(_unknown_fields(meta, "schema"))
    return {"schema": schema, "payload": payload, "version": _version(meta), **_unknown_fields(meta, "message")}


def _other_schema(meta: Mapping[str, Any], database: str | None, table: str | None) -> dict[str, Any]:
    """``schema`` of a message without rows: what the decoded message had, else nulls."""
    return {
        "dataColumn": meta["dataColumn"] if _kept(meta, "dataColumn", list) else None,
        "primaryKey": meta["primaryKey"] if _kept(meta, "primaryKey", list) else None,
        "source": _source(meta, database, table),
    }


_OP_OF_DDL_KIND = {
    DdlKind.CREATE_TABLE: "CREATE",
    DdlKind.ALTER_TABLE: "ALTER",
    DdlKind.TRUNCATE_TABLE: "TRUNCATE",
    DdlKind.RENAME_TABLE: "RENAME",
    DdlKind.CREATE_INDEX: "CINDEX",
    DdlKind.DROP_INDEX: "DINDEX",
}  # every other kind goes as QUERY, whose kind the decoder reads from the SQL


class DataWorksEncoder:
    """Writes events as DataWorks messages, one per event (an update pair is two)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._one_record_per_update: bool = options["one-record-per-update"]
        self._before_op: str = options["update-before-op"]
        self._tz = zone(options["tz"])
        self._last_sequence = 0
        self._writers: dict[tuple[MySQLType, str], Callable[[Any], Any]] = {}

    def encode(self, events: Iterable[Event]) -> list[RawMessage]:
        messages = []
        for event in events:
            for document in self._documents(event):
                messages.append(RawMessage(key=None, value=_dumps(document)))
        return messages

    def _documents(self, event: Event) -> list[dict[str, Any]]:
        if isinstance(event, RowChange):
            return self._row_documents(event)
        if isinstance(event, Ddl):
            return [self._ddl_document(event)]
        if isinstance(event, Transaction):
            op = "TRANSACTION_BEGIN" if event.mark is TransactionMark.BEGIN else "TRANSACTION_END"
            payload = _payload(op, event.meta, self._sequence_id(event.meta), _timestamp(event.meta, -1))
            return [_message(event.meta, _other_schema(event.meta, event.database, event.table), payload)]
        if isinstance(event, Heartbeat):
            return [_heartbeat_document(event.ts_ms, event.meta)]
        if isinstance(event, Watermark):
            # Everything at or below the commit ts is sent, so nothing older than its physical ms is left.
            return [_heartbeat_document(event.ts >> 18, {})]
        if isinstance(event, Bootstrap):
            return []  # every DataWorks row message carries its table's schema itself
        raise EncodeError(FORMAT, f"a {type(event).__name__} has no DataWorks message; resolve it to rows first")

    def _sequence_id(self, meta: Mapping[str, Any]) -> str | None:
        if _kept(meta, "sequenceId", str, None):
            return meta["sequenceId"]  # type: ignore[no-any-return]
        # DataWorks' ids are 19 digits, so that text order is number order.
        self._last_sequence += 1
        return f"{self._last_sequence:019d}"

    def _row_documents(self, row: RowChange) -> list[dict[str, Any]]:
        meta = row.meta
        columns = self._column_writers(row)
        texts = meta.get("doubleText")
        if not isinstance(texts, dict):
            texts = {}
        before = self._image(row.before, columns, texts.get("before"), meta, "payload.before")
        after = self._image(row.after, columns, texts.get("after"), meta, "payload.after")

        data_column = _data_column(meta, columns)

        def message(op: str, fields: Mapping[str, Any], before: Any, after: Any) -> dict[str, Any]:
            schema = {
                "dataColumn": data_column,
                "primaryKey": _primary_key(meta, row.key_columns),
                "source": _source(meta, row.database, row.table),
            }
            timestamp = _timestamp(fields, _event_ms(row.commit_ts))
            return _message(meta, schema, _payload(op, fields, sequence_id, timestamp, before, after))

        sequence_id = self._sequence_id(meta)
        if row.op is Op.INSERT:
            return [message("INSERT", meta, None, after)]
        if row.op is Op.DELETE:
            return [message("DELETE", meta, before, None)]
        if after is None:
            return [message(self._before_op, meta, before, None)]
        if before is None or self._one_record_per_update:
            return [message("UPDATE_AFTER", meta, before, after)]
        before_fields = meta["updateBefore"] if _kept(meta, "updateBefore", dict) else meta
        return [message(self._before_op, before_fields, before, None), message("UPDATE_AFTER", meta, None, after)]

    def _column_writers(self, row: RowChange) -> dict[str, tuple[str, Callable[[Any], Any]]]:
        """Each column's DataWorks type, the one the decoded message named where it still fits, and its writer."""
        named = {}
        if _kept(row.meta, "dataColumn", list):
            named = {c.get("name"): c.get("type") for c in row.meta["dataColumn"] if isinstance(c, dict)}
        columns = {}
        for name, mtype in row.types.items():
            kind = named.get(name)
            if not isinstance(kind, str) or MYSQL_TYPE_OF.get(kind) != mtype:
                kind = dataworks_type(mtype)
            columns[name] = (kind, self._writer(mtype, kind))
        return columns

    def _writer(self, mtype: MySQLType, kind: str) -> Callable[[Any], Any]:
        writer = self._writers.get((mtype, kind))
        if writer is None:
            if kind == STRING and mtype.family not in _TEXT_FAMILIES:
                tz = self._tz

                def writer(value: Any) -> str:
                    return value_to_text(mtype, value, tz)
            else:
                writer = _WRITERS[kind]
            self._writers[mtype, kind] = writer
        return writer

    def _image(
        self,
        image: Mapping[str, Any] | None,
        columns: Mapping[str, tuple[str, Callable[[Any], Any]]],
        texts: Any,
        meta: Mapping[str, Any],
        where: str,
    ) -> dict[str, Any] | None:
        if image is None:
            return None
        data = {}
        for name, value in image.items():
            column = columns.get(name)
            if column is None:
                raise EncodeError(FORMAT, f"{where}: column {name!r} has a value but no type in types")
            try:
                data[name] = None if value is None else column[1](value)
            except (ValueError, TypeError, AttributeError) as exc:
                raise EncodeError(FORMAT, f"{where}.dataColumn.{name} ({column[0]}): {exc}") from None
        if isinstance(texts, dict):
            for name, text in texts.items():
                if columns.get(name, ("",))[0] == DOUBLE and _same_double(text, image.get(name)):
                    data[name] = text
        return {"dataColumn": data, **_unknown_fields(meta, where)}

    def _ddl_document(self, ddl: Ddl) -> dict[str, Any]:
        meta = ddl.meta
        op = meta.get("op")
        if not (isinstance(op, str) and op in _DDL_KIND_OF_OP and ddl_kind(op, ddl.sql) is ddl.kind):
            op = _OP_OF_DDL_KIND.get(ddl.kind, "QUERY")
        text = {"text": ddl.sql, "ddlMeta": meta.get("ddlMeta"), **_unknown_fields(meta, "payload.ddl")}
        timestamp = _timestamp(meta, _event_ms(ddl.commit_ts))
        payload = _payload(op, meta, self._sequence_id(meta), timestamp, ddl=text)
        return _message(meta, _other_schema(meta, ddl.database, ddl.table), payload)


def _heartbeat_document(ts_ms: int, meta: Mapping[str, Any]) -> dict[str, Any]:
    timestamp = meta.get("timestamp")
    if not (isinstance(timestamp, dict) and timestamp.get("eventTime") == ts_ms):
        timestamp = {"eventTime": ts_ms, "checkpointTime": ts_ms}
    sequence_id = meta["sequenceId"] if _kept(meta, "sequenceId", str) else None
    return _message(meta, _other_schema(meta, None, None), _payload("MHEARTBEAT", meta, sequence_id, timestamp))


def _dumps(document: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(document)
    except orjson.JSONEncodeError as exc:
        if "64-bit" not in str(exc):
            raise EncodeError(FORMAT, f"cannot write the message as JSON: {exc}") from None
    # A LONG past 64 bits, which the decoder reads too: the stdlib writes any integer.
    try:
        return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    except (ValueError, TypeError) as exc:
        raise EncodeError(FORMAT, f"cannot write the message as JSON: {exc}") from None
