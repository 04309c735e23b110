"""How MySQL values live in Iceberg columns written through Spark.

Iceberg's types are fewer than MySQL's: no 8- or 16-bit integers, no unsigned integers, no interval,
decimals up to precision 38. Every MySQL type gets the Iceberg column that holds all its values exactly:

=========================================  ===================  ===============================================
MySQL type                                 lake column          lake text (what :func:`lake_cast` reads)
=========================================  ===================  ===============================================
tinyint, smallint, mediumint, int          int                  digits
int unsigned                               long                 digits
bigint                                     long                 digits; up to 2**64-1 as well [2]
bigint unsigned                            decimal(20,0)        digits
bit(n) (n <= 63), set without members      long                 digits (the bits as an unsigned number)
bit(64), bit of unknown width, set without decimal(20,0)        digits
members
enum without members, year                int                  digits (an enum's 1-based index)
decimal(p,s), p <= 38                      decimal(p,s)         plain digits, never an exponent
decimal(p,s), p > 38; bare ``decimal``     string               plain digits (the exact value as text)
float, double                              float, double        the value's shortest float64 text, no exponent;
                                                                ``NaN``, ``Infinity``, ``-Infinity``
char ... longtext, json, vector,           string               the value itself
enum/set with members
binary ... longblob, geometry              binary               standard base64
date                                       date                 ``YYYY-MM-DD``
datetime                                   timestamp_ntz        ``YYYY-MM-DD HH:MM:SS.ffffff``
timestamp                                  timestamp            ``YYYY-MM-DD HH:MM:SS.ffffff`` in UTC
time                                       string               ``[-]HHH:MM:SS.ffffff`` [1]
=========================================  ===================  ===============================================

A set without members may have up to 64 of them, so its bitmask needs decimal(20,0); a bit column whose
width the producer did not tell (Open Protocol sends none) may be up to 64 bits wide, likewise. A DDL's
bare ``bit`` is ``bit(1)``: :mod:`cdclake.schema.ddl` writes MySQL's defaults out, so a type from
a CREATE TABLE always has its width.

[1] Iceberg has no interval type, so a TIME is text: ``[-]HHH:MM:SS.ffffff``, always with six fraction
    digits (``-838:59:59.000000``, ``37:33:24.000000``). Formats differ in telling a column's precision
    (Open Protocol and Canal-JSON say ``time``), and the same value must be the same text whichever
    format brought it. As text it does not sort as durations do.

[2] DataWorks' LONG tells no signedness: a ``bigint unsigned`` or ``bit(64)`` value comes as its unsigned
    digits in a column typed ``bigint``, and a lake table made from such rows has a long column. Digits
    from 2**63 to 2**64-1 are read as the long with the same 64 bits (2**64-1 is -1), as a Java long
    holds them, rather than cast to NULL; the digits of a column known to be unsigned (from its DDL) go
    to its decimal(20,0) unchanged.

**Zero dates.** A :class:`cdclake.values.ZeroTemporal` (``0000-00-00``) names no day; the lake keeps it as
NULL, as MySQL Connector/J's ``zeroDateTimeBehavior=CONVERT_TO_NULL`` and Debezium do, even where the
MySQL column is NOT NULL (see "Zero dates" in :mod:`cdclake.types`).

The pipeline turns decoded values into lake texts on the executors (:func:`lake_text_function`, one
function per type, called per value) and the texts into typed columns in Spark (:func:`lake_cast`):
one string column per MySQL column crosses from Python to the JVM whatever the type, and Spark's casts
read each text back exactly (decimal digits, the shortest float text, the UTC instant).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable
from typing import Any

import pybase64

from cdclake.errors import TypeParseError
from cdclake.types import INTEGER_BITS, Family, MySQLType
from cdclake.values import ZeroTemporal, enum_value, format_decimal, format_float, format_time, set_value

LakeText = Callable[[Any], "str | None"]

_SPARK_MAX_DECIMAL_PRECISION = 38

# The widest bit column a long holds: Iceberg's long is signed, so bit(64)'s top bit does not fit.
_LONG_BITS = 63

_LAKE_TYPE_OF_FAMILY = {
    Family.YEAR: "int",
    Family.FLOAT: "float",
    Family.DOUBLE: "double",
    Family.STRING: "string",
    Family.JSON: "string",
    Family.VECTOR: "string",
    Family.BINARY: "binary",
    Family.GEOMETRY: "binary",
    Family.DATE: "date",
    Family.DATETIME: "timestamp_ntz",
    Family.TIMESTAMP: "timestamp",
    Family.TIME: "string",
}


def lake_type(mtype: MySQLType) -> str:
    """The Spark SQL type text of the Iceberg column that holds every value of ``mtype`` (table above)."""
    family = mtype.family
    if family is Family.INTEGER:
        if mtype.name == "bigint" and mtype.unsigned:
            return "decimal(20,0)"
        return "int" if INTEGER_BITS[mtype.name] + mtype.unsigned <= 32 else "long"
    if family is Family.DECIMAL:
        return _decimal_lake_type(mtype)
    if family is Family.ENUM:
        return "string" if mtype.elements is not None else "int"
    if family is Family.SET:
        return "string" if mtype.elements is not None else "decimal(20,0)"
    if family is Family.BIT:
        return "long" if mtype.length is not None and mtype.length <= _LONG_BITS else "decimal(20,0)"
    return _LAKE_TYPE_OF_FAMILY[family]


def _decimal_lake_type(mtype: MySQLType) -> str:
    """decimal(p,s), or string past Spark's precision 38 (MySQL's goes to 65), where the exact text is
    kept. A bare ``decimal`` (TiCDC's default Canal-JSON ``mysqlType``, Open Protocol) tells neither
    precision nor scale, so it is taken at MySQL's widest, decimal(65, s or 30): text."""
    if mtype.length is None:
        return "string"
    scale = mtype.decimals or 0  # DECIMAL(p) is DECIMAL(p,0)
    return f"decimal({mtype.length},{scale})" if mtype.length <= _SPARK_MAX_DECIMAL_PRECISION else "string"


def lake_text(mtype: MySQLType, value: Any) -> str | None:
    """The text :func:`lake_cast` turns back into ``value`` in the lake column; None for NULL and zero
    dates. For many values of one type, take :func:`lake_text_function` once and call it."""
    return lake_text_function(mtype)(value)


@functools.lru_cache(maxsize=4096)
def lake_text_function(mtype: MySQLType) -> LakeText:
    """The function from a decoded value of ``mtype`` (as :mod:`cdclake.types` describes them) to its
    lake text, None for NULL and zero dates. Cached per type: the pipeline calls it per value."""
    convert = value_text_function(mtype)

    def text(value: Any) -> str | None:
        return None if value is None else convert(value)

    return text


@functools.lru_cache(maxsize=4096)
def value_text_function(mtype: MySQLType) -> LakeText:
    """As :func:`lake_text_function`, for a value that is not NULL: the writer of row images, which meets
    NULLs itself, calls it per value, a Python call fewer than the other."""
    family = mtype.family
    if family is Family.INTEGER or family is Family.BIT or family is Family.YEAR:
        # int's own repr: digits for a bool too (True is 1), and a TypeError for what is no int.
        return int.__repr__
    if family is Family.DECIMAL:
        return format_decimal
    if family is Family.FLOAT or family is Family.DOUBLE:
        return _float_text
    if family is Family.ENUM or family is Family.SET:
        return _member_text(mtype)
    if family is Family.BINARY or family is Family.GEOMETRY:
        return _base64
    if family is Family.DATE:
        return _zero_or(dt.date.isoformat)
    if family is Family.DATETIME:
        return _zero_or(_datetime_text)
    if family is Family.TIMESTAMP:
        return _zero_or(_timestamp_text)
    if family is Family.TIME:
        # Always six fraction digits: formats differ in telling the column's precision (Open and Canal-JSON
        # say "time"), and the same value must be the same text whichever format brought it.
        return functools.partial(format_time, fsp=6)
    return _text


def lake_cast(column_sql: str, mtype: MySQLType) -> str:
    """A Spark SQL expression turning the string expression ``column_sql``, a :func:`lake_text`, into
    the :func:`lake_type` of ``mtype``: exact for every value (decimal digits, float32 and double
    values, instants), whatever ``spark.sql.session.timeZone`` is. Casts are ``try_cast``: a text out
    of the column's range is NULL with Spark's ANSI mode on (Spark 4's default) as with it off."""
    target = lake_type(mtype)
    if target == "string":
        return column_sql
    if mtype.family is Family.INTEGER and mtype.name == "bigint" and not mtype.unsigned:
        return _bigint_cast(column_sql)
    if target == "binary":
        return f"unbase64({column_sql})"
    if target == "timestamp":
        # The text is UTC; an explicit zone in it wins over the session's time zone.
        return f"try_cast(concat({column_sql}, 'Z') AS timestamp)"
    return f"try_cast({column_sql} AS {target})"


_TOP_BIT, _TWO_TO_64 = 1 << 63, 1 << 64


def _bigint_cast(column_sql: str) -> str:
    """A long from digits of the signed or of the unsigned range of 64 bits ([2] above). The cast to
    long decides every text of the signed range; only what it leaves NULL is read again, so the usual
    value costs no decimal arithmetic. Past 2**64-1 stays NULL, as past any column's range."""
    unsigned = f"try_cast({column_sql} AS decimal(20,0))"
    same_bits = f"CASE WHEN {unsigned} BETWEEN {_TOP_BIT} AND {_TWO_TO_64 - 1} THEN {unsigned} - {_TWO_TO_64} END"
    return f"coalesce(try_cast({column_sql} AS long), try_cast({same_bits} AS long))"


# --- the per-type text functions ----------------------------------------------------------------------


def _zero_or(convert: Callable[[Any], str]) -> LakeText:
    def text(value: Any) -> str | None:
        return None if value.__class__ is ZeroTemporal else convert(value)

    return text


# Spark reads these (case-insensitively) where Go's "+Inf"/"-Inf", which format_float writes, it does not.
_SPARK_NON_FINITE = {"+Inf": "Infinity", "-Inf": "-Infinity", "NaN": "NaN"}


def _float_text(value: float) -> str:
    """The shortest text of the float64 ``value``, for FLOAT (float32) columns too: a float32 value is a
    float64 exactly, and its float64 text lies so much closer to it than to any other float32 that
    Spark's cast to float reads it back exactly. The shortest float32 text reads back the same, but
    takes about eight times as long to find (5.4 µs against 0.7 µs per value, measured)."""
    text = format_float(value, single=False)
    return _SPARK_NON_FINITE.get(text, text)


def _member_text(mtype: MySQLType) -> Callable[[Any], str]:
    """An enum or set value as its lake text: member names where the type lists members, else digits.

    A value decoded with a type that lists no members (Open Protocol sends none) is the index or
    bitmask; the pipeline may write it to a column whose known type lists them, so an ``int`` is
    turned into the member names here.
    """
    if mtype.elements is None:
        return int.__repr__
    to_members = enum_value if mtype.family is Family.ENUM else set_value

    def text(value: Any) -> str:
        return value if value.__class__ is str else str(to_members(mtype, value))

    return text


def _base64(value: bytes) -> str:
    return pybase64.b64encode(value).decode("ascii")


def _datetime_text(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        raise TypeParseError(f"a datetime value must be a naive datetime (wall clock), got {value}")
    return value.isoformat(" ", "microseconds")


def _timestamp_text(value: dt.datetime) -> str:
    if value.tzinfo is None:
        raise TypeParseError(f"a timestamp value must be an aware datetime (UTC), got naive {value}")
    if value.tzinfo is not dt.UTC:
        value = value.astimezone(dt.UTC)
    return value.isoformat(" ", "microseconds")[:26]  # without the "+00:00"


def _text(value: Any) -> str:
    if value.__class__ is not str:
        raise TypeParseError(f"a text value must be str, got {type(value).__name__}: {value!r}")
    return value


# --- Spark SQL text ------------------------------------------------------------------------------------

# Spark's from_json reads with Jackson, which since 2.15 makes a string over 20,000,000 characters (a
# MEDIUMTEXT or LONGBLOB value's lake text can be 4 GiB) a parse error, and from_json an error a NULL:
# the value, or the key, would be lost without a word. Java's own limit is the bound instead.
IMAGE_JSON_OPTIONS = {"maxStringLen": str(2**31 - 1)}


def quote(name: str) -> str:
    """A Spark SQL identifier: backquoted, backquotes doubled."""
    return "`" + name.replace("`", "``") + "`"


_PART = re.compile(r"(?:`((?:[^`]|``)*)`|([^.`]+))(?:\.|$)")


def unquote_parts(identifier: str) -> list[str]:
    """The names of a multipart identifier, its parts joined by ".", each as :func:`quote` writes it
    or a plain name: a quoted name may hold "." or a backquote, so the text is read part by part,
    not split."""
    parts = []
    position = 0
    while position < len(identifier):
        match = _PART.match(identifier, position)
        if match is None:
            raise ValueError(f"not a multipart identifier: {identifier!r}")
        quoted, plain = match.groups()
        parts.append(plain if quoted is None else quoted.replace("``", "`"))
        position = match.end()
    return parts


def sql_string(text: str) -> str:
    """A Spark SQL string literal: backslashes and quotes escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
