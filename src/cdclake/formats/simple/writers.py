"""The writers of the Simple protocol's column values, JSON (``encodeValue``) and Avro
(``encodeValue4Avro``): exact Python types only, so that nothing is converted silently. What each
encoding writes per MySQL type is in :mod:`cdclake.formats.simple.values`' docstring.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdclake.errors import TypeParseError
from cdclake.formats.simple.values import (
    TIMESTAMP_RECORD,
    UNSIGNED_BIGINT_RECORD,
    Writer,
    _isfinite,
    _not_finite,
    signed64,
)
from cdclake.types import (
    Family,
    MySQLType,
    ZeroTemporal,
    enum_index,
    format_date,
    format_datetime,
    format_decimal,
    format_float,
    format_time,
    format_timestamp,
    set_bits,
    to_float32,
)


def json_writer(mtype: MySQLType, tz: dt.tzinfo, location: str) -> Writer:
    """The writer of one column's non-NULL values as TiCDC's JSON ``encodeValue`` writes them."""
    family = mtype.family
    if family in (Family.INTEGER, Family.BIT, Family.YEAR):
        check = _range_check(mtype)
        return lambda value: str(check(_exact_int(value)))
    if family is Family.ENUM:
        return lambda value: str(enum_index(mtype, value))
    if family is Family.SET:
        return lambda value: str(set_bits(mtype, value))
    if family is Family.BINARY:
        return lambda value: base64.b64encode(_exact_bytes(value)).decode("ascii")
    if family is Family.TIMESTAMP:
        fsp = mtype.decimals
        return lambda value: {"location": location, "value": format_timestamp(_aware(value), tz, fsp)}
    return _TEXT_WRITERS[family](mtype)


def avro_writer(mtype: MySQLType, tz: dt.tzinfo, location: str) -> Writer:
    """The writer of one column's non-NULL values as the ``(branch, value)`` fastavro writes to the union."""
    family = mtype.family
    if family in (Family.INTEGER, Family.BIT, Family.YEAR):
        check = _range_check(mtype)
        if mtype.name == "bigint" and mtype.unsigned:
            return lambda value: (UNSIGNED_BIGINT_RECORD, {"value": signed64(check(_exact_int(value)))})
        return lambda value: ("long", signed64(check(_exact_int(value))))
    if family is Family.ENUM:
        return lambda value: ("long", enum_index(mtype, value))
    if family is Family.SET:
        return lambda value: ("long", set_bits(mtype, value))
    if family is Family.FLOAT:
        return lambda value: ("float", _exact_float(value, single=True))
    if family is Family.DOUBLE:
        return lambda value: ("double", _exact_float(value, single=False))
    if family is Family.BINARY:
        return lambda value: ("bytes", _exact_bytes(value))
    if family is Family.TIMESTAMP:
        fsp = mtype.decimals
        return lambda value: (
            TIMESTAMP_RECORD,
            {"location": location, "value": format_timestamp(_aware(value), tz, fsp)},
        )
    text = _TEXT_WRITERS[family](mtype)
    return lambda value: ("string", text(value))


# --- writing: exact types only, so that nothing is converted silently -------------------------------


def _exact_int(value: Any) -> int:
    if type(value) is not int and type(value) is not bool:  # a bool: MySQL's BOOLEAN, from DataWorks
        raise TypeError(f"expected int, got {type(value).__name__}")
    return int(value)


def _range_check(mtype: MySQLType) -> Callable[[int], int]:
    """The range check of an INTEGER, BIT or YEAR column (the same ranges the readers check)."""
    if mtype.family is Family.BIT:
        low, high = 0, (1 << (mtype.length or 64)) - 1
    elif mtype.family is Family.YEAR:
        low, high = 0, 2155
    else:
        low, high = mtype.integer_range()

    def check(value: int) -> int:
        if low <= value <= high:
            return value
        raise TypeParseError(f"{value} outside the range of {mtype}")

    return check


def _exact_float(value: Any, single: bool) -> float:
    if type(value) is not float:
        raise TypeError(f"expected float, got {type(value).__name__}")
    if not _isfinite(value):
        raise _not_finite(value)
    if single and to_float32(value) != value:
        raise TypeParseError(f"{value!r} is not a FLOAT (float32) value")
    return float(value)


def _exact_bytes(value: Any) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    return bytes(value)


def _exact_str(value: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"expected str, got {type(value).__name__}")
    return str(value)


def _aware(value: Any) -> dt.datetime | ZeroTemporal:
    if isinstance(value, ZeroTemporal):
        return value
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        raise TypeError(f"a TIMESTAMP value is an aware datetime, got {value!r}")
    return value


def _float_text(mtype: MySQLType) -> Writer:
    single = mtype.family is Family.FLOAT
    return lambda value: format_float(_exact_float(value, single), single)


def _decimal_text(mtype: MySQLType) -> Writer:
    def write(value: Any) -> str:
        if not isinstance(value, Decimal) or not value.is_finite():
            raise TypeError(f"a DECIMAL value is a finite Decimal, got {value!r}")
        return format_decimal(value)

    return write


def _date_text(mtype: MySQLType) -> Writer:
    def write(value: Any) -> str:
        if isinstance(value, dt.datetime) or not isinstance(value, dt.date | ZeroTemporal):
            raise TypeError(f"a DATE value is a date, got {value!r}")
        return format_date(value)

    return write


def _datetime_text(mtype: MySQLType) -> Writer:
    def write(value: Any) -> str:
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            raise TypeError(f"a DATETIME value is a naive datetime, got {value!r}")
        if not isinstance(value, dt.datetime | ZeroTemporal):
            raise TypeError(f"a DATETIME value is a datetime, got {value!r}")
        return format_datetime(value, mtype.decimals)

    return write


def _time_text(mtype: MySQLType) -> Writer:
    def write(value: Any) -> str:
        if not isinstance(value, dt.timedelta):
            raise TypeError(f"a TIME value is a timedelta, got {value!r}")
        return format_time(value, mtype.decimals)

    return write


def _str_text(mtype: MySQLType) -> Writer:
    return _exact_str


def _unsupported_text(mtype: MySQLType) -> Writer:
    def write(value: Any) -> str:
        raise TypeParseError(f"{mtype} values are not carried by the Simple protocol")

    return write


_TEXT_WRITERS: dict[Family, Callable[[MySQLType], Writer]] = {
    Family.FLOAT: _float_text,
    Family.DOUBLE: _float_text,
    Family.DECIMAL: _decimal_text,
    Family.DATE: _date_text,
    Family.DATETIME: _datetime_text,
    Family.TIME: _time_text,
    Family.STRING: _str_text,
    Family.JSON: _str_text,
    Family.VECTOR: _str_text,
    Family.GEOMETRY: _unsupported_text,
}
