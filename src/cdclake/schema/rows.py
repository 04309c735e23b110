"""What a row message's column types tell of its table's schema.

TiCDC and DataWorks send each row with its columns' types; a column the known schema lacks, or a type
that contradicts the known one, is a schema change the rows bring before (or without) their DDL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cdclake.model import ColumnSchema, TableSchema
from cdclake.schema.ddl.changes import AddColumn, ModifyColumn, SchemaChange
from cdclake.types import MySQLType

# Whether a sink's column made for the ``known`` type holds the values of the ``seen`` one as they are.
Holds = Callable[[MySQLType, MySQLType], bool]


def changes_seen_in_rows(schema: TableSchema, types: Mapping[str, MySQLType], holds: Holds) -> list[SchemaChange]:
    """The changes a row message's column ``types`` show against the table's known ``schema``: an
    :class:`AddColumn` for a column the schema lacks, a :class:`ModifyColumn` where the row's type
    contradicts the known one.

    A type the known column ``holds`` does not contradict it (an ``int`` row into a column now
    ``bigint``: a row written before the column was widened). Nor does a type that only says less:
    TiCDC's Canal-JSON and Open Protocol write bare types (``decimal`` for decimal(10,2), ``bit`` for
    bit(10), ``enum`` without its members), whose sink columns may differ from the known column's
    although the column did not change.
    """
    changes: list[SchemaChange] = []
    known = {c.name.lower(): c for c in schema.columns}
    for name, seen in types.items():
        column = known.get(name.lower())
        if column is None:
            changes.append(AddColumn(ColumnSchema(name, seen)))
        elif not holds(seen, column.type) and not _says_less(seen, column.type):
            changes.append(ModifyColumn(ColumnSchema(column.name, seen, column.nullable, column.default,
                                                     column.charset, column.collation)))
    return changes


def _says_less(seen: MySQLType, known: MySQLType) -> bool:
    return (
        seen.name == known.name
        and (not seen.unsigned or known.unsigned)
        and seen.length in (None, known.length)
        and seen.decimals in (None, known.decimals)
        and seen.elements in (None, known.elements)
    )
