"""The upstream simulator: a TiDB cluster whose tables take transactions and DDL, in commit order.

A :class:`Workload` is its :class:`WorkloadSpec` and nothing else: every run of :meth:`Workload.commits`
replays the same seeded simulation, so the same spec gives the same commits, values and timestamps,
and the state at any commit ts can be had again (:meth:`Workload.state_at`) without keeping the history.

Commit timestamps are TiDB TSOs, ``physical milliseconds << 18 | logical``. Every commit (a transaction
or a DDL) has a physical millisecond of its own, so a format that carries only milliseconds (Canal-JSON's
``es``, DataWorks' ``eventTime``) still orders the commits.

Within one transaction a row key changes at most once, as in TiDB, where a transaction writes one
version of each row: the changes of a transaction can be applied in any order. An UPDATE may change
the row's key (``key_update_ratio``); upstream that is one UPDATE, which the producer splits as TiCDC
does (see :mod:`cdclake.producer.rules`).
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from cdclake.errors import CdclakeError
from cdclake.model import ColumnSchema, Ddl, DdlKind, Op, RowChange, TableSchema
from cdclake.types import MySQLType
from cdclake.workload.history import TableHistory
from cdclake.workload.keys import KeyMaker
from cdclake.workload.oracle import Oracle, TableName, TableState, key_of
from cdclake.workload.tables import (
    CREATED_MID_STREAM,
    TableShape,
    column_sql,
    create_table_sql,
    initial_shapes,
    qualified,
    quote,
)
from cdclake.workload.values import ValueMaker, below, value_maker


class WorkloadError(CdclakeError):
    """A workload setting that cannot be simulated; says which and why."""


def tso(physical_ms: int, logical: int = 0) -> int:
    """A TiDB timestamp: milliseconds since the epoch shifted past the 18 logical bits."""
    return physical_ms << 18 | logical


def physical_ms(ts: int) -> int:
    return ts >> 18


@dataclass(frozen=True)
class WorkloadSpec:
    """What to simulate. Every field has a default; ``seed`` decides everything else."""

    seed: int = 0
    tables: int = 7
    """Tables existing when the stream starts: the catalog's first ones (past its end, copies)."""
    transactions: int = 200
    rows_per_transaction: int = 5
    """Each transaction changes 1 to this many rows, of any tables."""
    ddl: bool = True
    """CREATE TABLE, ADD/RENAME/MODIFY/DROP COLUMN and TRUNCATE TABLE mid-stream."""
    rename_table: bool = False
    drop_table: bool = False
    create_table_like: bool = False
    """``CREATE TABLE t_copy LIKE t`` of a table drawn, which then gets rows of its own."""
    keyless_table: bool = True
    """Whether the catalog's table without any key (``logs.audit``) is among the tables."""
    update_ratio: float = 0.35
    delete_ratio: float = 0.15
    """Shares of updates and deletes among row changes; the rest are inserts."""
    key_update_ratio: float = 0.1
    """Share of updates that change the row's key (primary or unique)."""
    null_ratio: float = 0.1
    edge_ratio: float = 0.1
    """Chance that a nullable column is NULL, and that a value is one of its type's edge values."""
    text_nul: bool = True
    """Whether strings may hold the NUL character, as MySQL's may: False for a target that cannot hold
    it (PostgreSQL's text)."""
    start: dt.datetime = dt.datetime(2024, 5, 1, 9, 0, tzinfo=dt.UTC)
    max_gap_ms: int = 20
    """Commits are 1 to this many milliseconds apart."""

    def __post_init__(self) -> None:
        if self.tables < 1 or self.transactions < 0 or self.rows_per_transaction < 1 or self.max_gap_ms < 1:
            raise WorkloadError(f"tables, rows_per_transaction and max_gap_ms must be at least 1 and transactions "
                                f"at least 0, got {self}")
        ratios = (self.update_ratio, self.delete_ratio, self.key_update_ratio, self.null_ratio, self.edge_ratio)
        if not all(0 <= r <= 1 for r in ratios) or self.update_ratio + self.delete_ratio > 1:
            raise WorkloadError(f"ratios must lie in [0, 1] and update_ratio + delete_ratio <= 1, got {self}")
        if self.start.tzinfo is None:
            raise WorkloadError(f"start must be an aware datetime, got {self.start!r}")


