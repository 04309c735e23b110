"""One column's value in the Open Protocol: the converters from a non-null JSON ``v`` to the Python
value of :mod:`cdclake.types` (decoding), and the writers from a Python value back to ``v`` text
(encoding), each chosen by the column's MySQL type and type code.
"""

from __future__ import annotations

import binascii
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

from cdclake.errors import TypeParseError
from cdclake.formats.open_protocol.text import go_quote, go_unquote, json_float, json_string
from cdclake.formats.open_protocol.wire import (
    _BASE64_CODES,
    _NULL_TYPE_CODE,
    _SIGNED_FAMILIES,
    _TYPE_NAMES,
    _U64_MAX,
    _YEAR_MAX,
    BINARY_FLAG,
    UNSIGNED_FLAG,
    _Invalid,
    _Unencodable,
)
from cdclake.types import (
    Family,
    MySQLType,
    ZeroTemporal,
    enum_index,
    format_date,
    format_datetime,
    format_decimal,
    format_time,
    format_timestamp,
    parse_date,
    parse_datetime,
    parse_time,
    set_bits,
    to_float32,
)


@dataclass(frozen=True, slots=True)
class _ColumnDecoding:
    """How the columns of one (type code, flags) pair decode."""

    mysql_type: MySQLType | None
    convert: Callable[[Any], Any]
    is_key: bool


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _type_of(code: int, flags: int) -> MySQLType | None:
    names = _TYPE_NAMES.get(code)
    if names is None:
        if code == _NULL_TYPE_CODE:
            return None
        raise _Invalid(f"unknown column type code {code}")
    name = names[1] if flags & BINARY_FLAG else names[0]
    mysql_type = MySQLType(name)
    if flags & UNSIGNED_FLAG and mysql_type.family in _SIGNED_FAMILIES:
        return MySQLType(name, unsigned=True)
    return mysql_type


def _integer_converter(mysql_type: MySQLType) -> Callable[[Any], Any]:
    low, high = mysql_type.integer_range()

    def convert(value: Any) -> int:
        if type(value) is int and low <= value <= high:
            return value
        raise _Invalid(f"expected {mysql_type}, an integer in [{low}, {high}], got {_describe(value)}")

    return convert


def _whole_number_converter(what: str, low: int, high: int) -> Callable[[Any], Any]:
    def convert(value: Any) -> int:
        if type(value) is int and low <= value <= high:
            return value
        raise _Invalid(f"expected {what} in [{low}, {high}], got {_describe(value)}")

    return convert


def _float_converter(single: bool) -> Callable[[Any], Any]:
    def convert(value: Any) -> float:
        if type(value) is float or type(value) is int:
            try:
                return to_float32(value) if single else float(value)
            except OverflowError:
                raise _Invalid(f"{value} is outside the {'float32' if single else 'float64'} range") from None
        raise _Invalid(f"expected a number, got {_describe(value)}")

    return convert


def _text(value: Any) -> str:
    if type(value) is str:
        return value
    raise _Invalid(f"expected a string, got {_describe(value)}")


def _quoted_bytes(value: Any) -> bytes:
    try:
        return go_unquote(_text(value))
    except ValueError as exc:
        raise _Invalid(str(exc)) from None


def _base64_bytes(value: Any) -> bytes:
    try:
        return binascii.a2b_base64(_text(value), strict_mode=True)
    except ValueError as exc:  # binascii.Error, or a non-ASCII string
        raise _Invalid(f"not standard padded base64: {exc}") from None


def _base64_text(value: Any) -> str:
    try:
        return _base64_bytes(value).decode()
    except UnicodeDecodeError as exc:
        raise _Invalid(f"a TEXT value must be UTF-8 once base64-decoded: {exc}") from None


_DECIMAL_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _decimal(value: Any) -> Decimal:
    # TiDB's MyDecimal.String(): digits with an optional fraction, never an exponent.
    if type(value) is not str or _DECIMAL_RE.fullmatch(value) is None:
        raise _Invalid(f"expected a decimal string, got {_describe(value)}")
    return Decimal(value)


_Parsed = TypeVar("_Parsed")


def _parsed(parse: Callable[[str], _Parsed]) -> Callable[[Any], _Parsed]:
    """A converter of strings read by ``parse``, one of types.py's parsers."""

    def convert(value: Any) -> _Parsed:
        try:
            return parse(_text(value))
        except TypeParseError as exc:
            raise _Invalid(str(exc)) from None

    return convert


# TiDB's Time.String() and Duration.String() layouts. fromisoformat and a plain pattern read them many
# times faster than types.py's general parsers; fromisoformat also reads layouts TiDB never writes (week
# dates, UTC offsets), so it only gets text these patterns admit. Zero dates, out-of-range fields and
# anything else go to the general parsers, which say what is wrong.
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_ISO_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?")
_DURATION = re.compile(r"(-?)([0-9]{2,3}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,6}))?")
_parse_date, _parse_datetime, _parse_time = _parsed(parse_date), _parsed(parse_datetime), _parsed(parse_time)


