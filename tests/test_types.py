"""The MySQL type system: parsing every spelling the producers write, the text form of values, and the
Arrow and Spark columns that hold them."""

from __future__ import annotations

import datetime as dt
import json
import math
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.errors import OptionError, TypeParseError
from cdclake.types import Family, MySQLType
from cdclake.values import (
    ZeroTemporal,
    format_float,
    format_time,
    format_timestamp,
    parse_time,
    parse_timestamp,
    to_float32,
    value_from_text,
    value_to_text,
    zone,
)
from tests.strategies import TYPES, values_of

UTC = dt.UTC
SHANGHAI = zone("Asia/Shanghai")
PLUS_8 = zone("+08:00")
TEXT_TYPES = [t for t in TYPES if t.family not in (Family.BINARY, Family.GEOMETRY)]

# --- parsing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # TiCDC's default Canal-JSON mysqlType: the base type and the unsigned attribute only.
        ("int unsigned", MySQLType("int", unsigned=True)),
        ("decimal", MySQLType("decimal")),
        ("enum", MySQLType("enum")),
        ("set", MySQLType("set")),
        # content-compatible: the full column definition, as TiDB's GetTypeDesc writes it.
        ("decimal(10, 4)", MySQLType("decimal", length=10, decimals=4)),
        ("decimal(10,4)", MySQLType("decimal", length=10, decimals=4)),
        ("varchar(16)", MySQLType("varchar", length=16)),
        ("int(10) unsigned", MySQLType("int", unsigned=True, length=10)),
        ("bigint(20) unsigned", MySQLType("bigint", unsigned=True, length=20)),
        ("bit(64)", MySQLType("bit", length=64)),
        ("tinyint(1)", MySQLType("tinyint", length=1)),
        ("enum('a','b','c')", MySQLType("enum", elements=("a", "b", "c"))),
        ("set('a', 'b')", MySQLType("set", elements=("a", "b"))),
        # members with the quote doubled (TiDB and MySQL write it so), commas and parentheses
        ("enum('it''s','c,d','x)y','')", MySQLType("enum", elements=("it's", "c,d", "x)y", ""))),
        ("enum('a''','''b')", MySQLType("enum", elements=("a'", "'b"))),
        ("""enum("a""b",'c')""", MySQLType("enum", elements=('a"b', "c"))),
        # fractional-second precision is ``decimals``, as TiDB keeps it
        ("datetime(6)", MySQLType("datetime", decimals=6)),
        ("timestamp(3)", MySQLType("timestamp", decimals=3)),
        ("time(3)", MySQLType("time", decimals=3)),
        ("datetime(0)", MySQLType("datetime", decimals=0)),
        ("time", MySQLType("time")),
        # upper case and zerofill (Canal, Paimon's all-types table)
        ("BIGINT(16) unsigned zerofill", MySQLType("bigint", unsigned=True, zerofill=True, length=16)),
        ("INT(8) ZEROFILL", MySQLType("int", unsigned=True, zerofill=True, length=8)),
        ("DECIMAL(8, 0) unsigned", MySQLType("decimal", unsigned=True, length=8, decimals=0)),
        # synonyms
        ("BOOL", MySQLType("tinyint", length=1)),
        ("boolean", MySQLType("tinyint", length=1)),
        ("SERIAL", MySQLType("bigint", unsigned=True)),
        ("INTEGER", MySQLType("int")),
        ("int8", MySQLType("bigint")),
        ("middleint", MySQLType("mediumint")),
        ("NUMERIC(8,3)", MySQLType("decimal", length=8, decimals=3)),
        ("FIXED(40,3) unsigned", MySQLType("decimal", unsigned=True, length=40, decimals=3)),
        ("dec(5,2)", MySQLType("decimal", length=5, decimals=2)),
        ("REAL", MySQLType("double")),
        ("DOUBLE PRECISION(10,7) unsigned zerofill", MySQLType("double", True, True, 10, 7)),
        ("character varying(10)", MySQLType("varchar", length=10)),
        ("long varbinary", MySQLType("mediumblob")),
        ("tidbvectorfloat32", MySQLType("vector")),
        ("POINT", MySQLType("point")),
        ("GEOMCOLLECTION", MySQLType("geometrycollection")),
        # ``binary`` after a character type names a collation, not a binary type
        ("char(10) binary", MySQLType("char", length=10)),
        ("  varbinary( 20 )  ", MySQLType("varbinary", length=20)),
    ],
)
def test_parse_spellings(text: str, expected: MySQLType) -> None:
    assert MySQLType.parse(text) == expected


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ("char(10) binary", Family.STRING),
        ("binary(16)", Family.BINARY),
        ("longblob", Family.BINARY),
        ("multipolygon", Family.GEOMETRY),
        ("tinyint(1)", Family.INTEGER),
        ("year(4)", Family.YEAR),
        ("json", Family.JSON),
    ],
)
def test_parse_family(text: str, family: Family) -> None:
    assert MySQLType.parse(text).family is family


