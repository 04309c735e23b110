"""Column values of the Simple protocol, per MySQL type, in both encodings.

TiCDC's ``encodeValue`` (JSON) writes every non-NULL value as a string, except TIMESTAMP, which is an
object ``{"location": <zone name>, "value": <wall clock in that zone>}``: integers, YEAR, BIT (as an
unsigned number), ENUM (1-based index), SET (bitmask) in decimal; FLOAT/DOUBLE as Go's
``FormatFloat(v, 'f', -1, 32|64)``; binary-charset strings (``binary``, ``varbinary``, ``*blob``) in
standard base64. pingcap/ticdc's encoder writes integers and floats as JSON numbers instead, so the
JSON readers take both.

``encodeValue4Avro`` picks a branch of the value union ``[null, long, float, double, string, bytes,
Timestamp, UnsignedBigint]``: integers, YEAR, ENUM, SET, BIT → ``long`` (a BIT past 2**63-1 as its
int64 two's complement; some pingcap/ticdc versions write BIT as a decimal ``string``, also read),
bigint unsigned → ``UnsignedBigint{value}`` (int64 two's complement; the spec's table says ``string``
past 2**63-1, also read), FLOAT → ``float``, DOUBLE → ``double``, binary strings → ``bytes``,
TIMESTAMP → ``Timestamp{location, value}``, everything else → ``string`` in the JSON text form.

A reader turns one non-NULL wire value into the Python value of :mod:`cdclake.types`; a writer does
the reverse. Readers raise one of :data:`READ_ERRORS` on a value that does not fit its column,
writers ``ValueError`` (``TypeParseError``) or ``TypeError``; the decoder and encoder turn those into
their own errors, naming the column.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from typing import Any

from cdclake.errors import TypeParseError
from cdclake.formats.compiled import DATETIME_SHAPE, TIME_SHAPE
from cdclake.types import (
    TIME_OF_DAY_DATE,
    TIME_OF_DAY_MIDNIGHT,
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
    is_tidb_datetime_text,
    parse_date,
    parse_datetime,
    parse_decimal,
    parse_time,
    set_bits,
    set_value,
    to_float32,
    zone,
)

Reader = Callable[[Any], Any]
Writer = Callable[[Any], Any]

TIMESTAMP_RECORD = "com.pingcap.simple.avro.Timestamp"
UNSIGNED_BIGINT_RECORD = "com.pingcap.simple.avro.UnsignedBigint"

UINT64_MASK = (1 << 64) - 1


def signed64(value: int) -> int:
    """A uint64 as the int64 with the same bits, the way Go's ``int64(v)`` writes it into Avro."""
    return value - (1 << 64) if value >= 1 << 63 else value


class Zones:
    """The time zones that TIMESTAMP ``location`` fields name, each resolved once.

    TiCDC writes Go's ``time.Location.String()``: an IANA name, ``UTC``, or ``Local`` when the server
    runs in its system zone — which the message cannot name, so ``Local`` means the ``tz`` option.
    """

    def __init__(self, local: dt.tzinfo) -> None:
        self.known: dict[str, dt.tzinfo] = {"Local": local, "UTC": dt.UTC}

    def get(self, name: Any) -> dt.tzinfo:
        found = self.known.get(name)
        if found is None:
            if type(name) is not str:
                raise TypeError(f"TIMESTAMP location must be a string, got {type(name).__name__}")
            found = self.known[name] = zone(name)
        return found


# --- reading ----------------------------------------------------------------------------------------
# One closure per column type, the common case inline: these run once per value.

_FLOAT32 = struct.Struct("<f")
_isfinite = math.isfinite
_fromisoformat = dt.datetime.fromisoformat
_NO_OFFSET = dt.timedelta(0)


def _text(raw: Any) -> str:
    if type(raw) is not str:
        raise TypeError(f"expected a string, got {type(raw).__name__}")
    return raw


def _date(raw: Any) -> dt.date | ZeroTemporal:
    text = _text(raw)
    # date.fromisoformat is ten times faster than the regex, but also takes ISO week dates and
    # basic forms ("2024W011", "20240101") that TiDB never writes, so only the TiDB shape may use it.
    if len(text) == 10 and text[4] == "-" and text[7] == "-":
        try:
            return dt.date.fromisoformat(text)
        except ValueError:
            pass  # zero dates and impossible dates: the exact parser decides
    return parse_date(text)


