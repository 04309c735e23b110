"""The lake's Spark SQL on a real Spark: lake_cast reads every lake text back to the exact value (edge values
of each MySQL type, under a UTC and a non-UTC session time zone), and the statements of a schema
evolution plan run on an Iceberg table, resumed after a crash part-way."""

from __future__ import annotations

import datetime as dt
import math
import random
import struct
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from cdclake.model import ColumnSchema, Ddl, DdlKind, IndexSchema, TableSchema
from cdclake.schema.ddl import interpret
from cdclake.schema.lake import lake_cast, lake_text_function, lake_type
from cdclake.schema.policy import EvolutionPolicy
from cdclake.sinks.iceberg.evolution import alter_statements, plan
from cdclake.types import MySQLType
from cdclake.values import ZeroTemporal, to_float32

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
# Asia/Shanghai observed daylight saving time 1986-1991: 1988-04-10 02:30 there did not exist.
IN_SHANGHAIS_GAP = dt.datetime(1988, 4, 9, 18, 30, 0, 123456, tzinfo=dt.UTC)


def _type(text: str) -> MySQLType:
    return MySQLType.parse(text)


def _micros(instant: dt.datetime) -> int:
    return (instant - EPOCH) // dt.timedelta(microseconds=1)


# (MySQL type, values for the rows, what Spark should hold for each where it is not the value itself).
# Timestamps are compared as microseconds since the epoch: PySpark's collect turns them into the
# Python process's local time, which would hide the instant.
COLUMNS: list[tuple[str, list[Any], list[Any] | None]] = [
    ("tinyint", [-128, 127, None], None),
    ("int unsigned", [4294967295, 0, None], None),
    ("bigint", [-(2**63), 2**63 - 1, None], None),
    # DataWorks' LONG: a bigint unsigned or bit(64) value, as its unsigned digits, keeps its 64 bits in a
    # bigint column; past 64 bits, signed or unsigned, nothing holds it.
    ("bigint", [2**63, 2**64 - 1, 12345678901234567890], [-(2**63), -1, 12345678901234567890 - 2**64]),
    ("bigint", [2**64, -(2**63) - 1, None], [None, None, None]),
    ("bigint unsigned", [2**64 - 1, 0, None], None),
    ("bit(63)", [2**63 - 1, 1, None], None),
    ("bit(64)", [2**64 - 1, 0, None], None),
    ("set", [2**64 - 1, 5, None], None),
    ("enum", [65535, 1, None], None),
    ("year", [2155, 1901, None], None),
    ("decimal(38,10)", [Decimal("-9999999999999999999999999999.9999999999"), Decimal("1E-10"), None], None),
    ("decimal(20,0) unsigned", [Decimal("99999999999999999999"), Decimal("1E+5"), None], None),
    (
        "decimal(65,30)",
        [Decimal("-" + "9" * 35 + "." + "9" * 30), Decimal("1E-30"), None],
        ["-" + "9" * 35 + "." + "9" * 30, "0." + "0" * 29 + "1", None],
    ),
    ("float", [to_float32(3.4028234663852886e38), 2.0**-149, float("nan")], None),
    ("float", [float("inf"), float("-inf"), to_float32(0.1)], None),
    ("double", [5e-324, 1.7976931348623157e308, float("-inf")], None),
    ("varchar(10)", ["it's 'quoted'", "", None], None),
    ("json", ['{"a": [1, 2.5, null]}', "null", None], None),
    ("enum('a','b,c')", ["b,c", 1, None], ["b,c", "a", None]),
    ("set('a','b')", ["a,b", 2, None], ["a,b", "b", None]),
    ("varbinary(256)", [bytes(range(256)), b"", None], None),
    ("date", [dt.date(1000, 1, 1), dt.date(9999, 12, 31), ZeroTemporal("0000-00-00")], None),
    ("datetime(6)", [LATEST, dt.datetime(1000, 1, 1), ZeroTemporal("2024-00-15 10:00:00")], None),
    (
        "timestamp(6)",
        [IN_SHANGHAIS_GAP, EPOCH + dt.timedelta(microseconds=1), None],
        [_micros(IN_SHANGHAIS_GAP), 1, None],
    ),
    (
        "time(6)",
        [-dt.timedelta(hours=838, minutes=59, seconds=59), dt.timedelta(hours=838, microseconds=1), None],
        ["-838:59:59.000000", "838:00:00.000001", None],
    ),
]


def _expected(values: list[Any], expected: list[Any] | None) -> list[Any]:
    if expected is not None:
        return expected
    # A zero date becomes NULL in the lake.
    return [None if isinstance(v, ZeroTemporal) else v for v in values]


def _same(held: Any, expected: Any) -> bool:
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(held, float) and math.isnan(held)
    if isinstance(held, bytearray):
        held = bytes(held)
    # A decimal(20,0) column holds the integers of bigint unsigned, bit(64) and sets as Decimal.
    same_kind = type(held) is type(expected) or (isinstance(held, Decimal) and isinstance(expected, int))
    return same_kind and held == expected


@pytest.fixture(params=["UTC", "Asia/Shanghai"])
def session_zone(request: pytest.FixtureRequest, spark: Any) -> Iterator[str]:
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", request.param)
    yield request.param
    spark.conf.set("spark.sql.session.timeZone", before)