def _date(value: Any) -> dt.date | ZeroTemporal:
    if type(value) is str and _ISO_DATE.fullmatch(value):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    return _parse_date(value)


def _datetime(value: Any) -> dt.datetime | ZeroTemporal:
    if type(value) is str and _ISO_DATETIME.fullmatch(value):
        try:
            return dt.datetime.fromisoformat(value)
        except ValueError:
            pass
    return _parse_datetime(value)


def _time(value: Any) -> dt.timedelta:
    match = _DURATION.fullmatch(value) if type(value) is str else None
    if match is None:
        return _parse_time(value)
    sign, hours, minutes, seconds, fraction = match.groups()
    micros = int(fraction.ljust(6, "0")) if fraction else 0
    duration = dt.timedelta(0, int(hours) * 3600 + int(minutes) * 60 + int(seconds), micros)
    return -duration if sign else duration


def _timestamp_converter(tz: dt.tzinfo) -> Callable[[Any], dt.datetime | ZeroTemporal]:
    """TIMESTAMP text is wall clock in the producer's zone ``tz``: the value is that instant in UTC."""

    def convert(value: Any) -> dt.datetime | ZeroTemporal:
        local = _datetime(value)
        if isinstance(local, ZeroTemporal):
            return local
        return local.replace(tzinfo=tz).astimezone(dt.UTC)

    def convert_utc(value: Any) -> dt.datetime | ZeroTemporal:
        # With the offset in the text fromisoformat makes the aware datetime itself, several times
        # faster than replace(tzinfo=...); the pattern has made sure the text has no offset of its own.
        if type(value) is str and _ISO_DATETIME.fullmatch(value):
            try:
                return dt.datetime.fromisoformat(value + "+00:00")
            except ValueError:
                pass
        return convert(value)

    return convert_utc if tz is dt.UTC else convert


def _only_null(value: Any) -> None:
    raise _Invalid(f"this type has no values but NULL, got {_describe(value)}")


def _converter(mysql_type: MySQLType | None, code: int, tz: dt.tzinfo) -> Callable[[Any], Any]:
    """The function from a column's non-null JSON ``v`` to its Python value (types.py's table)."""
    if mysql_type is None:
        return _only_null
    family = mysql_type.family
    if family is Family.INTEGER:
        return _integer_converter(mysql_type)
    if family in (Family.FLOAT, Family.DOUBLE):
        return _float_converter(family is Family.FLOAT)
    if family is Family.BIT:
        return _whole_number_converter("a BIT value", 0, _U64_MAX)
    if family is Family.YEAR:
        return _whole_number_converter("a YEAR", 0, _YEAR_MAX)
    if family is Family.ENUM:
        return _whole_number_converter("an ENUM index", 0, _U64_MAX)
    if family is Family.SET:
        return _whole_number_converter("a SET bitmask", 0, _U64_MAX)
    if family is Family.DECIMAL:
        return _decimal
    if family is Family.DATE:
        return _date
    if family is Family.DATETIME:
        return _datetime
    if family is Family.TIMESTAMP:
        return _timestamp_converter(tz)
    if family is Family.TIME:
        return _time
    if code in _BASE64_CODES:
        return _base64_bytes if family is Family.BINARY else _base64_text
    if family is Family.BINARY:
        return _quoted_bytes
    if family is Family.GEOMETRY:
        return _only_null
    return _text  # CHAR/VARCHAR without BinaryFlag, JSON, VECTOR


# --- encoding -----------------------------------------------------------------------------------------


def _int_writer(mysql_type: MySQLType) -> Callable[[Any], str]:
    low, high = mysql_type.integer_range()

    def write(value: Any) -> str:
        if type(value) is not int and type(value) is not bool:  # a bool: MySQL's BOOLEAN, from DataWorks
            raise _Unencodable(f"a {mysql_type} value must be int, got {type(value).__name__}")
        if not low <= value <= high:
            raise _Unencodable(f"{value} is outside the range of {mysql_type}")
        return str(int(value))

    return write


def _whole_number_writer(what: str, high: int) -> Callable[[Any], str]:
    def write(value: Any) -> str:
        if type(value) is not int or not 0 <= value <= high:
            raise _Unencodable(f"{what} must be an int in [0, {high}], got {value!r}")
        return str(value)

    return write


