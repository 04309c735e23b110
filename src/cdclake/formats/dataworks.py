"""Alibaba DataWorks real-time sync to Kafka: its JSON messages (Apache Paimon calls them ``aliyun-json``).

Every message is one event: a row change with its images in ``payload.before`` / ``payload.after``, a DDL,
a transaction boundary or a heartbeat, each carrying the row's column types in ``schema.dataColumn``.
DataWorks types are not MySQL types: each of its six decodes to one MySQL type (:data:`MYSQL_TYPE_OF`),
and the DataWorks names stay in ``meta["dataColumn"]`` so the encoder writes them back. An update comes
as one message holding both images or as an ``UPDATE_BEFOR`` / ``UPDATE_AFTER`` pair sharing a
``sequenceId``; the decoder joins a pair into one update. docs/formats/dataworks.md has the full story.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import orjson

from cdclake.errors import DecodeError, EncodeError
from cdclake.formats.base import TZ_OPTION, Codec, Option, parse_bool
from cdclake.formats.ddl import kind_of_sql
from cdclake.model import (
    Bootstrap,
    Ddl,
    DdlKind,
    Event,
    Heartbeat,
    Op,
    Origin,
    RawMessage,
    RowChange,
    Transaction,
    TransactionMark,
    Watermark,
)
from cdclake.types import Family, MySQLType, ZeroTemporal, value_to_text, zone

FORMAT = "dataworks"

BOOLEAN, DOUBLE, DATE, BYTES, LONG, STRING = "BOOLEAN", "DOUBLE", "DATE", "BYTES", "LONG", "STRING"

MYSQL_TYPE_OF: Mapping[str, MySQLType] = MappingProxyType(
    {
        BOOLEAN: MySQLType("tinyint", length=1),  # MySQL's own boolean; values 0 and 1
        DOUBLE: MySQLType("double"),
        DATE: MySQLType("timestamp", decimals=3),  # an instant to the millisecond, decoded in UTC
        BYTES: MySQLType("longblob"),
        LONG: MySQLType("bigint"),
        STRING: MySQLType("longtext"),
    }
)
"""The MySQL type each DataWorks column type decodes to."""

BEFORE_OPS = ("UPDATE_BEFOR", "UPDATE_BEFORE")  # DataWorks' spelling, and the one Apache Paimon reads
_ROW_OPS = {"INSERT": Op.INSERT, "DELETE": Op.DELETE, "UPDATE_AFTER": Op.UPDATE} | dict.fromkeys(
    BEFORE_OPS, Op.UPDATE
)
_TRANSACTION_MARKS = {"TRANSACTION_BEGIN": TransactionMark.BEGIN, "TRANSACTION_END": TransactionMark.END}
# The DDL ops and what each does; ERASE is in the spec's op list of the message layout, not in its table.
_DDL_KIND_OF_OP = {
    "CREATE": DdlKind.CREATE_TABLE,
    "ALTER": DdlKind.ALTER_TABLE,
    "ERASE": DdlKind.DROP_TABLE,
    "TRUNCATE": DdlKind.TRUNCATE_TABLE,
    "RENAME": DdlKind.RENAME_TABLE,
    "CINDEX": DdlKind.CREATE_INDEX,
    "DINDEX": DdlKind.DROP_INDEX,
    "QUERY": DdlKind.OTHER,
}
_OPS = (*_ROW_OPS, *_TRANSACTION_MARKS, *_DDL_KIND_OF_OP, "MHEARTBEAT")

# The fields the spec names at each level of a message; anything else is kept in meta["unknownFields"].
_KNOWN_FIELDS = {
    "message": frozenset({"schema", "payload", "version"}),
    "schema": frozenset({"dataColumn", "primaryKey", "source"}),
    "payload": frozenset({"before", "after", "sequenceId", "scn", "op", "timestamp", "ddl"}),
    "payload.before": frozenset({"dataColumn"}),
    "payload.after": frozenset({"dataColumn"}),
    "payload.ddl": frozenset({"text", "ddlMeta"}),
}
# The meta of one message's own payload: what the before half of an update pair keeps in meta["updateBefore"].
_PAYLOAD_META = ("op", "sequenceId", "scn", "timestamp", "unknownFields")

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MILLISECOND = dt.timedelta(milliseconds=1)
_DATE_MS = range(-62_135_596_800_000, 253_402_300_800_000)  # the years 1 to 9999 Python can hold
# DOUBLE values arrive as JSON numbers (the spec) or as the text of Java's BigDecimal / Double (Paimon's
# sample from a real DataWorks task: "1.100000"). Python's float() alone would also take "1_0", "inf", "٣".
_DOUBLE_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|NaN|-?Infinity", re.ASCII)


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 60


def _show(value: Any) -> str:
    """A value in an error message: its repr, shortened (a message may hold megabytes)."""
    return _SHOWN.repr(value)


# --- decoding values --------------------------------------------------------------------------------


class _Inexact(Exception):
    """orjson read an integer past 64 bits as a float: the message must be read again, exactly."""


def _read_boolean(raw: Any) -> int:
    if raw is True:
        return 1
    if raw is False:
        return 0
    raise ValueError(f"a BOOLEAN is true or false, got {_show(raw)}")


def _read_double(raw: Any) -> float:
    if isinstance(raw, float):
        return raw
    if isinstance(raw, str) and _DOUBLE_TEXT.fullmatch(raw):
        return float(raw)
    if type(raw) is int:
        try:
            return float(raw)
        except OverflowError:
            pass
    raise ValueError(f"a DOUBLE is a JSON number or its decimal text, got {_show(raw)}")


def _read_date(raw: Any) -> dt.datetime:
    if type(raw) is int and raw in _DATE_MS:
        return _EPOCH + _MILLISECOND * raw
    raise ValueError(f"a DATE is epoch milliseconds, a JSON integer within the years 1-9999, got {_show(raw)}")


def _read_bytes(raw: Any) -> bytes:
    if type(raw) is str:
        try:
            return binascii.a2b_base64(raw, strict_mode=True)
        except ValueError:  # binascii.Error, or a character outside ASCII
            pass
    raise ValueError(f"a BYTES value is standard base64 text, got {_show(raw)}")


def _read_long(raw: Any) -> int:
    if isinstance(raw, int) and raw is not True and raw is not False:
        return raw
    if isinstance(raw, float):
        raise _Inexact
    raise ValueError(f"a LONG is a JSON integer, got {_show(raw)}")


def _read_long_exactly(raw: Any) -> int:
    if isinstance(raw, int) and raw is not True and raw is not False:
        return raw
    raise ValueError(f"a LONG is a JSON integer, got {_show(raw)}")


def _read_string(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    raise ValueError(f"a STRING is a JSON string, got {_show(raw)}")


_Readers = Mapping[str, Callable[[Any], Any]]
_READERS: _Readers = {
    BOOLEAN: _read_boolean,
    DOUBLE: _read_double,
    DATE: _read_date,
    BYTES: _read_bytes,
    LONG: _read_long,
    STRING: _read_string,
}
_EXACT_READERS: _Readers = {**_READERS, LONG: _read_long_exactly}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"expected JSON, got the non-standard number {name}")


# Takes None as well, and raises (a tombstone goes to the careful path, which says what it is).
_loads: Callable[[Any], Any] = orjson.loads


def _loads_exactly(value: bytes) -> Any:
    """The stdlib reads every integer exactly (orjson rounds those past 64 bits to a float)."""
    return json.loads(value, parse_constant=_reject_constant)


# --- decoding messages ------------------------------------------------------------------------------


_NONE = type(None)


class _Unusual(Exception):
    """A message the fast path does not take: the careful path reads it."""


# Statements that check the non-null value in variable ``{v}`` of a column of each DataWorks type and,
# where it is not already its decoded value, store that under the column's name (the literal ``{n}``)
# in ``image``: what the careful reader of the type returns, or a raise where that would (a BYTES text
# outside base64 or ASCII, a DOUBLE integer past the float range); and anything the careful reader
# refuses raises too. A DOUBLE that came as text is also kept in ``texts``.
_INLINE_READS: Mapping[str, str] = {
    STRING: "if type({v}) is not str: raise _Unusual",
    # A float is a LONG past 64 bits that orjson rounded: the careful path reads it again, exactly.
    LONG: "if type({v}) is not int: raise _Unusual",
    DOUBLE: (
        "if type({v}) is not float:\n"
        "    if type({v}) is str:\n"
        "        if texts is None: texts = {{}}\n"
        "        texts[{n}] = {v}\n"
        "    image[{n}] = _read_double({v})"
    ),
    DATE: "if type({v}) is not int or {v} not in _DATE_MS: raise _Unusual\nimage[{n}] = _EPOCH + _MILLISECOND * {v}",
    BYTES: "if type({v}) is not str: raise _Unusual\nimage[{n}] = _a2b_base64({v}, strict_mode=True)",
    BOOLEAN: "if {v} is True: image[{n}] = 1\nelif {v} is False: image[{n}] = 0\nelse: raise _Unusual",
}
_INLINE_SCOPE: Mapping[str, Any] = {
    "_Unusual": _Unusual,
    "_read_double": _read_double,
    "_DATE_MS": _DATE_MS,
    "_EPOCH": _EPOCH,
    "_MILLISECOND": _MILLISECOND,
    "_a2b_base64": binascii.a2b_base64,
}
# Reads an image's values in place, given its dict of the schema's columns in order; returns the DOUBLEs
# that came as text, or None.
_ImageReader = Callable[[dict[str, Any]], dict[str, Any] | None]


def _compile_image_reader(kinds: Mapping[str, str]) -> _ImageReader:
    """The reader of images whose columns are ``kinds``' names, in order: straight-line code that checks
    each value's JSON type and converts the few that need it, with no loop or lookup per column. Column
    names, which come from messages, appear in the code only as ``repr`` literals."""
    body = ["def read(image):", f"    {''.join(f'v{i}, ' for i in range(len(kinds))) or '()'} = image.values()"]
    body.append("    texts = None")
    for i, (name, kind) in enumerate(kinds.items()):
        body.append(f"    if v{i} is not None:")
        body += [f"        {line}" for line in _INLINE_READS[kind].format(v=f"v{i}", n=repr(name)).splitlines()]
    body.append("    return texts")
    namespace = dict(_INLINE_SCOPE)
    exec(compile("\n".join(body), "<dataworks image reader>", "exec"), namespace)
    reader: _ImageReader = namespace["read"]
    return reader


# The kinds whose JSON value is already the decoded value, and its Python type.
_PASSED_AS_IS: Mapping[str, type] = {STRING: str, LONG: int, DOUBLE: float}
# For one pattern of an image's JSON value types: the values to read, and the DOUBLEs that came as text.
_Steps = tuple[tuple[tuple[str, Callable[[Any], Any]], ...], tuple[str, ...]]


class _Table:
    """One table's ``schema.dataColumn`` and ``schema.primaryKey``, read once: each column's DataWorks
    type and MySQL type, the compiled reader of images of its columns in order (compiled when the fast
    path first reads one), and for the careful path which values of an image need converting,
    remembered per pattern of JSON value types."""

    __slots__ = ("fast_reader", "key_columns", "kinds", "order", "primary_key", "raw", "steps", "types")
    _MAX_PATTERNS = 64  # value patterns remembered per table; NULLs in many columns make many

    def __init__(self, raw: Any, primary_key: Any) -> None:
        if type(raw) is not list:
            raise ValueError(f"schema.dataColumn: expected an array of {{name, type}}, got {_show(raw)}")
        kinds: dict[str, str] = {}
        for index, column in enumerate(raw):
            name = column.get("name") if type(column) is dict else None
            kind = column.get("type") if type(column) is dict else None
            if type(name) is not str or type(kind) is not str or kind not in MYSQL_TYPE_OF:
                raise ValueError(
                    f"schema.dataColumn[{index}]: expected {{name, type}} with type one of "
                    f"{', '.join(MYSQL_TYPE_OF)}, got {_show(column)}"
                )
            if name in kinds:
                raise ValueError(f"schema.dataColumn[{index}]: column {name!r} listed twice")
            kinds[name] = kind
        if not (primary_key is None or (type(primary_key) is list and all(type(n) is str for n in primary_key))):
            raise ValueError(f"schema.primaryKey: expected null or an array of column names, got {_show(primary_key)}")
        self.raw: list[Any] = raw
        self.primary_key = primary_key
        self.key_columns: tuple[str, ...] = tuple(primary_key or ())
        self.kinds = kinds
        self.order = tuple(kinds)
        self.types: Mapping[str, MySQLType] = MappingProxyType({n: MYSQL_TYPE_OF[k] for n, k in kinds.items()})
        self.steps: dict[tuple[type, ...], _Steps] = {}
        self.fast_reader: _ImageReader | None = None

    def fast_image(self, container: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """:meth:`read_image` for the usual image: ``{"dataColumn": {...}}`` with the schema's columns in
        its order. Raises :class:`_Unusual` for anything else, and may raise anything on a bad value: the
        careful path then reads the message again."""
        if type(container) is not dict or len(container) != 1:
            raise _Unusual
        data = container.get("dataColumn")
        if type(data) is not dict:
            raise _Unusual
        names = tuple(data)
        if names != self.order:
            raise _Unusual
        # The same names, as orjson's key cache gives them: the next comparison is by identity.
        self.order = names
        reader = self.fast_reader
        if reader is None:
            reader = self.fast_reader = _compile_image_reader(self.kinds)
        return data, reader(data)

    def read_image(self, container: Any, readers: _Readers, where: str) -> tuple[dict[str, Any], Any]:
        """An image's values (in the message's own dict), and the DOUBLEs that came as text (or None)."""
        data = container.get("dataColumn") if type(container) is dict else None
        if type(data) is not dict:
            raise ValueError(f"{where}: expected {{\"dataColumn\": {{column: value}}}}, got {_show(container)}")
        names = tuple(data)
        value_types = tuple(map(type, data.values()))
        if names == self.order and readers is _READERS:
            steps = self.steps.get(value_types)
            if steps is None:
                steps = self._steps(names, value_types, readers, where)
                if len(self.steps) < self._MAX_PATTERNS:
                    self.steps[value_types] = steps
        else:
            steps = self._steps(names, value_types, readers, where)
        reads, text_names = steps
        texts = dict(zip(text_names, map(data.__getitem__, text_names), strict=True)) if text_names else None
        name = ""
        try:
            for name, read in reads:
                data[name] = read(data[name])
        except ValueError as exc:
            raise ValueError(f"{where}.dataColumn.{name}: {exc}") from None
        return data, texts

    def _steps(self, names: tuple[str, ...], value_types: tuple[type, ...], readers: _Readers, where: str) -> _Steps:
        """The columns whose values need reading, for an image with these names and JSON value types."""
        reads, text_names = [], []
        for name, value_type in zip(names, value_types, strict=True):
            kind = self.kinds.get(name)
            if kind is None:
                raise ValueError(f"{where}.dataColumn.{name}: the column is not in schema.dataColumn")
            if value_type is not _NONE and value_type is not _PASSED_AS_IS.get(kind):
                reads.append((name, readers[kind]))
                if kind == DOUBLE and value_type is str:
                    text_names.append(name)
        return tuple(reads), tuple(text_names)


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


_DATABASE_LEVEL = ((DdlKind.CREATE_TABLE, DdlKind.CREATE_DATABASE), (DdlKind.DROP_TABLE, DdlKind.DROP_DATABASE))


def ddl_kind(op: str, sql: str) -> DdlKind:
    """A DDL message's kind: its op says it (``ddl.text`` may be a fragment such as ``ADD COLUMN ...``),
    except that QUERY is any statement and only the SQL tells CREATE/DROP DATABASE from TABLE."""
    by_sql = kind_of_sql(sql)
    if op == "QUERY":
        return by_sql
    by_op = _DDL_KIND_OF_OP[op]
    if (by_op, by_sql) in _DATABASE_LEVEL:
        return by_sql
    return by_op


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
        self._tables: dict[tuple[str, str], _Table] = {}

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
        self._tables[database, table] = table_schema
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
    # The names of _PAYLOAD_META, written out (op is always there).
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


# --- encoding values --------------------------------------------------------------------------------


def dataworks_type(mtype: MySQLType) -> str:
    """The DataWorks type a MySQL-typed column is written as: one that carries every value of the MySQL
    type exactly (the digits of a decimal, a zero date, a time past 24 hours), so none is lost."""
    family = mtype.family
    if family in (Family.INTEGER, Family.YEAR) or (family is Family.BIT and mtype.length != 1):
        return LONG
    if family is Family.BIT:
        return BOOLEAN
    if family in (Family.ENUM, Family.SET):
        return STRING if mtype.elements is not None else LONG  # member names, else the index or bitmask
    if family in (Family.FLOAT, Family.DOUBLE):
        return DOUBLE
    if family in (Family.BINARY, Family.GEOMETRY):
        return BYTES
    if family is Family.TIMESTAMP and mtype.decimals is not None and mtype.decimals <= 3:
        return DATE
    return STRING


def _write_long(value: Any) -> int:
    if isinstance(value, int):
        return int(value)
    raise ValueError(f"a LONG needs an integer, got {_show(value)}")


def _write_boolean(value: Any) -> bool:
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"a BOOLEAN carries 0 or 1, got {_show(value)}")


def _write_double(value: Any) -> float | str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number):
            return number
        return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"  # Java's spelling
    raise ValueError(f"a DOUBLE needs a float, got {_show(value)}")


def _write_date(value: Any) -> int:
    if isinstance(value, ZeroTemporal):
        raise ValueError(f"a DATE is epoch milliseconds, which the zero timestamp {value.text!r} has none of")
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        raise ValueError(f"a DATE needs a time-zone-aware datetime, got {_show(value)}")
    milliseconds, rest = divmod(value - _EPOCH, _MILLISECOND)
    if rest:
        raise ValueError(f"a DATE carries milliseconds, {value.isoformat()} has finer digits")
    return milliseconds


def _write_bytes(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    raise ValueError(f"BYTES need bytes, got {_show(value)}")


def _write_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"a STRING needs a str, got {_show(value)}")


_WRITERS: Mapping[str, Callable[[Any], Any]] = {
    BOOLEAN: _write_boolean,
    DOUBLE: _write_double,
    DATE: _write_date,
    BYTES: _write_bytes,
    LONG: _write_long,
    STRING: _write_string,
}
# The families whose Python value is already the text a STRING carries; the others go as MySQL text.
_TEXT_FAMILIES = frozenset({Family.STRING, Family.JSON, Family.ENUM, Family.SET, Family.VECTOR})


def _same_double(text: Any, value: Any) -> bool:
    """Whether the DOUBLE text a message brought still says ``value`` (the event may have been changed)."""
    if not isinstance(text, str) or not _DOUBLE_TEXT.fullmatch(text) or not isinstance(value, float):
        return False
    number = float(text)
    return number == value or (math.isnan(number) and math.isnan(value))


# --- encoding messages ------------------------------------------------------------------------------


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


def _sequence_of(change: RowChange | Ddl) -> str | None:
    """``sequenceId`` numbers each change of the source log; a re-delivered copy keeps it."""
    sequence = change.meta.get("sequenceId")
    return None if sequence is None else str(sequence)


def _commit_ms_of(change: RowChange | Ddl) -> int | None:
    """``timestamp.eventTime``, when the change happened in the source database (epoch ms); None where
    it is missing or the -1 written for none."""
    timestamp = change.meta.get("timestamp")
    event_time = timestamp.get("eventTime") if isinstance(timestamp, dict) else None
    return event_time if type(event_time) is int and event_time >= 0 else None


CODEC = Codec(
    name=FORMAT,
    options={
        "one-record-per-update": Option(
            False,
            "write an update as one UPDATE_AFTER message holding both images (the DataWorks task option "
            "'When one record in the source is updated, one Kafka record is generated'); else as two "
            "messages, the before image then the after image, sharing a sequenceId",
            parse_bool,
        ),
        "update-before-op": Option(
            "UPDATE_BEFOR",
            "op of an update's before-image message: DataWorks writes UPDATE_BEFOR, Apache Paimon's "
            "aliyun-json reads UPDATE_BEFORE (the decoder takes both)",
            choices=BEFORE_OPS,
        ),
        "tz": TZ_OPTION,
    },
    make_decoder=DataWorksDecoder,
    make_encoder=DataWorksEncoder,
    # DataWorks sends no watermark: changes apply in partition order, heartbeats only report progress.
    has_watermarks=lambda options: False,
    sequence_of=_sequence_of,
    unique_sequences=True,
    commit_ms_of=_commit_ms_of,
)
