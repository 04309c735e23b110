"""The PostgreSQL statements of the sink: names quoted, mirrors created and changed, net changes merged
from a staging table.

A segment's net changes are its part of the batch's unlogged staging table (``_key``, ``_op``,
``_image``, the image a JSON object of lake texts). One merge is three statements in the batch's transaction: the
deletes, the updates (a column an image lacks keeps its value), the inserts of keys the table lacks.
Net changes hold one change per key, so their order cannot make a key collide with itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from cdclake.errors import OptionError
from cdclake.model import ColumnSchema, TableSchema
from cdclake.schema.ddl.changes import (
    AddColumn,
    DropColumn,
    ModifyColumn,
    RenameColumn,
    SchemaChange,
    fill_value,
    schema_after,
)
from cdclake.schema.lake import lake_text
from cdclake.sinks.postgres.types import pg_cast, pg_type

MAX_NAME_BYTES = 63  # PostgreSQL's NAMEDATALEN - 1: a longer name is cut, and two could become one
STAGE_COLUMNS = (("_key", "text"), ("_op", "text"), ("_image", "jsonb"))


def ident(name: str) -> str:
    """A PostgreSQL identifier: double-quoted, double quotes doubled, refused past 63 bytes."""
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise OptionError(f"the name {name!r} has more than {MAX_NAME_BYTES} bytes, PostgreSQL's limit: map the "
                          "table with table-mapping, or rename the column upstream")
    if "\0" in name or not name:
        raise OptionError(f"the name {name!r} cannot be a PostgreSQL identifier")
    return '"' + name.replace('"', '""') + '"'


def table_name(namespace: str, table: str) -> str:
    """The table ``table`` of the schema ``namespace``, quoted."""
    return f"{ident(namespace)}.{ident(table)}"


def literal(text: str) -> str:
    """A PostgreSQL string literal (standard_conforming_strings: only quotes doubled)."""
    return "'" + text.replace("'", "''") + "'"


def create_table(target: str, schema: TableSchema) -> list[str]:
    """The mirror of ``schema``, unless it exists, with an index on its key. Every column is nullable,
    as in the lake: a delete's image or a partial update may lack any column."""
    columns = ", ".join(f"{ident(c.name)} {pg_type(c.type)}" for c in schema.columns)
    statements = [f"CREATE TABLE IF NOT EXISTS {target} ({columns})"]
    if schema.key_columns:
        keys = ", ".join(ident(k) for k in schema.key_columns)
        statements.append(f"CREATE INDEX IF NOT EXISTS {ident(index_name(target))} ON {target} ({keys})")
    return statements


def index_name(target: str) -> str:
    """A name for the key index, unique per table and within PostgreSQL's limit."""
    return "cdclake_key_" + hashlib.sha256(target.encode("utf-8")).hexdigest()[:24]


def merge(target: str, stage: str, schema: TableSchema, whole_images: bool) -> list[str]:
    """The net changes in ``stage`` (a table or a parenthesized query of ``_key``, ``_op``, ``_image``)
    applied to ``target``, whose columns are ``schema``'s."""
    match = row_match(schema)
    sets = ", ".join(
        f"{ident(c.name)} = {image_value(c) if whole_images else kept_unless_given(c)}" for c in schema.columns)
    names = ", ".join(ident(c.name) for c in schema.columns)
    values = ", ".join(image_value(c) for c in schema.columns)
    return [
        f"DELETE FROM {target} t USING {stage} s WHERE s._op = 'delete' AND {match}",
        f"UPDATE {target} t SET {sets} FROM {stage} s WHERE s._op <> 'delete' AND {match}",
        f"INSERT INTO {target} ({names}) SELECT {values} FROM {stage} s "
        f"WHERE s._op <> 'delete' AND NOT EXISTS (SELECT 1 FROM {target} t WHERE {match})",
    ]


