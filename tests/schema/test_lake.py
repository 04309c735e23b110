"""MySQL types in Iceberg columns: the lake type of each MySQL type, and lake texts that read back to the
exact value (checked here with a Python reader that parses them the way Spark's casts do; the Spark
casts themselves are checked in tests/spark/test_lake_cast.py)."""

from __future__ import annotations

import base64
import datetime as dt
import math
import struct
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdclake.errors import TypeParseError
from cdclake.schema.lake import lake_cast, lake_text, lake_text_function, lake_type
from cdclake.types import Family, MySQLType
from cdclake.values import ZeroTemporal, parse_time, to_float32
from tests.strategies import TYPES, nullable_values_of


@pytest.mark.parametrize(
    ("mysql", "lake"),
    [
        ("tinyint", "int"),
        ("tinyint unsigned", "int"),
        ("smallint unsigned", "int"),
        ("mediumint unsigned", "int"),
        ("int", "int"),
        ("int unsigned", "long"),
        ("bigint", "long"),
        ("bigint unsigned", "decimal(20,0)"),
        ("bigint(20) unsigned zerofill", "decimal(20,0)"),
        ("decimal(10,4)", "decimal(10,4)"),
        ("decimal(38,10)", "decimal(38,10)"),
        ("decimal(12)", "decimal(12,0)"),
        ("decimal(39,2)", "string"),
        ("decimal(65,30)", "string"),
        ("decimal", "string"),  # precision unknown: MySQL's widest, decimal(65,30)
        ("decimal(10)", "decimal(10,0)"),
        ("decimal(38,10)", "decimal(38,10)"),
        ("float", "float"),
        ("double", "double"),
        ("varchar(10)", "string"),
        ("longtext", "string"),
        ("json", "string"),
        ("vector", "string"),
        ("enum('a','b')", "string"),
        ("set('a','b')", "string"),
        ("enum", "int"),
        ("set", "decimal(20,0)"),
        ("bit(1)", "long"),
        ("bit(63)", "long"),
        ("bit(64)", "decimal(20,0)"),
        ("bit", "decimal(20,0)"),  # width unknown
        ("year", "int"),
        ("binary(16)", "binary"),
        ("longblob", "binary"),
        ("point", "binary"),
        ("date", "date"),
        ("datetime(6)", "timestamp_ntz"),
        ("timestamp(3)", "timestamp"),
        ("time(6)", "string"),
    ],
)
def test_lake_type(mysql: str, lake: str) -> None:
    assert lake_type(MySQLType.parse(mysql)) == lake


@pytest.mark.parametrize(
    ("mysql", "value", "text"),
    [
        ("bigint unsigned", 2**64 - 1, "18446744073709551615"),
        ("bigint", -(2**63), "-9223372036854775808"),
        ("tinyint(1)", True, "1"),
        ("bit(64)", 2**64 - 1, "18446744073709551615"),
        ("decimal(65,30)", Decimal("-" + "9" * 35 + "." + "9" * 30), "-" + "9" * 35 + "." + "9" * 30),
        ("decimal(65,30)", Decimal("1E-30"), "0." + "0" * 29 + "1"),
        ("decimal(20,0)", Decimal("1E+19"), "10000000000000000000"),
        ("float", to_float32(3.4028234663852886e38), "340282346638528860000000000000000000000"),
        ("float", 2.0**-149, "0." + "0" * 44 + "1401298464324817"),
        ("float", to_float32(0.1), "0.10000000149011612"),  # exact as a float64
        ("float", -0.0, "-0"),
        ("float", float("nan"), "NaN"),
        ("float", float("inf"), "Infinity"),
        ("double", float("-inf"), "-Infinity"),
        ("double", 5e-324, "0." + "0" * 323 + "5"),
        ("double", 0.1, "0.1"),
        ("enum", 3, "3"),
        ("enum('a','b')", "b", "b"),
        ("enum('a','b')", 1, "a"),  # an index decoded without the members
        ("enum('a','b')", 0, ""),
        ("set('a','b','c')", 5, "a,c"),
        ("set", 5, "5"),
        ("json", '{"a":1}', '{"a":1}'),
        ("varbinary(3)", b"\x00\xff\x10", "AP8Q"),
        ("date", dt.date(1000, 1, 1), "1000-01-01"),
        ("datetime", dt.datetime(2024, 2, 29, 23, 59, 59), "2024-02-29 23:59:59.000000"),
        ("datetime(6)", dt.datetime(9999, 12, 31, 23, 59, 59, 999999), "9999-12-31 23:59:59.999999"),
        (
            "timestamp(6)",
            dt.datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=dt.UTC),
            "2038-01-19 03:14:07.999999",
        ),
        (
            "timestamp(6)",
            dt.datetime(2024, 1, 1, 8, 0, 0, 1, tzinfo=dt.timezone(dt.timedelta(hours=8))),
            "2024-01-01 00:00:00.000001",
        ),
        ("time(6)", -dt.timedelta(hours=838, minutes=59, seconds=59), "-838:59:59.000000"),
        ("time(3)", dt.timedelta(hours=1, microseconds=500000), "01:00:00.500000"),  # six digits whatever the fsp
        ("time", dt.timedelta(hours=1, microseconds=500000), "01:00:00.500000"),
        ("time", dt.timedelta(hours=25), "25:00:00.000000"),
    ],
)
def test_lake_text(mysql: str, value: Any, text: str) -> None:
    assert lake_text(MySQLType.parse(mysql), value) == text


