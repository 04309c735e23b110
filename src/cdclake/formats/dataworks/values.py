"""One column's value in a DataWorks message: the readers of each DataWorks type's JSON value (and the
exact second reading of a message whose LONG orjson rounded), the DataWorks type a MySQL type is written
as, the writers of a Python value as that type, and what a consumer gets of an upstream value.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from cdclake.formats.base import Carrier, ValueCarrier, same
from cdclake.formats.carried import or_null
from cdclake.formats.dataworks.wire import BOOLEAN, BYTES, DATE, DOUBLE, LONG, STRING, _show
from cdclake.types import (
    Family,
    MySQLType,
    ZeroTemporal,
    format_date,
    format_datetime,
    format_decimal,
    format_time,
    format_timestamp,
    zone,
)

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MILLISECOND = dt.timedelta(milliseconds=1)
_DATE_MS = range(-62_135_596_800_000, 253_402_300_800_000)  # the years 1 to 9999 Python can hold
# DOUBLE values arrive as JSON numbers (the spec) or as the text of Java's BigDecimal / Double (Paimon's
# sample from a real DataWorks task: "1.100000"). Python's float() alone would also take "1_0", "inf", "٣".
# Possessive: with "\d+\.?\d*" a run of digits that then fails to match is split every way between the
# two runs before the match gives up, in time quadratic in its length (20,000 digits: 13 s).
_DOUBLE_TEXT = re.compile(r"[+-]?(?:\d++(?:\.\d*+)?|\.\d++)(?:[eE][+-]?\d++)?|NaN|-?Infinity", re.ASCII)


# --- decoding values --------------------------------------------------------------------------------


class _Inexact(Exception):
    """orjson read an integer past 64 bits as a float: the message must be read again, exactly."""


def _read_boolean(raw: Any) -> bool:
    if raw is True or raw is False:
        return raw
    raise ValueError(f"a BOOLEAN is true or false, got {_show(raw)}")


def _read_double(raw: Any) -> float:
    if isinstance(raw, float):
        return raw
    if isinstance(raw, str) and _DOUBLE_TEXT.fullmatch(raw):
        return float(raw)
    if type(raw) is int:
        try:
            return float(raw)
        except OverflowError:
            pass
    raise ValueError(f"a DOUBLE is a JSON number or its decimal text, got {_show(raw)}")


def _read_date(raw: Any) -> dt.datetime:
    if type(raw) is int and raw in _DATE_MS:
        return _EPOCH + _MILLISECOND * raw
    raise ValueError(f"a DATE is epoch milliseconds, a JSON integer within the years 1-9999, got {_show(raw)}")


def _read_bytes(raw: Any) -> bytes:
    if type(raw) is str:
        try:
            return binascii.a2b_base64(raw, strict_mode=True)
        except ValueError:  # binascii.Error, or a character outside ASCII
            pass
    raise ValueError(f"a BYTES value is standard base64 text, got {_show(raw)}")


def _read_long(raw: Any) -> int:
    if isinstance(raw, int) and raw is not True and raw is not False:
        return raw
    if isinstance(raw, float):
        raise _Inexact
    raise ValueError(f"a LONG is a JSON integer, got {_show(raw)}")


def _read_long_exactly(raw: Any) -> int:
    if isinstance(raw, int) and raw is not True and raw is not False:
        return raw
    raise ValueError(f"a LONG is a JSON integer, got {_show(raw)}")


def _read_string(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    raise ValueError(f"a STRING is a JSON string, got {_show(raw)}")


_Readers = Mapping[str, Callable[[Any], Any]]
_READERS: _Readers = {
    BOOLEAN: _read_boolean,
    DOUBLE: _read_double,
    DATE: _read_date,
    BYTES: _read_bytes,
    LONG: _read_long,
    STRING: _read_string,
}
_EXACT_READERS: _Readers = {**_READERS, LONG: _read_long_exactly}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"expected JSON, got the non-standard number {name}")


# Takes None as well, and raises (a tombstone goes to the careful path, which says what it is).
_loads: Callable[[Any], Any] = orjson.loads


def _loads_exactly(value: bytes) -> Any:
    """The stdlib reads every integer exactly (orjson rounds those past 64 bits to a float)."""
    return json.loads(value, parse_constant=_reject_constant)


# --- encoding values --------------------------------------------------------------------------------


def dataworks_type(mtype: MySQLType) -> str:
    """The DataWorks type a MySQL-typed column is written as: one that carries every value of the MySQL
    type exactly (the digits of a decimal, a zero date, a time past 24 hours), so none is lost."""
    family = mtype.family
    if family in (Family.INTEGER, Family.YEAR) or (family is Family.BIT and mtype.length != 1):
        return LONG
    if family is Family.BIT:
        return BOOLEAN
    if family in (Family.ENUM, Family.SET):
        return STRING if mtype.elements is not None else LONG  # member names, else the index or bitmask
    if family in (Family.FLOAT, Family.DOUBLE):
        return DOUBLE
    if family in (Family.BINARY, Family.GEOMETRY):
        return BYTES
    if family is Family.TIMESTAMP and mtype.decimals is not None and mtype.decimals <= 3:
        return DATE
    return STRING


def _write_long(value: Any) -> int:
    if isinstance(value, int):
        return int(value)
    raise ValueError(f"a LONG needs an integer, got {_show(value)}")


def _write_boolean(value: Any) -> bool:
    # A bool as the decoder makes it, or a bit(1)'s (or a tinyint(1)'s) 0 or 1 from another format.
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"a BOOLEAN carries true, false, 0 or 1, got {_show(value)}")


def _write_double(value: Any) -> float | str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number):
            return number
        return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"  # Java's spelling
    raise ValueError(f"a DOUBLE needs a float, got {_show(value)}")


def _write_date(value: Any) -> int:
    if isinstance(value, ZeroTemporal):
        raise ValueError(f"a DATE is epoch milliseconds, which the zero timestamp {value.text!r} has none of")
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        raise ValueError(f"a DATE needs a time-zone-aware datetime, got {_show(value)}")
    milliseconds, rest = divmod(value - _EPOCH, _MILLISECOND)
    if rest:
        raise ValueError(f"a DATE carries milliseconds, {value.isoformat()} has finer digits")
    return milliseconds


def _write_bytes(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    raise ValueError(f"BYTES need bytes, got {_show(value)}")


def _write_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"a STRING needs a str, got {_show(value)}")


_WRITERS: Mapping[str, Callable[[Any], Any]] = {
    BOOLEAN: _write_boolean,
    DOUBLE: _write_double,
    DATE: _write_date,
    BYTES: _write_bytes,
    LONG: _write_long,
    STRING: _write_string,
}
# The families whose Python value is already the text a STRING carries; the others go as MySQL text.
_TEXT_FAMILIES = frozenset({Family.STRING, Family.JSON, Family.ENUM, Family.SET, Family.VECTOR})


def _same_double(text: Any, value: Any) -> bool:
    """Whether the DOUBLE text a message brought still says ``value`` (the event may have been changed)."""
    if not isinstance(text, str) or not _DOUBLE_TEXT.fullmatch(text) or not isinstance(value, float):
        return False
    number = float(text)
    return number == value or (math.isnan(number) and math.isnan(value))


# --- what a consumer gets of an upstream value -------------------------------------------------------


def value_carrier(options: Mapping[str, Any]) -> ValueCarrier:
    """What a DataWorks consumer decodes of each value (docs/formats/dataworks.md): a DECIMAL as its
    text; DATE, DATETIME and TIME as MySQL's text; a TIMESTAMP of fsp 0-3 as the same instant (DataWorks
    DATE, milliseconds), of fsp 4-6 as wall-clock text in the producer's ``tz``; everything else as it
    is (integers, BIT and YEAR are LONG; a BIT(1) a BOOLEAN, which decodes to false or true; ENUM and
    SET member names are STRING)."""
    tz = zone(options["tz"])
    return lambda mysql_type: _carrier(mysql_type, tz)


def _carrier(mysql_type: MySQLType, tz: dt.tzinfo) -> Carrier:
    family, fsp = mysql_type.family, mysql_type.decimals
    if family is Family.DECIMAL:
        return or_null(format_decimal)
    if family is Family.DATE:
        return or_null(format_date)
    if family is Family.DATETIME:
        return or_null(lambda value: format_datetime(value, fsp))
    if family is Family.TIME:
        return or_null(lambda value: format_time(value, fsp))
    if family is Family.TIMESTAMP and (fsp is None or fsp > 3):
        return or_null(lambda value: format_timestamp(value, tz, fsp))
    if dataworks_type(mysql_type) == BOOLEAN:
        return or_null(bool)
    return same
