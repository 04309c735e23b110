"""The ``tableSchema`` / ``preTableSchema`` object of BOOTSTRAP and DDL messages, in both encodings.

JSON (tiflow ``TableSchema``/``columnSchema``/``dataType``/``IndexSchema``): the database name is under
``schema``; ``dataType`` omits ``length``, ``decimal``, ``elements``, ``unsigned`` and ``zerofill`` when
they are zero or empty (Go ``omitempty``) and never writes ``decimal`` for FLOAT/DOUBLE; a BIT column's
``default`` is a number. Avro (``newTableSchemaMap``): the database name is under ``database``;
``length`` is always written; ``decimal`` only for DECIMAL, ``elements`` only for ENUM/SET,
``unsigned``/``zerofill`` only for numeric types, all others ``null``.

Where this module writes what TiCDC does not say: a column without charset/collation gets TiDB's
(``utf8mb4``/``utf8mb4_bin`` for character types, ``binary`` for the rest); the Avro ``decimal`` of a
DATETIME/TIMESTAMP/TIME column carries its fractional-seconds precision, which TiCDC leaves ``null``
(a TiCDC consumer reads either the same way).
"""

from __future__ import annotations

from typing import Any

from cdclake.errors import TypeParseError
from cdclake.formats.limits import too_many_columns
from cdclake.formats.simple.fields import Invalid, as_dict, optional, required, uint64
from cdclake.formats.simple.values import signed64
from cdclake.model import ColumnSchema, IndexSchema, TableSchema
from cdclake.types import Family, MySQLType

# Families whose ``decimal`` TiCDC's JSON always means (an absent one is Go's omitted zero).
_DECIMAL_MEANS_SCALE = frozenset({Family.DECIMAL, Family.DATETIME, Family.TIMESTAMP, Family.TIME})
_TEMPORAL = frozenset({Family.DATETIME, Family.TIMESTAMP, Family.TIME})
# The types whose Avro dataType carries ``unsigned``/``zerofill`` (newTableSchemaMap).
_NUMERIC = frozenset({Family.INTEGER, Family.FLOAT, Family.DOUBLE, Family.BIT, Family.YEAR, Family.DECIMAL})
_CHARACTER = frozenset({Family.STRING, Family.ENUM, Family.SET})


def read_table_schema(raw: Any, where: str, database_key: str, absent_decimal_is_zero: bool) -> TableSchema:
    """A TableSchema from its wire object; ``database_key`` is ``schema`` (JSON) or ``database`` (Avro)."""
    obj = as_dict(raw, where)
    columns = required(obj, "columns", list, where)
    fault = too_many_columns(len(columns), where)
    if fault is not None:  # each order of a table's columns is compiled into a reader
        raise Invalid(fault)
    indexes = optional(obj, "indexes", list, where) or []
    return TableSchema(
        database=required(obj, database_key, str, where),
        table=required(obj, "table", str, where),
        columns=tuple(_read_column(c, f"{where}.columns[{i}]", absent_decimal_is_zero) for i, c in enumerate(columns)),
        indexes=tuple(_read_index(x, f"{where}.indexes[{i}]") for i, x in enumerate(indexes)),
        table_id=required(obj, "tableID", int, where),
        version=uint64(obj, "version", where),
    )


def _read_column(raw: Any, where: str, absent_decimal_is_zero: bool) -> ColumnSchema:
    obj = as_dict(raw, where)
    name = required(obj, "name", str, where)
    data_type = as_dict(obj.get("dataType"), f"{where}.dataType")
    default = obj.get("default")
    if type(default) is int:  # JSON writes a BIT column's default as its number
        default = str(default)
    elif default is not None and type(default) is not str:
        raise Invalid(f"{where}: field 'default' must be a string, a number or null, got {default!r}")
    return ColumnSchema(
        name=name,
        type=_read_type(data_type, f"{where}.dataType", absent_decimal_is_zero),
        nullable=required(obj, "nullable", bool, where),
        default=default,
        charset=required(data_type, "charset", str, f"{where}.dataType"),
        collation=required(data_type, "collate", str, f"{where}.dataType"),
    )


