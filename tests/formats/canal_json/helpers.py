"""What the Canal-JSON codec's tests share: the codec, the vectors' folders, decoding and encoding
shortcuts, the Canal cases' expected values, and a compact message to vary."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from cdclake.formats import get_codec
from cdclake.model import Event, Op, Origin, RawMessage, RowChange
from cdclake.values import format_float
from tests.conftest import VECTORS

CODEC = get_codec("canal-json")
CANAL = VECTORS / "canal"
CASES = VECTORS / "ticdc-cases"
ORIGIN = Origin(topic="cdc", partition=3, offset=42)


def decode(value: bytes | str, **options: Any) -> list[Event]:
    data = value.encode() if isinstance(value, str) else value
    return CODEC.decoder(**options).decode(RawMessage(None, data, ORIGIN))


def decode_one(value: bytes | str, **options: Any) -> Any:
    events = decode(value, **options)
    assert len(events) == 1, events
    return events[0]


def encode(events: Iterable[Event], **options: Any) -> list[bytes]:
    messages = CODEC.encoder(**options).encode(events)
    assert all(message.key is None for message in messages)  # TiCDC sends canal-json without a key
    return [message.value or b"" for message in messages]


def message_lines(path: Path) -> list[bytes]:
    """The messages of a vector file, one per line. Paimon and Flink CDC files open with an Apache
    licence comment and their tests send only the lines that are JSON objects; so does this."""
    return [line.strip() for line in path.read_bytes().splitlines() if line.strip().startswith(b"{")]


def decode_file(path: Path, **options: Any) -> list[Event]:
    decoder = CODEC.decoder(**options)
    events: list[Event] = []
    for number, line in enumerate(message_lines(path), start=1):
        events += decoder.decode(RawMessage(None, line, Origin(file=path.name, line=number)))
    return events


def rows_of(events: Iterable[Event]) -> list[RowChange]:
    return [event for event in events if isinstance(event, RowChange)]


def changelog(events: Iterable[Event]) -> list[tuple[str, Mapping[str, Any]]]:
    """Flink's view of the events: +I / -U +U / -D rows, an UPDATE as its before and after rows."""
    kinds: list[tuple[str, Mapping[str, Any]]] = []
    for change in rows_of(events):
        if change.op is Op.INSERT:
            kinds.append(("+I", change.after or {}))
        elif change.op is Op.UPDATE:
            kinds += [("-U", change.before or {}), ("+U", change.after or {})]
        else:
            kinds.append(("-D", change.before or {}))
    return kinds


def java_float(value: float) -> str:
    """Java's Float.toString for the float32 values in the vectors (no exponents there)."""
    text = format_float(value, single=True)
    return text if "." in text else text + ".0"


def normalised_types(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with mysqlType and sqlType put in data's column order. TiCDC writes mysqlType from a Go
    map (random order, tiflow canal_json_row_event_encoder.go) and the encoder writes both in column
    order, so literals are compared after putting both in one order; every other byte must match."""
    rows = message.get("data") or [{}]
    for field_name in ("sqlType", "mysqlType"):
        if isinstance(message.get(field_name), dict):
            types = message[field_name]
            order = [name for name in rows[0] if name in types] + [name for name in types if name not in rows[0]]
            message[field_name] = {name: types[name] for name in order}
    return message


def assert_reencodes(literal: bytes, **options: Any) -> None:
    """Decoding ``literal`` and encoding its events again gives ``literal`` back: byte for byte where
    its mysqlType and sqlType are in column order (the spec's examples, TiCDC's Go test literals), else
    field for field in the same order once they are (see normalised_types)."""
    events = decode(literal, **options)
    (again,) = encode(events, **options)
    normalised = orjson.dumps(normalised_types(orjson.loads(literal)))
    if orjson.dumps(orjson.loads(literal)) == normalised:  # already in column order
        assert again == literal
    assert orjson.dumps(normalised_types(orjson.loads(again))) == normalised


def case(name: str) -> dict[str, Any]:
    (path,) = CASES.glob(f"{name}_*.json")
    result: dict[str, Any] = json.loads(path.read_text())
    return result


def assert_case_value(actual: Any, expected: Any, where: str) -> None:
    """Compares a decoded value with the ticdc-cases notation (see ticdc-cases/README.md)."""
    if isinstance(expected, dict) and "decimal" in expected:
        assert isinstance(actual, Decimal) and str(actual) == expected["decimal"], where  # every digit
    elif isinstance(expected, dict) and "bytes_hex" in expected:
        assert actual == bytes.fromhex(expected["bytes_hex"]), where
    elif isinstance(expected, dict) and "index" in expected:
        assert actual == expected["index"], where
    elif isinstance(expected, dict) and "bitmask" in expected:
        assert actual == expected["bitmask"], where
    elif isinstance(expected, dict) and "naive_local" in expected:
        # The message has no zone; decoded with tz=UTC the wall clock is read as UTC.
        assert actual == dt.datetime.fromisoformat(expected["naive_local"]).replace(tzinfo=dt.UTC), where
    elif isinstance(actual, dt.date | dt.timedelta):
        assert str(actual) == expected, where
    else:
        assert actual == expected and type(actual) is type(expected), where


def assert_case_row(actual: Mapping[str, Any] | None, expected: Mapping[str, Any], where: str) -> None:
    assert actual is not None and list(actual) == list(expected), where
    for name, value in expected.items():
        assert_case_value(actual[name], value, f"{where}.{name}")


def message(op: str = "INSERT", data: Any = None, **fields: Any) -> bytes:
    """A compact Canal-JSON message over test.t(id int, c varchar) unless fields say otherwise."""
    body: dict[str, Any] = {
        "id": 0,
        "database": "test",
        "table": "t",
        "pkNames": ["id"],
        "isDdl": False,
        "type": op,
        "mysqlType": {"id": "int", "c": "varchar"},
        "data": [{"id": "1", "c": "x"}] if data is None else data,
        "old": None,
    }
    return orjson.dumps({**body, **fields})
