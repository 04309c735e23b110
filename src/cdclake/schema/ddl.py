"""DDL statements read into schema changes in MySQL terms, and a table's schema after them.

:func:`interpret` turns one :class:`~cdclake.model.Ddl` into the :data:`SchemaChange` list it makes to
one table; :func:`schema_after` applies such a list to the table's :class:`~cdclake.model.TableSchema`,
so the pipeline can track every table's MySQL schema whatever the format carries. Statements that
change nothing a lake table holds (indexes other than the primary key, comments, charsets, table
options, partitioning, views, sequences, placement) give no change.

**How the SQL is read.** sqlglot's MySQL tokenizer does the lexing (quoted identifiers, strings and their
escapes, comments, TiDB's ``/*T! ... */``); the small part of MySQL's DDL grammar that can change a
lake table is read from its tokens here. sqlglot's parser does not serve for that: it maps MySQL types
onto its own (``REAL`` becomes FLOAT, ``INT8`` TINYINT, ``LONG`` BIGINT, the spatial subtypes fail),
and it turns a partitioned CREATE TABLE, ``RENAME TABLE`` and an ALTER that adds a column list into
an opaque command. A column's type is taken as written and read by :meth:`MySQLType.parse`, with the
defaults MySQL fills in written out (bare ``bit`` is bit(1), ``decimal`` decimal(10,0), ``float(53)``
a double, a temporal type without precision has fsp 0), so a type read from DDL always says as much
as MySQL's own ``SHOW CREATE TABLE``.

**Simple protocol.** Its DDL messages carry the schema before and after. A CREATE TABLE takes the
schema after as it is. For other statements the changes read from the SQL keep their order, each
added or modified column takes its definition from the schema after, and whatever the schema after
holds that the SQL did not say (a charset conversion, a statement the reader did not follow) is added
as a difference of the two schemas. Only the SQL tells a RENAME COLUMN from a drop and an add; when the
SQL cannot be read, the difference alone decides.

**Which table.** TiCDC names a DDL after the table it leaves behind: a RENAME TABLE's ``Ddl`` names the
new table. :func:`table_before` gives the name a DDL's table had before it ran, the table whose
schema :func:`interpret` needs. In ``RENAME TABLE a TO b, c TO d`` the pair whose new name is the
``Ddl``'s table concerns it, else the pair whose old name is; unqualified names are in the ``Ddl``'s
database. Several statements in one ``Ddl`` are read in order, keeping those that name its table.

**What cannot be followed.** DROP, TRUNCATE and EXCHANGE PARTITION delete or move rows without a row
event for them; FLASHBACK and RECOVER TABLE bring back rows the stream never repeats; CREATE TABLE ...
LIKE and ... SELECT need another table's schema (the Simple protocol's schema after serves). These, and
statements the reader does not know, raise :class:`DdlInterpretError` naming the statement and its
commit ts.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from sqlglot import Token, TokenType
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import TokenError

from cdclake.errors import CdclakeError, TypeParseError
from cdclake.model import ColumnSchema, Ddl, IndexSchema, TableSchema
from cdclake.types import Family, MySQLType

# --- the changes ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateTable:
    schema: TableSchema


@dataclass(frozen=True, slots=True)
class DropTable:
    pass


@dataclass(frozen=True, slots=True)
class RenameTable:
    """The table is now ``database.table``."""

    database: str
    table: str


@dataclass(frozen=True, slots=True)
class TruncateTable:
    pass


@dataclass(frozen=True, slots=True)
class DropDatabase:
    """The database and every table in it are gone."""

    database: str


@dataclass(frozen=True, slots=True)
class AddColumn:
    """A new column, placed ``first``, ``after`` a column, or last.

    ``fill`` is the value, as MySQL text, that the rows already in the table take: the column's literal
    default, or for a NOT NULL column without one the type's implicit default (0, '', an enum's first
    member). None where they take NULL, or a value the stream does not tell (an expression such as
    CURRENT_TIMESTAMP is evaluated by MySQL when the column is added).
    """

    column: ColumnSchema
    after: str | None = None
    first: bool = False
    fill: str | None = None


@dataclass(frozen=True, slots=True)
class DropColumn:
    name: str


@dataclass(frozen=True, slots=True)
class RenameColumn:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class ModifyColumn:
    """The column ``column.name`` is now defined as ``column`` (type, nullability, default, charset).
    A change of position is not kept: the lake's column order does not follow MySQL's."""

    column: ColumnSchema


@dataclass(frozen=True, slots=True)
class SetKey:
    """The primary key is now ``columns``; none if empty."""

    columns: tuple[str, ...]


SchemaChange = (
    CreateTable | DropTable | RenameTable | TruncateTable | DropDatabase
    | AddColumn | DropColumn | RenameColumn | ModifyColumn | SetKey
)


class DdlInterpretError(CdclakeError):
    """A DDL statement cdclake cannot read, or cannot follow in a lake table."""

    def __init__(self, ddl: Ddl, reason: str) -> None:
        self.ddl = ddl
        self.reason = reason
        where = f" at {ddl.origin}" if ddl.origin is not None else ""
        sql = ddl.sql if len(ddl.sql) <= 300 else ddl.sql[:297] + "..."
        super().__init__(f"DDL with commit ts {ddl.commit_ts}{where}: {reason}; the statement: {sql!r}")


class _Unreadable(Exception):
    """A statement the reader cannot read; :func:`interpret` turns it into a :class:`DdlInterpretError`
    unless the Simple protocol's schemas tell the changes."""


