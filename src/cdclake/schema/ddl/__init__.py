"""DDL statements read into schema changes in MySQL terms, and a table's schema after them.

:func:`interpret` turns one :class:`~cdclake.model.Ddl` into the :data:`~cdclake.schema.ddl.changes.SchemaChange`
list it makes to one table; :func:`~cdclake.schema.ddl.changes.schema_after` applies such a list to the
table's :class:`~cdclake.model.TableSchema`, so the pipeline can track every table's MySQL schema whatever
the format carries. Statements that change nothing a lake table holds (indexes other than the primary key,
comments, charsets, table options, partitioning, views, sequences, placement) give no change.

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
LIKE and ... SELECT need another table's schema (the Simple protocol's schema after serves; for
... LIKE, :func:`like_source` names the table whose schema the job puts there, see
:mod:`cdclake.schema.following`). These, and statements the reader does not know, raise
:class:`DdlInterpretError` naming the table, the statement and its commit ts.
:func:`interpret_in_part` gives what can be followed of such a DDL instead, with the reasons for
the rest: each ALTER TABLE specification and each statement is followed or refused on its own.

**Where it is.** This module holds the entry points (:func:`interpret`, :func:`table_before`) and the
Simple protocol's reconciliation; :mod:`~cdclake.schema.ddl.changes` the changes and
:func:`~cdclake.schema.ddl.changes.schema_after`; :mod:`~cdclake.schema.ddl.tokens` the SQL read into
tokens, and a cursor over one statement's; :mod:`~cdclake.schema.ddl.statements` each statement and
ALTER TABLE specification; :mod:`~cdclake.schema.ddl.columns` column and index definitions, a column's
type as DDL writes it and its default.
"""

from __future__ import annotations

import dataclasses

from sqlglot import TokenType

from cdclake.errors import CdclakeError, TypeParseError
from cdclake.model import Ddl, TableSchema
from cdclake.schema.ddl.changes import (
    AddColumn,
    CreateTable,
    DropColumn,
    ModifyColumn,
    RenameTable,
    SchemaChange,
    SetKey,
    schema_after,
)
from cdclake.schema.ddl.columns import _fill
from cdclake.schema.ddl.statements import (
    _accept_alter_table,
    _accept_create_table,
    _attempted,
    _rename_pair,
    _rename_pairs,
    _Statement,
    _Unfollowable,
)
from cdclake.schema.ddl.tokens import _Cursor, _qualified, _same_name, _split, _statements, _Unreadable


class DdlInterpretError(CdclakeError):
    """A DDL statement cdclake cannot read, or cannot follow in a lake table."""

    def __init__(self, ddl: Ddl, reason: str) -> None:
        self.ddl = ddl
        self.reason = reason
        table = f" of {ddl.database}.{ddl.table}" if ddl.table else ""
        where = f" at {ddl.origin}" if ddl.origin is not None else ""
        sql = ddl.sql if len(ddl.sql) <= 300 else ddl.sql[:297] + "..."
        super().__init__(f"DDL{table} with commit ts {ddl.commit_ts}{where}: {reason}; the statement: {sql!r}")


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


def interpret_in_part(ddl: Ddl, current: TableSchema | None) -> tuple[list[SchemaChange], list[str]]:
    """What :func:`interpret` gives, where it can follow the whole of ``ddl``; else the changes of the
    ALTER TABLE specifications and statements it can follow, and the reason for each it cannot (each
    naming the part of the SQL). A statement that cannot be read at all gives no change."""
    try:
        return interpret(ddl, current), []
    except DdlInterpretError as whole:
        refused: list[str] = []
        before = ddl.schema_before or current
        try:
            changes = _changes_of_sql(ddl, before, refused)
        except (_Unfollowable, _Unreadable, TypeParseError):
            return [], [whole.reason]
    if ddl.schema_after is None or before is None:
        return changes, refused
    return _reconciled(changes, before, ddl.schema_after), refused


def like_source(ddl: Ddl) -> tuple[str, str] | None:
    """The (database, table) a ``CREATE TABLE ... LIKE`` (or ``... (LIKE ...)``) copies the definition
    of, an unqualified name in the ``Ddl``'s database; None for any other DDL."""
    try:
        statements = _statements(ddl.sql)
    except _Unreadable:
        return None
    for tokens in statements:
        cursor = _Cursor(ddl.sql, tokens)
        if not (cursor.accept("CREATE") and _accept_create_table(cursor)):
            continue
        try:
            cursor.qualified_name()
            if cursor.peek_type(TokenType.L_PAREN):
                cursor = _Cursor(ddl.sql, cursor.group())
            if cursor.accept("LIKE"):
                return _qualified(ddl, cursor.qualified_name())
        except _Unreadable:
            return None  # interpret says what is wrong with the statement
    return None


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


def _reads_as_create(ddl: Ddl) -> bool:
    try:
        statements = _statements(ddl.sql)
    except _Unreadable:
        return False
    cursors = [_Cursor(ddl.sql, tokens) for tokens in statements]
    return any(cursor.accept("CREATE") and _accept_create_table(cursor) for cursor in cursors)


def _changes_of_sql(ddl: Ddl, current: TableSchema | None, refused: list[str] | None = None) -> list[SchemaChange]:
    """The SQL's changes; where ``refused`` collects reasons, those of the parts it can follow
    (:func:`~cdclake.schema.ddl.statements._attempted`)."""
    statements = _statements(ddl.sql)
    several = len(statements) > 1
    changes: list[SchemaChange] = []
    schema = current
    for tokens in statements:
        statement = _Statement(ddl, _Cursor(ddl.sql, tokens), schema, several, refused)
        found = _attempted(refused, statement.cursor, statement.changes)
        changes += found
        schema = schema_after(schema, found)
    return changes


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
