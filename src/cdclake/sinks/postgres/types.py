"""How MySQL values live in PostgreSQL columns, read from the pipeline's lake texts.

PostgreSQL holds every MySQL type exactly, closer than Iceberg can (:mod:`cdclake.schema.lake`):

=========================================  ================================  =====================================
MySQL type                                 PostgreSQL column                 from the lake text
=========================================  ================================  =====================================
tinyint, smallint (signed or not)          smallint / integer [1]            digits
mediumint, int                             integer                           digits
int unsigned, bigint                       bigint                            digits; 2**63..2**64-1 as the same
                                                                             64 bits, as the lake does
bigint unsigned                            numeric(20,0)                     digits
bit(n <= 63), set without members          bigint                            digits
bit(64), bit of unknown width, set         numeric(20,0)                     digits
without members
year, enum without members                 integer                           digits
decimal(p,s)                               numeric(p,s) (up to 65,30)        plain digits
bare ``decimal``                           numeric                           plain digits
float, double                              real, double precision            shortest text; NaN, +-Infinity
char ... longtext, json, vector,           text                              the value itself
enum/set with members
binary ... longblob, geometry              bytea                             standard base64, every byte kept
date                                       date                              ``YYYY-MM-DD``
datetime                                   timestamp                         ``YYYY-MM-DD HH:MM:SS.ffffff``
timestamp                                  timestamptz                       the same, in UTC
time                                       interval                          ``[-]HHH:MM:SS.ffffff``: beyond 24 h
=========================================  ================================  =====================================

[1] smallint for tinyint and smallint, integer for smallint unsigned.

Zero dates (``0000-00-00``) are NULL, as in the lake (:mod:`cdclake.schema.lake`, "Zero dates"). A JSON
column is text, not jsonb, so that its text stays as the upstream wrote it. PostgreSQL's text cannot
hold the NUL character: a MySQL string holding one stops the batch with PostgreSQL's error.
"""

from __future__ import annotations

from cdclake.types import INTEGER_BITS, Family, MySQLType

_LONG_BITS = 63
_TYPE_OF_FAMILY = {
    Family.YEAR: "integer",
    Family.FLOAT: "real",
    Family.DOUBLE: "double precision",
    Family.STRING: "text",
    Family.JSON: "text",
    Family.VECTOR: "text",
    Family.BINARY: "bytea",
    Family.GEOMETRY: "bytea",
    Family.DATE: "date",
    Family.DATETIME: "timestamp",
    Family.TIMESTAMP: "timestamptz",
    Family.TIME: "interval",
}
_TWO_TO_63, _TWO_TO_64 = 1 << 63, 1 << 64


def pg_type(mtype: MySQLType) -> str:
    """The PostgreSQL column type that holds every value of ``mtype`` (table above)."""
    family = mtype.family
    if family is Family.INTEGER:
        bits = INTEGER_BITS[mtype.name] + mtype.unsigned
        if bits > 64:
            return "numeric(20,0)"
        return "smallint" if bits <= 16 else "integer" if bits <= 32 else "bigint"
    if family is Family.DECIMAL:
        if mtype.length is None:
            return "numeric"
        return f"numeric({mtype.length},{mtype.decimals or 0})"
    if family is Family.ENUM:
        return "text" if mtype.elements is not None else "integer"
    if family is Family.SET:
        return "text" if mtype.elements is not None else "numeric(20,0)"
    if family is Family.BIT:
        return "bigint" if mtype.length is not None and mtype.length <= _LONG_BITS else "numeric(20,0)"
    return _TYPE_OF_FAMILY[family]


def pg_cast(text_sql: str, mtype: MySQLType) -> str:
    """A PostgreSQL expression turning ``text_sql``, a lake text (or NULL), into :func:`pg_type`."""
    return cast_text(text_sql, pg_type(mtype))


def cast_text(text_sql: str, target: str) -> str:
    """A PostgreSQL expression turning ``text_sql``, a lake text (or NULL), into a column of type
    ``target`` (as :func:`pg_type` or PostgreSQL's ``format_type`` names it)."""
    if target == "text":
        return text_sql
    if target == "bytea":
        return f"decode({text_sql}, 'base64')"
    if target in ("timestamptz", "timestamp with time zone"):
        return f"(({text_sql}) || '+00')::timestamptz"
    if target == "bigint":
        # DataWorks' LONG tells no signedness: digits of the unsigned range are the same 64 bits.
        wide = f"({text_sql})::numeric"
        return f"(CASE WHEN {wide} >= {_TWO_TO_63} THEN {wide} - {_TWO_TO_64} ELSE {wide} END)::bigint"
    return f"({text_sql})::{target}"


_INTEGER_RANK = {"smallint": 1, "integer": 2, "bigint": 3}


def holds(seen: MySQLType, known: MySQLType) -> bool:
    """Whether the column made for ``known`` holds every value of ``seen`` as it is (a row written before
    its column was widened: an ``int`` into a ``bigint`` column)."""
    seen_type, known_type = pg_type(seen), pg_type(known)
    if seen_type == known_type or known_type == "numeric":
        return True
    if seen_type in _INTEGER_RANK and known_type in _INTEGER_RANK:
        return _INTEGER_RANK[seen_type] <= _INTEGER_RANK[known_type]
    return (seen_type, known_type) == ("real", "double precision")
