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

This module holds what both directions share and the readers; the writers are in
:mod:`cdclake.formats.simple.writers`, and the fast JSON readers the decoder tries first in
:mod:`cdclake.formats.simple.fast_path`.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdclake.errors import TypeParseError
from cdclake.types import Family, MySQLType
from cdclake.values import (
    ZeroTemporal,
    is_tidb_datetime_text,
    parse_date,
    parse_datetime,
    parse_decimal,
    parse_time,
    set_value,
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


READ_ERRORS = (ValueError, TypeError, KeyError, ArithmeticError)
"""What a reader raises on a value that does not fit its column (``TypeParseError``, ``binascii.Error``
and the ``OptionError`` of an unknown zone are ValueErrors; ``OverflowError`` an ArithmeticError)."""
