"""One column's value in Canal-JSON: the converters from a non-null JSON value (TiDB's text, or the
typed JSON of third-party producers) to the Python value of :mod:`cdclake.types`, the type a column
without ``mysqlType`` is given, and the writers of a Python value as TiDB renders it.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

import orjson

from cdclake.errors import TypeParseError
from cdclake.formats.canal_json.wire import _Invalid, _json_kind
from cdclake.types import (
    Family,
    MySQLType,
    ZeroTemporal,
    check_integer,
    enum_index,
    enum_value,
    format_date,
    format_datetime,
    format_decimal,
    format_float,
    format_time,
    format_timestamp,
    is_tidb_datetime_text,
    parse_date,
    parse_datetime,
    parse_decimal,
    parse_time,
    set_bits,
    set_value,
)

# The largest integer a JSON number read as a float64 is sure to hold exactly.
_EXACT_FLOAT_INT = 2**53

Converter = Callable[[Any], Any]
_Value = TypeVar("_Value")
Writer = Callable[[Any], str]


# --- JSON values -> Python values (decoding) ---------------------------------------------------------
#
# A converter takes one non-null JSON value of a column and returns its Python value. TiCDC and Canal
# send strings; Flink CDC, InLong and other third-party producers send typed JSON (numbers, booleans),
# which each converter accepts where the type leaves no doubt.


def _json_integer(raw: Any) -> int:
    if isinstance(raw, int):  # bool too: MySQL's TRUE is 1
        return int(raw)
    if isinstance(raw, float) and raw.is_integer() and abs(raw) <= _EXACT_FLOAT_INT:
        return int(raw)
    raise _Invalid(f"expected an integer, got {_json_kind(raw)}")


def _integer_converter(mtype: MySQLType) -> Converter:
    low, high = mtype.integer_range()

    def convert(raw: Any) -> int:
        value = int(raw) if raw.__class__ is str else _json_integer(raw)
        if low <= value <= high:
            return value
        raise _Invalid(f"{value} is outside the range of {mtype}")

    return convert


def _bit_converter(mtype: MySQLType) -> Converter:
    high = (1 << (mtype.length or 64)) - 1

    def convert(raw: Any) -> int:
        value = int(raw) if raw.__class__ is str else _json_integer(raw)
        if 0 <= value <= high:
            return value
        raise _Invalid(f"{value} is outside the range of {mtype}")

    return convert


def _year(raw: Any) -> int:
    return int(raw) if raw.__class__ is str else _json_integer(raw)


_FLOAT32 = struct.Struct("<f")
_pack_float32, _unpack_float32 = _FLOAT32.pack, _FLOAT32.unpack


def _float32(raw: Any) -> float:
    # types.to_float32, inlined: this runs once per FLOAT value.
    return _unpack_float32(_pack_float32(float(raw)))[0]  # type: ignore[no-any-return]


def _double(raw: Any) -> float:
    return float(raw)


def _decimal(raw: Any) -> Decimal:
    if raw.__class__ is str:
        value = Decimal(raw)
        if value.is_finite():
            return value
        return parse_decimal(raw)  # says why NaN or Infinity is no decimal value
    if isinstance(raw, int):
        return Decimal(raw)
    if isinstance(raw, float) and math.isfinite(raw):
        # A JSON number: the shortest decimal that reads back as the same float64 is what was written
        # wherever the producer wrote no more digits than a float64 holds.
        return Decimal(repr(raw))
    raise _Invalid(f"expected a decimal, got {_json_kind(raw)}")


def _text(raw: Any) -> str:
    if raw.__class__ is str:
        return raw
    raise _Invalid(f"expected a string, got {_json_kind(raw)}")


def _json_text(raw: Any) -> str:
    if raw.__class__ is str:
        return raw
    return orjson.dumps(raw).decode()


def _latin1_bytes(raw: Any) -> bytes:
    """TiCDC writes each byte as the code point of the same number (ISO-8859-1)."""
    if raw.__class__ is str:
        return raw.encode("latin-1")
    raise _Invalid(f"expected a string of ISO-8859-1 characters, got {_json_kind(raw)}")


# TiDB writes dates as YYYY-MM-DD and datetimes as YYYY-MM-DD HH:MM:SS[.ffffff]. Text of exactly that
# shape goes through the C parser fromisoformat; the rest (zero dates, anything malformed) through the
# types module's parsers, which know zero dates and say what is wrong.


_date_from_iso = dt.date.fromisoformat
_datetime_from_iso = dt.datetime.fromisoformat

# The shape checks are written out in each converter: they run once per value, and a call of a shape
# function costs as much as the check itself.


def _date(raw: Any) -> dt.date | ZeroTemporal:
    if raw.__class__ is str and len(raw) == 10 and raw[4] == "-" and raw[7] == "-":
        try:
            return _date_from_iso(raw)
        except ValueError:
            pass
    return _text_only(parse_date, raw)


def _naive_datetime(raw: Any) -> dt.datetime | ZeroTemporal:
    return _text_only(parse_datetime, raw)


def _timestamp_converter(tz: dt.tzinfo) -> Converter:
    """TIMESTAMP text is wall clock in the producer's zone ``tz``; its value is the instant, in UTC.

    In a zone of fixed offset, fromisoformat reads the text with the offset appended; a zone with
    daylight saving time goes through zoneinfo (slower: datetime.replace and astimezone).
    """
    offset = tz.utcoffset(None)
    suffix = None if offset is None else _offset_text(offset)

    utc = offset == _ZERO

    def convert(raw: Any) -> dt.datetime | ZeroTemporal:
        if suffix is not None and raw.__class__ is str and is_tidb_datetime_text(raw):
            try:
                instant = _datetime_from_iso(raw + suffix)
            except ValueError:
                pass
            else:
                return instant if utc else instant.astimezone(dt.UTC)
        local = _naive_datetime(raw)
        if isinstance(local, ZeroTemporal):
            return local
        return local.replace(tzinfo=tz).astimezone(dt.UTC)

    return convert


_ZERO = dt.timedelta(0)


def _offset_text(offset: dt.timedelta) -> str:
    sign = "-" if offset < _ZERO else "+"
    minutes, seconds = divmod(int(abs(offset).total_seconds()), 60)
    text = f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    return text if not seconds else f"{text}:{seconds:02d}"


def _text_only(parse: Callable[[str], _Value], raw: Any) -> _Value:
    if raw.__class__ is str:
        return parse(raw)
    raise _Invalid(f"expected a string, got {_json_kind(raw)}")


def _time(raw: Any) -> dt.timedelta:
    return _text_only(parse_time, raw)  # which reads TiDB's HH:MM:SS[.ffffff] through the C parser


def _enum_converter(mtype: MySQLType) -> Converter:
    def convert(raw: Any) -> str | int:
        return enum_value(mtype, int(raw) if raw.__class__ is str else _json_integer(raw))

    return convert


def _set_converter(mtype: MySQLType) -> Converter:
    def convert(raw: Any) -> str | int:
        return set_value(mtype, int(raw) if raw.__class__ is str else _json_integer(raw))

    return convert


def _converter(mtype: MySQLType, tz: dt.tzinfo) -> Converter:
    """The converter for a column of ``mtype``; TIMESTAMP text is wall clock in ``tz``."""
    family = mtype.family
    if family is Family.INTEGER:
        return _integer_converter(mtype)
    if (family is Family.ENUM or family is Family.SET) and mtype.elements is None:
        return _year  # enum_value and set_value return a bare type's index or bitmask as it is
    if family is Family.ENUM:
        return _enum_converter(mtype)
    if family is Family.SET:
        return _set_converter(mtype)
    if family is Family.BIT:
        return _bit_converter(mtype)
    if family is Family.TIMESTAMP:
        return _timestamp_converter(tz)
    simple: dict[Family, Converter] = {
        Family.YEAR: _year,
        Family.FLOAT: _float32,
        Family.DOUBLE: _double,
        Family.DECIMAL: _decimal,
        Family.STRING: _text,
        Family.VECTOR: _text,
        Family.JSON: _json_text,
        Family.BINARY: _latin1_bytes,
        Family.GEOMETRY: _latin1_bytes,
        Family.DATE: _date,
        Family.DATETIME: _naive_datetime,
        Family.TIME: _time,
    }
    return simple[family]


# The type a column without mysqlType gets from the JSON values it holds (documented in canal-json.md).
_BIGINT, _BIGINT_UNSIGNED = MySQLType("bigint"), MySQLType("bigint", unsigned=True)
_TYPE_OF_JSON_KIND = {
    bool: MySQLType("tinyint", length=1),
    int: _BIGINT,
    float: MySQLType("double"),
    str: MySQLType("longtext"),
    dict: MySQLType("json"),
    list: MySQLType("json"),
}


def _inferred_type(name: str, values: list[Any]) -> MySQLType:
    kinds = {value.__class__ for value in values}
    if kinds <= {bool, int} and int in kinds:
        # Only a bigint unsigned holds the upper half of uint64.
        return _BIGINT_UNSIGNED if max(values) > _BIGINT.integer_range()[1] else _BIGINT
    if kinds == {int, float}:
        return _TYPE_OF_JSON_KIND[float]
    if kinds <= {dict, list}:
        return _TYPE_OF_JSON_KIND[dict]
    if len(kinds) == 1:
        return _TYPE_OF_JSON_KIND[kinds.pop()]
    found = ", ".join(sorted(kind.__name__ for kind in kinds))
    raise _Invalid(f"column {name!r} has no mysqlType and its values mix JSON kinds ({found})")


_CONVERSION_ERRORS = (ValueError, TypeError, OverflowError, ArithmeticError)


# --- Python values -> TiDB's text (encoding) ------------------------------------------------------


def _integer_writer(mtype: MySQLType) -> Writer:
    def write(value: Any) -> str:
        if not isinstance(value, int):
            raise TypeParseError(f"a {mtype} value must be an int, got {type(value).__name__}")
        return str(check_integer(mtype, int(value)))  # a bool (MySQL's BOOLEAN, from DataWorks) as 1 or 0

    return write


def _bit_writer(mtype: MySQLType) -> Writer:
    high = (1 << (mtype.length or 64)) - 1

    def write(value: Any) -> str:
        if not isinstance(value, int) or not 0 <= value <= high:
            raise TypeParseError(f"{value!r} is not a {mtype} value")
        return str(value)

    return write


def _write_year(value: Any) -> str:
    if not isinstance(value, int):
        raise TypeParseError(f"a year must be an int, got {type(value).__name__}")
    return str(value)


def _write_decimal(value: Any) -> str:
    if isinstance(value, int):
        value = Decimal(value)
    if not isinstance(value, Decimal) or not value.is_finite():
        raise TypeParseError(f"a decimal value must be a finite Decimal, got {value!r}")
    return format_decimal(value)


def _write_text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeParseError(f"a text value must be str, got {type(value).__name__}")
    return value


def _write_latin1(value: Any) -> str:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeParseError(f"a binary value must be bytes, got {type(value).__name__}")
    return bytes(value).decode("latin-1")


def _timestamp_writer(mtype: MySQLType, tz: dt.tzinfo) -> Writer:
    def write(value: Any) -> str:
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            raise TypeParseError("a timestamp value must be an aware datetime (an instant), got a naive one")
        return format_timestamp(value, tz, mtype.decimals)

    return write


def _writer(mtype: MySQLType, tz: dt.tzinfo) -> Writer:
    """The function that renders a non-null value of ``mtype`` as TiDB does (the inverse of _converter)."""
    family = mtype.family
    if family is Family.INTEGER:
        return _integer_writer(mtype)
    if family is Family.BIT:
        return _bit_writer(mtype)
    if family is Family.TIMESTAMP:
        return _timestamp_writer(mtype, tz)
    fsp = mtype.decimals
    writers: dict[Family, Writer] = {
        Family.YEAR: _write_year,
        Family.FLOAT: lambda value: format_float(float(value), single=True),
        Family.DOUBLE: lambda value: format_float(float(value), single=False),
        Family.DECIMAL: _write_decimal,
        Family.ENUM: lambda value: str(enum_index(mtype, value)),
        Family.SET: lambda value: str(set_bits(mtype, value)),
        Family.STRING: _write_text,
        Family.VECTOR: _write_text,
        Family.JSON: _write_text,
        Family.BINARY: _write_latin1,
        Family.GEOMETRY: _write_latin1,
        Family.DATE: lambda value: format_date(_temporal(value, dt.date)),
        Family.DATETIME: lambda value: format_datetime(_temporal(value, dt.datetime), fsp),
        Family.TIME: lambda value: format_time(_temporal(value, dt.timedelta), fsp),
    }
    return writers[family]


def _temporal(value: Any, kind: type) -> Any:
    if isinstance(value, kind | ZeroTemporal):
        return value
    raise TypeParseError(f"expected a {kind.__name__}, got {type(value).__name__}")
