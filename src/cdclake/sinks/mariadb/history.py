"""History tables (SCD type 2, :mod:`cdclake.schema.history`) in MariaDB (or MySQL): created beside their
mirror, a segment's version actions loaded into a staging table and applied in three statements, a
TRUNCATE as one UPDATE (or DELETE) of the open versions; each write in one transaction with its step,
as a mirror's merge is (:mod:`.sink`).

A segment's actions (:class:`~cdclake.schema.history.VersionAction`) arrive in a staging table like a
merge's (:func:`~.statements.stage_table`: ``cdclake_op``, ``cdclake_given``, ``c0`` ...), with the
version's ``cdclake_start_ts``, ``cdclake_end_ts`` and ``cdclake_end_op``: ``remove`` deletes the key's
open version (``__end_ts`` NULL), ``patch`` and ``close`` update it (a column the image lacks keeps its
value), ``insert`` adds a version. A key has at most one action that finds its open version in a
segment, and the inserts come last, so no insert is found by an update.

A history table has no unique key (a key has many versions): an index on its key columns (string
columns by a prefix, so that no key is too long for an index) finds the open versions. The mirror's
key changes (``SetKey``) are not made to it.
"""

from __future__ import annotations

from cdclake.model import TableSchema
from cdclake.schema.history import END_AT, END_OP, END_TS, IS_CURRENT, START_AT, START_TS, VERSION_COLUMNS
from cdclake.sinks.mariadb.statements import OP, given_or, ident, index_prefix, names, stage_table, table_options
from cdclake.sinks.mariadb.types import mariadb_type

START, END, ENDED_BY = "cdclake_start_ts", "cdclake_end_ts", "cdclake_end_op"
ACTION_COLUMNS = ("_start_ts", "_end_ts", "_end_op")  # of the version actions, loaded as START, END, ENDED_BY
_INDEX = "cdclake_versions"


def create_history(target: str, schema: TableSchema, collation: str) -> str:
    """The history table of ``schema``'s mirror, unless it exists: its columns, then the version columns."""
    columns = [f"{ident(c.name)} {mariadb_type(c.type)} NULL" for c in (*schema.columns, *VERSION_COLUMNS)]
    if schema.key_columns:
        types = {c.name: mariadb_type(c.type) for c in schema.columns}
        parts = [ident(k) + index_prefix(types[k]) for k in schema.key_columns]
        columns.append(f"KEY {_INDEX} ({', '.join([*parts, ident(END_TS)])})")
    return f"CREATE TABLE IF NOT EXISTS {target} ({', '.join(columns)}) {table_options(collation)}"


def stage_history(stage: str, schema: TableSchema, collation: str) -> str:
    """The staging table of one write's version actions to the history of a table of ``schema``."""
    return stage_table(stage, schema, collation, (f"{START} bigint NULL", f"{END} bigint NULL",
                                                  f"{ENDED_BY} varchar(8) NULL"))


def _wall_clock(ts_sql: str) -> str:
    """The wall-clock time of a TiDB TSO (its physical part, ms since the epoch), in the session's UTC."""
    return f"FROM_UNIXTIME(({ts_sql} >> 18) / 1000)"


def write_history(target: str, stage: str, schema: TableSchema) -> list[str]:
    """The version actions in ``stage`` applied to ``target``, the history of ``schema``'s rows."""
    position = {c.name: i for i, c in enumerate(schema.columns)}
    equal = "=" if schema.key_columns else "<=>"  # without a key, every column is the key, NULLs matching
    keys = schema.key_columns or tuple(position)
    open_version = " AND ".join([f"t.{ident(END_TS)} IS NULL",
                                 *(f"t.{ident(k)} {equal} s.c{position[k]}" for k in keys)])
    ends = {END_TS: f"s.{END}", END_AT: _wall_clock(f"s.{END}"), END_OP: f"s.{ENDED_BY}",
            IS_CURRENT: f"s.{END} IS NULL"}
    sets = [f"t.{ident(c.name)} = {given_or(i, f't.{ident(c.name)}')}" for i, c in enumerate(schema.columns)]
    sets += [f"t.{ident(name)} = {value}" for name, value in ends.items()]
    inserted = {**{c.name: f"s.c{i}" for i, c in enumerate(schema.columns)}, START_TS: f"s.{START}",
                START_AT: _wall_clock(f"s.{START}"), **ends}
    return [
        f"DELETE t FROM {target} AS t JOIN {stage} AS s ON {open_version} WHERE s.{OP} = 'remove'",
        f"UPDATE {target} AS t JOIN {stage} AS s ON {open_version} SET {', '.join(sets)} "
        f"WHERE s.{OP} IN ('patch', 'close')",
        f"INSERT INTO {target} ({names(list(inserted))}) SELECT {', '.join(inserted.values())} FROM {stage} AS s "
        f"WHERE s.{OP} = 'insert'",
    ]


def close_history(target: str, end_ts: int, keep: bool) -> str:
    """A TRUNCATE at ``end_ts``: the open versions ended by it (``keep``), or removed."""
    open_versions = f"{ident(END_TS)} IS NULL"
    if not keep:
        return f"DELETE FROM {target} WHERE {open_versions}"
    ts = str(int(end_ts))
    return (f"UPDATE {target} SET {ident(END_TS)} = {ts}, {ident(END_AT)} = {_wall_clock(ts)}, "
            f"{ident(END_OP)} = 'truncate', {ident(IS_CURRENT)} = 0 WHERE {open_versions}")
