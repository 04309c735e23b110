"""Canal-JSON codec: the spec's and TiCDC's own messages, every third-party vector in
vectors/canal/ and the Canal cases 07-18 of vectors/ticdc-cases/, encoder rules, property round
trips and fuzzing.

Where a vector's source project reads a message differently from the spec (Flink's changelog rows,
RisingWave's upserts, Paimon's type mapping), the test names the difference and follows the spec.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.errors import DecodeError, EncodeError
from cdclake.formats import get_codec
from cdclake.formats.canal_json.wire import JAVA_SQL_TYPES, go_json_string, java_sql_type, mysql_type_text
from cdclake.formats.compression import compressor
from cdclake.formats.ddl import kind_of_ticdc_type
from cdclake.model import (
    Bootstrap,
    ColumnSchema,
    Ddl,
    DdlKind,
    Event,
    Heartbeat,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    Origin,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.types import Family, MySQLType
from cdclake.values import (
    ZeroTemporal,
    enum_index,
    format_float,
    parse_time,
    set_bits,
    to_float32,
    value_from_text,
    value_to_text,
)
from tests.conftest import VECTORS
from tests.fuzzing import mutations
from tests.strategies import TYPES, nullable_values_of, rows, values_of

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


# --- TiCDC's own messages: the spec's examples, Go test literals, cases 07-18 --------------------------


def test_docs_examples_decode_as_the_spec_says(vectors: Path) -> None:
    """docs-cn__ticdc-canal-json.jsonl: the spec's three complete examples (DDL, INSERT, watermark)."""
    ddl, insert, watermark = (decode_one(line) for line in message_lines(CANAL / "docs-cn__ticdc-canal-json.jsonl"))
    assert ddl == Ddl(
        DdlKind.DROP_DATABASE,
        "test",
        "",
        "drop database if exists test",
        commit_ts=429918007904436226,
        origin=ORIGIN,
        meta={"id": 0, "es": 1639633094670, "ts": 1639633095489, "type": "QUERY"},
    )
    assert insert.op is Op.INSERT and (insert.database, insert.table) == ("test", "tp_int")
    assert insert.key_columns == ("id",) and insert.commit_ts == 429918007904436226 and insert.before is None
    assert insert.after == {
        "c_bigint": 9223372036854775807,
        "c_int": 2147483647,
        "c_mediumint": 8388607,
        "c_smallint": 32767,
        "c_tinyint": 127,
        "id": 2,
    }
    assert insert.types["c_bigint"] == MySQLType("bigint") and insert.types["id"] == MySQLType("int")
    assert insert.meta == {"id": 0, "es": 1639633141221, "ts": 1639633142960}
    assert watermark == Watermark(
        429918007904436226, origin=ORIGIN, meta={"id": 0, "es": 1640007049196, "ts": 1640007050284}
    )


def test_docs_json_blocks(vectors: Path) -> None:
    """docs-cn__ticdc-canal-json__json-blocks.txt: the spec page's code blocks verbatim. The three
    complete ones, without their // comments, are the .jsonl lines; the other four elide fields with
    "..." and are not messages (their data/old/mysqlType fragments are checked through case 12 and
    test_content_compatible_mysql_type_of_the_docs)."""
    text = (CANAL / "docs-cn__ticdc-canal-json__json-blocks.txt").read_text()
    blocks = re.findall(r"```(?:json|shell)\n(.*?)```", text, re.DOTALL)
    complete = [block for block in blocks if "..." not in block]
    assert len(blocks) == 8 and len(complete) == 3
    lines = message_lines(CANAL / "docs-cn__ticdc-canal-json.jsonl")
    for block, line in zip(complete, lines, strict=True):
        without_comments = re.sub(r"//[^\n]*", "", block)
        assert json.loads(without_comments) == json.loads(line)
        with pytest.raises(DecodeError, match="not JSON"):  # the comments themselves are no JSON
            decode(block)


def test_docs_examples_reencode_byte_for_byte(vectors: Path) -> None:
    for line in message_lines(CANAL / "docs-cn__ticdc-canal-json.jsonl"):
        assert_reencodes(line, enable_tidb_extension=True)


def test_docs_binary_example() -> None:
    """Spec, Binary 和 Blob 类型 (and case 15): 16 bytes of a VARBINARY and their Canal-JSON text.

    The spec's table says < is written \\u0038 and > \\u003E; \\u0038 is the digit 8, a typo: its own
    example, Go and TiCDC write \\u003c and \\u003e, and so does the encoder."""
    literal = case("15")["json_string_literal"]
    expected = bytes(case("15")["expected"]["bytes_dec"])
    insert = '{"type":"INSERT","mysqlType":{"c_varbinary":"varbinary"},"data":[{"c_varbinary":' + literal + "}]}"
    assert decode_one(insert).after == {"c_varbinary": expected}
    assert go_json_string(expected.decode("latin-1")) == literal
    assert go_json_string("<>&") == '"\\u003c\\u003e\\u0026"'


def test_case_07_terminator_separated_messages(vectors: Path) -> None:
    """Case 07 (and tiflow__canal_json_txn_event_decoder_test): three messages in one value,
    separated by "\\n"; no _tidb, so no commit ts. Compared: op, schema, table, key, images, es."""
    spec = case("07")
    value = "\n".join(spec["kafka_values_utf8"]).encode()
    assert (CANAL / "tiflow__canal_json_txn_event_decoder_test.jsonl").read_bytes().strip() == value
    events = decode(value)
    assert [event.origin for event in events] == [ORIGIN, ORIGIN.at(1), ORIGIN.at(2)]
    insert, update, delete = rows_of(events)
    first = spec["expected"][0]
    assert (insert.op.name, insert.database, insert.table, list(insert.key_columns)) == (
        first["op"],
        first["schema"],
        first["table"],
        first["pk"],
    )
    assert insert.commit_ts is None and insert.meta["es"] == first["commit_physical_ms_from_es"]
    assert_case_row(insert.after, first["after"], "insert.after")
    assert update.op is Op.UPDATE and delete.op is Op.DELETE and delete.after is None
    assert_case_row(update.before, spec["expected"][1]["before"], "update.before")
    assert_case_row(update.after, spec["expected"][1]["after"], "update.after")
    assert_case_row(delete.before, spec["expected"][2]["before"], "delete.before")
    for literal in spec["kafka_values_utf8"]:  # TiCDC's field order, no extension: byte for byte
        assert_reencodes(literal.encode())


def test_case_08_watermark_of_the_go_test() -> None:
    """Case 08: TiCDC's watermark as its Go test prints it (indented); es = 1024 >> 18 = 0."""
    value = case("08")["kafka_value_utf8"]
    watermark = decode_one(value)
    assert watermark == Watermark(1024, origin=ORIGIN, meta={"id": 0, "es": 0, "ts": 1469579899})
    (again,) = encode([watermark], enable_tidb_extension=True)
    assert again == orjson.dumps(json.loads(value))  # the same message without the indentation
    (fresh,) = encode([Watermark(1024)], enable_tidb_extension=True)
    assert orjson.loads(fresh)["es"] == 0 and orjson.loads(fresh)["ts"] == 0  # es = 1024 >> 18


@pytest.mark.parametrize("name", ["09", "10", "11", "13", "14"])
def test_docs_cases_reencode(name: str) -> None:
    """Cases 09-14: the docs' raw text (// comments) is not JSON; without comments it decodes, and
    re-encodes byte for byte in TiCDC's field order."""
    spec = case(name)
    with pytest.raises(DecodeError, match="not JSON"):
        decode(spec["raw_text_from_docs"])
    assert_reencodes(orjson.dumps(spec["kafka_value_json_without_doc_comments"]), enable_tidb_extension=True)


def test_case_09_ddl() -> None:
    spec = case("09")
    ddl = decode_one(orjson.dumps(spec["kafka_value_json_without_doc_comments"]))
    expected = spec["expected"]
    assert isinstance(ddl, Ddl) and ddl.kind is DdlKind.DROP_DATABASE
    assert (ddl.database, ddl.table, ddl.sql, ddl.commit_ts) == (
        expected["schema"],
        expected["table"],
        expected["query"],
        expected["commitTs"],
    )
    assert ddl.meta["type"] == expected["canal_event_type"]


def test_case_10_integer_maxima() -> None:
    spec = case("10")
    insert = decode_one(orjson.dumps(spec["kafka_value_json_without_doc_comments"]))
    assert insert.op is Op.INSERT and insert.commit_ts == spec["expected"]["commitTs"]
    assert_case_row(insert.after, spec["expected"]["after"], "after")
    # The doc example's es is not commitTs >> 18 (the docs edited it; case 10's note says so).
    assert insert.meta["es"] != insert.commit_ts >> 18


def test_case_11_watermark() -> None:
    spec = case("11")
    watermark = decode_one(orjson.dumps(spec["kafka_value_json_without_doc_comments"]))
    assert watermark.ts == spec["expected"]["watermarkTs"]
    assert watermark.meta["es"] == watermark.ts >> 18  # the case's check


def test_case_12_update_old_all_columns_and_changed_only() -> None:
    """Case 12: TiCDC's whole old and Canal's changed-only old decode to the same before image. The
    docs elide the other fields (the types are tp_int's, case 10) and the changed-only fragment ends in
    a trailing comma, a doc artefact that is no JSON."""
    spec = case("12")
    types = case("10")["kafka_value_json_without_doc_comments"]["mysqlType"]

    def message(fragment: str, drop_trailing_comma: bool = False) -> str:
        body = re.sub(r"//[^\n]*", "", fragment)
        if drop_trailing_comma:
            body = re.sub(r",(\s*})", r"\1", body)
        return '{"type":"UPDATE","mysqlType":' + json.dumps(types) + "," + body + "}"

    with pytest.raises(DecodeError, match="not JSON"):
        decode(message(spec["changed_only_fragment_text"]))
    changed_only = message(spec["changed_only_fragment_text"], drop_trailing_comma=True)
    for text in (message(spec["ticdc_default_fragment_text"]), changed_only):
        update = decode_one(text)
        assert update.op is Op.UPDATE
        assert_case_row(update.before, spec["expected_both"]["before"], "before")
        assert_case_row(update.after, spec["expected_both"]["after"], "after")
    (whole,) = encode([update])
    (partial,) = encode([update], only_output_updated_columns=True)
    assert orjson.loads(whole)["old"] == [json.loads(message(spec["ticdc_default_fragment_text"]))["old"][0]]
    assert orjson.loads(partial)["old"] == [{"c_int": "2147483647", "c_tinyint": "127"}]


@pytest.mark.parametrize(
    ("name", "kind", "location"),
    [
        ("13", LargeMessageKind.HANDLE_KEY_ONLY, None),
        ("14", LargeMessageKind.CLAIM_CHECK, "s3:/claim-check-bucket/${uuid}.json"),
    ],
)
def test_cases_13_14_large_messages(name: str, kind: LargeMessageKind, location: str | None) -> None:
    """A message TiCDC shrank for size is a LargeMessageRef holding the handle key, never a row."""
    spec = case(name)
    reference = decode_one(orjson.dumps(spec["kafka_value_json_without_doc_comments"]))
    assert isinstance(reference, LargeMessageRef) and (reference.kind, reference.location) == (kind, location)
    assert reference.row.op is Op.INSERT and reference.row.commit_ts == spec["expected"]["commitTs"]
    assert reference.row.after == {"id": 2} and reference.row.key_columns == ("id",)
    with pytest.raises(EncodeError, match="enable-tidb-extension"):
        encode([reference])


def test_case_16_all_common_types() -> None:
    """Case 16 (RisingWave's copy of a TiCDC message): every common type. RisingWave's copy puts
    "old" before "data", so it is compared re-encoded as JSON, not byte for byte."""
    spec = case("16")
    insert = decode_one(spec["kafka_value_utf8"])
    assert_case_row(insert.after, spec["expected"]["after"], "after")
    assert insert.commit_ts is None
    assert insert.types["enum"] == MySQLType("enum") and insert.types["blob"] == MySQLType("blob")
    (again,) = encode([insert])
    assert normalised_types(orjson.loads(again)) == normalised_types(orjson.loads(spec["kafka_value_utf8"]))


