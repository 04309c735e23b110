"""The statements of a DDL read into the changes they make to its table: CREATE, ALTER, DROP, RENAME
and TRUNCATE TABLE, the statements that change no table, those that cannot be followed, and each
specification of an ALTER TABLE.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from sqlglot import TokenType

from cdclake.errors import TypeParseError
from cdclake.model import ColumnSchema, Ddl, IndexSchema, TableSchema
from cdclake.schema.ddl.changes import (
    AddColumn,
    CreateTable,
    DropColumn,
    DropDatabase,
    DropTable,
    ModifyColumn,
    RenameColumn,
    RenameTable,
    SchemaChange,
    SetKey,
    TruncateTable,
    schema_after,
)
from cdclake.schema.ddl.columns import _column_definition, _default, _fill, _index_definition
from cdclake.schema.ddl.tokens import _Cursor, _qualified, _same_name, _split, _Unreadable, _word


class _Unfollowable(Exception):
    """A statement that changes rows the stream does not carry: always a
    :class:`~cdclake.schema.ddl.DdlInterpretError`."""


def _attempted(refused: list[str] | None, cursor: _Cursor, read: Callable[[], list[SchemaChange]]
               ) -> list[SchemaChange]:
    """``read()``'s changes, for the part of a statement ``cursor`` holds. Where that part cannot be
    followed: the error, or, when ``refused`` collects them, no change and the reason kept, naming
    the part."""
    if refused is None:
        return read()
    try:
        return read()
    except (_Unfollowable, _Unreadable, TypeParseError) as exc:
        refused.append(f"{cursor.text(cursor.tokens)!r}: {exc}")
        return []


def _accept_create_table(cursor: _Cursor) -> bool:
    cursor.accept_any("GLOBAL", "LOCAL")
    cursor.accept("TEMPORARY")
    if not cursor.accept("TABLE"):
        return False
    cursor.accept("IF", "NOT", "EXISTS")
    return True


def _accept_alter_table(cursor: _Cursor) -> bool:
    while cursor.accept_any("ONLINE", "OFFLINE", "IGNORE"):
        pass
    return cursor.accept("TABLE")


# Statements that change no table's rows or columns.
_HARMLESS_OBJECTS = (
    "VIEW", "SEQUENCE", "PLACEMENT", "RESOURCE", "USER", "ROLE", "DATABASE", "SCHEMA", "FUNCTION",
    "PROCEDURE", "TRIGGER", "EVENT", "STATISTICS", "BINDING",
)
_HARMLESS_STATEMENTS = ("GRANT", "REVOKE", "SET", "ANALYZE", "FLUSH", "USE")


class _Statement:
    """One statement's changes to the ``Ddl``'s table, whose schema before it is ``current``; where
    ``refused`` collects reasons, an ALTER TABLE specification it cannot follow is left out with its
    reason there (see :func:`_attempted`)."""

    def __init__(self, ddl: Ddl, cursor: _Cursor, current: TableSchema | None, among_several: bool,
                 refused: list[str] | None = None) -> None:
        self.ddl = ddl
        self.cursor = cursor
        self.current = current
        # Several statements in one Ddl: only those naming its table concern it.
        self.among_several = among_several
        self.refused = refused

    def concerns(self, name: tuple[str | None, str]) -> bool:
        return not self.among_several or _same_name(_qualified(self.ddl, name), (self.ddl.database, self.ddl.table))

    def changes(self) -> list[SchemaChange]:
        cursor = self.cursor
        if cursor.accept("CREATE"):
            return self.create()
        if cursor.accept("ALTER"):
            if _accept_alter_table(cursor):
                return self.alter_table()
            return self.harmless_or_refused("ALTER")
        if cursor.accept("DROP"):
            return self.drop()
        if cursor.accept("RENAME"):
            if cursor.accept_any("TABLE", "TABLES"):
                return self.rename_tables()
            return self.harmless_or_refused("RENAME")
        if cursor.accept("TRUNCATE"):
            cursor.accept("TABLE")
            return [TruncateTable()] if self.concerns(cursor.qualified_name()) else []
        if cursor.accept_any(*_HARMLESS_STATEMENTS):
            return []
        if cursor.peek_any("FLASHBACK", "RECOVER"):
            raise _Unfollowable("FLASHBACK and RECOVER TABLE bring back rows the stream does not repeat")
        raise _Unreadable("not a statement cdclake knows how to follow in a lake table")

    def harmless_or_refused(self, verb: str) -> list[SchemaChange]:
        """[] for a statement on an object that is no table (``CREATE ALGORITHM=MERGE ... VIEW``):
        one of those words comes before any parenthesis."""
        for token in self.cursor.rest():
            if token.token_type is TokenType.L_PAREN:
                break
            if _word(token) in _HARMLESS_OBJECTS:
                return []
        raise _Unreadable(f"not a {verb} statement cdclake knows how to follow in a lake table")

    def names_this_table(self, names: Iterable[tuple[str | None, str]]) -> bool:
        this = (self.ddl.database, self.ddl.table)
        return any(_same_name(_qualified(self.ddl, name), this) for name in names)

    # CREATE ...

    def create(self) -> list[SchemaChange]:
        cursor = self.cursor
        if _accept_create_table(cursor):
            return self.create_table()
        cursor.accept_any("UNIQUE", "FULLTEXT", "SPATIAL")
        if cursor.accept("INDEX"):
            return []  # an index other than the primary key: nothing a lake table holds
        return self.harmless_or_refused("CREATE")

    def create_table(self) -> list[SchemaChange]:
        cursor = self.cursor
        name = cursor.qualified_name()
        if not self.concerns(name):
            return []
        # The producer's names decide, as for every other event of the table (Canal names a DDL by the
        # session's database where the statement may name another).
        database, table = _qualified(self.ddl, name)
        database, table = self.ddl.database or database, self.ddl.table or table
        if not cursor.peek_type(TokenType.L_PAREN):
            raise _Unreadable("a CREATE TABLE without a column list (... LIKE, ... AS SELECT) needs another "
                              "table's schema, which this DDL does not carry (the Simple protocol's does)")
        columns: list[ColumnSchema] = []
        indexes: list[IndexSchema] = []
        for element in _split(cursor.group()):
            definition = _Cursor(self.ddl.sql, element)
            if definition.peek_any(*_INDEX_WORDS):
                indexes += _index_definition(definition)
                continue
            column, inline = _column_definition(definition)
            columns.append(column)
            indexes += inline.indexes(column.name)
        if cursor.peek_any("AS", "SELECT", "IGNORE", "REPLACE"):
            raise _Unfollowable("CREATE TABLE ... SELECT fills the table with rows the stream does not carry")
        # What follows are table options (engine, charset, partitioning, TiDB's): nothing in the lake.
        # MySQL makes the primary key's columns NOT NULL.
        primary = [index for index in indexes if index.primary][:1]
        key = {name.lower() for index in primary for name in index.columns}
        columns = [dataclasses.replace(c, nullable=False) if c.name.lower() in key else c for c in columns]
        unique = [index for index in indexes if not index.primary]
        return [CreateTable(TableSchema(database, table, tuple(columns), (*primary, *unique)))]

    # DROP ...

    def drop(self) -> list[SchemaChange]:
        cursor = self.cursor
        cursor.accept("TEMPORARY")
        if cursor.accept_any("TABLE", "TABLES"):
            cursor.accept("IF", "EXISTS")
            names = [_Cursor(self.ddl.sql, part).qualified_name() for part in _split(cursor.rest())]
            # TiCDC sends DROP TABLE a, b once per table, each naming its own.
            dropped = self.names_this_table(names) or (len(names) == 1 and self.concerns(names[0]))
            return [DropTable()] if dropped else []
        if cursor.accept("INDEX"):
            cursor.accept("IF", "EXISTS")
            return [SetKey(())] if cursor.name().upper() == "PRIMARY" else []
        if cursor.accept_any("DATABASE", "SCHEMA"):
            cursor.accept("IF", "EXISTS")
            return [DropDatabase(cursor.name())]
        return self.harmless_or_refused("DROP")

    # RENAME TABLE ...

    def rename_tables(self) -> list[SchemaChange]:
        pair = _rename_pair(self.ddl, _rename_pairs(self.ddl, self.cursor))
        if pair is None:
            if self.among_several:
                return []
            raise _Unreadable(f"renames no table named {self.ddl.database}.{self.ddl.table}, before or after")
        return [RenameTable(*pair[1])]

    # ALTER TABLE ...

    def alter_table(self) -> list[SchemaChange]:
        cursor = self.cursor
        name = cursor.qualified_name()
        if not self.concerns(name):
            return []
        changes: list[SchemaChange] = []
        schema = self.current
        for tokens in _split(cursor.rest()):
            spec = _AlterSpec(self.ddl, _Cursor(self.ddl.sql, tokens), schema)
            found = _attempted(self.refused, spec.cursor, spec.changes)
            changes += found
            schema = schema_after(schema, found)
        return changes


def _rename_pairs(ddl: Ddl, cursor: _Cursor) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    pairs = []
    for part in _split(cursor.rest()):
        pair = _Cursor(ddl.sql, part)
        old = _qualified(ddl, pair.qualified_name())
        if not pair.accept("TO"):
            raise _Unreadable("expected RENAME TABLE old TO new")
        pairs.append((old, _qualified(ddl, pair.qualified_name())))
    return pairs


def _rename_pair(
    ddl: Ddl, pairs: list[tuple[tuple[str, str], tuple[str, str]]]
) -> tuple[tuple[str, str], tuple[str, str]] | None:
    """The pair that renames the ``Ddl``'s table: the one whose new name it has (TiCDC names the table after
    the rename), else the one whose old name it has."""
    this = (ddl.database, ddl.table)
    if ddl.schema_after is not None:
        this = (ddl.schema_after.database, ddl.schema_after.table)
    for pair in pairs:
        if _same_name(pair[1], this):
            return pair
    for pair in pairs:
        if _same_name(pair[0], this):
            return pair
    return None


# --- ALTER TABLE specifications ----------------------------------------------------------------------------

_INDEX_WORDS = ("CONSTRAINT", "PRIMARY", "UNIQUE", "INDEX", "KEY", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK")
_ROWS_WITHOUT_EVENTS = {
    "DROP": "ALTER TABLE ... DROP PARTITION deletes the partition's rows without a row event for them",
    "TRUNCATE": "ALTER TABLE ... TRUNCATE PARTITION deletes the partition's rows without a row event for them",
    "EXCHANGE": "ALTER TABLE ... EXCHANGE PARTITION swaps rows between tables without a row event for them",
}


class _AlterSpec:
    """One specification of an ALTER TABLE, e.g. ``ADD COLUMN c int AFTER b``."""

    def __init__(self, ddl: Ddl, cursor: _Cursor, current: TableSchema | None) -> None:
        self.ddl = ddl
        self.cursor = cursor
        self.current = current

    def column(self, name: str) -> ColumnSchema | None:
        """The current definition of column ``name`` (MySQL's column names are case-insensitive)."""
        return None if self.current is None else self.current.find_column(name)

    def known_name(self, name: str) -> str:
        column = self.column(name)
        return column.name if column is not None else name

    def changes(self) -> list[SchemaChange]:
        cursor = self.cursor
        verb = cursor.accept_any("ADD", "DROP", "MODIFY", "CHANGE", "RENAME", "ALTER", "TRUNCATE", "EXCHANGE")
        if verb is not None and cursor.peek("PARTITION") and verb in _ROWS_WITHOUT_EVENTS:
            raise _Unfollowable(_ROWS_WITHOUT_EVENTS[verb])
        if verb == "ADD":
            return self.add()
        if verb == "DROP":
            return self.drop()
        if verb == "MODIFY":
            cursor.accept("COLUMN")
            cursor.accept("IF", "EXISTS")
            column, inline = _column_definition(cursor)
            column = dataclasses.replace(column, name=self.known_name(column.name))
            return [ModifyColumn(column), *inline.key_change(column.name)]
        if verb == "CHANGE":
            cursor.accept("COLUMN")
            cursor.accept("IF", "EXISTS")
            old = self.known_name(cursor.name())
            column, inline = _column_definition(cursor)
            renamed: list[SchemaChange] = [RenameColumn(old, column.name)] if old != column.name else []
            return [*renamed, ModifyColumn(column), *inline.key_change(column.name)]
        if verb == "RENAME":
            return self.rename()
        if verb == "ALTER" and not cursor.peek_any("INDEX", "CHECK", "CONSTRAINT"):
            return self.alter_column()
        # Table options, charset conversion, partitioning, ALGORITHM/LOCK, TiFlash replicas, caching ...
        return []

    def add(self) -> list[SchemaChange]:
        cursor = self.cursor
        said_column = cursor.accept("COLUMN")
        if not said_column and cursor.peek_any(*_INDEX_WORDS):
            return [SetKey(index.columns) for index in _index_definition(cursor) if index.primary]
        if not said_column and cursor.peek_any("PARTITION", "STATS_EXTENDED"):
            return []
        if_not_exists = cursor.accept("IF", "NOT", "EXISTS")
        if cursor.peek_type(TokenType.L_PAREN):
            definitions = [_column_definition(_Cursor(self.ddl.sql, part)) for part in _split(cursor.group())]
        else:
            definitions = [_column_definition(cursor)]
        changes: list[SchemaChange] = []
        for column, inline in definitions:
            if if_not_exists and self.column(column.name) is not None:
                continue
            after = self.known_name(inline.after) if inline.after is not None else None
            fill = _fill(column, inline.literal_default)
            changes += [AddColumn(column, after, inline.first, fill), *inline.key_change(column.name)]
        return changes

    def drop(self) -> list[SchemaChange]:
        cursor = self.cursor
        if cursor.accept("PRIMARY", "KEY"):
            return [SetKey(())]
        if cursor.accept_any("INDEX", "KEY"):
            return [SetKey(())] if cursor.name().upper() == "PRIMARY" else []
        if cursor.peek_any("FOREIGN", "CHECK", "CONSTRAINT", "STATS_EXTENDED"):
            return []
        cursor.accept("COLUMN")
        if_exists = cursor.accept("IF", "EXISTS")
        column = self.column(name := cursor.name())
        if column is None and if_exists:
            return []
        return [DropColumn(column.name if column is not None else name)]

    def rename(self) -> list[SchemaChange]:
        cursor = self.cursor
        if cursor.accept("COLUMN"):
            old = self.known_name(cursor.name())
            if not cursor.accept("TO"):
                raise _Unreadable("expected RENAME COLUMN old TO new")
            return [RenameColumn(old, cursor.name())]
        if cursor.accept_any("INDEX", "KEY"):
            return []
        if not cursor.accept_any("TO", "AS") and cursor.peek_type(TokenType.EQ):
            cursor.next()
        return [RenameTable(*_qualified(self.ddl, cursor.qualified_name()))]

    def alter_column(self) -> list[SchemaChange]:
        cursor = self.cursor
        cursor.accept("COLUMN")
        column = self.column(cursor.name())
        if cursor.accept("SET", "DEFAULT"):
            default, _ = _default(cursor)
        elif cursor.accept("DROP", "DEFAULT"):
            default = None
        else:
            return []  # SET VISIBLE / INVISIBLE
        if column is None:
            return []  # a column this schema does not know: its other attributes are unknown
        return [ModifyColumn(dataclasses.replace(column, default=default))]
