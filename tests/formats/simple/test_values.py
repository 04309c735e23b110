"""Simple protocol: values as the spec's mysqlType table carries them, in JSON and Avro, and the decoder's
fast paths agreeing with its careful readers."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
from decimal import Decimal
from typing import Any

import fastavro
import orjson
import pytest

from cdclake.errors import DecodeError
from cdclake.formats.base import Codec
from cdclake.model import Bootstrap, Ddl, DdlKind, LargeMessageKind, LargeMessageRef, Op, PendingRow, RowChange
from cdclake.types import MySQLType
from tests.formats.simple.helpers import (
    ALL_TYPES,
    AVRO,
    CODECS,
    JSON,
    SCHEMA_FILE,
    decode_all,
    decode_json_row,
    encode,
    only,
    raw,
)

# --- values as the spec's mysqlType table carries them ----------------------------------------------


def test_json_values_per_the_mysql_type_table() -> None:
    """Strings everywhere; TIMESTAMP an object with its location (wall clock there → UTC instant);
    binary strings base64, text plain; BIT a decimal uint64; ENUM/SET the index/bitmask, read as the
    members the schema lists; bigint unsigned up to 2**64-1; decimal(65,30) exact; NULL vs "null"."""
    row = decode_json_row({
        "id": "18446744073709551615",
        "ts": {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00.125"},
        "blob": base64.b64encode(bytes(range(256))).decode(),
        "text": "null",
        "bits": "18446744073709551615",
        "color": "2",
        "tags": "5",
        "price": "-12345678901234567890123456789012345.123456789012345678901234567890",
        "ratio": None,
    })
    assert row.after == {
        "id": 2**64 - 1,
        "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 125000, tzinfo=dt.UTC),
        "blob": bytes(range(256)),
        "text": "null",
        "bits": 2**64 - 1,
        "color": "green",
        "tags": "a,c",
        "price": Decimal("-12345678901234567890123456789012345.123456789012345678901234567890"),
        "ratio": None,
    }


def test_json_numbers_are_read_too() -> None:
    """pingcap/ticdc's encoder writes integers, BIT/ENUM/SET and floats as JSON numbers (tiflow and the
    page write strings): both read the same; a number is never taken for a string column."""
    row = decode_json_row({"id": 18446744073709551615, "bits": 5, "color": 1, "tags": 3, "ratio": 0.5})
    assert row.after == {"id": 2**64 - 1, "bits": 5, "color": "red", "tags": "a,b", "ratio": 0.5}
    with pytest.raises(DecodeError, match=r"data\.text"):
        decode_json_row({"text": 5})


def test_local_location_means_the_tz_option() -> None:
    """TiCDC running in its system zone writes location "Local", which names no zone: the tz option does."""
    row = decode_json_row({"ts": {"location": "Local", "value": "2024-01-01 08:00:00"}}, tz="+08:00")
    assert row.after == {"ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}


def test_timestamp_is_written_in_the_tz_option_with_its_location() -> None:
    instant = dt.datetime(2024, 1, 1, 0, 0, 0, 125000, tzinfo=dt.UTC)
    row = RowChange(Op.INSERT, "db", "all", None, {"id": 1, "ts": instant}, {}, commit_ts=1 << 20)
    written = orjson.loads(encode(JSON, [Bootstrap(ALL_TYPES), row], tz="Asia/Shanghai")[1])
    assert written["data"]["ts"] == {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00.125"}
    assert written["buildTs"] == 4  # no meta: the commit's physical time, commitTs >> 18


def _avro_datum(value: bytes) -> Any:
    schema = fastavro.parse_schema(json.loads(SCHEMA_FILE.read_text()))
    return fastavro.schemaless_reader(io.BytesIO(value), schema, None, return_record_name=True)


def test_avro_values_take_the_union_branches_tiflow_writes() -> None:
    """Every Avro value is a datum of the Message branch (first byte 0x16); bigint unsigned is an
    UnsignedBigint holding the int64 bits, BIT a long (two's complement past 2**63-1), ENUM/SET longs,
    FLOAT a float, binary bytes, TIMESTAMP a Timestamp record."""
    after = {"id": 2**64 - 1, "ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "blob": b"\x00\xff", "bits": 2**63,
             "color": "red", "tags": "b", "ratio": 0.5}
    row = RowChange(Op.INSERT, "db", "all", None, after, {}, commit_ts=9)
    bootstrap, value = encode(AVRO, [Bootstrap(ALL_TYPES), row])
    assert bootstrap[0] == value[0] == 0x16
    name, message = _avro_datum(value)
    assert (name, message["type"]) == ("com.pingcap.simple.avro.Message", "DML")
    data = message["payload"][1]["data"]
    assert data["id"] == ("com.pingcap.simple.avro.UnsignedBigint", {"value": -1})
    assert data["ts"] == ("com.pingcap.simple.avro.Timestamp", {"location": "UTC", "value": "2024-01-01 00:00:00.000"})
    assert [data[k] for k in ("bits", "color", "tags", "ratio", "blob")] == [-(2**63), 1, 2, 0.5, b"\x00\xff"]
    assert only(decode_all(AVRO, [bootstrap, value])[1]).after == after


@pytest.mark.parametrize(
    ("branch", "expected"),
    [
        # The spec's table: bigint unsigned past 2**63-1 as a string; tiflow: a plain long; ticdc: BIT as a string.
        ({"id": ("string", "18446744073709551615"), "bits": ("string", "7")}, {"id": 2**64 - 1, "bits": 7}),
        ({"id": ("long", -2), "bits": ("long", -1)}, {"id": 2**64 - 2, "bits": 2**64 - 1}),
    ],
)
def test_avro_reads_every_form_producers_write(branch: dict[str, Any], expected: dict[str, Any]) -> None:
    schema = fastavro.parse_schema(json.loads(SCHEMA_FILE.read_text()))
    payload = {"version": 1, "database": "db", "table": "all", "tableID": 7, "type": "INSERT", "commitTs": 5,
               "buildTs": 1, "schemaVersion": 100, "claimCheckLocation": None, "handleKeyOnly": None,
               "checksum": None, "data": branch, "old": None}
    buffer = io.BytesIO()
    datum = ("com.pingcap.simple.avro.Message", {"type": "DML", "payload": ("com.pingcap.simple.avro.DML", payload)})
    fastavro.schemaless_writer(buffer, schema, datum)
    bootstrap = encode(AVRO, [Bootstrap(ALL_TYPES)])[0]
    assert only(decode_all(AVRO, [bootstrap, buffer.getvalue()])[1]).after == expected


@pytest.mark.parametrize("codec", CODECS)
def test_large_message_refs_round_trip(codec: Codec) -> None:
    """handleKeyOnly → LargeMessageRef(HANDLE_KEY_ONLY); claimCheckLocation (TiCDC sets handleKeyOnly too)
    → CLAIM_CHECK with the location, checked first. Only the handle key came; held like any row."""
    key_only = RowChange(Op.DELETE, "db", "all", {"id": 5}, None, {}, commit_ts=7, schema_version=100)
    refs = [
        LargeMessageRef(LargeMessageKind.HANDLE_KEY_ONLY, key_only),
        LargeMessageRef(LargeMessageKind.CLAIM_CHECK, key_only, "s3:/claim-check-bucket/1b2c.json"),
    ]
    values = encode(codec, [Bootstrap(ALL_TYPES), *refs])
    decoder = codec.decoder()
    assert [type(e) for e in decoder.decode(raw(values[1]))] == [PendingRow]
    _, held = decoder.decode(raw(values[0]))
    claim = only(decoder.decode(raw(values[2])))
    assert isinstance(held, LargeMessageRef) and isinstance(claim, LargeMessageRef)
    assert (held.kind, held.location, held.row.before) == (LargeMessageKind.HANDLE_KEY_ONLY, None, {"id": 5})
    assert (claim.kind, claim.location) == (LargeMessageKind.CLAIM_CHECK, "s3:/claim-check-bucket/1b2c.json")
    if codec is JSON:
        assert orjson.loads(values[2])["handleKeyOnly"] is True
    assert encode(codec, [Bootstrap(ALL_TYPES), held, claim])[1:] == values[1:]


@pytest.mark.parametrize("codec", CODECS)
def test_checksum_is_kept_in_meta_and_written_back(codec: Codec) -> None:
    checksum = {"version": 1, "corrupted": False, "current": 4294967295, "previous": 0}
    row = RowChange(Op.INSERT, "db", "all", None, {"id": 1}, {}, commit_ts=7, meta={"buildTs": 3, "checksum": checksum})
    values = encode(codec, [Bootstrap(ALL_TYPES), row])
    decoded = only(decode_all(codec, values)[1])
    assert decoded.meta == {"buildTs": 3, "checksum": checksum}
    assert encode(codec, [Bootstrap(ALL_TYPES), decoded]) == values


@pytest.mark.parametrize(
    ("ddl_type", "sql", "kind"),
    [
        ("CREATE", "CREATE TABLE t (id int)", DdlKind.CREATE_TABLE),
        ("ERASE", "DROP TABLE t", DdlKind.DROP_TABLE),
        ("TRUNCATE", "TRUNCATE TABLE t", DdlKind.TRUNCATE_TABLE),
        ("CINDEX", "ALTER TABLE t ADD INDEX i (a)", DdlKind.CREATE_INDEX),
        ("DINDEX", "DROP INDEX i ON t", DdlKind.DROP_INDEX),
        ("QUERY", "CREATE DATABASE `shop`", DdlKind.CREATE_DATABASE),
        ("QUERY", "/* x */ drop schema if exists shop", DdlKind.DROP_DATABASE),
        ("QUERY", "CREATE VIEW v AS SELECT 1", DdlKind.OTHER),
    ],
)
@pytest.mark.parametrize("codec", CODECS)
def test_ddl_types_and_kinds(codec: Codec, ddl_type: str, sql: str, kind: DdlKind) -> None:
    """The message type decides the kind; QUERY's SQL tells database DDL apart. A DDL without any table
    schema (DROP DATABASE) names no table. Encoding a Ddl without meta derives the type from its kind."""
    ddl = Ddl(kind, "", "", sql, commit_ts=1 << 30)
    decoded = only(decode_all(codec, encode(codec, [ddl]))[0])
    assert (decoded.kind, decoded.meta["type"], decoded.sql) == (kind, ddl_type, sql)
    assert (decoded.database, decoded.table, decoded.schema_after) == ("", "", None)


# --- the decoder's fast paths agree with its careful readers -------------------------------------

FAST_PATH_INPUTS: list[Any] = [
    None, True, False, 0, 1, -1, 5, 2**63, 2**64, -(2**63) - 1, 1.5, float("nan"), [], {}, [1], "", " ", "x",
    "0", "1", "-1", "+1", " 12 ", "1_000", "１２", "²", "3.25", "-0.0", "1e3", "NaN", "Infinity", "-inf", "inf",
    "18446744073709551615", "18446744073709551616", "9223372036854775808", "-9223372036854775809",
    "2024-01-15", "2024-00-15", "0000-00-00", "2024-02-30", "2024W011", "20240115", "2024-1-15", "２024-01-15",
    "2024-01-15 08:00:00", "2024-01-15 08:00:00.5", "2024-01-15 08:00:00.123456", "2024-01-15 08:00:00.1234567",
    "2024-01-15T08:00:00", "2024-01-15 08:00:00+01:00", "2024-01-15 08:00:00.12+01", "2024-01-15 08:00:00,5",
    "0000-00-00 00:00:00", "2024-02-30 08:00:00", "2024-01-15 24:00:00", "2024-01-15 08:00:00.",
    "08:00:00", "08:00:00.1", "08:00:00.123456789", "08:00:00.1234567890", "99:99:99", "-08:00:00", "100:00:00",
    "8:00:00", "08:00:00.", "08:00:0a", "０8:00:00", "08:00:00 ", "+8:00:00", "08:00:00.1_2", "1_:00:00",
    "08:+0:00", "08:00:00.-1", "-00:00:00", "-00:00:00.000000", "-0:00:00.5", "005:07:09.25", "-838:59:59.000001",
    "999:59:59", "1000:00:00", "AAEC/w==", "AAEC/w=", "AAEC /w==", "AAEC-w==", "é", "null", "5,3",
    {"location": "UTC", "value": "2024-01-15 08:00:00.125"},
    {"location": "Asia/Shanghai", "value": "2024-01-15 08:00:00"},
    {"location": "Local", "value": "0000-00-00 00:00:00"},
    {"location": "UTC", "value": "2024-01-15T08:00:00"},
    {"location": "UTC", "value": "2024-01-15 08:00:00+01:00"},
    {"location": "UTC", "value": 5},
    {"location": 5, "value": "2024-01-15 08:00:00"},
    {"location": ["UTC"], "value": "2024-01-15 08:00:00"},
    {"value": "2024-01-15 08:00:00"},
    {"location": "UTC"},
    {"location": "Mars/Base", "value": "2024-01-15 08:00:00"},
]  # fmt: skip
FAST_PATH_TYPES = [
    "bigint", "bigint unsigned", "tinyint", "int unsigned", "year", "bit(1)", "bit(64)", "float", "double",
    "decimal(10,2)", "varchar(10)", "json", "binary(4)", "enum('a','b')", "enum", "set('a','b','c')", "set",
    "date", "datetime(6)", "timestamp(3)", "time(3)", "enum('{v}','}','x''y','\\\\')",
]  # fmt: skip


def _outcome(read: Any, raw: Any) -> Any:
    from cdclake.formats.simple.values import READ_ERRORS

    try:
        value = read(raw)
    except READ_ERRORS:
        return "fails"
    return type(value), repr(value)


@pytest.mark.parametrize("type_text", FAST_PATH_TYPES)
def test_fast_readers_take_and_return_exactly_what_the_careful_readers_do(type_text: str) -> None:
    """Every fast reader, and its inline form in a compiled image reader, against the careful reader:
    the same value of the same type, or both fail."""
    from cdclake.formats.simple.decoder import _compile_plan
    from cdclake.formats.simple.fast_path import json_fast_reader, json_inline
    from cdclake.formats.simple.values import Zones, json_reader

    mtype = MySQLType.parse(type_text)
    zones = Zones(dt.timezone(dt.timedelta(hours=2)))
    careful, fast = json_reader(mtype, zones), json_fast_reader(mtype, zones)
    plan = _compile_plan(("c",), {"c": fast}, {"c": json_inline(mtype)})
    for given in FAST_PATH_INPUTS:
        if given is None:
            continue
        expected = _outcome(careful, given)
        assert _outcome(fast, given) == expected, given
        assert _outcome(lambda r: plan({"c": r})["c"], given) == expected, given


def _all_types_image() -> dict[str, Any]:
    return {
        "id": "18446744073709551615",
        "ts": {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00.125"},
        "blob": base64.b64encode(b"\x00\xff").decode(),
        "text": "x",
        "bits": "3",
        "color": "2",
        "tags": "5",
        "price": "1.5",
        "ratio": "0.5",
    }


def test_whole_images_in_any_column_order_read_alike() -> None:
    """A whole image takes a reader compiled for its column order: every order (more than are
    compiled) reads to the same values, in the image's own order."""
    expected = decode_json_row(_all_types_image()).after
    assert expected is not None
    names = list(_all_types_image())
    for shift in range(len(names)):
        for order in (names[shift:] + names[:shift], (names[shift:] + names[:shift])[::-1]):
            data = {name: _all_types_image()[name] for name in order}
            after = decode_json_row(data).after
            assert after == expected and list(after or ()) == order
            assert all(type(after[k]) is type(expected[k]) for k in order) if after else False


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("id", "x1", "data.id (bigint(20) unsigned): 'x1' does not fit"),
        ("id", "-1", "data.id (bigint(20) unsigned): '-1' does not fit: -1 outside the range"),
        ("text", 5, "data.text (text): 5 does not fit: expected a string, got int"),
        ("price", "NaN", "data.price (decimal(65,30)): 'NaN' does not fit: not a finite decimal"),
        ("bits", 1.5, "data.bits (bit(64)): 1.5 does not fit"),
        ("blob", "AA=", "data.blob (blob): 'AA=' does not fit"),
        ("ts", {"location": "UTC", "value": "2024-13-01 00:00:00"}, "data.ts (timestamp(3))"),
    ],
)
def test_a_whole_image_that_does_not_fit_names_its_column_and_reason(column: str, value: Any, reason: str) -> None:
    data = _all_types_image()
    data[column] = value
    with pytest.raises(DecodeError) as error:
        decode_json_row(data)
    assert reason in error.value.reason