def test_case_17_commit_ts_and_es() -> None:
    spec = case("17")
    insert = decode_one(spec["kafka_value_utf8"])
    expected = spec["expected"]
    assert (insert.op.name, insert.database, insert.table, insert.commit_ts) == (
        expected["op"],
        expected["schema"],
        expected["table"],
        expected["commitTs"],
    )
    assert_case_row(insert.after, expected["after"], "after")
    assert insert.meta["es"] == insert.commit_ts >> 18  # the case's check: es is the TSO's physical ms
    assert_reencodes(spec["kafka_value_utf8"].encode(), enable_tidb_extension=True)
    assert (CANAL / "tibigdata__TiDBCanalJsonDeserializationSchemaTest.jsonl").read_text().strip() == spec[
        "kafka_value_utf8"
    ]


def test_case_18_the_string_null_is_not_sql_null() -> None:
    """Case 18 (ticdc#3958): "null" is a 4-character string; JSON null is SQL NULL."""
    insert = decode_one(case("18")["kafka_value_utf8"])
    assert insert.after == {"idx": 2, "a": "null"}
    assert insert.types["idx"] == MySQLType("bigint", unsigned=True)
    (again,) = encode([insert])
    assert normalised_types(orjson.loads(again)) == normalised_types(orjson.loads(case("18")["kafka_value_utf8"]))
    sql_null = decode_one(case("18")["kafka_value_utf8"].replace('"a":"null"', '"a":null'))
    assert sql_null.after == {"idx": 2, "a": None}


def test_content_compatible_mysql_type_of_the_docs() -> None:
    """Spec, mysqlType 字段: Canal's (content-compatible) parameterised types for the docs' table t,
    and TiCDC's bare ones; enum/set values are the index/bitmask either way (tiflow#8491)."""
    full = {
        "c_binary": "binary(16)",
        "c_bit": "bit(64)",
        "c_char": "char(16)",
        "c_decimal": "decimal(10, 4)",
        "c_enum": "enum('a','b','c')",
        "c_set": "set('a','b','c')",
        "c_varbinary": "varbinary(16)",
        "c_varchar": "varchar(16)",
        "id": "int",
    }
    bare = {name: re.sub(r"\(.*\)", "", text) for name, text in full.items()}
    data = {
        "c_binary": "abc\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000",
        "c_bit": "65",
        "c_char": "abc",
        "c_decimal": "123.4560",
        "c_enum": "1",
        "c_set": "3",
        "c_varbinary": "abc",
        "c_varchar": "abc",
        "id": "1",
    }
    with_members = decode_one(orjson.dumps({"type": "INSERT", "mysqlType": full, "data": [data]}))
    without = decode_one(orjson.dumps({"type": "INSERT", "mysqlType": bare, "data": [data]}))
    assert with_members.after["c_enum"] == "a" and with_members.after["c_set"] == "a,b"
    assert without.after["c_enum"] == 1 and without.after["c_set"] == 3
    assert with_members.types["c_decimal"] == MySQLType("decimal", length=10, decimals=4)
    assert with_members.after["c_decimal"] == without.after["c_decimal"] == Decimal("123.4560")
    assert with_members.after["c_binary"] == b"abc" + bytes(13) and with_members.after["c_bit"] == 65
    (again,) = encode([with_members], content_compatible=True)
    assert orjson.loads(again)["mysqlType"] == {name: text.replace(", ", ",") for name, text in full.items()}
    (again,) = encode([with_members])
    assert orjson.loads(again)["mysqlType"] == bare
    assert orjson.loads(again)["data"] == [data]  # enum and set stay index and bitmask on the wire


# --- third-party producers and consumers --------------------------------------------------------------


def test_flink_cdc_serialization_schema(vectors: Path) -> None:
    """Flink CDC's canal-json writer: no id/es/ts/isDdl/sqlType/mysqlType, full-row old. Asserted
    changelog: +I(1,1) +I(2,2) -D(2,2) -U(1,1) +U(1,x). Untyped string columns are read as longtext."""
    events = decode_file(CANAL / "flink-cdc__CanalJsonSerializationSchemaTest.jsonl")
    assert [(kind, dict(row)) for kind, row in changelog(events)] == [
        ("+I", {"col1": "1", "col2": "1"}),
        ("+I", {"col1": "2", "col2": "2"}),
        ("-D", {"col1": "2", "col2": "2"}),
        ("-U", {"col1": "1", "col2": "1"}),
        ("+U", {"col1": "1", "col2": "x"}),
    ]
    for change in rows_of(events):
        assert (change.database, change.table, change.key_columns) == ("default_schema", "table1", ("col1",))
        assert change.types == {"col1": MySQLType("longtext"), "col2": MySQLType("longtext")}
        assert change.commit_ts is None and change.meta == {}


def test_flink_cdc_pipeline_output(vectors: Path) -> None:
    """Flink CDC's MySQL-to-Kafka pipeline output: 20 messages with typed JSON values and no
    mysqlType. Compared: the sequence of (op, table, id), the changes the sidecar lists, inferred types
    and the end state of both tables. "$databaseName" is the test's placeholder, kept as sent."""
    events = rows_of(decode_file(CANAL / "flink-cdc__e2e__expectedEvents__mysqlToKafka__canal-json.txt"))
    ids = [(change.op.name, change.table, (change.after or change.before or {})["id"]) for change in events]
    assert ids == [
        *[("INSERT", "customers", n) for n in (103, 104, 102, 101)],
        *[("INSERT", "products", n) for n in (107, 108, 103, 105, 109, 101, 106, 102, 104)],
        ("UPDATE", "products", 107),
        ("UPDATE", "products", 106),
        ("INSERT", "products", 111),
        ("INSERT", "products", 110),
        ("UPDATE", "products", 111),
        ("DELETE", "products", 111),
        ("UPDATE", "products", 110),
    ]
    assert {change.database for change in events} == {"$databaseName"}
    weight_107 = events[13]
    assert (weight_107.before or {})["weight"] == 5.3 and (weight_107.after or {})["weight"] == 5.1
    description_106 = events[14]
    assert (description_106.before or {})["description"] == "16oz carpenter's hammer"
    assert (description_106.after or {})["description"] == "18oz carpenter hammer"
    scooter = next(change for change in events if (change.after or {}).get("id") == 101 and change.table == "products")
    assert scooter.types == {
        "id": MySQLType("bigint"),
        "name": MySQLType("longtext"),
        "description": MySQLType("longtext"),
        "weight": MySQLType("double"),
        "enum_c": MySQLType("longtext"),
        "json_c": MySQLType("longtext"),
        "point_c": MySQLType("longtext"),
    }
    rocks = events[4]  # enum_c, json_c, point_c are null: the message does not tell their types
    assert set(rocks.types) == {"id", "name", "description", "weight"}
    assert rocks.after is not None and rocks.after["enum_c"] is None
    assert events[15].types["new_col"] == MySQLType("bigint") and (events[15].after or {})["new_col"] == 1
    products = apply_all(events, "products")
    assert sorted(products) == [101, 102, 103, 104, 105, 106, 107, 108, 109, 110]
    assert (products[110]["description"], products[110]["weight"]) == ("new water resistent white wind breaker", 0.5)
    assert sorted(apply_all(events, "customers")) == [101, 102, 103, 104]


def apply_all(events: Iterable[RowChange], table: str) -> dict[Any, Mapping[str, Any]]:
    """The rows of ``table`` keyed by their single key column after applying ``events`` in order."""
    rows: dict[Any, Mapping[str, Any]] = {}
    for change in events:
        if change.table != table:
            continue
        (key,) = change.key_columns
        if change.before is not None:
            rows.pop(change.before[key], None)
        if change.after is not None:
            rows[change.after[key]] = change.after
    return rows


def test_flink_non_numeric_numbers(vectors: Path) -> None:
    """Flink's allow-non-numeric-numbers test: bare NaN, Infinity, -Infinity (not JSON) in a column
    without mysqlType. Asserted +I(101, ..., NaN), +I(102, ..., Infinity), +I(103, ..., -Infinity)."""
    events = rows_of(decode_file(CANAL / "flink__CanalJsonSerDeSchemaTest_non_numeric_numbers.jsonl"))
    weights = [(change.after or {})["weight"] for change in events]
    assert [(change.after or {})["id"] for change in events] == [101, 102, 103]
    assert weights[0] != weights[0] and weights[1:] == [float("inf"), float("-inf")]
    assert all(change.types["weight"] == MySQLType("double") for change in events)
    assert all((change.database, change.table) == ("", "") for change in events)
    # Re-encoded, they are written as Go's FormatFloat spells them (NaN, +Inf, -Inf) and read back.
    texts = [orjson.loads(value)["data"][0]["weight"] for value in encode(events)]
    assert texts == ["NaN", "+Inf", "-Inf"]
    again = rows_of(decode(b"\n".join(encode(events))))
    assert [(change.after or {})["weight"] for change in again][1:] == weights[1:]


FILTER_TABLE_FILES = [
    "flink__flink-json__canal-data-filter-table.txt",
    "seatunnel__format-json__canal-data-filter-table.txt",
]


@pytest.mark.parametrize("name", FILTER_TABLE_FILES)
def test_flink_and_seatunnel_filter_table(vectors: Path, name: str) -> None:
    """Flink's and SeaTunnel's CanalJsonSerDeSchemaTest (the two files are byte-identical): the
    changelog of mydb.product, the 26 rows SeaTunnel's sidecar lists. Flink and SeaTunnel drop other
    tables and DDL with a regex before parsing; here every message is decoded, and the products
    filtered after. The "project" message is undecodable: its mysqlType says int(11) and its ids are
    "A101" — a message contradicting its own types is bad input (Flink never parses it)."""
    path = CANAL / name
    assert path.read_bytes() == (CANAL / FILTER_TABLE_FILES[0]).read_bytes()
    lines = message_lines(path)
    expected = re.findall(
        r"kind=([+-][IUD]), fields=\[(.*)\]}",
        (CANAL / "seatunnel__format-json__canal-data-filter-table.txt.expected.txt").read_text(),
    )
    assert len(expected) == 26
    decoder = CODEC.decoder()
    events: list[Event] = []
    for number, line in enumerate(lines, start=1):
        message = RawMessage(None, line, Origin(file=name, line=number))
        if b'"table":"project",' in line:
            with pytest.raises(DecodeError, match=r"data\[0\] column 'id': invalid literal for int") as error:
                decoder.decode(message)
            assert error.value.origin == message.origin
            continue
        events += decoder.decode(message)
    products = [
        change
        for change in rows_of(events)
        if re.fullmatch("my.*", change.database) and re.fullmatch("prod.*", change.table)
    ]

    def fields(row: Mapping[str, Any]) -> str:
        cells = [row["id"], row["name"], row["description"], java_float(row["weight"])]
        return ", ".join("null" if cell is None else str(cell) for cell in cells)

    assert [(kind, fields(row)) for kind, row in changelog(products)] == expected
    ddl = [event for event in events if isinstance(event, Ddl)]
    assert [(event.kind, event.table) for event in ddl] == [
        (DdlKind.CREATE_TABLE, "orders"),
        (DdlKind.CREATE_TABLE, "projects"),
    ]
    assert "\n" in ddl[0].sql
    # Flink's testDeserializationWithMetadata, on the first line.
    first = rows_of(decoder.decode(RawMessage(None, lines[0])))
    assert len(first) == 9 and (first[0].database, first[0].table, first[0].key_columns) == ("mydb", "product", ("id",))
    assert len(first[0].types) == 4
    assert (first[0].meta["ts"], first[0].meta["es"]) == (1598944146308, 1598944132000)
    assert first[0].after == {
        "id": 101,
        "name": "scooter",
        "description": "Small 2-wheel scooter",
        "weight": to_float32(3.14),
    }