def _datetime(raw: Any) -> dt.datetime | ZeroTemporal:
    return parse_datetime(_text(raw))


def _time(raw: Any) -> dt.timedelta:
    return parse_time(_text(raw))


def _decimal(raw: Any) -> Decimal:
    return parse_decimal(_text(raw))


def _not_finite(value: float) -> TypeParseError:
    return TypeParseError(f"{value} is not a MySQL FLOAT/DOUBLE value (TiCDC writes NaN and ±Inf as 0)")


_TEXT_READERS: dict[Family, Reader] = {
    Family.DECIMAL: _decimal,
    Family.DATE: _date,
    Family.DATETIME: _datetime,
    Family.TIME: _time,
    Family.STRING: _text,
    Family.JSON: _text,
    Family.VECTOR: _text,
}


def _whole_reader(low: int, high: int, mtype: MySQLType, whole: Reader) -> Reader:
    """A whole number within [low, high]: a decimal string, or what ``whole`` takes."""

    def read(raw: Any) -> int:
        value: int = int(raw) if type(raw) is str else whole(raw)
        if low <= value <= high:
            return value
        raise TypeParseError(f"{value} outside the range of {mtype}")

    return read


def _enum_reader(mtype: MySQLType, whole: Reader) -> Reader:
    """The 1-based index as the member's name where the schema lists members (0 is MySQL's '')."""
    members = ("", *mtype.elements) if mtype.elements is not None else None

    def read(raw: Any) -> Any:
        index: int = int(raw) if type(raw) is str else whole(raw)
        if members is None:
            return index
        if 0 <= index < len(members):
            return members[index]
        raise TypeParseError(f"enum index {index} outside {mtype}")

    return read


def _set_reader(mtype: MySQLType, whole: Reader) -> Reader:
    def read(raw: Any) -> Any:
        return set_value(mtype, int(raw) if type(raw) is str else whole(raw))

    return read


def _real_reader(single: bool, real: Reader) -> Reader:
    pack, unpack = _FLOAT32.pack, _FLOAT32.unpack

    def read(raw: Any) -> float:
        value: float = float(raw) if type(raw) is str else real(raw)
        if not _isfinite(value):
            raise _not_finite(value)
        return unpack(pack(value))[0] if single else value

    return read


def _timestamp_reader(zones: Zones, parts: Callable[[Any], tuple[Any, Any]]) -> Reader:
    """A TIMESTAMP: wall clock in the zone its ``location`` names, as an aware datetime in UTC."""
    known = zones.known
    utc = dt.UTC

    def read(raw: Any) -> dt.datetime | ZeroTemporal:
        location, text = parts(raw)
        tz = known.get(location) or zones.get(location)
        if type(text) is str and is_tidb_datetime_text(text):
            # Parsed as UTC and moved by the zone's offset at that wall clock (fold 0, as
            # replace(tzinfo=tz).astimezone(UTC) does): datetime.replace costs ten parses.
            try:
                instant = _fromisoformat(text + "+00:00")
                return instant if tz is utc else instant - (tz.utcoffset(_fromisoformat(text)) or _NO_OFFSET)
            except ValueError:
                pass  # zero dates and impossible dates: the exact parser decides
        local = _datetime(text)
        if isinstance(local, ZeroTemporal):
            return local
        return local.replace(tzinfo=tz).astimezone(utc)

    return read


def _unsupported(mtype: MySQLType) -> Reader:
    def read(raw: Any) -> Any:
        raise TypeParseError(f"{mtype} values are not carried by the Simple protocol")

    return read


