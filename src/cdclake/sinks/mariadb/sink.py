"""The MariaDB (or MySQL) sink: one table per upstream table in MariaDB databases, each write atomic
with the step it is of the job's batch.

**Steps, not one transaction.** MariaDB's DDL is not transactional (each ALTER commits), so a batch
cannot be one transaction as in :mod:`cdclake.sinks.postgres`. The sink keeps the
:class:`~cdclake.sinks.base.Sink` protocol's step rules instead:

- The executors load a write's net rows into a staging table, in parallel; then one transaction
  merges them into the table (:func:`~cdclake.sinks.mariadb.statements.merge`) and stores the write's
  :class:`~cdclake.sinks.base.Step` in ``<namespace>.cdclake_steps``, which
  :meth:`MariaDBSink.last_step` reads: a re-run of the batch skips what is stored.
- A TRUNCATE is ``TRUNCATE TABLE`` and then its step stored: done twice it is done once, and no later
  step of the table runs before its step is stored.
- DDL is planned against the table as the server has it now, so run again it finds its work done.
  A renamed table's step row records where it went (in which batch), and :meth:`MariaDBSink.last_step`
  follows that within the batch: the steps of a table renamed before a crash stay known under its old
  name, which the job's state still holds. Step rows outlive their tables (a dropped table's steps are
  of an older batch than any a new table of its name makes).
- The changelog and dead-letter appends are one ``INSERT ... SELECT`` each, with the batch's number in
  every row: recovering, a batch found there is not appended again.
- :meth:`MariaDBSink.commit` replaces the state's rows in one transaction.

Staging tables a crash left behind are dropped when the state is next loaded. The job's own tables live
in the database ``namespace`` (``cdclake`` by default): ``cdclake_state``, ``cdclake_steps``,
``cdclake_changelog``, ``cdclake_dead_letters``.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import cached_property
from typing import TYPE_CHECKING, Any

from cdclake.model import TableSchema
from cdclake.schema.ddl.changes import SchemaChange, SetKey
from cdclake.schema.layout import TableLayout
from cdclake.schema.rows import changes_seen_in_rows
from cdclake.sinks.base import CHANGELOG_FIELDS, DEAD_LETTER_FIELDS, Compaction, NetPart, Step, refuse_layout
from cdclake.sinks.mariadb import history, statements
from cdclake.sinks.mariadb.connection import MariaDBAddress, connect
from cdclake.sinks.mariadb.loading import SinkError, load_frame, load_rows, net_rows
from cdclake.sinks.mariadb.statements import ident, names, split_target, table_name, table_options
from cdclake.sinks.mariadb.types import holds, mariadb_type
from cdclake.sources.ranges import OffsetRange
from cdclake.spark.changes import CHANGE_FIELDS, CHANGE_NAMES
from cdclake.spark.frames import local_frame
from cdclake.spark.progress import STATE_FIELDS, STATE_NAMES, JobState, plan_rows, small_rows, state_from_rows
from cdclake.types import MySQLType

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_TYPE_OF_SPARK = {"string": "longtext", "int": "int", "bigint": "bigint", "binary": "longblob"}
STEP_COLUMNS = ("`target` varchar(512) NOT NULL PRIMARY KEY, batch bigint NOT NULL, step int NOT NULL, "
                "resolved_ts bigint NULL, renamed_to varchar(512) NULL, renamed_in bigint NULL, "
                "ddl_batch bigint NULL, ddl_done int NULL")
STAGE_PREFIX = "cdclake_stage_"
# The collations that tell every two strings apart, trailing spaces too: MariaDB's, MySQL 8's; the last
# (PAD SPACE) where neither exists.
_BINARY_COLLATIONS = ("utf8mb4_nopad_bin", "utf8mb4_0900_bin", "utf8mb4_bin")
_NO_TABLE = 1146  # ER_NO_SUCH_TABLE


class MariaDBSink:
    """Tables in the MariaDB server at ``address``; the job's own in the database ``namespace``."""

    def __init__(self, spark: SparkSession, address: MariaDBAddress, namespace: str = "cdclake") -> None:
        self.spark, self.address, self.namespace = spark, address, namespace
        self._batch = 0  # the batch under way, as the state loaded last says
        self._ddl_calls: dict[str, int] = {}  # per table, the DDL calls on it in this run of the batch
        # The history tables this run made or was told of (create_history comes first for each).
        self._histories: set[str] = set()
        self._lock = threading.Lock()

    def _job_table(self, name: str) -> str:
        return table_name(self.namespace, "cdclake_" + name)

    def _connect(self, autocommit: bool = True) -> AbstractContextManager[Any]:
        return cursor_of(self.address, autocommit)

    @cached_property
    def _server(self) -> tuple[str, bool]:
        """The binary collation text columns get, and whether the server takes LOAD DATA LOCAL."""
        with self._connect() as cursor:
            cursor.execute("SELECT collation_name FROM information_schema.collations WHERE collation_name IN "
                           f"({', '.join(['%s'] * len(_BINARY_COLLATIONS))})", _BINARY_COLLATIONS)
            found = {row[0] for row in cursor.fetchall()}
            cursor.execute("SELECT @@local_infile")
            local_infile = bool(cursor.fetchone()[0])
        return next(c for c in _BINARY_COLLATIONS if c in found or c == _BINARY_COLLATIONS[-1]), local_infile

    def prepare(self) -> None:
        """The job's database and own tables, where they do not exist yet."""
        collation, _ = self._server
        tables = (("state", _columns(STATE_FIELDS)), ("steps", STEP_COLUMNS),
                  ("changelog", _columns((*CHANGELOG_FIELDS, ("batch", "bigint"))) + ", KEY (batch)"),
                  ("dead_letters", _columns((*DEAD_LETTER_FIELDS, ("batch", "bigint"))) + ", KEY (batch)"))
        with self._connect() as cursor:
            self._create_database(cursor, self.namespace)
            for name, columns in tables:
                cursor.execute(f"CREATE TABLE IF NOT EXISTS {self._job_table(name)} ({columns}) "
                               f"{table_options(collation)}")

    def _create_database(self, cursor: Any, namespace: str) -> None:
        cursor.execute(f"CREATE DATABASE IF NOT EXISTS {ident(namespace)} CHARACTER SET utf8mb4 "
                       f"COLLATE {self._server[0]}")

    # --- progress ----------------------------------------------------------------------------------------

    def load_state(self) -> tuple[JobState, DataFrame]:
        with self._connect() as cursor:
            state = read_state(cursor, self.address, self.namespace)
            cursor.execute(f"SELECT {names(CHANGE_NAMES)} FROM {self._job_table('state')} WHERE state = 'pending'")
            pending = list(cursor.fetchall())
            self._drop_stale_stages(cursor)
        self._batch, self._ddl_calls = state.batch + 1, {}
        return state, local_frame(self.spark, pending, CHANGE_FIELDS)

    def _drop_stale_stages(self, cursor: Any) -> None:
        """Staging tables of a write a crash interrupted: the batch runs again with new ones."""
        cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
                       "AND table_name LIKE %s", (self.namespace, STAGE_PREFIX.replace("_", "\\_") + "%"))
        for (name,) in cursor.fetchall():
            cursor.execute(f"DROP TABLE IF EXISTS {table_name(self.namespace, name)}")

    def record_plan(self, ranges: Sequence[OffsetRange], batch: int, stream: tuple[str, int] | None) -> None:
        with self._connect() as cursor:
            _insert(cursor, self._job_table("state"), STATE_NAMES, plan_rows(ranges, batch, stream))

    def commit(self, state: JobState, batch: int, pending: DataFrame | None) -> None:
        """The new state, in one transaction: the old rows deleted, the new ones and the pending changes
        inserted."""
        stage = None if pending is None else self._stage_frame(pending, CHANGE_FIELDS)
        table = self._job_table("state")
        try:
            with self._connect(autocommit=False) as cursor:
                cursor.execute(f"DELETE FROM {table}")
                _insert(cursor, table, STATE_NAMES, small_rows(state, batch))
                if stage is not None:
                    cursor.execute(f"INSERT INTO {table} (state, batch, {names(CHANGE_NAMES)}) SELECT 'pending', "
                                   f"{int(batch)}, {names(CHANGE_NAMES)} FROM {stage}")
        finally:
            self._drop(stage)

    # --- tables ------------------------------------------------------------------------------------------

    def target(self, namespace: str, table: str) -> str:
        return table_name(namespace, table)

    def create_table(self, target: str, schema: TableSchema, layout: TableLayout | None = None) -> None:
        refuse_layout(layout)
        def create(cursor: Any) -> None:
            self._create_database(cursor, split_target(target)[0])
            cursor.execute(statements.create_table(target, schema, self._server[0]))

        self._once(target, create)

    def apply_layout(self, target: str, schema: TableSchema, layout: TableLayout) -> None:
        refuse_layout(layout)

    def changes_in_rows(self, schema: TableSchema, types: Mapping[str, MySQLType]) -> list[SchemaChange]:
        return changes_seen_in_rows(schema, types, holds)

    def evolve_table(self, target: str, schema: TableSchema, changes: Sequence[SchemaChange]) -> None:
        if target in self._histories:  # a key has many versions there: no unique key for it to follow
            changes = [change for change in changes if not isinstance(change, SetKey)]
        self._once(target, lambda cursor: self._evolve(cursor, target, changes))

    @staticmethod
    def _evolve(cursor: Any, target: str, changes: Sequence[SchemaChange]) -> None:
        namespace, table = split_target(target)
        cursor.execute("SELECT column_name, column_type FROM information_schema.columns WHERE table_schema = %s "
                       "AND table_name = %s ORDER BY ordinal_position", (namespace, table))
        held = dict(cursor.fetchall())
        cursor.execute("SELECT column_name FROM information_schema.statistics WHERE table_schema = %s AND "
                       "table_name = %s AND index_name = %s ORDER BY seq_in_index",
                       (namespace, table, statements.KEY_INDEX))
        key = [row[0] for row in cursor.fetchall()]
        for statement in statements.alter(target, changes, held, key):
            cursor.execute(statement)

    def last_step(self, target: str) -> tuple[int, int]:
        """The newest step stored with ``target``'s rows, or with the tables it was renamed to in the batch
        under way; (0, 0) if none."""
        newest, seen = (0, 0), set()
        with self._connect() as cursor:
            while target not in seen:
                seen.add(target)
                cursor.execute(f"SELECT batch, step, renamed_to, renamed_in FROM {self._job_table('steps')} "
                               "WHERE `target` = %s", (target,))
                row = cursor.fetchone()
                if row is None:
                    break
                newest = max(newest, (row[0], row[1]))
                if row[2] is None or row[3] != self._batch:
                    break
                target = row[2]
        return newest

    def stage_changes(self, net: DataFrame) -> None:
        """Nothing: a write's staging table has its table's own column types, so each write loads its own."""

    def write_changes(self, target: str, schema: TableSchema, net: DataFrame, step: Step, *,
                      whole_images: bool, maybe_empty: bool, part: NetPart) -> None:
        stage = self._new_stage()
        self._load_and_apply(target, schema, net, step, stage, statements.stage_table(stage, schema, self._server[0]),
                             statements.merge(target, stage, schema, whole_images))

    def _load_and_apply(self, target: str, schema: TableSchema, rows: DataFrame, step: Step, stage: str,
                        create_stage: str, apply: Sequence[str], extra: Sequence[tuple[str, str]] = ()) -> None:
        """``rows`` (``_op``, ``_image``, then the ``extra`` (column, staged as) pairs) loaded by the executors
        into the staging table ``create_stage`` makes, then ``apply``'s statements and ``step`` stored in one
        transaction; the staging table dropped."""
        _, local_infile = self._server
        try:
            with self._connect() as cursor:
                cursor.execute(create_stage)
            column_names = [c.name for c in schema.columns]
            staged = [statements.OP, statements.GIVEN, *(f"c{i}" for i in range(len(schema.columns))),
                      *(name for _, name in extra)]
            load_frame(rows.select("_op", "_image", *(column for column, _ in extra)), self.address.arguments, stage,
                       staged, local_infile,
                       net_rows(column_names, [mariadb_type(c.type) for c in schema.columns], target,
                                [column for column, _ in extra]),
                       shown=[statements.OP, statements.GIVEN, *column_names, *(name for _, name in extra)])
            with self._connect(autocommit=False) as cursor:
                for statement in apply:
                    cursor.execute(statement)
                self._store_step(cursor, target, step)
        finally:
            self._drop(stage)

    # --- history tables (sinks.base.HistorySink) -------------------------------------------------------

    def create_history(self, target: str, schema: TableSchema) -> None:
        def create(cursor: Any) -> None:
            self._create_database(cursor, split_target(target)[0])
            cursor.execute(history.create_history(target, schema, self._server[0]))

        self._histories.add(target)
        self._once(target, create)

    def stage_history(self, actions: DataFrame) -> None:
        """Nothing: a write's staging table has its table's own column types, so each write loads its own."""

    def write_history(self, target: str, schema: TableSchema, actions: DataFrame, step: Step, part: NetPart) -> None:
        stage = self._new_stage()
        self._load_and_apply(target, schema, actions, step, stage,
                             history.stage_history(stage, schema, self._server[0]),
                             history.write_history(target, stage, schema),
                             tuple(zip(history.ACTION_COLUMNS, (history.START, history.END, history.ENDED_BY),
                                       strict=True)))

    def close_history(self, target: str, end_ts: int, keep: bool, step: Step) -> None:
        with self._connect(autocommit=False) as cursor:
            cursor.execute(history.close_history(target, end_ts, keep))
            self._store_step(cursor, target, step)

    def truncate_table(self, target: str, step: Step) -> None:
        with self._connect() as cursor:
            cursor.execute(f"TRUNCATE TABLE {target}")
            self._store_step(cursor, target, step)

    def _store_step(self, cursor: Any, target: str, step: Step) -> None:
        cursor.execute(f"INSERT INTO {self._job_table('steps')} (`target`, batch, step, resolved_ts) "
                       "VALUES (%s, %s, %s, %s) ON DUPLICATE KEY UPDATE batch = VALUES(batch), step = VALUES(step), "
                       "resolved_ts = VALUES(resolved_ts), renamed_to = NULL, renamed_in = NULL",
                       (target, step.batch, step.step, step.resolved_ts))

    def rename_table(self, target: str, new_target: str) -> None:
        def rename(cursor: Any) -> None:
            self._create_database(cursor, split_target(new_target)[0])
            if self._exists(cursor, target) and not self._exists(cursor, new_target):
                cursor.execute(f"RENAME TABLE {target} TO {new_target}")
            cursor.execute(f"INSERT INTO {self._job_table('steps')} (`target`, batch, step, renamed_to, renamed_in) "
                           "VALUES (%s, 0, 0, %s, %s) ON DUPLICATE KEY UPDATE renamed_to = VALUES(renamed_to), "
                           "renamed_in = VALUES(renamed_in)", (target, new_target, self._batch))

        if target in self._histories:
            self._histories.add(new_target)
        self._once(target, rename)

    @staticmethod
    def _exists(cursor: Any, target: str) -> bool:
        cursor.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = %s",
                       split_target(target))
        return cursor.fetchone() is not None

    def drop_table(self, target: str) -> None:
        self._once(target, lambda cursor: cursor.execute(f"DROP TABLE IF EXISTS {target}"))

    def _once(self, target: str, ddl: Callable[[Any], None]) -> None:
        """``ddl`` on ``target``, unless the batch made this call before a crash: the pipeline makes a
        batch's DDL calls on a table in the same order each time it runs it, and the n-th is stored as
        done after it, so a re-run does not replay a DROP, CREATE or ALTER against a table that is
        already past it (a table dropped and made again, a column added and renamed since). The one
        call a crash may have cut short is run again, against the table as it is."""
        with self._lock:
            call = self._ddl_calls[target] = self._ddl_calls.get(target, 0) + 1
        steps = self._job_table("steps")
        with self._connect() as cursor:
            cursor.execute(f"SELECT ddl_batch, ddl_done FROM {steps} WHERE `target` = %s", (target,))
            done = cursor.fetchone()
            if done is not None and done[0] == self._batch and done[1] >= call:
                return
            ddl(cursor)
            cursor.execute(f"INSERT INTO {steps} (`target`, batch, step, ddl_batch, ddl_done) "
                           "VALUES (%s, 0, 0, %s, %s) ON DUPLICATE KEY UPDATE ddl_batch = VALUES(ddl_batch), "
                           "ddl_done = VALUES(ddl_done)",
                           (target, self._batch, call))

    # --- the job's own tables ----------------------------------------------------------------------------

    def append_changelog(self, changes: DataFrame, batch: int, recovering: bool) -> None:
        self._append_staged("changelog", changes.filter("kind = 'row'"), CHANGELOG_FIELDS, batch, recovering)

    def append_dead_letters(self, errors: DataFrame, batch: int, recovering: bool) -> None:
        self._append_staged("dead_letters", errors, DEAD_LETTER_FIELDS, batch, recovering)

    def _append_staged(self, name: str, rows: DataFrame, fields: Sequence[tuple[str, str]], batch: int,
                       recovering: bool) -> None:
        table = self._job_table(name)
        if recovering:
            with self._connect() as cursor:
                cursor.execute(f"SELECT 1 FROM {table} WHERE batch = %s LIMIT 1", (batch,))
                if cursor.fetchone() is not None:
                    return  # appended before the batch was interrupted
        stage = self._stage_frame(rows, fields)
        try:
            column_names = names([field for field, _ in fields])
            with self._connect() as cursor:
                cursor.execute(f"INSERT INTO {table} ({column_names}, batch) SELECT {column_names}, {int(batch)} "
                               f"FROM {stage}")
        finally:
            self._drop(stage)

    def maintain(self, targets: Sequence[str]) -> None:
        """Nothing to do: InnoDB purges old row versions itself, and the state is one table of rows."""

    def compact(self, targets: Sequence[str]) -> list[Compaction]:
        """Nothing to do: an UPDATE or DELETE changes rows in place, and InnoDB purges what it leaves."""
        return []

    # --- staging -----------------------------------------------------------------------------------------

    def _new_stage(self) -> str:
        return table_name(self.namespace, STAGE_PREFIX + uuid.uuid4().hex)

    def _stage_frame(self, frame: DataFrame, fields: Sequence[tuple[str, str]]) -> str:
        """``frame``'s ``fields`` loaded by the executors into a new staging table."""
        collation, local_infile = self._server
        stage = self._new_stage()
        with self._connect() as cursor:
            cursor.execute(f"CREATE TABLE {stage} ({_columns(fields)}) {table_options(collation)}")
        field_names = [name for name, _ in fields]
        try:
            load_frame(frame.select(*field_names), self.address.arguments, stage, field_names, local_infile)
        except BaseException:
            self._drop(stage)
            raise
        return stage

    def _drop(self, stage: str | None) -> None:
        if stage is not None:
            with self._connect() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {stage}")