def test_flink_data_with_init(vectors: Path) -> None:
    """Flink's canal-data-with-init (FLINK-32862; no sidecar): Alibaba Cloud DTS sends its initial
    snapshot as type INIT, read as INSERT with meta type INIT. A column missing from mysqlType
    ("other") gets its type from its values; old {"description": null} says the old value WAS NULL."""
    events = decode_file(CANAL / "flink__flink-json__canal-data-with-init.txt")
    changes = rows_of(events)
    snapshot = [change for change in changes if change.meta.get("type") == "INIT"]
    assert len(snapshot) == 9 and all(change.op is Op.INSERT for change in snapshot)
    assert [change.origin.index for change in snapshot if change.origin] == list(range(9))
    assert snapshot[0].types["other"] == MySQLType("longtext") and (snapshot[0].after or {})["other"] == "val1"
    hammer = next(change for change in changes if change.op is Op.UPDATE)
    assert hammer.before == {
        "id": 106,
        "name": "hammer",
        "description": None,
        "weight": 1.0,
        "other": "val2",
    }
    assert (hammer.after or {})["description"] == "18oz carpenter hammer" and (hammer.after or {})["other"] == "val0"
    assert [event.kind for event in events if isinstance(event, Ddl)] == [DdlKind.CREATE_TABLE]
    products = apply_all(changes, "products2")
    assert {key: (row["description"], row["weight"]) for key, row in products.items()} == {
        101: ("Small 2-wheel scooter", to_float32(5.17)),
        104: ("12oz carpenter's hammer", to_float32(0.75)),
        105: ("14oz carpenter's hammer", to_float32(0.875)),
        106: ("18oz carpenter hammer", 1.0),
        107: ("box of assorted rocks", to_float32(5.1)),
        108: ("water resistent black wind breaker", to_float32(0.1)),
        109: ("24 inch spare tire", to_float32(22.2)),
        110: ("new water resistent white wind breaker", 0.5),
    }


@pytest.mark.parametrize(
    "name",
    ["inlong__CanalJsonDynamicSchemaFormatTest.jsonl", "inlong__CanalJsonDynamicSchemaFormatTest.original-pretty.json"],
)
def test_inlong_partial_old(vectors: Path, name: str) -> None:
    """InLong: id a JSON number, mysqlType in upper case, old {"weight": "5.15"}. Asserted
    -U(111, scooter, Big 2-wheel scooter, 5.15f) +U(..., 5.18f), primary key [id]. The pretty-printed
    original is one message over many lines."""
    update = decode_one((CANAL / name).read_bytes())
    common = {"id": 111, "name": "scooter", "description": "Big 2-wheel scooter"}
    assert update.before == {**common, "weight": to_float32(5.15)}
    assert update.after == {**common, "weight": to_float32(5.18)}
    assert update.key_columns == ("id",) and update.types["id"] == MySQLType("int")
    assert update.types["name"] == MySQLType("varchar", length=255)
    assert update.meta == {"es": 1589373560000, "id": 9, "ts": 1589373560798}


def test_inlong_format_json_data(vectors: Path) -> None:
    """InLong's canal-json-inlong variant: extra opType/batchId/updateBefore fields (kept in meta),
    typed ids. Asserted rows +I(2, xixi), +I(1, oooooo), +I(3, HAHA), batch ids 0/1/2, es 0."""
    changes = rows_of(decode_file(CANAL / "inlong__format-json-v1.18__canal-json-inlong-data.txt"))
    assert [change.after for change in changes] == [
        {"id": 2, "name": "xixi"},
        {"id": 1, "name": "oooooo"},
        {"id": 3, "name": "HAHA"},
    ]
    assert [change.meta["batchId"] for change in changes] == [0, 1, 2]
    assert changes[0].meta == {"opType": "INSERT", "es": 0, "batchId": 0, "updateBefore": None, "ts": 1651208731718}
    assert changes[0].types == {"name": MySQLType("varchar", length=63), "id": MySQLType("bigint", length=20)}
    assert all((change.database, change.table, change.key_columns) == ("TEST", "TEST", ("id",)) for change in changes)


@pytest.mark.parametrize(
    "name",
    ["paimon-history__CanalRecordParserTest.jsonl", "paimon-history__CanalRecordParserTest.original-pretty.json"],
)
def test_paimon_history_pk_names_null(vectors: Path, name: str) -> None:
    """Paimon's deleted CanalRecordParserTest: pkNames null must not fail; gtid "" stays in meta."""
    update = decode_one((CANAL / name).read_bytes())
    assert update.key_columns == () and update.meta["gtid"] == ""
    assert update.before == {**(update.after or {}), "LAST_ACTIVE_TIMESTAMP": 1696939694927}
    assert (update.after or {})["LAST_ACTIVE_TIMESTAMP"] == 1696939709931


def test_risingwave_multi_row_messages(vectors: Path) -> None:
    """RisingWave's canal_json_double_field: 2-row INSERT, a 2-row UPDATE that changes the key v1,
    2-row DELETE. RisingWave upserts an UPDATE's new rows and so would end with (1,2),(3,4); the spec
    sends the before image, so the rows move and the DELETE leaves the table empty."""
    events = rows_of(decode_file(CANAL / "risingwave__e2e__canal_json_double_field.1"))
    assert [(change.op, change.before, change.after) for change in events] == [
        (Op.INSERT, None, {"v1": 1, "v2": 2}),
        (Op.INSERT, None, {"v1": 3, "v2": 4}),
        (Op.UPDATE, {"v1": 1, "v2": 2}, {"v1": 5, "v2": 6}),
        (Op.UPDATE, {"v1": 3, "v2": 4}, {"v1": 7, "v2": 8}),
        (Op.DELETE, {"v1": 5, "v2": 6}, None),
        (Op.DELETE, {"v1": 7, "v2": 8}, None),
    ]
    assert [change.origin.index for change in events if change.origin] == [0, 1, 0, 1, 0, 1]
    keyed = [RowChange(c.op, c.database, c.table, c.before, c.after, c.types, ("v1",)) for c in events]
    assert apply_all(keyed, "demo") == {}


def test_risingwave_parser_tests(vectors: Path) -> None:
    """RisingWave's simd_json_parser tests. Line 1 is case 16's message (checked there). Line 2: an
    UPDATE with pkNames null and partial old; RisingWave emits it as an upsert of the new row and reads
    the BOOLEAN is_adult as false, here it is MySQL's tinyint(1) holding 0. Line 3: two INSERT rows."""
    lines = message_lines(CANAL / "risingwave__simd_json_parser_tests.jsonl")
    assert json.loads(lines[0]) == json.loads(case("16")["kafka_value_utf8"])
    update = decode_one(lines[1])
    after = {
        "id": 1,
        "name": "mike",
        "is_adult": 0,
        "balance": Decimal("1500.62"),
        "reg_time": dt.datetime(2018, 1, 1, 0, 0, 1, tzinfo=dt.UTC),
        "win_rate": 0.65,
    }
    assert update.op is Op.UPDATE and update.after == after and update.key_columns == ()
    assert update.before == {**after, "balance": Decimal("1000.62")}
    assert update.types["is_adult"] == MySQLType("tinyint", length=1)
    assert [change.after for change in rows_of(decode(lines[2]))] == [{"v1": 1, "v2": 2}, {"v1": 3, "v2": 4}]


def test_seatunnel_inline_error_cases(vectors: Path) -> None:
    """SeaTunnel's negative inputs, each an error; and a null or empty value decodes to nothing."""
    reasons = [
        "not JSON",
        'no "type"',
        '"data" of a INSERT message must be an array of rows, got null',
        "unknown type 'XX'",
    ]
    lines = message_lines(CANAL / "seatunnel__CanalJsonSerDeSchemaTest_inline_error_cases.jsonl")
    for line, reason in zip(lines, reasons, strict=True):
        with pytest.raises(DecodeError, match=re.escape(reason)) as error:
            decode(line)
        assert error.value.format_name == "canal-json" and error.value.origin == ORIGIN
    assert CODEC.decoder().decode(RawMessage(None, None)) == [] and decode(b"") == []


def test_seatunnel_kafka_e2e(vectors: Path) -> None:
    """SeaTunnel's KafkaFormatIT: a real canal-server capture. Asserted: the three DDL messages emit no
    row, the sink output (an UPDATE as DELETE of the before image and INSERT of the new one) and the final
    table."""
    events = decode_file(CANAL / "seatunnel__kafka-e2e__canal_data.txt")
    ddl = [event for event in events if isinstance(event, Ddl)]
    assert [(event.kind, event.meta["type"]) for event in ddl] == [
        (DdlKind.CREATE_DATABASE, "QUERY"),
        (DdlKind.CREATE_TABLE, "CREATE"),
        (DdlKind.ALTER_TABLE, "ALTER"),
    ]
    sidecar = (CANAL / "seatunnel__kafka-e2e__canal_data.txt.expected.txt").read_text()
    expected = [json.loads(line) for line in sidecar.splitlines() if line.startswith('{"data"')]
    assert len(expected) == 14
    output = [
        {"data": dict(row), "type": "INSERT" if kind in ("+I", "+U") else "DELETE"} for kind, row in changelog(events)
    ]
    assert output == expected
    table = apply_all(rows_of(events), "products")
    final = re.findall(r"\((\d+), ([^,]+), ([^,]+), ([\d.]+)\)", sidecar.split("final PostgreSQL table")[1])
    assert len(final) == 8
    assert sorted((row["id"], row["name"], row["description"], row["weight"]) for row in table.values()) == sorted(
        (int(key), name, description, weight) for key, name, description, weight in final
    )


def test_tibigdata_case_of_names(vectors: Path) -> None:
    """TiBigData: table test_Cdc and column Name differ in case from its reader's schema, which it
    matches case-insensitively; names are kept exactly as sent. Asserted row +I(id=1, name=zs)."""
    insert = decode_one((CANAL / "tibigdata__TiDBCanalJsonDeserializationSchemaTest.jsonl").read_bytes())
    assert (insert.table, insert.after) == ("test_Cdc", {"Name": "zs", "id": 1})


# --- Apache Paimon: end states of its ITCases ----------------------------------------------------------
#
# Paimon's KafkaCanalSync{Table,Database}ActionITCase send resource files to Kafka and assert the final
# rows of primary-key tables (the sidecar paimon__canal__EXPECTED-from-ITCases.txt). Here the same files
# are decoded and applied to an in-memory table, and the rows printed the way Paimon prints them:
# tinyint(1) as a boolean, DATE as days and TIME as milliseconds, Java's LocalDateTime text, bytes as
# decimal lists, a SET as a list, spatial WKB as GeoJSON, a decimal at its column's scale. These are
# Paimon's type mapping, applied only to print; the decoded values stay what the spec says.

PAIMON_SIDECAR = CANAL / "paimon__canal__EXPECTED-from-ITCases.txt"
TABLE_SYNC, DATABASE_SYNC = "KafkaCanalSyncTableActionITCase", "KafkaCanalSyncDatabaseActionITCase"


def paimon_sections() -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(ITCase class, method) -> its resource/columns/expected lines, in order."""
    sections: dict[tuple[str, str], list[tuple[str, str]]] = {}
    itcase, entries = "", None
    for line in PAIMON_SIDECAR.read_text().split("===== verbatim")[0].splitlines():
        if line.startswith("===== "):
            itcase = line.removeprefix("===== ").removesuffix(".java")
        elif line.startswith("-- "):
            entries = sections.setdefault((itcase, line.removeprefix("-- ")), [])
        elif (match := re.match(r"\s+(resource|columns|expected): (.*)", line)) and entries is not None:
            entries.append((match[1], match[2]))
    return sections


def paimon_files(resource: str, directory: str) -> list[Path]:
    """The vector files of a resource path; ``%s`` is the test's directory, or every topic."""
    pattern = "paimon__canal__" + resource.removeprefix("kafka/canal/").replace("/", "__")
    if "topic%s" in pattern:
        return sorted(CANAL.glob(pattern.replace("%s", "*")))
    return [CANAL / pattern.replace("%s", directory)]


def geojson(wkb: bytes) -> dict[str, Any]:
    """MySQL's geometry value (4-byte SRID, then WKB) as the GeoJSON Paimon prints."""
    shape, _ = _wkb_shape(wkb, 4)
    return {**shape, "srid": struct.unpack_from("<I", wkb)[0]}