def _canal_mysql_types(vectors: Path) -> set[str]:
    found: set[str] = set()
    for path in sorted((vectors / "canal").iterdir()):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                message = json.loads(line)
            except ValueError:
                continue  # licence headers, comments and the expected-result sidecars
            mysql_types = message.get("mysqlType") if isinstance(message, dict) else None
            if isinstance(mysql_types, dict):
                found.update(mysql_types.values())
    return found


def test_every_mysql_type_in_the_canal_vectors_parses_and_prints_back(vectors: Path) -> None:
    spellings = _canal_mysql_types(vectors)
    assert len(spellings) > 50  # the vectors are there: Paimon's all-types table alone has ~80
    for text in spellings:
        mtype = MySQLType.parse(text)
        assert MySQLType.parse(str(mtype)) == mtype, text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "foo",
        "int(",
        "int(10",
        "int(10))",
        "int(-1)",
        "int(²)",  # str.isdigit() says yes, int() says no: must still be a TypeParseError
        "decimal(a)",
        "decimal(10,4,2)",
        "decimal(10,)",
        "int unsigned frobnicate",
        "varchar(10) character set utf8",
        "enum(a,b)",
        "enum('a'",
        "enum('a')x",
        "enum('a' b)",
        "enum('a''",
    ],
)
def test_parse_rejects(text: str) -> None:
    with pytest.raises(TypeParseError):
        MySQLType.parse(text)


def test_parse_rejects_a_long_member_list_without_backtracking() -> None:
    # Before the quoted members became atomic groups this took exponential time (seconds at 25 members).
    with pytest.raises(TypeParseError):
        MySQLType.parse("enum(" + "'a'" * 2000 + ") x!")


@pytest.mark.parametrize("mtype", TYPES, ids=str)
def test_str_round_trips(mtype: MySQLType) -> None:
    assert MySQLType.parse(str(mtype)) == mtype


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["enum", "set"]),
    st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8), max_size=6),
)
def test_members_round_trip_through_str(name: str, members: list[str]) -> None:
    mtype = MySQLType(name, elements=tuple(members))
    assert MySQLType.parse(str(mtype)) == mtype


# --- values as text ---------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Equal, and as exact as the wire needs: the sign of a zero float, every digit of a decimal."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a.as_tuple() == b.as_tuple()
    return type(a) is type(b) and bool(a == b)


@settings(max_examples=400, deadline=None)
@given(st.data(), st.sampled_from([UTC, PLUS_8, zone("-05:30")]))
def test_values_round_trip_through_text(data: st.DataObject, tz: dt.tzinfo) -> None:
    mtype = data.draw(st.sampled_from(TEXT_TYPES), label="type")
    value = data.draw(values_of(mtype), label="value")
    text = value_to_text(mtype, value, tz)
    assert _same(value_from_text(mtype, text, tz), value)
    assert value_to_text(mtype, value_from_text(mtype, text, tz), tz) == text
    if mtype.family in (Family.FLOAT, Family.DOUBLE, Family.DECIMAL):
        assert "e" not in text.lower(), "numbers are written without an exponent"


