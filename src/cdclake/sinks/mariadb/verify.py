"""MariaDB tables compared with the rows they should hold (the demo's ``--sink`` check and the tests').

The expected rows are loaded, as the sink loads what it writes (:func:`~cdclake.sinks.mariadb.types.loader`),
into a temporary table with the table's own column types, and the two sides are compared with
``EXCEPT ALL`` both ways, inside MariaDB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cdclake.model import TableSchema
from cdclake.schema.lake import lake_text_function
from cdclake.sinks.base import TableComparison
from cdclake.sinks.mariadb.connection import MariaDBAddress, connect
from cdclake.sinks.mariadb.loading import load_rows
from cdclake.sinks.mariadb.statements import ident, split_target, table_options
from cdclake.sinks.mariadb.types import loader, mariadb_type, normalized
from cdclake.types import MySQLType

_EXPECTED = "cdclake_expected"


def compare_tables(address: MariaDBAddress, tables: Mapping[tuple[str, str], Any],
                   target_of: Callable[[str, str], str], examples: int = 3) -> list[TableComparison]:
    """Every upstream table (``tables``: (database, table) -> an object with ``schema`` and ``rows``, a
    mapping whose values are the rows) against its table ``target_of(database, table)``."""
    with connect(address.arguments) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT @@local_infile")
        local_infile = bool(cursor.fetchone()[0])
        return [_compare(cursor, f"{database}.{table}", target_of(database, table), state.schema,
                         list(state.rows.values()), examples, local_infile)
                for (database, table), state in sorted(tables.items())]


def _compare(cursor: Any, upstream: str, target: str, schema: TableSchema, rows: list[Mapping[str, Any]],
             examples: int, local_infile: bool) -> TableComparison:
    comparison = TableComparison(upstream, target, len(rows))
    held, collation = _columns(cursor, target)
    shared = comparison.shared_columns(schema, held or None)
    if not held:
        return comparison
    texts = [_text_as_held(c.type, held[c.name]) for c in shared]
    loads = [loader(held[c.name], f"{target}.{c.name}") for c in shared]
    columns = ", ".join(f"c{i} {held[c.name]} NULL" for i, c in enumerate(shared))
    cursor.execute(f"CREATE TEMPORARY TABLE {_EXPECTED} ({columns}) {table_options(collation)}")
    try:
        load_rows(cursor, _EXPECTED, [f"c{i}" for i in range(len(shared))],
                  ([load(text(row.get(c.name))) for c, text, load in zip(shared, texts, loads, strict=True)]
                   for row in rows), local_infile, [c.name for c in shared])
        expected = "SELECT " + ", ".join(f"c{i}" for i in range(len(shared))) + f" FROM {_EXPECTED}"
        actual = "SELECT " + ", ".join(ident(c.name) for c in shared) + f" FROM {target}"
        cursor.execute(f"SELECT count(*) FROM {target}")
        comparison.lake_rows = cursor.fetchone()[0]
        sides = (("missing", f"{expected} EXCEPT ALL {actual}"), ("unexpected", f"{actual} EXCEPT ALL {expected}"))
        for side, query in sides:
            cursor.execute(f"SELECT * FROM ({query}) d")
            found = cursor.fetchall()
            setattr(comparison, side, len(found))
            comparison.examples += [f"{side} {dict(zip((c.name for c in shared), row, strict=True))}"
                                    for row in found[:examples]]
    finally:
        cursor.execute(f"DROP TEMPORARY TABLE {_EXPECTED}")
    return comparison


def _text_as_held(mtype: MySQLType, held: str) -> Callable[[Any], str | None]:
    """The lake text of a value of ``mtype`` in a column MariaDB holds as ``held``. A table made from a
    format's row types has what the format tells (Canal-JSON and Open Protocol say ``enum``, not its
    members; DataWorks carries DECIMAL, DATE, DATETIME and TIME as text), and holds the values that way."""
    held = normalized(held)
    text = lake_text_function(mtype)
    if held == "longtext" or held.startswith("varchar"):
        return lambda value: value if isinstance(value, str) else text(value)
    bare = MySQLType.parse(mtype.name + (" unsigned" if mtype.unsigned else ""))
    return lake_text_function(bare) if mariadb_type(mtype) != held and mariadb_type(bare) == held else text


def _columns(cursor: Any, target: str) -> tuple[dict[str, str], str]:
    """The table's columns and their types as the server names them (none if it does not exist), and its
    collation."""
    cursor.execute("SELECT table_collation FROM information_schema.tables WHERE table_schema = %s "
                   "AND table_name = %s", split_target(target))
    found = cursor.fetchone()
    if found is None:
        return {}, ""
    cursor.execute("SELECT column_name, column_type FROM information_schema.columns WHERE table_schema = %s "
                   "AND table_name = %s ORDER BY ordinal_position", split_target(target))
    return dict(cursor.fetchall()), found[0]