_WKB_TYPES = {1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString", 6: "MultiPolygon"}


def _wkb_shape(wkb: bytes, at: int) -> tuple[dict[str, Any], int]:
    assert wkb[at] == 1  # little-endian
    (kind,) = struct.unpack_from("<I", wkb, at + 1)
    at += 5
    if kind == 7:
        (count,) = struct.unpack_from("<I", wkb, at)
        members, at = [], at + 4
        for _ in range(count):
            member, at = _wkb_shape(wkb, at)
            members.append({"type": member["type"], "coordinates": member["coordinates"]})
        return {"geometries": members, "type": "GeometryCollection"}, at

    def point(at: int) -> tuple[list[Any], int]:
        x, y = struct.unpack_from("<dd", wkb, at)
        return [int(x) if x.is_integer() else x, int(y) if y.is_integer() else y], at + 16

    def many(read: Callable[[int], tuple[Any, int]], at: int) -> tuple[list[Any], int]:
        (count,) = struct.unpack_from("<I", wkb, at)
        items, at = [], at + 4
        for _ in range(count):
            item, at = read(at)
            items.append(item)
        return items, at

    def nested(at: int) -> tuple[Any, int]:  # a member geometry of a multi-geometry: its coordinates
        shape, at = _wkb_shape(wkb, at)
        return shape["coordinates"], at

    readers: dict[int, Callable[[int], tuple[Any, int]]] = {
        1: point,
        2: lambda at: many(point, at),
        3: lambda at: many(lambda at: many(point, at), at),
        4: lambda at: many(nested, at),
        5: lambda at: many(nested, at),
        6: lambda at: many(nested, at),
    }
    coordinates, at = readers[kind](at)
    return {"coordinates": coordinates, "type": _WKB_TYPES[kind]}, at


def java_local_datetime(value: dt.datetime) -> str:
    text = value.strftime("%Y-%m-%dT%H:%M")
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}" if value.microsecond % 1000 == 0 else f".{value.microsecond:06d}"
    return text


# Paimon maps a decimal without precision (TiCDC's bare "decimal") to DECIMAL(38,18).
PAIMON_DEFAULT_DECIMAL_SCALE = 18


