"""Column and index definitions in DDL: a column's type with the defaults MySQL fills in written out,
its attributes and default, the inline and table-level keys, and the value the rows already in a table
take when a column is added.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from sqlglot import TokenType

from cdclake.model import ColumnSchema, IndexSchema
from cdclake.schema.ddl.changes import SchemaChange, SetKey
from cdclake.schema.ddl.tokens import _Cursor, _split, _word
from cdclake.types import Family, MySQLType

# --- column and index definitions -----------------------------------------------------------------------

# Words that end a column's type and begin its attributes (or its place, in an ALTER TABLE).
_ATTRIBUTE_WORDS = frozenset({
    "NOT", "NULL", "DEFAULT", "AUTO_INCREMENT", "AUTO_RANDOM", "PRIMARY", "KEY", "UNIQUE", "COMMENT",
    "COLLATE", "CHARSET", "GENERATED", "AS", "REFERENCES", "CHECK", "CONSTRAINT", "ON", "COLUMN_FORMAT",
    "STORAGE", "VISIBLE", "INVISIBLE", "SRID", "SERIAL", "FIRST", "AFTER", "ENGINE_ATTRIBUTE",
    "SECONDARY_ENGINE_ATTRIBUTE",
})

# MySQL's national character spellings, reduced to the types MySQLType knows.
_NATIONAL = [
    (re.compile(r"^\s*national\s+", re.IGNORECASE), ""),
    (re.compile(r"^\s*nchar\s+(?:varchar|varying)\b", re.IGNORECASE), "varchar"),
    (re.compile(r"^\s*nvarchar\b", re.IGNORECASE), "varchar"),
    (re.compile(r"^\s*nchar\b", re.IGNORECASE), "char"),
]
_BINARY_OF_TEXT = {
    "char": "binary", "varchar": "varbinary", "tinytext": "tinyblob", "text": "blob",
    "mediumtext": "mediumblob", "longtext": "longblob",
}
_FLOAT_MAX_PRECISION = 24  # float(p) with p above is a double


@dataclass(slots=True)
class _Inline:
    """What a column definition says beyond the column: inline keys and its place in an ALTER TABLE."""

    primary: bool = False
    unique: bool = False
    first: bool = False
    after: str | None = None
    literal_default: bool = True

    def indexes(self, name: str) -> list[IndexSchema]:
        if self.primary:
            return [IndexSchema("PRIMARY", (name,), unique=True, primary=True)]
        if self.unique:
            return [IndexSchema(name, (name,), unique=True)]
        return []

    def key_change(self, name: str) -> list[SchemaChange]:
        return [SetKey((name,))] if self.primary else []


def _index_definition(cursor: _Cursor) -> list[IndexSchema]:
    """A table-level index or constraint: the primary key or a unique index; others hold nothing a lake
    table needs."""
    name = None
    if cursor.accept("CONSTRAINT") and not cursor.peek_any("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
        name = cursor.name()
    if cursor.accept("PRIMARY", "KEY"):
        return [IndexSchema("PRIMARY", _index_columns(cursor), unique=True, primary=True)]
    if cursor.accept("UNIQUE"):
        cursor.accept_any("INDEX", "KEY")
        if not cursor.peek_type(TokenType.L_PAREN) and not cursor.peek_any("USING", "TYPE"):
            name = cursor.name()
        columns = _index_columns(cursor)
        return [IndexSchema(name or "_".join(columns), columns, unique=True)]
    return []


def _index_columns(cursor: _Cursor) -> tuple[str, ...]:
    """The column names of an index's key parts ``(a, b(10) DESC)``, after an optional name and USING."""
    while not cursor.peek_type(TokenType.L_PAREN):
        cursor.next()  # index name, USING BTREE, TiDB's CLUSTERED
    names = []
    for part in _split(cursor.group()):
        if part and part[0].token_type is not TokenType.L_PAREN:  # a functional key part has no column
            names.append(_Cursor(cursor.sql, part).name())
    return tuple(names)


def _column_definition(cursor: _Cursor) -> tuple[ColumnSchema, _Inline]:
    """``name type [attributes] [FIRST | AFTER column]``."""
    name = cursor.name()
    type_tokens = [cursor.next()]
    depth = 0
    while not cursor.done:
        token = cursor.tokens[cursor.position]
        word = _word(token)
        if depth == 0 and (word in _ATTRIBUTE_WORDS or (word == "CHARACTER" and cursor.peek("CHARACTER", "SET"))):
            break
        depth += (token.token_type is TokenType.L_PAREN) - (token.token_type is TokenType.R_PAREN)
        type_tokens.append(cursor.next())
    mtype = _type_of_ddl(cursor.text(type_tokens))
    column = ColumnSchema(name, mtype)
    inline = _Inline()
    while not cursor.done:
        column = _read_attribute(cursor, column, inline)
    if column.charset is not None and column.charset.lower() == "binary" and mtype.name in _BINARY_OF_TEXT:
        column = dataclasses.replace(column, type=dataclasses.replace(mtype, name=_BINARY_OF_TEXT[mtype.name]))
    return column, inline