@dataclass(frozen=True, slots=True)
class Commit:
    """One upstream commit: a transaction's row changes, or one DDL."""

    commit_ts: int
    rows: tuple[RowChange, ...] = ()
    ddl: Ddl | None = None


@dataclass
class Summary:
    """What a workload did, for a demo to print."""

    transactions: int = 0
    row_changes: Counter[str] = field(default_factory=Counter)
    ddls: list[str] = field(default_factory=list)
    first_ts: int | None = None
    last_ts: int | None = None
    rows_at_end: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        changes = ", ".join(f"{self.row_changes[op.value]} {op.value}s" for op in Op)
        lines = [f"{len(self.rows_at_end)} tables, {self.transactions} transactions: {changes}"]
        if self.first_ts is not None and self.last_ts is not None:
            lines.append(f"commit ts {self.first_ts} .. {self.last_ts}")
        lines += [f"  {name}: {rows} rows" for name, rows in sorted(self.rows_at_end.items())]
        lines += [f"  DDL: {sql}" for sql in self.ddls]
        return lines


class Workload:
    """A seeded upstream simulation; see the module docstring."""

    def __init__(self, spec: WorkloadSpec | None = None) -> None:
        self.spec = spec or WorkloadSpec()
        self._final: dict[TableName, TableState] | None = None
        self._summary: Summary | None = None

    def initial_schemas(self) -> list[TableSchema]:
        """The tables as they are when the stream starts (empty), with their ids and versions."""
        return [table.schema for table in _Simulator(self.spec).tables.values()]

    def commits(self) -> Iterator[Commit]:
        """Every commit in commit-ts order, simulated afresh. A run to the end also keeps the final
        state, so that :meth:`oracle` costs nothing more."""
        simulator = _Simulator(self.spec)
        summary = Summary()
        for commit in simulator.run():
            summary.first_ts = summary.first_ts or commit.commit_ts
            summary.last_ts = commit.commit_ts
            if commit.ddl is not None:
                summary.ddls.append(commit.ddl.sql)
            else:
                summary.transactions += 1
                summary.row_changes.update(row.op.value for row in commit.rows)
            yield commit
        self._final = simulator.snapshot()
        summary.rows_at_end = {f"{db}.{table}": len(state.rows) for (db, table), state in self._final.items()}
        self._summary = summary

    def oracle(self) -> Oracle:
        """The upstream state after the last commit (see :class:`~cdclake.workload.oracle.Oracle`)."""
        if self._final is None:
            for _ in self.commits():
                pass
        assert self._final is not None and self._summary is not None
        return Oracle(self, self._summary.last_ts, self._final)

    def state_at(self, ts: int) -> dict[TableName, TableState]:
        """The tables as of commit ts ``ts``: every commit at or below it applied, none above."""
        simulator = _Simulator(self.spec, until_ts=ts)
        for _ in simulator.run():
            pass
        return simulator.snapshot()

    def summary(self) -> Summary:
        """What the whole workload does (runs it once, if no run has finished yet)."""
        self.oracle()
        assert self._summary is not None
        return self._summary


# --- the simulation --------------------------------------------------------------------------------


