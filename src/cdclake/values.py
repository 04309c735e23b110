"""Values of MySQL types (:mod:`cdclake.types`) as Python holds them, and the text form TiDB renders
them in (``Time.String()``, ``Duration.String()``, ``strconv.FormatFloat``): the functions here turn that
text into one exact Python value and back:

=================  ==============================================================
MySQL type         Python value
=================  ==============================================================
integer types      ``int`` of any size (bigint unsigned up to 2**64-1)
bit(n)             ``int`` (the bits as an unsigned number)
year               ``int``
float, double      ``float`` (a FLOAT is always a float32 value)
decimal(p,s)       ``decimal.Decimal`` with every digit the producer wrote
char/varchar/text  ``str``
binary/blob        ``bytes``
enum, set          ``str`` (member names, set members joined by ``,``) when the type
                   lists its members; else ``int`` (1-based index, bitmask)
json               ``str`` (the JSON text)
date               ``datetime.date``
datetime           naive ``datetime.datetime``
timestamp          ``datetime.datetime`` in UTC (the producer's wall clock, moved
                   to UTC with the producer's time zone)
time               ``datetime.timedelta`` (negative and over 24 hours allowed)
zero dates         :class:`ZeroTemporal` (``0000-00-00``, ``2024-00-15`` ...)
NULL               ``None``
=================  ==============================================================

Which lake column holds each type is :mod:`cdclake.schema.lake`'s to say (its table).

**Zero dates.** A :class:`ZeroTemporal` (``0000-00-00``, ``2024-00-15 10:00:00``) names no day, so no
date or timestamp column can hold it: the lake stores NULL, as MySQL Connector/J
(``zeroDateTimeBehavior=CONVERT_TO_NULL``) and Debezium do, even in a NOT NULL column. The decoded
event keeps the exact text for whoever needs it.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal, InvalidOperation
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cdclake.errors import OptionError, TypeParseError
from cdclake.types import Family, MySQLType

# --- time zones -------------------------------------------------------------------------------------


def zone(name: str) -> dt.tzinfo:
    """The producer time zone TIMESTAMP values were rendered in: an IANA name, ``UTC`` or ``+08:00``."""
    if name.upper() in ("UTC", "Z"):
        return dt.UTC
    offset = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", name)
    if offset:
        sign = -1 if offset[1] == "-" else 1
        return dt.timezone(sign * dt.timedelta(hours=int(offset[2]), minutes=int(offset[3])))
    # ZoneInfo opens the name as a path under the tz database: "America" is a directory there
    # (IsADirectoryError), 100 KB of text too long a file name (OSError). Only a name of an IANA zone's
    # shape reaches it, and any OSError left (a directory such as "Etc") is an unknown zone too.
    try:
        if len(name) > _MAX_ZONE_NAME or _ZONE_NAME.fullmatch(name) is None:
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise OptionError(f"unknown time zone {name[:60]!r}: use an IANA name, UTC or +HH:MM") from exc


# IANA zone names: ASCII words joined by "/" (America/Argentina/ComodRivadavia, Etc/GMT+5); the longest
# has 32 characters.
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")
_MAX_ZONE_NAME = 64


# --- temporal values --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZeroTemporal:
    """A MySQL date or datetime with a zero part (``0000-00-00``, ``2024-00-15 10:00:00``).

    Python's dates cannot hold these, and MySQL allows them, so they travel as their exact text.
    """

    text: str

    def isoformat(self) -> str:
        return self.text


_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_DATETIME_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")
_TIME_RE = re.compile(r"(-)?(\d{1,3}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")


def _micros(fraction: str | None) -> int:
    return int((fraction or "").ljust(6, "0")[:6])


def parse_date(text: str) -> dt.date | ZeroTemporal:
    match = _DATE_RE.fullmatch(text)
    if match is None:
        raise TypeParseError(f"not a date: {text!r}")
    year, month, day = (int(g) for g in match.groups())
    if year == 0 or month == 0 or day == 0:
        return ZeroTemporal(text)
    try:
        return dt.date(year, month, day)
    except ValueError as exc:
        raise TypeParseError(f"not a date: {text!r}") from exc


def is_tidb_datetime_text(text: str) -> bool:
    """Whether ``text`` is shaped as TiDB writes a DATETIME: ``YYYY-MM-DD HH:MM:SS`` plus ``.`` and 1-6
    fraction digits. Only that shape may take datetime.fromisoformat (ten times faster than the
    pattern), which would also take ISO week dates, ``T``, ``,`` and zone suffixes."""
    size = len(text)
    # text[4:17:3] holds the characters at 4, 7, 10, 13 and 16: one slice costs half of five subscripts.
    return (size == 19 or (21 <= size <= 26 and text[19] == ".")) and text[4:17:3] == "-- ::"


_datetime_from_iso = dt.datetime.fromisoformat


def parse_datetime(text: str) -> dt.datetime | ZeroTemporal:
    """A DATETIME text, ``YYYY-MM-DD HH:MM:SS[.ffffff]``, as a naive datetime."""
    if is_tidb_datetime_text(text):
        try:
            value = _datetime_from_iso(text)
        except ValueError:
            pass  # zero dates and impossible dates: the pattern below decides
        else:
            if value.tzinfo is None:
                return value
    match = _DATETIME_RE.fullmatch(text)
    if match is None:
        raise TypeParseError(f"not a datetime: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    if year == 0 or month == 0 or day == 0:
        return ZeroTemporal(text)
    try:
        return dt.datetime(year, month, day, hour, minute, second, _micros(match[7]))
    except ValueError as exc:
        raise TypeParseError(f"not a datetime: {text!r}") from exc


def parse_timestamp(text: str, tz: dt.tzinfo) -> dt.datetime | ZeroTemporal:
    """A TIMESTAMP text, wall clock in the producer's zone ``tz``, as an aware datetime in UTC."""
    local = parse_datetime(text)
    if isinstance(local, ZeroTemporal):
        return local
    return local.replace(tzinfo=tz).astimezone(dt.UTC)


