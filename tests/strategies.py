"""Hypothesis strategies for MySQL types and their exact Python values, shared by every codec's
round-trip tests. Each strategy draws a type and then values of that type, edge cases included:
bigint unsigned max, decimal(65,30), every byte 0-255, zero dates, negative time with fractions,
enum, set, bit(64), JSON text, NULL and the string "null"."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from cdclake.types import Family, MySQLType
from cdclake.values import ZeroTemporal, to_float32

INTEGER_TYPES = [
    MySQLType(name, unsigned=unsigned)
    for name in ("tinyint", "smallint", "mediumint", "int", "bigint")
    for unsigned in (False, True)
]

TYPES: list[MySQLType] = [
    *INTEGER_TYPES,
    MySQLType("tinyint", length=1),
    MySQLType("bit", length=1),
    MySQLType("bit", length=64),
    MySQLType("year"),
    MySQLType("float"),
    MySQLType("double"),
    MySQLType("decimal", length=10, decimals=4),
    MySQLType("decimal", length=65, decimals=30),
    MySQLType("decimal", length=20, decimals=0, unsigned=True),
    MySQLType("char", length=10),
    MySQLType("varchar", length=255),
    MySQLType("text"),
    MySQLType("longtext"),
    MySQLType("binary", length=16),
    MySQLType("varbinary", length=255),
    MySQLType("blob"),
    MySQLType("longblob"),
    MySQLType("enum", elements=("a", "b", "c,d", "it's")),
    MySQLType("set", elements=("x", "y", "z")),
    MySQLType("json"),
    MySQLType("date"),
    MySQLType("datetime"),
    MySQLType("datetime", decimals=6),
    MySQLType("timestamp"),
    MySQLType("timestamp", decimals=3),
    MySQLType("time"),
    MySQLType("time", decimals=6),
]

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _fraction(fsp: int | None) -> st.SearchStrategy[int]:
    step = 10 ** (6 - fsp) if fsp is not None else 1
    return st.integers(0, 999_999 // step).map(lambda n: n * step)


def _decimal(mtype: MySQLType) -> st.SearchStrategy[Decimal]:
    precision, scale = mtype.length or 10, mtype.decimals or 0
    limit = 10**precision - 1
    low = 0 if mtype.unsigned else -limit
    # From text, which is exact: Decimal.scaleb rounds to the context's 28 digits.
    return st.integers(low, limit).map(lambda n: Decimal(f"{n}E-{scale}"))


def _datetime(fsp: int | None) -> st.SearchStrategy[dt.datetime]:
    return st.builds(
        lambda d, micros: d.replace(microsecond=micros),
        st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)),
        _fraction(fsp),
    )


def values_of(mtype: MySQLType) -> st.SearchStrategy[Any]:
    """Non-NULL values of ``mtype``."""
    family = mtype.family
    if family is Family.INTEGER:
        low, high = mtype.integer_range()
        return st.sampled_from([low, high, 0]) | st.integers(low, high)
    if family is Family.BIT:
        bits = mtype.length or 1
        return st.sampled_from([0, (1 << bits) - 1]) | st.integers(0, (1 << bits) - 1)
    if family is Family.YEAR:
        return st.sampled_from([0, 1901, 2155]) | st.integers(1901, 2155)
    if family is Family.FLOAT:
        return st.floats(width=32, allow_nan=False, allow_infinity=False).map(to_float32)
    if family is Family.DOUBLE:
        return st.floats(allow_nan=False, allow_infinity=False)
    if family is Family.DECIMAL:
        return _decimal(mtype)
    if family is Family.STRING:
        return st.sampled_from(["null", "NULL", ""]) | _TEXT
    if family is Family.BINARY:
        return st.just(bytes(range(256))) | st.binary(max_size=40)
    if family is Family.ENUM:
        return st.sampled_from(mtype.elements or ())
    if family is Family.SET:
        members = mtype.elements or ()
        return st.sets(st.sampled_from(members)).map(lambda s: ",".join(m for m in members if m in s))
    if family is Family.JSON:
        return _JSON_VALUES.map(lambda v: json.dumps(v, separators=(",", ":")))
    if family is Family.DATE:
        return st.just(ZeroTemporal("0000-00-00")) | st.dates(dt.date(1000, 1, 1), dt.date(9999, 12, 31))
    if family is Family.DATETIME:
        return st.just(ZeroTemporal("0000-00-00 00:00:00")) | _datetime(mtype.decimals)
    if family is Family.TIMESTAMP:
        instants = st.datetimes(dt.datetime(1970, 1, 2), dt.datetime(2038, 1, 18))
        return st.builds(
            lambda d, micros: d.replace(microsecond=micros, tzinfo=dt.UTC), instants, _fraction(mtype.decimals)
        )
    if family is Family.TIME:
        limit = 838 * 3600 + 59 * 60 + 59
        return st.builds(
            lambda seconds, micros, negative: (-1 if negative else 1)
            * dt.timedelta(seconds=seconds, microseconds=micros),
            st.integers(0, limit),
            _fraction(mtype.decimals),
            st.booleans(),
        )
    raise NotImplementedError(f"no strategy for {mtype}")


def nullable_values_of(mtype: MySQLType) -> st.SearchStrategy[Any]:
    return st.none() | values_of(mtype)


@st.composite
def rows(draw: st.DrawFn, types: list[MySQLType] | None = None) -> tuple[dict[str, MySQLType], dict[str, Any]]:
    """A row: column types (an ``id`` bigint key first) and a value for each column."""
    chosen = draw(st.lists(st.sampled_from(types or TYPES), min_size=1, max_size=6))
    column_types = {"id": MySQLType("bigint")} | {f"c{i}_{t.name}": t for i, t in enumerate(chosen)}
    values = {name: draw(nullable_values_of(t)) for name, t in column_types.items()}
    values["id"] = draw(values_of(column_types["id"]))
    return column_types, values