def test_lake_cast_reads_every_lake_text_back_exactly(spark: Any, session_zone: str) -> None:
    from pyspark.sql.types import StringType, StructField, StructType

    names = [f"c{i}" for i in range(len(COLUMNS))]
    texts = [[lake_text_function(_type(t))(v) for v in values] for t, values, _ in COLUMNS]
    rows = list(zip(*texts, strict=True))
    frame = spark.createDataFrame(rows, StructType([StructField(n, StringType()) for n in names]))
    casts = []
    for name, (type_text, _, _) in zip(names, COLUMNS, strict=True):
        cast = lake_cast(f"`{name}`", _type(type_text))
        casts.append(f"unix_micros({cast})" if type_text.startswith("timestamp") else cast)
    typed = frame.selectExpr(*(f"{cast} AS {name}" for cast, name in zip(casts, names, strict=True)))

    spark_types = {field.name: field.dataType.simpleString() for field in typed.schema.fields}
    held = typed.collect()
    for i, (name, (type_text, values, expected)) in enumerate(zip(names, COLUMNS, strict=True)):
        wanted_type = "bigint" if type_text.startswith("timestamp") else lake_type(_type(type_text))
        assert spark_types[name] == wanted_type.replace("long", "bigint"), type_text
        column = [row[i] for row in held]
        wanted = _expected(values, expected)
        assert all(map(_same, column, wanted)), f"{type_text} in {session_zone}: {column} != {wanted}"


def _float32_from_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]  # type: ignore[no-any-return]


def _float64_from_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]  # type: ignore[no-any-return]


def test_float_texts_read_back_to_the_same_bits(spark: Any) -> None:
    """Spark's cast of a FLOAT's float64 text gives the same float32, and a DOUBLE's the same double, for
    random bit patterns (subnormals and the largest values included), not only the edge values above."""
    draw = random.Random(20240601)
    float32_bits = [0, 1, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x80000001, *(draw.getrandbits(31) for _ in range(3000))]
    float64_bits = [1, 0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, *(draw.getrandbits(63) for _ in range(3000))]
    singles = [v for v in map(_float32_from_bits, float32_bits) if math.isfinite(v)]
    doubles = [v for v in map(_float64_from_bits, float64_bits) if math.isfinite(v)]
    singles += [-v for v in singles]
    doubles += [-v for v in doubles]
    as_float, as_double = lake_text_function(_type("float")), lake_text_function(_type("double"))
    rows = [(as_float(s), as_double(d)) for s, d in zip(singles, doubles, strict=False)]
    frame = spark.createDataFrame(rows, "f string, d string")
    held = frame.selectExpr(
        lake_cast("f", _type("float")) + " AS f", lake_cast("d", _type("double")) + " AS d"
    ).collect()
    # Compared as bits: float equality would take -0.0 for 0.0.
    assert [_bits(row.f) for row in held] == [_bits(v) for v in singles[: len(rows)]]
    assert [_bits(row.d) for row in held] == [_bits(v) for v in doubles[: len(rows)]]


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def _lake_columns(spark: Any, ident: str) -> dict[str, str]:
    return {f.name: f.dataType.simpleString() for f in spark.table(ident).schema.fields}


def test_an_evolution_plan_runs_on_iceberg_and_resumes_after_a_crash(spark: Any) -> None:
    ident = "lake.schema_evolution.t"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.schema_evolution")
    spark.sql(f"DROP TABLE IF EXISTS {ident}")
    spark.sql(f"CREATE TABLE {ident} (id int, qty int, score float, price decimal(10,2), total bigint, name string) "
              "USING iceberg TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"INSERT INTO {ident} VALUES (1, 5, 1.5, 12.34, 9223372036854775807, 'a'), "
              "(2, NULL, NULL, NULL, NULL, NULL)")
    mysql = TableSchema("shop", "t", tuple(ColumnSchema(n, _type(t)) for n, t in [
        ("id", "int"), ("qty", "int"), ("score", "float"), ("price", "decimal(10,2)"), ("total", "bigint"),
        ("name", "varchar(10)")]), (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),))
    alter = ("ALTER TABLE t ADD COLUMN note varchar(5) NOT NULL DEFAULT 'it''s', MODIFY qty bigint, "
             "MODIFY score double, MODIFY price decimal(12,2), MODIFY total bigint unsigned, "
             "RENAME COLUMN name TO title")
    changes = interpret(Ddl(DdlKind.ALTER_TABLE, "shop", "t", alter), mysql)
    policy = EvolutionPolicy(incompatible_type_change="rewrite")

    statements = alter_statements(ident, plan(ident, _lake_columns(spark, ident), changes, policy))
    # A crash right after the rewrite's UPDATE: the table shows both the old and the new column.
    crash = next(i for i, sql in enumerate(statements) if sql.startswith("UPDATE") and "total" in sql) + 1
    for sql in statements[:crash]:
        spark.sql(sql)
    left = alter_statements(ident, plan(ident, _lake_columns(spark, ident), changes, policy))
    for sql in left:
        spark.sql(sql)

    assert len(left) < len(statements)
    assert _lake_columns(spark, ident) == {
        "id": "int", "qty": "bigint", "score": "double", "price": "decimal(12,2)", "total": "decimal(20,0)",
        "title": "string", "note": "string",
    }
    rows = sorted((row.asDict() for row in spark.table(ident).collect()), key=lambda row: row["id"])
    assert rows == [
        {"id": 1, "qty": 5, "score": 1.5, "price": Decimal("12.34"), "total": Decimal(2**63 - 1), "title": "a",
         "note": "it's"},
        {"id": 2, "qty": None, "score": None, "price": None, "total": None, "title": None, "note": "it's"},
    ]
    assert plan(ident, _lake_columns(spark, ident), changes, policy) == []
