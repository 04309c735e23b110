"""The two encodings of the Simple protocol: bytes ↔ one message as a dict of the JSON field names.

Both decoders and encoders work on the JSON shape (tiflow's ``message`` struct: ``version``, ``type``,
``database``, ``table``, ``tableID``, ``sql``, ``commitTs``, ``buildTs``, ``schemaVersion``,
``claimCheckLocation``, ``handleKeyOnly``, ``checksum``, ``data``, ``old``, ``tableSchema``,
``preTableSchema``); a wire also says how its table schemas and column values look.

The Avro datum is a ``Message{type, payload}`` record, the last branch of the schema's top-level union
(first byte ``0x16``), with no Confluent or container header. Its payloads already use the JSON field
names, except that WATERMARK and BOOTSTRAP payloads carry no ``type``, BOOTSTRAP none of ``commitTs``,
and Avro ``long`` fields hold Go ``uint64`` values as their int64 bits.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from importlib import resources
from typing import Any, Protocol

import fastavro
import orjson

from cdclake.formats.ddl import TICDC_DDL_TYPES
from cdclake.formats.simple.fast_path import json_fast_reader, json_inline
from cdclake.formats.simple.fields import Invalid, describe
from cdclake.formats.simple.tableschema import avro_table_schema, json_table_schema, read_table_schema
from cdclake.formats.simple.values import UINT64_MASK, Reader, Writer, Zones, avro_reader, json_reader, signed64
from cdclake.formats.simple.writers import avro_writer, json_writer
from cdclake.model import TableSchema
from cdclake.types import MySQLType


class Wire(Protocol):
    name: str

    def load(self, data: bytes) -> dict[str, Any]:
        """The message in the JSON shape; raises :class:`Invalid`."""
        ...

    def dump(self, message: dict[str, Any]) -> bytes:
        """The bytes of a message in the JSON shape whose schemas and values this wire wrote."""
        ...

    def read_table_schema(self, raw: Any, where: str) -> TableSchema: ...

    def table_schema(self, schema: TableSchema) -> dict[str, Any]: ...

    def reader(self, mtype: MySQLType, zones: Zones) -> Reader: ...

    def fast_reader(self, mtype: MySQLType, zones: Zones) -> Reader:
        """A reader that takes exactly what :meth:`reader` takes and returns the same values, faster;
        its failures may say less (the decoder explains them with :meth:`reader`)."""
        ...

    def inline(self, mtype: MySQLType) -> str | None:
        """Statements that do what :meth:`fast_reader` does to variable ``{v}``, or None."""
        ...

    def writer(self, mtype: MySQLType, tz: dt.tzinfo, location: str) -> Writer: ...


# Go's encoding/json escapes these inside strings (HTML safety); orjson writes them as they are. None of
# them can occur outside a string in JSON text, so replacing the bytes is exact.
_GO_ESCAPES = (
    (b"&", b"\\u0026"),
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


class JsonWire:
    name = "simple"

    def load(self, data: bytes) -> dict[str, Any]:
        try:
            message = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise Invalid(f"not JSON: {exc}") from exc
        if type(message) is not dict:
            raise Invalid(f"expected a JSON object, got {describe(message)}")
        return message

    def dump(self, message: dict[str, Any]) -> bytes:
        data = orjson.dumps(message)
        for raw, escaped in _GO_ESCAPES:
            if raw in data:
                data = data.replace(raw, escaped)
        return data

    def read_table_schema(self, raw: Any, where: str) -> TableSchema:
        return read_table_schema(raw, where, database_key="schema", absent_decimal_is_zero=True)

    def table_schema(self, schema: TableSchema) -> dict[str, Any]:
        return json_table_schema(schema)

    def reader(self, mtype: MySQLType, zones: Zones) -> Reader:
        return json_reader(mtype, zones)

    def fast_reader(self, mtype: MySQLType, zones: Zones) -> Reader:
        return json_fast_reader(mtype, zones)

    def inline(self, mtype: MySQLType) -> str | None:
        return json_inline(mtype)

    def writer(self, mtype: MySQLType, tz: dt.tzinfo, location: str) -> Writer:
        return json_writer(mtype, tz, location)


_NAMESPACE = "com.pingcap.simple.avro."
_MESSAGE = _NAMESPACE + "Message"
# Message.type → the payload branch it must come with.
_PAYLOADS = {
    "WATERMARK": _NAMESPACE + "Watermark",
    "BOOTSTRAP": _NAMESPACE + "Bootstrap",
    "DDL": _NAMESPACE + "DDL",
    "DML": _NAMESPACE + "DML",
}


def _load_avro_schema() -> Any:
    text = resources.files("cdclake.formats").joinpath("simple_avro_schema.json").read_text("utf-8")
    return fastavro.parse_schema(json.loads(text))


class AvroWire:
    name = "simple-avro"

    def __init__(self) -> None:
        self._schema = _load_avro_schema()

    def load(self, data: bytes) -> dict[str, Any]:
        buffer = io.BytesIO(data)
        try:
            datum: Any = fastavro.schemaless_reader(
                buffer, self._schema, None, return_record_name=True, return_record_name_override=True
            )
        except (EOFError, IndexError, ValueError) as exc:
            raise Invalid(f"not a Simple protocol Avro datum: {exc!r}") from exc
        if datum[0] != _MESSAGE:
            raise Invalid(f"expected a {_MESSAGE} datum (first byte 0x16), got a {datum[0]}")
        if buffer.tell() != len(data):
            raise Invalid(f"{len(data) - buffer.tell()} bytes left after the Avro datum at byte {buffer.tell()}")
        kind = datum[1]["type"]
        branch, payload = datum[1]["payload"]
        if branch != _PAYLOADS[kind]:
            raise Invalid(f"a {kind} message carries a {_PAYLOADS[kind]} payload, got a {branch}")
        payload["commitTs"] = payload.get("commitTs", 0) & UINT64_MASK
        if kind in ("WATERMARK", "BOOTSTRAP"):
            payload["type"] = kind
        elif kind == "DML":
            payload["schemaVersion"] &= UINT64_MASK
        message: dict[str, Any] = payload
        return message

    def dump(self, message: dict[str, Any]) -> bytes:
        kind = message["type"]
        if kind == "WATERMARK":
            payload = {
                "version": message["version"],
                "commitTs": signed64(message["commitTs"]),
                "buildTs": message["buildTs"],
            }
        elif kind == "BOOTSTRAP":
            payload = {k: message[k] for k in ("version", "buildTs", "tableSchema")}
        elif kind in TICDC_DDL_TYPES:
            kind, payload = "DDL", self._ddl(message)
        else:
            kind, payload = "DML", self._dml(message)
        buffer = io.BytesIO()
        datum = (_MESSAGE, {"type": kind, "payload": (_PAYLOADS[kind], payload)})
        fastavro.schemaless_writer(buffer, self._schema, datum)
        return buffer.getvalue()

    @staticmethod
    def _ddl(message: dict[str, Any]) -> dict[str, Any]:
        return {
            "version": message["version"],
            "type": message["type"],
            "sql": message.get("sql", ""),
            "commitTs": signed64(message["commitTs"]),
            "buildTs": message["buildTs"],
            "tableSchema": message.get("tableSchema"),
            "preTableSchema": message.get("preTableSchema"),
        }

    @staticmethod
    def _dml(message: dict[str, Any]) -> dict[str, Any]:
        payload = {key: message.get(key) for key in _DML_FIELDS}
        payload["tableID"] = payload["tableID"] or 0
        payload["commitTs"] = signed64(message["commitTs"])
        payload["schemaVersion"] = signed64(message["schemaVersion"])
        return payload

    def read_table_schema(self, raw: Any, where: str) -> TableSchema:
        if type(raw) is dict and type(raw.get("version")) is int:
            raw["version"] &= UINT64_MASK  # Go's uint64 UpdateTS written as its int64 bits
        return read_table_schema(raw, where, database_key="database", absent_decimal_is_zero=False)

    def table_schema(self, schema: TableSchema) -> dict[str, Any]:
        return avro_table_schema(schema)

    def reader(self, mtype: MySQLType, zones: Zones) -> Reader:
        return avro_reader(mtype, zones)

    def fast_reader(self, mtype: MySQLType, zones: Zones) -> Reader:
        return avro_reader(mtype, zones)

    def inline(self, mtype: MySQLType) -> str | None:
        return None

    def writer(self, mtype: MySQLType, tz: dt.tzinfo, location: str) -> Writer:
        return avro_writer(mtype, tz, location)


_DML_FIELDS = (
    "version", "database", "table", "tableID", "type", "commitTs", "buildTs", "schemaVersion",
    "claimCheckLocation", "handleKeyOnly", "checksum", "data", "old",
)  # fmt: skip
