"""Event JSON's table schemas (a BOOTSTRAP's, a DDL's before and after) and origins."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdclake.eventjson.values import (
    ValueReader,
    column_reader,
    expect,
    names_field,
    optional_int_field,
    optional_text_field,
    text_field,
)
from cdclake.model import ColumnSchema, IndexSchema, Origin, TableSchema
from cdclake.types import MySQLType


def readers_from_json(types: Any) -> dict[str, tuple[MySQLType, ValueReader]]:
    pairs = expect(dict, types, "types as an object").items()
    return {column: column_reader(expect(str, text, "a type text")) for column, text in pairs}


def schema_to_json(schema: TableSchema) -> dict[str, Any]:
    return {
        "database": schema.database,
        "table": schema.table,
        "table_id": schema.table_id,
        "schema_version": schema.version,
        "columns": [
            {
                "name": c.name,
                "type": str(c.type),
                "nullable": c.nullable,
                "default": c.default,
                "charset": c.charset,
                "collation": c.collation,
            }
            for c in schema.columns
        ],
        "indexes": [
            {
                "name": i.name,
                "columns": list(i.columns),
                "unique": i.unique,
                "primary": i.primary,
                "nullable": i.nullable,
            }
            for i in schema.indexes
        ],
    }


def schema_from_json(obj: Mapping[str, Any]) -> TableSchema:
    columns = tuple(_column_from_json(c) for c in expect(list, obj["columns"], "columns as a list"))
    indexes = tuple(_index_from_json(i) for i in expect(list, obj.get("indexes", []), "indexes as a list"))
    return TableSchema(
        database=text_field(obj, "database"),
        table=text_field(obj, "table"),
        columns=columns,
        indexes=indexes,
        table_id=optional_int_field(obj, "table_id"),
        version=optional_int_field(obj, "schema_version"),
    )


def _column_from_json(obj: Any) -> ColumnSchema:
    expect(dict, obj, "a column as an object")
    return ColumnSchema(
        name=text_field(obj, "name"),
        type=column_reader(text_field(obj, "type"))[0],
        nullable=_bool(obj, "nullable", True),
        default=optional_text_field(obj, "default"),
        charset=optional_text_field(obj, "charset"),
        collation=optional_text_field(obj, "collation"),
    )


def _index_from_json(obj: Any) -> IndexSchema:
    expect(dict, obj, "an index as an object")
    return IndexSchema(
        name=text_field(obj, "name"),
        columns=names_field(obj, "columns"),
        unique=_bool(obj, "unique", False),
        primary=_bool(obj, "primary", False),
        nullable=_bool(obj, "nullable", False),
    )


def _bool(obj: Mapping[str, Any], name: str, default: bool) -> bool:
    value = obj.get(name, default)
    if not isinstance(value, bool):
        raise ValueError(f"expected {name} as true or false, got {value!r}")
    return value


def optional_schema_from_json(obj: Any) -> TableSchema | None:
    return None if obj is None else schema_from_json(obj)


def origin_to_json(origin: Origin) -> dict[str, Any]:
    """The coordinates that are known: ``{"file": "orders.jsonl", "line": 3}``."""
    fields = {
        "topic": origin.topic,
        "partition": origin.partition,
        "offset": origin.offset,
        "file": origin.file,
        "line": origin.line,
    }
    known = {name: value for name, value in fields.items() if value is not None}
    if origin.index:
        known["index"] = origin.index
    return known
