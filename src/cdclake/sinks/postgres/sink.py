"""The PostgreSQL sink: one table per upstream table in a PostgreSQL database, each batch applied in one
database transaction together with the job's progress.

**One transaction per batch.** The executors copy a batch's rows (every table's net changes into one,
the history tables' version actions into another, the changelog, the dead letters, the pending changes)
into unlogged staging tables with ``COPY``, in parallel, while the pipeline plans; nothing a reader sees changes. The
pipeline's table calls (create, evolve, merge, truncate, rename, drop, and a history table's writes,
:mod:`.history`) are kept, in order, as statements. :meth:`PostgresSink.commit`
runs them all in one transaction with the new state (``<namespace>.cdclake_state``) and drops the
staging tables: PostgreSQL's DDL is transactional, so a crash anywhere leaves the database as the
previous batch left it, and the batch runs again from its recorded plan. That is stronger than the
:class:`~cdclake.sinks.base.Sink` protocol asks: :meth:`PostgresSink.last_step` is always (0, 0), as no
step of an unfinished batch is ever stored.

Staging tables a crash left behind are dropped when the state is next loaded. The job's own tables
live in the schema ``namespace`` (``cdclake`` by default): ``cdclake_state``, ``cdclake_changelog``,
``cdclake_dead_letters``.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cdclake.model import TableSchema
from cdclake.schema.ddl.changes import SchemaChange
from cdclake.schema.layout import TableLayout
from cdclake.schema.rows import changes_seen_in_rows
from cdclake.sinks.base import CHANGELOG_FIELDS, DEAD_LETTER_FIELDS, Compaction, NetPart, Step, refuse_layout
from cdclake.sinks.postgres import history, statements
from cdclake.sinks.postgres.connection import PostgresAddress, SinkError, check_server, connect
from cdclake.sinks.postgres.statements import ident, table_name
from cdclake.sinks.postgres.types import holds
from cdclake.sources.ranges import OffsetRange
from cdclake.spark.changes import CHANGE_FIELDS, CHANGE_NAMES
from cdclake.spark.frames import local_frame
from cdclake.spark.progress import STATE_FIELDS, STATE_NAMES, JobState, plan_rows, small_rows, state_from_rows
from cdclake.types import MySQLType

if TYPE_CHECKING:
    import psycopg
    from pyspark.sql import DataFrame, SparkSession

_PG_TYPE_OF_SPARK = {"string": "text", "int": "integer", "bigint": "bigint", "binary": "bytea"}
NET_STAGE_FIELDS = (("database", "string"), ("table", "string"), ("_segment", "int"), ("_key", "string"),
                    ("_op", "string"), ("_image", "string"))
STAGE_PREFIX = "cdclake_stage_"
_QUOTED_PAIR = re.compile(r'"((?:[^"]|"")*)"\."((?:[^"]|"")*)"')


class PostgresSink:
    """Tables in the database at ``address``; the job's own in the schema ``namespace``."""

    def __init__(self, spark: SparkSession, address: PostgresAddress, namespace: str = "cdclake") -> None:
        self.spark, self.address, self.namespace = spark, address, namespace
        self._statements: list[str] = []  # the batch's table statements, in the order they were asked
        self._stages: list[str] = []
        self._net_stage: str | None = None  # the batch's net changes (stage_changes)
        self._history_stage: str | None = None  # its version actions (stage_history)
        self._lock = threading.Lock()

    def _job_table(self, name: str) -> str:
        return table_name(self.namespace, "cdclake_" + name)

    def _connect(self, autocommit: bool = True) -> psycopg.Connection[Any]:
        return connect(self.address, autocommit)

    def prepare(self) -> None:
        """The job's schema and own tables, where they do not exist yet."""
        tables = (("state", STATE_FIELDS), ("changelog", (*CHANGELOG_FIELDS, ("batch", "bigint"))),
                  ("dead_letters", (*DEAD_LETTER_FIELDS, ("batch", "bigint"))))
        with self._connect() as connection:
            check_server(connection.info.server_version, self.address)
            connection.execute(f"CREATE SCHEMA IF NOT EXISTS {ident(self.namespace)}")
            for name, fields in tables:
                connection.execute(f"CREATE TABLE IF NOT EXISTS {self._job_table(name)} ({_columns(fields)})")

    # --- progress ----------------------------------------------------------------------------------------

    def load_state(self) -> tuple[JobState, DataFrame]:
        self._statements, self._stages, self._net_stage, self._history_stage = [], [], None, None
        table = self._job_table("state")
        with self._connect() as connection:
            self._drop_stale_stages(connection)
            state = read_state(connection, self.address, self.namespace)
            pending = connection.execute(f"SELECT {_names(CHANGE_NAMES)} FROM {table} WHERE state = 'pending'"
                                         ).fetchall()
        return state, local_frame(self.spark, pending, CHANGE_FIELDS)

    def _drop_stale_stages(self, connection: psycopg.Connection[Any]) -> None:
        """Staging tables of a batch a crash interrupted: the batch runs again with new ones."""
        found = connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename LIKE %s",
                                   (self.namespace, STAGE_PREFIX + "%")).fetchall()
        for (name,) in found:
            connection.execute(f"DROP TABLE IF EXISTS {table_name(self.namespace, name)}")

    def record_plan(self, ranges: Sequence[OffsetRange], batch: int, stream: tuple[str, int] | None) -> None:
        with self._connect() as connection, connection.cursor() as cursor:
            _copy_rows(cursor, self._job_table("state"), STATE_NAMES, plan_rows(ranges, batch, stream))

    def commit(self, state: JobState, batch: int, pending: DataFrame | None) -> None:
        """Every statement of the batch, the new state and the staging tables' end, in one transaction."""
        stage = None if pending is None else self._stage(pending, CHANGE_FIELDS)
        table = self._job_table("state")
        with self._connect(autocommit=False) as connection, connection.cursor() as cursor:
            for statement in self._statements:
                cursor.execute(statement)
            cursor.execute(f"DELETE FROM {table}")
            _copy_rows(cursor, table, STATE_NAMES, small_rows(state, batch))
            if stage is not None:
                names = _names(CHANGE_NAMES)
                cursor.execute(f"INSERT INTO {table} (state, batch, {names}) SELECT 'pending', {int(batch)}, {names} "
                               f"FROM {stage}")
            for staged in self._stages:
                cursor.execute(f"DROP TABLE {staged}")
        self._statements, self._stages, self._net_stage, self._history_stage = [], [], None, None

    # --- tables ------------------------------------------------------------------------------------------

    def target(self, namespace: str, table: str) -> str:
        return table_name(namespace, table)

    def create_table(self, target: str, schema: TableSchema, layout: TableLayout | None = None) -> None:
        refuse_layout(layout)
        namespace, _ = _split(target)
        self._add([f"CREATE SCHEMA IF NOT EXISTS {ident(namespace)}", *statements.create_table(target, schema)])

    def apply_layout(self, target: str, schema: TableSchema, layout: TableLayout) -> None:
        refuse_layout(layout)

    def changes_in_rows(self, schema: TableSchema, types: Mapping[str, MySQLType]) -> list[SchemaChange]:
        return changes_seen_in_rows(schema, types, holds)

    def evolve_table(self, target: str, schema: TableSchema, changes: Sequence[SchemaChange]) -> None:
        self._add(statements.alter(target, schema, changes))

    def last_step(self, target: str) -> tuple[int, int]:
        return (0, 0)  # a batch's steps are stored only with its state: see the module's docstring

    def stage_changes(self, net: DataFrame) -> None:
        """The batch's net changes of every table in one staging table, copied by the executors in one
        Spark job (a job per write cost more than its writing, for the small writes of most batches),
        indexed by the part each write takes, and analyzed, so that PostgreSQL plans each merge on its
        part's size."""
        self._net_stage = self._stage_parts(net, NET_STAGE_FIELDS)

    def write_changes(self, target: str, schema: TableSchema, net: DataFrame, step: Step, *,
                      whole_images: bool, maybe_empty: bool, part: NetPart) -> None:
        assert self._net_stage is not None, "the pipeline stages a batch's net changes before it writes them"
        self._add(statements.merge(target, _part_of(self._net_stage, part, ("_key", "_op", "_image")), schema,
                                   whole_images))

    def truncate_table(self, target: str, step: Step) -> None:
        self._add([f"TRUNCATE {target}"])

    def rename_table(self, target: str, new_target: str) -> None:
        (old_namespace, old_name), (namespace, name) = _split(target), _split(new_target)
        moves = [f"CREATE SCHEMA IF NOT EXISTS {ident(namespace)}"]
        if namespace != old_namespace:
            moves.append(f"ALTER TABLE {target} SET SCHEMA {ident(namespace)}")
        if name != old_name:
            moves.append(f"ALTER TABLE {table_name(namespace, old_name)} RENAME TO {ident(name)}")
        self._add(moves)

    def drop_table(self, target: str) -> None:
        self._add([f"DROP TABLE IF EXISTS {target}"])

    def _add(self, batch_statements: Iterable[str]) -> None:
        with self._lock:
            self._statements.extend(batch_statements)

    # --- history tables (sinks.base.HistorySink) -------------------------------------------------------

    def create_history(self, target: str, schema: TableSchema) -> None:
        namespace, _ = _split(target)
        self._add([f"CREATE SCHEMA IF NOT EXISTS {ident(namespace)}", *history.create_history(target, schema)])

    def stage_history(self, actions: DataFrame) -> None:
        """The batch's version actions of every history table in one staging table, as the net changes."""
        self._history_stage = self._stage_parts(actions, history.ACTION_STAGE_FIELDS)

    def write_history(self, target: str, schema: TableSchema, actions: DataFrame, step: Step, part: NetPart) -> None:
        assert self._history_stage is not None, "the pipeline stages a batch's version actions before it writes them"
        self._add(history.write_history(target, _part_of(self._history_stage, part, history.ACTION_NAMES), schema))

    def close_history(self, target: str, end_ts: int, keep: bool, step: Step) -> None:
        self._add(history.close_history(target, end_ts, keep))

    # --- the job's own tables ----------------------------------------------------------------------------

    def append_changelog(self, changes: DataFrame, batch: int, recovering: bool) -> None:
        self._append_staged("changelog", changes.filter("kind = 'row'"), CHANGELOG_FIELDS, batch)

    def append_dead_letters(self, errors: DataFrame, batch: int, recovering: bool) -> None:
        self._append_staged("dead_letters", errors, DEAD_LETTER_FIELDS, batch)

    def _append_staged(self, name: str, rows: DataFrame, fields: Sequence[tuple[str, str]], batch: int) -> None:
        stage = self._stage(rows, fields)
        names = _names(field for field, _ in fields)
        self._add([f"INSERT INTO {self._job_table(name)} ({names}, batch) SELECT {names}, {int(batch)} FROM {stage}"])

    def maintain(self, targets: Sequence[str]) -> None:
        """Nothing to do: PostgreSQL's autovacuum keeps the tables, and the state is one table of rows."""

    def compact(self, targets: Sequence[str]) -> list[Compaction]:
        """Nothing to do: an UPDATE or DELETE rewrites rows in place, and autovacuum reclaims the rest."""
        return []

    # --- staging -----------------------------------------------------------------------------------------

    def _stage_parts(self, frame: DataFrame, fields: Sequence[tuple[str, str]]) -> str:
        """A staging table of rows for many writes (``database``, ``table``, ``_segment`` say whose), indexed
        by them and analyzed, so that PostgreSQL plans each write on the size of its part."""
        stage = self._stage(frame, fields, jsonb="_image")
        with self._connect() as connection:
            connection.execute(f'CREATE INDEX ON {stage} (database, "table", _segment)')
            connection.execute(f"ANALYZE {stage}")
        return stage

    def _stage(self, frame: DataFrame, fields: Sequence[tuple[str, str]], jsonb: str | None = None) -> str:
        """``frame``'s ``fields`` copied by the executors into a new unlogged table (committed: no reader
        looks there); ``jsonb`` a column of JSON text kept as jsonb."""
        stage = table_name(self.namespace, STAGE_PREFIX + uuid.uuid4().hex)
        with self._connect() as connection:
            connection.execute(f"CREATE UNLOGGED TABLE {stage} ({_columns(fields, jsonb)})")
        with self._lock:
            self._stages.append(stage)
        names = [name for name, _ in fields]
        copy_frame(frame.select(*names), self.address.conninfo, stage, names)
        return stage


