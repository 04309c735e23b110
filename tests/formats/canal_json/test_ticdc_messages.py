"""Canal-JSON: TiCDC's own messages (the spec's examples, Go test literals, the Canal cases 07-18 of
vectors/ticdc-cases/) and TiCDC's encoder test's exact field values for every MySQL type."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdclake.errors import DecodeError, EncodeError
from cdclake.formats.canal_json.wire import go_json_string
from cdclake.model import Ddl, DdlKind, LargeMessageKind, LargeMessageRef, Op, Watermark
from cdclake.types import MySQLType
from cdclake.values import to_float32
from tests.formats.canal_json.helpers import (
    CANAL,
    ORIGIN,
    assert_case_row,
    assert_reencodes,
    case,
    decode,
    decode_one,
    encode,
    message_lines,
    normalised_types,
    rows_of,
)

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