def _reader(
    mtype: MySQLType,
    zones: Zones,
    whole: Reader,
    uint64: Reader,
    real: Reader,
    binary: Reader,
    timestamp_parts: Callable[[Any], tuple[Any, Any]],
) -> Reader:
    """The reader of one column's non-NULL values; the arguments read what each encoding writes
    other than as a string: a whole number, a uint64, a float, bytes, a TIMESTAMP's parts."""
    family = mtype.family
    if family in _TEXT_READERS:
        return _TEXT_READERS[family]
    if family is Family.INTEGER:
        low, high = mtype.integer_range()
        return _whole_reader(low, high, mtype, uint64 if high == UINT64_MASK else whole)
    if family is Family.BIT:
        return _whole_reader(0, (1 << (mtype.length or 64)) - 1, mtype, uint64)
    if family is Family.YEAR:
        return _whole_reader(0, 2155, mtype, whole)
    if family is Family.ENUM:
        return _enum_reader(mtype, whole)
    if family is Family.SET:
        return _set_reader(mtype, whole)
    if family in (Family.FLOAT, Family.DOUBLE):
        return _real_reader(family is Family.FLOAT, real)
    if family is Family.BINARY:
        return binary
    if family is Family.TIMESTAMP:
        return _timestamp_reader(zones, timestamp_parts)
    return _unsupported(mtype)


# --- JSON -------------------------------------------------------------------------------------------


def _json_int(raw: Any) -> int:
    if type(raw) is not int:  # not a bool either
        raise TypeError(f"expected a whole number, got {type(raw).__name__}")
    return int(raw)


def _json_real(raw: Any) -> float:
    if type(raw) is not float and type(raw) is not int:
        raise TypeError(f"expected a number, got {type(raw).__name__}")
    return float(raw)


def _base64(raw: Any) -> bytes:
    return base64.b64decode(_text(raw), validate=True)


def _json_timestamp(raw: Any) -> tuple[Any, Any]:
    if type(raw) is not dict:
        raise TypeError(f'TIMESTAMP is an object {{"location", "value"}}, got {type(raw).__name__}')
    return raw["location"], raw["value"]


def json_reader(mtype: MySQLType, zones: Zones) -> Reader:
    """The reader of one column's non-NULL JSON values."""
    return _reader(mtype, zones, _json_int, _json_int, _json_real, _base64, _json_timestamp)


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


# --- fast JSON readers ---------------------------------------------------------------------------
# The decoder reads every image with these first. Each takes exactly the values its careful reader
# above takes and returns the same value; where the careful reader fails, it fails too, with one of
# READ_ERRORS but not necessarily the same message: the decoder then re-reads the image with the
# careful readers to say which column does not fit and why. Builtins stand in where they validate
# what is needed (a C call costs a fraction of a Python one).

# str.__str__ returns an exact str unchanged and raises TypeError on anything else.
_fast_text: Reader = str.__str__
# What base64.b64decode(validate=True) does to a str, minus its Python layers; any non-str raises
# TypeError (orjson gives no bytes), non-ASCII text ValueError.
_fast_base64: Reader = partial(binascii.a2b_base64, strict_mode=True)


def _fast_decimal(raw: Any) -> Decimal:
    if type(raw) is str:
        value = Decimal(raw)  # InvalidOperation (an ArithmeticError) on junk
        if value.is_finite():
            return value
    raise TypeError("not a finite decimal string")


def _fast_date(raw: Any) -> Any:
    if type(raw) is str and len(raw) == 10 and raw[4] == "-" and raw[7] == "-":
        try:
            return _fromdate(raw)
        except ValueError:
            pass
    return _date(raw)


_fromdate = dt.date.fromisoformat

# parse_time and parse_datetime take their own fast paths: the careful readers of TIME and DATETIME
# are as fast as a reader can be.
_FAST_JSON_TEXT_READERS: dict[Family, Reader] = {
    Family.DECIMAL: _fast_decimal,
    Family.DATE: _fast_date,
    Family.DATETIME: _datetime,
    Family.TIME: _time,
    Family.STRING: _fast_text,
    Family.JSON: _fast_text,
    Family.VECTOR: _fast_text,
}


def _fast_json_whole(low: int, high: int, mtype: MySQLType) -> Reader:
    def read(raw: Any) -> int:
        if type(raw) is str:
            value = int(raw)
        elif type(raw) is int:
            value = raw
        else:
            raise TypeError("expected a whole number")
        if low <= value <= high:
            return value
        raise TypeParseError(f"{value} outside the range of {mtype}")

    return read


def _fast_json_set(mtype: MySQLType) -> Reader:
    careful = _set_reader(mtype, _json_int)
    elements = mtype.elements
    if elements is None or len(elements) > 10:
        return careful
    size = 1 << len(elements)
    names = tuple(",".join(m for i, m in enumerate(elements) if bits >> i & 1) for bits in range(size))

    def read(raw: Any) -> Any:
        if type(raw) is str:
            bits = int(raw)
            if 0 <= bits < size:
                return names[bits]
        return careful(raw)

    return read


