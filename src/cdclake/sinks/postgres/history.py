"""History tables (SCD type 2, :mod:`cdclake.schema.history`) in PostgreSQL: created beside their mirror, a
segment's version actions applied from a staging table in three statements, a TRUNCATE as one UPDATE (or
DELETE) of the open versions. Like every statement of the sink, they run in the batch's transaction.

A segment's actions (:class:`~cdclake.schema.history.VersionAction`) are its part of the batch's staging
table (``_op``, ``_image``, ``_start_ts``, ``_end_ts``, ``_end_op``), as the Iceberg sink's MERGE reads them:
``remove`` deletes the key's open version (``__end_ts`` NULL), ``patch`` and ``close`` update it (a
column the image lacks keeps its value), ``insert`` adds a version. A key has at most one action that
finds its open version in a segment, and the inserts come last, so no insert is found by an update.
"""

from __future__ import annotations

from cdclake.model import TableSchema
from cdclake.schema.history import END_AT, END_OP, END_TS, IS_CURRENT, START_AT, START_TS
from cdclake.sinks.postgres.statements import ident, image_value, index_name, kept_unless_given, literal, row_match
from cdclake.sinks.postgres.types import pg_type

# The version columns as PostgreSQL holds them: the flag a boolean, as in the lake.
VERSION_COLUMNS = ((START_TS, "bigint"), (START_AT, "timestamptz"), (END_TS, "bigint"), (END_AT, "timestamptz"),
                   (END_OP, "text"), (IS_CURRENT, "boolean"))
# (name, Spark type) of the staging table of a batch's version actions (spark.history.ACTION_DDL's).
ACTION_STAGE_FIELDS = (("database", "string"), ("table", "string"), ("_segment", "int"), ("_op", "string"),
                       ("_image", "string"), ("_start_ts", "bigint"), ("_end_ts", "bigint"), ("_end_op", "string"))
ACTION_NAMES = ("_op", "_image", "_start_ts", "_end_ts", "_end_op")  # what a segment's write reads


def create_history(target: str, schema: TableSchema) -> list[str]:
    """The history table of ``schema``'s mirror, unless it exists: its columns, then the version columns;
    with an index on the open versions' keys, which every action but an insert looks up. A table without
    a key gets none: its key is the whole row, too wide for an index."""
    columns = [f"{ident(c.name)} {pg_type(c.type)}" for c in schema.columns]
    columns += [f"{ident(name)} {pg_type_text}" for name, pg_type_text in VERSION_COLUMNS]
    statements = [f"CREATE TABLE IF NOT EXISTS {target} ({', '.join(columns)})"]
    if schema.key_columns:
        keys = ", ".join(ident(k) for k in schema.key_columns)
        statements.append(f"CREATE INDEX IF NOT EXISTS {ident(index_name(target))} ON {target} ({keys}) "
                          f"WHERE {ident(END_TS)} IS NULL")
    return statements


def _wall_clock(ts_sql: str) -> str:
    """The wall-clock time of a TiDB TSO: its physical part, milliseconds since the epoch (exact: no float)."""
    return f"('epoch'::timestamptz + ({ts_sql} >> 18) * interval '1 millisecond')"


def write_history(target: str, stage: str, schema: TableSchema) -> list[str]:
    """The version actions in ``stage`` (a table or a parenthesized query) applied to ``target``, the
    history of ``schema``'s rows."""
    open_version = f"t.{ident(END_TS)} IS NULL AND {row_match(schema)}"  # as the mirror's merge matches
    ends = {END_TS: "s._end_ts", END_AT: _wall_clock("s._end_ts"), END_OP: "s._end_op",
            IS_CURRENT: "s._end_ts IS NULL"}
    sets = [f"{ident(c.name)} = {kept_unless_given(c)}" for c in schema.columns]
    sets += [f"{ident(name)} = {value}" for name, value in ends.items()]
    inserted = {**{c.name: image_value(c) for c in schema.columns}, START_TS: "s._start_ts",
                START_AT: _wall_clock("s._start_ts"), **ends}
    return [
        f"DELETE FROM {target} t USING {stage} s WHERE s._op = 'remove' AND {open_version}",
        f"UPDATE {target} t SET {', '.join(sets)} FROM {stage} s WHERE s._op IN ('patch', 'close') AND {open_version}",
        f"INSERT INTO {target} ({', '.join(ident(name) for name in inserted)}) "
        f"SELECT {', '.join(inserted.values())} FROM {stage} s WHERE s._op = 'insert'",
    ]


def close_history(target: str, end_ts: int, keep: bool) -> list[str]:
    """A TRUNCATE at ``end_ts``: the open versions ended by it (``keep``), or removed."""
    open_versions = f"{ident(END_TS)} IS NULL"
    if not keep:
        return [f"DELETE FROM {target} WHERE {open_versions}"]
    ts = f"{int(end_ts)}::bigint"
    return [f"UPDATE {target} SET {ident(END_TS)} = {ts}, {ident(END_AT)} = {_wall_clock(ts)}, "
            f"{ident(END_OP)} = {literal('truncate')}, {ident(IS_CURRENT)} = false WHERE {open_versions}"]