@pytest.mark.parametrize(
    ("type_text", "text", "value"),
    [
        ("bigint unsigned", "18446744073709551615", 2**64 - 1),
        ("bigint", "-9223372036854775808", -(2**63)),
        ("decimal(20,7)", "129012.1230000", Decimal("129012.1230000")),
        ("decimal(65,30)", "-" + "9" * 35 + "." + "9" * 30, Decimal("-" + "9" * 35 + "." + "9" * 30)),
        ("bit(64)", "18446744073709551615", 2**64 - 1),
        ("enum('a','b')", "2", "b"),
        ("enum('a','b')", "0", ""),
        ("enum", "2", 2),
        ("set('x','y','z')", "5", "x,z"),
        ("set", "5", 5),
        ("date", "0000-00-00", ZeroTemporal("0000-00-00")),
        ("date", "2024-00-15", ZeroTemporal("2024-00-15")),
        ("datetime", "0000-00-00 00:00:00", ZeroTemporal("0000-00-00 00:00:00")),
        ("datetime(6)", "2024-01-02 03:04:05.000006", dt.datetime(2024, 1, 2, 3, 4, 5, 6)),
        ("datetime(3)", "2024-01-02 03:04:05.120", dt.datetime(2024, 1, 2, 3, 4, 5, 120_000)),
        ("datetime", "2024-01-02 03:04:05", dt.datetime(2024, 1, 2, 3, 4, 5)),
        ("time(3)", "-838:59:59.500", -dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=500_000)),
        ("json", '{"a": [1, null]}', '{"a": [1, null]}'),
        ("varchar(10)", "null", "null"),
        ("float", "123.99", to_float32(123.99)),
    ],
)
def test_value_text_examples(type_text: str, text: str, value: Any) -> None:
    mtype = MySQLType.parse(type_text)
    assert _same(value_from_text(mtype, text, UTC), value)
    assert value_to_text(mtype, value, UTC) == text


@pytest.mark.parametrize(
    ("type_text", "text"),
    [
        ("tinyint unsigned", "256"),
        ("tinyint", "-129"),
        ("int", "1.5"),
        ("int", "abc"),
        ("decimal(10,2)", "NaN"),
        ("decimal(10,2)", "Infinity"),
        ("decimal(10,2)", "1,5"),
        ("date", "2024-02-30"),
        ("date", "2024-1-1"),
        ("datetime", "2024-01-01 24:00:00"),
        ("time", "12:00"),
        ("enum('a','b')", "3"),
        ("set('x')", "2"),
        ("blob", "abc"),
    ],
)
def test_value_from_text_rejects(type_text: str, text: str) -> None:
    with pytest.raises(TypeParseError):
        value_from_text(MySQLType.parse(type_text), text, UTC)


# --- floats as Go writes them -----------------------------------------------------------------------

FLOAT32_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
FLOAT32_TRUE_MIN = struct.unpack("<f", struct.pack("<I", 1))[0]


@pytest.mark.parametrize(
    ("value", "single", "text"),
    [
        (to_float32(123.99), True, "123.99"),  # the float32 is 123.98999786376953
        (123.99, False, "123.99"),
        (1e16, False, "10000000000000000"),
        (to_float32(1e16), True, "10000000000000000"),  # the float32 is 10000000272564224
        (5e-324, False, "0." + "0" * 323 + "5"),
        (FLOAT32_TRUE_MIN, True, "0." + "0" * 44 + "1"),
        (FLOAT32_MAX, True, "34028235" + "0" * 31),
        # a power of two: the shortest text lies in the wider half of its interval
        (2.0**-96, True, "0." + "0" * 28 + "12621775"),
        (-0.0, True, "-0"),
        (-0.0, False, "-0"),
        (0.0, False, "0"),
        (1.0, True, "1"),
        (-1.5, False, "-1.5"),
        (0.1, False, "0.1"),
        (100.0, False, "100"),
        (math.nan, False, "NaN"),
        (math.inf, True, "+Inf"),
        (-math.inf, False, "-Inf"),
    ],
)
def test_format_float_matches_go(value: float, single: bool, text: str) -> None:
    assert format_float(value, single) == text