def test_binary_with_every_byte_value_is_standard_base64() -> None:
    every_byte = bytes(range(256))
    text = lake_text(MySQLType.parse("blob"), every_byte)
    assert text is not None
    assert base64.b64decode(text, validate=True) == every_byte
    assert "-" not in text and "_" not in text  # standard alphabet, not URL-safe


@pytest.mark.parametrize(
    ("mysql", "zero"),
    [("date", "0000-00-00"), ("datetime", "2024-00-15 10:00:00"), ("timestamp", "0000-00-00 00:00:00")],
)
def test_zero_dates_and_null_have_no_text(mysql: str, zero: str) -> None:
    assert lake_text(MySQLType.parse(mysql), ZeroTemporal(zero)) is None
    assert lake_text(MySQLType.parse(mysql), None) is None


@pytest.mark.parametrize(
    ("mysql", "value"),
    [
        ("timestamp", dt.datetime(2024, 1, 1)),  # naive: which instant?
        ("datetime", dt.datetime(2024, 1, 1, tzinfo=dt.UTC)),  # aware: not a wall clock
        ("varchar(5)", b"bytes"),
        ("int", "12"),
        ("enum", "a"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused(mysql: str, value: Any) -> None:
    with pytest.raises((TypeParseError, TypeError)):
        lake_text(MySQLType.parse(mysql), value)


def test_lake_text_function_is_made_once_per_type() -> None:
    made = lake_text_function(MySQLType.parse("decimal(10,2)"))
    assert lake_text_function(MySQLType("decimal", length=10, decimals=2)) is made


@pytest.mark.parametrize(
    ("mysql", "sql"),
    [
        ("bigint unsigned", "try_cast(`c` AS decimal(20,0))"),
        (
            "bigint",  # the unsigned digits of 64 bits too (DataWorks' LONG), only where the cast to long fails
            "coalesce(try_cast(`c` AS long), try_cast(CASE WHEN try_cast(`c` AS decimal(20,0)) BETWEEN "
            "9223372036854775808 AND 18446744073709551615 THEN try_cast(`c` AS decimal(20,0)) - 18446744073709551616 "
            "END AS long))",
        ),
        ("int unsigned", "try_cast(`c` AS long)"),
        ("float", "try_cast(`c` AS float)"),
        ("varbinary(3)", "unbase64(`c`)"),
        ("datetime", "try_cast(`c` AS timestamp_ntz)"),
        ("timestamp", "try_cast(concat(`c`, 'Z') AS timestamp)"),
        ("time(6)", "`c`"),
        ("decimal(65,30)", "`c`"),
    ],
)
def test_lake_cast(mysql: str, sql: str) -> None:
    assert lake_cast("`c`", MySQLType.parse(mysql)) == sql


# --- every value of every type reads back --------------------------------------------------------------


def _read_float32(text: str) -> float:
    return struct.unpack("<f", struct.pack("<f", float(text)))[0]  # type: ignore[no-any-return]


_READ_LAKE_TEXT = {
    "int": int,
    "long": int,
    "float": _read_float32,
    "double": float,
    "binary": base64.b64decode,
    "date": dt.date.fromisoformat,
    "timestamp_ntz": dt.datetime.fromisoformat,
    "timestamp": lambda text: dt.datetime.fromisoformat(text + "Z"),
}


def _read_back(mtype: MySQLType, text: str) -> Any:
    """What Spark's cast makes of a lake text, as a Python value comparable with the decoded one."""
    target = lake_type(mtype)
    if target.startswith("decimal") or mtype.family is Family.DECIMAL:
        value = Decimal(text)
        return int(value) if mtype.family is not Family.DECIMAL else value
    if mtype.family is Family.TIME:
        return parse_time(text)
    if target == "string" and mtype.family in (Family.ENUM, Family.SET):
        return text
    return _READ_LAKE_TEXT.get(target, str)(text)


_NUMBERS = (Family.INTEGER, Family.BIT, Family.YEAR, Family.FLOAT, Family.DOUBLE, Family.DECIMAL)


@given(st.sampled_from(TYPES).flatmap(lambda t: st.tuples(st.just(t), nullable_values_of(t))))
def test_every_lake_text_reads_back_to_its_value(typed_value: tuple[MySQLType, Any]) -> None:
    mtype, value = typed_value
    text = lake_text(mtype, value)
    if value is None or isinstance(value, ZeroTemporal):
        assert text is None
        return
    assert text is not None
    if mtype.family in _NUMBERS:
        assert "e" not in text.lower().replace("infinity", ""), f"an exponent in {text!r}"
    read = _read_back(mtype, text)
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(read)
    else:
        assert read == value and type(read) is type(value), f"{mtype}: {value!r} → {text!r} → {read!r}"