def paimon_text(value: Any, mtype: MySQLType, column_type: MySQLType) -> str:
    """A value printed as in Paimon's expected rows; ``column_type`` is the Paimon column's type, the
    first the table saw (Paimon keeps a decimal's first scale, testDecimalNoChange)."""
    family = mtype.family
    if family is Family.INTEGER and mtype.name == "tinyint" and mtype.length == 1:
        return "true" if value else "false"
    if family is Family.FLOAT:
        return java_float(value)
    if family is Family.DECIMAL:
        scale = column_type.decimals if column_type.decimals is not None else PAIMON_DEFAULT_DECIMAL_SCALE
        return format(value.quantize(Decimal(1).scaleb(-scale), context=Context(prec=80)), "f")
    if family is Family.BINARY:
        return "[" + ", ".join(map(str, value)) + "]"
    if family is Family.GEOMETRY:
        return json.dumps(geojson(value), separators=(",", ":"))
    if family is Family.DATE:
        return str((value - dt.date(1970, 1, 1)).days)
    if family in (Family.DATETIME, Family.TIMESTAMP):
        return java_local_datetime(value.replace(tzinfo=None))
    if family is Family.TIME:
        return str(value // dt.timedelta(milliseconds=1))
    if family is Family.SET:
        return "[" + ", ".join(value.split(",")) + "]"
    return str(value)


@dataclass
class PaimonTable:
    """A Paimon primary-key table fed by decoded events: rows by key, names case-insensitive (Paimon's
    catalog lower-cases them; the events keep them as sent). A table without key appends."""

    rows: dict[Any, dict[str, tuple[Any, MySQLType | None]]] = field(default_factory=dict)
    column_types: dict[str, MySQLType] = field(default_factory=dict)
    columns: set[str] = field(default_factory=set)

    def apply(self, change: RowChange) -> None:
        for name, mtype in change.types.items():
            self.column_types.setdefault(name.lower(), mtype)
        if change.before is not None:
            self.rows.pop(self._key(change, change.before), None)
        if change.after is not None:
            row = {name.lower(): (value, change.types.get(name)) for name, value in change.after.items()}
            self.columns.update(row)
            self.rows[self._key(change, change.after)] = row

    def _key(self, change: RowChange, image: Mapping[str, Any]) -> Any:
        if not change.key_columns:
            return len(self.rows)
        lowered = {name.lower(): value for name, value in image.items()}
        return tuple(lowered[name.lower()] for name in change.key_columns)

    def printed(self, columns: list[str], computed: Mapping[str, Callable[[dict[str, Any]], Any]]) -> list[str]:
        printed = []
        for row in self.rows.values():
            cells = []
            for column in columns:
                value, mtype = row.get(column, (None, None))
                if column in computed:
                    value, mtype = computed[column](row), MySQLType("int")
                cells.append(
                    "NULL"
                    if value is None or mtype is None
                    else paimon_text(value, mtype, self.column_types.get(column, mtype))
                )
            printed.append("+I[" + ", ".join(cells) + "]")
        return sorted(printed)


def year_of_date(row: dict[str, Any]) -> int | None:
    """Paimon's computed column _year = year(_date)."""
    value = row.get("_date", (None, None))[0]
    return None if value is None else value.year


@dataclass(frozen=True)
class PaimonCase:
    itcase: str
    methods: tuple[str, ...]
    directory: str = ""
    computed: Mapping[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.methods[-1]}[{self.directory}]" if self.directory else self.methods[-1]


PAIMON_CASES = [
    PaimonCase(TABLE_SYNC, ("runSingleTableSchemaEvolution", "testSchemaEvolutionImpl"), "schemaevolution"),
    PaimonCase(TABLE_SYNC, ("runSingleTableSchemaEvolution", "testSchemaEvolutionImpl"), "schemaevolutionmissingddl"),
    PaimonCase(TABLE_SYNC, ("testMultipleSchemaEvolutions", "testSchemaEvolutionMultipleImpl")),
    PaimonCase(TABLE_SYNC, ("testStarUpOptionEarliest",)),
    PaimonCase(TABLE_SYNC, ("testStarUpOptionGroup",)),
    PaimonCase(TABLE_SYNC, ("testComputedColumn",), computed={"_year": year_of_date}),
    PaimonCase(TABLE_SYNC, ("testTypeMappingToString",)),
    PaimonCase(TABLE_SYNC, ("testCDCOperations",)),
    PaimonCase(TABLE_SYNC, ("testSyncWithInitialEmptyTopic",), computed={"_year": year_of_date}),
    PaimonCase(TABLE_SYNC, ("testSynchronizeIncompleteJson",)),
    PaimonCase(TABLE_SYNC, ("testSynchronizeNonPkTable",)),
    PaimonCase(TABLE_SYNC, ("testMissingDecimalPrecision",)),
    PaimonCase(TABLE_SYNC, ("testComputedColumnWithCaseInsensitive",), computed={"_year": year_of_date}),
    PaimonCase(TABLE_SYNC, ("testDecimalNoChange",)),
    PaimonCase(DATABASE_SYNC, ("testSchemaEvolutionMultiTopic", "testSchemaEvolutionImpl")),
    PaimonCase(DATABASE_SYNC, ("testTableAffixMultiTopic", "testTableAffixImpl")),
    PaimonCase(DATABASE_SYNC, ("testTypeMappingToString",)),
    PaimonCase(DATABASE_SYNC, ("testCaseInsensitive",)),
    PaimonCase(DATABASE_SYNC, ("testSpecifyKeys",)),
]
# Not replayed, with why: testStarUpOptionSpecific/Latest/Timestamp choose Kafka offsets to start from
# (no decoding question); testNotSupportFormat, testKafkaNoNonDdlData, testAssertSchemaCompatible and
# testCannotSynchronizeIncompleteJson assert Paimon's own exceptions; testExpressionNow fills audit
# columns from the clock. Their files are decoded by test_paimon_file_contents.


@pytest.mark.parametrize("paimon_case", PAIMON_CASES, ids=lambda c: c.id)
def test_paimon_end_states(vectors: Path, paimon_case: PaimonCase) -> None:
    """Table sync writes every source table into one Paimon table; database sync one per table (the
    expected block is matched to the table with its columns)."""
    sections = paimon_sections()
    entries = [entry for method in paimon_case.methods for entry in sections[(paimon_case.itcase, method)]]
    assert any(kind == "expected" for kind, _ in entries)
    tables: dict[str, PaimonTable] = {}
    columns: list[str] = []
    for kind, text in entries:
        if kind == "resource":
            for path in paimon_files(text, paimon_case.directory):
                for change in rows_of(decode_file(path)):
                    sink = change.table if paimon_case.itcase == DATABASE_SYNC else ""
                    tables.setdefault(sink, PaimonTable()).apply(change)
        elif kind == "columns":
            columns = [name.strip('"') for name in text.split(", ")]
        else:
            expected = sorted(row.strip() for row in text.split(" | "))
            if paimon_case.itcase == TABLE_SYNC:
                (table,) = tables.values()
            else:
                (table,) = [t for t in tables.values() if t.columns == {name.lower() for name in columns}]
            assert table.printed(columns, paimon_case.computed) == expected


def test_paimon_decimal_without_precision_keeps_its_digits(vectors: Path) -> None:
    """testMissingDecimalPrecision expects 1.200000000000000000: Paimon gives a bare "decimal" the
    type DECIMAL(38,18). The spec keeps every digit the producer wrote: Decimal("1.2"), equal in value."""
    (insert,) = rows_of(decode_file(CANAL / "paimon__canal__table__incomplete__canal-data-2.txt"))
    value = (insert.after or {})["v"]
    assert str(value) == "1.2" and value == Decimal("1.200000000000000000")
    assert insert.types["v"] == MySQLType("decimal")


def test_paimon_all_types(vectors: Path) -> None:
    """testAllTypesImpl: ~75 MySQL types in one INSERT, rows as the ITCase's Java literals print them
    (verbatim at the end of the sidecar). The spatial columns are WKB bytes here, which Paimon turns into
    the GeoJSON it prints; the test reads the WKB to compare."""
    text = PAIMON_SIDECAR.read_text()
    verbatim = text.split("===== verbatim")[1].split("waitForResult")[0]
    joined = "".join(literal.replace('\\"', '"') for literal in re.findall(r'"((?:[^"\\]|\\.)*)"', verbatim))
    expected = sorted("+I[" + row for row in joined.split("+I[")[1:])
    columns = re.findall(
        r'"([^"]+)"', next(t for k, t in paimon_sections()[(TABLE_SYNC, "testAllTypesImpl")] if k == "columns")
    )
    table = PaimonTable()
    events = rows_of(decode_file(CANAL / "paimon__canal__table__alltype__canal-data.txt"))
    for change in events:
        table.apply(change)
    assert len(expected) == 2 and len(columns) == 75
    assert table.printed(columns, {}) == expected
    first = events[0]
    assert first.types["_serial"] == MySQLType("bigint", unsigned=True)
    assert first.types["_point"] == MySQLType("point") and isinstance((first.after or {})["_point"], bytes)
    assert (first.after or {})["_enum"] == "value1" and (first.after or {})["_set"] == "a,b"


def readme_message_counts() -> dict[str, Counter[str]]:
    """vectors/README.md's table of Paimon files: "6 msg: ALTERx2, INSERTx2, DELETEx1, UPDATEx1"."""
    readme = (VECTORS / "README.md").read_text()
    counts = {}
    for name, total, kinds in re.findall(
        r"\| `(paimon__canal__[^`]+)` \|(?:[^|]*\|){3} (\d+) msg: ([A-Zx0-9, ]+)", readme
    ):
        tally = Counter({kind: int(n) for kind, n in re.findall(r"([A-Z]+)x(\d+)", kinds)})
        assert sum(tally.values()) == int(total), name
        counts[name] = tally
    return counts


def test_paimon_file_contents(vectors: Path) -> None:
    """Every Paimon resource file decodes, with the messages of each type vectors/README.md counts.
    The two files the README does not list (database schemaevolution topic2 data-2/3) hold only the
    licence comment."""
    counts = readme_message_counts()
    files = sorted(CANAL.glob("paimon__canal__*.txt"))
    files.remove(PAIMON_SIDECAR)
    assert len(files) == 57 and len(counts) == 55
    decoder = CODEC.decoder()
    for path in files:
        tally: Counter[str] = Counter()
        for line in message_lines(path):
            first = decoder.decode(RawMessage(None, line))[0]
            tally[first.meta["type"] if isinstance(first, Ddl) else first.op.name] += 1
        assert tally == counts.get(path.name, Counter()), path.name
    nonpk = rows_of(decode_file(CANAL / "paimon__canal__table__nonpk__canal-data-1.txt"))
    assert [change.key_columns for change in nonpk] == [(), ()]  # pkNames []
    (metadata,) = rows_of(decode_file(CANAL / "paimon__canal__table__metadatacolumn__canal-data-1.txt"))
    assert metadata.types == {"_id": MySQLType("longtext"), "_date": MySQLType("longtext")}  # no mysqlType
    (incomplete,) = rows_of(decode_file(CANAL / "paimon__canal__database__incomplete__canal-data-1.txt"))
    assert (incomplete.database, incomplete.table) == ("", "")  # Paimon's database sync refuses this
    alters = decode_file(CANAL / "paimon__canal__table__nononddldata__canal-data-1.txt")
    assert [(event.kind, event.table) for event in alters if isinstance(event, Ddl)] == [
        (DdlKind.ALTER_TABLE, "schema_evolution_2")
    ] * 2
    assert all(event.sql.startswith("/* Query from DMS") for event in alters if isinstance(event, Ddl))


# --- TiCDC's encoder test: exact field values for every MySQL type --------------------------------------


def ticdc_assertion_groups() -> list[tuple[str, dict[str, str]]]:
    """ticdc__canal__codec_test.field-assertions.jsonl as (test, {asserted field: expected}) groups,
    one per message the Go test encoded. A group ends at the next DDL/DML, or when a field repeats."""
    groups: list[tuple[str, dict[str, str]]] = []
    current: dict[str, str] | None = None
    for line in (CANAL / "ticdc__canal__codec_test.field-assertions.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "assert" not in record:
            current = None
            continue
        if current is None or record["assert"] in current:
            current = {}
            groups.append((record["test"], current))
        current[record["assert"]] = record["expected"]
    return groups


def json_field(group: Mapping[str, str], asserted: str) -> Any:
    """The JSON an assertion expects; the Go test wrote one as a string literal ("null")."""
    text = group.get(asserted, "null")
    return json.loads(json.loads(text) if text.startswith('"') else text)


# TestBasicTypes asserts only data; its table is test.t(a tinyint primary key, bi varbinary(16)).
BASIC_TYPES_MYSQL_TYPE = {"a": "tinyint", "bi": "varbinary"}

# TestAllTypes' INSERT, as the Go test wrote it (see its "dml" record); TIMESTAMP read in UTC.
ALL_TYPES_ROW = {
    "a": 1,
    "c": 1,
    "e": -1,
    "g": 123,
    "i": to_float32(153.123),
    "k": 153.123,
    "m": dt.datetime(1973, 12, 30, 15, 30, tzinfo=dt.UTC),
    "o": 123,
    "q": 123,
    "s": dt.date(2000, 1, 1),
    "u": dt.timedelta(hours=23, minutes=59, seconds=59),
    "w": dt.datetime(2015, 12, 20, 23, 58, 58),
    "y": 1970,
    "aa": "测试",
    "ac": bytes.fromhex("0102030405060708090A"),
    "ae": 81,
    "ag": '{"key1": "value1"}',
    "ai": Decimal("129012.12"),
    "ak": 1,  # enum 'a': its index, the bare mysqlType lists no members
    "am": 2,  # set 'b': its bitmask
    "ao": "5rWL6K+VdGV4dA==",
    "aq": bytes.fromhex("89504E470D0A1A0A"),
    "as1": "5rWL6K+VdGV4dA==",
    "au": bytes.fromhex("4944330300000000"),
    "aw": "5rWL6K+VdGV4dA==",
    "ay": bytes.fromhex("504B0304140000000800"),
    "ba": "5rWL6K+VdGV4dA==",
    "bc": bytes.fromhex("255044462D312E34"),
    "be": "Alice",
    "bg": bytes.fromhex("0102030405060708090A"),
    "bi": bytes.fromhex("89504E470D0A1A0A"),
}


def test_ticdc_encoder_field_assertions(vectors: Path) -> None:
    """pingcap/ticdc's canal codec_test: the sqlType, mysqlType, data and old TiCDC writes for every
    MySQL type. Each group's fields are put into a message; its values decode to what the Go test
    inserted, and re-encoded the four fields are what TiCDC wrote. (The expected strings are Go's
    json.Marshal of the decoded fields, sorted and with \\b escapes, so they are compared as JSON.)"""
    groups = ticdc_assertion_groups()
    assert [test for test, _ in groups] == [
        "TestBasicTypes",
        "TestAllTypes",
        *["TestGeneralDMLEvent"] * 4,
        *["TestDMLTypeEvent"] * 4,
    ]
    for test, group in groups:
        old = json_field(group, "string(oldValue)")
        data = json_field(group, "string(newValue)")
        message = {
            "database": "test",
            "table": "t",
            "type": json.loads(group.get("message.EventType", '"UPDATE"' if old else '"INSERT"')),
            "sqlType": json_field(group, "string(sqlValue)"),
            "mysqlType": json_field(group, "string(mysqlValue)") or BASIC_TYPES_MYSQL_TYPE,
            "data": data,
            "old": old,
        }
        (change,) = rows_of(decode(orjson.dumps(message)))
        if test == "TestAllTypes":
            assert change.after == {name: ALL_TYPES_ROW.get(name) for name in data[0]}
        if test == "TestBasicTypes":
            assert change.after == {"a": 1, "bi": ALL_TYPES_ROW["bi"]}
        partial_old = bool(old) and set(old[0]) != set(data[0])
        (again,) = encode([change], only_output_updated_columns=partial_old)
        written = orjson.loads(again)
        for name, asserted in (("sqlType", "string(sqlValue)"), ("mysqlType", "string(mysqlValue)")):
            if asserted in group:
                assert written[name] == json_field(group, asserted), (test, name)
        assert (written["data"], written["old"]) == (data, old), test


# --- decoding rules ------------------------------------------------------------------------------------


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


def test_update_old_rules() -> None:
    """A partial old lists what changed; a column left out kept data's value; a null WAS NULL. A
    missing old, [], and [null] (tiflow#4597) say nothing changed, as TiCDC's decoders read them."""
    types = {"id": "int", "a": "varchar", "b": "varchar"}
    data = [{"id": "1", "a": "new", "b": "kept"}]
    partial = decode_one(message("UPDATE", data, mysqlType=types, old=[{"a": None}]))
    assert partial.before == {"id": 1, "a": None, "b": "kept"}
    for old in (None, [], [None]):
        unchanged = decode_one(message("UPDATE", data, mysqlType=types, old=old))
        assert unchanged.before == unchanged.after == {"id": 1, "a": "new", "b": "kept"}
    two_rows = decode(message("UPDATE", data * 2, mysqlType=types, old=[{"a": "first"}]))
    assert [change.before["a"] for change in rows_of(two_rows) if change.before] == ["first", "new"]
    with pytest.raises(DecodeError, match='"old" has 2 rows for the 1 of "data"'):
        decode(message("UPDATE", data, mysqlType=types, old=[{}, {}]))


def test_delete_and_insert_ignore_old() -> None:
    """DELETE: data is the row; old is null since v5.4.0 and repeated data before. INSERT: old is
    null, or [] in Paimon's audit-time file."""
    data = [{"id": "1", "c": "x"}]
    new_style, old_style = (decode_one(message("DELETE", data, old=old)) for old in (None, data))
    assert new_style == old_style and new_style.before == {"id": 1, "c": "x"} and new_style.after is None
    assert decode_one(message("INSERT", old=[])) == decode_one(message("INSERT"))


def test_event_numbering_across_rows_and_messages() -> None:
    value = message("INSERT", [{"id": "1", "c": "a"}, {"id": "2", "c": "b"}]) + b"\n\n" + message("DELETE") + b"\n"
    events = decode(value)
    assert [event.origin for event in events] == [ORIGIN, ORIGIN.at(1), ORIGIN.at(2)]
    assert [event.op for event in rows_of(events)] == [Op.INSERT, Op.INSERT, Op.DELETE]
    assert events[0].meta is events[1].meta  # one message's fields, shared by its rows


def test_typed_json_values_of_typed_columns() -> None:
    types = {"i": "int", "t": "tinyint(1)", "d": "decimal(10,2)", "f": "float", "j": "json", "e": "enum('a','b')"}
    row = {"i": 5.0, "t": True, "d": 5.15, "f": 2, "j": {"k": [1, None]}, "e": 2}
    insert = decode_one(message(data=[row], mysqlType=types))
    assert insert.after == {"i": 5, "t": 1, "d": Decimal("5.15"), "f": 2.0, "j": '{"k":[1,null]}', "e": "b"}
    assert type(insert.after["i"]) is int and type(insert.after["t"]) is int
    for bad, reason in [
        ({"i": 5.5}, "column 'i': expected an integer, got the number 5.5"),
        ({"i": 2**31}, "column 'i': 2147483648 is outside the range of int"),
        ({"c": 12}, "column 'c': expected a string, got the number 12"),
        ({"d": True}, None),  # a boolean is MySQL's 1: allowed
        ({"e": 3}, "column 'e': enum index 3 outside enum('a','b')"),
    ]:
        columns = {**types, "c": "varchar"}
        if reason is None:
            assert decode_one(message(data=[bad], mysqlType=columns)).after == {"d": Decimal(1)}
            continue
        with pytest.raises(DecodeError, match=re.escape(f"data[0] {reason}")):
            decode(message(data=[bad], mysqlType=columns))


def test_types_inferred_for_columns_without_mysql_type() -> None:
    rows = [
        {"n": 1, "b": True, "x": 1, "big": 2**63, "s": "t", "o": {"a": 1}, "l": [1], "z": None},
        {"n": None, "b": False, "x": 1.5, "big": 1, "s": None, "o": [2], "l": None, "z": None},
    ]
    changes = rows_of(decode(orjson.dumps({"type": "INSERT", "data": rows})))
    assert changes[0].types == {
        "n": MySQLType("bigint"),
        "b": MySQLType("tinyint", length=1),
        "x": MySQLType("double"),
        "big": MySQLType("bigint", unsigned=True),
        "s": MySQLType("longtext"),
        "o": MySQLType("json"),
        "l": MySQLType("json"),
    }  # z is null in every row: no type
    assert changes[0].after == {"n": 1, "b": 1, "x": 1.0, "big": 2**63, "s": "t", "o": '{"a":1}', "l": "[1]", "z": None}
    assert changes[1].after == {"n": None, "b": 0, "x": 1.5, "big": 1, "s": None, "o": "[2]", "l": None, "z": None}
    with pytest.raises(DecodeError, match=r"column 'm' has no mysqlType and its values mix JSON kinds \(int, str\)"):
        decode(orjson.dumps({"type": "INSERT", "data": [{"m": 1}, {"m": "1"}]}))
    partly = decode_one(message(data=[{"id": "1", "c": "x", "extra": 7}]))
    assert partly.types["id"] == MySQLType("int") and partly.types["extra"] == MySQLType("bigint")


def test_integers_at_the_64_bit_edges() -> None:
    unsigned = {"u": "bigint unsigned", "s": "bigint"}
    edges = decode_one(message(data=[{"u": "18446744073709551615", "s": "-9223372036854775808"}], mysqlType=unsigned))
    assert edges.after == {"u": 2**64 - 1, "s": -(2**63)}
    typed = decode_one(message(data=[{"u": 18446744073709551615, "s": -9223372036854775808}], mysqlType=unsigned))
    assert typed.after == edges.after
    with pytest.raises(DecodeError, match="18446744073709551616 is outside the range of bigint unsigned"):
        decode(message(data=[{"u": "18446744073709551616"}], mysqlType=unsigned))
    # orjson reads a JSON integer beyond 64 bits as a float: too coarse to be an integer.
    beyond = b'{"type":"INSERT","mysqlType":{"u":"bigint unsigned"},"data":[{"u":18446744073709551616}]}'
    with pytest.raises(DecodeError, match="expected an integer"):
        decode(beyond)


def test_tidb_extension_fields() -> None:
    plain = decode_one(message(_tidb={"commitTs": 5, "onlyHandleKey": False, "rowkey": "dIAAAA=="}))
    assert isinstance(plain, RowChange) and plain.commit_ts == 5 and plain.meta["rowkey"] == "dIAAAA=="
    both = decode_one(message(_tidb={"commitTs": 5, "onlyHandleKey": True, "claimCheckLocation": "s3://b/x.json"}))
    assert isinstance(both, LargeMessageRef) and both.kind is LargeMessageKind.CLAIM_CHECK  # the location wins
    ddl = decode_one(
        orjson.dumps({"isDdl": True, "type": "CREATE", "sql": "create table t (a int)", "_tidb": {"commitTs": 9}})
    )
    assert isinstance(ddl, Ddl) and ddl.commit_ts == 9 and (ddl.database, ddl.table) == ("", "")


@pytest.mark.parametrize(
    ("canal_type", "sql", "kind"),
    [
        ("QUERY", "drop database if exists test", DdlKind.DROP_DATABASE),
        ("QUERY", "CREATE DATABASE IF NOT EXISTS canal_hvygfc", DdlKind.CREATE_DATABASE),
        ("QUERY", "/* hint */ create schema s", DdlKind.CREATE_DATABASE),
        ("QUERY", "-- note\nDROP SCHEMA s", DdlKind.DROP_DATABASE),
        ("QUERY", f"/* {'long comment ' * 30} */ CREATE DATABASE d", DdlKind.CREATE_DATABASE),
        ("QUERY", "ALTER DATABASE d CHARACTER SET utf8mb4", DdlKind.OTHER),
        ("QUERY", "CREATE OR REPLACE ALGORITHM=MERGE VIEW v AS SELECT 1", DdlKind.OTHER),
        ("CREATE", "CREATE TABLE t (a int)", DdlKind.CREATE_TABLE),
        ("CREATE", "CREATE VIEW v AS SELECT 1", DdlKind.OTHER),
        ("ERASE", "DROP TABLE t", DdlKind.DROP_TABLE),
        ("ALTER", "/* Query from DMS */ ALTER TABLE t ADD COLUMN v2 INT", DdlKind.ALTER_TABLE),
        ("RENAME", "RENAME TABLE a TO b, c TO d", DdlKind.RENAME_TABLE),
        ("TRUNCATE", "TRUNCATE t", DdlKind.TRUNCATE_TABLE),
        ("CINDEX", "ALTER TABLE t ADD INDEX i (a)", DdlKind.CREATE_INDEX),
        ("DINDEX", "DROP INDEX i ON t", DdlKind.DROP_INDEX),
        ("GTID", "create unique index i on t (a)", DdlKind.CREATE_INDEX),  # an unknown type: the SQL says
    ],
)
def test_ddl_kinds(canal_type: str, sql: str, kind: DdlKind) -> None:
    assert kind_of_ticdc_type(canal_type, sql) is kind
    ddl = decode_one(orjson.dumps({"database": "d", "table": "t", "isDdl": True, "type": canal_type, "sql": sql}))
    assert isinstance(ddl, Ddl) and ddl.kind is kind and ddl.meta["type"] == canal_type


def test_a_ddl_type_without_is_ddl_is_a_ddl() -> None:
    """Flink skips type CREATE without reading isDdl; a Canal DDL type names a DDL here too."""
    ddl = decode_one(orjson.dumps({"type": "ALTER", "sql": "ALTER TABLE t ADD c INT", "data": None}))
    assert isinstance(ddl, Ddl) and ddl.kind is DdlKind.ALTER_TABLE


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (
            b'{"type":"INSERT",',
            "not JSON: Expecting property name enclosed in double quotes at line 1 column 18 (char 17)",
        ),
        (b'{"type":"INSERT"}\n{"type":', "not JSON: Expecting value at line 2 column 9 (char 26)"),
        (b'{"type":"INSERT","data":[{"c":"\xff"}]}', "not UTF-8 text: invalid start byte at byte 31"),
        (b'{"type":"INSERT","data":[{"c":"\\ud800"}]}', "lone UTF-16 surrogate"),
        (b"  \n ", "the value holds no JSON message, only whitespace"),
        (b"[1]", "expected a JSON object, got an array"),
        (b'{"type":7}', 'the message has no "type" naming its event, got the number 7'),
        (message(isDdl="false"), "\"isDdl\" must be true or false, got the string 'false'"),
        (message(data={"id": "1"}), '"data" of a INSERT message must be an array of rows, got an object'),
        (message(data=["x"]), "data[0] must be an object of column values, got the string 'x'"),
        (message(pkNames="id"), '"pkNames" must be an array of column names'),
        (message(database=1), '"database" must be a string, got the number 1'),
        (message(mysqlType=["int"]), '"mysqlType" must map column names to types, got an array'),
        (message("UPDATE", old={"id": "1"}), '"old" of an UPDATE must be an array of rows, got an object'),
        (message("UPDATE", old=["x"]), "old[0] must be an object of column values, got the string 'x'"),
        (message("UPDATE", old=[{"id": "x"}]), "old[0] column 'id': invalid literal for int()"),
        (
            message(mysqlType={"id": 4, "c": "varchar"}),
            "mysqlType of column 'id' must be a type name, got the number 4",
        ),
        (message(mysqlType={"id": "int", "c": "varchr"}), "mysqlType of column 'c': unknown MySQL type 'varchr'"),
        (message(data=[{"id": "one"}]), "data[0] column 'id': invalid literal for int() with base 10: 'one'"),
        (
            message(mysqlType={"id": "date"}, data=[{"id": "2024-02-30"}]),
            "data[0] column 'id': not a date: '2024-02-30'",
        ),
        (
            message(mysqlType={"id": "blob"}, data=[{"id": "\u0100"}]),
            "data[0] column 'id': 'latin-1' codec can't encode",
        ),
        (message(_tidb=[1]), '"_tidb" must be an object, got an array'),
        (
            message(_tidb={"commitTs": -1}),
            '"_tidb.commitTs" must be a TSO (an unsigned 64-bit integer), got the number -1',
        ),
        (message(_tidb={"commitTs": "5"}), '"_tidb.commitTs" must be a TSO'),
        (message(_tidb={"commitTs": 5, "onlyHandleKey": "yes"}), '"_tidb.onlyHandleKey" must be true or false'),
        (message(_tidb={"claimCheckLocation": 3}), '"_tidb.claimCheckLocation" must be a string'),
        (message("TIDB_WATERMARK"), 'a TIDB_WATERMARK message needs "_tidb": {"watermarkTs": ...}'),
        (orjson.dumps({"isDdl": True, "type": "QUERY", "sql": " "}), 'a DDL message needs its statement in "sql"'),
        (message("UPSERT"), "unknown type 'UPSERT': expected INSERT, UPDATE, DELETE, TIDB_WATERMARK, or a DDL"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_bad_input_is_a_decode_error(value: bytes, reason: str) -> None:
    """Each error names the format, what was expected and what came, and the message's origin; for
    text that is not JSON the reason holds the line and column."""
    with pytest.raises(DecodeError) as error:
        decode(value)
    assert error.value.format_name == "canal-json" and error.value.origin == ORIGIN
    assert reason in error.value.reason
    assert str(error.value).endswith(f"at {ORIGIN}")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b'{"type":"INSERT","sql":"x', "not JSON: Unterminated string starting at line 1 column 24 (char 23)"),
        (b'{"type":"INSERT","sql":"\x01"}', "not JSON: Invalid control character at line 1 column 25 (char 24)"),
    ],
)
def test_a_json_error_says_where_once(value: bytes, reason: str) -> None:
    """The standard library's messages that end in "at" do not make "starting at at line"."""
    with pytest.raises(DecodeError) as error:
        decode(value)
    assert error.value.reason == reason


