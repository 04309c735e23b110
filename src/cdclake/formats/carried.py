"""What a consumer decodes of an upstream value, for the formats that do not carry every value as it is
(:attr:`cdclake.formats.base.Codec.value_carrier`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cdclake.formats.base import Carrier, ValueCarrier, same
from cdclake.types import Family, MySQLType
from cdclake.values import enum_index, set_bits


def or_null(convert: Callable[[Any], Any]) -> Carrier:
    """``convert`` for a value, NULL kept as NULL."""
    return lambda value: None if value is None else convert(value)


def member_numbers(mysql_type: MySQLType) -> Carrier:
    """An ENUM as its 1-based index and a SET as its bitmask, for formats whose messages do not name the
    members; every other value as it is."""
    if mysql_type.family is Family.ENUM:
        return or_null(lambda value: enum_index(mysql_type, value))
    if mysql_type.family is Family.SET:
        return or_null(lambda value: set_bits(mysql_type, value))
    return same


def carries_member_numbers(options: Mapping[str, Any]) -> ValueCarrier:
    return member_numbers