def _float_writer(single: bool) -> Callable[[Any], str]:
    def write(value: Any) -> str:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _Unencodable(f"a float value must be float, got {type(value).__name__}")
        try:
            # A FLOAT column holds the nearest float32; that is the value written.
            return json_float(to_float32(value) if single else float(value), single)
        except OverflowError:
            raise _Unencodable(f"{value} is outside the {'float32' if single else 'float64'} range") from None

    return write


def _typed(kinds: type | tuple[type, ...], what: str, render: Callable[[Any], str]) -> Callable[[Any], str]:
    accepted = " or ".join(kind.__name__ for kind in (kinds if isinstance(kinds, tuple) else (kinds,)))

    def write(value: Any) -> str:
        if not isinstance(value, kinds) or isinstance(value, bool):
            raise _Unencodable(f"{what} must be {accepted}, got {type(value).__name__}")
        try:
            return render(value)
        except (ValueError, ArithmeticError) as exc:  # TypeParseError, a date moved past year 9999
            raise _Unencodable(str(exc)) from None

    return write


def _text_writer(value: Any) -> str:
    if type(value) is not str:
        raise _Unencodable(f"a string column takes str, got {type(value).__name__}")
    return json_string(value)


def _decimal_text(value: Decimal | int) -> str:
    decimal = Decimal(value)
    if not decimal.is_finite():
        raise _Unencodable(f"{value} is not a finite decimal")
    return json_string(format_decimal(decimal))


def _timestamp_text(mysql_type: MySQLType, tz: dt.tzinfo) -> Callable[[Any], str]:
    def render(value: dt.datetime | ZeroTemporal) -> str:
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            raise _Unencodable("a TIMESTAMP value must be a timezone-aware datetime (UTC)")
        return json_string(format_timestamp(value, tz, mysql_type.decimals))

    return render


def _datetime_text(mysql_type: MySQLType) -> Callable[[Any], str]:
    def render(value: dt.datetime | ZeroTemporal) -> str:
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            raise _Unencodable("a DATETIME value is a wall clock: a naive datetime, not an aware one")
        return json_string(format_datetime(value, mysql_type.decimals))

    return render


def _member_number(number: int) -> str:
    """An enum index or set bitmask: TiCDC writes the uint64 it stores."""
    if not 0 <= number <= _U64_MAX:
        raise _Unencodable(f"an enum index or set bitmask must be a uint64, got {number}")
    return str(number)


def _date_text(value: dt.date | ZeroTemporal) -> str:
    if isinstance(value, dt.datetime):
        raise _Unencodable("a DATE value must be a date, not a datetime")
    return json_string(format_date(value))


def _base64(data: bytes) -> str:
    return f'"{binascii.b2a_base64(data, newline=False).decode()}"'


def _geometry(value: Any) -> str:
    raise _Unencodable("TiCDC's Open Protocol does not carry GEOMETRY values, only NULL")


def _writer(mysql_type: MySQLType, code: int, tz: dt.tzinfo) -> Callable[[Any], str]:
    """The function from a column's non-null Python value to its JSON ``v`` text."""
    family = mysql_type.family
    if family is Family.INTEGER:
        return _int_writer(mysql_type)
    if family in (Family.FLOAT, Family.DOUBLE):
        return _float_writer(family is Family.FLOAT)
    if family is Family.BIT:
        return _whole_number_writer("a BIT value", _U64_MAX)
    if family is Family.YEAR:
        return _whole_number_writer("a YEAR", _YEAR_MAX)
    if family is Family.ENUM:
        return _typed((str, int), "an ENUM value", lambda value: _member_number(enum_index(mysql_type, value)))
    if family is Family.SET:
        return _typed((str, int), "a SET value", lambda value: _member_number(set_bits(mysql_type, value)))
    if family is Family.DECIMAL:
        return _typed((Decimal, int), "a DECIMAL value", _decimal_text)
    if family is Family.DATE:
        return _typed((dt.date, ZeroTemporal), "a DATE value", _date_text)
    if family is Family.DATETIME:
        return _typed((dt.datetime, ZeroTemporal), "a DATETIME value", _datetime_text(mysql_type))
    if family is Family.TIMESTAMP:
        return _typed((dt.datetime, ZeroTemporal), "a TIMESTAMP value", _timestamp_text(mysql_type, tz))
    if family is Family.TIME:
        return _typed(dt.timedelta, "a TIME value", lambda value: json_string(format_time(value, mysql_type.decimals)))
    if family is Family.GEOMETRY:
        return _geometry
    if family is Family.BINARY:
        if code in _BASE64_CODES:
            return _typed(bytes, "a BLOB value", _base64)
        return _typed(bytes, "a BINARY/VARBINARY value", lambda value: json_string(go_quote(value)))
    if code in _BASE64_CODES:
        return _typed(str, "a TEXT value", lambda value: _base64(value.encode()))
    return _text_writer  # CHAR/VARCHAR, JSON, VECTOR