def is_time_of_day_text(text: str) -> bool:
    """Whether ``text`` is shaped as TiDB writes a TIME of two-digit hours: ``HH:MM:SS`` plus ``.`` and
    1-6 fraction digits. Only that shape may take datetime.fromisoformat as a time of day (five times
    faster than the pattern), which would also take ``,`` before the fraction and zone suffixes."""
    size = len(text)
    return (size == 8 or (10 <= size <= 15 and text[8] == ".")) and text[2:6:3] == "::"


# A TIME of the shape above is read as the time of day on this date, less its midnight.
TIME_OF_DAY_DATE = "1970-01-01T"
TIME_OF_DAY_MIDNIGHT = dt.datetime(1970, 1, 1)


def parse_time(text: str) -> dt.timedelta:
    """A TIME text, ``[-]HHH:MM:SS[.ffffff]``, as a timedelta (negative and past 24 hours allowed)."""
    if is_time_of_day_text(text):
        try:
            clock = _datetime_from_iso(TIME_OF_DAY_DATE + text)
        except ValueError:
            pass  # hours past 23, minutes or seconds past 59, non-digits: the pattern below decides
        else:
            if clock.tzinfo is None:
                return clock - TIME_OF_DAY_MIDNIGHT
    match = _TIME_RE.fullmatch(text)
    if match is None:
        raise TypeParseError(f"not a time: {text!r}")
    sign, hours, minutes, seconds, fraction = match.groups()
    # Positional (days, seconds, microseconds): keyword arguments make timedelta twice as slow.
    magnitude = dt.timedelta(0, int(hours) * 3600 + int(minutes) * 60 + int(seconds), _micros(fraction))
    return -magnitude if sign else magnitude


def _fraction(micros: int, fsp: int | None) -> str:
    if fsp is None:
        return f".{micros:06d}" if micros else ""
    return f".{micros:06d}"[: fsp + 1] if fsp else ""


def format_date(value: dt.date | ZeroTemporal) -> str:
    if isinstance(value, ZeroTemporal):
        return value.text
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def format_datetime(value: dt.datetime | ZeroTemporal, fsp: int | None = None) -> str:
    """TiDB's ``Time.String()``: fraction digits = the column's fsp (all six, or none, if unknown)."""
    if isinstance(value, ZeroTemporal):
        return value.text
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}{_fraction(value.microsecond, fsp)}"
    )


