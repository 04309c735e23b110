"""What the Simple protocol codecs' tests share: the JSON and Avro codecs, the vectors, decoding and
encoding shortcuts, the documentation's simple.user table, and a table of every value form."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from importlib import resources
from typing import Any

import orjson
import pytest

from cdclake.formats import get_codec
from cdclake.formats.base import Codec
from cdclake.model import Bootstrap, ColumnSchema, Event, IndexSchema, Origin, RawMessage, RowChange, TableSchema
from cdclake.types import MySQLType
from tests.conftest import VECTORS

JSON = get_codec("simple")
AVRO = get_codec("simple-avro")
CODECS = [pytest.param(JSON, id="json"), pytest.param(AVRO, id="avro")]
SIMPLE = VECTORS / "ticdc-simple"
CASES = VECTORS / "ticdc-cases"
DOCS_STREAM = SIMPLE / "docs-cn__ticdc-simple-protocol.jsonl"
# The schema as the package ships it, found as the Avro wire finds it (not by a path into the source tree).
SCHEMA_FILE = resources.files("cdclake.formats").joinpath("simple_avro_schema.json")

# The documentation's tables: simple.user before (version ...426) and after (...791) the ALTER.
USER_V1 = 447984074911121426
USER_V2 = 447987408682614791


def at(line: int) -> Origin:
    return Origin(topic="cdc", partition=0, offset=line)


def raw(value: bytes, offset: int = 0) -> RawMessage:
    return RawMessage(None, value, at(offset))


def docs_stream() -> list[bytes]:
    return DOCS_STREAM.read_bytes().splitlines()


def decode_all(codec: Codec, values: Iterable[bytes], **options: Any) -> list[list[Event]]:
    """Each value's events, one decoder for all (one partition), origins = line numbers."""
    decoder = codec.decoder(**options)
    return [decoder.decode(RawMessage(None, value, at(line))) for line, value in enumerate(values, 1)]


def encode(codec: Codec, events: Iterable[Event], **options: Any) -> list[bytes]:
    out = codec.encoder(**options).encode(events)
    assert all(message.key is None for message in out)  # TiCDC sends Simple messages without a key
    return [message.value or b"" for message in out]


def only(events: list[Event]) -> Any:
    assert len(events) == 1, events
    return events[0]


def case(name: str) -> dict[str, Any]:
    path = next(CASES.glob(f"{name}_*.json"))
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def json_blocks() -> list[str]:
    text = (SIMPLE / "docs-cn__ticdc-simple-protocol__json-blocks.txt").read_text()
    return re.findall(r"```json\n(.*?)```", text, re.DOTALL)


USER_COLUMNS = [
    ("id", MySQLType("int", length=11), False),
    ("name", MySQLType("varchar", length=255), True),
    ("age", MySQLType("int", length=11), True),
    ("score", MySQLType("float", length=12), True),
]
def case_value(name: str) -> bytes:
    return str(case(name)["kafka_value_utf8"]).encode()
def user_schema(version: int, created: bool = False, table: str = "user") -> TableSchema:
    columns = [ColumnSchema(name, mtype, nullable) for name, mtype, nullable in USER_COLUMNS]
    if created:
        columns.append(ColumnSchema("createTime", MySQLType("timestamp", length=19, decimals=0)))
    primary = IndexSchema("primary", ("id",), unique=True, primary=True)
    return TableSchema("simple", table, tuple(columns), (primary,), table_id=148, version=version)


def encoded_row(row: RowChange, schemas: list[TableSchema]) -> bytes:
    """A JSON DML message for ``row``, written by an encoder that has encoded ``schemas``."""
    encoder = JSON.encoder()
    encoder.encode(Bootstrap(schema) for schema in schemas)
    return encoder.encode([row])[0].value or b""

ALL_TYPES = TableSchema(
    "db",
    "all",
    (
        ColumnSchema("id", MySQLType("bigint", unsigned=True, length=20), nullable=False),
        ColumnSchema("ts", MySQLType("timestamp", decimals=3)),
        ColumnSchema("blob", MySQLType("blob")),
        ColumnSchema("text", MySQLType("text")),
        ColumnSchema("bits", MySQLType("bit", length=64)),
        ColumnSchema("color", MySQLType("enum", elements=("red", "green"))),
        ColumnSchema("tags", MySQLType("set", elements=("a", "b", "c"))),
        ColumnSchema("price", MySQLType("decimal", length=65, decimals=30)),
        ColumnSchema("ratio", MySQLType("float")),
    ),
    (IndexSchema("primary", ("id",), unique=True, primary=True),),
    table_id=7,
    version=100,
)


def decode_json_row(data: dict[str, Any], **options: Any) -> RowChange:
    decoder = JSON.decoder(**options)
    decoder.decode(raw(encode(JSON, [Bootstrap(ALL_TYPES)])[0]))
    message = {"version": 1, "database": "db", "table": "all", "tableID": 7, "type": "INSERT", "commitTs": 5,
               "buildTs": 1, "schemaVersion": 100, "data": data}
    row = only(decoder.decode(raw(orjson.dumps(message))))
    assert isinstance(row, RowChange)
    return row