class _LiveTable:
    """One upstream table: its schema and rows, with what it takes to make and pick rows quickly."""

    def __init__(self, shape: TableShape, schema: TableSchema, spec: WorkloadSpec) -> None:
        self.spec = spec
        self.shape = shape
        self.keys = KeyMaker(schema, shape.key_style)
        # Row handle -> row. The handle is the key tuple, or a row id for the keyless table (TiDB's
        # _tidb_rowid): the simulator's own way to find a row, which no format carries.
        self.rows: dict[Any, dict[str, Any]] = {}
        self._handles: list[Any] = []
        self._position: dict[Any, int] = {}
        self._next_row_id = 0
        self.set_schema(schema)
        self.history = TableHistory(lambda row: key_of(self.key_columns, row))

    def set_schema(self, schema: TableSchema) -> None:
        self.schema = schema
        self.types = {c.name: c.type for c in schema.columns}
        self.key_columns = schema.key_columns
        self.makers: dict[str, ValueMaker] = {c.name: value_maker(c.type, self.spec.edge_ratio, self.spec.text_nul)
                                              for c in schema.columns}
        self.nullable = {c.name for c in schema.columns if c.nullable}
        fixed = set(self.key_columns) | set(self.keys.columns)
        self.changeable = [c.name for c in schema.columns if c.name not in fixed]

    def handle_of(self, row: dict[str, Any]) -> Any:
        return tuple(row[c] for c in self.key_columns)

    def new_handle(self, row: dict[str, Any]) -> Any:
        if self.key_columns:
            return self.handle_of(row)
        self._next_row_id += 1
        return self._next_row_id

    def add(self, handle: Any, row: dict[str, Any]) -> None:
        self.rows[handle] = row
        self._position[handle] = len(self._handles)
        self._handles.append(handle)

    def remove(self, handle: Any) -> dict[str, Any]:
        position = self._position.pop(handle)
        last = self._handles.pop()
        if last != handle:
            self._handles[position] = last
            self._position[last] = position
        return self.rows.pop(handle)

    def random_handle(self, rng: random.Random) -> Any:
        return self._handles[below(rng, len(self._handles))]

    def clear(self) -> None:
        self.rows.clear()
        self._handles.clear()
        self._position.clear()

    def rewrite_rows(self, rewrite: Any) -> None:
        """Replace every row by ``rewrite(row)``; rows are never changed in place, since snapshots and
        events share them."""
        for handle, row in self.rows.items():
            self.rows[handle] = rewrite(row)
        self.history.rewrite(rewrite)

    def value(self, rng: random.Random, column: str) -> Any:
        if column in self.nullable and rng.random() < self.spec.null_ratio:
            return None
        return self.makers[column](rng)


# The DDL plan: (share of the transactions after which it runs, what it does). Targets are drawn.
_PLAN = (
    (0.15, "create table"),
    (0.25, "add column"),
    (0.35, "rename column"),
    (0.45, "modify column"),
    (0.55, "drop column"),
    (0.65, "truncate table"),
    (0.7, "create table like"),
    (0.75, "rename table"),
    (0.85, "drop table"),
)
_ADDED_TYPES = ("varchar(32)", "decimal(9,3)", "datetime(3)", "int", "json")
# TiDB action types of the DDL, which Open Protocol messages carry.
_ACTION_TYPES = {
    "create table": 3, "create table like": 3, "drop table": 4, "add column": 5, "drop column": 6, "truncate table": 11,
    "modify column": 12, "rename column": 12, "rename table": 14,
}


class _Reached(Exception):
    """The next commit would be past the simulation's end ts; raised before it changes anything."""