def format_timestamp(value: dt.datetime | ZeroTemporal, tz: dt.tzinfo, fsp: int | None = None) -> str:
    """An aware TIMESTAMP value as wall clock in the producer's zone ``tz``."""
    if isinstance(value, ZeroTemporal):
        return value.text
    return format_datetime(value.astimezone(tz).replace(tzinfo=None), fsp)


def format_time(value: dt.timedelta, fsp: int | None = None) -> str:
    """TiDB's ``Duration.String()``: ``[-]HH:MM:SS[.fff]``, hours may run past 24."""
    micros = abs(value) // dt.timedelta(microseconds=1)
    seconds, fraction = divmod(micros, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    sign = "-" if value < dt.timedelta(0) else ""
    return f"{sign}{hours:02d}:{minute:02d}:{second:02d}{_fraction(fraction, fsp)}"


# --- numbers ----------------------------------------------------------------------------------------

_FLOAT32 = struct.Struct("<f")
_FLOAT32_BITS = struct.Struct("<I")


def to_float32(value: float) -> float:
    """The nearest float32, as a Python float (FLOAT columns hold nothing finer)."""
    return float(_FLOAT32.unpack(_FLOAT32.pack(value))[0])


def format_float(value: float, single: bool) -> str:
    """Go's ``strconv.FormatFloat(v, 'f', -1, 32|64)``: the shortest text that reads back the same
    float32 (``single``) or float64, the closest to it of those, in plain notation without an exponent
    (``123.99``, ``10000000000000000``, ``-0``); ``NaN``, ``+Inf`` and ``-Inf`` as Go spells them."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else "+Inf" if value > 0 else "-Inf"
    if single:
        return format(_shortest_float32(value), "f")
    # Python's repr is the shortest float64 text that reads back the same, closest first, like Go's.
    text = repr(value)
    if "e" in text:
        return format(Decimal(text), "f")
    return text[:-2] if text.endswith(".0") else text


def _shortest_float32(value: float) -> Decimal:
    """The shortest decimal that rounds to the float32 ``value``, the closest to it of those.

    Decided on exact decimals against the interval of reals that round to ``value`` (its ends, halfway
    to the neighbouring float32s, belong to it when its mantissa is even). A float64 round trip of
    ``f"{value:.{n}g}"`` is not enough: at a power of two the interval is twice as wide above as below,
    so the nearest n-digit decimal can miss it while the next one up fits (2**-96 is 1.2621775e-29).
    """
    if value == 0:
        return Decimal(value)  # keeps the sign: Go writes -0
    magnitude = abs(value)
    bits = _FLOAT32_BITS.unpack(_FLOAT32.pack(magnitude))[0]
    below = _FLOAT32.unpack(_FLOAT32_BITS.pack(bits - 1))[0]
    above = _FLOAT32.unpack(_FLOAT32_BITS.pack(bits + 1))[0]
    if math.isinf(above):  # the largest float32: its interval is as wide above as below
        above = 2 * magnitude - below
    # Halfway between neighbouring float32s takes 25 bits: exact in a float64, and so in a Decimal.
    low, high = Decimal((below + magnitude) / 2), Decimal((magnitude + above) / 2)
    ends_included = bits % 2 == 0
    exact = Decimal(magnitude)
    digits = 0
    while True:  # nine digits always suffice
        digits += 1
        nearest = Context(prec=digits, rounding=ROUND_HALF_EVEN).plus(exact)
        other_way = ROUND_FLOOR if nearest > exact else ROUND_CEILING
        for candidate in (nearest, Context(prec=digits, rounding=other_way).plus(exact)):
            if low < candidate < high or (ends_included and candidate in (low, high)):
                return candidate.copy_sign(Decimal(value))


def parse_decimal(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise TypeParseError(f"not a decimal: {text!r}") from exc
    if not value.is_finite():
        raise TypeParseError(f"not a finite decimal: {text!r}")
    return value


def format_decimal(value: Decimal) -> str:
    """Every digit, never an exponent: ``Decimal('1E+2')`` is ``100``."""
    return format(value, "f")


def enum_value(mtype: MySQLType, index: int) -> str | int:
    """An enum's 1-based index as its member name where the type lists members (0 is MySQL's ``''``)."""
    if mtype.elements is None:
        return index
    if index == 0:
        return ""
    if not 1 <= index <= len(mtype.elements):
        raise TypeParseError(f"enum index {index} outside {mtype}")
    return mtype.elements[index - 1]


def enum_index(mtype: MySQLType, value: str | int) -> int:
    if isinstance(value, int):
        return value
    if value == "":
        return 0
    if mtype.elements is None or value not in mtype.elements:
        raise TypeParseError(f"{value!r} is not a member of {mtype}")
    return mtype.elements.index(value) + 1


def set_value(mtype: MySQLType, bits: int) -> str | int:
    """A set's bitmask as its comma-joined member names where the type lists members."""
    if mtype.elements is None:
        return bits
    if bits >> len(mtype.elements):
        raise TypeParseError(f"set bitmask {bits} outside {mtype}")
    return ",".join(m for i, m in enumerate(mtype.elements) if bits >> i & 1)