def read_state(connection: psycopg.Connection[Any], address: PostgresAddress, namespace: str) -> JobState:
    """The state of the job whose own tables are in the schema ``namespace``, its pending changes left out."""
    import psycopg
    from psycopg.rows import dict_row

    table = table_name(namespace, "cdclake_state")
    try:
        rows = connection.cursor(row_factory=dict_row).execute(
            f"SELECT * FROM {table} WHERE state <> 'pending'").fetchall()
    except psycopg.errors.UndefinedTable:
        raise SinkError(f"sink {address.shown}: no job state there ({table}): no job has "
                        f"replicated into the schema {namespace!r} yet") from None
    return state_from_rows(rows)


def copy_frame(frame: DataFrame, conninfo: str, table: str, names: Sequence[str]) -> int:
    """``frame``'s rows copied into ``table`` by the executors, each task with a ``COPY`` of its own; the
    count of rows copied."""
    from pyspark.sql import functions as F

    def copy(batches: Iterable[Any]) -> Iterator[Any]:
        import psycopg
        import pyarrow as pa

        with psycopg.connect(conninfo, autocommit=True) as connection, connection.cursor() as cursor:
            try:
                copied = _copy_rows(cursor, table, names, (row for batch in batches for row in _tuples(batch)))
            except psycopg.errors.UntranslatableCharacter as error:
                raise SinkError(f"a text value holds the NUL character, which PostgreSQL's text cannot hold "
                                f"(docs/sinks.md): {error}") from None
        yield pa.RecordBatch.from_pydict({"copied": [copied]})

    total = frame.mapInArrow(copy, "copied long").agg(F.sum("copied")).collect()[0][0]
    return int(total or 0)