class _Unfollowable(Exception):
    """A statement that changes rows the stream does not carry: always a :class:`DdlInterpretError`."""


# --- the entry points ---------------------------------------------------------------------------------


def interpret(ddl: Ddl, current: TableSchema | None) -> list[SchemaChange]:
    """The changes ``ddl`` makes to its table, whose schema before it is ``current`` (None if unknown;
    then changes that need the old definition of a column, such as ALTER COLUMN ... SET DEFAULT, are
    left out)."""
    if ddl.schema_after is not None and _reads_as_create(ddl):
        return [CreateTable(ddl.schema_after)]
    before = ddl.schema_before or current
    try:
        changes = _changes_of_sql(ddl, before)
    except _Unfollowable as exc:
        raise DdlInterpretError(ddl, str(exc)) from exc
    except (_Unreadable, TypeParseError) as exc:
        if ddl.schema_after is None or before is None:
            raise DdlInterpretError(ddl, str(exc)) from exc
        return _differences(before, ddl.schema_after)
    if ddl.schema_after is None or before is None:
        return changes
    return _reconciled(changes, before, ddl.schema_after)


def schema_after(current: TableSchema | None, changes: Iterable[SchemaChange]) -> TableSchema | None:
    """The table's schema once ``changes`` are made to ``current``; None once it is dropped (or while
    unknown: a change to an unknown table tells too little to know it)."""
    schema = current
    for change in changes:
        if isinstance(change, CreateTable):
            schema = change.schema
        elif isinstance(change, DropTable):
            schema = None
        elif isinstance(change, DropDatabase):
            if schema is not None and schema.database.lower() == change.database.lower():
                schema = None
        elif schema is not None:
            schema = _changed(schema, change)
    return schema


def table_before(ddl: Ddl) -> tuple[str, str]:
    """The (database, table) ``ddl``'s table had before it ran: its own, except for a rename, whose
    ``Ddl`` names the new table (see "Which table" in the module docstring)."""
    if ddl.schema_before is not None:
        return ddl.schema_before.database, ddl.schema_before.table
    try:
        for tokens in _statements(ddl.sql):
            old_name = _renamed_from(ddl, _Cursor(ddl.sql, tokens))
            if old_name is not None:
                return old_name
    except _Unreadable:
        pass  # interpret says what is wrong with the statement
    return ddl.database, ddl.table


