"""The MySQL type system as TiCDC and DataWorks carry it.

:class:`MySQLType` parses every spelling the formats use — TiCDC's bare ``int unsigned``, content-compatible
Canal-JSON's ``decimal(10, 4)`` and ``enum('a','b')``, Simple protocol's ``dataType`` objects — into one
value, and refuses a type beyond MySQL's limits on type parameters. The Python value of each type, and
the text form TiDB renders values in, are :mod:`cdclake.values`'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from cdclake.errors import TypeParseError


class Family(Enum):
    """What kind of value a MySQL type holds; decides the Python, Arrow and Spark representation."""

    INTEGER = "integer"
    BIT = "bit"
    YEAR = "year"
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL = "decimal"
    STRING = "string"
    BINARY = "binary"
    ENUM = "enum"
    SET = "set"
    JSON = "json"
    DATE = "date"
    DATETIME = "datetime"
    TIMESTAMP = "timestamp"
    TIME = "time"
    VECTOR = "vector"
    GEOMETRY = "geometry"


_FAMILY_OF: dict[str, Family] = {
    **dict.fromkeys(("tinyint", "smallint", "mediumint", "int", "bigint"), Family.INTEGER),
    "bit": Family.BIT,
    "year": Family.YEAR,
    "float": Family.FLOAT,
    "double": Family.DOUBLE,
    "decimal": Family.DECIMAL,
    **dict.fromkeys(("char", "varchar", "tinytext", "text", "mediumtext", "longtext"), Family.STRING),
    **dict.fromkeys(
        ("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"), Family.BINARY
    ),
    "enum": Family.ENUM,
    "set": Family.SET,
    "json": Family.JSON,
    "date": Family.DATE,
    "datetime": Family.DATETIME,
    "timestamp": Family.TIMESTAMP,
    "time": Family.TIME,
    "vector": Family.VECTOR,
    # The spatial subtypes are kept by name (Canal writes ``POINT``); all carry WKB bytes.
    **dict.fromkeys(
        (
            "geometry", "point", "linestring", "polygon",
            "multipoint", "multilinestring", "multipolygon", "geometrycollection",
        ),
        Family.GEOMETRY,
    ),
}

# Spellings MySQL accepts for the same base type.
_SYNONYMS = {
    "integer": "int",
    "int1": "tinyint",
    "int2": "smallint",
    "int3": "mediumint",
    "int4": "int",
    "int8": "bigint",
    "middleint": "mediumint",
    "dec": "decimal",
    "numeric": "decimal",
    "fixed": "decimal",
    "real": "double",
    "double precision": "double",
    "float4": "float",
    "float8": "double",
    "character": "char",
    "character varying": "varchar",
    "var_string": "varchar",
    "string": "char",
    "long varchar": "mediumtext",
    "long varbinary": "mediumblob",
    "long": "mediumtext",
    "newdate": "date",
    "tidbvectorfloat32": "vector",
    "geomcollection": "geometrycollection",
}

# Storage bits per integer type.
INTEGER_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}

# The quoted enum/set members are atomic groups (?>...): ``'a''b'`` can only be one member, and without
# them a long member list followed by garbage backtracks exponentially (seconds for 25 members).
_TYPE_RE = re.compile(
    r"""^\s*(?P<name>[a-z][a-z0-9_]*(?:\s+(?:precision|varying|varchar|varbinary))?)\s*
        (?:\((?P<args>(?:[^()'"]|(?>'(?:[^']|'')*')|(?>"(?:[^"]|"")*"))*)\))?
        (?P<attrs>(?:\s+[a-z]+)*)\s*$""",
    re.IGNORECASE | re.VERBOSE,
)
_QUOTED_RE = re.compile(r"""'((?:[^']|'')*)'|"((?:[^"]|"")*)\"""")


@dataclass(frozen=True, slots=True)
class MySQLType:
    """One MySQL column type.

    ``length`` is TiDB's flen (display width, character length, bit count, decimal precision) and
    ``decimals`` its decimal (decimal scale, fractional-seconds precision); either is ``None`` where
    the producer did not say. ``elements`` are the members of an enum or set, where known.
    """

    name: str
    unsigned: bool = False
    zerofill: bool = False
    length: int | None = None
    decimals: int | None = None
    elements: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        # Checked here, not in parse: every producer's type (a Simple dataType's length) comes through.
        fault = _beyond_mysql(self)
        if fault is not None:
            raise TypeParseError(fault)

    @classmethod
    def parse(cls, text: str) -> MySQLType:
        """Parse a column type as MySQL, TiCDC or Canal write it: ``bigint(20) unsigned``, ``enum('a','b')``."""
        match = _TYPE_RE.match(text)
        if match is None:
            raise TypeParseError(f"not a MySQL column type: {text!r}")
        name = " ".join(match["name"].lower().split())
        attrs = match["attrs"].lower().split()
        if name in ("bool", "boolean"):
            return cls("tinyint", length=1)
        if name == "serial":
            return cls("bigint", unsigned=True)
        name = _SYNONYMS.get(name, name)
        if name not in _FAMILY_OF:
            raise TypeParseError(f"unknown MySQL type {name!r} in {text!r}")
        # ``char(10) binary`` is MySQL shorthand for a binary collation, not a binary type.
        unknown = set(attrs) - {"unsigned", "signed", "zerofill", "binary"}
        if unknown:
            raise TypeParseError(f"unknown type attribute {sorted(unknown)} in {text!r}")
        args = match["args"]
        family = _FAMILY_OF[name]
        if family in (Family.ENUM, Family.SET):
            members = None if args is None else tuple(_unquote_members(args, text))
            return cls(name, elements=members)
        length, decimals = _numeric_args(args, text)
        if family in (Family.DATETIME, Family.TIMESTAMP, Family.TIME) and decimals is None:
            length, decimals = None, length
        return cls(
            name,
            unsigned="unsigned" in attrs or "zerofill" in attrs,
            zerofill="zerofill" in attrs,
            length=length,
            decimals=decimals,
        )

    @property
    def family(self) -> Family:
        return _FAMILY_OF[self.name]

    @property
    def is_binary(self) -> bool:
        return self.family is Family.BINARY

    def __str__(self) -> str:
        text = self.name
        if self.elements is not None:
            text += "(" + ",".join("'" + e.replace("'", "''") + "'" for e in self.elements) + ")"
        elif self.family in (Family.DATETIME, Family.TIMESTAMP, Family.TIME):
            if self.decimals is not None:
                text += f"({self.decimals})"
        elif self.length is not None and self.decimals is not None:
            text += f"({self.length},{self.decimals})"
        elif self.length is not None:
            text += f"({self.length})"
        if self.unsigned and not self.zerofill:
            text += " unsigned"
        if self.zerofill:
            text += " unsigned zerofill"
        return text

    def integer_range(self) -> tuple[int, int]:
        """The smallest and largest value of an integer type."""
        bits = INTEGER_BITS[self.name]
        if self.unsigned:
            return 0, (1 << bits) - 1
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


# MySQL's own limits on type parameters (TiDB's are the same). A producer that sends more describes no
# MySQL column, and some parameters size what decoding allocates (a BIT's width is the bound of its
# values: BIT(2^40) once asked for a 2^40-bit integer). The longest length is TiDB's LONGTEXT/LONGBLOB.
_MAX_LENGTH = {
    Family.BIT: (64, "a BIT is at most 64 bits wide"),
    Family.DECIMAL: (65, "a DECIMAL has at most 65 digits"),
}
_MAX_ANY_LENGTH = 2**32 - 1
_MAX_FSP = 6  # DATETIME(6), TIMESTAMP(6), TIME(6)
_MAX_DECIMALS = 30  # DECIMAL(65,30), FLOAT(255,30)
_MAX_MEMBERS = {Family.ENUM: 65535, Family.SET: 64}


def _beyond_mysql(mtype: MySQLType) -> str | None:
    """What in ``mtype`` is beyond MySQL's limits (``bit(65): a BIT is at most 64 bits wide``), or None."""
    family = _FAMILY_OF.get(mtype.name)
    if family is None:
        return None  # no type at all, which MySQLType.family refuses
    length, decimals, members = mtype.length or 0, mtype.decimals or 0, len(mtype.elements or ())
    limit, why = _MAX_LENGTH.get(family, (_MAX_ANY_LENGTH, f"a length is at most {_MAX_ANY_LENGTH}"))
    if length > limit:
        fault = why
    elif family in (Family.DATETIME, Family.TIMESTAMP, Family.TIME) and decimals > _MAX_FSP:
        fault = f"a {mtype.name.upper()} has at most {_MAX_FSP} fractional digits"
    elif decimals > _MAX_DECIMALS:
        fault = f"a {mtype.name.upper()} has at most {_MAX_DECIMALS} decimals"
    elif members > _MAX_MEMBERS.get(family, members):
        return f"{mtype.name}({members} members): a {mtype.name.upper()} has at most {_MAX_MEMBERS[family]} members"
    else:
        return None
    arguments = ",".join(str(n) for n in (mtype.length, mtype.decimals) if n is not None)
    return f"{mtype.name}({arguments}): {fault}"


def _numeric_args(args: str | None, text: str) -> tuple[int | None, int | None]:
    if args is None or not args.strip():
        return None, None
    parts = [p.strip() for p in args.split(",")]
    # isascii: str.isdigit also accepts digits such as "²" that int() then refuses.
    if len(parts) > 2 or not all(p.isascii() and p.isdigit() for p in parts):
        raise TypeParseError(f"type arguments must be one or two whole numbers: {text!r}")
    if any(len(p) > 10 for p in parts):  # past every limit, and int() refuses 4300 digits with ValueError
        raise TypeParseError(f"type arguments beyond MySQL's limits: {text[:60]!r}")
    return int(parts[0]), int(parts[1]) if len(parts) == 2 else None


def _unquote_members(args: str, text: str) -> list[str]:
    members = []
    position = 0
    for match in _QUOTED_RE.finditer(args):
        if args[position : match.start()].strip(" ,"):
            raise TypeParseError(f"enum/set members must be quoted strings: {text!r}")
        single, double = match.groups()
        members.append(single.replace("''", "'") if single is not None else double.replace('""', '"'))
        position = match.end()
    if args[position:].strip(" ,"):
        raise TypeParseError(f"enum/set members must be quoted strings: {text!r}")
    return members
