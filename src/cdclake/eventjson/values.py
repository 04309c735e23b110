"""Event JSON's values: a column's value by its MySQL type, both ways (Python to JSON by the value's own
type, JSON to Python by the column's), row images, and one field of an event object by its JSON type. The
forms are :mod:`cdclake.eventjson`'s table."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from enum import Enum
from functools import lru_cache
from typing import Any, TypeVar

from cdclake.model import Origin
from cdclake.types import Family, MySQLType
from cdclake.values import (
    ZeroTemporal,
    format_decimal,
    format_time,
    parse_date,
    parse_datetime,
    parse_decimal,
    parse_time,
    to_float32,
)

_E = TypeVar("_E", bound=Enum)

# --- values: Python -> JSON, by the value's own type ------------------------------------------------

_NON_FINITE_TEXT = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _float_to_json(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _bytes_to_json(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _isoformat(value: dt.date) -> str:
    return value.isoformat()


def _same(value: Any) -> Any:
    return value


_VALUE_TO_JSON: dict[type, Callable[[Any], Any]] = {
    type(None): _same,
    str: _same,
    int: _same,
    bool: _same,
    float: _float_to_json,
    Decimal: format_decimal,
    bytes: _bytes_to_json,
    dt.date: _isoformat,
    dt.datetime: _isoformat,
    dt.timedelta: format_time,
    ZeroTemporal: lambda value: value.text,
}


def value_to_json(value: Any) -> Any:
    """The JSON form of one row value (see the module's table)."""
    try:
        return _VALUE_TO_JSON[type(value)](value)
    except KeyError:
        raise TypeError(f"no JSON form for a row value of type {type(value).__name__}: {value!r}") from None


def image_to_json(image: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if image is None:
        return None
    return {column: value_to_json(value) for column, value in image.items()}


# --- values: JSON -> Python, by the column's MySQL type ---------------------------------------------


def expect(kind: type | tuple[type, ...], value: Any, what: str) -> Any:
    # bool is an int to Python, never to MySQL.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"expected {what}, got {value!r}")
    return value


def _integer(value: Any) -> int:
    result: int = expect(int, value, "a JSON integer")
    return result


def _boolean_or_integer(value: Any) -> int:
    """A ``tinyint(1)``, MySQL's BOOLEAN: ``true`` and ``false`` (DataWorks' BOOLEAN) as bools, or a number."""
    return value if isinstance(value, bool) else _integer(value)


def _double(value: Any) -> float:
    if isinstance(value, str) and value in _NON_FINITE_TEXT:
        return _NON_FINITE_TEXT[value]
    return float(expect((int, float), value, "a JSON number or NaN, Infinity, -Infinity"))


def _float(value: Any) -> float:
    return to_float32(_double(value))


def _decimal(value: Any) -> Decimal:
    # A JSON float has already lost digits; only text and integers are exact.
    return parse_decimal(str(expect((str, int), value, "a decimal as a string")))


def _text(value: Any) -> str:
    result: str = expect(str, value, "a string")
    return result


def _binary(value: Any) -> bytes:
    try:
        return base64.b64decode(_text(value), validate=True)
    except binascii.Error as exc:
        raise ValueError(f"expected standard base64, got {value!r}: {exc}") from exc


def _enum_or_set(value: Any) -> str | int:
    result: str | int = expect((str, int), value, "member names as a string, or an index")
    return result


def _date(value: Any) -> dt.date | ZeroTemporal:
    return parse_date(_text(value))


def _datetime(value: Any) -> dt.datetime | ZeroTemporal:
    return parse_datetime(_text(value))


def _timestamp(value: Any) -> dt.datetime | ZeroTemporal:
    text = _text(value)
    try:
        instant = dt.datetime.fromisoformat(text)
    except ValueError:
        zero = parse_datetime(text)  # raises unless it is a zero date
        if isinstance(zero, ZeroTemporal):
            return zero
        raise
    # A TIMESTAMP is an instant; one written without an offset is taken to be UTC.
    return instant.replace(tzinfo=dt.UTC) if instant.tzinfo is None else instant.astimezone(dt.UTC)


def _time(value: Any) -> dt.timedelta:
    return parse_time(_text(value))


_VALUE_FROM_JSON: dict[Family, Callable[[Any], Any]] = {
    Family.INTEGER: _integer,
    Family.BIT: _integer,
    Family.YEAR: _integer,
    Family.FLOAT: _float,
    Family.DOUBLE: _double,
    Family.DECIMAL: _decimal,
    Family.STRING: _text,
    Family.BINARY: _binary,
    Family.GEOMETRY: _binary,
    Family.ENUM: _enum_or_set,
    Family.SET: _enum_or_set,
    Family.JSON: _text,
    Family.DATE: _date,
    Family.DATETIME: _datetime,
    Family.TIMESTAMP: _timestamp,
    Family.TIME: _time,
    Family.VECTOR: _same,
}


ValueReader = Callable[[Any], Any]
_BOOLEAN = MySQLType("tinyint", length=1)  # MySQL's BOOLEAN, and what DataWorks' BOOLEAN decodes to


@lru_cache(maxsize=4096)
def column_reader(type_text: str) -> tuple[MySQLType, ValueReader]:
    """The type a ``types`` text names and the reader of its values, worked out once per text."""
    mtype = MySQLType.parse(type_text)
    return mtype, _boolean_or_integer if mtype == _BOOLEAN else _VALUE_FROM_JSON[mtype.family]


def image_from_json(image: Any, readers: Mapping[str, tuple[MySQLType, ValueReader]]) -> dict[str, Any] | None:
    if image is None:
        return None
    values = {}
    for column, value in expect(dict, image, "an object of column values").items():
        reader = readers.get(column)
        if value is None or reader is None:
            values[column] = value
            continue
        try:
            values[column] = reader[1](value)
        except ValueError as exc:
            raise ValueError(f"column {column!r} ({reader[0]}): {exc}") from exc
    return values




# --- fields of an event object ----------------------------------------------------------------------


# Readers of one field each: ``obj[name]`` where the model requires the field, ``obj.get(name)`` where
# it has a default; each checks the JSON type so that a wrong one is named here, not in an encoder.


def text_field(obj: Mapping[str, Any], name: str) -> str:
    result: str = expect(str, obj[name], f"{name} as a string")
    return result


def optional_text_field(obj: Mapping[str, Any], name: str) -> str | None:
    value = obj.get(name)
    return None if value is None else text_field(obj, name)


def optional_int_field(obj: Mapping[str, Any], name: str) -> int | None:
    value = obj.get(name)
    return None if value is None else int_field(obj, name)


def int_field(obj: Mapping[str, Any], name: str) -> int:
    result: int = expect(int, obj[name], f"{name} as an integer")
    return result


def names_field(obj: Mapping[str, Any], name: str) -> tuple[str, ...]:
    names = expect(list, obj.get(name, []), f"{name} as a list of names")
    return tuple(expect(str, n, f"{name} as a list of names") for n in names)


def meta_field(obj: Mapping[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = expect(dict, obj.get("meta", {}), "meta as an object")
    return result


def origin_field(obj: Mapping[str, Any]) -> Origin | None:
    value = obj.get("origin")
    return None if value is None else Origin(**expect(dict, value, "origin as an object"))


def choice_field(enum: type[_E], obj: Mapping[str, Any], name: str) -> _E:
    value = obj[name]
    try:
        return enum(value)
    except ValueError:
        raise ValueError(f"expected {name} as one of {', '.join(m.value for m in enum)}, got {value!r}") from None