def _fast_json_timestamp(zones: Zones) -> Reader:
    careful = _timestamp_reader(zones, _json_timestamp)
    known = zones.known
    utc = dt.UTC

    def read(raw: Any) -> Any:
        if type(raw) is dict:
            text = raw.get("value")
            tz = known.get(raw.get("location"))  # type: ignore[arg-type]
            if tz is not None and type(text) is str and is_tidb_datetime_text(text):
                try:
                    instant = _fromisoformat(text + "+00:00")
                    if tz is utc:
                        return instant
                    return instant - (tz.utcoffset(_fromisoformat(text)) or _NO_OFFSET)
                except ValueError:
                    pass
        return careful(raw)

    return read


def json_fast_reader(mtype: MySQLType, zones: Zones) -> Reader:
    """The fast reader of one column's non-NULL JSON values (see above)."""
    family = mtype.family
    if family in _FAST_JSON_TEXT_READERS:
        return _FAST_JSON_TEXT_READERS[family]
    if family is Family.INTEGER:
        low, high = mtype.integer_range()
        return _fast_json_whole(low, high, mtype)
    if family is Family.BIT:
        return _fast_json_whole(0, (1 << (mtype.length or 64)) - 1, mtype)
    if family is Family.YEAR:
        return _fast_json_whole(0, 2155, mtype)
    if family is Family.SET:
        return _fast_json_set(mtype)
    if family is Family.BINARY:
        return _fast_base64
    if family is Family.TIMESTAMP:
        return _fast_json_timestamp(zones)
    return json_reader(mtype, zones)


def json_inline(mtype: MySQLType) -> str | None:
    """Python statements that read the non-NULL JSON value in variable ``{v}`` in place, exactly as the
    fast reader (in variable ``{r}``) does, for the decoder's compiled image readers; ``None`` where
    the fast reader is simply called. The statements use the names of :data:`INLINE_SCOPE`; ``{v}``
    and ``{r}`` are placeholders for ``str.format``."""
    family = mtype.family
    if family in (Family.STRING, Family.JSON, Family.VECTOR):
        return "if type({v}) is not str: raise TypeError"
    if family is Family.DECIMAL:
        return "if type({v}) is not str: raise TypeError\n{v} = Decimal({v})\nif not {v}.is_finite(): raise ValueError"
    if family in (Family.INTEGER, Family.BIT, Family.YEAR):
        if family is Family.INTEGER:
            low, high = mtype.integer_range()
        elif family is Family.BIT:
            low, high = 0, (1 << (mtype.length or 64)) - 1
        else:
            low, high = 0, 2155
        return (
            "if type({v}) is str: {v} = int({v})\n"
            "elif type({v}) is not int: raise TypeError\n"
            f"if not {low} <= {{v}} <= {high}: raise ValueError"
        )
    if family in (Family.FLOAT, Family.DOUBLE):
        # _real_reader with _json_real, inline
        text = (
            "if type({v}) is str: {v} = float({v})\n"
            "elif type({v}) is float or type({v}) is int: {v} = float({v})\n"
            "else: raise TypeError\n"
            "if not _isfinite({v}): raise ValueError"
        )
        return text + ("\n{v} = _f32_unpack(_f32_pack({v}))[0]" if family is Family.FLOAT else "")
    if family is Family.ENUM and mtype.elements is not None:
        # _enum_reader with _json_int, inline; the members are a constant tuple of str literals
        members = repr(("", *mtype.elements)).replace("{", "{{").replace("}", "}}")  # a format template
        return (
            "if type({v}) is str: _i = int({v})\n"
            "elif type({v}) is int: _i = {v}\n"
            "else: raise TypeError\n"
            f"if 0 <= _i < {len(mtype.elements) + 1}: {{v}} = {members}[_i]\n"
            "else: raise ValueError"
        )
    if family is Family.DATE:
        # _fast_date's fast path; the reader itself decides everything else
        return (
            "if type({v}) is str and len({v}) == 10 and {v}[4] == '-' and {v}[7] == '-':\n"
            "    try: {v} = _fromdate({v})\n"
            "    except ValueError: {v} = {r}({v})\n"
            "else: {v} = {r}({v})"
        )
    if family is Family.DATETIME:
        # parse_datetime's fast path, inline (the shape is types.is_tidb_datetime_text)
        return (
            f"if type({{v}}) is str and {DATETIME_SHAPE}:\n"
            "    try: _x = _fromisoformat({v})\n"
            "    except ValueError: {v} = {r}({v})\n"
            "    else: {v} = _x if _x.tzinfo is None else {r}({v})\n"
            "else: {v} = {r}({v})"
        )
    if family is Family.TIME:
        # parse_time's fast path, inline (the shape is types.is_time_of_day_text)
        return (
            f"if type({{v}}) is str and {TIME_SHAPE}:\n"
            "    try: _x = _fromisoformat(_TIME_OF_DAY_DATE + {v})\n"
            "    except ValueError: {v} = {r}({v})\n"
            "    else: {v} = _x - _MIDNIGHT if _x.tzinfo is None else {r}({v})\n"
            "else: {v} = {r}({v})"
        )
    if family is Family.TIMESTAMP:
        # The fast reader's path for the zone "UTC", which is always UTC (see Zones): the text is the
        # instant itself. Other zones, and all the rest, go to the reader.
        return (
            "if (type({v}) is dict and {v}.get('location') == 'UTC' and type(_s := {v}.get('value')) is str"
            f" and {DATETIME_SHAPE.format(v='_s')}):\n"
            "    try: {v} = _fromisoformat(_s + '+00:00')\n"
            "    except ValueError: {v} = {r}({v})\n"
            "else: {v} = {r}({v})"
        )
    return None



