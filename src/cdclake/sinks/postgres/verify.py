"""PostgreSQL tables compared with the rows they should hold (the demo's ``--sink`` check and the tests').

The expected rows go into a temporary table as lake texts, are cast to the table's own column types as
the sink casts what it writes (:func:`~cdclake.sinks.postgres.types.cast_text`), and the two sides are
compared with ``EXCEPT ALL`` both ways, inside PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from cdclake.model import TableSchema
from cdclake.schema.lake import lake_text_function
from cdclake.sinks.base import TableComparison
from cdclake.sinks.postgres.connection import PostgresAddress
from cdclake.sinks.postgres.statements import ident
from cdclake.sinks.postgres.types import cast_text, pg_type
from cdclake.types import MySQLType


def compare_tables(address: PostgresAddress, tables: Mapping[tuple[str, str], Any],
                   target_of: Callable[[str, str], str], examples: int = 3) -> list[TableComparison]:
    """Every upstream table (``tables``: (database, table) -> an object with ``schema`` and ``rows``, a
    mapping whose values are the rows) against its table ``target_of(database, table)``."""
    import psycopg

    with psycopg.connect(address.conninfo, autocommit=True) as connection:
        return [_compare(connection, f"{database}.{table}", target_of(database, table), state.schema,
                         list(state.rows.values()), examples)
                for (database, table), state in sorted(tables.items())]


def _compare(connection: Any, upstream: str, target: str, schema: TableSchema, rows: list[Mapping[str, Any]],
             examples: int) -> TableComparison:
    comparison = TableComparison(upstream, target, len(rows))
    held = _column_types(connection, target)
    shared = comparison.shared_columns(schema, held)
    if held is None:
        return comparison
    texts = [_text_as_held(c.type, held[c.name]) for c in shared]
    connection.execute("CREATE TEMPORARY TABLE cdclake_expected (" +
                       ", ".join(f"c{i} text" for i in range(len(shared))) + ")")
    try:
        with connection.cursor().copy("COPY cdclake_expected FROM STDIN") as copy:
            for row in rows:
                copy.write_row([text(row.get(c.name)) for c, text in zip(shared, texts, strict=True)])
        expected = "SELECT " + ", ".join(f"{cast_text(f'c{i}', held[c.name])} AS {ident(c.name)}"
                                         for i, c in enumerate(shared)) + " FROM cdclake_expected"
        actual = "SELECT " + ", ".join(ident(c.name) for c in shared) + f" FROM {target}"
        comparison.lake_rows = connection.execute(f"SELECT count(*) FROM {target}").fetchone()[0]
        sides = (("missing", f"{expected} EXCEPT ALL {actual}"), ("unexpected", f"{actual} EXCEPT ALL {expected}"))
        for side, query in sides:
            found = connection.execute(f"SELECT * FROM ({query}) d").fetchall()
            setattr(comparison, side, len(found))
            comparison.examples += [f"{side} {dict(zip((c.name for c in shared), row, strict=True))}"
                                    for row in found[:examples]]
    finally:
        connection.execute("DROP TABLE cdclake_expected")
    return comparison


def _text_as_held(mtype: MySQLType, held: str) -> Callable[[Any], str | None]:
    """The lake text of a value of ``mtype`` in a column PostgreSQL holds as ``held``. A table made from a
    format's row types has what the format tells (Canal-JSON and Open Protocol say ``enum``, not its
    members; DataWorks carries DECIMAL, DATE, DATETIME and TIME as text), and holds the values that way."""
    if held == "text":
        text = lake_text_function(mtype)
        return lambda value: value if isinstance(value, str) else text(value)
    bare = MySQLType.parse(mtype.name + (" unsigned" if mtype.unsigned else ""))
    return lake_text_function(bare if pg_type(mtype) != held and pg_type(bare) == held else mtype)


def _column_types(connection: Any, target: str) -> dict[str, str] | None:
    """The table's columns and their types as PostgreSQL names them; None if it does not exist."""
    found = connection.execute("SELECT to_regclass(%s)", (target,)).fetchone()[0]
    if found is None:
        return None
    columns = connection.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (target,)).fetchall()
    return dict(columns)