@settings(max_examples=2000, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_format_float32_is_the_shortest_closest_text(value: float) -> None:
    # numpy's Dragon4 in unique mode is an independent implementation of the same rule as Go's Ryu.
    text = format_float(value, single=True)
    assert text == numpy.format_float_positional(numpy.float32(value), unique=True, trim="-")
    assert to_float32(float(text)) == value


@settings(max_examples=1000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_float64_is_the_shortest_closest_text(value: float) -> None:
    text = format_float(value, single=False)
    assert text == numpy.format_float_positional(numpy.float64(value), unique=True, trim="-")
    assert float(text) == value


# --- TIME and TIMESTAMP -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fsp", "value"),
    [
        ("838:59:59", 0, dt.timedelta(hours=838, minutes=59, seconds=59)),
        ("-838:59:59", 0, -dt.timedelta(hours=838, minutes=59, seconds=59)),
        ("25:00:00.5", 1, dt.timedelta(hours=25, microseconds=500_000)),
        ("-25:00:00.500", 3, -dt.timedelta(hours=25, microseconds=500_000)),
        ("-00:00:01.500000", 6, -dt.timedelta(seconds=1, microseconds=500_000)),
        ("-00:00:00.000001", 6, -dt.timedelta(microseconds=1)),
        ("100:00:01.123456", None, dt.timedelta(hours=100, seconds=1, microseconds=123_456)),
        ("00:00:00", None, dt.timedelta(0)),
    ],
)
def test_time_past_24_hours_and_negative(text: str, fsp: int | None, value: dt.timedelta) -> None:
    assert parse_time(text) == value
    assert format_time(value, fsp) == text


@pytest.mark.parametrize("tz", [PLUS_8, SHANGHAI], ids=["+08:00", "Asia/Shanghai"])
def test_timestamp_is_producer_wall_clock_moved_to_utc(tz: dt.tzinfo) -> None:
    instant = dt.datetime(2024, 1, 1, 0, 0, 0, 120_000, tzinfo=UTC)
    assert parse_timestamp("2024-01-01 08:00:00.12", tz) == instant
    assert format_timestamp(instant, tz, 3) == "2024-01-01 08:00:00.120"
    assert value_from_text(MySQLType("timestamp"), "1970-01-01 08:00:01", tz) == dt.datetime(
        1970, 1, 1, 0, 0, 1, tzinfo=UTC
    )


def test_timestamp_follows_the_zone_history() -> None:
    # China kept summer time from 1986 to 1991: +09:00 in July 1988, which a fixed +08:00 misses.
    assert parse_timestamp("1988-07-01 12:00:00", SHANGHAI) == dt.datetime(1988, 7, 1, 3, tzinfo=UTC)
    assert parse_timestamp("1988-07-01 12:00:00", PLUS_8) == dt.datetime(1988, 7, 1, 4, tzinfo=UTC)
    assert format_timestamp(dt.datetime(1988, 7, 1, 3, tzinfo=UTC), SHANGHAI) == "1988-07-01 12:00:00"


def test_zero_timestamp_stays_text() -> None:
    assert parse_timestamp("0000-00-00 00:00:00", SHANGHAI) == ZeroTemporal("0000-00-00 00:00:00")


@pytest.mark.parametrize(
    ("name", "offset"),
    [("UTC", dt.timedelta(0)), ("Z", dt.timedelta(0)), ("+08:00", dt.timedelta(hours=8)),
     ("-0530", -dt.timedelta(hours=5, minutes=30))],
)
def test_zone_offsets(name: str, offset: dt.timedelta) -> None:
    assert zone(name).utcoffset(None) == offset


@pytest.mark.parametrize("name", ["Mars/Olympus", "+8", "", "../etc/passwd"])
def test_zone_rejects(name: str) -> None:
    with pytest.raises(OptionError):
        zone(name)


def test_importing_types_does_not_import_pyarrow() -> None:
    import subprocess
    import sys

    code = "import sys, cdclake.types; sys.exit('pyarrow' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