def row_match(schema: TableSchema) -> str:
    """The condition that the target row ``t`` is the staged image ``s``'s row: equal keys, or without a
    key every column equal, NULLs matching NULLs.

    Key columns of a primary key are never NULL: "=" lets PostgreSQL use the key's index. Without a key,
    ``IS NOT DISTINCT FROM`` can be neither hashed nor looked up in an index, so PostgreSQL compared every
    staged row with every target row (2.3 s for one delete planned as 408 staged rows against 4,080, in
    bench/postgres.py). The rows' hashes (``hash_record_extended``, each column by its type's hash: equal
    values hash alike, 1.0 and 1.00, 0 and -0) are equal first, which PostgreSQL joins by hashing; the
    exact comparison follows.
    """
    by_name = {c.name: c for c in schema.columns}
    if schema.key_columns:
        return " AND ".join(f"t.{ident(k)} = {image_value(by_name[k])}" for k in schema.key_columns)
    targets = [f"t.{ident(c.name)}" for c in schema.columns]
    images = [image_value(c) for c in schema.columns]
    exact = " AND ".join(f"{t} IS NOT DISTINCT FROM {i}" for t, i in zip(targets, images, strict=True))
    return (f"hash_record_extended(ROW({', '.join(targets)}), 0) = "
            f"hash_record_extended(ROW({', '.join(images)}), 0) AND {exact}")


def image_value(column: ColumnSchema) -> str:
    """``column``'s value in the staged image ``s._image`` (jsonb of lake texts), cast to its column type."""
    return pg_cast(f"(s._image ->> {literal(column.name)})", column.type)


def kept_unless_given(column: ColumnSchema) -> str:
    """``column``'s value in the staged image, or the target row's own where the image lacks the column."""
    return f"CASE WHEN s._image ? {literal(column.name)} THEN {image_value(column)} ELSE t.{ident(column.name)} END"


def alter(target: str, schema: TableSchema, changes: Sequence[SchemaChange]) -> list[str]:
    """The statements making ``changes`` to ``target``, whose columns are ``schema``'s before them.
    PostgreSQL changes any column in place, in the batch's transaction: a type change converts every
    value with a cast, and a value the new type cannot hold stops the batch, as MySQL's strict mode
    refuses the ALTER."""
    statements: list[str] = []
    current = schema
    for change in changes:
        statements += _column_change(target, current, change)
        current = schema_after(current, [change]) or current
    return statements


def _column_change(target: str, schema: TableSchema, change: SchemaChange) -> list[str]:
    held = {c.name.lower(): c for c in schema.columns}
    if isinstance(change, AddColumn):
        return _add_column(target, change) if change.column.name.lower() not in held else []
    if isinstance(change, DropColumn) and change.name.lower() in held:
        return [f"ALTER TABLE {target} DROP COLUMN IF EXISTS {ident(held[change.name.lower()].name)}"]
    if isinstance(change, RenameColumn) and change.old.lower() in held:
        old = held[change.old.lower()].name
        return [f"ALTER TABLE {target} RENAME COLUMN {ident(old)} TO {ident(change.new)}"] if old != change.new else []
    if isinstance(change, ModifyColumn) and change.column.name.lower() in held:
        column = held[change.column.name.lower()]
        old_type, new_type = pg_type(column.type), pg_type(change.column.type)
        if old_type == new_type:
            return []
        name = ident(column.name)
        using = _converted(name, old_type, new_type)
        return [f"ALTER TABLE {target} ALTER COLUMN {name} TYPE {new_type} USING {using}"]
    return []


def _converted(column: str, old_type: str, new_type: str) -> str:
    """PostgreSQL's own cast, but between text and bytea a value's bytes (MySQL keeps them), not its
    escaped form."""
    if new_type == "bytea" and old_type != "bytea":
        return f"convert_to({column}::text, 'UTF8')"
    if old_type == "bytea" and new_type != "bytea":
        return f"convert_from({column}, 'UTF8')::{new_type}"
    return f"{column}::{new_type}"


def _add_column(target: str, change: AddColumn) -> list[str]:
    """The column added; the rows already there get MySQL's value for them (the column's default, or its
    type's implicit one) where the stream tells it and it is a value, as the lake does."""
    column = change.column
    add = f"ALTER TABLE {target} ADD COLUMN IF NOT EXISTS {ident(column.name)} {pg_type(column.type)}"
    fill = _fill_text(change)
    if fill is None:
        return [add]
    return [f"{add} DEFAULT {pg_cast(literal(fill), column.type)}",
            f"ALTER TABLE {target} ALTER COLUMN {ident(column.name)} DROP DEFAULT"]


def _fill_text(change: AddColumn) -> str | None:
    if change.fill is None:
        return None
    value = fill_value(change.column.type, change.fill)
    return None if value is None else lake_text(change.column.type, value)