def _renamed_from(ddl: Ddl, cursor: _Cursor) -> tuple[str, str] | None:
    """The old name of the table a RENAME TABLE or ALTER TABLE ... RENAME renames to the ``Ddl``'s."""
    if cursor.accept("RENAME") and cursor.accept_any("TABLE", "TABLES"):
        pair = _rename_pair(ddl, _rename_pairs(ddl, cursor))
        return pair[0] if pair is not None else None
    if cursor.accept("ALTER") and _accept_alter_table(cursor):
        name = _qualified(ddl, cursor.qualified_name())
        specs = [_Cursor(ddl.sql, spec) for spec in _split(cursor.rest())]
        if any(spec.accept("RENAME") and not spec.peek_any("COLUMN", "INDEX", "KEY") for spec in specs):
            return name
    return None


# --- reading statements ----------------------------------------------------------------------------------


class _Tokenizer(MySQL.Tokenizer):
    # sqlglot reads what follows RENAME or REPLACE as one opaque string; a RENAME TABLE's names are needed.
    COMMANDS: ClassVar[set[TokenType]] = set()


_NOT_WORDS = {
    TokenType.IDENTIFIER, TokenType.NUMBER, TokenType.STRING, TokenType.BIT_STRING, TokenType.HEX_STRING,
    TokenType.BYTE_STRING, TokenType.NATIONAL_STRING, TokenType.RAW_STRING, TokenType.UNICODE_STRING,
}
_WORD = re.compile(r"[A-Za-z_$][\w$]*")


def _word(token: Token) -> str | None:
    """The keyword a token spells, upper-cased; None for quoted names, strings, numbers and symbols."""
    if token.token_type in _NOT_WORDS or not _WORD.fullmatch(token.text):
        return None
    return token.text.upper()


def _statements(sql: str) -> list[list[Token]]:
    try:
        tokens = _Tokenizer(dialect="mysql").tokenize(sql)
    except TokenError as exc:
        raise _Unreadable(f"not readable as SQL ({exc})") from exc
    words = [word for token in tokens for word in _words_of(token)]
    return [statement for statement in _split(words, TokenType.SEMICOLON) if statement]


def _words_of(token: Token) -> list[Token]:
    """sqlglot makes one token of some word pairs (``PRIMARY KEY``, ``DOUBLE PRECISION``); one token per
    word here, each spanning the pair in the source."""
    if token.token_type in _NOT_WORDS or " " not in token.text:
        return [token]
    return [Token(TokenType.VAR, word, token.line, token.col, token.start, token.end) for word in token.text.split()]


