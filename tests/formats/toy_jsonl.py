"""A toy format, written as a real one would be: JSON lines with watermarks, DDL to every partition.

It exists to show that a format is one package (this module) and one line in the registry
(``cdclake.formats._CODECS``), and so it imports only what a format may: the codec base, the model, the
types and the errors. One message is one JSON object with a ``t`` (``row``, ``ddl``, ``watermark``):

    {"t": "row", "op": "u", "db": "shop", "tbl": "customers", "ts": 4490..., "key": ["id"],
     "types": {"id": "bigint unsigned", ...}, "before": {"id": "7", ...}, "after": {...}}

Values are MySQL's text (:func:`cdclake.values.value_to_text`: an ENUM its index, a SET its bits, the
type text naming their members), bytes as hex, SQL NULL as JSON null; TIMESTAMPs in UTC.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from typing import Any

from cdclake.errors import DecodeError, EncodeError, TypeParseError
from cdclake.formats.base import Codec
from cdclake.model import Ddl, DdlKind, Event, Op, RawMessage, RowChange, Watermark
from cdclake.types import MySQLType
from cdclake.values import value_from_text, value_to_text

NAME = "toy-jsonl"
_OPS = {"i": Op.INSERT, "u": Op.UPDATE, "d": Op.DELETE}
_OP_LETTER = {op: letter for letter, op in _OPS.items()}
_UTC = dt.UTC


def _value_to_json(mysql_type: MySQLType, value: Any) -> str | None:
    if value is None:
        return None
    return value.hex() if isinstance(value, bytes) else value_to_text(mysql_type, value, _UTC)


def _value_from_json(mysql_type: MySQLType, text: str | None) -> Any:
    if text is None:
        return None
    return bytes.fromhex(text) if mysql_type.is_binary else value_from_text(mysql_type, text, _UTC)


def _image_to_json(types: Mapping[str, MySQLType], image: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if image is None else {name: _value_to_json(types[name], value) for name, value in image.items()}


def _image_from_json(types: Mapping[str, MySQLType], image: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if image is None else {name: _value_from_json(types[name], text) for name, text in image.items()}


class ToyEncoder:
    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = options

    def encode(self, events: Iterable[Event]) -> list[RawMessage]:
        return [RawMessage(None, json.dumps(self._document(event)).encode()) for event in events]

    def _document(self, event: Event) -> dict[str, Any]:
        if isinstance(event, RowChange):
            return {"t": "row", "op": _OP_LETTER[event.op], "db": event.database, "tbl": event.table,
                    "ts": event.commit_ts, "key": list(event.key_columns),
                    "types": {name: str(mysql_type) for name, mysql_type in event.types.items()},
                    "before": _image_to_json(event.types, event.before),
                    "after": _image_to_json(event.types, event.after)}
        if isinstance(event, Ddl):
            return {"t": "ddl", "kind": event.kind.value, "db": event.database, "tbl": event.table, "sql": event.sql,
                    "ts": event.commit_ts}
        if isinstance(event, Watermark):
            return {"t": "watermark", "ts": event.ts}
        raise EncodeError(NAME, f"a {type(event).__name__} has no {NAME} message")


class ToyDecoder:
    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = options

    def decode(self, message: RawMessage) -> list[Event]:
        try:
            document = json.loads(message.value or b"")
            return [self._event(document, message)]
        except (ValueError, TypeError, KeyError, AttributeError, TypeParseError) as exc:
            raise DecodeError(NAME, f"not a {NAME} message: {exc!r}", message.origin) from None

    def flush(self) -> list[Event]:
        return []

    def _event(self, document: dict[str, Any], message: RawMessage) -> Event:
        kind, ts = document["t"], document["ts"]
        if kind == "watermark":
            return Watermark(int(ts), message.origin)
        if kind == "ddl":
            return Ddl(DdlKind(document["kind"]), document["db"], document["tbl"], document["sql"], ts,
                       origin=message.origin)
        if kind != "row":
            raise ValueError(f"unknown message kind {kind!r}")
        types = {name: MySQLType.parse(text) for name, text in document["types"].items()}
        return RowChange(_OPS[document["op"]], document["db"], document["tbl"],
                         _image_from_json(types, document["before"]), _image_from_json(types, document["after"]),
                         types, tuple(document["key"]), ts, origin=message.origin)


CODEC = Codec(
    name=NAME,
    options={},
    make_decoder=ToyDecoder,
    make_encoder=ToyEncoder,
    ddl_to_every_partition=True,
)