def _tuples(batch: Any) -> Iterator[tuple[Any, ...]]:
    return zip(*(column.to_pylist() for column in batch.columns), strict=True)


def _copy_rows(cursor: psycopg.Cursor[Any], table: str, names: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    count = 0
    with cursor.copy(f"COPY {table} ({_names(names)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


def _part_of(stage: str, part: NetPart, names: Sequence[str]) -> str:
    """The rows of ``part`` in ``stage`` (:meth:`PostgresSink._stage_parts`), their columns ``names``, as a
    parenthesized query a statement reads as it would a table."""
    database, table, segment = part
    return (f"(SELECT {_names(names)} FROM {stage} WHERE database = {statements.literal(database)} "
            f"AND \"table\" = {statements.literal(table)} AND _segment = {int(segment)})")


def _names(names: Iterable[str]) -> str:
    return ", ".join(ident(name) for name in names)


def _columns(fields: Sequence[tuple[str, str]], jsonb: str | None = None) -> str:
    """Column definitions of ``fields`` (name, Spark type); ``jsonb`` the one, if any, typed jsonb."""
    return ", ".join(f"{ident(name)} {'jsonb' if name == jsonb else _PG_TYPE_OF_SPARK[spark_type]}"
                     for name, spark_type in fields)


def _split(target: str) -> tuple[str, str]:
    """The schema and table names of a target :meth:`PostgresSink.target` made."""
    found = _QUOTED_PAIR.fullmatch(target)
    assert found is not None, f"not a sink table name: {target}"
    return found[1].replace('""', '"'), found[2].replace('""', '"')