INLINE_SCOPE: dict[str, Any] = {
    "Decimal": Decimal,
    "_fromdate": _fromdate,
    "_fromisoformat": _fromisoformat,
    "_isfinite": _isfinite,
    "_f32_pack": _FLOAT32.pack,
    "_f32_unpack": _FLOAT32.unpack,
    "_TIME_OF_DAY_DATE": TIME_OF_DAY_DATE,
    "_MIDNIGHT": TIME_OF_DAY_MIDNIGHT,
}
"""The names :func:`json_inline` statements use."""


# --- Avro -------------------------------------------------------------------------------------------


def _avro_long(raw: Any) -> int:
    if type(raw) is not int:
        raise TypeError(f"expected a long, got {type(raw).__name__}")
    return int(raw)


def _avro_uint64(raw: Any) -> int:
    """A uint64 TiCDC wrote as a ``long`` or an ``UnsignedBigint``, both holding its int64 bits."""
    if type(raw) is int:
        return raw & UINT64_MASK
    if type(raw) is tuple and raw[0] == UNSIGNED_BIGINT_RECORD:
        return _avro_long(raw[1]["value"]) & UINT64_MASK
    raise TypeError(f"expected a long or {UNSIGNED_BIGINT_RECORD}, got {type(raw).__name__}")


def _avro_real(raw: Any) -> float:
    if type(raw) is not float:
        raise TypeError(f"expected a float or double, got {type(raw).__name__}")
    return float(raw)


def _avro_bytes(raw: Any) -> bytes:
    if type(raw) is not bytes:
        raise TypeError(f"expected bytes, got {type(raw).__name__}")
    return bytes(raw)


def _avro_timestamp(raw: Any) -> tuple[Any, Any]:
    if type(raw) is not tuple or raw[0] != TIMESTAMP_RECORD:
        raise TypeError(f"TIMESTAMP is a {TIMESTAMP_RECORD} record, got {type(raw).__name__}")
    return raw[1]["location"], raw[1]["value"]


def avro_reader(mtype: MySQLType, zones: Zones) -> Reader:
    """The reader of one column's non-NULL Avro values (the union branch as fastavro returns it)."""
    return _reader(mtype, zones, _avro_long, _avro_uint64, _avro_real, _avro_bytes, _avro_timestamp)


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
    if type(value) is not int:
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

READ_ERRORS = (ValueError, TypeError, KeyError, ArithmeticError)
"""What a reader raises on a value that does not fit its column (``TypeParseError``, ``binascii.Error``
and the ``OptionError`` of an unknown zone are ValueErrors; ``OverflowError`` an ArithmeticError)."""