def _split(tokens: Sequence[Token], separator: TokenType = TokenType.COMMA) -> list[list[Token]]:
    """``tokens`` cut at each ``separator`` outside parentheses."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.token_type is TokenType.L_PAREN:
            depth += 1
        elif token.token_type is TokenType.R_PAREN:
            depth -= 1
        if token.token_type is separator and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


class _Cursor:
    """Reads a statement's tokens front to back."""

    def __init__(self, sql: str, tokens: Sequence[Token]) -> None:
        self.sql = sql
        self.tokens = tokens
        self.position = 0

    @property
    def done(self) -> bool:
        return self.position >= len(self.tokens)

    def _word_at(self, offset: int) -> str | None:
        index = self.position + offset
        return _word(self.tokens[index]) if index < len(self.tokens) else None

    def peek(self, *words: str) -> bool:
        return all(self._word_at(i) == word for i, word in enumerate(words))

    def peek_any(self, *words: str) -> bool:
        return self._word_at(0) in words

    def peek_type(self, token_type: TokenType) -> bool:
        return not self.done and self.tokens[self.position].token_type is token_type

    def accept(self, *words: str) -> bool:
        if self.peek(*words):
            self.position += len(words)
            return True
        return False

    def accept_any(self, *words: str) -> str | None:
        word = self._word_at(0)
        if word in words:
            self.position += 1
            return word
        return None

    def next(self) -> Token:
        if self.done:
            raise _Unreadable(f"the statement ends early: {self.text(self.tokens)!r}")
        token = self.tokens[self.position]
        self.position += 1
        return token

    def name(self) -> str:
        token = self.next()
        if token.token_type is TokenType.IDENTIFIER or _word(token) is not None:
            return token.text
        raise _Unreadable(f"expected a name, found {token.text!r}")

    def qualified_name(self) -> tuple[str | None, str]:
        first = self.name()
        if self.peek_type(TokenType.DOT):
            self.position += 1
            return first, self.name()
        return None, first

    def group(self) -> list[Token]:
        """The tokens inside the parentheses that open here."""
        if not self.peek_type(TokenType.L_PAREN):
            found = "the end" if self.done else repr(self.tokens[self.position].text)
            raise _Unreadable(f"expected '(', found {found}")
        depth = 0
        for index in range(self.position, len(self.tokens)):
            kind = self.tokens[index].token_type
            depth += (kind is TokenType.L_PAREN) - (kind is TokenType.R_PAREN)
            if depth == 0:
                inner = list(self.tokens[self.position + 1 : index])
                self.position = index + 1
                return inner
        raise _Unreadable("unbalanced parentheses")

    def skip_value(self) -> list[Token]:
        """One value: a literal, a signed number, a word with or without arguments, or a parenthesised
        expression; the tokens it took."""
        start = self.position
        if self.peek_type(TokenType.L_PAREN):
            self.group()
        else:
            token = self.next()
            if token.token_type in (TokenType.DASH, TokenType.PLUS, TokenType.INTRODUCER):
                self.next()
            elif self.peek_type(TokenType.L_PAREN):
                self.group()
        return list(self.tokens[start : self.position])

    def rest(self) -> list[Token]:
        rest = list(self.tokens[self.position :])
        self.position = len(self.tokens)
        return rest

    def text(self, tokens: Sequence[Token]) -> str:
        return self.sql[tokens[0].start : tokens[-1].end + 1] if tokens else ""


def _qualified(ddl: Ddl, name: tuple[str | None, str]) -> tuple[str, str]:
    database, table = name
    return database if database is not None else ddl.database, table


def _same_name(a: tuple[str, str], b: tuple[str, str]) -> bool:
    # TiDB compares database and table names case-insensitively (lower-case-table-names = 2).
    return a[0].lower() == b[0].lower() and a[1].lower() == b[1].lower()


def _reads_as_create(ddl: Ddl) -> bool:
    try:
        statements = _statements(ddl.sql)
    except _Unreadable:
        return False
    cursors = [_Cursor(ddl.sql, tokens) for tokens in statements]
    return any(cursor.accept("CREATE") and _accept_create_table(cursor) for cursor in cursors)


def _changes_of_sql(ddl: Ddl, current: TableSchema | None) -> list[SchemaChange]:
    statements = _statements(ddl.sql)
    several = len(statements) > 1
    changes: list[SchemaChange] = []
    schema = current
    for tokens in statements:
        statement = _Statement(ddl, _Cursor(ddl.sql, tokens), schema, several)
        found = statement.changes()
        changes += found
        schema = schema_after(schema, found)
    return changes


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
    """One statement's changes to the ``Ddl``'s table, whose schema before it is ``current``."""

    def __init__(self, ddl: Ddl, cursor: _Cursor, current: TableSchema | None, among_several: bool) -> None:
        self.ddl = ddl
        self.cursor = cursor
        self.current = current
        # Several statements in one Ddl: only those naming its table concern it.
        self.among_several = among_several

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
            spec = _Cursor(self.ddl.sql, tokens)
            found = _AlterSpec(self.ddl, spec, schema).changes()
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
        if self.current is None:
            return None
        lowered = name.lower()
        return next((c for c in self.current.columns if c.name.lower() == lowered), None)

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
    """The value the rows already there take when ``column`` is added (see :class:`AddColumn`)."""
    if column.default is not None:
        return column.default if literal_default else None
    return None if column.nullable else _implicit_default(column.type)


