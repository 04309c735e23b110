"""Table schemas derived for a Simple protocol target from a source that sends none: one version per
row shape, and a DDL's schemas read from its statement (see "Derived" in :mod:`cdclake.transcode`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from cdclake.errors import CdclakeError
from cdclake.eventjson.schemas import schema_from_json, schema_to_json
from cdclake.model import (
    ColumnSchema,
    Ddl,
    IndexSchema,
    RowChange,
    TableSchema,
)
from cdclake.producer import Router
from cdclake.schema.ddl import interpret, table_before
from cdclake.schema.ddl.changes import schema_after


def derived_schema(row: RowChange, version: int) -> TableSchema:
    """A Simple protocol table schema for rows of ``row``'s shape (see "Derived" in
    :mod:`cdclake.transcode`)."""
    keys = set(row.key_columns)
    columns = tuple(ColumnSchema(name, mtype, nullable=name not in keys) for name, mtype in row.types.items())
    indexes = (IndexSchema("PRIMARY", tuple(row.key_columns), unique=True, primary=True),) if row.key_columns else ()
    return TableSchema(row.database, row.table, columns, indexes, table_id=row.table_id, version=version)


class SchemaDeriver:
    """Table schemas for a Simple protocol target from a source that sends none: for rows, one version
    per shape (:func:`derived_schema`); for DDL, the schema before (the table's latest) and the schema
    after, read from the statement (:func:`cdclake.schema.ddl.interpret`), versioned by its commit ts."""

    def __init__(self, router: Router, state: Mapping[str, Any] | None = None) -> None:
        self._router = router
        self._schemas = {(s.database, s.table): s for s in map(schema_from_json, (state or {}).get("schemas", []))}

    def versioned(self, row: RowChange) -> RowChange:
        if row.schema_version is not None:
            return row
        latest = self._schemas.get((row.database, row.table))
        if latest is None or _shape(latest) != _row_shape(row):
            version = max(row.commit_ts or 0, latest.version + 1 if latest is not None and latest.version else 0)
            latest = self._schemas[(row.database, row.table)] = derived_schema(row, version)
            self._router.learn(latest)
            self._router.rebootstrap(row.database, row.table, row.table_id)
        return replace(row, schema_version=latest.version)

    def with_schemas(self, ddl: Ddl) -> Ddl:
        """``ddl`` with its schemas before and after, where it carries none and the statement can be read
        against the table's latest schema (else as it is: a Simple DDL message without ``tableSchema``)."""
        if ddl.schema_before is not None or ddl.schema_after is not None or ddl.commit_ts is None:
            return ddl
        before = self._schemas.get(table_before(ddl))
        try:
            after = schema_after(before, interpret(ddl, before))
        except CdclakeError:
            return ddl
        if after is not None:
            after = replace(after, table_id=None, version=ddl.commit_ts)
            self._schemas[(after.database, after.table)] = after
        if before is not None and (after is None or (after.database, after.table) != (before.database, before.table)):
            del self._schemas[(before.database, before.table)]
        return replace(ddl, schema_before=before, schema_after=after)

    def state(self) -> dict[str, Any]:
        return {"schemas": [schema_to_json(schema) for schema in self._schemas.values()]}


def _row_shape(row: RowChange) -> tuple[Any, ...]:
    return tuple((name, str(mtype)) for name, mtype in row.types.items()), tuple(row.key_columns)


def _shape(schema: TableSchema) -> tuple[Any, ...]:
    return tuple((column.name, str(column.type)) for column in schema.columns), tuple(schema.key_columns)