def _read_attribute(cursor: _Cursor, column: ColumnSchema, inline: _Inline) -> ColumnSchema:
    if cursor.accept("NOT", "NULL"):
        return dataclasses.replace(column, nullable=False)
    if cursor.accept("NULL"):
        return dataclasses.replace(column, nullable=True)
    if cursor.accept("DEFAULT"):
        default, inline.literal_default = _default(cursor)
        return dataclasses.replace(column, default=default)
    if cursor.accept("SERIAL", "DEFAULT", "VALUE"):  # NOT NULL AUTO_INCREMENT UNIQUE
        inline.unique = True
        return dataclasses.replace(column, nullable=False)
    if cursor.accept("CHARACTER", "SET") or cursor.accept("CHARSET"):
        return dataclasses.replace(column, charset=cursor.name())
    if cursor.accept("COLLATE"):
        return dataclasses.replace(column, collation=cursor.name())
    if cursor.accept("PRIMARY", "KEY") or cursor.accept("KEY"):
        inline.primary = True
    elif cursor.accept("UNIQUE"):
        cursor.accept("KEY")
        inline.unique = True
    elif cursor.accept("FIRST"):
        inline.first = True
    elif cursor.accept("AFTER"):
        inline.after = cursor.name()
    elif cursor.accept("REFERENCES"):
        cursor.rest()  # a foreign key: nothing a lake table holds, and it ends the definition
    else:
        # COMMENT 'x', AUTO_INCREMENT, AUTO_RANDOM(5), GENERATED ALWAYS AS (expr) STORED, ON UPDATE
        # CURRENT_TIMESTAMP, CHECK (expr), SRID 4326 ...: each a word and perhaps one value.
        cursor.next()
        if not cursor.done and (cursor.peek_type(TokenType.L_PAREN) or _word(cursor.tokens[cursor.position]) is None):
            cursor.skip_value()
    return column


def _default(cursor: _Cursor) -> tuple[str | None, bool]:
    """A DEFAULT's value as text, and whether it is a literal: a string's or number's value (``'it''s'``
    is ``it's``), a bit literal's number, TRUE as 1; an expression (``CURRENT_TIMESTAMP(3)``,
    ``(uuid())``) as written. None for NULL."""
    tokens = cursor.skip_value()
    first = tokens[0]
    if first.token_type is TokenType.NULL:
        return None, True
    if first.token_type in (TokenType.TRUE, TokenType.FALSE):
        return ("1" if first.token_type is TokenType.TRUE else "0"), True
    if len(tokens) == 1 and first.token_type in (TokenType.STRING, TokenType.NUMBER, TokenType.NATIONAL_STRING):
        return first.text, True
    if first.token_type is TokenType.INTRODUCER:  # _utf8mb4'text'
        return tokens[1].text, True
    if first.token_type in (TokenType.DASH, TokenType.PLUS) and tokens[1].token_type is TokenType.NUMBER:
        return ("-" if first.token_type is TokenType.DASH else "") + tokens[1].text, True
    if len(tokens) == 1 and first.token_type is TokenType.BIT_STRING:
        return str(int(first.text, 2)), True
    return cursor.text(tokens), False


def _type_of_ddl(text: str) -> MySQLType:
    """A column type as written in DDL, with the defaults MySQL fills in written out."""
    for pattern, replacement in _NATIONAL:
        text = pattern.sub(replacement, text, count=1)
    mtype = MySQLType.parse(text)
    family = mtype.family
    if family is Family.BIT and mtype.length is None:
        return dataclasses.replace(mtype, length=1)
    if family is Family.DECIMAL:
        return dataclasses.replace(mtype, length=mtype.length or 10, decimals=mtype.decimals or 0)
    if family is Family.FLOAT and mtype.length is not None and mtype.decimals is None:
        # float(p) is MySQL's precision in bits: a float up to 24, a double beyond.
        name = "float" if mtype.length <= _FLOAT_MAX_PRECISION else "double"
        return dataclasses.replace(mtype, name=name, length=None)
    if family in (Family.DATETIME, Family.TIMESTAMP, Family.TIME) and mtype.decimals is None:
        return dataclasses.replace(mtype, decimals=0)
    return mtype


# MySQL's implicit default of a NOT NULL column without DEFAULT, the value the rows already there take
# when such a column is added (temporal types: their zero value, which the lake holds as NULL).
def _implicit_default(mtype: MySQLType) -> str | None:
    family = mtype.family
    if family in (Family.INTEGER, Family.BIT, Family.YEAR, Family.FLOAT, Family.DOUBLE, Family.DECIMAL):
        return "0"
    if family in (Family.STRING, Family.SET):
        return ""
    if family is Family.ENUM:
        return mtype.elements[0] if mtype.elements else None
    if family is Family.TIME:
        return "00:00:00"
    return None


def _fill(column: ColumnSchema, literal_default: bool) -> str | None:
    """The value the rows already there take when ``column`` is added (see
    :class:`~cdclake.schema.ddl.changes.AddColumn`)."""
    if column.default is not None:
        return column.default if literal_default else None
    return None if column.nullable else _implicit_default(column.type)
