"""The fast JSON readers of the Simple protocol's column values, and the statements the decoder's
compiled image readers inline for them (:func:`json_inline`, in the names of :data:`INLINE_SCOPE`):
each reads exactly what its careful reader in :mod:`cdclake.formats.simple.values` reads.
"""

from __future__ import annotations

import binascii
import datetime as dt
from decimal import Decimal
from functools import partial
from typing import Any

from cdclake.errors import TypeParseError
from cdclake.formats.compiled import DATETIME_SHAPE, TIME_SHAPE
from cdclake.formats.simple.values import (
    _FLOAT32,
    _NO_OFFSET,
    Reader,
    Zones,
    _date,
    _datetime,
    _fromisoformat,
    _isfinite,
    _json_int,
    _json_timestamp,
    _set_reader,
    _time,
    _timestamp_reader,
    json_reader,
)
from cdclake.types import Family, MySQLType
from cdclake.values import TIME_OF_DAY_DATE, TIME_OF_DAY_MIDNIGHT, is_tidb_datetime_text

# --- fast JSON readers ---------------------------------------------------------------------------
# The decoder reads every image with these first. Each takes exactly the values its careful reader
# (in values.py) takes and returns the same value; where the careful reader fails, it fails too, with
# one of READ_ERRORS but not necessarily the same message: the decoder then re-reads the image with
# the careful readers to say which column does not fit and why. Builtins stand in where they validate
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
        # parse_datetime's fast path, inline (the shape is values.is_tidb_datetime_text)
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
