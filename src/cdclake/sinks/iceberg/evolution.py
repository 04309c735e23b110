"""What a MySQL schema change means for an Iceberg table, as Spark SQL.

:func:`plan` turns the :mod:`cdclake.schema.ddl.changes` of one table into :data:`LakeChange` steps,
against the lake table's columns as they are; :func:`alter_statements` writes the steps as Spark SQL.

Iceberg changes a column in place only where no value changes: it adds, drops and renames columns, and
widens int to long, float to double and decimal(p,s) to decimal(p',s) with p' > p. A MySQL change whose
lake type stays the same (varchar(10) to varchar(20), int to mediumint, NOT NULL to NULL) needs
nothing. Any other type change (a decimal's scale, bigint to bigint unsigned, int to varchar) is refused
with a :class:`SchemaEvolutionError`, or, with ``EvolutionPolicy(incompatible_type_change="rewrite")``,
made by rewriting the column (below). Every lake column is nullable: a delete's image or a partial
update may lack any column, and Iceberg cannot relax a required column later, so MySQL's NOT NULL is
not kept and changing it is no change. The lake keeps its own column order.

**Rows already there.** MySQL gives a column it adds to a table the column's default, or its type's
implicit default when the column is NOT NULL without one (0, '', an enum's first member); TiDB then
sends no row event for those rows. So a column added with such a value (:attr:`AddColumn.fill`) is
filled in the rows already in the lake table (``EvolutionPolicy(fill_added_columns=False)`` leaves them
NULL and spares the rewrite of every data file). A value that is an expression (CURRENT_TIMESTAMP), a
TIMESTAMP literal (its time zone is the DDL session's, which the stream does not carry) or a spatial
value is not known, and those rows keep NULL.

**Work in progress, and resuming it.** A fill or a rewrite adds the column under a temporary name
(``<name>__cdclake_tmp``), fills it with an UPDATE, drops the old column if there is one, and renames
the temporary column: the lake table never shows a half-filled column under its real name. Each
statement's effect shows in the table's columns, so after a crash part-way the pipeline plans the same
changes again against the columns the table has now, and gets exactly the steps that are left: a
temporary column beside the old one is filled again (the old column is still whole), one without it is
renamed; an added column that exists, a dropped one that is gone and a renamed one that has its new
name need nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cdclake.model import ColumnSchema, TableSchema
from cdclake.schema import rows
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
    TruncateTable,
    fill_value,
    schema_after,
)
from cdclake.schema.lake import lake_cast, lake_text, lake_type, quote
from cdclake.schema.policy import EvolutionPolicy, SchemaEvolutionError
from cdclake.types import MySQLType

__all__ = [
    "AddColumn",
    "AddLakeColumn",
    "DropLakeColumn",
    "FillLakeColumn",
    "LakeChange",
    "ModifyColumn",
    "RenameLakeColumn",
    "WidenLakeColumn",
    "alter_statements",
    "changes_seen_in_rows",
    "plan",
]

# --- the lake changes -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddLakeColumn:
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class DropLakeColumn:
    name: str


@dataclass(frozen=True, slots=True)
class RenameLakeColumn:
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class WidenLakeColumn:
    """int to long, float to double, decimal(p,s) to decimal(p',s) with p' > p: Iceberg's in-place changes."""

    name: str
    type: str


@dataclass(frozen=True, slots=True)
class FillLakeColumn:
    """Every row's ``name`` set to the Spark SQL ``expression``."""

    name: str
    expression: str


LakeChange = AddLakeColumn | DropLakeColumn | RenameLakeColumn | WidenLakeColumn | FillLakeColumn

TEMPORARY_SUFFIX = "__cdclake_tmp"


def temporary_name(column: str) -> str:
    """The name a column has while it is being filled or rewritten."""
    return column + TEMPORARY_SUFFIX


# --- planning ---------------------------------------------------------------------------------------------


def plan(
    table: str,
    current: Mapping[str, str],
    changes: Sequence[SchemaChange],
    policy: EvolutionPolicy = EvolutionPolicy(),
    *,
    mysql_schema: TableSchema | None = None,
) -> list[LakeChange]:
    """The steps that make the lake table ``table``, whose columns are ``current`` (name to lake type, in
    order), follow ``changes``. ``mysql_schema`` is the table's MySQL schema before the changes, if
    known: an error then names the upstream table and the old MySQL type too.

    Takes column changes and :class:`SetKey` (the lake table holds no key: the pipeline merges by the
    schema's); the pipeline makes table-level changes (create, drop, rename, truncate) itself.
    """
    planner = _Planner(table, current, policy, mysql_schema)
    for change in changes:
        planner.follow(change)
    return planner.steps


class _Planner:
    def __init__(self, table: str, current: Mapping[str, str], policy: EvolutionPolicy,
                 mysql_schema: TableSchema | None) -> None:
        self.table = table
        # What errors name: the lake table, and the upstream one where it is known.
        self.named = (f"upstream table {mysql_schema.database}.{mysql_schema.table}, lake table {table}"
                      if mysql_schema is not None else table)
        self.columns = {name: _normal_type(text) for name, text in current.items()}
        self.policy = policy
        self.mysql_schema = mysql_schema
        self.steps: list[LakeChange] = []

    def find(self, name: str) -> str | None:
        """The lake column named ``name``; Spark resolves names case-insensitively, as MySQL does."""
        if name in self.columns:
            return name
        lowered = name.lower()
        return next((c for c in self.columns if c.lower() == lowered), None)

    def step(self, change: LakeChange) -> None:
        self.steps.append(change)
        if isinstance(change, AddLakeColumn):
            self.columns[change.name] = change.type
        elif isinstance(change, DropLakeColumn):
            del self.columns[change.name]
        elif isinstance(change, RenameLakeColumn):
            self.columns = {change.new if c == change.old else c: t for c, t in self.columns.items()}
        elif isinstance(change, WidenLakeColumn):
            self.columns[change.name] = change.type

    def follow(self, change: SchemaChange) -> None:
        if isinstance(change, AddColumn):
            self.add(change)
        elif isinstance(change, ModifyColumn):
            self.modify(change.column)
        elif isinstance(change, DropColumn):
            existing = self.find(change.name)
            if existing is not None:
                self.step(DropLakeColumn(existing))
        elif isinstance(change, RenameColumn):
            self.rename(change)
        elif isinstance(change, CreateTable | DropTable | RenameTable | TruncateTable | DropDatabase):
            raise ValueError(f"plan takes column changes; {type(change).__name__} of {self.table} is the "
                             "pipeline's to make")
        if self.mysql_schema is not None:
            self.mysql_schema = schema_after(self.mysql_schema, [change])

    def add(self, change: AddColumn) -> None:
        column = change.column
        existing, temporary = self.find(column.name), self.find(temporary_name(column.name))
        if existing is not None:
            self.modify(column)  # added already: a re-run, or a column rows brought first
            return
        value = _fill_expression(column.type, change.fill) if self.policy.fill_added_columns else None
        if temporary is None:
            if value is None:
                self.step(AddLakeColumn(column.name, lake_type(column.type)))
                return
            temporary = temporary_name(column.name)
            self.step(AddLakeColumn(temporary, lake_type(column.type)))
        if value is not None:  # filled again after a crash: whether the UPDATE ran, the columns do not show
            self.step(FillLakeColumn(temporary, value))
        self.step(RenameLakeColumn(temporary, column.name))

    def modify(self, column: ColumnSchema) -> None:
        existing = self.find(column.name)
        temporary = self.find(temporary_name(column.name))
        if temporary is not None:
            self.resume(column.name, existing, temporary)
            return
        target = lake_type(column.type)
        if existing is None:
            self.step(AddLakeColumn(column.name, target))
            return
        held = self.columns[existing]
        if held == target:
            return
        if _widens(held, target):
            self.step(WidenLakeColumn(existing, target))
        elif self.policy.incompatible_type_change == "rewrite":
            temporary = temporary_name(column.name)
            self.step(AddLakeColumn(temporary, target))
            self.resume(column.name, existing, temporary)
        else:
            raise SchemaEvolutionError(self.incompatible(existing, held, column.type))

    def resume(self, name: str, existing: str | None, temporary: str) -> None:
        """Finish a rewrite: fill the temporary column from the old one while there is one (again, after a
        crash: whether the UPDATE ran, the columns do not show), then take its place."""
        if existing is not None:
            target = self.columns[temporary]
            self.step(FillLakeColumn(temporary, f"CAST({quote(existing)} AS {target})"))
            self.step(DropLakeColumn(existing))
        self.step(RenameLakeColumn(temporary, name))

    def rename(self, change: RenameColumn) -> None:
        old, new = self.find(change.old), self.find(change.new)
        if old is None:
            return  # renamed already, or never in the lake: rows will bring the column
        if new is not None and new != old:
            raise SchemaEvolutionError(
                f"{self.named}: column {change.old!r} cannot be renamed to {change.new!r}: the lake table "
                f"already has a column {new!r}; drop or rename that one first"
            )
        # A change of case only is none: Spark resolves names case-insensitively, and Iceberg would take
        # the new spelling for a second column.
        if old.lower() != change.new.lower():
            self.step(RenameLakeColumn(old, change.new))

    def incompatible(self, name: str, held: str, new_type: MySQLType) -> str:
        old_mysql = ""
        if self.mysql_schema is not None:
            known = self.mysql_schema.find_column(name)
            old_mysql = f"MySQL {known.type}, " if known is not None else ""
        return (
            f"{self.named}: column {name!r} changes from {old_mysql}lake {held} to MySQL {new_type}, lake "
            f"{lake_type(new_type)}, which Iceberg cannot change in place (it widens only int to long, float "
            "to double and decimal(p,s) to a larger p with the same s). Set incompatible-type-change to "
            "'rewrite' (EvolutionPolicy.incompatible_type_change) to rebuild the column with CAST, or "
            "recreate the table"
        )


_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def _normal_type(text: str) -> str:
    """A lake type as :func:`lake_type` spells it, whether Spark printed it (``bigint``) or not."""
    compact = "".join(text.lower().split())
    return "long" if compact == "bigint" else compact


def _widens(held: str, target: str) -> bool:
    if (held, target) in (("int", "long"), ("float", "double")):
        return True
    old, new = _DECIMAL.fullmatch(held), _DECIMAL.fullmatch(target)
    return old is not None and new is not None and old[2] == new[2] and int(new[1]) > int(old[1])


def _fill_expression(mtype: MySQLType, fill: str | None) -> str | None:
    """The Spark SQL value of ``fill`` (MySQL text) in the lake column of ``mtype``; None where the text is
    no value of the type (an expression), or one the lake cannot know (see "Rows already there")."""
    if fill is None:
        return None
    value = fill_value(mtype, fill)
    text = None if value is None else lake_text(mtype, value)
    if text is None:
        return None
    # A hexadecimal literal is exact whatever Spark's string-escaping settings are.
    return lake_cast(f"CAST(X'{text.encode('utf-8').hex()}' AS STRING)", mtype)



# --- row messages ---------------------------------------------------------------------------------------


def changes_seen_in_rows(schema: TableSchema, types: Mapping[str, MySQLType]) -> list[SchemaChange]:
    """:func:`cdclake.schema.rows.changes_seen_in_rows` for an Iceberg table: a row's type is the known
    column's if their lake types are the same, or the known one widens the row's."""
    return rows.changes_seen_in_rows(schema, types, _holds)


def _holds(seen: MySQLType, known: MySQLType) -> bool:
    seen_lake, known_lake = lake_type(seen), lake_type(known)
    return seen_lake == known_lake or _widens(seen_lake, known_lake)


# --- Spark SQL --------------------------------------------------------------------------------------------


def alter_statements(table_ident: str, lake_changes: Sequence[LakeChange]) -> list[str]:
    """The Spark SQL statements, in order, that make ``lake_changes`` to the table ``table_ident`` (a
    quoted identifier, used as given). Run them in order; after a crash, plan again (see the module
    docstring)."""
    return [_statement(table_ident, change) for change in lake_changes]


def _statement(table: str, change: LakeChange) -> str:
    if isinstance(change, AddLakeColumn):
        return f"ALTER TABLE {table} ADD COLUMN {quote(change.name)} {change.type}"
    if isinstance(change, DropLakeColumn):
        return f"ALTER TABLE {table} DROP COLUMN {quote(change.name)}"
    if isinstance(change, RenameLakeColumn):
        return f"ALTER TABLE {table} RENAME COLUMN {quote(change.old)} TO {quote(change.new)}"
    if isinstance(change, WidenLakeColumn):
        return f"ALTER TABLE {table} ALTER COLUMN {quote(change.name)} TYPE {change.type}"
    return f"UPDATE {table} SET {quote(change.name)} = {change.expression}"
