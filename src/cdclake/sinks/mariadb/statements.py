"""The MariaDB statements of the sink: names quoted, mirrors created and changed, net changes merged
from a staging table.

A write's net changes arrive in a staging table whose columns are ``cdclake_op``, ``cdclake_given``
(one ``1`` or ``0`` per column: whether the image has it) and ``c0``, ``c1``, ... holding the table's
columns in the table's own types (numbered: an upstream column may be called anything, ``cdclake_op``
too). A merge is two statements in the write's transaction: the deletes, joined on the key, and one
``INSERT ... ON DUPLICATE KEY UPDATE`` of the inserts and updates (a column an image lacks keeps its
value), matched by the table's unique key on the upstream key (``cdclake_key``). A table without a key
has every column as its key, as in the lake: deletes match every column (NULL to NULL), and inserts add
rows not there yet. Net changes hold one change per key, so their order cannot make a key collide
with itself.

Schema changes are planned against the table's columns as the server has them now: run again after a
crash, a change made already (a column added, renamed, dropped, retyped) is planned as nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cdclake.errors import OptionError
from cdclake.model import ColumnSchema, TableSchema
from cdclake.schema.ddl.changes import (
    AddColumn,
    DropColumn,
    ModifyColumn,
    RenameColumn,
    SchemaChange,
    SetKey,
    fill_value,
)
from cdclake.schema.lake import lake_text
from cdclake.sinks.mariadb.types import loader, mariadb_type, normalized

MAX_NAME_CHARACTERS = 64  # MariaDB's and MySQL's limit for database, table and column names
KEY_INDEX = "cdclake_key"
LOOKUP_INDEX = "cdclake_lookup"  # a staging table's (stage_table)
OP, GIVEN = "cdclake_op", "cdclake_given"
_QUOTED_PAIR = re.compile(r"`((?:[^`]|``)*)`\.`((?:[^`]|``)*)`")


def ident(name: str) -> str:
    """A MariaDB identifier: backquoted, backquotes doubled; refused past 64 characters, empty, with a
    NUL or ending in a space (MariaDB's own rules: it would refuse them less clearly)."""
    if len(name) > MAX_NAME_CHARACTERS:
        raise OptionError(f"the name {name!r} has more than {MAX_NAME_CHARACTERS} characters, MariaDB's and MySQL's "
                          "limit: map the table with table-mapping, or rename the column upstream")
    if not name or "\0" in name or name.endswith(" "):
        raise OptionError(f"the name {name!r} cannot be a MariaDB identifier (empty, a NUL, or a trailing space)")
    return "`" + name.replace("`", "``") + "`"


def table_name(namespace: str, table: str) -> str:
    """The table ``table`` of the database ``namespace``, quoted."""
    return f"{ident(namespace)}.{ident(table)}"


def split_target(target: str) -> tuple[str, str]:
    """The database and table names of a target :func:`table_name` made."""
    found = _QUOTED_PAIR.fullmatch(target)
    assert found is not None, f"not a sink table name: {target}"
    return found[1].replace("``", "`"), found[2].replace("``", "`")


def names(columns: Sequence[str]) -> str:
    return ", ".join(ident(name) for name in columns)


def literal(value: str | bytes) -> str:
    """A MariaDB literal of ``value``: a string (the session's SQL mode keeps backslash escapes), or
    bytes as a hex literal."""
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'"
    return "'" + value.replace("\\", "\\\\").replace("'", "''").replace("\0", "\\0") + "'"


def table_options(collation: str) -> str:
    return f"ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={collation}"


def create_table(target: str, schema: TableSchema, collation: str) -> str:
    """The mirror of ``schema``, unless it exists, with a unique key on its key. Every column is
    nullable, as in the lake: a delete's image or a partial update may lack any column."""
    columns = [f"{ident(c.name)} {mariadb_type(c.type)} NULL" for c in schema.columns]
    if schema.key_columns:
        columns.append(f"UNIQUE KEY {KEY_INDEX} ({names(schema.key_columns)})")
    return f"CREATE TABLE IF NOT EXISTS {target} ({', '.join(columns)}) {table_options(collation)}"


_PREFIX = 64  # characters (bytes) of a long string (binary) column in an index of cdclake's own
_SIZED = ("char", "varchar", "binary", "varbinary")  # indexed whole up to _PREFIX
_UNSIZED = ("tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob")


def index_prefix(column_type: str) -> str:
    """The prefix length, in an index, of a column of ``column_type``: none for one short enough (or not a
    string), which an index holds whole."""
    base, _, rest = column_type.partition("(")
    long = base in _UNSIZED or (base in _SIZED and int(rest.split(")")[0] or 0) > _PREFIX)
    return f"({_PREFIX})" if long else ""


def stage_table(stage: str, schema: TableSchema, collation: str, extra: Sequence[str] = ()) -> str:
    """The staging table of one write's net changes to a table of ``schema``; ``extra``: definitions of
    columns after the table's.

    Indexed on the first key column (without a key, the first column): the writes join the table with
    it on the key, and a key the table holds in a long string column has a unique key MariaDB checks by
    a hash, which finds no rows; the join then scanned the whole stage for each of the table's rows
    (a write of 10,000 deletes into 20,000 rows took 47 s; with the index 0.04 s)."""
    types = [mariadb_type(c.type) for c in schema.columns]
    first = [c.name.lower() for c in schema.columns].index(schema.key_columns[0].lower()) if schema.key_columns else 0
    columns = [f"{OP} varchar(6) NOT NULL", f"{GIVEN} text NOT NULL",
               *(f"c{i} {column_type} NULL" for i, column_type in enumerate(types)), *extra,
               f"KEY {LOOKUP_INDEX} (c{first}{index_prefix(types[first])})"]
    return f"CREATE TABLE {stage} ({', '.join(columns)}) {table_options(collation)}"


def merge(target: str, stage: str, schema: TableSchema, whole_images: bool) -> list[str]:
    """The net changes in ``stage`` applied to ``target``, whose columns are ``schema``'s."""
    if not schema.key_columns:
        return _keyless_merge(target, stage, schema)
    position = {c.name: i for i, c in enumerate(schema.columns)}
    columns = names([c.name for c in schema.columns])
    values = ", ".join(f"s.c{i}" for i in range(len(schema.columns)))
    match = " AND ".join(f"t.{ident(k)} = s.c{position[k]}" for k in schema.key_columns)
    updates = [_updated(target, column, position[column.name], whole_images)
               for column in schema.columns if column.name not in schema.key_columns]
    upsert = f"INSERT INTO {target} ({columns}) SELECT {values} FROM {stage} AS s WHERE s.{OP} <> 'delete'"
    # Every column a key column: a key there already is the row (not INSERT IGNORE: it would let through
    # values strict mode refuses).
    first = ident(schema.key_columns[0])
    upsert += " ON DUPLICATE KEY UPDATE " + (", ".join(updates) or f"{first} = {target}.{first}")
    return [f"DELETE t FROM {target} AS t JOIN {stage} AS s ON {match} WHERE s.{OP} = 'delete'", upsert]


def _keyless_merge(target: str, stage: str, schema: TableSchema) -> list[str]:
    """Without a key every column is the key, NULLs matching NULLs (``<=>``), and a table holds each row
    once: every staged row's copy in the table is deleted, then the staged rows not deleted are inserted.

    Both statements read the table once: the delete finds its rows through the staging table's index, the
    insert reads only the staging table. Inserting "where NOT EXISTS in the table" scanned the table for
    each staged row (MariaDB 10.11: 26.6 s for 5,000 rows into 20,000; a LEFT JOIN by block nested loops
    8.0 s; its hash join, ``join_cache_level = 4``, 0.05 s but it loses rows whose values are NULL in a
    binary collation's table, so it is not used).
    """
    match = " AND ".join(f"t.{ident(c.name)} <=> s.c{i}" for i, c in enumerate(schema.columns))
    values = ", ".join(f"s.c{i}" for i in range(len(schema.columns)))
    return [f"DELETE t FROM {target} AS t JOIN {stage} AS s ON {match}",
            f"INSERT INTO {target} ({names([c.name for c in schema.columns])}) SELECT {values} FROM {stage} AS s "
            f"WHERE s.{OP} <> 'delete'"]


def _updated(target: str, column: ColumnSchema, index: int, whole_images: bool) -> str:
    name = ident(column.name)
    if whole_images:
        return f"{name} = s.c{index}"
    return f"{name} = {given_or(index, f'{target}.{name}')}"


def given_or(index: int, kept: str) -> str:
    """The staged value of column ``index`` (``s.c{index}``) where the staged image has the column, else
    ``kept`` (the target's value: a column an image lacks keeps it)."""
    return f"IF(SUBSTRING(s.{GIVEN}, {index + 1}, 1) = '1', s.c{index}, {kept})"


def alter(target: str, changes: Sequence[SchemaChange], held: Mapping[str, str], key: Sequence[str]) -> list[str]:
    """The statements making ``changes`` to ``target``, whose columns are now ``held`` (name -> the
    server's column type) and unique key ``key``: nothing for a change the table has already. Each is
    one ALTER, which MariaDB makes whole or not at all."""
    columns = dict(held)
    key = list(key)
    statements: list[str] = []
    for change in changes:
        found = {name.lower(): name for name in columns}
        if isinstance(change, AddColumn) and change.column.name.lower() not in found:
            statements.append(_add_column(target, change))
            columns[change.column.name] = mariadb_type(change.column.type)
        elif isinstance(change, DropColumn) and change.name.lower() in found:
            statements.append(f"ALTER TABLE {target} DROP COLUMN {ident(found[change.name.lower()])}")
            del columns[found[change.name.lower()]]
            key = [k for k in key if k.lower() != change.name.lower()]
        elif isinstance(change, RenameColumn) and change.old.lower() in found and change.new not in columns:
            old = found[change.old.lower()]
            statements.append(f"ALTER TABLE {target} RENAME COLUMN {ident(old)} TO {ident(change.new)}")
            columns[change.new] = columns.pop(old)
            key = [change.new if k == old else k for k in key]
        elif isinstance(change, ModifyColumn) and change.column.name.lower() in found:
            name, wanted = found[change.column.name.lower()], mariadb_type(change.column.type)
            if normalized(columns[name]) != wanted:
                statements.append(f"ALTER TABLE {target} MODIFY COLUMN {ident(name)} {wanted} NULL")
                columns[name] = wanted
        elif isinstance(change, SetKey) and [k.lower() for k in change.columns] != [k.lower() for k in key]:
            statements.append(_set_key(target, key, change.columns))
            key = list(change.columns)
    return statements


def _set_key(target: str, key: Sequence[str], columns: Sequence[str]) -> str:
    parts = ([f"DROP KEY {KEY_INDEX}"] if key else []) + ([f"ADD UNIQUE KEY {KEY_INDEX} ({names(columns)})"]
                                                         if columns else [])
    return f"ALTER TABLE {target} " + ", ".join(parts)


def _add_column(target: str, change: AddColumn) -> str:
    """The column added; the rows already there get MySQL's value for them (the column's default, or its
    type's implicit one) where the stream tells it and it is a value, as the lake does. The value stays
    the column's default (the sink's writes name every column, so it fills nothing else)."""
    column = change.column
    added = f"ALTER TABLE {target} ADD COLUMN {ident(column.name)} {mariadb_type(column.type)} NULL"
    fill = None if change.fill is None else fill_value(column.type, change.fill)
    if fill is None:
        return added
    column_type = mariadb_type(column.type)
    loaded = loader(column_type, f"{target}.{column.name}")(lake_text(column.type, fill))
    return added if loaded is None else f"{added} DEFAULT ({literal(loaded)})"