@pytest.mark.parametrize("compression", ["snappy", "lz4"])
def test_large_message_handle_compression(compression: str) -> None:
    insert = decode_one(message(es=1, ts=2))
    (plain,) = encode([insert])
    (compressed,) = encode([insert], large_message_handle_compression=compression)
    assert compressed == compressor(compression)(plain)
    assert decode_one(compressed, large_message_handle_compression=compression) == insert == decode_one(plain)
    with pytest.raises(DecodeError, match="cannot decompress the value"):
        decode(plain, large_message_handle_compression=compression)


@pytest.mark.parametrize(
    ("tz", "instant"),
    [
        ("UTC", dt.datetime(2024, 3, 10, 1, 30, 5, 120000, tzinfo=dt.UTC)),
        ("+08:00", dt.datetime(2024, 3, 9, 17, 30, 5, 120000, tzinfo=dt.UTC)),
        ("-05:30", dt.datetime(2024, 3, 10, 7, 0, 5, 120000, tzinfo=dt.UTC)),
        ("America/New_York", dt.datetime(2024, 3, 10, 6, 30, 5, 120000, tzinfo=dt.UTC)),
    ],
)
def test_timestamps_are_wall_clock_in_the_producer_zone(tz: str, instant: dt.datetime) -> None:
    value = message(mysqlType={"ts": "timestamp"}, data=[{"ts": "2024-03-10 01:30:05.12"}])
    decoded = decode_one(value, tz=tz)
    assert decoded.after == {"ts": instant}
    (again,) = encode([decoded], tz=tz)
    assert orjson.loads(again)["data"] == [{"ts": "2024-03-10 01:30:05.120000"}]  # fsp unknown: six digits


def test_temporal_texts() -> None:
    types = {"d": "date", "dt": "datetime(3)", "ts": "timestamp", "t": "time(6)", "y": "year"}
    row = {
        "d": "0000-00-00",
        "dt": "2024-00-15 10:00:00.000",
        "ts": "0000-00-00 00:00:00",
        "t": "-838:59:59.000001",
        "y": "0",
    }
    zero = decode_one(message(data=[row], mysqlType=types))
    assert zero.after == {
        "d": ZeroTemporal("0000-00-00"),
        "dt": ZeroTemporal("2024-00-15 10:00:00.000"),
        "ts": ZeroTemporal("0000-00-00 00:00:00"),
        "t": -dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=1),
        "y": 0,
    }
    (again,) = encode([zero], content_compatible=True)
    assert orjson.loads(again)["data"] == [row]
    for bad in ("2024-01-02 03:04:05+08:00", "2024-W01-1 03:04:05", "2024-01-02 3:04:05"):
        with pytest.raises(DecodeError, match="not a datetime"):
            decode(message(data=[{"dt": bad}], mysqlType=types))


# --- encoding rules ------------------------------------------------------------------------------------

UNSIGNED_SQL_TYPES = [  # spec, 整数类型: value ranges and their JDBC codes
    ("tinyint", -128, -6),
    ("tinyint unsigned", 127, -6),
    ("tinyint unsigned", 128, 5),
    ("smallint unsigned", 32767, 5),
    ("smallint unsigned", 32768, 4),
    ("mediumint unsigned", 8388608, 4),
    ("int unsigned", 2147483647, 4),
    ("int unsigned", 2147483648, -5),
    ("bigint", -(2**63), -5),
    ("bigint unsigned", 2**63 - 1, -5),
    ("bigint unsigned", 2**63, 3),
    ("bigint unsigned", None, -5),  # NULL: the type's own code
]


@pytest.mark.parametrize(("text", "value", "code"), UNSIGNED_SQL_TYPES)
def test_sql_type_of_integers(text: str, value: int | None, code: int) -> None:
    assert java_sql_type(MySQLType.parse(text), value) == code