@contextmanager
def cursor_of(address: MariaDBAddress, autocommit: bool = True) -> Iterator[Any]:
    """A cursor on the server at ``address``; without ``autocommit``, of one transaction, committed when
    the block ends."""
    import pymysql

    try:
        connection = connect(address.arguments, autocommit)
    except pymysql.err.OperationalError as error:
        raise SinkError(f"sink {address.shown}: cannot connect: {error.args[-1]}") from None
    with connection, connection.cursor() as cursor:
        yield cursor
        if not autocommit:
            connection.commit()


def read_state(cursor: Any, address: MariaDBAddress, namespace: str) -> JobState:
    """The state of the job whose own tables are in the database ``namespace``, its pending changes left out."""
    import pymysql

    table = table_name(namespace, "cdclake_state")
    try:
        cursor.execute(f"SELECT {names(STATE_NAMES)} FROM {table} WHERE state <> 'pending'")
    except pymysql.err.ProgrammingError as error:
        if error.args[0] != _NO_TABLE:
            raise
        raise SinkError(f"sink {address.shown}: no job state there ({table}): no job has replicated into the "
                        f"database {namespace!r} yet") from None
    return state_from_rows(dict(zip(STATE_NAMES, row, strict=True)) for row in cursor.fetchall())


def _insert(cursor: Any, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    load_rows(cursor, table, columns, rows, local_infile=False)


def _columns(fields: Sequence[tuple[str, str]]) -> str:
    """Column definitions of ``fields`` (name, Spark type)."""
    return ", ".join(f"{ident(name)} {_TYPE_OF_SPARK[spark_type]} NULL" for name, spark_type in fields)

