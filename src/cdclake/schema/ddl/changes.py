"""The changes a DDL statement makes to a table, in MySQL terms, and a table's schema after them.

:mod:`cdclake.schema.ddl` reads them from a statement; :func:`schema_after` applies them to a
:class:`~cdclake.model.TableSchema`, and :mod:`cdclake.sinks.iceberg.evolution` turns them into the lake's.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cdclake.errors import TypeParseError
from cdclake.model import ColumnSchema, IndexSchema, TableSchema
from cdclake.types import Family, MySQLType
from cdclake.values import value_from_text

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


def fill_value(mtype: MySQLType, fill: str) -> Any:
    """The value of :attr:`AddColumn.fill`, MySQL text, in a column of ``mtype`` (as :mod:`cdclake.types`
    describes values); None where the text is no value of the type (an expression), or one a sink cannot
    know: a TIMESTAMP literal is in the DDL session's time zone, which the stream does not carry."""
    family = mtype.family
    if family is Family.TIMESTAMP or family is Family.GEOMETRY:
        return None
    if family is Family.BINARY:
        data = fill.encode("utf-8")
        return data.ljust(mtype.length or 0, b"\0") if mtype.name == "binary" else data
    if family in (Family.ENUM, Family.SET) and mtype.elements is not None:
        return fill  # member names, as the lake column holds them
    try:
        return value_from_text(mtype, fill, dt.UTC)
    except TypeParseError:
        return None


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


def changes_not_made(schema: TableSchema, changes: list[SchemaChange]) -> list[SchemaChange]:
    """The column changes ``schema`` does not show yet: a DDL delivered again (at-least-once) or a
    column its rows brought in before the ADD COLUMN arrived is not made twice."""
    names = {c.name.lower() for c in schema.columns}
    kept: list[SchemaChange] = []
    for change in changes:
        if isinstance(change, AddColumn) and change.column.name.lower() in names:
            continue
        if isinstance(change, DropColumn) and change.name.lower() not in names:
            continue
        if isinstance(change, RenameColumn) and (change.old.lower() not in names or change.new.lower() in names):
            continue
        kept.append(change)
        names = {c.name.lower() for c in (schema_after(schema, kept) or schema).columns}
    return kept