# --- applying changes -----------------------------------------------------------------------------------


def _changed(schema: TableSchema, change: SchemaChange) -> TableSchema:
    columns = list(schema.columns)
    indexes = list(schema.indexes)
    if isinstance(change, RenameTable):
        return dataclasses.replace(schema, database=change.database, table=change.table)
    if isinstance(change, AddColumn):
        names = [c.name.lower() for c in columns]
        if change.first:
            place = 0
        elif change.after is not None and change.after.lower() in names:
            place = names.index(change.after.lower()) + 1
        else:
            place = len(columns)
        columns.insert(place, change.column)
    elif isinstance(change, DropColumn):
        columns = [c for c in columns if c.name.lower() != change.name.lower()]
        indexes = _without_column(indexes, change.name)
    elif isinstance(change, RenameColumn):
        columns = [dataclasses.replace(c, name=change.new) if c.name.lower() == change.old.lower() else c
                   for c in columns]
        indexes = [dataclasses.replace(i, columns=tuple(change.new if n.lower() == change.old.lower() else n
                                                         for n in i.columns)) for i in indexes]
    elif isinstance(change, ModifyColumn):
        name = change.column.name.lower()
        columns = [change.column if c.name.lower() == name else c for c in columns]
    elif isinstance(change, SetKey):
        indexes = [i for i in indexes if not i.primary]
        if change.columns:
            indexes.insert(0, IndexSchema("PRIMARY", change.columns, unique=True, primary=True))
            key = {n.lower() for n in change.columns}
            columns = [dataclasses.replace(c, nullable=False) if c.name.lower() in key else c for c in columns]
    return dataclasses.replace(schema, columns=tuple(columns), indexes=tuple(indexes))


def _without_column(indexes: list[IndexSchema], name: str) -> list[IndexSchema]:
    """MySQL drops a column from every index holding it, and an index left with no column."""
    kept = []
    for index in indexes:
        columns = tuple(c for c in index.columns if c.lower() != name.lower())
        if columns:
            kept.append(dataclasses.replace(index, columns=columns))
    return kept


# --- Simple protocol: the SQL's changes checked against the schema after ---------------------------------


def _reconciled(changes: list[SchemaChange], before: TableSchema, after: TableSchema) -> list[SchemaChange]:
    """The SQL's changes, with columns as the schema after defines them, plus what the SQL did not say."""
    defined = {c.name.lower(): c for c in after.columns}
    exact: list[SchemaChange] = []
    for change in changes:
        if isinstance(change, AddColumn | ModifyColumn) and change.column.name.lower() in defined:
            change = dataclasses.replace(change, column=defined[change.column.name.lower()])
        exact.append(change)
    predicted = schema_after(before, exact)
    if predicted is None:
        return exact
    return exact + _differences(predicted, after)


def _differences(before: TableSchema, after: TableSchema) -> list[SchemaChange]:
    """Changes that turn ``before`` into ``after``: a renamed column shows as dropped and added."""
    changes: list[SchemaChange] = []
    if not _same_name((before.database, before.table), (after.database, after.table)):
        changes.append(RenameTable(after.database, after.table))
    old = {c.name.lower(): c for c in before.columns}
    new = {c.name.lower(): c for c in after.columns}
    changes += [DropColumn(c.name) for c in before.columns if c.name.lower() not in new]
    previous = None
    for column in after.columns:
        known = old.get(column.name.lower())
        if known is None:
            # The schema does not tell a literal default from an expression: evolution skips a fill that
            # does not read as a value of the column's type (CURRENT_TIMESTAMP).
            changes.append(AddColumn(column, previous, previous is None, _fill(column, literal_default=True)))
        elif known != column:
            changes.append(ModifyColumn(column))
        previous = column.name
    key_before = next((i.columns for i in before.indexes if i.primary), ())
    key_after = next((i.columns for i in after.indexes if i.primary), ())
    if key_before != key_after:
        changes.append(SetKey(key_after))
    return changes
