"""How MySQL values live in MariaDB (or MySQL) columns, read from the pipeline's lake texts.

A MySQL type becomes the MariaDB column that holds all its values exactly, in most cases itself:

=========================================  ================================  =====================================
MySQL type                                 MariaDB column                    loaded from the lake text
=========================================  ================================  =====================================
tinyint ... bigint (signed or not)         the same, without display width   digits; a signed bigint's digits
                                                                             2**63..2**64-1 as the same 64 bits,
                                                                             as the lake does [1]
bit(n), set without members                bigint unsigned                   digits (the bits as a number)
enum without members                       smallint unsigned                 digits (the member's index)
year                                       year                              four digits (``0000`` kept)
decimal(p,s)                               decimal(p,s)                      plain digits
bare ``decimal``                           decimal(65,30)                    plain digits [2]
float, double                              float, double                     shortest text [3]
char(n), varchar(n)                        varchar(n)                        the value itself, trailing spaces kept
tinytext ... longtext, json, vector,       longtext                          the value itself
string of unknown length
enum/set with members                      varchar (its longest value)       the value itself
binary(n), varbinary(n)                    varbinary(n)                      base64, every byte kept
tinyblob ... longblob, geometry            longblob                          base64, every byte kept
date                                       date                              ``YYYY-MM-DD``
datetime(p), timestamp(p), time(p)         the same (p = 6 if untold)        the text; timestamps in UTC, the
                                                                             session's time zone; time up to
                                                                             +-838:59:59, MySQL's own range
=========================================  ================================  =====================================

Text columns take the tables' default character set and collation: utf8mb4 with a binary, no-pad
collation (``utf8mb4_nopad_bin``; MySQL's ``utf8mb4_0900_bin``), so that no two values the upstream
told apart (``a``, ``A``, ``a ``) are ever one key here.

[1] DataWorks' LONG tells no signedness (see :mod:`cdclake.schema.lake`).
[2] A bare ``decimal`` names no precision: MySQL's widest, 35 integer and 30 fraction digits. A value
    wider stops the batch with the server's out-of-range error.
[3] MySQL's float columns hold no NaN or infinity (nor can a MySQL upstream have one): such a value
    stops the batch with an error that says so.

Zero dates (``0000-00-00``) are NULL, as in the lake (:mod:`cdclake.schema.lake`, "Zero dates"): the
lake texts the pipeline hands a sink have no zero date left.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable

from cdclake.errors import CdclakeError
from cdclake.types import Family, MySQLType

WIDEST_DECIMAL = "decimal(65,30)"
_FSP_UNTOLD = 6
_TYPE_OF_FAMILY = {
    Family.BIT: "bigint unsigned",
    Family.YEAR: "year",
    Family.FLOAT: "float",
    Family.DOUBLE: "double",
    Family.JSON: "longtext",
    Family.VECTOR: "longtext",
    Family.GEOMETRY: "longblob",
    Family.DATE: "date",
}
_LENGTHED = {"char": "varchar", "varchar": "varchar", "binary": "varbinary", "varbinary": "varbinary"}
_BINARY_BASES = ("varbinary", "binary", "tinyblob", "blob", "mediumblob", "longblob")
_DISPLAY_WIDTH = re.compile(r"^(tinyint|smallint|mediumint|int|bigint|year)\(\d+\)")
_TWO_TO_63, _TWO_TO_64 = 1 << 63, 1 << 64


class UnstorableValue(CdclakeError):
    """A value no MariaDB column can hold."""


def mariadb_type(mtype: MySQLType) -> str:
    """The MariaDB column type that holds every value of ``mtype`` (table above)."""
    family = mtype.family
    if family is Family.INTEGER:
        return mtype.name + (" unsigned" if mtype.unsigned else "")
    if family is Family.DECIMAL:
        return f"decimal({mtype.length},{mtype.decimals or 0})" if mtype.length is not None else WIDEST_DECIMAL
    if family in (Family.STRING, Family.BINARY):
        lengthed = _LENGTHED.get(mtype.name)
        if lengthed is not None and mtype.length is not None:
            return f"{lengthed}({mtype.length})"
        return "longtext" if family is Family.STRING else "longblob"
    if family in (Family.ENUM, Family.SET):
        return _members_type(mtype)
    if family in (Family.DATETIME, Family.TIMESTAMP, Family.TIME):
        return f"{mtype.name}({_FSP_UNTOLD if mtype.decimals is None else mtype.decimals})"
    return _TYPE_OF_FAMILY[family]


def _members_type(mtype: MySQLType) -> str:
    if mtype.elements is None:
        return "smallint unsigned" if mtype.family is Family.ENUM else "bigint unsigned"
    lengths = [len(member) for member in mtype.elements] or [0]
    widest = max(lengths) if mtype.family is Family.ENUM else sum(lengths) + len(lengths) - 1
    return f"varchar({max(widest, 1)})"


def normalized(column_type: str) -> str:
    """A column type as :func:`mariadb_type` spells it, from the server's ``COLUMN_TYPE`` (MariaDB shows
    integer display widths: ``bigint(20) unsigned``)."""
    return _DISPLAY_WIDTH.sub(r"\1", column_type.lower())


def _base(column_type: str) -> str:
    return normalized(column_type).split("(")[0].split()[0]


def loader(column_type: str, where: str) -> Callable[[str | None], str | bytes | None]:
    """The function turning a lake text (or None) into what LOAD DATA puts into a column of
    ``column_type`` (the server's spelling or :func:`mariadb_type`'s); ``where`` names the column in
    errors."""
    base, unsigned = _base(column_type), "unsigned" in column_type.lower()
    if base in _BINARY_BASES:
        return lambda text: None if text is None else base64.b64decode(text, validate=True)
    if base == "bigint" and not unsigned:
        return _signed_bigint
    if base == "year":
        return lambda text: None if text is None else text.zfill(4)
    if base in ("float", "double"):
        return lambda text: _finite(text, where)
    return lambda text: text


def _signed_bigint(text: str | None) -> str | None:
    if text is None:
        return None
    value = int(text)
    return str(value - _TWO_TO_64) if value >= _TWO_TO_63 else text


def _finite(text: str | None, where: str) -> str | None:
    if text is not None and text.lstrip("-+") in ("NaN", "Infinity", "inf", "nan"):
        raise UnstorableValue(f"{where}: {text} cannot be stored: MariaDB and MySQL float columns hold no NaN or "
                              "infinity")
    return text


_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
_SIZED = re.compile(r"(varchar|varbinary|datetime|timestamp|time)\((\d+)\)")


def holds(seen: MySQLType, known: MySQLType) -> bool:
    """Whether the column made for ``known`` holds every value of ``seen`` as it is (a row written before
    its column was widened: an ``int`` into a ``bigint`` column)."""
    seen_type, known_type = mariadb_type(seen), mariadb_type(known)
    if seen_type == known_type or (seen_type, known_type) == ("float", "double"):
        return True
    if seen.family is Family.INTEGER and known.family is Family.INTEGER:
        low, high = seen.integer_range()
        known_low, known_high = known.integer_range()
        return known_low <= low and high <= known_high
    if known_type in ("longtext", "longblob"):
        return _base(seen_type) == ("varchar" if known_type == "longtext" else "varbinary")
    seen_decimal, known_decimal = _DECIMAL.fullmatch(seen_type), _DECIMAL.fullmatch(known_type)
    if seen_decimal and known_decimal:
        precision, scale = map(int, seen_decimal.groups())
        known_precision, known_scale = map(int, known_decimal.groups())
        return scale <= known_scale and precision - scale <= known_precision - known_scale
    seen_sized, known_sized = _SIZED.fullmatch(seen_type), _SIZED.fullmatch(known_type)
    # A longer varchar or varbinary, a finer fraction of a second.
    return bool(seen_sized and known_sized and seen_sized[1] == known_sized[1]
                and int(seen_sized[2]) <= int(known_sized[2]))