def _read_type(data_type: dict[str, Any], where: str, absent_decimal_is_zero: bool) -> MySQLType:
    name = required(data_type, "mysqlType", str, where)
    try:
        base = MySQLType.parse(name)
    except TypeParseError as exc:
        raise Invalid(f"{where}: {exc}") from exc
    family = base.family
    length = optional(data_type, "length", int, where)
    decimals = optional(data_type, "decimal", int, where)
    if decimals is None and absent_decimal_is_zero and family in _DECIMAL_MEANS_SCALE:
        decimals = 0
    elements = optional(data_type, "elements", list, where)
    if elements is not None and not all(type(e) is str for e in elements):
        raise Invalid(f"{where}: field 'elements' must list strings, got {elements!r}")
    try:
        return MySQLType(
            base.name,
            unsigned=bool(optional(data_type, "unsigned", bool, where)),
            zerofill=bool(optional(data_type, "zerofill", bool, where)),
            # TiDB's "unspecified" is -1; 0 is what Go omits. Neither says anything.
            length=length if length is not None and length > 0 else None,
            decimals=decimals if decimals is not None and decimals >= 0 else None,
            elements=tuple(elements) if elements and family in (Family.ENUM, Family.SET) else None,
        )
    except TypeParseError as exc:  # beyond MySQL's limits: a BIT 2^40 bits wide
        raise Invalid(f"{where}: {exc}") from None


def _read_index(raw: Any, where: str) -> IndexSchema:
    obj = as_dict(raw, where)
    columns = optional(obj, "columns", list, where) or []
    if not all(type(c) is str for c in columns):
        raise Invalid(f"{where}: field 'columns' must list column names, got {columns!r}")
    return IndexSchema(
        name=required(obj, "name", str, where),
        columns=tuple(columns),
        unique=required(obj, "unique", bool, where),
        primary=required(obj, "primary", bool, where),
        nullable=required(obj, "nullable", bool, where),
    )


def _charset(column: ColumnSchema) -> tuple[str, str]:
    if column.type.family in _CHARACTER:
        return column.charset or "utf8mb4", column.collation or "utf8mb4_bin"
    return column.charset or "binary", column.collation or "binary"


# --- JSON -------------------------------------------------------------------------------------------


def json_table_schema(schema: TableSchema) -> dict[str, Any]:
    """The JSON object, fields in the order tiflow's ``TableSchema`` struct declares them."""
    return {
        "schema": schema.database,
        "table": schema.table,
        "tableID": schema.table_id or 0,
        "version": schema.version,
        "columns": [_json_column(c) for c in schema.columns],
        "indexes": [_index(x) for x in schema.indexes],
    }


def _json_column(column: ColumnSchema) -> dict[str, Any]:
    mtype = column.type
    family = mtype.family
    charset, collate = _charset(column)
    data_type: dict[str, Any] = {"mysqlType": mtype.name, "charset": charset, "collate": collate}
    if mtype.length:
        data_type["length"] = mtype.length
    if mtype.decimals and family not in (Family.FLOAT, Family.DOUBLE):
        data_type["decimal"] = mtype.decimals
    if mtype.elements:
        data_type["elements"] = list(mtype.elements)
    if mtype.unsigned:
        data_type["unsigned"] = True
    if mtype.zerofill:
        data_type["zerofill"] = True
    default: str | int | None = column.default
    if family is Family.BIT and column.default is not None and column.default.isdigit():
        default = int(column.default)
    return {"name": column.name, "dataType": data_type, "nullable": column.nullable, "default": default}


def _index(index: IndexSchema) -> dict[str, Any]:
    return {
        "name": index.name,
        "unique": index.unique,
        "primary": index.primary,
        "nullable": index.nullable,
        "columns": list(index.columns),
    }


# --- Avro -------------------------------------------------------------------------------------------


def avro_table_schema(schema: TableSchema) -> dict[str, Any]:
    """The ``com.pingcap.simple.avro.TableSchema`` record."""
    return {
        "database": schema.database,
        "table": schema.table,
        "tableID": schema.table_id or 0,
        "version": signed64(schema.version or 0),
        "columns": [_avro_column(c) for c in schema.columns],
        "indexes": [_index(x) for x in schema.indexes],
    }


def _avro_column(column: ColumnSchema) -> dict[str, Any]:
    mtype = column.type
    family = mtype.family
    charset, collate = _charset(column)
    decimal = None
    if family is Family.DECIMAL:
        decimal = mtype.decimals or 0
    elif family in _TEMPORAL and mtype.decimals:
        decimal = mtype.decimals
    numeric = family in _NUMERIC
    data_type = {
        "mysqlType": mtype.name,
        "charset": charset,
        "collate": collate,
        "length": mtype.length or 0,
        "decimal": decimal,
        "elements": list(mtype.elements or ()) if family in (Family.ENUM, Family.SET) else None,
        "unsigned": mtype.unsigned if numeric else None,
        "zerofill": mtype.zerofill if numeric else None,
    }
    return {"name": column.name, "dataType": data_type, "nullable": column.nullable, "default": column.default}