def set_bits(mtype: MySQLType, value: str | int) -> int:
    if isinstance(value, int):
        return value
    if value == "":
        return 0
    if mtype.elements is None:
        raise TypeParseError(f"set members {value!r} given but {mtype} lists none")
    bits = 0
    for member in value.split(","):
        if member not in mtype.elements:
            raise TypeParseError(f"{member!r} is not a member of {mtype}")
        bits |= 1 << mtype.elements.index(member)
    return bits


def check_integer(mtype: MySQLType, value: int) -> int:
    low, high = mtype.integer_range()
    if not low <= value <= high:
        raise TypeParseError(f"{value} outside the range of {mtype}")
    return value


# --- the common text form ---------------------------------------------------------------------------


def value_from_text(mtype: MySQLType, text: str, tz: dt.tzinfo) -> Any:
    """The Python value of ``text``, a value rendered the way TiDB renders it as a string.

    Binary types are not handled here: every format wraps their bytes its own way (ISO-8859-1,
    base64, Go quoting) and passes the bytes on directly.
    """
    family = mtype.family
    try:
        if family is Family.INTEGER:
            return check_integer(mtype, int(text))
        if family in (Family.BIT, Family.YEAR):
            return int(text)
        if family is Family.FLOAT:
            return to_float32(float(text))
        if family is Family.DOUBLE:
            return float(text)
        if family is Family.ENUM:
            return enum_value(mtype, int(text))
        if family is Family.SET:
            return set_value(mtype, int(text))
    except ValueError as exc:
        raise TypeParseError(f"not a {mtype} value: {text!r}") from exc
    if family is Family.DECIMAL:
        return parse_decimal(text)
    if family is Family.DATE:
        return parse_date(text)
    if family is Family.DATETIME:
        return parse_datetime(text)
    if family is Family.TIMESTAMP:
        return parse_timestamp(text, tz)
    if family is Family.TIME:
        return parse_time(text)
    if family is Family.BINARY or family is Family.GEOMETRY:
        raise TypeParseError(f"{mtype} values are bytes, not text")
    return text


def value_to_text(mtype: MySQLType, value: Any, tz: dt.tzinfo) -> str:
    """The inverse of :func:`value_from_text`."""
    family = mtype.family
    if family in (Family.INTEGER, Family.BIT, Family.YEAR):
        return str(int(value))
    if family in (Family.FLOAT, Family.DOUBLE):
        return format_float(float(value), single=family is Family.FLOAT)
    if family is Family.DECIMAL:
        return format_decimal(value)
    if family is Family.ENUM:
        return str(enum_index(mtype, value))
    if family is Family.SET:
        return str(set_bits(mtype, value))
    if family is Family.DATE:
        return format_date(value)
    if family is Family.DATETIME:
        return format_datetime(value, mtype.decimals)
    if family is Family.TIMESTAMP:
        return format_timestamp(value, tz, mtype.decimals)
    if family is Family.TIME:
        return format_time(value, mtype.decimals)
    if family is Family.BINARY or family is Family.GEOMETRY:
        raise TypeParseError(f"{mtype} values are bytes, not text")
    if not isinstance(value, str):
        raise TypeParseError(f"a {mtype} value must be str, got {type(value).__name__}")
    return value