class _Simulator:
    def __init__(self, spec: WorkloadSpec, until_ts: int | None = None) -> None:
        self.spec = spec
        self.until_ts = until_ts
        self.rng = random.Random(spec.seed)
        self.clock_ms = int(spec.start.timestamp() * 1000)
        self.tables: dict[TableName, _LiveTable] = {}
        self.next_table_id = 100
        before_start = tso(self.clock_ms - 86_400_000)
        for shape in initial_shapes(spec.tables, spec.keyless_table):
            self._create(shape, shape.schema, version=before_start + self.next_table_id)
        self.added_columns = 0

    def _create(self, shape: TableShape, schema: TableSchema, version: int) -> _LiveTable:
        schema = replace(schema, table_id=self.next_table_id, version=version)
        self.next_table_id += 1
        table = self.tables[(schema.database, schema.table)] = _LiveTable(shape, schema, self.spec)
        return table

    def tick(self) -> int:
        """The next commit's ts. Every commit takes it before it changes anything, so that a run
        ``until_ts`` stops with exactly the commits at or below it applied."""
        self.clock_ms += 1 + below(self.rng, self.spec.max_gap_ms)
        commit_ts = tso(self.clock_ms, below(self.rng, 64))
        if self.until_ts is not None and commit_ts > self.until_ts:
            raise _Reached
        return commit_ts

    def run(self) -> Iterator[Commit]:
        try:
            yield from self._commits()
        except _Reached:
            return

    def _commits(self) -> Iterator[Commit]:
        plan = self._plan()
        for index in range(self.spec.transactions):
            while plan and plan[0][0] <= index:
                yield from self._ddl_commit(plan.pop(0)[1])
            yield self._transaction()
        for _, kind in plan:
            yield from self._ddl_commit(kind)

    def _ddl_commit(self, kind: str) -> Iterator[Commit]:
        ddl = self._ddl(kind)
        if ddl is not None:
            assert ddl.commit_ts is not None
            yield Commit(ddl.commit_ts, ddl=ddl)

    def _plan(self) -> list[tuple[int, str]]:
        if not self.spec.ddl:
            return []
        wanted = {"rename table": self.spec.rename_table, "drop table": self.spec.drop_table,
                  "create table like": self.spec.create_table_like}
        return [(int(share * self.spec.transactions), kind) for share, kind in _PLAN if wanted.get(kind, True)]

    # --- row changes ---

    def _transaction(self) -> Commit:
        commit_ts = self.tick()
        touched: set[tuple[TableName, Any]] = set()
        rows = []
        names = list(self.tables)
        for _ in range(1 + below(self.rng, self.spec.rows_per_transaction)):
            name = names[below(self.rng, len(names))]
            change = self._row_change(self.tables[name], commit_ts, touched)
            if change is not None:
                rows.append(change)
        return Commit(commit_ts, rows=tuple(rows))

    def _row_change(self, table: _LiveTable, commit_ts: int, touched: set[tuple[TableName, Any]]) -> RowChange | None:
        rng, spec = self.rng, self.spec
        name = (table.schema.database, table.schema.table)
        draw = rng.random()
        if table.rows and draw < spec.update_ratio + spec.delete_ratio:
            handle = table.random_handle(rng)
            if (name, handle) in touched:
                return None  # one change per row and transaction, as in TiDB
            touched.add((name, handle))
            if draw < spec.update_ratio:
                return self._update(table, handle, commit_ts, touched)
            before = table.remove(handle)
            table.keys.forget(handle)
            table.history.closed(before, commit_ts, "delete")
            return self._event(table, Op.DELETE, before, None, commit_ts)
        key = table.keys.new_key(rng, lambda key: key in table.rows or (name, key) in touched)
        row = dict(zip(table.keys.columns, key, strict=True))
        after = {c: row[c] if c in row else table.value(rng, c) for c in table.types}
        handle = table.new_handle(after)
        touched.add((name, handle))
        table.add(handle, after)
        table.history.opened(after, commit_ts)
        return self._event(table, Op.INSERT, None, after, commit_ts)

    def _update(self, table: _LiveTable, handle: Any, commit_ts: int,
                touched: set[tuple[TableName, Any]]) -> RowChange:
        rng = self.rng
        before = table.rows[handle]
        after = dict(before)
        changes_key = bool(table.key_columns) and rng.random() < self.spec.key_update_ratio
        if changes_key:
            name = (table.schema.database, table.schema.table)
            key = table.keys.new_key(rng, lambda key: key in table.rows or (name, key) in touched)
            after.update(zip(table.keys.columns, key, strict=True))
            touched.add((name, key))
        for column in rng.sample(table.changeable, min(len(table.changeable), rng.randint(1, 3))):
            after[column] = table.value(rng, column)
        if after == before:  # TiDB writes no change for an UPDATE that changes nothing
            column = rng.choice(table.changeable)
            while after[column] == before[column]:
                after[column] = table.makers[column](rng)
        table.remove(handle)
        if changes_key:
            table.keys.forget(handle)
            handle = table.handle_of(after)
        table.add(handle, after)
        table.history.updated(before, after, commit_ts)
        return self._event(table, Op.UPDATE, before, after, commit_ts)

    @staticmethod
    def _event(table: _LiveTable, op: Op, before: dict[str, Any] | None, after: dict[str, Any] | None,
               commit_ts: int) -> RowChange:
        schema = table.schema
        return RowChange(op, schema.database, schema.table, before, after, table.types, table.key_columns,
                         commit_ts, schema.version, schema.table_id)

    # --- DDL ---

    def _ddl(self, kind: str) -> Ddl | None:
        """Run one DDL of the plan on a table drawn for it; None where no table suits it."""
        rng = self.rng
        if kind == "create table":
            shape = CREATED_MID_STREAM
            name = (shape.schema.database, shape.schema.table)
            if name in self.tables:
                return None
            commit_ts = self.tick()
            table = self._create(shape, shape.schema, version=commit_ts)
            return self._ddl_event(kind, DdlKind.CREATE_TABLE, create_table_sql(table.schema), commit_ts,
                                   None, table.schema)
        candidates = [t for t in self.tables.values() if self._suits(kind, t)]
        if not candidates or (kind == "drop table" and len(self.tables) < 2):
            return None
        table = candidates[rng.randrange(len(candidates))]
        commit_ts = self.tick()
        before = table.schema
        target = qualified(before.database, before.table)
        if kind == "truncate table":
            table.clear()
            table.history.truncated(commit_ts)
            after = replace(before, table_id=self.next_table_id, version=commit_ts)
            self.next_table_id += 1
            table.set_schema(after)
            return self._ddl_event(kind, DdlKind.TRUNCATE_TABLE, f"TRUNCATE TABLE {target}", commit_ts, before, after)
        if kind == "rename table":
            after = replace(before, table=f"{before.table}_renamed")  # RENAME TABLE keeps the version
            del self.tables[(before.database, before.table)]
            self.tables[(after.database, after.table)] = table
            table.set_schema(after)
            sql = f"RENAME TABLE {target} TO {qualified(after.database, after.table)}"
            return self._ddl_event(kind, DdlKind.RENAME_TABLE, sql, commit_ts, before, after)
        if kind == "drop table":
            del self.tables[(before.database, before.table)]
            return self._ddl_event(kind, DdlKind.DROP_TABLE, f"DROP TABLE {target}", commit_ts, before, before)
        if kind == "create table like":
            return self._copy(table, commit_ts)
        sql, columns = self._alter(kind, table)
        after = replace(before, columns=columns, version=commit_ts)
        table.set_schema(after)
        return self._ddl_event(kind, DdlKind.ALTER_TABLE, f"ALTER TABLE {target} {sql}", commit_ts, before, after)

    def _copy(self, table: _LiveTable, commit_ts: int) -> Ddl:
        """``CREATE TABLE t_copy LIKE t`` (the plan has one): the copy has ``t``'s columns and indexes,
        and no rows."""
        source = table.schema
        copy = self._create(table.shape, replace(source, table=f"{source.table}_copy"), version=commit_ts)
        copied = qualified(source.database, source.table)
        sql = f"CREATE TABLE {qualified(source.database, copy.schema.table)} LIKE {copied}"
        return self._ddl_event("create table like", DdlKind.CREATE_TABLE, sql, commit_ts, None, copy.schema)

    @staticmethod
    def _suits(kind: str, table: _LiveTable) -> bool:
        if kind in ("rename column", "drop column"):
            return any(c in table.nullable for c in table.changeable)
        if kind == "modify column":
            return any(table.types[c] == MySQLType("int") for c in table.changeable)
        if kind == "truncate table":
            return bool(table.rows)
        return True

    def _alter(self, kind: str, table: _LiveTable) -> tuple[str, tuple[ColumnSchema, ...]]:
        """The ALTER TABLE clause and the columns after it; rewrites the table's rows to match."""
        rng, columns = self.rng, table.schema.columns
        if kind == "add column":
            self.added_columns += 1
            added = ColumnSchema(f"added_{self.added_columns}",
                                 MySQLType.parse(_ADDED_TYPES[(self.added_columns - 1) % len(_ADDED_TYPES)]))
            table.rewrite_rows(lambda row: {**row, added.name: None})
            return f"ADD COLUMN {column_sql(added)}", (*columns, added)
        if kind == "modify column":
            name = rng.choice([c for c in table.changeable if table.types[c] == MySQLType("int")])
            widened = replace(table.schema.column(name), type=MySQLType("bigint"))
            return f"MODIFY COLUMN {column_sql(widened)}", tuple(widened if c.name == name else c for c in columns)
        name = rng.choice([c for c in table.changeable if c in table.nullable])
        if kind == "drop column":
            table.rewrite_rows(lambda row: {c: v for c, v in row.items() if c != name})
            return f"DROP COLUMN {quote(name)}", tuple(c for c in columns if c.name != name)
        new = f"{name}_renamed"
        table.rewrite_rows(lambda row: {new if c == name else c: v for c, v in row.items()})
        return (f"RENAME COLUMN {quote(name)} TO {quote(new)}",
                tuple(replace(c, name=new) if c.name == name else c for c in columns))

    @staticmethod
    def _ddl_event(kind: str, ddl_kind: DdlKind, sql: str, commit_ts: int, before: TableSchema | None,
                   after: TableSchema) -> Ddl:
        return Ddl(ddl_kind, after.database, after.table, sql, commit_ts, before, after,
                   meta={"ddl_type": _ACTION_TYPES[kind]})

    # --- state ---

    def snapshot(self) -> dict[TableName, TableState]:
        return {name: TableState.of(table.schema, table.rows.values(), table.history.snapshot())
                for name, table in self.tables.items()}
