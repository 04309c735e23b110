"""What the Open Protocol codec's tests share: the codec, the vectors' folders, framing, decoding and
encoding shortcuts, the ticdc-cases, the documentation's event stream, TiCDC's encoder literals, what
the format carries of a type, and the edge values."""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
from decimal import Decimal
from typing import Any

from cdclake.formats import get_codec
from cdclake.formats.open_protocol.text import go_unquote
from cdclake.model import Origin, RawMessage
from cdclake.types import Family, MySQLType
from cdclake.values import ZeroTemporal, to_float32
from tests.conftest import VECTORS

CODEC = get_codec("open")
OPEN = VECTORS / "ticdc-open"
CASES = VECTORS / "ticdc-cases"
ORIGIN = Origin(topic="cdc", partition=3, offset=42)


def frame(data: bytes) -> bytes:
    return struct.pack(">Q", len(data)) + data


def message(keys: list[bytes], values: list[bytes], version: int = 1) -> RawMessage:
    """An Open Protocol message holding the given event keys and values, framed as TiCDC frames them."""
    key = struct.pack(">Q", version) + b"".join(frame(k) for k in keys)
    return RawMessage(key, b"".join(frame(v) for v in values), ORIGIN)


def decode(msg: RawMessage, **options: Any) -> list[Any]:
    return CODEC.decoder(**options).decode(msg)


def decode_one(key: str | bytes, value: str | bytes, **options: Any) -> Any:
    as_bytes = [part.encode() if isinstance(part, str) else part for part in (key, value)]
    (event,) = decode(message([as_bytes[0]], [as_bytes[1]]), **options)
    return event


def encode(events: list[Any], **options: Any) -> list[RawMessage]:
    return CODEC.encoder(**options).encode(events)


def row_key(ts: int = 1, schema: str = "test", table: str = "t") -> str:
    return json.dumps({"ts": ts, "scm": schema, "tbl": table, "t": 1}, separators=(",", ":"))


def bin_pair(prefix: str, key_name: str, value_name: str) -> RawMessage:
    key = (OPEN / f"{prefix}key__{key_name}.bin").read_bytes()
    value = (OPEN / f"{prefix}value__{value_name}.bin").read_bytes()
    return RawMessage(key, value, Origin(file=f"{prefix}{key_name}"))


def case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CASES / name).read_text())
    return data


def case_message(data: dict[str, Any]) -> RawMessage:
    return RawMessage(bytes.fromhex(data["kafka_key_hex"]), bytes.fromhex(data["kafka_value_hex"]), ORIGIN)
LOG_LINE = re.compile(r'(\d+)\. \[partition=(\d+)\] \[key="((?:[^"\\]|\\.)*)"\] \[value=(?:"((?:[^"\\]|\\.)*)")?\]')


def parse_log(lines: list[str]) -> dict[int, tuple[int, bytes, bytes]]:
    """The docs' log lines: Go %q-quoted key and value per event, unquoted as Go would."""
    parsed = {}
    for line in lines:
        match = LOG_LINE.fullmatch(line.strip())
        assert match is not None, line
        parsed[int(match[1])] = (int(match[2]), go_unquote(match[3]), go_unquote(match[4] or ""))
    return parsed


def decode_log(events: dict[int, tuple[int, bytes, bytes]]) -> dict[int, Any]:
    return {line: decode_one(key, value) for line, (_, key, value) in events.items()}


def docs_stream() -> dict[int, Any]:
    records = [
        json.loads(line)
        for line in (OPEN / "docs-cn__ticdc-open-protocol__event-stream.jsonl").read_text().splitlines()
    ]
    return decode_log({r["log"]: (r["partition"], r["key"].encode(), r["value"].encode()) for r in records})
def codec_test_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (OPEN / "ticdc__open__codec_test.jsonl").read_text().splitlines()]


CODEC_TEST_RECORDS = codec_test_records()


def record(test: str) -> dict[str, Any]:
    return next(r for r in CODEC_TEST_RECORDS if r["test"] == test)


def literal_message(record: dict[str, Any]) -> RawMessage:
    """The Kafka message the asserted key/value JSON travels in. TestOnlyOutputUpdatedEvent asserts the
    value only; its key is the other tests' ts-1 row key."""
    key = (record["key"] or row_key()).encode()
    value = record.get("value", "").encode()
    return RawMessage(struct.pack(">Q", 1) + frame(key), frame(value))

SIGNED_FAMILIES = (Family.INTEGER, Family.DECIMAL, Family.FLOAT, Family.DOUBLE)


def carried_type(mysql_type: MySQLType) -> MySQLType:
    """What Open keeps of a column type: the base type (type code and BinaryFlag) and UnsignedFlag.
    Lengths, precision, fsp, zerofill and enum/set members are not in the message."""
    return MySQLType(mysql_type.name, unsigned=mysql_type.unsigned and mysql_type.family in SIGNED_FAMILIES)

EDGE_VALUES: list[tuple[str, Any]] = [
    ("bigint unsigned", 2**64 - 1),
    ("bigint", -(2**63)),
    ("varbinary(300)", bytes(range(256))),
    ("binary(4)", b"\x00\x00\x00\x00"),
    ("blob", bytes(range(256))),
    ("longtext", "null"),
    ("varchar(10)", "null"),
    ("varchar(10)", ""),
    ("char(3)", "\x00\x1f\u2028"),
    ("time(6)", -dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=999999)),
    ("time(3)", -dt.timedelta(microseconds=1000)),
    ("date", ZeroTemporal("0000-00-00")),
    ("datetime", ZeroTemporal("2024-00-15 00:00:00")),
    ("timestamp", ZeroTemporal("0000-00-00 00:00:00")),
    ("bit(64)", 2**64 - 1),
    ("json", '{"a": [1, null, "null"], "b": "\\u0000"}'),
    ("decimal(65,30)", Decimal("-" + "9" * 35 + "." + "9" * 30)),
    ("decimal(10,4)", Decimal("0.0000")),
    ("year", 0),
    ("double", 5e-324),
    ("float", to_float32(3.4028234663852886e38)),
]