def test_sql_type_table_of_the_spec() -> None:
    """Spec, SQL Type 字段: Boolean -6, Float 7, Double 8, Decimal 3, Char 1, Varchar 12, binary and
    blob types 2004, text types 2005, Date 91, Datetime/Timestamp 93, Time 92, Year 12, Enum 4,
    Set -7, Bit -7, JSON 12."""
    spec = {
        "bool": -6, "float": 7, "double": 8, "decimal": 3, "char": 1, "varchar": 12, "binary": 2004,
        "varbinary": 2004, "tinytext": 2005, "text": 2005, "mediumtext": 2005, "longtext": 2005,
        "tinyblob": 2004, "blob": 2004, "mediumblob": 2004, "longblob": 2004, "date": 91, "datetime": 93,
        "timestamp": 93, "time": 92, "year": 12, "enum": 4, "set": -7, "bit": -7, "json": 12,
    }  # fmt: skip
    assert {text: java_sql_type(MySQLType.parse(text), None) for text in spec} == spec
    assert set(JAVA_SQL_TYPES) >= {MySQLType.parse(text).name for text in spec}


@pytest.mark.parametrize(
    ("mtype", "bare", "full"),
    [
        (MySQLType("int", unsigned=True, length=10), "int unsigned", "int(10) unsigned"),
        (MySQLType("decimal", length=10, decimals=4), "decimal", "decimal(10,4)"),
        (MySQLType("tinyint", length=1), "tinyint", "tinyint(1)"),
        (MySQLType("enum", elements=("a", "it's")), "enum", "enum('a','it''s')"),
        (
            MySQLType("bigint", unsigned=True, zerofill=True, length=20),
            "bigint unsigned zerofill",
            "bigint(20) unsigned zerofill",
        ),
        (MySQLType("datetime", decimals=6), "datetime", "datetime(6)"),
        (MySQLType("year", unsigned=True), "year", "year unsigned"),
        (MySQLType("varbinary", length=16), "varbinary", "varbinary(16)"),
    ],
)
def test_mysql_type_text(mtype: MySQLType, bare: str, full: str) -> None:
    """TiCDC's mysqlType: the base type with unsigned/zerofill (never for year and bit), or with
    content-compatible the whole definition, which the decoder parses back to the same type."""
    assert mysql_type_text(mtype, full=False) == bare
    assert mysql_type_text(mtype, full=True) == full
    assert MySQLType.parse(full) == mtype


def test_go_string_escaping() -> None:
    """Spec, Binary 和 Blob 类型: control characters as \\u00XX except \\t \\n \\r, printable
    characters themselves, & < > escaped, 128-255 themselves. Every byte survives the trip."""
    everything = bytes(range(256))
    written = go_json_string(everything.decode("latin-1"))
    assert json.loads(written).encode("latin-1") == everything
    expected_head = "".join({9: "\\t", 10: "\\n", 13: "\\r"}.get(code, f"\\u{code:04x}") for code in range(32))
    assert written.startswith('"' + expected_head + " !\\\"#$%\\u0026'()")
    assert "\\u003c=\\u003e" in written and "[\\\\]" in written and "\x7f\x80\x81" in written
    assert written.endswith('þÿ"')
    assert go_json_string("a\u2028b\u2029c") == '"a\\u2028b\\u2029c"'
    (value,) = encode([decode_one(message(mysqlType={"b": "varbinary"}, data=[{"b": everything.decode("latin-1")}]))])
    assert decode_one(value).after == {"b": everything}


def test_only_output_updated_columns() -> None:
    types = {name: MySQLType("varchar") for name in ("id", "a", "b")}
    change = RowChange(Op.UPDATE, "d", "t", {"id": "1", "a": None, "b": "x"}, {"id": "1", "a": "y", "b": "x"}, types)
    olds = [orjson.loads(value)["old"] for value in encode([change], only_output_updated_columns=True)]
    assert olds == [[{"a": None}]]  # NULL to a value is a change
    same = RowChange(Op.UPDATE, "d", "t", {"id": "1"}, {"id": "1"}, types)
    for options in ({"only_output_updated_columns": True}, {"content_compatible": True}):
        (value,) = encode([same], **options)
        assert orjson.loads(value)["old"] == [{}]
    (value,) = encode([change])
    assert orjson.loads(value)["old"] == [{"id": "1", "a": None, "b": "x"}]


def test_ddl_and_watermark_encoding() -> None:
    """A DDL's Canal type comes from its meta where it has one, else from its kind; es is the commit
    ts's physical milliseconds unless meta has es; ts is meta's, else 0."""
    foreign = Ddl(DdlKind.CREATE_TABLE, "d", "t", "CREATE TABLE t (a INT)", commit_ts=429918007904436226)
    (value,) = encode([foreign], enable_tidb_extension=True)
    assert value == (
        b'{"id":0,"database":"d","table":"t","pkNames":null,"isDdl":true,"type":"CREATE","es":1640007049196,'
        b'"ts":0,"sql":"CREATE TABLE t (a INT)","sqlType":null,"mysqlType":null,"data":null,"old":null,'
        b'"_tidb":{"commitTs":429918007904436226}}'
    )
    (value,) = encode([Ddl(DdlKind.DROP_DATABASE, "d", "", "DROP DATABASE d")])
    assert orjson.loads(value)["type"] == "QUERY" and "_tidb" not in orjson.loads(value)
    with_meta = Ddl(DdlKind.OTHER, "d", "v", "CREATE VIEW v AS SELECT 1", meta={"type": "CREATE", "es": 7, "ts": 8})
    (value,) = encode([with_meta])
    assert (orjson.loads(value)["type"], orjson.loads(value)["es"], orjson.loads(value)["ts"]) == ("CREATE", 7, 8)


def test_events_canal_json_cannot_carry() -> None:
    types = {"id": MySQLType("int"), "ts": MySQLType("timestamp"), "b": MySQLType("blob"), "e": MySQLType("enum")}
    insert = RowChange(Op.INSERT, "d", "t", None, {"id": 1}, types, commit_ts=None)
    schema = TableSchema("d", "t", (ColumnSchema("id", MySQLType("int")),))
    for event, options, reason in [
        (Watermark(5), {}, "only with enable-tidb-extension=true"),
        (LargeMessageRef(LargeMessageKind.HANDLE_KEY_ONLY, insert), {}, "only with enable-tidb-extension=true"),
        (
            LargeMessageRef(
                LargeMessageKind.CLAIM_CHECK, RowChange(Op.INSERT, "d", "t", None, {"id": 1}, types, commit_ts=1)
            ),
            {"enable_tidb_extension": True},
            "needs the location of the stored message",
        ),
        (insert, {"enable_tidb_extension": True}, "this row change has no commit ts"),
        (Ddl(DdlKind.OTHER, "d", "", "SET x=1"), {"enable_tidb_extension": True}, "this DDL has no commit ts"),
        (Bootstrap(schema), {}, "not Bootstrap"),
        (Heartbeat(1), {}, "not Heartbeat"),
        (RowChange(Op.UPDATE, "d", "t", None, {"id": 1}, types), {}, "an UPDATE needs its before image"),
        (RowChange(Op.DELETE, "d", "t", None, {"id": 1}, types), {}, "a DELETE needs its before image"),
        (RowChange(Op.INSERT, "d", "t", None, {"x": 1}, types), {}, "column 'x' of d.t has no MySQL type"),
        (RowChange(Op.INSERT, "d", "t", None, {"id": 2**31}, types), {}, "2147483648 outside the range of int"),
        (RowChange(Op.INSERT, "d", "t", None, {"id": 1.5}, types), {}, "must be an int, got float"),
        (RowChange(Op.INSERT, "d", "t", None, {"ts": dt.datetime(2024, 1, 1)}, types), {}, "an aware datetime"),
        (RowChange(Op.INSERT, "d", "t", None, {"b": "text"}, types), {}, "a binary value must be bytes, got str"),
        (RowChange(Op.INSERT, "d", "t", None, {"e": "a"}, types), {}, "'a' is not a member of enum"),
        (RowChange(Op.INSERT, "d", "t\ud800", None, {"id": 1}, types), {}, "lone UTF-16 surrogate"),
    ]:
        with pytest.raises(EncodeError, match=re.escape(reason)) as error:
            encode([event], **options)
        assert error.value.format_name == "canal-json"


# --- property round trips ------------------------------------------------------------------------------

OPTION_SETS = [
    {"content_compatible": False, "enable_tidb_extension": False},
    {"content_compatible": False, "enable_tidb_extension": True},
    {"content_compatible": True, "enable_tidb_extension": False},
    {"content_compatible": True, "enable_tidb_extension": True},
]
# A fixed offset: in a zone with daylight saving time the repeated hour's wall clock is ambiguous
# (docs/formats/canal-json.md, "What this format cannot carry").
ROUND_TRIP_TZ = "+08:00"


def type_as_sent(mtype: MySQLType, full: bool) -> MySQLType:
    """The type the decoder learns: all of it with content-compatible, else TiCDC's bare type."""
    return mtype if full else MySQLType(mtype.name, unsigned=mtype.unsigned, zerofill=mtype.zerofill)


def value_as_sent(mtype: MySQLType, value: Any, full: bool) -> Any:
    """Without the members in mysqlType an enum travels as its index and a set as its bitmask."""
    if value is None or full or mtype.family not in (Family.ENUM, Family.SET):
        return value
    return enum_index(mtype, value) if mtype.family is Family.ENUM else set_bits(mtype, value)


@st.composite
def row_changes(draw: st.DrawFn, types: list[MySQLType] | None = None) -> RowChange:
    types, after = draw(rows(types))
    before = {name: draw(nullable_values_of(mtype)) for name, mtype in types.items()} | {"id": after["id"]}
    op = draw(st.sampled_from(list(Op)))
    images = {Op.INSERT: (None, after), Op.UPDATE: (before, after), Op.DELETE: (before, None)}[op]
    commit_ts = draw(st.sampled_from([0, 2**64 - 1]) | st.integers(0, 2**64 - 1))
    return RowChange(op, "db", "tbl", *images, types, ("id",), commit_ts)


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "-".join(k for k, v in o.items() if v) or "defaults")
@settings(max_examples=150, deadline=None)
@given(change=row_changes())
def test_row_changes_round_trip(options: dict[str, bool], change: RowChange) -> None:
    """Every type of tests/strategies.py with its edge values (bigint unsigned max, decimal(65,30), every
    byte in binary, zero dates, negative time with fractions, bit(64), JSON text, NULL and "null")
    decodes to what was encoded, as far as the options carry it: the commit ts only with the TiDB
    extension, full types (and enum/set member names) only with content-compatible."""
    full = options["content_compatible"]
    (value,) = encode([change], tz=ROUND_TRIP_TZ, **options)
    decoded = decode_one(value, tz=ROUND_TRIP_TZ)

    def image(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if values is None:
            return None
        return {name: value_as_sent(change.types[name], item, full) for name, item in values.items()}

    assert decoded == RowChange(
        change.op,
        "db",
        "tbl",
        image(change.before),
        image(change.after),
        {name: type_as_sent(mtype, full) for name, mtype in change.types.items()},
        ("id",),
        change.commit_ts if options["enable_tidb_extension"] else None,
        origin=ORIGIN,
        meta={"id": 0, "es": (change.commit_ts or 0) >> 18, "ts": 0},
    )
    (again,) = encode([decoded], tz=ROUND_TRIP_TZ, **options)
    if full:
        assert again == value
    else:  # the bare mysqlType has no fsp: a fraction of zeros may be written shorter the second time
        assert decode_one(again, tz=ROUND_TRIP_TZ) == decoded


@pytest.mark.parametrize("mtype", TYPES, ids=str)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_type_round_trips(mtype: MySQLType, data: st.DataObject) -> None:
    """Each type of tests/strategies.py on its own, NULL and edge values included, under all four
    option sets (the mixed rows above draw types at random and need not meet every one)."""
    change = data.draw(row_changes(types=[mtype]))
    for options in OPTION_SETS:
        full = options["content_compatible"]
        (value,) = encode([change], tz=ROUND_TRIP_TZ, **options)
        decoded = decode_one(value, tz=ROUND_TRIP_TZ)
        for name, sent in (("before", change.before), ("after", change.after)):
            got = getattr(decoded, name)
            assert got == (
                None if sent is None else {n: value_as_sent(change.types[n], v, full) for n, v in sent.items()}
            )
        assert decoded.types == {name: type_as_sent(t, full) for name, t in change.types.items()}


EDGE_TYPES = {
    "id": MySQLType("bigint"),
    "u64": MySQLType("bigint", unsigned=True),
    "d65": MySQLType("decimal", length=65, decimals=30),
    "bytes": MySQLType("varbinary", length=256),
    "zero_date": MySQLType("date"),
    "zero_datetime": MySQLType("datetime", decimals=6),
    "negative_time": MySQLType("time", decimals=6),
    "bits": MySQLType("bit", length=64),
    "doc": MySQLType("json"),
    "sql_null": MySQLType("varchar", length=10),
    "text_null": MySQLType("varchar", length=10),
    "members": MySQLType("set", elements=("x", "y", "z")),
}
EDGE_VALUES = {
    "id": -(2**63),
    "u64": 2**64 - 1,
    "d65": Decimal("-" + "9" * 35 + "." + "9" * 30),
    "bytes": bytes(range(256)),
    "zero_date": ZeroTemporal("0000-00-00"),
    "zero_datetime": ZeroTemporal("0000-00-00 00:00:00"),
    "negative_time": -dt.timedelta(hours=838, minutes=59, seconds=58, microseconds=999999),
    "bits": 2**64 - 1,
    "doc": '{"a":[1,null,"\u003c/script\u003e"],"b":{}}',
    "sql_null": None,
    "text_null": "null",
    "members": "x,z",
}


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "-".join(k for k, v in o.items() if v) or "defaults")
def test_edge_values_round_trip(options: dict[str, bool]) -> None:
    """The edge values every codec must carry, in one row, under each option set."""
    full = options["content_compatible"]
    change = RowChange(Op.INSERT, "db", "tbl", None, EDGE_VALUES, EDGE_TYPES, ("id",), 2**64 - 1)
    (value,) = encode([change], **options)
    decoded = decode_one(value)
    assert decoded.after == {name: value_as_sent(EDGE_TYPES[name], item, full) for name, item in EDGE_VALUES.items()}
    assert decoded.commit_ts == (2**64 - 1 if options["enable_tidb_extension"] else None)
    written = orjson.loads(value)
    assert written["sqlType"]["u64"] == 3 and written["data"][0]["u64"] == "18446744073709551615"
    assert written["data"][0]["sql_null"] is None and written["data"][0]["text_null"] == "null"


@settings(max_examples=60, deadline=None)
@given(data=st.data(), mtype=st.sampled_from([t for t in TYPES if t.family is not Family.BINARY]))
def test_values_agree_with_the_types_module(data: st.DataObject, mtype: MySQLType) -> None:
    """The decoder's fast converters read TiDB's text as values.value_from_text does, and the encoder
    writes what values.value_to_text writes (binary, which each format wraps its own way, aside)."""
    value = data.draw(values_of(mtype))
    text = value_to_text(mtype, value, dt.UTC)
    change = RowChange(Op.INSERT, "db", "tbl", None, {"v": value}, {"v": mtype})
    (encoded,) = encode([change], content_compatible=True)
    assert orjson.loads(encoded)["data"] == [{"v": text}]
    assert decode_one(encoded).after == {"v": value_from_text(mtype, text, dt.UTC)}


# A statement of each kind: the decoder reads QUERY's kind from the SQL, the others from the Canal type.
STATEMENT_OF_KIND = {
    DdlKind.CREATE_DATABASE: "CREATE DATABASE",
    DdlKind.DROP_DATABASE: "DROP SCHEMA IF EXISTS",
    DdlKind.CREATE_TABLE: "CREATE TABLE",
    DdlKind.DROP_TABLE: "DROP TABLE",
    DdlKind.RENAME_TABLE: "RENAME TABLE",
    DdlKind.TRUNCATE_TABLE: "TRUNCATE TABLE",
    DdlKind.ALTER_TABLE: "ALTER TABLE",
    DdlKind.CREATE_INDEX: "CREATE INDEX",
    DdlKind.DROP_INDEX: "DROP INDEX",
    DdlKind.OTHER: "SET",
}
CANAL_TYPE_OF_KIND = {
    DdlKind.CREATE_TABLE: "CREATE",
    DdlKind.DROP_TABLE: "ERASE",
    DdlKind.RENAME_TABLE: "RENAME",
    DdlKind.TRUNCATE_TABLE: "TRUNCATE",
    DdlKind.ALTER_TABLE: "ALTER",
    DdlKind.CREATE_INDEX: "CINDEX",
    DdlKind.DROP_INDEX: "DINDEX",
}


@settings(max_examples=100, deadline=None)
@given(
    kind=st.sampled_from(list(DdlKind)),
    names=st.tuples(st.text(max_size=12), st.text(max_size=12)),
    rest=st.text(max_size=40),
    ts=st.integers(0, 2**64 - 1),
)
def test_ddl_and_watermark_round_trip(kind: DdlKind, names: tuple[str, str], rest: str, ts: int) -> None:
    sql = f"{STATEMENT_OF_KIND[kind]} {rest}"
    decoded = decode_one(encode([Ddl(kind, *names, sql, commit_ts=ts)], enable_tidb_extension=True)[0])
    assert decoded == Ddl(
        kind,
        *names,
        sql,
        commit_ts=ts,
        origin=ORIGIN,
        meta={"id": 0, "es": ts >> 18, "ts": 0, "type": CANAL_TYPE_OF_KIND.get(kind, "QUERY")},
    )
    watermark = decode_one(encode([Watermark(ts)], enable_tidb_extension=True)[0])
    assert watermark == Watermark(ts, origin=ORIGIN, meta={"id": 0, "es": ts >> 18, "ts": 0})


# --- fuzzing -------------------------------------------------------------------------------------------


def fuzz_seeds() -> list[bytes]:
    seeds = [
        line
        for path in sorted(CANAL.iterdir())
        if not path.name.endswith(".expected.txt")
        for line in message_lines(path)
    ]
    for path in sorted(CASES.glob("*_canal_*.json")):
        spec = json.loads(path.read_text())
        texts = spec.get("kafka_values_utf8", [spec.get("kafka_value_utf8")])
        seeds += [text.encode() for text in texts if text]
        if "kafka_value_json_without_doc_comments" in spec:
            seeds.append(orjson.dumps(spec["kafka_value_json_without_doc_comments"]))
    seeds.append(b"\n".join(seeds[:3]))
    return seeds


def test_fuzz_only_decode_errors_escape(vectors: Path) -> None:
    """10,000 mutants of every message in the vectors: each decodes or raises DecodeError."""
    seeds = fuzz_seeds()
    assert len(seeds) > 150
    decoder = CODEC.decoder()
    failures = 0
    for mutant in mutations(seeds, 10_000, seed=20240611):
        try:
            decoder.decode(RawMessage(None, mutant, ORIGIN))
        except DecodeError as error:
            assert error.origin == ORIGIN and error.reason
            failures += 1
    assert 0 < failures < 10_000


@pytest.mark.parametrize("compression", ["snappy", "lz4"])
def test_fuzz_compressed_values(vectors: Path, compression: str) -> None:
    compress = compressor(compression)
    seeds = [compress(seed) for seed in fuzz_seeds()[::5]]
    decoder = CODEC.decoder(large_message_handle_compression=compression)
    for mutant in mutations(seeds, 1_500, seed=7):
        try:
            decoder.decode(RawMessage(None, mutant, ORIGIN))
        except DecodeError as error:
            assert error.origin == ORIGIN


def test_every_canal_vector_is_read_by_a_test(vectors: Path) -> None:
    """Each message file of vectors/canal/ is named by a test above (Paimon's are found through
    paimon_files and test_paimon_file_contents, which globs them all); the expected-result sidecars are
    what those tests assert, transcribed or parsed."""
    source = Path(__file__).read_text()
    unused = [
        path.name
        for path in sorted(CANAL.iterdir())
        if path.name not in source
        and not path.name.startswith("paimon__canal__")
        and "expected" not in path.name.lower()
    ]
    assert unused == []


def test_decoder_follows_each_message_s_own_types_and_keys() -> None:
    """A decoder keeps what it parsed of each table's mysqlType and pkNames across messages; a
    message that changes them (a DDL upstream, another database's table of the same name) is read
    by what it says itself."""
    decoder = CODEC.decoder()

    def one(value: bytes) -> RowChange:
        (event,) = decoder.decode(RawMessage(None, value, ORIGIN))
        assert isinstance(event, RowChange)
        return event

    first = one(message(data=[{"id": "1", "c": "x"}]))
    assert first.after == {"id": 1, "c": "x"} and first.key_columns == ("id",)
    changed = one(message(data=[{"id": "1", "c": "2"}], mysqlType={"id": "varchar", "c": "int"}, pkNames=["c"]))
    assert changed.after == {"id": "1", "c": 2} and changed.key_columns == ("c",)
    assert changed.types == {"id": MySQLType.parse("varchar"), "c": MySQLType.parse("int")}
    other = one(message(data=[{"id": "3", "c": "y"}], database="other", pkNames=None))
    assert other.after == {"id": 3, "c": "y"} and other.key_columns == () and other.database == "other"
    again = one(message(data=[{"id": "4", "c": "z"}]))
    assert again.after == {"id": 4, "c": "z"} and again.key_columns == ("id",)
    with pytest.raises(DecodeError, match=r"data\[0\] column 'id': invalid literal"):
        one(message(data=[{"id": "x", "c": "z"}]))
    with pytest.raises(DecodeError, match=r'"pkNames" must be an array of column names'):
        one(message(pkNames=["id", 1]))


def test_values_the_fast_path_leaves_to_the_converters() -> None:
    """Rows are converted in one pass that passes JSON strings of text columns through; any value
    it does not take as it is goes through the column's converter, which reads it or says why not."""
    types = {"id": "int", "c": "varchar", "j": "json", "d": "double", "e": "enum", "s": "set"}
    row = {"id": "1", "c": "x", "j": {"a": [1]}, "d": True, "e": 2, "s": "5"}
    change = decode_one(message(data=[row], mysqlType=types))
    assert change.after == {"id": 1, "c": "x", "j": '{"a":[1]}', "d": 1.0, "e": 2, "s": 5}
    for column, value, reason in [
        ("c", 5, "data[0] column 'c': expected a string, got the number 5"),
        ("e", 2.5, "data[0] column 'e': expected an integer, got the number 2.5"),
        ("id", "2147483648", "data[0] column 'id': 2147483648 is outside the range of int"),
    ]:
        with pytest.raises(DecodeError) as error:
            decode(message(data=[{**row, column: value}], mysqlType=types))
        assert error.value.reason == reason
    with pytest.raises(DecodeError) as error:
        decode(message("UPDATE", [row], mysqlType=types, old=[{"c": 7}]))
    assert error.value.reason == "old[0] column 'c': expected a string, got the number 7"
    # A column old names and data leaves out is converted from old's value.
    update = decode_one(message("UPDATE", [{"id": "1"}], mysqlType=types, old=[{"id": "1", "c": "was"}]))
    assert update.before == {"id": 1, "c": "was"} and update.after == {"id": 1}


@pytest.mark.parametrize(
    "text",
    [
        "00:00:00", "23:59:59", "23:59:59.999999", "03:19:10.2", "03:19:10.269", "03:19:10.26912",
        "03:19:10.1234567", "100:00:00", "838:59:59.000000", "-01:02:03.5", "24:00:00", "03:60:00",
        "03:19:10,5", "03:19:10+01:00", "03:19:10.5Z", "03:19:10.", "3:19:10", "03:19:1x", "\u0660\u0663:19:10",
    ],
)  # fmt: skip
def test_time_values_read_as_parse_time_reads_them(text: str) -> None:
    """TIME text of the common shape takes a faster parser; every text reads as values.parse_time reads it."""
    encoded = message(data=[{"id": "1", "c": text}], mysqlType={"id": "int", "c": "time"})
    try:
        expected = parse_time(text)
    except ValueError:
        with pytest.raises(DecodeError, match="not a time"):
            decode(encoded)
    else:
        assert decode_one(encoded).after == {"id": 1, "c": expected}
